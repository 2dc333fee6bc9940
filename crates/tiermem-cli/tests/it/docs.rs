//! The docs stand alone: every relative link in `README.md` and `docs/*.md` names a file
//! inside the repository that exists, and every `#anchor` a heading of that file (GitHub's
//! slugs: lower case, punctuation dropped, spaces to `-`).

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The targets of `[text](target)` links, outside code spans and fenced blocks.
fn links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push(
                tail[..end]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            );
            rest = &tail[end..];
        }
    }
    out
}

fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> Vec<String> {
    md.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

#[test]
fn doc_links_stay_inside_the_repository_and_resolve() {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let md = std::fs::read_to_string(f).unwrap();
        for target in links(&md) {
            if target.is_empty()
                || target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                f.clone()
            } else {
                f.parent().unwrap().join(path)
            };
            let Ok(resolved) = file.canonicalize() else {
                bad.push(format!("{}: {target}: no such file", f.display()));
                continue;
            };
            if !resolved.starts_with(&root) {
                bad.push(format!("{}: {target}: outside the repository", f.display()));
                continue;
            }
            if let (Some(a), true) = (anchor, resolved.extension().is_some_and(|x| x == "md")) {
                let text = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&text).iter().any(|h| h == a) {
                    bad.push(format!("{}: {target}: no such heading", f.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken doc links:\n{}", bad.join("\n"));
    assert!(
        checked > 20,
        "only {checked} relative links found: is the scanner broken?"
    );
    // The scanner itself: a link in code is not a link; an anchor is matched by its slug.
    assert_eq!(links("see [a](b.md#c) and `[x](y)`"), vec!["b.md#c"]);
    assert_eq!(slug(" damo's record shape"), "damos-record-shape");
}

/// The dependency directions of `crates/README.md`: every crate's tiermem dependencies are
/// among the ones the map allows.
#[test]
fn crates_depend_only_in_the_directions_of_the_map() {
    let allowed: &[(&str, &[&str])] = &[
        ("tiermem-core", &[]),
        ("tiermem-policy", &["tiermem-core"]),
        ("tiermem-damon", &["tiermem-core"]),
        ("tiermem-trace", &["tiermem-core"]),
        (
            "tiermem-sim",
            &[
                "tiermem-core",
                "tiermem-policy",
                "tiermem-damon",
                "tiermem-trace",
            ],
        ),
        (
            "tiermem-agent",
            &["tiermem-core", "tiermem-policy", "tiermem-trace"],
        ),
        ("tiermem-lab", &["tiermem-core", "tiermem-sim"]),
        (
            "tiermem-py",
            &["tiermem-core", "tiermem-sim", "tiermem-lab"],
        ),
        (
            "tiermem-cli",
            &[
                "tiermem-core",
                "tiermem-sim",
                "tiermem-trace",
                "tiermem-agent",
                "tiermem-lab",
            ],
        ),
        (
            "tiermem-fuzz",
            &[
                "tiermem-core",
                "tiermem-sim",
                "tiermem-trace",
                "tiermem-agent",
            ],
        ),
    ];
    let root = repo().join("crates");
    let mut seen = 0;
    for e in std::fs::read_dir(&root).unwrap() {
        let dir = e.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let manifest: toml::Table = toml::from_str(&text).unwrap();
        let name = manifest["package"]["name"].as_str().unwrap().to_string();
        let deps: Vec<String> = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|d| {
                d.keys()
                    .filter(|k| k.starts_with("tiermem-"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let Some((_, ok)) = allowed.iter().find(|(n, _)| *n == name) else {
            panic!("{name} is not in crates/README.md's map (and this test's table)");
        };
        for d in deps {
            assert!(
                ok.contains(&d.as_str()),
                "{name} depends on {d}: not a direction the map allows"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, allowed.len());
}

/// The docs say what is true now; the project's history is git's. A doc or experiment file
/// that narrates it ("the fourth session's run", "(was 29.0)") is caught here.
#[test]
fn docs_state_the_present_not_the_projects_history() {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "docs/recordings", "experiments", "configs/examples"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md" || x == "toml") {
                files.push(p);
            }
        }
    }
    let ordinal = [
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth", "eleventh", "twelfth", "teenth", "tieth", "earlier", "previous", "last", "this",
        "same",
    ];
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap().to_lowercase();
        for (i, line) in text.lines().enumerate() {
            let words: Vec<&str> = line
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
                .collect();
            let narrates = words.windows(2).any(|w| {
                (w[1] == "session" || w[1] == "session's" || w[1] == "sessions")
                    && ordinal.iter().any(|o| w[0].ends_with(o))
            }) || line.contains("(was ");
            if narrates {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "history in the docs:\n{}", bad.join("\n"));
}
