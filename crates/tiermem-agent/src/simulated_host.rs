//! A simulated host: the `/proc` and `/sys` files of a Linux 6.12 machine with DRAM and a
//! CPU-less CXL node, written into a directory, for `tiermem agent --simulate` (anyone can
//! watch the agent plan, apply, serve metrics and restore without root or a tiered
//! machine) and for the crate's tests.
//!
//! The tree holds what the agent reads and writes on such a host: the two nodes with their
//! HMAT access coordinates and memory tiers, NUMA balancing and its debugfs knobs,
//! demotion, weighted interleave (6.12: no `auto` file), KSM, DAMON sysfs with room for
//! four kdamonds (one context of four targets and four schemes each), the DAMON_RECLAIM and
//! DAMON_LRU_SORT parameters of 6.12, a cgroup v2 `batch.slice` with `memory.reclaim`, and
//! `/proc/vmstat`, `/proc/zoneinfo` and `/proc/iomem`. No process is in its `/proc`, so
//! the agent's process targets resolve to nothing and no syscall is made on a real
//! process.
//!
//! Files are plain files, so a write reads back as written, as most sysfs files do. What
//! the kernel would do besides, [`SimulatedKernel`] does from a thread: a command written
//! to a kdamond's `state` completes and the file reads `on` again, a kdamond turned on gets
//! a pid, its schemes' statistics grow, and the NUMA-balancing and KSM counters advance by
//! fixed steps while those mechanisms are on. The steps model nothing (no memory is
//! simulated here: `tiermem sim` is the simulator); they are there so that metrics move.
//! The kernel removes a kdamond's directories when `nr_kdamonds` drops; here they stay, and
//! [`changed_files`] leaves them out while `nr_kdamonds` is 0.

use crate::damon::KDAMONDS;
use crate::host::{
    DAMON_ADMIN, DEBUGFS_NB, DEMOTION_ENABLED, KSM_DIR, NODE_DIR, NUMA_BALANCING,
    PROMOTE_RATE_LIMIT, TIER_DIR, WATERMARK_SCALE_FACTOR, WI_DIR,
};
use crate::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The kernel release the simulated host reports.
pub const KERNEL_RELEASE: &str = "6.12.117+deb12-amd64";
/// kdamonds, and targets and schemes per context, the tree has directories for.
pub const KDAMOND_SLOTS: usize = 4;
/// The cgroup the tree has (`/sys/fs/cgroup/batch.slice`), as the example config names it.
pub const CGROUP: &str = "/sys/fs/cgroup/batch.slice";

