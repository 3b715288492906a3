//! A cluster of processes as a user runs one: three `weir node` processes on 127.0.0.1
//! (ports picked by the system), and this test process as their client
//! (`Cluster::builder().connect(..)`), or `weir sql --connect`. The answers are compared with
//! the same statements run on a cluster in this process.
//!
//! Every node process is killed when its test ends, passed or failed ([`Nodes`] kills them
//! on drop). Every wait is bounded: a node prints its address within [`LIMIT`], a client
//! connects within the builder's own bound (10 s), and every query runs under the shared
//! watchdog ([`TestCluster`], 10 s), well below the query timeout (30 s), so that no test
//! can pass by waiting out a timeout.

use crate::common;
use crate::processes::{secret_file, start_node, start_node_in, Nodes, LIMIT, SECRET};

use common::{cluster_builder, TestCluster};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use weir_cli::demo::{self, JOIN_QUERY, PRIMARY_KEY_QUERY, SEED_QUERIES};
use weir_cli::{Cluster, ClusterBuilder, MessageKind, Protocol, Value};
use weir_runtime::wire::framing::Secret;

/// Rows of `Item` (a multiple of 1000, as the seed queries' expected counts want).
const ITEM_ROWS: usize = 5_000;

fn build(builder: ClusterBuilder) -> TestCluster {
    TestCluster::new(builder.build().expect("the client connects"))
}

/// `Item` with [`ITEM_ROWS`] rows, and `customers` and `orders` for the join.
fn load(cluster: &Cluster) {
    demo::load_item(cluster, ITEM_ROWS).expect("Item loads");
    demo::load_join_tables(cluster, 500, 4_000, 7).expect("the join tables load");
}

/// A query's rows, sorted (queries without ORDER BY may return them in any order).
fn rows(cluster: &TestCluster, sql: &str, params: &[Value]) -> Vec<Vec<Value>> {
    let mut rows = cluster
        .query(sql, params)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .rows();
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rows
}

/// The seed queries (with a key and its batch as parameters), the primary-key lookup and
/// the join: `(name, sql, params)`.
fn statements() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let key = 1234;
    let mut all: Vec<_> = SEED_QUERIES
        .iter()
        .chain(std::iter::once(&PRIMARY_KEY_QUERY))
        .map(|q| (q.name, q.sql, q.params(key)))
        .collect();
    all.push(("join", JOIN_QUERY, vec![]));
    all
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "{what}: not within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn three_node_processes_answer_the_seed_queries_and_a_join_as_one_process_does() {
    let nodes = Nodes::start("seed", 3);
    let remote = build(nodes.client(0));
    assert!(remote.is_remote());
    assert_eq!(remote.data_nodes(), 3);
    load(&remote);
    let local = TestCluster::new(cluster_builder().nodes(3).build().expect("a cluster"));
    load(&local);
    for (name, sql, params) in statements() {
        let got = rows(&remote, sql, &params);
        assert!(!got.is_empty(), "{name} returned no rows over TCP");
        assert_eq!(got, rows(&local, sql, &params), "{name}");
    }
    let q = SEED_QUERIES
        .iter()
        .find(|q| q.name == "querySimpleBatch")
        .expect("a seed query");
    assert_eq!(
        remote.query(q.sql, &q.params(1234)).unwrap().num_rows(),
        q.expected_rows(ITEM_ROWS)
    );
    // Writes after the load: UPDATE, DELETE and INSERT ... SELECT reach every node.
    for c in [&remote, &local] {
        assert_eq!(
            c.execute("UPDATE Item SET fld = fld + 1 WHERE id < 10")
                .unwrap(),
            10
        );
        assert_eq!(c.execute("DELETE FROM Item WHERE id >= 4990").unwrap(), 10);
        c.execute("CREATE TABLE few (id BIGINT PRIMARY KEY, fld BIGINT)")
            .unwrap();
        c.execute("INSERT INTO few SELECT id, fld FROM Item WHERE id < 100")
            .unwrap();
    }
    for sql in [
        "SELECT COUNT(*), SUM(fld) FROM Item",
        "SELECT id, fld FROM few WHERE id < 12",
        "SELECT i.name, f.fld FROM few f JOIN Item i ON f.id = i.id WHERE f.id < 5",
    ] {
        assert_eq!(rows(&remote, sql, &[]), rows(&local, sql, &[]), "{sql}");
    }
    let stats = remote.stats();
    assert_eq!(stats.nodes.len(), 4, "three data nodes and the client");
    assert!(stats.nodes.iter().all(|n| n.up));
    assert!(stats.nodes[..3].iter().all(|n| n.remote));
}

#[test]
fn a_primary_key_lookup_over_tcp_takes_two_messages_under_the_lean_protocol() {
    let nodes = Nodes::start("lean", 3);
    let remote = build(nodes.client(0).protocol(Protocol::Lean));
    demo::load_item(&remote, ITEM_ROWS).expect("Item loads");
    for key in [0i64, 17, 4_999] {
        let r = remote
            .query(PRIMARY_KEY_QUERY.sql, &[Value::Int(key)])
            .expect("the lookup");
        assert_eq!(r.rows(), vec![vec![Value::Str(format!("name{key}"))]]);
        let m = &r.stats.messages;
        assert_eq!(m.total, 2, "key {key}: {:?}", m.by_kind);
        assert_eq!(m.count(MessageKind::QueryStartRequest), 1);
        assert_eq!(m.count(MessageKind::QueryBatch), 1);
    }
    // The TCP endpoint carried them: frames went out and came back.
    let wire = remote.transport().expect("a TCP endpoint").stats();
    assert!(wire.frames_sent > 0 && wire.frames_received > 0, "{wire:?}");
}

/// EXPLAIN ANALYZE counts what the operators of the node processes output: their reports
/// cross TCP like the query's batches.
#[test]
fn explain_analyze_counts_the_rows_scanned_in_node_processes() {
    let nodes = Nodes::start("analyze", 3);
    let remote = build(nodes.client(0));
    demo::load_item(&remote, ITEM_ROWS).expect("Item loads");
    let text = remote
        .explain(
            "EXPLAIN ANALYZE SELECT count(*) FROM Item WHERE id >= 1000",
            &[],
        )
        .expect("EXPLAIN ANALYZE");
    let scan = text
        .lines()
        .find(|l| l.contains("Scan Item"))
        .unwrap_or_else(|| panic!("no scan in {text}"));
    assert!(
        scan.contains(&format!("(rows={} batches=", ITEM_ROWS - 1000)),
        "{text}"
    );
    assert!(text.contains("Execution: 1 row in "), "{text}");
}

#[test]
fn a_wrong_secret_and_a_garbage_frame_are_refused_and_the_cluster_keeps_answering() {
    let nodes = Nodes::start("refuse", 3);
    let remote = build(nodes.client(0));
    remote
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    remote
        .execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
        .unwrap();
    let wrong = Secret::new(b"not the secret of these nodes".to_vec()).unwrap();
    let started = Instant::now();
    let refused = cluster_builder()
        .connect(&nodes.addrs)
        .secret(wrong)
        .client_slot(1)
        .build();
    match refused {
        Err(weir_cli::Error::Connect(message)) => {
            assert!(message.contains("refused"), "{message}")
        }
        Err(e) => panic!("expected a refused connection, got {e}"),
        Ok(_) => panic!("a client with the wrong secret connected"),
    }
    assert!(
        started.elapsed() < LIMIT,
        "the refusal took {:?}",
        started.elapsed()
    );
    // Garbage where a handshake should be, and a frame far over the handshake's limit.
    for bytes in [
        b"\x00\x00\x00\x05hello".to_vec(),
        vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3],
    ] {
        for addr in &nodes.addrs {
            let mut s = TcpStream::connect(addr).expect("the node accepts connections");
            s.write_all(&bytes).expect("write garbage");
        }
    }
    assert_eq!(
        rows(&remote, "SELECT id, x FROM t", &[]),
        vec![
            vec![Value::Int(1), Value::Int(10)],
            vec![Value::Int(2), Value::Int(20)],
            vec![Value::Int(3), Value::Int(30)],
        ]
    );
    assert_eq!(remote.execute("INSERT INTO t VALUES (4, 40)").unwrap(), 1);
    assert_eq!(
        rows(&remote, "SELECT SUM(x) FROM t", &[]),
        vec![vec![Value::Int(100)]]
    );
}

#[test]
fn with_a_backup_a_killed_node_process_costs_no_answers() {
    let mut nodes = Nodes::start("kill", 3);
    let remote = build(nodes.client(0).backups(1));
    load(&remote);
    let before: Vec<_> = statements()
        .into_iter()
        .map(|(name, sql, params)| (name, rows(&remote, sql, &params)))
        .collect();
    nodes.kill(1);
    // At once: a query that used node 1 runs again on the copies.
    for ((name, sql, params), (_, expected)) in statements().into_iter().zip(&before) {
        assert_eq!(
            &rows(&remote, sql, &params),
            expected,
            "{name} after node 1 died"
        );
    }
    wait_for("node 1 seen down", || !remote.stats().nodes[1].up);
    assert_eq!(remote.health(), weir_runtime::Health::Yellow);
    // Writes go on to the copies that are left.
    assert_eq!(
        remote.execute("DELETE FROM Item WHERE id < 100").unwrap(),
        100
    );
    assert_eq!(
        rows(&remote, "SELECT COUNT(*) FROM Item", &[]),
        vec![vec![Value::Int(ITEM_ROWS as i64 - 100)]]
    );
}

