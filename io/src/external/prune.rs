//! Skipping Parquet row groups by their statistics: of a scan's filter, the conjuncts that
//! compare a column with a constant (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN (...)`,
//! `IS NULL`, `IS NOT NULL`) are tested against each row group's minimum, maximum and NULL
//! count; a row group where one of them can hold for no row is not read.
//!
//! The tests evaluate the conjunct's own comparison with the bound in place of the column
//! (`min < v` for `c < v`), with weir's expression evaluator, so that they compare values
//! exactly as the filter will (types widened the same way). A test that cannot be decided
//! (no statistics, a value that does not convert, an error) keeps the row group.

use weir_operators::eval::evaluate_scalar;
use weir_operators::{BinaryOp, Expr, Value};

/// A row group's statistics of one column, as weir values of the column's type.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The smallest value (`Null` when unknown).
    pub min: Value,
    /// The largest value (`Null` when unknown).
    pub max: Value,
    /// NULLs in the column, when known.
    pub nulls: Option<u64>,
    /// Rows of the row group.
    pub rows: u64,
}

/// One conjunct a row group's statistics can decide.
#[derive(Debug, Clone)]
enum Test {
    /// `column op value`, the column on the left.
    Compare(usize, BinaryOp, Expr),
    /// `column BETWEEN low AND high`.
    Between(usize, Expr, Expr),
    /// `column IN (values)`.
    In(usize, Vec<Expr>),
    /// `column IS NULL` (true) or `IS NOT NULL` (false).
    Null(usize, bool),
}

/// The tests of a filter that statistics can decide.
#[derive(Debug, Clone, Default)]
pub struct Pruner {
    tests: Vec<Test>,
}

fn constant(e: &Expr) -> bool {
    let mut columns = false;
    e.visit_columns(&mut |_| columns = true);
    !columns && !e.any(&|x| matches!(x, Expr::OuterColumn(_)))
}

fn flipped(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        o => o,
    }
}

impl Pruner {
    /// The tests of `filter` (over the table's columns).
    pub fn new(filter: Option<&Expr>) -> Pruner {
        let tests = filter
            .map(Expr::conjuncts)
            .unwrap_or_default()
            .into_iter()
            .filter_map(test_of)
            .collect();
        Pruner { tests }
    }

    /// Whether there is nothing to test.
    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// The table columns whose statistics the tests read.
    pub fn columns(&self) -> Vec<usize> {
        let mut c: Vec<usize> = self
            .tests
            .iter()
            .map(|t| match t {
                Test::Compare(c, ..) | Test::Between(c, ..) | Test::In(c, _) | Test::Null(c, _) => {
                    *c
                }
            })
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    }

    /// Whether a row group whose statistics `stats` gives (by table column; `None`: not
    /// known) may hold a row the filter keeps, with parameters `params`.
    pub fn may_match(
        &self,
        stats: &dyn Fn(usize) -> Option<ColumnStats>,
        params: &[Value],
    ) -> bool {
        self.tests.iter().all(|t| test_may_hold(t, stats, params))
    }
}

