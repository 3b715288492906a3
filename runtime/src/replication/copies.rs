//! Where the copies of a table's partitions live: each partition is ranked over the data
//! nodes by rendezvous hashing (highest random weight), so that adding a node moves only the
//! partitions the new node wins; the first in rank is the primary, the next `backups` the
//! backups.

use crate::wire::ids::NodeId;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Data nodes ranked for partition `p`, best first (rendezvous / highest-random-weight).
pub fn rank_nodes(p: u32, data_nodes: u32) -> Vec<NodeId> {
    let mut ranked: Vec<(u64, NodeId)> = (0..data_nodes)
        .map(|n| (mix(((p as u64) << 32) ^ mix(n as u64 + 1)), n))
        .collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    ranked.into_iter().map(|(_, n)| n).collect()
}

/// The primary owner of every partition.
pub fn owners(partitions: u32, data_nodes: u32) -> Vec<NodeId> {
    (0..partitions)
        .map(|p| rank_nodes(p, data_nodes)[0])
        .collect()
}

/// The copies of every partition: the primary, then `backups` backups on distinct nodes (the
/// next in rendezvous order).
pub fn copies(partitions: u32, data_nodes: u32, backups: usize) -> Vec<Vec<NodeId>> {
    (0..partitions)
        .map(|p| {
            let mut ranked = rank_nodes(p, data_nodes);
            ranked.truncate(backups + 1);
            ranked
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_spreads_and_is_stable_when_a_node_is_added() {
        let three = owners(1024, 3);
        for n in 0..3 {
            let c = three.iter().filter(|&&o| o == n).count();
            assert!((250..450).contains(&c), "node {n} owns {c} partitions");
        }
        let four = owners(1024, 4);
        // Only partitions moving to the new node change owner.
        assert!(three.iter().zip(&four).all(|(a, b)| a == b || *b == 3));
    }
}
