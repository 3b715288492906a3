//! Memory revoked from outside (the node's memory circuit breaker asking before it kills):
//! a sort, a grouped aggregation and a hash join that hold memory report it as revocable,
//! spill it when asked, hold none after, and still give the answer they give untouched.

use std::sync::Arc;
use weir_operators::kernels::aggregate::HashAggregateOp;
use weir_operators::kernels::join::{HashJoinOp, JoinSpec};
use weir_operators::kernels::sort::SortOp;
use weir_operators::kernels::{drain, ExecContext, Operator};
use weir_operators::plan::{AggFunc, AggMode, AggregateExpr, JoinSide, JoinType, SortKey};
use weir_operators::spill::SpillSpace;
use weir_operators::{Batch, Column, DataType, Expr, Reservation, UnboundedPool, Value};

fn input(from: i64, n: i64) -> Batch {
    let ids: Vec<i64> = (from..from + n).collect();
    let keys: Vec<i64> = ids.iter().map(|i| (i * 7919) % 5_000).collect();
    Batch::try_new(vec![Column::from_i64(keys), Column::from_i64(ids)]).unwrap()
}

/// Feeds `halves` to port `port` of `op`, the second one after a revoke when `revoke`.
fn feed(
    op: &mut dyn Operator,
    port: usize,
    halves: [Batch; 2],
    revoke: bool,
    out: &mut Vec<Batch>,
) {
    let [a, b] = halves;
    op.push(port, a).unwrap();
    drain(op, out).unwrap();
    if revoke {
        assert!(op.revocable() > 0, "{} holds revocable memory", op.name());
        op.revoke().unwrap();
        assert_eq!(op.revocable(), 0);
        assert_eq!(op.memory_size(), 0, "{} freed what it held", op.name());
    }
    op.push(port, b).unwrap();
    drain(op, out).unwrap();
    op.finish(port).unwrap();
    drain(op, out).unwrap();
}

fn sorted(out: &[Batch]) -> Vec<Vec<Value>> {
    let mut rows: Vec<Vec<Value>> = out.iter().flat_map(Batch::rows).collect();
    rows.sort_by(|a, b| Value::cmp_rows(a, b));
    rows
}

fn ctx(space: &Arc<SpillSpace>) -> ExecContext {
    ExecContext::new(vec![]).with_spill(space.clone())
}

/// After the operator is dropped: one spill counted when it was revoked, no memory, no file.
fn assert_clean(space: &SpillSpace, pool: &UnboundedPool, revoked: bool) {
    assert_eq!(space.stats().snapshot().spills, u64::from(revoked));
    assert_eq!((pool.used(), space.used()), (0, 0));
}

#[test]
fn a_revoked_sort_spills_and_sorts_the_same() {
    let run = |revoke: bool| {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::new();
        let key = SortKey {
            expr: Expr::col(0),
            descending: false,
            nulls_first: false,
        };
        let mut op = SortOp::new(vec![key], None, ctx(&space), Reservation::new(pool.clone()));
        let mut out = Vec::new();
        feed(
            &mut op,
            0,
            [input(0, 20_000), input(20_000, 20_000)],
            revoke,
            &mut out,
        );
        drop(op);
        assert_clean(&space, &pool, revoke);
        out.iter().flat_map(Batch::rows).collect::<Vec<_>>()
    };
    // Ties keep input order: the whole order is the same, not only the keys.
    assert_eq!(run(true), run(false));
}

#[test]
fn a_revoked_aggregation_spills_and_groups_the_same() {
    let run = |revoke: bool| {
        let space = SpillSpace::temporary("test", 1 << 30).unwrap();
        let pool = UnboundedPool::new();
        let aggs = vec![
            AggregateExpr {
                func: AggFunc::CountStar,
                arg: None,
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
            AggregateExpr {
                func: AggFunc::Sum,
                arg: Some(Expr::col(1)),
                input_type: DataType::Int64,
                param: None,
                order_by: Vec::new(),
            },
        ];
        let mut op = HashAggregateOp::new(
            vec![Expr::col(0)],
            vec![DataType::Int64],
            aggs,
            AggMode::Single,
            ctx(&space),
            Reservation::new(pool.clone()),
        )
        .unwrap();
        let mut out = Vec::new();
        feed(
            &mut op,
            0,
            [input(0, 20_000), input(20_000, 20_000)],
            revoke,
            &mut out,
        );
        drop(op);
        assert_clean(&space, &pool, revoke);
        sorted(&out)
    };
    let revoked = run(true);
    assert_eq!(revoked.len(), 5_000);
    assert_eq!(revoked, run(false));
}

#[test]
fn a_hash_join_revoked_while_it_builds_spills_and_joins_the_same() {
    for join_type in [JoinType::Inner, JoinType::Left, JoinType::Full] {
        let run = |revoke: bool| {
            let space = SpillSpace::temporary("test", 1 << 30).unwrap();
            let pool = UnboundedPool::new();
            let spec = JoinSpec::new(join_type, JoinSide::Right)
                .with_types(vec![DataType::Int64; 2], vec![DataType::Int64; 2]);
            let mut op = HashJoinOp::with_spec(
                vec![Expr::col(0)],
                vec![Expr::col(0)],
                spec,
                ctx(&space),
                Reservation::new(pool.clone()),
            )
            .unwrap();
            let mut out = Vec::new();
            // The build side (right) is 0..8,000 with keys in 0..5,000, half of them matched.
            feed(
                &mut op,
                1,
                [input(0, 4_000), input(4_000, 4_000)],
                revoke,
                &mut out,
            );
            feed(
                &mut op,
                0,
                [input(100_000, 3_000), input(103_000, 3_000)],
                false,
                &mut out,
            );
            drop(op);
            assert_clean(&space, &pool, revoke);
            sorted(&out)
        };
        let revoked = run(true);
        assert!(!revoked.is_empty());
        assert_eq!(revoked, run(false), "{join_type:?}");
    }
}
