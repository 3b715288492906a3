//! Scan source: reads stored chunks of full table rows, keeps the rows its filter selects,
//! and copies the projected columns of those rows straight into output batches of exactly the
//! context's batch size (except the last one).
//!
//! A table partition holds few rows (about a hundred in the seed benchmark), so a scan reads
//! many small chunks: per chunk it only computes a selection of row numbers
//! (`kernels/row_filter.rs`: typed loops for comparisons with constants, each conjunct narrowing
//! the selection), and output columns are built once per output batch rather than once per
//! chunk. A hash join above the scan may send it a filter of its build keys
//! ([`ScanSource::add_key_filter`]): rows it rules out are dropped with the others, before
//! they are copied.

use super::hash::hash_rows;
use super::key_filter::KeyFilter;
use super::operator::ExecContext;
use super::row_filter::RowFilter;
use crate::column::{Column, ColumnBuilder};
use crate::storage::ScanChunk;
use crate::{Batch, DataType, Expr, Result};
use std::sync::Arc;

/// The chunk being read and the part of its selection not yet copied out.
struct Current {
    chunk: Arc<Batch>,
    /// Selected rows (`None`: every row).
    rows: Option<Vec<u32>>,
    /// Position in the selection (or row number) to copy from next.
    next: usize,
}

impl Current {
    fn len(&self) -> usize {
        self.rows.as_ref().map_or(self.chunk.num_rows(), Vec::len)
    }
}

/// A join's filter of its build keys, tested on the stored rows before they are copied.
struct ScanKeyFilter {
    filter: KeyFilter,
    /// The table columns the keys are, in key order.
    columns: Vec<usize>,
    /// Rows tested and rows ruled out so far.
    tested: usize,
    ruled_out: usize,
    /// Scratch for the keys' hashes.
    hashes: Vec<u64>,
}

impl ScanKeyFilter {
    /// Narrows the selection of `chunk` in `sel` (`selected`: whether `sel` holds one, else
    /// every row is selected) to the rows the filter may keep; returns the rows ruled out.
    /// `sel` holds a selection afterwards.
    fn narrow(&mut self, chunk: &Batch, selected: bool, sel: &mut Vec<u32>) -> usize {
        let cols: Vec<&Column> = self.columns.iter().map(|&c| chunk.column(c)).collect();
        hash_rows(&cols, &mut self.hashes);
        let before = if selected {
            sel.len()
        } else {
            chunk.num_rows()
        };
        let (filter, hashes) = (&self.filter, &self.hashes);
        if selected {
            sel.retain(|&r| filter.may_contain(hashes[r as usize]));
        } else {
            sel.clear();
            sel.extend(
                (0..chunk.num_rows() as u32).filter(|&r| filter.may_contain(hashes[r as usize])),
            );
        }
        let out = before - sel.len();
        self.tested += before;
        self.ruled_out += out;
        out
    }

    /// Whether it has been tried long enough and rules out too few rows to pay.
    fn not_worth_it(&self) -> bool {
        self.tested >= KEY_FILTER_TRIAL_ROWS && self.ruled_out * 10 < self.tested
    }
}

/// Rows a scan's key filter tests before it is judged: one that rules out less than a tenth
/// of them is let go.
const KEY_FILTER_TRIAL_ROWS: usize = 100_000;

/// Reads stored chunks: filter, then projection, coalescing output to the batch size.
pub struct ScanSource {
    chunks: std::vec::IntoIter<ScanChunk>,
    /// Rows the chunks not yet read offer: with the current chunk's, the most the scan can
    /// still output, which bounds the room its output columns are made with (a point lookup
    /// makes room for its row, not for a whole batch).
    unread: usize,
    filter: RowFilter,
    projection: Vec<usize>,
    ctx: ExecContext,
    current: Option<Current>,
    /// Selection scratch space, reused across chunks.
    scratch: Vec<u32>,
    /// Output columns being built (created from the first chunk's types).
    out: Vec<ColumnBuilder>,
    out_rows: usize,
    /// The filter of a join's build keys that the rows must pass, if one came.
    key_filter: Option<ScanKeyFilter>,
    /// Rows its key filters ruled out, in all.
    key_filtered: u64,
    /// The stored rows' column types (empty when there are no chunks).
    table_types: Vec<DataType>,
}

impl ScanSource {
    /// A scan over `chunks` (full table rows): keeps rows where `filter` is TRUE, then outputs
    /// the table columns listed in `projection`.
    pub fn new(
        chunks: Vec<Arc<Batch>>,
        filter: Option<Expr>,
        projection: Vec<usize>,
        ctx: ExecContext,
    ) -> Self {
        let chunks = chunks.into_iter().map(ScanChunk::from).collect();
        ScanSource::of_selections(chunks, filter, projection, ctx)
    }