/// A table without a primary key (rows placed by hidden row ids, duplicates and NULLs kept).
fn load_keyless(cluster: &Cluster) {
    cluster
        .execute("CREATE TABLE keyless (a BIGINT, b VARCHAR)")
        .expect("keyless is made");
    let values: Vec<String> = (0..300)
        .map(|i| match i % 7 {
            0 => "(NULL, 'none')".to_string(),
            _ => format!("({}, 'b{}')", i % 50, i % 3),
        })
        .collect();
    cluster
        .execute(&format!("INSERT INTO keyless VALUES {}", values.join(", ")))
        .expect("keyless loads");
}

/// Every statement of [`statements`], and the counts and contents of every table: each must
/// answer on `remote` as on `local`.
fn assert_same_answers(remote: &TestCluster, local: &TestCluster, when: &str) {
    for (name, sql, params) in statements() {
        assert_eq!(
            rows(remote, sql, &params),
            rows(local, sql, &params),
            "{name} {when}"
        );
    }
    for sql in [
        "SELECT COUNT(*) FROM Item",
        "SELECT COUNT(*), SUM(fld), SUM(fldIdx) FROM Item",
        "SELECT COUNT(*) FROM customers",
        "SELECT COUNT(*) FROM orders",
        "SELECT COUNT(*), COUNT(a), SUM(a) FROM keyless",
        "SELECT a, b FROM keyless",
        "SELECT b, COUNT(*) FROM keyless GROUP BY b",
        "SELECT id, name FROM Item WHERE fldIdx = 4321",
        "SELECT id, fld FROM Item WHERE id < 60",
    ] {
        assert_eq!(
            rows(remote, sql, &[]),
            rows(local, sql, &[]),
            "{sql} {when}"
        );
    }
}

#[test]
fn a_node_process_restarted_with_its_id_and_address_resyncs_its_copies_from_the_live_ones() {
    let mut nodes = Nodes::start("restart", 3);
    let remote = build(nodes.client(0).backups(1));
    let local = TestCluster::new(
        cluster_builder()
            .nodes(3)
            .backups(1)
            .build()
            .expect("a cluster"),
    );
    for c in [&remote, &local] {
        load(c);
        load_keyless(c);
    }
    nodes.kill(1);
    wait_for("node 1 seen down", || !remote.stats().nodes[1].up);
    // Writes while node 1 is down: its copies miss them, and must get them from the others.
    for c in [&remote, &local] {
        assert_eq!(
            c.execute("UPDATE Item SET fld = fld + 7 WHERE id < 50")
                .unwrap(),
            50
        );
        // i = 3, 53, 103, 153, 253 (203 has a NULL).
        assert_eq!(c.execute("DELETE FROM keyless WHERE a = 3").unwrap(), 5);
    }
    let (child, addr) = start_node(1, &nodes.addrs[1].to_string(), &nodes.secret);
    nodes.children[1] = Some(child);
    assert_eq!(addr, nodes.addrs[1]);
    wait_for("node 1 back", || remote.stats().nodes[1].up);
    // The restarted process held nothing; its copies are refreshed from the live ones.
    wait_for("health green after the resync", || {
        remote.health() == weir_runtime::Health::Green
    });
    assert_same_answers(&remote, &local, "after node 1 came back");
    // Writes after the resync reach node 1's copies too.
    for c in [&remote, &local] {
        c.execute("INSERT INTO Item SELECT id + 10000, name, fld, fldBatch, fldIdx + 10000, fldIdxBatch FROM Item WHERE id < 200")
            .unwrap();
        c.execute("INSERT INTO keyless VALUES (1, 'late'), (NULL, 'late'), (1, 'late')")
            .unwrap();
        assert_eq!(
            c.execute("DELETE FROM Item WHERE id >= 4990 AND id < 5000")
                .unwrap(),
            10
        );
    }
    // With node 0 gone, the only copies of the partitions it shared with node 1 are the
    // resynced ones: every answer must still be right.
    nodes.kill(0);
    wait_for("node 0 seen down", || !remote.stats().nodes[0].up);
    assert_eq!(remote.health(), weir_runtime::Health::Yellow);
    assert_same_answers(&remote, &local, "with node 0 down after the resync");
    // And writes go on to the copies that are left.
    for c in [&remote, &local] {
        assert_eq!(c.execute("DELETE FROM Item WHERE id < 10").unwrap(), 10);
    }
    assert_same_answers(&remote, &local, "after a delete with node 0 down");
}

#[test]
fn copies_without_a_live_source_stay_stale_the_rest_resync_and_a_minority_serves_no_read() {
    let mut nodes = Nodes::start("nosource", 3);
    let remote = build(nodes.client(0).backups(1));
    demo::load_item(&remote, ITEM_ROWS).expect("Item loads");
    let partitions = remote.tables()[0].partitions;
    let copies = weir_runtime::replication::copies::copies(partitions, 3, 1);
    let key_held_by = |a: u32, b: u32| {
        (0..ITEM_ROWS as i64)
            .find(|&k| {
                let p = weir_operators::placement::partition_of(&Value::Int(k), partitions);
                let holders = &copies[p as usize];
                holders.contains(&a) && holders.contains(&b)
            })
            .expect("a key on those two nodes")
    };
    let (on_0_1, on_1_2) = (key_held_by(0, 1), key_held_by(1, 2));
    nodes.kill(1);
    wait_for("node 1 seen down", || !remote.stats().nodes[1].up);
    nodes.kill(0);
    wait_for("node 0 seen down", || !remote.stats().nodes[0].up);
    let started = Instant::now();
    let (child, _) = start_node(1, &nodes.addrs[1].to_string(), &nodes.secret);
    nodes.children[1] = Some(child);
    wait_for("node 1 back", || remote.stats().nodes[1].up);
    // The copies node 1 shares with node 2 come back from node 2; those it shares with the
    // dead node 0 have no live source and stay stale: some partitions cannot be read.
    assert_eq!(remote.health(), weir_runtime::Health::Red);
    assert!(started.elapsed() < LIMIT, "{:?}", started.elapsed());
    // The copy it resynced from node 2 answers; its stale one serves no reads.
    assert_eq!(
        rows(&remote, PRIMARY_KEY_QUERY.sql, &[Value::Int(on_1_2)]),
        vec![vec![Value::Str(format!("name{on_1_2}"))]]
    );
    let started = Instant::now();
    assert!(remote
        .query(PRIMARY_KEY_QUERY.sql, &[Value::Int(on_0_1)])
        .is_err());
    assert!(started.elapsed() < LIMIT, "{:?}", started.elapsed());
    // With node 2 gone too, node 1 alone is a minority of the catalog log: it cannot know
    // which writes it missed, so it refuses every read, even of the copy it resynced.
    // (Its read lease, confirmed by a quorum less than a lease ago, runs out first: this
    // part waits it out, a bounded wait of a timeout.)
    nodes.kill(2);
    wait_for("node 2 seen down", || !remote.stats().nodes[2].up);
    std::thread::sleep(weir_runtime::replication::catalog_log::lease::LEASE);
    let started = Instant::now();
    match remote.query(PRIMARY_KEY_QUERY.sql, &[Value::Int(on_1_2)]) {
        Err(weir_cli::Error::ReadRefused { node, message }) => {
            assert_eq!(node, "node-1");
            assert!(message.contains("catalog log"), "{message}");
        }
        other => panic!("a read served by a minority: {other:?}"),
    }
    assert!(started.elapsed() < LIMIT, "{:?}", started.elapsed());
}

#[test]
fn a_copy_larger_than_a_piece_resyncs_in_pieces() {
    let mut nodes = Nodes::start("pieces", 3);
    let remote = build(nodes.client(0).backups(1).partitions(2));
    remote
        .execute("CREATE TABLE big (id BIGINT PRIMARY KEY, s VARCHAR)")
        .unwrap();
    remote.execute("CREATE INDEX big_s ON big(s)").unwrap();
    // 40 MB of rows: each partition's copy is several pieces of at most 8 MiB.
    const ROWS: i64 = 400;
    const BYTES: usize = 100_000;
    let ids: Vec<i64> = (0..ROWS).collect();
    let strs: Vec<String> = ids
        .iter()
        .map(|i| format!("{i:06}{}", "x".repeat(BYTES - 6)))
        .collect();
    let batch = weir_cli::Batch::try_new(vec![
        weir_cli::Column::from_i64(ids),
        weir_cli::Column::from_strs(&strs),
    ])
    .unwrap();
    assert_eq!(remote.load("big", batch).unwrap(), ROWS as usize);
    // Restart a backup of partition 0, then kill the other holder: it alone answers.
    let copies = weir_runtime::replication::copies::copies(2, 3, 1);
    let (primary, restarted) = (copies[0][0] as usize, copies[0][1] as usize);
    let before = remote.stats().messages.count(MessageKind::PartitionRows);
    nodes.kill(restarted);
    wait_for("the node seen down", || !remote.stats().nodes[restarted].up);
    let (child, _) = start_node(
        restarted,
        &nodes.addrs[restarted].to_string(),
        &nodes.secret,
    );
    nodes.children[restarted] = Some(child);
    wait_for("the node back", || remote.stats().nodes[restarted].up);
    wait_for("health green after the resync", || {
        remote.health() == weir_runtime::Health::Green
    });
    let pieces = remote.stats().messages.count(MessageKind::PartitionRows) - before;
    let held = copies
        .iter()
        .filter(|c| c.contains(&(restarted as u32)))
        .count() as u64;
    assert!(pieces >= 3 * held, "{pieces} pieces for {held} copies");
    nodes.kill(primary);
    wait_for("the other holder seen down", || {
        !remote.stats().nodes[primary].up
    });
    let total = |sql: &str| rows(&remote, sql, &[]);
    assert_eq!(
        total("SELECT COUNT(*), SUM(LENGTH(s)), SUM(id) FROM big"),
        vec![vec![
            Value::Int(ROWS),
            Value::Int(ROWS * BYTES as i64),
            Value::Int(ROWS * (ROWS - 1) / 2)
        ]]
    );
    let probe = &strs[7];
    assert_eq!(
        rows(
            &remote,
            "SELECT id FROM big WHERE s = ?",
            &[Value::Str(probe.clone())]
        ),
        vec![vec![Value::Int(7)]]
    );
}

