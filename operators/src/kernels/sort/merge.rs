//! Merging sorted batches. When every batch a large sort buffered
//! ([`MERGE_MIN_BYTES`](super::MERGE_MIN_BYTES)) is
//! sorted by the sort's keys, as the gather of sorted fragments delivers them (each sender's
//! batches in order, between the other senders' batches), the batches chain into a few
//! ascending streams, and a k-way merge of the streams' heads emits the sorted rows one output
//! batch at a time. Each row is copied once, in runs, straight from the batch that holds it:
//! no concatenation, no permutation, no random gather over the whole input; and a batch is
//! dropped as soon as its last row left.
//!
//! Ties keep input order, as the sort's other paths do: a stream's batches are in arrival
//! order, so merging the heads by (keys, arrival, row) gives the stable order.

use super::order::{cmp_cells, key_columns, lead_key};
use crate::plan::SortKey;
use crate::{Batch, Column, Result};
use std::cmp::Ordering;
use std::collections::VecDeque;

/// Most streams merged; an input that chains into more is sorted the other way.
const MAX_STREAMS: usize = 16;

/// A buffered batch, its evaluated key columns, and its first two keys encoded when they can
/// be.
struct Held {
    batch: Batch,
    /// The evaluated key columns (`None` for keys read from the batch).
    keys: Vec<Option<Column>>,
    /// The first key as order-preserving u64s ([`lead_key`]); empty when it has NULLs or is
    /// not numeric.
    lead: Vec<u64>,
    /// The second key so, likewise (empty also when there is none).
    second: Vec<u64>,
}

impl Held {
    fn new(
        batch: Batch,
        keys: Vec<Option<Column>>,
        specs: &[SortKey],
        inputs: &[Option<usize>],
    ) -> Held {
        let (lead, second) = {
            let columns = key_columns(&batch, &keys, inputs);
            let encode = |k: usize| {
                columns
                    .get(k)
                    .zip(specs.get(k))
                    .and_then(|(c, s)| lead_key(c, s))
                    .unwrap_or_default()
            };
            (encode(0), encode(1))
        };
        Held {
            batch,
            keys,
            lead,
            second,
        }
    }

    /// How many leading keys the encodings decide (0, 1 or 2): the first when it is encoded,
    /// the second too when it is as well.
    fn encoded(&self) -> usize {
        let rows = self.batch.num_rows();
        match (self.lead.len() == rows, self.second.len() == rows) {
            (true, true) => 2,
            (true, false) => 1,
            _ => 0,
        }
    }

    /// Key column `k`: evaluated, or the input column it names (`inputs`).
    fn key(&self, k: usize, inputs: &[Option<usize>]) -> &Column {
        match (&self.keys[k], inputs[k]) {
            (Some(c), _) => c,
            (None, Some(i)) => self.batch.column(i),
            (None, None) => unreachable!("a key that names no input column is evaluated"),
        }
    }

    /// Bytes held: the batch, its evaluated keys and the encoded ones.
    fn memory_size(&self) -> usize {
        let evaluated: usize = self.keys.iter().flatten().map(Column::memory_size).sum();
        let encoded = (self.lead.capacity() + self.second.capacity()) * size_of::<u64>();
        self.batch.memory_size() + evaluated + encoded
    }
}

/// A row's place in the order when the encoded keys decide it: the first and second keys
/// encoded, then the row's batch and its row there (input order breaks ties).
type Place = (u64, u64, usize, usize);

/// One ascending stream: its batches (by arrival number), and the next row of the first.
struct Stream {
    batches: VecDeque<usize>,
    row: usize,
}

impl Stream {
    fn head(&self) -> Option<(usize, usize)> {
        self.batches.front().map(|&b| (b, self.row))
    }
}

/// A k-way merge of sorted batches, emitting one output batch per call.
pub(crate) struct Merge {
    specs: Vec<SortKey>,
    /// For each key, the input column it names (see [`Held::key`]).
    inputs: Vec<Option<usize>>,
    /// Every buffered batch by arrival number; emptied once all its rows left.
    held: Vec<Held>,
    /// Whether the encoded keys of every batch decide the order alone (then rows compare as
    /// tuples of u64s).
    encoded: bool,
    streams: Vec<Stream>,
    /// Bytes of the batches still held.
    memory: usize,
}

