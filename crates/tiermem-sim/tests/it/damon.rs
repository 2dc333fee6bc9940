//! DAMON in the simulator: monitoring accuracy on known hot regions, the overhead bound,
//! DAMON_RECLAIM, tiering, and coexistence with reclaim's accessed-bit checks.

use tiermem_core::config::SimConfig;
use tiermem_core::damon_workloads::HotRegionsConfig;
use tiermem_core::units::PAGE_SIZE;
use tiermem_sim::engine::Simulation;
use tiermem_sim::workload::WorkloadResult;

fn sim(text: &str) -> Simulation {
    let cfg = SimConfig::from_toml_str(text, "test.toml").unwrap();
    Simulation::new(&cfg).unwrap()
}

/// Precision and recall, by bytes, of DAMON's hot regions (last window's `nr_accesses` at
/// least a quarter of the maximum) against the workload's true hot pages.
fn accuracy(s: &Simulation, w: &HotRegionsConfig) -> (f64, f64) {
    let k = &s.kdamonds[0];
    let vma = &s.kernel.procs()[0].vmas[0];
    let max = k.ctx.attrs().max_nr_accesses();
    let (mut tp, mut reported) = (0u64, 0u64);
    for r in &k.ctx.targets[0] {
        if r.last_nr_accesses * 4 < max {
            continue;
        }
        reported += r.size();
        let mut a = r.start.max(vma.start);
        let end = r.end.min(vma.start + vma.pages as u64 * PAGE_SIZE);
        while a < end {
            if w.is_hot_page((a - vma.start) / PAGE_SIZE) {
                tp += PAGE_SIZE;
            }
            a += PAGE_SIZE;
        }
    }
    let truth: u64 = w.hot.iter().map(|h| h.size.0).sum();
    (tp as f64 / reported.max(1) as f64, tp as f64 / truth as f64)
}

#[test]
fn damon_finds_the_known_hot_regions_with_default_attributes() {
    let text = r#"
        machine = "small"
        duration = "4s"
        [[workloads]]
        type = "hotregions"
        [[kernel.damon.contexts]]
        ops = "vaddr"
        target_workloads = [0]
    "#;
    let mut s = sim(text);
    s.run(&mut |_| {}).unwrap();
    let cfg = SimConfig::from_toml_str(text, "t").unwrap();
    let tiermem_core::config::WorkloadConfig::Hotregions(w) = &cfg.workloads[0] else {
        unreachable!()
    };
    let (p, r) = accuracy(&s, w);
    println!(
        "hot-region accuracy: precision {p:.3} recall {r:.3} ({} regions)",
        s.kdamonds[0].ctx.nr_regions()
    );
    assert!(p >= 0.8, "precision {p}");
    assert!(r >= 0.8, "recall {r}");
}

fn overhead_run(capacity: &str, max_nr_regions: u32) -> (u64, u64, usize, f64) {
    let text = format!(
        r#"
        duration = "1500ms"
        [machine]
        name = "flat"
        [[machine.nodes]]
        id = 0
        cpus = 4
        capacity = "{capacity}"
        kind = "dram"
        read_latency = "85ns"
        read_bandwidth = "50GB/s"
        write_bandwidth = "42GB/s"
        [[workloads]]
        type = "hotregions"
        size = "256MiB"
        hot = [{{ offset = "64MiB", size = "16MiB" }}, {{ offset = "128MiB", size = "4MiB" }}, {{ offset = "200MiB", size = "8MiB" }}]
        [[kernel.damon.contexts]]
        ops = "paddr"
        attrs = {{ max_nr_regions = {max_nr_regions} }}
    "#
    );
    let mut s = sim(&text);
    let r = s.run(&mut |_| {}).unwrap();
    let k = &s.kdamonds[0];
    (
        k.ctx.counters.max_checks_per_sample,
        k.ctx.counters.samples,
        k.ctx.nr_regions(),
        r.summary.damon[0].monitor_cpu_percent,
    )
}

#[test]
fn access_checks_per_sample_never_exceed_max_nr_regions_whatever_the_memory_size() {
    for (cap, max) in [("1GiB", 1000), ("64GiB", 1000), ("1GiB", 30), ("64GiB", 30)] {
        let (max_checks, samples, nr, cpu) = overhead_run(cap, max);
        println!(
            "{cap}: {samples} samples, at most {max_checks} checks per sample, {nr} regions, \
             monitoring {cpu:.3} % of a CPU"
        );
        // At most max_nr_regions checks of 60 ns every 5 ms: 1.2 % of a CPU, whatever the size.
        assert!(cpu <= 1.2 + 0.01, "{cap}: {cpu}");
        assert!(samples > 100);
        assert!(max_checks <= max as u64, "{cap}: {max_checks} > {max}");
        if max == 30 {
            assert!(max_checks > 15, "the bound is reached: {max_checks}");
        }
        assert!(nr >= 10, "{cap}: {nr}");
    }
}

const RECLAIM: &str = include_str!("../data/damon-reclaim.toml");

