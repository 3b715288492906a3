//! `weir serve` as a user runs it: it prints the address it listens on, answers a PostgreSQL
//! client's simple query (several statements in one message) on the demo data, and with
//! `--password-file` asks for SCRAM-SHA-256. Spoken here with raw protocol messages; the
//! `weir-server` crate's tests drive the server with `tokio-postgres`.

use crate::common::{weir_listening, weir_node, Listening};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

/// Longest any wait here may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Starts `weir serve` with `args` on 127.0.0.1:0 and returns it with the address it printed.
fn start(args: &[&str]) -> (Listening, SocketAddr) {
    let base = ["serve", "--listen", "127.0.0.1:0", "--nodes", "1"];
    let all: Vec<&OsStr> = base.iter().chain(args).map(OsStr::new).collect();
    weir_listening(&all, LIMIT)
}

/// A startup message for `user`, protocol 3.0.
fn startup(user: &str) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (k, v) in [("user", user), ("database", "weir")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend(body);
    msg
}

/// One backend message: its type byte and body.
fn read_message(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).unwrap();
    let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len - 4];
    s.read_exact(&mut body).unwrap();
    (head[0], body)
}

/// The first field of a DataRow, as text.
fn first_field(body: &[u8]) -> String {
    let len = i32::from_be_bytes([body[2], body[3], body[4], body[5]]) as usize;
    String::from_utf8(body[6..6 + len].to_vec()).unwrap()
}

#[test]
fn serve_answers_a_simple_query_on_the_demo_data() {
    let (_server, addr) = start(&["--demo", "--orders", "1000"]);
    let (values, tags) = simple_query(
        addr,
        "SELECT COUNT(*) FROM Item; SELECT COUNT(*) FROM orders",
    );
    assert_eq!(values, ["100000", "1000"]);
    assert_eq!(tags, ["SELECT 1", "SELECT 1"]);
}

#[test]
fn serve_takes_the_runtime_flags_and_refuses_bad_ones() {
    // Three data nodes on one actor thread that sleeps at once: what a small machine serving
    // point lookups may choose (see docs/postgres.md).
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--nodes",
        "3",
        "--node-threads",
        "1",
        "--idle-spin-us",
        "0",
        "--demo",
        "--orders",
        "10",
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let (_server, addr) = weir_listening(&args, LIMIT);
    let (values, _) = simple_query(addr, "SELECT COUNT(*) FROM orders");
    assert_eq!(values, ["10"]);
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["serve", "--listen", "127.0.0.1:0", "--node-threads", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--node-threads"), "{err}");
}

#[test]
fn serve_with_a_password_file_asks_for_scram() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users");
    std::fs::write(&file, "ana:secret\n").unwrap();
    let (_server, addr) = start(&["--password-file", file.to_str().unwrap()]);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(&startup("ana")).unwrap();
    let (kind, body) = read_message(&mut s);
    assert_eq!(kind, b'R');
    assert_eq!(&body[..4], &10i32.to_be_bytes(), "AuthenticationSASL");
    assert!(String::from_utf8_lossy(&body[4..]).contains("SCRAM-SHA-256"));
}

#[test]
fn serve_refuses_an_empty_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users");
    std::fs::write(&file, "# nobody\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["serve", "--listen", "127.0.0.1:0", "--nodes", "1"])
        .arg("--password-file")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no user:password line"));
}

#[test]
fn serve_with_a_certificate_offers_tls() {
    let tls = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/tests/tls");
    let cert = tls.join("server.crt");
    let key = tls.join("server.key");
    let (_server, addr) = start(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    // SSLRequest: the server answers 'S' and expects a TLS handshake next.
    s.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).unwrap();
    let mut answer = [0u8; 1];
    s.read_exact(&mut answer).unwrap();
    assert_eq!(answer[0], b'S');
}

/// Runs `sql` (a simple query) on a new connection to `addr`: the first value of each row,
/// and the command tags.
fn simple_query(addr: SocketAddr, sql: &str) -> (Vec<String>, Vec<String>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s.write_all(&startup("weir")).unwrap();
    loop {
        let (kind, body) = read_message(&mut s);
        assert_ne!(kind, b'E', "{}", String::from_utf8_lossy(&body));
        if kind == b'Z' {
            break;
        }
    }
    let mut msg = vec![b'Q'];
    msg.extend(((sql.len() + 5) as i32).to_be_bytes());
    msg.extend(sql.as_bytes());
    msg.push(0);
    s.write_all(&msg).unwrap();
    let (mut values, mut tags) = (Vec::new(), Vec::new());
    loop {
        let (kind, body) = read_message(&mut s);
        match kind {
            b'D' => values.push(first_field(&body)),
            b'C' => tags.push(
                String::from_utf8_lossy(&body)
                    .trim_end_matches('\0')
                    .to_string(),
            ),
            b'E' => panic!("{}", String::from_utf8_lossy(&body)),
            b'Z' => break,
            _ => {}
        }
    }
    (values, tags)
}

#[test]
fn serve_connected_to_node_processes_answers_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "the secret of the serve tests\n").unwrap();
    let (_node0, a0) = weir_node(0, &secret, LIMIT);
    let (_node1, a1) = weir_node(1, &secret, LIMIT);
    let connect = format!("{a0},{a1}");
    let (_server, addr) = start(&[
        "--connect",
        &connect,
        "--secret-file",
        secret.to_str().unwrap(),
    ]);
    let (values, tags) = simple_query(
        addr,
        "CREATE TABLE kv (k BIGINT PRIMARY KEY, v VARCHAR); \
         INSERT INTO kv VALUES (1, 'a'), (2, 'b'), (3, 'c'); SELECT COUNT(*) FROM kv",
    );
    assert_eq!(tags, ["CREATE TABLE", "INSERT 0 3", "SELECT 1"]);
    assert_eq!(values, ["3"]);
}
