//! Union kernel: `UNION ALL` of any number of inputs with the same schema. Every input batch
//! is passed on as it is, in arrival order; the union ends when every input has ended.

use super::operator::{output_pending, Operator};
use crate::{Batch, Result};

/// Concatenation of its inputs.
#[derive(Default)]
pub struct UnionOp {
    /// The last pushed batch, until it is taken.
    pending: Option<Batch>,
}

impl UnionOp {
    /// A union over any number of inputs.
    pub fn new() -> Self {
        UnionOp::default()
    }
}

impl Operator for UnionOp {
    fn name(&self) -> &'static str {
        "Union"
    }

    fn push(&mut self, _port: usize, batch: Batch) -> Result<()> {
        if self.pending.is_some() {
            return Err(output_pending(self.name()));
        }
        if !batch.is_empty() {
            self.pending = Some(batch);
        }
        Ok(())
    }

    fn finish(&mut self, _port: usize) -> Result<()> {
        Ok(())
    }

    fn next_output(&mut self) -> Result<Option<Batch>> {
        Ok(self.pending.take())
    }

    fn has_output(&self) -> bool {
        self.pending.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::drain;
    use crate::Column;

    #[test]
    fn passes_every_input_batch_on() {
        let mut op = UnionOp::new();
        let mut out = Vec::new();
        for (port, vals) in [(0, vec![1, 2]), (1, vec![3]), (0, vec![])] {
            let b = Batch::try_new(vec![Column::from_i64(vals)]).unwrap();
            op.push(port, b).unwrap();
            drain(&mut op, &mut out).unwrap();
        }
        op.finish(0).unwrap();
        op.finish(1).unwrap();
        drain(&mut op, &mut out).unwrap();
        let rows: usize = out.iter().map(|b| b.num_rows()).sum();
        assert_eq!(out.len(), 2, "the empty batch is dropped");
        assert_eq!(rows, 3);
    }
}
