//! The seed 000/001 experiments follow the published direction at every step, at 1/32
//! scale (the main suite's versions). Each runs four scaled simulations of about a minute
//! of CPU, so they are `#[ignore]`d locally and run in CI (`--include-ignored`).
//!
//! CI runs the main suite first (`scripts/reproduce.sh DIR`, the README's first command)
//! and points `TIERMEM_SUITE_OUT` at DIR: the tests then check the steps of the suite's
//! `results.json` (written by this same build) instead of running the experiments again.

use tiermem_lab::experiment::{evaluate_steps, run};
use tiermem_lab::experiment_file::builtin;

/// The steps of the main suite's run of `name` under `TIERMEM_SUITE_OUT`, if there is one
/// from this version: (from, to, metric, holds).
fn suite_steps(name: &str) -> Option<Vec<(String, String, String, bool)>> {
    let dir = std::env::var_os("TIERMEM_SUITE_OUT")?;
    let path = std::path::Path::new(&dir).join(name).join("results.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("TIERMEM_SUITE_OUT is set but {}: {e}", path.display()));
    let r: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
    assert_eq!(
        r["version"].as_str(),
        Some(env!("CARGO_PKG_VERSION")),
        "{} is from another version",
        path.display()
    );
    let steps = r["steps"].as_array().expect("results.json has steps");
    Some(
        steps
            .iter()
            .filter(|s| s["expect"].as_str() != Some("reported"))
            .map(|s| {
                let f = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                (
                    f("from"),
                    f("to"),
                    f("metric"),
                    s["holds"].as_bool() == Some(true),
                )
            })
            .collect(),
    )
}

fn check(name: &str) {
    let steps = suite_steps(name).unwrap_or_else(|| {
        let exp = builtin(name).expect("built-in exists");
        let dir = tempfile::tempdir().expect("temp dir");
        let results = run(&exp, dir.path(), &|_, _, _| {}).expect("experiment runs");
        evaluate_steps(&exp, &results)
            .into_iter()
            .filter(|s| s.step.expect != tiermem_lab::experiment::Expect::Reported)
            .map(|s| (s.step.from, s.step.to, s.step.metric, s.holds))
            .collect()
    });
    assert!(!steps.is_empty());
    for (from, to, metric, holds) in &steps {
        assert!(
            holds,
            "{name}: step {from} → {to} on {metric} does not follow the published direction"
        );
    }
}

#[test]
#[ignore = "slow: four scaled 900 s pmbench runs"]
fn seed_001_steps_follow_the_published_direction() {
    check("seed-001-hot-page-selection-scaled");
}

#[test]
#[ignore = "slow: four scaled 900 s pmbench runs"]
fn seed_000_steps_follow_the_published_direction() {
    check("seed-000-tiering-scaled");
}
