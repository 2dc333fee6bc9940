//! DAMON in the simulated kernel: the vaddr and paddr operations over the simulator's
//! page tables and frames (`mm/damon/vaddr.c`, `paddr.c`, `ops-common.c`), and the
//! kdamonds the engine runs (the engine itself is `tiermem-damon`).
//!
//! Sampling uses the page-idle mechanism as the kernel does, so that reclaim and NUMA
//! balancing keep working on the same accessed bits: `mkold` (`damon_ptep_mkold`) clears
//! the PTE's accessed bit but sets the frame's `PG_young` so reclaim's `folio_referenced`
//! still sees the access, and sets `PG_idle`; a check reports an access if the PTE is
//! young again or the frame is no longer idle (reclaim saw a reference since).
//!
//! Physical addresses: node `n`'s pages are `[base_n, base_n + capacity_n)`, nodes laid
//! out one after another from 0 in node order; within a node the frames start above the
//! lower zones and the boot memory (`NodeMem::lay_out_frames`). A page that is not a
//! handed-out frame, or is free, is a non-LRU page (never accessed, skipped by actions).

use crate::mm::mem::*;
use crate::mm::Kernel;
use crate::vmstat::Vm;
use serde::Serialize;
use std::collections::BTreeMap;
use tiermem_core::damon::{
    AddrRange, DamonCosts, DamosAction, FilterConfig, FilterType, GoalMetric, OpsKind,
};
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SIZE};
use tiermem_damon::ctx::DamonCtx;
use tiermem_damon::modules::NamedContext;
use tiermem_damon::{ApplyRequest, ApplyResult, DamonOps, OpsFilters};

/// Physical base address of each node.
pub fn node_bases(kernel: &Kernel) -> Vec<u64> {
    let mut b = 0;
    kernel
        .nodes
        .iter()
        .map(|n| {
            let base = b;
            b += n.present * PAGE_SIZE;
            base
        })
        .collect()
}

/// One kdamond of the simulated kernel.
pub struct Kdamond {
    pub name: String,
    pub ctx: DamonCtx,
    /// vaddr: the target processes.
    pub procs: Vec<u16>,
    /// paddr: the monitored ranges.
    pub ranges: Vec<AddrRange>,
    /// Next time to run, us.
    pub next_us: u64,
    pub stopped: bool,
    /// A `per_workload_run` context: started and stopped with the workloads' runs.
    per_run: Option<Box<PerRun>>,
}

/// A `per_workload_run` context's lifecycle (`ContextConfig::per_workload_run`): what each
/// fresh kdamond is built from, the run starts and ends not yet acted on, and the totals of
/// the kdamonds that already stopped (so that CPU time and statistics cover every run).
struct PerRun {
    nc: NamedContext,
    release: Option<tiermem_core::release::KernelRelease>,
    seed: u64,
    /// Kdamonds started so far (each one's seed mixes in its number).
    started: u64,
    /// Runs in progress.
    active: u32,
    /// Run starts (`true`) and ends at a time (us), in the order they are learnt.
    pending: Vec<(u64, bool)>,
    /// How far the kdamond has caught up, us: a run start or end learnt late (after a
    /// barrier released threads behind the window's end) acts from here, so that two
    /// kdamonds never cover the same time and none runs past a run's end twice.
    reached_us: u64,
    retired_counters: tiermem_damon::ctx::CtxCounters,
    retired_stats: Vec<tiermem_core::damon::SchemeStats>,
}

impl Kdamond {
    /// Build a kdamond for a context; `proc_workload[p]` is the workload of process `p`.
    /// A `per_workload_run` context's kdamond waits stopped for the first run.
    pub fn new(
        nc: &NamedContext,
        kernel: &Kernel,
        proc_workload: &[usize],
        costs: &DamonCosts,
        release: Option<tiermem_core::release::KernelRelease>,
        seed: u64,
    ) -> Result<Kdamond, tiermem_core::ConfigError> {
        let ctx = Self::context(nc, costs, release, seed)?;
        let procs = match nc.cfg.ops {
            OpsKind::Vaddr => (0..proc_workload.len())
                .filter(|&p| nc.cfg.target_workloads.contains(&proc_workload[p]))
                .map(|p| p as u16)
                .collect(),
            OpsKind::Paddr => Vec::new(),
        };
        let ranges = if nc.cfg.regions.is_empty() {
            let total: u64 = kernel.nodes.iter().map(|n| n.present * PAGE_SIZE).sum();
            vec![AddrRange {
                start: 0,
                end: total,
            }]
        } else {
            nc.cfg.regions.clone()
        };
        let per_run = nc.cfg.per_workload_run.then(|| {
            Box::new(PerRun {
                nc: nc.clone(),
                release,
                seed,
                started: 0,
                active: 0,
                pending: Vec::new(),
                reached_us: 0,
                retired_counters: Default::default(),
                retired_stats: vec![Default::default(); nc.cfg.schemes.len()],
            })
        });
        Ok(Kdamond {
            name: nc.name.clone(),
            stopped: per_run.is_some(),
            ctx,
            procs,
            ranges,
            next_us: 0,
            per_run,
        })
    }

