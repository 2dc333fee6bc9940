//! The user-space controllers' configuration, the same in the live agent's file and in a
//! simulator config: `[tiering]` (the tiering controller of `tiermem_policy::tiering`),
//! `[reclaim]` (proactive reclaim: DAMOS `pageout` of processes' cold regions, and
//! cgroup `memory.reclaim` writes, host only) and the target selector they share.
//!
//! In the simulator, targets are workloads, selected by name (`names`, matched against
//! each workload's `name` as the agent matches `/proc/<pid>/comm`); `pids` and `cgroups`
//! exist only on a host and are refused there.

use crate::damon::{
    AccessPattern, DamosAction, MonitoringAttrs, QuotaConfig, QuotaWeights, SchemeConfig,
    Watermarks, WmarkMetric,
};
use crate::units::{Bytes, SimDuration, PAGE_SIZE};
use serde::Deserialize;
use std::path::PathBuf;

/// Which processes a controller works on.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetSelector {
    pub pids: Vec<i32>,
    /// Command names (`/proc/<pid>/comm`); `*` matches any run of characters.
    pub names: Vec<String>,
    /// cgroup v2 directories (their `cgroup.procs`).
    pub cgroups: Vec<PathBuf>,
}

impl TargetSelector {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.names.is_empty() && self.cgroups.is_empty()
    }
}

/// `[tiering]`: the user-space tiering controller (`tiermem_policy::tiering`).
#[derive(Clone, Debug, Deserialize, PartialEq, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TieringConfig {
    pub targets: TargetSelector,
    /// Promotion targets. Default: the memory nodes of the kernel's top tier.
    #[serde(default)]
    pub fast_nodes: Vec<u32>,
    /// Promotion sources. Default: every other memory node.
    #[serde(default)]
    pub slow_nodes: Vec<u32>,
    /// Promotion rate limit, MB/s (as `numa_balancing_promote_rate_limit_MBps`). Default 256.
    #[serde(default = "d_rate")]
    pub promote_rate_limit_mbps: u64,
    /// Initial hotness threshold: a region is hot when its `nr_accesses` is at least this
    /// share of the maximum (`aggr_us / sample_us`), in permil. Default 500.
    #[serde(default = "d_hot")]
    pub hot_threshold_permil: u64,
    /// Adjust the threshold so candidates match the rate limit
    /// (`numa_promotion_adjust_threshold`). Default true.
    #[serde(default = "d_true")]
    pub auto_threshold: bool,
    /// Threshold adjustment period. Default 10s (the kernel uses `scan_period_max_ms`, 60s).
    #[serde(default = "d_adjust")]
    pub threshold_adjust_period: SimDuration,
    /// Demote cold regions from fast to slow nodes. Default true.
    #[serde(default = "d_true")]
    pub demote: bool,
    /// A region is cold after this long without access. Default 10s.
    #[serde(default = "d_cold")]
    pub cold_min_age: SimDuration,
    /// At most this much demoted per `demote_quota_interval`. Default 64MiB per 1s.
    #[serde(default = "d_quota")]
    pub demote_quota: Bytes,
    #[serde(default = "d_interval")]
    pub demote_quota_interval: SimDuration,
    #[serde(default)]
    pub attrs: MonitoringAttrs,
}