/// The files of the two-node machine (DRAM node 0 with CPUs 0-1, CPU-less CXL node 1,
/// 1 GiB each, HMAT figures for both access classes) and its kernel settings at their
/// defaults: path (absolute, as on the host) and content.
pub fn two_node_files() -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = [
        ("/proc/sys/kernel/osrelease", format!("{KERNEL_RELEASE}\n")),
        (&format!("{NODE_DIR}/online"), "0-1\n".into()),
        (&format!("{NODE_DIR}/possible"), "0-1\n".into()),
        (&format!("{NODE_DIR}/has_memory"), "0-1\n".into()),
        (&format!("{NODE_DIR}/has_cpu"), "0\n".into()),
        (&format!("{NODE_DIR}/node0/cpulist"), "0-1\n".into()),
        (&format!("{NODE_DIR}/node1/cpulist"), "\n".into()),
        (
            &format!("{NODE_DIR}/node0/meminfo"),
            "Node 0 MemTotal:        1048576 kB\nNode 0 MemFree:          524288 kB\n".into(),
        ),
        (
            &format!("{NODE_DIR}/node1/meminfo"),
            "Node 1 MemTotal:        1048576 kB\nNode 1 MemFree:         1000000 kB\n".into(),
        ),
        (&format!("{NODE_DIR}/node0/distance"), "10 20\n".into()),
        (&format!("{NODE_DIR}/node1/distance"), "20 10\n".into()),
        (&format!("{TIER_DIR}/memory_tier4/nodelist"), "0\n".into()),
        (&format!("{TIER_DIR}/memory_tier22/nodelist"), "1\n".into()),
        (NUMA_BALANCING, "0\n".into()),
        (PROMOTE_RATE_LIMIT, "65536\n".into()),
        (DEMOTION_ENABLED, "false\n".into()),
        (WATERMARK_SCALE_FACTOR, "10\n".into()),
        (&format!("{DEBUGFS_NB}/hot_threshold_ms"), "1000\n".into()),
        (&format!("{DEBUGFS_NB}/scan_delay_ms"), "1000\n".into()),
        (&format!("{DEBUGFS_NB}/scan_period_min_ms"), "1000\n".into()),
        (&format!("{DEBUGFS_NB}/scan_period_max_ms"), "60000\n".into()),
        (&format!("{DEBUGFS_NB}/scan_size_mb"), "256\n".into()),
        (&format!("{WI_DIR}/node0"), "1\n".into()),
        (&format!("{WI_DIR}/node1"), "1\n".into()),
        (&format!("{KSM_DIR}/run"), "0\n".into()),
        (&format!("{KSM_DIR}/merge_across_nodes"), "1\n".into()),
        (&format!("{KSM_DIR}/pages_to_scan"), "100\n".into()),
        (&format!("{KSM_DIR}/sleep_millisecs"), "20\n".into()),
        (&format!("{KSM_DIR}/pages_shared"), "0\n".into()),
        (&format!("{KSM_DIR}/pages_sharing"), "0\n".into()),
        (&format!("{DAMON_ADMIN}/kdamonds/nr_kdamonds"), "0\n".into()),
        ("/sys/module/damon_reclaim/parameters/enabled", "N\n".into()),
        (
            "/sys/module/damon_reclaim/parameters/min_age",
            "120000000\n".into(),
        ),
        (
            "/sys/module/damon_reclaim/parameters/quota_sz",
            "134217728\n".into(),
        ),
        ("/sys/module/damon_lru_sort/parameters/enabled", "N\n".into()),
        (
            "/proc/vmstat",
            "pgpromote_success 0\npgdemote_kswapd 0\nnuma_pages_migrated 0\n".into(),
        ),
        (
            "/proc/zoneinfo",
            "Node 0, zone   Normal\n  pages free     131072\n        min      1000\n        low      1250\n        high     1500\n        promo    1750\n".into(),
        ),
        (
            "/proc/self/status",
            "Name:\ttiermem\nCapEff:\t000001ffffffffff\n".into(),
        ),
    ]
    .into_iter()
    .map(|(p, v)| (p.to_string(), v))
    .collect();
    for (node, rb, wb, rl, wl) in [(0, 20000, 20000, 80, 80), (1, 5000, 5000, 240, 240)] {
        for class in [0, 1] {
            let d = format!("{NODE_DIR}/node{node}/access{class}/initiators");
            f.push((format!("{d}/read_bandwidth"), format!("{rb}\n")));
            f.push((format!("{d}/write_bandwidth"), format!("{wb}\n")));
            f.push((format!("{d}/read_latency"), format!("{rl}\n")));
            f.push((format!("{d}/write_latency"), format!("{wl}\n")));
        }
    }
    f
}

/// The directories of [`two_node_files`] that are links to initiator nodes on a host
/// (`accessN/initiators/node0`): empty directories here.
pub fn two_node_dirs() -> Vec<String> {
    (0..2)
        .flat_map(|node| {
            (0..2).map(move |class| format!("{NODE_DIR}/node{node}/access{class}/initiators/node0"))
        })
        .collect()
}

