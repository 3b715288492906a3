//! # weir-server
//!
//! weir speaks the PostgreSQL wire protocol (version 3): `psql`, psycopg, JDBC,
//! `tokio-postgres` and every other PostgreSQL client or driver run SQL on a weir
//! [`Cluster`]. Built on the [`pgwire`] crate: its message codec, its handler traits, its
//! statement and portal store and its SCRAM-SHA-256 authentication; this crate maps them onto
//! weir.
//!
//! ```
//! use std::sync::Arc;
//! use weir_runtime::Cluster;
//! use weir_server::{ServePostgres, ServerConfig};
//!
//! let cluster = Arc::new(Cluster::builder().nodes(2).partitions(8).build().unwrap());
//! cluster.execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR)").unwrap();
//! // Port 0 picks a free port; `local_addr` tells which.
//! let server = cluster.clone().serve_postgres("127.0.0.1:0").unwrap();
//! println!("psql -h 127.0.0.1 -p {} -U weir", server.local_addr().port());
//! server.shutdown();
//! ```
//!
//! The modules: [`statement`] (what a statement is and how it is described), [`handler`]
//! (running statements: both query protocols, streaming rows), [`copy`] (COPY FROM STDIN and
//! TO STDOUT), [`types`] (OIDs and encodings), [`errors`] (SQLSTATE codes), [`auth`] (SCRAM,
//! the connection limit, cancel requests), [`tls`] (certificates), [`catalog`] (psql's
//! relation lists), [`session`]
//! (per-connection state), [`settings`] (`SET` / `SHOW` parameters) and [`split`]
//! (statements of a message). See `docs/postgres.md` for what is supported.

#![warn(missing_docs)]

pub mod auth;
pub mod block;
pub mod buffered;
pub mod catalog;
pub mod column_names;
pub mod copy;
pub mod describe;
pub mod errors;
pub mod handler;
pub mod session;
pub mod settings;
pub mod split;
pub mod statement;
pub mod tls;
pub mod types;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pgwire::api::PgWireServerHandlers;
use pgwire::tokio::process_socket;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Semaphore};
use weir_runtime::Cluster;

pub use auth::Passwords;

use auth::{Cancel, Startup};
use handler::QueryHandler;
use session::{CancelKeys, Pending, PendingConnections};

/// The port `weir serve` listens on by default: PostgreSQL's 5432 plus one, so that weir and
/// a PostgreSQL server run side by side on one machine.
pub const DEFAULT_PORT: u16 = 5433;

/// Connections accepted past the limit only to be told so (53300); past these too, a new
/// connection is closed at once.
const REFUSAL_SLACK: usize = 64;

/// How the server admits clients.
#[derive(Clone)]
pub struct ServerConfig {
    max_connections: usize,
    auth_timeout: Duration,
    passwords: Option<Passwords>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("max_connections", &self.max_connections)
            .field("auth_timeout", &self.auth_timeout)
            .field("passwords", &self.passwords)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 100,
            auth_timeout: Duration::from_secs(10),
            passwords: None,
            tls: None,
        }
    }
}

impl ServerConfig {
    /// 100 connections, 10 s to authenticate, no password.
    pub fn new() -> Self {
        ServerConfig::default()
    }

    /// At most `n` connections at once; the next is refused with SQLSTATE 53300 (as
    /// PostgreSQL's `max_connections`).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a connection may take from its first byte to being authenticated before it
    /// is closed.
    pub fn auth_timeout(mut self, timeout: Duration) -> Self {
        self.auth_timeout = timeout;
        self
    }

    /// Ask every client for a password (SCRAM-SHA-256) and check it against `passwords`.
    /// Without, any client that reaches the port is let in.
    pub fn passwords(mut self, passwords: Passwords) -> Self {
        self.passwords = Some(passwords);
        self
    }

    /// Offer TLS with this certificate chain and private key (PEM text); a client that asks
    /// for SSL gets it, one that does not is served in plain text.
    pub fn tls(mut self, cert_pem: &[u8], key_pem: &[u8]) -> io::Result<Self> {
        self.tls = Some(tls::acceptor(cert_pem, key_pem)?);
        Ok(self)
    }

    /// [`ServerConfig::tls`] with the PEM files at `cert` and `key`.
    pub fn tls_files(mut self, cert: &std::path::Path, key: &std::path::Path) -> io::Result<Self> {
        self.tls = Some(tls::acceptor_from_files(cert, key)?);
        Ok(self)
    }
}

/// The handlers pgwire calls for every connection.
struct Handlers {
    query: Arc<QueryHandler>,
    startup: Arc<Startup>,
    cancel: Arc<Cancel>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.query.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.query.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.query.clone()
    }
}

