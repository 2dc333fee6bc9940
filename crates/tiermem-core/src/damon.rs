//! The DAMON / DAMOS configuration vocabulary (`kernel-mechanisms.md` §4–§5): monitoring
//! attributes, schemes (access pattern, action, quota, goals, watermarks, filters) and the
//! parameters of the DAMON_RECLAIM, DAMON_LRU_SORT and DAMON-based tiering modules.
//!
//! This is data only, shared by the simulator and the live agent (the same TOML drives
//! both); the engine that runs it is the `tiermem-damon` crate. Units follow the kernel's
//! sysfs files (`sample_us`, `min_nr_accesses` in samples per aggregation, `min_age` in
//! aggregation intervals, watermarks in per-thousand), so a scheme can be written to
//! `/sys/kernel/mm/damon/admin/` unchanged.
//!
//! ```toml
//! [kernel.damon.reclaim]          # DAMON_RECLAIM with its module parameters
//! enabled = true
//! min_age_us = 5000000
//! quota_ms = 50
//!
//! [[kernel.damon.contexts]]       # or a hand-written context
//! ops = "vaddr"
//! target_workloads = [0]
//! [[kernel.damon.contexts.schemes]]
//! action = "pageout"
//! access_pattern = { min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }
//! ```

use crate::units::{NodeId, PAGE_SIZE};
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// A monitored region as DAMON reports it at the end of an aggregation window (a scheme's
/// `tried_regions/<N>/` in sysfs, or the simulated context's region list): its address
/// range, how many of the window's samples saw it accessed, and for how many windows its
/// access level has stayed similar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u64,
    pub age: u64,
}

impl Region {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// `[kernel.damon]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DamonConfig {
    /// Hand-written monitoring contexts (one kdamond each).
    pub contexts: Vec<ContextConfig>,
    /// DAMON_RECLAIM (`mm/damon/reclaim.c`).
    pub reclaim: Option<ReclaimParams>,
    /// DAMON_LRU_SORT (`mm/damon/lru_sort.c`).
    pub lru_sort: Option<LruSortParams>,
    /// DAMON-based memory tiering as damo's memory-tiering setup does it.
    pub tiering: Option<TieringParams>,
    /// CPU cost model of kdamond.
    pub costs: DamonCosts,
}

/// Address-space operations (`operations` in sysfs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpsKind {
    /// Virtual address spaces of processes; three initial regions from the VMA layout.
    Vaddr,
    /// The physical address space.
    Paddr,
}

/// One monitoring context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    pub ops: OpsKind,
    #[serde(default)]
    pub attrs: MonitoringAttrs,
    /// vaddr: indices of `[[workloads]]` whose processes are the targets (every process
    /// of each). Empty for paddr.
    #[serde(default)]
    pub target_workloads: Vec<usize>,
    /// paddr: physical ranges `[start, end)` in bytes; empty = all system RAM.
    #[serde(default)]
    pub regions: Vec<AddrRange>,
    #[serde(default)]
    pub schemes: Vec<SchemeConfig>,
    /// Record the regions of every aggregation interval (what the `damon_aggregated`
    /// tracepoint gives `damo record`) into the run's `damon.json`, for `tiermem report`.
    /// Default false.
    #[serde(default)]
    pub record: bool,
    /// Run the context only while a workload's measured run is in progress, with a fresh
    /// kdamond (new regions, new quota history) for each: as a benchmark harness does that
    /// starts `damo schemes` when a program's process appears and stops it when the program
    /// exits (damon-tests' `run_workload_damon.sh`, which produced the DAMON_RECLAIM RFC's
    /// table). While runs overlap, one kdamond serves them all: it starts with the first
    /// and stops with the last. Simulator only. Default false: one kdamond for the whole
    /// simulation, as a module or a `damo start` before the workloads.
    #[serde(default)]
    pub per_workload_run: bool,
}

/// An address range `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddrRange {
    pub start: u64,
    pub end: u64,
}

