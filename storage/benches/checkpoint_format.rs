//! Checkpoint files: weir's own columnar format (the wire format's column runs, framed with a
//! checksum) against Parquet (through `weir-io`, uncompressed as weir writes it), each writing
//! 100,000 rows of (BIGINT, BIGINT, VARCHAR) to a file and reading them back as weir batches,
//! with no sync (the durability protocol around the files is the same for both). The figures
//! are why checkpoints are written in the own format
//! (`cargo bench -p weir-storage --bench checkpoint_format`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::sync::Arc;
use weir_operators::{Batch, Column, DataType, Field, Schema, Value};
use weir_storage::checkpoint::{decode_rows, encode_rows};

const ROWS: usize = 100_000;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64),
        Field::new("v", DataType::Int64),
        Field::new("s", DataType::Utf8),
    ])
}

fn batch() -> Batch {
    let ids: Vec<i64> = (0..ROWS as i64).collect();
    let text: Vec<Value> = ids
        .iter()
        .map(|i| Value::Str(format!("row {i:>12} text")))
        .collect();
    Batch::try_new(vec![
        Column::from_i64(ids.clone()),
        Column::from_i64(ids.iter().map(|i| i * 7).collect()),
        Column::from_values(DataType::Utf8, &text).unwrap(),
    ])
    .unwrap()
}

fn formats(c: &mut Criterion) {
    let rows = Arc::new(batch());
    let bytes = rows.data_size() as u64;
    let mut group = c.benchmark_group("checkpoint_format");
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(20);
    let tmp = tempfile::tempdir().unwrap();
    group.bench_function("own_write_and_read", |b| {
        let path = tmp.path().join("t.part");
        b.iter(|| {
            std::fs::write(&path, encode_rows(&[rows.as_ref()]).unwrap()).unwrap();
            let back = decode_rows(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(back[0].num_rows(), ROWS);
        })
    });
    group.bench_function("parquet_write_and_read", |b| {
        let path = tmp.path().join("t.parquet");
        b.iter(|| {
            let mut w = weir_io::parquet::ParquetWriter::create(&path, &schema()).unwrap();
            w.write(rows.as_ref().clone()).unwrap();
            w.finish().unwrap();
            let mut r = weir_io::parquet::ParquetReader::open(&path, &schema(), ROWS).unwrap();
            let mut n = 0;
            while let Some(b) = r.next_batch().unwrap() {
                n += b.num_rows();
            }
            assert_eq!(n, ROWS);
        })
    });
    group.finish();
}

criterion_group!(benches, formats);
criterion_main!(benches);
