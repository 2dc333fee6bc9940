//! Behaviour tests of the simulated machine: determinism, memory invariants, reclaim.

use proptest::prelude::*;
use tiermem_core::config::SimConfig;
use tiermem_sim::engine::Simulation;
use tiermem_sim::vmstat::Vm;

const MACHINE: &str = r#"
[machine]
name = "tiny"
[[machine.nodes]]
id = 0
cpus = 2
capacity = "64MiB"
kind = "dram"
read_latency = "80ns"
read_bandwidth = "20GB/s"
[[machine.nodes]]
id = 1
capacity = "128MiB"
kind = "cxl"
read_latency = "200ns"
read_bandwidth = "10GB/s"
"#;

fn config(extra: &str) -> SimConfig {
    SimConfig::from_toml_str(&format!("{extra}\n{MACHINE}"), "test.toml").unwrap()
}

fn run(cfg: &SimConfig) -> (Simulation, tiermem_sim::engine::SimResult) {
    let mut sim = Simulation::new(cfg).unwrap();
    let r = sim.run(&mut |_| {}).unwrap();
    (sim, r)
}

#[test]
fn same_seed_gives_byte_identical_summary() {
    let text = "duration = \"300ms\"\n[kernel.zram]\ncapacity = \"256MiB\"\n[[workloads]]\ntype = \"pmbench\"\nprocesses = 2\nmapsize = \"48MiB\"\npattern = \"normal_ih\"\nread_ratio = 80\n";
    let cfg = config(text);
    let a = serde_json::to_string_pretty(&run(&cfg).1.summary).unwrap();
    let b = serde_json::to_string_pretty(&run(&cfg).1.summary).unwrap();
    assert_eq!(a, b);
    let mut other = cfg.clone();
    other.seed = 2;
    let c = serde_json::to_string_pretty(&run(&other).1.summary).unwrap();
    assert_ne!(a, c, "a different seed should change the run");
}

/// Generating pmbench's accesses ahead on producer threads changes nothing: the same
/// summary and timeline, byte for byte, as generating them inline.
#[test]
fn generating_ahead_gives_byte_identical_results() {
    use tiermem_sim::engine::RunOptions;
    let text = "duration = \"400ms\"\n[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n[[workloads]]\ntype = \"pmbench\"\nprocesses = 2\nthreads = 2\nmapsize = \"40MiB\"\npattern = \"normal_ih\"\nread_ratio = 80\ninitialize = true\n";
    let cfg = config(text);
    let outcome = |generate_ahead: bool| {
        let mut sim = Simulation::new_with(&cfg, RunOptions { generate_ahead }).unwrap();
        let r = sim.run(&mut |_| {}).unwrap();
        (
            serde_json::to_string_pretty(&r.summary).unwrap(),
            r.timeline_csv,
        )
    };
    let inline = outcome(false);
    assert!(inline.0.contains("\"accesses\""), "{}", inline.0);
    assert_eq!(outcome(true), inline);
}

#[test]
fn workload_larger_than_fast_node_fills_it_to_the_low_watermark_and_spills() {
    // Default (local) policy: the fast path takes node 0 down to its low watermark, then
    // falls back along the zonelist to node 1 without waking node 0's kswapd.
    let cfg = config("duration = \"500ms\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"120MiB\"\ninitialize = true\ncold = true\n");
    let (sim, r) = run(&cfg);
    sim.kernel.check_invariants().unwrap();
    // Each zone of node 0 (DMA and DMA32 on this small node) is taken down to its low
    // watermark plus its lowmem_reserve for user pages, not further.
    for z in &sim.kernel.nodes()[0].zones {
        let reserve = z.lowmem_reserve[tiermem_core::watermarks::ZONE_MOVABLE];
        assert!(
            z.free <= z.wmark.low + reserve + 1 && z.free > z.wmark.min,
            "zone {} free {} not at low {:?} + reserve {reserve}",
            z.idx,
            z.free,
            z.wmark
        );
    }
    assert!(
        r.summary.nodes[1].used_bytes > 50 << 20,
        "the rest spills to node 1"
    );
    assert_eq!(
        sim.kernel.vmstat().total(Vm::Pageoutrun),
        0,
        "kswapd is not woken by fallback allocations"
    );
    assert!(sim.kernel.vmstat().total(Vm::NumaMiss) > 0);
}