/// `struct damon_attrs` with `damon_new_ctx`'s defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MonitoringAttrs {
    /// Sampling interval, us. Default 5000.
    pub sample_us: u64,
    /// Aggregation interval, us. Default 100000.
    pub aggr_us: u64,
    /// Operations update interval, us. Default 60000000.
    pub update_us: u64,
    /// Default 10; at least 3.
    pub min_nr_regions: u32,
    /// Default 1000.
    pub max_nr_regions: u32,
    /// Interval auto-tuning (6.15+); off by default.
    pub intervals_goal: IntervalsGoal,
}

fn d_sample() -> u64 {
    5000
}
fn d_aggr() -> u64 {
    100_000
}
fn d_min_nr() -> u32 {
    10
}
fn d_max_nr() -> u32 {
    1000
}

impl Default for MonitoringAttrs {
    fn default() -> Self {
        MonitoringAttrs {
            sample_us: d_sample(),
            aggr_us: d_aggr(),
            update_us: 60_000_000,
            min_nr_regions: d_min_nr(),
            max_nr_regions: d_max_nr(),
            intervals_goal: IntervalsGoal::default(),
        }
    }
}

/// `struct damon_intervals_goal`; `aggrs = 0` disables tuning.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntervalsGoal {
    pub access_bp: u64,
    pub aggrs: u64,
    pub min_sample_us: u64,
    pub max_sample_us: u64,
}

impl MonitoringAttrs {
    /// `damon_set_attrs` validation (plus `damon_new_ctx`'s `min_nr_regions >= 3`).
    pub fn validate(&self) -> Result<(), String> {
        if self.min_nr_regions < 3 {
            return Err(format!(
                "min_nr_regions must be at least 3 (got {})",
                self.min_nr_regions
            ));
        }
        if self.min_nr_regions > self.max_nr_regions {
            return Err(format!(
                "min_nr_regions ({}) must not exceed max_nr_regions ({})",
                self.min_nr_regions, self.max_nr_regions
            ));
        }
        if self.sample_us > self.aggr_us {
            return Err(format!(
                "sample_us ({}) must not exceed aggr_us ({})",
                self.sample_us, self.aggr_us
            ));
        }
        if self.sample_us == 0 {
            // The kernel accepts 0 (busy sampling); a simulator cannot advance time with it.
            return Err("sample_us must be positive in the simulator".into());
        }
        let g = &self.intervals_goal;
        if g.aggrs > 0 {
            if g.min_sample_us > g.max_sample_us {
                return Err("intervals_goal.min_sample_us must not exceed max_sample_us".into());
            }
            if self.sample_us < g.min_sample_us || self.sample_us > g.max_sample_us {
                return Err(
                    "sample_us must be within intervals_goal.min_sample_us..max_sample_us".into(),
                );
            }
            if g.access_bp == 0 {
                return Err("intervals_goal.access_bp must be positive when aggrs > 0".into());
            }
        }
        Ok(())
    }

    /// `damon_max_nr_accesses`: `aggr / sample`, the maximum `nr_accesses`.
    pub fn max_nr_accesses(&self) -> u32 {
        (self.aggr_us / self.sample_us.max(1)).min(u32::MAX as u64) as u32
    }
}

/// DAMOS actions (`enum damos_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DamosAction {
    Willneed,
    Cold,
    Pageout,
    Hugepage,
    Nohugepage,
    LruPrio,
    LruDeprio,
    MigrateHot,
    MigrateCold,
    Stat,
}

impl DamosAction {
    pub fn name(self) -> &'static str {
        match self {
            DamosAction::Willneed => "willneed",
            DamosAction::Cold => "cold",
            DamosAction::Pageout => "pageout",
            DamosAction::Hugepage => "hugepage",
            DamosAction::Nohugepage => "nohugepage",
            DamosAction::LruPrio => "lru_prio",
            DamosAction::LruDeprio => "lru_deprio",
            DamosAction::MigrateHot => "migrate_hot",
            DamosAction::MigrateCold => "migrate_cold",
            DamosAction::Stat => "stat",
        }
    }
}

/// `struct damos_access_pattern`; all bounds inclusive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccessPattern {
    /// Bytes. Default 0.
    pub min_sz: u64,
    /// Bytes. Default unlimited.
    pub max_sz: u64,
    /// Samples per aggregation interval. Default 0.
    pub min_nr_accesses: u32,
    /// Default unlimited.
    pub max_nr_accesses: u32,
    /// Aggregation intervals. Default 0.
    pub min_age: u32,
    /// Default unlimited.
    pub max_age: u32,
}

