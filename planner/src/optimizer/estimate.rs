//! Cardinality estimates of logical plans, for the join order ([`super::join_order`]) and for
//! physical planning's build sides and broadcast joins.
//!
//! A table's rows come from the catalog's row counts; each filter conjunct keeps the fraction
//! that [`selectivity`] guesses. Columns known to hold distinct values carry a
//! [`ColumnStats`]: a table's primary key holds as many distinct values as the table has rows
//! (its *domain*), and filters and joins shrink that count. An equi-join divides the product
//! of its inputs by the larger distinct count of its key (the textbook formula); a key that is
//! a primary key on one side and unknown on the other is taken to be a foreign key covering
//! the key's domain, so a filtered dimension table makes the join smaller by the same
//! fraction. Keys unknown on both sides keep the larger input's rows (as before this module).

use crate::bind::has_columns;
use crate::catalog::{Catalog, TableDef};
use crate::logical::{conjuncts, JoinKind, LogicalPlan};
use crate::physical::scan::selectivity;
use weir_operators::Expr;

/// What is known about the values of one column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ColumnStats {
    /// Estimated distinct values among the rows.
    pub distinct: f64,
    /// Distinct values before any filter (a primary key's table rows): the values a foreign
    /// key that references this column can take.
    pub domain: f64,
}

/// Estimated rows of a plan and what is known about its columns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Estimate {
    /// Estimated output rows (at least 1).
    pub rows: f64,
    /// Per output column, its distinct values when known.
    pub columns: Vec<Option<ColumnStats>>,
}

impl Estimate {
    fn unknown(rows: f64, width: usize) -> Estimate {
        Estimate {
            rows: rows.max(1.0),
            columns: vec![None; width],
        }
    }

    /// The stats of `e` when it is a plain column.
    fn column(&self, e: &Expr) -> Option<ColumnStats> {
        match e {
            Expr::Column(i) => self.columns.get(*i).copied().flatten(),
            _ => None,
        }
    }

    /// The same columns over `rows` rows: each known distinct count shrinks as a random
    /// sample of the rows would shrink it.
    fn scaled(mut self, rows: f64) -> Estimate {
        let rows = rows.max(1.0);
        let before = self.rows;
        let kept = (rows / before).min(1.0);
        for s in self.columns.iter_mut().flatten() {
            let per_value = before / s.distinct.max(1.0);
            s.distinct = (s.distinct * (1.0 - (1.0 - kept).powf(per_value)))
                .max(1.0)
                .min(rows);
        }
        self.rows = rows;
        self
    }
}

/// The column of `table` whose values are all distinct: its primary key when that is one
/// column (no single column of a composite key is unique).
fn unique_column(table: &TableDef) -> Option<usize> {
    match table.primary_key.as_slice() {
        [k] => Some(*k),
        _ => None,
    }
}

/// How many keys `c` looks up when it is `key = constant` or `key IN (constants)` on the
/// unique column `unique`: at most that many rows pass.
fn key_lookup(c: &Expr, unique: Option<usize>) -> Option<f64> {
    let unique = unique?;
    let is_key = |e: &Expr| matches!(e, Expr::Column(k) if *k == unique);
    match c {
        Expr::Binary {
            op: weir_operators::BinaryOp::Eq,
            left,
            right,
        } if (is_key(left) && !has_columns(right)) || (is_key(right) && !has_columns(left)) => {
            Some(1.0)
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } if is_key(expr) && !list.iter().any(has_columns) => Some(list.len() as f64),
        _ => None,
    }
}

/// The fraction of rows that all of `conds` keep.
pub(crate) fn selectivity_of(conds: &[Expr]) -> f64 {
    conds.iter().map(selectivity).product()
}

/// The rounds a recursive query is guessed to run.
const RECURSIVE_ROUNDS: f64 = 10.0;

/// The rows one round of a recursive query is guessed to add.
const WORK_TABLE_ROWS: f64 = 100.0;

