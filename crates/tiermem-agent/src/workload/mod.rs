//! `tiermem workload run`: run a scenario's synthetic workload on this host and record the
//! kernel's behaviour into the simulator's `timeline.csv` format.
//!
//! Call order ([`run`]): read and validate the scenario (a simulator config) and the host
//! (nothing written yet; any error ends here); record every knob's original in the state
//! file and write the scenario's `[kernel]` knobs (NUMA balancing off); map, place and
//! populate the regions; start the access threads, which wait; at time 0 switch NUMA
//! balancing and ksmd on, start the kdamonds of `[[kernel.damon.contexts]]` ([`damon`]),
//! take the baseline reading, release the threads; sample every `sim.sample_interval`
//! until `duration`; stop the kdamonds and the threads, restore every knob, write
//! `timeline.csv` and `meta.json`. A signal (INT, TERM, HUP, QUIT) or an error after the
//! first write still restores; after `kill -9`, `tiermem agent --restore --state-file
//! DIR/knobs.state` does.

pub mod access;
pub mod control;
pub mod damon;
pub mod frames;
pub mod knobs;
pub mod memory;
mod process;
pub mod sample;

use crate::fs::HostFs;
use crate::state::{Saved, StateRecorder};
use crate::Error;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiermem_core::config::{SimConfig, WorkloadConfig};
use tiermem_core::synthetic::SyntheticConfig;
use tiermem_core::ConfigError;

/// Options of one run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Output directory (created).
    pub out: PathBuf,
    /// Override the scenario's duration, in seconds.
    pub duration_s: Option<f64>,
    /// The state file recording the knobs' originals. Default `OUT/knobs.state`.
    pub state_file: Option<PathBuf>,
    /// Print a progress line this often (0: never).
    pub progress_every_s: f64,
    /// Read the workload's `/proc/<pid>` files from this kernel path instead (tests with a
    /// fake tree). Default: `/proc/<pid>` of the workload process.
    pub proc_dir: Option<String>,
}

/// What `meta.json` records next to the timeline.
#[derive(Debug, Serialize)]
pub struct Meta {
    pub tiermem_version: &'static str,
    pub kernel_release: String,
    pub scenario: String,
    pub command: Vec<String>,
    pub workload: String,
    pub duration_s: f64,
    pub sample_interval_s: f64,
    /// Time the population (placement) took before time 0.
    pub populate_seconds: f64,
    /// CLOCK_MONOTONIC at time 0, seconds (the clock of ftrace timestamps).
    pub t0_monotonic_s: f64,
    pub nodes: Vec<NodeMeta>,
    pub knobs: Vec<KnobMeta>,
    pub threads: Vec<access::ThreadStats>,
    /// The workload process's main thread (it populated the regions, then waits in 20 ms
    /// sleeps): its CPU time and time slices from `schedstat` at time 0 and at the end.
    /// NUMA balancing scans from this thread too (its runtime is far ahead of its
    /// `node_stamp`), and the simulator models it from these figures (docs/fidelity.md).
    pub main_thread: Option<MainThreadStats>,
}

/// `/proc/PID/task/PID/schedstat` of the workload's main thread at time 0 and at the end.
#[derive(Debug, Serialize)]
pub struct MainThreadStats {
    pub cpu_seconds_at_t0: f64,
    pub cpu_seconds_at_end: f64,
    pub timeslices_at_t0: u64,
    pub timeslices_at_end: u64,
}

/// (sum_exec_runtime ns, pcount) of one thread, from its `schedstat` line (absent without
/// CONFIG_SCHEDSTATS or once the thread is gone).
fn read_schedstat(fs: &HostFs, pid: u32) -> Option<(u64, u64)> {
    let text = fs
        .read_opt(&format!("/proc/{pid}/task/{pid}/schedstat"))
        .ok()??;
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    (f.len() >= 3).then(|| (f[0], f[2]))
}

#[derive(Debug, Serialize)]
pub struct NodeMeta {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub mem_total_bytes: u64,
    /// `MemFree` at time 0 (after population).
    pub mem_free_bytes_at_start: u64,
}

