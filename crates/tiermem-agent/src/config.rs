//! The agent's configuration (`tiermem agent --config FILE`).
//!
//! Strict like the simulator's config: unknown keys are errors naming the file and the
//! dotted key; every section is optional and absent sections change nothing. Values use
//! the kernel's units where the kernel file has one (`_ms`, `_us`, `_mbps`, permil), and
//! tiermem's size/duration strings (`"64MiB"`, `"5s"`) elsewhere.

use crate::damon::ConfiguredKdamond;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use tiermem_core::controllers::{
    glob_match, CgroupReclaim, ProcessReclaim, ReclaimConfig, TargetSelector, TieringConfig,
};
use tiermem_core::damon::{AddrRange, MonitoringAttrs, OpsKind, SchemeConfig};
use tiermem_core::units::{Bytes, SimDuration};
use tiermem_core::ConfigError;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Where original values are recorded before each change. Default `/run/tiermem/agent.state`.
    #[serde(default = "default_state_file")]
    pub state_file: PathBuf,
    /// Period of the agent loop (controllers, metrics refresh). Default `1s`.
    #[serde(default = "default_interval")]
    pub interval: SimDuration,
    #[serde(default)]
    pub metrics: Option<MetricsConfig>,
    #[serde(default)]
    pub numa_balancing: Option<NumaBalancingConfig>,
    #[serde(default)]
    pub weighted_interleave: Option<WeightedInterleaveConfig>,
    #[serde(default)]
    pub ksm: Option<KsmConfig>,
    /// `/sys/module/damon_reclaim/parameters/<key>` values (`enabled` is written last).
    #[serde(default)]
    pub damon_reclaim: Option<BTreeMap<String, toml::Value>>,
    /// `/sys/module/damon_lru_sort/parameters/<key>` values.
    #[serde(default)]
    pub damon_lru_sort: Option<BTreeMap<String, toml::Value>>,
    /// The agent's own kdamond with schemes (DAMON sysfs).
    #[serde(default)]
    pub damon: Option<DamonConfig>,
    /// The user-space tiering controller.
    #[serde(default)]
    pub tiering: Option<TieringConfig>,
    /// Proactive reclaim.
    #[serde(default)]
    pub reclaim: Option<ReclaimConfig>,
    /// Keys of a simulator config set aside as simulation-only (the machine, workloads,
    /// cost model), with why; empty for an agent file ([`crate::policy_file`]).
    #[serde(skip)]
    pub sim_only: Vec<String>,
}

fn default_state_file() -> PathBuf {
    PathBuf::from("/run/tiermem/agent.state")
}
fn default_interval() -> SimDuration {
    SimDuration::from_secs(1)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Prometheus text endpoint, loopback only (e.g. `127.0.0.1:9464`).
    pub listen: String,
}

/// `kernel.numa_balancing` modes (`0x1` NORMAL, `0x2` MEMORY_TIERING).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NumaBalancingMode {
    Disabled,
    Normal,
    Tiering,
    NormalTiering,
}

