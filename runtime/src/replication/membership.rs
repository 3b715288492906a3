//! What a node of a cluster of processes knows beyond its own partitions: how to reach its
//! peers, the cluster's catalog as the last client sent it, and (on a client) where the
//! answers to its catalog requests and resyncs ([`crate::replication::resync`]) go.
//!
//! In one process the catalog lives only on the client and every node sees every other; over
//! TCP a data node learns its peers' addresses from a client's
//! [`Join`](crate::wire::messages::Join) and keeps a copy of the catalog ([`CatalogPut`]) so that a
//! client that connects later can fetch it ([`CatalogRequest`](crate::wire::messages::CatalogRequest),
//! [`CatalogReply`]). The node actor hands these messages here.

use crate::error::Result;
use crate::node::state::NodeShared;
use crate::node::storage::{Change, NodeStorage};
use crate::replication::resync::ResyncReplies;
use crate::wire::codec;
use crate::wire::ids::NodeId;
use crate::wire::messages::{CatalogBytes, CatalogPut, CatalogReply, TableVersions};
use crossbeam_channel::Receiver;
use std::net::SocketAddr;
use std::sync::Mutex;
use weir_planner::{CatalogSnapshot, TableDef};

/// How a node connects to a peer at an address (a data node's TCP endpoint).
pub type Connect = Box<dyn Fn(NodeId, SocketAddr) + Send + Sync>;

/// The peers a node is connected to now.
pub type PeersUp = Box<dyn Fn() -> Vec<NodeId> + Send + Sync>;

/// A node's view of the cluster of processes it belongs to (see the module comment).
#[derive(Default)]
pub struct Membership {
    connect: Option<Connect>,
    peers_up: Option<PeersUp>,
    catalog: Mutex<Option<(u64, CatalogSnapshot)>>,
    replies: crate::replication::waiters::Waiters<CatalogReply>,
    resyncs: ResyncReplies,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("connects", &self.connect.is_some())
            .finish_non_exhaustive()
    }
}

impl Membership {
    /// A data node's membership: it reaches its peers with `connect`, and `peers_up` tells
    /// which it is connected to.
    pub fn data_node(connect: Connect, peers_up: PeersUp) -> Self {
        Membership {
            connect: Some(connect),
            peers_up: Some(peers_up),
            ..Default::default()
        }
    }

    /// Connects to `peer` at `addr` (text, as sent); false when the address does not parse
    /// or this node does not connect to peers (a client).
    pub fn add_peer(&self, peer: NodeId, addr: &str) -> bool {
        match (&self.connect, addr.parse::<SocketAddr>()) {
            (Some(connect), Ok(addr)) => {
                connect(peer, addr);
                true
            }
            _ => false,
        }
    }

    /// Takes back the catalog copy node `shared` recovered from its data directory.
    pub fn restore(&self, shared: &NodeShared) {
        let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
        if let Some((epoch, bytes)) = storage.catalog() {
            match decode_catalog(bytes) {
                Ok(catalog) => {
                    *self.catalog.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((*epoch, catalog))
                }
                Err(e) => tracing::warn!("{}: its catalog copy does not decode: {e}", shared.name),
            }
        }
    }

