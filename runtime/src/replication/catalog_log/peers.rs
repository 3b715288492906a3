//! Raft's network for the catalog log: its RPCs to a peer travel as [`RaftCall`] messages on
//! weir's own [`Network`] (so over the authenticated TCP links between data nodes), and the
//! answer comes back as a [`RaftAnswer`], matched to the call that waits for it.

use super::types::LogTypes;
use crate::wire::codec;
use crate::wire::ids::NodeId;
use crate::wire::messages::{NetMessage, RaftAnswer, RaftBytes, RaftCall, RaftRpc};
use crate::wire::network::Network;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Timeout, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{EmptyNode, RPCTypes};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// Calls sent and not answered yet, by call id.
#[derive(Default)]
pub struct Calls {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<RaftBytes>>>,
}

impl Calls {
    fn open(&self) -> (u64, oneshot::Receiver<RaftBytes>) {
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(call, tx);
        (call, rx)
    }

    fn close(&self, call: u64) {
        self.lock().remove(&call);
    }

    /// Hands `answer` to the call waiting for it; false when none does (any more).
    pub fn answer(&self, answer: RaftAnswer) -> bool {
        match self.lock().remove(&answer.call) {
            Some(tx) => tx.send(answer.answer).is_ok(),
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<RaftBytes>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Makes Raft's connections to the peers of node `id` (see the module comment).
#[derive(Clone)]
pub struct Peers {
    /// This node.
    pub id: NodeId,
    /// The network the node's messages go out on.
    pub network: Arc<Network>,
    /// Its calls waiting for answers.
    pub calls: Arc<Calls>,
}

impl Peers {
    /// Asks the log's leader `leader` for a read index ([`RaftRpc::ReadIndex`]), waiting at
    /// most `limit`: the index of its last committed entry (`None` while the log holds none),
    /// or why there is none.
    pub async fn read_index(&self, leader: u64, limit: Duration) -> Result<Option<u64>, String> {
        let target = NodeId::try_from(leader).map_err(|e| e.to_string())?;
        let bytes = codec::encode(&()).map_err(|e| e.to_string())?;
        let (call, rx) = self.calls.open();
        let message = NetMessage::RaftCall(Box::new(RaftCall {
            call,
            rpc: RaftRpc::ReadIndex,
            request: RaftBytes(bytes),
        }));
        if !self.network.send(self.id, target, &message) {
            self.calls.close(call);
            return Err(format!("the log's leader node-{target} is not connected"));
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => codec::decode::<Result<Option<u64>, String>>(&answer.0)
                .map_err(|e| e.to_string())?,
            Ok(Err(_)) => Err("the call was dropped".into()),
            Err(_) => {
                self.calls.close(call);
                Err(format!(
                    "the log's leader node-{target} did not answer within {} ms",
                    limit.as_millis()
                ))
            }
        }
    }
}

impl RaftNetworkFactory<LogTypes> for Peers {
    type Network = PeerLink;

    async fn new_client(&mut self, target: u64, _node: &EmptyNode) -> PeerLink {
        PeerLink {
            peers: self.clone(),
            target,
        }
    }
}

/// Raft's connection to one peer.
pub struct PeerLink {
    peers: Peers,
    target: u64,
}

impl PeerLink {
    async fn call<Req, Resp, E>(
        &self,
        rpc: RaftRpc,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<u64, EmptyNode, RaftError<u64, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let network_error = |e: &dyn std::error::Error| {
            RPCError::Network(NetworkError::new(&std::io::Error::other(e.to_string())))
        };
        let target = NodeId::try_from(self.target).map_err(|e| network_error(&e))?;
        let bytes = codec::encode(request).map_err(|e| network_error(&e))?;
        let (call, rx) = self.peers.calls.open();
        let message = NetMessage::RaftCall(Box::new(RaftCall {
            call,
            rpc,
            request: RaftBytes(bytes),
        }));
        if !self.peers.network.send(self.peers.id, target, &message) {
            self.peers.calls.close(call);
            return Err(RPCError::Unreachable(Unreachable::new(
                &std::io::Error::other(format!("node-{target} is not connected")),
            )));
        }
        let answer = match tokio::time::timeout(option.hard_ttl(), rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => {
                return Err(network_error(&std::io::Error::other(
                    "the call was dropped",
                )))
            }
            Err(_) => {
                self.peers.calls.close(call);
                let kind = match rpc {
                    RaftRpc::Append => RPCTypes::AppendEntries,
                    RaftRpc::Vote => RPCTypes::Vote,
                    RaftRpc::Snapshot => RPCTypes::InstallSnapshot,
                    RaftRpc::ReadIndex => RPCTypes::AppendEntries,
                };
                return Err(RPCError::Timeout(Timeout {
                    action: kind,
                    id: self.peers.id as u64,
                    target: self.target,
                    timeout: option.hard_ttl(),
                }));
            }
        };
        let result: Result<Resp, RaftError<u64, E>> =
            codec::decode(&answer.0).map_err(|e| network_error(&e))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<LogTypes> for PeerLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<LogTypes>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, EmptyNode, RaftError<u64>>> {
        self.call(RaftRpc::Append, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<LogTypes>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, EmptyNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(RaftRpc::Snapshot, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, EmptyNode, RaftError<u64>>> {
        self.call(RaftRpc::Vote, &rpc, &option).await
    }
}
