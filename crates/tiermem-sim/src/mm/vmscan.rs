//! LRU reclaim (`mm/vmscan.c`): kswapd's `balance_pgdat`, direct reclaim
//! (`try_to_free_pages`), `shrink_node` over the anonymous lists, the second-chance test
//! (`folio_check_references`) and demotion to the next tier (`demote_folio_list`).

use super::*;

/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u8 = 12;

/// `MAX_RECLAIM_RETRIES`.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Who is reclaiming (`reclaimer_offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclaimer {
    Kswapd,
    /// A thread in direct reclaim, with its clock when this `shrink_node` call began (its
    /// fault's start plus the reclaim so far): kswapds catch up to it batch by batch.
    Direct {
        clock: SimTime,
    },
}

impl Reclaimer {
    /// Its `pgscan_*`, `pgsteal_*` and `pgdemote_*` counters.
    fn events(self) -> (Vm, Vm, Vm) {
        match self {
            Reclaimer::Kswapd => (Vm::PgscanKswapd, Vm::PgstealKswapd, Vm::PgdemoteKswapd),
            Reclaimer::Direct { .. } => (Vm::PgscanDirect, Vm::PgstealDirect, Vm::PgdemoteDirect),
        }
    }

    /// A direct reclaimer's clock (kswapds are caught up to it batch by batch).
    pub(super) fn clock(self) -> Option<SimTime> {
        match self {
            Reclaimer::Direct { clock } => Some(clock),
            Reclaimer::Kswapd => None,
        }
    }
}

/// kswapd's state for one node: a time-sliced `balance_pgdat`.
#[derive(Clone, Debug)]
pub struct Kswapd {
    pub awake: bool,
    /// `pgdat->kswapd_failures`.
    pub failures: u32,
    priority: u8,
    /// Pages scanned / reclaimed in the current `kswapd_shrink_node` pass.
    pass_scanned: u64,
    pass_reclaimed: u64,
    /// Pages reclaimed in the current priority sweep (DEF_PRIORITY down to 1).
    sweep_reclaimed: u64,
    /// kswapd's own clock: it has done work up to here.
    pub busy_until: SimTime,
    /// CPU time used.
    pub cpu_time: SimDuration,
}

impl Kswapd {
    /// Start a `balance_pgdat` sweep afresh at `DEF_PRIORITY`.
    pub(super) fn reset_sweep(&mut self) {
        self.priority = DEF_PRIORITY;
        self.pass_scanned = 0;
        self.pass_reclaimed = 0;
        self.sweep_reclaimed = 0;
    }

    pub(super) fn new() -> Self {
        Kswapd {
            awake: false,
            failures: 0,
            priority: DEF_PRIORITY,
            pass_scanned: 0,
            pass_reclaimed: 0,
            sweep_reclaimed: 0,
            busy_until: SimTime::ZERO,
            cpu_time: SimDuration::ZERO,
        }
    }
}

/// Result of one reclaim call.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReclaimResult {
    pub scanned: u64,
    pub reclaimed: u64,
    pub cost: SimDuration,
}

impl Kernel {
    /// `can_demote`: demotion enabled and a demotion target exists.
    pub fn can_demote(&self, n: usize) -> bool {
        self.cfg.demotion_enabled && !self.topo.demotion_preferred[n].is_empty()
    }

    pub(super) fn swap_has_room(&self) -> bool {
        self.zram.as_ref().is_some_and(|(_, a)| a.has_room())
            || self.swap.as_ref().is_some_and(|(_, a)| a.has_room())
    }

    /// `can_reclaim_anon_pages`: swap space left, or demotion possible.
    pub fn can_reclaim_anon(&self, n: usize) -> bool {
        self.swap_has_room() || self.can_demote(n)
    }

    /// The watermark kswapd balances to (`pgdat_balanced`): promo in tiering mode, else high.
    pub fn balance_mark(&self, w: &Watermarks) -> u64 {
        if self.numa_balancing & NUMA_BALANCING_MEMORY_TIERING != 0 {
            w.promo
        } else {
            w.high
        }
    }

