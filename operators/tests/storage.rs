//! Storage tests: inserts (all-or-nothing, duplicate and NULL keys), chunking, and index
//! lookups compared against filtering every stored row.

use proptest::prelude::*;
use std::collections::BTreeSet;
use weir_operators::kernels::{ExecContext, ScanSource};
use weir_operators::plan::IndexLookup;
use weir_operators::storage::PartitionData;
use weir_operators::{Batch, DataType, Expr, Field, Schema, Value, DEFAULT_BATCH_SIZE};

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64),
        Field::new("v", DataType::Float64),
        Field::new("s", DataType::Utf8),
    ])
}

fn batch(ids: &[i64]) -> Batch {
    let rows: Vec<Vec<Value>> = ids
        .iter()
        .map(|&i| {
            vec![
                Value::Int(i),
                if i % 3 == 0 {
                    Value::Null
                } else {
                    Value::Float((i % 17) as f64 / 2.0)
                },
                Value::Str(format!("s{}", i % 5)),
            ]
        })
        .collect();
    Batch::from_rows(&schema().types(), &rows).unwrap()
}

fn all_rows(p: &PartitionData) -> Vec<Vec<Value>> {
    p.chunks().iter().flat_map(|c| c.rows()).collect()
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|a, b| a[0].sort_cmp(&b[0]));
    rows
}

fn bound(v: i32, incl: bool) -> Option<(Expr, bool)> {
    Some((Expr::lit(v as f64 / 4.0), incl))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn inserts_and_lookups(
        inserts in proptest::collection::vec(proptest::collection::vec(0i64..3000, 1..900), 1..6),
        probes in proptest::collection::vec(-10i32..40, 1..6),
        lo in proptest::option::of((-10i32..40, any::<bool>())),
        hi in proptest::option::of((-10i32..40, any::<bool>())),
    ) {
        let mut p = PartitionData::new(schema(), 0, &[1]);
        let mut present = BTreeSet::new();
        for ids in &inserts {
            let b = batch(ids);
            let unique: BTreeSet<i64> = ids.iter().copied().collect();
            let ok = unique.len() == ids.len() && unique.is_disjoint(&present);
            let before = p.num_rows();
            prop_assert_eq!(p.check_insert(&b).is_ok(), ok);
            let res = p.insert(&b);
            prop_assert_eq!(res.is_ok(), ok);
            if ok {
                present.extend(unique);
            } else {
                prop_assert_eq!(p.num_rows(), before);
            }
        }
        prop_assert_eq!(p.num_rows(), present.len());
        let chunks = p.chunks();
        for (i, c) in chunks.iter().enumerate() {
            prop_assert!(c.num_rows() <= DEFAULT_BATCH_SIZE);
            if i + 1 < chunks.len() {
                prop_assert_eq!(c.num_rows(), DEFAULT_BATCH_SIZE);
            }
        }
        let rows = all_rows(&p);
        // Equality and IN on the primary key.
        let list: Vec<Expr> = probes.iter().map(|&k| Expr::lit(k as i64 * 50)).collect();
        let got = p.index_lookup(0, &IndexLookup::In(list), &[]).unwrap();
        let want: Vec<Vec<Value>> = rows.iter().filter(|r| probes.iter().any(|&k| r[0] == Value::Int(k as i64 * 50))).cloned().collect();
        prop_assert_eq!(sorted(got.rows()), sorted(want));
        // Ranges on the primary key (scan fallback) and on the ordered float index.
        for col in [0usize, 1] {
            let scale = if col == 0 { 100.0 } else { 1.0 };
            let lookup = IndexLookup::Range {
                low: lo.and_then(|(v, i)| bound(v, i)).map(|(e, i)| (e.binary(weir_operators::BinaryOp::Mul, Expr::lit(scale)), i)),
                high: hi.and_then(|(v, i)| bound(v, i)).map(|(e, i)| (e.binary(weir_operators::BinaryOp::Mul, Expr::lit(scale)), i)),
            };
            let got = p.index_lookup(col, &lookup, &[]).unwrap();
            prop_assert_eq!(got.types(), schema().types());
            let want: Vec<Vec<Value>> = rows
                .iter()
                .filter(|r| {
                    let Some(x) = r[col].as_f64() else { return false };
                    let lo_ok = lo.is_none_or(|(v, incl)| {
                        let b = v as f64 / 4.0 * scale;
                        if incl { x >= b } else { x > b }
                    });
                    let hi_ok = hi.is_none_or(|(v, incl)| {
                        let b = v as f64 / 4.0 * scale;
                        if incl { x <= b } else { x < b }
                    });
                    lo_ok && hi_ok
                })
                .cloned()
                .collect();
            prop_assert_eq!(sorted(got.rows()), sorted(want));
        }
        // An unfiltered scan returns every row, coalesced.
        let mut scan = ScanSource::new(p.chunks(), None, vec![2, 0], ExecContext::new(vec![]));
        let mut n = 0;
        while let Some(b) = scan.next_batch().unwrap() {
            prop_assert_eq!(b.num_columns(), 2);
            n += b.num_rows();
        }
        prop_assert_eq!(n, present.len());
    }
}

#[test]
fn secondary_index_on_strings_and_params() {
    let mut p = PartitionData::new(schema(), 0, &[]);
    p.insert(&batch(&(0..5000).collect::<Vec<_>>())).unwrap();
    p.add_index(2);
    let got = p
        .index_lookup(2, &IndexLookup::Eq(Expr::Param(0)), &[Value::from("s3")])
        .unwrap();
    assert_eq!(got.num_rows(), 1000);
    assert!(got.rows().iter().all(|r| r[0].as_i64().unwrap() % 5 == 3));
    let none = p
        .index_lookup(2, &IndexLookup::Eq(Expr::Param(0)), &[Value::Null])
        .unwrap();
    assert_eq!(none.num_rows(), 0);
    assert_eq!(none.num_columns(), 3);
    let err = p.insert(&batch(&[4999])).unwrap_err();
    assert!(err.to_string().contains("4999"), "{err}");
}
