//! The TCP carrier on 127.0.0.1: endpoints in one process exchange encoded messages, refuse
//! peers without the secret and malformed frames, refuse every frame whose MAC does not
//! verify (altered, replayed, reordered or injected by a man in the middle, [`proxy`]),
//! refuse a second connection claiming a live id, keep one host's silent connections from
//! delaying another's handshake, declare a peer that stops reading down without blocking the
//! sender, report a silent peer dead within the heartbeat bound and reconnect to a peer that
//! comes back; a data node takes frames from an authenticated peer. Every wait is bounded,
//! and every test waits for what it checks, never for a timeout to pass.

#[path = "tcp/endpoints.rs"]
mod endpoints;
#[path = "tcp/proxy.rs"]
mod proxy;
use endpoints::{ack, endpoint, sealed};

use crossbeam_channel::Receiver;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::bytes::BytesMut;
use weir_runtime::wire::carrier::{Deliver, Inbox, Transport};
use weir_runtime::wire::codec;
use weir_runtime::wire::framing::{
    self, FrameSealer, HandshakeError, Secret, HANDSHAKE_MAX_FRAME, TAG_BYTES,
};
use weir_runtime::wire::ids::NodeId;
use weir_runtime::wire::messages::{
    BatchStop, CatalogBytes, CatalogPropose, CloseMessage, MessageKind, NetMessage, Proposal,
    WriteAbort, WriteCommit,
};
use weir_runtime::wire::network::Network;
use weir_runtime::wire::tcp::{PeerEvent, TcpConfig, TcpTransport};

/// Longest any single wait in these tests may take.
const LIMIT: Duration = Duration::from_secs(5);
const HEARTBEAT: Duration = Duration::from_millis(50);
const DEAD_AFTER: Duration = Duration::from_millis(300);

fn secret() -> Secret {
    Secret::new(b"a shared secret for the tests".to_vec()).unwrap()
}

fn config(id: NodeId, secret: Secret, listen: bool) -> TcpConfig {
    let mut c = TcpConfig::new(id, secret).heartbeat(HEARTBEAT, DEAD_AFTER);
    c.handshake_timeout = Duration::from_secs(1);
    c.reconnect_min = Duration::from_millis(10);
    c.reconnect_max = Duration::from_millis(100);
    c.max_frame_bytes = 64 * 1024;
    if listen {
        c = c.listen("127.0.0.1:0".parse().unwrap());
    }
    c
}

fn wait_for(what: &str, done: impl FnMut() -> bool) {
    endpoints::wait_within(LIMIT, what, done);
}

fn decoded(bytes: &[u8]) -> NetMessage {
    codec::decode(codec::unseal(bytes).unwrap()).unwrap()
}

/// Sends one message each way between `a` and `b` and checks both arrive intact.
fn ping_pong(
    a: &TcpTransport,
    a_rx: &Receiver<(NodeId, Vec<u8>)>,
    b: &TcpTransport,
    b_rx: &Receiver<(NodeId, Vec<u8>)>,
    query: u64,
) {
    assert!(a.send(b.id(), sealed(&ack(query))));
    assert!(b.send(a.id(), sealed(&ack(query + 1))));
    let (from, bytes) = b_rx.recv_timeout(LIMIT).expect("a's message to b");
    assert_eq!((from, decoded(&bytes)), (a.id(), ack(query)));
    let (from, bytes) = a_rx.recv_timeout(LIMIT).expect("b's message to a");
    assert_eq!((from, decoded(&bytes)), (b.id(), ack(query + 1)));
}

/// Next event of `events` other than heartbeat noise, within `limit`.
fn next_event(events: &Receiver<PeerEvent>, limit: Duration) -> PeerEvent {
    events.recv_timeout(limit).expect("an event in time")
}

/// A node that keeps what it receives: it sends each message, decoded, down a channel.
struct Collector(crossbeam_channel::Sender<(NodeId, NetMessage)>);

impl Inbox for Collector {
    fn deliver(&self, msg: Deliver) {
        let _ = self.0.send((msg.from, decoded(&msg.bytes)));
    }

    fn is_open(&self) -> bool {
        true
    }

    fn crash(&self) {}
}

/// What a collector received, in order.
type Received = Receiver<(NodeId, NetMessage)>;

