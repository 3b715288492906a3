//! EXPLAIN of hand-built join plans: the join type, the residual filter over left then right
//! column names, nested-loop joins, and single-row nodes.

use weir_operators::plan::{JoinSide, JoinType};
use weir_operators::{BinaryOp, DataType, Expr, Field, PhysicalPlan, Schema};
use weir_planner::{Fragment, Placement, QueryPlan};

fn input(names: &[&str]) -> Box<PhysicalPlan> {
    let fields = names
        .iter()
        .map(|n| Field::new(*n, DataType::Int64))
        .collect();
    Box::new(PhysicalPlan::Values {
        schema: Schema::new(fields),
        rows: vec![],
    })
}

fn explain(plan: PhysicalPlan) -> String {
    let qp = QueryPlan {
        fragments: vec![Fragment {
            id: 0,
            plan,
            placement: Placement::Initiator,
            output: None,
        }],
        output_schema: Schema::new(vec![]),
        param_types: vec![],
        verbose: None,
        fragment_keys: vec![],
        single_use: false,
    };
    qp.explain(&|_| "node-0".to_string())
}

fn hash_join(join_type: JoinType, filter: Option<Expr>) -> PhysicalPlan {
    PhysicalPlan::HashJoin {
        left: input(&["a", "x"]),
        right: input(&["b", "y"]),
        left_keys: vec![Expr::col(0)],
        right_keys: vec![Expr::col(0)],
        join_type,
        filter,
        build: JoinSide::Right,
        left_types: vec![DataType::Int64; 2],
        right_types: vec![DataType::Int64; 2],
        output: None,
    }
}

#[test]
fn explain_shows_join_type_and_residual_filter() {
    let inner = explain(hash_join(JoinType::Inner, None));
    assert!(
        inner.contains("  HashJoin on a = b build: right\n"),
        "{inner}"
    );
    let x_lt_y = Expr::col(1).binary(BinaryOp::Lt, Expr::col(3));
    let left = explain(hash_join(JoinType::Left, Some(x_lt_y.clone())));
    assert!(
        left.contains("HashJoin (LEFT) on a = b filter: (x < y) build: right"),
        "{left}"
    );
    // A join that emits only some of its columns names them.
    let mut narrow = hash_join(JoinType::Inner, None);
    if let PhysicalPlan::HashJoin { output, .. } = &mut narrow {
        *output = Some(vec![1, 3]);
    }
    let narrow = explain(PhysicalPlan::Project {
        input: Box::new(narrow),
        exprs: vec![Expr::col(1)],
    });
    assert!(
        narrow.contains("HashJoin on a = b build: right output: [x, y]"),
        "{narrow}"
    );
    assert!(narrow.contains("Project [y]"), "{narrow}");
    let na = explain(hash_join(JoinType::Anti { null_aware: true }, None));
    assert!(na.contains("HashJoin (NULL-AWARE ANTI) on a = b"), "{na}");
    let nl = PhysicalPlan::NestedLoopJoin {
        left: input(&["a", "x"]),
        right: input(&["b", "y"]),
        join_type: JoinType::Semi,
        filter: Some(x_lt_y),
        build: JoinSide::Left,
        left_types: vec![DataType::Int64; 2],
        right_types: vec![DataType::Int64; 2],
    };
    let nl = explain(PhysicalPlan::SingleRow {
        input: Box::new(nl),
        types: vec![DataType::Int64; 2],
    });
    assert!(nl.contains("  SingleRow\n"), "{nl}");
    assert!(
        nl.contains("    NestedLoopJoin (SEMI) on (x < y) build: left\n"),
        "{nl}"
    );
    let cross = PhysicalPlan::NestedLoopJoin {
        left: input(&["a"]),
        right: input(&["b"]),
        join_type: JoinType::Inner,
        filter: None,
        build: JoinSide::Right,
        left_types: vec![DataType::Int64],
        right_types: vec![DataType::Int64],
    };
    // A projection over a semi join sees only the left columns.
    let semi = PhysicalPlan::Project {
        input: Box::new(hash_join(JoinType::Semi, None)),
        exprs: vec![Expr::col(1)],
    };
    assert!(explain(semi).contains("Project [x]"));
    assert!(explain(cross).contains("NestedLoopJoin cross build: right"));
}
