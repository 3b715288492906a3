//! Durability: a cluster with a data directory keeps every acknowledged write across a restart,
//! whatever point of a write the process stopped at, and turns disk faults into typed errors.

use crate::common::{assert_idle, cluster_builder, first_ints, ints, sorted_rows};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use weir::storage::disk::Disk;
use weir::storage::faulty::FaultyDisk;
use weir::{Cluster, Durability, Error, Value};

fn open(dir: &Path, durability: Durability) -> Cluster {
    cluster_builder()
        .nodes(3)
        .backups(1)
        .data_dir(dir)
        .durability(durability)
        .build()
        .unwrap()
}

fn open_on(dir: &Path, disk: &FaultyDisk, checkpoint_bytes: u64) -> Cluster {
    open_with(dir, disk, checkpoint_bytes, 1)
}

fn open_with(dir: &Path, disk: &FaultyDisk, checkpoint_bytes: u64, backups: usize) -> Cluster {
    cluster_builder()
        .nodes(3)
        .backups(backups)
        .data_dir(dir)
        .durability(Durability::Fsync)
        .checkpoint_bytes(checkpoint_bytes)
        .disk(Arc::new(disk.clone()) as Arc<dyn Disk>)
        .build()
        .unwrap()
}

fn rows(c: &Cluster, sql: &str) -> Vec<Vec<Value>> {
    sorted_rows(c.query(sql, &[]).unwrap().rows())
}

#[test]
fn every_kind_of_change_survives_a_restart_in_both_durabilities() {
    for durability in [Durability::Fsync, Durability::Os] {
        let tmp = tempfile::tempdir().unwrap();
        let expected = {
            let c = open(tmp.path(), durability);
            c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x BIGINT)")
                .unwrap();
            c.execute("CREATE TABLE gone (id BIGINT PRIMARY KEY)")
                .unwrap();
            c.execute("CREATE TABLE bag (v BIGINT)").unwrap();
            c.execute(
                "INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)",
            )
            .unwrap();
            c.execute("UPDATE t SET x = x + 1 WHERE id <= 2").unwrap();
            c.execute("DELETE FROM t WHERE id = 3").unwrap();
            c.execute("CREATE INDEX t_x ON t(x)").unwrap();
            c.execute("INSERT INTO bag VALUES (7), (7), (8)").unwrap();
            c.execute("DELETE FROM bag WHERE v = 8").unwrap();
            c.execute("DROP TABLE gone").unwrap();
            c.execute("CREATE VIEW big AS SELECT id FROM t WHERE x > 15")
                .unwrap();
            c.execute("COMMENT ON COLUMN t.name IS 'who'").unwrap();
            rows(&c, "SELECT id, name, x FROM t")
        };
        let c = open(tmp.path(), durability);
        assert_eq!(
            rows(&c, "SELECT id, name, x FROM t"),
            expected,
            "{durability:?}"
        );
        assert_eq!(ints(&rows(&c, "SELECT v FROM bag")), vec![vec![7], vec![7]]);
        assert_eq!(
            ints(&rows(&c, "SELECT id FROM big")),
            vec![vec![2], vec![4]]
        );
        assert!(matches!(
            c.query("SELECT * FROM gone", &[]),
            Err(Error::Plan(_))
        ));
        let t = c.tables().into_iter().find(|t| t.name == "t").unwrap();
        assert_eq!(t.comments.of_column(1), Some("who"));
        // The index came back too: the lookup plan uses it and answers.
        let plan = c
            .explain("SELECT id FROM t WHERE x = ?", &[Value::Int(21)])
            .unwrap();
        assert!(plan.contains("IndexScan"), "{plan}");
        assert_eq!(
            ints(
                &c.query("SELECT id FROM t WHERE x = ?", &[Value::Int(21)])
                    .unwrap()
                    .rows()
            ),
            vec![vec![2]]
        );
        // And it goes on: keys still checked, new writes kept.
        assert!(matches!(
            c.execute("INSERT INTO t VALUES (1, 'again', 0)"),
            Err(Error::DuplicateKey { .. })
        ));
        c.execute("INSERT INTO t VALUES (5, 'e', 50)").unwrap();
        drop(c);
        let c = open(tmp.path(), durability);
        assert_eq!(
            rows(&c, "SELECT COUNT(*) FROM t"),
            vec![vec![Value::Int(4)]]
        );
        assert_idle(&c);
    }
}

#[test]
fn a_data_directory_of_another_shape_is_refused_with_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    drop(open(tmp.path(), Durability::Os));
    let err = cluster_builder()
        .nodes(2)
        .data_dir(tmp.path())
        .build()
        .err()
        .expect("a cluster of 2 nodes on a directory of 3");
    assert!(matches!(err, Error::Invalid(_)), "{err}");
}