    /// `pgdat_balanced` (class zone `ZONE_MOVABLE`, as user allocations and promotion wake
    /// kswapd): balanced as soon as **any** zone is above its balance mark plus its
    /// `lowmem_reserve` (a small DMA zone with free pages can make a node balanced).
    pub fn pgdat_balanced(&self, n: usize) -> bool {
        self.nodes[n].any_zone_above(|w| self.balance_mark(w), ZONE_MOVABLE)
    }

    /// `wakeup_kswapd`: no-op if kswapd gave up (`kswapd_failures >= MAX_RECLAIM_RETRIES`)
    /// or the node is balanced.
    pub fn wakeup_kswapd(&mut self, n: usize, now: SimTime) {
        let k = &self.kswapd[n];
        if k.awake || k.failures >= MAX_RECLAIM_RETRIES || self.pgdat_balanced(n) {
            return;
        }
        let k = &mut self.kswapd[n];
        k.awake = true;
        k.reset_sweep();
        if k.busy_until < now {
            k.busy_until = now;
        }
        self.vmstat.inc(n, Vm::Pageoutrun);
    }

    /// Run kswapd of node `n` until `until` (its CPU time is its own; it does not slow the
    /// workload except through the memory traffic it causes). A time-sliced `balance_pgdat`:
    /// each pass (`kswapd_shrink_node`) aims at `max(high_wmark, SWAP_CLUSTER_MAX)` pages at
    /// the current priority, done in batches of `SWAP_CLUSTER_MAX`; balance is checked
    /// between passes (so kswapd overshoots as the kernel does); the priority drops after a
    /// pass that scanned less than its target or reclaimed nothing; a whole sweep down to
    /// priority 1 without reclaiming counts a `kswapd_failure`; kswapd sleeps when the node
    /// is balanced or after `MAX_RECLAIM_RETRIES` failures (`prepare_kswapd_sleep`).
    pub fn run_kswapd(&mut self, n: usize, until: SimTime) {
        while self.kswapd[n].awake && self.kswapd[n].busy_until < until {
            let k = &self.kswapd[n];
            // Balance is checked at pass boundaries only.
            if k.pass_scanned == 0 && k.pass_reclaimed == 0 && self.pgdat_balanced(n) {
                self.kswapd_sleep(n);
                break;
            }
            let prio = k.priority;
            let r = self.shrink_node(n, SWAP_CLUSTER_MAX, prio, Reclaimer::Kswapd);
            if r.reclaimed > 0 {
                // balance_pgdat set ZONE_RECLAIM_ACTIVE: nr_pcp_high shrinks the pagesets'
                // high marks, and the pages this batch freed flush them to the buddy lists.
                self.nodes[n].drain_pagesets();
            }
            let nr_to_reclaim = self.kswapd_reclaim_target(n);
            let lru_total = self.nodes[n].lru_len(Lru::InactiveAnon)
                + self.nodes[n].lru_len(Lru::ActiveAnon)
                + self.nodes[n].file_lru_pages();
            let k = &mut self.kswapd[n];
            // Even a fruitless batch costs something, so time always advances.
            let cost = r.cost.max(SimDuration::from_ns(200));
            k.busy_until += cost;
            k.cpu_time += cost;
            k.pass_scanned += r.scanned;
            k.pass_reclaimed += r.reclaimed;
            k.sweep_reclaimed += r.reclaimed;
            if r.reclaimed > 0 {
                k.failures = 0;
            }
            let pass_target = lru_total >> k.priority;
            if r.scanned == 0 || k.pass_scanned >= pass_target || k.pass_reclaimed >= nr_to_reclaim
            {
                // End of a kswapd_shrink_node pass.
                let raise_priority = k.pass_scanned < nr_to_reclaim;
                if raise_priority || k.pass_reclaimed == 0 {
                    k.priority -= 1;
                }
                k.pass_scanned = 0;
                k.pass_reclaimed = 0;
                if k.priority < 1 {
                    if k.sweep_reclaimed == 0 {
                        k.failures += 1;
                    }
                    k.sweep_reclaimed = 0;
                    k.priority = DEF_PRIORITY;
                    if k.failures >= MAX_RECLAIM_RETRIES {
                        self.kswapd_sleep(n);
                        break;
                    }
                    self.vmstat.inc(n, Vm::Pageoutrun);
                    // A new balance_pgdat run: the last one ended with snapshot_refaults.
                    self.snapshot_refaults(n);
                }
            }
        }
    }

