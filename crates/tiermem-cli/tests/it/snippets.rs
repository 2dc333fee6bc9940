//! The docs' commands work as written: every ```` ```sh ```` block of README.md and
//! docs/*.md runs, line by line, with this build's `tiermem` first on `PATH`, in a scratch
//! directory that sees the repository's configs, experiments, validation suite, examples
//! and tests (outputs go to its `out/`). Each line must exit 0.
//!
//! An HTML comment on the line before a block says otherwise, with the reason:
//! * `<!-- not run: why -->`: not run (needs root, a cluster, or is one of the two commands);
//! * `<!-- slow: why -->`: run only with `TIERMEM_SLOW=1` or in CI;
//! * `<!-- exits N: why -->` (also after `slow:`): every line must exit with code N.
//!
//! A runnable block may call only `tiermem` and `gcc`: anything else (pip, sudo, the scripts)
//! must be marked, so that a block that claims to work is run. `tests/python/test_docs.py`
//! does the same for the ```` ```python ```` blocks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands a runnable block may use.
const ALLOWED: [&str; 2] = ["tiermem", "gcc"];
/// The longest one line may take.
const LINE_TIMEOUT: Duration = Duration::from_secs(900);

/// One fenced block with its marker.
struct Block {
    file: String,
    line: usize,
    lang: String,
    marker: Option<String>,
    lines: Vec<String>,
}

/// Every fenced block of `text` with the HTML comment just before it, if any.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(lang) = l.strip_prefix("```") {
            let start = i;
            let marker = lines[..i]
                .iter()
                .rev()
                .find(|p| !p.trim().is_empty())
                .and_then(|p| p.trim().strip_prefix("<!--"))
                .and_then(|p| p.strip_suffix("-->"))
                .map(|m| m.trim().to_string());
            i += 1;
            let mut body = Vec::new();
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push(lines[i].to_string());
                i += 1;
            }
            out.push(Block {
                file: file.to_string(),
                line: start + 1,
                lang: lang.trim().to_string(),
                marker,
                lines: body,
            });
        }
        i += 1;
    }
    out
}

/// What a marker asks for: (run at all, slow, expected exit code). A marker without a
/// reason is refused.
fn directives(b: &Block) -> (bool, bool, i32) {
    let Some(m) = &b.marker else {
        return (true, false, 0);
    };
    let where_ = format!("{}:{}", b.file, b.line);
    if let Some(why) = m.strip_prefix("not run:") {
        assert!(
            !why.trim().is_empty(),
            "{where_}: say why the block is not run"
        );
        return (false, false, 0);
    }
    let (slow, rest) = match m.strip_prefix("slow:") {
        Some(r) => (true, r.trim()),
        None => (false, m.as_str()),
    };
    let mut code = 0;
    let mut reason = rest;
    if let Some(r) = rest.strip_prefix("exits ") {
        let (n, why) = r
            .split_once(':')
            .unwrap_or_else(|| panic!("{where_}: write `exits N: why`"));
        code = n
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{where_}: exits takes a number"));
        reason = why;
    }
    assert!(
        !reason.trim().is_empty(),
        "{where_}: the marker {m:?} needs a reason"
    );
    (true, slow, code)
}

fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// A scratch directory that sees the repository's inputs, with an empty `out/`.
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for sub in [
        "configs",
        "experiments",
        "validation",
        "examples",
        "tests",
        "docs",
    ] {
        std::os::unix::fs::symlink(repo().join(sub).canonicalize().unwrap(), d.path().join(sub))
            .unwrap();
    }
    std::fs::create_dir(d.path().join("out")).unwrap();
    d
}

fn slow_enabled() -> bool {
    std::env::var("TIERMEM_SLOW").is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Run one line with `sh -c`; its exit code and what it printed.
fn run_line(dir: &Path, line: &str) -> (Option<i32>, String) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_tiermem")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > LINE_TIMEOUT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn every_shell_block_of_the_docs_runs_as_written() {
    let slow = slow_enabled();
    let (mut ran, mut skipped) = (0, Vec::new());
    let mut failures = Vec::new();
    for f in doc_files() {
        let name = f.strip_prefix(repo()).unwrap_or(&f).display().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        for b in blocks(&name, &text).iter().filter(|b| b.lang == "sh") {
            let (run, is_slow, code) = directives(b);
            let where_ = format!("{}:{}", b.file, b.line);
            if !run || (is_slow && !slow) {
                skipped.push(where_);
                continue;
            }
            let dir = scratch();
            for line in &b.lines {
                let cmd = line.trim();
                if cmd.is_empty() || cmd.starts_with('#') {
                    continue;
                }
                let prog = cmd.split_whitespace().next().unwrap_or_default();
                assert!(
                    ALLOWED.contains(&prog),
                    "{where_}: `{cmd}` is not a tiermem command: run it, or mark the block \
                     `<!-- not run: why -->`"
                );
                let t0 = Instant::now();
                let (got, output) = run_line(dir.path(), cmd);
                eprintln!("{where_}: {cmd}  [{:.1} s]", t0.elapsed().as_secs_f64());
                ran += 1;
                if got != Some(code) {
                    let tail: String = output
                        .lines()
                        .rev()
                        .take(15)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("\n");
                    failures.push(format!(
                        "{where_}: `{cmd}` exited {got:?}, the docs say {code}:\n{tail}"
                    ));
                }
            }
        }
    }
    eprintln!(
        "{ran} commands run; blocks not run here: {}",
        skipped.join(", ")
    );
    assert!(ran >= 10, "only {ran} commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn markers_are_parsed_with_their_reasons() {
    let text = "<!-- not run: needs root -->\n```sh\nsudo x\n```\n\n\
                <!-- slow: exits 1: eight seeds -->\n```sh\ntiermem validate v\n```\n\
                ```sh\ntiermem presets\n```\n";
    let b = blocks("t.md", text);
    assert_eq!(b.len(), 3);
    assert_eq!(directives(&b[0]), (false, false, 0));
    assert_eq!(directives(&b[1]), (true, true, 1));
    assert_eq!(directives(&b[2]), (true, false, 0));
    assert_eq!(b[2].lines, vec!["tiermem presets"]);
}

#[test]
#[should_panic(expected = "needs a reason")]
fn a_marker_without_a_reason_is_refused() {
    let b = blocks("t.md", "<!-- slow: -->\n```sh\ntiermem presets\n```\n");
    directives(&b[0]);
}