    fn context(
        nc: &NamedContext,
        costs: &DamonCosts,
        release: Option<tiermem_core::release::KernelRelease>,
        seed: u64,
    ) -> Result<DamonCtx, tiermem_core::ConfigError> {
        Ok(DamonCtx::new(&nc.cfg, costs.clone(), seed)
            .map_err(|e| {
                tiermem_core::ConfigError::invalid(format!("kernel.damon ({})", nc.name), e.0)
            })?
            .for_release(release)
            // damos_apply_scheme times actions with ktime_get_coarse_ts64.
            .with_coarse_clock(crate::mm::TICK_NS))
    }

    /// Whether the kdamond follows the workloads' runs (`per_workload_run`).
    pub fn per_workload_run(&self) -> bool {
        self.per_run.is_some()
    }

    /// Workload `w`'s run started (`started`) or ended at `t_us`: a `per_workload_run`
    /// kdamond acts on it when it catches up to that time, a vaddr one only for its target
    /// workloads. Others ignore it.
    pub fn workload_run(&mut self, w: usize, t_us: u64, started: bool) {
        if let Some(p) = &mut self.per_run {
            if p.nc.cfg.ops == OpsKind::Paddr || p.nc.cfg.target_workloads.contains(&w) {
                p.pending.push((t_us, started));
            }
        }
    }

    /// Whether a `per_workload_run` kdamond never started: no run of its workloads began.
    pub fn never_started(&self) -> bool {
        self.per_run.as_ref().is_some_and(|p| p.started == 0)
    }

    /// kdamond CPU time over every run, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.counters().cpu_ns()
    }

    /// The counters over every run (a `per_workload_run` kdamond's stopped ones included).
    pub fn counters(&self) -> tiermem_damon::ctx::CtxCounters {
        let mut c = self.ctx.counters.clone();
        if let Some(p) = &self.per_run {
            c.add(&p.retired_counters);
        }
        c
    }

    /// Scheme `i`'s statistics over every run (`None` past the last scheme).
    pub fn scheme_stats(&self, i: usize) -> Option<tiermem_core::damon::SchemeStats> {
        let mut st = self.ctx.schemes.get(i)?.stat;
        if let Some(p) = &self.per_run {
            st.add(&p.retired_stats[i]);
        }
        Some(st)
    }

    /// Run until simulated time `until_us`, acting on the workload runs that started or
    /// ended before it (a `per_workload_run` kdamond).
    pub fn run_until(
        &mut self,
        kernel: &mut Kernel,
        proc_workload: &[usize],
        costs: &DamonCosts,
        until_us: u64,
    ) {
        let (mut pending, reached) = match &mut self.per_run {
            Some(p) if !p.pending.is_empty() => (std::mem::take(&mut p.pending), p.reached_us),
            _ => (Vec::new(), 0),
        };
        // Threads report in thread order within a window: act in time order, an end before
        // a start at the same time, and never before where the kdamond already is.
        for e in &mut pending {
            e.0 = e.0.max(reached);
        }
        pending.sort_by_key(|&(t, started)| (t, started));
        let later = pending.iter().position(|&(t, _)| t >= until_us);
        let keep = later.map_or(Vec::new(), |i| pending.split_off(i));
        for (t, started) in pending {
            self.step_until(kernel, proc_workload, costs, t);
            self.on_workload_run(t, started, costs);
        }
        self.step_until(kernel, proc_workload, costs, until_us);
        if let Some(p) = &mut self.per_run {
            p.pending.splice(0..0, keep);
            p.reached_us = p.reached_us.max(until_us);
        }
    }

    /// A run started (the first in progress starts a fresh kdamond at `t_us`) or ended
    /// (the last in progress stops it there).
    fn on_workload_run(&mut self, t_us: u64, started: bool, costs: &DamonCosts) {
        let Some(p) = &mut self.per_run else {
            return;
        };
        if started {
            p.active += 1;
            if p.active > 1 {
                return;
            }
            p.started += 1;
            let seed = p.seed ^ p.started.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            // The configuration was validated when the first kdamond was built from it.
            let fresh = match Self::context(&p.nc, costs, p.release, seed) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(%e, "a per-run kdamond could not be rebuilt; it stays stopped");
                    p.active -= 1;
                    return;
                }
            };
            let old = std::mem::replace(&mut self.ctx, fresh);
            p.retire(&old);
            self.next_us = t_us;
            self.stopped = false;
        } else {
            p.active = p.active.saturating_sub(1);
            if p.active == 0 {
                self.stopped = true;
            }
        }
    }

    /// Step the context until `until_us`.
    fn step_until(
        &mut self,
        kernel: &mut Kernel,
        proc_workload: &[usize],
        costs: &DamonCosts,
        until_us: u64,
    ) {
        if self.stopped {
            return;
        }
        let bases = node_bases(kernel);
        while self.next_us < until_us {
            let mut ops = SimOps {
                kernel: &mut *kernel,
                kind: self.ctx.ops_kind(),
                procs: &self.procs,
                ranges: &self.ranges,
                bases: &bases,
                proc_workload,
                costs,
                now: SimTime(self.next_us * 1_000_000),
            };
            match self.ctx.step(self.next_us, &mut ops) {
                Some(n) => self.next_us = n.max(self.next_us + 1),
                None => {
                    self.stopped = true;
                    break;
                }
            }
        }
    }
}