impl Default for AccessPattern {
    fn default() -> Self {
        AccessPattern {
            min_sz: 0,
            max_sz: u64::MAX,
            min_nr_accesses: 0,
            max_nr_accesses: u32::MAX,
            min_age: 0,
            max_age: u32::MAX,
        }
    }
}

/// Quota goal metrics (`enum damos_quota_goal_metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalMetric {
    UserInput,
    SomeMemPsiUs,
    NodeMemUsedBp,
    NodeMemFreeBp,
    ActiveMemBp,
    InactiveMemBp,
}

/// `struct damos_quota_goal`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaGoal {
    pub metric: GoalMetric,
    pub target_value: u64,
    /// For `user_input`: the value the user reports.
    #[serde(default)]
    pub current_value: u64,
    /// For the node metrics.
    #[serde(default)]
    pub nid: Option<NodeId>,
}

/// Prioritisation weights (`quotas/weights/*_permil`); the sysfs defaults are all 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaWeights {
    pub sz_permil: u32,
    pub nr_accesses_permil: u32,
    pub age_permil: u32,
}

/// `struct damos_quota`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaConfig {
    /// Time quota per reset interval, ms. 0 = none.
    pub ms: u64,
    /// Size quota per reset interval, bytes. 0 = none.
    pub sz: u64,
    /// Charge window, ms. Default 0 (then every apply is a new window).
    pub reset_interval_ms: u64,
    pub weights: QuotaWeights,
    pub goals: Vec<QuotaGoal>,
}

/// Watermark metric (`enum damos_wmark_metric`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WmarkMetric {
    #[default]
    None,
    FreeMemRate,
}

/// `struct damos_watermarks`; values are per-thousand for `free_mem_rate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Watermarks {
    pub metric: WmarkMetric,
    pub interval_us: u64,
    pub high: u64,
    pub mid: u64,
    pub low: u64,
}

/// Filter types (`enum damos_filter_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterType {
    /// Ops layer: anonymous pages.
    Anon,
    /// Ops layer: pages on the active LRU list.
    Active,
    /// Ops layer: pages of a memory cgroup; the simulator's groups are workload indices.
    Memcg,
    /// Ops layer: pages accessed since the last check (test and clear).
    Young,
    /// Core layer: an address range.
    Addr,
    /// Core layer: a target index.
    Target,
}

impl FilterType {
    /// Core filters are evaluated per region by the core; the rest per page by the ops.
    pub fn is_core(self) -> bool {
        matches!(self, FilterType::Addr | FilterType::Target)
    }
}

/// `struct damos_filter`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    #[serde(rename = "type")]
    pub kind: FilterType,
    /// Y: matches pages/regions that have the property. Default true.
    #[serde(default = "yes")]
    pub matching: bool,
    /// 6.14+: a matched filter admits instead of rejecting. Default false.
    #[serde(default)]
    pub allow: bool,
    /// `memcg` in the simulator: the group, as a workload index. Refused by the live agent.
    #[serde(default)]
    pub memcg: Option<u32>,
    /// `memcg` on a live host (the agent): the cgroup's path below the cgroup2 mount, as
    /// DAMON sysfs's `memcg_path` takes it (`/system.slice/x.service`). Refused by the
    /// simulator, which has no cgroup tree.
    #[serde(default)]
    pub memcg_path: Option<String>,
    /// `addr`: the range.
    #[serde(default)]
    pub addr: Option<AddrRange>,
    /// `target`: the target index.
    #[serde(default)]
    pub target_idx: Option<u32>,
}

fn yes() -> bool {
    true
}

impl FilterConfig {
    /// A filter on a page property (`anon`, `active`, `young`, …) with no group, range or
    /// target: `matching` pages are admitted when `allow`, rejected otherwise.
    pub fn new(kind: FilterType, matching: bool, allow: bool) -> Self {
        FilterConfig {
            kind,
            matching,
            allow,
            memcg: None,
            memcg_path: None,
            addr: None,
            target_idx: None,
        }
    }
}