/// Serves PostgreSQL clients on `listener` until the future is dropped (or accepting fails
/// for good): for a service already running tokio. Each connection runs on a task of its
/// own; dropping the future drops them, which cancels their queries.
pub async fn serve(
    cluster: Arc<Cluster>,
    listener: TcpListener,
    config: ServerConfig,
) -> io::Result<()> {
    let pending = Arc::new(PendingConnections::default());
    let keys = Arc::new(CancelKeys::default());
    let handlers = Arc::new(Handlers {
        query: Arc::new(QueryHandler { cluster }),
        startup: Arc::new(Startup::new(
            config.passwords.clone(),
            pending.clone(),
            keys.clone(),
        )),
        cancel: Arc::new(Cancel { keys }),
    });
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // Out of file descriptors and the like: wait, then accept again.
                tracing::warn!("accepting a PostgreSQL connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if open.load(Ordering::SeqCst) >= config.max_connections + REFUSAL_SLACK {
            drop(socket);
            continue;
        }
        let permit = slots.clone().try_acquire_owned().ok();
        let (socket, watch) = match watch_handle(socket) {
            Ok(s) => s,
            Err(_) => continue,
        };
        let (authenticated, auth_rx) = oneshot::channel();
        pending.insert(
            peer,
            Pending {
                over_limit: permit.is_none(),
                watch: Some(Arc::new(watch)),
                authenticated: Some(authenticated),
            },
        );
        open.fetch_add(1, Ordering::SeqCst);
        let handlers = handlers.clone();
        let pending = pending.clone();
        let open = open.clone();
        let auth_timeout = config.auth_timeout;
        let tls = config.tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let connection = process_socket(socket, tls, handlers);
            tokio::pin!(connection);
            tokio::select! {
                r = &mut connection => {
                    if let Err(e) = r {
                        tracing::debug!("PostgreSQL connection from {peer}: {e}");
                    }
                }
                r = auth_rx => {
                    if r.is_ok() {
                        if let Err(e) = connection.await {
                            tracing::debug!("PostgreSQL connection from {peer}: {e}");
                        }
                    }
                }
                _ = tokio::time::sleep(auth_timeout) => {
                    tracing::debug!("PostgreSQL connection from {peer}: not authenticated in time");
                }
            }
            pending.take(&peer);
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The socket back, and a second handle on it that sees the client hang up.
fn watch_handle(socket: TcpStream) -> io::Result<(TcpStream, std::net::TcpStream)> {
    let std = socket.into_std()?;
    let watch = std.try_clone()?;
    Ok((TcpStream::from_std(std)?, watch))
}

/// A PostgreSQL server running on threads of its own (see [`start`]); dropping it stops it.
pub struct PostgresServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl PostgresServer {
    /// The address the server listens on (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes every connection (cancelling their queries) and waits for
    /// the server's threads to end.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Serves until the process ends (or the server fails).
    pub fn wait(mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the server thread panicked"))),
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts a PostgreSQL server for `cluster` on `addr`, on a thread of its own with a tokio
/// runtime of two worker threads; returns once it listens.
pub fn start(
    cluster: Arc<Cluster>,
    addr: impl ToSocketAddrs,
    config: ServerConfig,
) -> io::Result<PostgresServer> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("weir-postgres".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("weir-postgres")
                .enable_all()
                .build()?;
            let outcome = rt.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                tokio::select! {
                    r = serve(cluster, listener, config) => r,
                    _ = stopped => Ok(()),
                }
            });
            rt.shutdown_timeout(Duration::from_secs(5));
            outcome
        })?;
    Ok(PostgresServer {
        addr: local,
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// `cluster.serve_postgres(addr)`: lets PostgreSQL clients in to a cluster (see [`start`]).
/// Implemented for `Arc<Cluster>` (the caller keeps using the cluster) and for `Cluster`
/// (the server takes it).
pub trait ServePostgres {
    /// Serves PostgreSQL clients on `addr` with the default [`ServerConfig`] (no password,
    /// 100 connections) until the returned server is shut down or dropped.
    fn serve_postgres(self, addr: impl ToSocketAddrs) -> io::Result<PostgresServer>;

    /// [`ServePostgres::serve_postgres`] with `config`.
    fn serve_postgres_with(
        self,
        addr: impl ToSocketAddrs,
        config: ServerConfig,
    ) -> io::Result<PostgresServer>;
}

impl ServePostgres for Arc<Cluster> {
    fn serve_postgres(self, addr: impl ToSocketAddrs) -> io::Result<PostgresServer> {
        start(self, addr, ServerConfig::default())
    }

    fn serve_postgres_with(
        self,
        addr: impl ToSocketAddrs,
        config: ServerConfig,
    ) -> io::Result<PostgresServer> {
        start(self, addr, config)
    }
}

impl ServePostgres for Cluster {
    fn serve_postgres(self, addr: impl ToSocketAddrs) -> io::Result<PostgresServer> {
        start(Arc::new(self), addr, ServerConfig::default())
    }

    fn serve_postgres_with(
        self,
        addr: impl ToSocketAddrs,
        config: ServerConfig,
    ) -> io::Result<PostgresServer> {
        start(Arc::new(self), addr, config)
    }
}
