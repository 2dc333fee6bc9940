//! Validate a config against the running kernel, then apply it all-or-nothing.
//!
//! [`build_plan`] reads the host, checks every setting (feature present, node exists, value
//! in range, file writable, no conflict with the kernel's state) and returns the full list of
//! writes; nothing is written while any check fails. [`apply_plan`] records each original in
//! the state file and then writes; if a write fails mid-way, everything written so far is
//! restored before the error is returned.

use crate::config::{
    AgentConfig, KsmConfig, NumaBalancingConfig, ReclaimConfig, TargetSelector, TieringConfig,
    WeightSource, WeightedInterleaveConfig,
};
use crate::fs::HostFs;
use crate::host::{self, HostTopology, DEBUGFS_NB, KSM_DIR, WI_DIR};
use crate::state::{ksm_set_merge_across_nodes, Saved, StateRecorder};
use crate::weights;
use crate::Error;
use std::collections::BTreeMap;
use tiermem_core::interleave::{node_perf_mbps, reduce_interleave_weights};

/// One change to the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Record the file's value, then write `value`.
    Write { path: String, value: String },
    /// A trigger that has nothing to restore (`commit_inputs`).
    Trigger { path: String, value: String },
    /// The KSM `merge_across_nodes` sequence (unmerge, change, restart).
    KsmMergeAcrossNodes {
        value: String,
        run: String,
        unmerge: bool,
    },
}

/// Everything the agent will do, decided before anything is written.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Informational lines for logs and dry runs (derived weights, chosen nodes...).
    pub notes: Vec<String>,
    /// The tiering controller's node roles (resolved defaults).
    pub fast_nodes: Vec<u32>,
    pub slow_nodes: Vec<u32>,
    /// Demotion target of each fast node, from the kernel's rules.
    pub demotion_target: BTreeMap<u32, u32>,
    /// Whether kdamonds will be used (own, tiering, process reclaim).
    pub uses_damon: bool,
}

fn feature(feature: &str, path: &str, hint: &str) -> Error {
    Error::Feature {
        feature: feature.into(),
        path: path.into(),
        hint: if hint.is_empty() {
            String::new()
        } else {
            format!("; {hint}")
        },
    }
}

fn cfg_err(key: &str, msg: impl Into<String>) -> Error {
    Error::Config(tiermem_core::ConfigError::invalid(key, msg))
}

struct Builder<'a> {
    fs: &'a HostFs,
    plan: Plan,
    /// Every problem found so far: a missing file or capability of one setting does not
    /// stop the check of the others, so a dry run lists them all at once.
    problems: Vec<Error>,
}

impl Builder<'_> {
    /// Keep a section's (or check's) error and go on with the next one.
    fn keep(&mut self, r: Result<(), Error>) {
        if let Err(e) = r {
            self.problems.push(e);
        }
    }

    /// Add a write after checking the file exists and is writable; a no-op write (same value)
    /// is dropped so an unchanged setting is neither recorded nor restored. A missing file
    /// or capability is kept as a problem and the section goes on; only a failed read
    /// returns an error.
    fn write(&mut self, path: &str, value: String, feat: &str, hint: &str) -> Result<(), Error> {
        let Some(cur) = self.fs.read_opt(path)? else {
            self.problems.push(feature(feat, path, hint));
            return Ok(());
        };
        if !self.fs.writable(path) {
            let cap = if path.starts_with("/proc/sys/kernel/numa_balancing") {
                "root: CAP_SYS_ADMIN and write access to /proc/sys"
            } else if path.starts_with("/sys/kernel/debug") {
                "root (debugfs is root-only)"
            } else {
                "root (write access to sysfs/procfs: CAP_DAC_OVERRIDE)"
            };
            self.problems.push(Error::Capability {
                what: format!("writing {path}"),
                capability: cap.into(),
            });
            return Ok(());
        }
        if cur.trim() != value.trim() {
            self.plan.actions.push(Action::Write {
                path: path.to_string(),
                value,
            });
        }
        Ok(())
    }
}

/// Validate `cfg` against the host and list the writes. Runs the bandwidth probe when the
/// config asks for probed weights (it reads only; nothing is written). The DAMON sysfs file
/// probe, which writes, is separate: [`check_damon_support`].
///
/// Every section is checked even when an earlier one failed: the error lists every problem
/// found ([`Error::Problems`] when there are several), so one dry run shows them all.
pub fn build_plan(cfg: &AgentConfig, fs: &HostFs, h: &HostTopology) -> Result<Plan, Error> {
    let mut b = Builder {
        fs,
        plan: Plan::default(),
        problems: Vec::new(),
    };
    if let Some(nb) = &cfg.numa_balancing {
        let r = numa_balancing(&mut b, nb);
        b.keep(r);
    }
    if let Some(wi) = &cfg.weighted_interleave {
        let r = weighted_interleave(&mut b, wi, h);
        b.keep(r);
    }
    if let Some(k) = &cfg.ksm {
        let r = ksm(&mut b, k);
        b.keep(r);
    }
    let r = damon_modules(&mut b, cfg);
    b.keep(r);
    let r = own_kdamonds(&mut b, cfg);
    b.keep(r);
    b.keep(check_targets(fs, cfg));
    if let Some(t) = &cfg.tiering {
        let r = tiering(&mut b, cfg, t, h);
        b.keep(r);
    }
    if let Some(r) = &cfg.reclaim {
        b.keep(reclaim_cgroups(fs, r));
    }
    if let Some(d) = &cfg.damon {
        b.keep(damon_nodes(d, h));
    }
    match b.problems.len() {
        0 => Ok(b.plan),
        1 => Err(b.problems.remove(0)),
        _ => Err(Error::Problems(b.problems)),
    }
}