#[test]
fn kswapd_keeps_free_pages_between_min_and_high_under_bind() {
    // Bound to node 0 with zram: allocations fail the low watermark, kswapd wakes and
    // reclaims to high; free pages stay above min (direct reclaim is rare).
    let cfg = config(
        "duration = \"2s\"\n[sim]\nsample_interval = \"10ms\"\n[kernel.zram]\ncapacity = \"256MiB\"\n\
         [[workloads]]\ntype = \"pmbench\"\nmapsize = \"100MiB\"\ninitialize = true\ncold = true\npattern = \"uniform\"\n\
         policy = { mode = \"bind\", nodes = [0] }\n",
    );
    let (sim, r) = run(&cfg);
    sim.kernel.check_invariants().unwrap();
    let w = sim.kernel.nodes()[0].wmark;
    assert!(
        sim.kernel.vmstat().total(Vm::Pageoutrun) > 0,
        "kswapd was woken"
    );
    assert!(sim.kernel.vmstat().total(Vm::PgstealKswapd) > 0);
    assert!(sim.kernel.vmstat().total(Vm::Pswpout) > 0);
    assert!(r.summary.swap.zram_stored_bytes > 0);
    assert_eq!(
        r.summary.nodes[1].used_bytes, 0,
        "bind keeps pages off node 1"
    );
    // Sampled free pages of node 0 (after it first filled) stay within [min, high + one
    // kswapd pass]: balance is checked between kswapd_shrink_node passes of
    // max(high, SWAP_CLUSTER_MAX) pages, so kswapd overshoots high by up to one pass.
    let lines: Vec<&str> = r.timeline_csv.lines().collect();
    let head: Vec<&str> = lines[0].split(',').collect();
    let col = head.iter().position(|h| *h == "node0_free_pages").unwrap();
    let frees: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    // kswapd checks balance between kswapd_shrink_node passes of max(high, SWAP_CLUSTER_MAX)
    // pages, so it overshoots high by up to one pass.
    let pass = w.high.max(32) + 32;
    let filled: Vec<u64> = frees
        .into_iter()
        .skip_while(|&f| f > w.high + pass)
        .collect();
    assert!(filled.len() > 20);
    // Free pages dip below the node's summed min by up to a reclaim batch: zram's pool pages
    // are allocated from kswapd's reclaim context (PF_MEMALLOC) without a watermark, and
    // kswapd stops as soon as one zone (here the DMA zone) is balanced.
    for f in &filled {
        assert!(
            *f + 2 * 32 >= w.min && *f <= w.high + pass,
            "free {f} outside [min {}, high {} + pass {pass}]",
            w.min,
            w.high
        );
    }
    // Most of the time free pages sit at or above low.
    let inside = filled.iter().filter(|&&f| f >= w.low).count();
    assert!(
        inside * 10 >= filled.len() * 7,
        "{inside} of {} samples at or above low",
        filled.len()
    );
}

#[test]
fn demotion_moves_cold_pages_down_instead_of_swapping() {
    // Bound to node 0, no swap: kswapd of node 0 wakes in the slow path and demotes cold
    // pages to node 1 (demotion ignores the memory policy, as migrate_pages(MR_DEMOTION)
    // does), so the 100 MiB workload fits without swap or OOM.
    let cfg = config(
        "duration = \"1s\"\n[kernel]\ndemotion_enabled = true\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"100MiB\"\n\
         initialize = true\ncold = true\npolicy = { mode = \"bind\", nodes = [0] }\n",
    );
    let (sim, r) = run(&cfg);
    sim.kernel.check_invariants().unwrap();
    assert!(sim.kernel.vmstat().total(Vm::PgdemoteKswapd) > 0);
    assert_eq!(sim.kernel.vmstat().total(Vm::Pswpout), 0);
    assert!(r.summary.oom_killed.is_empty());
    assert!(
        r.summary.nodes[1].used_bytes > 30 << 20,
        "demoted pages live on node 1"
    );
    assert_eq!(
        sim.kernel.vmstat().total(Vm::PgmigrateSuccess),
        sim.kernel.vmstat().total(Vm::PgdemoteKswapd)
            + sim.kernel.vmstat().total(Vm::PgdemoteDirect)
    );
    // Without demotion the same run has nowhere to go.
    let mut off = cfg.clone();
    off.kernel.demotion_enabled = false;
    let (_, r) = run(&off);
    assert_eq!(r.summary.oom_killed.len(), 1);
}

#[test]
fn no_space_anywhere_swaps_to_zram_then_ooms_without_it() {
    let big =
        "[[workloads]]\ntype = \"pmbench\"\nmapsize = \"260MiB\"\ninitialize = true\ncold = true\n";
    let (sim, r) = run(&config(&format!(
        "duration = \"2s\"\n[kernel.zram]\ncapacity = \"512MiB\"\n{big}"
    )));
    sim.kernel.check_invariants().unwrap();
    assert!(r.summary.oom_killed.is_empty());
    assert!(sim.kernel.vmstat().total(Vm::Pswpout) > 0);
    let (sim, r) = run(&config(&format!("duration = \"2s\"\n{big}")));
    sim.kernel.check_invariants().unwrap();
    assert_eq!(
        r.summary.oom_killed.len(),
        1,
        "without swap the process is OOM-killed"
    );
    assert_eq!(sim.kernel.vmstat().total(Vm::OomKill), 1);
}

