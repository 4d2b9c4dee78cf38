//! The host's layers stay layers: reads every `crate::…` path in
//! `native-host/src`, builds the graph of its top-level modules (the
//! folders `agent/`, `host/`, … and the single-file modules), and fails on
//! a cycle, naming it, on the agent importing the host or the command
//! line, and on an import upwards in the order of [`LAYERS`]. See `ARCHITECTURE.md`, "The host's code map".

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Who may not be imported by whom, beyond "no cycles".
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The agent sees the world only through its ports (`agent/ports.rs`).
    ("agent", &["host", "cli"]),
];

/// The layers, top first, as `ARCHITECTURE.md` draws them: a module may
/// import only modules after it. A new module takes its place here.
const LAYERS: &[&str] = &[
    "cli", "host", "tools", "agent", "setup", "memory", "llm", "sites", "config", "answer",
    "origin", "text",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: its first folder, or its own
/// name for a file directly in `src/` (`None` for the crate root).
fn layer_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    if rel.components().count() > 1 {
        return Some(first);
    }
    let stem = first.trim_end_matches(".rs");
    (!matches!(stem, "lib" | "main")).then(|| stem.to_owned())
}

/// The first identifier of each path in a `use crate::{…}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && (c.is_alphabetic() || c == '_') => {
                let ident: String =
                    group[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                heads.push(ident);
                start = false;
            }
            _ => {}
        }
    }
    heads
}

/// The top-level modules a file's code names through `crate::`.
fn imports(text: &str) -> BTreeSet<String> {
    // Comments (and doc comments) out: they may mention any module.
    let code: String =
        text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `errand_crate::…` or the like
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            found.extend(group_heads(&group[..end]));
        } else {
            let ident: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                found.insert(ident);
            }
        }
    }
    found
}

/// A cycle through `start`, if there is one: the modules in order.
fn cycle_from(start: &str, graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        node: &str,
        start: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(node).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(next, start, graph, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    let mut seen = BTreeSet::new();
    walk(start, start, graph, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_host_modules_form_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();

    let layers: BTreeSet<String> =
        files.iter().filter_map(|f| layer_of(f.strip_prefix(&src).unwrap())).collect();
    for expected in ["agent", "host", "cli", "config", "llm", "memory"] {
        assert!(layers.contains(expected), "no module `{expected}` found in {}", src.display());
    }

    // layer → layer it imports → the files that do.
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let Some(from) = layer_of(rel) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for to in imports(&text) {
            if !layers.contains(&to) {
                problems.push(format!(
                    "{}: `crate::{to}` is not one of the host's modules ({}); name the module it \
                     lives in (the crate root's re-exports are for other crates)",
                    rel.display(),
                    layers.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
                continue;
            }
            if to != from {
                let files = edges.entry(from.clone()).or_default().entry(to).or_default();
                files.insert(rel.display().to_string());
            }
        }
    }

    for (from, banned) in FORBIDDEN {
        for to in *banned {
            if let Some(files) = edges.get(*from).and_then(|e| e.get(*to)) {
                problems.push(format!(
                    "`{from}` must not import `{to}`, but {} do(es)",
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }

    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    for layer in &layers {
        if rank(layer).is_none() {
            problems.push(format!(
                "`{layer}` is not in LAYERS (native-host/tests/layers.rs): give it its place"
            ));
        }
    }
    for (from, tos) in &edges {
        for (to, files) in tos {
            if let (Some(f), Some(t)) = (rank(from), rank(to)) {
                if f > t {
                    problems.push(format!(
                        "`{from}` imports `{to}`, a layer above it ({})",
                        files.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }

    let graph: BTreeMap<String, BTreeSet<String>> =
        edges.iter().map(|(k, v)| (k.clone(), v.keys().cloned().collect())).collect();
    let mut reported = BTreeSet::new();
    for layer in &layers {
        let Some(cycle) = cycle_from(layer, &graph) else { continue };
        let key: BTreeSet<String> = cycle.iter().cloned().collect();
        if !reported.insert(key) {
            continue;
        }
        let mut steps = Vec::new();
        for (i, from) in cycle.iter().enumerate() {
            let to = &cycle[(i + 1) % cycle.len()];
            let via = edges[from][to].iter().next().cloned().unwrap_or_default();
            steps.push(format!("{from} → {to} (in {via})"));
        }
        problems.push(format!("an import cycle: {}", steps.join(", ")));
    }

    assert!(problems.is_empty(), "the host's layers are broken:\n- {}", problems.join("\n- "));
}

#[test]
fn the_reader_finds_groups_and_skips_comments() {
    let text = "use crate::{agent::{self, Browser}, config};\n\
                // crate::host in a comment\n\
                let x = crate::memory::store::Store::open();\n\
                $crate::llm::Provider";
    let found: Vec<String> = imports(text).into_iter().collect();
    assert_eq!(found, ["agent", "config", "llm", "memory"]);
    assert_eq!(layer_of(Path::new("agent/tabs.rs")).as_deref(), Some("agent"));
    assert_eq!(layer_of(Path::new("sites.rs")).as_deref(), Some("sites"));
    assert_eq!(layer_of(Path::new("lib.rs")), None);

    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(cycle_from("a", &g), Some(vec!["a".to_owned(), "b".to_owned()]));
    g.remove("b");
    assert_eq!(cycle_from("a", &g), None);
}
