//! Physical planning of `WITH RECURSIVE`: one [`PhysicalPlan::RecursiveUnion`] in a fragment
//! of its own on the initiator.
//!
//! The base term is planned as any query and gathered into that fragment (input 0). The
//! step is cut in two: each largest part of it that does not read the work table is a
//! relation the rounds share, planned as any query (scans, exchanges, distribution and all)
//! and gathered into the fragment as a further input, read in the step as a
//! [`PhysicalPlan::StepInput`] of its port; the rest, down to the work table (`StepInput` 0),
//! becomes an operator tree without exchanges that the recursive union's kernel evaluates in
//! memory each round: filters, projections, joins (hash joins on equality keys, the build
//! side the smaller estimate), DISTINCT and grouping, sorts, limits, unions and windows, all
//! on one instance.

use super::fragments::{Frags, Input, Spread};
use crate::catalog::Catalog;
use crate::error::PlanError;
use crate::logical::LogicalPlan;
use crate::optimizer::estimate::estimate;
use crate::statement::Placement;
use weir_operators::plan::{AggMode, Distribution, JoinSide};
use weir_operators::{Expr, PhysicalPlan, Schema};

/// What a recursive union is besides its terms.
pub(super) struct RecursiveCte {
    /// The query's name.
    pub name: String,
    /// UNION rather than UNION ALL.
    pub distinct: bool,
    /// The most rounds of the step.
    pub max_iterations: usize,
}

/// How a query is planned into fragments (the physical planner's `lower`, handed in: it
/// plans the recursive query that plans its terms here).
pub(super) type Lower = fn(LogicalPlan, &Catalog, &mut Frags) -> Result<Input, PlanError>;

/// `base UNION [ALL] step` of the recursive query `cte`, whose columns are `schema`; `lower`
/// plans its base term and the relations its step reads.
pub(super) fn lower_recursive(
    cte: RecursiveCte,
    [base, step]: [LogicalPlan; 2],
    schema: Schema,
    catalog: &Catalog,
    fr: &mut Frags,
    lower: Lower,
) -> Result<Input, PlanError> {
    let target = fr.alloc();
    let base = lower(base, catalog, fr)?;
    let mut steps = Step {
        name: &cte.name,
        target,
        inputs: vec![gather_into(base, target, fr)],
        catalog,
        lower,
    };
    let step = steps.lower(step, fr)?;
    let plan = PhysicalPlan::RecursiveUnion {
        name: cte.name.clone(),
        inputs: steps.inputs,
        step: Box::new(step),
        distinct: cte.distinct,
        max_iterations: cte.max_iterations,
        types: schema.types(),
    };
    Ok(Input {
        plan,
        schema,
        placement: Placement::Initiator,
        fragment: Some(target),
        hashed: Spread::default(),
    })
}

/// `input` as an input of fragment `target` on the initiator: inlined when it runs there
/// already without a fragment of its own, else gathered over an exchange.
fn gather_into(input: Input, target: u32, fr: &mut Frags) -> PhysicalPlan {
    if input.is_single() && input.fragment.is_none() {
        input.plan
    } else {
        fr.emit(input, target, Distribution::Gather)
    }
}

/// Whether `plan` reads the work table of the recursive query `name`.
fn reads(plan: &LogicalPlan, name: &str) -> bool {
    match plan {
        LogicalPlan::WorkTable { name: n, .. } => n == name,
        other => other.inputs().into_iter().any(|i| reads(i, name)),
    }
}

/// The step's planning: the recursive union's inputs gathered so far.
struct Step<'a> {
    name: &'a str,
    target: u32,
    inputs: Vec<PhysicalPlan>,
    catalog: &'a Catalog,
    lower: Lower,
}

