//! No import circles inside any crate (`crates/README.md`): among the modules of one
//! directory, the graph of `crate::…` and `super::…` paths has no cycle. A child module
//! naming its parent (a mechanism's module implementing methods of the parent's type) is
//! allowed: that is an edge to the directory's owner, not between siblings.
//!
//! The scan is textual: comment lines and `#[cfg(test)]` modules (everything after the
//! first `#[cfg(test)]`) are skipped; a path resolves to the longest module prefix that
//! exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every module of a crate's `src/`: module path (`""` for the root, `mm::numa`) → text
/// without comment lines and test modules.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: Vec<&str> = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            out.insert(parts.join("::"), code.join("\n"));
        }
    }
    out
}

/// The `a::b::c` paths that follow `prefix` in `text`.
fn paths_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        let tail = &rest[i + prefix.len()..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            out.push(tail[..end].trim_end_matches(':'));
        }
        rest = &tail[end..];
    }
    out
}

fn parent(m: &str) -> &str {
    m.rsplit_once("::").map_or("", |(p, _)| p)
}

/// The longest existing module that `path` (relative to the crate root) starts with.
fn resolve(path: &str, names: &BTreeSet<String>) -> String {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .map(|i| parts[..i].join("::"))
        .filter(|c| names.contains(c))
        .next_back()
        .unwrap_or_default()
}

/// Module → the modules it names.
fn graph(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeSet<String> = mods.keys().cloned().collect();
    mods.iter()
        .map(|(m, text)| {
            let mut deps = BTreeSet::new();
            for p in paths_after(text, "crate::") {
                deps.insert(resolve(p, &names));
            }
            for p in paths_after(text, "super::") {
                let full = match parent(m) {
                    "" => p.to_string(),
                    up => format!("{up}::{p}"),
                };
                deps.insert(resolve(&full, &names));
            }
            (m.clone(), deps)
        })
        .collect()
}

/// The sibling cycles among the children of each module, as lists of names.
fn sibling_cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut cycles = Vec::new();
    for owner in g.keys() {
        let kids: Vec<&String> = g
            .keys()
            .filter(|k| !k.is_empty() && *k != owner && parent(k) == owner)
            .collect();
        // The child of `owner` that contains module `m`, if any.
        let kid_of = |m: &str| {
            kids.iter()
                .find(|k| m == k.as_str() || m.starts_with(&format!("{k}::")))
                .map(|k| k.as_str())
        };
        let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (m, deps) in g {
            let Some(a) = kid_of(m) else { continue };
            for d in deps {
                if let Some(b) = kid_of(d) {
                    if a != b {
                        edges.entry(a).or_default().insert(b);
                    }
                }
            }
        }
        // A cycle exists through `a` when `a` reaches itself.
        for &a in edges.keys() {
            let mut seen = BTreeSet::new();
            let mut todo: Vec<&str> = edges[a].iter().copied().collect();
            while let Some(x) = todo.pop() {
                if x == a {
                    let mut c: Vec<String> = seen.iter().map(|s: &&str| s.to_string()).collect();
                    c.push(a.to_string());
                    cycles.push(c);
                    break;
                }
                if seen.insert(x) {
                    todo.extend(edges.get(x).into_iter().flatten().copied());
                }
            }
        }
    }
    cycles
}

#[test]
fn no_crate_has_sibling_import_circles() {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        for c in sibling_cycles(&graph(&modules(&src))) {
            found.push(format!("{}: {}", src.display(), c.join(", ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_planted_circle_is_found() {
    let mut mods = BTreeMap::new();
    mods.insert(String::new(), String::new());
    mods.insert("a".into(), "use crate::b::X;".into());
    mods.insert("b".into(), "fn f() { crate::a::g() }".into());
    mods.insert("c".into(), "use super::a::Y;".into());
    let cycles = sibling_cycles(&graph(&mods));
    assert!(cycles.iter().any(|c| c.contains(&"a".to_string())));
    assert!(!cycles.iter().any(|c| c.contains(&"c".to_string())));
}
