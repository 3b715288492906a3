//! TCP endpoints for the transport tests (each endpoint's arriving frames land in a channel),
//! the message they send each other, and waiting for what they do.

use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_runtime::wire::codec;
use weir_runtime::wire::ids::NodeId;
use weir_runtime::wire::messages::{BatchAck, NetMessage};
use weir_runtime::wire::tcp::{TcpConfig, TcpTransport};

/// An endpoint whose arriving frames land in the returned channel.
pub fn endpoint(config: TcpConfig) -> (TcpTransport, Receiver<(NodeId, Vec<u8>)>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let t = TcpTransport::start(
        config,
        Arc::new(move |from, bytes| tx.send((from, bytes)).is_ok()),
    )
    .unwrap();
    (t, rx)
}

/// Waits until `done`, polling; panics naming `what` when `limit` passes first.
pub fn wait_within(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A small message with `query` in it, to send between endpoints.
pub fn ack(query: u64) -> NetMessage {
    NetMessage::QueryBatchAck(BatchAck {
        query,
        fragment: 1,
        exchange: 2,
        batch_id: query * 10,
        credits: 3,
        bytes: 4096,
    })
}

/// `msg` encoded and sealed as a frame's payload is.
pub fn sealed(msg: &NetMessage) -> Vec<u8> {
    codec::seal(codec::encode(msg).unwrap())
}