    /// `kswapd_shrink_node`'s `nr_to_reclaim`: Σ over the node's zones of
    /// max(high watermark, `SWAP_CLUSTER_MAX`).
    pub(super) fn kswapd_reclaim_target(&self, n: usize) -> u64 {
        self.nodes[n]
            .zones
            .iter()
            .map(|z| z.wmark.high.max(SWAP_CLUSTER_MAX))
            .sum()
    }

    /// `move_folios_to_lru` putting a folio back on an active list: it counts `pgactivate`
    /// and ages the node's `nonresident_age` (`workingset_age_nonresident`).
    pub(super) fn putback_active(&mut self, n: usize, list: Lru, pfn: u32) {
        self.nodes[n].nonresident_age += 1;
        self.nodes[n].lru_add(list, pfn);
        self.vmstat.inc(n, Vm::Pgactivate);
    }

    pub(super) fn kswapd_sleep(&mut self, n: usize) {
        let k = &mut self.kswapd[n];
        k.awake = false;
        k.reset_sweep();
        self.snapshot_refaults(n);
    }

    /// `try_to_free_pages` → `do_try_to_free_pages`: reclaim `SWAP_CLUSTER_MAX` pages from
    /// the zonelist, lowering the priority from `DEF_PRIORITY` until enough is reclaimed.
    /// `now` is the reclaiming thread's clock: kswapd, on its own CPU, works concurrently
    /// and is caught up to the reclaimer's clock before each batch (see [`Self::shrink_node`]).
    pub(super) fn try_to_free_pages(&mut self, zl: &[usize], now: SimTime) -> ReclaimResult {
        let mut total = ReclaimResult::default();
        if let Some(&first) = zl.first() {
            self.vmstat.inc(first, Vm::AllocstallMovable);
        }
        let mut prio = DEF_PRIORITY as i32;
        while prio >= 0 && total.reclaimed < SWAP_CLUSTER_MAX {
            for &n in zl {
                let r = self.shrink_node(
                    n,
                    SWAP_CLUSTER_MAX - total.reclaimed.min(SWAP_CLUSTER_MAX),
                    prio as u8,
                    Reclaimer::Direct {
                        clock: now + total.cost,
                    },
                );
                total.scanned += r.scanned;
                total.reclaimed += r.reclaimed;
                total.cost += r.cost;
                if r.reclaimed > 0 {
                    // Progress by anyone resets kswapd's failure count (shrink_node).
                    self.kswapd[n].failures = 0;
                }
                if total.reclaimed >= SWAP_CLUSTER_MAX {
                    break;
                }
            }
            prio -= 1;
        }
        for &n in zl {
            self.snapshot_refaults(n);
        }
        total
    }

    /// Run every awake kswapd up to `until`: a direct reclaimer's clock, so that the two
    /// interleave batch by batch (each takes the LRU lock per batch of `SWAP_CLUSTER_MAX`)
    /// instead of a long direct reclaim doing all the work before kswapd may run.
    pub(super) fn catch_up_kswapds(&mut self, until: SimTime) {
        for n in 0..self.kswapd.len() {
            if self.kswapd[n].awake {
                self.run_kswapd(n, until);
            }
        }
    }