impl PerRun {
    /// Keep a stopped kdamond's counters and statistics.
    fn retire(&mut self, old: &DamonCtx) {
        self.retired_counters.add(&old.counters);
        for (r, s) in self.retired_stats.iter_mut().zip(&old.schemes) {
            r.add(&s.stat);
        }
    }
}

/// The DAMON operations over the simulated kernel for one context.
pub struct SimOps<'a> {
    pub kernel: &'a mut Kernel,
    pub kind: OpsKind,
    pub procs: &'a [u16],
    pub ranges: &'a [AddrRange],
    pub bases: &'a [u64],
    pub proc_workload: &'a [usize],
    pub costs: &'a DamonCosts,
    pub now: SimTime,
}

/// Where an address lands.
#[derive(Clone, Copy)]
enum Page {
    /// A present page: node and frame.
    Frame(usize, u32),
    /// vaddr: a non-present PTE (process, pte index).
    NotPresent(u16, u32),
    /// Nothing there (hole, free or unallocated frame).
    None,
}

impl SimOps<'_> {
    fn vaddr_pte(&self, target: usize, addr: u64) -> Option<(u16, u32)> {
        let p = *self.procs.get(target)?;
        self.kernel.pte_index(p, addr).map(|idx| (p, idx))
    }

    fn page_at(&self, target: usize, addr: u64) -> Page {
        match self.kind {
            OpsKind::Vaddr => {
                let Some((p, idx)) = self.vaddr_pte(target, addr) else {
                    return Page::None;
                };
                let pte = self.kernel.procs[p as usize].ptes[idx as usize];
                if pte_maps_frame(pte) {
                    Page::Frame(pte_node(pte), pte_pfn(pte))
                } else if pte & PTE_PRESENT != 0 {
                    // The zero page: not a folio DAMON tracks or acts on.
                    Page::None
                } else {
                    Page::NotPresent(p, idx)
                }
            }
            OpsKind::Paddr => {
                let n = match self.bases.iter().rposition(|&b| b <= addr) {
                    Some(n) => n,
                    None => return Page::None,
                };
                let node = &self.kernel.nodes[n];
                let Some(pfn) = node.frame_at_phys((addr - self.bases[n]) / PAGE_SIZE) else {
                    return Page::None;
                };
                let f = &node.frames[pfn as usize];
                if f.owner == OWNER_FREE || node.lru_of(pfn).is_none() {
                    return Page::None;
                }
                Page::Frame(n, pfn)
            }
        }
    }

    /// Test and clear the accessed bits of the PTEs that map a frame: its process's PTE, a
    /// KSM page's every mapping (`rmap_walk_ksm`), none for a page-cache folio.
    fn test_and_clear_young_of(&mut self, n: usize, pfn: u32) -> bool {
        let f = self.kernel.nodes[n].frames[pfn as usize];
        match f.owner {
            OWNER_FILE => false,
            OWNER_KSM => self.kernel.ksm_folio_referenced(f.vpn) > 0,
            p => self.kernel.test_and_clear_young(p as usize, f.vpn),
        }
    }

    /// `damon_folio_mkold`: `damon_ptep_mkold` on the mapping (which leaves `PG_young`
    /// when the PTE was young) and `folio_set_idle`; an unmapped folio only gets `PG_idle`.
    fn mkold(&mut self, n: usize, pfn: u32) {
        let was_young = self.test_and_clear_young_of(n, pfn);
        let fl = &mut self.kernel.nodes[n].frames[pfn as usize].flags;
        if was_young {
            *fl |= F_YOUNG;
        }
        *fl |= F_IDLE;
    }

    /// `damon_folio_young`: PTE young or no longer idle; an unmapped folio: not idle. A KSM
    /// page's mappings are not tested without clearing them, so its `PG_idle` alone counts.
    fn young(&mut self, n: usize, pfn: u32) -> bool {
        let f = self.kernel.nodes[n].frames[pfn as usize];
        f.flags & F_IDLE == 0
            || f.owner < OWNER_FILE && self.kernel.pte_young(f.owner as usize, f.vpn)
    }

    /// Whether a frame has a filter's property (the young filter checks and clears).
    fn has_property(&mut self, f: &FilterConfig, n: usize, pfn: u32) -> bool {
        match f.kind {
            FilterType::Anon => self.kernel.nodes[n].frames[pfn as usize].owner != OWNER_FILE,
            FilterType::Active => matches!(
                self.kernel.nodes[n].lru_of(pfn),
                Some(Lru::ActiveAnon | Lru::ActiveFile)
            ),
            // Page cache is charged to the reader's memcg, which is not kept: a page-cache
            // folio matches no memcg.
            FilterType::Memcg => {
                let owner = self.kernel.nodes[n].frames[pfn as usize].owner as usize;
                self.proc_workload.get(owner).map(|&w| w as u32) == f.memcg
            }
            FilterType::Young => {
                let y = self.young(n, pfn);
                if y {
                    self.mkold(n, pfn);
                }
                y
            }
            // Core filters never reach the ops.
            FilterType::Addr | FilterType::Target => false,
        }
    }

    /// The pages of `[start, end)`, page by page.
    fn pages(&self, start: u64, end: u64) -> impl Iterator<Item = u64> {
        (start / PAGE_SIZE..end.div_ceil(PAGE_SIZE)).map(|p| p * PAGE_SIZE)
    }

    /// Whether these operations implement `action` (`damon_va_apply_scheme` /
    /// `damon_pa_apply_scheme`; others apply nothing).
    fn implements(&self, action: DamosAction) -> bool {
        match self.kind {
            OpsKind::Paddr => !matches!(
                action,
                DamosAction::Willneed
                    | DamosAction::Cold
                    | DamosAction::Hugepage
                    | DamosAction::Nohugepage
            ),
            OpsKind::Vaddr => !matches!(action, DamosAction::LruPrio | DamosAction::LruDeprio),
        }
    }

    /// The ops filters of an application: paddr pageout adds a young reject filter unless
    /// the scheme has a young filter (`damon_pa_pageout`).
    fn ops_filters(&self, action: DamosAction, filters: &[FilterConfig]) -> Vec<FilterConfig> {
        let mut fl = filters.to_vec();
        if self.kind == OpsKind::Paddr
            && action == DamosAction::Pageout
            && !fl.iter().any(|f| f.kind == FilterType::Young)
        {
            fl.push(FilterConfig::new(FilterType::Young, true, false));
        }
        fl
    }

    /// MADV_WILLNEED on a non-present page: read it back if swapped (swap readahead).
    fn willneed(&mut self, p: u16, idx: u32) -> SimDuration {
        let pte = self.kernel.procs[p as usize].ptes[idx as usize];
        if pte & (PTE_SWAP | PTE_ZRAM) == 0 {
            return SimDuration::ZERO;
        }
        let cpu = self.kernel.procs[p as usize].cpu_node;
        match self.kernel.handle_fault(p, idx, false, cpu, self.now) {
            Ok(cost) => {
                self.kernel.clear_young(p as usize, idx);
                cost
            }
            Err(_) => SimDuration::ZERO,
        }
    }

    /// The action on one frame that passed the filters; the kernel's cost of it when it
    /// was applied, `None` when not.
    fn act_on_frame(
        &mut self,
        action: DamosAction,
        target_nid: Option<NodeId>,
        n: usize,
        pfn: u32,
    ) -> Option<SimDuration> {
        match action {
            DamosAction::Pageout => {
                // reclaim_pages → shrink_folio_list ignoring references, no demotion.
                self.test_and_clear_young_of(n, pfn);
                if self.kernel.nodes[n].frames[pfn as usize].owner == OWNER_FILE {
                    return self.pageout_file_folio(n, pfn);
                }
                self.kernel.nodes[n].lru_del(pfn);
                let cost = self.kernel.swap_out(n, pfn);
                if cost.is_none() {
                    self.kernel.nodes[n].lru_add(Lru::InactiveAnon, pfn);
                }
                cost
            }
            DamosAction::Cold | DamosAction::LruDeprio => {
                // folio_deactivate (MADV_COLD also clears young and referenced).
                if action == DamosAction::Cold {
                    self.test_and_clear_young_of(n, pfn);
                    self.kernel.nodes[n].frames[pfn as usize].flags &= !F_YOUNG;
                }
                let node = &mut self.kernel.nodes[n];
                if let Some(active @ (Lru::ActiveAnon | Lru::ActiveFile)) = node.lru_of(pfn) {
                    node.lru_del(pfn);
                    node.frames[pfn as usize].flags &= !F_REFERENCED;
                    node.lru_add(active.inactive(), pfn);
                    self.kernel.vmstat.inc(n, Vm::Pgdeactivate);
                    Some(SimDuration::ZERO)
                } else if action == DamosAction::Cold {
                    node.frames[pfn as usize].flags &= !F_REFERENCED;
                    Some(SimDuration::ZERO)
                } else {
                    None
                }
            }
            DamosAction::LruPrio => {
                self.kernel.folio_mark_accessed(n, pfn);
                Some(SimDuration::ZERO)
            }
            DamosAction::MigrateHot | DamosAction::MigrateCold => self.migrate(target_nid, n, pfn),
            DamosAction::Hugepage
            | DamosAction::Nohugepage
            | DamosAction::Stat
            | DamosAction::Willneed => None,
        }
    }

    /// `damon_pa_pageout` of a page-cache folio: `PG_referenced` and `PG_young` cleared,
    /// then `reclaim_pages` → `shrink_folio_list` ignoring references: a clean folio is
    /// freed with a shadow (`__remove_mapping`); a dirty one gets `PG_reclaim` and goes to
    /// the active list (DAMON never writes page cache back).
    fn pageout_file_folio(&mut self, n: usize, pfn: u32) -> Option<SimDuration> {
        let node = &mut self.kernel.nodes[n];
        node.lru_del(pfn);
        let f = &mut node.frames[pfn as usize];
        f.flags &= !(F_REFERENCED | F_YOUNG);
        if f.flags & F_DIRTY != 0 {
            f.flags |= F_RECLAIM;
            node.lru_add(Lru::ActiveFile, pfn);
            self.kernel.vmstat.inc(n, Vm::Pgactivate);
            return None;
        }
        // reclaim_folio_list counts no pgsteal.
        self.kernel.remove_mapping(n, pfn, true);
        Some(self.kernel.cfg.costs.reclaim_scan_page)
    }

    /// DAMOS migrate_{hot,cold}: `alloc_migration_target` with GFP_NOWAIT (low
    /// watermark, then wake kswapd and try min; never reclaims in the target).
    fn migrate(&mut self, target_nid: Option<NodeId>, n: usize, pfn: u32) -> Option<SimDuration> {
        let dst = target_nid.map(|d| d.idx())?;
        if dst == n || dst >= self.kernel.nodes.len() {
            return None;
        }
        let zone = self.zone_above(dst, |w| w.low).or_else(|| {
            self.kernel.wakeup_kswapd(dst, self.now);
            self.zone_above(dst, |w| w.min)
        });
        let Some(zone) = zone else {
            self.kernel.vmstat.inc(n, Vm::PgmigrateFail);
            return None;
        };
        self.kernel.isolate_and_migrate(n, pfn, (dst, zone));
        Some(self.kernel.cfg.costs.migrate_page)
    }

    /// The highest zone of node `d` above `mark` for a user page.
    fn zone_above(
        &self,
        d: usize,
        mark: impl Fn(&crate::mm::mem::Watermarks) -> u64,
    ) -> Option<usize> {
        self.kernel.nodes[d].zone_above(mark, tiermem_core::watermarks::ZONE_MOVABLE)
    }
}

