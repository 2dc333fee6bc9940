//! The page-event engine (`sim.engine = "events"`) against the access engine, and its
//! determinism. The access engine is the reference: it is the one `tiermem validate` checks
//! against the kernel.

use tiermem_core::config::SimConfig;
use tiermem_sim::engine::{RunOptions, SimResult, Simulation};

/// A DRAM node with the CPUs and a CPU-less CXL node below it.
fn machine(dram: &str, cxl: &str) -> String {
    format!(
        r#"
[machine]
name = "tiny"
[[machine.nodes]]
id = 0
cpus = 2
capacity = "{dram}"
kind = "dram"
read_latency = "80ns"
read_bandwidth = "20GB/s"
[[machine.nodes]]
id = 1
capacity = "{cxl}"
kind = "cxl"
read_latency = "250ns"
read_bandwidth = "10GB/s"
"#
    )
}

/// pmbench `normal_ih` (80 % reads, `-i`) in 2 processes of 96 MiB on 128 MiB of DRAM and a
/// CXL node, NUMA balancing in memory-tiering mode with seed-001's 1/32 clocks: the fast
/// node fills, cold pages are demoted and hot ones promoted throughout the run.
///
/// With less DRAM (64 or 96 MiB) the DRAM node ends up holding hot pages only, kswapd finds
/// nothing to demote, fails 16 runs in a row and stops for good (`kswapd_failures`); whether
/// and when a run gets there depends on the seed under either engine (bistable), so such a
/// machine cannot hold two runs to ±3 %.
fn tiering(engine: &str, extra: &str) -> SimConfig {
    let text = format!(
        r#"
duration = "3s"
seed = 3
[sim]
tick = "31250ns"
sample_interval = "250ms"
engine = "{engine}"
[kernel]
numa_balancing = 2
demotion_enabled = true
[kernel.numa]
scan_delay_ms = 31
scan_period_min_ms = 31
scan_period_max_ms = 1875
scan_size_mb = 8
hot_threshold_ms = 31
model_scale = 32
{extra}
[[workloads]]
type = "pmbench"
processes = 2
mapsize = "96MiB"
pattern = "normal_ih"
read_ratio = 80
initialize = true
cold = true
{machine}"#,
        machine = machine("128MiB", "512MiB")
    );
    SimConfig::from_toml_str(&text, "events-test.toml").unwrap()
}

fn run(cfg: &SimConfig, generate_ahead: bool) -> SimResult {
    let mut sim = Simulation::new_with(cfg, RunOptions { generate_ahead }).unwrap();
    sim.run(&mut |_| {}).unwrap()
}

/// A run's summary and timeline, as the determinism tests compare them.
fn outputs(r: &SimResult) -> (String, String) {
    (
        serde_json::to_string_pretty(&r.summary).unwrap(),
        r.timeline_csv.clone(),
    )
}

/// The figures the cross-check holds to ±3 %: what the workload measured and what the
/// kernel did.
fn figures(r: &SimResult) -> Vec<(&'static str, f64)> {
    let v = &r.summary.vmstat;
    let w = serde_json::to_value(&r.summary.workloads[0]).unwrap();
    vec![
        ("accesses", r.summary.accesses as f64),
        ("mean_latency_ns", r.summary.mean_latency_ns),
        ("score", w["score_accesses_per_s"].as_f64().unwrap()),
        ("numa_hint_faults", v["numa_hint_faults"] as f64),
        ("numa_pte_updates", v["numa_pte_updates"] as f64),
        ("pgpromote_success", v["pgpromote_success"] as f64),
        ("pgdemote_kswapd", v["pgdemote_kswapd"] as f64),
        ("pgscan_kswapd", v["pgscan_kswapd"] as f64),
    ]
}

#[test]
fn the_events_engine_agrees_with_the_access_engine() {
    for promotion in ["mru", "hot-threshold"] {
        let extra = format!("promotion = \"{promotion}\"");
        let access = figures(&run(&tiering("access", &extra), false));
        let events = figures(&run(&tiering("events", &extra), false));
        for ((name, a), (_, e)) in access.iter().zip(&events) {
            assert!(*a > 0.0, "{promotion}: {name} is 0 under the access engine");
            let rel = (e - a) / a;
            assert!(
                rel.abs() <= 0.03,
                "{promotion}: {name} {e} under events against {a} ({:+.1} %)",
                rel * 100.0
            );
        }
    }
}

#[test]
fn the_events_engine_is_deterministic_with_and_without_drawing_ahead() {
    let cfg = tiering("events", "");
    let one = run(&cfg, false);
    assert_eq!(outputs(&run(&cfg, false)), outputs(&one));
    assert_eq!(outputs(&run(&cfg, true)), outputs(&one));
}

#[test]
fn events_is_refused_with_ksm_and_auto_falls_back() {
    let ksm = "[kernel.ksm]\nrun = 1";
    let text = |engine: &str| {
        format!("duration = \"100ms\"\nmachine = \"small\"\n[sim]\nengine = \"{engine}\"\n{ksm}\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"8MiB\"\n")
    };
    let e = SimConfig::from_toml_str(&text("events"), "t.toml").unwrap_err();
    assert_eq!(e.key, "sim.engine", "{e}");
    let auto = SimConfig::from_toml_str(&text("auto"), "t.toml").unwrap();
    let access = SimConfig::from_toml_str(&text("access"), "t.toml").unwrap();
    let a = run(&auto, false);
    let b = run(&access, false);
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

/// A paced synthetic workload with two access threads over a Gaussian and a hot/cold
/// region, tiering on, with reclaim to swap: the page-event engine runs it (both threads
/// switch), the same config gives the same bytes twice, and a different seed does not.
#[test]
fn synthetic_workloads_run_on_page_events_deterministically() {
    let cfg = |seed: u64| {
        let text = format!(
            r#"
duration = "6s"
seed = {seed}
[sim]
sample_interval = "250ms"
engine = "events"
[kernel]
numa_balancing = 2
demotion_enabled = true
[kernel.numa]
hot_threshold_ms = 200
[kernel.swap]
capacity = "64MiB"
[[workloads]]
type = "synthetic"
threads = 2
read_ratio = 70
[[workloads.regions]]
name = "g"
size = "48MiB"
place = {{ mode = "bind", nodes = [1] }}
pattern = "gaussian"
sigma = 0.1
rate = 200000
[[workloads.regions]]
name = "hc"
size = "32MiB"
populate = false
pattern = "hotcold"
rate = 100000
{machine}"#,
            machine = machine("64MiB", "256MiB")
        );
        SimConfig::from_toml_str(&text, "synthetic-events.toml").unwrap()
    };
    let one = run(&cfg(1), false);
    assert_eq!(one.event_threads, 2);
    assert!(one.summary.vmstat["pgpromote_success"] > 0);
    assert_eq!(outputs(&run(&cfg(1), false)), outputs(&one));
    assert_ne!(outputs(&run(&cfg(2), false)).0, outputs(&one).0);
}
