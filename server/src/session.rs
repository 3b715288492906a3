//! What the server keeps per connection: the session ([`Session`]: its settings for `SET` and
//! `SHOW`, its `BEGIN` block, the query a CancelRequest cancels, and a second handle on its
//! socket that tells when the client has gone), the connections not yet authenticated
//! ([`Pending`]), and the table a CancelRequest's key is looked up in ([`CancelKeys`]).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// How often a query waiting for its next batch looks whether its client has gone.
const DISCONNECT_POLL: Duration = Duration::from_millis(50);

/// The query of a session that a CancelRequest cancels: the one started last.
#[derive(Default)]
pub struct CancelSlot {
    current: Mutex<Option<CancellationToken>>,
}

impl CancelSlot {
    /// A fresh token for a query starting now; a cancel request fires the latest one.
    pub fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(token.clone());
        token
    }

    /// Cancels the session's latest query (nothing when it has finished: its token is no
    /// longer watched).
    pub fn cancel(&self) {
        if let Some(t) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.cancel();
        }
    }
}

/// What a CancelRequest names a session by: its process id and secret key.
pub type CancelKey = (i32, Vec<u8>);

/// The sessions a CancelRequest may name, by their key.
#[derive(Default)]
pub struct CancelKeys {
    map: Mutex<HashMap<CancelKey, Arc<CancelSlot>>>,
}

impl CancelKeys {
    /// Registers a session's key; the registration ends when the returned guard drops.
    pub fn register(self: &Arc<Self>, key: CancelKey, slot: Arc<CancelSlot>) -> KeyGuard {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), slot);
        KeyGuard {
            keys: self.clone(),
            key,
        }
    }

    /// Cancels the running query of the session with this key, if there is one.
    pub fn cancel(&self, key: &CancelKey) {
        let slot = self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned();
        if let Some(slot) = slot {
            slot.cancel();
        }
    }
}

/// Unregisters a session's cancel key when the session ends.
pub struct KeyGuard {
    keys: Arc<CancelKeys>,
    key: CancelKey,
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        self.keys
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

/// A connection accepted but not yet authenticated: what its startup handler needs to know
/// about it, found by the client's address.
pub struct Pending {
    /// Past `--max-connections`: the startup handler refuses it (53300).
    pub over_limit: bool,
    /// A second handle on the socket, to see the client hang up while a query runs.
    pub watch: Option<Arc<std::net::TcpStream>>,
    /// Fired once the client has authenticated, which stops the authentication timer.
    pub authenticated: Option<oneshot::Sender<()>>,
}

/// The connections being set up, by client address.
#[derive(Default)]
pub struct PendingConnections {
    map: Mutex<HashMap<SocketAddr, Pending>>,
}

impl PendingConnections {
    /// Records a connection just accepted.
    pub fn insert(&self, peer: SocketAddr, pending: Pending) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(peer, pending);
    }

    /// Takes the record of the connection from `peer` (its startup handler does, once).
    pub fn take(&self, peer: &SocketAddr) -> Option<Pending> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(peer)
    }

    /// Whether the connection from `peer` is past the connection limit (it stays recorded).
    pub fn over_limit(&self, peer: &SocketAddr) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(peer)
            .is_some_and(|p| p.over_limit)
    }
}

/// One client's session, kept in its connection's session extensions.
pub struct Session {
    /// The process id the client was given (its BackendKeyData).
    pub pid: i32,
    /// The query a CancelRequest for this session cancels.
    pub cancel: Arc<CancelSlot>,
    /// Unregisters the cancel key when the session ends.
    pub _key: Option<KeyGuard>,
    /// A second handle on the client's socket (see [`Session::client_gone`]).
    pub watch: Option<Arc<std::net::TcpStream>>,
    /// Run-time parameters: those the client sent at startup, then `SET`.
    pub settings: Mutex<BTreeMap<String, String>>,
    /// The `BEGIN` block.
    pub block: Mutex<crate::block::Block>,
    /// The COPY FROM STDIN under way.
    pub copy_in: Mutex<Option<crate::copy::CopyIn>>,
    /// The sequence values the session was handed (`currval`, `lastval`): every statement
    /// runs in it.
    pub sequences: weir_runtime::Session,
}

impl Session {
    /// The value of run-time parameter `name` (case-insensitive).
    pub fn setting(&self, name: &str) -> Option<String> {
        self.settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    /// Sets run-time parameter `name` (case-insensitive).
    pub fn set(&self, name: &str, value: String) {
        self.settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_ascii_lowercase(), value);
    }

    /// The block's state, changed by `f`.
    pub fn with_block<T>(&self, f: impl FnOnce(&mut crate::block::Block) -> T) -> T {
        f(&mut self.block.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Resolves once the client has closed its end of the connection, or sent Terminate
    /// (never, for a session without a watch handle). A client that sent other messages
    /// ahead is not taken for gone.
    pub async fn client_gone(&self) {
        /// A Terminate message: what a polite client sends before it closes.
        const TERMINATE: [u8; 5] = [b'X', 0, 0, 0, 4];
        let Some(watch) = &self.watch else {
            return std::future::pending().await;
        };
        // First look once the query has waited a while: a batch that comes at once costs no
        // system call.
        let first = tokio::time::Instant::now() + DISCONNECT_POLL;
        let mut ticker = tokio::time::interval_at(first, DISCONNECT_POLL);
        loop {
            ticker.tick().await;
            let mut head = [0u8; 5];
            match watch.peek(&mut head) {
                Ok(0) => return,
                Ok(5) if head == TERMINATE => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}