/// One DAMOS scheme.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeConfig {
    pub action: DamosAction,
    #[serde(default)]
    pub access_pattern: AccessPattern,
    /// 0 = every aggregation interval.
    #[serde(default)]
    pub apply_interval_us: u64,
    #[serde(default)]
    pub quotas: QuotaConfig,
    #[serde(default)]
    pub watermarks: Watermarks,
    #[serde(default)]
    pub filters: Vec<FilterConfig>,
    /// migrate_hot / migrate_cold destination.
    #[serde(default)]
    pub target_nid: Option<NodeId>,
}

impl SchemeConfig {
    pub fn new(action: DamosAction) -> Self {
        SchemeConfig {
            action,
            access_pattern: AccessPattern::default(),
            apply_interval_us: 0,
            quotas: QuotaConfig::default(),
            watermarks: Watermarks::default(),
            filters: Vec::new(),
            target_nid: None,
        }
    }

    /// Cross-field checks (the sysfs commit path rejects these).
    pub fn validate(&self, nr_nodes: usize) -> Result<(), String> {
        let p = &self.access_pattern;
        if p.min_sz > p.max_sz || p.min_nr_accesses > p.max_nr_accesses || p.min_age > p.max_age {
            return Err("access_pattern: a min bound exceeds its max".into());
        }
        if matches!(
            self.action,
            DamosAction::MigrateHot | DamosAction::MigrateCold
        ) {
            match self.target_nid {
                Some(n) if n.idx() < nr_nodes => {}
                Some(n) => return Err(format!("target_nid {} does not exist", n.0)),
                None => return Err("migrate actions need target_nid".into()),
            }
        }
        let w = &self.watermarks;
        if w.metric != WmarkMetric::None && !(w.low <= w.mid && w.mid <= w.high) {
            return Err("watermarks must satisfy low <= mid <= high".into());
        }
        for (i, g) in self.quotas.goals.iter().enumerate() {
            if g.target_value == 0 {
                return Err(format!("quotas.goals[{i}].target_value must be positive"));
            }
            if matches!(
                g.metric,
                GoalMetric::NodeMemUsedBp | GoalMetric::NodeMemFreeBp
            ) {
                match g.nid {
                    Some(n) if n.idx() < nr_nodes => {}
                    _ => {
                        return Err(format!(
                            "quotas.goals[{i}]: node metrics need an existing nid"
                        ))
                    }
                }
            }
        }
        for (i, f) in self.filters.iter().enumerate() {
            let ok = match f.kind {
                FilterType::Addr => f.addr.is_some_and(|a| a.start < a.end),
                FilterType::Target => f.target_idx.is_some(),
                FilterType::Memcg => f.memcg.is_some() || f.memcg_path.is_some(),
                _ => true,
            };
            if !ok {
                return Err(format!(
                    "filters[{i}]: {:?} filter needs its argument (addr / target_idx / memcg or memcg_path)",
                    f.kind
                ));
            }
        }
        Ok(())
    }
}

/// DAMON_RECLAIM module parameters (`/sys/module/damon_reclaim/parameters/`), with the
/// kernel's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReclaimParams {
    /// Default false (the module is loaded but idle).
    pub enabled: bool,
    /// Coldness threshold, us. Default 120000000.
    pub min_age_us: u64,
    /// Default 10.
    pub quota_ms: u64,
    /// Default 128 MiB.
    pub quota_sz: u64,
    /// Default 1000.
    pub quota_reset_interval_ms: u64,
    /// Adds a `some_mem_psi_us` goal; 0 = off.
    pub quota_mem_pressure_us: u64,
    /// Adds a `user_input` goal (target 10000); 0 = off.
    pub quota_autotune_feedback: u64,
    /// Default false.
    pub autotune_monitoring_intervals: bool,
    /// Default 5000000.
    pub wmarks_interval_us: u64,
    /// Per-thousand free memory. Defaults 500 / 400 / 200.
    pub wmarks_high: u64,
    pub wmarks_mid: u64,
    pub wmarks_low: u64,
    pub sample_interval_us: u64,
    pub aggr_interval_us: u64,
    pub min_nr_regions: u32,
    pub max_nr_regions: u32,
    /// 0/0 = all system RAM.
    pub monitor_region_start: u64,
    pub monitor_region_end: u64,
    /// Adds an anon reject filter.
    pub skip_anon: bool,
    /// Not a kernel parameter: false zeroes the quota weights, which is how the seed's
    /// "without prioritization" variants behave (regions in address order). Default true
    /// (the module's fixed weights: sz 0, nr_accesses 0, age 1).
    pub prioritization: bool,
    /// Not a kernel parameter: false sets the watermark metric to none (always active), as
    /// an evaluation on a mostly free machine needs. Default true.
    pub use_watermarks: bool,
}