/// `n` collectors, and what each received.
fn collectors(n: usize) -> (Vec<Arc<dyn Inbox>>, Vec<Received>) {
    (0..n)
        .map(|_| {
            let (tx, rx) = crossbeam_channel::unbounded();
            (Arc::new(Collector(tx)) as Arc<dyn Inbox>, rx)
        })
        .unzip()
}

#[test]
fn three_nodes_exchange_messages_over_tcp_and_the_counters_agree() {
    // Three "processes": each a network with one node attached and a TCP carrier.
    let (inboxes, received) = collectors(3);
    let mut nets = Vec::new();
    let mut carriers = Vec::new();
    for (i, r) in inboxes.into_iter().enumerate() {
        let id = i as NodeId;
        let net = Network::new();
        net.attach(id, Some(r));
        let t = Arc::new(TcpTransport::start(config(id, secret(), true), net.inbound(id)).unwrap());
        assert!(net.set_remote(t.clone()));
        nets.push(net);
        carriers.push(t);
    }
    let addrs: Vec<SocketAddr> = carriers.iter().map(|t| t.local_addr().unwrap()).collect();
    for t in &carriers {
        for (j, addr) in addrs.iter().enumerate() {
            t.add_peer(j as NodeId, *addr);
        }
    }
    for t in &carriers {
        wait_for("every pair connected", || t.peers_up().len() == 2);
    }
    // Every node sends every other node a mix of kinds.
    let mix = |q: u64| {
        vec![
            ack(q),
            NetMessage::QueryBatchStop(BatchStop {
                query: q,
                exchange: 1,
            }),
            NetMessage::QueryClose(CloseMessage {
                query: q,
                fragment: None,
            }),
            NetMessage::WriteCommit(WriteCommit { write: q }),
            NetMessage::WriteAbort(WriteAbort { write: q }),
        ]
    };
    let mut bytes_sent = [0u64; 3];
    for from in 0..3u32 {
        for to in (0..3u32).filter(|t| *t != from) {
            for m in mix(u64::from(from * 10 + to)) {
                assert!(nets[from as usize].send(from, to, &m), "{from} -> {to}");
                bytes_sent[from as usize] += codec::encode(&m).unwrap().len() as u64;
            }
        }
    }
    for (to, rx) in received.iter().enumerate() {
        let mut got: Vec<(NodeId, NetMessage)> = (0..10)
            .map(|_| rx.recv_timeout(LIMIT).expect("ten messages at each node"))
            .collect();
        got.sort_by_key(|(from, _)| *from);
        let mut want = Vec::new();
        for from in (0..3u32).filter(|f| *f as usize != to) {
            want.extend(
                mix(u64::from(from * 10 + to as u32))
                    .into_iter()
                    .map(|m| (from, m)),
            );
        }
        assert_eq!(got, want, "what node {to} received");
        assert!(rx.try_recv().is_err(), "node {to} got more than was sent");
    }
    for (i, net) in nets.iter().enumerate() {
        let stats = net.totals();
        assert_eq!(stats.total, 10);
        assert_eq!(stats.bytes, bytes_sent[i]);
        for kind in [
            MessageKind::QueryBatchAck,
            MessageKind::QueryBatchStop,
            MessageKind::QueryClose,
            MessageKind::WriteCommit,
            MessageKind::WriteAbort,
        ] {
            assert_eq!(stats.count(kind), 2, "node {i}: {kind:?}");
        }
        assert_eq!(stats.count(MessageKind::QueryBatch), 0);
        // On the wire: ten frames out and in, each message plus its 4-byte checksum.
        // A frame is counted after it is handed on, so the count may trail the receiver.
        wait_for("ten frames counted", || {
            carriers[i].stats().frames_received >= 10
        });
        let wire = carriers[i].stats();
        assert_eq!((wire.frames_sent, wire.frames_received), (10, 10));
        assert_eq!(wire.bytes_sent, bytes_sent[i] + 10 * 4);
        assert_eq!(wire.refused_connections + wire.refused_frames, 0);
    }
    // A node nobody knows is not reachable.
    assert!(!nets[0].send(0, 9, &ack(1)));
    assert!(!carriers[0].reaches(9));
}