/// The files of one Linux 6.12 DAMON sysfs kdamond `k` with one context, `targets`
/// targets of `regions` regions, `schemes` schemes of one quota goal and one filter each
/// (`mm/damon/sysfs.c`, `sysfs-schemes.c`), all reading `0`.
pub fn kdamond_files_6_12(k: usize, targets: usize, regions: usize, schemes: usize) -> Vec<String> {
    let kd = format!("{KDAMONDS}/{k}");
    let c = format!("{kd}/contexts/0");
    let mut files = vec![
        format!("{kd}/state"),
        format!("{kd}/pid"),
        format!("{kd}/contexts/nr_contexts"),
        format!("{c}/operations"),
        format!("{c}/targets/nr_targets"),
        format!("{c}/schemes/nr_schemes"),
    ];
    for f in ["sample_us", "aggr_us", "update_us"] {
        files.push(format!("{c}/monitoring_attrs/intervals/{f}"));
    }
    for f in ["min", "max"] {
        files.push(format!("{c}/monitoring_attrs/nr_regions/{f}"));
    }
    for t in 0..targets {
        let td = format!("{c}/targets/{t}");
        files.push(format!("{td}/pid_target"));
        files.push(format!("{td}/regions/nr_regions"));
        for r in 0..regions {
            files.push(format!("{td}/regions/{r}/start"));
            files.push(format!("{td}/regions/{r}/end"));
        }
    }
    for i in 0..schemes {
        let s = format!("{c}/schemes/{i}");
        for f in ["min", "max"] {
            for r in ["sz", "nr_accesses", "age"] {
                files.push(format!("{s}/access_pattern/{r}/{f}"));
            }
        }
        for f in [
            "action",
            "target_nid",
            "apply_interval_us",
            "quotas/ms",
            "quotas/bytes",
            "quotas/reset_interval_ms",
            "quotas/effective_bytes",
            "quotas/weights/sz_permil",
            "quotas/weights/nr_accesses_permil",
            "quotas/weights/age_permil",
            "quotas/goals/nr_goals",
            "quotas/goals/0/target_metric",
            "quotas/goals/0/target_value",
            "quotas/goals/0/current_value",
            "watermarks/metric",
            "watermarks/interval_us",
            "watermarks/high",
            "watermarks/mid",
            "watermarks/low",
            "filters/nr_filters",
            "filters/0/type",
            "filters/0/matching",
            "filters/0/memcg_path",
            "filters/0/addr_start",
            "filters/0/addr_end",
            "filters/0/damon_target_idx",
            "stats/nr_tried",
            "stats/sz_tried",
            "stats/nr_applied",
            "stats/sz_applied",
            "stats/qt_exceeds",
            "tried_regions/total_bytes",
        ] {
            files.push(format!("{s}/{f}"));
        }
    }
    files
}

/// DAMON_RECLAIM's and DAMON_LRU_SORT's parameters in Linux 6.12 with their defaults
/// (`mm/damon/reclaim.c`, `lru_sort.c`, `modules-common.h`), beside those of
/// [`two_node_files`].
fn damon_module_files() -> Vec<(String, String)> {
    let common = [
        ("sample_interval", "5000"),
        ("aggr_interval", "100000"),
        ("min_nr_regions", "10"),
        ("max_nr_regions", "1000"),
        ("monitor_region_start", "0"),
        ("monitor_region_end", "0"),
        ("wmarks_interval", "5000000"),
        ("kdamond_pid", "-1"),
        ("commit_inputs", "N"),
    ];
    let reclaim = [
        ("quota_ms", "10"),
        ("quota_reset_interval_ms", "1000"),
        ("quota_mem_pressure_us", "0"),
        ("quota_autotune_feedback", "0"),
        ("skip_anon", "N"),
        ("wmarks_high", "500"),
        ("wmarks_mid", "400"),
        ("wmarks_low", "200"),
        ("nr_reclaim_tried_regions", "0"),
        ("bytes_reclaim_tried_regions", "0"),
        ("nr_reclaimed_regions", "0"),
        ("bytes_reclaimed_regions", "0"),
        ("nr_quota_exceeds", "0"),
    ];
    let lru_sort = [
        ("hot_thres_access_freq", "500"),
        ("cold_min_age", "120000000"),
        ("quota_ms", "10"),
        ("quota_reset_interval_ms", "1000"),
        ("wmarks_high", "200"),
        ("wmarks_mid", "150"),
        ("wmarks_low", "50"),
        ("nr_lru_sort_tried_hot_regions", "0"),
        ("bytes_lru_sort_tried_hot_regions", "0"),
        ("nr_lru_sorted_hot_regions", "0"),
        ("bytes_lru_sorted_hot_regions", "0"),
        ("nr_hot_quota_exceeds", "0"),
        ("nr_lru_sort_tried_cold_regions", "0"),
        ("bytes_lru_sort_tried_cold_regions", "0"),
        ("nr_lru_sorted_cold_regions", "0"),
        ("bytes_lru_sorted_cold_regions", "0"),
        ("nr_cold_quota_exceeds", "0"),
    ];
    let mut f = Vec::new();
    for (module, own) in [
        ("damon_reclaim", &reclaim[..]),
        ("damon_lru_sort", &lru_sort[..]),
    ] {
        for (k, v) in common.iter().chain(own) {
            f.push((
                format!("/sys/module/{module}/parameters/{k}"),
                format!("{v}\n"),
            ));
        }
    }
    f
}