impl Default for ReclaimParams {
    fn default() -> Self {
        ReclaimParams {
            enabled: Default::default(),
            min_age_us: 120_000_000,
            quota_ms: 10,
            quota_sz: 128 << 20,
            quota_reset_interval_ms: 1000,
            quota_mem_pressure_us: Default::default(),
            quota_autotune_feedback: Default::default(),
            autotune_monitoring_intervals: Default::default(),
            wmarks_interval_us: 5_000_000,
            wmarks_high: 500,
            wmarks_mid: 400,
            wmarks_low: 200,
            sample_interval_us: 5000,
            aggr_interval_us: 100_000,
            min_nr_regions: 10,
            max_nr_regions: 1000,
            monitor_region_start: Default::default(),
            monitor_region_end: Default::default(),
            skip_anon: Default::default(),
            prioritization: true,
            use_watermarks: true,
        }
    }
}

/// DAMON_LRU_SORT module parameters, with the kernel's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LruSortParams {
    pub enabled: bool,
    /// Per-thousand of the maximum nr_accesses. Default 500.
    pub hot_thres_access_freq: u64,
    /// us. Default 120000000.
    pub cold_min_age_us: u64,
    /// Default 10 (half to each scheme).
    pub quota_ms: u64,
    pub quota_reset_interval_ms: u64,
    pub wmarks_interval_us: u64,
    /// Defaults 200 / 150 / 50.
    pub wmarks_high: u64,
    pub wmarks_mid: u64,
    pub wmarks_low: u64,
    pub sample_interval_us: u64,
    pub aggr_interval_us: u64,
    pub min_nr_regions: u32,
    pub max_nr_regions: u32,
    pub monitor_region_start: u64,
    pub monitor_region_end: u64,
}

impl Default for LruSortParams {
    fn default() -> Self {
        LruSortParams {
            enabled: Default::default(),
            hot_thres_access_freq: 500,
            cold_min_age_us: 120_000_000,
            quota_ms: 10,
            quota_reset_interval_ms: 1000,
            wmarks_interval_us: 5_000_000,
            wmarks_high: 200,
            wmarks_mid: 150,
            wmarks_low: 50,
            sample_interval_us: 5000,
            aggr_interval_us: 100_000,
            min_nr_regions: 10,
            max_nr_regions: 1000,
            monitor_region_start: Default::default(),
            monitor_region_end: Default::default(),
        }
    }
}

/// DAMON-based tiering as damo's memory-tiering example sets it up (one paddr context per
/// node): the fast node demotes cold pages (`migrate_cold`) with a goal on its free
/// memory, the slow node promotes hot pages (`migrate_hot`) with a goal on the fast node's
/// used memory; young filters keep recently used pages from being demoted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TieringParams {
    pub enabled: bool,
    /// Default node 0.
    pub fast_node: NodeId,
    /// Default node 1.
    pub slow_node: NodeId,
    /// Minimum access rate of a region to promote, per-thousand of the maximum. Default 50 (5 %).
    pub hot_access_permil: u64,
    /// Goal: fast-node used memory, bp. Default 9970 (99.7 %).
    pub fast_used_target_bp: u64,
    /// Goal: fast-node free memory, bp. Default 50 (0.5 %).
    pub fast_free_target_bp: u64,
    /// Size quota per reset interval, bytes. Default 200 MiB.
    pub quota_sz: u64,
    /// Default 1000.
    pub quota_reset_interval_ms: u64,
    /// Default 1000000 (1 s).
    pub apply_interval_us: u64,
    pub sample_interval_us: u64,
    pub aggr_interval_us: u64,
    pub min_nr_regions: u32,
    pub max_nr_regions: u32,
}

