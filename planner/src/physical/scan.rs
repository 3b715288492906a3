//! Table access: index choice, partition pruning and selectivity estimates for the filters
//! pushed into a scan.

use crate::bind::has_columns;
use crate::catalog::TableDef;
use crate::statement::Pruning;
use weir_operators::plan::IndexLookup;
use weir_operators::{BinaryOp, Expr, Value};

/// Rough fraction of rows a conjunct keeps.
pub(crate) fn selectivity(c: &Expr) -> f64 {
    match c {
        Expr::Binary {
            op: BinaryOp::Eq, ..
        } => 0.1,
        Expr::InList {
            list,
            negated: false,
            ..
        } => (0.1 * list.len() as f64).min(1.0),
        Expr::Binary {
            op: BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq,
            ..
        }
        | Expr::Between { negated: false, .. } => 0.3,
        // Independent conditions: both, either, or not.
        Expr::Binary {
            op: BinaryOp::And,
            left,
            right,
        } => selectivity(left) * selectivity(right),
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => {
            let (l, r) = (selectivity(left), selectivity(right));
            l + r - l * r
        }
        Expr::Not(inner) => 1.0 - selectivity(inner),
        Expr::Like {
            pattern, negated, ..
        } => {
            let kept = match pattern.as_ref() {
                Expr::Literal(Value::Str(p)) => like_selectivity(p),
                _ => 0.5,
            };
            if *negated {
                1.0 - kept
            } else {
                kept
            }
        }
        _ => 0.5,
    }
}

/// Rows `LIKE pattern` is guessed to keep without statistics: as many as an equality (a
/// tenth), whether the pattern names a whole value or a word within one; a pattern of `%`
/// alone keeps every row.
fn like_selectivity(pattern: &str) -> f64 {
    if pattern.chars().all(|c| c == '%') {
        1.0
    } else {
        0.1
    }
}

/// `col op constant` with the column on either side (the operator flipped accordingly).
/// Whether `e` has one value for a whole scan: it reads no column and draws no random value.
fn fixed(e: &Expr) -> bool {
    !has_columns(e) && !e.is_volatile()
}

fn column_cmp(c: &Expr) -> Option<(usize, BinaryOp, &Expr)> {
    let Expr::Binary { op, left, right } = c else {
        return None;
    };
    if !op.is_comparison() || *op == BinaryOp::NotEq {
        return None;
    }
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(col), v) if fixed(v) => Some((*col, *op, v)),
        (v, Expr::Column(col)) if fixed(v) => {
            let flipped = match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                o => *o,
            };
            Some((*col, flipped, v))
        }
        _ => None,
    }
}

fn in_list(c: &Expr) -> Option<(usize, &[Expr])> {
    match c {
        Expr::InList {
            expr,
            list,
            negated: false,
        } => match expr.as_ref() {
            Expr::Column(col) if list.iter().all(fixed) => Some((*col, list)),
            _ => None,
        },
        _ => None,
    }
}

/// The values of `col = v` conjuncts for every column of a composite key, in key order.
fn key_values(conj: &[Expr], key: &[usize]) -> Option<(Vec<Expr>, Vec<usize>)> {
    let mut values = Vec::with_capacity(key.len());
    let mut used = Vec::with_capacity(key.len());
    for &k in key {
        let (i, v) = conj
            .iter()
            .enumerate()
            .find_map(|(i, c)| match column_cmp(c) {
                Some((col, BinaryOp::Eq, v)) if col == k => Some((i, v.clone())),
                _ => None,
            })?;
        values.push(v);
        used.push(i);
    }
    Some((values, used))
}

/// `Pruning::Keys` from a `pk = v` or `pk IN (...)` conjunct, or `Pruning::Key` from equality
/// on every column of a composite key. A table without a primary key is never pruned: its
/// rows are placed by a hidden row id, so any partition may hold any value.
pub(crate) fn pk_pruning(conj: &[Expr], key: &[usize]) -> Pruning {
    let pk = match key {
        [] => return Pruning::All,
        [one] => *one,
        _ => {
            return key_values(conj, key).map_or(Pruning::All, |(v, _)| Pruning::Key(v));
        }
    };
    for c in conj {
        if let Some((col, BinaryOp::Eq, v)) = column_cmp(c) {
            if col == pk {
                return Pruning::Keys(vec![v.clone()]);
            }
        }
        if let Some((col, list)) = in_list(c) {
            if col == pk {
                return Pruning::Keys(list.to_vec());
            }
        }
    }
    Pruning::All
}

