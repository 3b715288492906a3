//! External scans over Parquet and CSV files: every row read once over the nodes' shares,
//! row groups skipped by their statistics (counted), only needed columns read, and bad
//! files named in the error.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use weir_io::external::{ExternalScan, ScanCounters, Share};
use weir_io::parquet::ParquetWriter;
use weir_operators::external::{CsvLayout, ExternalSource, FileFormat};
use weir_operators::kernels::ExecContext;
use weir_operators::{Batch, BinaryOp, DataType, Expr, Field, Schema, Value};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weir-io-ext-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("k", DataType::Int64),
        Field::new("name", DataType::Utf8),
        Field::new("day", DataType::Date),
    ])
}

/// Two files of two row groups of 100 rows each: `k` runs 0..400 in order.
fn write_parquet(d: &std::path::Path) {
    let mut k = 0i64;
    for f in 0..2 {
        let mut w = ParquetWriter::create(&d.join(format!("part-{f}.parquet")), &schema()).unwrap();
        for _ in 0..2 {
            let rows: Vec<Vec<Value>> = (0..100)
                .map(|_| {
                    k += 1;
                    vec![
                        Value::Int(k - 1),
                        if k % 10 == 0 {
                            Value::Null
                        } else {
                            Value::from(format!("n{}", k - 1))
                        },
                        Value::Date(19_000 + (k - 1) as i32),
                    ]
                })
                .collect();
            w.write(Batch::from_rows(&schema().types(), &rows).unwrap())
                .unwrap();
            w.end_row_group().unwrap();
        }
        w.finish().unwrap();
    }
}

fn drain(mut scan: ExternalScan) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    while let Some(b) = scan.next_batch().unwrap() {
        assert!(b.num_rows() > 0);
        rows.extend(b.rows());
    }
    rows
}

fn parquet(d: &std::path::Path) -> ExternalSource {
    ExternalSource {
        format: FileFormat::Parquet,
        location: d.to_string_lossy().into(),
    }
}

