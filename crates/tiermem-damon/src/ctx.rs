//! One monitoring context (one kdamond): the loop of `kdamond_fn` and DAMOS application
//! (`kdamond_apply_schemes`, `damon_do_apply_schemes`, `damos_apply_scheme`,
//! `damos_adjust_quota`) in `mm/damon/core.c`, scores from `mm/damon/ops-common.c`.
//!
//! The loop is cut into resumable steps: [`DamonCtx::step`] finishes the iteration whose
//! sampling interval just ended (check accesses, aggregate, apply schemes, reset, split,
//! update) and prepares the next one, returning when to be called again (the sampling
//! interval plus the CPU time the work took, as the kernel's kdamond sleeps after working).
//! While every scheme's watermarks say inactive, a step only re-evaluates them and asks
//! to sleep for the shortest watermark interval, without monitoring.

use crate::region::{self, Region, MIN_REGION_SZ};
use crate::{ApplyRequest, ApplyResult, DamonOps, OpsFilters};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tiermem_core::damon::{
    ContextConfig, DamonCosts, DamosAction, FilterConfig, FilterType, GoalMetric, MonitoringAttrs,
    OpsKind, Region as CoreRegion, SchemeConfig, WmarkMetric,
};
use tiermem_core::damon_record::RecordSnapshot;
use tiermem_core::release::KernelRelease;
use tiermem_core::units::PAGE_SIZE;

/// `DAMOS_MAX_SCORE`.
pub const MAX_SCORE: u32 = 99;
/// `DAMON_MAX_SUBSCORE`.
const MAX_SUBSCORE: u64 = 100;
/// `DAMON_MAX_AGE_IN_LOG`.
const MAX_AGE_IN_LOG: i64 = 32;

/// `struct damos_stat` (defined in `tiermem-core`, shared with the live agent).
pub use tiermem_core::damon::SchemeStats;

/// One entry of `tried_regions/` (the regions of the latest application).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TriedRegion {
    pub target: usize,
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u32,
    pub age: u32,
    pub sz_filter_passed: u64,
}

/// The runtime part of `struct damos_quota`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QuotaState {
    /// Effective size quota of the current window (0 = unlimited).
    pub esz: u64,
    /// Feedback-loop state, bp of bytes.
    pub esz_bp: u64,
    pub charged_sz: u64,
    /// Start of the current charge window, ms (None before the first use).
    pub charged_from_ms: Option<u64>,
    pub total_charged_sz: u64,
    pub total_charged_ns: u64,
    /// Resume marker: the target and address after the last charged region.
    pub charge_target_from: Option<usize>,
    pub charge_addr_from: u64,
    /// Lowest score eligible under the quota (`min_score`).
    pub min_score: u32,
    /// Current values of the goals, computed at each window reset.
    pub goal_current: Vec<u64>,
}

/// A scheme and its state.
#[derive(Clone, Debug)]
pub struct Scheme {
    pub cfg: SchemeConfig,
    pub stat: SchemeStats,
    pub quota: QuotaState,
    /// `wmarks.activated`; new schemes start activated.
    pub activated: bool,
    pub next_apply_sis: u64,
    pub tried_regions: Vec<TriedRegion>,
    core_filters: Vec<FilterConfig>,
    ops_filters: Vec<FilterConfig>,
    core_default_reject: bool,
    ops_default_reject: bool,
}

impl Scheme {
    pub fn new(cfg: SchemeConfig) -> Self {
        let core_filters: Vec<FilterConfig> = cfg
            .filters
            .iter()
            .filter(|f| f.kind.is_core())
            .cloned()
            .collect();
        let ops_filters: Vec<FilterConfig> = cfg
            .filters
            .iter()
            .filter(|f| !f.kind.is_core())
            .cloned()
            .collect();
        // damos_set_filters_default_reject: unmatched regions pass the core filters when
        // ops filters follow; otherwise the default is the inverse of the last filter.
        let core_default_reject = if ops_filters.is_empty() {
            core_filters.last().is_some_and(|f| f.allow)
        } else {
            false
        };
        let ops_default_reject = ops_filters.last().is_some_and(|f| f.allow);
        let goals = cfg.quotas.goals.iter().map(|g| g.current_value).collect();
        Scheme {
            cfg,
            stat: SchemeStats::default(),
            quota: QuotaState {
                goal_current: goals,
                ..Default::default()
            },
            activated: true,
            next_apply_sis: 0,
            tried_regions: Vec::new(),
            core_filters,
            ops_filters,
            core_default_reject,
            ops_default_reject,
        }
    }

    fn has_quota(&self) -> bool {
        let q = &self.cfg.quotas;
        q.ms > 0 || q.sz > 0 || !q.goals.is_empty()
    }
}

/// Overhead counters of a context.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CtxCounters {
    /// Sampling intervals passed.
    pub samples: u64,
    pub aggregations: u64,
    /// Access checks done (one per region per sample).
    pub access_checks: u64,
    /// Largest number of access checks in one sampling interval.
    pub max_checks_per_sample: u64,
    /// kdamond CPU time, ns: monitoring and scheme application separately.
    pub monitor_cpu_ns: u64,
    pub scheme_cpu_ns: u64,
    /// Intervals auto-tuning steps.
    pub intervals_tunings: u64,
}

impl CtxCounters {
    /// kdamond CPU time, monitoring and schemes, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.monitor_cpu_ns + self.scheme_cpu_ns
    }

    /// Add another context's counters (a per-run context's earlier kdamonds).
    pub fn add(&mut self, o: &CtxCounters) {
        // Every field named, so that a new counter must be added here too.
        let CtxCounters {
            samples,
            aggregations,
            access_checks,
            max_checks_per_sample,
            monitor_cpu_ns,
            scheme_cpu_ns,
            intervals_tunings,
        } = o;
        self.samples += samples;
        self.aggregations += aggregations;
        self.access_checks += access_checks;
        self.max_checks_per_sample = self.max_checks_per_sample.max(*max_checks_per_sample);
        self.monitor_cpu_ns += monitor_cpu_ns;
        self.scheme_cpu_ns += scheme_cpu_ns;
        self.intervals_tunings += intervals_tunings;
    }
}

