//! Hostile bytes: every message type that carries a batch, a column, a plan, an expression or a
//! join key filter,
//! forged (truncated, with an oversized length, with an inconsistent batch, with an
//! expression nested 100,000 deep, with a layout or partition map out of range) and sent to a
//! node through `Network::send_raw` while a query runs. Each is refused at decode and counted
//! (`NodeStats::decode_errors`); the query running meanwhile finishes with its answer, the
//! node goes on answering and writing, no row is lost, and the cluster ends idle.
//!
//! A forged message is a real one, encoded, with one part replaced: a marker (a batch, an
//! expression, a partition map) is encoded in place and its bytes swapped for forged ones, so
//! each case changes exactly one thing a peer could lie about.

use crate::common;

use common::{assert_idle, run_bounded, TestCluster, QUERY_LIMIT};
use std::time::Duration;
use weir::operators::kernels::key_filter::KeyFilter;
use weir::operators::plan::Distribution;
use weir::operators::{Bitmap, ColumnData, Expr, PhysicalPlan};
use weir::runtime::wire::codec;
use weir::runtime::wire::messages::{
    BatchFilter, BatchMessage, NetMessage, OutputTarget, PartitionInstall, PartitionRows,
    PartitionWrite, PlanPayload, Rewrite, StartRequest, TableLayout, WritePrepare,
};
use weir::runtime::wire::partition_map::PartitionMap;
use weir::{Batch, Cluster, Column, DataType, Field, Schema, Value};

const ROWS: i64 = 20_000;

fn cluster() -> TestCluster {
    let c = Cluster::builder()
        .nodes(3)
        .partitions(32)
        .batch_size(256)
        .query_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, v BIGINT)")
        .unwrap();
    let names: Vec<String> = (0..ROWS).map(|i| format!("n{}", i % 97)).collect();
    c.load(
        "t",
        Batch::try_new(vec![
            Column::from_i64((0..ROWS).collect()),
            Column::from_strs(&names),
            Column::from_i64((0..ROWS).map(|i| i * 2).collect()),
        ])
        .unwrap(),
    )
    .unwrap();
    TestCluster::new(c)
}

fn decode_errors(c: &Cluster) -> u64 {
    c.stats().nodes.iter().map(|n| n.decode_errors).sum()
}

fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    codec::encode(v).unwrap()
}

/// `whole` with the one occurrence of `part` replaced by `with`.
fn splice(whole: &[u8], part: &[u8], with: &[u8]) -> Vec<u8> {
    let at: Vec<usize> = (0..=whole.len() - part.len())
        .filter(|&i| whole[i..i + part.len()] == *part)
        .collect();
    assert_eq!(at.len(), 1, "the marker occurs once");
    let at = at[0];
    [&whole[..at], with, &whole[at + part.len()..]].concat()
}

/// The batch every forged batch takes the place of: one BIGINT column holding a value found
/// nowhere else in a message.
fn marker_batch() -> Batch {
    Batch::try_new(vec![Column::from_i64(vec![0x5EED_5EED_5EED_5EED])]).unwrap()
}