impl DamonOps for SimOps<'_> {
    fn kind(&self) -> OpsKind {
        self.kind
    }

    fn nr_targets(&self) -> usize {
        match self.kind {
            OpsKind::Vaddr => self.procs.len(),
            OpsKind::Paddr => 1,
        }
    }

    fn target_valid(&self, target: usize) -> bool {
        match self.kind {
            OpsKind::Vaddr => self
                .procs
                .get(target)
                .is_some_and(|&p| self.kernel.procs[p as usize].alive),
            OpsKind::Paddr => true,
        }
    }

    fn target_ranges(&mut self, target: usize) -> Vec<AddrRange> {
        match self.kind {
            OpsKind::Vaddr => {
                let Some(&p) = self.procs.get(target) else {
                    return Vec::new();
                };
                self.kernel.procs[p as usize]
                    .vmas
                    .iter()
                    .map(|v| AddrRange {
                        start: v.start,
                        end: v.start + v.pages as u64 * PAGE_SIZE,
                    })
                    .collect()
            }
            OpsKind::Paddr => self.ranges.to_vec(),
        }
    }

    fn prepare_access_check(&mut self, target: usize, addr: u64) {
        if let Page::Frame(n, pfn) = self.page_at(target, addr) {
            self.mkold(n, pfn);
        }
    }

    fn check_access(&mut self, target: usize, addr: u64) -> bool {
        match self.page_at(target, addr) {
            Page::Frame(n, pfn) => self.young(n, pfn),
            _ => false,
        }
    }

    /// `damon_va_apply_scheme` / `damon_pa_apply_scheme`, page by page from `start`,
    /// stopping once the slice's cost reaches `budget_ns`.
    fn apply(&mut self, req: &ApplyRequest<'_>) -> ApplyResult {
        let (target, action, target_nid) = (req.target, req.action, req.target_nid);
        let (start, end, filters, budget_ns) = (req.start, req.end, &req.filters, req.budget_ns);
        let mut res = ApplyResult::default();
        if !self.implements(action) {
            return res;
        }
        let fl = self.ops_filters(action, filters.filters);
        if action == DamosAction::Stat && fl.is_empty() {
            return res;
        }
        let of = OpsFilters {
            filters: &fl,
            core_allowed: filters.core_allowed,
            default_reject: filters.default_reject,
        };
        let (walk_ns, folio_ns) = (self.costs.walk_page_ns, self.costs.action_page_ns);
        let mut cost = SimDuration::ZERO;
        let mut applied_pages = 0u64;
        let mut done_to = end;
        for addr in self.pages(start, end) {
            cost += SimDuration::from_ns(walk_ns);
            match self.page_at(target, addr) {
                Page::NotPresent(p, idx) if action == DamosAction::Willneed => {
                    cost += self.willneed(p, idx);
                }
                Page::Frame(n, pfn) if action != DamosAction::Willneed => {
                    // The folio's lookup, filters (the young filter's rmap walk) and isolation.
                    cost += SimDuration::from_ns(folio_ns);
                    if !of.filter_out(|f| self.has_property(f, n, pfn)) {
                        res.filter_passed_bytes += PAGE_SIZE;
                        if let Some(c) = self.act_on_frame(action, target_nid, n, pfn) {
                            cost += c;
                            applied_pages += 1;
                        }
                    }
                }
                _ => {}
            }
            if cost.ps() / 1000 >= budget_ns && addr + PAGE_SIZE < end {
                done_to = addr + PAGE_SIZE;
                res.resume_at = Some(done_to);
                break;
            }
        }
        let vaddr_madvise = self.kind == OpsKind::Vaddr
            && matches!(
                action,
                DamosAction::Pageout
                    | DamosAction::Cold
                    | DamosAction::Willneed
                    | DamosAction::Hugepage
                    | DamosAction::Nohugepage
            );
        // madvise() reports the whole range it was given.
        res.applied_bytes = if vaddr_madvise {
            done_to - start
        } else {
            applied_pages * PAGE_SIZE
        };
        res.elapsed_ns = cost.ps() / 1000;
        res
    }

    fn goal_metric(&mut self, metric: GoalMetric, nid: Option<NodeId>) -> Option<u64> {
        let k = &self.kernel;
        match metric {
            GoalMetric::NodeMemUsedBp | GoalMetric::NodeMemFreeBp => {
                let node = k.nodes.get(nid?.idx())?;
                let total = node.present.max(1);
                let free_bp = node.free * 10_000 / total;
                Some(if metric == GoalMetric::NodeMemFreeBp {
                    free_bp
                } else {
                    10_000 - free_bp
                })
            }
            GoalMetric::ActiveMemBp | GoalMetric::InactiveMemBp => {
                let (mut act, mut inact) = (0u64, 0u64);
                for n in &k.nodes {
                    act += n.lru_len(Lru::ActiveAnon);
                    inact += n.lru_len(Lru::InactiveAnon);
                }
                let all = (act + inact).max(1);
                Some(if metric == GoalMetric::ActiveMemBp {
                    act * 10_000 / all
                } else {
                    inact * 10_000 / all
                })
            }
            // PSI is not modelled by the simulator; the user value comes from the config.
            GoalMetric::SomeMemPsiUs | GoalMetric::UserInput => None,
        }
    }

    fn free_mem_rate_permil(&mut self) -> Option<u64> {
        let free: u64 = self.kernel.nodes.iter().map(|n| n.free).sum();
        let total: u64 = self.kernel.nodes.iter().map(|n| n.present).sum();
        Some(free * 1000 / total.max(1))
    }
}

