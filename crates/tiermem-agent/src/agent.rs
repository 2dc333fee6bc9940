//! The agent: validate, apply, run the controllers, restore on exit.
//!
//! Call order: [`run`] reads the host and builds the plan (nothing written yet; any error
//! ends here), binds the metrics endpoint, creates the state file, applies the plan, starts
//! the kdamonds, then loops every `interval` until one of [`crate::signals::RESTORING`], and restores
//! every recorded setting before returning. A failure (or a panic) after the first write
//! restores too.

use crate::config::AgentConfig;
use crate::controller::{Controller, ControllerParams, HostMemoryOps};
use crate::damon::{stat_all, DamonSysfs, KdamondSpec};
use crate::fs::HostFs;
use crate::metrics::{self, MetricsInput, Snapshot};
use crate::plan::{self, Plan};
use crate::state::{Saved, StateRecorder};
use crate::Error;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tiermem_core::damon::OpsKind;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub dry_run: bool,
    /// Overrides the config's `state_file`.
    pub state_file: Option<PathBuf>,
    /// Stop after this many ticks (tests); `None` runs until a signal.
    pub max_ticks: Option<u64>,
    /// Where to report the run's progress ([`Event`]), if anywhere.
    pub events: Option<std::sync::mpsc::Sender<Event>>,
}

/// What a run reports as it goes (`tiermem agent --simulate` prints them). An observer:
/// nothing the agent decides depends on whether anyone listens.
#[derive(Clone, Debug)]
pub enum Event {
    /// The metrics endpoint listens here.
    Listening(std::net::SocketAddr),
    /// The plan is applied and the kdamonds are started.
    Applied,
    /// Tick `n` ended; `metrics` is the text the endpoint serves now.
    Tick { n: u64, metrics: String },
}

fn report(opts: &RunOptions, e: Event) {
    if let Some(tx) = &opts.events {
        let _ = tx.send(e);
    }
}

/// The kdamond layout for the current targets: own kdamond, process reclaim, then one per
/// tiering target (tried regions carry no target id). Returns the specs and, for each
/// tiering target, its kdamond index.
pub fn layout(cfg: &AgentConfig, fs: &HostFs) -> (Vec<KdamondSpec>, Vec<(i32, usize)>) {
    let mut specs = Vec::new();
    if let Some(d) = &cfg.damon {
        let pids = if d.ops == OpsKind::Vaddr {
            plan::resolve_targets(fs, &d.targets)
        } else {
            Vec::new()
        };
        if d.ops == OpsKind::Paddr || !pids.is_empty() {
            specs.push(KdamondSpec {
                purpose: "own".into(),
                ops: d.ops,
                attrs: d.attrs.clone(),
                pids,
                regions: d.regions.clone(),
                schemes: d.schemes.clone(),
            });
        }
    }
    if let Some(p) = cfg.reclaim.as_ref().and_then(|r| r.processes.as_ref()) {
        let pids = plan::resolve_targets(fs, &p.targets);
        if !pids.is_empty() {
            specs.push(KdamondSpec {
                purpose: "reclaim".into(),
                ops: OpsKind::Vaddr,
                attrs: p.attrs.clone(),
                pids,
                regions: Vec::new(),
                schemes: vec![p.scheme()],
            });
        }
    }
    let mut tiering = Vec::new();
    if let Some(t) = &cfg.tiering {
        let pids = plan::resolve_targets(fs, &t.targets);
        let room = crate::config::limits::MAX_KDAMONDS.saturating_sub(specs.len());
        if pids.len() > room {
            tracing::warn!(
                targets = pids.len(),
                managed = room,
                "more tiering targets than kdamonds allowed ({}); the lowest pids are managed",
                crate::config::limits::MAX_KDAMONDS
            );
        }
        for pid in pids.into_iter().take(room) {
            tiering.push((pid, specs.len()));
            specs.push(KdamondSpec {
                purpose: format!("tiering-{pid}"),
                ops: OpsKind::Vaddr,
                attrs: t.attrs.clone(),
                pids: vec![pid],
                regions: Vec::new(),
                schemes: vec![stat_all()],
            });
        }
    }
    (specs, tiering)
}

fn controller_params(cfg: &AgentConfig, p: &Plan) -> Option<ControllerParams> {
    let t = cfg.tiering.as_ref()?;
    Some(ControllerParams::from_config(
        t,
        cfg.interval.as_ms(),
        p.fast_nodes.clone(),
        p.slow_nodes.clone(),
        p.demotion_target.clone(),
    ))
}

