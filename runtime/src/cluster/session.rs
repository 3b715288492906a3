//! A client's session: the state PostgreSQL keeps per connection that weir's statements
//! read, the sequence values the session was handed (`currval('s')`, `lastval()`).
//!
//! A [`Session`] is made by its client (a connection of `weir serve`, a service's user) and
//! holds nothing of the cluster's: the calls a client makes inside [`Session::run`] record
//! every value `nextval` (a `SERIAL` column's, a `DEFAULT nextval('s')`) hands them, and
//! `setval(s, v)` with `called`, and `SELECT currval('s')` / `SELECT lastval()` inside it
//! read them back. Outside any session every call is a session of its own: `currval` there
//! is "not yet defined in this session", as PostgreSQL says of a session that never called
//! `nextval`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use weir_planner::SequenceName;

use crate::error::{Error, Result};

/// The sequence values one client's session was handed (see the module comment).
///
/// ```
/// use weir_runtime::{Cluster, Session};
/// let cluster = Cluster::builder().nodes(1).build().unwrap();
/// cluster.execute("CREATE TABLE t (id SERIAL PRIMARY KEY, v BIGINT)").unwrap();
/// let session = Session::new();
/// session.run(|| cluster.execute("INSERT INTO t (v) VALUES (10), (20)")).unwrap();
/// let id = session.run(|| cluster.query("SELECT currval('t_id_seq')", &[])).unwrap();
/// assert_eq!(id.rows(), vec![vec![2.into()]]);
/// // Another session was handed nothing.
/// assert!(Session::new().run(|| cluster.query("SELECT currval('t_id_seq')", &[])).is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Session {
    values: Arc<Mutex<Values>>,
}

/// What a session was handed.
#[derive(Debug, Default)]
struct Values {
    /// Each sequence's last value (`currval`).
    last: HashMap<SequenceName, i64>,
    /// The sequence `nextval` last took a value of (`lastval`).
    last_used: Option<SequenceName>,
}

thread_local! {
    /// The session of the call running on this thread, if it runs in one.
    static CURRENT: RefCell<Option<Session>> = const { RefCell::new(None) };
}

/// Puts the session that was current back when a [`Session::run`] ends (or unwinds).
struct Restore(Option<Session>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Session {
    /// A session that was handed nothing yet.
    pub fn new() -> Session {
        Session::default()
    }

    /// Runs `f` in this session: the cluster calls `f` makes on this thread record the
    /// sequence values they are handed here, and `currval`/`lastval` read them from here.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// `currval(sequence)` of this session: the last value it was handed.
    pub fn current(&self, sequence: &SequenceName) -> Option<i64> {
        self.lock().last.get(sequence).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Values> {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Records that `nextval` handed `value` of `sequence` to the session of this thread's call.
pub(crate) fn handed(sequence: &SequenceName, value: i64) {
    CURRENT.with(|c| {
        if let Some(session) = c.borrow().as_ref() {
            let mut values = session.lock();
            values.last.insert(sequence.clone(), value);
            values.last_used = Some(sequence.clone());
        }
    });
}

/// Records that `setval` set `sequence`'s last handed value to `value` (`called`): `currval`
/// reads it, `lastval` does not (as in PostgreSQL).
pub(crate) fn set(sequence: &SequenceName, value: i64) {
    CURRENT.with(|c| {
        if let Some(session) = c.borrow().as_ref() {
            session.lock().last.insert(sequence.clone(), value);
        }
    });
}

/// `currval(sequence)` in the session of this thread's call.
pub(crate) fn currval(sequence: &SequenceName) -> Result<i64> {
    let value = CURRENT.with(|c| c.borrow().as_ref().and_then(|s| s.current(sequence)));
    value.ok_or_else(|| {
        Error::SequenceUndefined(format!(
            "currval of sequence \"{sequence}\" is not yet defined in this session"
        ))
    })
}

/// `lastval()` in the session of this thread's call: the value `nextval` last handed it, of
/// any sequence (an error if that sequence was dropped since).
pub(crate) fn lastval(exists: impl Fn(&SequenceName) -> bool) -> Result<i64> {
    let last = CURRENT.with(|c| {
        c.borrow().as_ref().and_then(|s| {
            let values = s.lock();
            let sequence = values.last_used.clone()?;
            let value = values.last.get(&sequence).copied();
            Some((sequence, value))
        })
    });
    match last {
        None => Err(Error::SequenceUndefined(
            "lastval is not yet defined in this session".into(),
        )),
        Some((sequence, _)) if !exists(&sequence) => Err(Error::SequenceUndefined(
            "lastval is not yet defined in this session (its sequence was dropped)".into(),
        )),
        Some((_, value)) => value.ok_or_else(|| {
            Error::SequenceUndefined("lastval is not yet defined in this session".into())
        }),
    }
}
