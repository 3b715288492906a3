//! A client's blocks of sequence values ([`super::sequences`]): for each sequence, the
//! values this client reserved and has not handed out yet.

use std::collections::HashMap;
use weir_planner::SequenceName;

/// `left` values of a sequence from `next` on, `step` apart, reserved by this client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The schema version that made the sequence (one made again is another sequence).
    pub made: u64,
    /// The next value to hand out.
    pub next: i64,
    /// The step between values (the sequence's increment; 1 for a column's sequence).
    pub step: i64,
    /// How many values are left.
    pub left: i64,
}

impl Block {
    /// The value after the block's last: what the sequence hands out once the block is
    /// reserved (saturating past the type's bounds, where the sequence ends anyway).
    pub fn end(&self) -> i64 {
        let end = i128::from(self.next) + i128::from(self.left) * i128::from(self.step);
        end.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// A client's blocks, by sequence.
#[derive(Debug, Default)]
pub struct Blocks(HashMap<SequenceName, Block>);

impl Blocks {
    /// Hands out up to `n` values of the block of `sequence` into `out`, if this client
    /// holds one of the sequence made at schema version `made`; returns how many it handed
    /// out.
    pub fn take(
        &mut self,
        sequence: &SequenceName,
        made: u64,
        n: usize,
        out: &mut Vec<i64>,
    ) -> usize {
        let Some(block) = self.0.get_mut(sequence).filter(|b| b.made == made) else {
            return 0;
        };
        let take = block.left.clamp(0, n as i64);
        for _ in 0..take {
            out.push(block.next);
            block.next = block.next.wrapping_add(block.step);
        }
        block.left -= take;
        take as usize
    }

    /// Keeps `block` as the block of `sequence` (replacing the one before, used up or of a
    /// sequence dropped since).
    pub fn put(&mut self, sequence: SequenceName, block: Block) {
        self.0.insert(sequence, block);
    }

    /// Forgets this client's block of `sequence` (after `setval`, which the values of a
    /// block reserved before it would not follow).
    pub fn forget(&mut self, sequence: &SequenceName) {
        self.0.remove(sequence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_hands_out_each_value_once_and_only_for_its_sequence() {
        let key = SequenceName::Column {
            table: "t".into(),
            column: "id".into(),
        };
        let mut blocks = Blocks::default();
        let mut out = Vec::new();
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 0);
        let block = Block {
            made: 1,
            next: 10,
            step: 1,
            left: 4,
        };
        assert_eq!(block.end(), 14);
        blocks.put(key.clone(), block);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 3);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 1);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 0);
        assert_eq!(out, vec![10, 11, 12, 13]);
        // The table was made again: the block is of the old sequence.
        blocks.put(key.clone(), Block { next: 20, ..block });
        assert_eq!(blocks.take(&key, 2, 3, &mut out), 0);
        blocks.forget(&key);
        assert_eq!(blocks.take(&key, 1, 3, &mut out), 0);
    }

    #[test]
    fn a_block_of_a_sequence_with_a_step_hands_out_its_values_that_far_apart() {
        let key = SequenceName::Named("s".into());
        let mut blocks = Blocks::default();
        let block = Block {
            made: 1,
            next: 100,
            step: -50,
            left: 3,
        };
        assert_eq!(block.end(), -50);
        blocks.put(key.clone(), block);
        let mut out = Vec::new();
        assert_eq!(blocks.take(&key, 1, 5, &mut out), 3);
        assert_eq!(out, vec![100, 50, 0]);
    }
}
