//! Mutual TLS between node processes, on 127.0.0.1 in one process: a cluster of TLS data
//! nodes and a client answers queries and writes, and nothing it sends is readable on the
//! wire; a peer whose certificate another CA signed, one whose certificate names another id,
//! a client certificate claiming a data node's id, and a plaintext peer are each refused and
//! counted while the node keeps serving; a record altered on the path closes its connection
//! (counted) and the peers reconnect; bad certificate files are clear errors. Certificates
//! are made with rcgen ([`certs`]). Every wait is bounded, and every test waits for what it
//! checks, never for a timeout to pass.

#[path = "tls/certs.rs"]
mod certs;
#[path = "tcp/endpoints.rs"]
mod endpoints;
use endpoints::{ack, endpoint, sealed};

use certs::{Ca, Validity};
use crossbeam_channel::Receiver;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weir_runtime::cluster::data_node::DataNode;
use weir_runtime::wire::codec;
use weir_runtime::wire::framing::{Secret, Tls, TlsError, TlsFiles};
use weir_runtime::wire::ids::NodeId;
use weir_runtime::wire::tcp::{Auth, PeerEvent, TcpConfig, TcpTransport};
use weir_runtime::{Cluster, Error, Value};

/// Longest any single wait in these tests may take.
const LIMIT: Duration = Duration::from_secs(10);

fn config(id: NodeId, auth: impl Into<Auth>, listen: bool) -> TcpConfig {
    let mut c =
        TcpConfig::new(id, auth).heartbeat(Duration::from_millis(50), Duration::from_millis(500));
    c.handshake_timeout = Duration::from_secs(2);
    c.reconnect_min = Duration::from_millis(10);
    c.reconnect_max = Duration::from_millis(100);
    if listen {
        c = c.listen("127.0.0.1:0".parse().unwrap());
    }
    c
}

fn wait_for(what: &str, done: impl FnMut() -> bool) {
    endpoints::wait_within(LIMIT, what, done);
}

/// Sends a message from `a` to `b` and checks it arrives intact.
fn deliver(a: &TcpTransport, b: &TcpTransport, b_rx: &Receiver<(NodeId, Vec<u8>)>, query: u64) {
    assert!(a.send(b.id(), sealed(&ack(query))), "sent");
    let (from, bytes) = b_rx.recv_timeout(LIMIT).expect("the message in time");
    let got = codec::decode(codec::unseal(&bytes).unwrap()).unwrap();
    assert_eq!((from, got), (a.id(), ack(query)));
}

/// A cluster's certificates in a temporary directory: the CA, and files for any name.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
}

impl Pki {
    fn new() -> Pki {
        Pki {
            dir: tempfile::tempdir().unwrap(),
            ca: Ca::new("weir test CA"),
        }
    }

    fn files(&self, stem: &str, name: &str) -> TlsFiles {
        self.ca.files(self.dir.path(), stem, &[name])
    }

    fn node(&self, id: NodeId) -> Tls {
        Tls::load(&self.files(&format!("node{id}"), &certs::node(id))).unwrap()
    }

    fn client(&self) -> TlsFiles {
        self.files("client", "client.weir")
    }
}

/// A TCP proxy that forwards bytes both ways, keeps a copy of all of them, and on request
/// flips a bit of the next bytes the dialer sends (as someone on the path could).
struct Tap {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<u8>>>,
    flip: Arc<AtomicBool>,
}