/// How long an action runs before the kdamond's step returns, ns. The kernel's
/// `damos_apply_scheme` runs an action on a region to completion, which takes seconds when
/// every page is reclaimed; the simulation cuts it into slices of this length so that the
/// action's effects (pages swapped out, migrated) spread over that time, as they do in the
/// kernel, while the kdamond neither samples nor applies anything else. A simulation
/// granularity, not a kernel parameter.
pub const APPLY_SLICE_NS: u64 = 1_000_000;

/// Whether a pass over the regions finished or an action was cut at its time slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Progress {
    Done,
    Cut,
}

/// The CPU time one step took, ns.
#[derive(Clone, Copy, Debug, Default)]
struct StepWork {
    monitor_ns: u64,
    scheme_ns: u64,
}

/// Where `kdamond_apply_schemes` is in its loop: target, the region being visited (`i`,
/// whose original end is `orig_end`; `cur` is the piece the next scheme sees after
/// splits) and the scheme.
#[derive(Clone, Copy, Debug, Default)]
struct ApplyCursor {
    t: usize,
    i: usize,
    cur: usize,
    si: usize,
    orig_end: u64,
}

impl ApplyCursor {
    fn start_of(t: usize) -> Self {
        ApplyCursor {
            t,
            ..Default::default()
        }
    }
}

/// An action on `[start, end)` cut at its time slice, done up to `next`.
#[derive(Clone, Copy, Debug)]
struct Pending {
    start: u64,
    end: u64,
    next: u64,
    core_allowed: bool,
    done: ApplyResult,
    /// The kdamond's time when the action began, ns (its slices run back to back).
    began_ns: u64,
}

/// The kdamond's unfinished application: where the loop resumes and the cut action.
#[derive(Clone, Copy, Debug)]
struct Applying {
    cursor: ApplyCursor,
    /// Whether the interrupted iteration ends an aggregation interval.
    at_aggr: bool,
    pending: Pending,
}

/// What visiting one region with one scheme did.
enum Visit {
    /// The scheme does not apply now (quota used up, before the resume marker).
    Skipped,
    /// Visited (applied or not); the following schemes see region `region`.
    Done { region: usize, ns: u64 },
    /// The action ran out of its time slice.
    Cut {
        region: usize,
        ns: u64,
        pending: Pending,
    },
}

/// Errors building a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtxError(pub String);

impl std::fmt::Display for CtxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CtxError {}

/// A monitoring context.
pub struct DamonCtx {
    attrs: MonitoringAttrs,
    kind: OpsKind,
    costs: DamonCosts,
    /// Regions per target (sorted, disjoint).
    pub targets: Vec<Vec<Region>>,
    pub schemes: Vec<Scheme>,
    pub passed_sample_intervals: u64,
    next_aggregation_sis: u64,
    next_ops_update_sis: u64,
    next_intervals_tune_sis: u64,
    sz_limit: u64,
    /// `kdamond_split_regions`'s function-static count (per context here).
    last_nr_regions: usize,
    /// Largest `nr_accesses` in the current window.
    max_nr_accesses: u32,
    rng: Xoshiro256PlusPlus,
    initialized: bool,
    prepared: bool,
    stopped: bool,
    /// An action cut at its time slice, continued at the next step.
    applying: Option<Applying>,
    pub counters: CtxCounters,
    /// With `record`: each target's regions at every aggregation.
    recording: Option<Vec<Vec<RecordSnapshot>>>,
    /// The time quota's throughput arithmetic wraps at 64 bits, as before 6.17
    /// ([`KernelRelease::damos_throughput_wraps`]).
    throughput_wraps: bool,
    /// The tick of the clock the time quota reads (`ktime_get_coarse_ts64`), ns; 0 reads
    /// the exact time ([`Self::with_coarse_clock`]).
    clock_tick_ns: u64,
}

impl DamonCtx {
    /// Build a context from its configuration (validated with `damon_set_attrs` rules).
    pub fn new(cfg: &ContextConfig, costs: DamonCosts, seed: u64) -> Result<DamonCtx, CtxError> {
        cfg.attrs.validate().map_err(CtxError)?;
        Ok(DamonCtx {
            attrs: cfg.attrs.clone(),
            kind: cfg.ops,
            costs,
            targets: Vec::new(),
            schemes: cfg.schemes.iter().cloned().map(Scheme::new).collect(),
            passed_sample_intervals: 0,
            next_aggregation_sis: 0,
            next_ops_update_sis: 0,
            next_intervals_tune_sis: 0,
            sz_limit: MIN_REGION_SZ,
            last_nr_regions: 0,
            max_nr_accesses: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            initialized: false,
            prepared: false,
            stopped: false,
            applying: None,
            counters: CtxCounters::default(),
            recording: cfg.record.then(Vec::new),
            throughput_wraps: false,
            clock_tick_ns: 0,
        })
    }

    /// Model `release`'s behaviour where it differs (None: the newest modelled behaviour).
    pub fn for_release(mut self, release: Option<KernelRelease>) -> Self {
        self.throughput_wraps = release.is_some_and(KernelRelease::damos_throughput_wraps);
        self
    }

