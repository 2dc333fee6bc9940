//! DAMON in the simulator: monitoring accuracy on known hot regions, the overhead bound,
//! DAMON_RECLAIM, tiering, and coexistence with reclaim's accessed-bit checks.

use tiermem_core::config::SimConfig;
use tiermem_core::damon_workloads::HotRegionsConfig;
use tiermem_core::units::PAGE_SIZE;
use tiermem_sim::engine::Simulation;

fn sim(text: &str) -> Simulation {
    let cfg = SimConfig::from_toml_str(text, "test.toml").unwrap();
    Simulation::new(&cfg).unwrap()
}

/// Precision and recall, by bytes, of DAMON's hot regions (last window's `nr_accesses` at
/// least a quarter of the maximum) against the workload's true hot pages.
fn accuracy(s: &Simulation, w: &HotRegionsConfig) -> (f64, f64) {
    let k = &s.kdamonds[0];
    let vma = &s.kernel.procs[0].vmas[0];
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

fn overhead_run(capacity: &str) -> (u64, u64, usize) {
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
        hot = [{{ offset = "64MiB", size = "16MiB" }}]
        [[kernel.damon.contexts]]
        ops = "paddr"
    "#
    );
    let mut s = sim(&text);
    s.run(&mut |_| {}).unwrap();
    let k = &s.kdamonds[0];
    (
        k.ctx.counters.max_checks_per_sample,
        k.ctx.counters.samples,
        k.ctx.nr_regions(),
    )
}

#[test]
fn access_checks_per_sample_never_exceed_max_nr_regions_whatever_the_memory_size() {
    for cap in ["1GiB", "64GiB"] {
        let (max_checks, samples, nr) = overhead_run(cap);
        println!("{cap}: {samples} samples, at most {max_checks} checks per sample, {nr} regions");
        assert!(samples > 100);
        assert!(max_checks <= 1000, "{cap}: {max_checks}");
        assert!(nr >= 10, "{cap}: {nr}");
    }
}