/// The estimate of `plan`'s output.
pub(crate) fn estimate(plan: &LogicalPlan, catalog: &Catalog) -> Estimate {
    match plan {
        LogicalPlan::Scan {
            table,
            projection,
            filters,
        } => {
            let base = catalog.row_count(&table.name).max(1) as f64;
            let full = Estimate {
                rows: base,
                columns: projection
                    .iter()
                    .map(|&c| {
                        (unique_column(table) == Some(c)).then_some(ColumnStats {
                            distinct: base,
                            domain: base,
                        })
                    })
                    .collect(),
            };
            let unique = unique_column(table);
            let kept: f64 = filters
                .iter()
                .map(|c| match key_lookup(c, unique) {
                    Some(keys) => (keys / base).min(1.0),
                    None => selectivity(c),
                })
                .product();
            full.scaled(base * kept)
        }
        LogicalPlan::Values { schema, rows } => Estimate::unknown(rows.len() as f64, schema.len()),
        // A recursive query's rounds are not known: a guess of ten, each like the first.
        LogicalPlan::RecursiveCte { base, step, .. } => {
            let rows =
                estimate(base, catalog).rows + RECURSIVE_ROUNDS * estimate(step, catalog).rows;
            Estimate::unknown(rows, plan.width())
        }
        LogicalPlan::WorkTable { schema, .. } => Estimate::unknown(WORK_TABLE_ROWS, schema.len()),
        LogicalPlan::TableFunction {
            schema, function, ..
        } => Estimate::unknown(function.estimated_rows(false), schema.len()),
        LogicalPlan::Expand {
            input,
            function,
            fields,
            ..
        } => {
            let input = estimate(input, catalog);
            let rows = input.rows * function.estimated_rows(true);
            let mut columns = input.columns;
            columns.extend(fields.iter().map(|_| None));
            Estimate { rows, columns }
        }
        LogicalPlan::Filter { input, predicate } => {
            let input = estimate(input, catalog);
            let mut conds = Vec::new();
            conjuncts(predicate.clone(), &mut conds);
            let rows = input.rows * selectivity_of(&conds);
            input.scaled(rows)
        }
        LogicalPlan::Project { input, exprs, .. } => {
            let input = estimate(input, catalog);
            Estimate {
                rows: input.rows,
                columns: exprs.iter().map(|e| input.column(e)).collect(),
            }
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            filter,
        } => {
            let l = estimate(left, catalog);
            let r = estimate(right, catalog);
            let mut residual = Vec::new();
            if let Some(f) = filter {
                conjuncts(f.clone(), &mut residual);
            }
            join(&l, &r, *kind, on, &residual)
        }
        LogicalPlan::Aggregate { input, groups, .. } => {
            let input = estimate(input, catalog);
            let width = plan.width();
            if groups.is_empty() {
                return Estimate {
                    rows: 1.0,
                    columns: vec![
                        Some(ColumnStats {
                            distinct: 1.0,
                            domain: 1.0,
                        });
                        width
                    ],
                };
            }
            grouped(&input, groups, width)
        }
        LogicalPlan::Distinct { input } => {
            let input = estimate(input, catalog);
            let all: Vec<Expr> = (0..input.columns.len()).map(Expr::Column).collect();
            grouped(&input, &all, all.len())
        }
        LogicalPlan::Sort { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
            estimate(input, catalog)
        }
        LogicalPlan::Limit { input, limit, .. } => {
            let input = estimate(input, catalog);
            match limit {
                Some(l) if (*l as f64) < input.rows => input.scaled(*l as f64),
                _ => input,
            }
        }
        LogicalPlan::Union { inputs } => {
            let rows = inputs.iter().map(|i| estimate(i, catalog).rows).sum();
            Estimate::unknown(rows, plan.width())
        }
        LogicalPlan::SetOp { left, .. } => {
            let l = estimate(left, catalog);
            Estimate::unknown(l.rows, l.columns.len())
        }
        LogicalPlan::Apply { input, .. } => {
            let mut e = estimate(input, catalog);
            e.columns.resize(plan.width(), None);
            e
        }
        LogicalPlan::Window {
            input, functions, ..
        } => {
            let mut e = estimate(input, catalog);
            e.columns.extend(functions.iter().map(|_| None));
            e
        }
        LogicalPlan::SingleRow { input } => Estimate {
            rows: 1.0,
            columns: vec![
                Some(ColumnStats {
                    distinct: 1.0,
                    domain: 1.0,
                });
                input.width()
            ],
        },
    }
}

