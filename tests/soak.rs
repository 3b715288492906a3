//! A small soak: a mix of seed queries, joins, lookups, cancellations and breaker trips, with
//! and without injected faults. No wrong answer, and nothing left behind.

use weir::soak::{run, SoakOptions};

fn small(faults: bool) -> SoakOptions {
    SoakOptions {
        queries: 600,
        concurrency: 6,
        seed: 11,
        faults,
        item_rows: 10_000,
        orders: 20_000,
    }
}

#[test]
fn soak_without_faults_leaks_nothing() {
    let r = run(&small(false)).unwrap();
    eprintln!("{}", r.render());
    assert!(r.passed(), "{}", r.render());
    assert_eq!(r.wrong(), 0);
    assert!(
        r.outcomes.get("ok").copied().unwrap_or(0) > 300,
        "{}",
        r.render()
    );
    assert!(r.outcomes.contains_key("cancelled"), "{}", r.render());
}

#[test]
fn soak_with_faults_leaks_nothing_and_answers_right() {
    let r = run(&small(true)).unwrap();
    eprintln!("{}", r.render());
    assert!(r.passed(), "{}", r.render());
    assert!(r.crashes >= 1, "{}", r.render());
}
