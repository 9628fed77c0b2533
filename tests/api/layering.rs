//! The workspace's crate edges are its architecture (ARCHITECTURE.md): what a crate may not
//! depend on, directly or through another crate, is checked here against `cargo metadata`'s
//! resolved graph, so a forbidden edge fails the tests instead of waiting for a reader.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// Crates that do I/O: sockets, files through a database driver, an async runtime.
const IO_CRATES: &[&str] = &[
    "tokio",
    "axum",
    "hyper",
    "hyper-util",
    "reqwest",
    "rusqlite",
    "postgres",
    "tokio-postgres",
];

/// Each rule: a workspace crate and the crates it must not reach over normal dependencies.
/// The crates above a layer are forbidden to it, so an arrow can only point down.
const RULES: &[(&str, &[&str])] = &[
    ("mandato-core", IO_CRATES),
    (
        "mandato-core",
        &["mandato-store", "mandato-engine", "mandato-http", "mandato"],
    ),
    // The store speaks SQL only: no HTTP server or client, nothing of the use cases above it.
    (
        "mandato-store",
        &[
            "axum",
            "hyper",
            "reqwest",
            "mandato-engine",
            "mandato-http",
            "mandato",
        ],
    ),
    // The engine knows no HTTP server: handlers call it, never the other way round.
    (
        "mandato-engine",
        &["axum", "axum-server", "mandato-http", "mandato"],
    ),
    ("mandato-http", &["mandato"]),
];

/// Each rule: a workspace crate and the crates it must not name as its own (normal)
/// dependencies. The front doors reach the database only through the engine's methods, and the
/// engine only through the store.
const DIRECT_RULES: &[(&str, &[&str])] = &[
    (
        "mandato-http",
        &[
            "mandato-store",
            "rusqlite",
            "postgres",
            "tokio-postgres",
            "libsqlite3-sys",
        ],
    ),
    // The engine's SQL lives in the store, also the simulated acquirer's and the backups'.
    (
        "mandato-engine",
        &["rusqlite", "postgres", "tokio-postgres", "libsqlite3-sys"],
    ),
];

/// The resolved graph of normal (non-dev, non-build) dependencies, by package name.
fn normal_dependency_graph() -> HashMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let names: HashMap<&str, &str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = HashMap::new();
    for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
        let normal: Vec<String> = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|kind| kind["kind"].is_null())
            })
            .map(|dep| names[dep["pkg"].as_str().unwrap()].to_string())
            .collect();
        graph.insert(names[node["id"].as_str().unwrap()].to_string(), normal);
    }
    graph
}

/// Every crate `root` reaches over normal dependencies, with the path it first reaches it by.
fn reachable(graph: &HashMap<String, Vec<String>>, root: &str) -> HashMap<String, String> {
    let mut seen = HashMap::from([(root.to_string(), root.to_string())]);
    let mut queue = vec![root.to_string()];
    while let Some(name) = queue.pop() {
        let via = seen[&name].clone();
        for dep in graph.get(&name).into_iter().flatten() {
            if !seen.contains_key(dep) {
                seen.insert(dep.clone(), format!("{via} -> {dep}"));
                queue.push(dep.clone());
            }
        }
    }
    seen
}

#[test]
fn no_crate_reaches_what_the_architecture_forbids() {
    let graph = normal_dependency_graph();
    let mut broken = BTreeSet::new();
    for (krate, forbidden) in RULES {
        assert!(
            graph.contains_key(*krate),
            "{krate} is not in the workspace"
        );
        let reached = reachable(&graph, krate);
        for name in *forbidden {
            if let Some(path) = reached.get(*name) {
                broken.insert(format!("{krate} must not depend on {name}: {path}"));
            }
        }
    }
    for (krate, forbidden) in DIRECT_RULES {
        for name in *forbidden {
            if graph[*krate].iter().any(|dep| dep == name) {
                broken.insert(format!("{krate} must not name {name} as a dependency"));
            }
        }
    }
    assert!(broken.is_empty(), "forbidden edges:\n{broken:#?}");
}

#[test]
fn the_check_sees_a_forbidden_edge() {
    // The graph the rules run on must be the real one: the binary reaches tokio and rusqlite.
    let reached = reachable(&normal_dependency_graph(), "mandato");
    for name in [
        "tokio",
        "rusqlite",
        "mandato-core",
        "mandato-store",
        "mandato-engine",
    ] {
        assert!(reached.contains_key(name), "mandato does not reach {name}");
    }
}

/// The engine hands its store to the composition root, the command line and tests
/// (`Engine::store`); a front door that took it would query past the engine's methods, which
/// the crate graph alone cannot see.
#[test]
fn the_front_doors_never_take_the_engines_store() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/http/src");
    let mut offenders = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read crates/http/src") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("read a source file");
                if text.contains(".store()") || text.contains("mandato_store") {
                    offenders.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these reach the store: {offenders:#?}"
    );
}