impl Step<'_> {
    /// [`Step::lower`], boxed.
    fn boxed(&mut self, plan: LogicalPlan, fr: &mut Frags) -> Result<Box<PhysicalPlan>, PlanError> {
        self.lower(plan, fr).map(Box::new)
    }

    /// The in-memory operator tree of `plan`, a part of the step.
    fn lower(&mut self, plan: LogicalPlan, fr: &mut Frags) -> Result<PhysicalPlan, PlanError> {
        let schema = plan.schema();
        if !reads(&plan, self.name) {
            // A relation every round reads alike: planned as any query, gathered once.
            let input = (self.lower)(plan, self.catalog, fr)?;
            self.inputs.push(gather_into(input, self.target, fr));
            return Ok(PhysicalPlan::StepInput {
                port: self.inputs.len() - 1,
                schema,
            });
        }
        Ok(match plan {
            LogicalPlan::WorkTable { schema, .. } => PhysicalPlan::StepInput { port: 0, schema },
            LogicalPlan::Filter { input, predicate } => PhysicalPlan::Filter {
                input: self.boxed(*input, fr)?,
                predicate,
            },
            LogicalPlan::Project { input, exprs, .. } => PhysicalPlan::Project {
                input: self.boxed(*input, fr)?,
                exprs,
            },
            LogicalPlan::SubqueryAlias { input, .. } => self.lower(*input, fr)?,
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                filter,
            } => {
                let build =
                    if estimate(&right, self.catalog).rows <= estimate(&left, self.catalog).rows {
                        JoinSide::Right
                    } else {
                        JoinSide::Left
                    };
                let (left_types, right_types) = (left.schema().types(), right.schema().types());
                let (left, right) = (self.boxed(*left, fr)?, self.boxed(*right, fr)?);
                let join_type = kind.join_type();
                let (left_keys, right_keys): (Vec<Expr>, Vec<Expr>) = on.into_iter().unzip();
                PhysicalPlan::join(
                    left,
                    right,
                    left_keys,
                    right_keys,
                    join_type,
                    filter,
                    build,
                    (left_types, right_types),
                )
            }
            LogicalPlan::Distinct { input } => {
                let n = schema.len();
                PhysicalPlan::HashAggregate {
                    input: self.boxed(*input, fr)?,
                    group_by: (0..n).map(Expr::Column).collect(),
                    group_types: schema.types(),
                    aggs: vec![],
                    mode: AggMode::Single,
                }
            }
            LogicalPlan::Aggregate {
                input,
                groups,
                group_fields,
                aggs,
                ..
            } => PhysicalPlan::HashAggregate {
                input: self.boxed(*input, fr)?,
                group_by: groups,
                group_types: group_fields.iter().map(|f| f.data_type).collect(),
                aggs,
                mode: AggMode::Single,
            },
            LogicalPlan::Sort { input, keys } => PhysicalPlan::Sort {
                input: self.boxed(*input, fr)?,
                keys,
                limit: None,
            },
            LogicalPlan::Limit {
                input,
                offset,
                limit,
            } => PhysicalPlan::Limit {
                input: self.boxed(*input, fr)?,
                offset,
                limit,
            },
            LogicalPlan::Union { inputs } => PhysicalPlan::Union {
                inputs: inputs
                    .into_iter()
                    .map(|i| self.lower(i, fr))
                    .collect::<Result<_, _>>()?,
            },
            LogicalPlan::SingleRow { input } => {
                let types = input.schema().types();
                PhysicalPlan::SingleRow {
                    input: self.boxed(*input, fr)?,
                    types,
                }
            }
            LogicalPlan::Window {
                input,
                partition_by,
                order_by,
                functions,
                keep,
                ..
            } => PhysicalPlan::Window {
                input: self.boxed(*input, fr)?,
                partition_by,
                order_by,
                functions,
                keep,
            },
            other => {
                return Err(PlanError::unsupported(
                    format!(
                        "recursive reference to query \"{}\" within {}",
                        self.name,
                        crate::optimizer::decorrelate::node_name(&other)
                    ),
                    "",
                ))
            }
        })
    }
}
