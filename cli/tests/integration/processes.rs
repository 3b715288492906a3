//! Starting `weir node` processes for the tests: [`Nodes`] (the processes of one test, killed
//! on drop, pass or fail) and the functions that start one node process and wait, bounded,
//! for the address it prints. Shared by the multi-process tests (`multiprocess.rs`) and the
//! chaos test (`chaos.rs`).

use crate::common::cluster_builder;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use weir_cli::ClusterBuilder;
use weir_runtime::wire::framing::Secret;

/// Longest a node process may take to print its address, or a node to be seen down.
pub(crate) const LIMIT: Duration = Duration::from_secs(10);
/// The secret every node process of these tests shares (written to each test's secret file).
pub(crate) const SECRET: &str = "the secret of the multiprocess tests";
/// The node processes of one test, killed (SIGKILL) on drop; the test's directory (its secret
/// and the nodes' logs, [`secret_file`]) is removed then too, unless the test is failing.
pub(crate) struct Nodes {
    /// Each node's process, `None` while it is killed.
    pub(crate) children: Vec<Option<Child>>,
    /// Where each node listens (a restarted node keeps its address).
    pub(crate) addrs: Vec<SocketAddr>,
    /// The file holding the secret.
    pub(crate) secret: PathBuf,
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for child in self.children.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // A failing test keeps its nodes' logs for whoever looks into it.
        if !std::thread::panicking() {
            if let Some(dir) = self.secret.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// Writes a secret of its own for `test` to a file in a temporary directory named after
/// `test` (and this process), and returns its path: `secret`, followed by the test's name and
/// this process's id.
///
/// The secret is what makes node processes one cluster: tests run side by side (and beside
/// other test processes, such as a chaos loop), and a port one test's killed node gave up may
/// be taken by another test's node, which its old peers then dial. With one secret for all,
/// the handshake would let them in as the node they expected.
pub(crate) fn secret_file(test: &str, secret: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-mp-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("secret");
    std::fs::write(&path, format!("{}\n", unique_secret(test, secret))).expect("the secret file");
    path
}

/// `secret` made `test`'s own in this process (what [`secret_file`] writes).
fn unique_secret(test: &str, secret: &str) -> String {
    format!("{secret} ({test}, process {})", std::process::id())
}

/// Starts `weir node --id id --listen listen` and returns it with the address it printed.
pub(crate) fn start_node(id: usize, listen: &str, secret: &PathBuf) -> (Child, SocketAddr) {
    start_node_in(id, listen, secret, None)
}

/// [`start_node`], with `--data-dir data` when given.
pub(crate) fn start_node_in(
    id: usize,
    listen: &str,
    secret: &PathBuf,
    data: Option<&std::path::Path>,
) -> (Child, SocketAddr) {
    start_node_logged(id, listen, secret, data, None)
}

/// [`start_node_in`], its log (standard error) written to `log` when given.
pub(crate) fn start_node_logged(
    id: usize,
    listen: &str,
    secret: &PathBuf,
    data: Option<&std::path::Path>,
    log: Option<&std::path::Path>,
) -> (Child, SocketAddr) {
    try_start_node(id, listen, secret, data, log).unwrap_or_else(|e| panic!("{e}"))
}

/// [`start_node_logged`], its failure returned: a node that does not print its address
/// within [`LIMIT`] (it is killed), or prints something else. Its log is appended to `log`
/// when given (a node started again adds to it).
pub(crate) fn try_start_node(
    id: usize,
    listen: &str,
    secret: &PathBuf,
    data: Option<&std::path::Path>,
    log: Option<&std::path::Path>,
) -> Result<(Child, SocketAddr), String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command
        .args(["node", "--listen", listen, "--id", &id.to_string()])
        .arg("--secret-file")
        .arg(secret);
    if let Some(dir) = data {
        command.arg("--data-dir").arg(dir);
    }
    let stderr = match log {
        Some(path) => Stdio::from(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("the node's log file"),
        ),
        None => Stdio::null(),
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("weir runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = match rx.recv_timeout(LIMIT) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("node {id} printed no address within {LIMIT:?}"));
        }
    };
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok());
    match addr {
        Some(addr) => Ok((child, addr)),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("node {id}: unexpected first line {line:?}"))
        }
    }
}

