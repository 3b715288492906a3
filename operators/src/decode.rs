//! Decoding what another node sent: nothing decoded is trusted until it is checked.
//!
//! Every type that crosses nodes and has invariants the kernels rely on checks them once, as
//! it is decoded, and a value that breaks one is a decode error (the message is refused):
//! [`Bitmap`](crate::Bitmap) (as many words as its length needs, no bit set past it),
//! [`ColumnData`](crate::ColumnData) (text offsets from 0, never decreasing, ending at the
//! byte length, on character boundaries of valid UTF-8; a decimal type's precision and
//! scale), [`Column`](crate::Column) (a validity bitmap of one bit per row),
//! [`Batch`](crate::Batch) (every column as long as the batch), [`DataType`](crate::DataType)
//! and [`Value`](crate::Value) (a decimal's precision and scale). Such a type derives its
//! serde impls with `#[serde(remote = "Self")]` and `checked_serde!` makes the real ones:
//! serializing is the derived form unchanged, deserializing is the derived form followed by
//! [`Checked::check`]. Batches inside a node are moved, never decoded, so no kernel pays for
//! a check.
//!
//! [`Expr`](crate::Expr) and [`PhysicalPlan`](crate::PhysicalPlan) decode with a bounded
//! depth ([`MAX_DECODE_DEPTH`] nested expressions and plan nodes together): a deeper one is a
//! decode error, not a stack overflow.

use std::cell::Cell;

/// How deeply expressions and plan nodes may nest in a decoded message, counted together
/// along any path from the root: well above what a plan of a statement the planner accepts
/// holds (statements nest at most 1,000 levels), and low enough that what walks a decoded
/// plan without growing its stack (dropping it, building its operators) fits a thread's
/// default stack of 2 MiB. Decoding and evaluating go on on a new stack segment
/// ([`deeper`]) when the thread's runs short.
pub const MAX_DECODE_DEPTH: usize = 4_000;

/// Stack a recursive step (decoding or evaluating one level of an expression) wants left
/// before it runs; with less, it runs on a new segment.
pub(crate) const STACK_RED_ZONE: usize = 64 * 1024;

/// The size of a new stack segment for deep recursion.
pub(crate) const STACK_SEGMENT: usize = 1024 * 1024;

/// Most rows a decoded batch without columns may claim: its rows are only a count, so the
/// count is all that bounds what a kernel allocates for it.
pub const MAX_COLUMNLESS_ROWS: usize = 1 << 24;

/// A type whose decoded values are checked before use (see the module comment).
pub trait Checked {
    /// Why the value breaks an invariant of its type, if it does.
    fn check(&self) -> Result<(), String>;
}

thread_local! {
    /// How deeply this thread is inside decoding expressions and plan nodes.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// One level of nesting while decoding an expression or a plan node; leaves it when dropped.
pub(crate) struct Nested(());

impl Nested {
    /// Enters one more level, or fails past [`MAX_DECODE_DEPTH`].
    pub(crate) fn enter<E: serde::de::Error>(what: &str) -> Result<Nested, E> {
        DEPTH.with(|d| {
            let depth = d.get() + 1;
            if depth > MAX_DECODE_DEPTH {
                return Err(E::custom(format!(
                    "{what} nested more than {MAX_DECODE_DEPTH} levels deep"
                )));
            }
            d.set(depth);
            Ok(Nested(()))
        })
    }
}

impl Drop for Nested {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Runs one level of a recursive decoding step, on a new stack segment when the thread's runs
/// short (see [`MAX_DECODE_DEPTH`]).
pub fn deeper<R>(step: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, step)
}

/// Enters one more level of expression or plan nesting while decoding (`what` names it in
/// the error past [`MAX_DECODE_DEPTH`]); the level is left when the guard drops.
pub fn enter_nested<E: serde::de::Error>(what: &str) -> Result<impl Drop, E> {
    Nested::enter(what)
}

/// The serde impls of a type deriving them with `#[serde(remote = "Self")]` (so that the
/// derived forms are inherent functions): serialize as derived; deserialize as derived, then
/// [`Checked::check`] (`checked_serde!(T)`), or within one more level of nesting, bounded by
/// [`MAX_DECODE_DEPTH`] (`checked_serde!(T, nested "what")`).
macro_rules! checked_serde {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$t>::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = <$t>::deserialize(d)?;
                $crate::decode::Checked::check(&value).map_err(serde::de::Error::custom)?;
                Ok(value)
            }
        }
    };
    ($t:ty, nested $what:literal) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$t>::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let _level = $crate::decode::enter_nested::<D::Error>($what)?;
                $crate::decode::deeper(|| <$t>::deserialize(d))
            }
        }
    };
}

