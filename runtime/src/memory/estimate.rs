//! What a query's hash joins are predicted to build, from table sizes, before any of them ran.
//!
//! The catalog keeps each table's row count, and every join knows the column types of its
//! build side. A join's build rows on one instance are followed down its build input: a scan
//! reads its table's rows spread over the fragment's instances; an exchange receives what the
//! fragments sending to it output, divided among the receivers when hashed, whole when
//! broadcast or gathered; filters keep every row (the catalog has no selectivities, so the
//! prediction errs high), aggregates without groups and key lookups give one row, limits cap,
//! joins give the larger side. The bytes are those rows times the build side's row width
//! ([`row_bytes`]) plus what the hash table keeps per row ([`JOIN_ROW_OVERHEAD`], and 8 bytes
//! per key). The admission queue then corrects each node's prediction by how the joins that
//! ran there held against theirs ([`crate::memory::pool::NodePool::calibrated`]).

use crate::wire::ids::NodeId;
use weir_operators::plan::{IndexLookup, JoinSide, RowBound};
use weir_operators::table_function::series_rows;
pub use weir_operators::types::{row_bytes, TEXT_BYTES};
use weir_operators::PhysicalPlan;
use weir_planner::{Distribution, QueryPlan};

/// Bytes a hash table keeps per build row besides the row's own columns: its index slot and
/// chain link, and the row hash, NULL mask and match flag of the build (see the hash join's
/// `finish_build`).
pub const JOIN_ROW_OVERHEAD: usize = 32;

/// Exchanges followed through fragments before the walk gives up (plans are trees; this only
/// bounds a malformed one).
const MAX_DEPTH: usize = 64;

/// The build memory a query's joins are predicted to hold on one instance of their fragment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildEstimate {
    /// Per fragment (indexed like the plan's fragments): each of its joins' predicted build
    /// bytes on one instance.
    pub joins: Vec<Vec<usize>>,
}

/// What the walk needs: the plan, each fragment's instance count, the tables' row counts.
struct Walk<'a> {
    plan: &'a QueryPlan,
    instances: Vec<usize>,
    rows: &'a dyn Fn(&str) -> u64,
}

impl Walk<'_> {
    /// Rows `p` outputs on one instance of fragment `frag` (an index into the fragments).
    fn rows(&self, p: &PhysicalPlan, frag: usize, depth: usize) -> f64 {
        let here = self.instances.get(frag).copied().unwrap_or(1).max(1) as f64;
        let inputs = || p.children().into_iter().map(|c| self.rows(c, frag, depth));
        match p.row_bound() {
            RowBound::Input => inputs().next().unwrap_or(0.0),
            RowBound::AtMost(n) => inputs().next().unwrap_or(0.0).min(n as f64),
            RowBound::One => 1.0,
            RowBound::Larger => inputs().fold(0.0, f64::max),
            RowBound::Product => inputs().product(),
            RowBound::Each(n) => inputs().next().unwrap_or(0.0) * n,
            RowBound::Sum => inputs().sum(),
            RowBound::Source => self.source_rows(p, frag, depth, here),
        }
    }

    /// Rows a node that reads from outside the plan outputs on one instance of fragment
    /// `frag` (which has `here` instances).
    fn source_rows(&self, p: &PhysicalPlan, frag: usize, depth: usize, here: f64) -> f64 {
        match p {
            PhysicalPlan::Scan { table, index, .. } => match index {
                Some((_, IndexLookup::Key { .. })) => 1.0,
                _ => (self.rows)(table) as f64 / here,
            },
            PhysicalPlan::Values { rows, .. } => rows.len() as f64,
            PhysicalPlan::Series {
                start, stop, step, ..
            } => series_rows(start, stop, step),
            PhysicalPlan::Exchange { id, .. } => {
                if depth >= MAX_DEPTH {
                    return 0.0;
                }
                let Some(me) = self.plan.fragments.get(frag).map(|f| f.id) else {
                    return 0.0;
                };
                self.plan
                    .fragments
                    .iter()
                    .enumerate()
                    .filter_map(|(g, f)| {
                        let out = f.output.as_ref()?;
                        (out.exchange == *id && out.target == me).then_some((g, f, out))
                    })
                    .map(|(g, f, out)| {
                        let senders = self.instances.get(g).copied().unwrap_or(1).max(1) as f64;
                        let total = self.rows(&f.plan, g, depth + 1) * senders;
                        match out.distribution {
                            Distribution::Hash(_) => total / here,
                            Distribution::Broadcast | Distribution::Gather => total,
                        }
                    })
                    .sum()
            }
            _ => 0.0,
        }
    }

    /// Each join of `p` (in fragment `frag`), its predicted build bytes on one instance.
    fn joins(&self, p: &PhysicalPlan, frag: usize, out: &mut Vec<usize>) {
        let build = match p {
            PhysicalPlan::HashJoin {
                left,
                right,
                left_keys,
                build,
                left_types,
                right_types,
                ..
            } => Some((left, right, left_keys.len(), build, left_types, right_types)),
            PhysicalPlan::NestedLoopJoin {
                left,
                right,
                build,
                left_types,
                right_types,
                ..
            } => Some((left, right, 0, build, left_types, right_types)),
            _ => None,
        };
        if let Some((left, right, keys, side, left_types, right_types)) = build {
            let (input, types) = match side {
                JoinSide::Left => (left, left_types),
                JoinSide::Right => (right, right_types),
            };
            let per_row = row_bytes(types) + JOIN_ROW_OVERHEAD + 8 * keys;
            let bytes = self.rows(input, frag, 0) * per_row as f64;
            out.push(if bytes.is_finite() {
                bytes.min(usize::MAX as f64) as usize
            } else {
                usize::MAX
            });
        }
        for c in p.children() {
            self.joins(c, frag, out);
        }
    }
}

