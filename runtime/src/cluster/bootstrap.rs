//! Starting a cluster: the actor system, the actor threads (arbiters) the nodes share, each
//! node's node actor and memory supervisor on its thread, and the network between them.

use super::{Cluster, ClusterBuilder, Inner, InnerParts};
use crate::dispatch::node_actor::{NodeActor, NodeCounters, NodeSetup};
use crate::error::{Error, Result};
use crate::memory::breaker::BreakerCounters;
use crate::memory::pool::NodePool;
use crate::memory::supervisor::SupervisorActor;
use crate::node::inbox::SetClient;
use crate::node::{NodeShared, NodeStorage};
use crate::replication::writes::WriteReplies;
use crate::wire::messages::NodeId;
use crate::wire::network::Network;
use actix::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

impl Cluster {
    pub(super) fn start(config: ClusterBuilder) -> Result<Cluster> {
        let total = config.nodes + 1;
        let names: Vec<String> = (0..config.nodes)
            .map(|i| format!("node-{i}"))
            .chain(std::iter::once("client".to_string()))
            .collect();
        let nodes: Vec<Arc<NodeShared>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                Arc::new(NodeShared {
                    id: i as NodeId,
                    name: name.clone(),
                    is_data: i < config.nodes,
                    storage: RwLock::new(NodeStorage::default()),
                    pool: NodePool::new(
                        name.clone(),
                        config.node_memory,
                        config.join_mode,
                        &config.breaker,
                    ),
                    live_actors: AtomicUsize::new(0),
                    up: AtomicBool::new(true),
                    edge_high_water: AtomicUsize::new(0),
                    joins: Default::default(),
                })
            })
            .collect();
        let counters: Vec<Arc<NodeCounters>> = (0..total)
            .map(|_| Arc::new(NodeCounters::default()))
            .collect();
        let network = Network::new();
        let breaker = Arc::new(BreakerCounters::default());
        let write_replies = Arc::new(WriteReplies::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let nodes = nodes.clone();
            let counters = counters.clone();
            let network = network.clone();
            let protocol = config.protocol;
            let breaker = breaker.clone();
            let breaker_config = config.breaker.clone();
            let seed = config.seed;
            let fragment_cache = config.fragment_cache;
            let write_replies = write_replies.clone();
            let idle_spin = config.idle_spin;
            let threads = config.node_threads();
            std::thread::Builder::new()
                .name("weir-system".into())
                .spawn(move || {
                    let sys = actix::System::new();
                    sys.block_on(async move {
                        let mut arbiters = Vec::new();
                        let mut addrs = Vec::new();
                        let mut supervisors = Vec::new();
                        let threads: Vec<actix::Arbiter> = (0..threads)
                            .map(|_| crate::exec::idle::arbiter(idle_spin))
                            .collect();
                        for (i, (node, counters)) in nodes.into_iter().zip(counters).enumerate() {
                            let arbiter = &threads[i % threads.len()];
                            let net = network.clone();
                            let (shared, cfg, totals) =
                                (node.clone(), breaker_config.clone(), breaker.clone());
                            let supervisor =
                                SupervisorActor::start_in_arbiter(&arbiter.handle(), move |_| {
                                    SupervisorActor::new(shared, cfg, totals, seed)
                                });
                            let totals = breaker.clone();
                            let sup = supervisor.clone();
                            let pool = node.pool.clone();
                            let replies = write_replies.clone();
                            let addr = NodeActor::start_in_arbiter(&arbiter.handle(), move |_| {
                                NodeActor::new(NodeSetup {
                                    shared: node,
                                    network: net,
                                    protocol,
                                    counters,
                                    supervisor: sup,
                                    breaker: totals,
                                    fragment_cache,
                                    write_replies: replies,
                                    membership: Default::default(),
                                })
                            });
                            pool.connect(supervisor.clone().recipient(), addr.clone().recipient());
                            supervisors.push(supervisor);
                            arbiters.push(arbiter.handle());
                            addrs.push(addr);
                        }
                        let _ = tx.send((actix::System::current(), arbiters, addrs, supervisors));
                    });
                    let _ = sys.run();
                })
                .map_err(|e| Error::Invalid(format!("cannot start the actor system: {e}")))?
        };
        let (system, arbiters, addrs, supervisors) = rx
            .recv()
            .map_err(|_| Error::Invalid("the actor system failed to start".into()))?;
        for (i, addr) in addrs.iter().enumerate() {
            network.attach(i as NodeId, Some(addr.clone().recipient()));
            network.attach_crash(i as NodeId, addr.clone().recipient());
        }
        let client_addr: Addr<NodeActor> = addrs[config.nodes].clone();
        for addr in &addrs {
            addr.do_send(SetClient(client_addr.clone().recipient()));
        }
        let cluster = Cluster {
            inner: Arc::new(Inner::new(InnerParts {
                client: config.nodes as NodeId,
                local: config.nodes,
                remote: None,
                config,
                nodes,
                addrs,
                counters,
                arbiters,
                names,
                network,
                breaker,
                first_id: 1,
                supervisors,
                write_replies,
            })),
            system: Some((system, thread)),
        };
        // Wait until every node actor runs, so the baseline is stable.
        let deadline = Instant::now() + Duration::from_secs(10);
        while cluster.stats().live_actors() < cluster.baseline_actors() && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(cluster)
    }
}
