//! A session's transaction block. weir commits every statement as it runs, so a block only
//! tracks what drivers are told: whether `BEGIN` opened one, how many statements wrote in it
//! (so that `ROLLBACK` can warn that it undoes nothing), and its savepoints (so that
//! `ROLLBACK TO SAVEPOINT` can do the same, and an unknown name is an error as in PostgreSQL).

use pgwire::error::{PgWireError, PgWireResult};

use crate::errors::user_error;

/// Whether a `BEGIN` block is open and how many writes ran in it (each committed as it ran).
#[derive(Default, Clone, Debug)]
pub struct Block {
    /// `BEGIN` was given and no `COMMIT` or `ROLLBACK` yet.
    pub open: bool,
    /// Statements that wrote since `BEGIN`.
    pub writes: u64,
    /// The block's savepoints, oldest first: each name with the writes counted when it was set.
    pub savepoints: Vec<(String, u64)>,
}

impl Block {
    /// `BEGIN`: a fresh block.
    pub fn begin(&mut self) {
        *self = Block {
            open: true,
            ..Default::default()
        };
    }

    /// `COMMIT` or `ROLLBACK`: the block ends; how many statements wrote in it.
    pub fn end(&mut self) -> u64 {
        std::mem::take(self).writes
    }

    /// A statement wrote (counted inside a block only).
    pub fn wrote(&mut self) {
        if self.open {
            self.writes += 1;
        }
    }

    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: &str) -> PgWireResult<()> {
        if !self.open {
            return Err(not_in_block("SAVEPOINT"));
        }
        self.savepoints.push((name.to_string(), self.writes));
        Ok(())
    }

    /// `RELEASE SAVEPOINT name`: it and the savepoints set after it go.
    pub fn release(&mut self, name: &str) -> PgWireResult<()> {
        let at = self.find("RELEASE SAVEPOINT", name)?;
        self.savepoints.truncate(at);
        Ok(())
    }

    /// `ROLLBACK TO SAVEPOINT name`: the savepoints set after it go, it stays; how many
    /// statements wrote since it (none of which is undone).
    pub fn rollback_to(&mut self, name: &str) -> PgWireResult<u64> {
        let at = self.find("ROLLBACK TO SAVEPOINT", name)?;
        self.savepoints.truncate(at + 1);
        Ok(self.writes - self.savepoints[at].1)
    }

    /// Where savepoint `name` is (the latest of that name, compared as names are), or the
    /// error for `what` (outside a block: 25P01; no such savepoint: 3B001).
    fn find(&self, what: &str, name: &str) -> PgWireResult<usize> {
        if !self.open {
            return Err(not_in_block(what));
        }
        self.savepoints
            .iter()
            .rposition(|(n, _)| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| user_error("3B001", format!("savepoint \"{name}\" does not exist")))
    }
}

/// The error for `what` outside a `BEGIN` block, as PostgreSQL gives it (25P01).
fn not_in_block(what: &str) -> PgWireError {
    user_error(
        "25P01",
        format!("{what} can only be used in transaction blocks"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_to_counts_the_writes_since_its_savepoint() {
        let mut b = Block::default();
        assert!(b.savepoint("a").is_err(), "no block yet");
        b.begin();
        b.wrote();
        b.savepoint("a").unwrap();
        b.wrote();
        b.savepoint("b").unwrap();
        b.wrote();
        assert_eq!(b.rollback_to("A").unwrap(), 2);
        assert!(b.release("b").is_err(), "b went with the rollback to a");
        b.release("a").unwrap();
        assert!(b.rollback_to("a").is_err());
        assert_eq!(b.end(), 3);
        assert!(!b.open);
    }
}
