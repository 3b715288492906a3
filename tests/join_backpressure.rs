//! A hash join whose output explodes (two distinct keys, a thousand duplicates of each on both
//! sides) does not run ahead of a paused reader: the join emits one batch at a time as credit
//! comes back, so the process's heap stays small while millions of output rows are pending,
//! and every row still arrives.
//!
//! The heap is measured by a counting global allocator (this file is its own test binary).

mod common;

use common::{assert_idle, TestCluster};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use weir::{Batch, Cluster, Column};

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

#[test]
fn exploding_join_waits_for_a_paused_reader() {
    let batch_size = 256;
    let c = Cluster::builder()
        .nodes(3)
        .partitions(16)
        .batch_size(batch_size)
        .window(2)
        .build()
        .map(TestCluster::new)
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)")
        .unwrap();
    let n = 2_000i64;
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_i64((0..n).map(|i| i % 2).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    // Each row matches the n / 2 rows with its key: n * n / 2 rows in all.
    let expected = (n * n / 2) as usize;

    let base = CURRENT.load(Ordering::SeqCst);
    let mut stream = c
        .query_stream("SELECT a.id, b.id FROM t a JOIN t b ON a.k = b.k", &[])
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert!(first.num_rows() > 0 && first.num_rows() <= batch_size);
    // Give the join every chance to run ahead while the reader sleeps.
    std::thread::sleep(Duration::from_millis(300));
    let held = CURRENT.load(Ordering::SeqCst).saturating_sub(base);
    println!("allocated while paused: {held} bytes");
    // One probe batch's output alone would be 256 rows x 1000 matches x 4 columns x 8 bytes
    // (8 MB); what may be pending is a few batches per edge plus the join's own state.
    assert!(
        held < 4 << 20,
        "{held} bytes allocated while the reader was paused"
    );

    let mut rows = first.num_rows();
    for b in stream.by_ref() {
        let b = b.unwrap();
        assert!(b.num_rows() <= batch_size);
        rows += b.num_rows();
    }
    assert_eq!(rows, expected);
    drop(stream);
    assert_idle(&c);
}
