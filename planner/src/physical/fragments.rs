//! The fragments a query is being cut into: [`Input`], the fragment being built (its
//! operator tree so far and where it runs), and [`Frags`], the fragments done, which hands
//! out fragment and exchange ids and cuts an input off into a fragment sending to another.

use crate::statement::{Fragment, FragmentOutput, Placement};
use weir_operators::plan::Distribution;
use weir_operators::{Expr, PhysicalPlan, Schema};

/// A partially built fragment: its operator tree so far and where it runs.
pub(super) struct Input {
    pub(super) plan: PhysicalPlan,
    pub(super) schema: Schema,
    pub(super) placement: Placement,
    /// Pre-assigned fragment id (join and gather fragments), if any.
    pub(super) fragment: Option<u32>,
    /// When the fragment runs on several instances: expressions (over its output) whose
    /// equal values are known to be on one instance, because a hash exchange on them feeds
    /// it (a partitioned window's); `None` when not known.
    pub(super) hashed: Option<Vec<Expr>>,
}

impl Input {
    /// Whether the fragment runs as a single instance, on the initiator.
    pub(super) fn is_single(&self) -> bool {
        self.placement == Placement::Initiator
    }

    pub(super) fn wrap(self, plan: PhysicalPlan, schema: Schema) -> Input {
        Input {
            plan,
            schema,
            ..self
        }
    }

    /// The same fragment with `f` of its plan on top (an operator that keeps the rows on
    /// their instances and the columns in place, adding some after them).
    pub(super) fn top(self, f: impl FnOnce(PhysicalPlan) -> PhysicalPlan, schema: Schema) -> Input {
        Input {
            plan: f(self.plan),
            schema,
            ..self
        }
    }
}

pub(super) struct Frags {
    pub(super) fragments: Vec<Fragment>,
    pub(super) next_id: u32,
    pub(super) next_exchange: u32,
    /// Data nodes a broadcast reaches (see [`Catalog::data_nodes`]).
    pub(super) data_nodes: Option<usize>,
}

impl Frags {
    pub(super) fn alloc(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Turns `input` into a fragment sending to `target`; returns the receiving leaf.
    pub(super) fn emit(
        &mut self,
        input: Input,
        target: u32,
        distribution: Distribution,
    ) -> PhysicalPlan {
        let id = match input.fragment {
            Some(id) => id,
            None => self.alloc(),
        };
        let exchange = self.next_exchange;
        self.next_exchange += 1;
        self.fragments.push(Fragment {
            id,
            plan: input.plan,
            placement: input.placement,
            output: Some(FragmentOutput {
                exchange,
                target,
                distribution,
            }),
        });
        PhysicalPlan::Exchange {
            id: exchange,
            schema: input.schema,
        }
    }

    /// `input`'s rows gathered into a new single fragment on the initiator.
    pub(super) fn gather(&mut self, input: Input) -> Input {
        let id = self.alloc();
        let schema = input.schema.clone();
        let plan = self.emit(input, id, Distribution::Gather);
        Input {
            plan,
            schema,
            placement: Placement::Initiator,
            fragment: Some(id),
            hashed: None,
        }
    }

    /// `input` as a single instance: gathered unless it already is one.
    pub(super) fn single(&mut self, input: Input) -> Input {
        if input.is_single() {
            input
        } else {
            self.gather(input)
        }
    }
}