/// Results of one kdamond in `summary.json`. For a `per_workload_run` context, the CPU
/// figures, `counters` and the schemes' `stats` add up over its kdamonds, while
/// `nr_regions`, `effective_bytes`, `activated` and the tried regions are the last one's.
#[derive(Clone, Debug, Serialize)]
pub struct KdamondSummary {
    pub name: String,
    pub ops: String,
    /// kdamond CPU time as a share of one CPU over the run, percent.
    pub cpu_percent: f64,
    /// The monitoring part of it (sampling and aggregation), percent of one CPU.
    pub monitor_cpu_percent: f64,
    pub cpu_seconds: f64,
    pub nr_regions: usize,
    pub sample_us: u64,
    pub aggr_us: u64,
    pub counters: tiermem_damon::ctx::CtxCounters,
    pub schemes: Vec<SchemeSummary>,
    /// The module's read-only statistics under their parameter names (DAMON_RECLAIM,
    /// DAMON_LRU_SORT).
    pub module_stats: BTreeMap<String, u64>,
}

/// One scheme's results.
#[derive(Clone, Debug, Serialize)]
pub struct SchemeSummary {
    pub action: String,
    pub stats: tiermem_damon::ctx::SchemeStats,
    /// `quotas/effective_bytes` at the end.
    pub effective_bytes: u64,
    pub activated: bool,
    pub tried_regions: usize,
    pub tried_regions_total_bytes: u64,
}