#[derive(Debug, Serialize)]
pub struct KnobMeta {
    pub path: String,
    pub value: String,
    pub original: Option<String>,
    pub when: &'static str,
}

/// The one synthetic workload a live run executes (its index and config).
fn synthetic_workload(cfg: &SimConfig) -> Result<(usize, &SyntheticConfig), Error> {
    let mut found = None;
    for (i, w) in cfg.workloads.iter().enumerate() {
        match w {
            WorkloadConfig::Synthetic(s) if found.is_none() => found = Some((i, s)),
            WorkloadConfig::Synthetic(_) => {
                return Err(ConfigError::invalid(
                    format!("workloads[{i}]"),
                    "a live run executes one synthetic workload (one process); this is the second",
                )
                .into())
            }
            other => {
                return Err(ConfigError::invalid(
                    format!("workloads[{i}].type"),
                    format!(
                        "{:?} runs in the simulator only; `tiermem workload run` runs `synthetic` workloads",
                        other.kind()
                    ),
                )
                .into())
            }
        }
    }
    found.ok_or_else(|| {
        ConfigError::invalid(
            "workloads",
            "no synthetic workload to run ([[workloads]] type = \"synthetic\")",
        )
        .into()
    })
}

/// Read and check the scenario against the host: (config, workload index, CPUs to pin to, the host's total pages).
fn prepare(
    spec: &Path,
    fs: &HostFs,
    opts: &Options,
) -> Result<(SimConfig, usize, Vec<u32>, u64), Error> {
    let (mut cfg, _) = SimConfig::from_file(spec)?;
    if let Some(d) = opts.duration_s {
        if !(d > 0.0 && d.is_finite() && d < 1e6) {
            return Err(ConfigError::invalid(
                "--duration",
                format!("must be a positive number of seconds (got {d})"),
            )
            .into());
        }
        cfg.duration = tiermem_core::units::SimDuration::from_secs_f64(d);
    }
    let (wi, s) = synthetic_workload(&cfg)?;
    let host = crate::host::read_nodes(fs)?;
    let want = cfg.machine.nodes.len();
    if host.len() != want {
        return Err(ConfigError::invalid(
            "machine.nodes",
            format!(
                "the scenario's machine has {want} nodes, this host {}",
                host.len()
            ),
        )
        .into());
    }
    for (n, h) in cfg.machine.nodes.iter().zip(&host) {
        let (a, b) = (n.capacity.0 as f64, h.mem_total_bytes as f64);
        if b > 0.0 && (a - b).abs() / b > 0.10 {
            tracing::warn!(
                node = h.id,
                scenario = %n.capacity,
                host_bytes = h.mem_total_bytes,
                "node size differs from the scenario's by more than 10 %"
            );
        }
    }
    let cpu_node = s.cpu_node.map_or_else(
        || host.iter().find(|h| !h.cpus.is_empty()).map(|h| h.id),
        |n| Some(n.0 as u32),
    );
    let cpus = cpu_node
        .and_then(|n| host.iter().find(|h| h.id == n))
        .map(|h| h.cpus.clone())
        .unwrap_or_default();
    if cpus.is_empty() {
        return Err(ConfigError::invalid(
            format!("workloads[{wi}].cpu_node"),
            "this host's node has no CPUs to run the threads on",
        )
        .into());
    }
    let total_pages =
        host.iter().map(|h| h.mem_total_bytes).sum::<u64>() / tiermem_core::units::PAGE_SIZE;
    Ok((cfg, wi, cpus, total_pages))
}