/// Forged batches, each breaking one invariant, as `(what, bytes)`.
fn forged_batches() -> Vec<(&'static str, Vec<u8>)> {
    let with_last_byte = |b: Batch, last: u8| {
        let mut bytes = encode(&b);
        *bytes.last_mut().unwrap() = last;
        bytes
    };
    let column = |data, validity| Batch::try_new(vec![Column { data, validity }]).unwrap();
    vec![
        // The WritePrepare: a text column with offsets [0] in a batch of one row.
        (
            "text offsets [0] with one row",
            with_last_byte(
                Batch::try_new(vec![Column::from_strs::<&str>(&[])]).unwrap(),
                1,
            ),
        ),
        (
            "a row count that disagrees with its column",
            with_last_byte(
                Batch::try_new(vec![Column::from_i64(vec![1, 2, 3])]).unwrap(),
                2,
            ),
        ),
        (
            "a validity bitmap too short",
            encode(&column(
                ColumnData::Int64(vec![1, 2, 3]),
                Some(Bitmap::from_bools(&[true])),
            )),
        ),
        (
            "text offsets past the bytes",
            encode(&column(
                ColumnData::Utf8 {
                    offsets: vec![0, 9],
                    bytes: b"ab".to_vec(),
                },
                None,
            )),
        ),
        (
            "text offsets that decrease",
            encode(&column(
                ColumnData::Utf8 {
                    offsets: vec![0, 2, 1, 2],
                    bytes: b"ab".to_vec(),
                },
                None,
            )),
        ),
        (
            "a decimal of precision 0",
            encode(&column(
                ColumnData::Decimal {
                    values: vec![1],
                    precision: 0,
                    scale: 0,
                },
                None,
            )),
        ),
        // One column, BIGINT, whose run of bytes claims 2^60 bytes.
        (
            "an oversized length",
            [&[1u8, 0, 253][..], &(1u64 << 60).to_le_bytes(), &[0; 16]].concat(),
        ),
    ]
}

/// `msg` encoded with its marker batch replaced by each forged batch, and truncated.
fn with_forged_batches(msg: &NetMessage) -> Vec<(String, Vec<u8>)> {
    let whole = encode(msg);
    let marker = encode(&marker_batch());
    let mut out: Vec<(String, Vec<u8>)> = forged_batches()
        .into_iter()
        .map(|(what, bytes)| {
            (
                format!("{:?} with {what}", msg.kind()),
                splice(&whole, &marker, &bytes),
            )
        })
        .collect();
    out.push((
        format!("{:?} truncated", msg.kind()),
        whole[..whole.len() / 2].to_vec(),
    ));
    out
}

fn layout() -> TableLayout {
    TableLayout {
        table: "t".into(),
        schema: Schema::new(vec![Field::new("id", DataType::Int64)]),
        primary_key: vec![0],
        indexed: vec![],
    }
}

/// A start request whose plan filters constant rows by `predicate`, with `params` and
/// `partitions`.
fn start_request(
    predicate: Expr,
    params: Vec<Value>,
    partitions: Option<PartitionMap>,
) -> NetMessage {
    let plan = PhysicalPlan::Filter {
        input: Box::new(PhysicalPlan::Values {
            schema: Schema::new(vec![Field::new("b", DataType::Boolean)]),
            rows: vec![vec![Value::Bool(true)]],
        }),
        predicate,
    };
    NetMessage::QueryStartRequest(Box::new(StartRequest {
        query: u64::MAX - 99,
        fragment: 1,
        initiator: 1,
        plan: PlanPayload::Full {
            key: 0x0BAD,
            plan: Box::new(plan),
        },
        params,
        output: Some(OutputTarget {
            exchange: 0,
            distribution: Distribution::Gather,
            targets: vec![1],
        }),
        inputs: vec![],
        partitions,
        fragments_on_node: 1,
        batch_size: 256,
        window: 4,
        window_bytes: 1 << 20,
        timeout_ms: 1_000,
        catalog_epoch: 0,
        analyze: false,
    }))
}

