//! The hash join's index of its build rows, and the walk that finds a probe batch's matches.
//!
//! The index is chained: a hash table maps a key to the first build row holding it (`heads`)
//! and `next` links each row to the next one of its chain, in input order. A head whose
//! chain holds just that row is marked ([`SINGLE`]), so the common case of unique build keys
//! never reads `next`.
//!
//! One key of a 64-bit integer type (BIGINT, TIMESTAMP) is indexed by the value itself, in an
//! [`IntTable`]: every row of a chain has the probe row's key, so no key comparison is needed,
//! no hashes are computed beforehand, and the walk prefetches the slots of rows ahead. Any other keys are indexed by their [`hash_rows`] hash, and each
//! candidate of a chain is compared with the probe row key by key.

use crate::column::ColumnData;
use crate::kernels::hash::{hash_rows, rows_equal, IdentityBuild};
use crate::kernels::int_table::{IntTable, PREFETCH_AHEAD, VACANT};
use crate::{Column, Error, Result};
use hashbrown::HashMap;

/// End of a chain (and a probe cursor whose row's chain was not looked up yet).
pub(crate) const NONE: u32 = VACANT;

/// Marks a head whose chain has no other row.
const SINGLE: u32 = 1 << 31;

/// The most build rows an index takes (row numbers leave the top bit for [`SINGLE`]).
const MAX_ROWS: usize = (SINGLE - 1) as usize;

/// Key → first build row, with the [`SINGLE`] mark.
enum Heads {
    /// One 64-bit integer key, by value.
    Int(IntTable),
    /// Any keys, by row hash.
    Hashed(HashMap<u64, u32, IdentityBuild>),
}

/// A build side's chained hash index.
pub(crate) struct BuildIndex {
    heads: Heads,
    next: Vec<u32>,
}

/// The values of a key column whose type is a 64-bit integer.
fn int_values(c: &Column) -> Option<&[i64]> {
    match &c.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => Some(v),
        _ => None,
    }
}

/// Whether keys of these columns are indexed by value (one 64-bit integer key).
fn by_value(keys: &[Column]) -> bool {
    matches!(keys, [k] if int_values(k).is_some())
}

/// Where a probe batch's walk stands: the probe row, and the next build row to compare in
/// its chain ([`NONE`] before its chain was looked up).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor {
    /// The probe row whose matches are being gathered.
    pub row: usize,
    /// The next build row of `row`'s chain, or [`NONE`].
    pub chain: u32,
}

/// A probe batch's keys as the walk reads them.
pub(crate) struct ProbeKeys<'a> {
    /// Key columns (of the build keys' types).
    pub keys: &'a [Column],
    /// Their row hashes, when the index needs them ([`BuildIndex::needs_hashes`]).
    pub hashes: &'a [u64],
    /// Rows with a NULL key (never match).
    pub null_rows: Option<&'a [bool]>,
}

/// What one walk may collect and where it puts it.
pub(crate) struct Matches<'a> {
    /// Most pairs to collect.
    pub size: usize,
    /// "Has a match" per build row (read when skipping matched build rows).
    pub build_matched: &'a [bool],
    /// Probe rows of the pairs found.
    pub probe_idx: &'a mut Vec<u32>,
    /// Build rows of the pairs found.
    pub build_idx: &'a mut Vec<u32>,
}

impl BuildIndex {
    /// Heap bytes of the index of `n` rows, before it is built (hashbrown's sizing for
    /// `n` distinct keys, and the chains).
    pub fn estimate(n: usize) -> usize {
        let hashed = super::keys::hash_table_bytes(n, std::mem::size_of::<(u64, u32)>());
        hashed.max(IntTable::bytes_for(n)) + n * std::mem::size_of::<u32>()
    }

    /// Indexes the `n` build rows of `keys`, leaving out rows marked in `null_rows`; `hashes`
    /// is scratch space. Fails when there are more rows than an index can number.
    pub fn build(
        keys: &[Column],
        n: usize,
        null_rows: Option<&[bool]>,
        hashes: &mut Vec<u64>,
    ) -> Result<BuildIndex> {
        if n > MAX_ROWS {
            return Err(Error::Memory(format!(
                "a hash join build side of {n} rows is more than the {MAX_ROWS} it can index"
            )));
        }
        let mut next = vec![NONE; n];
        let skip = |row: usize| null_rows.is_some_and(|m| m[row]);
        // Rows go in in reverse, so that chains list them in input order.
        let heads = match keys.first().and_then(int_values) {
            Some(values) if by_value(keys) => {
                let mut heads = IntTable::with_capacity(n);
                let prefetch = heads.worth_prefetching();
                for row in (0..n).rev().filter(|&r| !skip(r)) {
                    if let Some(ahead) = row.checked_sub(PREFETCH_AHEAD).filter(|_| prefetch) {
                        heads.prefetch(values[ahead]);
                    }
                    next[row] = heads.replace(values[row], row as u32);
                }
                mark_single(heads.values_mut(), &next);
                Heads::Int(heads)
            }
            _ => {
                let mut heads: HashMap<u64, u32, IdentityBuild> =
                    HashMap::with_capacity_and_hasher(n, IdentityBuild::default());
                if n > 0 {
                    hash_rows(keys, hashes);
                }
                for row in (0..n).rev().filter(|&r| !skip(r)) {
                    let head = heads.entry(hashes[row]).or_insert(NONE);
                    next[row] = *head;
                    *head = row as u32;
                }
                mark_single(heads.values_mut(), &next);
                Heads::Hashed(heads)
            }
        };
        Ok(BuildIndex { heads, next })
    }