#[test]
fn a_peer_with_a_wrong_secret_is_refused_and_the_others_keep_exchanging() {
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    a.add_peer(1, b.local_addr().unwrap());
    b.add_peer(0, a.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    // An intruder (dial only) with another secret tries both.
    let wrong = Secret::new(b"not the shared secret at all".to_vec()).unwrap();
    let (intruder, intruder_rx) = endpoint(config(2, wrong, false));
    intruder.add_peer(0, a.local_addr().unwrap());
    intruder.add_peer(1, b.local_addr().unwrap());
    wait_for("the intruder refused by both", || {
        a.stats().refused_connections >= 1 && b.stats().refused_connections >= 1
    });
    assert!(intruder.peers_up().is_empty());
    assert!(intruder.stats().refused_connections >= 2);
    assert!(
        !intruder.send(0, sealed(&ack(9))),
        "no connection to send on"
    );
    assert_eq!((a.peers_up(), b.peers_up()), (vec![1], vec![0]));
    ping_pong(&a, &a_rx, &b, &b_rx, 3);
    assert!(intruder_rx.try_recv().is_err());
    // An endpoint counts a frame after handing it on, so the count may trail the receiver.
    let received = || a.stats().frames_received + b.stats().frames_received;
    wait_for("the four frames counted", || received() >= 4);
    assert_eq!(received(), 4, "no frame from the intruder");
}

/// A peer made by hand: an authenticated connection as some node id, with the keys the
/// handshake gave it.
struct HandPeer {
    /// Kept open, never read (unless a test reads it).
    _read: tokio::net::tcp::OwnedReadHalf,
    write: tokio::net::tcp::OwnedWriteHalf,
    sealer: FrameSealer,
}

impl HandPeer {
    /// Sends `payload` as an authenticated frame.
    async fn send(&mut self, payload: &[u8]) {
        let mut wire = BytesMut::new();
        self.sealer.seal_into(payload, &mut wire).unwrap();
        self.send_raw(&wire).await;
    }

    /// Writes `wire` as it is.
    async fn send_raw(&mut self, wire: &[u8]) {
        use tokio::io::AsyncWriteExt;
        self.write.write_all(wire).await.unwrap();
    }
}

/// An authenticated connection to `addr` as node `me`, made by hand.
async fn dial_by_hand(addr: SocketAddr, me: NodeId) -> HandPeer {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut framed = tokio_util::codec::Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
    let session = framing::dial(&mut framed, &secret(), me, None, LIMIT)
        .await
        .unwrap();
    let (read, write) = framed.into_inner().into_split();
    HandPeer {
        _read: read,
        write,
        sealer: session.keys.split(64 * 1024).0,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Waits, within [`LIMIT`], for the first event of `events` that `pick` takes; the events
/// before it are skipped.
fn wait_event<T>(events: &Receiver<PeerEvent>, mut pick: impl FnMut(PeerEvent) -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(e) => {
                if let Some(t) = pick(e) {
                    return t;
                }
            }
            Err(_) => panic!("the awaited event did not come within {LIMIT:?}"),
        }
    }
}

/// The reason node `peer` went down, waiting for it.
fn down_reason(events: &Receiver<PeerEvent>, peer: NodeId) -> String {
    wait_event(events, |e| match e {
        PeerEvent::Down(p, why) if p == peer => Some(why),
        _ => None,
    })
}

/// Waits for node `peer` to come up.
fn wait_up(events: &Receiver<PeerEvent>, peer: NodeId) {
    wait_event(events, |e| (e == PeerEvent::Up(peer)).then_some(()))
}

#[test]
fn garbage_and_oversized_frames_are_refused_and_the_endpoint_keeps_serving() {
    use tokio::io::AsyncWriteExt;
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    let addr = a.local_addr().unwrap();
    a.add_peer(1, b.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    let events = a.events();
    assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(1));
    let rt = runtime();
    rt.block_on(async {
        // Before authenticating: a garbage frame, a frame announcing 2 GiB, and a sealed
        // message as if the handshake were done.
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(&[0, 0, 0, 5, 1, 2, 3, 4, 5]).await.unwrap();
        let mut s2 = tokio::net::TcpStream::connect(addr).await.unwrap();
        s2.write_all(&[0x7F, 0xFF, 0xFF, 0xFF, 0]).await.unwrap();
        let mut s3 = tokio::net::TcpStream::connect(addr).await.unwrap();
        let message = sealed(&ack(60));
        s3.write_all(&(message.len() as u32).to_be_bytes())
            .await
            .unwrap();
        s3.write_all(&message).await.unwrap();
        wait_for("the three unauthenticated peers refused", || {
            a.stats().refused_connections == 3
        });
        // After authenticating (as node 7): a frame whose tag verifies but whose checksum
        // is wrong is dropped, the connection stays and carries the next good frame.
        let mut peer = dial_by_hand(addr, 7).await;
        wait_for("node 7 up at a", || a.is_up(7));
        peer.send(&[0xAB; 40]).await;
        peer.send(&sealed(&ack(70))).await;
        let (from, bytes) = a_rx.recv_timeout(LIMIT).expect("node 7's good frame");
        assert_eq!((from, decoded(&bytes)), (7, ack(70)));
        assert_eq!(a.stats().refused_frames, 1);
        assert!(a.is_up(7));
        // A frame over the limit (64 KiB) closes node 7's connection.
        peer.send_raw(&(1u32 << 20).to_be_bytes()).await;
        assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(7));
        match next_event(&events, LIMIT) {
            PeerEvent::Down(7, why) => assert!(why.contains("refused frame"), "{why}"),
            e => panic!("expected node 7 down, got {e:?}"),
        }
        assert_eq!(a.stats().refused_frames, 2);
        // A frame whose tag does not verify (node 8 made it under no key) closes node 8's.
        let mut peer = dial_by_hand(addr, 8).await;
        wait_up(&events, 8);
        let mut forged = sealed(&ack(80));
        forged.extend_from_slice(&[0x5A; TAG_BYTES]);
        let mut wire = (forged.len() as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&forged);
        peer.send_raw(&wire).await;
        let why = down_reason(&events, 8);
        assert!(why.contains("does not verify"), "{why}");
        assert_eq!(a.stats().forged_frames, 1);
    });
    // Node 1 never noticed, and nothing of the refused reached the node.
    assert_eq!(a.peers_up(), vec![1]);
    assert!(a_rx.try_recv().is_err(), "only node 7's good frame arrived");
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    assert!(
        events.try_recv().is_err(),
        "b's connection was not disturbed"
    );
}