    /// A scan over chunks with preselected rows (from an index lookup): keeps the selected
    /// rows where `filter` is TRUE, then outputs the table columns listed in `projection`.
    pub fn of_selections(
        chunks: Vec<ScanChunk>,
        filter: Option<Expr>,
        projection: Vec<usize>,
        ctx: ExecContext,
    ) -> Self {
        let table_types = chunks
            .first()
            .map(|c| c.rows.columns().iter().map(Column::data_type).collect())
            .unwrap_or_default();
        ScanSource {
            table_types,
            unread: chunks.iter().map(ScanChunk::offered).sum(),
            chunks: chunks.into_iter(),
            filter: RowFilter::new(filter, &ctx.params),
            projection,
            ctx,
            current: None,
            scratch: Vec::new(),
            out: Vec::new(),
            out_rows: 0,
            key_filter: None,
            key_filtered: 0,
        }
    }

    /// From now on, rows whose keys `filter` rules out are dropped before they are copied:
    /// `keys` are the key expressions over the scan's output (a hash join's probe keys, the
    /// filter made of its build keys). True when it applies: every key a column the scan
    /// outputs, of the types the filter was made for.
    pub fn add_key_filter(&mut self, filter: KeyFilter, keys: &[Expr]) -> bool {
        let types = &self.table_types;
        let columns: Option<Vec<usize>> = keys
            .iter()
            .map(|k| match k {
                Expr::Column(j) => self.projection.get(*j).copied(),
                _ => None,
            })
            .collect();
        let Some(columns) = columns else {
            return false;
        };
        let key_types: Option<Vec<DataType>> =
            columns.iter().map(|&c| types.get(c).copied()).collect();
        if !key_types.is_some_and(|t| filter.applies_to(&t)) {
            return false;
        }
        self.key_filter = Some(ScanKeyFilter {
            filter,
            columns,
            tested: 0,
            ruled_out: 0,
            hashes: Vec::new(),
        });
        true
    }

    /// Rows the key filters ruled out so far.
    pub fn key_filtered_rows(&self) -> u64 {
        self.key_filtered
    }

    /// Reads chunks until one has selected rows, making it current; false at the end.
    fn advance(&mut self) -> Result<bool> {
        for next in self.chunks.by_ref() {
            self.unread -= next.offered();
            let ScanChunk {
                rows: chunk,
                selection,
            } = next;
            if chunk.num_rows() == 0 {
                continue;
            }
            if let Some(&bad) = self.projection.iter().find(|&&i| i >= chunk.num_columns()) {
                return Err(crate::Error::Internal(format!(
                    "scan projects column #{bad} of a {}-column table",
                    chunk.num_columns()
                )));
            }
            if selection
                .as_ref()
                .is_some_and(|s| s.iter().any(|&r| r as usize >= chunk.num_rows()))
            {
                return Err(crate::Error::Internal(
                    "scan selection points past its chunk".into(),
                ));
            }
            let some = self.filter.select(
                &chunk,
                selection.as_deref(),
                &self.ctx.params,
                &mut self.scratch,
            )?;
            let some = match &mut self.key_filter {
                Some(kf) => {
                    let out = kf.narrow(&chunk, some, &mut self.scratch);
                    self.key_filtered += out as u64;
                    if kf.not_worth_it() {
                        self.key_filter = None;
                    }
                    true
                }
                None => some,
            };
            if some && self.scratch.is_empty() {
                continue;
            }
            let rows = if some && self.scratch.len() < chunk.num_rows() {
                Some(std::mem::take(&mut self.scratch))
            } else {
                None
            };
            self.current = Some(Current {
                chunk,
                rows,
                next: 0,
            });
            return Ok(true);
        }
        Ok(false)
    }

    /// Copies up to `room` selected rows of the current chunk into the output columns.
    fn copy_rows(&mut self, room: usize) {
        let Some(cur) = &mut self.current else {
            return;
        };
        if self.out.len() != self.projection.len() {
            let left = cur.len() - cur.next + self.unread;
            let size = self.ctx.batch_size.min(left).max(1);
            self.out = self
                .projection
                .iter()
                .map(|&i| ColumnBuilder::new(cur.chunk.column(i).data_type(), size))
                .collect();
        }
        let take = room.min(cur.len() - cur.next);
        let range = cur.next..cur.next + take;
        for (builder, &i) in self.out.iter_mut().zip(&self.projection) {
            let col = cur.chunk.column(i);
            match &cur.rows {
                None if take == col.len() => builder.extend_from(col),
                None => builder.extend_range(col, range.clone()),
                Some(rows) => builder.extend_rows(col, &rows[range.clone()]),
            }
        }
        cur.next += take;
        self.out_rows += take;
        if cur.next == cur.len() {
            // Give the selection's buffer back for the next chunk.
            if let Some(Current {
                rows: Some(rows), ..
            }) = self.current.take()
            {
                self.scratch = rows;
            }
        }
    }

