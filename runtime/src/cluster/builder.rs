//! Configuring a cluster before it starts.

use crate::memory::breaker::{BreakerConfig, JoinMode, KillPolicy};
use crate::memory::pool::DEFAULT_NODE_MEMORY;
use crate::node::journal::JournalConfig;
use crate::wire::framing::{Secret, TlsFiles};
use crate::wire::messages::Protocol;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use weir_storage::disk::Disk;
use weir_storage::Durability;

/// Client slots: a client of node processes has the id of the number of data nodes plus one
/// of these.
pub const CLIENT_SLOTS: u32 = 1024;

/// Configures and starts a [`Cluster`](crate::Cluster).
///
/// ```
/// use std::time::Duration;
/// use weir_runtime::{Cluster, Protocol};
/// let cluster = Cluster::builder()
///     .nodes(2) // data nodes, plus the client node
///     .partitions(8) // per table
///     .batch_size(4096) // rows per batch
///     .window(4) // credit window per edge, in batches
///     .protocol(Protocol::Lean)
///     .query_timeout(Duration::from_secs(10))
///     .build()
///     .unwrap();
/// assert_eq!(cluster.data_nodes(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    pub(super) nodes: usize,
    pub(super) partitions: u32,
    pub(super) batch_size: usize,
    pub(super) window: usize,
    pub(super) window_bytes: Option<usize>,
    pub(super) protocol: Protocol,
    pub(super) node_memory: usize,
    pub(super) query_timeout: Duration,
    pub(super) plan_cache: usize,
    pub(super) fragment_cache: usize,
    pub(super) join_mode: JoinMode,
    pub(super) breaker: BreakerConfig,
    pub(super) seed: u64,
    pub(super) backups: usize,
    pub(super) idle_spin: Duration,
    pub(super) threads: Option<usize>,
    pub(super) connect: Vec<String>,
    pub(super) secret: Option<Secret>,
    pub(super) tls: Option<TlsFiles>,
    pub(super) client_slot: Option<u32>,
    pub(super) slot_draws: Vec<u32>,
    pub(super) data_dir: Option<PathBuf>,
    pub(super) durability: Durability,
    pub(super) checkpoint_bytes: u64,
    pub(super) disk: Option<DiskSeam>,
    pub(super) max_value_bytes: usize,
    pub(super) max_recursion: usize,
    pub(super) prepared_write_ttl: Duration,
    pub(super) write_piece_bytes: usize,
    pub(super) copy_dirs: Option<Vec<PathBuf>>,
    pub(super) spill_quota: u64,
    pub(super) peer_silence: Option<(Duration, Duration)>,
    pub(super) join_filters: bool,
}

/// A file system for the nodes' directories other than the real one (tests inject faults).
#[derive(Clone)]
pub(super) struct DiskSeam(pub(super) Arc<dyn Disk>);

impl std::fmt::Debug for DiskSeam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DiskSeam")
    }
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            nodes: 3,
            partitions: 1024,
            batch_size: weir_operators::DEFAULT_BATCH_SIZE,
            window: 4,
            window_bytes: None,
            protocol: Protocol::Lean,
            node_memory: DEFAULT_NODE_MEMORY,
            query_timeout: Duration::from_secs(30),
            plan_cache: 1024,
            fragment_cache: crate::dispatch::start::DEFAULT_FRAGMENT_CACHE,
            join_mode: JoinMode::Guarded,
            breaker: BreakerConfig::default(),
            seed: 0x5eed,
            backups: 0,
            idle_spin: crate::exec::idle::DEFAULT_IDLE_SPIN,
            threads: None,
            connect: Vec::new(),
            secret: None,
            tls: None,
            peer_silence: None,
            client_slot: None,
            slot_draws: Vec::new(),
            data_dir: None,
            durability: Durability::Fsync,
            checkpoint_bytes: crate::node::journal::DEFAULT_CHECKPOINT_BYTES,
            disk: None,
            max_value_bytes: weir_operators::limits::DEFAULT_MAX_VALUE_BYTES,
            max_recursion: weir_planner::catalog::DEFAULT_MAX_RECURSION,
            prepared_write_ttl: crate::dispatch::node_actor::DEFAULT_PREPARED_WRITE_TTL,
            write_piece_bytes: crate::wire::messages::MAX_WRITE_PIECE_BYTES,
            copy_dirs: None,
            spill_quota: crate::node::spill::DEFAULT_SPILL_QUOTA,
            join_filters: true,
        }
    }
}

