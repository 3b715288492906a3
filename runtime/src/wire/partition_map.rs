//! Compact partition assignments for start requests.
//!
//! Instead of a list of node ids for every partition, a map carries the distinct nodes once
//! and one packed small integer per partition (just enough bits for the node count plus
//! "unassigned"). 1024 partitions over 3 nodes fit in 256 bytes.

use crate::wire::ids::NodeId;
use serde::{Deserialize, Serialize};

/// Which node serves each partition, packed. A decoded map is checked: its nodes sorted and
/// distinct, a field width that holds their codes, as many words as its partitions need, and
/// no code past its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct PartitionMap {
    nodes: Vec<NodeId>,
    partitions: u32,
    bits: u8,
    packed: Vec<u64>,
}

crate::wire::codec::checked_serde!(PartitionMap);

impl weir_operators::decode::Checked for PartitionMap {
    fn check(&self) -> Result<(), String> {
        if self.nodes.windows(2).any(|w| w[0] >= w[1]) {
            return Err("a partition map's nodes are not sorted and distinct".into());
        }
        let needed = (usize::BITS - self.nodes.len().leading_zeros()).max(1);
        if !(needed..=32).contains(&u32::from(self.bits)) {
            return Err(format!(
                "a partition map of {} nodes with {}-bit codes",
                self.nodes.len(),
                self.bits
            ));
        }
        let per_word = 64 / self.bits as usize;
        let words = (self.partitions as usize).div_ceil(per_word);
        if self.packed.len() != words {
            return Err(format!(
                "a partition map of {} partitions in {} words, not {words}",
                self.partitions,
                self.packed.len()
            ));
        }
        let mask = (1u64 << self.bits) - 1;
        let codes = self.packed.iter().flat_map(|&w| {
            (0..per_word).map(move |slot| (w >> (slot * self.bits as usize)) & mask)
        });
        if codes
            .take(self.partitions as usize)
            .any(|c| c > self.nodes.len() as u64)
        {
            return Err("a partition map names a node it does not list".into());
        }
        Ok(())
    }
}

