//! The `weir` command: run the demo, run SQL statements (an argument, a file or standard
//! input) on one cluster, an interactive shell, a PostgreSQL server (`weir serve`), the
//! benchmarks, or one data node over TCP.
//!
//! `RUST_LOG` (for example `RUST_LOG=weir=debug`) sets what the runtime's tracing shows on
//! standard error.

use clap::{Parser, Subcommand, ValueEnum};
use mimalloc::MiMalloc;
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;
use weir_cli::demo::{self, SeedParam, JOIN_QUERY, SEED_QUERIES};
use weir_cli::session::{Mode, Session};
use weir_cli::{format, logging, progress, script, shell, Cluster, Protocol, Value};

/// The command's allocator. Queries allocate and free many column buffers of up to a few MB;
/// mimalloc keeps and reuses that memory per thread where the system allocator returns it to
/// the kernel and takes the page faults again on the next query.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "An actor-based SQL dataflow runtime on a simulated cluster"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a cluster, load the demo data and run the seed queries and a join.
    Demo {
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Rows of the `orders` table (the join's probe side).
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        /// Seed of the data and parameter generators.
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// Run SQL statements in order on one cluster: those of FILE (`-f FILE`), of standard
    /// input (`-f -` or `-`), or the argument. The cluster starts empty unless `--demo`.
    Sql {
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Output format: `json` prints one object per statement, on its own line.
        #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
        format: OutputFormat,
        /// Message workflow.
        #[arg(long, value_enum, default_value_t = ProtocolArg::Lean)]
        protocol: ProtocolArg,
        /// Print each query's messages by type, their total and bytes.
        #[arg(long)]
        stats: bool,
        /// Load the demo data (`Item`, `customers`, `orders`) first.
        #[arg(long)]
        demo: bool,
        /// Rows of the `orders` table loaded with the demo data.
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        /// Parameter values for `?` / `$n` placeholders (integers, decimals, or text); for
        /// one statement only.
        #[arg(long = "param", short = 'p')]
        params: Vec<String>,
        #[command(flatten)]
        remote: Remote,
        #[command(flatten)]
        storage: StorageArgs,
        /// A directory COPY may read and write besides the current one (repeat for more).
        #[arg(long = "copy-dir", value_name = "DIR")]
        copy_dirs: Vec<std::path::PathBuf>,
        /// A file of statements separated by `;` (`-` for standard input).
        #[arg(short = 'f', long = "file", conflicts_with = "sql")]
        file: Option<String>,
        /// The statements (`-` for standard input).
        #[arg(required_unless_present = "file")]
        sql: Option<String>,
    },
    /// An interactive shell on one cluster (`.help` lists its commands); reads a piped
    /// script too.
    Shell {
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        #[command(flatten)]
        remote: Remote,
        /// Load the demo data (`Item`, `customers`, `orders`) first.
        #[arg(long)]
        demo: bool,
        /// Rows of the `orders` table loaded with the demo data.
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        #[command(flatten)]
        storage: StorageArgs,
        /// A directory COPY may read and write besides the current one (repeat for more).
        #[arg(long = "copy-dir", value_name = "DIR")]
        copy_dirs: Vec<std::path::PathBuf>,
    },
    /// Serve PostgreSQL clients (psql, psycopg, JDBC, tokio-postgres, ...) on ADDR: a
    /// cluster in this process, or the client of `weir node` processes (`--connect`). Prints
    /// `listening on ADDR` once it listens, then serves until killed.
    Serve {
        /// Address to listen on (port 0 picks one). The default is PostgreSQL's port plus
        /// one, on the loopback interface only.
        #[arg(long, default_value_t = std::net::SocketAddr::from(([127, 0, 0, 1], weir::postgres::DEFAULT_PORT)))]
        listen: std::net::SocketAddr,
        /// Data nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        #[command(flatten)]
        remote: Remote<ServeNodeTls>,
        /// Load the demo data (`Item`, `customers`, `orders`) first.
        #[arg(long)]
        demo: bool,
        /// Rows of the `orders` table loaded with the demo data.
        #[arg(long, default_value_t = 1_000_000)]
        orders: usize,
        #[command(flatten)]
        storage: StorageArgs,
        /// Clients connected at once; the next is refused (SQLSTATE 53300).
        #[arg(long, default_value_t = 100)]
        max_connections: usize,
        /// Ask for passwords (SCRAM-SHA-256): a file of `user:password` lines. Without it,
        /// anyone who reaches ADDR is let in.
        #[arg(long)]
        password_file: Option<std::path::PathBuf>,
        /// Seconds a connection has to authenticate before it is closed.
        #[arg(long, default_value_t = 10)]
        auth_timeout: u64,
        /// Offer TLS with this certificate chain (PEM); clients that ask for SSL get it.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The private key (PEM) of --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        #[command(flatten)]
        runtime: weir_cli::runtime_args::RuntimeArgs,
    },
    /// Run the benchmarks: the seed experiments `jmh` (Ignite) and `overload` (OpenSearch),
    /// the soak, TPC-H, and a hash join against a hand-written one.
    Bench {
        #[command(subcommand)]
        command: weir_cli::bench::BenchCommand,
    },
    /// Run one data node over TCP: listen on ADDR (port 0 picks one), print the address it
    /// bound on a line `listening on ADDR`, and serve peers that know the secret (or, with
    /// --tls-cert, --tls-key and --tls-ca, that present a certificate the CA signed) until
    /// killed.
    Node {
        /// Address to listen on, e.g. 127.0.0.1:0.
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// This node's id in the cluster.
        #[arg(long)]
        id: u32,
        /// A file holding the cluster's shared secret (at least 16 bytes; a trailing line
        /// break is ignored). Not with the --tls-* flags: TLS replaces the secret.
        #[arg(
            long,
            required_unless_present = "tls_cert",
            conflicts_with = "tls_cert"
        )]
        secret_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        tls: NodeTls,
        /// The node's memory budget in bytes.
        #[arg(long, default_value_t = weir_runtime::memory::DEFAULT_NODE_MEMORY)]
        memory: usize,
        #[command(flatten)]
        storage: StorageArgs,
    },
}

