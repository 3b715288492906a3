//! Where a window's sorted rows split: the partitions and, within them, the peer groups
//! (rows equal in every ORDER BY key), found once in one typed pass per key column and shared
//! by every function.

use crate::column::ColumnData;
use crate::Column;

/// The partitions and peer groups of `n` rows sorted by partition keys, then ORDER BY keys.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Partition `p` is rows `parts[p]..parts[p + 1]`.
    parts: Vec<u32>,
    /// Peer group `g` is rows `groups[g]..groups[g + 1]`; groups never span partitions.
    groups: Vec<u32>,
    /// Each row's peer group.
    group_of: Vec<u32>,
    /// Each peer group's partition.
    part_of_group: Vec<u32>,
}

impl Layout {
    /// The layout of `n` sorted rows whose partition keys are `partition` and ORDER BY keys
    /// `order` (columns of `n` rows; NULLs equal one another).
    pub(crate) fn new(partition: &[&Column], order: &[&Column], n: usize) -> Layout {
        let mut part_start = vec![false; n];
        for c in partition {
            mark_changes(c, &mut part_start);
        }
        let mut group_start = part_start.clone();
        for c in order {
            mark_changes(c, &mut group_start);
        }
        let mut parts = Vec::new();
        let mut groups = Vec::new();
        let mut group_of = Vec::with_capacity(n);
        let mut part_of_group = Vec::new();
        for i in 0..n {
            if i == 0 || part_start[i] {
                parts.push(i as u32);
            }
            if i == 0 || group_start[i] {
                groups.push(i as u32);
                part_of_group.push((parts.len() - 1) as u32);
            }
            group_of.push((groups.len() - 1) as u32);
        }
        parts.push(n as u32);
        groups.push(n as u32);
        Layout {
            parts,
            groups,
            group_of,
            part_of_group,
        }
    }

    /// Bytes a layout of `n` rows takes at most (every row its own group).
    pub(crate) fn bytes_for(n: usize) -> usize {
        n * (1 + 1 + 4 + 4 + 4 + 4) + 16
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.group_of.len()
    }

    /// Each partition's rows, `(start, end)`, in order.
    pub(crate) fn partitions(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.parts
            .windows(2)
            .map(|w| (w[0] as usize, w[1] as usize))
    }

    /// Row `i`'s peer group: its index.
    #[inline]
    pub(crate) fn group(&self, i: usize) -> usize {
        self.group_of[i] as usize
    }

    /// Peer group `g`'s rows, `(start, end)`.
    #[inline]
    pub(crate) fn group_rows(&self, g: usize) -> (usize, usize) {
        (self.groups[g] as usize, self.groups[g + 1] as usize)
    }

    /// The peer groups of row `i`'s partition: `(first, end)` group indices.
    #[inline]
    pub(crate) fn partition_groups(&self, i: usize) -> (usize, usize) {
        let p = self.part_of_group[self.group(i)] as usize;
        let (ps, pe) = (self.parts[p], self.parts[p + 1] as usize);
        let first = self.group_of[ps as usize] as usize;
        let end = if pe == self.rows() {
            self.groups.len() - 1
        } else {
            self.group_of[pe] as usize
        };
        (first, end)
    }
}

/// Sets `starts[i]` for each row `i > 0` that differs from row `i - 1` in `col` (NULLs are
/// equal to each other and differ from every value; floats compare as numbers, with NaN
/// equal to NaN).
pub(crate) fn mark_changes(col: &Column, starts: &mut [bool]) {
    /// The typed pass: `same(i, j)` compares two present values.
    fn pass(col: &Column, starts: &mut [bool], same: impl Fn(usize, usize) -> bool) {
        let n = starts.len().min(col.len());
        match &col.validity {
            None => {
                for (i, start) in starts.iter_mut().enumerate().take(n).skip(1) {
                    if !same(i - 1, i) {
                        *start = true;
                    }
                }
            }
            Some(valid) => {
                for (i, start) in starts.iter_mut().enumerate().take(n).skip(1) {
                    let (a, b) = (valid.get(i - 1), valid.get(i));
                    if a != b || (a && !same(i - 1, i)) {
                        *start = true;
                    }
                }
            }
        }
    }
    match &col.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => pass(col, starts, |a, b| v[a] == v[b]),
        ColumnData::Float64(v) => pass(col, starts, |a, b| {
            v[a] == v[b] || (v[a].is_nan() && v[b].is_nan())
        }),
        ColumnData::Boolean(v) => pass(col, starts, |a, b| v[a] == v[b]),
        ColumnData::Decimal { values, .. } => pass(col, starts, |a, b| values[a] == values[b]),
        ColumnData::Date(v) => pass(col, starts, |a, b| v[a] == v[b]),
        ColumnData::Utf8 { .. } => pass(col, starts, |a, b| col.str_at(a) == col.str_at(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Value};

    #[test]
    fn partitions_and_peer_groups_with_nulls() {
        let p = Column::from_values(
            DataType::Int64,
            &[
                1.into(),
                1.into(),
                1.into(),
                2.into(),
                Value::Null,
                Value::Null,
            ],
        )
        .unwrap();
        let o = Column::from_values(
            DataType::Utf8,
            &[
                "a".into(),
                "a".into(),
                "b".into(),
                "b".into(),
                Value::Null,
                Value::Null,
            ],
        )
        .unwrap();
        let l = Layout::new(&[&p], &[&o], 6);
        assert_eq!(l.partitions().collect::<Vec<_>>(), [(0, 3), (3, 4), (4, 6)]);
        let groups: Vec<(usize, usize)> = (0..6).map(|i| l.group_rows(l.group(i))).collect();
        assert_eq!(groups, [(0, 2), (0, 2), (2, 3), (3, 4), (4, 6), (4, 6)]);
        assert_eq!(l.partition_groups(1), (0, 2));
        assert_eq!(l.partition_groups(3), (2, 3));
        assert_eq!(l.partition_groups(5), (3, 4));
        // No keys at all: one partition, one group.
        let l = Layout::new(&[], &[], 3);
        assert_eq!(l.partitions().collect::<Vec<_>>(), [(0, 3)]);
        assert_eq!(l.group_rows(l.group(2)), (0, 3));
        // No rows: no partitions.
        let l = Layout::new(&[], &[], 0);
        assert_eq!(l.partitions().count(), 0);
    }
}