/// Every file of the simulated host (see the module doc).
pub fn all_files() -> Vec<(String, String)> {
    let mut f = two_node_files();
    f.extend(damon_module_files());
    for k in 0..KDAMOND_SLOTS {
        for p in kdamond_files_6_12(k, KDAMOND_SLOTS, KDAMOND_SLOTS, KDAMOND_SLOTS) {
            let v = if p.ends_with("/state") { "off" } else { "0" };
            f.push((p, format!("{v}\n")));
        }
    }
    f.extend(
        [
            ("/sys/kernel/mm/ksm/full_scans", "0"),
            ("/sys/kernel/mm/ksm/pages_unshared", "0"),
            ("/sys/kernel/mm/ksm/pages_volatile", "0"),
            ("/sys/kernel/mm/ksm/max_page_sharing", "256"),
            ("/sys/kernel/mm/ksm/stable_node_chains_prune_millisecs", "2000"),
            ("/sys/kernel/mm/ksm/use_zero_pages", "0"),
            ("/sys/kernel/mm/ksm/smart_scan", "1"),
            ("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids"),
            ("/sys/fs/cgroup/batch.slice/cgroup.procs", ""),
            ("/sys/fs/cgroup/batch.slice/memory.reclaim", ""),
            ("/sys/fs/cgroup/batch.slice/memory.current", "268435456"),
            (
                "/proc/iomem",
                "00000000-00000fff : Reserved\n00100000-7fffffff : System RAM\n100000000-17fffffff : System RAM\n",
            ),
        ]
        .into_iter()
        .map(|(p, v)| (p.to_string(), format!("{v}\n"))),
    );
    f
}

/// Write `files` (and `dirs`) under `root`.
pub fn write_tree(root: &Path, files: &[(String, String)], dirs: &[String]) -> Result<(), Error> {
    for d in dirs {
        let p = root.join(d.trim_start_matches('/'));
        std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, "create", e))?;
    }
    for (k, v) in files {
        let p = root.join(k.trim_start_matches('/'));
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "create", e))?;
        }
        std::fs::write(&p, v).map_err(|e| Error::io(&p, "write", e))?;
    }
    Ok(())
}

/// Write the whole simulated host under `root` (which must be empty or absent).
pub fn create(root: &Path) -> Result<(), Error> {
    if std::fs::read_dir(root).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::Other(format!(
            "{}: not empty; the simulated host is written into an empty directory",
            root.display()
        )));
    }
    write_tree(root, &all_files(), &two_node_dirs())
}

/// Every regular file under `root`, by its host path, with its content.
pub fn snapshot(root: &Path) -> Result<BTreeMap<String, String>, Error> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<(), Error> {
        let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "read", e))?;
        for e in rd {
            let e = e.map_err(|e| Error::io(dir, "read", e))?;
            let p = e.path();
            let ft = e.file_type().map_err(|er| Error::io(&p, "stat", er))?;
            if ft.is_dir() {
                walk(root, &p, out)?;
            } else if ft.is_file() {
                let text = std::fs::read_to_string(&p).map_err(|er| Error::io(&p, "read", er))?;
                let rel = p.strip_prefix(root).unwrap_or(&p);
                out.insert(format!("/{}", rel.display()), text);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out)?;
    Ok(out)
}

/// A file whose content differs between two snapshots (`None`: absent in that one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What differs from `before` to `after`, leaving out what the simulated kernel changes on
/// its own (counters, kdamond pids and statistics) and `ignore_prefix` (the agent's state
/// file directory). While `nr_kdamonds` reads 0 in `after`, the kdamond directories are
/// left out too: on a host the kernel has removed them.
pub fn changed_files(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    ignore_prefix: Option<&str>,
) -> Vec<Change> {
    let no_kdamonds = after
        .get(&format!("{KDAMONDS}/nr_kdamonds"))
        .is_some_and(|v| v.trim() == "0");
    let kernel_owned = |p: &str| {
        KERNEL_COUNTERS.contains(&p)
            || ignore_prefix.is_some_and(|i| p.starts_with(i))
            || p.strip_prefix(KDAMONDS).is_some_and(|rest| {
                let sub = rest.trim_start_matches('/');
                sub.contains('/')
                    && (no_kdamonds
                        || sub.ends_with("/pid")
                        || sub.contains("/stats/")
                        || sub.contains("/tried_regions/"))
            })
    };
    let paths: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter(|p| !kernel_owned(p))
        .filter_map(|p| {
            let (b, a) = (before.get(p), after.get(p));
            (b.map(|s| s.trim()) != a.map(|s| s.trim())).then(|| Change {
                path: p.clone(),
                before: b.cloned(),
                after: a.cloned(),
            })
        })
        .collect()
}

