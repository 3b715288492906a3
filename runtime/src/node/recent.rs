//! A bounded set that remembers its newest members: what a node uses to recognise duplicates
//! (of start requests, closed queries, stopped receivers, finished writes) without growing
//! for ever.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;

/// Members a [`RecentSet`] keeps by default.
pub const DEFAULT_MEMORY: usize = 4096;

/// A set that forgets its oldest members beyond its capacity.
#[derive(Debug)]
pub struct RecentSet<K: Hash + Eq + Copy> {
    capacity: usize,
    members: HashSet<K>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Copy> Default for RecentSet<K> {
    fn default() -> Self {
        RecentSet::new(DEFAULT_MEMORY)
    }
}

impl<K: Hash + Eq + Copy> RecentSet<K> {
    /// An empty set keeping at most `capacity` members.
    pub fn new(capacity: usize) -> Self {
        RecentSet {
            capacity,
            members: HashSet::new(),
            order: VecDeque::new(),
        }
    }

    /// Adds `k`, forgetting the oldest member beyond the capacity; false when it was present.
    pub fn insert(&mut self, k: K) -> bool {
        if !self.members.insert(k) {
            return false;
        }
        self.order.push_back(k);
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.members.remove(&old);
            }
        }
        true
    }

    /// Whether `k` is a (remembered) member.
    pub fn contains(&self, k: &K) -> bool {
        self.members.contains(k)
    }

    /// The members, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = K> + '_ {
        self.order.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgets_the_oldest_beyond_its_capacity() {
        let mut s = RecentSet::new(2);
        assert!(s.insert(1));
        assert!(!s.insert(1));
        s.insert(2);
        s.insert(3);
        assert!(!s.contains(&1));
        assert!(s.contains(&2) && s.contains(&3));
    }
}