impl ClusterBuilder {
    /// Number of data nodes (default 3). A client node that holds no data is always added.
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n.max(1);
        self
    }

    /// Partitions per table (default 1024).
    pub fn partitions(mut self, p: u32) -> Self {
        self.partitions = p.max(1);
        self
    }

    /// Rows per batch (default [`weir_operators::DEFAULT_BATCH_SIZE`], 4096).
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// Credit window: batches a producer may have unconsumed on an edge (default 4).
    pub fn window(mut self, batches: usize) -> Self {
        self.window = batches.max(1);
        self
    }

    /// Byte window: bytes of rows a producer may have unconsumed on an edge or exchange
    /// channel, besides the batch window (default 1 MiB per batch of the window: 4 MiB). A
    /// single batch larger than this goes alone.
    pub fn window_bytes(mut self, bytes: usize) -> Self {
        self.window_bytes = Some(bytes.max(1));
        self
    }

    /// The byte window in effect (see [`ClusterBuilder::window_bytes`]).
    pub fn byte_window(&self) -> usize {
        self.window_bytes
            .unwrap_or(self.window * crate::exec::edge::DEFAULT_BYTES_PER_BATCH)
    }

    /// Message workflow (default [`Protocol::Lean`]).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Memory budget of each node in bytes (default 512 MiB).
    pub fn node_memory(mut self, bytes: usize) -> Self {
        self.node_memory = bytes;
        self
    }

    /// Connected to data nodes of other processes ([`ClusterBuilder::connect`]): how soon
    /// the client declares a silent data node down. It sends a heartbeat on every link each
    /// `heartbeat` and counts a node that sent nothing for `dead_after` down (defaults:
    /// 500 ms and 2 s). Shorter finds a dead node sooner (a write waits less for it);
    /// longer rides out pauses (a node starved of CPU is not taken for dead). Ignored by an
    /// in-process cluster; `heartbeat` must be shorter than `dead_after`.
    pub fn peer_silence(mut self, heartbeat: Duration, dead_after: Duration) -> Self {
        self.peer_silence = Some((heartbeat, dead_after));
        self
    }

    /// A query that has not finished after this long fails (default 30 s).
    pub fn query_timeout(mut self, timeout: Duration) -> Self {
        self.query_timeout = timeout;
        self
    }

    /// Plans kept in the plan cache (default 1024).
    pub fn plan_cache(mut self, entries: usize) -> Self {
        self.plan_cache = entries;
        self
    }

    /// Fragment plans each node keeps, by key (default 1024). A node may evict any of them:
    /// a query naming an evicted plan is started again with the full plan.
    pub fn fragment_cache(mut self, entries: usize) -> Self {
        self.fragment_cache = entries;
        self
    }

    /// How hash joins treat memory (default [`JoinMode::Guarded`]).
    pub fn join_mode(mut self, mode: JoinMode) -> Self {
        self.join_mode = mode;
        self
    }

    /// Whether hash joins send a filter of their build keys to the senders of their probe
    /// side, which drop the probe rows that cannot match before they cross the exchange
    /// (default on; off to measure what the filters save).
    pub fn join_filters(mut self, on: bool) -> Self {
        self.join_filters = on;
        self
    }

    /// Memory circuit breaker settings.
    pub fn breaker(mut self, config: BreakerConfig) -> Self {
        self.breaker = config;
        self
    }

    /// Which joins a breaker trip kills (default [`KillPolicy::RandomHalf`]).
    pub fn kill_policy(mut self, policy: KillPolicy) -> Self {
        self.breaker.kill_policy = policy;
        self
    }

    /// Whether queries whose join was killed are re-enqueued (default true).
    pub fn retry_killed(mut self, retry: bool) -> Self {
        self.breaker.retry_killed = retry;
        self
    }

    /// Backup copies of every partition, on distinct nodes (default 0). Writes go to every
    /// copy; queries read the first live one. A client of nodes in other processes
    /// ([`ClusterBuilder::connect`]) takes the cluster's instead once its catalog log has
    /// them: the first schema change of any client fixes them.
    pub fn backups(mut self, n: usize) -> Self {
        self.backups = n;
        self
    }

    /// Seed of every random choice (kill victims, backoff jitter).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How long a node's thread, and a caller waiting for rows, look for work before they
    /// sleep (default [`DEFAULT_IDLE_SPIN`](crate::exec::idle::DEFAULT_IDLE_SPIN); zero sleeps at
    /// once). Spinning yields the CPU to any thread that wants it; it makes the hand-offs of a
    /// short query cheap, at the price of up to this much CPU each time a thread runs out of
    /// work. See [`crate::exec::idle`].
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.idle_spin = spin;
        self
    }

    /// Actor threads the simulated nodes share (default: as many as the machine has cores,
    /// at most one per node). Node `i` (the client node last) runs on thread `i % threads`;
    /// each node still has its own actors, mailboxes, memory and failures, and a message
    /// between two nodes is serialized whether or not they share a thread. Fewer threads than
    /// nodes saves the thread wake-ups that hand-offs between nodes cost when the nodes
    /// outnumber the cores; one thread per node is `threads(usize::MAX)`.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let builder = Cluster::builder().nodes(3).threads(2);
    /// assert_eq!(builder.node_threads(), 2);
    /// assert_eq!(builder.threads(usize::MAX).node_threads(), 4); // 3 data nodes + the client
    /// ```
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads.max(1));
        self
    }

    /// The actor threads a cluster in this process starts (see [`ClusterBuilder::threads`]).
    pub fn node_threads(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        self.threads.unwrap_or(cores).clamp(1, self.nodes + 1)
    }

    /// Makes this process the client node of a cluster of data nodes running in other
    /// processes (`weir node`), listening at `addrs`: the data node at `addrs[i]` is node `i`
    /// and must have been started with `--id i`. Needs [`ClusterBuilder::secret`] or
    /// [`ClusterBuilder::tls`] (as the nodes were started); the number
    /// of data nodes is the number of addresses. Every client of one cluster must be built
    /// with the same [`ClusterBuilder::backups`] (the copies' placement depends on it).
    ///
    /// ```no_run
    /// use weir_runtime::Cluster;
    /// use weir_runtime::wire::framing::Secret;
    /// let secret = Secret::from_file("secret".as_ref()).unwrap();
    /// let cluster = Cluster::builder()
    ///     .connect(&["127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"])
    ///     .secret(secret)
    ///     .build()
    ///     .unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT)").unwrap();
    /// ```
    pub fn connect<A: ToString>(mut self, addrs: &[A]) -> Self {
        self.connect = addrs.iter().map(ToString::to_string).collect();
        self
    }

    /// The shared secret of the cluster of processes (as `weir node --secret-file` reads it:
    /// [`Secret::from_file`]).
    pub fn secret(mut self, secret: Secret) -> Self {
        self.secret = Some(secret);
        self
    }

    /// Connects to the data nodes over mutual TLS instead of with a shared secret (as
    /// `weir node --tls-cert --tls-key --tls-ca` serves): `files.cert` is this client's
    /// certificate, which must name `client.weir` and be signed by the CA of `files.ca`, as
    /// every node's is (see [`crate::wire::framing::tls`]). The files are read when the
    /// cluster is built; a missing, unreadable or malformed one, a key that does not match,
    /// or a certificate the CA did not sign, is expired or does not name `client.weir`, fails
    /// [`build`](ClusterBuilder::build) with [`Error::Invalid`](crate::Error::Invalid)
    /// naming the file. Not with [`ClusterBuilder::secret`]: TLS replaces the secret.
    ///
    /// ```no_run
    /// use weir_runtime::wire::framing::TlsFiles;
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder()
    ///     .connect(&["127.0.0.1:7000", "127.0.0.1:7001"])
    ///     .tls(TlsFiles {
    ///         cert: "client.crt".into(),
    ///         key: "client.key".into(),
    ///         ca: "ca.crt".into(),
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # let _ = cluster;
    /// ```
    pub fn tls(mut self, files: TlsFiles) -> Self {
        self.tls = Some(files);
        self
    }

    /// Pins the client's slot when connecting (its node id is the number of data nodes plus
    /// the slot, below [`CLIENT_SLOTS`]); by default it is drawn at random, and drawn again
    /// when a data node refuses it as taken. Two clients connected at once have different
    /// slots: a client whose pinned slot is taken by a live client is refused
    /// ([`Error::Connect`](crate::Error::Connect), naming the slot).
    pub fn client_slot(mut self, slot: u32) -> Self {
        self.client_slot = Some(slot % CLIENT_SLOTS);
        self
    }

    /// The slots an unpinned client tries first, in order, before random ones: tests force
    /// a collision with it.
    #[doc(hidden)]
    pub fn client_slot_draws(mut self, slots: &[u32]) -> Self {
        self.slot_draws = slots.iter().map(|s| s % CLIENT_SLOTS).collect();
        self
    }

    /// Keeps the cluster's data in `dir`, durably: each node (data nodes and the client, which
    /// keeps the catalog) in a directory of its own under it, with a write-ahead log of every
    /// change and checkpoints of its partitions. A cluster built on a directory that holds
    /// data starts with it (the same number of data nodes is required). Without a data
    /// directory (the default) everything lives in memory.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let dir = std::env::temp_dir().join(format!("weir-doc-data-{}", std::process::id()));
    /// let _ = std::fs::remove_dir_all(&dir);
    /// {
    ///     let cluster = Cluster::builder().nodes(2).partitions(8).data_dir(&dir).build().unwrap();
    ///     cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR)").unwrap();
    ///     cluster.execute("INSERT INTO t VALUES (1, 'kept')").unwrap();
    /// } // dropped: every node stops
    /// let cluster = Cluster::builder().nodes(2).partitions(8).data_dir(&dir).build().unwrap();
    /// let r = cluster.query("SELECT v FROM t WHERE id = 1", &[]).unwrap();
    /// assert_eq!(r.rows(), vec![vec!["kept".into()]]);
    /// # drop(cluster);
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// ```
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// What an acknowledged write means with a data directory (default
    /// [`Durability::Fsync`]: on disk, with concurrent writes sharing a sync;
    /// [`Durability::Os`]: handed to the operating system, which survives the process but not
    /// a power cut).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Log bytes after which a node writes a checkpoint of its partitions and drops the log
    /// behind it (default 64 MiB).
    pub fn checkpoint_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_bytes = bytes.max(1);
        self
    }

    /// Most bytes of rows a write sends a node in one message (default
    /// [`crate::wire::messages::MAX_WRITE_PIECE_BYTES`]): tests cut small writes in pieces.
    #[doc(hidden)]
    pub fn write_piece_bytes(mut self, bytes: usize) -> Self {
        self.write_piece_bytes = bytes.max(1);
        self
    }

    /// The file system the nodes' directories are on: tests inject faults through it.
    #[doc(hidden)]
    pub fn disk(mut self, disk: Arc<dyn Disk>) -> Self {
        self.disk = Some(DiskSeam(disk));
        self
    }

    /// The journal of node `name` under the data directory, if there is one.
    /// Most bytes each node may hold in spill files (default
    /// [`DEFAULT_SPILL_QUOTA`](crate::node::spill::DEFAULT_SPILL_QUOTA), 16 GiB); 0 turns
    /// spilling off. A hash join, aggregation or sort refused memory on a node in
    /// [`JoinMode::Guarded`] writes part of its state to disk and goes on, instead of failing
    /// the query; past the quota it fails with [`Error::SpillQuota`](crate::Error). Spill files
    /// live in `spill/` of the node's directory under [`ClusterBuilder::data_dir`], else in a
    /// temporary directory, and are removed when their query ends.
    ///
    /// ```
    /// use weir_operators::{Batch, Column};
    /// use weir_runtime::Cluster;
    /// // 4 MiB per node: the sort of 300,000 rows spills, and still answers.
    /// let cluster = Cluster::builder().nodes(1).node_memory(4 << 20).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)").unwrap();
    /// let ids: Vec<i64> = (0..300_000).collect();
    /// let values = ids.iter().map(|i| (i * 7919) % 300_000).collect();
    /// let batch = Batch::try_new(vec![Column::from_i64(ids), Column::from_i64(values)]).unwrap();
    /// cluster.load("t", batch).unwrap();
    /// let rows = cluster.query("SELECT v, id FROM t ORDER BY v, id", &[]).unwrap();
    /// assert_eq!(rows.rows().len(), 300_000);
    /// assert_eq!(rows.rows()[299_999][0], 299_999.into());
    /// assert!(cluster.stats().nodes.iter().map(|n| n.spills).sum::<u64>() > 0);
    /// ```
    pub fn spill_quota(mut self, bytes: u64) -> Self {
        self.spill_quota = bytes;
        self
    }

    /// Where node `name` spills: none in Legacy mode or with a quota of 0.
    pub(super) fn spill_space(
        &self,
        name: &str,
    ) -> Result<Option<Arc<weir_operators::spill::SpillSpace>>, crate::error::Error> {
        let quota = match self.join_mode {
            JoinMode::Legacy => 0,
            JoinMode::Guarded => self.spill_quota,
        };
        let dir = self.data_dir.as_ref().map(|d| d.join(name));
        crate::node::spill::open_spill(name, dir.as_deref(), quota)
    }

    pub(super) fn journal_config(&self, name: &str) -> Option<JournalConfig> {
        let dir = self.data_dir.as_ref()?.join(name);
        let mut config = JournalConfig::new(dir, self.durability);
        config.checkpoint_bytes = self.checkpoint_bytes;
        if let Some(DiskSeam(disk)) = &self.disk {
            config.disk = disk.clone();
        }
        Some(config)
    }

    /// The addresses given to [`ClusterBuilder::connect`] (empty: the cluster is simulated in
    /// this process).
    pub fn connect_addrs(&self) -> &[String] {
        &self.connect
    }

    /// The largest value, in bytes, a SQL function may make (default
    /// [`DEFAULT_MAX_VALUE_BYTES`](weir_operators::limits::DEFAULT_MAX_VALUE_BYTES), 64 MiB):
    /// `replace`, `repeat`, `lpad`, `rpad`, `concat`, `||`, `lower` and `upper` size each
    /// result before they build it and fail with [`Error::ValueTooLarge`](crate::Error) past
    /// it, on the nodes as while the planner folds constants on the caller's thread.
    ///
    /// ```
    /// use weir_runtime::{Cluster, Error};
    /// let cluster = Cluster::builder().nodes(1).max_value_size(1000).build().unwrap();
    /// let err = cluster.query("SELECT repeat('ab', 501)", &[]).unwrap_err();
    /// assert!(matches!(err, Error::ValueTooLarge { .. }), "{err}");
    /// assert_eq!(cluster.query("SELECT repeat('ab', 500)", &[]).unwrap().num_rows(), 1);
    /// ```
    pub fn max_value_size(mut self, bytes: usize) -> Self {
        self.max_value_bytes = bytes;
        self
    }

    /// The largest value a SQL function may make (see [`ClusterBuilder::max_value_size`]).
    pub fn max_value_bytes(&self) -> usize {
        self.max_value_bytes
    }

    /// The most rounds the step of a recursive query (`WITH RECURSIVE`) runs (default
    /// [`DEFAULT_MAX_RECURSION`](weir_planner::catalog::DEFAULT_MAX_RECURSION), 10,000): a
    /// query whose step still adds rows after that many fails with an error naming it, so an
    /// endless recursion is an error rather than a hang.
    ///
    /// ```
    /// use weir_runtime::Cluster;
    /// let cluster = Cluster::builder().nodes(1).max_recursion(5).build().unwrap();
    /// let count = |to: i64| {
    ///     let sql = format!("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {to}) SELECT COUNT(*) FROM r");
    ///     cluster.query(&sql, &[])
    /// };
    /// assert_eq!(count(6).unwrap().num_rows(), 1);
    /// let err = count(7).unwrap_err().to_string();
    /// assert!(err.contains("recursive query \"r\"") && err.contains("5 iterations"), "{err}");
    /// ```
    pub fn max_recursion(mut self, rounds: usize) -> Self {
        self.max_recursion = rounds;
        self
    }

    /// How long a data node holds a write it prepared (phase one of a write with several
    /// participants) while waiting for its commit or abort; default 60 s, twice the default
    /// write timeout. A write its client never decides (the client died between the phases)
    /// is then aborted there, its rows dropped; a commit that arrives later is refused and its
    /// client counts that copy stale, to be repaired. Keep it above
    /// [`ClusterBuilder::query_timeout`], which bounds a write's two phases.
    pub fn prepared_write_ttl(mut self, ttl: Duration) -> Self {
        self.prepared_write_ttl = ttl;
        self
    }

    /// The directories `COPY ... FROM 'path'` may read from and `COPY ... TO 'path'` may write
    /// to: the path (relative ones from the process's current directory), its symbolic links
    /// and `..` resolved, must lie inside one of them, or the COPY fails naming them. Without
    /// this call a cluster's COPY reaches any path the process can (as it always did); with
    /// an empty list, none. `weir sql` and `weir shell` allow the current directory and each
    /// `--copy-dir`.
    ///
    /// ```
    /// use weir_runtime::{Cluster, Error};
    /// let dir = std::env::temp_dir().join(format!("weir-copy-dirs-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let cluster = Cluster::builder().nodes(1).copy_dirs([&dir]).build().unwrap();
    /// cluster.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    /// let inside = format!("COPY t TO '{}'", dir.join("t.csv").display());
    /// assert_eq!(cluster.execute(&inside).unwrap(), 0);
    /// let err = cluster.execute("COPY t FROM '/etc/passwd'").unwrap_err();
    /// assert!(matches!(err, Error::Invalid(_)) && err.to_string().contains("outside"), "{err}");
    /// # cluster.shutdown();
    /// ```
    pub fn copy_dirs<P: Into<PathBuf>>(mut self, dirs: impl IntoIterator<Item = P>) -> Self {
        self.copy_dirs = Some(dirs.into_iter().map(Into::into).collect());
        self
    }

    /// The directories COPY may use, if limited (see [`ClusterBuilder::copy_dirs`]).
    pub fn copy_dir_list(&self) -> Option<&[PathBuf]> {
        self.copy_dirs.as_deref()
    }
}
