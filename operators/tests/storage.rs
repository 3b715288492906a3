//! Storage tests: inserts (all-or-nothing, duplicate and NULL keys), tables without a key,
//! partition assignment, chunking, and index lookups compared against filtering every stored
//! row.

use proptest::prelude::*;
use std::collections::BTreeSet;
use weir_operators::kernels::{ExecContext, ScanSource};
use weir_operators::placement::{assign_partitions, partition_of, partition_rows};
use weir_operators::plan::IndexLookup;
use weir_operators::storage::PartitionData;
use weir_operators::table_store::TableStore;
use weir_operators::{Batch, DataType, Error, Expr, Field, Schema, Value};

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

/// Rows matching `lookup` through a node-wide secondary index on `column` over partition `p`.
fn by_index(
    p: &PartitionData,
    column: usize,
    lookup: &IndexLookup,
    params: &[Value],
) -> weir_operators::Result<Batch> {
    let types = schema().types();
    let mut store = TableStore::new(&types, &[column]);
    store.put(0, p.clone());
    let parts: Vec<Batch> = store
        .lookup(column, lookup, params, &[0])?
        .iter()
        .map(|c| match &c.selection {
            Some(rows) => c.rows.take(rows),
            None => (*c.rows).clone(),
        })
        .collect();
    if parts.is_empty() {
        Ok(Batch::empty(&types))
    } else {
        Batch::concat(&parts)
    }
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
        let mut p = PartitionData::new(schema(), &[0]);
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
            prop_assert!(c.num_rows() <= weir_operators::storage::CHUNK_ROWS);
            if i + 1 < chunks.len() {
                prop_assert_eq!(c.num_rows(), weir_operators::storage::CHUNK_ROWS);
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
            let got = if col == 0 {
                p.index_lookup(col, &lookup, &[]).unwrap()
            } else {
                by_index(&p, col, &lookup, &[]).unwrap()
            };
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
    let mut p = PartitionData::new(schema(), &[0]);
    p.insert(&batch(&(0..5000).collect::<Vec<_>>())).unwrap();
    let got = by_index(
        &p,
        2,
        &IndexLookup::Eq(Expr::Param(0)),
        &[Value::from("s3")],
    )
    .unwrap();
    assert_eq!(got.num_rows(), 1000);
    assert!(got.rows().iter().all(|r| r[0].as_i64().unwrap() % 5 == 3));
    let none = by_index(&p, 2, &IndexLookup::Eq(Expr::Param(0)), &[Value::Null]).unwrap();
    assert_eq!(none.num_rows(), 0);
    assert_eq!(none.num_columns(), 3);
    let err = p.insert(&batch(&[4999])).unwrap_err();
    assert!(err.to_string().contains("4999"), "{err}");
}

#[test]
fn duplicate_and_null_keys_are_typed_errors_naming_column_and_value() {
    let mut p = PartitionData::new(schema(), &[0]);
    p.insert(&batch(&[1, 2, 3])).unwrap();
    let before = all_rows(&p);
    // Against a stored row, and within one batch: nothing of the batch goes in.
    for ids in [&[4, 5, 3][..], &[7, 8, 7, 9]] {
        let err = p.insert(&batch(ids)).unwrap_err();
        let dup = if ids[0] == 4 { 3 } else { 7 };
        assert_eq!(
            err,
            Error::DuplicateKey {
                column: "id".into(),
                value: Value::Int(dup)
            }
        );
        assert_eq!(err.to_string(), format!("duplicate primary key id = {dup}"));
        assert_eq!(all_rows(&p), before);
    }
    let mut rows = batch(&[10, 11]).rows();
    rows[1][0] = Value::Null;
    let null = Batch::from_rows(&schema().types(), &rows).unwrap();
    let err = p.insert(&null).unwrap_err();
    assert_eq!(
        err,
        Error::NullKey {
            column: "id".into()
        }
    );
    assert_eq!(err.to_string(), "primary key id cannot be NULL");
    assert_eq!(all_rows(&p), before);
    // A string key is shown as a quoted literal.
    let mut s = PartitionData::new(schema(), &[2]);
    s.insert(&batch(&[1])).unwrap();
    let err = s.insert(&batch(&[6])).unwrap_err();
    assert_eq!(err.to_string(), "duplicate primary key s = 's1'");
    assert_eq!(s.num_rows(), 1);
}

#[test]
fn a_table_without_a_key_keeps_every_row() {
    let mut p = PartitionData::new(schema(), &[]);
    // Repeated ids, repeated whole rows and NULLs in every column.
    let mut rows = batch(&[1, 1, 2, 1]).rows();
    rows.push(vec![Value::Null, Value::Null, Value::Null]);
    rows.push(vec![Value::Null, Value::Null, Value::Null]);
    let b = Batch::from_rows(&schema().types(), &rows).unwrap();
    p.check_insert(&b).unwrap();
    p.insert(&b).unwrap();
    p.insert(&b).unwrap();
    assert_eq!(p.num_rows(), 12);
    let mut want = rows.clone();
    want.extend(rows.clone());
    assert_eq!(sorted(all_rows(&p)), sorted(want));
    // No key index; a secondary index finds every copy.
    assert!(!p.has_index(0));
    assert!(p
        .index_lookup(0, &IndexLookup::Eq(Expr::lit(1)), &[])
        .is_err());
    let got = by_index(&p, 2, &IndexLookup::Eq(Expr::lit("s1")), &[]).unwrap();
    assert_eq!(got.num_rows(), 6);
    assert!(got.rows().iter().all(|r| r[0] == Value::Int(1)));
    // Types are still checked.
    let wrong = Batch::from_rows(
        &[DataType::Utf8, DataType::Float64, DataType::Utf8],
        &[vec!["x".into(), Value::Null, Value::Null]],
    )
    .unwrap();
    assert!(matches!(p.insert(&wrong), Err(Error::Type(_))));
    assert_eq!(p.num_rows(), 12);
}

#[test]
fn rows_are_placed_by_key_or_by_hidden_row_id() {
    let b = batch(&[5, 5, 9, 12, 5, 40]);
    let mut out = vec![99];
    // With a key: by the key column, exactly as partition_rows.
    assign_partitions(&b, &[0], 1000, 16, &mut out).unwrap();
    let mut by_key = Vec::new();
    partition_rows(b.column(0), 16, &mut by_key);
    assert_eq!(out, by_key);
    assert_eq!(out[0], out[1]);
    // Without: row i by the row id first_row_id + i, whatever the values.
    assign_partitions(&b, &[], 1000, 16, &mut out).unwrap();
    let want: Vec<u32> = (0..6)
        .map(|i| partition_of(&Value::Int(1000 + i), 16))
        .collect();
    assert_eq!(out, want);
    // Consecutive loads continue the ids, so 1000 equal rows spread over the partitions.
    let same = batch(&[7; 500]);
    let mut all = Vec::new();
    assign_partitions(&same, &[], 0, 8, &mut out).unwrap();
    all.extend(out.iter().copied());
    assign_partitions(&same, &[], 500, 8, &mut out).unwrap();
    all.extend(out.iter().copied());
    let mut whole = Vec::new();
    assign_partitions(&batch(&[7; 1000]), &[], 0, 8, &mut whole).unwrap();
    assert_eq!(all, whole);
    let mut counts = [0; 8];
    for &p in &all {
        counts[p as usize] += 1;
    }
    assert!(counts.iter().all(|&c| c > 80), "{counts:?}");
    // One partition, an empty batch, and a key column that does not exist.
    assign_partitions(&b, &[], 3, 1, &mut out).unwrap();
    assert_eq!(out, vec![0; 6]);
    assign_partitions(&batch(&[]), &[], 3, 8, &mut out).unwrap();
    assert!(out.is_empty());
    assert!(matches!(
        assign_partitions(&b, &[3], 0, 8, &mut out),
        Err(Error::Internal(_))
    ));
}