pub(crate) use checked_serde;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, Bitmap, Column, ColumnData, DataType, Expr, PhysicalPlan, Value};
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    fn cfg() -> impl bincode::config::Config {
        bincode::config::standard()
    }

    fn encode<T: Serialize>(v: &T) -> Vec<u8> {
        bincode::serde::encode_to_vec(v, cfg()).unwrap()
    }

    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        bincode::serde::decode_from_slice(bytes, cfg())
            .map(|(v, _)| v)
            .map_err(|e| e.to_string())
    }

    /// The same shapes as the checked types, without their checks: what a forger can send.
    mod raw {
        use serde::Serialize;

        #[derive(Serialize)]
        pub struct Bitmap {
            #[serde(with = "crate::wire")]
            pub words: Vec<u64>,
            pub len: usize,
        }

        #[derive(Serialize)]
        pub enum ColumnData {
            Int64(#[serde(with = "crate::wire")] Vec<i64>),
            Float64(#[serde(with = "crate::wire")] Vec<f64>),
            Utf8 {
                #[serde(with = "crate::wire")]
                offsets: Vec<u32>,
                #[serde(with = "crate::wire::bytes")]
                bytes: Vec<u8>,
            },
            Boolean(#[serde(with = "crate::wire::bools")] Vec<bool>),
            Decimal {
                #[serde(with = "crate::wire")]
                values: Vec<i128>,
                precision: u8,
                scale: u8,
            },
        }

        #[derive(Serialize)]
        pub struct Column {
            pub data: ColumnData,
            pub validity: Option<Bitmap>,
        }

        #[derive(Serialize)]
        pub struct Batch {
            pub columns: Vec<Column>,
            pub num_rows: usize,
        }
    }

    fn text(offsets: Vec<u32>, bytes: &[u8]) -> raw::ColumnData {
        raw::ColumnData::Utf8 {
            offsets,
            bytes: bytes.to_vec(),
        }
    }

    fn column(data: raw::ColumnData) -> raw::Column {
        raw::Column {
            data,
            validity: None,
        }
    }

    /// A column forged from `data` decodes, or fails naming `why`.
    fn column_error(data: raw::ColumnData) -> String {
        decode::<Column>(&encode(&column(data))).unwrap_err()
    }

    #[test]
    fn well_formed_values_round_trip() {
        let b = Batch::try_new(vec![
            Column::from_strs(&["", "aß", "ccc"]),
            Column::with_validity(
                ColumnData::Int64(vec![1, 2, 3]),
                Some(Bitmap::from_bools(&[true, false, true])),
            ),
        ])
        .unwrap();
        assert_eq!(decode::<Batch>(&encode(&b)).unwrap(), b);
        let none = Batch::with_row_count(vec![], 7).unwrap();
        assert_eq!(decode::<Batch>(&encode(&none)).unwrap().num_rows(), 7);
        for v in [Value::Decimal(-1250, 2), Value::Date(i32::MIN), Value::Null] {
            assert_eq!(decode::<Value>(&encode(&v)).unwrap(), v);
        }
        let t = DataType::decimal(38, 38);
        assert_eq!(decode::<DataType>(&encode(&t)).unwrap(), t);
    }

    #[test]
    fn text_offsets_must_start_at_zero_rise_and_end_at_the_bytes() {
        // The case: one row's worth of offsets is missing.
        assert!(column_error(text(vec![], b"")).contains("no offsets"));
        assert!(column_error(text(vec![1, 2], b"ab")).contains("start at 1"));
        assert!(column_error(text(vec![0, 2, 1, 2], b"ab")).contains("decrease"));
        assert!(column_error(text(vec![0, 1], b"ab")).contains("end at 1"));
        assert!(column_error(text(vec![0, 9], b"ab")).contains("end at 9"));
        // Invalid UTF-8, and an offset inside a character.
        assert!(column_error(text(vec![0, 2], &[0xff, 0xfe])).contains("UTF-8"));
        assert!(column_error(text(vec![0, 1, 2], "ß".as_bytes())).contains("character"));
        // The smallest well-formed text column: no rows.
        let ok = decode::<Column>(&encode(&column(text(vec![0], b"")))).unwrap();
        assert!(ok.is_empty());
    }

    #[test]
    fn decimal_types_need_a_precision_and_scale_in_range() {
        let dec = |precision, scale| raw::ColumnData::Decimal {
            values: vec![1],
            precision,
            scale,
        };
        assert!(column_error(dec(0, 0)).contains("precision"));
        assert!(column_error(dec(39, 0)).contains("precision"));
        assert!(column_error(dec(5, 6)).contains("scale"));
        assert!(decode::<Column>(&encode(&column(dec(38, 38)))).is_ok());
        let bad = DataType::Decimal {
            precision: 40,
            scale: 2,
        };
        assert!(decode::<DataType>(&encode(&bad))
            .unwrap_err()
            .contains("precision"));
        let bad = Value::Decimal(1, 39);
        assert!(decode::<Value>(&encode(&bad))
            .unwrap_err()
            .contains("scale"));
    }

    #[test]
    fn bitmaps_are_sized_to_their_length_and_to_the_column() {
        let bitmap = |words: Vec<u64>, len| raw::Bitmap { words, len };
        let e = decode::<Bitmap>(&encode(&bitmap(vec![], 3))).unwrap_err();
        assert!(e.contains("0 words"), "{e}");
        let e = decode::<Bitmap>(&encode(&bitmap(vec![0, 0], 3))).unwrap_err();
        assert!(e.contains("2 words"), "{e}");
        // Bits past the length would count as present rows that do not exist.
        let e = decode::<Bitmap>(&encode(&bitmap(vec![0b1000], 3))).unwrap_err();
        assert!(e.contains("past its length"), "{e}");
        assert!(decode::<Bitmap>(&encode(&bitmap(vec![0b101], 3))).is_ok());
        // A bitmap too short for its column.
        let c = raw::Column {
            data: raw::ColumnData::Int64(vec![1, 2, 3]),
            validity: Some(bitmap(vec![0b1], 1)),
        };
        let e = decode::<Column>(&encode(&c)).unwrap_err();
        assert!(e.contains("validity") && e.contains("1 bits"), "{e}");
    }

    #[test]
    fn every_column_of_a_batch_has_its_row_count() {
        let batch = |num_rows, columns| raw::Batch { columns, num_rows };
        let ints = |n: i64| column(raw::ColumnData::Int64((0..n).collect()));
        // A row count that disagrees with a column, either way, and columns that disagree.
        for b in [
            batch(2, vec![ints(3)]),
            batch(4, vec![ints(3)]),
            batch(3, vec![ints(3), ints(2)]),
        ] {
            let e = decode::<Batch>(&encode(&b)).unwrap_err();
            assert!(e.contains("rows"), "{e}");
        }
        // The case: a text column with offsets [0] (no rows) in a batch of one row.
        let e = decode::<Batch>(&encode(&batch(1, vec![column(text(vec![0], b""))]))).unwrap_err();
        assert!(e.contains("rows"), "{e}");
        let e = decode::<Batch>(&encode(&batch(usize::MAX, vec![]))).unwrap_err();
        assert!(e.contains("without columns"), "{e}");
        assert!(decode::<Batch>(&encode(&batch(3, vec![ints(3), ints(3)]))).is_ok());
        // A booleans' column and floats are any bytes of the right count.
        let mixed = batch(
            2,
            vec![
                column(raw::ColumnData::Boolean(vec![true, false])),
                column(raw::ColumnData::Float64(vec![f64::NAN, 1.0])),
            ],
        );
        assert!(decode::<Batch>(&encode(&mixed)).is_ok());
    }

    /// `enc(wrap(x))` is `before ++ enc(x) ++ after` for a wrapper of one child: both
    /// parts, so that a test can forge any depth without building (or encoding, or dropping)
    /// the deep value itself, which would recurse as deeply.
    fn parts<T: Serialize>(wrapped: &T, inner: &T) -> (Vec<u8>, Vec<u8>) {
        let (w, i) = (encode(wrapped), encode(inner));
        let at = (0..=w.len() - i.len())
            .find(|&k| w[k..k + i.len()] == i[..])
            .expect("the child's bytes are in the wrapper's");
        (w[..at].to_vec(), w[at + i.len()..].to_vec())
    }

    /// `depth` wrappers around `leaf`, encoded.
    fn forged((before, after): &(Vec<u8>, Vec<u8>), depth: usize, leaf: &[u8]) -> Vec<u8> {
        let mut bytes = before.repeat(depth);
        bytes.extend_from_slice(leaf);
        bytes.extend(after.repeat(depth));
        bytes
    }

    #[test]
    fn deep_expressions_are_a_decode_error_not_a_stack_overflow() {
        // On a thread with a normal stack (2 MiB), as a node's actor thread has.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let leaf = Expr::Column(0);
                let not = parts(&Expr::Not(Box::new(leaf.clone())), &leaf);
                let leaf = encode(&leaf);
                let e = decode::<Expr>(&forged(&not, 100_000, &leaf)).unwrap_err();
                assert!(e.contains("nested more than"), "{e}");
                // At the limit it decodes, evaluates and drops fine; one more is refused.
                let deep = decode::<Expr>(&forged(&not, MAX_DECODE_DEPTH - 1, &leaf)).unwrap();
                let flags = Batch::try_new(vec![Column::from_bools(vec![true, false])]).unwrap();
                let got = crate::eval::evaluate(&deep, &flags, &[]).unwrap();
                // An odd number of NOTs.
                assert_eq!(got.as_bool(), Some(&[false, true][..]));
                drop(deep);
                assert!(decode::<Expr>(&forged(&not, MAX_DECODE_DEPTH, &leaf)).is_err());
                // Every recursive shape counts: an argument list, a CASE, a cast.
                let arg = Expr::Literal(Value::Int(1));
                for wrap in [
                    Expr::Function {
                        func: crate::ScalarFunc::Abs,
                        args: vec![arg.clone()],
                    },
                    Expr::Case {
                        operand: None,
                        branches: vec![(Expr::Literal(Value::Bool(true)), arg.clone())],
                        else_result: Some(Box::new(arg.clone())),
                    },
                    Expr::Cast {
                        expr: Box::new(arg.clone()),
                        to: DataType::Int64,
                    },
                    Expr::Negate(Box::new(arg.clone())),
                ] {
                    let p = parts(&wrap, &arg);
                    let e = decode::<Expr>(&forged(&p, 100_000, &encode(&arg))).unwrap_err();
                    assert!(e.contains("nested more than"), "{e}");
                }
                // Plans nest the same way, and count with their expressions.
                let leaf = PhysicalPlan::Values {
                    schema: Default::default(),
                    rows: vec![],
                };
                let wrap = PhysicalPlan::Limit {
                    input: Box::new(leaf.clone()),
                    offset: 0,
                    limit: None,
                };
                let p = parts(&wrap, &leaf);
                let e = decode::<PhysicalPlan>(&forged(&p, 100_000, &encode(&leaf))).unwrap_err();
                assert!(e.contains("nested more than"), "{e}");
                // A failed decode leaves the depth where it was.
                assert_eq!(DEPTH.with(Cell::get), 0);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