impl BuildEstimate {
    /// Predicts the build bytes of every join of `plan`, whose fragments run on `instances`
    /// (indexed like the fragments), from the tables' row counts (`rows`).
    pub fn of(plan: &QueryPlan, instances: &[Vec<NodeId>], rows: &dyn Fn(&str) -> u64) -> Self {
        let walk = Walk {
            plan,
            instances: plan
                .fragments
                .iter()
                .enumerate()
                .map(|(i, _)| instances.get(i).map_or(1, Vec::len))
                .collect(),
            rows,
        };
        BuildEstimate {
            joins: plan
                .fragments
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut joins = Vec::new();
                    walk.joins(&f.plan, i, &mut joins);
                    joins
                })
                .collect(),
        }
    }

    /// Whether the plan has no join at all.
    pub fn is_empty(&self) -> bool {
        self.joins.iter().all(Vec::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_planner::{plan_statement, Catalog, Statement};

    /// `customers (id, name, region)` and `orders (id, customer_id, qty)` with these rows.
    fn catalog(customers: u64, orders: u64) -> Catalog {
        let mut c = Catalog::new();
        for sql in [
            "CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, region VARCHAR)",
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT, qty BIGINT)",
        ] {
            match plan_statement(sql, &c, &[], 64).unwrap() {
                Statement::CreateTable(def) => c.add_table(def).unwrap(),
                other => panic!("not a CREATE TABLE: {other:?}"),
            }
        }
        c.set_row_count("customers", customers);
        c.set_row_count("orders", orders);
        c
    }

    fn planned(sql: &str, cat: &Catalog) -> QueryPlan {
        match plan_statement(sql, cat, &[], 64).unwrap() {
            Statement::Query(q) => q,
            other => panic!("not a query: {other:?}"),
        }
    }

    const JOIN: &str = "SELECT c.region, COUNT(*) FROM orders o \
        JOIN customers c ON o.customer_id = c.id GROUP BY c.region";

    /// Instances: the root on node 0, every other fragment on nodes `0..n`.
    fn on(plan: &QueryPlan, n: usize) -> Vec<Vec<NodeId>> {
        plan.fragments
            .iter()
            .map(|f| match f.placement {
                weir_planner::Placement::Initiator => vec![0],
                _ => (0..n as NodeId).collect(),
            })
            .collect()
    }

    /// The predicted build bytes of the plan's only join.
    fn only_join(plan: &QueryPlan, cat: &Catalog, nodes: usize) -> usize {
        let e = BuildEstimate::of(plan, &on(plan, nodes), &|t| cat.row_count(t));
        let joins: Vec<usize> = e.joins.iter().flatten().copied().collect();
        assert_eq!(joins.len(), 1, "{e:?}");
        joins[0]
    }

    /// Bytes a build row of customers' id and region (the columns the query needs) is
    /// predicted to take: at least those, at most every column of the table.
    fn per_row() -> std::ops::RangeInclusive<usize> {
        let least = 8 + TEXT_BYTES + JOIN_ROW_OVERHEAD;
        least..=least + TEXT_BYTES + 8
    }

    #[test]
    fn a_shuffled_join_predicts_its_share_of_the_build_side_on_each_instance() {
        // Too many customers to broadcast: both sides are hashed over the join's instances.
        let cat = catalog(200_000, 400_000);
        let plan = planned(JOIN, &cat);
        let ten = only_join(&plan, &cat, 10);
        assert!(per_row().contains(&(ten / 20_000)), "{ten}");
        // On half the nodes each builds twice as much.
        assert_eq!(only_join(&plan, &cat, 5), ten * 2);
    }

    #[test]
    fn a_broadcast_join_predicts_the_whole_build_side_on_each_instance() {
        // Few customers: sent whole to every node holding orders.
        let cat = catalog(10_000, 20_000);
        let plan = planned(JOIN, &cat);
        let ten = only_join(&plan, &cat, 10);
        assert!(per_row().contains(&(ten / 10_000)), "{ten}");
        assert_eq!(only_join(&plan, &cat, 5), ten);
        // No join: nothing predicted.
        let scan = planned("SELECT COUNT(*) FROM orders", &cat);
        assert!(BuildEstimate::of(&scan, &on(&scan, 10), &|t| cat.row_count(t)).is_empty());
    }
}