/// One of DAMON_RECLAIM's statistics parameters from its scheme's stats
/// (`damon_reclaim_after_aggregation` copies them).
pub fn reclaim_module_stat(s: &tiermem_damon::ctx::SchemeStats, stat: &str) -> u64 {
    match stat {
        "nr_reclaim_tried_regions" => s.nr_tried,
        "bytes_reclaim_tried_regions" => s.sz_tried,
        "nr_reclaimed_regions" => s.nr_applied,
        "bytes_reclaimed_regions" => s.sz_applied,
        "nr_quota_exceeds" => s.qt_exceeds,
        _ => 0,
    }
}

/// The DAMON records of the kdamonds that record (`record = true`), one per target, in
/// damo's numbering (`kdamond_idx`, `context_idx` 0, `target_id` the target's index).
pub fn records(kd: &[Kdamond]) -> Vec<tiermem_core::damon_record::DamonRecord> {
    let mut out = Vec::new();
    for (k, d) in kd.iter().enumerate() {
        let a = d.ctx.attrs();
        for (t, snaps) in d.ctx.recorded().iter().enumerate() {
            out.push(tiermem_core::damon_record::DamonRecord {
                kdamond_idx: k,
                context_idx: 0,
                target_id: t as u64,
                sample_us: a.sample_us,
                aggr_us: a.aggr_us,
                ops_update_us: a.update_us,
                snapshots: snaps.clone(),
            });
        }
    }
    out
}