/// `[weighted_interleave]`: the weights from the config, HMAT or a bandwidth probe, and the
/// `auto` switch recorded first.
fn weighted_interleave(
    b: &mut Builder,
    wi: &WeightedInterleaveConfig,
    h: &HostTopology,
) -> Result<(), Error> {
    let fs = b.fs;
    if !fs.exists(WI_DIR) {
        return Err(feature("weighted interleave (Linux 6.9+)", WI_DIR, ""));
    }
    let mem_nodes = h.memory_nodes();
    let weights: BTreeMap<u32, u64> = match wi.source {
        WeightSource::Given => {
            let mut m = BTreeMap::new();
            for (k, &v) in &wi.weights {
                let Some(n) = k.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else {
                    return Err(cfg_err(
                        &format!("weighted_interleave.weights.{k}"),
                        "keys are node<N>",
                    ));
                };
                if !fs.exists(&format!("{WI_DIR}/node{n}")) {
                    return Err(cfg_err(
                        &format!("weighted_interleave.weights.{k}"),
                        format!("node {n} has no weight file (not a memory node of this machine; memory nodes: {})", crate::fs::format_list(&mem_nodes)),
                    ));
                }
                m.insert(n, v);
            }
            m
        }
        WeightSource::Hmat => {
            let mut bw = BTreeMap::new();
            for &n in &mem_nodes {
                let Some(node) = h.nodes.iter().find(|x| x.id == n) else {
                    continue;
                };
                let a = node.access1.as_ref().filter(|a| {
                    a.read_bandwidth_mbps.unwrap_or(0) > 0
                        && a.write_bandwidth_mbps.unwrap_or(0) > 0
                });
                let Some(a) = a else {
                    return Err(feature(
                        &format!("HMAT bandwidth of node {n}"),
                        &format!(
                            "{}/node{n}/access1/initiators/read_bandwidth",
                            host::NODE_DIR
                        ),
                        "use source = \"probe\" or \"given\"",
                    ));
                };
                // access1 reports MB/s; node_perf_mbps takes bytes/s and returns
                // min(read, write) in MB/s, as mempolicy_set_node_perf does.
                let mbps = |v: Option<u64>| v.unwrap_or(0) as f64 * 1e6;
                bw.insert(
                    n,
                    node_perf_mbps(mbps(a.read_bandwidth_mbps), mbps(a.write_bandwidth_mbps)),
                );
            }
            auto_weights(&mut b.plan, h, "HMAT", &bw)
        }
        WeightSource::Probe => {
            let mut bw = BTreeMap::new();
            for &n in &mem_nodes {
                bw.insert(
                    n,
                    weights::probe_node_bandwidth(n, wi.probe_size.0 as usize, 3)?,
                );
            }
            auto_weights(&mut b.plan, h, "probed", &bw)
        }
    };
    // On 6.16+ writing a weight switches the kernel to manual mode: record `auto` first
    // so that restoring it (last) hands the table back to the kernel.
    if let Some(auto) = crate::host::wi_auto_file(fs) {
        b.write(auto, "false".into(), "weighted interleave auto mode", "")?;
    }
    for (n, w) in weights {
        b.write(
            &format!("{WI_DIR}/node{n}"),
            w.to_string(),
            "weighted interleave weight",
            "",
        )?;
    }
    Ok(())
}

/// `[ksm]`: the knobs, `merge_across_nodes` (its unmerge sequence), then `run`.
fn ksm(b: &mut Builder, k: &KsmConfig) -> Result<(), Error> {
    let fs = b.fs;
    if !fs.exists(&format!("{KSM_DIR}/run")) {
        return Err(feature("KSM (CONFIG_KSM)", &format!("{KSM_DIR}/run"), ""));
    }
    let knobs: [(&str, Option<u64>); 6] = [
        ("pages_to_scan", k.pages_to_scan),
        ("sleep_millisecs", k.sleep_millisecs),
        ("max_page_sharing", k.max_page_sharing),
        (
            "stable_node_chains_prune_millisecs",
            k.stable_node_chains_prune_millisecs,
        ),
        ("use_zero_pages", k.use_zero_pages.map(u64::from)),
        ("smart_scan", k.smart_scan.map(u64::from)),
    ];
    for (name, v) in knobs {
        if let Some(v) = v {
            b.write(
                &format!("{KSM_DIR}/{name}"),
                v.to_string(),
                &format!("KSM {name}"),
                "",
            )?;
        }
    }
    let cur_run = fs.read(&format!("{KSM_DIR}/run"))?.trim().to_string();
    let final_run = k.run.map(|r| r.to_string()).unwrap_or(cur_run.clone());
    if let Some(mac) = k.merge_across_nodes {
        let path = format!("{KSM_DIR}/merge_across_nodes");
        let Some(cur) = fs.read_opt(&path)? else {
            return Err(feature("KSM merge_across_nodes (CONFIG_NUMA)", &path, ""));
        };
        if cur.trim() != mac.to_string() {
            let shared = fs
                .read_u64_opt(&format!("{KSM_DIR}/pages_shared"))?
                .unwrap_or(0);
            if shared > 0 && !k.allow_unmerge {
                return Err(cfg_err(
                    "ksm.merge_across_nodes",
                    format!("KSM has {shared} shared pages; the kernel refuses the change (EBUSY) unless everything is unmerged first: set ksm.allow_unmerge = true"),
                ));
            }
            if !fs.writable(&path) {
                return Err(Error::Capability {
                    what: format!("writing {path}"),
                    capability: "root".into(),
                });
            }
            // The sequence leaves `run` as it was; a configured `run` is its own write
            // (recorded with the true original).
            b.plan.actions.push(Action::KsmMergeAcrossNodes {
                value: mac.to_string(),
                run: cur_run.clone(),
                unmerge: k.allow_unmerge,
            });
        }
    }
    if k.run.is_some() {
        b.write(&format!("{KSM_DIR}/run"), final_run, "KSM run", "")?;
    }
    Ok(())
}

