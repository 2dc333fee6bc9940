//! `[[kernel.damon.contexts]]` as kdamonds of the DAMON sysfs interface
//! (`/sys/kernel/mm/damon/admin/kdamonds/`), one per context, kdamond `i` for context `i`.
//!
//! Call order (driven by [`super::run`]): [`plan`] checks the contexts against what the
//! runner can do (config only; a refusal is a config error naming the key); [`check_host`]
//! checks that DAMON sysfs exists and is unused (nothing written); [`probe`] records the
//! DAMON state in the state file and checks every setting's sysfs file on this kernel (a
//! throw-away kdamond, removed again); [`start`] builds and turns on the kdamonds at time 0,
//! after population, as the simulator starts its kdamonds with its clock (the workload
//! process is the `vaddr` target; `paddr` monitors the biggest `System RAM` range, as
//! DAMON_RECLAIM does); a [`StatsPoller`] thread refreshes and reads the schemes'
//! statistics while the sampler runs; [`stop`] turns them off when the recording ends.
//! Whatever happens in between, the state file's entry turns them off and sets
//! `nr_kdamonds` back on restore.
//!
//! Why a thread for the statistics: `update_schemes_stats` (6.12's `damon_sysfs_handle_cmd`)
//! returns only once the kdamond has handled the request, between two of its steps, and a
//! kdamond paging out a large region under emulation spends tens of seconds in one step
//! (the first VM recording of `damos-pageout-zram`: one 75 s stall of the whole timeline).
//! The sampler takes the latest statistics and never waits for the kdamond.

use crate::damon::{
    biggest_system_ram, validate_scheme, ConfiguredKdamond, DamonSysfs, KdamondSpec, SchemeStats,
};
use crate::fs::HostFs;
use crate::state::{Saved, StateRecorder};
use crate::Error;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tiermem_core::config::KernelConfig;
use tiermem_core::damon::{ContextConfig, OpsKind};
use tiermem_core::ConfigError;

/// The config key of context `i`.
fn context_key(i: usize) -> String {
    format!("kernel.damon.contexts[{i}]")
}

fn refuse(key: String, why: impl Into<String>) -> Error {
    Error::Config(ConfigError::invalid(key, why))
}

/// The kdamonds `[[kernel.damon.contexts]]` asks for, checked against what a live run can
/// do. `workload`: the index of the synthetic workload the run executes (the only process
/// a `vaddr` context can target).
pub fn plan(k: &KernelConfig, workload: usize) -> Result<Vec<ConfiguredKdamond>, Error> {
    let contexts = &k.damon.contexts;
    if contexts.is_empty() {
        return Ok(Vec::new());
    }
    if k.damon.reclaim.as_ref().is_some_and(|r| r.enabled) {
        return Err(refuse(
            "kernel.damon.contexts".into(),
            "DAMON_RECLAIM runs an exclusive kdamond: a live kernel cannot run it beside DAMON sysfs kdamonds (use one or the other)",
        ));
    }
    let max = crate::config::limits::MAX_KDAMONDS;
    if contexts.len() > max {
        return Err(refuse(
            "kernel.damon.contexts".into(),
            format!("at most {max} contexts (one kdamond each)"),
        ));
    }
    contexts
        .iter()
        .enumerate()
        .map(|(i, c)| context_kdamond(i, c, workload))
        .collect()
}

/// One context as a kdamond, or the key the runner cannot honour.
fn context_kdamond(
    i: usize,
    c: &ContextConfig,
    workload: usize,
) -> Result<ConfiguredKdamond, Error> {
    let key = context_key(i);
    if c.per_workload_run {
        return Err(refuse(
            format!("{key}.per_workload_run"),
            "is the simulator's per-program kdamond: a live run starts its kdamonds at time 0 and stops them at the end (leave it out)",
        ));
    }
    match c.ops {
        OpsKind::Vaddr if c.target_workloads.iter().any(|&w| w != workload) => {
            return Err(refuse(
                format!("{key}.target_workloads"),
                format!("a live run executes one process, workload {workload}: the only target a vaddr context can have"),
            ));
        }
        OpsKind::Paddr if !c.regions.is_empty() => {
            return Err(refuse(
                format!("{key}.regions"),
                "are the simulated machine's physical addresses, not this host's: leave them out to monitor the host's biggest System RAM range",
            ));
        }
        _ => {}
    }
    crate::config::check_attrs(&c.attrs, &format!("{key}.attrs"))?;
    let max = crate::config::limits::MAX_SCHEMES;
    if c.schemes.len() > max {
        return Err(refuse(
            format!("{key}.schemes"),
            format!("at most {max} schemes per context"),
        ));
    }
    let mut schemes = Vec::new();
    for (j, s) in c.schemes.iter().enumerate() {
        let skey = format!("{key}.schemes[{j}]");
        validate_scheme(s, &skey, c.ops)?;
        schemes.push((skey, s.clone()));
    }
    Ok(ConfiguredKdamond {
        key,
        ops: c.ops,
        attrs: c.attrs.clone(),
        schemes,
    })
}

