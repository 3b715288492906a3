//! A write to several tables, all or nothing: each table's share is a write of its own (its
//! own id, layout and versions), and all of them are prepared before any commits. A refusal
//! or timeout of any share aborts every share, so no table takes its part of a statement
//! whose other parts failed (a DELETE whose `ON DELETE CASCADE` reaches other tables is one
//! such statement). A single table's write goes through [`Coordinator::write`] and keeps its
//! one-phase path.

use super::writes::{first_writes, Coordinator, ReplicaBook, Routed};
use crate::error::Result;
use crate::wire::ids::NodeId;
use crate::wire::messages::{PartitionWrite, Rewrite, TableLayout, WriteReply};
use crossbeam_channel::Receiver;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// One table's share of a write to several tables.
pub struct TableWrite {
    /// The share's write id (each share has its own).
    pub id: u64,
    /// The table's layout.
    pub layout: TableLayout,
    /// The table's copies per partition, primary first.
    pub copies: Arc<Vec<Vec<NodeId>>>,
    /// The change to each partition (versions are set when written).
    pub parts: Vec<PartitionWrite>,
    /// For a table without a key, the rows it rewrites in every partition of `parts`.
    pub rewrite: Option<Rewrite>,
}

/// A share routed to its copies, with its replies' channel.
struct Share {
    id: u64,
    layout: TableLayout,
    copies: Arc<Vec<Vec<NodeId>>>,
    routed: Routed,
    rewrite: Option<Rewrite>,
    rx: Receiver<(NodeId, WriteReply)>,
}