/// Validate and apply `cfg`, run until a signal (or `max_ticks`), restore. With `dry_run`,
/// print what would be written and return.
pub fn run(cfg: &AgentConfig, fs: &HostFs, opts: &RunOptions) -> Result<(), Error> {
    let host = crate::host::read_host(fs)?;
    let plan = plan::build_plan(cfg, fs, &host)?;
    if opts.dry_run {
        for k in &cfg.sim_only {
            println!("simulation only, not applied: {k}");
        }
        print!("{}", plan::render_plan(&plan, fs));
        let (specs, _) = layout(cfg, fs);
        for (k, s) in specs.iter().enumerate() {
            println!(
                "kdamond {k} ({}): {:?} targets {:?}, {} scheme(s)",
                s.purpose,
                s.ops,
                s.pids,
                s.schemes.len()
            );
        }
        if let Some(cp) = controller_params(cfg, &plan) {
            println!(
                "tiering: promote ≤ {} MB/s, hot threshold {}‰ of {} accesses, demote quota {} bytes per {} ms",
                cp.rate_limit_bytes_per_s >> 20,
                cp.initial_threshold_permil,
                cp.max_nr_accesses,
                cp.demote_quota_bytes,
                cp.demote_quota_interval_ms
            );
        }
        if plan.uses_damon {
            println!(
                "DAMON sysfs files: not probed in a dry run (applying first builds and removes a throw-away kdamond to check them)"
            );
        }
        println!("dry run: nothing written");
        return Ok(());
    }
    for n in &plan.notes {
        tracing::info!("{n}");
    }
    let snap = Snapshot::default();
    if let Some(m) = &cfg.metrics {
        let addr = metrics::serve(&m.listen, snap.clone())?;
        tracing::info!(%addr, "metrics endpoint listening");
        report(opts, Event::Listening(addr));
    }
    crate::signals::install();
    let state_path = opts
        .state_file
        .clone()
        .unwrap_or_else(|| cfg.state_file.clone());
    let mut rec = StateRecorder::create(&state_path, fs)?;
    // A panic in the loop (a bug) must not leave the host changed: catch it, restore, and
    // report it as an error.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        apply_and_loop(cfg, fs, opts, &plan, &mut rec, &snap)
    }))
    .unwrap_or_else(|p| {
        Err(Error::Other(format!(
            "internal error (panic: {}); the changed settings were restored",
            tiermem_core::panic_message(p.as_ref())
        )))
    });
    let restored = rec.restore(fs);
    match (r, restored) {
        (Err(e), _) => Err(e),
        (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(rep)) => {
            tracing::info!(
                settings = rep.restored.len(),
                "restored every changed setting"
            );
            Ok(())
        }
    }
}