/// Check, writing nothing, that this host can run `kdamonds`: DAMON sysfs exists and no
/// other tool uses it, no DAMON module runs its exclusive context, and `paddr` has a
/// `System RAM` range to monitor.
pub fn check_host(fs: &HostFs, kdamonds: &[ConfiguredKdamond]) -> Result<(), Error> {
    if kdamonds.is_empty() {
        return Ok(());
    }
    let nr = format!("{}/nr_kdamonds", crate::damon::KDAMONDS);
    match fs.read_u64_opt(&nr)? {
        None => {
            return Err(Error::Feature {
                feature: "DAMON sysfs (CONFIG_DAMON_SYSFS), for kernel.damon.contexts".into(),
                path: nr,
                hint: String::new(),
            })
        }
        Some(0) => {}
        Some(n) => {
            return Err(Error::Other(format!(
                "DAMON sysfs already has {n} kdamond(s) configured by another tool; kernel.damon.contexts needs an unused DAMON sysfs (write 0 to {nr} once they are off)"
            )))
        }
    }
    for module in ["damon_reclaim", "damon_lru_sort"] {
        let on = fs
            .read_opt(&format!("/sys/module/{module}/parameters/enabled"))?
            .and_then(|s| crate::host::parse_bool(&s))
            .unwrap_or(false);
        if on {
            return Err(Error::Other(format!(
                "{module} is running an exclusive DAMON context; kernel.damon.contexts cannot start beside it (disable it first)"
            )));
        }
    }
    if kdamonds.iter().any(|k| k.ops == OpsKind::Paddr) {
        let iomem = fs.read_opt("/proc/iomem")?.unwrap_or_default();
        if biggest_system_ram(&iomem).is_none_or(|(a, b)| b <= a + 1) {
            return Err(Error::Other(
                "kernel.damon.contexts: a paddr context monitors the biggest System RAM range of /proc/iomem, which shows none (its addresses are visible to root only)".into(),
            ));
        }
    }
    Ok(())
}

/// Record the DAMON state in the state file (restore turns every kdamond off and sets
/// `nr_kdamonds` back), then check every setting's sysfs file on this kernel
/// ([`DamonSysfs::check_support`]: a missing one is a config error naming the key).
pub fn probe(
    fs: &HostFs,
    rec: &mut StateRecorder,
    kdamonds: &[ConfiguredKdamond],
) -> Result<(), Error> {
    if kdamonds.is_empty() {
        return Ok(());
    }
    let d = DamonSysfs::new(fs.clone());
    rec.record(Saved::Damon {
        nr_kdamonds: d.nr_kdamonds()?,
    })?;
    d.check_support(kdamonds)
}

/// The kdamonds to build, targeting process `pid` for `vaddr`.
pub fn specs(kdamonds: &[ConfiguredKdamond], pid: i32) -> Vec<KdamondSpec> {
    kdamonds
        .iter()
        .map(|k| KdamondSpec {
            purpose: k.key.clone(),
            ops: k.ops,
            attrs: k.attrs.clone(),
            pids: if k.ops == OpsKind::Vaddr {
                vec![pid]
            } else {
                Vec::new()
            },
            regions: Vec::new(),
            schemes: k.schemes.iter().map(|(_, s)| s.clone()).collect(),
        })
        .collect()
}

/// What [`start`] did: every sysfs write (path, value), and the kdamonds' thread ids.
pub type Started = (Vec<(String, String)>, Vec<i32>);