impl Tap {
    fn start(upstream: SocketAddr) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let flip: Arc<AtomicBool> = Arc::default();
        let (s, f) = (seen.clone(), flip.clone());
        std::thread::spawn(move || {
            for down in listener.incoming() {
                let Ok(down) = down else { return };
                let Ok(up) = TcpStream::connect(upstream) else {
                    continue;
                };
                let pump =
                    |mut from: TcpStream, mut to: TcpStream, flip: Option<Arc<AtomicBool>>| {
                        let seen = s.clone();
                        std::thread::spawn(move || {
                            let mut buf = vec![0u8; 64 * 1024];
                            loop {
                                let n = match from.read(&mut buf) {
                                    Ok(0) | Err(_) => break,
                                    Ok(n) => n,
                                };
                                seen.lock().unwrap().extend_from_slice(&buf[..n]);
                                if flip
                                    .as_ref()
                                    .is_some_and(|f| f.swap(false, Ordering::SeqCst))
                                {
                                    buf[n - 1] ^= 1;
                                }
                                if to.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                            }
                            let _ = to.shutdown(std::net::Shutdown::Both);
                            let _ = from.shutdown(std::net::Shutdown::Both);
                        });
                    };
                pump(
                    down.try_clone().unwrap(),
                    up.try_clone().unwrap(),
                    Some(f.clone()),
                );
                pump(up, down, None);
            }
        });
        Tap { addr, seen, flip }
    }

    fn saw(&self, needle: &[u8]) -> bool {
        self.seen
            .lock()
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
    }

    fn bytes(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

#[test]
fn a_tls_cluster_of_data_nodes_and_a_client_answers_queries_and_writes_unreadable_on_the_wire() {
    let pki = Pki::new();
    let nodes: Vec<DataNode> = (0..3)
        .map(|i| DataNode::start(i, "127.0.0.1:0".parse().unwrap(), pki.node(i), 64 << 20).unwrap())
        .collect();
    // Everything to and from node 0 goes through the tap.
    let tap = Tap::start(nodes[0].local_addr());
    let addrs = [tap.addr, nodes[1].local_addr(), nodes[2].local_addr()];
    let cluster = Cluster::builder()
        .connect(&addrs)
        .tls(pki.client())
        .partitions(16)
        .build()
        .expect("a TLS client connects");
    cluster
        .execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, x BIGINT)")
        .unwrap();
    let values: Vec<String> = (0..200)
        .map(|i| format!("({i}, 'confidential-{i:04}', {i})"))
        .collect();
    cluster
        .execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    let one = cluster
        .query("SELECT name FROM t WHERE id = ?", &[Value::Int(7)])
        .unwrap();
    assert_eq!(one.rows()[0][0], Value::Str("confidential-0007".into()));
    cluster
        .execute("UPDATE t SET x = x + 1000 WHERE id < 100")
        .unwrap();
    let sum = cluster
        .query("SELECT COUNT(*), SUM(x) FROM t", &[])
        .unwrap();
    let want: i64 = (0..200).sum::<i64>() + 100 * 1000;
    assert_eq!(sum.rows()[0], vec![Value::Int(200), Value::Int(want)]);
    // Every node holds a share, so rows crossed node 0's connection both ways: encrypted.
    assert!(tap.bytes() > 10_000, "traffic went through the tap");
    assert!(!tap.saw(b"confidential-"), "a value readable on the wire");
    assert!(
        !tap.saw(b"CREATE TABLE"),
        "a statement readable on the wire"
    );
    for node in &nodes {
        let s = node.transport().stats();
        assert_eq!((s.refused_connections, s.refused_certificates), (0, 0));
    }
    cluster.shutdown();
}

#[test]
fn a_record_altered_on_the_path_closes_the_connection_counted_and_the_peers_reconnect() {
    let pki = Pki::new();
    let (a, a_rx) = endpoint(config(0, pki.node(0), true));
    let tap = Tap::start(a.local_addr().unwrap());
    let (b, b_rx) = endpoint(config(1, pki.node(1), false));
    let events = b.events();
    b.add_peer(0, tap.addr);
    wait_for("b connected", || b.is_up(0) && a.is_up(1));
    deliver(&b, &a, &a_rx, 1);
    deliver(&a, &b, &b_rx, 2);
    tap.flip.store(true, Ordering::SeqCst);
    wait_for("the altered record refused", || {
        a.stats().forged_frames == 1
    });
    loop {
        match events
            .recv_timeout(LIMIT)
            .expect("b sees the connection end")
        {
            PeerEvent::Down(0, _) => break,
            _ => continue,
        }
    }
    wait_for("b reconnected", || b.is_up(0) && a.is_up(1));
    deliver(&b, &a, &a_rx, 3);
}