    /// Time actions as `damos_apply_scheme` does, with `ktime_get_coarse_ts64`: the clock
    /// moves once a tick (`tick_ns`, 1 s / `CONFIG_HZ`), at multiples of the tick on the
    /// kdamond's time line, so an action is charged the ticks that passed while it ran: 0
    /// or one whole tick for an action shorter than a tick. This matters while the
    /// quota's throughput is learnt: the walks of free memory (microseconds) are mostly
    /// charged nothing, so `total_charged_ns` stays 0 and the default throughput holds
    /// until a tick falls inside one (see [`Self::set_effective_quota`]).
    pub fn with_coarse_clock(mut self, tick_ns: u64) -> Self {
        self.clock_tick_ns = tick_ns;
        self
    }

    /// What the time quota's clock charges for an action that ran `elapsed_ns` from
    /// `began_ns`: the ticks between the two readings of the coarse clock.
    pub(crate) fn measured_ns(&self, began_ns: u64, elapsed_ns: u64) -> u64 {
        match self.clock_tick_ns {
            0 => elapsed_ns,
            tick => ((began_ns + elapsed_ns) / tick - began_ns / tick) * tick,
        }
    }

    pub fn attrs(&self) -> &MonitoringAttrs {
        &self.attrs
    }
    pub fn ops_kind(&self) -> OpsKind {
        self.kind
    }
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }
    pub fn nr_regions(&self) -> usize {
        self.targets.iter().map(|t| t.len()).sum()
    }
    /// Total kdamond CPU time, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.counters.cpu_ns()
    }

    /// Set a `user_input` goal's current value (`quota_autotune_feedback`, sysfs `current_value`).
    pub fn set_user_goal_value(&mut self, scheme: usize, goal: usize, value: u64) {
        if let Some(s) = self.schemes.get_mut(scheme) {
            if let Some(g) = s.cfg.quotas.goals.get_mut(goal) {
                g.current_value = value;
            }
        }
    }

    fn samples_of(&self, us: u64) -> u64 {
        us / self.attrs.sample_us.max(1)
    }

    /// `damon_region_sz_limit`.
    fn region_sz_limit(&self) -> u64 {
        let sz: u64 = self.targets.iter().flatten().map(|r| r.size()).sum();
        (sz / self.attrs.min_nr_regions.max(1) as u64).max(MIN_REGION_SZ)
    }

    /// Initial regions (`ops.init`): vaddr's three regions split evenly, or one region per
    /// paddr range.
    fn init(&mut self, ops: &mut dyn DamonOps) {
        self.targets = (0..ops.nr_targets())
            .map(|t| {
                let ranges = ops.target_ranges(t);
                match self.kind {
                    OpsKind::Vaddr => match region::three_regions(&ranges, MIN_REGION_SZ) {
                        Some(three) => region::init_regions_from_ranges(
                            &three,
                            self.attrs.min_nr_regions,
                            MIN_REGION_SZ,
                        ),
                        None => Vec::new(),
                    },
                    OpsKind::Paddr => {
                        let mut rs = Vec::new();
                        region::set_regions(&mut rs, &ranges, MIN_REGION_SZ);
                        rs
                    }
                }
            })
            .collect();
        self.sz_limit = self.region_sz_limit();
        let aggr = self.samples_of(self.attrs.aggr_us);
        self.next_aggregation_sis = aggr;
        self.next_ops_update_sis = self.samples_of(self.attrs.update_us);
        self.next_intervals_tune_sis = aggr * self.attrs.intervals_goal.aggrs;
        for s in &mut self.schemes {
            let iv = if s.cfg.apply_interval_us > 0 {
                s.cfg.apply_interval_us
            } else {
                self.attrs.aggr_us
            };
            s.next_apply_sis = iv / self.attrs.sample_us.max(1);
        }
        self.initialized = true;
    }

    /// `ops.update` for vaddr: recompute the three regions and apply them with
    /// `damon_set_regions` (state is kept where regions overlap).
    fn update(&mut self, ops: &mut dyn DamonOps) {
        if self.kind == OpsKind::Vaddr {
            for t in 0..self.targets.len() {
                if !ops.target_valid(t) {
                    continue;
                }
                let ranges = ops.target_ranges(t);
                if let Some(three) = region::three_regions(&ranges, MIN_REGION_SZ) {
                    region::set_regions(&mut self.targets[t], &three, MIN_REGION_SZ);
                }
            }
        }
        self.sz_limit = self.region_sz_limit();
    }

    /// Run the context at `now_us`. Returns when to call again, or `None` once it stopped
    /// (every target invalid).
    ///
    /// An action that runs out of its time slice ([`APPLY_SLICE_NS`]) is continued first
    /// at the next step: the kdamond does nothing else until `damos_apply_scheme` returns.
    pub fn step(&mut self, now_us: u64, ops: &mut dyn DamonOps) -> Option<u64> {
        if self.stopped {
            return None;
        }
        if !self.initialized {
            self.init(ops);
        }
        let mut work = StepWork::default();
        let sampled = if let Some(applying) = self.applying.take() {
            let at_aggr = applying.at_aggr;
            let began_ns = now_us * 1000;
            if self.resume_application(applying, began_ns, ops, &mut work.scheme_ns)
                == Progress::Cut
            {
                return Some(self.charge(now_us, work));
            }
            Some(at_aggr)
        } else if self.prepared {
            self.prepared = false;
            self.passed_sample_intervals += 1;
            self.counters.samples += 1;
            work.monitor_ns += self.check_accesses(ops);
            let at_aggr = self.passed_sample_intervals >= self.next_aggregation_sis;
            if at_aggr {
                let thres = self.max_nr_accesses / 10;
                self.merge_regions(thres);
            }
            let began_ns = now_us * 1000 + work.monitor_ns;
            if !self.schemes.is_empty()
                && self.apply_schemes(now_us, began_ns, at_aggr, ops, &mut work.scheme_ns)
                    == Progress::Cut
            {
                return Some(self.charge(now_us, work));
            }
            Some(at_aggr)
        } else {
            None
        };
        if let Some(at_aggr) = sampled {
            work.monitor_ns += self.after_sample(now_us, at_aggr, ops);
        }
        if (0..self.targets.len()).all(|t| !ops.target_valid(t)) && !self.targets.is_empty() {
            self.stopped = true;
            self.charge(now_us, work);
            return None;
        }
        // kdamond_wait_activation
        if let Some(wait_us) = self.wait_activation(ops) {
            return Some(self.charge(now_us, work) + wait_us);
        }
        work.monitor_ns += self.prepare_access_checks(ops);
        self.prepared = true;
        Some(self.charge(now_us, work) + self.attrs.sample_us + self.costs.sample_wakeup_ns / 1000)
    }

    /// Add a step's work to the CPU counters; the time the kdamond is done with it, us.
    fn charge(&mut self, now_us: u64, work: StepWork) -> u64 {
        self.counters.monitor_cpu_ns += work.monitor_ns;
        self.counters.scheme_cpu_ns += work.scheme_ns;
        now_us + (work.monitor_ns + work.scheme_ns) / 1000
    }

    /// The end of `kdamond_fn`'s iteration after the schemes: aggregation (interval
    /// tuning, reset, split) and the ops update. Returns the monitoring cost, ns.
    fn after_sample(&mut self, now_us: u64, at_aggr: bool, ops: &mut dyn DamonOps) -> u64 {
        let mut ns = 0;
        if at_aggr {
            self.record_aggregation(now_us);
            self.counters.aggregations += 1;
            ns += self.nr_regions() as u64 * self.costs.aggregate_region_ns;
            let g = &self.attrs.intervals_goal;
            if g.aggrs > 0 && self.passed_sample_intervals >= self.next_intervals_tune_sis {
                let aggr_samples = self.samples_of(self.attrs.aggr_us);
                self.next_intervals_tune_sis += aggr_samples * g.aggrs;
                self.tune_intervals();
            }
            self.next_aggregation_sis += self.samples_of(self.attrs.aggr_us);
            self.reset_aggregated();
            self.split_regions();
        }
        if self.passed_sample_intervals >= self.next_ops_update_sis {
            self.next_ops_update_sis += self.samples_of(self.attrs.update_us);
            self.update(ops);
        }
        ns
    }

    /// `kdamond_wait_activation`: evaluate every scheme's watermarks
    /// (`damos_wmark_wait_us`); if none is active, the shortest wait.
    fn wait_activation(&mut self, ops: &mut dyn DamonOps) -> Option<u64> {
        if self.schemes.is_empty() {
            return None;
        }
        let metric = ops.free_mem_rate_permil();
        let mut min_wait = u64::MAX;
        for s in &mut self.schemes {
            let w = wmark_wait_us(s, metric);
            min_wait = min_wait.min(w);
        }
        (min_wait > 0).then_some(min_wait)
    }

    /// `kdamond_prepare_access_checks`: a random sampling address per region, made old.
    fn prepare_access_checks(&mut self, ops: &mut dyn DamonOps) -> u64 {
        let mut n = 0u64;
        for (t, regions) in self.targets.iter_mut().enumerate() {
            for r in regions.iter_mut() {
                // damon_rand(start, end)
                r.sampling_addr = r.start + self.rng.next_u64() % r.size().max(1);
                ops.prepare_access_check(t, r.sampling_addr);
                n += 1;
            }
        }
        n * self.costs.sample_region_ns / 2
    }

    /// `kdamond_check_accesses`: one check per region, `nr_accesses` and `nr_accesses_bp`
    /// (`damon_update_region_access_rate`), and the window's maximum.
    fn check_accesses(&mut self, ops: &mut dyn DamonOps) -> u64 {
        let w = self.attrs.max_nr_accesses().max(1);
        let mut n = 0u64;
        let mut max = 0;
        for (t, regions) in self.targets.iter_mut().enumerate() {
            for r in regions.iter_mut() {
                let accessed = ops.check_access(t, r.sampling_addr);
                n += 1;
                if accessed {
                    r.nr_accesses += 1;
                }
                // damon_moving_sum(bp, last * 10000, W, accessed ? 10000 : 0)
                let nomvsum = r.last_nr_accesses as u64 * 10_000;
                let bp = (r.nr_accesses_bp as u64).saturating_sub(nomvsum / w as u64)
                    + if accessed { 10_000 } else { 0 };
                r.nr_accesses_bp = bp.min(u32::MAX as u64) as u32;
                max = max.max(r.nr_accesses);
            }
        }
        // nr_accesses only grow within a window, so this sample's maximum is the window's.
        self.max_nr_accesses = max;
        self.counters.access_checks += n;
        self.counters.max_checks_per_sample = self.counters.max_checks_per_sample.max(n);
        // The other half of the per-region sampling cost (prepare took the first half).
        n * self.costs.sample_region_ns - n * self.costs.sample_region_ns / 2
    }

    /// `kdamond_merge_regions`: merge with `threshold`, doubling it while the region
    /// count exceeds `max_nr_regions` (and the threshold is below the maximum).
    fn merge_regions(&mut self, threshold: u32) {
        let max_thres = self.attrs.max_nr_accesses();
        let mut thres = threshold;
        loop {
            let mut nr = 0;
            for regions in &mut self.targets {
                region::merge_regions_of(regions, thres, self.sz_limit);
                nr += regions.len();
            }
            thres = (thres * 2).max(1);
            if !(nr > self.attrs.max_nr_regions as usize && thres / 2 < max_thres) {
                break;
            }
        }
    }

    /// `kdamond_reset_aggregated`.
    /// With `record`: keep every target's regions as `kdamond_reset_aggregated` passes them
    /// to the `damon_aggregated` tracepoint (after merging and the schemes, before the reset).
    fn record_aggregation(&mut self, now_us: u64) {
        let aggr_us = self.attrs.aggr_us;
        let Some(rec) = self.recording.as_mut() else {
            return;
        };
        rec.resize_with(self.targets.len().max(rec.len()), Vec::new);
        for (t, regions) in self.targets.iter().enumerate() {
            let snaps = &mut rec[t];
            let start_ns = snaps
                .last()
                .map_or(now_us.saturating_sub(aggr_us) * 1000, |s| s.end_ns);
            snaps.push(RecordSnapshot {
                start_ns,
                end_ns: now_us * 1000,
                regions: regions
                    .iter()
                    .map(|r| CoreRegion {
                        start: r.start,
                        end: r.end,
                        nr_accesses: r.nr_accesses.into(),
                        age: r.age.into(),
                    })
                    .collect(),
            });
        }
    }

    /// The recorded snapshots of each target (empty without `record`).
    pub fn recorded(&self) -> &[Vec<RecordSnapshot>] {
        self.recording.as_deref().unwrap_or(&[])
    }

    fn reset_aggregated(&mut self) {
        for r in self.targets.iter_mut().flatten() {
            // damon_warn_fix_nr_accesses_corruption
            r.nr_accesses_bp = r.nr_accesses.saturating_mul(10_000);
            r.last_nr_accesses = r.nr_accesses;
            r.nr_accesses = 0;
        }
        self.max_nr_accesses = 0;
    }

    /// `kdamond_split_regions`.
    fn split_regions(&mut self) {
        let nr = self.nr_regions();
        let max = self.attrs.max_nr_regions as usize;
        if nr > max / 2 {
            return;
        }
        let nr_subs = if self.last_nr_regions == nr && nr < max / 3 {
            3
        } else {
            2
        };
        for regions in &mut self.targets {
            region::split_regions_of(regions, nr_subs, MIN_REGION_SZ, &mut self.rng);
        }
        self.last_nr_regions = nr;
    }

    /// `kdamond_tune_intervals`: scale the sampling interval by the feedback loop's
    /// adaptation (at most halving), keeping the samples per aggregation.
    fn tune_intervals(&mut self) {
        let g = self.attrs.intervals_goal.clone();
        let aggr_samples = self.attrs.max_nr_accesses() as u128;
        let mut events: u128 = 0;
        let mut max_events: u128 = 0;
        for r in self.targets.iter().flatten() {
            events += r.size() as u128 * r.nr_accesses as u128;
            max_events += r.size() as u128 * aggr_samples;
        }
        let target = (max_events * g.access_bp as u128 / 10_000).max(1);
        let score_bp = (events * 10_000 / target).min(u64::MAX as u128) as u64;
        let mut adapt_bp = feed_loop_next_input(100_000_000, score_bp) / 10_000;
        if adapt_bp <= 10_000 {
            adapt_bp = 5_000 + adapt_bp / 2;
        }
        let old_aggr = self.attrs.aggr_us;
        let sample = (self.attrs.sample_us as u128 * adapt_bp as u128 / 10_000) as u64;
        let sample = sample.clamp(g.min_sample_us, g.max_sample_us).max(1);
        let aggr = sample * aggr_samples as u64;
        self.attrs.sample_us = sample;
        self.attrs.aggr_us = aggr;
        self.counters.intervals_tunings += 1;
        // damon_update_monitoring_results: nr_accesses keep their scale (same ratio);
        // ages are rescaled by old_aggr / new_aggr.
        if old_aggr != aggr && aggr > 0 {
            for r in self.targets.iter_mut().flatten() {
                r.age = (r.age as u128 * old_aggr as u128 / aggr as u128) as u32;
            }
        }
    }

    // ---- DAMOS -----------------------------------------------------------------------

    /// The ops layer's `get_scheme_score`: cold score for reclaim/deprioritise/demote
    /// actions, hot score for prioritise/promote (and vaddr willneed), `DAMOS_MAX_SCORE`
    /// otherwise.
    pub fn scheme_score(&self, r: &Region, s: &Scheme) -> u32 {
        let w = &s.cfg.quotas.weights;
        let hot = || {
            hot_score(
                r,
                &self.attrs,
                w.nr_accesses_permil as u64,
                w.age_permil as u64,
            )
        };
        match (self.kind, s.cfg.action) {
            (_, DamosAction::Pageout) | (OpsKind::Vaddr, DamosAction::Cold) => MAX_SCORE - hot(),
            (OpsKind::Paddr, DamosAction::LruDeprio) | (_, DamosAction::MigrateCold) => {
                MAX_SCORE - hot()
            }
            (OpsKind::Paddr, DamosAction::LruPrio) | (_, DamosAction::MigrateHot) => hot(),
            (OpsKind::Vaddr, DamosAction::Willneed) => hot(),
            _ => MAX_SCORE,
        }
    }

    /// `kdamond_apply_schemes`: adjust the quotas of the schemes due, then visit every
    /// region with every scheme. Stops early (`Progress::Cut`) when an action runs out of
    /// its time slice; [`Self::resume_application`] carries on from there. The scheme work
    /// begins at `began_ns` on the kdamond's time line.
    fn apply_schemes(
        &mut self,
        now_us: u64,
        began_ns: u64,
        at_aggr: bool,
        ops: &mut dyn DamonOps,
        cost: &mut u64,
    ) -> Progress {
        let now_ms = now_us / 1000;
        let mut any = false;
        for si in 0..self.schemes.len() {
            let s = &self.schemes[si];
            if self.passed_sample_intervals < s.next_apply_sis || !s.activated {
                continue;
            }
            any = true;
            self.adjust_quota(si, now_ms, ops);
            self.schemes[si].tried_regions.clear();
            *cost += self.nr_regions() as u64 * self.costs.apply_region_ns;
        }
        if !any {
            return Progress::Done;
        }
        self.visit_regions(ApplyCursor::default(), at_aggr, began_ns, ops, cost)
    }

    /// `kdamond_apply_schemes`'s loop over targets, regions and schemes, from `c` on;
    /// then the schemes' next application times. An action starts at `began_ns` plus the
    /// `cost` spent before it.
    fn visit_regions(
        &mut self,
        mut c: ApplyCursor,
        at_aggr: bool,
        began_ns: u64,
        ops: &mut dyn DamonOps,
        cost: &mut u64,
    ) -> Progress {
        while c.t < self.targets.len() {
            if !ops.target_valid(c.t) {
                c = ApplyCursor::start_of(c.t + 1);
                continue;
            }
            while c.i < self.targets[c.t].len() {
                if c.si == 0 {
                    c.orig_end = self.targets[c.t][c.i].end;
                    c.cur = c.i;
                }
                while c.si < self.schemes.len() {
                    let at_ns = began_ns + *cost;
                    match self.do_apply_scheme(c.t, c.cur, c.si, at_ns, ops) {
                        Visit::Skipped => {}
                        Visit::Done { region, ns } => {
                            c.cur = region;
                            *cost += ns;
                        }
                        Visit::Cut {
                            region,
                            ns,
                            pending,
                        } => {
                            c.cur = region;
                            *cost += ns;
                            self.applying = Some(Applying {
                                cursor: c,
                                at_aggr,
                                pending,
                            });
                            return Progress::Cut;
                        }
                    }
                    c.si += 1;
                }
                // damon_for_each_region_safe: continue at the region that followed.
                let orig_end = c.orig_end;
                c.i = self.targets[c.t].partition_point(|r| r.start < orig_end);
                c.si = 0;
            }
            c = ApplyCursor::start_of(c.t + 1);
        }
        let sample = self.attrs.sample_us.max(1);
        for s in &mut self.schemes {
            if self.passed_sample_intervals < s.next_apply_sis {
                continue;
            }
            let iv = if s.cfg.apply_interval_us > 0 {
                s.cfg.apply_interval_us
            } else {
                self.attrs.aggr_us
            };
            s.next_apply_sis = self.passed_sample_intervals + iv / sample;
        }
        Progress::Done
    }

    /// Continue an action cut at its time slice; once the region is done, account it and
    /// go on with the next scheme and region.
    fn resume_application(
        &mut self,
        a: Applying,
        began_ns: u64,
        ops: &mut dyn DamonOps,
        cost: &mut u64,
    ) -> Progress {
        let Applying {
            mut cursor,
            at_aggr,
            mut pending,
        } = a;
        let (t, i, si) = (cursor.t, cursor.cur, cursor.si);
        if ops.target_valid(t) {
            *cost += self.apply_slice(t, si, &mut pending, ops);
            if pending.next < pending.end {
                self.applying = Some(Applying {
                    cursor,
                    at_aggr,
                    pending,
                });
                return Progress::Cut;
            }
        }
        self.account_application(t, i, si, &pending);
        cursor.si += 1;
        self.visit_regions(cursor, at_aggr, began_ns, ops, cost)
    }

    /// `damos_adjust_quota`: charge windows, effective size, and the score histogram's
    /// `min_score`.
    fn adjust_quota(&mut self, si: usize, now_ms: u64, ops: &mut dyn DamonOps) {
        if !self.schemes[si].has_quota() {
            return;
        }
        let reset_ms = self.schemes[si].cfg.quotas.reset_interval_ms;
        if self.schemes[si].quota.charged_from_ms.is_none() {
            self.schemes[si].quota.charged_from_ms = Some(now_ms);
            self.set_effective_quota(si, ops);
        } else if now_ms >= self.schemes[si].quota.charged_from_ms.unwrap_or(0) + reset_ms {
            let q = &mut self.schemes[si].quota;
            if q.esz > 0 && q.charged_sz >= q.esz {
                self.schemes[si].stat.qt_exceeds += 1;
            }
            let q = &mut self.schemes[si].quota;
            q.total_charged_sz += q.charged_sz;
            q.charged_from_ms = Some(now_ms);
            q.charged_sz = 0;
            self.set_effective_quota(si, ops);
        }
        // Fill the score histogram and find the lowest score that fits the quota.
        let esz = self.schemes[si].quota.esz;
        let mut hist = [0u64; MAX_SCORE as usize + 1];
        let mut max_score = 0;
        let s = &self.schemes[si];
        for r in self.targets.iter().flatten() {
            if !valid_pattern(r, &s.cfg) {
                continue;
            }
            let score = self.scheme_score(r, s);
            hist[score as usize] += r.size();
            max_score = max_score.max(score);
        }
        let mut cumulated = 0u64;
        let mut score = max_score;
        loop {
            cumulated += hist[score as usize];
            if cumulated >= esz || score == 0 {
                break;
            }
            score -= 1;
        }
        self.schemes[si].quota.min_score = score;
    }

    /// `damos_set_effective_quota`.
    fn set_effective_quota(&mut self, si: usize, ops: &mut dyn DamonOps) {
        let s = &mut self.schemes[si];
        let qc = &s.cfg.quotas;
        if qc.ms == 0 && qc.goals.is_empty() {
            s.quota.esz = qc.sz;
            return;
        }
        let mut esz = u64::MAX;
        if !qc.goals.is_empty() {
            // damos_quota_score: the highest current/target ratio over the goals.
            let mut score = 0u64;
            for (gi, g) in qc.goals.iter().enumerate() {
                let cur = match g.metric {
                    GoalMetric::UserInput => g.current_value,
                    m => ops.goal_metric(m, g.nid).unwrap_or(0),
                };
                s.quota.goal_current[gi] = cur;
                let sc = (cur as u128 * 10_000 / g.target_value.max(1) as u128) as u64;
                score = score.max(sc);
            }
            s.quota.esz_bp = feed_loop_next_input(s.quota.esz_bp.max(10_000), score);
            esz = s.quota.esz_bp / 10_000;
        }
        if qc.ms > 0 {
            let (sz, ns) = (s.quota.total_charged_sz, s.quota.total_charged_ns);
            let quota_sz = match (ns, self.throughput_wraps) {
                (0, _) => (PAGE_SIZE * 1024).saturating_mul(qc.ms),
                // Before 6.17: `sz * 1000000 / ns` and `throughput * ms` in unsigned long.
                (_, true) => (sz.wrapping_mul(1_000_000) / ns).wrapping_mul(qc.ms),
                // mult_frac, exact here.
                (_, false) => ((sz as u128 * 1_000_000 / ns as u128) as u64).saturating_mul(qc.ms),
            };
            esz = esz.min(quota_sz);
        }
        if qc.sz > 0 && qc.sz < esz {
            esz = qc.sz;
        }
        s.quota.esz = esz;
    }

    /// `damon_do_apply_schemes` for one (target, region, scheme): quota check, resume
    /// marker, pattern and score, the quota split, core filters, the action, charging,
    /// age reset and stats. Says which region the following schemes see and the cost.
    fn do_apply_scheme(
        &mut self,
        t: usize,
        mut i: usize,
        si: usize,
        at_ns: u64,
        ops: &mut dyn DamonOps,
    ) -> Visit {
        let s = &self.schemes[si];
        if self.passed_sample_intervals < s.next_apply_sis || !s.activated {
            return Visit::Skipped;
        }
        let esz = s.quota.esz;
        if esz > 0 && s.quota.charged_sz >= esz {
            return Visit::Skipped;
        }
        // damos_skip_charged_region
        if let Some(ct) = s.quota.charge_target_from {
            if t != ct {
                return Visit::Skipped;
            }
            let regions = &mut self.targets[t];
            if i + 1 == regions.len() {
                let q = &mut self.schemes[si].quota;
                q.charge_target_from = None;
                q.charge_addr_from = 0;
                return Visit::Skipped;
            }
            let from = s.quota.charge_addr_from;
            if from > 0 && regions[i].end <= from {
                return Visit::Skipped;
            }
            if from > 0 && regions[i].start < from {
                let mut skip = region::align_down(from - regions[i].start, MIN_REGION_SZ);
                if skip == 0 {
                    if regions[i].size() <= MIN_REGION_SZ {
                        return Visit::Skipped;
                    }
                    skip = MIN_REGION_SZ;
                }
                region::split_region_at(regions, i, skip);
                i += 1;
            }
            let q = &mut self.schemes[si].quota;
            q.charge_target_from = None;
            q.charge_addr_from = 0;
        }
        let s = &self.schemes[si];
        let r = &self.targets[t][i];
        if !valid_pattern(r, &s.cfg) {
            return Visit::Done { region: i, ns: 0 };
        }
        if esz > 0 && self.scheme_score(r, s) < s.quota.min_score {
            return Visit::Done { region: i, ns: 0 };
        }
        // damos_apply_scheme
        let mut sz = r.size();
        if esz > 0 && s.quota.charged_sz + sz > esz {
            sz = region::align_down(esz - s.quota.charged_sz, MIN_REGION_SZ);
            if sz == 0 {
                self.schemes[si].stat.nr_tried += 1;
                return Visit::Done { region: i, ns: 0 };
            }
            if sz < r.size() {
                region::split_region_at(&mut self.targets[t], i, sz);
            }
        }
        let (rejected, core_allowed) = self.core_filter_out(t, i, si);
        if rejected {
            return Visit::Done { region: i, ns: 0 };
        }
        let (start, end) = (self.targets[t][i].start, self.targets[t][i].end);
        let mut pending = Pending {
            start,
            end,
            next: start,
            core_allowed,
            done: ApplyResult::default(),
            began_ns: at_ns,
        };
        let ns = self.apply_slice(t, si, &mut pending, ops);
        if pending.next < end {
            return Visit::Cut {
                region: i,
                ns,
                pending,
            };
        }
        self.account_application(t, i, si, &pending);
        Visit::Done { region: i, ns }
    }

    /// One slice ([`APPLY_SLICE_NS`]) of scheme `si`'s action on `[p.next, p.end)` of
    /// target `t`: what it did is added to `p.done` and `p.next` moves on (to `p.end` once
    /// the range is done). Returns the slice's time, ns.
    fn apply_slice(&self, t: usize, si: usize, p: &mut Pending, ops: &mut dyn DamonOps) -> u64 {
        let s = &self.schemes[si];
        let res = ops.apply(&ApplyRequest {
            target: t,
            action: s.cfg.action,
            target_nid: s.cfg.target_nid,
            start: p.next,
            end: p.end,
            filters: OpsFilters {
                filters: &s.ops_filters,
                core_allowed: p.core_allowed,
                default_reject: s.ops_default_reject,
            },
            budget_ns: APPLY_SLICE_NS,
        });
        p.done.add(&res);
        p.next = res.resume_at.filter(|&n| n < p.end).unwrap_or(p.end);
        res.elapsed_ns
    }

    /// The end of `damos_apply_scheme` once the action returned: the tried region, the
    /// quota charge and resume marker, the region's age and the scheme's statistics.
    fn account_application(&mut self, t: usize, i: usize, si: usize, p: &Pending) {
        let (start, end, res) = (p.start, p.end, p.done);
        let sz = end - start;
        let measured_ns = self.measured_ns(p.began_ns, res.elapsed_ns);
        let r = &mut self.targets[t][i];
        let s = &mut self.schemes[si];
        s.tried_regions.push(TriedRegion {
            target: t,
            start,
            end,
            nr_accesses: r.nr_accesses,
            age: r.age,
            sz_filter_passed: res.filter_passed_bytes,
        });
        s.quota.total_charged_ns += measured_ns;
        s.quota.charged_sz += sz;
        if s.quota.esz > 0 && s.quota.charged_sz >= s.quota.esz {
            s.quota.charge_target_from = Some(t);
            s.quota.charge_addr_from = end + 1;
        }
        if s.cfg.action != DamosAction::Stat {
            r.age = 0;
        }
        s.stat.nr_tried += 1;
        s.stat.sz_tried += sz;
        if res.applied_bytes > 0 {
            s.stat.nr_applied += 1;
        }
        s.stat.sz_applied += res.applied_bytes;
        s.stat.sz_ops_filter_passed += res.filter_passed_bytes;
    }

    /// `damos_filter_out` for the core filters (addr, target); the first matching filter
    /// decides; an addr filter splits the region at its boundaries. Returns (rejected,
    /// allowed-by-a-core-filter).
    fn core_filter_out(&mut self, t: usize, i: usize, si: usize) -> (bool, bool) {
        let filters = self.schemes[si].core_filters.clone();
        for f in &filters {
            let matched = match f.kind {
                FilterType::Target => f.target_idx == Some(t as u32),
                FilterType::Addr => {
                    // Validation requires the range of an address filter.
                    let Some(a) = f.addr else { continue };
                    let start = region::align_down(a.start, MIN_REGION_SZ);
                    let end = region::align_down(a.end, MIN_REGION_SZ);
                    let regions = &mut self.targets[t];
                    let r = &regions[i];
                    if start <= r.start && r.end <= end {
                        true
                    } else if r.end <= start || end <= r.start {
                        false
                    } else if r.start < start {
                        let at = start - r.start;
                        region::split_region_at(regions, i, at);
                        false
                    } else {
                        let at = end - r.start;
                        region::split_region_at(regions, i, at);
                        true
                    }
                }
                _ => continue,
            };
            if matched == f.matching {
                return (!f.allow, f.allow);
            }
        }
        (self.schemes[si].core_default_reject, false)
    }
}

