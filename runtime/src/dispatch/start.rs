//! Turning a start request into a fragment instance's spec: the plan it names (sent whole, or
//! taken from the node's cache of fragment plans by key), its settings bounded to sane
//! ranges, and duplicates recognised so that no fragment starts twice.

use crate::dispatch::counters::NodeCounters;
use crate::dispatch::fragment::{FragmentSink, FragmentSpec};
use crate::exec::edge::{EdgeRegistry, Window};
use crate::node::recent::RecentSet;
use crate::wire::ids::QueryId;
use crate::wire::messages::{PlanPayload, Protocol, StartRequest};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use weir_operators::PhysicalPlan;

/// Default number of fragment plans a node keeps.
pub const DEFAULT_FRAGMENT_CACHE: usize = 1024;

/// The node's cache of fragment plans by key. It may evict any plan at any time: a start
/// request naming an evicted plan is answered `plan_missing` and the initiator resends it.
#[derive(Debug)]
struct FragmentCache {
    capacity: usize,
    plans: HashMap<u64, Arc<PhysicalPlan>>,
    order: VecDeque<u64>,
}

impl FragmentCache {
    fn new(capacity: usize) -> Self {
        FragmentCache {
            capacity,
            plans: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn get(&self, key: u64) -> Option<Arc<PhysicalPlan>> {
        self.plans.get(&key).cloned()
    }

    /// Keeps `plan` under `key`, evicting the oldest plans beyond the capacity.
    fn insert(&mut self, key: u64, plan: Arc<PhysicalPlan>) {
        if self.capacity == 0 {
            return;
        }
        if self.plans.insert(key, plan).is_none() {
            self.order.push_back(key);
        }
        while self.plans.len() > self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.plans.remove(&old);
                }
                None => break,
            }
        }
    }
}

/// What became of a start request.
pub enum Start {
    /// Start a fragment instance with this spec (its sink is the request's output).
    Run(Box<FragmentSpec>),
    /// A duplicate of a request already taken: nothing to do.
    Duplicate,
    /// The request named a plan the node does not hold: the initiator must resend it whole.
    PlanMissing,
    /// The request cannot run: why.
    Refused(String),
}

/// The fragments a node has started lately, and its cache of their plans.
#[derive(Debug)]
pub struct Starts {
    plans: FragmentCache,
    started: RecentSet<(QueryId, u32)>,
}

impl Starts {
    /// A node's record, keeping at most `cache` plans.
    pub fn new(cache: usize) -> Self {
        Starts {
            plans: FragmentCache::new(cache),
            started: RecentSet::default(),
        }
    }

    /// Takes start request `req` of a query that has not closed here, under `protocol`.
    pub fn take(
        &mut self,
        req: StartRequest,
        protocol: Protocol,
        counters: &NodeCounters,
    ) -> Start {
        if self.started.contains(&(req.query, req.fragment)) {
            return Start::Duplicate;
        }
        let plan = match req.plan {
            PlanPayload::Full { key, plan } => {
                let plan = Arc::new(*plan);
                self.plans.insert(key, plan.clone());
                plan
            }
            PlanPayload::Cached(key) => match self.plans.get(key) {
                Some(plan) => {
                    counters.fragment_cache_hits.fetch_add(1, Ordering::Relaxed);
                    plan
                }
                None => {
                    // Not marked started: the initiator resends the full plan under the same
                    // query id.
                    counters
                        .fragment_cache_misses
                        .fetch_add(1, Ordering::Relaxed);
                    return Start::PlanMissing;
                }
            },
        };
        self.started.insert((req.query, req.fragment));
        let Some(output) = req.output else {
            return Start::Refused("start request without an output".into());
        };
        Start::Run(Box::new(FragmentSpec {
            query: req.query,
            fragment: req.fragment,
            initiator: req.initiator,
            plan,
            params: Arc::new(req.params),
            sink: FragmentSink::Exchange(output),
            inputs: req.inputs,
            partitions: req.partitions,
            batch_size: (req.batch_size as usize).clamp(1, 1 << 20),
            window: Window::new(
                (req.window as usize).clamp(1, 1024),
                req.window_bytes.clamp(1, 1 << 40) as usize,
            ),
            protocol,
            edges: Arc::new(EdgeRegistry::default()),
            timeout: Duration::from_millis(req.timeout_ms.clamp(1, 24 * 3600 * 1000)),
            analyze: req.analyze,
        }))
    }
}