/// `[damon_reclaim]`, `[damon_lru_sort]`: the modules' writable parameters, `enabled` last,
/// `commit_inputs` when a module is already running.
fn damon_modules(b: &mut Builder, cfg: &AgentConfig) -> Result<(), Error> {
    let fs = b.fs;
    for (module, params) in [
        ("damon_reclaim", &cfg.damon_reclaim),
        ("damon_lru_sort", &cfg.damon_lru_sort),
    ] {
        let Some(params) = params else { continue };
        let dir = format!("/sys/module/{module}/parameters");
        if !fs.exists(&dir) {
            return Err(feature(
                &format!("{module} (CONFIG_DAMON_{})", module[6..].to_uppercase()),
                &dir,
                "",
            ));
        }
        let mut enabled = None;
        for (k, v) in params {
            let value = match v {
                toml::Value::Boolean(x) => if *x { "Y" } else { "N" }.to_string(),
                toml::Value::Integer(i) if *i >= 0 => i.to_string(),
                toml::Value::String(s) => s.clone(),
                other => {
                    return Err(cfg_err(
                        &format!("{module}.{k}"),
                        format!("{other} is not a boolean, non-negative integer or string"),
                    ))
                }
            };
            // The name becomes part of a path: only the module's known writable parameters.
            let known = crate::allow::damon_module_params(module).unwrap_or_default();
            if !known.contains(&k.as_str()) {
                return Err(cfg_err(
                    &format!("{module}.{k}"),
                    format!(
                        "not a writable parameter of {module} (read-only statistics and commit_inputs are the agent's; known: {})",
                        known.join(", ")
                    ),
                ));
            }
            if !fs.exists(&format!("{dir}/{k}")) {
                return Err(cfg_err(
                    &format!("{module}.{k}"),
                    format!("this kernel's {module} has no parameter {k}"),
                ));
            }
            if k == "enabled" {
                enabled = Some(value);
                continue;
            }
            b.write(&format!("{dir}/{k}"), value, module, "")?;
        }
        let running = fs
            .read_opt(&format!("{dir}/enabled"))?
            .and_then(|s| host::parse_bool(&s))
            .unwrap_or(false);
        if module == "damon_reclaim" && enabled.as_deref() == Some("Y") {
            note_damon_reclaim_regression(fs, &mut b.plan.notes)?;
        }
        if let Some(e) = enabled {
            b.write(&format!("{dir}/enabled"), e, module, "")?;
        }
        if running && fs.exists(&format!("{dir}/commit_inputs")) {
            b.plan.actions.push(Action::Trigger {
                path: format!("{dir}/commit_inputs"),
                value: "Y".into(),
            });
        }
    }
    Ok(())
}

/// The agent's own kdamonds (`[damon]`, `[tiering]`, `[reclaim.processes]`) need an unused
/// DAMON sysfs and no module running an exclusive context.
fn own_kdamonds(b: &mut Builder, cfg: &AgentConfig) -> Result<(), Error> {
    let fs = b.fs;
    // kdamonds: own, tiering, process reclaim.
    let need_damon = cfg.damon.is_some()
        || cfg.tiering.is_some()
        || cfg.reclaim.as_ref().is_some_and(|r| r.processes.is_some());
    if need_damon {
        let p = format!("{}/nr_kdamonds", crate::damon::KDAMONDS);
        let Some(n) = fs.read_u64_opt(&p)? else {
            return Err(feature("DAMON sysfs (CONFIG_DAMON_SYSFS)", &p, ""));
        };
        if n != 0 {
            return Err(Error::Other(format!(
                "DAMON sysfs already has {n} kdamond(s) configured by another tool; the agent only uses an unused DAMON sysfs (write 0 to {p} once they are off)"
            )));
        }
        if !fs.writable(&p) {
            return Err(Error::Capability {
                what: format!("writing {p}"),
                capability: "root (CAP_SYS_ADMIN)".into(),
            });
        }
        for module in ["damon_reclaim", "damon_lru_sort"] {
            let running = fs
                .read_opt(&format!("/sys/module/{module}/parameters/enabled"))?
                .and_then(|s| host::parse_bool(&s))
                .unwrap_or(false);
            if running {
                return Err(Error::Other(format!(
                    "{module} is running an exclusive DAMON context; the agent's kdamonds cannot start beside it (disable it, or drop [damon]/[tiering]/[reclaim.processes])"
                )));
            }
        }
        b.plan.uses_damon = true;
    }
    Ok(())
}

/// Every target selector's pids exist and its cgroups are cgroup v2 directories.
fn check_targets(fs: &HostFs, cfg: &AgentConfig) -> Result<(), Error> {
    for (key, sel) in cfg.target_selectors() {
        for &pid in &sel.pids {
            if !fs.exists(&format!("/proc/{pid}")) {
                return Err(cfg_err(
                    &format!("{key}.targets.pids"),
                    format!("no process {pid}"),
                ));
            }
        }
        for (i, c) in sel.cgroups.iter().enumerate() {
            let kp = crate::fs::cgroup_kpath(c)
                .map_err(|m| cfg_err(&format!("{key}.targets.cgroups[{i}]"), m))?;
            if !fs.exists(&format!("{kp}/cgroup.procs")) {
                return Err(cfg_err(
                    &format!("{key}.targets.cgroups[{i}]"),
                    format!("{} is not a cgroup v2 directory", fs.path(&kp).display()),
                ));
            }
        }
    }
    Ok(())
}