#[test]
fn a_node_restarted_while_no_client_is_connected_is_resynced_by_the_next_client() {
    let mut nodes = Nodes::start("unwatched", 3);
    let local = TestCluster::new(
        cluster_builder()
            .nodes(3)
            .backups(1)
            .build()
            .expect("a cluster"),
    );
    {
        let first = build(nodes.client(0).backups(1));
        for c in [&first, &local] {
            load(c);
            load_keyless(c);
        }
    }
    nodes.kill(1);
    let (child, _) = start_node(1, &nodes.addrs[1].to_string(), &nodes.secret);
    nodes.children[1] = Some(child);
    // The next client finds node 1's copies empty, gives it the catalog and resyncs them
    // before it serves.
    let second = build(nodes.client(1).backups(1));
    assert_eq!(second.health(), weir_runtime::Health::Green);
    nodes.kill(0);
    wait_for("node 0 seen down", || !second.stats().nodes[0].up);
    assert_same_answers(&second, &local, "from node 1's resynced copies");
}

#[test]
fn node_processes_read_an_external_tables_files_in_place() {
    // The files are written here and read by the node processes, which share this machine's
    // file system; a second client finds the table in the catalog the nodes keep.
    let dir = std::env::temp_dir().join(format!("weir-mp-external-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in 0..3 {
        let lines: String = (0..100)
            .map(|i| format!("{},{}\n", f * 100 + i, (f * 100 + i) % 7))
            .collect();
        std::fs::write(dir.join(format!("part-{f}.csv")), lines).unwrap();
    }
    let nodes = Nodes::start("external", 3);
    let first = build(nodes.client(0));
    first
        .execute(&format!(
            "CREATE EXTERNAL TABLE e (k BIGINT, m BIGINT) STORED AS CSV LOCATION '{}'",
            dir.display()
        ))
        .unwrap();
    assert_eq!(
        rows(&first, "SELECT COUNT(*), SUM(k) FROM e", &[]),
        vec![vec![Value::Int(300), Value::Int(44_850)]]
    );
    let second = build(nodes.client(1));
    assert_eq!(
        rows(
            &second,
            "SELECT m, COUNT(*) FROM e WHERE k < 14 GROUP BY m",
            &[]
        ),
        (0..7)
            .map(|m| vec![Value::Int(m), Value::Int(2)])
            .collect::<Vec<_>>()
    );
    let e = second.execute("INSERT INTO e VALUES (1, 1)").unwrap_err();
    assert!(e.to_string().contains("external table"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_client_that_connects_later_sees_the_tables_and_their_rows() {
    let nodes = Nodes::start("later", 3);
    let first = build(nodes.client(0));
    first
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    first.execute("CREATE INDEX t_x ON t(x)").unwrap();
    first
        .execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
        .unwrap();
    let second = build(nodes.client(1));
    let tables: Vec<String> = second.tables().into_iter().map(|t| t.name).collect();
    assert_eq!(tables, ["t"]);
    assert_eq!(
        rows(&second, "SELECT id FROM t WHERE x = 20", &[]),
        vec![vec![Value::Int(2)]]
    );
    // The second client writes on from where the first left off.
    assert_eq!(second.execute("INSERT INTO t VALUES (4, 40)").unwrap(), 1);
    assert_eq!(
        rows(&first, "SELECT SUM(x) FROM t", &[]),
        vec![vec![Value::Int(100)]]
    );
    // A table the second client makes is found by the first when it names it.
    second
        .execute("CREATE TABLE u (id BIGINT PRIMARY KEY)")
        .unwrap();
    second.execute("INSERT INTO u VALUES (7)").unwrap();
    assert_eq!(
        rows(&first, "SELECT id FROM u", &[]),
        vec![vec![Value::Int(7)]]
    );
}

#[test]
fn weir_sql_connects_to_node_processes() {
    let nodes = Nodes::start("cli", 3);
    let connect = nodes.connect_arg();
    let secret = nodes.secret.to_str().expect("a UTF-8 path").to_string();
    let dir = nodes.secret.parent().expect("a directory").to_path_buf();
    let script = dir.join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR);\n\
         INSERT INTO t VALUES (1, 'one'), (2, 'two');\n\
         SELECT name FROM t WHERE id = 2;\n",
    )
    .unwrap();
    // Runs `weir` with `args`, then the connection flags (and `extra`); its standard output,
    // once it succeeded.
    let run = |args: &[&str], extra: &[&str], input: Option<&str>| -> String {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--connect", &connect, "--secret-file", &secret]);
        all.extend(extra);
        let out = common::weir_with_input(&all, input);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "weir {all:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let stdout = run(
        &["sql"],
        &["--format", "csv", "-f", script.to_str().unwrap()],
        None,
    );
    assert!(stdout.contains("two"), "{stdout}");
    // A second run is a client that connects later: the table and its rows are there.
    let stdout = run(
        &["sql"],
        &["--format", "csv", "SELECT COUNT(*) FROM t"],
        None,
    );
    assert!(stdout.lines().any(|l| l.trim() == "2"), "{stdout}");
    // And the shell, on a piped script.
    let stdout = run(&["shell"], &[], Some("SELECT name FROM t WHERE id = 1;\n"));
    assert!(stdout.contains("one"), "{stdout}");
}

/// Every `weir node` process killed at once (SIGKILL) and started again on its data directory:
/// a client that connects afterwards finds every acknowledged write, as the same statements
/// left a cluster in this process; and a node whose directory was lost gets its copies back
/// from their replicas.
#[test]
fn node_processes_killed_together_come_back_from_their_data_directories() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let dir = |i: usize| data.path().join(format!("node-{i}"));
    let mut nodes = Nodes {
        children: Vec::new(),
        addrs: Vec::new(),
        secret: secret_file("durable", SECRET),
    };
    for id in 0..3 {
        let (child, addr) = start_node_in(id, "127.0.0.1:0", &nodes.secret, Some(&dir(id)));
        nodes.children.push(Some(child));
        nodes.addrs.push(addr);
    }
    let local = TestCluster::new(
        cluster_builder()
            .nodes(3)
            .backups(1)
            .build()
            .expect("a cluster"),
    );
    {
        let remote = build(nodes.client(0).backups(1));
        for c in [&remote, &local] {
            load(c);
            load_keyless(c);
            assert_eq!(
                c.execute("UPDATE Item SET fld = fld + 7 WHERE id < 50")
                    .unwrap(),
                50
            );
            assert_eq!(c.execute("DELETE FROM keyless WHERE a = 3").unwrap(), 5);
            c.execute("CREATE INDEX item_fld ON Item(fld)").unwrap();
        }
    }
    for i in 0..3 {
        nodes.kill(i);
    }
    let restart = |nodes: &mut Nodes, i: usize| {
        let (child, addr) =
            start_node_in(i, &nodes.addrs[i].to_string(), &nodes.secret, Some(&dir(i)));
        assert_eq!(addr, nodes.addrs[i]);
        nodes.children[i] = Some(child);
    };
    for i in 0..3 {
        restart(&mut nodes, i);
    }
    let remote = build(nodes.client(1).backups(1));
    assert_eq!(remote.health(), weir_runtime::Health::Green);
    assert_same_answers(&remote, &local, "after every node process was killed");
    // Node 2 loses its directory: it comes back empty, and its copies from their replicas.
    nodes.kill(2);
    wait_for("node 2 seen down", || !remote.stats().nodes[2].up);
    std::fs::remove_dir_all(dir(2)).expect("node 2's directory removed");
    restart(&mut nodes, 2);
    wait_for("node 2 back", || remote.stats().nodes[2].up);
    wait_for("health green after the resync", || {
        remote.health() == weir_runtime::Health::Green
    });
    nodes.kill(0);
    wait_for("node 0 seen down", || !remote.stats().nodes[0].up);
    assert_same_answers(
        &remote,
        &local,
        "from node 2's repaired copies, node 0 down",
    );
}

#[test]
fn two_clients_in_one_slot_the_second_is_refused_and_an_unpinned_one_draws_another() {
    let nodes = Nodes::start("slots", 3);
    let first = build(nodes.client(5));
    first
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    first.execute("INSERT INTO t VALUES (1, 10)").unwrap();
    // A second client pinned to the same slot is refused at once, and told why.
    let started = Instant::now();
    match nodes.client(5).build() {
        Err(weir_cli::Error::Connect(message)) => assert!(
            message.contains("client slot 5 is taken") && message.contains("client_slot"),
            "{message}"
        ),
        Err(e) => panic!("expected the slot refused, got {e}"),
        Ok(_) => panic!("two clients connected in one slot"),
    }
    assert!(
        started.elapsed() < LIMIT,
        "the refusal took {:?}",
        started.elapsed()
    );
    // Unpinned, a client whose first draw is that slot draws another and connects.
    let secret = Secret::from_file(&nodes.secret).expect("the secret");
    let second = build(
        cluster_builder()
            .connect(&nodes.addrs)
            .secret(secret)
            .client_slot_draws(&[5, 6]),
    );
    let id = second.transport().expect("a TCP endpoint").id();
    assert_eq!(id, 3 + 6, "the second client took slot 6");
    assert_eq!(second.execute("INSERT INTO t VALUES (2, 20)").unwrap(), 1);
    // Neither client's connections flapped: both answer, and see both rows.
    for c in [&first, &second] {
        assert_eq!(
            rows(c, "SELECT id, x FROM t", &[]),
            vec![
                vec![Value::Int(1), Value::Int(10)],
                vec![Value::Int(2), Value::Int(20)],
            ]
        );
    }
    assert!(first.stats().nodes.iter().take(3).all(|n| n.up));
}

/// An authenticated connection to the node process at `addr` as node `id`, made by hand
/// with the cluster's secret: its socket (blocking) and the writer of its frames.
fn dial_by_hand(
    addr: SocketAddr,
    id: u32,
    secret: &Secret,
) -> (TcpStream, weir_runtime::wire::framing::FrameSealer) {
    use weir_runtime::wire::framing::{self, HANDSHAKE_MAX_FRAME};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut framed =
            tokio_util::codec::Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
        let session = framing::dial(&mut framed, secret, id, Some(0), LIMIT)
            .await
            .expect("the handshake");
        let stream = framed.into_inner().into_std().expect("a std socket");
        stream.set_nonblocking(false).expect("blocking");
        (stream, session.keys.split(1 << 20).0)
    })
}