    /// `shrink_node` → `shrink_lruvec`. A node holding page cache goes through
    /// `get_scan_count` ([`Kernel::shrink_lruvec`] in `file_reclaim`); one without is
    /// reclaimed as `SCAN_ANON` (docs/model.md): scan up to `lru_size >> priority`
    /// of each anon list in `SWAP_CLUSTER_MAX` batches until `nr_to_reclaim` is met; the
    /// active list is aged only while the inactive list is low (`may_deactivate`); then
    /// `shrink_active_list(SWAP_CLUSTER_MAX)` if the inactive list is still low. In direct
    /// reclaim, awake kswapds run up to the reclaimer's clock before each batch: they
    /// scan the same lists concurrently, so a long direct reclaim shares the work with them.
    pub fn shrink_node(
        &mut self,
        n: usize,
        nr_to_reclaim: u64,
        priority: u8,
        who: Reclaimer,
    ) -> ReclaimResult {
        if self.nodes[n].file_lru_pages() > 0 {
            return self.shrink_lruvec(n, nr_to_reclaim, priority, who);
        }
        let mut res = ReclaimResult::default();
        if !self.can_reclaim_anon(n) {
            return res;
        }
        let node = &self.nodes[n];
        let mut nr_inactive = node.lru_len(Lru::InactiveAnon) >> priority;
        let mut nr_active = node.lru_len(Lru::ActiveAnon) >> priority;
        let may_deactivate = node.inactive_is_low();
        if priority == 0 {
            nr_inactive = node.lru_len(Lru::InactiveAnon);
            nr_active = node.lru_len(Lru::ActiveAnon);
        }
        // Direct reclaim at DEF_PRIORITY scans its whole target (proportional_reclaim).
        let direct_clock = who.clock();
        let proportional = direct_clock.is_some() && priority == DEF_PRIORITY;
        while nr_inactive > 0 {
            if let Some(t) = direct_clock {
                self.catch_up_kswapds(t + res.cost);
            }
            if nr_active > 0 && may_deactivate {
                let batch = nr_active.min(SWAP_CLUSTER_MAX);
                nr_active -= batch;
                res.cost += self.shrink_active_list(n, batch);
            }
            let batch = nr_inactive.min(SWAP_CLUSTER_MAX);
            nr_inactive -= batch;
            let r = self.shrink_inactive_list(n, batch, who);
            res.scanned += r.scanned;
            res.reclaimed += r.reclaimed;
            res.cost += r.cost;
            if res.reclaimed >= nr_to_reclaim && !proportional {
                break;
            }
        }
        if self.nodes[n].inactive_is_low() {
            res.cost += self.shrink_active_list(n, SWAP_CLUSTER_MAX);
        }
        res
    }

    /// `folio_referenced` for an anonymous page with one mapping: test and clear the PTE's
    /// accessed bit. Returns the number of referencing PTEs (0 or 1).
    /// With DAMON sampling, the page-idle flags take part as in `folio_referenced_one`: a
    /// reference clears `PG_idle`, and `PG_young` (left by DAMON's mkold) counts as one.
    pub(super) fn folio_referenced(&mut self, n: usize, pfn: u32) -> u32 {
        let f = self.nodes[n].frames[pfn as usize];
        if f.owner == OWNER_KSM {
            return self.ksm_folio_referenced(f.vpn);
        }
        let mut refs = u32::from(self.test_and_clear_young(f.owner as usize, f.vpn));
        let fl = &mut self.nodes[n].frames[pfn as usize].flags;
        if *fl & F_YOUNG != 0 {
            *fl &= !F_YOUNG;
            refs = 1;
        }
        if refs > 0 {
            *fl &= !F_IDLE;
        }
        refs
    }

    /// `isolate_lru_folios`: take up to `nr` folios off the tail of `list`, as the kernel
    /// does before deciding on any of them (a folio put back at the head during the
    /// decisions is not scanned twice in one batch, even on a list shorter than `nr`).
    /// What `folio_referenced` will read of each (its PTE, and a lazily read page's
    /// distribution and stamp) starts loading now, so the batch's cache misses overlap.
    pub(super) fn isolate_lru_folios(&mut self, n: usize, list: Lru, nr: u64) -> Vec<u32> {
        let mut isolated = Vec::with_capacity(nr as usize);
        while (isolated.len() as u64) < nr {
            let Some(pfn) = self.nodes[n].lru_tail(list) else {
                break;
            };
            self.nodes[n].lru_del(pfn);
            let f = self.nodes[n].frames[pfn as usize];
            if f.owner != OWNER_KSM && f.owner != OWNER_FILE {
                self.prefetch_young(f.owner as usize, f.vpn);
            }
            isolated.push(pfn);
        }
        isolated
    }

