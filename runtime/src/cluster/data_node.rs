//! One data node in a process of its own, reached over TCP (what `weir node` runs).
//!
//! A [`DataNode`] starts the same node actor and memory supervisor as a node of an in-process
//! [`Cluster`](crate::Cluster), attaches it to a [`Network`] whose remote carrier is a
//! [`TcpTransport`] listening on the given address, and serves until it is shut down. Frames
//! from authenticated peers go to the node actor, which decodes them; its messages to other
//! nodes go out through the same network, counted as in process.
//!
//! A data node starts knowing nobody: a client ([`ClusterBuilder::connect`]) dials it and
//! tells it where the other data nodes listen ([`crate::wire::messages::Join`]); the node then
//! connects to them (the lower id dials). The data nodes keep the catalog in a replicated log
//! ([`crate::replication::catalog_log`]) that clients propose changes to, so a client that
//! connects later finds the tables.
//!
//! Under TLS ([`Auth::Tls`]) the node's certificate must name it (`node-<id>.weir`, see
//! [`crate::wire::framing::tls`]): a certificate that does not is an error at start.
//!
//! [`ClusterBuilder::connect`]: crate::ClusterBuilder::connect

use super::restore::lock_dir;
use super::system::NodeSystem;
use crate::dispatch::node_actor::NodeSetup;
use crate::error::{Error, Result};
use crate::memory::breaker::{BreakerConfig, JoinMode};
use crate::node::journal::JournalConfig;
use crate::node::state::NodeShared;
use crate::node::storage::Change;
use crate::replication::catalog_log::CatalogLog;
use crate::replication::membership::Membership;
use crate::wire::framing::Role;
use crate::wire::ids::NodeId;
use crate::wire::messages::Protocol;
use crate::wire::network::Network;
use crate::wire::tcp::{Auth, TcpConfig, TcpTransport};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;
use weir_storage::Durability;

/// A data node serving over TCP (see the module comment).
pub struct DataNode {
    network: Arc<Network>,
    transport: Arc<TcpTransport>,
    system: Option<NodeSystem>,
    node: Arc<NodeShared>,
    log: Arc<CatalogLog>,
    /// The lock on the node's data directory, if it has one.
    _lock: Option<std::fs::File>,
}

impl DataNode {
    /// Starts node `id` with a memory budget of `memory` bytes, listening on `listen` (port 0
    /// picks one) for peers that authenticate with `auth`: a [`Secret`](crate::Secret) they
    /// know, or a [`Tls`](crate::wire::framing::Tls) setup (certificates signed by its CA).
    pub fn start(
        id: NodeId,
        listen: SocketAddr,
        auth: impl Into<Auth>,
        memory: usize,
    ) -> Result<Self> {
        Self::start_with(TcpConfig::new(id, auth).listen(listen), memory)
    }

    /// [`DataNode::start`] with every TCP setting given (`config.listen` must be set).
    pub fn start_with(config: TcpConfig, memory: usize) -> Result<Self> {
        Self::start_in(
            config,
            memory,
            None,
            crate::node::spill::DEFAULT_SPILL_QUOTA,
        )
    }

