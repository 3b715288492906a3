//! The workspace's layout rules, checked on its source text (issue 32): no crate has an
//! import cycle between its files, and no runtime folder imports a folder on a floor above
//! it. The reading and the graph are in [`checker`]; its own tests are there too, so these
//! rules cannot pass by finding nothing.

mod checker;

use checker::{read_package, CrateGraph};
use std::path::Path;

/// The workspace's packages: their folder (the root package's is `.`) and their name in
/// messages.
const PACKAGES: &[(&str, &str)] = &[
    ("operators", "operators"),
    ("planner", "planner"),
    ("runtime", "runtime"),
    ("io", "io"),
    ("storage", "storage"),
    ("server", "server"),
    ("cli", "cli"),
    (".", "weir"),
];

/// Runtime's top-level folders, from the lowest floor up. A file in one of them may refer
/// to its own floor and the floors below, never to one above (the README's architecture
/// chapter draws them).
const RUNTIME_FLOORS: &[&str] = &[
    "wire",
    "memory",
    "node",
    "replication",
    "exec",
    "exchange",
    "dispatch",
    "query",
    "cluster",
];

/// Every crate of the workspace, read from its `src/`.
fn crates() -> Vec<CrateGraph> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    PACKAGES
        .iter()
        .flat_map(|(folder, name)| read_package(name, &root.join(folder).join("src")))
        .collect()
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut failures = String::new();
    for graph in crates() {
        for cycle in &graph.cycles() {
            failures.push_str(&graph.describe(cycle));
        }
    }
    assert!(
        failures.is_empty(),
        "import cycles between files:\n{failures}"
    );
}

/// The floor of `module` in runtime: the index in [`RUNTIME_FLOORS`] of its top-level
/// folder, if that folder exists.
fn floor(graph: &CrateGraph, module: &[String]) -> Option<usize> {
    let top = module.first()?;
    let index = RUNTIME_FLOORS.iter().position(|f| f == top)?;
    let is_folder = graph
        .files
        .iter()
        .any(|rel| rel.starts_with(&format!("{top}/")));
    is_folder.then_some(index)
}

/// The references of `runtime` that go up a floor: from a file in one floor's folder to a
/// folder above it, or from `error.rs` to any floor's folder.
fn upward_references(runtime: &CrateGraph) -> Vec<String> {
    let mut upward = Vec::new();
    for (&(from, to), taken) in runtime.edges.iter().chain(&runtime.test_edges) {
        let Some(to_floor) = floor(runtime, &runtime.modules[to]) else {
            continue;
        };
        let broken = match floor(runtime, &runtime.modules[from]) {
            Some(from_floor) => to_floor > from_floor,
            // error.rs sits under every floor.
            None => runtime.modules[from] == ["error"],
        };
        if broken {
            upward.push(runtime.describe_edge(from, to, taken));
        }
    }
    upward
}

#[test]
fn runtime_folders_import_no_folder_above_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = read_package("runtime", &root.join("runtime/src"))
        .into_iter()
        .next()
        .expect("runtime is a library");
    let upward = upward_references(&runtime);
    assert!(
        upward.is_empty(),
        "runtime files that refer to a floor above their own (floors from the lowest: {}):\n{}",
        RUNTIME_FLOORS.join(", "),
        upward.join("\n")
    );
}

#[test]
fn the_floor_rule_finds_a_reference_upward() {
    let sources: Vec<(String, String)> = [
        (
            "lib.rs",
            "pub mod wire; pub mod memory; pub mod cluster; pub mod error; mod flat;",
        ),
        ("wire/mod.rs", "pub mod codec;"),
        // Up from wire to memory; the inline path and the `use` are both references.
        (
            "wire/codec.rs",
            "use crate::memory::Pool;\nfn f() { crate::cluster::Cluster::new(); }",
        ),
        ("memory/mod.rs", "use crate::wire::codec::encode;"),
        (
            "cluster/mod.rs",
            "use crate::memory::Pool;\nuse crate::flat::X;",
        ),
        ("error.rs", "use crate::wire::codec::Frame;"),
        // Outside the floors: not checked.
        ("flat.rs", "use crate::cluster::Cluster;"),
    ]
    .iter()
    .map(|(rel, text)| (rel.to_string(), text.to_string()))
    .collect();
    let graph = CrateGraph::from_sources("runtime", &sources);
    assert_eq!(
        upward_references(&graph),
        [
            "wire/codec.rs -> memory/mod.rs (Pool)",
            "wire/codec.rs -> cluster/mod.rs (Cluster)",
            "error.rs -> wire/codec.rs (Frame)",
        ]
    );
}

#[test]
fn the_checker_sees_the_references_of_the_real_tree() {
    let crates = crates();
    let edges = |name: &str| {
        crates
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("crate {name} read"))
            .edges
            .len()
    };
    for (name, at_least) in [
        ("runtime", 50),
        ("operators", 30),
        ("planner", 30),
        ("cli", 10),
    ] {
        assert!(
            edges(name) > at_least,
            "{name}: only {} references between files found; is the parser broken?",
            edges(name)
        );
    }
    let runtime = crates.iter().find(|g| g.name == "runtime").expect("read");
    let file = |module: &[&str]| {
        runtime
            .file(module)
            .unwrap_or_else(|| panic!("runtime has {module:?}"))
    };
    let error = file(&["error"]);
    assert!(
        runtime.edges.keys().any(|&(_, to)| to == error),
        "no runtime file refers to error.rs; is the parser broken?"
    );
}

/// The wire, the runtime's lowest floor, knows the data model (`weir_operators`) but no
/// planner type: what travels between nodes does not change with the planner.
#[test]
fn the_wire_names_no_planner_type() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src/wire");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("runtime/src/wire is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 5, "the wire's files were not found");
    let naming: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("a readable file");
            checker::strip(&text).contains("weir_planner")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        naming.is_empty(),
        "wire files that name weir_planner: {naming:?}"
    );
}
