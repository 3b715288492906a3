//! A client's blocks of sequence values ([`super::sequences`]): for each sequence, the
//! values this client reserved and has not handed out yet.

use std::collections::HashMap;

/// Values `next..end` of a sequence, reserved by this client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The schema version that made the table (a table made again has a new sequence).
    pub made: u64,
    /// The next value to hand out.
    pub next: i64,
    /// The first value beyond the block.
    pub end: i64,
}

/// A client's blocks, by lowercase table and column name.
#[derive(Debug, Default)]
pub struct Blocks(HashMap<(String, String), Block>);

impl Blocks {
    /// Hands out up to `n` values of the block of `key` into `out`, if this client holds one
    /// of the sequence made at schema version `made`; returns how many it handed out.
    pub fn take(
        &mut self,
        key: &(String, String),
        made: u64,
        n: usize,
        out: &mut Vec<i64>,
    ) -> usize {
        let Some(block) = self.0.get_mut(key).filter(|b| b.made == made) else {
            return 0;
        };
        let take = (block.end - block.next).clamp(0, n as i64);
        out.extend(block.next..block.next + take);
        block.next += take;
        take as usize
    }

    /// Keeps `block` as the block of `key` (replacing the one before, used up or of a
    /// sequence dropped since).
    pub fn put(&mut self, key: (String, String), block: Block) {
        self.0.insert(key, block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_hands_out_each_value_once_and_only_for_its_sequence() {
        let key = ("t".to_string(), "id".to_string());
        let mut blocks = Blocks::default();
        let mut out = Vec::new();
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 0);
        blocks.put(
            key.clone(),
            Block {
                made: 1,
                next: 10,
                end: 14,
            },
        );
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 3);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 1);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 0);
        assert_eq!(out, vec![10, 11, 12, 13]);
        // The table was made again: the block is of the old sequence.
        blocks.put(
            key.clone(),
            Block {
                made: 1,
                next: 20,
                end: 30,
            },
        );
        assert_eq!(blocks.take(&key, 2, 3, &mut out), 0);
    }
}