    /// The output rows built so far, as a batch.
    fn finish_batch(&mut self) -> Result<Batch> {
        let rows = std::mem::take(&mut self.out_rows);
        let cols: Vec<Column> = std::mem::take(&mut self.out)
            .into_iter()
            .map(ColumnBuilder::finish)
            .collect();
        Batch::with_row_count(cols, rows)
    }

    /// The next output batch, or `None` at the end. Never returns an empty batch.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let size = self.ctx.batch_size.max(1);
        loop {
            if self.out_rows == size {
                return self.finish_batch().map(Some);
            }
            if self.current.is_none() && !self.advance()? {
                if self.out_rows == 0 {
                    return Ok(None);
                }
                return self.finish_batch().map(Some);
            }
            self.copy_rows(size - self.out_rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, Value};

    fn chunks(sizes: &[usize]) -> Vec<Arc<Batch>> {
        let mut next = 0i64;
        sizes
            .iter()
            .map(|&s| {
                let a: Vec<i64> = (next..next + s as i64).collect();
                next += s as i64;
                let b: Vec<String> = a.iter().map(|v| format!("s{v}")).collect();
                Arc::new(Batch::try_new(vec![Column::from_i64(a), Column::from_strs(&b)]).unwrap())
            })
            .collect()
    }

    fn drain(mut s: ScanSource) -> Vec<Batch> {
        let mut out = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            assert!(!b.is_empty());
            out.push(b);
        }
        out
    }