#[test]
fn a_peer_whose_certificate_another_ca_signed_is_refused_and_counted() {
    let pki = Pki::new();
    let rogue_ca = Ca::new("another CA");
    let (a, a_rx) = endpoint(config(0, pki.node(0), true));
    let addr = a.local_addr().unwrap();
    // It trusts the cluster's CA (so it takes node 0's certificate), but its own is the
    // other CA's: node 0 must refuse it.
    let rogue_files = rogue_ca.files_with(
        pki.dir.path(),
        "rogue",
        &[&certs::node(1)],
        Validity::Now,
        &[&pki.ca],
    );
    let (rogue, _) = endpoint(config(1, Tls::load(&rogue_files).unwrap(), false));
    rogue.add_peer(0, addr);
    wait_for("node 0 refused the certificate", || {
        a.stats().refused_certificates >= 1
    });
    wait_for("the rogue was told", || rogue.refusal(0).is_some());
    let refusal = rogue.refusal(0).unwrap().message;
    assert!(refusal.contains("TLS"), "{refusal}");
    assert!(!a.is_up(1) && !rogue.is_up(0));
    assert!(a.stats().refused_connections >= 1);
    rogue.shutdown();
    // Node 0 keeps serving the real node 1.
    let (b, _) = endpoint(config(1, pki.node(1), false));
    b.add_peer(0, addr);
    wait_for("node 1 connected", || a.is_up(1) && b.is_up(0));
    deliver(&b, &a, &a_rx, 1);

    // A client whose certificate the other CA signed does not connect: a clear error.
    let client = rogue_ca.files_with(
        pki.dir.path(),
        "rogue-client",
        &["client.weir"],
        Validity::Now,
        &[&pki.ca],
    );
    let node = DataNode::start(1, "127.0.0.1:0".parse().unwrap(), pki.node(1), 64 << 20).unwrap();
    let refused = node.transport().stats().refused_certificates;
    let err = Cluster::builder()
        .connect(&[node.local_addr()])
        .tls(client)
        .build()
        .map(|_| ())
        .expect_err("refused");
    assert!(matches!(err, Error::Connect(_)), "{err}");
    assert!(err.to_string().contains("refused the connection"), "{err}");
    // The node counts the refusal as its side of the handshake ends, which may be just after
    // the client gave up.
    wait_for("the node counts the refused certificate", || {
        node.transport().stats().refused_certificates > refused
    });
}

#[test]
fn a_certificate_naming_another_id_is_refused_both_ways_and_counted() {
    let pki = Pki::new();
    let (a, a_rx) = endpoint(config(0, pki.node(0), true));
    let addr = a.local_addr().unwrap();
    // Node 2's certificate (signed by the cluster's CA) claiming id 1.
    let (rogue, _) = endpoint(config(1, pki.node(2), false));
    rogue.add_peer(0, addr);
    wait_for("node 0 refused it", || a.stats().refused_certificates == 1);
    wait_for("the rogue was told", || rogue.refusal(0).is_some());
    let refusal = rogue.refusal(0).unwrap().message;
    assert!(refusal.contains("certificate for id 1"), "{refusal}");
    assert!(!a.is_up(1));
    assert!(a.stats().refused_connections >= 1);
    rogue.shutdown();

    // Dialing: node 0 dials "node 3" and finds a listener with node 2's certificate.
    let (impostor, _) = endpoint(config(3, pki.node(2), true));
    a.add_peer(3, impostor.local_addr().unwrap());
    wait_for("node 0 refused the listener", || a.refusal(3).is_some());
    let refusal = a.refusal(3).unwrap().message;
    assert!(
        refusal.contains("TLS") && refusal.contains("certificate"),
        "{refusal}"
    );
    assert!(!a.is_up(3));
    a.remove_peer(3);
    impostor.shutdown();

    // A client certificate may claim a client id, not a data node's the node knows.
    let client = Tls::load(&pki.client()).unwrap();
    let (c, c_rx) = endpoint(config(9, client.clone(), false));
    c.add_peer(0, addr);
    wait_for("a client connected", || a.is_up(9));
    deliver(&a, &c, &c_rx, 1);
    let before = a.stats().refused_certificates;
    a.add_peer(4, "127.0.0.1:9".parse().unwrap()); // node 4 is a data node from now on
    let (c4, _) = endpoint(config(4, client.clone(), false));
    c4.add_peer(0, addr);
    wait_for("the client certificate refused for node 4", || {
        a.stats().refused_certificates > before
    });
    wait_for("the client was told", || c4.refusal(0).is_some());
    assert!(!c4.is_up(0));
    c4.shutdown();
    // A client-certificate connection holding an id that a Join then names as a data
    // node's is closed, and cannot come back.
    let before = a.stats().refused_certificates;
    a.add_peer(9, "127.0.0.1:9".parse().unwrap());
    wait_for("the client's connection closed", || !a.is_up(9));
    wait_for("counted", || a.stats().refused_certificates > before);
    c.shutdown();
    // Node 0 keeps serving.
    let (b, _) = endpoint(config(1, pki.node(1), false));
    b.add_peer(0, addr);
    wait_for("node 1 connected", || a.is_up(1) && b.is_up(0));
    deliver(&b, &a, &a_rx, 2);

    // A data node whose certificate names another node does not start.
    let err = DataNode::start(1, "127.0.0.1:0".parse().unwrap(), pki.node(2), 64 << 20)
        .map(|_| ())
        .expect_err("refused");
    assert!(
        err.to_string().contains("does not name node-1.weir"),
        "{err}"
    );
    // Nor does a client with a node's certificate.
    let err = Cluster::builder()
        .connect(&[addr])
        .tls(pki.files("node5", &certs::node(5)))
        .build()
        .map(|_| ())
        .expect_err("refused");
    assert!(
        err.to_string().contains("does not name client.weir"),
        "{err}"
    );
}