/// `__damos_valid_target`: size, frequency (`nr_accesses_bp / 10000`) and age in range.
pub fn valid_pattern(r: &Region, s: &SchemeConfig) -> bool {
    let p = &s.access_pattern;
    let sz = r.size();
    let nr = r.nr_accesses_bp / 10_000;
    p.min_sz <= sz
        && sz <= p.max_sz
        && p.min_nr_accesses <= nr
        && nr <= p.max_nr_accesses
        && p.min_age <= r.age
        && r.age <= p.max_age
}

/// `damon_hot_score` (ops-common.c): frequency and log-age subscores, weighted.
pub fn hot_score(r: &Region, attrs: &MonitoringAttrs, freq_weight: u64, age_weight: u64) -> u32 {
    let max_nr = attrs.max_nr_accesses().max(1) as u64;
    let freq = r.nr_accesses as u64 * MAX_SUBSCORE / max_nr;
    let mut age_s = r.age as u64 * attrs.aggr_us / 1_000_000;
    let mut age_in_log: i64 = 0;
    while age_in_log < MAX_AGE_IN_LOG && age_s > 0 {
        age_in_log += 1;
        age_s >>= 1;
    }
    if freq == 0 {
        age_in_log = -age_in_log;
    }
    let age_sub =
        ((age_in_log + MAX_AGE_IN_LOG) as u64) * MAX_SUBSCORE / (2 * MAX_AGE_IN_LOG as u64);
    let weighted = freq_weight * freq + age_weight * age_sub;
    // Both weights 0: the weighted sum (0) is the score, as the kernel's division guard does.
    let hot = weighted
        .checked_div(freq_weight + age_weight)
        .unwrap_or(weighted);
    (hot * MAX_SCORE as u64 / MAX_SUBSCORE).min(MAX_SCORE as u64) as u32
}