/// Build and turn on one kdamond per context; returns every sysfs write made (for
/// `meta.json`) and the kdamonds' thread ids.
pub fn start(fs: &HostFs, kdamonds: &[ConfiguredKdamond], pid: i32) -> Result<Started, Error> {
    let specs = specs(kdamonds, pid);
    if specs.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let d = DamonSysfs::new(fs.clone());
    let writes = specs
        .iter()
        .enumerate()
        .flat_map(|(k, s)| d.spec_writes(k, s))
        .collect();
    let pids = d.start(&specs).map_err(|e| {
        Error::Other(format!(
            "starting the kdamonds of kernel.damon.contexts: {e}"
        ))
    })?;
    Ok((writes, pids))
}

/// How long [`stop`] retries a write DAMON sysfs refuses with EBUSY.
const BUSY_RETRY: Duration = Duration::from_secs(10);

/// Turn the kdamonds off ([`turn_off`]) and remove them ([`remove`]).
pub fn stop(fs: &HostFs, kdamonds: &[ConfiguredKdamond]) -> Result<(), Error> {
    turn_off(fs, kdamonds);
    remove(fs, kdamonds)
}

/// Write `off` to every kdamond: it returns once the kdamond has finished its current
/// step and exited. A refusal other than EBUSY (EINVAL: it is off already) is the end.
pub fn turn_off(fs: &HostFs, kdamonds: &[ConfiguredKdamond]) {
    for k in 0..kdamonds.len() {
        let path = format!("{}/{k}/state", crate::damon::KDAMONDS);
        let _ = retry_busy(|| fs.write(&path, "off"));
    }
}

/// Remove the kdamonds (`nr_kdamonds` = 0). 6.12 refuses (EBUSY) while a statistics
/// request is still pending on one of them (`damon_sysfs_kdamonds_busy`: the requester
/// notices the kdamond's exit within 100 ms) or while another write holds DAMON sysfs.
pub fn remove(fs: &HostFs, kdamonds: &[ConfiguredKdamond]) -> Result<(), Error> {
    if kdamonds.is_empty() {
        return Ok(());
    }
    let d = DamonSysfs::new(fs.clone());
    retry_busy(|| d.stop_all(0))
}