fn test_of(e: &Expr) -> Option<Test> {
    match e {
        Expr::Binary { op, left, right } if op.is_comparison() && *op != BinaryOp::NotEq => {
            match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), v) if constant(v) => Some(Test::Compare(*c, *op, v.clone())),
                (v, Expr::Column(c)) if constant(v) => {
                    Some(Test::Compare(*c, flipped(*op), v.clone()))
                }
                _ => None,
            }
        }
        Expr::Between {
            expr,
            low,
            high,
            negated: false,
        } => match expr.as_ref() {
            Expr::Column(c) if constant(low) && constant(high) => Some(Test::Between(
                *c,
                low.as_ref().clone(),
                high.as_ref().clone(),
            )),
            _ => None,
        },
        Expr::InList {
            expr,
            list,
            negated: false,
        } => match expr.as_ref() {
            Expr::Column(c) if list.iter().all(constant) => Some(Test::In(*c, list.clone())),
            _ => None,
        },
        Expr::IsNull { expr, negated } => match expr.as_ref() {
            Expr::Column(c) => Some(Test::Null(*c, !negated)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `a op b` may be TRUE: FALSE only when it evaluates to FALSE.
fn may(a: &Value, op: BinaryOp, b: &Expr, params: &[Value]) -> bool {
    if a.is_null() {
        return true;
    }
    let e = Expr::Binary {
        op,
        left: Box::new(Expr::Literal(a.clone())),
        right: Box::new(b.clone()),
    };
    !matches!(evaluate_scalar(&e, params), Ok(Value::Bool(false)))
}

fn test_may_hold(t: &Test, stats: &dyn Fn(usize) -> Option<ColumnStats>, params: &[Value]) -> bool {
    let column = match t {
        Test::Compare(c, ..) | Test::Between(c, ..) | Test::In(c, _) | Test::Null(c, _) => *c,
    };
    let Some(s) = stats(column) else {
        return true;
    };
    let all_null = s.nulls == Some(s.rows) && s.rows > 0;
    match t {
        Test::Null(_, true) => s.nulls != Some(0),
        Test::Null(_, false) => !all_null,
        // A comparison is never TRUE for NULL.
        _ if all_null => false,
        Test::Compare(_, op, v) => match op {
            BinaryOp::Eq => {
                may(&s.min, BinaryOp::LtEq, v, params) && may(&s.max, BinaryOp::GtEq, v, params)
            }
            BinaryOp::Lt | BinaryOp::LtEq => may(&s.min, *op, v, params),
            BinaryOp::Gt | BinaryOp::GtEq => may(&s.max, *op, v, params),
            _ => true,
        },
        Test::Between(_, low, high) => {
            may(&s.max, BinaryOp::GtEq, low, params) && may(&s.min, BinaryOp::LtEq, high, params)
        }
        Test::In(_, list) => list.iter().any(|v| {
            may(&s.min, BinaryOp::LtEq, v, params) && may(&s.max, BinaryOp::GtEq, v, params)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: i64, max: i64, nulls: u64) -> ColumnStats {
        ColumnStats {
            min: Value::Int(min),
            max: Value::Int(max),
            nulls: Some(nulls),
            rows: 100,
        }
    }

    fn keeps(filter: Expr, s: ColumnStats) -> bool {
        Pruner::new(Some(&filter)).may_match(&|c| (c == 0).then(|| s.clone()), &[Value::Int(50)])
    }

    #[test]
    fn ranges_decide_row_groups() {
        let c = || Expr::col(0);
        let lit = Expr::lit;
        assert!(!keeps(c().binary(BinaryOp::Lt, lit(10)), stats(10, 20, 0)));
        assert!(keeps(c().binary(BinaryOp::LtEq, lit(10)), stats(10, 20, 0)));
        assert!(!keeps(c().binary(BinaryOp::Gt, lit(20)), stats(10, 20, 0)));
        assert!(keeps(lit(15).binary(BinaryOp::Lt, c()), stats(10, 20, 0)));
        assert!(!keeps(c().eq(lit(21)), stats(10, 20, 0)));
        assert!(keeps(c().eq(lit(20)), stats(10, 20, 0)));
        // A parameter, and a DOUBLE constant against BIGINT statistics.
        assert!(!keeps(c().eq(Expr::Param(0)), stats(10, 20, 0)));
        assert!(!keeps(
            c().binary(BinaryOp::Gt, Expr::lit(20.5)),
            stats(10, 20, 0)
        ));
        let between = |lo: i64, hi: i64| Expr::Between {
            expr: Box::new(c()),
            negated: false,
            low: Box::new(lit(lo)),
            high: Box::new(lit(hi)),
        };
        assert!(!keeps(between(21, 30), stats(10, 20, 0)));
        assert!(keeps(between(0, 10), stats(10, 20, 0)));
        let in_list = |vs: &[i64]| Expr::InList {
            expr: Box::new(c()),
            list: vs.iter().map(|&v| lit(v)).collect(),
            negated: false,
        };
        assert!(!keeps(in_list(&[1, 30]), stats(10, 20, 0)));
        assert!(keeps(in_list(&[1, 15]), stats(10, 20, 0)));
        // Conjunctions: one failing test is enough; disjunctions are not decided.
        assert!(!keeps(
            c().binary(BinaryOp::Gt, lit(0))
                .and(c().binary(BinaryOp::Gt, lit(20))),
            stats(10, 20, 0)
        ));
        assert!(keeps(
            c().eq(lit(1)).binary(BinaryOp::Or, c().eq(lit(30))),
            stats(10, 20, 0)
        ));
    }

    #[test]
    fn nulls_and_unknown_statistics() {
        let c = || Expr::col(0);
        let is_null = |negated| Expr::IsNull {
            expr: Box::new(c()),
            negated,
        };
        assert!(!keeps(is_null(false), stats(10, 20, 0)));
        assert!(keeps(is_null(false), stats(10, 20, 3)));
        let all_null = ColumnStats {
            min: Value::Null,
            max: Value::Null,
            nulls: Some(100),
            rows: 100,
        };
        assert!(!keeps(is_null(true), all_null.clone()));
        assert!(!keeps(c().eq(Expr::lit(1)), all_null));
        let unknown = ColumnStats {
            min: Value::Null,
            max: Value::Null,
            nulls: None,
            rows: 100,
        };
        assert!(keeps(c().eq(Expr::lit(1)), unknown));
        // A column without statistics keeps the row group.
        assert!(Pruner::new(Some(&Expr::col(1).eq(Expr::lit(1)))).may_match(&|_| None, &[]));
    }
}
