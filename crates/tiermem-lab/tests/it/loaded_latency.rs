//! The `loaded-latency` experiment returns the input latency curves: every MLC-style point
//! of both nodes lies within ±2 % of its node's curve (README and docs/model.md claim it).

use tiermem_lab::experiment::run;
use tiermem_lab::experiment_file::builtin;

#[test]
fn every_loaded_latency_point_lies_on_its_curve_within_two_percent() {
    let e = builtin("loaded-latency").expect("built in");
    let dir = tempfile::tempdir().unwrap();
    let results = run(&e, dir.path(), &|_, _, _| {}).unwrap();
    assert!(results.len() >= 30, "{} variants", results.len());
    for r in &results {
        let err = r.metrics["curve_error_pct"];
        assert!(err.abs() <= 2.0, "{}: {err:+.2} %", r.name);
    }
}