    /// Whether no build row is indexed (none, or all with NULL keys).
    pub fn is_empty(&self) -> bool {
        match &self.heads {
            Heads::Int(h) => h.len() == 0,
            Heads::Hashed(h) => h.is_empty(),
        }
    }

    /// Heap bytes held.
    pub fn memory_size(&self) -> usize {
        let heads = match &self.heads {
            Heads::Int(h) => h.memory_size(),
            Heads::Hashed(h) => h.allocation_size(),
        };
        heads + self.next.capacity() * std::mem::size_of::<u32>()
    }

    /// Whether a probe needs the [`hash_rows`] hashes of its keys.
    pub fn needs_hashes(&self) -> bool {
        matches!(self.heads, Heads::Hashed(_))
    }

    /// Walks the chains from `cursor`, collecting up to `m.size` key-matching pairs, and
    /// leaves the cursor after the last one. `FIRST_ONLY`: one match per probe row suffices;
    /// `SKIP_BUILD`: build rows already matched are not compared again.
    pub fn find_matches<const FIRST_ONLY: bool, const SKIP_BUILD: bool>(
        &self,
        cursor: &mut Cursor,
        probe: &ProbeKeys<'_>,
        build_keys: &[Column],
        m: Matches<'_>,
    ) {
        m.probe_idx.clear();
        m.build_idx.clear();
        match &self.heads {
            Heads::Int(heads) => {
                let Some(values) = probe.keys.first().and_then(int_values) else {
                    return;
                };
                let n = values.len();
                let prefetch = heads.worth_prefetching();
                let lookup = |i: usize| {
                    if let Some(&ahead) = values.get(i + PREFETCH_AHEAD).filter(|_| prefetch) {
                        heads.prefetch(ahead);
                    }
                    heads.get(values[i])
                };
                walk::<FIRST_ONLY, SKIP_BUILD>(cursor, n, probe, &self.next, m, lookup, |_, _| {
                    true
                });
            }
            Heads::Hashed(heads) => {
                let hashes = probe.hashes;
                let lookup = |i: usize| heads.get(&hashes[i]).copied();
                let equal = |i: usize, j: u32| rows_equal(probe.keys, i, build_keys, j as usize);
                walk::<FIRST_ONLY, SKIP_BUILD>(
                    cursor,
                    hashes.len(),
                    probe,
                    &self.next,
                    m,
                    lookup,
                    equal,
                );
            }
        }
    }
}

/// Marks the heads whose chain has a single row.
fn mark_single<'a>(heads: impl Iterator<Item = &'a mut u32>, next: &[u32]) {
    for h in heads {
        if next[*h as usize] == NONE {
            *h |= SINGLE;
        }
    }
}

/// The chain walk over probe rows `cursor.row..n`: `lookup` gives a probe row's head,
/// `equal` whether a probe row and a build row have equal keys.
#[inline(always)]
fn walk<const FIRST_ONLY: bool, const SKIP_BUILD: bool>(
    cursor: &mut Cursor,
    n: usize,
    probe: &ProbeKeys<'_>,
    next: &[u32],
    m: Matches<'_>,
    lookup: impl Fn(usize) -> Option<u32>,
    equal: impl Fn(usize, u32) -> bool,
) {
    let Matches {
        size,
        build_matched,
        probe_idx,
        build_idx,
    } = m;
    let null_rows = probe.null_rows;
    let (mut i, mut j) = (cursor.row, cursor.chain);
    let mut full = false;
    while i < n {
        if j == NONE {
            if null_rows.is_some_and(|m| m[i]) {
                i += 1;
                continue;
            }
            let Some(head) = lookup(i) else {
                i += 1;
                continue;
            };
            if head & SINGLE != 0 {
                // The chain's only row.
                let row = head & !SINGLE;
                if !(SKIP_BUILD && build_matched[row as usize]) && equal(i, row) {
                    probe_idx.push(i as u32);
                    build_idx.push(row);
                    full = probe_idx.len() >= size;
                }
                i += 1;
                if full {
                    break;
                }
                continue;
            }
            j = head;
        }
        while j != NONE {
            let cur = j;
            j = next[cur as usize];
            if SKIP_BUILD && build_matched[cur as usize] {
                continue;
            }
            if equal(i, cur) {
                probe_idx.push(i as u32);
                build_idx.push(cur);
                if FIRST_ONLY {
                    j = NONE;
                }
                if probe_idx.len() >= size {
                    full = true;
                    break;
                }
            }
        }
        if j == NONE {
            // `i`'s chain is exhausted.
            i += 1;
        }
        if full {
            break;
        }
    }
    cursor.row = i;
    cursor.chain = j;
}