/// Where a cluster or node keeps its data (`--data-dir`), and what an acknowledged write means
/// there (`--durability`).
#[derive(clap::Args, Clone)]
struct StorageArgs {
    /// Keep the data in this directory (a write-ahead log and checkpoints; the cluster or node
    /// starts with what it holds); without it, everything lives in memory.
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// What an acknowledged write means with --data-dir: `fsync` (on disk, concurrent writes
    /// sharing a sync) or `os` (handed to the operating system: survives the process, not a
    /// power cut).
    #[arg(long, default_value = "fsync", requires = "data_dir")]
    durability: weir::Durability,
    /// Most bytes each node may write to spill files when its queries' sorts, aggregations
    /// and joins outgrow its memory (in `spill/` of the node's directory under --data-dir, else
    /// a temporary directory); 0 turns spilling off.
    #[arg(long, default_value_t = weir_runtime::node::spill::DEFAULT_SPILL_QUOTA)]
    spill_quota: u64,
}

impl StorageArgs {
    /// `builder` with the data directory, if one was given.
    fn apply(&self, builder: weir::ClusterBuilder) -> weir::ClusterBuilder {
        let builder = builder.spill_quota(self.spill_quota);
        match &self.data_dir {
            Some(dir) => builder.data_dir(dir).durability(self.durability),
            None => builder,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
    Csv,
}

impl From<OutputFormat> for Mode {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Table => Mode::Table,
            OutputFormat::Json => Mode::Json,
            OutputFormat::Csv => Mode::Csv,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ProtocolArg {
    Lean,
    Legacy,
}

impl From<ProtocolArg> for Protocol {
    fn from(p: ProtocolArg) -> Self {
        match p {
            ProtocolArg::Lean => Protocol::Lean,
            ProtocolArg::Legacy => Protocol::Legacy,
        }
    }
}

/// A `--param` value: an integer, a numeral with a point as an exact DECIMAL (as in SQL), a
/// DOUBLE with an exponent, `null`, or text (text also fills DATE and TIMESTAMP parameters).
fn parse_param(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        Value::Int(i)
    } else if let Some((v, _, scale)) = weir_operators::decimal::parse_literal(s) {
        Value::Decimal(v, scale)
    } else if let Ok(f) = s.parse::<f64>() {
        Value::Float(f)
    } else if s.eq_ignore_ascii_case("null") {
        Value::Null
    } else {
        Value::Str(s.to_string())
    }
}

/// `weir node`: serves until the process is killed.
fn run_node(
    listen: std::net::SocketAddr,
    id: u32,
    secret_file: Option<&std::path::Path>,
    tls: &NodeTls,
    memory: usize,
    storage: &StorageArgs,
) -> Result<(), String> {
    use std::io::Write;
    use weir_runtime::wire::tcp::{Auth, TcpConfig};
    let auth = match (secret_file, tls.files()) {
        (_, Some(files)) => Auth::Tls(weir::Tls::load(&files).map_err(|e| e.to_string())?),
        (Some(file), None) => Auth::Secret(weir::Secret::from_file(file)?),
        (None, None) => {
            return Err("give --secret-file, or --tls-cert, --tls-key and --tls-ca".into())
        }
    };
    let config = TcpConfig::new(id, auth).listen(listen);
    let data = storage.data_dir.clone().map(|d| (d, storage.durability));
    let node = weir_runtime::cluster::data_node::DataNode::start_in(
        config,
        memory,
        data,
        storage.spill_quota,
    )
    .map_err(|e| format!("node {id}: {e}"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", node.local_addr()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    drop(out);
    loop {
        std::thread::park();
    }
}

fn load_demo(cluster: &Cluster, orders: usize, seed: u64) -> weir::Result<()> {
    demo::load_item(cluster, demo::ITEM_ROWS)?;
    demo::load_join_tables(cluster, 100_000, orders, seed)
}

fn run_demo(nodes: usize, orders: usize, seed: u64) -> Result<(), String> {
    let cluster = Cluster::builder()
        .nodes(nodes)
        .build()
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    load_demo(&cluster, orders, seed).map_err(|e| e.to_string())?;
    println!(
        "loaded Item ({} rows), customers (100000 rows), orders ({orders} rows) on {nodes} nodes in {:.2?}",
        demo::ITEM_ROWS,
        t.elapsed()
    );
    println!("{:<28} {:>8} {:>12}", "query", "rows", "time");
    let key = (seed as i64 * 7919) % demo::ITEM_ROWS as i64;
    for q in SEED_QUERIES {
        let params = q.params(key);
        let t = Instant::now();
        let r = cluster
            .query(q.sql, &params)
            .map_err(|e| format!("{}: {e}", q.name))?;
        let took = t.elapsed();
        let expected = q.expected_rows(demo::ITEM_ROWS);
        if r.num_rows() != expected {
            return Err(format!(
                "{} returned {} rows, expected {expected}",
                q.name,
                r.num_rows()
            ));
        }
        let shown = match q.param {
            SeedParam::None => String::new(),
            _ => format!(" (param {})", params[0]),
        };
        println!("{:<28} {:>8} {:>12.2?}{shown}", q.name, r.num_rows(), took);
    }
    let t = Instant::now();
    let r = cluster.query(JOIN_QUERY, &[]).map_err(|e| e.to_string())?;
    println!(
        "{:<28} {:>8} {:>12.2?}",
        "joinGroupBy",
        r.num_rows(),
        t.elapsed()
    );
    println!("{}", format::table(&r));
    let s = cluster.stats();
    println!(
        "messages between nodes: {} ({} bytes); plan cache {} hits / {} misses",
        s.messages.total, s.messages.bytes, s.plan_cache_hits, s.plan_cache_misses
    );
    cluster.shutdown();
    Ok(())
}

/// What `weir sql` was asked to do.
struct SqlArgs {
    nodes: usize,
    remote: Remote,
    format: OutputFormat,
    protocol: ProtocolArg,
    stats: bool,
    demo: bool,
    orders: usize,
    params: Vec<String>,
    storage: StorageArgs,
    copy_dirs: Vec<std::path::PathBuf>,
    file: Option<String>,
    sql: Option<String>,
}

/// The script's text: the file, standard input, or the argument.
fn script_text(file: Option<&str>, sql: Option<&str>) -> Result<String, String> {
    let read_stdin = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("reading standard input: {e}"))?;
        Ok(text)
    };
    match (file, sql) {
        (Some("-"), _) | (None, Some("-")) => read_stdin(),
        (Some(path), _) => std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}")),
        (None, Some(sql)) => Ok(sql.to_string()),
        (None, None) => Err("give statements, -f FILE, or - for standard input".into()),
    }
}

/// TLS files as a set: all three or none.
trait TlsArgs {
    /// The three files, if given (clap makes sure they come together).
    fn files(&self) -> Option<weir::TlsFiles>;
    /// The flags' names, for messages.
    const FLAGS: &'static str;
}

/// `--tls-cert`, `--tls-key` and `--tls-ca` of `weir node`: its certificate (naming
/// `node-<id>.weir`), its key, and the CA that signs every node's and client's certificate.
#[derive(clap::Args, Clone)]
struct NodeTls {
    /// Mutual TLS instead of the secret: this node's certificate (PEM, naming
    /// `node-<ID>.weir`, signed by the CA of --tls-ca). With --tls-key and --tls-ca.
    #[arg(long, requires_all = ["tls_key", "tls_ca"])]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires_all = ["tls_cert", "tls_ca"])]
    tls_key: Option<std::path::PathBuf>,
    /// The CA certificate (PEM) that signs every node's and client's certificate.
    #[arg(long, requires_all = ["tls_cert", "tls_key"])]
    tls_ca: Option<std::path::PathBuf>,
}

/// `--tls-cert`, `--tls-key` and `--tls-ca` of `weir sql` and `weir shell` with `--connect`.
#[derive(clap::Args, Clone)]
struct ConnectTls {
    /// Connect over mutual TLS instead of with the secret: this client's certificate (PEM,
    /// naming `client.weir`, signed by the CA of --tls-ca). With --connect, --tls-key and
    /// --tls-ca.
    #[arg(long, requires_all = ["tls_key", "tls_ca", "connect"])]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires_all = ["tls_cert", "tls_ca", "connect"])]
    tls_key: Option<std::path::PathBuf>,
    /// The CA certificate (PEM) that signs the nodes' certificates and this one.
    #[arg(long, requires_all = ["tls_cert", "tls_key", "connect"])]
    tls_ca: Option<std::path::PathBuf>,
}

/// The TLS flags of `weir serve --connect`: `--tls-cert` and `--tls-key` are the
/// PostgreSQL listener's there, so the client certificate towards the data nodes is
/// `--node-tls-cert`, `--node-tls-key` and `--node-tls-ca`.
#[derive(clap::Args, Clone)]
struct ServeNodeTls {
    /// Connect to the data nodes over mutual TLS instead of with the secret: this client's
    /// certificate (PEM, naming `client.weir`, signed by the CA of --node-tls-ca). With
    /// --connect, --node-tls-key and --node-tls-ca.
    #[arg(long, requires_all = ["node_tls_key", "node_tls_ca", "connect"])]
    node_tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --node-tls-cert.
    #[arg(long, requires_all = ["node_tls_cert", "node_tls_ca", "connect"])]
    node_tls_key: Option<std::path::PathBuf>,
    /// The CA certificate (PEM) that signs the data nodes' certificates and this one.
    #[arg(long, requires_all = ["node_tls_cert", "node_tls_key", "connect"])]
    node_tls_ca: Option<std::path::PathBuf>,
}

fn tls_files(
    cert: &Option<std::path::PathBuf>,
    key: &Option<std::path::PathBuf>,
    ca: &Option<std::path::PathBuf>,
) -> Option<weir::TlsFiles> {
    Some(weir::TlsFiles {
        cert: cert.clone()?,
        key: key.clone()?,
        ca: ca.clone()?,
    })
}

impl TlsArgs for NodeTls {
    const FLAGS: &'static str = "--tls-cert, --tls-key and --tls-ca";
    fn files(&self) -> Option<weir::TlsFiles> {
        tls_files(&self.tls_cert, &self.tls_key, &self.tls_ca)
    }
}

impl TlsArgs for ConnectTls {
    const FLAGS: &'static str = "--tls-cert, --tls-key and --tls-ca";
    fn files(&self) -> Option<weir::TlsFiles> {
        tls_files(&self.tls_cert, &self.tls_key, &self.tls_ca)
    }
}

impl TlsArgs for ServeNodeTls {
    const FLAGS: &'static str = "--node-tls-cert, --node-tls-key and --node-tls-ca";
    fn files(&self) -> Option<weir::TlsFiles> {
        tls_files(&self.node_tls_cert, &self.node_tls_key, &self.node_tls_ca)
    }
}

/// `--connect` with `--secret-file` or TLS files: data nodes in other processes, if given.
#[derive(clap::Args, Clone)]
struct Remote<T: clap::Args + TlsArgs = ConnectTls> {
    /// Connect to data nodes running in other processes (`weir node`) at these
    /// addresses, node 0 first, instead of starting a cluster in this process.
    #[arg(long, value_delimiter = ',')]
    connect: Vec<String>,
    /// The cluster's shared secret, as `weir node --secret-file` reads it (with
    /// `--connect`; not with TLS, which replaces it).
    #[arg(long, requires = "connect")]
    secret_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    tls: T,
}

impl<T: clap::Args + TlsArgs> Remote<T> {
    /// `builder` connected to the data nodes of `--connect`, or unchanged without it.
    fn apply(&self, builder: weir::ClusterBuilder) -> Result<weir::ClusterBuilder, String> {
        if self.connect.is_empty() {
            return Ok(builder);
        }
        let builder = builder.connect(&self.connect);
        match (&self.secret_file, self.tls.files()) {
            (Some(_), Some(_)) => Err(format!(
                "--secret-file and {} exclude each other (TLS replaces the secret)",
                T::FLAGS
            )),
            (Some(file), None) => Ok(builder.secret(weir::Secret::from_file(file)?)),
            (None, Some(files)) => Ok(builder.tls(files)),
            (None, None) => Err(format!("--connect needs --secret-file, or {}", T::FLAGS)),
        }
    }
}

/// The directories COPY may use in a session: the current one, and those of `--copy-dir`.
fn copy_dirs(extra: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, String> {
    let here = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    Ok(std::iter::once(here).chain(extra.iter().cloned()).collect())
}

fn build_session(
    nodes: usize,
    remote: &Remote,
    storage: &StorageArgs,
    protocol: Protocol,
    demo: bool,
    orders: usize,
    copy_dir: &[std::path::PathBuf],
) -> Result<Session, String> {
    let builder = storage.apply(
        Cluster::builder()
            .nodes(nodes)
            .protocol(protocol)
            .copy_dirs(copy_dirs(copy_dir)?),
    );
    let cluster = remote.apply(builder)?.build().map_err(|e| e.to_string())?;
    if demo {
        progress::step("loading the demo data", || load_demo(&cluster, orders, 42))
            .map_err(|e| e.to_string())?;
    }
    Ok(Session::new(cluster))
}

/// Runs every statement of the script in order; stops at the first error (in JSON, after
/// printing it as `{"error": ...}`).
fn run_sql(a: SqlArgs) -> Result<(), String> {
    let json = matches!(a.format, OutputFormat::Json);
    let fail = |e: String| {
        if json {
            println!("{}", format::error_json(&e));
            Err(String::new())
        } else {
            Err(e)
        }
    };
    let stmts = match script_text(a.file.as_deref(), a.sql.as_deref())
        .and_then(|text| script::split_statements(&text))
    {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if stmts.is_empty() {
        return fail("no statement to run".into());
    }
    if !a.params.is_empty() && stmts.len() > 1 {
        return fail("-p/--param works with one statement only".into());
    }
    let built = build_session(
        a.nodes,
        &a.remote,
        &a.storage,
        a.protocol.into(),
        a.demo,
        a.orders,
        &a.copy_dirs,
    );
    let mut session = match built {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    session.mode = a.format.into();
    session.stats = a.stats;
    let params: Vec<Value> = a.params.iter().map(|p| parse_param(p)).collect();
    let mut outcome = Ok(());
    for stmt in &stmts {
        if let Err(e) = session.run(stmt, &params) {
            outcome = fail(e.to_string());
            break;
        }
    }
    session.cluster.shutdown();
    outcome
}

fn run_shell(
    nodes: usize,
    remote: &Remote,
    storage: &StorageArgs,
    demo: bool,
    orders: usize,
    copy_dirs: &[std::path::PathBuf],
) -> Result<(), String> {
    let session = build_session(
        nodes,
        remote,
        storage,
        Protocol::Lean,
        demo,
        orders,
        copy_dirs,
    )?;
    let errors = shell::run(session);
    if errors > 0 && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(format!("{errors} statements or commands failed"));
    }
    Ok(())
}

/// What `weir serve` was asked to do.
struct ServeArgs {
    listen: std::net::SocketAddr,
    nodes: usize,
    remote: Remote<ServeNodeTls>,
    demo: bool,
    orders: usize,
    storage: StorageArgs,
    max_connections: usize,
    password_file: Option<std::path::PathBuf>,
    auth_timeout: u64,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    runtime: weir_cli::runtime_args::RuntimeArgs,
}

/// `weir serve`: serves until the process is killed.
fn run_serve(a: ServeArgs) -> Result<(), String> {
    use std::io::Write;
    use weir::postgres::{Passwords, ServePostgres, ServerConfig};
    let mut config = ServerConfig::new()
        .max_connections(a.max_connections)
        .auth_timeout(std::time::Duration::from_secs(a.auth_timeout));
    if let Some(path) = &a.password_file {
        let passwords =
            Passwords::from_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if passwords.is_empty() {
            return Err(format!("{}: no user:password line", path.display()));
        }
        config = config.passwords(passwords);
    }
    if let Some((cert, key)) = &a.tls {
        config = config.tls_files(cert, key).map_err(|e| e.to_string())?;
    }
    let builder = a
        .runtime
        .apply(a.storage.apply(Cluster::builder().nodes(a.nodes)));
    let cluster = a
        .remote
        .apply(builder)?
        .build()
        .map_err(|e| e.to_string())?;
    if a.demo {
        progress::step("loading the demo data", || {
            load_demo(&cluster, a.orders, 42)
        })
        .map_err(|e| e.to_string())?;
    }
    let server = cluster
        .serve_postgres_with(a.listen, config)
        .map_err(|e| format!("listening on {}: {e}", a.listen))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", server.local_addr()).map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    drop(out);
    server.wait().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init();
    let outcome = match cli.command {
        Command::Demo {
            nodes,
            orders,
            seed,
        } => run_demo(nodes, orders, seed),
        Command::Sql {
            nodes,
            format,
            protocol,
            stats,
            demo,
            orders,
            params,
            remote,
            storage,
            copy_dirs,
            file,
            sql,
        } => run_sql(SqlArgs {
            nodes,
            remote,
            format,
            protocol,
            stats,
            demo,
            orders,
            params,
            storage,
            copy_dirs,
            file,
            sql,
        }),
        Command::Shell {
            nodes,
            remote,
            demo,
            orders,
            storage,
            copy_dirs,
        } => run_shell(nodes, &remote, &storage, demo, orders, &copy_dirs),
        Command::Serve {
            listen,
            nodes,
            remote,
            demo,
            orders,
            storage,
            max_connections,
            password_file,
            auth_timeout,
            tls_cert,
            tls_key,
            runtime,
        } => run_serve(ServeArgs {
            listen,
            nodes,
            remote,
            demo,
            orders,
            storage,
            max_connections,
            password_file,
            auth_timeout,
            tls: tls_cert.zip(tls_key),
            runtime,
        }),
        Command::Bench { command } => weir_cli::bench::run(&command),
        Command::Node {
            listen,
            id,
            secret_file,
            tls,
            memory,
            storage,
        } => run_node(listen, id, secret_file.as_deref(), &tls, memory, &storage),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}
