//! The handle an actor reaches its node, and other nodes, through.

use crate::memory::pool::Pools;
use crate::node::inbox::NodeMsg;
use crate::node::state::NodeShared;
use crate::wire::ids::NodeId;
use crate::wire::messages::NetMessage;
use crate::wire::network::Network;
use actix::Recipient;
use std::sync::Arc;
use weir_operators::Reservation;

/// What an actor needs to talk to its node and to other nodes.
#[derive(Clone)]
pub struct NodeHandle {
    /// The node's state.
    pub shared: Arc<NodeShared>,
    /// The node's actor.
    pub inbox: Recipient<NodeMsg>,
    /// The network.
    pub network: Arc<Network>,
    /// The pools of the nodes in this process (a batch is accounted on its receiver's node
    /// before it leaves).
    pub pools: Arc<Pools>,
}

impl NodeHandle {
    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.shared.id
    }

    /// Sends a protocol message to node `to`: moved when `to` is this node, serialized over
    /// the network otherwise.
    pub fn send(&self, to: NodeId, msg: NetMessage) {
        self.send_with(to, msg, None);
    }

    /// [`NodeHandle::send`] with a batch's reservation on node `to`, which travels with the
    /// message (see [`Network::send_with`]).
    pub fn send_with(&self, to: NodeId, msg: NetMessage, mem: Option<Reservation>) {
        if to == self.id() {
            self.shared.inbox.sent();
            self.inbox.do_send(NodeMsg::Local { from: to, msg, mem });
        } else {
            self.network.send_with(self.id(), to, &msg, mem);
        }
    }
}