impl Merge {
    /// A merge of `batches` (in arrival order, none empty; `keys` their evaluated key columns
    /// by `specs`, `None` for keys that name the input column `inputs` gives) when each is
    /// sorted and they chain into at most [`MAX_STREAMS`] streams; otherwise the inputs,
    /// given back.
    #[allow(clippy::type_complexity)]
    pub(crate) fn try_new(
        specs: &[SortKey],
        inputs: &[Option<usize>],
        batches: Vec<Batch>,
        keys: Vec<Vec<Option<Column>>>,
    ) -> std::result::Result<Merge, (Vec<Batch>, Vec<Vec<Option<Column>>>)> {
        let mut merge = Merge {
            specs: specs.to_vec(),
            inputs: inputs.to_vec(),
            held: Vec::with_capacity(batches.len()),
            encoded: false,
            streams: Vec::new(),
            memory: 0,
        };
        // Each batch is encoded and put on a stream as it comes: the first that is not sorted
        // (or needs a stream too many) stops the rest from being looked at.
        let mut tails = Vec::new();
        let mut rest = batches.into_iter().zip(keys);
        for (batch, keys) in rest.by_ref() {
            merge.held.push(Held::new(batch, keys, specs, inputs));
            if merge.chain(merge.held.len() - 1, &mut tails).is_none() {
                let (batches, keys) = merge
                    .held
                    .into_iter()
                    .map(|h| (h.batch, h.keys))
                    .chain(rest)
                    .unzip();
                return Err((batches, keys));
            }
        }
        merge.encoded = merge.held.iter().all(|h| h.encoded() >= specs.len());
        merge.memory = merge.held.iter().map(Held::memory_size).sum();
        Ok(merge)
    }

    /// Puts batch `b` on a stream: the one whose last row (`tails`, as (batch, row)) is the
    /// greatest not above the batch's first (a new stream when none is). `None` when the
    /// batch is not sorted or the streams would be too many.
    fn chain(&mut self, b: usize, tails: &mut Vec<(usize, usize)>) -> Option<()> {
        let rows = self.batch(b).num_rows();
        if (1..rows).any(|r| self.cmp(b, r - 1, b, r) == Ordering::Greater) {
            return None;
        }
        let mut best: Option<usize> = None;
        for (s, &(tb, tr)) in tails.iter().enumerate() {
            let fits = self.cmp(tb, tr, b, 0) != Ordering::Greater;
            let tighter = |best: usize| {
                let (bb, br) = tails[best];
                self.cmp(bb, br, tb, tr) != Ordering::Greater
            };
            if fits && best.is_none_or(tighter) {
                best = Some(s);
            }
        }
        match best {
            Some(s) => {
                self.streams[s].batches.push_back(b);
                tails[s] = (b, rows - 1);
            }
            None if self.streams.len() == MAX_STREAMS => return None,
            None => {
                self.streams.push(Stream {
                    batches: VecDeque::from([b]),
                    row: 0,
                });
                tails.push((b, rows - 1));
            }
        }
        Some(())
    }

    fn batch(&self, b: usize) -> &Batch {
        &self.held[b].batch
    }