/// `[tiering]`: the target count, NUMA balancing off, the fast and slow nodes and each fast
/// node's demotion target, and CAP_SYS_NICE for `move_pages`.
fn tiering(
    b: &mut Builder,
    cfg: &AgentConfig,
    t: &TieringConfig,
    h: &HostTopology,
) -> Result<(), Error> {
    let fs = b.fs;
    // One kdamond per tiering target: refuse a selector that matches more processes
    // than the host should run kdamonds for (a later match is capped, with a warning).
    let n = resolve_targets(fs, &t.targets).len();
    if n > crate::config::limits::MAX_KDAMONDS {
        return Err(cfg_err(
            "tiering.targets",
            format!(
                "matches {n} processes; the agent runs one kdamond per tiering target, at most {} (narrow the selector)",
                crate::config::limits::MAX_KDAMONDS
            ),
        ));
    }
    // The kernel's NUMA balancing would move the same pages (the config is checked
    // statically; here the host's current mode, when the config leaves it alone).
    let mode_set = cfg
        .numa_balancing
        .as_ref()
        .is_some_and(|n| n.mode.is_some());
    if !mode_set && h.settings.numa_balancing.unwrap_or(0) != 0 {
        return Err(cfg_err(
            "tiering",
            format!(
                "NUMA balancing is on (kernel.numa_balancing = {}) and would migrate the targets' pages too: add [numa_balancing] mode = \"disabled\"",
                h.settings.numa_balancing.unwrap_or(0)
            ),
        ));
    }
    let mem = h.memory_nodes();
    for (key, list) in [
        ("tiering.fast_nodes", &t.fast_nodes),
        ("tiering.slow_nodes", &t.slow_nodes),
    ] {
        if let Some(n) = list.iter().find(|n| !mem.contains(n)) {
            return Err(cfg_err(
                key,
                format!(
                    "node {n} is not a memory node of this machine (memory nodes: {})",
                    crate::fs::format_list(&mem)
                ),
            ));
        }
    }
    // The kernel's own memory tiers decide what is top tier (`node_is_toptier`); what
    // tiermem-core computes from HMAT stands in only where sysfs shows no tiers.
    let kernel_top = h
        .tiers
        .iter()
        .min_by_key(|t| t.adistance_start)
        .map(|t| t.nodes.clone());
    let top: Vec<u32> = match (kernel_top, &h.computed) {
        (Some(nodes), _) => nodes,
        (None, Some(c)) => c.top_tier_nodes.clone(),
        (None, None) => h
            .nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .map(|n| n.id)
            .collect(),
    };
    b.plan.fast_nodes = if t.fast_nodes.is_empty() {
        mem.iter().copied().filter(|n| top.contains(n)).collect()
    } else {
        t.fast_nodes.clone()
    };
    b.plan.slow_nodes = if t.slow_nodes.is_empty() {
        mem.iter()
            .copied()
            .filter(|n| !b.plan.fast_nodes.contains(n))
            .collect()
    } else {
        t.slow_nodes.clone()
    };
    if b.plan.slow_nodes.is_empty() {
        return Err(cfg_err(
            "tiering",
            "this machine has no slow memory node to promote from",
        ));
    }
    for &f in &b.plan.fast_nodes {
        // The kernel's preferred demotion target, else the nearest slow node.
        let pref = h
            .computed
            .as_ref()
            .and_then(|c| c.demotion_targets.get(&f))
            .and_then(|v| v.iter().copied().find(|n| b.plan.slow_nodes.contains(n)));
        let dist = |n: u32| {
            h.nodes
                .iter()
                .find(|x| x.id == f)
                .and_then(|x| x.distances.get(n as usize).copied())
                .unwrap_or(u32::MAX)
        };
        let nearest = b
            .plan
            .slow_nodes
            .iter()
            .copied()
            .min_by_key(|&n| (dist(n), n));
        if let Some(d) = pref.or(nearest) {
            b.plan.demotion_target.insert(f, d);
        }
    }
    b.plan.notes.push(format!(
        "tiering controller: fast nodes {:?}, slow nodes {:?}, demotion targets {:?}",
        b.plan.fast_nodes, b.plan.slow_nodes, b.plan.demotion_target
    ));
    crate::sys::require_cap(
        fs,
        crate::sys::CAP_SYS_NICE,
        "CAP_SYS_NICE",
        "moving pages of other processes (move_pages)",
    )?;
    Ok(())
}

/// `[[reclaim.cgroups]]`: each cgroup has `memory.reclaim`.
fn reclaim_cgroups(fs: &HostFs, r: &ReclaimConfig) -> Result<(), Error> {
    for (i, c) in r.cgroups.iter().enumerate() {
        let kp = crate::fs::cgroup_kpath(&c.path)
            .map_err(|m| cfg_err(&format!("reclaim.cgroups[{i}].path"), m))?;
        let f = fs.path(&format!("{kp}/memory.reclaim"));
        if !f.exists() {
            return Err(Error::Feature {
                feature: format!("cgroup v2 memory.reclaim (Linux 5.19+) for reclaim.cgroups[{i}]"),
                path: f.display().to_string(),
                hint: String::new(),
            });
        }
    }
    Ok(())
}

/// The last validation step, after [`build_plan`] and before any setting is written: the
/// DAMON sysfs files every configured kdamond needs exist on this kernel. It builds one
/// throw-away kdamond (off, no targets) and removes it again, so a dry run skips it.
pub fn check_damon_support(cfg: &AgentConfig, fs: &HostFs, plan: &Plan) -> Result<(), Error> {
    if !plan.uses_damon {
        return Ok(());
    }
    crate::damon::DamonSysfs::new(fs.clone()).check_support(&cfg.kdamonds())
}

