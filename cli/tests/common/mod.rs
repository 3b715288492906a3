//! Helpers shared by the command's integration tests: the library tests' helpers
//! (`tests/common` at the repository root) and running the `weir` binary under a watchdog.
#![allow(dead_code)]

#[path = "../../../tests/common/mod.rs"]
mod shared;

#[allow(unused_imports)]
pub use shared::*;

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a run of the `weir` command may take in the tests (each takes a second or two).
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// Runs the `weir` command with `args` and returns its output; kills it and fails, naming
/// the command, when it has not exited within [`COMMAND_LIMIT`].
pub fn weir(args: &[&str]) -> Output {
    weir_with_input(args, None)
}

/// Runs the `weir` command with `args`, writing `input` (when given) to its standard input
/// and then closing it; the same watchdog as [`weir`].
pub fn weir_with_input(args: &[&str], input: Option<&str>) -> Output {
    weir_with_env(args, input, &[])
}

/// [`weir_with_input`] with extra environment variables.
pub fn weir_with_env(args: &[&str], input: Option<&str>, env: &[(&str, &str)]) -> Output {
    weir_in(None, args, input, env)
}

/// [`weir_with_env`] run in directory `dir` (the test's own when `None`).
pub fn weir_in(
    dir: Option<&std::path::Path>,
    args: &[&str],
    input: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    let what = format!("`weir {}`", args.join(" "));
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weir runs");
    let feeder = input.map(|text| {
        let mut stdin = child.stdin.take().expect("piped stdin");
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = stdin.write_all(text.as_bytes());
        })
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + COMMAND_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for weir") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("watchdog: {what} did not exit within {COMMAND_LIMIT:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A `weir` process started by [`weir_listening`], killed on drop.
pub struct Listening(pub std::process::Child);

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the `weir` command with `args` (a `serve` or `node` that prints `listening on ADDR`
/// as its first line) and returns it with that address; fails when the line does not come
/// within `limit`.
pub fn weir_listening(
    args: &[&std::ffi::OsStr],
    limit: Duration,
) -> (Listening, std::net::SocketAddr) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("weir runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let process = Listening(child);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("`weir {args:?}` prints its address within {limit:?}"));
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .parse()
        .expect("an address");
    (process, addr)
}

/// Starts `weir node --id id --secret-file secret` on 127.0.0.1:0 (see [`weir_listening`]).
pub fn weir_node(
    id: u32,
    secret: &std::path::Path,
    limit: Duration,
) -> (Listening, std::net::SocketAddr) {
    let id = id.to_string();
    let args = [
        "node",
        "--listen",
        "127.0.0.1:0",
        "--id",
        &id,
        "--secret-file",
    ];
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.push(secret.as_os_str());
    weir_listening(&all, limit)
}