/// Run `write` until it is not refused with EBUSY, for up to [`BUSY_RETRY`].
fn retry_busy(mut write: impl FnMut() -> Result<(), Error>) -> Result<(), Error> {
    let t0 = Instant::now();
    loop {
        match write() {
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(libc::EBUSY) && t0.elapsed() < BUSY_RETRY =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// The latest statistics of every context's schemes, by (context, scheme).
pub type LatestStats = Arc<Mutex<BTreeMap<(usize, usize), SchemeStats>>>;

/// Refreshes the schemes' statistics in its own thread ([`StatsPoller::run`]) so that the
/// sampler reads the latest ones without waiting for a kdamond.
pub struct StatsPoller {
    fs: HostFs,
    /// Per kdamond (= context index) with schemes: its number of schemes.
    schemes: Vec<(usize, usize)>,
    latest: LatestStats,
}

impl StatsPoller {
    /// Statistics start at 0: the kdamonds and their schemes were just created.
    pub fn new(fs: &HostFs, kdamonds: &[ConfiguredKdamond]) -> Self {
        let schemes: Vec<(usize, usize)> = kdamonds
            .iter()
            .enumerate()
            .filter(|(_, k)| !k.schemes.is_empty())
            .map(|(i, k)| (i, k.schemes.len()))
            .collect();
        let zeros = schemes
            .iter()
            .flat_map(|&(k, n)| (0..n).map(move |s| ((k, s), SchemeStats::default())))
            .collect();
        StatsPoller {
            fs: fs.clone(),
            schemes,
            latest: Arc::new(Mutex::new(zeros)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.schemes.is_empty()
    }

    pub fn latest(&self) -> LatestStats {
        self.latest.clone()
    }

    /// Refresh every kdamond's statistics about every `every` until `stop` is set. A
    /// kdamond that does not answer keeps its last statistics (warned once).
    pub fn run(&self, every: Duration, stop: &AtomicBool) {
        let d = DamonSysfs::new(self.fs.clone());
        let mut warned = vec![false; self.schemes.len()];
        while !stop.load(Ordering::SeqCst) {
            let t0 = Instant::now();
            for (i, &(k, nr)) in self.schemes.iter().enumerate() {
                match d.schemes_stats(k, nr) {
                    Ok(v) => self.store(k, v),
                    Err(e) if !warned[i] && !stop.load(Ordering::SeqCst) => {
                        warned[i] = true;
                        tracing::warn!(kdamond = k, error = %e, "DAMOS statistics not refreshed");
                    }
                    Err(_) => {}
                }
            }
            while t0.elapsed() < every && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    fn store(&self, k: usize, stats: Vec<SchemeStats>) {
        if let Ok(mut m) = self.latest.lock() {
            for (s, st) in stats.into_iter().enumerate() {
                m.insert((k, s), st);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::damon::KDAMONDS;
    use crate::fs::fake::FakeTree;
    use tiermem_core::config::SimConfig;

    /// The context of `validation/damos-pageout-zram`: DAMON_RECLAIM's scheme by hand.
    const PAGEOUT: &str = r#"[[kernel.damon.contexts]]
ops = "paddr"
attrs = { sample_us = 5000, aggr_us = 100000, min_nr_regions = 10, max_nr_regions = 1000 }
[[kernel.damon.contexts.schemes]]
action = "pageout"
access_pattern = { min_sz = 4096, min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }
quotas = { sz = 268435456, reset_interval_ms = 1000, weights = { age_permil = 1 } }
"#;

    fn kernel(extra: &str) -> KernelConfig {
        SimConfig::from_toml_str(
            &format!("machine = \"small\"\n[[workloads]]\ntype = \"synthetic\"\n[[workloads.regions]]\nname = \"r\"\nsize = \"4KiB\"\n[[workloads]]\ntype = \"pmbench\"\n{extra}"),
            "t.toml",
        )
        .unwrap()
        .kernel
    }

    fn refused_key(extra: &str) -> String {
        match plan(&kernel(extra), 0) {
            Err(Error::Config(c)) => c.key,
            other => panic!("not a config error: {other:?}"),
        }
    }

    fn writes(kds: &[ConfiguredKdamond], t: &FakeTree) -> Vec<(String, String)> {
        let d = DamonSysfs::new(t.fs());
        specs(kds, 4242)
            .iter()
            .enumerate()
            .flat_map(|(k, s)| d.spec_writes(k, s))
            .map(|(p, v)| (p.replacen(KDAMONDS, "K", 1), v))
            .collect()
    }

    #[test]
    fn a_paddr_pageout_context_becomes_these_sysfs_files() {
        let kds = plan(&kernel(PAGEOUT), 0).unwrap();
        assert_eq!(kds.len(), 1);
        assert_eq!(kds[0].key, "kernel.damon.contexts[0]");
        assert_eq!(kds[0].schemes[0].0, "kernel.damon.contexts[0].schemes[0]");
        let t = FakeTree::new().file(
            "/proc/iomem",
            "00001000-0009fbff : System RAM\n00100000-5ffdffff : System RAM\n",
        );
        let w = writes(&kds, &t);
        let c = "K/0/contexts/0";
        let s = format!("{c}/schemes/0");
        for (path, value) in [
            ("K/0/contexts/nr_contexts".to_string(), "1"),
            (format!("{c}/operations"), "paddr"),
            (format!("{c}/monitoring_attrs/intervals/sample_us"), "5000"),
            (format!("{c}/monitoring_attrs/intervals/aggr_us"), "100000"),
            (format!("{c}/monitoring_attrs/nr_regions/min"), "10"),
            (format!("{c}/monitoring_attrs/nr_regions/max"), "1000"),
            (format!("{c}/targets/nr_targets"), "1"),
            (format!("{c}/targets/0/regions/nr_regions"), "1"),
            (format!("{c}/targets/0/regions/0/start"), "1048576"),
            (format!("{c}/targets/0/regions/0/end"), "1610481664"),
            (format!("{c}/schemes/nr_schemes"), "1"),
            (format!("{s}/action"), "pageout"),
            (format!("{s}/access_pattern/sz/min"), "4096"),
            (format!("{s}/access_pattern/nr_accesses/max"), "0"),
            (format!("{s}/access_pattern/age/min"), "50"),
            (format!("{s}/quotas/ms"), "0"),
            (format!("{s}/quotas/bytes"), "268435456"),
            (format!("{s}/quotas/reset_interval_ms"), "1000"),
            (format!("{s}/quotas/weights/age_permil"), "1"),
            (format!("{s}/watermarks/metric"), "none"),
        ] {
            assert!(
                w.contains(&(path.clone(), value.to_string())),
                "{path} = {value} missing from {w:#?}"
            );
        }
        assert!(
            !w.iter().any(|(p, _)| p.contains("pid_target")),
            "paddr has no pid"
        );
        for (p, _) in &w {
            let full = p.replacen('K', KDAMONDS, 1);
            assert_eq!(crate::allow::check_write(&full), Ok(()), "{full}");
        }
    }

    #[test]
    fn a_vaddr_context_targets_the_workload_process() {
        let kds = plan(
            &kernel("[[kernel.damon.contexts]]\nops = \"vaddr\"\ntarget_workloads = [0]\n[[kernel.damon.contexts.schemes]]\naction = \"cold\"\n"),
            0,
        )
        .unwrap();
        let w = writes(&kds, &FakeTree::new());
        assert!(w.contains(&("K/0/contexts/0/operations".into(), "vaddr".into())));
        assert!(w.contains(&("K/0/contexts/0/targets/0/pid_target".into(), "4242".into())));
        assert!(!w.iter().any(|(p, _)| p.contains("/regions/")));
    }

    #[test]
    fn what_the_runner_cannot_do_is_refused_by_key() {
        assert_eq!(
            refused_key("[[kernel.damon.contexts]]\nops = \"paddr\"\nper_workload_run = true\n"),
            "kernel.damon.contexts[0].per_workload_run"
        );
        assert_eq!(
            refused_key("[[kernel.damon.contexts]]\nops = \"vaddr\"\ntarget_workloads = [1]\n"),
            "kernel.damon.contexts[0].target_workloads"
        );
        assert_eq!(
            refused_key("[[kernel.damon.contexts]]\nops = \"paddr\"\nregions = [{ start = 0, end = 1048576 }]\n"),
            "kernel.damon.contexts[0].regions"
        );
        // pageout is paddr's and vaddr's; lru_prio only paddr's: vaddr would apply nothing.
        assert_eq!(
            refused_key("[[kernel.damon.contexts]]\nops = \"vaddr\"\ntarget_workloads = [0]\n[[kernel.damon.contexts.schemes]]\naction = \"lru_prio\"\n"),
            "kernel.damon.contexts[0].schemes[0].action"
        );
        assert_eq!(
            refused_key("[[kernel.damon.contexts]]\nops = \"paddr\"\n[[kernel.damon.contexts.schemes]]\naction = \"pageout\"\nfilters = [{ type = \"memcg\", memcg = 0 }]\n"),
            "kernel.damon.contexts[0].schemes[0].filters[0].memcg"
        );
        assert_eq!(
            refused_key(&format!(
                "{PAGEOUT}[kernel.damon.reclaim]\nenabled = true\n"
            )),
            "kernel.damon.contexts"
        );
        assert!(plan(&kernel(""), 0).unwrap().is_empty());
    }

    #[test]
    fn the_host_must_have_an_unused_damon_sysfs_and_visible_ram() {
        let kds = plan(&kernel(PAGEOUT), 0).unwrap();
        let t = FakeTree::new();
        let e = check_host(&t.fs(), &kds).unwrap_err();
        assert!(matches!(e, Error::Feature { .. }), "{e}");
        t.set(&format!("{KDAMONDS}/nr_kdamonds"), "1");
        let e = check_host(&t.fs(), &kds).unwrap_err().to_string();
        assert!(e.contains("another tool"), "{e}");
        t.set(&format!("{KDAMONDS}/nr_kdamonds"), "0");
        // What /proc/iomem shows a user without CAP_SYS_ADMIN.
        t.set("/proc/iomem", "00000000-00000000 : System RAM\n");
        let e = check_host(&t.fs(), &kds).unwrap_err().to_string();
        assert!(e.contains("System RAM"), "{e}");
        t.set("/proc/iomem", "00100000-5ffdffff : System RAM\n");
        check_host(&t.fs(), &kds).unwrap();
        t.set("/sys/module/damon_reclaim/parameters/enabled", "Y");
        let e = check_host(&t.fs(), &kds).unwrap_err().to_string();
        assert!(e.contains("damon_reclaim"), "{e}");
    }
}
