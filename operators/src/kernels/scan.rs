//! scan kernel.
use super::ExecContext;
use crate::{Batch, Expr, Result};
use std::sync::Arc;
/// Reads stored chunks: filter, then projection, coalescing output to the batch size.
pub struct ScanSource;
impl ScanSource {
    /// A scan over `chunks` (full table rows).
    pub fn new(chunks: Vec<Arc<Batch>>, filter: Option<Expr>, projection: Vec<usize>, ctx: ExecContext) -> Self { let _ = (chunks, filter, projection, ctx); unimplemented!() }
    /// The next output batch, or `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> { unimplemented!() }
}