    /// [`DataNode::start_with`], keeping the node's data in `data` (a directory and what an
    /// acknowledged write means there; `None`: in memory). A node that restarts on its
    /// directory reads its partitions and catalog copy back before it serves; writes it had
    /// prepared and not seen decided are aborted (its copies they touched are then behind,
    /// and a client brings them up to date from their replicas). Its operators spill at most
    /// `spill_quota` bytes (0: they do not spill) into `spill/` of the directory, or a
    /// temporary one ([`ClusterBuilder::spill_quota`](crate::ClusterBuilder::spill_quota)).
    pub fn start_in(
        config: TcpConfig,
        memory: usize,
        data: Option<(PathBuf, Durability)>,
        spill_quota: u64,
    ) -> Result<Self> {
        let id = config.id;
        if config.listen.is_none() {
            return Err(Error::Invalid(
                "a data node needs an address to listen on".into(),
            ));
        }
        if let Auth::Tls(tls) = &config.auth {
            tls.check_role(Role::Node(id))
                .map_err(|e| Error::Invalid(e.to_string()))?;
        }
        let breaker = BreakerConfig::default();
        let name = format!("node-{id}");
        let mut lock = None;
        let log_dir = data
            .as_ref()
            .map(|(dir, durability)| (dir.clone(), *durability == Durability::Fsync));
        let shared = match data {
            None => NodeShared::new(id, &name, true, memory, JoinMode::Guarded, &breaker),
            Some((dir, durability)) => {
                lock = Some(lock_dir(&dir, &format!("data node {id}"))?);
                let journal = JournalConfig::new(dir, durability);
                let (node, recovery) = NodeShared::open(
                    id,
                    &name,
                    true,
                    memory,
                    JoinMode::Guarded,
                    &breaker,
                    &journal,
                )
                .map_err(|e| Error::Disk {
                    node: name.clone(),
                    message: e.to_string(),
                })?;
                tracing::info!(
                    node = %name,
                    checkpoint_bytes = recovery.checkpoint_bytes,
                    records = recovery.records,
                    ms = recovery.took.as_millis() as u64,
                    "recovered from the data directory"
                );
                abort_in_doubt(&node)?;
                node
            }
        };
        let mut shared = shared;
        shared.spill = crate::node::spill::open_spill(
            &name,
            log_dir.as_ref().map(|(dir, _)| dir.as_path()),
            spill_quota,
        )?;
        let shared = Arc::new(shared);
        let node = shared.clone();
        let network = Network::new();
        // The node learns its peers from a client's `Join`; the endpoint starts below.
        let endpoint: Arc<OnceLock<Weak<TcpTransport>>> = Arc::default();
        let membership = {
            let (dial, ask) = (endpoint.clone(), endpoint.clone());
            Arc::new(Membership::data_node(
                Box::new(move |peer, addr| {
                    if let Some(t) = dial.get().and_then(Weak::upgrade) {
                        t.add_peer(peer, addr);
                    }
                }),
                Box::new(move || {
                    ask.get()
                        .and_then(Weak::upgrade)
                        .map(|t| t.peers_up())
                        .unwrap_or_default()
                }),
            ))
        };
        membership.restore(&shared);
        let kept_data = shared
            .storage
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .catalog()
            .is_some();
        if !kept_data {
            // Its copies of partitions written before are lost, not empty: clients record
            // that in the catalog log before they take its versions.
            membership.set_fresh_start(super::remote::random_u64() | 1);
        }
        let log = {
            let taker = Arc::downgrade(&membership);
            let node = shared.clone();
            CatalogLog::start(
                id,
                network.clone(),
                log_dir.as_ref().map(|(dir, sync)| (dir.as_path(), *sync)),
                Box::new(move |epoch, catalog| {
                    if let Some(membership) = taker.upgrade() {
                        membership.take_catalog(epoch, catalog, &node);
                    }
                }),
            )?
        };
        membership.set_log(log.clone());
        let mut setup = NodeSetup::new(shared, network.clone(), Protocol::Lean);
        setup.breaker_config = breaker;
        setup.seed = 0x5eed;
        setup.membership = membership;
        // No idle spin: a node process waits for its clients without holding a core.
        let system = NodeSystem::start(&format!("weir-node-{id}"), 1, Duration::ZERO, vec![setup])?;
        let transport = match TcpTransport::start(config, network.inbound(id)) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                system.stop();
                log.shutdown();
                return Err(Error::Invalid(format!("cannot listen: {e}")));
            }
        };
        let _ = endpoint.set(Arc::downgrade(&transport));
        network.set_remote(transport.clone());
        Ok(DataNode {
            network,
            transport,
            system: Some(system),
            node,
            log,
            _lock: lock,
        })
    }

    /// The address the node listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.transport
            .local_addr()
            .expect("a data node always listens")
    }

    /// The node's TCP endpoint (to add peers, watch connections, read the wire counters).
    pub fn transport(&self) -> &Arc<TcpTransport> {
        &self.transport
    }

    /// The node's part of the catalog log.
    pub fn catalog_log(&self) -> &Arc<CatalogLog> {
        &self.log
    }

    /// The node's network (its message counters).
    pub fn network(&self) -> &Arc<Network> {
        &self.network
    }

    /// Stops the node: its connections, then its actors.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(system) = self.system.take() {
            self.transport.close();
            self.log.shutdown();
            self.network.attach(self.transport.id(), None);
            system.stop();
            self.node.finish_checkpoint();
        }
    }
}

impl Drop for DataNode {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Aborts the writes node `node` read back prepared and not decided: no client of this
/// process can tell whether they were committed elsewhere (presumed abort; the copies they
/// touched are behind the others then, and are repaired from them).
fn abort_in_doubt(node: &NodeShared) -> Result<()> {
    let in_doubt: Vec<u64> = {
        let storage = node.storage.read().unwrap_or_else(|e| e.into_inner());
        storage.prepared().map(|w| w.write).collect()
    };
    for write in in_doubt {
        node.change_durably(Change::Aborted { write })
            .map_err(|e| Error::Disk {
                node: node.name.clone(),
                message: e.to_string(),
            })?;
    }
    Ok(())
}