#[test]
fn swap_device_refaults_are_major_faults() {
    let cfg = config(
        "duration = \"2s\"\n[kernel.swap]\ncapacity = \"512MiB\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"100MiB\"\n\
         initialize = true\ncold = true\npattern = \"uniform\"\npolicy = { mode = \"bind\", nodes = [0] }\n",
    );
    let (sim, r) = run(&cfg);
    sim.kernel.check_invariants().unwrap();
    assert!(sim.kernel.vmstat().total(Vm::Pswpin) > 0);
    assert_eq!(
        sim.kernel.vmstat().total(Vm::Pswpin),
        sim.kernel.vmstat().total(Vm::Pgmajfault)
    );
    assert!(r.summary.swap.swap_used_bytes > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Pages on nodes + swap + zram = pages mapped; every PTE maps exactly one frame owned
    /// by it; free counts add up (never negative) — after runs of random shapes.
    #[test]
    fn memory_invariants_hold(
        mapsize_mib in 8u64..300,
        procs in 1u32..3,
        policy in 0u8..3,
        zram in any::<bool>(),
        swap in any::<bool>(),
        demotion in any::<bool>(),
        pattern in 0u8..3,
        seed in 0u64..1000,
    ) {
        let pol = match policy {
            0 => "{ mode = \"default\" }",
            1 => "{ mode = \"bind\", nodes = [0] }",
            _ => "{ mode = \"preferred\", nodes = [1] }",
        };
        let pat = ["uniform", "normal_ih", "pareto"][pattern as usize];
        let mut text = format!("seed = {seed}\nduration = \"300ms\"\n[kernel]\ndemotion_enabled = {demotion}\n");
        if zram { text.push_str("[kernel.zram]\ncapacity = \"64MiB\"\n"); }
        if swap { text.push_str("[kernel.swap]\ncapacity = \"64MiB\"\n"); }
        text.push_str(&format!(
            "[[workloads]]\ntype = \"pmbench\"\nprocesses = {procs}\nmapsize = \"{mapsize_mib}MiB\"\npattern = \"{pat}\"\ninitialize = true\ncold = true\npolicy = {pol}\n"));
        let cfg = config(&text);
        let (sim, r) = run(&cfg);
        prop_assert!(sim.kernel.check_invariants().is_ok(), "{:?}", sim.kernel.check_invariants());
        for n in sim.kernel.nodes() {
            prop_assert!(n.free <= n.present);
        }
        prop_assert!(r.summary.accesses > 0);
    }
}

/// Seed 002's directions on the calibrated machines, at a small scale: on a STREAM machine
/// with ~9:1 DRAM:CXL bandwidth, default 1:1 interleave is far below DRAM only and
/// weighted 9:1 within ±10 % of it.
#[test]
fn weighted_interleave_directions_on_the_stream_machine() {
    let run = |policy: &str, kernel: &str| -> f64 {
        let text = format!(
            "machine = \"ddr5-cxl\"\nduration = \"2s\"\n[sim]\ntick = \"50us\"\n{kernel}\n\
             [[workloads]]\ntype = \"stream\"\narray_elements = 4000000\nthreads = 64\nntimes = 3\n\
             nt_stores = true\npolicy = {{ {policy} }}\n"
        );
        let out = tiermem_sim::run_config_text(&text, "t.toml", None, None).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out.summary_json).unwrap();
        v["workloads"][0]["triad_mbps"].as_f64().unwrap()
    };
    let dram = run("mode = \"bind\", nodes = [0]", "");
    let il = run("mode = \"interleave\", nodes = [0, 1]", "");
    let wi = run(
        "mode = \"weighted_interleave\", nodes = [0, 1]",
        "[kernel.weighted_interleave]\nsemantics = \"6.9\"\nweights = [9, 1]",
    );
    assert!(il < 0.35 * dram, "interleave {il} vs dram {dram}");
    assert!(
        (wi / dram - 1.0).abs() < 0.10,
        "weighted {wi} vs dram {dram}"
    );
}

/// XSBench runs to completion and is deterministic.
#[test]
fn xsbench_is_deterministic() {
    let text = "machine = \"small\"\nduration = \"2s\"\n[[workloads]]\ntype = \"xsbench\"\nsize = \"small\"\n\
                gridpoints = 500\nthreads = 2\nlookups = 2000\npolicy = { mode = \"weighted_interleave\", nodes = [0, 1] }\n";
    let a = tiermem_sim::run_config_text(text, "t.toml", None, None).unwrap();
    let b = tiermem_sim::run_config_text(text, "t.toml", None, None).unwrap();
    assert_eq!(a.summary_json, b.summary_json);
    let v: serde_json::Value = serde_json::from_str(&a.summary_json).unwrap();
    assert_eq!(v["workloads"][0]["complete"], true);
    assert!(v["workloads"][0]["lookups_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["vmstat"]["numa_interleave"].as_u64().unwrap() > 0);
}
