//! The page cache in the simulator: a workload's input files under memory pressure and
//! under DAMON_RECLAIM (docs/page-cache-kernel.md).

use tiermem_core::config::SimConfig;
use tiermem_core::units::PAGE_SIZE;
use tiermem_sim::engine::Simulation;
use tiermem_sim::workload::WorkloadResult;

/// Run a config; the kernel's invariants (page-cache entries and frames included) hold at
/// the end.
fn run(text: &str) -> tiermem_sim::engine::SimResult {
    let cfg = SimConfig::from_toml_str(text, "test.toml").unwrap();
    let mut s = Simulation::new(&cfg).unwrap();
    let r = s.run(&mut |_| {}).unwrap();
    s.kernel.check_invariants().unwrap();
    r
}

/// One 512 MiB node without swap; a program whose input archive (untarred: 2 × 384 MiB of
/// page cache) and RSS (160 MiB) do not fit together.
const PRESSURE: &str = r#"
    duration = "20s"
    [machine]
    name = "one-node"
    [[machine.nodes]]
    id = 0
    kind = "dram"
    capacity = "512MiB"
    cpus = 4
    read_latency = "85ns"
    read_bandwidth = "20GB/s"
    write_bandwidth = "16GB/s"
    [[workloads]]
    type = "parsec"
    shape = "grow_then_cold"
    rss = "160MiB"
    runtime = "4s"
    input = "384MiB"
"#;

/// Reclaim frees clean page cache (the archive, read once; the extracted files once written
/// back) instead of killing the program: no swap, so `get_scan_count` scans file lists only.
#[test]
fn page_cache_is_reclaimed_under_pressure_without_oom() {
    let r = run(PRESSURE);
    assert!(
        r.summary.oom_killed.is_empty(),
        "{:?}",
        r.summary.oom_killed
    );
    let v = &r.summary.vmstat;
    println!(
        "pgscan_file {} pgsteal_file {} pgsteal_anon {} workingset_refault_file {}",
        v["pgscan_file"], v["pgsteal_file"], v["pgsteal_anon"], v["workingset_refault_file"]
    );
    assert!(v["pgsteal_file"] > 0);
    assert_eq!(v["pgsteal_anon"], 0, "no swap: anon is not reclaimed");
    let WorkloadResult::Parsec { complete, .. } = &r.summary.workloads[0] else {
        panic!("not a parsec result")
    };
    assert!(complete);
}

/// Same config and seed, same bytes (the page cache keeps the simulation deterministic).
#[test]
fn page_cache_runs_are_deterministic() {
    let a = run(PRESSURE);
    let b = run(PRESSURE);
    assert_eq!(a.timeline_csv, b.timeline_csv);
    assert_eq!(a.summary.vmstat, b.summary.vmstat);
}

/// DAMON_RECLAIM on the physical address space drops the input's page cache once idle for
/// min_age (clean folios are freed, `pgsteal_file`), which is what lowers the harness's
/// `memused` of a program whose memory is mostly its input files. The extracted copy is
/// written, so dirty until the flusher's first pass after 30 s: within this 12 s run DAMON
/// cannot drop it (`damon_pa_pageout` leaves dirty folios to writeback).
#[test]
fn damon_reclaim_drops_idle_page_cache() {
    let base = r#"
        machine = "small"
        duration = "12s"
        [kernel.zram]
        capacity = "256MiB"
        [[workloads]]
        type = "parsec"
        shape = "sweep"
        rss = "32MiB"
        runtime = "10s"
        input = "256MiB"
    "#;
    let damon = format!(
        "{base}\n[kernel.damon.reclaim]\nenabled = true\nmin_age_us = 1000000\nuse_watermarks = false\nquota_ms = 0\nquota_sz = 0\n"
    );
    let (a, b) = (run(base), run(&damon));
    let used = |r: &tiermem_sim::engine::SimResult| match &r.summary.workloads[0] {
        WorkloadResult::Parsec {
            memused_avg_bytes, ..
        } => memused_avg_bytes.unwrap(),
        _ => panic!("not a parsec result"),
    };
    let (ua, ub) = (used(&a), used(&b));
    // DAMON's pageout counts no pgsteal (reclaim_folio_list); its scheme counts the bytes
    // (a few anonymous pages among them).
    let applied = b.summary.damon[0].schemes[0].stats.sz_applied;
    assert_eq!(b.summary.vmstat["pgsteal_file"], 0);
    let dropped = applied / PAGE_SIZE;
    println!(
        "memused {:.0} → {:.0} MiB, page cache dropped {} MiB",
        ua / 1048576.0,
        ub / 1048576.0,
        (dropped * PAGE_SIZE) >> 20
    );
    // The 512 MiB of page cache (archive and extracted copy) is 94 % of the memory.
    assert!(ua > 400.0 * 1048576.0);
    assert!(
        (256 << 20..(256 + 32) << 20).contains(&(dropped * PAGE_SIZE)),
        "the archive, not the dirty copy: {dropped} pages"
    );
    assert!(ub < 0.7 * ua);
}