    #[test]
    fn output_room_is_bounded_by_the_rows_left_to_read() {
        // A lookup of one row in a 1,000-row chunk, and a full scan of 1,500 rows, both with
        // batches of 4,096 rows: the output columns make room for the rows there are.
        let lookup = ScanChunk {
            rows: chunks(&[1000]).remove(0),
            selection: Some(vec![417]),
        };
        let ctx = ExecContext::new(vec![]);
        assert_eq!(ctx.batch_size, 4096);
        let out = drain(ScanSource::of_selections(
            vec![lookup],
            None,
            vec![0],
            ctx.clone(),
        ));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].column(0).value(0), Value::Int(417));
        assert_eq!(out[0].column(0).memory_size(), 8, "room for one BIGINT");
        let out = drain(ScanSource::new(chunks(&[1000, 500]), None, vec![0], ctx));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].num_rows(), 1500);
        assert_eq!(out[0].column(0).memory_size(), 1500 * 8);
    }

    #[test]
    fn coalesces() {
        let mut ctx = ExecContext::new(vec![Value::Int(2)]);
        ctx.batch_size = 10;
        let filter = Expr::col(0)
            .binary(BinaryOp::Mod, Expr::Param(0))
            .eq(Expr::lit(0));
        let s = ScanSource::new(
            chunks(&[7, 0, 13, 25, 3]),
            Some(filter),
            vec![1, 0],
            ctx.clone(),
        );
        let out = drain(s);
        let sizes: Vec<usize> = out.iter().map(Batch::num_rows).collect();
        assert_eq!(sizes, vec![10, 10, 4]);
        let all: Vec<i64> = out
            .iter()
            .flat_map(|b| b.column(1).as_i64().unwrap().to_vec())
            .collect();
        assert_eq!(all, (0..48).step_by(2).collect::<Vec<_>>());
        assert_eq!(out[0].column(0).str_at(1), "s2");

        let s = ScanSource::new(chunks(&[10, 10, 5]), None, vec![], ctx.clone());
        let sizes: Vec<usize> = drain(s).iter().map(Batch::num_rows).collect();
        assert_eq!(sizes, vec![10, 10, 5]);
        let s = ScanSource::new(vec![], None, vec![0], ctx);
        assert!(drain(s).is_empty());
    }

    #[test]
    fn integer_comparisons_skip_nulls_and_match_the_general_path() {
        let values: Vec<Value> = (0..30)
            .map(|i| {
                if i % 7 == 3 {
                    Value::Null
                } else {
                    Value::Int(i % 10)
                }
            })
            .collect();
        let col = Column::from_values(crate::DataType::Int64, &values).unwrap();
        let ids = Column::from_i64((0..30).collect());
        let chunk = Arc::new(Batch::try_new(vec![col, ids]).unwrap());
        let ctx = ExecContext::new(vec![Value::Int(4), Value::Null]);
        let run = |filter: Expr| {
            let s = ScanSource::new(vec![chunk.clone()], Some(filter), vec![1], ctx.clone());
            drain(s)
                .iter()
                .flat_map(|b| b.column(0).as_i64().unwrap().to_vec())
                .collect::<Vec<i64>>()
        };
        let want = |f: &dyn Fn(i64) -> bool| -> Vec<i64> {
            (0..30).filter(|&i| i % 7 != 3 && f(i % 10)).collect()
        };
        assert_eq!(run(Expr::col(0).eq(Expr::Param(0))), want(&|v| v == 4));
        // Mirrored, and a conjunction.
        let range = Expr::lit(2)
            .binary(BinaryOp::Lt, Expr::col(0))
            .and(Expr::col(0).binary(BinaryOp::LtEq, Expr::lit(6)));
        assert_eq!(run(range), want(&|v| v > 2 && v <= 6));
        assert_eq!(
            run(Expr::col(0).binary(BinaryOp::NotEq, Expr::lit(1))),
            want(&|v| v != 1)
        );
        // A comparison with NULL keeps nothing.
        assert!(run(Expr::col(0).eq(Expr::Param(1))).is_empty());
        // A float constant takes the general path with the same answer.
        assert_eq!(
            run(Expr::col(0).binary(BinaryOp::Gt, Expr::lit(7.5))),
            want(&|v| v > 7)
        );
    }

    #[test]
    fn string_columns_and_a_batch_boundary_inside_a_chunk() {
        let mut ctx = ExecContext::new(vec![]);
        ctx.batch_size = 4;
        let filter = Expr::col(1).eq(Expr::lit("s3")).binary(
            BinaryOp::Or,
            Expr::col(0).binary(BinaryOp::Gt, Expr::lit(5)),
        );
        let s = ScanSource::new(chunks(&[9]), Some(filter), vec![1], ctx);
        let out = drain(s);
        let names: Vec<String> = out
            .iter()
            .flat_map(|b| {
                (0..b.num_rows())
                    .map(|i| b.column(0).str_at(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(names, vec!["s3", "s6", "s7", "s8"]);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn preselected_rows_are_narrowed_by_the_filter() {
        let pieces = |sel: Vec<u32>| {
            vec![ScanChunk {
                rows: chunks(&[10]).remove(0),
                selection: Some(sel),
            }]
        };
        let ctx = ExecContext::new(vec![]);
        let run = |filter: Option<Expr>| {
            let s =
                ScanSource::of_selections(pieces(vec![1, 4, 5, 8]), filter, vec![0], ctx.clone());
            drain(s)
                .iter()
                .flat_map(|b| b.column(0).as_i64().unwrap().to_vec())
                .collect::<Vec<i64>>()
        };
        assert_eq!(run(None), vec![1, 4, 5, 8]);
        let ints = Expr::col(0).binary(BinaryOp::GtEq, Expr::lit(5));
        assert_eq!(run(Some(ints)), vec![5, 8]);
        let general = Expr::col(1).eq(Expr::lit("s4"));
        assert_eq!(run(Some(general)), vec![4]);
        let mut bad = ScanSource::of_selections(pieces(vec![10]), None, vec![0], ctx.clone());
        assert!(
            bad.next_batch().is_err(),
            "a selection past the chunk is an error"
        );
    }

    /// A join's key filter drops the rows it rules out, after the scan's own filter, and
    /// keeps every row whose key it holds; one for keys that are not plain output columns,
    /// or of other types, is refused.
    #[test]
    fn a_key_filter_drops_the_rows_it_rules_out() {
        let build: Vec<i64> = (0..1000).filter(|k| k % 10 == 3).collect();
        let filter = KeyFilter::of_columns(&[Column::from_i64(build.clone())], build.len());
        let filtered = Some(Expr::col(0).binary(BinaryOp::Lt, Expr::lit(500i64)));
        let mut scan = ScanSource::new(
            chunks(&[300, 400, 300]),
            filtered,
            vec![1, 0],
            ExecContext::new(vec![]),
        );
        assert!(
            !scan.add_key_filter(filter.clone(), &[Expr::col(0)]),
            "a text column"
        );
        let plus = Expr::col(1).binary(BinaryOp::Add, Expr::lit(0i64));
        assert!(
            !scan.add_key_filter(filter.clone(), &[plus]),
            "not a plain column"
        );
        assert!(scan.add_key_filter(filter, &[Expr::col(1)]));
        let keys: Vec<i64> = drain(scan)
            .iter()
            .flat_map(|b| b.column(1).as_i64().unwrap().to_vec())
            .collect();
        let wanted: Vec<i64> = build.iter().copied().filter(|&k| k < 500).collect();
        assert!(wanted.iter().all(|k| keys.contains(k)));
        // The filter's false positives aside, only the wanted keys are left.
        assert!(
            keys.len() < wanted.len() + 10,
            "{} rows for {} keys",
            keys.len(),
            wanted.len()
        );
        assert!(keys.iter().all(|&k| k < 500));
    }
}
