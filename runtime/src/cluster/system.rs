//! The actor system under the nodes of this process: one thread runs actix, the nodes share
//! a few arbiters (actor threads), and each node is started on one of them with its
//! supervisor. An in-process cluster, the client of node processes and a data node of its
//! own process all start their nodes here.

use crate::dispatch::node_actor::{start_node, NodeActor, NodeSetup};
use crate::error::{Error, Result};
use actix::prelude::*;
use std::thread::JoinHandle;
use std::time::Duration;

/// The running actor system of this process's nodes.
pub(crate) struct NodeSystem {
    /// The actix system.
    pub system: actix::System,
    /// The thread that runs it.
    pub thread: JoinHandle<()>,
    /// The arbiter each node runs on, by position in the setups.
    pub arbiters: Vec<ArbiterHandle>,
    /// Each node's actor, by position in the setups.
    pub addrs: Vec<Addr<NodeActor>>,
}

impl NodeSystem {
    /// Starts a thread named `name` running an actix system with `threads` arbiters (at least
    /// one) whose threads spin `idle_spin` before they sleep, and starts node `i` of `setups`
    /// on arbiter `i % threads`.
    pub fn start(
        name: &str,
        threads: usize,
        idle_spin: Duration,
        setups: Vec<NodeSetup>,
    ) -> Result<NodeSystem> {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let sys = actix::System::new();
                sys.block_on(async move {
                    let threads: Vec<actix::Arbiter> = (0..threads.max(1))
                        .map(|_| crate::exec::idle::arbiter(idle_spin))
                        .collect();
                    let mut arbiters = Vec::new();
                    let mut addrs = Vec::new();
                    for (i, setup) in setups.into_iter().enumerate() {
                        let arbiter = threads[i % threads.len()].handle();
                        addrs.push(start_node(&arbiter, setup));
                        arbiters.push(arbiter);
                    }
                    let _ = tx.send((actix::System::current(), arbiters, addrs));
                });
                let _ = sys.run();
            })
            .map_err(|e| Error::Invalid(format!("cannot start the actor system: {e}")))?;
        let (system, arbiters, addrs) = rx
            .recv()
            .map_err(|_| Error::Invalid("the actor system failed to start".into()))?;
        Ok(NodeSystem {
            system,
            thread,
            arbiters,
            addrs,
        })
    }

    /// Stops the system and waits for its thread.
    pub fn stop(self) {
        for a in &self.arbiters {
            a.stop();
        }
        self.system.stop();
        let _ = self.thread.join();
    }
}
