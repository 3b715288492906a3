//! Where a query runs: its fragments are mapped onto the live nodes that hold copies of the
//! partitions they read (see [`crate::replication::copies`] for where copies live).

use crate::error::{Error, Result};
use crate::wire::ids::NodeId;
use crate::wire::partition_map::PartitionMap;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use weir_operators::eval::evaluate_scalar;
use weir_operators::placement::{partition_of, partition_of_key};
use weir_operators::Value;
use weir_planner::{Placement, Pruning, QueryPlan};

/// Where a query's fragments run.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Nodes of each fragment (indexed like `plan.fragments`).
    pub instances: Vec<Vec<NodeId>>,
    /// Partition assignment of each fragment that scans a table.
    pub partitions: Vec<Option<Arc<PartitionMap>>>,
}

/// What scheduling needs to know about the cluster.
pub struct ClusterView<'a> {
    /// The initiator.
    pub client: NodeId,
    /// Data nodes that are up.
    pub live: &'a [bool],
    /// Display names of nodes.
    pub names: &'a [String],
    /// Copies of each partition (primary first) of a table with the given partition count.
    pub copies: &'a dyn Fn(u32) -> Arc<Vec<Vec<NodeId>>>,
    /// Partition count of a table.
    pub table_partitions: &'a dyn Fn(&str) -> Option<u32>,
    /// Whether a table is an external one (its files readable from every node).
    pub external: &'a dyn Fn(&str) -> bool,
    /// Copies `(partition, node)` that missed writes, by table (lowercase): they serve no
    /// reads until they caught up.
    pub stale: &'a HashMap<String, HashSet<(u32, NodeId)>>,
    /// Whole-table maps made for earlier queries.
    pub whole_tables: &'a WholeTableMaps,
}

/// Maps every fragment of `plan` onto nodes.
pub fn schedule(plan: &QueryPlan, params: &[Value], view: &ClusterView) -> Result<Schedule> {
    let live_data: Vec<NodeId> = (0..view.live.len() as NodeId)
        .filter(|&n| view.live[n as usize])
        .collect();
    let mut instances = Vec::with_capacity(plan.fragments.len());
    let mut partitions = Vec::with_capacity(plan.fragments.len());
    for f in &plan.fragments {
        match &f.placement {
            Placement::Initiator => {
                instances.push(vec![view.client]);
                partitions.push(None);
            }
            Placement::AllDataNodes => {
                if live_data.is_empty() {
                    return Err(Error::NodeDown("every data node".into()));
                }
                instances.push(live_data.clone());
                partitions.push(None);
            }
            Placement::Table { table, pruning } => {
                let count = (view.table_partitions)(table).ok_or_else(|| {
                    Error::Plan(weir_planner::PlanError::UnknownTable(table.clone()))
                })?;
                if (view.external)(table) {
                    // Any live data node reads an external table's files: they share the
                    // work, whichever are up.
                    if live_data.is_empty() {
                        return Err(Error::NodeDown("every data node".into()));
                    }
                    let owners: Vec<Option<NodeId>> = (0..count as usize)
                        .map(|p| Some(live_data[p % live_data.len()]))
                        .collect();
                    let map = Arc::new(PartitionMap::from_owners(&owners));
                    instances.push(map.nodes().to_vec());
                    partitions.push(Some(map));
                    continue;
                }
                let copies = (view.copies)(count);
                let stale = view.stale.get(&table.to_lowercase());
                let wanted: Option<Vec<u32>> = match pruning {
                    Pruning::All => None,
                    Pruning::Keys(keys) => {
                        let mut ps = Vec::with_capacity(keys.len());
                        for k in keys {
                            let v = evaluate_scalar(k, params)
                                .map_err(|e| Error::kernel("client".into(), &e))?;
                            if !v.is_null() {
                                ps.push(partition_of(&v, count));
                            }
                        }
                        ps.sort_unstable();
                        ps.dedup();
                        Some(ps)
                    }
                    Pruning::Key(values) => {
                        let mut key = Vec::with_capacity(values.len());
                        for e in values {
                            key.push(
                                evaluate_scalar(e, params)
                                    .map_err(|e| Error::kernel("client".into(), &e))?,
                            );
                        }
                        // A NULL key part matches no row.
                        if key.iter().any(Value::is_null) {
                            Some(Vec::new())
                        } else {
                            Some(vec![partition_of_key(&key, count)])
                        }
                    }
                };
                // Every partition of a table with no stale copy: the same map as last time
                // while the same nodes are up.
                let whole = wanted.is_none() && stale.is_none_or(HashSet::is_empty);
                let map = if whole {
                    view.whole_tables.get_or_assign(count, view.live, || {
                        assign(table, None, count, &copies, stale, view)
                    })?
                } else {
                    Arc::new(assign(
                        table,
                        wanted.as_deref(),
                        count,
                        &copies,
                        stale,
                        view,
                    )?)
                };
                instances.push(map.nodes().to_vec());
                partitions.push(Some(map));
            }
        }
    }
    Ok(Schedule {
        instances,
        partitions,
    })
}