impl NumaBalancingMode {
    pub fn value(self) -> u64 {
        match self {
            NumaBalancingMode::Disabled => 0,
            NumaBalancingMode::Normal => 1,
            NumaBalancingMode::Tiering => 2,
            NumaBalancingMode::NormalTiering => 3,
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaBalancingConfig {
    /// `/proc/sys/kernel/numa_balancing`.
    pub mode: Option<NumaBalancingMode>,
    /// `/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps` (kernel default 65536).
    pub promote_rate_limit_mbps: Option<u64>,
    /// debugfs `sched/numa_balancing/*` (kernel defaults 1000, 1000, 60000, 256, 1000).
    pub scan_delay_ms: Option<u64>,
    pub scan_period_min_ms: Option<u64>,
    pub scan_period_max_ms: Option<u64>,
    pub scan_size_mb: Option<u64>,
    pub hot_threshold_ms: Option<u64>,
    /// `/sys/kernel/mm/numa/demotion_enabled`.
    pub demotion_enabled: Option<bool>,
    /// `/proc/sys/vm/watermark_scale_factor` (1/10000 of a zone; kernel default 10, max 3000).
    pub watermark_scale_factor: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightSource {
    /// `weights` as written.
    Given,
    /// From the HMAT access1 bandwidth in sysfs, reduced as the kernel's `auto` mode does.
    Hmat,
    /// From a STREAM-like probe of each memory node, reduced the same way.
    Probe,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightedInterleaveConfig {
    pub source: WeightSource,
    /// `{ node0 = 3, node1 = 1 }` with `source = "given"` (1..=255).
    #[serde(default)]
    pub weights: BTreeMap<String, u64>,
    /// Array size per stream array of the probe. Default 64MiB.
    #[serde(default = "default_probe_size")]
    pub probe_size: Bytes,
    /// The `auto` file (6.16+): `true` hands the weights back to the kernel. Conflicts with
    /// any explicit weights.
    #[serde(default)]
    pub auto: Option<bool>,
}

fn default_probe_size() -> Bytes {
    Bytes::mib(64)
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KsmConfig {
    /// `run`: 0 stop, 1 merge, 2 unmerge all.
    pub run: Option<u8>,
    /// `merge_across_nodes` (0/1). The kernel refuses a change while KSM pages exist; with
    /// `allow_unmerge = true` the agent unmerges (`run = 2`), changes it and restarts.
    pub merge_across_nodes: Option<u8>,
    #[serde(default)]
    pub allow_unmerge: bool,
    pub pages_to_scan: Option<u64>,
    pub sleep_millisecs: Option<u64>,
    pub max_page_sharing: Option<u64>,
    pub stable_node_chains_prune_millisecs: Option<u64>,
    pub use_zero_pages: Option<u8>,
    pub smart_scan: Option<u8>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DamonConfig {
    pub ops: OpsKind,
    /// Required for `vaddr`, refused for `paddr`.
    #[serde(default)]
    pub targets: TargetSelector,
    /// `paddr` only: the physical ranges `[start, end)` to monitor, in bytes. Default: the
    /// biggest `System RAM` resource of `/proc/iomem` (DAMON_RECLAIM's default).
    #[serde(default)]
    pub regions: Vec<AddrRange>,
    /// `tiermem-core`'s monitoring attributes (`damon_new_ctx` defaults), as the
    /// simulator's `[kernel.damon.contexts.attrs]`.
    #[serde(default)]
    pub attrs: MonitoringAttrs,
    /// `tiermem-core`'s DAMOS schemes: a table here is written exactly like a simulator
    /// `[[kernel.damon.contexts.schemes]]` table.
    #[serde(default)]
    pub schemes: Vec<SchemeConfig>,
}

impl AgentConfig {
    /// Every target selector of the config, with its key.
    pub fn target_selectors(&self) -> Vec<(&'static str, &TargetSelector)> {
        let mut v = Vec::new();
        if let Some(d) = &self.damon {
            v.push(("damon", &d.targets));
        }
        if let Some(t) = &self.tiering {
            v.push(("tiering", &t.targets));
        }
        if let Some(p) = self.reclaim.as_ref().and_then(|r| r.processes.as_ref()) {
            v.push(("reclaim.processes", &p.targets));
        }
        v
    }

    /// Parse TOML text; errors name the file and dotted key. A simulator config is read
    /// as its policy ([`crate::policy_file`]): errors then name the simulator's keys.
    pub fn from_toml_str(text: &str, file: &str) -> Result<AgentConfig, ConfigError> {
        let line_of = |span: Option<std::ops::Range<usize>>| {
            span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
        };
        let value: toml::Table = toml::from_str(text).map_err(|e| {
            let msg = match line_of(e.span()) {
                Some(l) => format!("{} (line {l})", e.message()),
                None => e.message().to_string(),
            };
            ConfigError::invalid("", msg).in_file(file)
        })?;
        if !crate::policy_file::is_sim_shaped(&value) {
            let de = toml::Deserializer::new(text);
            let cfg: AgentConfig = serde_path_to_error::deserialize(de).map_err(|e| {
                let key = e.path().to_string();
                let key = if key == "." { String::new() } else { key };
                let mut msg = e.inner().message().to_string();
                if let Some(l) = line_of(e.inner().span()) {
                    msg = format!("{msg} (line {l})");
                }
                ConfigError::invalid(key, msg).in_file(file)
            })?;
            cfg.check_static().map_err(|e| e.in_file(file))?;
            return Ok(cfg);
        }
        crate::policy_file::check_with_simulator(text, file)?;
        let t = crate::policy_file::translate(&value).map_err(|e| e.in_file(file))?;
        let mut cfg: AgentConfig =
            serde_path_to_error::deserialize(toml::Value::Table(t.agent.clone())).map_err(|e| {
                let key = e.path().to_string();
                let key = if key == "." {
                    String::new()
                } else {
                    t.file_key(&key)
                };
                ConfigError::invalid(key, e.inner().to_string()).in_file(file)
            })?;
        cfg.check_static().map_err(|mut e| {
            e.key = t.file_key(&e.key);
            e.in_file(file)
        })?;
        cfg.sim_only = t.ignored;
        Ok(cfg)
    }

    pub fn from_file(path: &std::path::Path) -> Result<AgentConfig, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::whole_file(&name, format!("cannot read: {e}")))?;
        Self::from_toml_str(&text, &name)
    }

    /// Whether the config needs DAMON sysfs kdamonds of its own.
    pub fn uses_kdamonds(&self) -> bool {
        self.damon.is_some()
            || self.tiering.is_some()
            || self.reclaim.as_ref().is_some_and(|r| r.processes.is_some())
    }

    /// The kdamonds the config asks for, before targets are resolved (one per table; the
    /// agent runs one tiering kdamond per target process, all alike).
    pub fn kdamonds(&self) -> Vec<ConfiguredKdamond> {
        let mut v = Vec::new();
        if let Some(d) = &self.damon {
            v.push(ConfiguredKdamond {
                key: "damon".into(),
                ops: d.ops,
                attrs: d.attrs.clone(),
                schemes: d
                    .schemes
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (format!("damon.schemes[{i}]"), s.clone()))
                    .collect(),
            });
        }
        if let Some(p) = self.reclaim.as_ref().and_then(|r| r.processes.as_ref()) {
            v.push(ConfiguredKdamond {
                key: "reclaim.processes".into(),
                ops: OpsKind::Vaddr,
                attrs: p.attrs.clone(),
                schemes: vec![("reclaim.processes".into(), p.scheme())],
            });
        }
        if let Some(t) = &self.tiering {
            v.push(ConfiguredKdamond {
                key: "tiering".into(),
                ops: OpsKind::Vaddr,
                attrs: t.attrs.clone(),
                schemes: vec![("tiering".into(), crate::damon::stat_all())],
            });
        }
        v
    }

    /// Checks that need no host: ranges and conflicts between settings. Every section is
    /// checked, so that a config with problems in several sections reports them all (the
    /// first of each section); `tiermem agent --dry-run` lists them.
    pub fn check_static(&self) -> Result<(), ConfigError> {
        let problems: Vec<ConfigError> = [
            self.check_basics(),
            self.check_numa_balancing(),
            self.check_weighted_interleave(),
            self.check_ksm(),
            self.check_own_damon(),
            self.check_tiering(),
            self.check_damon_modules(),
            self.check_target_selectors(),
            self.check_reclaim(),
        ]
        .into_iter()
        .filter_map(Result::err)
        .collect();
        all_of(problems)
    }

    /// `interval` and `[metrics]`.
    fn check_basics(&self) -> Result<(), ConfigError> {
        if self.interval.as_ms() < 10 {
            return Err(bad("interval", "must be at least 10ms"));
        }
        if let Some(m) = &self.metrics {
            let addr: std::net::SocketAddr = m.listen.parse().map_err(|_| {
                bad(
                    "metrics.listen",
                    format!("{:?} is not an ip:port address", m.listen),
                )
            })?;
            if !addr.ip().is_loopback() {
                return Err(bad(
                    "metrics.listen",
                    format!("{addr} is not a loopback address (the endpoint is unauthenticated)"),
                ));
            }
        }
        Ok(())
    }

    /// `[numa_balancing]`: sysctl ranges.
    fn check_numa_balancing(&self) -> Result<(), ConfigError> {
        if let Some(nb) = &self.numa_balancing {
            if matches!(nb.watermark_scale_factor, Some(v) if !(1..=3000).contains(&v)) {
                return Err(bad(
                    "numa_balancing.watermark_scale_factor",
                    "must be 1..=3000 (sysctl range)",
                ));
            }
            if matches!(nb.scan_size_mb, Some(0)) {
                return Err(bad("numa_balancing.scan_size_mb", "must be positive"));
            }
            if let (Some(a), Some(b)) = (nb.scan_period_min_ms, nb.scan_period_max_ms) {
                if a > b {
                    return Err(bad(
                        "numa_balancing.scan_period_min_ms",
                        format!("{a} exceeds scan_period_max_ms {b}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `[weighted_interleave]`: weights and their source.
    fn check_weighted_interleave(&self) -> Result<(), ConfigError> {
        if let Some(wi) = &self.weighted_interleave {
            match wi.source {
                WeightSource::Given if wi.weights.is_empty() => {
                    return Err(bad(
                        "weighted_interleave.weights",
                        "source = \"given\" needs weights",
                    ))
                }
                WeightSource::Hmat | WeightSource::Probe if !wi.weights.is_empty() => {
                    return Err(bad(
                        "weighted_interleave.weights",
                        "weights conflict with a derived source (hmat/probe)",
                    ))
                }
                _ => {}
            }
            if wi.auto == Some(true) {
                return Err(bad(
                    "weighted_interleave.auto",
                    "auto = true conflicts with explicit or derived weights (writing a weight switches the kernel to manual mode)",
                ));
            }
            for (k, &v) in &wi.weights {
                if k.strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_none()
                {
                    return Err(bad(
                        format!("weighted_interleave.weights.{k}"),
                        "keys are node<N>",
                    ));
                }
                if !(1..=255).contains(&v) {
                    return Err(bad(
                        format!("weighted_interleave.weights.{k}"),
                        "weights are 1..=255",
                    ));
                }
            }
            if wi.probe_size.0 < (1 << 20) {
                return Err(bad(
                    "weighted_interleave.probe_size",
                    "must be at least 1MiB",
                ));
            }
        }
        Ok(())
    }

    /// `[ksm]`: sysfs ranges.
    fn check_ksm(&self) -> Result<(), ConfigError> {
        if let Some(k) = &self.ksm {
            if matches!(k.run, Some(r) if r > 2) {
                return Err(bad("ksm.run", "must be 0, 1 or 2"));
            }
            if matches!(k.merge_across_nodes, Some(r) if r > 1) {
                return Err(bad("ksm.merge_across_nodes", "must be 0 or 1"));
            }
            if matches!(k.pages_to_scan, Some(0)) {
                return Err(bad("ksm.pages_to_scan", "must be positive"));
            }
            if matches!(k.max_page_sharing, Some(v) if v < 2) {
                return Err(bad("ksm.max_page_sharing", "must be at least 2"));
            }
        }
        Ok(())
    }

    /// `[damon]`: the agent's own kdamond (attributes, targets, schemes).
    fn check_own_damon(&self) -> Result<(), ConfigError> {
        if let Some(d) = &self.damon {
            check_attrs(&d.attrs, "damon.attrs")?;
            match d.ops {
                OpsKind::Vaddr if d.targets.is_empty() => {
                    return Err(bad("damon.targets", "vaddr monitoring needs targets"))
                }
                OpsKind::Paddr if !d.targets.is_empty() => {
                    return Err(bad(
                        "damon.targets",
                        "paddr monitors physical memory: no targets",
                    ))
                }
                OpsKind::Vaddr if !d.regions.is_empty() => {
                    return Err(bad(
                        "damon.regions",
                        "vaddr takes its regions from the targets' mappings: regions are for paddr",
                    ))
                }
                _ => {}
            }
            check_regions(&d.regions, "damon.regions")?;
            if d.schemes.is_empty() {
                return Err(bad(
                    "damon.schemes",
                    "an own kdamond needs at least one scheme",
                ));
            }
            for (i, s) in d.schemes.iter().enumerate() {
                crate::damon::validate_scheme(s, &format!("damon.schemes[{i}]"), d.ops)?;
            }
            if d.schemes.len() > limits::MAX_SCHEMES {
                return Err(bad(
                    "damon.schemes",
                    format!(
                        "{} schemes; at most {}",
                        d.schemes.len(),
                        limits::MAX_SCHEMES
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[tiering]`: the user-space controller, and its conflict with NUMA balancing.
    fn check_tiering(&self) -> Result<(), ConfigError> {
        if let Some(t) = &self.tiering {
            check_attrs(&t.attrs, "tiering.attrs")?;
            t.check()?;
            if let Some(nb) = &self.numa_balancing {
                if matches!(nb.mode, Some(m) if m != NumaBalancingMode::Disabled) {
                    return Err(bad(
                        "tiering",
                        "the user-space tiering controller conflicts with NUMA balancing (any mode but disabled migrates the targets' pages toward their CPUs' node; tiering mode promotes them): set numa_balancing.mode = \"disabled\" or drop [tiering]",
                    ));
                }
            }
        }
        Ok(())
    }

    /// DAMON_RECLAIM and DAMON_LRU_SORT: one at a time, and not beside own kdamonds.
    fn check_damon_modules(&self) -> Result<(), ConfigError> {
        // DAMON_RECLAIM and DAMON_LRU_SORT start their context with damon_start(exclusive =
        // true): it fails with EBUSY while any other context runs, and makes later ones fail.
        let enables = |m: &Option<BTreeMap<String, toml::Value>>| {
            m.as_ref()
                .and_then(|p| p.get("enabled"))
                .is_some_and(|v| v.as_bool() == Some(true) || v.as_str().is_some_and(|s| s == "Y"))
        };
        let modules: Vec<&str> = [
            ("damon_reclaim", &self.damon_reclaim),
            ("damon_lru_sort", &self.damon_lru_sort),
        ]
        .into_iter()
        .filter(|(_, m)| enables(m))
        .map(|(n, _)| n)
        .collect();
        if modules.len() > 1 {
            return Err(bad(
                "damon_lru_sort.enabled",
                "DAMON_RECLAIM and DAMON_LRU_SORT each run an exclusive DAMON context; enable one",
            ));
        }
        if let Some(m) = modules.first() {
            if self.uses_kdamonds() {
                return Err(bad(
                    format!("{m}.enabled"),
                    format!("{m} runs an exclusive DAMON context (damon_start(exclusive)); it cannot run beside the agent's own kdamonds ([damon], [tiering], [reclaim.processes])"),
                ));
            }
        }
        Ok(())
    }

    /// Target selectors of every section: sizes and cgroup paths.
    fn check_target_selectors(&self) -> Result<(), ConfigError> {
        for (key, sel) in self.target_selectors() {
            for (what, n) in [
                ("pids", sel.pids.len()),
                ("names", sel.names.len()),
                ("cgroups", sel.cgroups.len()),
            ] {
                if n > limits::MAX_SELECTOR_ENTRIES {
                    return Err(bad(
                        format!("{key}.targets.{what}"),
                        format!("{n} entries; at most {}", limits::MAX_SELECTOR_ENTRIES),
                    ));
                }
            }
            for (i, c) in sel.cgroups.iter().enumerate() {
                crate::fs::cgroup_kpath(c)
                    .map_err(|m| bad(format!("{key}.targets.cgroups[{i}]"), m))?;
            }
        }
        Ok(())
    }

    /// `[reclaim]`: cgroups and process reclaim.
    fn check_reclaim(&self) -> Result<(), ConfigError> {
        if let Some(r) = &self.reclaim {
            if r.cgroups.len() > limits::MAX_RECLAIM_CGROUPS {
                return Err(bad(
                    "reclaim.cgroups",
                    format!(
                        "{} cgroups; at most {}",
                        r.cgroups.len(),
                        limits::MAX_RECLAIM_CGROUPS
                    ),
                ));
            }
            for (i, c) in r.cgroups.iter().enumerate() {
                crate::fs::cgroup_kpath(&c.path)
                    .map_err(|m| bad(format!("reclaim.cgroups[{i}].path"), m))?;
                if c.bytes.0 == 0 {
                    return Err(bad(
                        format!("reclaim.cgroups[{i}].bytes"),
                        "must be positive",
                    ));
                }
                if c.free_below_permil > 1000 {
                    return Err(bad(
                        format!("reclaim.cgroups[{i}].free_below_permil"),
                        "at most 1000",
                    ));
                }
            }
            if let Some(p) = &r.processes {
                check_attrs(&p.attrs, "reclaim.processes.attrs")?;
                p.check()?;
            }
        }
        Ok(())
    }
}

/// Limits that keep one config from exhausting the host: every kdamond is a kernel thread
/// with its own regions, and each target a process the agent walks every tick.
pub mod limits {
    /// kdamonds the agent runs at once (own, process reclaim, one per tiering target).
    pub const MAX_KDAMONDS: usize = 32;
    /// Explicit pids, name patterns and cgroups per target selector, each.
    pub const MAX_SELECTOR_ENTRIES: usize = 256;
    /// DAMOS schemes of the own kdamond.
    pub const MAX_SCHEMES: usize = 32;
    /// `max_nr_regions` of any monitoring context (DAMON's default is 1000).
    pub const MAX_NR_REGIONS: u64 = 100_000;
    /// cgroups written by proactive reclaim.
    pub const MAX_RECLAIM_CGROUPS: usize = 256;
}

/// Monitoring regions: each non-empty, in order, not overlapping (`damon_set_regions` refuses
/// anything else with -EINVAL).
fn check_regions(regions: &[AddrRange], key: &str) -> Result<(), ConfigError> {
    for (i, r) in regions.iter().enumerate() {
        if r.start >= r.end {
            return Err(bad(
                format!("{key}[{i}]"),
                format!("start {:#x} is not below end {:#x}", r.start, r.end),
            ));
        }
        if i > 0 && regions[i - 1].end > r.start {
            return Err(bad(
                format!("{key}[{i}]"),
                "regions must be sorted and must not overlap",
            ));
        }
    }
    if regions.len() > limits::MAX_NR_REGIONS as usize {
        return Err(bad(
            key,
            format!("at most {} regions", limits::MAX_NR_REGIONS),
        ));
    }
    Ok(())
}

pub(crate) fn check_attrs(a: &MonitoringAttrs, key: &str) -> Result<(), ConfigError> {
    if u64::from(a.max_nr_regions) > limits::MAX_NR_REGIONS {
        return Err(ConfigError::invalid(
            format!("{key}.max_nr_regions"),
            format!(
                "at most {} (each region is kernel memory and sampling work)",
                limits::MAX_NR_REGIONS
            ),
        ));
    }
    if a.sample_us == 0 {
        // The kernel takes 0 (sample as fast as possible); the agent's loop and the
        // controller's nr_accesses scale need a real interval.
        return Err(ConfigError::invalid(
            format!("{key}.sample_us"),
            "must be positive",
        ));
    }
    a.validate().map_err(|m| ConfigError::invalid(key, m))
}

fn bad(k: impl Into<String>, m: impl Into<String>) -> ConfigError {
    ConfigError::invalid(k, m)
}

/// One error for several problems: the first, with the others appended to its message,
/// each naming its key.
fn all_of(mut problems: Vec<ConfigError>) -> Result<(), ConfigError> {
    if problems.is_empty() {
        return Ok(());
    }
    let mut first = problems.remove(0);
    for p in problems {
        first
            .message
            .push_str(&format!("\n  and key `{}`: {}", p.key, p.message));
    }
    Err(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::damon::{DamosAction, WmarkMetric};

    fn parse(s: &str) -> Result<AgentConfig, ConfigError> {
        AgentConfig::from_toml_str(s, "t.toml")
    }

    #[test]
    fn empty_config_is_valid() {
        let c = parse("").unwrap();
        assert_eq!(c.state_file, PathBuf::from("/run/tiermem/agent.state"));
        assert_eq!(c.interval, SimDuration::from_secs(1));
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let e = parse("[numa_balancing]\nmode = \"tiering\"\nbogus = 1\n").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("t.toml") && s.contains("bogus"), "{s}");
    }

    #[test]
    fn conflicts_are_refused() {
        let e = parse(
            "[numa_balancing]\nmode = \"tiering\"\n[tiering]\ntargets = { names = [\"x\"] }\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "tiering");
        let e = parse("[weighted_interleave]\nsource = \"hmat\"\nweights = { node0 = 2 }\n")
            .unwrap_err();
        assert_eq!(e.key, "weighted_interleave.weights");
        let e = parse("[tiering]\ntargets = { pids = [1] }\nfast_nodes = [0]\nslow_nodes = [0]\n")
            .unwrap_err();
        assert_eq!(e.key, "tiering.slow_nodes");
        let e = parse("[damon_lru_sort]\nenabled = true\n[tiering]\ntargets = { pids = [1] }\n")
            .unwrap_err();
        assert_eq!(e.key, "damon_lru_sort.enabled");
        let e = parse("[damon_lru_sort]\nenabled = true\n[damon_reclaim]\nenabled = true\n")
            .unwrap_err();
        assert!(e.message.contains("exclusive"));
        let e = parse("[metrics]\nlisten = \"0.0.0.0:9464\"\n").unwrap_err();
        assert!(e.message.contains("loopback"));
    }

    #[test]
    fn problems_in_several_sections_are_all_reported() {
        let e = parse("interval = \"1ms\"\n[ksm]\nrun = 3\n[numa_balancing]\nscan_size_mb = 0\n")
            .unwrap_err();
        assert_eq!(e.key, "interval", "the first in section order");
        assert!(
            e.message.contains("key `numa_balancing.scan_size_mb`"),
            "{}",
            e.message
        );
        assert!(e.message.contains("key `ksm.run`"), "{}", e.message);
    }

    #[test]
    fn damon_regions_are_for_paddr_and_must_be_ordered() {
        let stat = "[[damon.schemes]]\naction = \"stat\"\n";
        let e = parse(&format!(
            "[damon]\nops = \"vaddr\"\ntargets = {{ pids = [1] }}\nregions = [{{ start = 0, end = 4096 }}]\n{stat}"
        ))
        .unwrap_err();
        assert_eq!(e.key, "damon.regions");
        let e = parse(&format!(
            "[damon]\nops = \"paddr\"\nregions = [{{ start = 8192, end = 12288 }}, {{ start = 0, end = 8193 }}]\n{stat}"
        ))
        .unwrap_err();
        assert_eq!(e.key, "damon.regions[1]");
        let e = parse(&format!(
            "[damon]\nops = \"paddr\"\nregions = [{{ start = 4096, end = 4096 }}]\n{stat}"
        ))
        .unwrap_err();
        assert_eq!(e.key, "damon.regions[0]");
        let c = parse(&format!(
            "[damon]\nops = \"paddr\"\nregions = [{{ start = 0, end = 4096 }}, {{ start = 8192, end = 12288 }}]\n{stat}"
        ))
        .unwrap();
        assert_eq!(c.damon.unwrap().regions.len(), 2);
    }

    #[test]
    fn ranges_are_checked() {
        assert!(parse("[ksm]\nrun = 3\n").is_err());
        assert!(
            parse("[weighted_interleave]\nsource = \"given\"\nweights = { node0 = 0 }\n").is_err()
        );
        assert!(
            parse("[weighted_interleave]\nsource = \"given\"\nweights = { nodeX = 1 }\n").is_err()
        );
        assert!(parse("[numa_balancing]\nwatermark_scale_factor = 5000\n").is_err());
        assert!(parse(
            "[tiering]\ntargets = { pids = [1] }\nattrs = { sample_us = 10, aggr_us = 5 }\n"
        )
        .is_err());
    }

    #[test]
    fn full_example_parses() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../configs/agent/example.toml"
        ))
        .unwrap();
        let c = parse(&text).unwrap();
        assert!(c.tiering.is_some() && c.ksm.is_some() && c.damon.is_some());
    }

    /// Simulate, then deploy: the `[tiering]` section of the simulator's example
    /// (`configs/examples/user-tiering.toml`), as written there, is an agent section, and
    /// gives the same controller parameters on both substrates.
    #[test]
    fn the_simulated_tiering_section_is_an_agent_section() {
        let sim = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../configs/examples/user-tiering.toml"
        ))
        .unwrap();
        let start = sim.find("\n[tiering]\n").unwrap();
        let section = &sim[start..];
        let agent = parse(section).unwrap();
        let simulated = tiermem_core::config::SimConfig::from_toml_str(&sim, "sim.toml").unwrap();
        assert_eq!(agent.tiering, simulated.tiering);
    }

    #[test]
    fn damon_tables_are_the_core_vocabulary() {
        // tests/vm/guest.sh s5's table: a stat scheme over everything, default attributes.
        let c = parse("[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"stat\"\n").unwrap();
        let d = c.damon.unwrap();
        assert_eq!(d.attrs, MonitoringAttrs::default());
        assert_eq!(
            (d.attrs.sample_us, d.attrs.aggr_us, d.attrs.update_us),
            (5000, 100_000, 60_000_000),
            "damon_new_ctx's defaults"
        );
        assert_eq!(d.schemes, vec![SchemeConfig::new(DamosAction::Stat)]);
        // Unknown keys in nested tables name the file, the dotted key and the line.
        let e = parse(
            "[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\nquotas = { ms = 10, bytes = 4096 }\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "damon.schemes[0].quotas.bytes");
        let s = e.to_string();
        assert!(s.contains("t.toml") && s.contains("line 5"), "{s}");
        let e = parse("[damon]\nops = \"paddr\"\nattrs = { sample_us = 1000 }\n[[damon.schemes]]\naction = \"stat\"\nfilters = [{ type = \"young\", matchng = true }]\n")
            .unwrap_err();
        assert_eq!(e.key, "damon.schemes[0].filters[0].matchng");
        // The old flat keys are refused, naming the key.
        let e = parse(
            "[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\nquota_ms = 10\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "damon.schemes[0].quota_ms");
        // Checks: core's (pattern bounds), the agent's (action per ops, memcg by path).
        let e = parse("[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\naccess_pattern = { min_age = 9, max_age = 3 }\n")
            .unwrap_err();
        assert_eq!(e.key, "damon.schemes[0]");
        let e = parse("[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"willneed\"\n")
            .unwrap_err();
        assert_eq!(e.key, "damon.schemes[0].action");
        let e = parse("[damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"migrate_hot\"\n")
            .unwrap_err();
        assert!(e.message.contains("target_nid"), "{e}");
    }

    #[test]
    fn process_reclaim_is_damon_reclaims_scheme() {
        let c = parse(
            "[reclaim.processes]\ntargets = { pids = [1] }\nmin_age = \"2s\"\nquota = \"64MiB\"\n",
        )
        .unwrap();
        let s = c.reclaim.unwrap().processes.unwrap().scheme();
        assert_eq!(s.action, DamosAction::Pageout);
        assert_eq!(
            (
                s.access_pattern.min_sz,
                s.access_pattern.max_nr_accesses,
                s.access_pattern.min_age
            ),
            (4096, 0, 20)
        );
        assert_eq!((s.quotas.sz, s.quotas.reset_interval_ms), (64 << 20, 1000));
        assert_eq!(s.quotas.weights.age_permil, 1);
        assert_eq!(s.watermarks.metric, WmarkMetric::FreeMemRate);
        assert_eq!(
            (s.watermarks.high, s.watermarks.mid, s.watermarks.low),
            (500, 400, 200)
        );
    }

    #[test]
    fn globs() {
        assert!(glob_match("redis*", "redis-server"));
        assert!(glob_match("*cold", "hotcold"));
        assert!(glob_match("h*c*d", "hotcold"));
        assert!(!glob_match("redis", "redis-server"));
        assert!(glob_match("*", "anything"));
    }
}