/// A test of the heartbeat timeout: a peer that authenticates and then goes silent (its
/// socket open, nothing sent) is reported dead after `DEAD_AFTER` and well within a second
/// more.
#[test]
fn a_silent_peer_is_reported_dead_within_the_heartbeat_bound() {
    let (a, _a_rx) = endpoint(config(0, secret(), true));
    let events = a.events();
    let rt = runtime();
    rt.block_on(async {
        let _silent = dial_by_hand(a.local_addr().unwrap(), 5).await;
        assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(5));
        let up = Instant::now();
        let event = tokio::task::spawn_blocking({
            let events = events.clone();
            move || next_event(&events, DEAD_AFTER + Duration::from_secs(1))
        })
        .await
        .unwrap();
        let took = up.elapsed();
        match event {
            PeerEvent::Down(5, why) => assert!(why.contains("no heartbeat"), "{why}"),
            e => panic!("expected node 5 down, got {e:?}"),
        }
        assert!(
            took >= DEAD_AFTER - HEARTBEAT,
            "declared dead too early: {took:?}"
        );
        assert!(
            took < DEAD_AFTER + Duration::from_secs(1),
            "too late: {took:?}"
        );
        assert!(!a.is_up(5));
    });
    assert!(a.stats().heartbeats_sent >= 1);
}

#[test]
fn a_peer_that_goes_away_is_reported_down_and_reconnected_when_it_comes_back() {
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    let b_addr = b.local_addr().unwrap();
    a.add_peer(1, b_addr);
    let events = a.events();
    assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(1));
    // a's side of the connection is up; b registers its own a moment later.
    wait_for("b sees a", || b.is_up(0));
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    let gone = Instant::now();
    b.shutdown();
    assert!(matches!(next_event(&events, LIMIT), PeerEvent::Down(1, _)));
    assert!(gone.elapsed() < DEAD_AFTER + Duration::from_secs(1));
    assert!(
        !a.send(1, sealed(&ack(2))),
        "nothing to send on while b is away"
    );
    // b comes back on the same address; a keeps dialing it.
    let mut again = config(1, secret(), false);
    again.listen = Some(b_addr);
    let (b, b_rx) = endpoint(again);
    assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(1));
    wait_for("b sees a", || b.is_up(0));
    ping_pong(&a, &a_rx, &b, &b_rx, 3);
}