/// Every forged message, as `(what, encoded message)`.
fn forgeries() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // Batches, wherever a message carries one.
    let m = marker_batch;
    let write = |insert: Batch, delete: Option<Batch>, rewrite: Option<Rewrite>| {
        NetMessage::WritePrepare(Box::new(WritePrepare {
            write: u64::MAX - 5,
            layout: layout(),
            parts: vec![PartitionWrite {
                partition: 0,
                version: 1,
                delete,
                insert,
            }],
            rewrite,
            commit: false,
            piece: 0,
            pieces: 1,
            catalog_epoch: 0,
        }))
    };
    let empty = || Batch::empty(&[DataType::Int64]);
    let carriers = vec![
        NetMessage::QueryBatch(BatchMessage {
            query: u64::MAX - 98,
            fragment: 1,
            exchange: 0,
            batch_id: 0,
            last: true,
            rows: Some(m()),
        }),
        write(m(), None, None),
        write(empty(), Some(m()), None),
        write(
            empty(),
            None,
            Some(Rewrite {
                old: m(),
                new: None,
            }),
        ),
        NetMessage::PartitionRows(Box::new(PartitionRows {
            request: u64::MAX - 4,
            version: 1,
            indexed: vec![],
            piece: 0,
            last: true,
            rows: vec![m()],
            error: None,
        })),
        NetMessage::PartitionInstall(Box::new(PartitionInstall {
            request: u64::MAX - 3,
            layout: layout(),
            partition: 0,
            version: 1,
            piece: 0,
            last: true,
            rows: vec![m()],
        })),
    ];
    for msg in &carriers {
        // The message as it is decodes: only the forged part makes it fail.
        codec::decode::<NetMessage>(&encode(msg)).expect("the unforged message decodes");
        out.extend(with_forged_batches(msg));
    }
    // A layout naming a column the table does not have, in a write and an install.
    let mut bad = layout();
    bad.primary_key = vec![9];
    let install = NetMessage::PartitionInstall(Box::new(PartitionInstall {
        request: u64::MAX - 2,
        layout: bad.clone(),
        partition: 0,
        version: 1,
        piece: 0,
        last: true,
        rows: vec![],
    }));
    out.push((
        "PartitionInstall with a key column out of range".into(),
        encode(&install),
    ));
    let prepare = NetMessage::WritePrepare(Box::new(WritePrepare {
        write: u64::MAX - 6,
        layout: bad,
        parts: vec![],
        rewrite: None,
        commit: false,
        piece: 0,
        pieces: 1,
        catalog_epoch: 0,
    }));
    out.push((
        "WritePrepare with a key column out of range".into(),
        encode(&prepare),
    ));
    // Start requests: an expression 100,000 levels deep, a parameter and a type out of range,
    // a partition map that claims 4 billion partitions.
    let leaf = Expr::Column(0);
    let marker = Expr::Literal(Value::Int(0x5EED_5EED_5EED_5EED));
    let not = encode(&Expr::Not(Box::new(leaf.clone())));
    let not_prefix = &not[..not.len() - encode(&leaf).len()];
    let deep = [not_prefix.repeat(100_000), encode(&leaf)].concat();
    let start = start_request(marker.clone(), vec![], None);
    codec::decode::<NetMessage>(&encode(&start)).expect("the unforged request decodes");
    out.push((
        "QueryStartRequest with an expression 100,000 deep".into(),
        splice(&encode(&start), &encode(&marker), &deep),
    ));
    let bad_param = start_request(Expr::Column(0), vec![Value::Decimal(1, 99)], None);
    out.push((
        "QueryStartRequest with a decimal of scale 99".into(),
        encode(&bad_param),
    ));
    let mut bad_type = start_request(Expr::Column(0), vec![], None);
    if let NetMessage::QueryStartRequest(req) = &mut bad_type {
        if let PlanPayload::Full { plan, .. } = &mut req.plan {
            if let PhysicalPlan::Filter { input, .. } = plan.as_mut() {
                **input = PhysicalPlan::Values {
                    schema: Schema::new(vec![Field::new(
                        "d",
                        DataType::Decimal {
                            precision: 99,
                            scale: 2,
                        },
                    )]),
                    rows: vec![],
                };
            }
        }
    }
    out.push((
        "QueryStartRequest with a DECIMAL(99, 2)".into(),
        encode(&bad_type),
    ));
    #[derive(serde::Serialize)]
    struct RawMap {
        nodes: Vec<u32>,
        partitions: u32,
        bits: u8,
        packed: Vec<u64>,
    }
    let map = PartitionMap::from_owners(&[Some(0)]);
    let mapped = start_request(Expr::Column(0), vec![], Some(map.clone()));
    let huge = RawMap {
        nodes: vec![0],
        partitions: u32::MAX,
        bits: 1,
        packed: vec![1],
    };
    out.push((
        "QueryStartRequest with a map of 4 billion partitions".into(),
        splice(&encode(&mapped), &encode(&map), &encode(&huge)),
    ));
    out.push((
        "QueryStartRequest truncated".into(),
        encode(&mapped)[..20].to_vec(),
    ));
    // A join key filter whose bits are not a power of two of words, or of no key type.
    #[derive(serde::Serialize)]
    struct RawFilter {
        types: Vec<DataType>,
        words: Vec<u64>,
        keys: u64,
    }
    let filter = KeyFilter::of_hashes(vec![DataType::Int64], &[0x5EED]);
    let real = NetMessage::QueryBatchFilter(Box::new(BatchFilter {
        query: u64::MAX - 97,
        exchange: 0,
        filter: filter.clone(),
        keys: vec![Expr::Column(0)],
    }));
    for (what, forged) in [
        (
            "three words",
            RawFilter {
                types: vec![DataType::Int64],
                words: vec![u64::MAX; 3],
                keys: 1,
            },
        ),
        (
            "no key type",
            RawFilter {
                types: vec![],
                words: vec![u64::MAX],
                keys: 1,
            },
        ),
    ] {
        out.push((
            format!("QueryBatchFilter with a filter of {what}"),
            splice(&encode(&real), &encode(&filter), &encode(&forged)),
        ));
    }
    out
}