/// Picks the best index probe among the conjuncts (equality on the whole key, equality on a
/// secondary index, IN lists, then ranges) and returns it with the conjuncts it does not cover.
#[allow(clippy::type_complexity)]
pub(crate) fn choose_index(
    conj: Vec<Expr>,
    def: &TableDef,
) -> (Option<(usize, IndexLookup)>, Vec<Expr>) {
    // (score, column, lookup, consumed conjuncts); lower score is better
    let mut best: Option<(u8, usize, IndexLookup, Vec<usize>)> = None;
    let mut consider = |cand: (u8, usize, IndexLookup, Vec<usize>)| {
        if best.as_ref().is_none_or(|b| cand.0 < b.0) {
            best = Some(cand);
        }
    };
    if def.primary_key.len() > 1 {
        if let Some((values, used)) = key_values(&conj, &def.primary_key) {
            let rest = conj
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !used.contains(i))
                .map(|(_, c)| c)
                .collect();
            let lookup = IndexLookup::Key {
                columns: def.primary_key.clone(),
                values,
            };
            return (Some((def.primary_key[0], lookup)), rest);
        }
    }
    let pk_bonus = |col: usize| u8::from(def.primary_key != [col]);
    let mut ranges: Vec<(
        usize,
        Option<(Expr, bool)>,
        Option<(Expr, bool)>,
        Vec<usize>,
    )> = Vec::new();
    for (i, c) in conj.iter().enumerate() {
        if let Some((col, op, v)) = column_cmp(c) {
            if !def.is_indexed(col) {
                continue;
            }
            if op == BinaryOp::Eq {
                consider((pk_bonus(col), col, IndexLookup::Eq(v.clone()), vec![i]));
                continue;
            }
            let r = match ranges.iter_mut().find(|r| r.0 == col) {
                Some(r) => r,
                None => {
                    ranges.push((col, None, None, Vec::new()));
                    ranges.last_mut().expect("just pushed")
                }
            };
            match op {
                BinaryOp::Gt | BinaryOp::GtEq if r.1.is_none() => {
                    r.1 = Some((v.clone(), op == BinaryOp::GtEq));
                    r.3.push(i);
                }
                BinaryOp::Lt | BinaryOp::LtEq if r.2.is_none() => {
                    r.2 = Some((v.clone(), op == BinaryOp::LtEq));
                    r.3.push(i);
                }
                _ => {}
            }
        } else if let Some((col, list)) = in_list(c) {
            if def.is_indexed(col) {
                consider((
                    2 + pk_bonus(col),
                    col,
                    IndexLookup::In(list.to_vec()),
                    vec![i],
                ));
            }
        } else if let Expr::Between {
            expr,
            low,
            high,
            negated: false,
        } = c
        {
            if let Expr::Column(col) = expr.as_ref() {
                if def.is_indexed(*col) && fixed(low) && fixed(high) {
                    let col = *col;
                    let r = match ranges.iter_mut().find(|r| r.0 == col) {
                        Some(r) => r,
                        None => {
                            ranges.push((col, None, None, Vec::new()));
                            ranges.last_mut().expect("just pushed")
                        }
                    };
                    if r.1.is_none() && r.2.is_none() {
                        r.1 = Some(((**low).clone(), true));
                        r.2 = Some(((**high).clone(), true));
                        r.3.push(i);
                    }
                }
            }
        }
    }
    for (col, low, high, used) in ranges {
        if low.is_none() && high.is_none() {
            continue;
        }
        let score = if low.is_some() && high.is_some() {
            4
        } else {
            5
        };
        consider((score, col, IndexLookup::Range { low, high }, used));
    }
    match best {
        None => (None, conj),
        Some((_, col, lookup, used)) => {
            let rest = conj
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !used.contains(i))
                .map(|(_, c)| c)
                .collect();
            (Some((col, lookup)), rest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::IndexDef;
    use weir_operators::{DataType, Field, Schema};

    fn def() -> TableDef {
        TableDef {
            name: "t".into(),
            schema: Schema::new(vec![
                Field::new("id", DataType::Int64),
                Field::new("a", DataType::Int64),
                Field::new("b", DataType::Int64),
            ]),
            primary_key: vec![0],
            not_null: vec![],
            indexes: vec![IndexDef::on("ia", 1)],
            partitions: 4,
            external: None,
            defaults: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comments: Default::default(),
        }
    }

    fn cmp(c: usize, op: BinaryOp, v: i64) -> Expr {
        Expr::Column(c).binary(op, Expr::lit(v))
    }

    #[test]
    fn and_or_and_not_combine_their_parts_as_independent_conditions() {
        let eq = |c, v| cmp(c, BinaryOp::Eq, v);
        let both = eq(1, 1).binary(BinaryOp::And, eq(2, 2));
        assert!((selectivity(&both) - 0.01).abs() < 1e-12);
        let either = both
            .clone()
            .binary(BinaryOp::Or, eq(1, 2).binary(BinaryOp::And, eq(2, 1)));
        assert!((selectivity(&either) - (0.02 - 0.0001)).abs() < 1e-12);
        assert!((selectivity(&Expr::Not(Box::new(eq(1, 1)))) - 0.9).abs() < 1e-12);
    }

    #[test]
    fn like_keeps_a_tenth_and_not_like_nine_tenths() {
        let like = |p: &str, negated| Expr::Like {
            expr: Box::new(Expr::Column(1)),
            pattern: Box::new(Expr::Literal(Value::Str(p.into()))),
            negated,
            escape: None,
        };
        assert_eq!(selectivity(&like("%green%", false)), 0.1);
        assert_eq!(selectivity(&like("PROMO%", false)), 0.1);
        assert_eq!(selectivity(&like("%special%requests%", true)), 0.9);
        assert_eq!(selectivity(&like("exact", false)), 0.1);
        assert_eq!(selectivity(&like("%", false)), 1.0);
        // A pattern only known when the query runs: the default.
        let param = Expr::Like {
            expr: Box::new(Expr::Column(1)),
            pattern: Box::new(Expr::Param(0)),
            negated: false,
            escape: None,
        };
        assert_eq!(selectivity(&param), 0.5);
    }

    #[test]
    fn prefers_key_equality() {
        let conj = vec![
            cmp(1, BinaryOp::Eq, 1),
            cmp(0, BinaryOp::Eq, 2),
            cmp(2, BinaryOp::Eq, 3),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert_eq!(idx, Some((0, IndexLookup::Eq(Expr::lit(2)))));
        assert_eq!(rest.len(), 2);
    }

    #[test]
    fn range_merges_bounds_and_keeps_extra_ones() {
        let conj = vec![
            cmp(1, BinaryOp::Gt, 1),
            cmp(1, BinaryOp::GtEq, 5),
            cmp(1, BinaryOp::LtEq, 9),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert_eq!(
            idx,
            Some((
                1,
                IndexLookup::Range {
                    low: Some((Expr::lit(1), false)),
                    high: Some((Expr::lit(9), true)),
                }
            ))
        );
        assert_eq!(rest, vec![cmp(1, BinaryOp::GtEq, 5)]);
    }

    #[test]
    fn unindexed_or_non_constant_is_not_an_index() {
        let conj = vec![
            cmp(2, BinaryOp::Eq, 1),
            Expr::Column(1).eq(Expr::Column(2)),
            cmp(1, BinaryOp::NotEq, 3),
        ];
        let (idx, rest) = choose_index(conj, &def());
        assert!(idx.is_none());
        assert_eq!(rest.len(), 3);
    }

    #[test]
    fn keyless_table_has_no_key_index() {
        let keyless = TableDef {
            primary_key: vec![],
            ..def()
        };
        let conj = vec![cmp(0, BinaryOp::Eq, 2), cmp(1, BinaryOp::Eq, 1)];
        let (idx, rest) = choose_index(conj, &keyless);
        assert_eq!(idx, Some((1, IndexLookup::Eq(Expr::lit(1)))));
        assert_eq!(rest, vec![cmp(0, BinaryOp::Eq, 2)]);
        let (idx, _) = choose_index(vec![cmp(0, BinaryOp::Eq, 2)], &keyless);
        assert!(idx.is_none());
    }

    #[test]
    fn pruning_from_key_conjuncts() {
        assert_eq!(
            pk_pruning(
                &[cmp(1, BinaryOp::Eq, 1), Expr::lit(4).eq(Expr::Column(0))],
                &[0]
            ),
            Pruning::Keys(vec![Expr::lit(4)])
        );
        assert_eq!(pk_pruning(&[cmp(0, BinaryOp::Lt, 1)], &[0]), Pruning::All);
        assert_eq!(pk_pruning(&[cmp(0, BinaryOp::Eq, 1)], &[]), Pruning::All);
    }

    #[test]
    fn composite_key_equality_is_one_lookup() {
        let composite = TableDef {
            primary_key: vec![2, 0],
            ..def()
        };
        let conj = vec![
            cmp(0, BinaryOp::Eq, 1),
            cmp(1, BinaryOp::Eq, 7),
            cmp(2, BinaryOp::Eq, 3),
        ];
        assert_eq!(
            pk_pruning(&conj, &composite.primary_key),
            Pruning::Key(vec![Expr::lit(3), Expr::lit(1)])
        );
        let (idx, rest) = choose_index(conj, &composite);
        let key = IndexLookup::Key {
            columns: vec![2, 0],
            values: vec![Expr::lit(3), Expr::lit(1)],
        };
        assert_eq!(idx, Some((2, key)));
        assert_eq!(rest, vec![cmp(1, BinaryOp::Eq, 7)]);
        // Part of the key is not enough: the secondary index on `a` is used instead.
        let part = vec![cmp(0, BinaryOp::Eq, 1), cmp(1, BinaryOp::Eq, 7)];
        assert_eq!(pk_pruning(&part, &composite.primary_key), Pruning::All);
        let (idx, _) = choose_index(part, &composite);
        assert_eq!(idx, Some((1, IndexLookup::Eq(Expr::lit(7)))));
    }
}