/// `payload` sealed as frame after frame by `sealer`: each frame's bytes as on the wire.
fn frames(
    sealer: &mut weir_runtime::wire::framing::FrameSealer,
    payloads: &[&[u8]],
) -> Vec<Vec<u8>> {
    payloads
        .iter()
        .map(|p| {
            let mut wire = tokio_util::bytes::BytesMut::new();
            sealer.seal_into(p, &mut wire).expect("a frame");
            wire.to_vec()
        })
        .collect()
}

/// Whether the node closes `stream` within [`LIMIT`] (what it sends meanwhile, heartbeats,
/// is read and dropped).
fn closed_by_the_node(stream: &mut TcpStream) -> bool {
    use std::io::Read;
    let deadline = Instant::now() + LIMIT;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("a read timeout");
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// What an attacker makes of two frames (as on the wire): the bytes it sends.
type Tampering = fn(&[Vec<u8>]) -> Vec<u8>;

#[test]
fn frames_that_do_not_verify_are_refused_and_the_cluster_keeps_answering() {
    use weir_runtime::wire::codec;
    use weir_runtime::wire::messages::{CatalogPropose, CatalogRequest, NetMessage, Proposal};
    let nodes = Nodes::start_with_logs("forged", 3, true);
    let client = build(nodes.client(0));
    client
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    client
        .execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
        .unwrap();
    let secret = Secret::from_file(&nodes.secret).expect("the secret");
    // The attack: a catalog with no table in it, proposed on the catalog's epoch
    // after the CREATE TABLE; taken, it would drop every table.
    let put = NetMessage::CatalogPropose(Box::new(CatalogPropose {
        request: 1,
        proposal: Proposal::Schema {
            id: 1,
            expected: 1,
            catalog: weir_runtime::replication::catalog_bytes::encode_catalog(
                &weir::planner::CatalogSnapshot::default(),
            ),
            backups: 0,
        },
    }));
    let forged = codec::seal(codec::encode(&put).unwrap());
    let answers = |when: &str| {
        assert_eq!(
            rows(&client, "SELECT id, x FROM t", &[]),
            vec![
                vec![Value::Int(1), Value::Int(10)],
                vec![Value::Int(2), Value::Int(20)],
                vec![Value::Int(3), Value::Int(30)],
            ],
            "{when}"
        );
    };
    // A message a peer may send: it asks for the catalog.
    let harmless = codec::seal(
        codec::encode(&NetMessage::CatalogRequest(CatalogRequest { request: 1 })).unwrap(),
    );
    // Each attack from a peer of its own (ids no client or node uses), on node 0, with the
    // frames its session makes: the harmless request (frame 0), then the forged catalog
    // (frame 1). What verifies goes through; nothing after a frame that does not.
    let attacks: [(&str, Tampering); 3] = [
        ("a bad MAC", |f| {
            let mut bad = f[1].clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            [f[0].clone(), bad].concat()
        }),
        ("a replayed frame", |f| {
            [f[0].clone(), f[0].clone()].concat()
        }),
        ("reordered frames", |f| {
            [f[1].clone(), f[0].clone()].concat()
        }),
    ];
    for (i, (attack, tamper)) in attacks.iter().enumerate() {
        let (mut stream, mut sealer) = dial_by_hand(nodes.addrs[0], 5000 + i as u32, &secret);
        let sealed = frames(&mut sealer, &[&harmless, &forged]);
        stream
            .write_all(&tamper(&sealed))
            .expect("the frames go out");
        assert!(
            closed_by_the_node(&mut stream),
            "{attack}: the connection stays open"
        );
        answers(attack);
    }
    // The same frame from a connection that did no handshake: refused as a handshake.
    let mut stranger = TcpStream::connect(nodes.addrs[0]).expect("connect");
    let mut wire = (forged.len() as u32).to_be_bytes().to_vec();
    wire.extend_from_slice(&forged);
    stranger.write_all(&wire).expect("the frame goes out");
    assert!(
        closed_by_the_node(&mut stranger),
        "injected: the connection stays open"
    );
    answers("injected");
    // The cluster writes on, and a client that connects later finds the table: no forged
    // catalog was kept.
    assert_eq!(client.execute("INSERT INTO t VALUES (4, 40)").unwrap(), 1);
    let later = build(nodes.client(1));
    assert_eq!(
        rows(&later, "SELECT SUM(x) FROM t", &[]),
        vec![vec![Value::Int(100)]]
    );
    // Node 0 logged each refusal.
    wait_for("node 0 logged every forged frame", || {
        nodes.log(0).matches("does not verify").count() == 3
    });
    assert!(
        nodes.log(0).contains("malformed handshake frame"),
        "{}",
        nodes.log(0)
    );
}

/// The names of the tables client `c` sees, sorted.
fn table_names(c: &TestCluster) -> Vec<String> {
    let mut names: Vec<String> = c.tables().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

#[test]
fn two_clients_never_drop_each_others_tables_and_concurrent_ddl_has_one_winner() {
    let nodes = Nodes::start("two-clients", 3);
    // Statements that meet others' are retried, with pauses: a longer watchdog.
    let build = |slot| build(nodes.client(slot)).with_limit(Duration::from_secs(30));
    // A connects before B makes anything: its view of the catalog is B's past.
    let a = build(0);
    let b = build(1);
    b.execute("CREATE TABLE t1 (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    b.execute("INSERT INTO t1 VALUES (1, 10), (2, 20)").unwrap();
    a.execute("CREATE TABLE t2 (id BIGINT PRIMARY KEY, y BIGINT)")
        .unwrap();
    a.execute("INSERT INTO t2 VALUES (3, 30)").unwrap();
    // A client that connects now sees both tables and their rows.
    let c = build(2);
    assert_eq!(table_names(&c), ["t1", "t2"]);
    assert_eq!(
        rows(&c, "SELECT SUM(x) FROM t1", &[]),
        vec![vec![Value::Int(30)]]
    );
    assert_eq!(
        rows(&c, "SELECT y FROM t2", &[]),
        vec![vec![Value::Int(30)]]
    );
    // The same name with two schemas, from two clients: the one whose view is stale is
    // refused by the log, fetches the catalog, and is told the table exists.
    c.execute("CREATE TABLE t3 (id BIGINT PRIMARY KEY)")
        .unwrap();
    let err = b
        .execute("CREATE TABLE t3 (id BIGINT PRIMARY KEY, name VARCHAR)")
        .expect_err("t3 exists");
    assert!(err.to_string().contains("t3"), "{err}");
    // B dropping a table A made, from a view that predates it, drops that table only.
    b.execute("DROP TABLE t2").unwrap();
    let d = build(3);
    assert_eq!(table_names(&d), ["t1", "t3"]);
    assert_eq!(
        rows(&d, "SELECT id FROM t1 ORDER BY id", &[]),
        vec![vec![Value::Int(1)], vec![Value::Int(2)]]
    );
    // Concurrent CREATE TABLEs of distinct names from four clients all land.
    let clients = [&a, &b, &c, &d];
    std::thread::scope(|s| {
        for (i, client) in clients.iter().enumerate() {
            s.spawn(move || {
                for j in 0..3 {
                    client
                        .execute(&format!("CREATE TABLE c{i}_{j} (id BIGINT PRIMARY KEY)"))
                        .unwrap();
                }
            });
        }
    });
    let e = build(4);
    assert_eq!(table_names(&e).len(), 2 + 12, "{:?}", table_names(&e));
}

#[test]
fn the_catalog_log_survives_a_minority_of_nodes_and_a_restarted_node_catches_up() {
    let mut nodes = Nodes::start("minority", 3);
    // A schema change while the log elects a new leader waits for it: a longer watchdog.
    let a = build(nodes.client(0).backups(1)).with_limit(Duration::from_secs(30));
    a.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    a.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
    // Whichever node led the log, with one of three gone the others decide on.
    for gone in [0, 2] {
        nodes.kill(gone);
        wait_for("the node seen down", || !a.stats().nodes[gone].up);
        a.execute(&format!("CREATE TABLE after{gone} (id BIGINT PRIMARY KEY)"))
            .unwrap();
        // Back without its data (no data directory): it takes the catalog from the log.
        let (child, _) = start_node(gone, &nodes.addrs[gone].to_string(), &nodes.secret);
        nodes.children[gone] = Some(child);
        wait_for("the node back up", || a.stats().nodes[gone].up);
    }
    let later = build(nodes.client(1).backups(1));
    assert_eq!(table_names(&later), ["after0", "after2", "t"]);
    assert_eq!(
        rows(&later, "SELECT SUM(x) FROM t", &[]),
        vec![vec![Value::Int(30)]]
    );
}

/// A data node without a data directory that restarts has forgotten the catalog log's
/// entries it acknowledged: were it to vote at once, a member that fell behind could be
/// elected with it and lead a log without an entry already committed (here the schema change
/// that created `t2`, held by node 0's data directory alone once node 2 restarted).
#[test]
fn a_node_restarted_without_its_catalog_log_does_not_vote_before_it_caught_up() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let dirs = [
        Some(data.path().join("node-0")),
        Some(data.path().join("node-1")),
        None,
    ];
    let mut nodes = Nodes::start_in("amnesia", &dirs);
    // Schema changes while the log elects a new leader wait for it: a longer watchdog.
    let a = build(nodes.client(0).backups(1)).with_limit(Duration::from_secs(30));
    a.execute("CREATE TABLE t1 (id BIGINT PRIMARY KEY)")
        .unwrap();
    // Node 1 falls behind: `t2` is committed by nodes 0 and 2.
    nodes.signal(1, "STOP").unwrap();
    a.execute("CREATE TABLE t2 (id BIGINT PRIMARY KEY)")
        .unwrap();
    // Node 0 stops, node 2 restarts without its log (client `a` joins it again): `t2` is in
    // node 0's data directory only.
    nodes.kill(0);
    nodes.kill(2);
    nodes.restart(2, None).unwrap();
    wait_for("client a connected to node 2 again", || {
        a.transport().is_some_and(|t| t.is_up(2))
    });
    // Node 1 wakes and stands for election, with node 0 gone. Node 2 must not vote for it:
    // the time it is given shows that nothing it does meanwhile undoes `t2`.
    nodes.signal(1, "CONT").unwrap();
    std::thread::sleep(Duration::from_secs(4));
    nodes.restart(0, dirs[0].as_deref()).unwrap();
    let later = build(nodes.client(1).backups(1)).with_limit(Duration::from_secs(30));
    assert_eq!(table_names(&later), ["t1", "t2"]);
    // The log has `t2`: a write to it is taken (writes are checked against the log's
    // catalog), and the next schema change lands on top of it.
    assert_eq!(later.execute("INSERT INTO t2 VALUES (1), (2)").unwrap(), 2);
    later
        .execute("CREATE TABLE t3 (id BIGINT PRIMARY KEY)")
        .unwrap();
    let third = build(nodes.client(2).backups(1));
    assert_eq!(table_names(&third), ["t1", "t2", "t3"]);
    assert_eq!(
        rows(&third, "SELECT id FROM t2", &[]),
        vec![vec![Value::Int(1)], vec![Value::Int(2)]]
    );
}

/// A client that has not seen another's DROP TABLE reads nothing of the dropped table, and
/// reads a table made again under its name with its new columns: the data nodes refuse a
/// query planned on a catalog older than a change to a table it scans, and the client plans
/// it again.
#[test]
fn a_client_behind_a_drop_reads_nothing_of_the_dropped_table_and_the_new_one_as_it_is() {
    let nodes = Nodes::start("stale-reads", 3);
    let a = build(nodes.client(0).backups(1));
    let b = build(nodes.client(1).backups(1));
    a.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    a.execute("INSERT INTO t VALUES (1, 10), (2, 20)").unwrap();
    assert_eq!(
        rows(&b, "SELECT SUM(x) FROM t", &[]),
        vec![vec![Value::Int(30)]]
    );
    a.execute("DROP TABLE t").unwrap();
    let err = b.query("SELECT SUM(x) FROM t", &[]).expect_err("t is gone");
    assert!(err.to_string().contains("'t'"), "{err}");
    // Made again with other columns: b, whose plan of `SELECT * FROM t` is of the old t,
    // reads the new one.
    b.query("SELECT * FROM t", &[]).expect_err("t is gone");
    a.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    a.execute("INSERT INTO t VALUES (7, 'seven')").unwrap();
    let c = build(nodes.client(2).backups(1));
    assert_eq!(
        rows(&c, "SELECT * FROM t", &[]),
        vec![vec![Value::Int(7), Value::Str("seven".into())]]
    );
    a.execute("DROP TABLE t").unwrap();
    a.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    a.execute("INSERT INTO t VALUES (3, 30)").unwrap();
    // c planned `SELECT * FROM t` on the t of names; it reads the t of numbers.
    assert_eq!(
        rows(&c, "SELECT * FROM t", &[]),
        vec![vec![Value::Int(3), Value::Int(30)]]
    );
}

#[test]
fn writes_of_several_clients_at_once_all_land_once_and_a_dropped_table_takes_none() {
    let nodes = Nodes::start("many-writers", 3);
    // Writes that meet others' are retried, with pauses: a longer watchdog.
    let clients: Vec<TestCluster> = (0..4)
        .map(|i| build(nodes.client(i).backups(1)).with_limit(Duration::from_secs(30)))
        .collect();
    clients[0]
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, who BIGINT)")
        .unwrap();
    // Four clients insert at once into the same partitions (the keys of a round land on
    // every partition): each write lands once, none is lost.
    std::thread::scope(|s| {
        for (i, client) in clients.iter().enumerate() {
            s.spawn(move || {
                for round in 0..15 {
                    let values: Vec<String> = (0..8)
                        .map(|k| format!("({}, {i})", (round * 8 + k) * 4 + i))
                        .collect();
                    let sql = format!("INSERT INTO t VALUES {}", values.join(", "));
                    assert_eq!(client.execute(&sql).unwrap(), 8, "client {i} round {round}");
                }
            });
        }
    });
    let check = build(nodes.client(9).backups(1));
    assert_eq!(
        rows(
            &check,
            "SELECT COUNT(*), COUNT(DISTINCT id), SUM(id) FROM t",
            &[]
        ),
        vec![vec![
            Value::Int(480),
            Value::Int(480),
            Value::Int((0..480).sum::<i64>())
        ]]
    );
    for who in 0..4 {
        assert_eq!(
            rows(
                &check,
                "SELECT COUNT(*) FROM t WHERE who = ?",
                &[Value::Int(who)]
            ),
            vec![vec![Value::Int(120)]]
        );
    }
    // The same key from two clients at once: one lands, the other is told it exists.
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = clients[..2]
            .iter()
            .map(|c| s.spawn(move || c.execute("INSERT INTO t VALUES (100000, 7)")))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    let refused = outcomes.iter().find_map(|o| o.as_ref().err()).unwrap();
    assert!(refused.to_string().contains("100000"), "{refused}");
    // A table dropped by one client takes no rows from another that still knows it.
    clients[1].execute("DROP TABLE t").unwrap();
    let err = clients[2]
        .execute("INSERT INTO t VALUES (1, 1)")
        .expect_err("t is gone");
    assert!(err.to_string().contains("'t'"), "{err}");
    clients[3]
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    assert_eq!(
        rows(&check, "SELECT COUNT(*) FROM t", &[]),
        vec![vec![Value::Int(0)]]
    );
}

#[test]
fn a_schema_change_without_a_majority_of_data_nodes_fails_within_the_proposal_limit() {
    let mut nodes = Nodes::start("no-majority", 3);
    let a = build(nodes.client(0).backups(1)).with_limit(Duration::from_secs(25));
    a.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    for gone in [1, 2] {
        nodes.kill(gone);
        wait_for("the node seen down", || !a.stats().nodes[gone].up);
    }
    // A test of a timeout: the catalog log cannot decide with one node of three, and the
    // client gives up after its proposal limit (15 s), with an error that says why.
    let started = Instant::now();
    let err = a
        .execute("CREATE TABLE u (id BIGINT PRIMARY KEY)")
        .expect_err("no majority");
    let took = started.elapsed();
    assert!(
        matches!(&err, weir_runtime::Error::NodeDown(why) if why.contains("majority")),
        "{err}"
    );
    assert!(took < Duration::from_secs(25), "{took:?}");
}

/// Looks up rows `1..=rows` of `t (id, x = id * 10)` one by one: each is read right, or fails
/// as `unreadable` says it may. Returns how many were read and how many failed.
fn look_up_each(
    client: &TestCluster,
    rows: i64,
    unreadable: impl Fn(&weir_cli::Result<weir_cli::QueryResult>) -> bool,
) -> (usize, usize) {
    let (mut found, mut failed) = (0, 0);
    for id in 1..=rows {
        let got = client.query("SELECT x FROM t WHERE id = ?", &[Value::Int(id)]);
        if unreadable(&got) {
            failed += 1;
        } else {
            let got = got.unwrap_or_else(|e| panic!("row {id}: {e}"));
            assert_eq!(got.rows(), vec![vec![Value::Int(id * 10)]], "row {id}");
            found += 1;
        }
    }
    (found, failed)
}

/// Whether `result` is the error of a partition whose only live copies are on node-1 and lost.
fn lost_on_node_1<T>(result: &weir_cli::Result<T>) -> bool {
    matches!(
        result,
        Err(weir_cli::Error::NoCurrentCopy { node, .. }) if node == "node-1"
    )
}

#[test]
fn a_node_restarted_without_its_data_while_no_client_is_connected_fails_reads_of_its_lost_copies() {
    let mut nodes = Nodes::start("lost", 3);
    {
        let first = build(nodes.client(0));
        first
            .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
            .unwrap();
        first
            .execute("CREATE TABLE never (id BIGINT PRIMARY KEY)")
            .unwrap();
        let values: Vec<String> = (1..=200).map(|i| format!("({i}, {})", i * 10)).collect();
        first
            .execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .unwrap();
    }
    // No client is connected while node 1 restarts without its data (no backups: its
    // partitions' rows are gone).
    nodes.kill(1);
    let (child, _) = start_node(1, &nodes.addrs[1].to_string(), &nodes.secret);
    nodes.children[1] = Some(child);
    let second = build(nodes.client(1));
    // Not an answer with fewer rows: the query fails naming what is lost.
    let count = second.query("SELECT COUNT(*) FROM t", &[]);
    assert!(lost_on_node_1(&count), "{count:?}");
    // Every row is either read right or its lookup fails the same way; never missing.
    let (found, lost) = look_up_each(&second, 200, lost_on_node_1);
    assert!(found > 0 && lost > 0, "found {found}, lost {lost}");
    // A table never written lost nothing, and a write to a lost partition is refused.
    assert_eq!(
        rows(&second, "SELECT COUNT(*) FROM never", &[]),
        vec![vec![Value::Int(0)]]
    );
    let insert: Vec<String> = (1001..=1100).map(|i| format!("({i}, 0)")).collect();
    let write = second.execute(&format!("INSERT INTO t VALUES {}", insert.join(", ")));
    assert!(write.is_err(), "{write:?}");
    // A client that connects later sees the same.
    drop(second);
    let third = build(nodes.client(2));
    let count = third.query("SELECT COUNT(*) FROM t", &[]);
    assert!(lost_on_node_1(&count), "{count:?}");
}

#[test]
fn a_client_connecting_while_the_current_copies_are_down_does_not_read_a_copy_that_missed_writes() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let dir = |i: usize| data.path().join(format!("node-{i}"));
    let mut nodes = Nodes {
        children: Vec::new(),
        addrs: Vec::new(),
        secret: secret_file("behind", SECRET),
    };
    for id in 0..3 {
        let (child, addr) = start_node_in(id, "127.0.0.1:0", &nodes.secret, Some(&dir(id)));
        nodes.children.push(Some(child));
        nodes.addrs.push(addr);
    }
    let restart = |nodes: &mut Nodes, i: usize| {
        let (child, _) =
            start_node_in(i, &nodes.addrs[i].to_string(), &nodes.secret, Some(&dir(i)));
        nodes.children[i] = Some(child);
    };
    let values = |ids: std::ops::RangeInclusive<i64>| {
        let rows: Vec<String> = ids.map(|i| format!("({i}, {})", i * 10)).collect();
        format!("INSERT INTO t VALUES {}", rows.join(", "))
    };
    {
        let first = build(nodes.client(0).backups(1));
        first
            .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
            .unwrap();
        first.execute(&values(1..=200)).unwrap();
        // Node 1 misses the second insert; it comes back from its directory, behind.
        nodes.kill(1);
        wait_for("node 1 seen down", || !first.stats().nodes[1].up);
        assert_eq!(first.execute(&values(201..=400)).unwrap(), 200);
    }
    restart(&mut nodes, 1);
    nodes.kill(0);
    // A new client, with node 0 (holding current copies) down: node 1's copies are older
    // but the newest it can reach for the partitions node 0 shares with it.
    let second = build(nodes.client(1).backups(1));
    // Not an answer without the rows node 1 missed: the query fails naming node 0, down
    // with the current copies.
    let unreadable = |result: &weir_cli::Result<weir_cli::QueryResult>| matches!(result, Err(weir_cli::Error::NodeDown(node)) if node == "node-0");
    let count = second.query("SELECT COUNT(*) FROM t", &[]);
    assert!(unreadable(&count), "{count:?}");
    let (found, behind) = look_up_each(&second, 400, unreadable);
    assert!(found > 0 && behind > 0, "found {found}, behind {behind}");
    // Node 0 back: node 1's copies are repaired from it, and every row is there.
    restart(&mut nodes, 0);
    wait_for("node 0 back", || second.stats().nodes[0].up);
    wait_for("health green after the resync", || {
        second.health() == weir_runtime::Health::Green
    });
    assert_eq!(
        rows(&second, "SELECT COUNT(*), SUM(x) FROM t", &[]),
        vec![vec![Value::Int(400), Value::Int(802_000)]]
    );
    // Repaired in the log too: a later client, node 0 down again, reads node 1's copies.
    drop(second);
    nodes.kill(0);
    let third = build(nodes.client(2).backups(1));
    assert_eq!(
        rows(&third, "SELECT COUNT(*) FROM t", &[]),
        vec![vec![Value::Int(400)]]
    );
}