#[test]
fn a_data_node_takes_frames_from_an_authenticated_peer_and_its_peers_see_it_stop() {
    use weir_runtime::cluster::data_node::DataNode;
    let node = DataNode::start_with(config(1, secret(), true), 64 << 20).unwrap();
    let (a, _a_rx) = endpoint(config(0, secret(), true));
    a.add_peer(1, node.local_addr());
    let events = a.events();
    assert_eq!(next_event(&events, LIMIT), PeerEvent::Up(1));
    assert!(a.send(1, sealed(&ack(1))));
    // The frame reached the node actor's mailbox.
    wait_for("the node took the frame", || {
        node.transport().stats().frames_received == 1
    });
    assert_eq!(node.transport().peers_up(), vec![0]);
    node.shutdown();
    assert!(matches!(next_event(&events, LIMIT), PeerEvent::Down(1, _)));
}

/// `n` silent connections to `addr` from the loopback address `source` (127.0.0.x): each
/// holds a handshake slot until the endpoint closes it.
async fn silent_connections(
    addr: SocketAddr,
    source: &str,
    n: usize,
) -> Vec<tokio::net::TcpStream> {
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        streams.push(socket.connect(addr).await.unwrap());
    }
    streams
}

#[test]
fn connections_beyond_the_pending_handshake_cap_are_refused_at_once() {
    use weir_runtime::wire::tcp::{MAX_PENDING_HANDSHAKES, MAX_PENDING_PER_SOURCE};
    // No handshake times out during this test: a refusal can only be a cap's.
    let mut c = config(0, secret(), true);
    c.handshake_timeout = Duration::from_secs(60);
    let (a, _a_rx) = endpoint(c);
    let addr = a.local_addr().unwrap();
    let rt = runtime();
    // Every slot taken, by sources that each fill their share.
    let sources = MAX_PENDING_HANDSHAKES / MAX_PENDING_PER_SOURCE;
    let mut silent = Vec::new();
    for i in 0..sources {
        let source = format!("127.0.0.{}", 2 + i);
        silent.extend(rt.block_on(silent_connections(addr, &source, MAX_PENDING_PER_SOURCE)));
    }
    assert_eq!(silent.len(), MAX_PENDING_HANDSHAKES);
    // Three more, from a source of their own, are refused at once.
    let more = rt.block_on(silent_connections(addr, "127.0.0.200", 3));
    wait_for("the three connections beyond the cap refused", || {
        a.stats().refused_connections == 3
    });
    // Closed, they give their slots back; a peer with the secret gets in.
    drop((silent, more));
    let (b, _b_rx) = endpoint(config(1, secret(), false));
    b.add_peer(0, addr);
    wait_for("a peer with the secret connected", || {
        b.is_up(0) && a.is_up(1)
    });
}

#[test]
fn silent_connections_from_one_source_do_not_delay_another_peers_handshake() {
    use weir_runtime::wire::tcp::MAX_PENDING_PER_SOURCE;
    let handshake = Duration::from_secs(1);
    let mut c = config(0, secret(), true);
    c.handshake_timeout = handshake;
    let (a, _a_rx) = endpoint(c);
    let addr = a.local_addr().unwrap();
    let rt = runtime();
    // One host opens 200 connections and says nothing on them.
    let silent = rt.block_on(silent_connections(addr, "127.0.0.2", 200));
    let beyond = (200 - MAX_PENDING_PER_SOURCE) as u64;
    wait_for(
        "the connections beyond the source's share refused at once",
        || a.stats().refused_connections == beyond,
    );
    // A peer from another host gets in at once, well within one handshake deadline.
    let mut c = config(1, secret(), false);
    c.handshake_timeout = handshake;
    let (b, b_rx) = endpoint(c);
    let asked = Instant::now();
    b.add_peer(0, addr);
    wait_for("the other peer connected", || b.is_up(0) && a.is_up(1));
    let took = asked.elapsed();
    assert!(took < handshake, "the handshake took {took:?}");
    assert!(a.send(1, sealed(&ack(1))));
    let (from, bytes) = b_rx.recv_timeout(LIMIT).unwrap();
    assert_eq!((from, decoded(&bytes)), (0, ack(1)));
    // The silent connections that held slots are closed at the deadline.
    wait_for(
        "the silent connections within the share closed at the deadline",
        || a.stats().refused_connections == 200,
    );
    drop(silent);
}