#[test]
fn forged_messages_of_every_type_are_refused_and_counted_while_a_query_runs() {
    let c = cluster();
    let forgeries = forgeries();
    assert_eq!(forgeries.len(), 57, "docs/replication.md counts them");
    for (what, bytes) in &forgeries {
        assert!(
            codec::decode::<NetMessage>(bytes).is_err(),
            "{what} decodes"
        );
    }
    // A query in flight: its first batch read, the rest read after the forgeries.
    let mut stream = c.query_stream("SELECT id, name, v FROM t", &[]).unwrap();
    let first = stream.next().unwrap().unwrap();
    let mut rows = first.num_rows() as i64;
    let before = decode_errors(&c);
    let net = c.network();
    for (i, (_, bytes)) in forgeries.iter().enumerate() {
        // To every data node in turn, as if from another.
        let to = (i % 3) as u32;
        net.send_raw((to + 1) % 3, to, codec::seal(bytes.clone()));
    }
    let expected = before + forgeries.len() as u64;
    let shared = c.shared();
    run_bounded("every forgery counted", QUERY_LIMIT, move || {
        while decode_errors(&shared) < expected {
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    assert_eq!(
        decode_errors(&c),
        expected,
        "each forgery is refused once: {:?}",
        forgeries.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for batch in stream {
        rows += batch.unwrap().num_rows() as i64;
    }
    assert_eq!(
        rows, ROWS,
        "the query running meanwhile finished with every row"
    );
    assert!(c.stats().nodes.iter().all(|n| n.up));
    // The nodes still answer and write; nothing was lost or added.
    let sum = |c: &TestCluster| {
        c.query("SELECT COUNT(*), SUM(v) FROM t", &[])
            .unwrap()
            .rows()
    };
    let want = |n: i64| vec![vec![Value::Int(n), Value::Int((0..n).map(|i| i * 2).sum())]];
    assert_eq!(sum(&c), want(ROWS));
    c.execute(&format!("INSERT INTO t VALUES ({ROWS}, 'x', {})", ROWS * 2))
        .unwrap();
    assert_eq!(sum(&c), want(ROWS + 1));
    let r = c
        .query("SELECT name FROM t WHERE id = ?", &[Value::Int(ROWS)])
        .unwrap();
    assert_eq!(r.rows(), vec![vec![Value::from("x")]]);
    assert_idle(&c);
}