#[test]
fn a_data_directory_in_use_is_refused_and_a_checkpoint_on_demand_starts_the_next_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let c = open(tmp.path(), Durability::Os);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("INSERT INTO t VALUES (1), (2)").unwrap();
    let err = cluster_builder()
        .nodes(3)
        .data_dir(tmp.path())
        .build()
        .err()
        .expect("the directory is in use");
    assert!(err.to_string().contains("in use"), "{err}");
    c.checkpoint().unwrap();
    drop(c);
    let c = open(tmp.path(), Durability::Os);
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM t"),
        vec![vec![Value::Int(2)]]
    );
}

#[test]
fn checkpoints_replace_the_log_and_the_data_reads_back_from_them() {
    let tmp = tempfile::tempdir().unwrap();
    let disk = FaultyDisk::new();
    {
        let c = open_on(tmp.path(), &disk, 16 << 10);
        c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR)")
            .unwrap();
        for round in 0..40i64 {
            let values: Vec<String> = (0..50)
                .map(|i| format!("({}, 'value {round} {i}')", round * 50 + i))
                .collect();
            c.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
                .unwrap();
        }
        c.execute("DELETE FROM t WHERE id % 7 = 0").unwrap();
    } // dropped: a checkpoint running in the background finishes first
    let files = |dir: &str, suffix: &str| {
        std::fs::read_dir(tmp.path().join(dir))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(suffix)
            })
            .count()
    };
    assert!(
        files("node-0/checkpoint", ".manifest") >= 1,
        "node-0 wrote no checkpoint"
    );
    // The log behind the older kept checkpoint is gone: a few small segments at most.
    assert!(files("node-0/log", ".wal") <= 2);
    let c = open_on(tmp.path(), &disk, 16 << 10);
    let expected = (0..2000).filter(|i| i % 7 != 0).count() as i64;
    assert_eq!(
        rows(&c, "SELECT COUNT(*) FROM t"),
        vec![vec![Value::Int(expected)]]
    );
    assert_eq!(
        rows(&c, "SELECT v FROM t WHERE id = 1999"),
        vec![vec![Value::from("value 39 49")]]
    );
}

/// The seeded crash test: a workload of multi-row inserts stops at a random point (an append
/// torn in the middle, or a power cut that loses what was not synced), the cluster is dropped,
/// and started again on the same directory. Every acknowledged insert is there, whole; the
/// one in flight is there whole or not at all; nothing else is.
#[test]
fn a_crash_at_any_point_keeps_every_acknowledged_write_and_no_write_in_part() {
    let seed = 0x5eed_d15c;
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..12 {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FaultyDisk::new();
        let mut acknowledged: BTreeSet<i64> = BTreeSet::new();
        let mut in_flight: Vec<i64> = Vec::new();
        // Half the rounds without backups: a write to one node then takes one phase.
        let backups = round % 2;
        {
            let c = open_with(tmp.path(), &disk, rng.random_range(4096..65536), backups);
            c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
                .unwrap();
            let power_cut = rng.random_bool(0.5);
            let crash_after = rng.random_range(0..40);
            let mut next = 0i64;
            for statement in 0.. {
                if statement == crash_after {
                    if power_cut {
                        disk.power_loss().unwrap();
                    } else {
                        disk.tear_after(rng.random_range(1..4000));
                    }
                }
                let n = rng.random_range(1..30);
                let ids: Vec<i64> = (next..next + n).collect();
                next += n;
                let values: Vec<String> = ids.iter().map(|i| format!("({i}, {})", i * 3)).collect();
                match c.execute(&format!("INSERT INTO t VALUES {}", values.join(", "))) {
                    Ok(_) => acknowledged.extend(&ids),
                    Err(_) => {
                        in_flight = ids;
                        break;
                    }
                }
            }
            assert!(disk.has_crashed(), "round {round}: the disk never crashed");
        }
        let disk = disk.restarted();
        let c = open_with(tmp.path(), &disk, 1 << 20, backups);
        let found: BTreeSet<i64> = first_ints(&rows(&c, "SELECT id FROM t"))
            .into_iter()
            .collect();
        let lost: Vec<&i64> = acknowledged.difference(&found).collect();
        assert!(
            lost.is_empty(),
            "seed {seed:#x} round {round}: lost {lost:?}"
        );
        let extra: BTreeSet<i64> = found.difference(&acknowledged).copied().collect();
        let whole_or_none =
            extra.is_empty() || extra == in_flight.iter().copied().collect::<BTreeSet<_>>();
        assert!(
            whole_or_none,
            "seed {seed:#x} round {round}: the write in flight {in_flight:?} came back as {extra:?}"
        );
        // Values intact, and the cluster writes on.
        let bad = rows(&c, "SELECT COUNT(*) FROM t WHERE v <> id * 3");
        assert_eq!(bad, vec![vec![Value::Int(0)]]);
        c.execute("INSERT INTO t VALUES (-1, -3)").unwrap();
        assert_idle(&c);
    }
}

