//! Compact partition assignments for start requests.
//!
//! Instead of a list of node ids for every partition, a map carries the distinct nodes once
//! and one packed small integer per partition (just enough bits for the node count plus
//! "unassigned"). 1024 partitions over 3 nodes fit in 256 bytes.

use crate::messages::NodeId;
use serde::{Deserialize, Serialize};

/// Which node serves each partition, packed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionMap {
    nodes: Vec<NodeId>,
    partitions: u32,
    bits: u8,
    packed: Vec<u64>,
}

impl PartitionMap {
    /// Packs `owners[p]` (the node serving partition `p`, or `None`).
    pub fn from_owners(owners: &[Option<NodeId>]) -> Self {
        let mut nodes: Vec<NodeId> = owners.iter().flatten().copied().collect();
        nodes.sort_unstable();
        nodes.dedup();
        // Code 0 means unassigned; node i is code i + 1.
        let bits = (usize::BITS - nodes.len().leading_zeros()).max(1) as u8;
        let per_word = 64 / bits as usize;
        let mut packed = vec![0u64; owners.len().div_ceil(per_word)];
        for (p, owner) in owners.iter().enumerate() {
            if let Some(node) = owner {
                let code = nodes.binary_search(node).map_or(0, |i| i as u64 + 1);
                packed[p / per_word] |= code << ((p % per_word) * bits as usize);
            }
        }
        PartitionMap {
            nodes,
            partitions: owners.len() as u32,
            bits,
            packed,
        }
    }

    /// Number of partitions.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// The distinct nodes that serve at least one partition.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// The node serving partition `p`, if any (and `None` for a forged or short map).
    pub fn owner(&self, p: u32) -> Option<NodeId> {
        if p >= self.partitions || self.bits == 0 || self.bits > 32 {
            return None;
        }
        let per_word = 64 / self.bits as usize;
        let word = *self.packed.get(p as usize / per_word)?;
        let code =
            (word >> ((p as usize % per_word) * self.bits as usize)) & ((1u64 << self.bits) - 1);
        if code == 0 {
            None
        } else {
            self.nodes.get(code as usize - 1).copied()
        }
    }

    /// The partitions served by `node`, ascending.
    pub fn partitions_of(&self, node: NodeId) -> Vec<u32> {
        (0..self.partitions)
            .filter(|&p| self.owner(p) == Some(node))
            .collect()
    }

    /// Unpacks to one optional owner per partition.
    pub fn to_owners(&self) -> Vec<Option<NodeId>> {
        (0..self.partitions).map(|p| self.owner(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_unassigned() {
        let owners: Vec<Option<NodeId>> = (0..1024u32)
            .map(|p| if p % 7 == 0 { None } else { Some(p % 3) })
            .collect();
        let map = PartitionMap::from_owners(&owners);
        assert_eq!(map.to_owners(), owners);
        assert_eq!(map.nodes(), &[0, 1, 2]);
        assert!(map
            .partitions_of(1)
            .iter()
            .all(|p| p % 3 == 1 && p % 7 != 0));
    }
}
