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
    /// When the fragment runs on several instances: how its rows are known to be spread
    /// over them (see [`Spread`]).
    pub(super) hashed: Spread,
}

/// How a fragment's rows are spread over its instances, as far as the plan knows: lists of
/// expressions over its output, each list one whose equal values are on one instance,
/// the one a hash exchange on those values into the fragment reaches (a hash exchange on
/// them fed it, or a join on such keys kept its rows in place). An inner join's output is
/// spread by either side's keys: several lists. None known: empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Spread(Vec<Vec<Expr>>);

impl Spread {
    /// Spread by a hash of `keys` (nothing known when there are none).
    pub(super) fn by(keys: Vec<Expr>) -> Spread {
        if keys.is_empty() {
            Spread::default()
        } else {
            Spread(vec![keys])
        }
    }

    /// Whether one of the lists is `keys`, in this order.
    pub(super) fn is_by(&self, keys: &[Expr]) -> bool {
        !keys.is_empty() && self.0.iter().any(|k| k == keys)
    }

    /// The first list all of whose expressions are among `within`.
    pub(super) fn within(&self, within: &[Expr]) -> Option<&[Expr]> {
        self.0
            .iter()
            .find(|k| k.iter().all(|e| within.contains(e)))
            .map(Vec::as_slice)
    }

    /// Both spreads' lists (the rows are spread by each).
    pub(super) fn and(mut self, other: Spread) -> Spread {
        for k in other.0 {
            if !self.0.contains(&k) {
                self.0.push(k);
            }
        }
        self
    }

    /// The same spread over an output whose columns are this one's shifted by `by` (the
    /// right side of a join): lists of plain columns only.
    pub(super) fn shifted(&self, by: usize) -> Spread {
        Spread(
            self.0
                .iter()
                .filter_map(|k| {
                    k.iter()
                        .map(|e| e.column_index().map(|i| Expr::Column(i + by)))
                        .collect()
                })
                .collect(),
        )
    }

    /// The same spread over a projection's output `exprs`: the lists whose every
    /// expression the projection passes on as it is, as its output's columns.
    pub(super) fn projected(&self, exprs: &[Expr]) -> Spread {
        Spread(
            self.0
                .iter()
                .filter_map(|k| {
                    k.iter()
                        .map(|h| exprs.iter().position(|e| e == h).map(Expr::Column))
                        .collect()
                })
                .collect(),
        )
    }
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
            hashed: Spread::default(),
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
