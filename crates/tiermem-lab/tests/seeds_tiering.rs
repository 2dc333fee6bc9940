//! The seed 000/001 experiments follow the published direction at every step. Each runs
//! four scaled simulations of about a minute of CPU, so they are `#[ignore]`d locally and run
//! in CI (`--include-ignored`). They are checked at 1/32 scale here: the full-size built-ins
//! run in CI's `experiment --all`.

use tiermem_lab::experiment::{evaluate_steps, run};
use tiermem_lab::experiment_file::builtin;

fn check(name: &str) {
    let exp = builtin(name).expect("built-in exists");
    let dir = tempfile::tempdir().expect("temp dir");
    let results = run(&exp, dir.path(), &|_, _, _| {}).expect("experiment runs");
    let steps = evaluate_steps(&exp, &results);
    assert!(!steps.is_empty());
    let report = std::fs::read_to_string(dir.path().join("report.md")).expect("report");
    for s in &steps {
        assert!(
            s.holds,
            "{name}: step {} → {} on {} does not follow the published direction ({:?}):\n{report}",
            s.step.from, s.step.to, s.step.metric, s.step.expect
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
