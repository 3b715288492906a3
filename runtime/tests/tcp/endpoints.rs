//! TCP endpoints for the transport tests (each endpoint's arriving frames land in a channel),
//! and waiting for what they do.

use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_runtime::wire::ids::NodeId;
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
