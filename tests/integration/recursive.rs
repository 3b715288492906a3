//! `WITH RECURSIVE` on a cluster: the same answers on one node and on several (the step's
//! tables spread over the nodes and gathered to the recursive union), answers arithmetic
//! checks on a deeper tree, the iteration limit as a builder setting, and after a recursive
//! query finishes or fails (the limit, memory refused) its actors stop and its memory returns
//! to zero.

use crate::common;

use common::{assert_idle, cluster, TestCluster};
use weir::{Batch, Cluster, Column, Error, Value};

/// `tree (id, parent)` with `n` nodes: node `i > 0` hangs under `(i - 1) / 2`, a binary tree.
fn load_tree(c: &Cluster, n: i64) {
    c.execute("CREATE TABLE tree (id BIGINT PRIMARY KEY, parent BIGINT)")
        .unwrap();
    c.load(
        "tree",
        Batch::try_new(vec![
            Column::from_i64((0..n).collect()),
            Column::from_values(
                weir::DataType::Int64,
                &(0..n)
                    .map(|i| {
                        if i == 0 {
                            Value::Null
                        } else {
                            Value::Int((i - 1) / 2)
                        }
                    })
                    .collect::<Vec<_>>(),
            )
            .unwrap(),
        ])
        .unwrap(),
    )
    .unwrap();
}

const QUERIES: &[&str] = &[
    // Depth of every node, from the root down.
    "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM tree WHERE parent IS NULL \
     UNION ALL SELECT t.id, d.depth + 1 FROM tree t JOIN d ON t.parent = d.id) \
     SELECT depth, COUNT(*) FROM d GROUP BY depth ORDER BY depth",
    // The ancestors of one node, from the node up.
    "WITH RECURSIVE up(id) AS (SELECT 1000 UNION SELECT t.parent FROM tree t JOIN up ON t.id = up.id \
     WHERE t.parent IS NOT NULL) SELECT id FROM up ORDER BY id",
    // The recursive query joined with the table again, outside it.
    "WITH RECURSIVE sub(id) AS (SELECT 3 UNION ALL SELECT t.id FROM tree t, sub WHERE t.parent = sub.id) \
     SELECT COUNT(*), SUM(t.parent) FROM sub JOIN tree t ON t.id = sub.id",
];

#[test]
fn one_node_and_four_give_the_same_answers() {
    let one = cluster(1);
    let four = cluster(4);
    for c in [&one, &four] {
        load_tree(c, 2047);
    }
    for sql in QUERIES {
        let a = one.query(sql, &[]).unwrap().rows();
        let b = four.query(sql, &[]).unwrap().rows();
        assert!(!a.is_empty(), "{sql}");
        assert_eq!(a, b, "{sql}");
    }
    // A full binary tree of 2047 nodes has 11 levels of 2^d nodes.
    let levels = common::ints(&four.query(QUERIES[0], &[]).unwrap().rows());
    let want: Vec<Vec<i64>> = (0..11).map(|d| vec![d, 1 << d]).collect();
    assert_eq!(levels, want);
    // 1000's ancestors: 499, 249, 124, 61, 30, 14, 6, 2, 0.
    let up = common::ints(&four.query(QUERIES[1], &[]).unwrap().rows());
    let want: Vec<Vec<i64>> = [0, 2, 6, 14, 30, 61, 124, 249, 499, 1000]
        .iter()
        .map(|&i| vec![i])
        .collect();
    assert_eq!(up, want);
    assert_idle(&one);
    assert_idle(&four);
}

#[test]
fn the_iteration_limit_is_a_setting_and_an_error_naming_the_query() {
    let c = TestCluster::new(
        common::cluster_builder()
            .nodes(2)
            .max_recursion(50)
            .build()
            .unwrap(),
    );
    let count = |to: i64| {
        c.query(
            &format!(
                "WITH RECURSIVE steps(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM steps WHERE n < {to}) \
                 SELECT MAX(n) FROM steps"
            ),
            &[],
        )
    };
    assert_eq!(count(51).unwrap().rows(), vec![vec![Value::Int(51)]]);
    let err = count(52).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("recursive query \"steps\"") && text.contains("50 iterations"),
        "{err:?}"
    );
    assert_idle(&c);
}

/// What a recursive query holds is accounted on its node: one that outgrows the node's
/// memory fails and gives every byte back.
#[test]
fn a_recursion_that_outgrows_its_nodes_memory_fails_and_returns_it() {
    let c = TestCluster::new(
        common::cluster_builder()
            .nodes(2)
            .node_memory(4 << 20)
            .query_timeout(std::time::Duration::from_secs(5))
            .build()
            .unwrap(),
    )
    .with_limit(std::time::Duration::from_secs(30));
    // Under UNION every row is remembered: rows of a growing text, past 4 MiB long before the end.
    let err = c
        .query(
            "WITH RECURSIVE big(n, s) AS (SELECT 1, repeat('x', 1000) \
             UNION SELECT n + 1, s || 'y' FROM big WHERE n < 5000) \
             SELECT COUNT(*) FROM big",
            &[],
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout(_) | Error::OutOfMemory(_) | Error::Killed(_)
        ),
        "{err:?}"
    );
    assert_idle(&c);
}