fn apply_and_loop(
    cfg: &AgentConfig,
    fs: &HostFs,
    opts: &RunOptions,
    plan: &Plan,
    rec: &mut StateRecorder,
    snap: &Snapshot,
) -> Result<(), Error> {
    let damon = DamonSysfs::new(fs.clone());
    if plan.uses_damon {
        // The last validation step builds (and removes) a throw-away kdamond: recorded
        // first, so that even a kill in between leaves nothing `--restore` cannot undo.
        rec.record(Saved::Damon {
            nr_kdamonds: damon.nr_kdamonds()?,
        })?;
        plan::check_damon_support(cfg, fs, plan)?;
    }
    plan::apply_plan(plan, fs, rec)?;
    let (mut specs, mut tiering_k) = (Vec::new(), Vec::new());
    if plan.uses_damon {
        (specs, tiering_k) = layout(cfg, fs);
        if !specs.is_empty() {
            damon.start(&specs)?;
        }
        tracing::info!(kdamonds = specs.len(), "kdamonds started");
    }
    report(opts, Event::Applied);
    let t0 = Instant::now();
    let mut controller = controller_params(cfg, plan).map(|p| Controller::new(p, 0));
    let mut ops = HostMemoryOps::new(fs.clone());
    let interval = Duration::from_nanos((cfg.interval.0 / 1000).max(10_000_000));
    let mut cg_next: Vec<u64> = vec![0; cfg.reclaim.as_ref().map_or(0, |r| r.cgroups.len())];
    let mut cg_bytes = 0u64;
    let mut ticks = 0u64;
    tracing::info!(interval_ms = interval.as_millis() as u64, "agent running");
    while !crate::signals::stop_requested() {
        let tick_start = Instant::now();
        let now_ms = t0.elapsed().as_millis() as u64;
        // Re-resolve targets every 10 ticks; rebuild the kdamonds when the set changed.
        if plan.uses_damon && ticks % 10 == 9 {
            let (new_specs, new_k) = layout(cfg, fs);
            let exited = specs.iter().enumerate().any(|(k, _)| !damon.is_on(k));
            if new_specs != specs || exited {
                tracing::info!(
                    kdamonds = new_specs.len(),
                    "targets changed; rebuilding kdamonds"
                );
                damon.stop_all(0)?;
                if !new_specs.is_empty() {
                    damon.start(&new_specs)?;
                }
                (specs, tiering_k) = (new_specs, new_k);
            }
        }
        if let Some(c) = controller.as_mut() {
            let mut targets = BTreeMap::new();
            for &(pid, k) in &tiering_k {
                match damon.tried_regions(k, 0) {
                    Ok(r) => {
                        targets.insert(pid, r);
                    }
                    Err(e) => tracing::debug!(pid, error = %e, "no regions (target gone?)"),
                }
            }
            c.tick(now_ms, &targets, &mut ops)
                .map_err(|e| Error::Other(format!("tiering controller: {e}")))?;
        }
        if let Some(r) = &cfg.reclaim {
            for (i, cg) in r.cgroups.iter().enumerate() {
                if now_ms < cg_next[i] {
                    continue;
                }
                cg_next[i] = now_ms + cg.interval.as_ms();
                let total: u64 = crate::host::read_nodes(fs)?
                    .iter()
                    .map(|n| n.mem_total_bytes)
                    .sum();
                let free: u64 = crate::host::read_nodes(fs)?
                    .iter()
                    .map(|n| n.mem_free_bytes)
                    .sum();
                if total > 0 && free * 1000 / total >= cg.free_below_permil {
                    continue;
                }
                let kp = crate::fs::cgroup_kpath(&cg.path).map_err(Error::Other)?;
                match fs.write(&format!("{kp}/memory.reclaim"), &cg.bytes.0.to_string()) {
                    Ok(()) => cg_bytes += cg.bytes.0,
                    // EAGAIN: the kernel reclaimed less than asked (mm/memcontrol.c memory_reclaim).
                    Err(e) => {
                        tracing::debug!(cgroup = %cg.path.display(), error = %e, "memory.reclaim short")
                    }
                }
            }
        }
        let mut scheme_stats = Vec::new();
        for (k, s) in specs.iter().enumerate() {
            if s.purpose.starts_with("tiering") {
                continue;
            }
            for i in 0..s.schemes.len() {
                if let Ok(st) = damon.scheme_stats(k, i) {
                    scheme_stats.push((s.purpose.clone(), i, st));
                }
            }
        }
        ticks += 1;
        if cfg.metrics.is_some() || ticks.is_multiple_of(30) {
            let text = metrics::render(
                fs,
                &MetricsInput {
                    controller: controller.as_ref().map(|c| &c.stats),
                    targets: tiering_k.len(),
                    schemes: &scheme_stats,
                    cgroup_reclaimed_bytes: cg_bytes,
                    ticks,
                },
            );
            if opts.events.is_some() {
                report(
                    opts,
                    Event::Tick {
                        n: ticks,
                        metrics: text.clone(),
                    },
                );
            }
            snap.set(text);
        }
        if let Some(c) = &controller {
            tracing::debug!(
                promoted = c.stats.promoted_bytes,
                demoted = c.stats.demoted_bytes,
                candidates = c.stats.candidate_bytes,
                threshold = c.stats.threshold_permil,
                "tick"
            );
            if ticks.is_multiple_of(10) {
                tracing::info!(
                    promoted_bytes = c.stats.promoted_bytes,
                    demoted_bytes = c.stats.demoted_bytes,
                    rate_limited_bytes = c.stats.rate_limited_bytes,
                    threshold_permil = c.stats.threshold_permil,
                    cpu_s = metrics::self_cpu_seconds(),
                    "controller"
                );
            }
        }
        if opts.max_ticks.is_some_and(|m| ticks >= m) {
            break;
        }
        // Sleep in short steps so a signal is honoured quickly.
        while !crate::signals::stop_requested() && tick_start.elapsed() < interval {
            std::thread::sleep(Duration::from_millis(20).min(interval));
        }
    }
    tracing::info!("stopping: restoring settings");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake_two_node;

    #[test]
    fn run_applies_then_restores_on_exit() {
        let t = fake_two_node();
        let fs = t.fs();
        let cfg = AgentConfig::from_toml_str(
            "interval = \"10ms\"\n[numa_balancing]\nmode = \"normal\"\ndemotion_enabled = true\n[weighted_interleave]\nsource = \"hmat\"\n",
            "t.toml",
        )
        .unwrap();
        let sp = t.dir.path().join("state");
        run(
            &cfg,
            &fs,
            &RunOptions {
                state_file: Some(sp.clone()),
                max_ticks: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
        assert_eq!(t.get("/sys/kernel/mm/numa/demotion_enabled"), "false");
        assert_eq!(
            t.get("/sys/kernel/mm/mempolicy/weighted_interleave/node0"),
            "1"
        );
        assert!(!sp.exists());
    }

    #[test]
    fn a_failed_write_restores_what_was_written() {
        let t = fake_two_node();
        let fs = t.fs();
        let cfg = AgentConfig::from_toml_str(
            "[numa_balancing]\nmode = \"normal\"\ndemotion_enabled = true\n",
            "t.toml",
        )
        .unwrap();
        let sp = t.dir.path().join("state");
        // The second write will fail: its file turns into a directory after validation.
        let host = crate::host::read_host(&fs).unwrap();
        let p = plan::build_plan(&cfg, &fs, &host).unwrap();
        let dp = fs.path(crate::host::DEMOTION_ENABLED);
        std::fs::remove_file(&dp).unwrap();
        std::fs::create_dir(&dp).unwrap();
        let mut rec = StateRecorder::create(&sp, &fs).unwrap();
        assert!(plan::apply_plan(&p, &fs, &mut rec).is_err());
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "1");
        rec.restore(&fs).unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
    }

    /// Every file of a fake tree with its content.
    fn tree_contents(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn dry_run_writes_nothing() {
        let t = fake_two_node();
        crate::damon::fake_kdamond_6_12(&t);
        let cfg = AgentConfig::from_toml_str(
            "[numa_balancing]\nmode = \"normal\"\n[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"stat\"\n",
            "t.toml",
        )
        .unwrap();
        let before = tree_contents(t.dir.path());
        let sp = t.dir.path().join("state");
        run(
            &cfg,
            &t.fs(),
            &RunOptions {
                dry_run: true,
                state_file: Some(sp.clone()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
        assert!(!sp.exists());
        assert!(
            tree_contents(t.dir.path()) == before,
            "a dry run must not write, not even the DAMON probe kdamond"
        );
    }

    #[test]
    fn a_scheme_the_kernel_lacks_is_refused_before_any_setting_is_written() {
        let t = fake_two_node();
        crate::damon::fake_kdamond_6_12(&t);
        // A goal's nid needs 6.16; the fake tree is 6.12. NUMA balancing must stay 0.
        let cfg = AgentConfig::from_toml_str(
            "[numa_balancing]\nmode = \"normal\"\n[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\nquotas = { goals = [{ metric = \"node_mem_free_bp\", target_value = 50, nid = 0 }] }\n",
            "t.toml",
        )
        .unwrap();
        let sp = t.dir.path().join("state");
        let e = run(
            &cfg,
            &t.fs(),
            &RunOptions {
                state_file: Some(sp.clone()),
                max_ticks: Some(1),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.is_input_error(), "{e}");
        assert!(e.to_string().contains("quotas.goals[0].nid"), "{e}");
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
        assert_eq!(
            t.get(&format!("{}/nr_kdamonds", crate::damon::KDAMONDS)),
            "0",
            "the probe kdamond is gone"
        );
        assert!(!sp.exists(), "the state file is removed after the restore");
    }

    #[test]
    fn layout_gives_each_tiering_target_its_own_kdamond() {
        let t = fake_two_node();
        t.set("/proc/100/comm", "hotcold");
        t.set("/proc/101/comm", "hotcold");
        let cfg = AgentConfig::from_toml_str(
            "[tiering]\ntargets = { names = [\"hotcold\"] }\n[reclaim.processes]\ntargets = { pids = [100] }\nmin_age = \"2s\"\n",
            "t.toml",
        )
        .unwrap();
        let (specs, k) = layout(&cfg, &t.fs());
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].purpose, "reclaim");
        let s = &specs[0].schemes[0];
        assert_eq!(s.action, tiermem_core::damon::DamosAction::Pageout);
        assert_eq!(s.access_pattern.min_age, 20, "2 s at 100 ms aggregation");
        assert_eq!(k, vec![(100, 1), (101, 2)]);
    }
}
