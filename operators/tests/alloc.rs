//! The bytes a stateful kernel accounts in its [`Reservation`] match the heap bytes it really
//! holds, measured by a counting global allocator.
//!
//! Each check takes a baseline of the process's net allocated bytes, feeds the kernel input
//! batches generated just before each push (so the kernel owns them and nothing else holds
//! input), and compares the allocator's net growth with the pool's accounted bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weir_operators::kernels::aggregate::HashAggregateOp;
use weir_operators::kernels::join::HashJoinOp;
use weir_operators::kernels::sort::SortOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{AggFunc, AggMode, AggregateExpr, JoinSide, SortKey};
use weir_operators::{Batch, Column, DataType, Expr, MemoryPool, Reservation, UnboundedPool};

/// Wraps the system allocator and tracks the bytes allocated now.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            CURRENT.fetch_add(layout.size(), Ordering::SeqCst);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            CURRENT.fetch_add(layout.size(), Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
            CURRENT.fetch_add(new_size, Ordering::SeqCst);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests share one counter: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn allocated() -> usize {
    CURRENT.load(Ordering::SeqCst)
}

const BATCH: usize = 1024;

/// Rows `start..start + len` of a two-column Int64 batch: `(key(i), i)`.
fn batch(start: usize, len: usize, key: impl Fn(usize) -> i64) -> Batch {
    let keys: Vec<i64> = (start..start + len).map(&key).collect();
    let vals: Vec<i64> = (start..start + len).map(|i| i as i64).collect();
    Batch::try_new(vec![Column::from_i64(keys), Column::from_i64(vals)]).unwrap()
}

/// Feeds `rows` rows in batches of [`BATCH`] to `port`.
fn feed(op: &mut dyn Operator, port: usize, rows: usize, key: impl Fn(usize) -> i64 + Copy) {
    let mut start = 0;
    while start < rows {
        let len = BATCH.min(rows - start);
        op.push(port, batch(start, len, key)).unwrap();
        assert!(!op.has_output());
        start += len;
    }
}

/// Asserts the accounted and the measured bytes agree within 25%.
fn assert_close(what: &str, accounted: usize, measured: usize) {
    let ratio = accounted as f64 / measured.max(1) as f64;
    println!("{what}: accounted {accounted} bytes, measured {measured} bytes, ratio {ratio:.3}");
    assert!(
        (0.75..=1.25).contains(&ratio),
        "{what}: accounted {accounted} bytes but the allocator measured {measured} (ratio {ratio:.3})"
    );
}

fn pool() -> (Arc<UnboundedPool>, Reservation) {
    let pool = UnboundedPool::new();
    let r = Reservation::new(pool.clone() as Arc<dyn MemoryPool>);
    (pool, r)
}

fn check_join(build: JoinSide, rows: usize, key: fn(usize) -> i64) {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (pool, reservation) = pool();
    let base = allocated();
    let ctx = ExecContext::new(vec![]);
    let out_rows = ctx.batch_size;
    let mut op = HashJoinOp::new(
        vec![Expr::col(0)],
        vec![Expr::col(0)],
        build,
        ctx,
        reservation,
    );
    let port = op.first_port();
    feed(&mut op, port, rows, key);
    op.finish(port).unwrap();
    assert!(!op.has_output());
    let measured = allocated() - base;
    assert_eq!(op.memory_size(), pool.used());
    assert_close(
        &format!("hash join build ({build:?}, {rows} rows)"),
        pool.used(),
        measured,
    );

    // The probe side still works: probing with the first build rows' keys finds every build
    // row with one of those keys.
    let probe = batch(0, BATCH, key);
    let mut probe_keys: Vec<i64> = (0..BATCH).map(key).collect();
    probe_keys.sort_unstable();
    let expected: usize = (0..rows)
        .filter(|&i| probe_keys.binary_search(&key(i)).is_ok())
        .map(|i| probe_keys.iter().filter(|&&k| k == key(i)).count())
        .sum();
    let probe_port = 1 - port;
    let built = pool.used();
    let probe_bytes = probe.memory_size();
    op.push(probe_port, probe).unwrap();
    // The held probe batch (and its key column) is accounted until its last match leaves.
    assert!(pool.used() >= built + probe_bytes);
    let mut rows = 0;
    while let Some(b) = op.next_output().unwrap() {
        assert!(b.num_rows() <= out_rows);
        rows += b.num_rows();
    }
    assert_eq!(pool.used(), built);
    op.finish(probe_port).unwrap();
    assert!(op.next_output().unwrap().is_none());
    assert_eq!(rows, expected);
    drop(op);
    assert_eq!(pool.used(), 0);
}

#[test]
fn hash_join_accounts_its_build_side() {
    check_join(JoinSide::Left, 1_000_000, |i| (i as i64).wrapping_mul(7919));
}

#[test]
fn hash_join_accounts_a_right_build_side_with_duplicate_keys() {
    check_join(JoinSide::Right, 300_000, |i| (i / 3) as i64);
}

#[test]
fn hash_join_accounts_a_small_build_side() {
    check_join(JoinSide::Left, 5_000, |i| i as i64);
}

#[test]
fn hash_aggregate_accounts_its_groups() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (pool, reservation) = pool();
    let base = allocated();
    let groups = 100_000;
    let mut op = HashAggregateOp::new(
        vec![Expr::col(0)],
        vec![DataType::Int64],
        vec![
            AggregateExpr {
                func: AggFunc::CountStar,
                arg: None,
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
            AggregateExpr {
                func: AggFunc::Sum,
                arg: Some(Expr::col(1)),
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
            AggregateExpr {
                func: AggFunc::Avg,
                arg: Some(Expr::col(1)),
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
        ],
        AggMode::Single,
        ExecContext::new(vec![]),
        reservation,
    )
    .unwrap();
    // Every group twice.
    feed(&mut op, 0, 2 * groups, move |i| (i % groups) as i64);
    let measured = allocated() - base;
    assert_close("hash aggregate (100k groups)", pool.used(), measured);
    let mut out = Vec::new();
    op.finish(0).unwrap();
    drain(&mut op, &mut out).unwrap();
    assert_eq!(out.iter().map(Batch::num_rows).sum::<usize>(), groups);
    assert_eq!(pool.used(), 0);
}

#[test]
fn sort_accounts_its_buffer() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (pool, reservation) = pool();
    let base = allocated();
    let rows = 1_000_000;
    let mut op = SortOp::new(
        vec![SortKey {
            expr: Expr::col(0),
            descending: false,
            nulls_first: false,
        }],
        None,
        ExecContext::new(vec![]),
        reservation,
    );
    feed(&mut op, 0, rows, |i| ((i * 7919) % 1_000_003) as i64);
    let measured = allocated() - base;
    assert_close("sort (1M rows)", pool.used(), measured);
    let mut out = Vec::new();
    op.finish(0).unwrap();
    drain(&mut op, &mut out).unwrap();
    assert_eq!(out.iter().map(Batch::num_rows).sum::<usize>(), rows);
    assert_eq!(pool.used(), 0);
}