    /// Keeps `put`'s catalog if it is at least as new as the copy held, and makes what it
    /// changes to node `shared`'s storage: tables no longer in the catalog are dropped,
    /// secondary indexes it names are built, and a new schema is kept in the node's storage
    /// (logged, on a node with a data directory; a catalog that changed only its row counts is
    /// held in memory). Returns whether it was kept.
    pub fn put_catalog(&self, put: CatalogPut, shared: &NodeShared) -> bool {
        let mut held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_ref().is_some_and(|(epoch, _)| *epoch > put.epoch) {
            return false;
        }
        let catalog = match decode_catalog(&put.catalog) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("refused a catalog that does not decode: {e}");
                return false;
            }
        };
        let mut changes = Vec::new();
        {
            let storage = shared.storage.read().unwrap_or_else(|e| e.into_inner());
            let names: Vec<String> = catalog
                .tables
                .iter()
                .map(|t| t.name.to_lowercase())
                .collect();
            for table in storage.tables.keys().filter(|t| !names.contains(t)) {
                changes.push(Change::DropTable {
                    table: table.clone(),
                });
            }
            for def in &catalog.tables {
                let table = def.name.to_lowercase();
                if let Some(store) = storage.tables.get(&table) {
                    for index in &def.indexes {
                        if let Some(field) = def.schema.fields.get(index.column) {
                            if !store.indexed_columns().contains(&index.column) {
                                changes.push(Change::AddIndex {
                                    table: table.clone(),
                                    column: index.column,
                                    data_type: field.data_type,
                                });
                            }
                        }
                    }
                }
            }
        }
        let schema_changed = held
            .as_ref()
            .is_none_or(|(_, c)| c.version != catalog.version);
        if schema_changed {
            changes.push(Change::Catalog {
                epoch: put.epoch,
                catalog: put.catalog,
            });
        }
        for change in changes {
            if let Err(e) = shared.change(change) {
                tracing::warn!("{}: a catalog change was not made: {e}", shared.name);
            }
        }
        *held = Some((put.epoch, catalog));
        true
    }

    /// The definition of `table` (any case) in the catalog copy held, if any.
    pub fn table(&self, table: &str) -> Option<TableDef> {
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        held.as_ref()?
            .1
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(table))
            .cloned()
    }

    /// Where the answers to this client's resyncs go.
    pub fn resyncs(&self) -> &ResyncReplies {
        &self.resyncs
    }

    /// The answer to catalog request `request`: the copy held and the versions of the
    /// partition copies in `storage`.
    pub fn reply(&self, request: u64, storage: &NodeStorage) -> CatalogReply {
        let held = self.catalog.lock().unwrap_or_else(|e| e.into_inner());
        let (epoch, catalog) = match held.as_ref() {
            Some((e, c)) => (*e, Some(encode_catalog(c))),
            None => (0, None),
        };
        let mut versions: Vec<TableVersions> = storage
            .versions()
            .map(|(table, parts)| {
                let mut partitions: Vec<(u32, u64)> = parts.iter().map(|(p, v)| (*p, *v)).collect();
                partitions.sort_unstable();
                TableVersions {
                    table: table.to_string(),
                    partitions,
                }
            })
            .collect();
        versions.sort_by(|a, b| a.table.cmp(&b.table));
        CatalogReply {
            request,
            epoch,
            catalog,
            versions,
            peers: self.peers_up.as_ref().map(|f| f()).unwrap_or_default(),
        }
    }

    /// Waits for the replies to catalog request `request` (a client).
    pub fn expect(&self, request: u64) -> Receiver<(NodeId, CatalogReply)> {
        self.replies.register(request)
    }

    /// Stops waiting for replies to `request`.
    pub fn forget(&self, request: u64) {
        self.replies.unregister(request);
    }

    /// Hands `reply` from node `from` to whoever waits for it; false when nobody does.
    pub fn deliver(&self, from: NodeId, reply: CatalogReply) -> bool {
        self.replies.deliver(reply.request, from, reply)
    }
}

/// The wire form of catalog `snapshot`.
pub fn encode_catalog(snapshot: &CatalogSnapshot) -> CatalogBytes {
    CatalogBytes(codec::encode(snapshot).unwrap_or_else(|e| {
        // Only a catalog beyond the codec's size limit gets here; its receivers refuse the
        // empty form as they would any catalog that does not decode.
        tracing::error!("cannot encode the catalog: {e}");
        Vec::new()
    }))
}

/// The catalog snapshot `bytes` encode, checked: every table's key, indexed and NOT NULL
/// columns are its columns, the key's distinct, and it has partitions (the planner indexes
/// a table's columns by these).
pub fn decode_catalog(bytes: &CatalogBytes) -> Result<CatalogSnapshot> {
    let snapshot: CatalogSnapshot = codec::decode(&bytes.0)?;
    for def in &snapshot.tables {
        let columns = def.schema.len();
        let named = def
            .primary_key
            .iter()
            .chain(def.indexes.iter().map(|i| &i.column))
            .chain(&def.not_null);
        let mut key = def.primary_key.clone();
        key.sort_unstable();
        if named.into_iter().any(|&c| c >= columns)
            || key.windows(2).any(|w| w[0] == w[1])
            || def.partitions == 0
        {
            return Err(crate::error::Error::Codec(format!(
                "the catalog's table {} is malformed (a key, index or NOT NULL column it does not have, a repeated key column, or no partitions)",
                def.name
            )));
        }
    }
    Ok(snapshot)
}

/// The message that publishes catalog `snapshot` as of `epoch`.
pub fn catalog_put(epoch: u64, snapshot: &CatalogSnapshot) -> CatalogPut {
    CatalogPut {
        epoch,
        catalog: encode_catalog(snapshot),
    }
}