#[test]
fn shares_cover_every_row_once() {
    let d = dir("shares");
    write_parquet(&d);
    let mut all = Vec::new();
    for index in 0..3 {
        let counters = Arc::new(ScanCounters::default());
        let scan = ExternalScan::open(
            &parquet(&d),
            &schema(),
            None,
            &[0],
            ExecContext::new(vec![]),
            Share { index, of: 3 },
            counters.clone(),
        )
        .unwrap();
        let rows = drain(scan);
        assert_eq!(
            counters.rows_read.load(Ordering::Relaxed),
            rows.len() as u64
        );
        all.extend(rows);
    }
    let mut keys: Vec<i64> = all.iter().map(|r| r[0].as_i64().unwrap()).collect();
    keys.sort_unstable();
    assert_eq!(keys, (0..400).collect::<Vec<_>>());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn row_groups_are_skipped_by_their_statistics() {
    let d = dir("prune");
    write_parquet(&d);
    let run = |filter: Expr, params: Vec<Value>| {
        let counters = Arc::new(ScanCounters::default());
        let scan = ExternalScan::open(
            &parquet(&d),
            &schema(),
            Some(&filter),
            &[1, 0],
            ExecContext::new(params),
            Share::ALL,
            counters.clone(),
        )
        .unwrap();
        let rows = drain(scan);
        let c = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        (
            rows,
            c(&counters.rows_read),
            c(&counters.row_groups_skipped),
            c(&counters.row_groups_read),
        )
    };
    // k >= 350: only the last row group is read.
    let (rows, read, skipped, groups) =
        run(Expr::col(0).binary(BinaryOp::GtEq, Expr::lit(350)), vec![]);
    assert_eq!(rows.len(), 50);
    assert_eq!(rows[0], vec![Value::from("n350"), Value::Int(350)]);
    assert_eq!((read, skipped, groups), (100, 3, 1));
    // A parameter and a date range: day BETWEEN 19_120 AND 19_130 is in the second row group.
    let between = Expr::Between {
        expr: Box::new(Expr::col(2)),
        low: Box::new(Expr::Param(0)),
        high: Box::new(Expr::lit(Value::Date(19_130))),
        negated: false,
    };
    let (rows, read, skipped, _) = run(between, vec![Value::Date(19_120)]);
    assert_eq!(rows.len(), 11);
    assert_eq!((read, skipped), (100, 3));
    // A filter statistics cannot decide reads everything, and answers the same.
    let (rows, read, skipped, _) = run(
        Expr::col(0)
            .binary(BinaryOp::Mod, Expr::lit(100))
            .eq(Expr::lit(7)),
        vec![],
    );
    assert_eq!(rows.len(), 4);
    assert_eq!((read, skipped), (400, 0));
    // IS NULL on a column whose every row group has NULLs reads them all.
    let (rows, _, skipped, _) = run(
        Expr::IsNull {
            expr: Box::new(Expr::col(1)),
            negated: false,
        },
        vec![],
    );
    assert_eq!((rows.len(), skipped), (40, 0));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn no_columns_still_counts_rows() {
    let d = dir("count");
    write_parquet(&d);
    let scan = ExternalScan::open(
        &parquet(&d),
        &schema(),
        None,
        &[],
        ExecContext::new(vec![]),
        Share::ALL,
        Arc::new(ScanCounters::default()),
    )
    .unwrap();
    assert_eq!(drain(scan).len(), 400);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_files_are_named() {
    let d = dir("bad");
    std::fs::write(d.join("x.parquet"), "this is no parquet").unwrap();
    let e = ExternalScan::open(
        &parquet(&d),
        &schema(),
        None,
        &[0],
        ExecContext::new(vec![]),
        Share::ALL,
        Arc::new(ScanCounters::default()),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("x.parquet") && e.contains("not a Parquet file"),
        "{e}"
    );
    std::fs::write(d.join("y.csv"), "1,a,2024-01-01\nx,b,2024-01-02\n").unwrap();
    let csv = ExternalSource {
        format: FileFormat::Csv(CsvLayout::default()),
        location: d.join("y.csv").to_string_lossy().into(),
    };
    let mut scan = ExternalScan::open(
        &csv,
        &schema(),
        None,
        &[0, 1],
        ExecContext::new(vec![]),
        Share::ALL,
        Arc::new(ScanCounters::default()),
    )
    .unwrap();
    let e = scan.next_batch().unwrap_err().to_string();
    assert!(
        e.contains("y.csv") && e.contains("'x' is not a BIGINT"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// What a Parquet reader holds is reserved from the pool while it reads, more for more
/// columns, back to zero at the end; a pool that cannot hold it fails the scan with a memory
/// error, and what was reserved returns.
#[test]
fn a_parquet_reader_reserves_what_it_holds() {
    use weir_operators::{Reservation, UnboundedPool};
    let d = dir("reserve");
    write_parquet(&d);
    let accounted = |columns: &[usize], pool: &Arc<UnboundedPool>| {
        ExternalScan::open(
            &parquet(&d),
            &schema(),
            None,
            columns,
            ExecContext::new(vec![]),
            Share::ALL,
            Arc::new(ScanCounters::default()),
        )
        .unwrap()
        .accounted(Reservation::new(pool.clone()))
    };
    let held_reading = |columns: &[usize]| {
        let pool = UnboundedPool::new();
        let mut scan = accounted(columns, &pool);
        assert!(scan.next_batch().unwrap().is_some());
        let held = pool.used();
        assert_eq!(held, scan.reserved());
        while scan.next_batch().unwrap().is_some() {}
        assert_eq!(pool.used(), 0, "nothing held after the last file");
        drop(scan);
        assert_eq!(pool.used(), 0);
        held
    };
    let one = held_reading(&[0]);
    let three = held_reading(&[0, 1, 2]);
    assert!(one > 0 && three > one, "{one} {three}");

    let pool = UnboundedPool::with_limit(one / 2);
    let mut scan = accounted(&[0], &pool);
    let e = scan.next_batch().unwrap_err();
    assert!(matches!(e, weir_operators::Error::Memory(_)), "{e}");
    drop(scan);
    assert_eq!(pool.used(), 0);
    std::fs::remove_dir_all(&d).unwrap();
}