#[test]
fn clients_of_node_processes_never_hand_out_the_same_generated_key() {
    let nodes = Nodes::start("serial-writers", 3);
    let clients: Vec<TestCluster> = (0..3)
        .map(|i| build(nodes.client(i).backups(1)).with_limit(Duration::from_secs(30)))
        .collect();
    clients[0]
        .execute("CREATE TABLE ev (id SERIAL PRIMARY KEY, writer BIGINT)")
        .unwrap();
    // Each client reserves its keys through the catalog log, in blocks; the blocks of two
    // clients never overlap.
    let handed: Vec<i64> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                s.spawn(move || {
                    (0..20)
                        .map(|_| {
                            let r = client
                                .query(
                                    "INSERT INTO ev (writer) VALUES (?) RETURNING id",
                                    &[Value::Int(i as i64)],
                                )
                                .unwrap_or_else(|e| panic!("client {i}: {e}"));
                            match r.rows()[0][0] {
                                Value::Int(id) => id,
                                ref other => panic!("client {i}: key {other:?}"),
                            }
                        })
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let distinct: std::collections::BTreeSet<i64> = handed.iter().copied().collect();
    assert_eq!(distinct.len(), 60, "a key was handed out twice: {handed:?}");
    // A client that connects later takes keys after every block reserved so far.
    let later = build(nodes.client(9).backups(1));
    let r = later
        .query("INSERT INTO ev (writer) VALUES (9) RETURNING id", &[])
        .unwrap();
    let Value::Int(next) = r.rows()[0][0] else {
        panic!("a key {:?}", r.rows())
    };
    assert!(!distinct.contains(&next), "key {next} handed out again");
    assert_eq!(
        rows(&later, "SELECT COUNT(*), COUNT(DISTINCT id) FROM ev", &[]),
        vec![vec![Value::Int(61), Value::Int(61)]]
    );
}

#[test]
fn clients_inserting_the_same_keys_at_once_with_on_conflict_do_nothing_all_succeed() {
    let nodes = Nodes::start("skip-writers", 3);
    let clients: Vec<TestCluster> = (0..3)
        .map(|i| build(nodes.client(i).backups(1)).with_limit(Duration::from_secs(30)))
        .collect();
    clients[0]
        .execute("CREATE TABLE k (id BIGINT PRIMARY KEY, by_client BIGINT)")
        .unwrap();
    // Every round, each client inserts the round's two keys: one lands, the others skip.
    let inserted: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                s.spawn(move || {
                    (0..10)
                        .map(|round| {
                            let sql = format!(
                                "INSERT INTO k VALUES ({0}, {i}), ({1}, {i}) ON CONFLICT DO NOTHING",
                                round * 2,
                                round * 2 + 1
                            );
                            client
                                .execute(&sql)
                                .unwrap_or_else(|e| panic!("client {i} round {round}: {e}"))
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(inserted.iter().sum::<u64>(), 20, "{inserted:?}");
    let check = build(nodes.client(9).backups(1));
    assert_eq!(
        rows(&check, "SELECT COUNT(*), COUNT(DISTINCT id) FROM k", &[]),
        vec![vec![Value::Int(20), Value::Int(20)]]
    );
}

#[test]
fn a_unique_index_holds_when_several_clients_insert_the_same_values_at_once() {
    let nodes = Nodes::start("unique-writers", 3);
    let clients: Vec<TestCluster> = (0..3)
        .map(|i| build(nodes.client(i).backups(1)).with_limit(Duration::from_secs(30)))
        .collect();
    clients[0]
        .execute("CREATE TABLE u (id BIGINT PRIMARY KEY, email VARCHAR, n BIGINT)")
        .unwrap();
    clients[0]
        .execute("CREATE UNIQUE INDEX u_email ON u(email)")
        .unwrap();
    // Every round, each client inserts a row of its own key with the round's email: the
    // rows land on different partitions, the emails clash.
    let outcomes: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                s.spawn(move || {
                    (0..12)
                        .map(|round| {
                            let sql = format!(
                                "INSERT INTO u VALUES ({}, 'user{round}@example.com', {i})",
                                round * 10 + i
                            );
                            match client.execute(&sql) {
                                Ok(n) => n == 1,
                                Err(weir_cli::Error::DuplicateUnique { .. }) => false,
                                Err(e) => panic!("client {i} round {round}: {e}"),
                            }
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for round in 0..12 {
        let landed = outcomes.iter().filter(|o| o[round]).count();
        assert_eq!(landed, 1, "round {round}: {outcomes:?}");
    }
    let check = build(nodes.client(9).backups(1));
    assert_eq!(
        rows(&check, "SELECT COUNT(*), COUNT(DISTINCT email) FROM u", &[]),
        vec![vec![Value::Int(12), Value::Int(12)]]
    );
}

#[test]
fn a_client_built_with_other_backups_places_copies_as_the_cluster_does() {
    let mut nodes = Nodes::start("backups", 3);
    let first = build(nodes.client(0).backups(1));
    first
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    // The second client asks for no backups; the cluster keeps one, and so does it.
    let second = build(nodes.client(1).backups(0));
    let values: Vec<String> = (1..=300).map(|i| format!("({i}, {i})")).collect();
    second
        .execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    nodes.kill(0);
    wait_for("node 0 seen down", || !second.stats().nodes[0].up);
    for client in [&first, &second] {
        assert_eq!(
            rows(client, "SELECT COUNT(*), SUM(x) FROM t", &[]),
            vec![vec![Value::Int(300), Value::Int(45_150)]]
        );
    }
}

/// A reader whose view of the copies predates a write that left a copy behind does not read
/// that copy once the write is acknowledged: the node that missed the write refuses the read
/// (its read lease ran out while it was paused, and the lease it takes back includes the
/// record of the missed write), and the reader learns the copies' state and reads the
/// current copy. The writer finds the paused node down within 1.6 s (not less: under a loaded
/// machine's scheduling a live node can be silent for a few hundred milliseconds, and a
/// writer that counted every node down would fail the insert); the reader would not for
/// 30 s, so it keeps the node's copy for current.
#[test]
fn a_copy_that_missed_an_acknowledged_write_serves_no_read_to_a_client_that_did_not_see_it() {
    let nodes = Nodes::start("missedread", 3);
    let silence = |dead_after: u64| {
        nodes
            .client(0)
            .backups(1)
            .query_timeout(Duration::from_secs(30))
            .peer_silence(
                Duration::from_millis(dead_after / 4),
                Duration::from_millis(dead_after),
            )
    };
    let writer = build(silence(1_600).client_slot(1));
    writer
        .execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)")
        .unwrap();
    let partitions = writer.tables()[0].partitions;
    let copies = weir_runtime::replication::copies::copies(partitions, 3, 1);
    // A key whose partition's first copy, the one a reader picks, is on node 1.
    let (paused, key) = (
        1usize,
        (0..10_000i64)
            .find(|&k| {
                let p = weir_operators::placement::partition_of(&Value::Int(k), partitions);
                copies[p as usize][0] == 1
            })
            .expect("a key read from node 1"),
    );
    writer
        .execute(&format!("INSERT INTO kv VALUES ({}, 'before')", key + 1))
        .unwrap();
    let reader = build(silence(30_000).client_slot(2));
    let read =
        |cluster: &TestCluster| rows(cluster, "SELECT v FROM kv WHERE k = ?", &[Value::Int(key)]);
    assert!(read(&reader).is_empty(), "the key is not written yet");
    nodes.signal(paused, "STOP").unwrap();
    let inserted = writer.execute(&format!("INSERT INTO kv VALUES ({key}, 'after')"));
    drop(writer);
    nodes.signal(paused, "CONT").unwrap();
    assert_eq!(
        inserted.unwrap(),
        1,
        "the insert is acknowledged without node {paused}"
    );
    assert!(
        reader.stats().nodes[paused].up,
        "the reader never saw node {paused} down"
    );
    assert_eq!(read(&reader), vec![vec![Value::Str("after".into())]]);
}

#[test]
fn a_heartbeat_not_shorter_than_the_silence_that_counts_a_node_down_is_refused() {
    let file = secret_file("silence", SECRET);
    let secret = Secret::from_file(&file).unwrap();
    std::fs::remove_dir_all(file.parent().expect("the secret's directory")).unwrap();
    for (heartbeat, dead_after) in [(2_000, 1_000), (500, 500), (0, 1_000)] {
        let built = Cluster::builder()
            .connect(&["127.0.0.1:9"])
            .secret(secret.clone())
            .peer_silence(
                Duration::from_millis(heartbeat),
                Duration::from_millis(dead_after),
            )
            .build();
        match built {
            Err(weir_cli::Error::Invalid(message)) => {
                assert!(message.contains("peer_silence"), "{message}")
            }
            Err(other) => panic!("{heartbeat} ms / {dead_after} ms: {other}"),
            Ok(_) => panic!("{heartbeat} ms / {dead_after} ms: accepted"),
        }
    }
}

/// A write whose commit no copy answered in time (one copy's node killed, the other paused)
/// leaves every copy of its partition recorded behind in the catalog log. Once every copy is
/// up again, the copy at the highest version is taken as current (it holds every
/// acknowledged write): the partition is readable again, and the other copy is refreshed
/// from it, rather than the partition having no current copy for good.
#[test]
fn a_partition_whose_every_copy_missed_a_write_in_doubt_is_readable_once_all_are_back() {
    let data = tempfile::tempdir().expect("a temporary directory");
    let dirs: Vec<_> = (0..5)
        .map(|i| Some(data.path().join(format!("node-{i}"))))
        .collect();
    let mut nodes = Nodes::start_in("indoubt", &dirs);
    // The writer waits 1.5 s for a silent copy (it takes a paused node for alive).
    let writer = build(
        nodes
            .client(0)
            .backups(1)
            .query_timeout(Duration::from_millis(1500))
            .peer_silence(Duration::from_millis(500), Duration::from_secs(30)),
    )
    .with_limit(Duration::from_secs(30));
    writer
        .execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v BIGINT)")
        .unwrap();
    let partitions = writer.tables()[0].partitions;
    let copies = weir_runtime::replication::copies::copies(partitions, 5, 1);
    let partition = |k: i64| weir_operators::placement::partition_of(&Value::Int(k), partitions);
    let p = partition(1);
    let (killed, paused) = (
        copies[p as usize][0] as usize,
        copies[p as usize][1] as usize,
    );
    let in_doubt = (2..10_000i64)
        .find(|&k| partition(k) == p)
        .expect("a second key of the partition");
    assert_eq!(writer.execute("INSERT INTO kv VALUES (1, 10)").unwrap(), 1);
    nodes.kill(killed);
    wait_for("the killed node seen down", || {
        !writer.stats().nodes[killed].up
    });
    nodes.signal(paused, "STOP").unwrap();
    let insert = writer.execute(&format!("INSERT INTO kv VALUES ({in_doubt}, 20)"));
    assert!(
        matches!(insert, Err(weir_cli::Error::Timeout(_))),
        "the write's outcome is in doubt: {insert:?}"
    );
    nodes.signal(paused, "CONT").unwrap();
    nodes
        .restart(killed, dirs[killed].as_deref())
        .expect("the node starts again");
    drop(writer);
    let reader = build(nodes.client(1).backups(1)).with_limit(Duration::from_secs(30));
    let keys = |cluster: &TestCluster| -> Vec<i64> {
        rows(cluster, "SELECT k FROM kv", &[])
            .into_iter()
            .map(|r| match r[0] {
                Value::Int(k) => k,
                ref other => panic!("a key {other:?}"),
            })
            .collect()
    };
    let read = keys(&reader);
    assert!(read.contains(&1), "the acknowledged row: {read:?}");
    assert!(
        read == vec![1] || read == vec![1, in_doubt],
        "only the row in doubt may be there or not: {read:?}"
    );
    // The other copy is refreshed from the current one: every copy current again.
    wait_for("every copy current", || {
        reader.health() == weir_runtime::Health::Green
    });
    assert_eq!(keys(&reader), read);
}

#[test]
fn clients_of_node_processes_enforce_each_others_foreign_keys() {
    let nodes = Nodes::start("foreign-keys", 3);
    let a = build(nodes.client(0).backups(1));
    let b = build(nodes.client(1).backups(1));
    a.execute("CREATE TABLE author (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    a.execute("CREATE TABLE book (id BIGINT PRIMARY KEY, author_id BIGINT REFERENCES author)")
        .unwrap();
    let refused = |c: &TestCluster, sql: &str| match c.execute(sql) {
        Err(weir_cli::Error::ForeignKey { constraint, .. }) => {
            assert_eq!(constraint, "book_author_id_fkey", "{sql}")
        }
        other => panic!("{sql}: expected a foreign key violation, got {other:?}"),
    };
    // B, connected before the key was made, learns it with the catalog.
    refused(&b, "INSERT INTO book VALUES (1, 7)");
    a.execute("INSERT INTO author VALUES (7, 'Ann')").unwrap();
    b.execute("INSERT INTO book VALUES (1, 7)").unwrap();
    // A sees B's row referencing its author.
    refused(&a, "DELETE FROM author WHERE id = 7");
    assert!(matches!(
        a.execute("DROP TABLE author"),
        Err(weir_cli::Error::Plan(_))
    ));
    b.execute("DELETE FROM book").unwrap();
    a.execute("DELETE FROM author WHERE id = 7").unwrap();
    assert_eq!(
        rows(&b, "SELECT COUNT(*) FROM author", &[]),
        vec![vec![Value::Int(0)]]
    );
    // ON DELETE CASCADE: A's delete of B's author writes both tables, as one write.
    a.execute("CREATE TABLE note (id BIGINT PRIMARY KEY, author_id BIGINT REFERENCES author ON DELETE CASCADE)")
        .unwrap();
    b.execute("INSERT INTO author VALUES (8, 'Bo'), (9, 'Cy')")
        .unwrap();
    b.execute("INSERT INTO note SELECT g, 8 + g % 2 FROM generate_series(1, 40) AS s(g)")
        .unwrap();
    assert_eq!(a.execute("DELETE FROM author WHERE id = 8").unwrap(), 1);
    assert_eq!(
        rows(
            &b,
            "SELECT author_id, COUNT(*) FROM note GROUP BY author_id",
            &[]
        ),
        vec![vec![Value::Int(9), Value::Int(20)]]
    );
    // ON UPDATE CASCADE: B's renumbering of an author moves A's quotes with it, in one
    // write; while A's notes (ON UPDATE NO ACTION) reference the author, nothing moves.
    a.execute("CREATE TABLE quote (id BIGINT PRIMARY KEY, author_id BIGINT REFERENCES author ON UPDATE CASCADE)")
        .unwrap();
    a.execute("INSERT INTO quote SELECT g, 9 FROM generate_series(1, 30) AS s(g)")
        .unwrap();
    match b.execute("UPDATE author SET id = 90 WHERE id = 9") {
        Err(weir_cli::Error::ForeignKey { constraint, .. }) => {
            assert_eq!(constraint, "note_author_id_fkey")
        }
        other => panic!("expected note's key to stop the update, got {other:?}"),
    }
    let quotes_of = |c: &TestCluster| {
        rows(
            c,
            "SELECT author_id, COUNT(*) FROM quote GROUP BY author_id",
            &[],
        )
    };
    assert_eq!(quotes_of(&a), vec![vec![Value::Int(9), Value::Int(30)]]);
    a.execute("DELETE FROM note WHERE author_id = 9").unwrap();
    assert_eq!(
        b.execute("UPDATE author SET id = 90 WHERE id = 9").unwrap(),
        1
    );
    assert_eq!(quotes_of(&a), vec![vec![Value::Int(90), Value::Int(30)]]);
    a.execute("DROP TABLE quote").unwrap();
    // TRUNCATE ... CASCADE empties the tables referencing it too, in one write.
    b.execute("TRUNCATE author CASCADE").unwrap();
    assert_eq!(
        rows(
            &a,
            "SELECT (SELECT COUNT(*) FROM author), (SELECT COUNT(*) FROM note)",
            &[]
        ),
        vec![vec![Value::Int(0), Value::Int(0)]]
    );
}

#[test]
fn clients_upserting_the_same_counters_at_once_lose_no_increment() {
    let nodes = Nodes::start("upsert-writers", 3);
    let clients: Vec<TestCluster> = (0..3)
        .map(|i| build(nodes.client(i).backups(1)).with_limit(Duration::from_secs(30)))
        .collect();
    clients[0]
        .execute("CREATE TABLE hits (page BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
        .unwrap();
    // Each client counts 10 hits on each of pages 0 and 1: the first insert of a page and
    // every later update race the other clients'.
    std::thread::scope(|s| {
        for (i, client) in clients.iter().enumerate() {
            s.spawn(move || {
                for round in 0..10 {
                    for page in 0..2 {
                        client
                            .execute(&format!(
                                "INSERT INTO hits VALUES ({page}, 1) \
                                 ON CONFLICT (page) DO UPDATE SET n = hits.n + excluded.n"
                            ))
                            .unwrap_or_else(|e| panic!("client {i} round {round}: {e}"));
                    }
                }
            });
        }
    });
    let check = build(nodes.client(9).backups(1));
    assert_eq!(
        rows(&check, "SELECT page, n FROM hits ORDER BY page", &[]),
        vec![
            vec![Value::Int(0), Value::Int(30)],
            vec![Value::Int(1), Value::Int(30)]
        ]
    );
}

#[test]
fn a_client_whose_catalog_is_behind_checks_its_writes_by_the_newest_schema() {
    let nodes = Nodes::start("stale", 3);
    let a = build(nodes.client(0));
    let b = build(nodes.client(1));
    a.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, name VARCHAR)")
        .unwrap();
    b.execute("INSERT INTO p VALUES (1, 'x'), (2, 'y')")
        .unwrap();
    // A declares a unique index and a table referencing p; B has not heard of either.
    a.execute("CREATE UNIQUE INDEX p_name ON p (name)").unwrap();
    a.execute("CREATE TABLE c (id BIGINT PRIMARY KEY, p_id BIGINT REFERENCES p)")
        .unwrap();
    a.execute("INSERT INTO c VALUES (10, 1)").unwrap();
    // B's writes are refused by the nodes until B plans them on the newest schema: its
    // duplicate name and its delete of a referenced row fail as A's would.
    match b.execute("INSERT INTO p VALUES (3, 'x')") {
        Err(weir_cli::Error::DuplicateUnique { .. }) => {}
        other => panic!("expected the unique index to refuse the row, got {other:?}"),
    }
    match b.execute("DELETE FROM p WHERE id = 1") {
        Err(weir_cli::Error::ForeignKey { constraint, .. }) => {
            assert_eq!(constraint, "c_p_id_fkey")
        }
        other => panic!("expected c's key to stop the delete, got {other:?}"),
    }
    assert_eq!(
        rows(&a, "SELECT id, name FROM p ORDER BY id", &[]),
        vec![
            vec![Value::Int(1), Value::Str("x".into())],
            vec![Value::Int(2), Value::Str("y".into())]
        ]
    );
    // What the schema allows still goes, first time.
    assert_eq!(b.execute("DELETE FROM p WHERE id = 2").unwrap(), 1);
}

#[test]
fn alter_table_renames_a_column_for_every_client_and_refuses_what_would_rewrite_the_rows() {
    let nodes = Nodes::start("alter", 3);
    let first = build(nodes.client(0));
    first
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)")
        .unwrap();
    first
        .execute("INSERT INTO t VALUES (1, 10), (2, 20)")
        .unwrap();
    let second = build(nodes.client(1));
    first
        .execute("ALTER TABLE t RENAME COLUMN x TO amount")
        .unwrap();
    first
        .execute("ALTER TABLE t ALTER COLUMN amount SET DEFAULT 7")
        .unwrap();
    // The second client, connected before the change, inserts under the new name and takes
    // the new default.
    second.execute("INSERT INTO t (id) VALUES (3)").unwrap();
    assert_eq!(
        rows(&first, "SELECT id, amount FROM t ORDER BY id", &[]),
        vec![
            vec![Value::Int(1), Value::Int(10)],
            vec![Value::Int(2), Value::Int(20)],
            vec![Value::Int(3), Value::Int(7)],
        ]
    );
    let err = first
        .execute("ALTER TABLE t ADD COLUMN y BIGINT")
        .unwrap_err();
    assert!(err.to_string().contains("other processes"), "{err}");
    // Refused, not half made: both clients read the table as it was.
    assert_eq!(
        rows(&second, "SELECT SUM(amount) FROM t", &[]),
        vec![vec![Value::Int(37)]]
    );
}

#[test]
fn nextval_hands_each_value_out_once_to_clients_of_node_processes() {
    let nodes = Nodes::start("sequences", 3);
    let first = build(nodes.client(0));
    let second = build(nodes.client(1));
    // Made by one client, called by another that connected before it was made.
    first.execute("CREATE SEQUENCE s INCREMENT BY 10").unwrap();
    let next = |c: &TestCluster| match rows(c, "SELECT nextval('s')", &[])[0][0] {
        Value::Int(v) => v,
        ref other => panic!("nextval gave {other:?}"),
    };
    let mut handed = Vec::new();
    for _ in 0..20 {
        handed.push(next(&first));
        handed.push(next(&second));
    }
    let distinct: std::collections::BTreeSet<i64> = handed.iter().copied().collect();
    assert_eq!(distinct.len(), handed.len(), "a value was handed out twice");
    assert!(handed.iter().all(|v| v % 10 == 1), "{handed:?}");
    // setval by one client is what a client that connects later starts from.
    first.query("SELECT setval('s', 5001)", &[]).unwrap();
    let third = build(nodes.client(2));
    assert_eq!(next(&third), 5011);
    // So is ALTER SEQUENCE, through the nodes' catalog log.
    first
        .execute("ALTER SEQUENCE s RESTART WITH 9000 INCREMENT BY 2")
        .unwrap();
    assert_eq!(next(&build(nodes.client(4))), 9000);
    // The first client's block went with the change: its next value is a new one, 2 apart.
    let v = next(&first);
    assert!(v > 9000 && (v - 9000) % 2 == 0, "{v}");
    second.execute("DROP SEQUENCE s").unwrap();
    let err = build(nodes.client(3))
        .query("SELECT nextval('s')", &[])
        .unwrap_err();
    assert!(err.to_string().contains("unknown sequence 's'"), "{err}");
}