#[test]
fn damon_reclaim_pages_out_cold_memory_and_reports_module_stats() {
    let mut s = sim(RECLAIM);
    let r = s.run(&mut |_| {}).unwrap();
    let k = &r.summary.damon[0];
    assert_eq!(k.name, "damon_reclaim");
    let st = &k.module_stats;
    assert!(st["bytes_reclaimed_regions"] > 8 << 20, "{st:?}");
    assert!(st["bytes_reclaim_tried_regions"] >= st["bytes_reclaimed_regions"]);
    assert_eq!(st["nr_reclaimed_regions"], k.schemes[0].stats.nr_applied);
    assert!(r.summary.vmstat["pswpout"] * 4096 >= st["bytes_reclaimed_regions"]);
    assert!(k.cpu_percent > 0.0 && k.cpu_percent < 100.0);
    // Most of what was paged out stays out: it was cold.
    assert!(r.summary.vmstat["pswpin"] * 4 < r.summary.vmstat["pswpout"]);
}

#[test]
fn damon_runs_are_deterministic() {
    let a = sim(RECLAIM).run(&mut |_| {}).unwrap();
    let b = sim(RECLAIM).run(&mut |_| {}).unwrap();
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
}

#[test]
fn damon_tiering_promotes_hot_memory_from_the_slow_node() {
    let text = r#"
        machine = "small"
        duration = "6s"
        [kernel.damon.tiering]
        enabled = true
        # The goal-driven quota starts at one byte and at most doubles per window
        # (damon_feed_loop_next_input): short windows let it ramp up within the test.
        # Windows only turn over when the scheme applies, so apply as often.
        quota_reset_interval_ms = 100
        apply_interval_us = 100000
        [[workloads]]
        type = "pmbench"
        mapsize = "256MiB"
        setsize = "32MiB"
        initialize = true
        policy = { mode = "bind", nodes = [1] }
    "#;
    let r = sim(text).run(&mut |_| {}).unwrap();
    assert_eq!(r.summary.damon.len(), 2);
    let promote = &r.summary.damon[1];
    assert_eq!(promote.schemes[0].action, "migrate_hot");
    assert!(
        promote.schemes[0].stats.sz_applied > 4 << 20,
        "{:?}",
        promote.schemes[0]
    );
    assert!(r.summary.nodes[0].used_bytes > 4 << 20);
    assert!(r.summary.vmstat["pgmigrate_success"] > 1000);
}

#[test]
fn bad_damon_config_is_rejected_with_its_key() {
    for (damon, key) in [
        (
            "[[kernel.damon.contexts]]\nops = \"paddr\"\nattrs = { min_nr_regions = 2 }\n",
            "kernel.damon.contexts[0].attrs",
        ),
        (
            "[[kernel.damon.contexts]]\nops = \"vaddr\"\ntarget_workloads = [3]\n",
            "target_workloads",
        ),
        ("[kernel.damon.reclaim]\nquota_msec = 1\n", "quota_msec"),
        (
            "[[kernel.damon.contexts]]\nops = \"paddr\"\nper_workload_run = true\nrecord = true\n",
            "kernel.damon.contexts[0].record",
        ),
    ] {
        let e = SimConfig::from_toml_str(&format!("machine = \"small\"\n{damon}"), "x.toml")
            .unwrap_err();
        assert!(e.to_string().contains(key), "{e}");
    }
}

/// A one-node 1 GiB machine with a 256 MiB zram swap (TOML tables).
const VM_WITH_ZRAM: &str = r#"[machine]
name = "vm"
[[machine.nodes]]
id = 0
cpus = 4
capacity = "1GiB"
kind = "dram"
read_latency = "85ns"
read_bandwidth = "50GB/s"
write_bandwidth = "42GB/s"
[kernel.zram]
capacity = "256MiB"
"#;

/// Two programs one after another, 4 s apart, under a paddr pageout scheme with a 50 ms/s
/// time quota; `per_workload_run` as given.
fn two_runs(per_run: bool) -> tiermem_sim::engine::SimResult {
    two_runs_under(&format!("ops = \"paddr\"\nper_workload_run = {per_run}"))
}

/// The two programs under a pageout context whose keys before its scheme are `context`.
fn two_runs_under(context: &str) -> tiermem_sim::engine::SimResult {
    let program = "[[workloads]]\ntype = \"parsec\"\nshape = \"grow_then_cold\"\nrss = \"32MiB\"\n\
                   cold_frac = 0.9\nruntime = \"4s\"\nhot_window = \"500ms\"\ncpu_per_access = \"400ns\"";
    let text = format!(
        r#"seed = 5
duration = "14s"
{VM_WITH_ZRAM}[[kernel.damon.contexts]]
{context}
[[kernel.damon.contexts.schemes]]
action = "pageout"
access_pattern = {{ min_nr_accesses = 0, max_nr_accesses = 0, min_age = 5 }}
quotas = {{ ms = 50, reset_interval_ms = 1000 }}
{program}
{program}
start = "8s"
"#
    );
    sim(&text).run(&mut |_| {}).unwrap()
}

