//! Starting a cluster in process: each node's state, the actor system and the threads the
//! nodes share ([`NodeSystem`]), and the network between them.

use super::builder::ClusterBuilder;
use super::restore::{lock_data_dir, open_node};
use super::system::NodeSystem;
use super::{Cluster, Inner, InnerParts};
use crate::dispatch::counters::NodeCounters;
use crate::dispatch::node_actor::NodeSetup;
use crate::error::Result;
use crate::exchange::router::Router;
use crate::memory::breaker::BreakerCounters;
use crate::memory::pool::Pools;
use crate::node::inbox::NodeMsg;
use crate::node::state::NodeShared;
use crate::replication::writes::WriteReplies;
use crate::wire::ids::NodeId;
use crate::wire::network::Network;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl ClusterBuilder {
    /// Starts the actor system on background threads and the nodes on it, or, after
    /// [`ClusterBuilder::connect`], the client node and its connections to the data nodes.
    pub fn build(self) -> Result<Cluster> {
        if self.connect.is_empty() {
            Cluster::start(self)
        } else {
            Cluster::connect_remote(self)
        }
    }
}

impl Cluster {
    pub(super) fn start(config: ClusterBuilder) -> Result<Cluster> {
        let names: Vec<String> = (0..config.nodes)
            .map(|i| format!("node-{i}"))
            .chain(std::iter::once("client".to_string()))
            .collect();
        let lock = lock_data_dir(&config)?;
        let nodes: Vec<Arc<NodeShared>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| open_node(&config, i as NodeId, name, i < config.nodes).map(Arc::new))
            .collect::<Result<_>>()?;
        let network = Network::new();
        let pools = Arc::new(Pools::default());
        let breaker = Arc::new(BreakerCounters::default());
        let write_replies = Arc::new(WriteReplies::default());
        let setups: Vec<NodeSetup> = nodes
            .iter()
            .map(|node| NodeSetup {
                shared: node.clone(),
                network: network.clone(),
                pools: pools.clone(),
                protocol: config.protocol,
                counters: Arc::new(NodeCounters::default()),
                router: Arc::new(Router::new(node.name.clone())),
                breaker_config: config.breaker.clone(),
                breaker: breaker.clone(),
                seed: config.seed,
                fragment_cache: config.fragment_cache,
                write_replies: write_replies.clone(),
                membership: Default::default(),
                max_value_bytes: config.max_value_bytes,
                prepared_write_ttl: config.prepared_write_ttl,
            })
            .collect();
        let counters = setups.iter().map(|s| s.counters.clone()).collect();
        let routers = setups.iter().map(|s| s.router.clone()).collect();
        let system = NodeSystem::start(
            "weir-system",
            config.node_threads(),
            config.idle_spin,
            setups,
        )?;
        let client = system.addrs[config.nodes].clone();
        for addr in &system.addrs {
            addr.do_send(NodeMsg::SetClient(client.clone().recipient()));
        }
        let cluster = Cluster {
            inner: Arc::new(Inner::new(InnerParts {
                client: config.nodes as NodeId,
                local: config.nodes,
                remote: None,
                config,
                nodes,
                addrs: system.addrs,
                routers,
                counters,
                arbiters: system.arbiters,
                names,
                network,
                pools,
                breaker,
                first_id: 1,
                write_replies,
            })),
            system: Some((system.system, system.thread)),
            lock,
        };
        cluster.restore()?;
        // Wait until every node actor runs, so the baseline is stable.
        let deadline = Instant::now() + Duration::from_secs(10);
        while cluster.stats().live_actors() < cluster.baseline_actors() && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(cluster)
    }
}
