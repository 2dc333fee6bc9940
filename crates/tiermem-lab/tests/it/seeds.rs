//! An experiment over several seeds: every variant runs once per seed, the results are the
//! means with deviations, each seed's runs are kept, and the steps count the seeds in which
//! they hold.

use tiermem_lab::experiment::run;
use tiermem_lab::experiment_file::{builtin, parse, to_toml};

#[test]
fn every_variant_runs_once_per_seed_and_the_means_are_reported() {
    let mut e = builtin("seed-003-ksm-numa").expect("built in");
    let one = {
        let dir = tempfile::tempdir().unwrap();
        let mut e1 = e.clone();
        e1.seeds = vec![11];
        run(&e1, dir.path(), &|_, _, _| {}).unwrap()
    };
    e.seeds = vec![11, 12];
    let dir = tempfile::tempdir().unwrap();
    let results = run(&e, dir.path(), &|_, _, _| {}).unwrap();
    assert_eq!(results.len(), e.variants.len());
    let metric = "workloads[0].access_time_spread_pct";
    for (r, r1) in results.iter().zip(&one) {
        let seeds: Vec<u64> = r.per_seed.iter().map(|(s, _)| *s).collect();
        assert_eq!(seeds, [11, 12], "{}", r.name);
        // Seed 11's run is the same whether it runs alone or with another seed.
        assert_eq!(r.per_seed[0].1, r1.metrics, "{}", r.name);
        let (a, b) = (r.per_seed[0].1[metric], r.per_seed[1].1[metric]);
        assert!((r.metrics[metric] - (a + b) / 2.0).abs() < 1e-9 * a.abs().max(1.0));
        if a != b {
            let sd = (a - b).abs() / 2f64.sqrt();
            assert!((r.sd[metric] - sd).abs() < 1e-9 * sd, "{}", r.name);
        }
        // Labels do not vary with the seed, so they carry no deviation.
        assert!(!r.sd.contains_key("nodes"));
        for s in [11, 12] {
            let d = dir.path().join(format!("variants/{}/seed-{s}", r.name));
            assert!(d.join("summary.json").exists(), "{}", d.display());
            // The run's own config: `tiermem sim` on it repeats the run.
            let cfg = std::fs::read_to_string(d.join("config.toml")).unwrap();
            assert!(cfg.contains(&format!("\nseed = {s}\n")), "{cfg}");
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    assert_eq!(json["seeds"], serde_json::json!([11, 12]));
    assert_eq!(json["variants"][0]["per_seed"][1]["seed"], 12);
    let steps = json["steps"].as_array().unwrap();
    assert!(steps
        .iter()
        .all(|s| s["per_seed"]["seeds"] == 2 && s["per_seed"]["holds"].as_u64().unwrap() <= 2));
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("Every variant ran with seeds 11, 12"));
    assert!(report.contains(" of 2 seeds)"), "{report}");
    assert!(report.contains(" ± "));
    // A seed list the runner is handed directly is checked too.
    e.seeds = vec![3, 3];
    let err = run(&e, dir.path(), &|_, _, _| {}).unwrap_err().to_string();
    assert!(err.contains("seeds") && err.contains("twice"), "{err}");
}

#[test]
fn seeds_in_a_file_are_checked_and_written_back() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/controller-vs-kernel.toml"
    ))
    .unwrap();
    let with = |seeds: &str| {
        // Top-level keys go before the first table.
        let at = text.find("\n[").unwrap();
        format!("{}\nseeds = {seeds}{}", &text[..at], &text[at..])
    };
    let e = parse(&with("[3, 1, 2]"), "x.toml", None).unwrap();
    assert_eq!(e.seeds, [3, 1, 2]);
    let back = parse(&to_toml(&e).unwrap(), "back.toml", None).unwrap();
    assert_eq!(back.seeds, [3, 1, 2]);
    for (bad, says) in [("[1, 1]", "given twice"), ("[]", "at least one")] {
        let err = parse(&with(bad), "x.toml", None).unwrap_err().to_string();
        assert!(err.contains("seeds") && err.contains(says), "{bad}: {err}");
    }
}