/// The node serving each partition of `wanted` (every partition when `None`) of a table with
/// `count` partitions: its first live, current copy.
fn assign(
    table: &str,
    wanted: Option<&[u32]>,
    count: u32,
    copies: &[Vec<NodeId>],
    stale: Option<&HashSet<(u32, NodeId)>>,
    view: &ClusterView,
) -> Result<PartitionMap> {
    let mut assigned: Vec<Option<NodeId>> = vec![None; count as usize];
    let all: Vec<u32> = (0..count).collect();
    for &p in wanted.unwrap_or(&all) {
        let copies = &copies[p as usize];
        let current = |n: NodeId| !stale.is_some_and(|s| s.contains(&(p, n)));
        let up = |n: NodeId| view.live.get(n as usize).copied().unwrap_or(false);
        // The first live, current copy serves the partition.
        let Some(owner) = copies.iter().copied().find(|&n| up(n) && current(n)) else {
            let name = |n: NodeId| {
                view.names
                    .get(n as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("node-{n}"))
            };
            if !copies.iter().any(|&n| current(n)) {
                if let Some(&n) = copies.iter().find(|&&n| up(n)) {
                    return Err(Error::NoCurrentCopy {
                        table: table.to_string(),
                        partition: p,
                        node: name(n),
                    });
                }
            }
            // Name a node whose copy is current but down, else the primary.
            let down = copies
                .iter()
                .copied()
                .find(|&n| current(n))
                .unwrap_or(copies[0]);
            let name = view
                .names
                .get(down as usize)
                .cloned()
                .unwrap_or_else(|| format!("node-{down}"));
            return Err(Error::NodeDown(name));
        };
        assigned[p as usize] = Some(owner);
    }
    Ok(PartitionMap::from_owners(&assigned))
}

/// Whole-table partition maps already made, by partition count and the data nodes up then: a
/// query that reads every partition of a table with no stale copy (most of them) maps onto
/// the same nodes each time, so the map is made once.
#[derive(Debug, Default)]
pub struct WholeTableMaps {
    maps: Mutex<MapsByLayout>,
}

/// Whole-table maps by `(partition count, data nodes up)`.
type MapsByLayout = HashMap<(u32, Vec<bool>), Arc<PartitionMap>>;

impl WholeTableMaps {
    /// Most maps kept (one per partition count and set of live nodes seen).
    const LIMIT: usize = 64;

    /// The map for `count` partitions with `live` nodes up, made by `assign` if not kept yet.
    fn get_or_assign(
        &self,
        count: u32,
        live: &[bool],
        assign: impl FnOnce() -> Result<PartitionMap>,
    ) -> Result<Arc<PartitionMap>> {
        let key = (count, live.to_vec());
        if let Some(map) = self.lock().get(&key) {
            return Ok(map.clone());
        }
        let map = Arc::new(assign()?);
        let mut maps = self.lock();
        if maps.len() >= Self::LIMIT {
            maps.clear();
        }
        maps.insert(key, map.clone());
        Ok(map)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MapsByLayout> {
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_table_maps_are_made_once_per_partition_count_and_live_nodes() {
        let maps = WholeTableMaps::default();
        let made = std::cell::Cell::new(0);
        let make = |owner: NodeId| {
            made.set(made.get() + 1);
            Ok(PartitionMap::from_owners(&[Some(owner); 8]))
        };
        let a = maps.get_or_assign(8, &[true, true], || make(0)).unwrap();
        let again = maps.get_or_assign(8, &[true, true], || make(0)).unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(made.get(), 1);
        // Another node down, or another partition count: made anew.
        let one_down = maps.get_or_assign(8, &[true, false], || make(1)).unwrap();
        assert_eq!(one_down.nodes(), &[1]);
        maps.get_or_assign(16, &[true, true], || make(0)).unwrap();
        assert_eq!(made.get(), 3);
        // A failed assignment is not kept.
        let failed = maps.get_or_assign(4, &[false, false], || {
            Err(Error::NodeDown("every data node".into()))
        });
        assert!(failed.is_err());
        maps.get_or_assign(4, &[false, false], || make(0)).unwrap();
        assert_eq!(made.get(), 4);
    }
}
