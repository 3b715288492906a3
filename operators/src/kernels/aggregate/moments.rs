//! The state of the variances and standard deviations: per group the count of values, their
//! sum and the sum of their squared deviations from their mean (`m2`).
//!
//! Values are taken in, and two states merged, as Youngs and Cramer (and PostgreSQL's `float8`
//! aggregates) do: `m2` grows by `(sum_a·n_b − sum_b·n_a)² / (n_a·n_b·n)`, where the products
//! of counts and sums stay exact for integers below 2^53, so partial states from many nodes, or
//! from spilled partitions, give the answer one pass would. Nothing forms a sum of squares:
//! `1e14 + 1, 1e14 + 2, 1e14 + 3` has a variance of 1, which a sum of squares in a DOUBLE (or a
//! mean that moves by rounded steps) loses.

use crate::bitmap::Bitmap;
use crate::column::ColumnData;
use crate::plan::AggFunc;
use crate::{Column, Error, Result};

/// Count, sum and sum of squared deviations of each group's values.
#[derive(Debug, Default)]
pub(super) struct Moments {
    count: Vec<i64>,
    sum: Vec<f64>,
    m2: Vec<f64>,
}

impl Moments {
    /// Grows (or shrinks) the state to `n` groups; new groups have seen no value.
    pub(super) fn resize(&mut self, n: usize) {
        self.count.resize(n, 0);
        self.sum.resize(n, 0.0);
        self.m2.resize(n, 0.0);
    }

    /// Bytes held.
    pub(super) fn memory_size(&self) -> usize {
        (self.count.capacity() + self.sum.capacity() + self.m2.capacity()) * 8
    }

    /// Takes in the non-NULL values of `col` (DOUBLE), row `i` into group `ids[i]`.
    pub(super) fn update(&mut self, ids: &[u32], col: &Column) -> Result<()> {
        let ColumnData::Float64(v) = &col.data else {
            return Err(Error::Type(format!(
                "a variance's state does not accept a {} column",
                col.data_type()
            )));
        };
        let valid = col.validity.as_ref();
        for (i, &g) in ids.iter().enumerate() {
            if valid.is_none_or(|m| m.get(i)) {
                self.add(g as usize, v[i]);
            }
        }
        Ok(())
    }

    /// One value into group `g`.
    fn add(&mut self, g: usize, x: f64) {
        self.combine(g, Moment::of(x));
    }

    /// Merges partial states (a count, a sum and an `m2` column, as [`Moments::output`] writes
    /// them), row `i` into group `ids[i]`.
    pub(super) fn merge(
        &mut self,
        ids: &[u32],
        counts: &Column,
        sums: &Column,
        m2s: &Column,
    ) -> Result<()> {
        let (Some(c), Some(sum), Some(m2)) = (counts.as_i64(), sums.as_f64(), m2s.as_f64()) else {
            return Err(Error::Type(
                "a variance's state must be (BIGINT, DOUBLE, DOUBLE)".into(),
            ));
        };
        for (i, &g) in ids.iter().enumerate() {
            let present = counts.is_valid(i) && sums.is_valid(i) && m2s.is_valid(i);
            if present && c[i] > 0 {
                let other = Moment {
                    count: c[i],
                    sum: sum[i],
                    m2: m2[i],
                };
                self.combine(g as usize, other);
            }
        }
        Ok(())
    }

    /// Group `g`'s state combined with `other`.
    fn combine(&mut self, g: usize, other: Moment) {
        let here = Moment {
            count: self.count[g],
            sum: self.sum[g],
            m2: self.m2[g],
        };
        let both = here.combine(other);
        (self.count[g], self.sum[g], self.m2[g]) = (both.count, both.sum, both.m2);
    }

    /// Groups `start..end` as state columns (`partial`) or as the final values of `func`.
    pub(super) fn output(
        &self,
        func: AggFunc,
        start: usize,
        end: usize,
        partial: bool,
        out: &mut Vec<Column>,
    ) {
        let r = start..end;
        if partial {
            out.push(Column::from_i64(self.count[r.clone()].to_vec()));
            out.push(Column::from_f64(self.sum[r.clone()].to_vec()));
            out.push(Column::from_f64(self.m2[r].to_vec()));
            return;
        }
        let states = self.count[r.clone()]
            .iter()
            .zip(&self.m2[r])
            .map(|(&count, &m2)| Moment {
                count,
                sum: 0.0,
                m2,
            });
        out.push(finish_column(func, states));
    }
}

/// One group's (or one window frame's) count, sum and sum of squared deviations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Moment {
    /// Values taken in.
    pub(crate) count: i64,
    /// Their sum.
    pub(crate) sum: f64,
    /// The sum of their squared deviations from the mean.
    pub(crate) m2: f64,
}