#[test]
fn a_second_connection_claiming_a_live_id_is_refused_and_the_live_one_kept() {
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    a.add_peer(1, b.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    let b_events = b.events();
    assert_eq!(next_event(&b_events, LIMIT), PeerEvent::Up(0));
    // A holder of the secret dials b as node 0 by hand: refused, told why.
    let rt = runtime();
    let refused = rt.block_on(async {
        let stream = tokio::net::TcpStream::connect(b.local_addr().unwrap())
            .await
            .unwrap();
        let mut framed =
            tokio_util::codec::Framed::new(stream, framing::codec(HANDSHAKE_MAX_FRAME));
        framing::dial(&mut framed, &secret(), 0, Some(1), LIMIT).await
    });
    assert!(
        matches!(refused, Err(HandshakeError::IdInUse(0))),
        "{refused:?}"
    );
    wait_for("the duplicate counted", || b.stats().duplicate_ids == 1);
    // An endpoint claiming node 0 keeps being refused, and knows why.
    let (impostor, _rx) = endpoint(config(0, secret(), false));
    impostor.add_peer(1, b.local_addr().unwrap());
    wait_for("the impostor refused as a duplicate", || {
        impostor.refusal(1).is_some_and(|r| r.id_in_use)
    });
    assert!(!impostor.is_up(1));
    // b counts the refusal after it sent it: the impostor may learn of it first.
    wait_for("the impostor's duplicate counted", || {
        b.stats().duplicate_ids >= 2
    });
    // The live connection never moved.
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    assert!(
        b_events.try_recv().is_err(),
        "b's link to a was not disturbed"
    );
    assert_eq!(b.peers_up(), vec![0]);
}

#[test]
fn a_live_peer_is_never_repointed_and_dial_loops_end() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    let b_addr = b.local_addr().unwrap();
    assert!(a.add_peer(1, b_addr));
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    // A Join naming another address for node 1 while it is connected changes nothing.
    let elsewhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    assert!(!a.add_peer(1, elsewhere));
    assert_eq!(a.stats().refused_peers, 1);
    assert!(a.add_peer(1, b_addr), "the same address again is fine");
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    // A dial loop toward an address where no weir node answers ends after its attempts.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = listener.local_addr().unwrap();
    let dialed = Arc::new(AtomicUsize::new(0));
    let counted = dialed.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let mut c = config(2, secret(), false);
    c.dial_attempts = Some(3);
    let (d, _d_rx) = endpoint(c);
    assert!(d.add_peer(9, nowhere));
    assert!(d.is_dialing(9));
    wait_for("the dial loop gave up", || !d.is_dialing(9));
    wait_for("three attempts seen", || dialed.load(Ordering::SeqCst) == 3);
    // Named again, it starts again; removed, it stops.
    let mut c = config(3, secret(), false);
    c.dial_attempts = None;
    let (e, _e_rx) = endpoint(c);
    assert!(e.add_peer(9, nowhere));
    wait_for("a few attempts", || dialed.load(Ordering::SeqCst) >= 5);
    e.remove_peer(9);
    wait_for("the removed peer's loop ended", || !e.is_dialing(9));
    // A Join naming more peers than an endpoint keeps adds none past the bound.
    let mut c = config(4, secret(), false);
    c.max_peers = 1;
    let (f, _f_rx) = endpoint(c);
    assert!(f.add_peer(20, nowhere));
    assert!(!f.add_peer(21, nowhere));
    assert_eq!(f.stats().refused_peers, 1);
    f.remove_peer(20);
    assert!(f.add_peer(21, nowhere), "room again once a peer is removed");
}

