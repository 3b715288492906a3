//! Join keys: a side's key columns (read in place when the key is a plain column), NULL-key
//! masks, converting probe keys to the build keys' type, and the heap size of a hash table
//! (for accounting before it is allocated).

use crate::column::ColumnData;
use crate::eval::{cast_column, evaluate};
use crate::{Batch, Column, DataType, Error, Expr, Result, Value};

/// One batch's join key columns.
pub(crate) enum KeyColumns {
    /// The only key is column `i` of the batch, as it is (no copy).
    Input(usize),
    /// Keys evaluated into columns of their own.
    Owned(Vec<Column>),
}

impl KeyColumns {
    /// The key columns of `batch` for key expressions `exprs`, of the types `want` when given
    /// (converted with [`align_key`]). A single plain column reference of the wanted type is
    /// read in place.
    pub fn of(
        exprs: &[Expr],
        batch: &Batch,
        params: &[Value],
        want: Option<&[DataType]>,
    ) -> Result<KeyColumns> {
        if let [Expr::Column(i)] = exprs {
            let fits = |c: &Column| want.is_none_or(|w| w.first() == Some(&c.data_type()));
            if batch.columns().get(*i).is_some_and(fits) {
                return Ok(KeyColumns::Input(*i));
            }
        }
        let mut keys = exprs
            .iter()
            .map(|e| evaluate(e, batch, params))
            .collect::<Result<Vec<_>>>()?;
        if let Some(want) = want {
            for (k, &t) in keys.iter_mut().zip(want) {
                align_key(k, t)?;
            }
        }
        Ok(KeyColumns::Owned(keys))
    }

    /// The key columns, given the batch they were made from.
    pub fn get<'a>(&'a self, batch: &'a Batch) -> &'a [Column] {
        match self {
            KeyColumns::Input(i) => std::slice::from_ref(batch.column(*i)),
            KeyColumns::Owned(v) => v,
        }
    }

    /// Heap bytes held apart from the batch.
    pub fn memory_size(&self) -> usize {
        match self {
            KeyColumns::Input(_) => 0,
            KeyColumns::Owned(v) => v.iter().map(Column::memory_size).sum(),
        }
    }
}

/// Heap bytes of a hashbrown table with room for `capacity` entries of `entry` bytes: a
/// power-of-two number of buckets at up to 7/8 load, each an entry plus one control byte,
/// plus one group of trailing control bytes.
pub(crate) fn hash_table_bytes(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 4 {
        4
    } else if capacity < 8 {
        8
    } else {
        (capacity.saturating_mul(8) / 7).next_power_of_two()
    };
    buckets * (entry + 1) + 16
}

/// Marks rows where any key is NULL (`None` when no key has NULLs).
pub(crate) fn null_key_rows(keys: &[Column], n: usize) -> Option<Vec<bool>> {
    if keys.iter().all(|k| k.validity.is_none()) {
        return None;
    }
    let mut m = vec![false; n];
    for k in keys {
        if let Some(v) = &k.validity {
            for (i, x) in m.iter_mut().enumerate() {
                *x |= !v.get(i);
            }
        }
    }
    Some(m)
}

/// Converts probe key `k` to the build key type `to` so that equal values hash equally.
/// A float probe against integer build keys keeps only integral values (others cannot match).
pub(crate) fn align_key(k: &mut Column, to: DataType) -> Result<()> {
    let from = k.data_type();
    if from == to {
        return Ok(());
    }
    match (from, to) {
        (DataType::Float64, DataType::Int64) => {
            let ColumnData::Float64(v) = &k.data else {
                return Ok(());
            };
            let mut valid: Vec<bool> = (0..v.len()).map(|i| k.is_valid(i)).collect();
            let ints: Vec<i64> = v
                .iter()
                .zip(valid.iter_mut())
                .map(|(&f, ok)| {
                    if f.fract() == 0.0 && f.abs() < 9.2e18 {
                        f as i64
                    } else {
                        *ok = false;
                        0
                    }
                })
                .collect();
            *k = Column::with_validity(
                ColumnData::Int64(ints),
                Some(crate::Bitmap::from_bools(&valid)),
            );
            Ok(())
        }
        (DataType::Int64, DataType::Float64) => {
            *k = cast_column(k, to)?;
            Ok(())
        }
        // Decimals of one scale differ only in their declared precision: same unscaled values.
        (
            DataType::Decimal { scale: a, .. },
            DataType::Decimal {
                precision,
                scale: b,
            },
        ) if a == b => {
            if let ColumnData::Decimal { precision: p, .. } = &mut k.data {
                *p = precision;
            }
            Ok(())
        }
        _ => Err(Error::Type(format!(
            "cannot join {from} keys with {to} keys"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::hash::IdentityBuild;
    use hashbrown::HashMap;

    #[test]
    fn hash_table_estimate_matches_hashbrown() {
        for n in [1, 3, 4, 7, 8, 14, 15, 100, 1000, 100_000] {
            let m: HashMap<u64, u32, IdentityBuild> =
                HashMap::with_capacity_and_hasher(n, IdentityBuild::default());
            assert_eq!(
                hash_table_bytes(n, std::mem::size_of::<(u64, u32)>()),
                m.allocation_size(),
                "capacity {n}"
            );
        }
        assert_eq!(hash_table_bytes(0, 16), 0);
    }
}