fn d_rate() -> u64 {
    256
}
fn d_hot() -> u64 {
    500
}
fn d_true() -> bool {
    true
}
fn d_adjust() -> SimDuration {
    SimDuration::from_secs(10)
}
fn d_cold() -> SimDuration {
    SimDuration::from_secs(10)
}
fn d_quota() -> Bytes {
    Bytes::mib(64)
}
fn d_interval() -> SimDuration {
    SimDuration::from_secs(1)
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReclaimConfig {
    /// cgroup v2 `memory.reclaim` writes.
    pub cgroups: Vec<CgroupReclaim>,
    /// DAMOS `pageout` of cold regions of processes, on the agent's own kdamond.
    pub processes: Option<ProcessReclaim>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupReclaim {
    pub path: PathBuf,
    /// Bytes asked per `interval`.
    pub bytes: Bytes,
    #[serde(default = "d_reclaim_interval")]
    pub interval: SimDuration,
    /// Act only while system free memory is below this permil of total (DAMOS `high`
    /// watermark sense). Default 1000 (always).
    #[serde(default = "d_permil_all")]
    pub free_below_permil: u64,
}

fn d_reclaim_interval() -> SimDuration {
    SimDuration::from_secs(10)
}
fn d_permil_all() -> u64 {
    1000
}

#[derive(Clone, Debug, Deserialize, PartialEq, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessReclaim {
    pub targets: TargetSelector,
    /// Cold for at least this long. Default 30s.
    #[serde(default = "d_reclaim_age")]
    pub min_age: SimDuration,
    /// Size quota per `quota_reset_interval_ms`. Default 128MiB (DAMON_RECLAIM's).
    #[serde(default = "d_reclaim_quota")]
    pub quota: Bytes,
    #[serde(default = "d_reset")]
    pub quota_reset_interval_ms: u64,
    /// Free-memory watermarks, permil (DAMON_RECLAIM defaults 500/400/200).
    #[serde(default = "d_wh")]
    pub wmarks_high: u64,
    #[serde(default = "d_wm")]
    pub wmarks_mid: u64,
    #[serde(default = "d_wl")]
    pub wmarks_low: u64,
    #[serde(default)]
    pub attrs: MonitoringAttrs,
}

fn d_reclaim_age() -> SimDuration {
    SimDuration::from_secs(30)
}
fn d_reclaim_quota() -> Bytes {
    Bytes::mib(128)
}
fn d_reset() -> u64 {
    1000
}
fn d_wh() -> u64 {
    500
}
fn d_wm() -> u64 {
    400
}
fn d_wl() -> u64 {
    200
}

impl ProcessReclaim {
    /// The DAMOS scheme: DAMON_RECLAIM's shape (`mm/damon/reclaim.c`) on the targets'
    /// address spaces: `pageout` of regions of at least a page with no access for
    /// `min_age`, oldest first, under the size quota, while free memory is below the
    /// high watermark.
    pub fn scheme(&self) -> SchemeConfig {
        let aggr = self.attrs.aggr_us.max(1);
        SchemeConfig {
            access_pattern: AccessPattern {
                min_sz: PAGE_SIZE,
                max_nr_accesses: 0,
                min_age: self.min_age.as_us().div_ceil(aggr).min(u32::MAX as u64) as u32,
                ..AccessPattern::default()
            },
            quotas: QuotaConfig {
                sz: self.quota.0,
                reset_interval_ms: self.quota_reset_interval_ms,
                // DAMON_RECLAIM's fixed weights: the oldest cold regions first.
                weights: QuotaWeights {
                    age_permil: 1,
                    ..QuotaWeights::default()
                },
                ..QuotaConfig::default()
            },
            watermarks: Watermarks {
                metric: WmarkMetric::FreeMemRate,
                interval_us: 5_000_000,
                high: self.wmarks_high,
                mid: self.wmarks_mid,
                low: self.wmarks_low,
            },
            ..SchemeConfig::new(DamosAction::Pageout)
        }
    }
}

impl ProcessReclaim {
    /// The section's own rules (both substrates).
    pub fn check(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        if self.targets.is_empty() {
            return Err(ConfigError::invalid(
                "reclaim.processes.targets",
                "name at least one pid, name or cgroup",
            ));
        }
        if !(self.wmarks_high >= self.wmarks_mid
            && self.wmarks_mid >= self.wmarks_low
            && self.wmarks_high <= 1000)
        {
            return Err(ConfigError::invalid(
                "reclaim.processes.wmarks_high",
                "watermarks must satisfy 1000 >= high >= mid >= low",
            ));
        }
        self.attrs
            .validate()
            .map_err(|m| ConfigError::invalid("reclaim.processes.attrs", m))
    }
}

impl TieringConfig {
    /// The section's own rules, the same on both substrates: where the targets and nodes
    /// are resolved (a host's processes, a simulation's workloads) is the caller's check.
    /// `attrs` must already have passed the caller's limits.
    pub fn check(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        let a = &self.attrs;
        if a.sample_us == 0 {
            return Err(ConfigError::invalid(
                "tiering.attrs.sample_us",
                "must be positive (the controller's nr_accesses scale needs a real interval)",
            ));
        }
        a.validate()
            .map_err(|m| ConfigError::invalid("tiering.attrs", m))?;
        if a.intervals_goal.aggrs > 0 {
            return Err(ConfigError::invalid(
                "tiering.attrs.intervals_goal",
                "the controller's hotness threshold assumes fixed sampling and aggregation intervals: no interval auto-tuning",
            ));
        }
        if self.targets.is_empty() {
            return Err(ConfigError::invalid(
                "tiering.targets",
                "name at least one pid, name or cgroup",
            ));
        }
        if self.promote_rate_limit_mbps == 0 {
            return Err(ConfigError::invalid(
                "tiering.promote_rate_limit_mbps",
                "must be positive",
            ));
        }
        if !(1..=1000).contains(&self.hot_threshold_permil) {
            return Err(ConfigError::invalid(
                "tiering.hot_threshold_permil",
                "must be 1..=1000",
            ));
        }
        if let Some(n) = self.fast_nodes.iter().find(|n| self.slow_nodes.contains(n)) {
            return Err(ConfigError::invalid(
                "tiering.slow_nodes",
                format!("node {n} is listed as both fast and slow"),
            ));
        }
        Ok(())
    }
}

/// Parse a `*` glob against a command name.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else if let Some(pos) = rest.find(p) {
            rest = &rest[pos + p.len()..];
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_with_stars() {
        assert!(glob_match("app", "app"));
        assert!(!glob_match("app", "app2"));
        assert!(glob_match("work*", "worker-3"));
        assert!(glob_match("*er*", "worker"));
        assert!(!glob_match("w*z", "worker"));
    }
}