    /// `shrink_active_list`: move pages from the tail of the active list to the inactive
    /// list. Referenced anonymous pages are deactivated too (only executable file pages are
    /// kept active); the rmap walk clears their accessed bits.
    pub(super) fn shrink_active_list(&mut self, n: usize, nr: u64) -> SimDuration {
        let isolated = self.isolate_lru_folios(n, Lru::ActiveAnon, nr);
        let scanned = isolated.len() as u64;
        for pfn in isolated {
            self.folio_referenced(n, pfn);
            self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
            self.vmstat.inc(n, Vm::Pgdeactivate);
        }
        self.vmstat.add(n, Vm::Pgrefill, scanned);
        SimDuration(self.cfg.costs.reclaim_scan_page.0 * scanned)
    }

    /// `shrink_inactive_list` + `shrink_folio_list`: isolate `nr` pages from the tail of the
    /// inactive list and decide per page (`folio_check_references`):
    /// referenced PTE and `PG_referenced` → activate; referenced PTE only → set
    /// `PG_referenced`, keep (second chance); unreferenced → reclaim: onto the demote list
    /// if demotion is possible, else swap out. Pages that fail to demote get a second pass
    /// without demotion; pages that cannot be swapped (no space) are activated.
    pub(super) fn shrink_inactive_list(
        &mut self,
        n: usize,
        nr: u64,
        who: Reclaimer,
    ) -> ReclaimResult {
        let mut res = ReclaimResult::default();
        let isolated = self.isolate_lru_folios(n, Lru::InactiveAnon, nr);
        res.scanned = isolated.len() as u64;
        let mut to_reclaim: Vec<u32> = Vec::with_capacity(isolated.len());
        for pfn in isolated {
            let refs = self.folio_referenced(n, pfn);
            let f = &mut self.nodes[n].frames[pfn as usize];
            let referenced_folio = f.flags & F_REFERENCED != 0;
            f.flags &= !F_REFERENCED;
            if refs > 0 {
                f.flags |= F_REFERENCED;
                if referenced_folio {
                    self.putback_active(n, Lru::ActiveAnon, pfn);
                } else {
                    self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
                }
            } else {
                to_reclaim.push(pfn);
            }
        }
        self.count_scan(n, who, false, &mut res);
        let failed = self.demote_or_keep(n, who, to_reclaim, &mut res);
        // Second pass without demotion: swap out or activate.
        let mut swapped = 0;
        for pfn in failed {
            match self.swap_out(n, pfn) {
                Some(cost) => {
                    res.reclaimed += 1;
                    swapped += 1;
                    res.cost += cost;
                }
                None => {
                    self.putback_active(n, Lru::ActiveAnon, pfn);
                }
            }
        }
        self.count_steal(n, who, false, res.reclaimed);
        if res.scanned > 0 {
            self.lru_note_cost(n, false, swapped, res.scanned - res.reclaimed);
        }
        res
    }

    /// Count a batch's scanned pages (`pgscan_kswapd` / `pgscan_direct` and `pgscan_anon` /
    /// `pgscan_file`) and charge their scan.
    pub(super) fn count_scan(
        &mut self,
        n: usize,
        who: Reclaimer,
        file: bool,
        res: &mut ReclaimResult,
    ) {
        let (scan, _, _) = who.events();
        self.vmstat.add(n, scan, res.scanned);
        let by_type = if file { Vm::PgscanFile } else { Vm::PgscanAnon };
        self.vmstat.add(n, by_type, res.scanned);
        res.cost += SimDuration(self.cfg.costs.reclaim_scan_page.0 * res.scanned);
    }

