//! The client node of data nodes that run in other processes (`weir node`), reached over TCP
//! ([`ClusterBuilder::connect`]).
//!
//! The client runs only its own node actor and supervisor; the data nodes are known here by
//! stand-ins ([`NodeShared`]) whose `up` flag follows the TCP connection
//! ([`PeerEvent`]s), and whose storage, memory and actor figures stay empty: they are not seen
//! from here. Everything else (planning, placement, replicated writes, query actors, the lean
//! protocol and its counters) is the in-process code, its messages carried by a
//! [`TcpTransport`].
//!
//! ## Ids
//! Data node `i` is the node listening at the `i`-th address. The client's id is the number of
//! data nodes plus a slot below [`CLIENT_SLOTS`] (random unless
//! [`ClusterBuilder::client_slot`] pins it). Clients connected at once have distinct ids: a
//! data node keeps one connection per id and refuses a newcomer whose id a live connection
//! holds, so a client whose slot is taken is refused when it connects
//! ([`TcpTransport::refusal`]); one whose slot was drawn at random draws another, up to
//! [`SLOT_TRIES`] times. Query and write ids start at the client id times 2^48 plus a random
//! offset, so that two clients' ids never meet on a data node.
//!
//! ## Joining
//! Once connected, the client tells every data node where the others listen
//! ([`Join`]), waits until each reports a connection to every other
//! ([`CatalogReply::peers`]), and fetches the catalog and the copies' versions from them: the
//! catalog of the highest epoch the data nodes' catalog log
//! ([`crate::replication::catalog_log`]) has applied and, per partition, the highest version
//! of any copy as the committed one (copies behind it are stale and serve no reads). A schema
//! change is proposed to the log as a compare-and-set on the epoch the client's catalog came
//! from (`cluster/proposals.rs`): refused when another client changed the catalog first, the
//! client fetches it again and plans the statement again. A statement naming a table this
//! client does not know fetches the catalog again too. Row counts and row ids stay the
//! client's: they are hints for planning and placement, not part of the schema.
//!
//! ## Failures
//! A data node whose connection ends is marked down at once and its queries told
//! ([`NodeMsg::NodeCrashed`]): those that returned no rows yet run again on the copies, as in process.
//! When its connection comes back (its process restarted with the same id and address), the
//! client joins it again and fetches its versions before marking it up: copies it lost (a
//! restarted process holds nothing) are stale, so reads go to the copies that have the rows.
//! Still holding the catalog's write lock, the client then resyncs them
//! ([`crate::replication::resync`]): every stale copy on a live node is refreshed, by messages, from a
//! live copy at the committed version, and counts current again once its node installed it.
//! The same is done when the client connects and finds stale copies. A copy whose resync
//! fails (its source goes away, no answer in time) stays stale; the next rejoin tries again,
//! and so does the client by itself every 10 s while such a copy has a live current copy to
//! come from.

