//! `weir node` over mutual TLS as a user runs it: node processes started with `--tls-cert`,
//! `--tls-key` and `--tls-ca` serve `weir sql` and `weir shell` connecting with a client
//! certificate, refuse a client holding only the secret, and the TLS flags come all three or
//! none, never with the secret, with a clear error for a file that is missing or a
//! certificate that names another node. Certificates are made with rcgen; each node process
//! is killed when its test ends, passed or failed.

use crate::common;

#[path = "../../../runtime/tests/tls/certs.rs"]
mod certs;

use common::{weir, weir_listening, weir_with_input, Listening};
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use weir_runtime::wire::framing::TlsFiles;

/// Longest any wait here may take.
const LIMIT: Duration = Duration::from_secs(10);

/// `--tls-cert`, `--tls-key` and `--tls-ca` of `files`.
fn tls_args(files: &TlsFiles) -> Vec<&OsStr> {
    vec![
        OsStr::new("--tls-cert"),
        files.cert.as_os_str(),
        OsStr::new("--tls-key"),
        files.key.as_os_str(),
        OsStr::new("--tls-ca"),
        files.ca.as_os_str(),
    ]
}

/// Starts `weir node --id id` on 127.0.0.1:0 with the TLS files `files`.
fn tls_node(id: u32, files: &TlsFiles) -> (Listening, SocketAddr) {
    let id = id.to_string();
    let head = ["node", "--listen", "127.0.0.1:0", "--id", &id];
    let mut args: Vec<&OsStr> = head.iter().map(OsStr::new).collect();
    args.extend(tls_args(files));
    weir_listening(&args, LIMIT)
}

fn strs(files: &TlsFiles) -> [String; 6] {
    let s = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    [
        "--tls-cert".into(),
        s(&files.cert),
        "--tls-key".into(),
        s(&files.key),
        "--tls-ca".into(),
        s(&files.ca),
    ]
}

#[test]
fn weir_nodes_over_tls_serve_weir_sql_and_shell_with_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certs::Ca::new("weir test CA");
    let nodes: Vec<(Listening, SocketAddr)> = (0..2)
        .map(|i| {
            tls_node(
                i,
                &ca.files(dir.path(), &format!("node{i}"), &[&certs::node(i)]),
            )
        })
        .collect();
    let connect = nodes
        .iter()
        .map(|(_, a)| a.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let client = strs(&ca.files(dir.path(), "client", &["client.weir"]));
    let mut args = vec!["sql", "--connect", &connect, "--format", "csv"];
    args.extend(client.iter().map(String::as_str));
    let script = "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR); \
                  INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three'); \
                  SELECT name FROM t WHERE id = 2";
    args.push(script);
    let out = weir(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("name\ntwo\n"), "{stdout}");

    // The shell, a new client, finds the table.
    let mut args = vec!["shell", "--connect", &connect];
    args.extend(client.iter().map(String::as_str));
    let out = weir_with_input(&args, Some("SELECT COUNT(*) FROM t;\n"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("│ 3 "), "{stdout}");

    // A client with the secret only is refused, clearly.
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "a secret of at least sixteen bytes\n").unwrap();
    let out = weir(&[
        "sql",
        "--connect",
        &connect,
        "--secret-file",
        secret.to_str().unwrap(),
        "SELECT 1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused the connection"), "{err}");

    // A client whose certificate another CA signed is refused too.
    let stranger = certs::Ca::new("another CA");
    let rogue = strs(&stranger.files_with(
        dir.path(),
        "rogue",
        &["client.weir"],
        certs::Validity::Now,
        &[&ca],
    ));
    let mut args = vec!["sql", "--connect", &connect];
    args.extend(rogue.iter().map(String::as_str));
    args.push("SELECT 1");
    let out = weir(&args);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused the connection") && err.contains("TLS"),
        "{err}"
    );
}

#[test]
fn tls_flags_come_all_three_or_none_never_with_the_secret_and_bad_files_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certs::Ca::new("weir test CA");
    let files = ca.files(dir.path(), "node1", &[&certs::node(1)]);
    let tls = strs(&files);
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "a secret of at least sixteen bytes\n").unwrap();
    let secret = secret.to_str().unwrap();
    let node = ["node", "--listen", "127.0.0.1:0", "--id", "1"];
    let fails = |args: &[&str], want: &[&str]| {
        let out = weir(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        for w in want {
            assert!(err.contains(w), "{args:?}: {err}");
        }
    };
    // Only the certificate.
    fails(
        &[
            &node[..],
            &tls[..2].iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
        &["--tls-key", "--tls-ca"],
    );
    // TLS and the secret.
    let both: Vec<&str> = node
        .iter()
        .copied()
        .chain(tls.iter().map(String::as_str))
        .chain(["--secret-file", secret])
        .collect();
    fails(&both, &["cannot be used with"]);
    // A certificate for node 1 on node 2.
    let mut wrong_id: Vec<&str> = vec!["node", "--listen", "127.0.0.1:0", "--id", "2"];
    wrong_id.extend(tls.iter().map(String::as_str));
    fails(&wrong_id, &["does not name node-2.weir"]);
    // A missing key file.
    let mut missing: Vec<&str> = node.to_vec();
    missing.extend([
        "--tls-cert",
        &tls[1],
        "--tls-key",
        "/nonexistent/node.key",
        "--tls-ca",
        &tls[5],
    ]);
    fails(
        &missing,
        &["cannot read the TLS key file", "/nonexistent/node.key"],
    );
    // A file that is not PEM.
    let mut garbage: Vec<&str> = node.to_vec();
    garbage.extend([
        "--tls-cert",
        secret,
        "--tls-key",
        &tls[3],
        "--tls-ca",
        &tls[5],
    ]);
    fails(&garbage, &["TLS certificate file", "no CERTIFICATE block"]);
    // The client side: TLS flags without --connect, and with the secret.
    let mut no_connect: Vec<&str> = vec!["sql"];
    no_connect.extend(tls.iter().map(String::as_str));
    no_connect.push("SELECT 1");
    fails(&no_connect, &["--connect"]);
    let mut client_both: Vec<&str> =
        vec!["sql", "--connect", "127.0.0.1:1", "--secret-file", secret];
    client_both.extend(tls.iter().map(String::as_str));
    client_both.push("SELECT 1");
    fails(&client_both, &["exclude each other"]);
    // weir serve names its flags towards the nodes --node-tls-*.
    fails(
        &[
            "serve",
            "--connect",
            "127.0.0.1:1",
            "--node-tls-cert",
            &tls[1],
        ],
        &["--node-tls-key", "--node-tls-ca"],
    );
}