impl Default for TieringParams {
    fn default() -> Self {
        TieringParams {
            enabled: Default::default(),
            fast_node: Default::default(),
            slow_node: NodeId(1),
            hot_access_permil: 50,
            fast_used_target_bp: 9970,
            fast_free_target_bp: 50,
            quota_sz: 200 << 20,
            quota_reset_interval_ms: 1000,
            apply_interval_us: 1_000_000,
            sample_interval_us: 5000,
            aggr_interval_us: 100_000,
            min_nr_regions: 10,
            max_nr_regions: 1000,
        }
    }
}

/// A scheme's statistics (`struct damos_stat`; the files of DAMON sysfs
/// `schemes/<S>/stats/`), the same for a simulated context and a kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchemeStats {
    pub nr_tried: u64,
    pub sz_tried: u64,
    pub nr_applied: u64,
    pub sz_applied: u64,
    /// Bytes that passed the operations layer's filters (`sz_ops_filter_passed`, a file
    /// since Linux 6.14; 0 where the kernel lacks it).
    pub sz_ops_filter_passed: u64,
    pub qt_exceeds: u64,
}

impl SchemeStats {
    /// Add another kdamond's statistics (a per-run context's earlier kdamonds).
    pub fn add(&mut self, o: &SchemeStats) {
        // Every field named, so that a new statistic must be added here too.
        let SchemeStats {
            nr_tried,
            sz_tried,
            nr_applied,
            sz_applied,
            sz_ops_filter_passed,
            qt_exceeds,
        } = o;
        self.nr_tried += nr_tried;
        self.sz_tried += sz_tried;
        self.nr_applied += nr_applied;
        self.sz_applied += sz_applied;
        self.sz_ops_filter_passed += sz_ops_filter_passed;
        self.qt_exceeds += qt_exceeds;
    }

    /// A statistic by its file name in `stats/` (`sz_applied`); `None` for another name.
    pub fn get(&self, file: &str) -> Option<u64> {
        Some(match file {
            "nr_tried" => self.nr_tried,
            "sz_tried" => self.sz_tried,
            "nr_applied" => self.nr_applied,
            "sz_applied" => self.sz_applied,
            "sz_ops_filter_passed" => self.sz_ops_filter_passed,
            "qt_exceeds" => self.qt_exceeds,
            _ => return None,
        })
    }
}

/// kdamond's CPU cost model (assumptions; see docs/model.md). kdamond runs on its own CPU:
/// its time is reported as a share of one CPU and does not slow the workload, except for
/// the time the actions' effects cost (refaults, migration traffic).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DamonCosts {
    /// Per region per sample: prepare (pick address, mkold via rmap) and check. Default
    /// 280 ns, from DAMON's paddr monitoring alone on the seed-004 programs: damon-tests'
    /// `prec` runs use 1.25 % of a CPU (median over 693 daily reports; the DAMON_RECLAIM
    /// RFC v1 gives about 1.45 %), 62.5 us per 5 ms sample, over the 222 regions a sample
    /// checks on average in the simulator's full-size seed-004 runs. The TCG guest's traced
    /// 2.5 us a region (docs/fidelity.md) is 9 times that, inside the 8-17 times TCG slows
    /// kernel page work (docs/recordings/page-cache-vm.md).
    pub sample_region_ns: u64,
    /// Per sample: how late the kdamond wakes from its sampling sleep (`kdamond_usleep`'s
    /// `usleep_idle_range`: timer slack, wakeup and the loop's fixed work). Latency, not
    /// CPU time: it stretches the sampling interval without counting as kdamond CPU.
    /// Default 20 us (an hrtimer sleep's typical overshoot on hardware; a guess).
    pub sample_wakeup_ns: u64,
    /// Per region per aggregation: merge, split, reset. Default 40 ns.
    pub aggregate_region_ns: u64,
    /// Per region visited per scheme application (pattern match, scoring). Default 30 ns.
    pub apply_region_ns: u64,
    /// Per LRU page an action handles (folio isolation, the rmap walk of the filters),
    /// on top of the kernel's own cost of the action (reclaim, migration). Default 1 us.
    pub action_page_ns: u64,
    /// Per page an action looks at (`damon_get_folio`'s pfn to folio lookup), including
    /// the free pages it skips. Default 5 ns: a free page costs one read of its 64-byte
    /// `struct page` in address order, so the walk runs at one core's streaming bandwidth;
    /// `scripts/measure/pfn-walk.c` measures 2.1 ns on a 2020s EPYC core, and the seed-004
    /// machine's Broadwell core (about 12 GB/s from one core) would take about 5 ns.
    pub walk_page_ns: u64,
}