/// Run the scenario at `spec` and write `timeline.csv` and `meta.json` to `opts.out`.
pub fn run(spec: &Path, fs: &HostFs, opts: &Options) -> Result<Meta, Error> {
    let (cfg, wi, cpus, total_pages) = prepare(spec, fs, opts)?;
    let mut plan = knobs::plan(&cfg.kernel, cfg.machine.nodes.len(), total_pages)?;
    plan.kdamonds = damon::plan(&cfg.kernel, wi)?;
    knobs::check_swap_devices(
        &cfg.kernel,
        &fs.read_opt("/proc/swaps")?.unwrap_or_default(),
    )
    .map_err(|e| match e {
        Error::Config(c) => Error::Config(c.in_file(&spec.display().to_string())),
        e => e,
    })?;
    for k in plan.before.iter().chain(&plan.at_start) {
        if !k.optional && !fs.exists(&k.path) {
            return Err(Error::Feature {
                feature: format!("the knob {}", k.path),
                path: k.path.clone(),
                hint: if k.path.contains("/debug/") {
                    " (mount debugfs: mount -t debugfs none /sys/kernel/debug)".into()
                } else {
                    String::new()
                },
            });
        }
    }
    damon::check_host(fs, &plan.kdamonds)?;
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(&opts.out, "create directory", e))?;
    let state = opts
        .state_file
        .clone()
        .unwrap_or_else(|| opts.out.join("knobs.state"));
    crate::signals::install();
    let mut rec = StateRecorder::create(&state, fs)?;
    let mut knob_log = Vec::new();
    let result = apply_and_record(&cfg, wi, &cpus, fs, opts, &plan, &mut rec, &mut knob_log);
    let restored = rec.restore(fs);
    let mut meta = result?;
    restored?;
    meta.knobs = knob_log;
    meta.scenario = spec.display().to_string();
    write_json(&opts.out.join("meta.json"), &meta)?;
    Ok(meta)
}

/// The bracketed choice of a selector file such as `always madvise [never]`.
fn selected_word(text: &str) -> Option<String> {
    let a = text.find('[')?;
    let b = text[a..].find(']')? + a;
    Some(text[a + 1..b].to_string())
}