impl Coordinator<'_> {
    /// Writes `writes` (one per table) as one: every share is prepared on its copies before
    /// any commits, and a refusal, a timeout or a partition without a prepared copy in any
    /// share aborts them all.
    pub fn write_together(&self, book: &mut ReplicaBook, writes: Vec<TableWrite>) -> Result<()> {
        if writes.len() == 1 {
            let w = writes.into_iter().next().expect("one write");
            return self.write(book, w.id, &w.layout, &w.copies, w.parts, w.rewrite);
        }
        let mut shares = Vec::with_capacity(writes.len());
        for w in writes {
            let routed = self.route(book, &w.layout.table, &w.copies, w.parts)?;
            shares.push(Share {
                id: w.id,
                layout: w.layout,
                copies: w.copies,
                routed,
                rewrite: w.rewrite,
                rx: self.replies.register(w.id),
            });
        }
        let ids: Vec<u64> = shares.iter().map(|s| s.id).collect();
        let result = self.run_together(book, shares);
        for id in ids {
            self.replies.unregister(id);
        }
        result
    }

    fn run_together(&self, book: &mut ReplicaBook, mut shares: Vec<Share>) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        // Cut before anything is sent: a share too large for a message fails the write whole.
        let mut pieces = Vec::with_capacity(shares.len());
        for s in &mut shares {
            let per_node = std::mem::take(&mut s.routed.per_node);
            let nodes: HashSet<NodeId> = per_node.keys().copied().collect();
            pieces.push((
                nodes,
                Self::pieces(per_node, self.piece_bytes, &s.layout.table)?,
            ));
        }
        let mut nodes = Vec::with_capacity(shares.len());
        for (s, (share_nodes, share_pieces)) in shares.iter().zip(pieces) {
            self.send_prepares(s.id, &s.layout, share_pieces, &s.rewrite, false);
            nodes.push(share_nodes);
        }
        let abort_all = || {
            for (s, n) in shares.iter().zip(&nodes) {
                self.abort(s.id, n);
            }
        };
        let mut prepared = Vec::with_capacity(shares.len());
        for (s, n) in shares.iter().zip(&nodes) {
            let table = s.layout.table.as_str();
            match self.votes(&s.rx, n, &s.routed.targets_of, &s.copies, table, deadline) {
                Ok(p) => prepared.push(p),
                Err(e) => {
                    abort_all();
                    return Err(e);
                }
            }
        }
        // Every copy of every share agreed: the first writes are recorded before any commits.
        for s in &shares {
            let firsts = first_writes(book, &s.layout.table, &s.routed.targets_of);
            if let Err(e) = self.record_first_writes(&s.layout.table, &firsts) {
                abort_all();
                return Err(e);
            }
        }
        for ((s, n), p) in shares.iter().zip(&nodes).zip(&prepared) {
            self.commit(s.id, n, p);
        }
        let deadline = Instant::now() + self.timeout;
        let mut result = Ok(());
        for (s, p) in shares.iter().zip(prepared) {
            let finished = self.finish(
                book,
                &s.layout,
                &s.routed.targets_of,
                &s.copies,
                &s.rx,
                p,
                false,
                deadline,
            );
            if result.is_ok() {
                result = finished;
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::breaker::{BreakerConfig, JoinMode};
    use crate::node::state::NodeShared;
    use crate::replication::writes::WriteReplies;
    use crate::wire::carrier::{Deliver, Inbox};
    use crate::wire::codec;
    use crate::wire::messages::{NetMessage, WritePhase, WriteRefusal};
    use crate::wire::network::Network;
    use std::sync::Mutex;
    use std::time::Duration;
    use weir_operators::{Batch, Column, DataType, Field, Schema};

    /// A data node that refuses every prepare of table `refused` (a full disk) and remembers
    /// what it was told to do with each write: `(write, "prepare" | "commit" | "abort")`.
    struct Node {
        id: NodeId,
        refused: &'static str,
        replies: Arc<WriteReplies>,
        heard: Arc<Mutex<Vec<(u64, &'static str)>>>,
    }

    impl Inbox for Node {
        fn deliver(&self, msg: Deliver) {
            let bytes = codec::unseal(&msg.bytes).expect("a sealed frame");
            let (write, phase, error) = match codec::decode::<NetMessage>(bytes).unwrap() {
                NetMessage::WritePrepare(m) => {
                    self.heard.lock().unwrap().push((m.write, "prepare"));
                    let error = (m.layout.table == self.refused).then(|| WriteRefusal::Disk {
                        node: format!("node-{}", self.id),
                        message: "no space left on device".into(),
                    });
                    (m.write, WritePhase::Prepare, error)
                }
                NetMessage::WriteCommit(m) => {
                    self.heard.lock().unwrap().push((m.write, "commit"));
                    (m.write, WritePhase::Commit, None)
                }
                NetMessage::WriteAbort(m) => {
                    self.heard.lock().unwrap().push((m.write, "abort"));
                    return;
                }
                _ => return,
            };
            self.replies.deliver(
                write,
                self.id,
                crate::wire::messages::WriteReply {
                    write,
                    phase,
                    error,
                },
            );
        }
        fn is_open(&self) -> bool {
            true
        }
        fn crash(&self) {}
    }

    fn share(id: u64, table: &str, copies: &Arc<Vec<Vec<NodeId>>>) -> TableWrite {
        TableWrite {
            id,
            layout: TableLayout {
                table: table.into(),
                schema: Schema::new(vec![Field::new("k", DataType::Int64)]),
                primary_key: vec![0],
                indexed: vec![],
            },
            copies: copies.clone(),
            parts: vec![PartitionWrite {
                partition: 0,
                version: 0,
                delete: None,
                insert: Batch::try_new(vec![Column::from_i64(vec![id as i64])]).unwrap(),
            }],
            rewrite: None,
        }
    }

    /// Runs writes `a` (id 1) and `b` (id 2) together on one copy of each (node 0) while
    /// node 0 refuses prepares of table `refused`; what node 0 heard and the book after.
    fn together(refused: &'static str) -> (Result<()>, Vec<(u64, &'static str)>, ReplicaBook) {
        let replies = Arc::new(WriteReplies::default());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let network = Network::new();
        for id in [0, 1] {
            let inbox = Node {
                id,
                refused,
                replies: replies.clone(),
                heard: heard.clone(),
            };
            network.attach(id, Some(Arc::new(inbox)));
        }
        let nodes: Vec<Arc<NodeShared>> = (0..2)
            .map(|id| {
                Arc::new(NodeShared::new(
                    id,
                    &format!("node-{id}"),
                    true,
                    1 << 20,
                    JoinMode::Guarded,
                    &BreakerConfig::default(),
                ))
            })
            .collect();
        let names: Vec<String> = (0..2).map(|i| format!("node-{i}")).collect();
        // Node 1 is the writer.
        let coordinator = Coordinator {
            network: &network,
            client: 1,
            nodes: &nodes,
            names: &names,
            replies: &replies,
            timeout: Duration::from_secs(10),
            piece_bytes: 1 << 20,
            catalog_epoch: 1,
            records: None,
        };
        let copies = Arc::new(vec![vec![0]]);
        let mut book = ReplicaBook::default();
        let result = coordinator.write_together(
            &mut book,
            vec![share(1, "a", &copies), share(2, "b", &copies)],
        );
        let heard = heard.lock().unwrap().clone();
        (result, heard, book)
    }

    #[test]
    fn every_share_is_prepared_before_any_commits() {
        let (result, heard, book) = together("none");
        assert!(result.is_ok(), "{result:?}");
        // Each share alone would have committed in one phase; together, both vote first.
        let last_prepare = heard.iter().rposition(|(_, what)| *what == "prepare");
        let first_commit = heard.iter().position(|(_, what)| *what == "commit");
        assert!(last_prepare < first_commit, "{heard:?}");
        assert_eq!(heard.iter().filter(|(_, w)| *w == "commit").count(), 2);
        assert_eq!((book.committed("a", 0), book.committed("b", 0)), (1, 1));
    }

    #[test]
    fn a_refused_share_aborts_the_others() {
        let (result, heard, book) = together("b");
        match result {
            Err(crate::error::Error::Disk { .. }) => {}
            other => panic!("expected the refusal of table b, got {other:?}"),
        }
        assert!(
            !heard.iter().any(|(_, what)| *what == "commit"),
            "{heard:?}"
        );
        assert!(heard.contains(&(1, "abort")), "{heard:?}");
        assert!(heard.contains(&(2, "abort")), "{heard:?}");
        assert_eq!((book.committed("a", 0), book.committed("b", 0)), (0, 0));
    }
}
