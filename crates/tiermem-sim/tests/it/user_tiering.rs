//! The live agent's user-space tiering controller in the simulator, on the example policy
//! `configs/examples/user-tiering.toml`: it promotes the hot set within its rate limit and
//! demotes the idle region once it has been idle for `cold_min_age`, within its quota.

use tiermem_core::config::SimConfig;

const EXAMPLE: &str = include_str!("../../../../configs/examples/user-tiering.toml");

/// (time, column) series of a timeline CSV.
fn column(csv: &str, name: &str) -> Vec<(f64, f64)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let c = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[c].parse().unwrap())
        })
        .collect()
}

#[test]
fn the_agents_controller_promotes_within_its_rate_and_demotes_idle_memory() {
    let cfg = SimConfig::from_toml_str(EXAMPLE, "user-tiering.toml").unwrap();
    let out = tiermem_sim::run_config(&cfg).unwrap();
    let csv = &out.timeline_csv;
    let hot_n0 = column(csv, "app.hot.N0");
    let promoted = column(csv, "tiering_promoted_bytes");
    let (_, last) = *promoted.last().unwrap();
    assert!(last > 0.0, "the hot set is promoted: {promoted:?}");
    // 16 MB/s per fast node, one second's budget at most at once: never more than the rate
    // times the time elapsed since the controller's first tick (at 1 s), plus one budget.
    let rate = 16.0 * 1024.0 * 1024.0;
    for &(t, b) in &promoted {
        assert!(b <= rate * (t - 1.0).max(0.0) + rate, "{b} bytes by {t} s");
    }
    assert_eq!(
        hot_n0.last().unwrap().1 * 4096.0,
        last,
        "every promoted byte is a hot page now on node 0"
    );
    // The cold region (256 MiB, idle from the start) goes to node 1 after 5 s idle, at
    // most 64 MiB a second.
    let cold_n1 = column(csv, "app.cold.N1");
    for &(t, pages) in &cold_n1 {
        let bytes = pages * 4096.0;
        if t < 5.0 {
            assert_eq!(bytes, 0.0, "nothing demoted before cold_min_age ({t} s)");
        }
        assert!(bytes <= 64.0 * 1024.0 * 1024.0 * (t - 4.0).max(0.0) + 1.0);
    }
    assert!(
        cold_n1.last().unwrap().1 > 0.0,
        "the idle region is demoted"
    );
    // move_pages migrations are counted as the kernel counts them, promotions not as
    // NUMA-balancing promotions.
    let migrated = column(csv, "pgmigrate_success").last().unwrap().1;
    assert!(migrated * 4096.0 >= last);
    assert_eq!(column(csv, "pgpromote_success").last().unwrap().1, 0.0);
}

#[test]
fn simulated_targets_are_workloads_by_name() {
    let bad = |from: &str, to: &str, key: &str| {
        let text = EXAMPLE.replace(from, to);
        let e = SimConfig::from_toml_str(&text, "t.toml").unwrap_err();
        assert!(e.to_string().contains(key), "{e}");
    };
    bad(
        "targets = { names = [\"app\"] }",
        "targets = { pids = [1] }",
        "tiering.targets.pids",
    );
    bad(
        "names = [\"app\"]",
        "names = [\"db*\"]",
        "tiering.targets.names",
    );
    bad("numa_balancing = 0 ", "numa_balancing = 2 ", "tiering");
    bad(
        "hot_threshold_permil = 100",
        "hot_threshold_permil = 0",
        "tiering.hot_threshold_permil",
    );
}

/// The agent's `[reclaim.processes]`, simulated: its DAMOS `pageout` kdamond over the
/// target workload swaps out the region idle for `min_age` and leaves the hot one.
#[test]
fn process_reclaim_pages_out_the_idle_region() {
    let text = r#"
duration = "10s"
machine = "small"
[kernel.zram]
capacity = "1GiB"
[sim]
sample_interval = "500ms"
[[workloads]]
type = "synthetic"
name = "app"
cpu_node = 0
[[workloads.regions]]
name = "cold"
size = "256MiB"
place = { mode = "bind", nodes = [0] }
[[workloads.regions]]
name = "hot"
size = "64MiB"
place = { mode = "bind", nodes = [0] }
pattern = "uniform"
rate = 200000
[reclaim.processes]
targets = { names = ["app"] }
min_age = "2s"
quota = "1GiB"
wmarks_high = 1000
wmarks_mid = 999
wmarks_low = 0
attrs = { sample_us = 5000, aggr_us = 100000, min_nr_regions = 10, max_nr_regions = 1000 }
"#;
    let cfg = SimConfig::from_toml_str(text, "reclaim.toml").unwrap();
    let out = tiermem_sim::run_config(&cfg).unwrap();
    let csv = &out.timeline_csv;
    let cold = column(csv, "app.cold.N0");
    let hot = column(csv, "app.hot.N0");
    assert_eq!(cold[0].1, 65536.0);
    assert!(
        cold.iter().all(|&(t, p)| t >= 2.0 || p == 65536.0),
        "nothing before min_age"
    );
    assert_eq!(
        cold.last().unwrap().1,
        0.0,
        "the idle region is swapped out: {cold:?}"
    );
    assert_eq!(hot.last().unwrap().1, 16384.0, "the hot region stays");
    assert!(column(csv, "pswpout").last().unwrap().1 >= 65536.0);
    // cgroup memory.reclaim writes have no simulated counterpart.
    let e = SimConfig::from_toml_str(
        &format!("{text}\n[[reclaim.cgroups]]\npath = \"/sys/fs/cgroup/x\"\nbytes = \"1MiB\"\n"),
        "t.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("reclaim.cgroups"), "{e}");
}

#[test]
fn every_tiering_column_is_a_controller_statistic() {
    let s = tiermem_policy::tiering::ControllerStats::default();
    for name in tiermem_core::timeline::TIERING_STATS {
        assert!(s.get(name).is_some(), "{name}");
    }
}