/// `damon_feed_loop_next_input`: the goal is 10000 and the minimum output 10000; the
/// output moves by `last × |score − goal| / goal`, up when under-achieving.
pub fn feed_loop_next_input(last: u64, score: u64) -> u64 {
    const GOAL: u64 = 10_000;
    const MIN: u64 = 10_000;
    if score == GOAL {
        return last;
    }
    if score >= GOAL * 2 {
        return MIN;
    }
    let over = score > GOAL;
    let diff = if over { score - GOAL } else { GOAL - score };
    let comp = if last < u64::MAX / diff {
        last * diff / GOAL
    } else {
        last / GOAL * diff
    };
    if over {
        return last.saturating_sub(comp).max(MIN);
    }
    last.saturating_add(comp)
}

/// `damos_wmark_wait_us`: the activation state machine. Returns 0 when the scheme is
/// (or becomes) active, else the watermark interval.
pub fn wmark_wait_us(s: &mut Scheme, metric_permil: Option<u64>) -> u64 {
    let w = &s.cfg.watermarks;
    if w.metric == WmarkMetric::None {
        s.activated = true;
        return 0;
    }
    let Some(m) = metric_permil else {
        s.activated = true;
        return 0;
    };
    if m > w.high || m < w.low {
        s.activated = false;
        return w.interval_us;
    }
    if m >= w.mid && !s.activated {
        return w.interval_us;
    }
    s.activated = true;
    0
}