use super::builder::{ClusterBuilder, CLIENT_SLOTS};
use super::connection::{LostCopy, Remote};
use super::lost::{lost_copies, promote_in_doubt, ReportedCopy};
use super::system::NodeSystem;
use super::{Cluster, Inner, InnerParts};
use crate::dispatch::counters::NodeCounters;
use crate::dispatch::node_actor::NodeSetup;
use crate::error::{Error, Result};
use crate::exchange::router::Router;
use crate::memory::breaker::BreakerCounters;
use crate::memory::pool::Pools;
use crate::node::inbox::NodeMsg;
use crate::node::state::NodeShared;
use crate::replication::catalog_bytes::decode_catalog;
use crate::replication::membership::Membership;
use crate::replication::resync::{Resync, ResyncOutcome};
use crate::replication::writes::WriteReplies;
use crate::wire::framing::{Role, Tls};
use crate::wire::ids::NodeId;
use crate::wire::messages::TableLayout;
use crate::wire::messages::{CatalogReply, CatalogRequest, Join, NetMessage};
use crate::wire::network::Network;
use crate::wire::tcp::{Auth, PeerEvent, TcpConfig, TcpTransport};
use std::collections::{HashMap, HashSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use weir_planner::Catalog;

/// Longest the client waits for its connections, and for the data nodes' connections to each
/// other, when it starts.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Slots a client whose slot was not pinned tries before it gives up (each drawn at random
/// among those not tried yet).
pub const SLOT_TRIES: usize = 4;

/// Longest the client waits for the data nodes to answer a catalog request.
pub(super) const ASK_LIMIT: Duration = Duration::from_secs(5);

/// How long after the last resync attempt the client tries again by itself, when a stale copy
/// on a live data node has a live current copy to come from (a resync that failed, a copy
/// that missed a write its node refused).
const RESYNC_RETRY: Duration = Duration::from_secs(10);

/// How the client authenticates to the data nodes: the cluster's secret, or TLS with its
/// certificate (read and checked here: it must name `client.weir`).
fn auth(config: &ClusterBuilder) -> Result<Auth> {
    match (&config.secret, &config.tls) {
        (Some(_), Some(_)) => Err(Error::Invalid(
            "give the cluster's secret or TLS files, not both (TLS replaces the secret)".into(),
        )),
        (Some(secret), None) => Ok(Auth::Secret(secret.clone())),
        (None, Some(files)) => {
            let invalid = |e: crate::wire::framing::TlsError| Error::Invalid(e.to_string());
            let tls = Tls::load(files).map_err(invalid)?;
            tls.check_role(Role::Client).map_err(invalid)?;
            Ok(Auth::Tls(tls))
        }
        (None, None) => Err(Error::Connect(
            "connecting to data nodes needs the cluster's secret or TLS files".into(),
        )),
    }
}

fn resolve(addrs: &[String]) -> Result<Vec<SocketAddr>> {
    addrs
        .iter()
        .map(|a| {
            a.to_socket_addrs()
                .ok()
                .and_then(|mut it| it.next())
                .ok_or_else(|| Error::Connect(format!("cannot resolve {a:?}")))
        })
        .collect()
}

pub(super) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    rand::fill(&mut b[..]);
    u64::from_le_bytes(b)
}

fn stand_in(
    id: NodeId,
    name: String,
    is_data: bool,
    up: bool,
    config: &ClusterBuilder,
    spill: Option<Arc<weir_operators::spill::SpillSpace>>,
) -> Arc<NodeShared> {
    let mut node = NodeShared::new(
        id,
        &name,
        is_data,
        config.node_memory,
        config.join_mode,
        &config.breaker,
    );
    node.up.store(up, Ordering::SeqCst);
    node.spill = spill;
    node.join_filters = config.join_filters.into();
    Arc::new(node)
}

/// Why a client did not connect in one slot.
enum Unconnected {
    /// A data node holds a live connection with the client's id: another client has the slot.
    SlotInUse(String),
    /// Anything else.
    Failed(Error),
}

impl From<Error> for Unconnected {
    fn from(e: Error) -> Self {
        Unconnected::Failed(e)
    }
}

impl Cluster {
    /// Starts the client node and connects it to the data nodes at `config.connect`, in the
    /// pinned slot, or in a random one (another while a data node refuses it as taken, at
    /// most [`SLOT_TRIES`]).
    pub(super) fn connect_remote(config: ClusterBuilder) -> Result<Cluster> {
        let mut tried: Vec<u32> = Vec::new();
        loop {
            let slot = match config.client_slot {
                Some(slot) => slot,
                None => match config.slot_draws.get(tried.len()) {
                    Some(&slot) => slot,
                    None => loop {
                        let slot = (random_u64() % CLIENT_SLOTS as u64) as u32;
                        if !tried.contains(&slot) {
                            break slot;
                        }
                    },
                },
            };
            tried.push(slot);
            match Self::connect_in_slot(config.clone(), slot) {
                Ok(cluster) => return Ok(cluster),
                Err(Unconnected::Failed(e)) => return Err(e),
                Err(Unconnected::SlotInUse(why))
                    if config.client_slot.is_none() && tried.len() < SLOT_TRIES =>
                {
                    tracing::info!("{why}; trying another slot");
                }
                Err(Unconnected::SlotInUse(why)) if config.client_slot.is_some() => {
                    return Err(Error::Connect(format!(
                        "{why} (pin another slot with client_slot, or leave it unpinned)"
                    )))
                }
                Err(Unconnected::SlotInUse(why)) => {
                    return Err(Error::Connect(format!(
                        "no free client slot in {SLOT_TRIES} tries, the last: {why}"
                    )))
                }
            }
        }
    }