impl Default for DamonCosts {
    fn default() -> Self {
        DamonCosts {
            sample_region_ns: 280,
            sample_wakeup_ns: 20_000,
            aggregate_region_ns: 40,
            apply_region_ns: 30,
            action_page_ns: 1000,
            walk_page_ns: 5,
        }
    }
}

impl DamonConfig {
    /// True when any context or enabled module is configured.
    pub fn is_active(&self) -> bool {
        !self.contexts.is_empty()
            || self.reclaim.as_ref().is_some_and(|r| r.enabled)
            || self.lru_sort.as_ref().is_some_and(|r| r.enabled)
            || self.tiering.as_ref().is_some_and(|r| r.enabled)
    }

    /// Check everything; keys are reported under `kernel.damon`.
    pub fn validate(&self, nr_nodes: usize, nr_workloads: usize) -> Result<(), ConfigError> {
        let bad = |k: String, m: String| Err(ConfigError::invalid(format!("kernel.damon.{k}"), m));
        for (ci, c) in self.contexts.iter().enumerate() {
            if let Err(m) = c.attrs.validate() {
                return bad(format!("contexts[{ci}].attrs"), m);
            }
            if c.per_workload_run && c.record {
                return bad(
                    format!("contexts[{ci}].record"),
                    "a per_workload_run context starts a fresh kdamond for each run; record one context that runs throughout instead".into(),
                );
            }
            match c.ops {
                OpsKind::Vaddr => {
                    if c.target_workloads.is_empty() {
                        return bad(
                            format!("contexts[{ci}].target_workloads"),
                            "vaddr needs at least one target workload".into(),
                        );
                    }
                    if let Some(w) = c.target_workloads.iter().find(|&&w| w >= nr_workloads) {
                        return bad(
                            format!("contexts[{ci}].target_workloads"),
                            format!("workload {w} does not exist"),
                        );
                    }
                }
                OpsKind::Paddr => {
                    if !c.target_workloads.is_empty() {
                        return bad(
                            format!("contexts[{ci}].target_workloads"),
                            "paddr monitors physical memory: give regions, not workloads".into(),
                        );
                    }
                    for (ri, r) in c.regions.iter().enumerate() {
                        if r.start >= r.end || r.start % PAGE_SIZE != 0 {
                            return bad(
                                format!("contexts[{ci}].regions[{ri}]"),
                                "needs start < end, start page-aligned".into(),
                            );
                        }
                    }
                }
            }
            for (si, s) in c.schemes.iter().enumerate() {
                if let Err(m) = s.validate(nr_nodes) {
                    return bad(format!("contexts[{ci}].schemes[{si}]"), m);
                }
                if let Some(fi) = s.filters.iter().position(|f| f.memcg_path.is_some()) {
                    return bad(
                        format!("contexts[{ci}].schemes[{si}].filters[{fi}].memcg_path"),
                        "the simulator has no cgroup tree: name the group with memcg (a workload index)".into(),
                    );
                }
            }
        }
        let attrs_ok = |key: &str, sample: u64, aggr: u64, min: u32, max: u32| {
            let a = MonitoringAttrs {
                sample_us: sample,
                aggr_us: aggr,
                min_nr_regions: min,
                max_nr_regions: max,
                ..Default::default()
            };
            a.validate()
                .map_err(|m| ConfigError::invalid(format!("kernel.damon.{key}"), m))
        };
        if let Some(r) = &self.reclaim {
            attrs_ok(
                "reclaim",
                r.sample_interval_us,
                r.aggr_interval_us,
                r.min_nr_regions,
                r.max_nr_regions,
            )?;
            if r.wmarks_low > r.wmarks_mid || r.wmarks_mid > r.wmarks_high {
                return bad(
                    "reclaim".into(),
                    "wmarks_low <= wmarks_mid <= wmarks_high".into(),
                );
            }
            if r.monitor_region_start > r.monitor_region_end {
                return bad(
                    "reclaim.monitor_region_start".into(),
                    "must not exceed monitor_region_end".into(),
                );
            }
        }
        if let Some(r) = &self.lru_sort {
            attrs_ok(
                "lru_sort",
                r.sample_interval_us,
                r.aggr_interval_us,
                r.min_nr_regions,
                r.max_nr_regions,
            )?;
            if r.wmarks_low > r.wmarks_mid || r.wmarks_mid > r.wmarks_high {
                return bad(
                    "lru_sort".into(),
                    "wmarks_low <= wmarks_mid <= wmarks_high".into(),
                );
            }
            if r.hot_thres_access_freq > 1000 {
                return bad(
                    "lru_sort.hot_thres_access_freq".into(),
                    "is per-thousand (0..1000)".into(),
                );
            }
        }
        if let Some(t) = &self.tiering {
            attrs_ok(
                "tiering",
                t.sample_interval_us,
                t.aggr_interval_us,
                t.min_nr_regions,
                t.max_nr_regions,
            )?;
            if t.fast_node.idx() >= nr_nodes || t.slow_node.idx() >= nr_nodes {
                return bad("tiering".into(), "fast_node / slow_node must exist".into());
            }
            if t.fast_node == t.slow_node {
                return bad(
                    "tiering".into(),
                    "fast_node and slow_node must differ".into(),
                );
            }
            if t.hot_access_permil > 1000 {
                return bad("tiering.hot_access_permil".into(), "is per-thousand".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_defaults_and_validation_follow_damon_set_attrs() {
        let a = MonitoringAttrs::default();
        assert_eq!(
            (a.sample_us, a.aggr_us, a.update_us),
            (5000, 100_000, 60_000_000)
        );
        assert_eq!((a.min_nr_regions, a.max_nr_regions), (10, 1000));
        assert_eq!(a.max_nr_accesses(), 20);
        assert!(a.validate().is_ok());
        let mut b = a.clone();
        b.min_nr_regions = 2;
        assert!(b.validate().is_err());
        let mut b = a.clone();
        b.min_nr_regions = 2000;
        assert!(b.validate().is_err());
        let mut b = a.clone();
        b.sample_us = 200_000;
        assert!(b.validate().is_err());
        let mut b = a;
        b.intervals_goal = IntervalsGoal {
            access_bp: 40,
            aggrs: 3,
            min_sample_us: 10_000,
            max_sample_us: 10_000_000,
        };
        assert!(b.validate().is_err(), "sample below min_sample_us");
    }

    #[test]
    fn module_defaults_match_the_kernel() {
        let r = ReclaimParams::default();
        assert!(!r.enabled);
        assert_eq!(r.min_age_us, 120_000_000);
        assert_eq!(
            (r.quota_ms, r.quota_sz, r.quota_reset_interval_ms),
            (10, 128 << 20, 1000)
        );
        assert_eq!((r.wmarks_high, r.wmarks_mid, r.wmarks_low), (500, 400, 200));
        assert_eq!(r.wmarks_interval_us, 5_000_000);
        let l = LruSortParams::default();
        assert_eq!(l.hot_thres_access_freq, 500);
        assert_eq!((l.wmarks_high, l.wmarks_mid, l.wmarks_low), (200, 150, 50));
    }

    #[test]
    fn memcg_filters_name_a_workload_in_the_simulator() {
        let cfg = |filter: &str| -> DamonConfig {
            toml::from_str(&format!(
                "[[contexts]]\nops = \"paddr\"\n[[contexts.schemes]]\naction = \"pageout\"\nfilters = [{filter}]\n"
            ))
            .unwrap()
        };
        assert!(cfg("{ type = \"memcg\", memcg = 0 }")
            .validate(2, 1)
            .is_ok());
        let e = cfg("{ type = \"memcg\", memcg_path = \"/a\" }")
            .validate(2, 1)
            .unwrap_err();
        assert_eq!(
            e.key,
            "kernel.damon.contexts[0].schemes[0].filters[0].memcg_path"
        );
        assert!(cfg("{ type = \"memcg\" }").validate(2, 1).is_err());
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let e = toml::from_str::<DamonConfig>("[reclaim]\nquota_mss = 3\n");
        assert!(e.is_err());
    }
}
