//! tiermem-damon: the DAMON engine and DAMOS, independent of what memory they run on.
//!
//! `mm/damon/` splits DAMON into an engine (`core.c`), address-space operations behind a
//! small table of functions (`vaddr.c`, `paddr.c`) and policies built from schemes
//! (`reclaim.c`, `lru_sort.c`). This crate is the engine and the policies; the operations
//! are the [`DamonOps`] trait, implemented by the simulator over its page tables and
//! frames and (by the live agent) over the real kernel.
//!
//! * [`region`]: regions, `damon_set_regions`, merge/split, vaddr's three initial regions;
//! * [`ctx`]: one monitoring context (a kdamond): sampling, aggregation, `nr_accesses_bp`,
//!   ages, adaptive regions, interval auto-tuning, and DAMOS application (patterns, quotas
//!   with the time→size conversion, prioritisation with the score histogram, quota goals,
//!   watermarks, filters, stats, tried regions);
//! * [`modules`]: DAMON_RECLAIM, DAMON_LRU_SORT and DAMON-based tiering as contexts built
//!   from module parameters.
//!
//! Time is passed in (`now_us`); nothing here reads a clock. The caller runs
//! [`ctx::DamonCtx::step`] at the time it returns.
//!
//! ```
//! use tiermem_core::damon::{ContextConfig, OpsKind, MonitoringAttrs, AddrRange};
//! use tiermem_damon::ctx::DamonCtx;
//! let cfg = ContextConfig { ops: OpsKind::Paddr, attrs: MonitoringAttrs::default(),
//!     target_workloads: vec![], regions: vec![], schemes: vec![], record: false,
//!     per_workload_run: false };
//! let ctx = DamonCtx::new(&cfg, Default::default(), 1).unwrap();
//! assert_eq!(ctx.attrs().max_nr_accesses(), 20);
//! ```

pub mod ctx;
pub mod modules;
pub mod region;

use tiermem_core::damon::{AddrRange, DamosAction, FilterConfig, GoalMetric, OpsKind};
use tiermem_core::units::NodeId;

/// What an action did to a region (`damon_operations.apply_scheme`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyResult {
    /// Bytes the action was applied to.
    pub applied_bytes: u64,
    /// Bytes that passed the ops-layer filters.
    pub filter_passed_bytes: u64,
    /// Time the call took (charged to the time quota and to kdamond's CPU time), ns.
    pub elapsed_ns: u64,
    /// The call stopped at this address because its time budget ran out; the rest of the
    /// range is still to do. `None` when the range is done.
    pub resume_at: Option<u64>,
}

impl ApplyResult {
    /// Add a later slice of the same application.
    pub fn add(&mut self, later: &ApplyResult) {
        self.applied_bytes += later.applied_bytes;
        self.filter_passed_bytes += later.filter_passed_bytes;
        self.elapsed_ns += later.elapsed_ns;
        self.resume_at = later.resume_at;
    }
}

/// One slice of a scheme's action for [`DamonOps::apply`] (`ops.apply_scheme`).
#[derive(Clone, Debug)]
pub struct ApplyRequest<'a> {
    pub target: usize,
    pub action: DamosAction,
    /// Where `migrate_hot` / `migrate_cold` move pages.
    pub target_nid: Option<NodeId>,
    /// The address range `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub filters: OpsFilters<'a>,
    /// Stop after the page that brings the call's elapsed time to this.
    pub budget_ns: u64,
}

/// The ops-layer filters of one scheme application, evaluated per page by the ops
/// (`damos_pa_filter_out` / `damos_folio_filter_out`).
#[derive(Clone, Debug)]
pub struct OpsFilters<'a> {
    pub filters: &'a [FilterConfig],
    /// A core filter already allowed the region: skip the ops filters.
    pub core_allowed: bool,
    /// Verdict when no filter matches: the inverse of the last ops filter's `allow`.
    pub default_reject: bool,
}

impl OpsFilters<'_> {
    /// Whether a page is filtered out. `matches(filter)` says whether the page has the
    /// filter's property (it may have side effects, e.g. the young filter clears the bit);
    /// the first filter whose `matches == matching` decides.
    pub fn filter_out(&self, mut has_property: impl FnMut(&FilterConfig) -> bool) -> bool {
        if self.core_allowed {
            return false;
        }
        for f in self.filters {
            if has_property(f) == f.matching {
                return !f.allow;
            }
        }
        self.default_reject
    }
}

/// The operations a monitoring context needs from the memory it watches.
///
/// Contract (call order, per kdamond iteration): `init`/`update` → `target_ranges`
/// (at start and every `update_us`) → for every region `prepare_access_check` → the
/// sampling interval passes → for every region `check_access` → (at apply times)
/// `metric` for goals and watermarks, `apply` per eligible region. `target_valid` is
/// asked every iteration; once every target is invalid the context stops.
pub trait DamonOps {
    /// Which address space these operations work on.
    fn kind(&self) -> OpsKind;
    /// Number of targets.
    fn nr_targets(&self) -> usize;
    /// False once the target is gone (the process exited).
    fn target_valid(&self, target: usize) -> bool;
    /// vaddr: the VMAs of the target (sorted); paddr: the monitored physical ranges.
    fn target_ranges(&mut self, target: usize) -> Vec<AddrRange>;
    /// `damon_va_prepare_access_checks` / `damon_pa_mkold` for one sampling address.
    fn prepare_access_check(&mut self, target: usize, addr: u64);
    /// Whether the sampling address was accessed since it was prepared.
    fn check_access(&mut self, target: usize, addr: u64) -> bool;
    /// Apply the request's action to its range, honouring the ops filters. Stop after
    /// the page that brings the call's elapsed time to `budget_ns` and say where to resume
    /// (`ApplyResult::resume_at`); the caller continues the range in later calls.
    fn apply(&mut self, req: &ApplyRequest<'_>) -> ApplyResult;
    /// A goal metric's current value (`damos_set_quota_goal_current_value`); `None` when
    /// the metric is not available here.
    fn goal_metric(&mut self, metric: GoalMetric, nid: Option<NodeId>) -> Option<u64>;
    /// `free_mem_rate`: free pages per thousand of total RAM, or `None` if unreadable.
    fn free_mem_rate_permil(&mut self) -> Option<u64>;
}

#[cfg(test)]
mod tests;