/// Groups of `input` by `groups`: as many as the known distinct keys allow, else a tenth of
/// the rows; a single group key is then distinct.
fn grouped(input: &Estimate, groups: &[Expr], width: usize) -> Estimate {
    let known: Option<f64> = groups
        .iter()
        .map(|g| input.column(g).map(|s| s.distinct))
        .product();
    let rows = known.unwrap_or(input.rows / 10.0).min(input.rows).max(1.0);
    let mut columns = vec![None; width];
    for (i, g) in groups.iter().enumerate() {
        columns[i] = match input.column(g) {
            Some(s) => Some(ColumnStats {
                distinct: s.distinct.min(rows),
                domain: s.domain,
            }),
            None if groups.len() == 1 => Some(ColumnStats {
                distinct: rows,
                domain: rows,
            }),
            None => None,
        };
    }
    Estimate { rows, columns }
}

/// The distinct values an equi-join key pair is taken to range over.
fn key_distinct(l: &Estimate, r: &Estimate, lk: &Expr, rk: &Expr) -> f64 {
    match (l.column(lk), r.column(rk)) {
        (Some(a), Some(b)) => a.distinct.max(b.distinct),
        // A foreign key: its values cover the referenced key's domain (or all its rows).
        (Some(k), None) => k.distinct.max(k.domain.min(r.rows)),
        (None, Some(k)) => k.distinct.max(k.domain.min(l.rows)),
        (None, None) => l.rows.min(r.rows),
    }
}

/// The estimate of a join of `l` and `r` with equality keys `on` and residual conjuncts
/// `residual` (over left then right columns).
pub(crate) fn join(
    l: &Estimate,
    r: &Estimate,
    kind: JoinKind,
    on: &[(Expr, Expr)],
    residual: &[Expr],
) -> Estimate {
    let distinct = on
        .iter()
        .map(|(lk, rk)| key_distinct(l, r, lk, rk))
        .fold(1.0f64, f64::max);
    let matched = (l.rows * r.rows / distinct * selectivity_of(residual)).max(1.0);
    let rows = match kind {
        JoinKind::Inner => matched,
        JoinKind::Left => matched.max(l.rows),
        JoinKind::Right => matched.max(r.rows),
        JoinKind::Full => matched.max(l.rows + r.rows),
        JoinKind::Semi | JoinKind::Anti | JoinKind::AntiNullAware => l.rows,
    };
    let mut columns: Vec<Option<ColumnStats>> = l.columns.clone();
    if kind.outputs_right() {
        columns.extend(r.columns.iter().copied());
        // The two columns of a key pair hold the same values after an inner join.
        if kind == JoinKind::Inner {
            let lw = l.columns.len();
            for (lk, rk) in on {
                if let (Expr::Column(a), Expr::Column(b)) = (lk, rk) {
                    let both = match (columns[*a], columns[lw + b]) {
                        (Some(x), Some(y)) => Some(if x.distinct <= y.distinct { x } else { y }),
                        (x, y) => x.or(y),
                    };
                    columns[*a] = both;
                    columns[lw + b] = both;
                }
            }
        }
    }
    for s in columns.iter_mut().flatten() {
        s.distinct = s.distinct.min(rows);
    }
    Estimate { rows, columns }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(rows: f64, domain: f64) -> Estimate {
        Estimate {
            rows,
            columns: vec![Some(ColumnStats {
                distinct: rows.min(domain),
                domain,
            })],
        }
    }

    #[test]
    fn a_foreign_key_join_shrinks_with_the_filtered_key_side() {
        // 6,000 rows referencing a 1,500-row table filtered to 300 rows: a fifth survive.
        let facts = Estimate::unknown(6000.0, 1);
        let dim = keyed(300.0, 1500.0);
        let e = join(
            &facts,
            &dim,
            JoinKind::Inner,
            &[(Expr::Column(0), Expr::Column(0))],
            &[],
        );
        assert!((e.rows - 1200.0).abs() < 1e-6, "{e:?}");
        // Keys unknown on both sides: the larger side.
        let e = join(
            &facts,
            &Estimate::unknown(50.0, 1),
            JoinKind::Inner,
            &[(Expr::Column(0), Expr::Column(0))],
            &[],
        );
        assert!((e.rows - 6000.0).abs() < 1e-6, "{e:?}");
    }

    #[test]
    fn filters_shrink_a_key_but_not_a_repeated_column() {
        let unique = keyed(1000.0, 1000.0).scaled(100.0);
        assert!((unique.columns[0].unwrap().distinct - 100.0).abs() < 1.0);
        let repeated = Estimate {
            rows: 1000.0,
            columns: vec![Some(ColumnStats {
                distinct: 10.0,
                domain: 10.0,
            })],
        }
        .scaled(100.0);
        assert!(repeated.columns[0].unwrap().distinct > 9.9);
    }
}
