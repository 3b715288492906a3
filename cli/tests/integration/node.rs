//! `weir node` as a user runs it: it prints the address it bound, serves peers that know
//! the secret, refuses those that do not, and refuses a secret that is too short. Each node
//! process is killed when its test ends, passed or failed.

use crate::common;

use common::{weir, weir_node};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_runtime::wire::framing::Secret;
use weir_runtime::wire::tcp::{TcpConfig, TcpTransport};

/// Longest any wait here may take.
const LIMIT: Duration = Duration::from_secs(10);
const SECRET: &str = "the secret of the node tests";

fn secret_file(test: &str, secret: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-node-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("secret");
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    path
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < LIMIT, "{what}: not within {LIMIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A dial-only endpoint as node `id` with `secret`.
fn peer(id: u32, secret: &str) -> TcpTransport {
    let config = TcpConfig::new(id, Secret::new(secret.as_bytes().to_vec()).unwrap());
    TcpTransport::start(config, Arc::new(|_, _| true)).unwrap()
}

#[test]
fn weir_node_prints_its_address_and_serves_only_peers_with_the_secret() {
    let file = secret_file("serves", SECRET);
    let (_node, addr) = weir_node(1, &file, LIMIT);
    assert!(addr.ip().is_loopback());
    assert_ne!(addr.port(), 0, "the port picked is printed, not 0");
    let good = peer(0, SECRET);
    good.add_peer(1, addr);
    wait_for("an authenticated connection to the node", || good.is_up(1));
    assert!(good.send(1, weir_runtime::wire::codec::seal(vec![1, 2, 3])));
    let bad = peer(2, "some other secret, same length");
    bad.add_peer(1, addr);
    wait_for("the wrong secret refused", || {
        bad.stats().refused_connections >= 1
    });
    assert!(!bad.is_up(1));
    assert!(good.is_up(1), "the good peer stays connected");
}

#[test]
fn weir_node_refuses_a_short_secret() {
    let file = secret_file("short", "too short");
    let out = weir(&[
        "node",
        "--listen",
        "127.0.0.1:0",
        "--id",
        "1",
        "--secret-file",
        file.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 16 bytes"), "{err}");
}
