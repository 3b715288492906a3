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
//! connects to them (the lower id dials). It keeps the catalog the clients send it
//! ([`crate::replication::membership`]), so a client that connects later finds the tables.
//!
//! [`ClusterBuilder::connect`]: crate::ClusterBuilder::connect

use crate::dispatch::node_actor::{NodeActor, NodeCounters, NodeSetup, DEFAULT_FRAGMENT_CACHE};
use crate::error::{Error, Result};
use crate::memory::breaker::{BreakerConfig, BreakerCounters, JoinMode};
use crate::memory::pool::NodePool;
use crate::memory::supervisor::SupervisorActor;
use crate::node::{NodeShared, NodeStorage};
use crate::replication::membership::Membership;
use crate::replication::writes::WriteReplies;
use crate::wire::framing::Secret;
use crate::wire::messages::{NodeId, Protocol};
use crate::wire::network::Network;
use crate::wire::tcp::{TcpConfig, TcpTransport};
use actix::prelude::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, OnceLock, RwLock, Weak};

/// A data node serving over TCP (see the module comment).
pub struct DataNode {
    network: Arc<Network>,
    transport: Arc<TcpTransport>,
    system: actix::System,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DataNode {
    /// Starts node `id` with a memory budget of `memory` bytes, listening on `listen` (port 0
    /// picks one) for peers that know `secret`.
    pub fn start(id: NodeId, listen: SocketAddr, secret: Secret, memory: usize) -> Result<Self> {
        Self::start_with(TcpConfig::new(id, secret).listen(listen), memory)
    }

    /// [`DataNode::start`] with every TCP setting given (`config.listen` must be set).
    pub fn start_with(config: TcpConfig, memory: usize) -> Result<Self> {
        let id = config.id;
        if config.listen.is_none() {
            return Err(Error::Invalid(
                "a data node needs an address to listen on".into(),
            ));
        }
        let name = format!("node-{id}");
        let breaker = BreakerConfig::default();
        let shared = Arc::new(NodeShared {
            id,
            name: name.clone(),
            is_data: true,
            storage: RwLock::new(NodeStorage::default()),
            pool: NodePool::new(name, memory, JoinMode::Guarded, &breaker),
            live_actors: AtomicUsize::new(0),
            up: AtomicBool::new(true),
            edge_high_water: AtomicUsize::new(0),
            joins: Default::default(),
        });
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
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let network = network.clone();
            std::thread::Builder::new()
                .name(format!("weir-node-{id}"))
                .spawn(move || {
                    let sys = actix::System::new();
                    sys.block_on(async move {
                        let totals = Arc::new(BreakerCounters::default());
                        let (s, cfg, t) = (shared.clone(), breaker.clone(), totals.clone());
                        let supervisor = SupervisorActor::new(s, cfg, t, 0x5eed).start();
                        let pool = shared.pool.clone();
                        let sup = supervisor.clone();
                        let addr = NodeActor::new(NodeSetup {
                            shared,
                            network,
                            protocol: Protocol::Lean,
                            counters: Arc::new(NodeCounters::default()),
                            supervisor: sup,
                            breaker: totals,
                            fragment_cache: DEFAULT_FRAGMENT_CACHE,
                            write_replies: Arc::new(WriteReplies::default()),
                            membership,
                        })
                        .start();
                        pool.connect(supervisor.recipient(), addr.clone().recipient());
                        let _ = tx.send((actix::System::current(), addr));
                    });
                    let _ = sys.run();
                })
                .map_err(|e| Error::Invalid(format!("cannot start the actor system: {e}")))?
        };
        let (system, addr) = rx
            .recv()
            .map_err(|_| Error::Invalid("the actor system failed to start".into()))?;
        network.attach(id, Some(addr.clone().recipient()));
        network.attach_crash(id, addr.recipient());
        let transport = match TcpTransport::start(config, network.inbound(id)) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                system.stop();
                let _ = thread.join();
                return Err(Error::Invalid(format!("cannot listen: {e}")));
            }
        };
        let _ = endpoint.set(Arc::downgrade(&transport));
        network.set_remote(transport.clone());
        Ok(DataNode {
            network,
            transport,
            system,
            thread: Some(thread),
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

    /// The node's network (its message counters).
    pub fn network(&self) -> &Arc<Network> {
        &self.network
    }

    /// Stops the node: its connections, then its actors.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.transport.close();
            self.network.attach(self.transport.id(), None);
            self.system.stop();
            let _ = thread.join();
        }
    }
}

impl Drop for DataNode {
    fn drop(&mut self) {
        self.stop();
    }
}
