//! How column buffers travel between nodes: each typed buffer (`Vec<i64>`, `Vec<f64>`, ...)
//! is serialized as one run of little-endian bytes rather than as a sequence of values, so
//! that encoding a batch is a copy per column, not a call per value, and decoding is one tight
//! loop per column. A run whose length is not a whole number of values is a clear error.
//!
//! Used through `#[serde(with = "...")]` on the fields of [`ColumnData`](crate::ColumnData)
//! and [`Bitmap`](crate::Bitmap).

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserializer, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// A fixed-size value with a little-endian byte form.
pub(crate) trait LeValue: bytemuck::Pod {
    /// Bytes per value.
    const SIZE: usize = std::mem::size_of::<Self>();
    /// The value of `SIZE` little-endian bytes.
    fn from_le(bytes: &[u8]) -> Self;
    /// Appends the value's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// The type's name, for errors.
    const NAME: &'static str;
}

macro_rules! le_value {
    ($($t:ty),*) => {$(
        impl LeValue for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn from_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

le_value!(i32, i64, u32, u64, f64, i128);

/// The little-endian bytes of `values`: the memory itself on a little-endian machine.
fn le_bytes<T: LeValue>(values: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(values))
    } else {
        let mut out = Vec::with_capacity(values.len() * T::SIZE);
        values.iter().for_each(|v| v.put_le(&mut out));
        std::borrow::Cow::Owned(out)
    }
}

/// Values from a run of little-endian bytes.
fn from_le_bytes<T: LeValue, E: serde::de::Error>(bytes: &[u8]) -> Result<Vec<T>, E> {
    if !bytes.len().is_multiple_of(T::SIZE) {
        return Err(E::custom(format!(
            "a column of {} holds {} bytes, not a whole number of {}-byte values",
            T::NAME,
            bytes.len(),
            T::SIZE
        )));
    }
    Ok(bytes.chunks_exact(T::SIZE).map(T::from_le).collect())
}

/// Serializes a typed buffer as one run of bytes.
pub(crate) fn serialize<T: LeValue, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(&le_bytes(v))
}

/// Deserializes a typed buffer from one run of bytes (or, from formats without byte runs,
/// a sequence of byte values).
pub(crate) fn deserialize<'de, T: LeValue, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_bytes(LeVisitor(PhantomData))
}

struct LeVisitor<T>(PhantomData<T>);

impl<'de, T: LeValue> Visitor<'de> for LeVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a run of little-endian {} values", T::NAME)
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<T>, E> {
        from_le_bytes(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        from_le_bytes(&bytes)
    }
}

/// `#[serde(with)]` for `Vec<u8>`: one run of bytes.
pub(crate) mod bytes {
    use super::*;

    /// Serializes the bytes as one run.
    pub(crate) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    /// Deserializes one run of bytes.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a run of bytes")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

/// `#[serde(with)]` for `Vec<bool>`: one byte per value, each 0 or 1.
pub(crate) mod bools {
    use super::*;

    /// Serializes the booleans as one run of 0 and 1 bytes.
    pub(crate) fn serialize<S: Serializer>(v: &[bool], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
        s.serialize_bytes(&bytes)
    }

    /// Deserializes a run of 0 and 1 bytes; any other byte is an error.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<bool>, D::Error> {
        let bytes = super::bytes::deserialize(d)?;
        bytes
            .iter()
            .map(|&b| match b {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(D::Error::custom(format!(
                    "a boolean column holds the byte {b}, not 0 or 1"
                ))),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Batch, Bitmap, Column, ColumnData};

    fn round_trip(b: &Batch) -> Batch {
        let cfg = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(b, cfg).unwrap();
        bincode::serde::decode_from_slice(&bytes, cfg).unwrap().0
    }

    #[test]
    fn every_column_type_round_trips() {
        let cols = vec![
            Column::from_i64(vec![i64::MIN, -1, 0, i64::MAX]),
            Column::new(ColumnData::Float64(vec![
                -0.0,
                1.5,
                f64::NAN,
                f64::INFINITY,
            ])),
            Column::new(ColumnData::Utf8 {
                offsets: vec![0, 1, 1, 4, 8],
                bytes: "aßcdéf".as_bytes().to_vec(),
            }),
            Column::with_validity(
                ColumnData::Boolean(vec![true, false, true, true]),
                Some(Bitmap::from_bools(&[true, true, false, true])),
            ),
            Column::new(ColumnData::Decimal {
                values: vec![i128::MIN, -1250, 0, i128::MAX],
                precision: 38,
                scale: 2,
            }),
            Column::new(ColumnData::Date(vec![i32::MIN, -1, 0, 20_000])),
            Column::new(ColumnData::Timestamp(vec![0, 1, -1, 1 << 60])),
        ];
        let b = Batch::try_new(cols).unwrap();
        let back = round_trip(&b);
        // NaN is not equal to itself: compare the bits of the float column.
        assert_eq!(back.num_rows(), 4);
        for i in 0..b.num_columns() {
            match (&b.column(i).data, &back.column(i).data) {
                (ColumnData::Float64(x), ColumnData::Float64(y)) => {
                    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(x), bits(y));
                }
                _ => assert_eq!(b.column(i), back.column(i), "column {i}"),
            }
        }
    }

    #[test]
    fn a_column_is_one_run_of_bytes() {
        let n = 10_000;
        let b = Batch::try_new(vec![Column::from_i64((0..n).map(|i| i << 40).collect())]).unwrap();
        let bytes = bincode::serde::encode_to_vec(&b, bincode::config::standard()).unwrap();
        // 8 bytes per value and a few of framing, whatever the values.
        assert!(bytes.len() >= 8 * n as usize && bytes.len() < 8 * n as usize + 64);
    }

    #[test]
    fn malformed_runs_are_errors() {
        use serde::Deserialize;
        #[derive(serde::Serialize)]
        struct Raw(#[serde(with = "super::bytes")] Vec<u8>);
        #[derive(Debug, Deserialize)]
        struct Ints(#[serde(with = "super")] Vec<i64>);
        #[derive(Debug, Deserialize)]
        struct Bools(#[serde(with = "super::bools")] Vec<bool>);
        let cfg = bincode::config::standard();
        let eight = bincode::serde::encode_to_vec(Raw(258i64.to_le_bytes().to_vec()), cfg).unwrap();
        let ok = bincode::serde::decode_from_slice::<Ints, _>(&eight, cfg)
            .unwrap()
            .0;
        assert_eq!(ok.0, vec![258]);
        let bits = bincode::serde::encode_to_vec(Raw(vec![1, 0]), cfg).unwrap();
        let ok = bincode::serde::decode_from_slice::<Bools, _>(&bits, cfg)
            .unwrap()
            .0;
        assert_eq!(ok.0, vec![true, false]);
        let seven = bincode::serde::encode_to_vec(Raw(vec![0; 7]), cfg).unwrap();
        let e = bincode::serde::decode_from_slice::<Ints, _>(&seven, cfg).unwrap_err();
        assert!(e.to_string().contains("not a whole number"), "{e}");
        let two = bincode::serde::encode_to_vec(Raw(vec![0, 2]), cfg).unwrap();
        let e = bincode::serde::decode_from_slice::<Bools, _>(&two, cfg).unwrap_err();
        assert!(e.to_string().contains("not 0 or 1"), "{e}");
    }
}
