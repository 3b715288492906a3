//! Plans of `WITH RECURSIVE`: one recursive union on the initiator, its base term and the
//! tables its step reads gathered into it, its step an operator tree without exchanges over
//! the working table; the iteration limit from the catalog.
use crate::common;
use common::*;
use weir_operators::{DataType, PhysicalPlan};
use weir_planner::{Distribution, Placement};

const TREE: &str = "WITH RECURSIVE sub(id, depth) AS (\
    SELECT id, 0 FROM Item WHERE fld IS NULL \
    UNION ALL SELECT i.id, s.depth + 1 FROM Item i JOIN sub s ON i.fld = s.id) \
    SELECT depth, COUNT(*) FROM sub GROUP BY depth";

#[test]
fn one_recursive_union_on_the_initiator_reads_gathered_tables() {
    let q = query(&catalog(), TREE, &[]);
    let (f, plan) = q
        .fragments
        .iter()
        .find_map(|f| match &f.plan {
            PhysicalPlan::HashAggregate { input, .. } => match input.as_ref() {
                p @ PhysicalPlan::RecursiveUnion { .. } => Some((f, p)),
                _ => None,
            },
            _ => None,
        })
        .expect("an aggregate over the recursive union");
    assert_eq!(f.placement, Placement::Initiator);
    let PhysicalPlan::RecursiveUnion {
        name,
        inputs,
        step,
        distinct,
        max_iterations,
        types,
    } = plan
    else {
        unreachable!()
    };
    assert_eq!(
        (name.as_str(), *distinct, *max_iterations),
        ("sub", false, 10_000)
    );
    assert_eq!(types, &vec![DataType::Int64, DataType::Int64]);
    // The base term and Item for the step, each gathered from the nodes.
    assert_eq!(inputs.len(), 2);
    for input in inputs {
        let PhysicalPlan::Exchange { id, .. } = input else {
            panic!("{input:?}")
        };
        let sender = q
            .fragments
            .iter()
            .find(|g| g.output.as_ref().is_some_and(|o| o.exchange == *id))
            .unwrap();
        assert_eq!(
            sender.output.as_ref().unwrap().distribution,
            Distribution::Gather
        );
    }
    // The step joins the working table (port 0) with Item (port 1) in memory.
    let mut leaves = Vec::new();
    fn walk(p: &PhysicalPlan, out: &mut Vec<usize>) {
        match p {
            PhysicalPlan::StepInput { port, .. } => out.push(*port),
            PhysicalPlan::Scan { .. } | PhysicalPlan::Exchange { .. } => panic!("{p:?}"),
            other => other.children().into_iter().for_each(|c| walk(c, out)),
        }
    }
    walk(step, &mut leaves);
    leaves.sort_unstable();
    assert_eq!(leaves, vec![0, 1]);
    let text = explain(&q);
    assert!(
        text.contains("RecursiveUnion sub (UNION ALL, at most 10000 iterations")
            && text.contains("step, each round:")
            && text.contains("StepInput (the working table)"),
        "{text}"
    );
}

#[test]
fn the_iteration_limit_comes_from_the_catalog() {
    let mut cat = catalog();
    cat.set_max_recursion(7);
    let q = query(&cat, TREE, &[]);
    assert!(
        explain(&q).contains("at most 7 iterations"),
        "{}",
        explain(&q)
    );
}

#[test]
fn a_with_recursive_without_self_reference_is_a_plain_with() {
    let q = query(
        &catalog(),
        "WITH RECURSIVE a(x) AS (SELECT 1 UNION SELECT 2) SELECT x FROM a",
        &[],
    );
    assert!(!explain(&q).contains("RecursiveUnion"), "{}", explain(&q));
}