    /// Row `i` of batch `a` against row `j` of batch `b`, by the sort keys alone.
    fn cmp(&self, a: usize, i: usize, b: usize, j: usize) -> Ordering {
        let (x, y) = (&self.held[a], &self.held[b]);
        let encoded = x.encoded().min(y.encoded());
        if encoded >= 1 {
            let o = x.lead[i].cmp(&y.lead[j]);
            if o != Ordering::Equal {
                return o;
            }
        }
        if encoded == 2 {
            let o = x.second[i].cmp(&y.second[j]);
            if o != Ordering::Equal {
                return o;
            }
        }
        for (k, spec) in self.specs.iter().enumerate().skip(encoded) {
            let o = cmp_cells(x.key(k, &self.inputs), i, y.key(k, &self.inputs), j, spec);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Whether row `(a, i)` goes before row `(b, j)`: by the keys, then in input order.
    fn before(&self, (a, i): (usize, usize), (b, j): (usize, usize)) -> bool {
        self.cmp(a, i, b, j).then((a, i).cmp(&(b, j))) == Ordering::Less
    }

    /// Bytes of the batches still held (with their key columns, evaluated and encoded).
    pub(crate) fn memory_size(&self) -> usize {
        self.memory
    }

    /// Whether rows are left.
    pub(crate) fn has_rows(&self) -> bool {
        self.streams.iter().any(|s| !s.batches.is_empty())
    }

    /// The next (at most) `size` rows in order, `None` once all have left. The batches whose
    /// last row left are dropped.
    pub(crate) fn next_batch(&mut self, size: usize) -> Result<Option<Batch>> {
        let size = size.max(1);
        // Runs of rows to copy, (batch, first row, rows), and the batches they finish.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        let left = if self.encoded {
            self.pick_encoded(size, &mut runs, &mut done)
        } else {
            self.pick(size, &mut runs, &mut done)
        };
        if runs.is_empty() {
            return Ok(None);
        }
        let out = self.gather(&runs, size - left)?;
        for b in done {
            let h = &mut self.held[b];
            self.memory -= h.memory_size();
            *h = Held {
                batch: Batch::empty(&[]),
                keys: Vec::new(),
                lead: Vec::new(),
                second: Vec::new(),
            };
        }
        Ok(Some(out))
    }

    /// Takes the next (at most) `size` rows off the streams' heads into `runs`, the batches
    /// whose last row they take into `done`; returns how many of `size` are left untaken.
    fn pick(
        &mut self,
        size: usize,
        runs: &mut Vec<(usize, usize, usize)>,
        done: &mut Vec<usize>,
    ) -> usize {
        let mut left = size;
        while left > 0 {
            // The stream with the first head, and the head that comes next after it.
            let mut first: Option<(usize, (usize, usize))> = None;
            let mut second: Option<(usize, usize)> = None;
            for (s, stream) in self.streams.iter().enumerate() {
                let Some(head) = stream.head() else { continue };
                match first {
                    Some((_, f)) if !self.before(head, f) => {
                        if second.is_none_or(|n| self.before(head, n)) {
                            second = Some(head);
                        }
                    }
                    _ => {
                        second = first.map(|(_, f)| f);
                        first = Some((s, head));
                    }
                }
            }
            let Some((s, (b, row))) = first else { break };
            let rows = self.batch(b).num_rows();
            let mut end = (row + left).min(rows);
            if let Some(next) = second {
                // Rows of this batch go while they come before the next stream's head.
                let mut e = row + 1;
                while e < end && self.before((b, e), next) {
                    e += 1;
                }
                end = e;
            }
            runs.push((b, row, end - row));
            left -= end - row;
            self.advance(s, end, done);
        }
        left
    }

    /// [`Merge::pick`] when the encoded keys decide the order alone: each stream's head is
    /// kept as its place in the order, a tuple compared without looking anything up.
    fn pick_encoded(
        &mut self,
        size: usize,
        runs: &mut Vec<(usize, usize, usize)>,
        done: &mut Vec<usize>,
    ) -> usize {
        // (encoded keys, batch, row) of every stream's head, with the stream.
        let mut heads: Vec<(Place, usize)> = (0..self.streams.len())
            .filter_map(|s| Some((self.place(self.streams[s].head()?), s)))
            .collect();
        let mut left = size;
        while left > 0 && !heads.is_empty() {
            let (mut first, mut second) = (0, None);
            for h in 1..heads.len() {
                if heads[h].0 < heads[first].0 {
                    second = Some(first);
                    first = h;
                } else if second.is_none_or(|n: usize| heads[h].0 < heads[n].0) {
                    second = Some(h);
                }
            }
            let ((_, _, b, row), s) = heads[first];
            let held = &self.held[b];
            let mut end = (row + left).min(held.batch.num_rows());
            if let Some(n) = second {
                // Rows of this batch go while they come before the next stream's head.
                let next = heads[n].0;
                let two = !held.second.is_empty();
                let mut e = row + 1;
                while e < end && (held.lead[e], if two { held.second[e] } else { 0 }, b, e) < next {
                    e += 1;
                }
                end = e;
            }
            runs.push((b, row, end - row));
            left -= end - row;
            self.advance(s, end, done);
            match self.streams[s].head() {
                Some(head) => heads[first].0 = self.place(head),
                None => {
                    heads.swap_remove(first);
                }
            }
        }
        left
    }

    /// The place in the order of row `(b, r)` when the encoded keys decide it.
    fn place(&self, (b, r): (usize, usize)) -> Place {
        let h = &self.held[b];
        (h.lead[r], h.second.get(r).copied().unwrap_or(0), b, r)
    }

    /// Stream `s`'s head batch was taken up to row `end`: the stream moves on, to its next
    /// batch when that was the last row (the batch goes to `done`).
    fn advance(&mut self, s: usize, end: usize, done: &mut Vec<usize>) {
        let stream = &mut self.streams[s];
        let Some(&b) = stream.batches.front() else {
            return;
        };
        if end == self.held[b].batch.num_rows() {
            stream.batches.pop_front();
            stream.row = 0;
            done.push(b);
        } else {
            stream.row = end;
        }
    }

    /// The rows of `runs`, `rows` in all, copied into one batch.
    fn gather(&self, runs: &[(usize, usize, usize)], rows: usize) -> Result<Batch> {
        let empty = Column::from_i64(Vec::new());
        let columns = (0..self.batch(runs[0].0).num_columns())
            .map(|c| {
                let sources: Vec<&Column> = self
                    .held
                    .iter()
                    .map(|h| h.batch.columns().get(c).unwrap_or(&empty))
                    .collect();
                Column::gather_runs(&sources, runs, rows)
            })
            .collect();
        Batch::with_row_count(columns, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::key;
    use super::*;
    use crate::{DataType, Value};
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn unsorted_or_too_many_streams_are_given_back() {
        let specs = [key(0, false, false)];
        let batch = |v: Vec<i64>| Batch::try_new(vec![Column::from_i64(v)]).unwrap();
        let keys = |b: &Batch| vec![Some(b.column(0).clone())];
        let unsorted = batch(vec![1, 3, 2]);
        let got = Merge::try_new(
            &specs,
            &[None],
            vec![unsorted.clone()],
            vec![keys(&unsorted)],
        );
        let (back, _) = got.err().expect("an unsorted batch is not merged");
        assert_eq!(back, vec![unsorted]);
        // Each batch descends from the previous one: every batch needs a stream of its own.
        let many: Vec<Batch> = (0..=MAX_STREAMS as i64)
            .map(|i| batch(vec![100 - 2 * i, 101 - 2 * i]))
            .collect();
        let many_keys = many.iter().map(keys).collect();
        let (back, _) = Merge::try_new(&specs, &[None], many.clone(), many_keys)
            .err()
            .expect("too many streams");
        assert_eq!(back, many);
    }

    /// Streams of sorted batches with many ties and NULLs, interleaved at random: the merge
    /// gives every row once, in the stable order by the keys.
    #[test]
    fn merges_interleaved_streams_in_stable_order() {
        let mut rng = StdRng::seed_from_u64(7);
        for case in 0..40 {
            let descending = case % 2 == 1;
            let nulls_first = case % 4 >= 2;
            let two_keys = case % 8 >= 4;
            let with_nulls = case % 3 == 0;
            let specs: Vec<SortKey> = if two_keys {
                vec![key(0, descending, nulls_first), key(1, false, true)]
            } else {
                vec![key(0, descending, nulls_first)]
            };
            // Rows: (k, s, arrival number); each stream sorted by the keys.
            let streams = rng.random_range(1..5usize);
            let mut per_stream: Vec<Vec<Vec<Value>>> = Vec::new();
            for _ in 0..streams {
                let n = rng.random_range(0..60usize);
                let mut rows: Vec<Vec<Value>> = (0..n)
                    .map(|_| {
                        let k = if with_nulls && rng.random_range(0..10) == 0 {
                            Value::Null
                        } else {
                            Value::Int(rng.random_range(0..8))
                        };
                        let s = if rng.random_range(0..10) == 0 {
                            Value::Null
                        } else {
                            Value::Str(format!("s{}", rng.random_range(0..3)))
                        };
                        vec![k, s]
                    })
                    .collect();
                rows.sort_by(|a, b| {
                    specs
                        .iter()
                        .enumerate()
                        .map(|(k, sp)| match (&a[k], &b[k]) {
                            (Value::Null, Value::Null) => Ordering::Equal,
                            (Value::Null, _) if sp.nulls_first => Ordering::Less,
                            (Value::Null, _) => Ordering::Greater,
                            (_, Value::Null) if sp.nulls_first => Ordering::Greater,
                            (_, Value::Null) => Ordering::Less,
                            (x, y) if sp.descending => y.sort_cmp(x),
                            (x, y) => x.sort_cmp(y),
                        })
                        .find(|o| o.is_ne())
                        .unwrap_or(Ordering::Equal)
                });
                per_stream.push(rows);
            }
            // Cut each stream into batches and interleave the batches at random.
            let mut cuts: Vec<VecDeque<Vec<Vec<Value>>>> = per_stream
                .into_iter()
                .map(|rows| {
                    let mut out = VecDeque::new();
                    let mut rest = rows.as_slice();
                    while !rest.is_empty() {
                        let n = rng.random_range(1..=rest.len().min(9));
                        out.push_back(rest[..n].to_vec());
                        rest = &rest[n..];
                    }
                    out
                })
                .collect();
            let mut arrival: Vec<Vec<Vec<Value>>> = Vec::new();
            while cuts.iter().any(|c| !c.is_empty()) {
                let s = rng.random_range(0..cuts.len());
                if let Some(b) = cuts[s].pop_front() {
                    arrival.push(b);
                }
            }
            // Number the rows in arrival order.
            let mut next = 0i64;
            let types = [DataType::Int64, DataType::Utf8, DataType::Int64];
            let batches: Vec<Batch> = arrival
                .into_iter()
                .map(|rows| {
                    let rows: Vec<Vec<Value>> = rows
                        .into_iter()
                        .map(|mut r| {
                            r.push(Value::Int(next));
                            next += 1;
                            r
                        })
                        .collect();
                    Batch::from_rows(&types, &rows).unwrap()
                })
                .collect();
            // The keys are columns of the input: read from the batches (as the sort does) in
            // some cases, evaluated into columns of their own in the others.
            let read = case % 5 < 2;
            let inputs: Vec<Option<usize>> = (0..specs.len()).map(|k| read.then_some(k)).collect();
            let keys: Vec<Vec<Option<Column>>> = batches
                .iter()
                .map(|b| {
                    (0..specs.len())
                        .map(|k| (!read).then(|| b.column(k).clone()))
                        .collect()
                })
                .collect();
            let all = if batches.is_empty() {
                Batch::empty(&types)
            } else {
                Batch::concat(&batches).unwrap()
            };
            let all_keys: Vec<&Column> = (0..specs.len()).map(|k| all.column(k)).collect();
            let want =
                super::super::order::sort_indices(&all_keys, &specs, all.num_rows(), None, &[]);
            let want: Vec<Vec<Value>> = all.take(&want).rows();
            let Ok(mut merge) = Merge::try_new(&specs, &inputs, batches, keys) else {
                panic!("case {case}: sorted streams are merged");
            };
            let size = rng.random_range(1..20);
            let mut got = Vec::new();
            let held = merge.memory_size();
            while let Some(b) = merge.next_batch(size).unwrap() {
                assert!(b.num_rows() <= size && b.num_rows() > 0);
                assert!(merge.memory_size() <= held);
                got.extend(b.rows());
            }
            assert!(!merge.has_rows());
            assert_eq!(merge.memory_size(), 0, "case {case}");
            assert_eq!(got, want, "case {case}");
        }
    }
}