#[test]
fn frames_altered_replayed_reordered_or_injected_on_the_path_close_the_connection() {
    use proxy::{Proxy, Tamper};
    let (a, a_rx) = endpoint(config(0, secret(), true));
    let (b, b_rx) = endpoint(config(1, secret(), true));
    a.add_peer(1, b.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    // Node 2 reaches a through a man in the middle, who holds no key.
    let mitm = Proxy::start(a.local_addr().unwrap());
    let (c, c_rx) = endpoint(config(2, secret(), false));
    let events = a.events();
    c.add_peer(0, mitm.addr());
    let forged = {
        // What the attacker sends: a catalog that drops every table, sealed as any
        // message is, with a tag made up.
        let put = NetMessage::CatalogPropose(Box::new(CatalogPropose {
            request: 1,
            proposal: Proposal::Schema {
                id: 1,
                expected: 0,
                catalog: CatalogBytes(vec![0; 16]),
                backups: 0,
            },
        }));
        let mut frame = sealed(&put);
        frame.extend_from_slice(&[0xC3; TAG_BYTES]);
        let mut wire = (frame.len() as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&frame);
        wire
    };
    let mut query = 100;
    let mut earlier = None;
    let attacks = [
        "altered",
        "replayed",
        "reordered",
        "injected",
        "replayed from an earlier connection",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        wait_up(&events, 2);
        wait_for("c connected", || c.is_up(0));
        // The connection carries c's messages.
        ping_pong(&c, &c_rx, &a, &a_rx, query);
        query += 2;
        let tamper = match *attack {
            "altered" => Tamper::Alter,
            "replayed" => Tamper::Replay,
            "reordered" => Tamper::Reorder,
            "injected" => Tamper::Inject(forged.clone()),
            _ => Tamper::Inject(earlier.clone().expect("a frame of an earlier connection")),
        };
        // A frame of this connection, to replay on the next one.
        let this_connection = mitm.last_frame();
        mitm.tamper(tamper);
        // Heartbeats keep frames coming: the next one is tampered with.
        let why = down_reason(&events, 2);
        assert!(why.contains("does not verify"), "{attack}: {why}");
        assert_eq!(a.stats().forged_frames, i as u64 + 1, "{attack}");
        wait_for("the proxy done", || mitm.tampered() == i as u64 + 1);
        earlier = this_connection;
        // The rest of the cluster never noticed.
        ping_pong(&a, &a_rx, &b, &b_rx, query);
        query += 2;
        assert!(b.is_up(0) && a.is_up(1));
    }
    // Nothing tampered with reached a node; c, dialing again, is served again.
    wait_up(&events, 2);
    wait_for("c connected", || c.is_up(0));
    ping_pong(&c, &c_rx, &a, &a_rx, query);
    assert!(a_rx.try_recv().is_err() && c_rx.try_recv().is_err());
    assert_eq!(
        a.stats().refused_frames,
        0,
        "no forged frame got as far as its checksum"
    );
    assert!(
        mitm.upstream_closes() >= attacks.len() as u64,
        "a closed each connection"
    );
}

#[test]
fn a_peer_that_stops_reading_is_declared_down_and_sends_never_block() {
    let mut c = config(0, secret(), true);
    c.send_timeout = Duration::from_millis(300);
    c.send_queue_bytes = 256 << 20;
    let (a, a_rx) = endpoint(c);
    let (b, b_rx) = endpoint(config(1, secret(), true));
    a.add_peer(1, b.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    let events = a.events();
    wait_up(&events, 1);
    let rt = runtime();
    // Node 5 authenticates, then sends heartbeats as it should, but never reads.
    let peer = rt.block_on(dial_by_hand(a.local_addr().unwrap(), 5));
    let _beating = rt.spawn(async move {
        let mut peer = peer;
        loop {
            peer.send(&[]).await;
            tokio::time::sleep(HEARTBEAT).await;
        }
    });
    let _driver = std::thread::spawn(move || rt.block_on(std::future::pending::<()>()));
    wait_up(&events, 5);
    // a sends 64 KiB a millisecond: the socket's buffers fill, then a's writer waits.
    let frame = codec::seal(vec![0x42; 64 * 1024 - 4]);
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut sent = 0;
    while a.is_up(5) {
        assert!(
            started.elapsed() < LIMIT,
            "node 5 not declared down within {LIMIT:?}"
        );
        let t = Instant::now();
        if a.send(5, frame.clone()) {
            sent += 1;
        }
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(1));
    }
    let why = down_reason(&events, 5);
    assert!(why.contains("stopped reading"), "{why}");
    assert_eq!(a.stats().stalled_peers, 1);
    assert!(sent > 0);
    assert!(
        slowest < Duration::from_millis(100),
        "a send took {slowest:?}"
    );
    // a's other connection carried on all along.
    ping_pong(&a, &a_rx, &b, &b_rx, 1);
    assert!(a.is_up(1));
}

#[test]
fn a_send_queue_over_its_bound_declares_the_peer_down_at_once() {
    let mut c = config(0, secret(), true);
    // Only the queue's bound can declare node 5 down here.
    c.send_timeout = Duration::from_secs(60);
    c.send_queue_bytes = 4 << 20;
    let (a, _a_rx) = endpoint(c);
    let events = a.events();
    let rt = runtime();
    let peer = rt.block_on(dial_by_hand(a.local_addr().unwrap(), 5));
    let _beating = rt.spawn(async move {
        let mut peer = peer;
        loop {
            peer.send(&[]).await;
            tokio::time::sleep(HEARTBEAT).await;
        }
    });
    let _driver = std::thread::spawn(move || rt.block_on(std::future::pending::<()>()));
    wait_up(&events, 5);
    let frame = codec::seal(vec![0x42; 64 * 1024 - 4]);
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    loop {
        assert!(started.elapsed() < LIMIT, "the queue never overflowed");
        let t = Instant::now();
        let taken = a.send(5, frame.clone());
        slowest = slowest.max(t.elapsed());
        if !taken {
            break;
        }
    }
    let why = down_reason(&events, 5);
    assert!(why.contains("send queue over"), "{why}");
    assert_eq!(a.stats().stalled_peers, 1);
    assert!(
        slowest < Duration::from_millis(100),
        "a send took {slowest:?}"
    );
    assert!(!a.send(5, frame), "nothing queues for a peer declared down");
}

/// Loopback throughput of one connection, one way: `frames` sealed frames of `size` bytes
/// from `a` to `b`, at most `window` unreceived at a time (the sender sleeps while the window
/// is full, so that it takes no core from the endpoints). Returns (MB/s, frames/s).
fn throughput(size: usize, frames: u64, window: u64) -> (f64, f64) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let received = Arc::new(AtomicU64::new(0));
    let (wake_tx, wake) = crossbeam_channel::bounded::<()>(1);
    let mut c = config(1, secret(), true);
    c.max_frame_bytes = 1 << 20;
    let got = received.clone();
    let b = TcpTransport::start(
        c,
        Arc::new(move |_, bytes: Vec<u8>| {
            got.fetch_add(1, Ordering::Relaxed);
            let _ = wake_tx.try_send(());
            !bytes.is_empty()
        }),
    )
    .unwrap();
    let mut c = config(0, secret(), false);
    c.max_frame_bytes = 1 << 20;
    let (a, _a_rx) = endpoint(c);
    a.add_peer(1, b.local_addr().unwrap());
    wait_for("a and b connected", || a.is_up(1) && b.is_up(0));
    let frame = codec::seal(vec![0x5A; size - 4]);
    let started = Instant::now();
    let mut sent = 0u64;
    while received.load(Ordering::Relaxed) < frames {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "throughput run stuck"
        );
        if sent < frames && sent - received.load(Ordering::Relaxed) < window {
            assert!(a.send(1, frame.clone()), "frame {sent} sent");
            sent += 1;
        } else {
            let _ = wake.recv_timeout(Duration::from_millis(1));
        }
    }
    let secs = started.elapsed().as_secs_f64();
    (
        (frames * size as u64) as f64 / secs / 1e6,
        frames as f64 / secs,
    )
}

/// Not a check: the loopback throughput of one connection, printed (run it with
/// `cargo test --release -p weir-runtime --test tcp -- --ignored --nocapture throughput`).
#[test]
#[ignore]
fn throughput_on_loopback() {
    for (size, frames, window) in [
        (64 * 1024, 40_000, 256),
        (256, 1_000_000, 4096),
        (256, 20_000, 1),
    ] {
        let mut runs: Vec<(f64, f64)> = (0..5).map(|_| throughput(size, frames, window)).collect();
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (mbs, fps) = runs[2];
        println!(
            "frames of {size} bytes, {window} in flight: {mbs:.0} MB/s, {fps:.0} frames/s \
             (median of 5)"
        );
    }
}