#[test]
fn a_plaintext_peer_to_a_tls_node_is_refused_and_the_node_keeps_serving() {
    let pki = Pki::new();
    let secret = Secret::new(b"a shared secret for the tests".to_vec()).unwrap();
    let (a, a_rx) = endpoint(config(0, pki.node(0), true));
    let addr = a.local_addr().unwrap();
    let (plain, _) = endpoint(config(1, secret.clone(), false));
    plain.add_peer(0, addr);
    wait_for("refused", || a.stats().refused_connections >= 1);
    wait_for("the plaintext peer was told", || plain.refusal(0).is_some());
    assert!(!a.is_up(1));
    assert_eq!(
        a.stats().refused_certificates,
        0,
        "not a certificate refusal"
    );
    plain.shutdown();
    // Raw garbage too.
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest); // closed by the node
    let (b, _) = endpoint(config(1, pki.node(1), false));
    b.add_peer(0, addr);
    wait_for("node 1 connected", || a.is_up(1) && b.is_up(0));
    deliver(&b, &a, &a_rx, 1);

    // The other way: a TLS peer to a plaintext node is refused there.
    let (p, _) = endpoint(config(5, secret, true));
    let (t, _) = endpoint(config(6, pki.node(6), false));
    t.add_peer(5, p.local_addr().unwrap());
    wait_for("refused", || p.stats().refused_connections >= 1);
    wait_for("the TLS peer was told", || t.refusal(5).is_some());
    assert!(!p.is_up(6));
}

#[test]
fn missing_malformed_mismatched_unsigned_or_expired_files_are_clear_errors() {
    let pki = Pki::new();
    let dir = pki.dir.path();
    let good = pki.files("good", &certs::node(0));
    let load = |f: &TlsFiles| Tls::load(f).map(|_| ()).expect_err("refused").to_string();

    let missing = TlsFiles {
        cert: dir.join("nope.crt"),
        ..good.clone()
    };
    let e = load(&missing);
    assert!(
        e.contains("cannot read the TLS certificate file") && e.contains("nope.crt"),
        "{e}"
    );
    assert!(matches!(Tls::load(&missing), Err(TlsError::Read { .. })));

    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not a certificate at all\n").unwrap();
    let e = load(&TlsFiles {
        cert: garbage.clone(),
        ..good.clone()
    });
    assert!(
        e.contains("garbage.pem") && e.contains("no CERTIFICATE block"),
        "{e}"
    );
    let e = load(&TlsFiles {
        key: garbage.clone(),
        ..good.clone()
    });
    assert!(
        e.contains("TLS key file") && e.contains("no PRIVATE KEY block"),
        "{e}"
    );
    let e = load(&TlsFiles {
        ca: garbage.clone(),
        ..good.clone()
    });
    assert!(e.contains("TLS CA file"), "{e}");
    let broken = dir.join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = load(&TlsFiles {
        cert: broken,
        ..good.clone()
    });
    assert!(e.contains("malformed PEM"), "{e}");

    // Another certificate's key.
    let other = pki.files("other", &certs::node(1));
    let e = load(&TlsFiles {
        key: other.key.clone(),
        ..good.clone()
    });
    assert!(e.contains("the certificate and key"), "{e}");

    // Signed by a CA other than the one given.
    let stranger = Ca::new("a stranger").files(dir, "stranger", &[&certs::node(0)]);
    let e = load(&TlsFiles {
        ca: good.ca.clone(),
        ..stranger
    });
    assert!(e.contains("not signed by the CA"), "{e}");

    // Expired.
    let expired = pki
        .ca
        .files_with(dir, "expired", &[&certs::node(0)], Validity::Expired, &[]);
    assert!(load(&expired).contains("expired"));

    // The secret and TLS together, or TLS files that are not there, fail the build.
    let secret = Secret::new(b"a shared secret for the tests".to_vec()).unwrap();
    let err = Cluster::builder()
        .connect(&["127.0.0.1:1"])
        .secret(secret)
        .tls(pki.client())
        .build()
        .map(|_| ())
        .expect_err("refused");
    assert!(
        matches!(err, Error::Invalid(_)) && err.to_string().contains("not both"),
        "{err}"
    );
    let err = Cluster::builder()
        .connect(&["127.0.0.1:1"])
        .tls(missing)
        .build()
        .map(|_| ())
        .expect_err("refused");
    assert!(err.to_string().contains("nope.crt"), "{err}");
}