/// Summaries of all kdamonds.
pub fn summaries(kd: &[Kdamond], sim_seconds: f64) -> Vec<KdamondSummary> {
    kd.iter()
        .map(|k| {
            let schemes: Vec<SchemeSummary> = k
                .ctx
                .schemes
                .iter()
                .enumerate()
                .map(|(i, s)| SchemeSummary {
                    action: s.cfg.action.name().into(),
                    stats: k.scheme_stats(i).unwrap_or(s.stat),
                    effective_bytes: s.quota.esz,
                    activated: s.activated,
                    tried_regions: s.tried_regions.len(),
                    tried_regions_total_bytes: s
                        .tried_regions
                        .iter()
                        .map(|r| r.end - r.start)
                        .sum(),
                })
                .collect();
            let mut module_stats = BTreeMap::new();
            if k.name == "damon_reclaim" {
                // Without its scheme (6.11-6.16, see KernelRelease) every statistic stays 0.
                for &stat in tiermem_core::timeline::DAMON_RECLAIM_STATS {
                    let v = schemes
                        .first()
                        .map_or(0, |s| reclaim_module_stat(&s.stats, stat));
                    module_stats.insert(stat.into(), v);
                }
            } else if k.name == "damon_lru_sort" {
                for (i, which) in ["hot", "cold"].iter().enumerate() {
                    let s = &schemes[i].stats;
                    module_stats.insert(format!("nr_lru_sort_tried_{which}_regions"), s.nr_tried);
                    module_stats
                        .insert(format!("bytes_lru_sort_tried_{which}_regions"), s.sz_tried);
                    module_stats.insert(format!("nr_lru_sorted_{which}_regions"), s.nr_applied);
                    module_stats.insert(format!("bytes_lru_sorted_{which}_regions"), s.sz_applied);
                    module_stats.insert(format!("nr_{which}_quota_exceeds"), s.qt_exceeds);
                }
            }
            let secs = sim_seconds.max(1e-12);
            let counters = k.counters();
            KdamondSummary {
                name: k.name.clone(),
                ops: format!("{:?}", k.ctx.ops_kind()).to_lowercase(),
                cpu_percent: k.cpu_ns() as f64 / 1e9 / secs * 100.0,
                monitor_cpu_percent: counters.monitor_cpu_ns as f64 / 1e9 / secs * 100.0,
                cpu_seconds: k.cpu_ns() as f64 / 1e9,
                nr_regions: k.ctx.nr_regions(),
                sample_us: k.ctx.attrs().sample_us,
                aggr_us: k.ctx.attrs().aggr_us,
                counters,
                schemes,
                module_stats,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tests/it/damon.rs's DAMON_RECLAIM run, cut to 100 ms: enough for pages to be resident.
    fn reclaim_100ms() -> String {
        let text = include_str!("../../tests/data/damon-reclaim.toml");
        assert!(
            text.contains("duration = \"11s\""),
            "the run's duration moved"
        );
        text.replace("duration = \"11s\"", "duration = \"100ms\"")
    }

    #[test]
    fn damon_mkold_leaves_the_reference_for_reclaim() {
        use crate::mm::Reclaimer;
        use tiermem_damon::DamonOps;
        let cfg =
            tiermem_core::config::SimConfig::from_toml_str(&reclaim_100ms(), "test.toml").unwrap();
        let mut s = crate::engine::Simulation::new(&cfg).unwrap();
        s.run(&mut |_| {}).unwrap();
        let bases = node_bases(&s.kernel);
        let costs = Default::default();
        // A resident page whose PTE is young.
        let ptes = &s.kernel.procs()[0].ptes;
        let idx = ptes.iter().position(|&e| e & PTE_PRESENT != 0).unwrap();
        let pfn = pte_pfn(ptes[idx]);
        s.kernel.procs[0].ptes[idx] |= PTE_ACCESSED;
        let mut ops = SimOps {
            kernel: &mut s.kernel,
            kind: tiermem_core::damon::OpsKind::Paddr,
            procs: &[],
            ranges: &[],
            bases: &bases,
            proc_workload: &[0],
            costs: &costs,
            now: tiermem_core::units::SimTime::ZERO,
        };
        let addr = bases[0] + ops.kernel.nodes()[0].phys_of_frame(pfn) * PAGE_SIZE;
        assert!(
            ops.check_access(0, addr),
            "never idle-marked: counts as accessed"
        );
        ops.prepare_access_check(0, addr);
        assert!(!ops.check_access(0, addr), "made old, not accessed since");
        let f = s.kernel.nodes()[0].frames[pfn as usize];
        assert_eq!(
            s.kernel.procs()[0].ptes[idx] & PTE_ACCESSED,
            0,
            "DAMON cleared the PTE"
        );
        assert!(f.flags & F_YOUNG != 0 && f.flags & F_IDLE != 0);
        // Reclaim scanning the whole node still sees the page referenced: it stays resident.
        let node = &mut s.kernel.nodes[0];
        node.lru_del(pfn);
        node.lru_add(Lru::InactiveAnon, pfn);
        s.kernel.shrink_node(0, u64::MAX, 0, Reclaimer::Kswapd);
        assert_ne!(
            s.kernel.procs()[0].ptes[idx] & PTE_PRESENT,
            0,
            "the young flag kept the page from being reclaimed"
        );
        let f = s.kernel.nodes()[0].frames[pfn as usize];
        assert_eq!(
            f.flags & F_YOUNG,
            0,
            "folio_referenced consumed the young flag"
        );
        assert_eq!(
            f.flags & F_IDLE,
            0,
            "a reference clears PG_idle, so DAMON sees the access"
        );
    }
}