    /// Starts the client node in slot `slot` and connects it to the data nodes.
    fn connect_in_slot(
        mut config: ClusterBuilder,
        slot: u32,
    ) -> std::result::Result<Cluster, Unconnected> {
        let auth = auth(&config)?;
        if let Some((heartbeat, dead_after)) = config.peer_silence {
            if heartbeat.is_zero() || heartbeat >= dead_after {
                return Err(Error::Invalid(format!(
                    "peer_silence: the heartbeat ({heartbeat:?}) must be shorter than the \
                     silence after which a node is down ({dead_after:?}), and not zero"
                ))
                .into());
            }
        }
        let addrs = resolve(&config.connect)?;
        let n = addrs.len();
        config.nodes = n;
        let client = n as NodeId + slot;
        let total = client as usize + 1;
        let names: Vec<String> = (0..total)
            .map(|i| match i {
                i if i < n => format!("node-{i}"),
                i if i == client as usize => "client".to_string(),
                _ => String::new(),
            })
            .collect();
        // Ids between the data nodes and this client belong to other clients: one stand-in
        // that is never up holds their places.
        let absent = stand_in(NodeId::MAX, String::new(), false, false, &config, None);
        // The client runs the queries' last fragments (a final sort or aggregation): it
        // spills like a data node.
        let client_spill = config.spill_space("client")?;
        let nodes: Vec<Arc<NodeShared>> = (0..total)
            .map(|i| match i {
                i if i < n => stand_in(i as NodeId, names[i].clone(), true, false, &config, None),
                i if i == client as usize => stand_in(
                    client,
                    names[i].clone(),
                    false,
                    true,
                    &config,
                    client_spill.clone(),
                ),
                _ => absent.clone(),
            })
            .collect();
        let client_counters = Arc::new(NodeCounters::default());
        // Nodes of other processes count there: one set of zeros stands for them all.
        let elsewhere = Arc::new(NodeCounters::default());
        let mut counters: Vec<Arc<NodeCounters>> = vec![elsewhere; total];
        counters[client as usize] = client_counters.clone();
        let network = Network::new();
        let pools = Arc::new(Pools::default());
        let breaker = Arc::new(BreakerCounters::default());
        let write_replies = Arc::new(WriteReplies::default());
        let membership = Arc::new(Membership::default());
        let router = Arc::new(Router::new("client"));
        let setup = NodeSetup {
            shared: nodes[client as usize].clone(),
            network: network.clone(),
            pools: pools.clone(),
            protocol: config.protocol,
            counters: client_counters,
            router: router.clone(),
            breaker_config: config.breaker.clone(),
            breaker: breaker.clone(),
            seed: config.seed,
            fragment_cache: config.fragment_cache,
            write_replies: write_replies.clone(),
            membership: membership.clone(),
            max_value_bytes: config.max_value_bytes,
            prepared_write_ttl: config.prepared_write_ttl,
        };
        let system = NodeSystem::start("weir-client", 1, config.idle_spin, vec![setup])?;
        // The client dials the data nodes it was given until it closes.
        let mut tcp = TcpConfig::new(client, auth);
        tcp.dial_attempts = None;
        if let Some((heartbeat, dead_after)) = config.peer_silence {
            tcp.heartbeat_interval = heartbeat;
            tcp.dead_after = dead_after;
        }
        let transport = match TcpTransport::start(tcp, network.inbound(client)) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                system.stop();
                return Err(Error::Connect(format!("cannot start the TCP endpoint: {e}")).into());
            }
        };
        network.set_remote(transport.clone());
        for (i, a) in addrs.iter().enumerate() {
            transport.add_peer(i as NodeId, *a);
        }
        if let Err(e) = wait_connected(&transport, &addrs, config.backups, slot) {
            transport.close();
            system.stop();
            return Err(e);
        }
        let first_id = ((client as u64) << 48) | (random_u64() & ((1 << 47) - 1));
        let stop = Arc::new(AtomicBool::new(false));
        let events = transport.events();
        let cluster = Cluster {
            inner: Arc::new(Inner::new(InnerParts {
                client,
                local: 0,
                remote: Some(Remote {
                    transport,
                    membership,
                    addrs,
                    epoch: AtomicU64::new(0),
                    leader: AtomicU32::new(0),
                    stop: stop.clone(),
                    watcher: Mutex::new(None),
                    lost: Mutex::default(),
                    incarnations: Mutex::default(),
                    backups: AtomicUsize::new(config.backups),
                    log_index: AtomicU64::new(0),
                }),
                config,
                nodes,
                addrs: system.addrs,
                routers: vec![router],
                counters,
                arbiters: system.arbiters,
                names,
                network,
                pools,
                breaker,
                first_id,
                write_replies,
            })),
            system: Some((system.system, system.thread)),
            lock: None,
        };
        let live: Vec<NodeId> = (0..n as NodeId)
            .filter(|&i| cluster.remote().transport.is_up(i))
            .collect();
        cluster.join(&live)?;
        for &i in &live {
            cluster.inner.nodes[i as usize]
                .up
                .store(true, Ordering::SeqCst);
        }
        {
            // Copies left stale before this client came (a node restarted meanwhile: it takes
            // the catalog from the catalog log before its copies are refreshed).
            let catalog = cluster
                .inner
                .catalog
                .write()
                .unwrap_or_else(|e| e.into_inner());
            if cluster.inner.has_stale() {
                cluster.inner.wait_caught_up(&live, CONNECT_LIMIT);
                cluster.inner.resync(&catalog);
            }
        }
        let weak = Arc::downgrade(&cluster.inner);
        let watcher = std::thread::Builder::new()
            .name("weir-client-peers".into())
            .spawn(move || watch(weak, events, stop))
            .map_err(|e| Error::Invalid(format!("cannot start the connection watcher: {e}")))?;
        *cluster
            .remote()
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        Ok(cluster)
    }

    fn remote(&self) -> &Remote {
        self.inner.remote.as_ref().expect("a connected cluster")
    }

    /// The client's TCP endpoint, when connected to data nodes in other processes.
    pub fn transport(&self) -> Option<&Arc<TcpTransport>> {
        self.inner.remote.as_ref().map(Remote::transport)
    }

    /// Fetches the catalog and the copies' versions from the data nodes that are up, and
    /// takes them if they are newer than this client's (a connected cluster). Returns whether
    /// the catalog changed.
    pub(super) fn refresh_catalog(&self) -> Result<bool> {
        if self.inner.remote.is_none() {
            return Ok(false);
        }
        let live: Vec<NodeId> = (0..self.inner.config.nodes as NodeId)
            .filter(|&i| self.inner.nodes[i as usize].up.load(Ordering::SeqCst))
            .collect();
        let mut catalog = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let replies = self.inner.ask(&live, ASK_LIMIT);
        Ok(self.inner.learn(&mut catalog, &replies))
    }

    /// Tells data nodes `nodes` who their peers are, waits until they are connected to each
    /// other, and learns the catalog and versions from them.
    fn join(&self, nodes: &[NodeId]) -> Result<()> {
        let inner = &self.inner;
        // Whether the catalog log holds entries already decides whether a member without a
        // log may start one (see `Join::log_index`).
        let first = inner.ask(nodes, ASK_LIMIT.min(Duration::from_secs(1)));
        inner.note_log(&first);
        for &i in nodes {
            inner.send_join(i);
        }
        let deadline = Instant::now() + CONNECT_LIMIT;
        let mut proposed = HashSet::new();
        loop {
            let replies = inner.ask(nodes, ASK_LIMIT.min(CONNECT_LIMIT));
            // Every node answered, is connected to the others, and has applied the catalog
            // log as far as the most advanced one (a node that restarted without its data
            // learns from the log which of its tables it lost).
            let newest = replies.iter().map(|(_, r)| r.epoch).max().unwrap_or(0);
            let missing = nodes.iter().find(|&&i| {
                replies.iter().all(|(from, _)| *from != i)
                    || replies.iter().any(|(from, r)| {
                        *from == i
                            && (r.epoch < newest
                                || nodes.iter().any(|&j| j != i && !r.peers.contains(&j)))
                    })
            });
            // A node that started without its data has its start recorded first.
            let missing = match missing {
                None => inner
                    .record_starts(&replies, &mut proposed)?
                    .first()
                    .copied(),
                Some(&i) => Some(i),
            };
            match missing {
                None => {
                    let mut catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
                    inner.learn(&mut catalog, &replies);
                    return Ok(());
                }
                Some(i) if Instant::now() >= deadline => {
                    return Err(Error::Connect(format!(
                        "node-{i} at {} did not connect to the other data nodes (or catch up \
                         with their catalog log) within {CONNECT_LIMIT:?}",
                        self.remote().addrs[i as usize]
                    )))
                }
                Some(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// Waits until the client is connected to every data node (or, with backups, to at least
/// one), failing at once when a node refuses the handshake: as [`Unconnected::SlotInUse`]
/// when it holds another client's connection with this client's id (slot `slot`).
fn wait_connected(
    transport: &TcpTransport,
    addrs: &[SocketAddr],
    backups: usize,
    slot: u32,
) -> std::result::Result<(), Unconnected> {
    let deadline = Instant::now() + CONNECT_LIMIT;
    loop {
        let up = transport.peers_up();
        if up.len() == addrs.len() {
            return Ok(());
        }
        let refused = (0..addrs.len() as NodeId)
            .filter(|i| !up.contains(i))
            .find_map(|i| transport.refusal(i).map(|r| (i, r)));
        if let Some((i, refusal)) = refused {
            let at = addrs[i as usize];
            if refusal.id_in_use {
                return Err(Unconnected::SlotInUse(format!(
                    "client slot {slot} is taken: node-{i} at {at} holds a live connection of \
                     another client with this client's id {}",
                    transport.id()
                )));
            }
            return Err(Error::Connect(format!(
                "node-{i} at {at} refused the connection (a wrong secret or certificate, or \
                 another node listens there?): {}",
                refusal.message
            ))
            .into());
        }
        if Instant::now() >= deadline {
            let i = (0..addrs.len() as NodeId)
                .find(|i| !up.contains(i))
                .unwrap_or(0);
            if backups > 0 && !up.is_empty() {
                tracing::warn!(
                    "node-{i} at {} is not reachable: it counts as down",
                    addrs[i as usize]
                );
                return Ok(());
            }
            return Err(Error::Connect(format!(
                "node-{i} at {} not reachable within {CONNECT_LIMIT:?}",
                addrs[i as usize]
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Inner {
    pub(super) fn remote(&self) -> &Remote {
        self.remote.as_ref().expect("a connected cluster")
    }

    fn send_join(&self, to: NodeId) {
        let remote = self.remote();
        let join = Join {
            peers: remote
                .addrs
                .iter()
                .enumerate()
                .map(|(i, a)| (i as NodeId, a.to_string()))
                .collect(),
            protocol: self.config.protocol,
            log_index: remote.log_index.load(Ordering::SeqCst),
        };
        self.network.send(self.client, to, &NetMessage::Join(join));
    }

    /// Waits (up to `limit`) until every node of `nodes` has applied the catalog log up to
    /// this client's epoch (a node that restarted catches up from the log's leader).
    pub(super) fn wait_caught_up(&self, nodes: &[NodeId], limit: Duration) {
        let deadline = Instant::now() + limit;
        let epoch = self.remote().epoch.load(Ordering::SeqCst);
        while Instant::now() < deadline {
            let replies = self.ask(nodes, ASK_LIMIT.min(limit));
            if replies.len() == nodes.len() && replies.iter().all(|(_, r)| r.epoch >= epoch) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!("the data nodes did not all catch up with the catalog log in time");
    }

    /// Asks `nodes` for their catalog and versions; the replies that came within `limit`.
    pub(super) fn ask(&self, nodes: &[NodeId], limit: Duration) -> Vec<(NodeId, CatalogReply)> {
        let remote = self.remote();
        let request = self.ids.fetch_add(1, Ordering::Relaxed);
        let rx = remote.membership.expect(request);
        for &i in nodes {
            self.network.send(
                self.client,
                i,
                &NetMessage::CatalogRequest(CatalogRequest { request }),
            );
        }
        let deadline = Instant::now() + limit;
        let mut replies: Vec<(NodeId, CatalogReply)> = Vec::new();
        while replies.len() < nodes.len() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match rx.recv_timeout(deadline - now) {
                Ok((from, reply)) => {
                    if nodes.contains(&from) && replies.iter().all(|(f, _)| *f != from) {
                        replies.push((from, reply));
                    }
                }
                Err(_) => break,
            }
        }
        remote.membership.forget(request);
        replies
    }

    /// Notes the highest index of the catalog log `replies` say is applied.
    fn note_log(&self, replies: &[(NodeId, CatalogReply)]) {
        let index = replies.iter().map(|(_, r)| r.log_index).max().unwrap_or(0);
        self.remote().log_index.fetch_max(index, Ordering::SeqCst);
    }

    /// Takes the newest catalog of `replies` if it is newer than `catalog`, and the copies'
    /// versions: a partition's committed version is the highest any copy has; a copy of a
    /// node that replied and is behind it is stale, and so is a copy the catalog log counts
    /// lost ([`super::lost`]). Returns whether the catalog changed.
    pub(super) fn learn(&self, catalog: &mut Catalog, replies: &[(NodeId, CatalogReply)]) -> bool {
        let remote = self.remote();
        self.note_log(replies);
        let mut changed = false;
        if let Some((_, newest)) = replies
            .iter()
            .filter(|(_, r)| r.catalog.is_some())
            .max_by_key(|(_, r)| r.epoch)
        {
            if newest.epoch > remote.epoch.load(Ordering::SeqCst) {
                match newest.catalog.as_ref().map(decode_catalog) {
                    Some(Ok(snapshot)) => {
                        let nodes = catalog.data_nodes();
                        let rounds = catalog.max_recursion();
                        *catalog = Catalog::from_snapshot(snapshot, catalog.version() + 1);
                        catalog.set_max_recursion(rounds);
                        if let Some(nodes) = nodes {
                            catalog.set_data_nodes(nodes);
                        }
                        remote.epoch.store(newest.epoch, Ordering::SeqCst);
                        changed = true;
                    }
                    Some(Err(e)) => tracing::warn!("a node's catalog does not decode: {e}"),
                    None => {}
                }
            }
        }
        let (mut lost, emptied) = lost_copies(replies);
        let mut promoted = Vec::new();
        if let Some(backups) = replies.iter().find_map(|(_, r)| r.backups) {
            let before = remote.backups.swap(backups as usize, Ordering::SeqCst);
            if before != backups as usize {
                tracing::info!(
                    "the cluster keeps {backups} backup(s) per partition: this client places \
                     copies so too (it was built with {before})"
                );
            }
        }
        let mut book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        let version_of = |r: &CatalogReply, table: &str, p: u32| {
            r.versions
                .iter()
                .find(|t| t.table == table)
                .and_then(|t| t.partitions.iter().find(|(q, _)| *q == p))
                .map_or(0, |(_, v)| *v)
        };
        for def in catalog.tables() {
            let table = def.name.to_lowercase();
            let copies = self.copies(def.partitions);
            for (p, holders) in copies.iter().enumerate() {
                let p = p as u32;
                let answered = replies
                    .iter()
                    .map(|(_, r)| version_of(r, &table, p))
                    .max()
                    .unwrap_or(0);
                // With every copy's version at hand, the copies say what is committed (a
                // copy that lost or missed writes is known from the catalog log); else the
                // book's version stands too. (The book may know a version of a table
                // dropped and made again under the same name since.)
                let all_answered = holders
                    .iter()
                    .all(|n| replies.iter().any(|(from, _)| from == n));
                let newest = if all_answered {
                    answered
                } else {
                    answered.max(book.committed(&table, p))
                };
                if all_answered {
                    let reported: Vec<ReportedCopy> = holders
                        .iter()
                        .map(|&n| {
                            replies.iter().find(|(from, _)| *from == n).map_or(
                                (0, true),
                                |(_, r)| {
                                    let copy = (n, table.clone(), p);
                                    (version_of(r, &table, p), emptied.contains(&copy))
                                },
                            )
                        })
                        .collect();
                    promoted.extend(promote_in_doubt(&table, p, holders, &reported, &mut lost));
                }
                book.set_committed(&table, p, newest);
                for &n in holders {
                    if lost.contains(&(n, table.clone(), p)) {
                        book.mark_stale(&table, p, n, true);
                    } else if let Some((_, r)) = replies.iter().find(|(from, _)| *from == n) {
                        book.mark_stale(&table, p, n, version_of(r, &table, p) < newest);
                    }
                }
            }
        }
        drop(book);
        remote.learn_lost(lost);
        self.record_promoted(promoted);
        let mut incarnations = remote
            .incarnations
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for (from, reply) in replies {
            // A start the log has not recorded is recorded at the rejoin, with its losses,
            // unless nothing can have been written yet.
            match reply.fresh_start {
                Some(i) if reply.start_recorded || reply.epoch == 0 => {
                    incarnations.insert(*from, i);
                }
                Some(_) => {}
                None => {
                    incarnations.remove(from);
                }
            }
        }
        changed
    }

    /// Refreshes every stale copy on a live data node from a live current copy, over the
    /// network ([`crate::replication::resync`]). The caller holds the catalog's write lock (`catalog`), so
    /// that no write slips in.
    fn resync(&self, catalog: &Catalog) -> ResyncOutcome {
        let mut book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        if book.stale_copies().is_empty() {
            return ResyncOutcome::default();
        }
        let tables: Vec<(TableLayout, Arc<Vec<Vec<NodeId>>>)> = catalog
            .tables()
            .map(|def| {
                let layout = TableLayout {
                    table: def.name.to_lowercase(),
                    schema: def.schema.clone(),
                    primary_key: def.primary_key.clone(),
                    indexed: def.indexes.iter().map(|i| i.column).collect(),
                };
                (layout, self.copies(def.partitions))
            })
            .collect();
        let remote = self.remote();
        let up = |n: NodeId| {
            (n as usize) < self.config.nodes
                && self.nodes[n as usize].up.load(Ordering::SeqCst)
                && remote.transport.is_up(n)
        };
        let resync = Resync {
            network: &self.network,
            client: self.client,
            up: &up,
            replies: remote.membership.resyncs(),
            ids: &self.ids,
            names: &self.names,
        };
        let started = Instant::now();
        let before: HashSet<LostCopy> = stale_set(&book);
        let outcome = resync.run(&mut book, &tables);
        let after = stale_set(&book);
        // Each copy refreshed to the partition's committed version.
        let refreshed: HashMap<LostCopy, u64> = before
            .difference(&after)
            .map(|copy| (copy.clone(), book.committed(&copy.1, copy.2)))
            .collect();
        drop(book);
        self.record_repairs(&refreshed);
        if outcome.refreshed > 0 || outcome.failed > 0 {
            tracing::info!(
                "resync: {} copies refreshed, {} still stale, in {:?}",
                outcome.refreshed,
                outcome.failed,
                started.elapsed()
            );
        }
        outcome
    }

    /// Whether the start of every node of `replies` that lost its data is recorded in its
    /// copy of the catalog log (proposing it when not; see [`super::lost`]). A node whose
    /// log holds no catalog yet while the client's is at `epoch` is not there yet.
    fn start_known(
        &self,
        replies: &[(NodeId, CatalogReply)],
        epoch: u64,
        proposed: &mut HashSet<(NodeId, u64)>,
    ) -> bool {
        if epoch == 0 {
            return true;
        }
        match self.record_starts(replies, proposed) {
            Ok(waiting) => waiting.is_empty(),
            Err(e) => {
                tracing::warn!("a data node's start was not recorded: {e}");
                false
            }
        }
    }

    /// Whether any copy is stale.
    fn has_stale(&self) -> bool {
        let book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        !book.stale_copies().is_empty()
    }

    /// Whether some stale copy on a live data node has a live current copy to be resynced
    /// from.
    fn resyncable(&self) -> bool {
        let catalog = self.catalog.read().unwrap_or_else(|e| e.into_inner());
        let book = self.replicas.lock().unwrap_or_else(|e| e.into_inner());
        let up = |n: NodeId| self.nodes[n as usize].up.load(Ordering::SeqCst);
        book.stale_copies().iter().any(|(table, stale)| {
            let Some(def) = catalog.table(table) else {
                return false;
            };
            let copies = self.copies(def.partitions);
            stale.iter().any(|&(p, n)| {
                up(n)
                    && copies.get(p as usize).is_some_and(|holders| {
                        holders
                            .iter()
                            .any(|&h| up(h) && !book.is_stale(table, p, h))
                    })
            })
        })
    }

    /// Data node `i`'s connection came back: join it again, wait until it is connected and
    /// caught up, then learn its versions (copies it lost or that missed writes are stale,
    /// as every live node's reply shows), mark it up, and resync the stale copies, holding the
    /// catalog from a last question to the live nodes on so that no write slips in (but not
    /// while it waits: the client's statements go on meanwhile). The other
    /// live data nodes are joined again too: one whose dial loop to `i` gave up while `i` was
    /// away dials it again.
    fn rejoin(&self, i: NodeId) {
        self.send_join(i);
        let remote = self.remote();
        let epoch = remote.epoch.load(Ordering::SeqCst);
        let others: Vec<NodeId> = (0..self.config.nodes as NodeId)
            .filter(|&j| j != i && self.nodes[j as usize].up.load(Ordering::SeqCst))
            .collect();
        for &j in &others {
            self.send_join(j);
        }
        let deadline = Instant::now() + CONNECT_LIMIT;
        let mut proposed = HashSet::new();
        while Instant::now() < deadline && !remote.stop.load(Ordering::SeqCst) {
            let replies = self.ask(&[i], ASK_LIMIT);
            let Some((_, reply)) = replies.first() else {
                continue;
            };
            // Connected to the others again, caught up with the catalog log (a node that
            // restarted without its data takes the catalog from the log's leader), and, if
            // it lost its data, its start recorded there.
            if others.iter().all(|j| reply.peers.contains(j))
                && reply.epoch >= epoch
                && self.start_known(&replies, epoch, &mut proposed)
            {
                // Learnt from every live node, not `i` alone: `i`'s copy of the catalog log
                // may not hold yet the records of writes it missed while it was away (which
                // the others' do), and the others' versions show where `i`'s copies are behind.
                let mut catalog = self.catalog.write().unwrap_or_else(|e| e.into_inner());
                let mut asked = others.clone();
                asked.push(i);
                let replies = self.ask(&asked, ASK_LIMIT.min(Duration::from_secs(1)));
                if replies.iter().all(|(from, _)| *from != i) {
                    continue;
                }
                self.learn(&mut catalog, &replies);
                self.nodes[i as usize].up.store(true, Ordering::SeqCst);
                tracing::info!("node-{i} is back");
                self.resync(&catalog);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!(
            "node-{i} reconnected but did not rejoin within {CONNECT_LIMIT:?}: it stays down"
        );
    }
}

/// Every stale copy of `book`, as (node, table, partition).
fn stale_set(book: &crate::replication::writes::ReplicaBook) -> HashSet<LostCopy> {
    book.stale_copies()
        .iter()
        .flat_map(|(table, copies)| copies.iter().map(|&(p, n)| (n, table.clone(), p)))
        .collect()
}

/// Follows the client's connections: a data node whose connection ends is down (and its
/// queries are told), one whose connection comes back rejoins. Every [`RESYNC_RETRY`], stale
/// copies that can be resynced are.
fn watch(
    inner: Weak<Inner>,
    events: crossbeam_channel::Receiver<PeerEvent>,
    stop: Arc<AtomicBool>,
) {
    let mut last_try = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let Ok(event) = events.recv_timeout(Duration::from_millis(50)) else {
            if last_try.elapsed() >= RESYNC_RETRY {
                last_try = Instant::now();
                let Some(inner) = inner.upgrade() else { return };
                if inner.resyncable() {
                    let catalog = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
                    inner.resync(&catalog);
                }
            }
            continue;
        };
        if stop.load(Ordering::SeqCst) {
            return; // the client is closing its connections: not a node going down
        }
        let Some(inner) = inner.upgrade() else { return };
        let data = inner.config.nodes as NodeId;
        let up = |i: NodeId| inner.nodes[i as usize].up.load(Ordering::SeqCst);
        match event {
            PeerEvent::Down(i, reason)
                if i < data && inner.nodes[i as usize].up.swap(false, Ordering::SeqCst) =>
            {
                tracing::warn!("node-{i} is down: {reason}");
                inner.addrs[inner.local].do_send(NodeMsg::NodeCrashed(i));
            }
            PeerEvent::Up(i) if i < data && !up(i) => inner.rejoin(i),
            _ => {}
        }
    }
}