/// The node ids of the own kdamond's schemes exist on this host: `target_nid` a memory
/// node (the migration destination), a goal's `nid` any node.
fn damon_nodes(d: &crate::config::DamonConfig, h: &HostTopology) -> Result<(), Error> {
    let mem = h.memory_nodes();
    let all: Vec<u32> = h.nodes.iter().map(|n| n.id).collect();
    let check = |key: String, n: u32, allowed: &[u32], what: &str| {
        if allowed.contains(&n) {
            return Ok(());
        }
        Err(cfg_err(
            &key,
            format!(
                "node {n} is not {what} ({})",
                crate::fs::format_list(allowed)
            ),
        ))
    };
    for (i, s) in d.schemes.iter().enumerate() {
        if let Some(n) = s.target_nid {
            let key = format!("damon.schemes[{i}].target_nid");
            check(
                key,
                u32::from(n.0),
                &mem,
                "a memory node of this machine: memory nodes",
            )?;
        }
        for (j, g) in s.quotas.goals.iter().enumerate() {
            if let Some(n) = g.nid {
                let key = format!("damon.schemes[{i}].quotas.goals[{j}].nid");
                check(key, u32::from(n.0), &all, "a node of this machine: nodes")?;
            }
        }
    }
    Ok(())
}

/// The weights a 6.16+ kernel's `auto` mode derives from `bw` (MB/s per memory node):
/// `tiermem_core::interleave::reduce_interleave_weights` over node ids, with the host's
/// `has_memory` (nodes without memory take no share and get no weight file).
fn auto_weights(
    plan: &mut Plan,
    h: &HostTopology,
    what: &str,
    bw: &BTreeMap<u32, u64>,
) -> BTreeMap<u32, u64> {
    let len = h.nodes.iter().map(|n| n.id as usize + 1).max().unwrap_or(0);
    let mut by_id = vec![0u64; len];
    let mut has_memory = vec![false; len];
    for n in &h.nodes {
        has_memory[n.id as usize] = n.has_memory;
        by_id[n.id as usize] = bw.get(&n.id).copied().unwrap_or(0);
    }
    let w = reduce_interleave_weights(&by_id, &has_memory);
    let out: BTreeMap<u32, u64> = bw.keys().map(|&n| (n, u64::from(w[n as usize]))).collect();
    plan.notes.push(format!(
        "weights from {what} bandwidth {:?} MB/s: {:?}",
        bw.values().collect::<Vec<_>>(),
        out.values().collect::<Vec<_>>()
    ));
    out
}

fn numa_balancing(b: &mut Builder, nb: &NumaBalancingConfig) -> Result<(), Error> {
    if let Some(m) = nb.mode {
        b.write(
            host::NUMA_BALANCING,
            m.value().to_string(),
            "NUMA balancing (CONFIG_NUMA_BALANCING)",
            "",
        )?;
    }
    if let Some(v) = nb.promote_rate_limit_mbps {
        b.write(
            host::PROMOTE_RATE_LIMIT,
            v.to_string(),
            "promotion rate limit (Linux 6.1+)",
            "",
        )?;
    }
    let dbg: [(&str, Option<u64>); 5] = [
        ("scan_delay_ms", nb.scan_delay_ms),
        ("scan_period_min_ms", nb.scan_period_min_ms),
        ("scan_period_max_ms", nb.scan_period_max_ms),
        ("scan_size_mb", nb.scan_size_mb),
        ("hot_threshold_ms", nb.hot_threshold_ms),
    ];
    for (k, v) in dbg {
        if let Some(v) = v {
            b.write(
                &format!("{DEBUGFS_NB}/{k}"),
                v.to_string(),
                &format!("NUMA balancing debugfs knob {k}"),
                "mount debugfs: mount -t debugfs none /sys/kernel/debug",
            )?;
        }
    }
    if let Some(d) = nb.demotion_enabled {
        // The kernel reads back `true`/`false`; write the same spelling.
        b.write(
            host::DEMOTION_ENABLED,
            d.to_string(),
            "demotion (Linux 5.15+)",
            "",
        )?;
    }
    if let Some(v) = nb.watermark_scale_factor {
        b.write(
            host::WATERMARK_SCALE_FACTOR,
            v.to_string(),
            "watermark_scale_factor",
            "",
        )?;
    }
    Ok(())
}

