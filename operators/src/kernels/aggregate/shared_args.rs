//! Subexpressions that several aggregate arguments share, computed once per batch. TPC-H Q1
//! sums `l_extendedprice * (1 - l_discount)` and `l_extendedprice * (1 - l_discount) * (1 +
//! l_tax)`: the product is computed once, appended to the batch as a column, and both
//! arguments read it.
//!
//! Only subexpressions every row computes anyway are shared: whole arguments, and
//! arithmetic, negation and casts reached from an argument's root through arithmetic,
//! negation and casts (never one under a CASE, a function or a boolean operator, which may
//! evaluate it for some rows only), without a volatile function. The largest subexpression that occurs twice is taken first, then the
//! next in the arguments rewritten to read it, up to [`MOST`].

use crate::eval::evaluate;
use crate::{Batch, Expr, Result, Value};

/// The most subexpressions shared.
const MOST: usize = 8;

/// The aggregate arguments, and the subexpressions they share once the input's width is known.
#[derive(Debug)]
pub(super) struct SharedArgs {
    /// The arguments as planned (`None` for `COUNT(*)`).
    original: Vec<Option<Expr>>,
    /// For the input width they were planned for: the shared subexpressions (the `k`-th over
    /// the input's columns and columns `width..width + k`) and the arguments reading them.
    planned: Option<(usize, Vec<Expr>, Vec<Option<Expr>>)>,
}

/// Whether `e` is computed by every row that computes its parent: the nodes looked into.
fn strict(e: &Expr) -> bool {
    match e {
        Expr::Binary { op, .. } => op.is_arithmetic(),
        Expr::Negate(_) | Expr::Cast { .. } => true,
        _ => false,
    }
}

/// Counts the shareable subexpressions of `e` (an argument's root when `root`) into `seen`.
fn collect(e: &Expr, root: bool, seen: &mut Vec<(Expr, usize)>) {
    let computed = !matches!(
        e,
        Expr::Column(_) | Expr::OuterColumn(_) | Expr::Literal(_) | Expr::Param(_)
    );
    if !(root || strict(e)) || !computed || e.is_volatile() {
        return;
    }
    match seen.iter_mut().find(|(x, _)| x == e) {
        Some((_, count)) => *count += 1,
        None => seen.push((e.clone(), 1)),
    }
    if strict(e) {
        for child in e.children() {
            collect(child, false, seen);
        }
    }
}

/// The nodes of `e`.
fn size(e: &Expr) -> usize {
    1 + e.children().into_iter().map(size).sum::<usize>()
}

impl SharedArgs {
    /// The arguments of the aggregates, as planned.
    pub(super) fn new(original: Vec<Option<Expr>>) -> Self {
        SharedArgs {
            original,
            planned: None,
        }
    }

    /// Plans the sharing for an input of `width` columns (once per width).
    fn plan(&mut self, width: usize) -> &(usize, Vec<Expr>, Vec<Option<Expr>>) {
        if self.planned.as_ref().is_none_or(|(w, _, _)| *w != width) {
            let mut args = self.original.clone();
            let mut shared: Vec<Expr> = Vec::new();
            while shared.len() < MOST {
                let mut seen = Vec::new();
                for arg in args.iter().flatten() {
                    collect(arg, true, &mut seen);
                }
                let Some((best, _)) = seen
                    .into_iter()
                    .filter(|(_, count)| *count >= 2)
                    .max_by_key(|(e, _)| size(e))
                else {
                    break;
                };
                let column = Expr::Column(width + shared.len());
                for arg in args.iter_mut().flatten() {
                    *arg = arg.transform(&mut |x| (*x == best).then(|| column.clone()));
                }
                shared.push(best);
            }
            self.planned = Some((width, shared, args));
        }
        self.planned.as_ref().expect("planned above")
    }

    /// `batch` with the shared subexpressions appended as columns, and the argument of each
    /// aggregate over it.
    pub(super) fn extend(
        &mut self,
        batch: Batch,
        params: &[Value],
    ) -> Result<(Batch, &[Option<Expr>])> {
        let (_, shared, args) = self.plan(batch.num_columns());
        let mut batch = batch;
        for e in shared {
            let n = batch.num_rows();
            let column = evaluate(e, &batch, params)?;
            let mut columns = batch.into_columns();
            columns.push(column);
            batch = Batch::with_row_count(columns, n)?;
        }
        Ok((batch, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, Column};

    #[test]
    fn the_product_two_sums_read_is_computed_once() {
        // price * (1 - discount) and price * (1 - discount) * (1 + tax), over columns 0..3.
        let disc = Expr::col(0).binary(
            BinaryOp::Mul,
            Expr::lit(1).binary(BinaryOp::Sub, Expr::col(1)),
        );
        let charge = disc.clone().binary(
            BinaryOp::Mul,
            Expr::lit(1).binary(BinaryOp::Add, Expr::col(2)),
        );
        let mut shared = SharedArgs::new(vec![
            Some(Expr::col(0)),
            Some(disc.clone()),
            Some(charge),
            None,
        ]);
        let batch = Batch::try_new(vec![
            Column::from_i64(vec![10, 20]),
            Column::from_i64(vec![0, 1]),
            Column::from_i64(vec![1, 2]),
        ])
        .unwrap();
        let (extended, args) = shared.extend(batch, &[]).unwrap();
        assert_eq!(extended.num_columns(), 4);
        assert_eq!(extended.column(3).as_i64().unwrap(), &[10, 0]);
        assert_eq!(args[0], Some(Expr::col(0)));
        assert_eq!(args[1], Some(Expr::col(3)));
        let tax = Expr::lit(1).binary(BinaryOp::Add, Expr::col(2));
        assert_eq!(args[2], Some(Expr::col(3).binary(BinaryOp::Mul, tax)));
        assert_eq!(args[3], None);
    }

    #[test]
    fn what_only_some_rows_compute_is_not_shared() {
        let product = Expr::col(0).binary(BinaryOp::Mul, Expr::col(1));
        let guarded = Expr::Case {
            operand: None,
            branches: vec![(
                Expr::col(0).binary(BinaryOp::Gt, Expr::lit(0)),
                product.clone(),
            )],
            else_result: None,
        };
        let plus_one = product.clone().binary(BinaryOp::Add, Expr::lit(1));
        let original = vec![Some(guarded), Some(plus_one)];
        let mut shared = SharedArgs::new(original.clone());
        let batch =
            Batch::try_new(vec![Column::from_i64(vec![1]), Column::from_i64(vec![2])]).unwrap();
        let (extended, args) = shared.extend(batch, &[]).unwrap();
        assert_eq!(extended.num_columns(), 2);
        assert_eq!(args, &original[..]);
    }
}