    /// Count a batch's reclaimed pages (`pgsteal_*`, demoted ones included).
    pub(super) fn count_steal(&mut self, n: usize, who: Reclaimer, file: bool, reclaimed: u64) {
        let (_, steal, _) = who.events();
        self.vmstat.add(n, steal, reclaimed);
        let by_type = if file {
            Vm::PgstealFile
        } else {
            Vm::PgstealAnon
        };
        self.vmstat.add(n, by_type, reclaimed);
    }

    /// `shrink_folio_list`'s demotion of the pages it chose to reclaim, when demotion is
    /// possible; returns those left for the pass without demotion.
    pub(super) fn demote_or_keep(
        &mut self,
        n: usize,
        who: Reclaimer,
        to_reclaim: Vec<u32>,
        res: &mut ReclaimResult,
    ) -> Vec<u32> {
        if !self.can_demote(n) || to_reclaim.is_empty() {
            return to_reclaim;
        }
        let mut failed = Vec::new();
        let (demoted, cost) = self.demote_folio_list(n, &to_reclaim, &mut failed);
        res.reclaimed += demoted;
        res.cost += cost;
        self.vmstat.add(n, who.events().2, demoted);
        failed
    }

    /// `next_demotion_node`: a random node of the preferred set.
    pub fn next_demotion_node(&mut self, n: usize) -> Option<usize> {
        let pref = &self.topo.demotion_preferred[n];
        match pref.len() {
            0 => None,
            1 => Some(pref[0].idx()),
            len => Some(pref[(self.rng.next_u64() % len as u64) as usize].idx()),
        }
    }

    /// `demote_folio_list`: migrate to `next_demotion_node`, falling back to the lower-tier
    /// mask; allocation never reclaims or wakes kswapd on the target (`alloc_demote_folio`
    /// with `~__GFP_RECLAIM`): it needs free pages above the min watermark. Returns pages
    /// demoted and the cost; failures are pushed to `failed`.
    pub(super) fn demote_folio_list(
        &mut self,
        n: usize,
        list: &[u32],
        failed: &mut Vec<u32>,
    ) -> (u64, SimDuration) {
        let Some(target) = self.next_demotion_node(n) else {
            failed.extend_from_slice(list);
            return (0, SimDuration::ZERO);
        };
        let mut demoted = 0;
        let mut cost = SimDuration::ZERO;
        // The target first (__GFP_THISNODE), then the lower-tier mask in the target's zonelist order.
        let candidates: Vec<usize> = std::iter::once(target)
            .chain(
                self.topo.fallback[target]
                    .iter()
                    .map(|x| x.idx())
                    .filter(|x| {
                        *x != target && self.topo.lower_tier_mask[n].iter().any(|m| m.idx() == *x)
                    }),
            )
            .collect();
        for (i, &pfn) in list.iter().enumerate() {
            // alloc_demote_folio: GFP_NOWAIT keeps __GFP_KSWAPD_RECLAIM, so each attempt is a
            // fast path at the low watermark, a kswapd wakeup, then the min watermark.
            let mut dst = None;
            for &d in &candidates {
                if let Some(z) = self.nodes[d].zone_above(|w| w.low, ZONE_MOVABLE) {
                    dst = Some((d, z));
                    break;
                }
                self.wakeup_kswapd(d, SimTime(self.kswapd[n].busy_until.0));
                if let Some(z) = self.nodes[d].zone_above(|w| w.min, ZONE_MOVABLE) {
                    dst = Some((d, z));
                    break;
                }
            }
            match dst {
                Some(d) => {
                    self.migrate_frame(n, pfn, d, false);
                    demoted += 1;
                    cost += self.cfg.costs.migrate_page;
                }
                None => {
                    // migrate_pages stops at the first -ENOMEM; the rest are not tried.
                    self.vmstat.inc(n, Vm::PgmigrateFail);
                    failed.extend_from_slice(&list[i..]);
                    break;
                }
            }
        }
        (demoted, cost)
    }
}