impl PartitionMap {
    /// Packs `owners[p]` (the node serving partition `p`, or `None`).
    pub fn from_owners(owners: &[Option<NodeId>]) -> Self {
        // The distinct nodes, sorted: few, so a linear look beats sorting every owner.
        let mut nodes: Vec<NodeId> = Vec::new();
        let mut last = None;
        for &node in owners.iter().flatten() {
            if last != Some(node) && !nodes.contains(&node) {
                nodes.push(node);
            }
            last = Some(node);
        }
        nodes.sort_unstable();
        // Code 0 means unassigned; node i is code i + 1.
        let bits = (usize::BITS - nodes.len().leading_zeros()).max(1) as u8;
        let per_word = 64 / bits as usize;
        let mut packed = vec![0u64; owners.len().div_ceil(per_word)];
        let mut last: Option<(NodeId, u64)> = None;
        for (p, owner) in owners.iter().enumerate() {
            if let Some(node) = *owner {
                let code = match last {
                    Some((n, code)) if n == node => code,
                    _ => nodes.binary_search(&node).map_or(0, |i| i as u64 + 1),
                };
                last = Some((node, code));
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
        let Ok(i) = self.nodes.binary_search(&node) else {
            return Vec::new();
        };
        if self.bits == 0 || self.bits > 32 {
            return Vec::new();
        }
        let bits = self.bits as usize;
        let per_word = 64 / bits;
        // The lowest bit of every field, and the node's code in every field.
        let lows = (0..per_word).fold(0u64, |m, slot| m | 1 << (slot * bits));
        let pattern = lows.wrapping_mul(i as u64 + 1);
        // A first guess at the share of one node, bounded: the map came from another node.
        let guess = (self.partitions as usize / self.nodes.len()).min(1 << 16);
        let mut out = Vec::with_capacity(guess);
        // Word by word, all fields at once: a field equals the code where `word ^ pattern`
        // has no bit set in it; OR-ing the field's bits down onto its lowest bit finds those.
        for (w, &word) in self.packed.iter().enumerate() {
            let diff = word ^ pattern;
            let mut set = diff;
            for k in 1..bits {
                set |= diff >> k;
            }
            let mut hits = !set & lows;
            while hits != 0 {
                let p = (w * per_word + hits.trailing_zeros() as usize / bits) as u32;
                if p >= self.partitions {
                    break;
                }
                out.push(p);
                hits &= hits - 1;
            }
        }
        out
    }

    /// Unpacks to one optional owner per partition.
    pub fn to_owners(&self) -> Vec<Option<NodeId>> {
        (0..self.partitions).map(|p| self.owner(p)).collect()
    }
}

/// Encoded sizes of one partition assignment in both encodings: `(compact, list)`, where
/// `list` is the uncompacted form, a list of 16-byte node ids for every partition.
pub fn encoded_sizes(owners: &[Option<NodeId>]) -> (usize, usize) {
    let compact =
        crate::wire::codec::encode(&PartitionMap::from_owners(owners)).map_or(0, |b| b.len());
    let list: Vec<Vec<[u8; 16]>> = owners
        .iter()
        .map(|o| {
            o.iter()
                .map(|n| {
                    let mut id = [0u8; 16];
                    id[..4].copy_from_slice(&n.to_le_bytes());
                    id
                })
                .collect()
        })
        .collect();
    let list = crate::wire::codec::encode(&list).map_or(0, |b| b.len());
    (compact, list)
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

    #[test]
    fn compact_is_a_twentieth_of_the_list() {
        // Owners scattered as a hash spreads them (no runs to compress).
        let owners: Vec<Option<NodeId>> = (0..1024u64)
            .map(|p| Some((p.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61) as NodeId % 3))
            .collect();
        let (compact, list) = encoded_sizes(&owners);
        assert!(
            compact * 20 <= list,
            "compact {compact} bytes, list {list} bytes"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        #[test]
        fn round_trips_and_lists_each_nodes_partitions_for_any_shape(
            nodes in 1u32..=64,
            partitions in 1usize..=65536,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let mut x = seed | 1;
            let owners: Vec<Option<NodeId>> = (0..partitions)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let r = (x % (nodes as u64 + 1)) as u32;
                    (r < nodes).then_some(r * 7 + 3)
                })
                .collect();
            let map = PartitionMap::from_owners(&owners);
            proptest::prop_assert_eq!(map.to_owners(), owners.clone());
            let mut served: std::collections::BTreeMap<NodeId, Vec<u32>> = Default::default();
            for (p, owner) in owners.iter().enumerate() {
                if let Some(n) = owner {
                    served.entry(*n).or_default().push(p as u32);
                }
            }
            proptest::prop_assert_eq!(map.nodes(), served.keys().copied().collect::<Vec<_>>());
            for (node, ps) in &served {
                proptest::prop_assert_eq!(&map.partitions_of(*node), ps, "node {}", node);
            }
            // Owners are 3, 10, 17, ...: node 4 serves nothing.
            proptest::prop_assert!(map.partitions_of(4).is_empty());
            let decoded: PartitionMap =
                crate::wire::codec::decode(&crate::wire::codec::encode(&map).unwrap()).unwrap();
            proptest::prop_assert_eq!(decoded.to_owners(), owners);
        }
    }

    /// Maps forged with a huge partition count, too few words, codes past the nodes, a
    /// field too narrow or nodes out of order are refused at decode: none is ever asked for
    /// its partitions.
    #[test]
    fn forged_maps_are_refused_when_decoded() {
        #[derive(serde::Serialize)]
        struct Raw {
            nodes: Vec<NodeId>,
            partitions: u32,
            bits: u8,
            packed: Vec<u64>,
        }
        let decode = |r: Raw| {
            let bytes = crate::wire::codec::encode(&r).unwrap();
            crate::wire::codec::decode::<PartitionMap>(&bytes)
        };
        let ok = Raw {
            nodes: vec![0, 2],
            partitions: 40,
            bits: 2,
            packed: vec![0x5555_5555, 0xA],
        };
        assert_eq!(decode(ok).unwrap().partitions_of(2), vec![32, 33]);
        for (bad, why) in [
            (
                Raw {
                    nodes: vec![0],
                    partitions: u32::MAX,
                    bits: 1,
                    packed: vec![u64::MAX],
                },
                "words",
            ),
            (
                Raw {
                    nodes: vec![0],
                    partitions: 3,
                    bits: 2,
                    packed: vec![0b11],
                },
                "does not list",
            ),
            (
                Raw {
                    nodes: vec![0, 1, 2],
                    partitions: 3,
                    bits: 1,
                    packed: vec![0],
                },
                "codes",
            ),
            (
                Raw {
                    nodes: vec![2, 1],
                    partitions: 3,
                    bits: 2,
                    packed: vec![0],
                },
                "sorted",
            ),
        ] {
            let e = decode(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