impl Moment {
    /// The state of one value.
    pub(crate) fn of(x: f64) -> Moment {
        Moment {
            count: 1,
            sum: x,
            m2: 0.0,
        }
    }

    /// The state of both sets of values: the squared deviations of each from its own mean,
    /// plus what the distance between the two means adds.
    pub(crate) fn combine(self, other: Moment) -> Moment {
        if self.count == 0 {
            return other;
        }
        if other.count == 0 {
            return self;
        }
        let count = self.count + other.count;
        let (a, b) = (self.count as f64, other.count as f64);
        // `a·b·(mean_a − mean_b)²/(a + b)`, from products that stay exact on integers.
        let d = self.sum * b - other.sum * a;
        Moment {
            count,
            sum: self.sum + other.sum,
            m2: self.m2 + other.m2 + d * d / (a * b * count as f64),
        }
    }

    /// The value of `func` (a variance or standard deviation) over these values; `None` over
    /// too few (none for the population's, fewer than two for the sample's).
    pub(crate) fn finish(self, func: AggFunc) -> Option<f64> {
        let (sample, root) = match func {
            AggFunc::VarSamp => (true, false),
            AggFunc::VarPop => (false, false),
            AggFunc::StddevSamp => (true, true),
            _ => (false, true),
        };
        let divisor = if sample { self.count - 1 } else { self.count };
        if divisor <= 0 {
            return None;
        }
        // Rounding can leave a few ulps below zero where every value is the same.
        let variance = (self.m2 / divisor as f64).max(0.0);
        Some(if root { variance.sqrt() } else { variance })
    }
}

/// A DOUBLE column of `func` over each state, NULL where there were too few values.
pub(crate) fn finish_column(
    func: AggFunc,
    states: impl ExactSizeIterator<Item = Moment>,
) -> Column {
    let mut values = Vec::with_capacity(states.len());
    let mut present = Vec::with_capacity(states.len());
    for m in states {
        let v = m.finish(func);
        present.push(v.is_some());
        values.push(v.unwrap_or(0.0));
    }
    let validity = (!present.iter().all(|&p| p)).then(|| Bitmap::from_bools(&present));
    Column::with_validity(ColumnData::Float64(values), validity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn final_value(m: &Moments, func: AggFunc, g: usize) -> Option<f64> {
        let mut out = Vec::new();
        m.output(func, g, g + 1, false, &mut out);
        out[0].is_valid(0).then(|| out[0].as_f64().unwrap()[0])
    }

    #[test]
    fn values_far_from_zero_keep_their_variance() {
        let mut m = Moments::default();
        m.resize(1);
        let col = Column::from_f64(vec![1e14 + 1.0, 1e14 + 2.0, 1e14 + 3.0]);
        m.update(&[0, 0, 0], &col).unwrap();
        assert_eq!(final_value(&m, AggFunc::VarSamp, 0), Some(1.0));
        assert_eq!(final_value(&m, AggFunc::StddevSamp, 0), Some(1.0));
        assert!((final_value(&m, AggFunc::VarPop, 0).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn merged_states_give_what_one_pass_gives() {
        let values: Vec<f64> = (0..1000)
            .map(|i| ((i * 37) % 101) as f64 * 0.5 - 7.0)
            .collect();
        let mut whole = Moments::default();
        whole.resize(1);
        whole
            .update(&vec![0; values.len()], &Column::from_f64(values.clone()))
            .unwrap();
        // Three parts, one of them empty, each in a state of its own, then merged.
        let mut parts = Moments::default();
        parts.resize(3);
        let ids: Vec<u32> = (0..values.len()).map(|i| (i % 2) as u32 * 2).collect();
        parts.update(&ids, &Column::from_f64(values)).unwrap();
        let mut cols = Vec::new();
        parts.output(AggFunc::VarSamp, 0, 3, true, &mut cols);
        let mut merged = Moments::default();
        merged.resize(1);
        merged
            .merge(&[0, 0, 0], &cols[0], &cols[1], &cols[2])
            .unwrap();
        let (a, b) = (
            final_value(&whole, AggFunc::VarSamp, 0).unwrap(),
            final_value(&merged, AggFunc::VarSamp, 0).unwrap(),
        );
        assert!((a - b).abs() < 1e-9 * a, "{a} vs {b}");
    }

    #[test]
    fn too_few_values_give_null() {
        let mut m = Moments::default();
        m.resize(2);
        m.update(&[1], &Column::from_f64(vec![4.0])).unwrap();
        assert_eq!(final_value(&m, AggFunc::VarSamp, 0), None);
        assert_eq!(final_value(&m, AggFunc::VarPop, 0), None);
        assert_eq!(final_value(&m, AggFunc::VarSamp, 1), None);
        assert_eq!(final_value(&m, AggFunc::VarPop, 1), Some(0.0));
        assert_eq!(final_value(&m, AggFunc::StddevPop, 1), Some(0.0));
    }
}