/// The counters [`SimulatedKernel`] advances.
const KERNEL_COUNTERS: &[&str] = &[
    "/proc/vmstat",
    "/sys/kernel/mm/ksm/full_scans",
    "/sys/kernel/mm/ksm/pages_shared",
    "/sys/kernel/mm/ksm/pages_sharing",
];

/// The commands a kdamond's `state` file takes besides `on` and `off` (6.12); each
/// completes at once here and the file reads `on` again.
const STATE_COMMANDS: &[&str] = &[
    "commit",
    "commit_schemes_quota_goals",
    "update_schemes_stats",
    "update_schemes_tried_bytes",
    "update_schemes_tried_regions",
    "clear_schemes_tried_regions",
    "update_schemes_effective_quotas",
];

/// The kernel side of the simulated host, on a thread of its own until dropped.
pub struct SimulatedKernel {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One step of the simulated kernel every this long.
const KERNEL_STEP: Duration = Duration::from_millis(10);

impl SimulatedKernel {
    pub fn start(root: PathBuf) -> Result<Self, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("simulated-kernel".into())
            .spawn(move || {
                let mut step = 0u64;
                while !s.load(Ordering::Relaxed) {
                    kernel_step(&root, step);
                    step += 1;
                    std::thread::sleep(KERNEL_STEP);
                }
            })
            .map_err(|e| Error::Other(format!("cannot start the simulated kernel: {e}")))?;
        Ok(SimulatedKernel {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for SimulatedKernel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_trim(root: &Path, kpath: &str) -> Option<String> {
    std::fs::read_to_string(root.join(kpath.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Replace a file's content in one rename, so a reader sees the old or the new text.
fn replace(root: &Path, kpath: &str, text: &str) {
    let p = root.join(kpath.trim_start_matches('/'));
    let tmp = p.with_extension("simulated-kernel-tmp");
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &p).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Add `by` to a single-number file.
fn bump(root: &Path, kpath: &str, by: u64) {
    if let Some(v) = read_trim(root, kpath).and_then(|v| v.parse::<u64>().ok()) {
        replace(root, kpath, &format!("{}\n", v + by));
    }
}

/// One step: kdamond commands complete and running kdamonds count; every 10th step (100 ms)
/// the counters of running mechanisms advance.
fn kernel_step(root: &Path, step: u64) {
    let nr = read_trim(root, &format!("{KDAMONDS}/nr_kdamonds"))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(KDAMOND_SLOTS);
    let tenth = step.is_multiple_of(10);
    for k in 0..nr {
        let st = format!("{KDAMONDS}/{k}/state");
        let Some(state) = read_trim(root, &st) else {
            continue;
        };
        if STATE_COMMANDS.contains(&state.as_str()) {
            replace(root, &st, "on\n");
        }
        let pid = format!("{KDAMONDS}/{k}/pid");
        let on = state == "on" || STATE_COMMANDS.contains(&state.as_str());
        let want = if on {
            format!("{}", 40_000 + k)
        } else {
            "-1".into()
        };
        if read_trim(root, &pid).as_deref() != Some(want.as_str()) {
            replace(root, &pid, &format!("{want}\n"));
        }
        if on && tenth {
            let c = format!("{KDAMONDS}/{k}/contexts/0/schemes");
            let n = read_trim(root, &format!("{c}/nr_schemes"))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
                .min(KDAMOND_SLOTS);
            for s in 0..n {
                bump(root, &format!("{c}/{s}/stats/nr_tried"), 12);
                bump(root, &format!("{c}/{s}/stats/sz_tried"), 48 << 20);
                bump(root, &format!("{c}/{s}/stats/nr_applied"), 3);
                bump(root, &format!("{c}/{s}/stats/sz_applied"), 4 << 20);
            }
        }
    }
    ksm_step(root, step, tenth);
    if !tenth {
        return;
    }
    let nb = read_trim(root, NUMA_BALANCING)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if nb & 2 != 0 {
        if let Some(text) = read_trim(root, "/proc/vmstat") {
            let mut out = String::new();
            for line in text.lines() {
                let (k, v) = line.split_once(' ').unwrap_or((line, "0"));
                let v: u64 = v.trim().parse().unwrap_or(0);
                let by = match k {
                    "pgpromote_success" | "numa_pages_migrated" => 256,
                    "pgdemote_kswapd" => 128,
                    _ => 0,
                };
                out.push_str(&format!("{k} {}\n", v + by));
            }
            replace(root, "/proc/vmstat", &out);
        }
    }
}

/// ksmd: merged pages grow while it runs (every 100 ms), and go at once with run = 2.
fn ksm_step(root: &Path, step: u64, tenth: bool) {
    match read_trim(root, &format!("{KSM_DIR}/run")).as_deref() {
        Some("1") if tenth => {
            bump(root, &format!("{KSM_DIR}/pages_shared"), 16);
            bump(root, &format!("{KSM_DIR}/pages_sharing"), 64);
            if step.is_multiple_of(100) {
                bump(root, &format!("{KSM_DIR}/full_scans"), 1);
            }
        }
        // run = 2 unmerges every merged page (`unmerge_and_remove_all_rmap_items`).
        Some("2") => {
            for f in ["pages_shared", "pages_sharing"] {
                replace(root, &format!("{KSM_DIR}/{f}"), "0\n");
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_a_host_the_agent_reads() {
        let d = tempfile::tempdir().unwrap();
        create(d.path()).unwrap();
        let h = crate::host::read_host(&crate::fs::HostFs::new(d.path())).unwrap();
        assert_eq!(h.nodes.len(), 2);
        assert!(h.settings.damon_sysfs);
        assert_eq!(h.nodes[1].tier, Some(22));
        // A second create into the same directory is refused.
        assert!(create(d.path()).is_err());
    }

    #[test]
    fn a_command_to_a_kdamond_completes_and_its_directories_vanish_with_it() {
        let d = tempfile::tempdir().unwrap();
        create(d.path()).unwrap();
        let before = snapshot(d.path()).unwrap();
        let set = |k: &str, v: &str| std::fs::write(d.path().join(&k[1..]), v).unwrap();
        set(&format!("{KDAMONDS}/nr_kdamonds"), "1\n");
        set(&format!("{KDAMONDS}/0/contexts/0/operations"), "paddr\n");
        set(&format!("{KDAMONDS}/0/state"), "update_schemes_stats\n");
        kernel_step(d.path(), 1);
        assert_eq!(
            read_trim(d.path(), &format!("{KDAMONDS}/0/state")).unwrap(),
            "on"
        );
        assert_eq!(
            read_trim(d.path(), &format!("{KDAMONDS}/0/pid")).unwrap(),
            "40000"
        );
        let after = snapshot(d.path()).unwrap();
        let changed: Vec<String> = changed_files(&before, &after, None)
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert!(changed.contains(&format!("{KDAMONDS}/0/contexts/0/operations")));
        assert!(!changed.iter().any(|p| p.ends_with("/pid")), "{changed:?}");
        // nr_kdamonds back to 0: the kdamond's files are the kernel's to remove.
        set(&format!("{KDAMONDS}/nr_kdamonds"), "0\n");
        let after = snapshot(d.path()).unwrap();
        assert!(changed_files(&before, &after, None).is_empty());
    }

    #[test]
    fn counters_advance_only_while_their_mechanism_runs() {
        let d = tempfile::tempdir().unwrap();
        create(d.path()).unwrap();
        kernel_step(d.path(), 0);
        assert!(read_trim(d.path(), "/proc/vmstat")
            .unwrap()
            .contains("pgpromote_success 0"));
        std::fs::write(d.path().join(&NUMA_BALANCING[1..]), "2\n").unwrap();
        kernel_step(d.path(), 10);
        assert!(read_trim(d.path(), "/proc/vmstat")
            .unwrap()
            .contains("pgpromote_success 256"));
    }
}
