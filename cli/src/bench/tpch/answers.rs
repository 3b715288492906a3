//! The reference answers: the SF 1 answer set of the TPC-H kit, as `tpchgen` ships it
//! (`tpchgen::q_and_a::answers_sf1`), parsed, corrected for its two known defects, and
//! compared with weir's rows.
//!
//! The answer set holds one `|`-separated table per query, a header line first, numbers
//! rounded to two decimals. A cell that parses as a number is compared numerically within
//! [`TOLERANCE`]; any other cell is compared as trimmed text (dates as `YYYY-MM-DD`). Rows are
//! compared in order: every query orders its output.

use crate::Value;

/// How far a number may be from the reference answer (the answers are rounded to cents).
pub const TOLERANCE: f64 = 0.01;

/// A reference answer: the rows, each a list of trimmed cells (the header is dropped).
pub type Answer = Vec<Vec<String>>;

/// The reference answer of query `n` at scale factor `sf`; `None` when the kit has none (it
/// ships answers for SF 1 only).
pub fn reference(n: usize, sf: f64) -> Option<Answer> {
    if sf != 1.0 {
        return None;
    }
    let text = tpchgen::q_and_a::answers_sf1::answer(i32::try_from(n).ok()?)?;
    let mut rows: Answer = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .skip(1)
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    if n == 17 {
        // Known defect of the kit's answer set: Q17's avg_yearly is given as 348406.02, where
        // engines computing exactly on the same data (DuckDB, DataFusion) give 348406.05: the
        // kit's answer came from a run that lost precision. The reference is corrected here,
        // for this one value, rather than the tolerance widened.
        for row in &mut rows {
            for cell in row.iter_mut() {
                if cell == "348406.02" {
                    *cell = "348406.05".into();
                }
            }
        }
    }
    Some(rows)
}

/// Compares weir's `actual` rows of query `n` with the reference `expected`; the first
/// difference as an error.
pub fn compare(n: usize, expected: &Answer, actual: &[Vec<Value>]) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!(
            "{} rows, the reference answer has {}",
            actual.len(),
            expected.len()
        ));
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.len() != a.len() {
            return Err(format!(
                "row {i} has {} columns, the reference answer has {}",
                a.len(),
                e.len()
            ));
        }
        for (c, (ev, av)) in e.iter().zip(a).enumerate() {
            if !cell_matches(n, c, ev, av) {
                return Err(format!(
                    "row {i}, column {c}: {av}, the reference answer has {ev}"
                ));
            }
        }
    }
    Ok(())
}

fn cell_matches(n: usize, column: usize, expected: &str, actual: &Value) -> bool {
    if n == 11 && column == 0 {
        // Known defect of the kit's answer set: Q11's ps_partkey column was cut to its first
        // four characters (129760 appears as "1297"). The reference digits
        // must be the leading digits of weir's key; the value column (distinct, descending)
        // pins down the row.
        return match actual {
            Value::Int(k) => !expected.is_empty() && k.to_string().starts_with(expected),
            _ => false,
        };
    }
    match expected.parse::<f64>() {
        Ok(e) if !matches!(actual, Value::Str(_)) => actual
            .as_f64()
            .is_some_and(|a| (a - e).abs() <= TOLERANCE + 1e-9),
        _ => actual.to_string().trim() == expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_exist_only_at_sf_1() {
        assert!(reference(1, 0.01).is_none());
        assert!(reference(0, 1.0).is_none());
        let q1 = reference(1, 1.0).unwrap();
        assert_eq!(q1.len(), 4);
        assert_eq!(q1[0][0], "A");
    }

    #[test]
    fn numbers_match_within_a_cent_and_text_exactly() {
        let e: Answer = vec![vec!["A".into(), "25.52".into(), "1995-03-15".into()]];
        let ok = vec![vec![
            Value::from("A"),
            Value::Float(25.5220),
            Value::from("1995-03-15"),
        ]];
        assert_eq!(compare(1, &e, &ok), Ok(()));
        let off = vec![vec![
            Value::from("A"),
            Value::Float(25.54),
            Value::from("1995-03-15"),
        ]];
        assert!(compare(1, &e, &off).is_err());
        assert!(compare(1, &e, &[]).is_err());
    }

    #[test]
    fn the_known_defects_are_corrected_not_tolerated() {
        let q17 = reference(17, 1.0).unwrap();
        assert_eq!(q17, vec![vec!["348406.05".to_string()]]);
        let q11 = reference(11, 1.0).unwrap();
        let first = &q11[0];
        let value: f64 = first[1].parse().unwrap();
        let key = |k| vec![Value::Int(k), Value::Float(value)];
        assert!(cell_matches(11, 0, &first[0], &key(129760)[0]));
        assert!(!cell_matches(11, 0, &first[0], &key(229760)[0]));
        // The cut applies to Q11's key column only.
        assert!(!cell_matches(2, 0, "1297", &Value::Int(129760)));
    }
}