fn write_knob(
    fs: &HostFs,
    rec: &mut StateRecorder,
    k: &knobs::Knob,
    when: &'static str,
    log: &mut Vec<KnobMeta>,
) -> Result<(), Error> {
    let path = crate::host::host_name(fs, &k.path);
    let original = fs.read_opt(path)?;
    let Some(orig) = original.clone() else {
        if k.optional {
            return Ok(());
        }
        return Err(Error::Other(format!("{path} disappeared")));
    };
    // Selector files (`always madvise [never]`) read back as a list: the value is the
    // bracketed word.
    let orig = selected_word(&orig).unwrap_or(orig);
    rec.record(Saved::File {
        path: path.to_string(),
        original: orig,
    })?;
    fs.write(path, &k.value)?;
    log.push(KnobMeta {
        path: path.to_string(),
        value: k.value.clone(),
        original,
        when,
    });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn apply_and_record(
    cfg: &SimConfig,
    wi: usize,
    cpus: &[u32],
    fs: &HostFs,
    opts: &Options,
    plan: &knobs::KnobPlan,
    rec: &mut StateRecorder,
    knob_log: &mut Vec<KnobMeta>,
) -> Result<Meta, Error> {
    let WorkloadConfig::Synthetic(s) = &cfg.workloads[wi] else {
        return Err(Error::Other("not a synthetic workload".into()));
    };
    // Recorded before the knobs (restored after them), as the agent does: the probe
    // builds and removes a throw-away kdamond.
    damon::probe(fs, rec, &plan.kdamonds)?;
    for k in &plan.before {
        write_knob(fs, rec, k, "before", knob_log)?;
    }
    let shared = Arc::new(
        control::Shared::new()
            .map_err(|e| Error::Other(format!("cannot map the control block: {e}")))?,
    );
    let child = process::spawn(s, wi, cpus, cfg.seed, shared.clone())?;
    let outcome = drive(cfg, s, fs, opts, plan, rec, knob_log, &shared, &child);
    // drive stops the kdamonds with the recording; again here for the paths that leave
    // it early (idempotent; the restore below would stop them too, but after the knobs).
    let kdamonds_stopped = damon::stop(fs, &plan.kdamonds);
    shared.get().set_phase(control::STOPPING);
    let exited = child.wait();
    // max_page_sharing and merge_across_nodes refuse changes (EBUSY) while KSM pages
    // exist: unmerge before the knobs are restored (the workload has exited by now).
    let unmerged = if cfg.kernel.ksm.is_some() {
        unmerge_ksm(fs)
    } else {
        Ok(())
    };
    let Recorded {
        rows,
        free0,
        populate_seconds,
        t0_monotonic_s,
        main_thread,
    } = outcome?;
    exited?;
    unmerged?;
    kdamonds_stopped?;
    let c = shared.get();
    let threads = (0..s.threads as usize)
        .map(|t| access::ThreadStats {
            accesses: c.accesses[t].load(Ordering::SeqCst),
            late: c.late[t].load(Ordering::SeqCst),
            cpu_seconds: c.cpu_ns[t].load(Ordering::SeqCst) as f64 * 1e-9,
        })
        .collect();
    let mut csv = String::new();
    for r in rows {
        csv.push_str(&r);
        csv.push('\n');
    }
    let tl = opts.out.join("timeline.csv");
    std::fs::write(&tl, csv).map_err(|e| Error::io(&tl, "write", e))?;
    let nodes = crate::host::read_nodes(fs)?
        .into_iter()
        .enumerate()
        .map(|(i, h)| NodeMeta {
            id: h.id,
            cpus: h.cpus,
            mem_total_bytes: h.mem_total_bytes,
            mem_free_bytes_at_start: free0.get(i).copied().flatten().unwrap_or(0)
                * tiermem_core::units::PAGE_SIZE,
        })
        .collect();
    Ok(Meta {
        tiermem_version: env!("CARGO_PKG_VERSION"),
        kernel_release: fs
            .read_opt("/proc/sys/kernel/osrelease")?
            .unwrap_or_default(),
        scenario: String::new(),
        command: std::env::args().collect(),
        workload: s.name.clone().unwrap_or_else(|| format!("synthetic{wi}")),
        duration_s: cfg.duration.secs_f64(),
        sample_interval_s: cfg.sim.sample_interval.secs_f64(),
        populate_seconds,
        t0_monotonic_s,
        nodes,
        knobs: Vec::new(),
        threads,
        main_thread,
    })
}

/// What the recording process saw.
struct Recorded {
    /// Rows of the timeline, header first.
    rows: Vec<String>,
    /// Free pages per node at time 0.
    free0: Vec<Option<u64>>,
    populate_seconds: f64,
    /// CLOCK_MONOTONIC at time 0, in seconds (ftrace's clock: aligns a `--trace` recording).
    t0_monotonic_s: f64,
    main_thread: Option<MainThreadStats>,
}

/// Wait for population, start time 0 (knobs, baseline, release), sample to the end.
#[allow(clippy::too_many_arguments)]
fn drive(
    cfg: &SimConfig,
    s: &SyntheticConfig,
    fs: &HostFs,
    opts: &Options,
    plan: &knobs::KnobPlan,
    rec: &mut StateRecorder,
    knob_log: &mut Vec<KnobMeta>,
    shared: &control::Shared,
    child: &process::Child,
) -> Result<Recorded, Error> {
    let c = shared.get();
    child.wait_for_population(c)?;
    let populate_seconds = c.populate_ns.load(Ordering::SeqCst) as f64 * 1e-9;
    for k in &plan.at_start {
        write_knob(fs, rec, k, "at time 0", knob_log)?;
    }
    start_kdamonds(fs, plan, child, knob_log)?;
    let poller = damon::StatsPoller::new(fs, &plan.kdamonds);
    let stop = AtomicBool::new(false);
    let every = Duration::from_secs_f64(cfg.sim.sample_interval.secs_f64().max(0.01));
    let sampled = std::thread::scope(|scope| {
        let polling = (!poller.is_empty()).then(|| scope.spawn(|| poller.run(every, &stop)));
        let r = sample_from_t0(cfg, s, fs, opts, c, child, poller.latest());
        stop.store(true, Ordering::SeqCst);
        // Turning the kdamonds off also ends a statistics request the poller waits on;
        // they can be removed once it has returned.
        damon::turn_off(fs, &plan.kdamonds);
        if let Some(Err(_)) = polling.map(|h| h.join()) {
            tracing::error!("the DAMOS statistics thread panicked");
        }
        let removed = damon::remove(fs, &plan.kdamonds);
        r.and_then(|r| removed.map(|()| r))
    });
    let (rows, free0, t0, main_thread) = sampled?;
    Ok(Recorded {
        rows,
        free0,
        populate_seconds,
        t0_monotonic_s: t0 as f64 * 1e-9,
        main_thread,
    })
}

/// Rows of one run: (CSV rows with the header, free pages per node at time 0, time 0 in
/// CLOCK_MONOTONIC ns, the main thread's CPU time).
type Sampled = (Vec<String>, Vec<Option<u64>>, u64, Option<MainThreadStats>);

/// Read the baseline, start time 0 (release the threads) and sample to the end.
fn sample_from_t0(
    cfg: &SimConfig,
    s: &SyntheticConfig,
    fs: &HostFs,
    opts: &Options,
    c: &control::Control,
    child: &process::Child,
    damos: damon::LatestStats,
) -> Result<Sampled, Error> {
    let regions = memory::layout(s);
    let proc_dir = opts
        .proc_dir
        .clone()
        .unwrap_or_else(|| format!("/proc/{}", child.pid));
    let mut sampler =
        sample::Sampler::new(fs.clone(), cfg, child.workload, proc_dir, regions).with_damos(damos);
    let base = sampler.read()?;
    // The workload process's VMAs at time 0: the scanner walks all of them, not just the
    // regions (see docs/fidelity.md on the PID filter).
    if let Ok(Some(maps)) = fs.read_opt(&format!("/proc/{}/maps", child.pid)) {
        let p = opts.out.join("maps.txt");
        std::fs::write(&p, maps + "\n").map_err(|e| Error::io(&p, "write", e))?;
    }
    // Where the regions lie physically (which pages share a DAMON paddr region).
    let pagemap = fs.path(&format!("/proc/{}/pagemap", child.pid));
    if let Some(text) = frames::describe(&pagemap, &memory::layout(s)) {
        let p = opts.out.join("frames.txt");
        std::fs::write(&p, text).map_err(|e| Error::io(&p, "write", e))?;
    }
    // The zones' watermarks and free pages in effect during the run.
    if let Ok(Some(z)) = fs.read_opt("/proc/zoneinfo") {
        let p = opts.out.join("zoneinfo.txt");
        std::fs::write(&p, z + "\n").map_err(|e| Error::io(&p, "write", e))?;
    }
    // Free pages by migratetype and the pageblocks' types (root only): where movable
    // allocations will fall back to other migratetypes' free pages (and boost the
    // watermarks, `boost_watermark`) once the movable free lists run dry.
    if let Ok(Some(t)) = fs.read_opt("/proc/pagetypeinfo") {
        let p = opts.out.join("pagetypeinfo.txt");
        std::fs::write(&p, t + "\n").map_err(|e| Error::io(&p, "write", e))?;
    }
    let free0 = base.node_free_pages.clone();
    sampler.set_baseline(base.clone());
    let main_at_t0 = read_schedstat(fs, child.pid);
    let t0 = control::monotonic_ns();
    c.t0_ns.store(t0, Ordering::SeqCst);
    c.set_phase(control::RUNNING);
    let mut rows = vec![sampler.header().join(",")];
    rows.extend(record(cfg, &sampler, c, s.threads as usize, base, opts)?);
    let main_thread = main_at_t0
        .zip(read_schedstat(fs, child.pid))
        .map(|((r0, n0), (r1, n1))| MainThreadStats {
            cpu_seconds_at_t0: r0 as f64 * 1e-9,
            cpu_seconds_at_end: r1 as f64 * 1e-9,
            timeslices_at_t0: n0,
            timeslices_at_end: n1,
        });
    Ok((rows, free0, t0, main_thread))
}

/// Start the kdamonds of `[[kernel.damon.contexts]]` (the workload process is the `vaddr`
/// target) and log their sysfs writes in `meta.json`'s knobs.
fn start_kdamonds(
    fs: &HostFs,
    plan: &knobs::KnobPlan,
    child: &process::Child,
    knob_log: &mut Vec<KnobMeta>,
) -> Result<(), Error> {
    let pid = i32::try_from(child.pid)
        .map_err(|_| Error::Other(format!("workload pid {} out of range", child.pid)))?;
    let (writes, kdamond_pids) = damon::start(fs, &plan.kdamonds, pid)?;
    if !kdamond_pids.is_empty() {
        tracing::info!(?kdamond_pids, "kdamonds of kernel.damon.contexts started");
    }
    knob_log.extend(writes.into_iter().map(|(path, value)| KnobMeta {
        path,
        value,
        original: None,
        when: "at time 0 (kdamond)",
    }));
    Ok(())
}

/// `run = 2`: ksmd breaks every KSM page; wait until none is left (up to a minute).
fn unmerge_ksm(fs: &HostFs) -> Result<(), Error> {
    let dir = crate::host::KSM_DIR;
    fs.write(&format!("{dir}/run"), "2")?;
    let t0 = Instant::now();
    while fs
        .read_u64_opt(&format!("{dir}/pages_shared"))?
        .unwrap_or(0)
        > 0
    {
        if t0.elapsed() > crate::state::KSM_UNMERGE_TIMEOUT {
            return Err(Error::Other(
                "KSM unmerge did not finish within 60 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Sample until the duration ends or a signal comes; returns the CSV rows.
fn record(
    cfg: &SimConfig,
    sampler: &sample::Sampler,
    c: &control::Control,
    threads: usize,
    base: sample::Reading,
    opts: &Options,
) -> Result<Vec<String>, Error> {
    let t0 = c.t0_ns.load(Ordering::SeqCst);
    let since = || (control::monotonic_ns().saturating_sub(t0)) as f64 * 1e-9;
    let mut rows = vec![sampler.row(0.0, 0.0, 0, &base)];
    let interval = cfg.sim.sample_interval.secs_f64().max(0.01);
    let end = cfg.duration.secs_f64();
    let (mut prev_t, mut prev_n) = (0.0, 0u64);
    let mut next = interval;
    let mut next_progress = opts.progress_every_s;
    let stopped = || crate::signals::stop_requested() || c.phase() == control::FAILED;
    while next <= end + 1e-9 && !stopped() {
        while since() < next && !stopped() {
            std::thread::sleep(Duration::from_secs_f64((next - since()).clamp(0.0, 0.02)));
        }
        if stopped() {
            break;
        }
        let r = sampler.read()?;
        let t = since();
        let n = c.total_accesses(threads);
        rows.push(sampler.row(
            t,
            n.saturating_sub(prev_n) as f64 / (t - prev_t).max(1e-9),
            n,
            &r,
        ));
        if opts.progress_every_s > 0.0 && t >= next_progress {
            next_progress += opts.progress_every_s;
            let get = |k: &str| {
                r.vmstat
                    .get(k)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(base.vmstat.get(k).copied().unwrap_or(0))
            };
            eprintln!(
                "  t={t:6.1}s  accesses {n:>12}  numa_hint_faults +{}  pgpromote_success +{}  pgdemote_kswapd +{}",
                get("numa_hint_faults"),
                get("pgpromote_success"),
                get("pgdemote_kswapd"),
            );
        }
        (prev_t, prev_n) = (t, n);
        next += interval;
    }
    if c.phase() == control::FAILED {
        return Err(Error::Other(format!(
            "the workload process failed: {}",
            c.error()
        )));
    }
    if crate::signals::stop_requested() {
        return Err(Error::Other(
            "stopped by a signal; the knobs were restored and nothing was written".into(),
        ));
    }
    Ok(rows)
}

fn write_json(path: &Path, v: &impl Serialize) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Other(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, "write", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{fake_two_node, NUMA_BALANCING};

    const SCENARIO: &str = r#"
duration = "0.3s"
[machine]
name = "t"
[[machine.nodes]]
id = 0
cpus = 2
capacity = "1GiB"
read_latency = "80ns"
read_bandwidth = "20GB/s"
[[machine.nodes]]
id = 1
capacity = "1GiB"
read_latency = "240ns"
read_bandwidth = "5GB/s"
[kernel]
numa_balancing = 2
[sim]
sample_interval = "100ms"
[[workloads]]
type = "synthetic"
name = "app"
[[workloads.regions]]
name = "hot"
size = "64KiB"
pattern = "uniform"
rate = 20000
"#;

    #[test]
    fn records_the_simulators_columns_and_restores_the_knobs() {
        let t = fake_two_node();
        t.set(
            "/proc/self/numa_maps",
            "200000000000 default anon=16 N1=16\n",
        );
        t.set("/proc/self/sched", "mm->numa_scan_seq : 3\n");
        t.set(knobs::THP_ENABLED, "always madvise [never]\n");
        t.set("/proc/sys/vm/min_free_kbytes", "67584\n");
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("s.toml");
        std::fs::write(&spec, SCENARIO).unwrap();
        let out = dir.path().join("out");
        let meta = run(
            &spec,
            &t.fs(),
            &Options {
                out: out.clone(),
                duration_s: None,
                state_file: None,
                progress_every_s: 0.0,
                proc_dir: Some("/proc/self".into()),
            },
        )
        .unwrap();
        assert_eq!(t.get(NUMA_BALANCING), "0", "restored");
        assert_eq!(
            t.get(knobs::THP_ENABLED),
            "never",
            "a selector file restores its choice"
        );
        assert_eq!(t.get("/proc/sys/vm/min_free_kbytes"), "67584");
        assert!(
            meta.knobs
                .iter()
                .any(|k| k.path.ends_with("min_free_kbytes") && k.value == "5792"),
            "int_sqrt(2 GiB in KiB × 16)"
        );
        assert!(!out.join("knobs.state").exists());
        assert!(meta
            .knobs
            .iter()
            .any(|k| k.path == NUMA_BALANCING && k.value == "2"));
        let csv = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let cfg = SimConfig::from_toml_str(SCENARIO, "s.toml").unwrap();
        let mut want = tiermem_core::timeline::base_columns(2);
        want.extend(
            tiermem_core::timeline::extra_columns(&cfg)
                .into_iter()
                .map(|c| c.1),
        );
        assert_eq!(header, want);
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 4, "time 0 and three samples");
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(rows[1][col("app.hot.N1")], "16");
        assert_eq!(rows[1][col("node1_used_pages")], "16");
        assert_eq!(rows[1][col("app.numa_scan_seq")], "0", "relative to time 0");
        let acc: u64 = rows[3][col("app.accesses")].parse().unwrap();
        assert!(acc > 1000, "{acc} accesses at 20k/s for 0.3 s");
        assert!(out.join("meta.json").exists());
    }

    fn options(out: PathBuf) -> Options {
        Options {
            out,
            duration_s: None,
            state_file: None,
            progress_every_s: 0.0,
            proc_dir: Some("/proc/self".into()),
        }
    }

    /// A two-node fake host with DAMON sysfs (one 6.12 kdamond's files) and the scenario
    /// with a paddr pageout context.
    fn damon_host(dir: &Path) -> (crate::fs::fake::FakeTree, PathBuf) {
        let t = fake_two_node();
        t.set(
            "/proc/self/numa_maps",
            "200000000000 default anon=16 N0=16\n",
        );
        t.set(knobs::THP_ENABLED, "always madvise [never]\n");
        t.set("/proc/sys/vm/min_free_kbytes", "67584\n");
        t.set("/proc/iomem", "00100000-7fffffff : System RAM\n");
        t.set(&format!("{}/nr_kdamonds", crate::damon::KDAMONDS), "0");
        crate::damon::fake_kdamond_6_12(&t);
        let text = SCENARIO.replace(
            "[sim]",
            "[[kernel.damon.contexts]]\nops = \"paddr\"\n[[kernel.damon.contexts.schemes]]\naction = \"pageout\"\naccess_pattern = { min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }\nquotas = { sz = 268435456, reset_interval_ms = 1000 }\n[sim]",
        );
        let spec = dir.join("s.toml");
        std::fs::write(&spec, &text).unwrap();
        let cfg = SimConfig::from_toml_str(&text, "s.toml").unwrap();
        let kds = damon::plan(&cfg.kernel, 0).unwrap();
        let d = crate::damon::DamonSysfs::new(t.fs());
        for (p, _) in d.spec_writes(0, &damon::specs(&kds, 1)[0]) {
            if !t.fs().exists(&p) {
                t.set(&p, "");
            }
        }
        let stats = format!("{}/0/contexts/0/schemes/0/stats", crate::damon::KDAMONDS);
        for f in tiermem_core::timeline::DAMOS_STATS {
            t.set(&format!("{stats}/{f}"), "0");
        }
        (t, spec)
    }

    #[test]
    fn damon_contexts_run_as_kdamonds_from_time_0_and_are_removed_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let (t, spec) = damon_host(dir.path());
        let k = crate::damon::KDAMONDS;
        // The kernel's statistics move during the run.
        let stats = format!("{k}/0/contexts/0/schemes/0/stats/sz_applied");
        let stats = t.fs().path(&stats);
        let bump = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(120));
            std::fs::write(stats, "8192\n").unwrap();
        });
        let out = dir.path().join("out");
        let meta = run(&spec, &t.fs(), &options(out.clone())).unwrap();
        bump.join().unwrap();
        assert_eq!(t.get(&format!("{k}/nr_kdamonds")), "0", "removed");
        assert_eq!(t.get(&format!("{k}/0/contexts/0/operations")), "paddr");
        assert_eq!(
            t.get(&format!("{k}/0/contexts/0/schemes/0/quotas/bytes")),
            "268435456"
        );
        assert!(!out.join("knobs.state").exists(), "restored in full");
        assert!(
            meta.knobs
                .iter()
                .any(|m| m.path.ends_with("schemes/0/action")
                    && m.value == "pageout"
                    && m.when == "at time 0 (kdamond)"),
            "meta.json logs the kdamond's writes"
        );
        let csv = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(rows[0][col("damon_ctx0_scheme0_nr_tried")], "0");
        assert_eq!(rows[3][col("damon_ctx0_scheme0_nr_tried")], "0");
        assert_eq!(
            rows[3][col("damon_ctx0_scheme0_sz_applied")],
            "8192",
            "refreshed by the poller (update_schemes_stats) while sampling"
        );
    }

    #[test]
    fn a_kdamond_that_fails_to_start_leaves_damon_and_the_knobs_restored() {
        let dir = tempfile::tempdir().unwrap();
        let (t, spec) = damon_host(dir.path());
        let k = crate::damon::KDAMONDS;
        // The kernel refuses `on` (here: the file cannot be opened for writing).
        let state = t.fs().path(&format!("{k}/0/state"));
        std::fs::remove_file(&state).unwrap();
        std::fs::create_dir(&state).unwrap();
        let out = dir.path().join("out");
        let e = run(&spec, &t.fs(), &options(out.clone())).unwrap_err();
        assert!(e.to_string().contains("kernel.damon.contexts"), "{e}");
        assert_eq!(t.get(&format!("{k}/nr_kdamonds")), "0");
        assert_eq!(t.get(NUMA_BALANCING), "0", "knobs restored");
        assert!(!out.join("knobs.state").exists(), "restored in full");
        assert!(!out.join("timeline.csv").exists());
    }

    #[test]
    fn refuses_simulator_only_workloads_before_writing() {
        let t = fake_two_node();
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("s.toml");
        std::fs::write(
            &spec,
            "machine = \"small\"\n[kernel]\nnuma_balancing = 2\n[[workloads]]\ntype = \"pmbench\"\n",
        )
        .unwrap();
        let e = run(
            &spec,
            &t.fs(),
            &Options {
                out: dir.path().join("o"),
                duration_s: None,
                state_file: None,
                progress_every_s: 0.0,
                proc_dir: Some("/proc/self".into()),
            },
        )
        .unwrap_err();
        assert!(e.is_input_error(), "{e}");
        assert!(e.to_string().contains("workloads[0].type"), "{e}");
        assert_eq!(t.get(NUMA_BALANCING), "0");
    }
}