impl Nodes {
    /// `n` node processes with ids 0..n on 127.0.0.1, ports picked by the system.
    pub(crate) fn start(test: &str, n: usize) -> Nodes {
        Self::start_with_logs(test, n, false)
    }

    /// [`Nodes::start`], each node's log (warnings, the default level) kept when `logs`
    /// ([`Nodes::log`]).
    pub(crate) fn start_with_logs(test: &str, n: usize, logs: bool) -> Nodes {
        let mut nodes = Nodes {
            children: Vec::new(),
            addrs: Vec::new(),
            secret: secret_file(test, SECRET),
        };
        for id in 0..n {
            let log = logs.then(|| nodes.log_path(id));
            let (child, addr) =
                start_node_logged(id, "127.0.0.1:0", &nodes.secret, None, log.as_deref());
            nodes.children.push(Some(child));
            nodes.addrs.push(addr);
        }
        nodes
    }

    /// Node processes with ids `0..data.len()` on 127.0.0.1, ports picked by the system, node
    /// `i` with `--data-dir data[i]` when given; each logs to [`Nodes::log_path`].
    pub(crate) fn start_in(test: &str, data: &[Option<PathBuf>]) -> Nodes {
        let mut nodes = Nodes {
            children: Vec::new(),
            addrs: Vec::new(),
            secret: secret_file(test, SECRET),
        };
        for (id, dir) in data.iter().enumerate() {
            let log = nodes.log_path(id);
            let (child, addr) =
                start_node_logged(id, "127.0.0.1:0", &nodes.secret, dir.as_deref(), Some(&log));
            nodes.children.push(Some(child));
            nodes.addrs.push(addr);
        }
        nodes
    }

    /// Starts node `i` again (after [`Nodes::kill`]) with its id and address, on `data` when
    /// given, its log appended to [`Nodes::log_path`].
    pub(crate) fn restart(
        &mut self,
        i: usize,
        data: Option<&std::path::Path>,
    ) -> Result<(), String> {
        let log = self.log_path(i);
        let listen = self.addrs[i].to_string();
        let (child, addr) = try_start_node(i, &listen, &self.secret, data, Some(&log))?;
        self.children[i] = Some(child);
        if addr != self.addrs[i] {
            return Err(format!(
                "node {i} listens on {addr}, not on {}",
                self.addrs[i]
            ));
        }
        Ok(())
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to node `i`'s process with `kill(1)`.
    pub(crate) fn signal(&self, i: usize, signal: &str) -> Result<(), String> {
        let child = self.children[i]
            .as_ref()
            .ok_or_else(|| format!("node {i} is not running"))?;
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .map_err(|e| format!("kill -{signal} node {i}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{signal} node {i}: {status}"))
        }
    }

    /// A client builder connected to these nodes (test defaults: 64 partitions, 30 s
    /// query timeout), in client slot `slot`.
    pub(crate) fn client(&self, slot: u32) -> ClusterBuilder {
        let secret = Secret::from_file(&self.secret).expect("the secret");
        cluster_builder()
            .connect(&self.addrs)
            .secret(secret)
            .client_slot(slot)
    }

    /// Where node `i` logs, when started with logs.
    pub(crate) fn log_path(&self, i: usize) -> PathBuf {
        let dir = self.secret.parent().expect("the secret's directory");
        dir.join(format!("node-{i}.log"))
    }

    /// What node `i` logged so far.
    pub(crate) fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.log_path(i)).unwrap_or_default()
    }

    /// Kills node `i`'s process (SIGKILL) and waits for it.
    pub(crate) fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            child.kill().expect("kill the node");
            child.wait().expect("reap the node");
        }
    }

    /// `a,b,c`, as `--connect` takes them.
    pub(crate) fn connect_arg(&self) -> String {
        self.addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}
