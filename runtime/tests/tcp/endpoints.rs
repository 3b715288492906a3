//! TCP endpoints for the transport tests: each endpoint's arriving frames land in a channel.

use crossbeam_channel::Receiver;
use std::sync::Arc;
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