/// Resolve a selector to live pids (sorted, deduplicated): explicit pids that exist,
/// processes whose `comm` matches a name pattern, members of the cgroups.
pub fn resolve_targets(fs: &HostFs, sel: &TargetSelector) -> Vec<i32> {
    let mut out: Vec<i32> = sel
        .pids
        .iter()
        .copied()
        .filter(|p| fs.exists(&format!("/proc/{p}")))
        .collect();
    if !sel.names.is_empty() {
        if let Ok(rd) = std::fs::read_dir(fs.path("/proc")) {
            for e in rd.filter_map(|e| e.ok()) {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                if pid as u32 == std::process::id() {
                    continue;
                }
                let Ok(Some(comm)) = fs.read_opt(&format!("/proc/{pid}/comm")) else {
                    continue;
                };
                if sel
                    .names
                    .iter()
                    .any(|n| crate::config::glob_match(n, comm.trim()))
                {
                    out.push(pid);
                }
            }
        }
    }
    for c in &sel.cgroups {
        let Ok(kp) = crate::fs::cgroup_kpath(c) else {
            continue;
        };
        if let Ok(Some(s)) = fs.read_opt(&format!("{kp}/cgroup.procs")) {
            out.extend(s.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Render the plan for `--dry-run`.
pub fn render_plan(plan: &Plan, fs: &HostFs) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for n in &plan.notes {
        let _ = writeln!(o, "note: {n}");
    }
    for a in &plan.actions {
        match a {
            Action::Write { path, value } => {
                let cur = fs.read_opt(path).ok().flatten().unwrap_or_default();
                let _ = writeln!(o, "write {path}: {} -> {value}", cur.trim());
            }
            Action::Trigger { path, value } => {
                let _ = writeln!(o, "trigger {path} <- {value}");
            }
            Action::KsmMergeAcrossNodes {
                value,
                run,
                unmerge,
            } => {
                let _ = writeln!(
                    o,
                    "ksm merge_across_nodes -> {value} ({}then run = {run})",
                    if *unmerge {
                        "unmerge if pages are shared, "
                    } else {
                        ""
                    }
                );
            }
        }
    }
    if plan.uses_damon {
        let _ = writeln!(o, "damon: start the agent's kdamonds (DAMON sysfs)");
    }
    if plan.actions.is_empty() && !plan.uses_damon {
        let _ = writeln!(o, "nothing to change");
    }
    o
}

/// Apply the plan, recording every original first. On a failed write, restore what was
/// written and return the error (all-or-nothing).
pub fn apply_plan(plan: &Plan, fs: &HostFs, rec: &mut StateRecorder) -> Result<(), Error> {
    for a in &plan.actions {
        let r = apply_one(a, fs, rec);
        if let Err(e) = r {
            tracing::error!(error = %e, "apply failed; restoring what was changed");
            return Err(e);
        }
    }
    Ok(())
}

fn apply_one(a: &Action, fs: &HostFs, rec: &mut StateRecorder) -> Result<(), Error> {
    match a {
        Action::Write { path, value } => {
            let original = fs.read(path)?.trim().to_string();
            rec.record(Saved::File {
                path: path.clone(),
                original: kernel_readback(path, &original),
            })?;
            fs.write(path, value)?;
            tracing::info!(path = %path, value = %value, "set");
        }
        Action::Trigger { path, value } => fs.write(path, value)?,
        Action::KsmMergeAcrossNodes {
            value,
            run,
            unmerge,
        } => {
            let original = fs
                .read(&format!("{KSM_DIR}/merge_across_nodes"))?
                .trim()
                .to_string();
            let cur_run = fs.read(&format!("{KSM_DIR}/run"))?.trim().to_string();
            rec.record(Saved::KsmMergeAcrossNodes {
                original,
                run: cur_run,
            })?;
            ksm_set_merge_across_nodes(fs, value, run, *unmerge)?;
            tracing::info!(value = %value, "ksm merge_across_nodes set");
        }
    }
    Ok(())
}

/// Some files read back differently from what they accept; store a value that can be
/// written back. (debugfs and sysctl integers, `true`/`false` and `Y`/`N` all round-trip.)
fn kernel_readback(_path: &str, original: &str) -> String {
    original.to_string()
}

/// Linux 6.11–6.16's DAMON_RECLAIM drops its scheme when enabled (see
/// `tiermem_core::release`): say so in the plan, since the module will monitor and never
/// reclaim on such a host.
fn note_damon_reclaim_regression(fs: &HostFs, notes: &mut Vec<String>) -> Result<(), Error> {
    let release = fs
        .read_opt("/proc/sys/kernel/osrelease")?
        .and_then(|r| tiermem_core::release::KernelRelease::parse(&r).ok());
    if let Some(r) = release.filter(|r| r.damon_reclaim_drops_scheme()) {
        let note = format!(
            "damon_reclaim on Linux {r} drops its scheme when enabled (6.11 to 6.16, fixed in 6.17 by fed48693bdfe): it will monitor but never reclaim; use [damon] contexts (DAMON sysfs) instead"
        );
        tracing::warn!("{note}");
        notes.push(note);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{fake_two_node, read_host};

    fn plan_for(text: &str, t: &crate::fs::fake::FakeTree) -> Result<Plan, Error> {
        let cfg = AgentConfig::from_toml_str(text, "t.toml")?;
        let fs = t.fs();
        let h = read_host(&fs)?;
        let p = build_plan(&cfg, &fs, &h)?;
        check_damon_support(&cfg, &fs, &p)?;
        Ok(p)
    }

    #[test]
    fn numa_balancing_and_demotion_writes() {
        let t = fake_two_node();
        let p = plan_for(
            "[numa_balancing]\nmode = \"normal\"\nhot_threshold_ms = 500\ndemotion_enabled = true\npromote_rate_limit_mbps = 65536\n",
            &t,
        )
        .unwrap();
        let paths: Vec<String> = p
            .actions
            .iter()
            .map(|a| match a {
                Action::Write { path, value } => format!("{path}={value}"),
                _ => String::new(),
            })
            .collect();
        assert!(
            paths.contains(&"/proc/sys/kernel/numa_balancing=1".to_string()),
            "{paths:?}"
        );
        assert!(paths.contains(&format!("{DEBUGFS_NB}/hot_threshold_ms=500")));
        assert!(paths.contains(&"/sys/kernel/mm/numa/demotion_enabled=true".to_string()));
        // The rate limit already has that value: no write, nothing to restore.
        assert!(!paths.iter().any(|p| p.contains("rate_limit")));
    }

    #[test]
    fn hmat_weights_follow_the_kernel_reduction() {
        let t = fake_two_node();
        let p = plan_for("[weighted_interleave]\nsource = \"hmat\"\n", &t).unwrap();
        // 20000 : 5000 MB/s → 25 : 6.
        assert_eq!(
            p.actions,
            vec![
                Action::Write {
                    path: format!("{WI_DIR}/node0"),
                    value: "25".into()
                },
                Action::Write {
                    path: format!("{WI_DIR}/node1"),
                    value: "6".into()
                },
            ]
        );
    }

    /// The weight writes of a plan, as (node, weight).
    fn weight_writes(p: &Plan) -> Vec<(u32, String)> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::Write { path, value } => path
                    .strip_prefix(&format!("{WI_DIR}/node"))
                    .map(|n| (n.parse().unwrap(), value.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn hmat_weights_of_the_vm_machines() {
        // tests/vm/guest.sh expects "25 6" for 20480/5120 MB/s and "18 9 4" for
        // 20480/10240/5120 MB/s (access1 figures, every node with memory).
        let set_bw = |t: &crate::fs::fake::FakeTree, node: u32, mbps: u64| {
            let d = format!("{}/node{node}/access1/initiators", host::NODE_DIR);
            t.set(&format!("{d}/read_bandwidth"), &format!("{mbps}\n"));
            t.set(&format!("{d}/write_bandwidth"), &format!("{mbps}\n"));
        };
        let t = fake_two_node();
        set_bw(&t, 0, 20480);
        set_bw(&t, 1, 5120);
        let p = plan_for("[weighted_interleave]\nsource = \"hmat\"\n", &t).unwrap();
        assert_eq!(
            weight_writes(&p),
            vec![(0, "25".to_string()), (1, "6".to_string())]
        );

        // A third memory node.
        let nd = host::NODE_DIR;
        for f in ["online", "possible", "has_memory"] {
            t.set(&format!("{nd}/{f}"), "0-2\n");
        }
        t.set(&format!("{nd}/node2/cpulist"), "\n");
        t.set(
            &format!("{nd}/node2/meminfo"),
            "Node 2 MemTotal:        1048576 kB\nNode 2 MemFree:         1000000 kB\n",
        );
        t.set(&format!("{nd}/node0/distance"), "10 20 20\n");
        t.set(&format!("{nd}/node1/distance"), "20 10 20\n");
        t.set(&format!("{nd}/node2/distance"), "20 20 10\n");
        t.set(&format!("{WI_DIR}/node2"), "1\n");
        set_bw(&t, 1, 10240);
        set_bw(&t, 2, 5120);
        let p = plan_for("[weighted_interleave]\nsource = \"hmat\"\n", &t).unwrap();
        assert_eq!(
            weight_writes(&p),
            vec![
                (0, "18".to_string()),
                (1, "9".to_string()),
                (2, "4".to_string())
            ]
        );

        // Node 1 without memory takes no share and gets no weight: 20480 : 5120 again.
        t.set(&format!("{nd}/has_memory"), "0,2\n");
        std::fs::remove_file(t.fs().path(&format!("{WI_DIR}/node1"))).unwrap();
        let p = plan_for("[weighted_interleave]\nsource = \"hmat\"\n", &t).unwrap();
        assert_eq!(
            weight_writes(&p),
            vec![(0, "25".to_string()), (2, "6".to_string())]
        );
    }

    #[test]
    fn auto_mode_is_switched_off_under_the_name_the_kernel_gives_it() {
        // 6.18 names the file `__auto_type` (crate::host::WI_AUTO's doc); 7.2 `auto`.
        for name in ["__auto_type", "auto"] {
            let t = fake_two_node();
            t.set(&format!("{WI_DIR}/{name}"), "true\n");
            let p = plan_for("[weighted_interleave]\nsource = \"hmat\"\n", &t).unwrap();
            let auto: Vec<_> = p
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::Write { path, value } if !path.contains("/node") => {
                        Some((path.clone(), value.clone()))
                    }
                    _ => None,
                })
                .filter(|(path, _)| path.starts_with(WI_DIR))
                .collect();
            assert_eq!(
                auto,
                vec![(format!("{WI_DIR}/{name}"), "false".to_string())],
                "{name}"
            );
        }
    }

    #[test]
    fn impossible_node_and_missing_features_are_refused() {
        let t = fake_two_node();
        let e = plan_for(
            "[weighted_interleave]\nsource = \"given\"\nweights = { node5 = 2 }\n",
            &t,
        )
        .unwrap_err();
        assert!(e.is_input_error() && e.to_string().contains("node5"), "{e}");
        t.set("/proc/1/comm", "init");
        let e = plan_for(
            "[tiering]\ntargets = { pids = [1] }\nfast_nodes = [7]\n",
            &t,
        )
        .unwrap_err();
        assert!(e.to_string().contains("node 7"), "{e}");
        std::fs::remove_dir_all(t.fs().path("/sys/kernel/debug")).unwrap();
        let e = plan_for("[numa_balancing]\nscan_size_mb = 512\n", &t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel feature missing") && e.contains("mount -t debugfs"),
            "{e}"
        );
        let e = plan_for("[damon_reclaim]\nno_such_param = 1\n", &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no_such_param"), "{e}");
    }

    #[test]
    fn ksm_merge_across_nodes_with_shared_pages_needs_allow_unmerge() {
        let t = fake_two_node();
        t.set("/sys/kernel/mm/ksm/pages_shared", "10");
        let e = plan_for("[ksm]\nmerge_across_nodes = 0\n", &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("allow_unmerge"), "{e}");
        let p = plan_for(
            "[ksm]\nmerge_across_nodes = 0\nallow_unmerge = true\nrun = 1\npages_to_scan = 1000\n",
            &t,
        )
        .unwrap();
        assert_eq!(p.actions.len(), 3);
        assert!(
            matches!(&p.actions[1], Action::KsmMergeAcrossNodes { value, run, unmerge: true } if value == "0" && run == "0")
        );
    }

    #[test]
    fn damon_modules_write_enabled_last() {
        let t = fake_two_node();
        let p = plan_for(
            "[damon_reclaim]\nenabled = true\nmin_age = 5000000\nquota_sz = 1048576\n",
            &t,
        )
        .unwrap();
        let last = p.actions.last().unwrap();
        assert_eq!(
            last,
            &Action::Write {
                path: "/sys/module/damon_reclaim/parameters/enabled".into(),
                value: "Y".into()
            }
        );
        assert_eq!(p.actions.len(), 3);
    }

    #[test]
    fn damon_reclaim_on_a_6_11_to_6_16_host_is_noted() {
        let t = fake_two_node();
        let cfg = "[damon_reclaim]\nenabled = true\nmin_age = 5000000\n";
        t.set("/proc/sys/kernel/osrelease", "6.12.117+deb12-amd64\n");
        let p = plan_for(cfg, &t).unwrap();
        assert!(
            p.notes.iter().any(|n| n.contains("drops its scheme")),
            "{:?}",
            p.notes
        );
        t.set("/proc/sys/kernel/osrelease", "6.17.1\n");
        let p = plan_for(cfg, &t).unwrap();
        assert!(!p.notes.iter().any(|n| n.contains("drops its scheme")));
    }

    #[test]
    fn tiering_defaults_from_kernel_tiers() {
        let t = fake_two_node();
        crate::damon::fake_kdamond_6_12(&t);
        t.set("/proc/1/comm", "init");
        let p = plan_for("[tiering]\ntargets = { pids = [1] }\n", &t).unwrap();
        assert_eq!(p.fast_nodes, vec![0]);
        assert_eq!(p.slow_nodes, vec![1]);
        assert_eq!(p.demotion_target[&0], 1);
        assert!(p.uses_damon);
        let e = plan_for("[tiering]\ntargets = { pids = [999999] }\n", &t).unwrap_err();
        assert!(e.to_string().contains("999999"));
    }

    #[test]
    fn own_kdamond_schemes_are_checked_against_the_host() {
        let t = fake_two_node();
        crate::damon::fake_kdamond_6_12(&t);
        // tests/vm/guest.sh s5's [damon] table.
        let p = plan_for(
            "[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"stat\"\n",
            &t,
        )
        .unwrap();
        assert!(p.uses_damon);
        assert_eq!(
            t.get(&format!("{}/nr_kdamonds", crate::damon::KDAMONDS)),
            "0"
        );
        let migrate = |nid: u32| {
            plan_for(
                &format!("[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"migrate_cold\"\ntarget_nid = {nid}\naccess_pattern = {{ max_nr_accesses = 0 }}\n"),
                &t,
            )
        };
        migrate(1).unwrap();
        match migrate(3).unwrap_err() {
            Error::Config(e) => assert_eq!(e.key, "damon.schemes[0].target_nid"),
            e => panic!("{e}"),
        }
        // A goal's nid (6.16+) on this 6.12 tree: a config error (exit code 2).
        let e = plan_for(
            "[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\nquotas = { goals = [{ metric = \"node_mem_free_bp\", target_value = 50, nid = 0 }] }\n",
            &t,
        )
        .unwrap_err();
        assert!(e.is_input_error());
        assert!(e.to_string().contains("quotas.goals[0].nid"), "{e}");
    }

    #[test]
    fn apply_records_then_writes_and_restore_undoes() {
        let t = fake_two_node();
        let fs = t.fs();
        let p = plan_for("[numa_balancing]\nmode = \"normal\"\ndemotion_enabled = true\n[ksm]\nrun = 1\nsleep_millisecs = 200\n", &t).unwrap();
        let sp = t.dir.path().join("st");
        let mut rec = StateRecorder::create(&sp, &fs).unwrap();
        apply_plan(&p, &fs, &mut rec).unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "1");
        assert_eq!(t.get("/sys/kernel/mm/ksm/sleep_millisecs"), "200");
        assert_eq!(rec.entries().len(), 4);
        rec.restore(&fs).unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
        assert_eq!(t.get("/sys/kernel/mm/numa/demotion_enabled"), "false");
        assert_eq!(t.get("/sys/kernel/mm/ksm/sleep_millisecs"), "20");
        assert_eq!(t.get("/sys/kernel/mm/ksm/run"), "0");
    }

    /// A selector matching more processes than the host should run kdamonds for is refused
    /// before anything is written; so are module parameters outside the known set.
    #[test]
    fn configs_that_would_exhaust_or_escape_are_refused() {
        let t = fake_two_node();
        for pid in 100..140 {
            t.set(&format!("/proc/{pid}/comm"), "worker\n");
        }
        let e = plan_for(
            "[numa_balancing]\nmode = \"disabled\"\n[tiering]\ntargets = { names = [\"work*\"] }\n",
            &t,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("tiering.targets") && e.contains("40 processes"),
            "{e}"
        );
        for key in [
            "\"../../../../etc/passwd\"",
            "kdamond_pid",
            "nr_reclaimed_regions",
        ] {
            let e = plan_for(&format!("[damon_reclaim]\n{key} = 1\n"), &t)
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a writable parameter"), "{key}: {e}");
        }
    }

    #[test]
    fn resolve_by_name_and_cgroup() {
        let t = fake_two_node();
        t.set("/proc/100/comm", "hotcold\n");
        t.set("/proc/200/comm", "other\n");
        // Cgroup paths are kernel paths: under the fake root like /proc and /sys.
        t.set("/sys/fs/cgroup/app.slice/cgroup.procs", "300\n301\n");
        let sel = TargetSelector {
            pids: vec![200, 555],
            names: vec!["hot*".into()],
            cgroups: vec!["/sys/fs/cgroup/app.slice".into()],
        };
        assert_eq!(resolve_targets(&t.fs(), &sel), vec![100, 200, 300, 301]);
    }
}