#[test]
fn a_full_disk_and_a_failed_fsync_fail_the_write_with_a_typed_error_and_reads_go_on() {
    for fault in ["full", "fsync"] {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FaultyDisk::new();
        let c = open_on(tmp.path(), &disk, 1 << 20);
        c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
            .unwrap();
        c.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
        match fault {
            "full" => disk.set_space(Some(0)),
            _ => disk.fail_syncs(true),
        }
        let err = c.execute("INSERT INTO t VALUES (3, 30)").unwrap_err();
        assert!(matches!(err, Error::Disk { .. }), "{fault}: {err}");
        assert_eq!(err.kind(), "disk");
        assert_eq!(
            ints(&rows(&c, "SELECT id, v FROM t")),
            vec![vec![1, 10], vec![2, 20]],
            "{fault}: reads go on, without the refused row"
        );
        assert_idle(&c);
    }
}

#[test]
fn a_log_damaged_in_the_middle_is_an_error_naming_the_file_and_the_offset() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let c = open(tmp.path(), Durability::Os);
        c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
            .unwrap();
        for i in 0..5 {
            c.execute(&format!("INSERT INTO t VALUES ({i}, {i})"))
                .unwrap();
        }
    }
    // Flip a byte early in node-0's log: whole records follow it.
    let log = tmp.path().join("node-0/log");
    let segment = std::fs::read_dir(&log)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&segment).unwrap();
    assert!(bytes.len() > 100, "node-0 logged {} bytes", bytes.len());
    bytes[20] ^= 0xff;
    std::fs::write(&segment, bytes).unwrap();
    let err = cluster_builder()
        .nodes(3)
        .backups(1)
        .data_dir(tmp.path())
        .build()
        .err()
        .expect("a damaged log");
    assert!(
        matches!(err, Error::Disk { ref node, .. } if node == "node-0"),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("is corrupt at byte") && text.contains("log-"),
        "{text}"
    );
}

#[test]
fn a_crash_in_the_middle_of_a_checkpoint_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let disk = FaultyDisk::new();
    let expected = {
        let c = open_on(tmp.path(), &disk, u64::MAX);
        c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
            .unwrap();
        c.execute("INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
            .unwrap();
        c.checkpoint().unwrap();
        c.execute("INSERT INTO t VALUES (4, 4), (5, 5)").unwrap();
        // The next checkpoint stops a few bytes into its first file.
        disk.tear_after(10);
        assert!(matches!(c.checkpoint(), Err(Error::Disk { .. })));
        assert!(disk.has_crashed());
        vec![1, 2, 3, 4, 5]
    };
    let disk = disk.restarted();
    let c = open_on(tmp.path(), &disk, u64::MAX);
    let ids = first_ints(&rows(&c, "SELECT id FROM t"));
    assert_eq!(ids, expected);
    // A later checkpoint sweeps away what the torn one left.
    c.checkpoint().unwrap();
    let leftovers: usize = ["node-0", "node-1", "node-2", "client"]
        .iter()
        .map(|n| {
            std::fs::read_dir(tmp.path().join(n).join("checkpoint"))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "tmp")
                })
                .count()
        })
        .sum();
    assert_eq!(leftovers, 0);
}

#[test]
fn a_log_record_of_a_newer_format_stops_the_start_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let c = open(tmp.path(), Durability::Fsync);
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    c.execute("INSERT INTO t VALUES (1)").unwrap();
    c.shutdown();
    // A record a later build wrote (format 9), whole and checksummed, after this build's.
    let dir = tmp.path().join("node-0").join("log");
    let disk: Arc<dyn Disk> = Arc::new(weir::storage::disk::RealDisk);
    let log =
        weir::storage::log::Log::open(disk, &dir, Durability::Fsync, 0, |_, _| Ok(())).unwrap();
    let lsn = log.append(&[0xFF, 9, 0]).unwrap();
    log.sync(lsn).unwrap();
    drop(log);
    let e = cluster_builder()
        .nodes(3)
        .backups(1)
        .data_dir(tmp.path())
        .build()
        .err()
        .expect("the cluster started on a record it cannot read")
        .to_string();
    assert!(e.contains("format 9") && e.contains("node-0"), "{e}");
}