#[test]
fn a_per_workload_run_context_runs_a_fresh_kdamond_during_each_run_only() {
    let per_run = two_runs(true);
    let whole = two_runs(false);
    let samples = |r: &tiermem_sim::engine::SimResult| r.summary.damon[0].counters.samples;
    // Sampling (5 ms) only while a program runs: about the two runtimes, not the 14 s.
    let parsec = |r: &tiermem_sim::engine::SimResult| -> Vec<(f64, Option<f64>)> {
        r.summary
            .workloads
            .iter()
            .filter_map(|w| match w {
                WorkloadResult::Parsec {
                    runtime_seconds,
                    kdamond_cpu_pct,
                    ..
                } => Some((*runtime_seconds, *kdamond_cpu_pct)),
                _ => None,
            })
            .collect()
    };
    let runs = parsec(&per_run);
    assert_eq!(runs.len(), 2);
    let run_s: f64 = runs.iter().map(|r| r.0).sum();
    let expected = run_s / 0.005;
    let got = samples(&per_run) as f64;
    assert!(
        (got - expected).abs() < 0.1 * expected,
        "{got} samples for {run_s} s of runs"
    );
    assert!(samples(&whole) as f64 > 1.5 * got, "{}", samples(&whole));
    // Each run's kdamond works and pages cold memory out, but later than one kdamond that
    // monitored all along: a fresh one's regions start at age 0 (min_age 0.5 s) and its
    // time quota has no throughput history yet.
    for (_, cpu) in &runs {
        assert!(cpu.is_some_and(|c| c > 0.0), "{runs:?}");
    }
    let applied = per_run.summary.damon[0].schemes[0].stats.sz_applied;
    let whole_applied = whole.summary.damon[0].schemes[0].stats.sz_applied;
    assert!(
        applied > 1 << 20 && applied < whole_applied,
        "{applied} {whole_applied}"
    );
    assert!(per_run.summary.damon[0].cpu_seconds < whole.summary.damon[0].cpu_seconds);
}

#[test]
fn a_per_workload_run_vaddr_context_follows_its_target_workloads_runs_only() {
    let r = two_runs_under("ops = \"vaddr\"\ntarget_workloads = [1]\nper_workload_run = true");
    let samples = r.summary.damon[0].counters.samples as f64;
    let second_run = match &r.summary.workloads[1] {
        WorkloadResult::Parsec {
            runtime_seconds, ..
        } => *runtime_seconds,
        other => panic!("{other:?}"),
    };
    let expected = second_run / 0.005;
    assert!(
        (samples - expected).abs() < 0.1 * expected,
        "{samples} samples for the second run's {second_run} s"
    );
}

/// One grow-then-cold program under a paddr pageout scheme without quota, 12 s into its run,
/// its data compressing `ratio` times in zram (`None`: the device's 3.0).
fn pageout_with_ratio(ratio: Option<f64>) -> tiermem_sim::engine::SimResult {
    let ratio = ratio.map_or(String::new(), |r| format!("compression_ratio = {r}"));
    let text = format!(
        r#"seed = 5
duration = "12s"
{VM_WITH_ZRAM}[[kernel.damon.contexts]]
ops = "paddr"
[[kernel.damon.contexts.schemes]]
action = "pageout"
access_pattern = {{ min_nr_accesses = 0, max_nr_accesses = 0, min_age = 5 }}
[[workloads]]
type = "parsec"
shape = "grow_then_cold"
rss = "32MiB"
cold_frac = 0.9
runtime = "30s"
hot_window = "500ms"
cpu_per_access = "400ns"
harness = "4MiB"
{ratio}
"#
    );
    sim(&text).run(&mut |_| {}).unwrap()
}

/// A program's `compression_ratio` sets what its paged-out data takes in zram's pool (and
/// so what a pageout saves), in place of the device's ratio; its harness memory keeps the
/// device's. The pages paged out stay the same, since the random stream does not depend on it.
#[test]
fn a_programs_compression_ratio_sets_its_zram_pool_use() {
    let default = pageout_with_ratio(None).summary.swap;
    let same = pageout_with_ratio(Some(3.0)).summary.swap;
    let poor = pageout_with_ratio(Some(1.0)).summary.swap;
    let zeros = pageout_with_ratio(Some(1000.0)).summary.swap;
    assert!(default.zram_stored_bytes > 8 << 20, "{default:?}");
    for s in [&same, &poor, &zeros] {
        assert_eq!(s.zram_stored_bytes, default.zram_stored_bytes);
    }
    // Each page takes ceil(4096 / ratio) bytes of the pool. The harness's 1024 pages, touched
    // once at the start, are all paged out by now, at the device's 3.0.
    let pages = default.zram_stored_bytes / PAGE_SIZE;
    let harness = 1024;
    let pool = |per_page: u64| harness * PAGE_SIZE.div_ceil(3) + (pages - harness) * per_page;
    assert_eq!(same.zram_pool_bytes, default.zram_pool_bytes);
    assert_eq!(default.zram_pool_bytes, pool(PAGE_SIZE.div_ceil(3)));
    assert_eq!(poor.zram_pool_bytes, pool(PAGE_SIZE));
    assert_eq!(zeros.zram_pool_bytes, pool(5));
}
