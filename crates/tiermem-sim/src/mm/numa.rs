//! NUMA balancing and memory-tiering promotion, as `kernel/sched/fair.c`, `mm/mprotect.c`,
//! `mm/memory.c` and `mm/migrate.c` do it (`kernel-mechanisms.md` §1).
//!
//! * The scanner (`task_tick_numa` → `task_numa_work` → `change_prot_numa`) runs in task
//!   context, driven by the task's CPU runtime, and marks a window of `scan_size_mb` of the
//!   address space PROT_NONE, storing the scan time in slow-tier pages' access-time field.
//!   In tiering-only mode top-tier pages are never marked.
//! * A hint fault (`do_numa_page` → `numa_migrate_check` → `mpol_misplaced` →
//!   `should_numa_migrate_memory`) decides in the kernel's order: free-space bypass,
//!   threshold adjustment, latency test (which stores the fault time), rate limit on
//!   candidates; then `migrate_misplaced_folio_prepare` (target above high watermark + nr,
//!   else wake its kswapd) and the migration. Promotion targets only the faulting CPU's node.
//! * `task_numa_fault` accounts faults for placement and the scan-period adaptation
//!   (`update_task_scan_period`); slow-tier faults in tiering mode are not accounted.
//!
//! Four generations of the promotion logic are selectable (`kernel.numa.promotion`) so the
//! seed-001 patch series can be replayed step by step.

use crate::mm::mem::*;
use crate::mm::{Kernel, NUMA_BALANCING_MEMORY_TIERING, TICK_NS};
use crate::vmstat::Vm;
use tiermem_core::config::PromotionPolicy;
use tiermem_core::mempolicy::PolicyMode;
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SHIFT};
use tiermem_core::watermarks::ZONE_MOVABLE;
use tiermem_policy::promotion;

const CPU_BITS: u32 = 13;
const CPU_MASK: u32 = (1 << CPU_BITS) - 1;
const PID_MASK: u32 = 0xFF;
/// `MAX_SCAN_WINDOW` (MB/s).
const MAX_SCAN_WINDOW: u32 = 2560;
/// `NUMA_PERIOD_SLOTS`, `NUMA_PERIOD_THRESHOLD`.
const NUMA_PERIOD_SLOTS: u64 = 10;
const NUMA_PERIOD_THRESHOLD: u64 = 7;

/// Per-node promotion state (`pglist_data` fields).
#[derive(Clone, Debug, Default)]
pub struct PgdatNuma {
    /// `nbp_threshold`: 0 means "use the default".
    pub nbp_threshold: u32,
    pub nbp_th_start: u32,
    pub nbp_th_nr_cand: u64,
    /// `nbp_rl_start`, `nbp_rl_nr_cand`.
    pub rate_window: promotion::RateWindow,
}

/// Per-mm scanner state.
#[derive(Clone, Debug, Default)]
pub struct MmNuma {
    /// `numa_next_scan` in ms (0 = unset).
    pub next_scan_ms: u64,
    /// `numa_scan_offset` as a page-table index.
    pub scan_offset: u64,
    /// `numa_scan_seq`.
    pub scan_seq: u32,
    pub users: u32,
    /// Per VMA, `vma->numab_state` (created when the scanner first sees the VMA).
    pub numab: Vec<Option<crate::mm::numa_scan::VmaNumab>>,
}

/// Per-task NUMA state.
#[derive(Clone, Debug)]
pub struct TaskNuma {
    pub proc: u16,
    pub cpu_node: NodeId,
    /// The task's pid bits for cpupid matching.
    pub(crate) pid: u32,
    /// `numa_scan_period` (ms).
    pub period_ms: u64,
    /// `node_stamp` (ns of task runtime).
    pub(crate) node_stamp_ns: u64,
    /// `numa_scan_seq` seen at the last placement.
    seq_seen: u32,
    pub preferred_nid: Option<usize>,
    faults_mem: Vec<u64>,
    buf: Vec<u64>,
    fault_priv: u64,
    fault_shared: u64,
    /// `numa_faults_locality`: remote, local, failed migrations.
    locality: [u64; 3],
    /// `numa_migrate_retry` (ms): placement does not run before this time.
    migrate_retry_ms: u64,
}

/// All NUMA-balancing state of the kernel.
#[derive(Clone, Debug, Default)]
pub struct NumaState {
    pub pgdat: Vec<PgdatNuma>,
    pub mm: Vec<MmNuma>,
    pub tasks: Vec<TaskNuma>,
    /// What hot-page selection saw (an observation, not kernel state).
    pub hint_latency: HintLatency,
}

/// The hint-fault latencies that hot-page selection tested (`numa_hint_fault_latency` on
/// slow-tier pages in memory-tiering mode), as a log2 histogram in milliseconds, and how many
/// were under the hot threshold in force. The kernel exports neither (only
/// `pgpromote_candidate` under the rate limit); the simulator records them so that a
/// report can say why a threshold promotes what it promotes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HintLatency {
    /// `log2_ms[0]`: 0 ms; `log2_ms[k]`: [2^(k−1), 2^k) ms. The access time has
    /// `LAST_CPUPID_SHIFT` = 21 bits, so every latency fits in the 22 buckets.
    pub log2_ms: [u64; 22],
    /// Latencies under the threshold (the fault goes on to the rate limit, or promotes).
    pub under_threshold: u64,
}

impl HintLatency {
    /// Count one tested latency.
    pub fn record(&mut self, latency_ms: u32, threshold_ms: u32) {
        let bucket = (u32::BITS - latency_ms.leading_zeros()) as usize;
        self.log2_ms[bucket.min(self.log2_ms.len() - 1)] += 1;
        self.under_threshold += u64::from(latency_ms < threshold_ms);
    }

    /// Latencies counted.
    pub fn total(&self) -> u64 {
        self.log2_ms.iter().sum()
    }

    /// The summary's view: None when hot-page selection tested no latency.
    pub fn summary(&self) -> Option<HintLatencySummary> {
        let tested = self.total();
        if tested == 0 {
            return None;
        }
        let bounds = |k: usize| match k {
            0 => (0, 1),
            k => (1u64 << (k - 1), 1u64 << k),
        };
        let mut below = 0;
        let mut median_below_ms = 0;
        for (k, &n) in self.log2_ms.iter().enumerate() {
            below += n;
            if 2 * below >= tested {
                median_below_ms = bounds(k).1;
                break;
            }
        }
        Some(HintLatencySummary {
            tested,
            under_threshold_pct: 100.0 * self.under_threshold as f64 / tested as f64,
            median_below_ms,
            histogram: self
                .log2_ms
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &count)| LatencyBucket {
                    from_ms: bounds(k).0,
                    to_ms: bounds(k).1,
                    count,
                })
                .collect(),
        })
    }
}

/// [`HintLatency`] in a run's summary (`hint_fault_latency`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct HintLatencySummary {
    /// Slow-tier hint faults whose latency hot-page selection tested.
    pub tested: u64,
    /// The share of them under the hot threshold in force, per cent.
    pub under_threshold_pct: f64,
    /// The median latency is below this many ms (the upper bound of its log2 bucket).
    pub median_below_ms: u64,
    /// The non-empty buckets: latencies in [`from_ms`, `to_ms`).
    pub histogram: Vec<LatencyBucket>,
}

/// One log2 bucket of [`HintLatencySummary`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct LatencyBucket {
    pub from_ms: u64,
    pub to_ms: u64,
    pub count: u64,
}

#[inline]
fn cpupid_pid_unset(c: u32) -> bool {
    (c >> CPU_BITS) & PID_MASK == PID_MASK
}
#[inline]
fn cpupid_valid(c: u32) -> bool {
    c & CPU_MASK != CPU_MASK
}
#[inline]
fn cpupid_to_nid(c: u32) -> usize {
    (c & CPU_MASK) as usize
}

impl Kernel {
    /// `jiffies_to_msecs(jiffies)`: milliseconds in whole jiffies (4 ms at HZ = 250), the
    /// clock of the scan and fault times, the rate-limit window and the scan schedule.
    pub(crate) fn now_ms(now: SimTime) -> u64 {
        let jiffy_ms = TICK_NS / 1_000_000;
        now.as_ms() / jiffy_ms * jiffy_ms
    }

    pub(crate) fn numa_mode(&self) -> u32 {
        self.numa_balancing
    }

    /// Register a task (thread) of process `proc`; `init_numa_balancing`.
    pub fn numa_register_task(&mut self, proc: u16, cpu_node: NodeId, now: SimTime) -> usize {
        let nn = self.nodes.len();
        if self.numa.pgdat.len() != nn {
            self.numa.pgdat = vec![PgdatNuma::default(); nn];
        }
        while self.numa.mm.len() < self.procs.len() {
            self.numa.mm.push(MmNuma::default());
        }
        let delay = self.cfg.numa.scan_delay_ms as u64;
        let mm = &mut self.numa.mm[proc as usize];
        mm.users += 1;
        let users = mm.users;
        if users == 1 {
            mm.next_scan_ms = Self::now_ms(now) + delay;
            mm.scan_seq = 0;
        }
        let tid = self.numa.tasks.len();
        let mut t = TaskNuma {
            proc,
            cpu_node,
            pid: (tid as u32 + 1) % PID_MASK,
            period_ms: delay,
            node_stamp_ns: 0,
            seq_seen: 0,
            preferred_nid: None,
            faults_mem: vec![0; nn],
            buf: vec![0; nn],
            fault_priv: 0,
            fault_shared: 0,
            locality: [0; 3],
            migrate_retry_ms: 0,
        };
        if users > 1 {
            // A new thread of an existing mm staggers its first scan (`init_numa_balancing`):
            // node_stamp = min(task_scan_max(current), current->numa_scan_period × mm_users ×
            // NSEC_PER_MSEC) + 2 ticks, in nanoseconds. The kernel compares task_scan_max's
            // milliseconds with nanoseconds, so the min is task_scan_max *nanoseconds*
            // (at most 60 µs) and the stagger is about two ticks: new threads scan about
            // one scan_delay of CPU time after they start, as the recordings show. The
            // product is an `unsigned int` and wraps for many users, as in the kernel.
            let max_as_ns = self.task_scan_max(proc);
            let product = (delay as u32).wrapping_mul(users).wrapping_mul(1_000_000) as u64;
            t.node_stamp_ns = max_as_ns.min(product) + 2 * TICK_NS;
        }
        self.numa.tasks.push(t);
        tid
    }

    fn this_cpupid(&self, tid: usize) -> u32 {
        let t = &self.numa.tasks[tid];
        (t.pid << CPU_BITS) | (t.cpu_node.0 as u32 & CPU_MASK)
    }

    fn cpupid_match_pid(&self, tid: usize, c: u32) -> bool {
        (c >> CPU_BITS) & PID_MASK == self.numa.tasks[tid].pid
    }

    /// `folio_use_access_time`: the cpupid field holds a time.
    pub(crate) fn use_access_time(&self, node: usize) -> bool {
        self.numa_mode() & NUMA_BALANCING_MEMORY_TIERING != 0
            && !self.topo.is_toptier(NodeId(node as u8))
    }

    // --- Scan period bounds ---------------------------------------------------------------

    fn nr_scan_windows(&self, proc: u16) -> u64 {
        let rss = self.procs[proc as usize].rss;
        let scan_pages = (self.cfg.numa.scan_size_mb as u64) << (20 - PAGE_SHIFT);
        rss.div_ceil(scan_pages).max(1)
    }

    /// `task_scan_min`.
    pub fn task_scan_min(&self, proc: u16) -> u64 {
        let scan = self.cfg.numa.scan_size_mb.min(MAX_SCAN_WINDOW);
        let floor = 1000 / (MAX_SCAN_WINDOW / scan).max(1) as u64;
        floor.max(self.cfg.numa.scan_period_min_ms as u64 / self.nr_scan_windows(proc))
    }

    /// `task_scan_max`.
    pub fn task_scan_max(&self, proc: u16) -> u64 {
        self.task_scan_min(proc)
            .max(self.cfg.numa.scan_period_max_ms as u64 / self.nr_scan_windows(proc))
    }

    // --- The hint fault -----------------------------------------------------------------------

    /// `do_numa_page`: restore the PTE, decide (`numa_migrate_check` → `mpol_misplaced`),
    /// migrate if asked, account (`task_numa_fault`). Returns the task's time in the kernel.
    pub fn numa_hint_fault(
        &mut self,
        tid: usize,
        proc: u16,
        idx: u32,
        write: bool,
        now: SimTime,
    ) -> SimDuration {
        let p = proc as usize;
        let pte = self.procs[p].ptes[idx as usize];
        debug_assert!(pte & PTE_PROTNONE != 0 && pte & PTE_PRESENT != 0);
        let mut new = (pte & !PTE_PROTNONE) | PTE_ACCESSED;
        if write {
            new |= PTE_DIRTY;
        }
        self.procs[p].ptes[idx as usize] = new;
        let mut cost = self.cfg.costs.numa_hint_fault;
        let nid = pte_node(pte);
        let pfn = pte_pfn(pte);
        let cpu_node = self.numa.tasks[tid].cpu_node.idx();
        self.vma_set_access_pid_bit(tid, p, idx);
        self.vmstat.inc(nid, Vm::NumaHintFaults);
        let local = nid == cpu_node;
        if local {
            self.vmstat.inc(nid, Vm::NumaHintFaultsLocal);
        }
        let last_cpupid = if self.use_access_time(nid) {
            CPUPID_UNSET
        } else {
            self.nodes[nid].frames[pfn as usize].atime
        };
        let target = self.mpol_misplaced(tid, proc, idx, nid, pfn, now);
        let mut mem_node = nid;
        let mut failed = false;
        if let Some(dst) = target {
            let zone = self
                .migrate_misplaced_prepare(dst, now)
                .then(|| self.misplaced_dst_zone(dst))
                .flatten();
            if let Some(zone) = zone {
                let c = self.migrate_misplaced_folio(nid, pfn, (dst, zone));
                cost += c;
                mem_node = dst;
            } else {
                failed = true;
            }
        }
        self.task_numa_fault(tid, last_cpupid, mem_node, local, failed, now);
        cost
    }

    /// `mpol_misplaced`: the default policy, and BIND / PREFERRED_MANY with
    /// `MPOL_F_NUMA_BALANCING`, carry `MPOL_F_MOF | MPOL_F_MORON`; with it the target is the
    /// faulting CPU's node, if `should_numa_migrate_memory` agrees.
    fn mpol_misplaced(
        &mut self,
        tid: usize,
        proc: u16,
        idx: u32,
        nid: usize,
        pfn: u32,
        now: SimTime,
    ) -> Option<usize> {
        let pr = &self.procs[proc as usize];
        let pol = pr
            .vma_of(idx)
            .and_then(|v| v.policy.as_ref())
            .unwrap_or(&pr.policy);
        // MPOL_F_NUMA_BALANCING on BIND / PREFERRED_MANY also sets MOF | MORON: the page
        // may move to the faulting CPU's node if that node is in the policy's set.
        let moron = pol.has_flag(tiermem_core::mempolicy::ModeFlag::NumaBalancing)
            && matches!(pol.mode, PolicyMode::Bind | PolicyMode::PreferredMany);
        if pol.mode != PolicyMode::Default && !moron {
            return None;
        }
        let dst = self.numa.tasks[tid].cpu_node.idx();
        if moron && pol.node_mask() & (1u64 << dst) == 0 {
            return None;
        }
        if dst == nid {
            // Already on the faulting CPU's node: no move, and should_numa_migrate_memory
            // is not consulted (the folio's last cpupid stays as it was).
            return None;
        }
        if !self.should_numa_migrate_memory(tid, nid, pfn, dst, now) {
            return None;
        }
        Some(dst)
    }

    /// `should_numa_migrate_memory`.
    fn should_numa_migrate_memory(
        &mut self,
        tid: usize,
        src: usize,
        pfn: u32,
        dst: usize,
        now: SimTime,
    ) -> bool {
        if self.use_access_time(src) {
            let gen = self.cfg.numa.promotion;
            if gen == PromotionPolicy::Mru {
                // 5.18: every slow-tier page touched after a scan is promoted.
                return true;
            }
            if self.pgdat_free_space_enough(dst) {
                // Workload changed: reset the hot threshold.
                self.numa.pgdat[dst].nbp_threshold = 0;
                if gen == PromotionPolicy::AutoThreshold {
                    self.vmstat.inc(dst, Vm::PgpromoteCandidateNrl);
                }
                return true;
            }
            let def_th = self.cfg.numa.hot_threshold_ms;
            let rate_limit = self.cfg.numa.promote_rate_limit_mbps << (20 - PAGE_SHIFT);
            if gen == PromotionPolicy::AutoThreshold {
                self.numa_promotion_adjust_threshold(dst, rate_limit, def_th, now);
            }
            let th = match self.numa.pgdat[dst].nbp_threshold {
                0 => def_th,
                t => t,
            };
            let latency = self.numa_hint_fault_latency(src, pfn, now);
            self.numa.hint_latency.record(latency, th);
            if latency >= th {
                return false;
            }
            if gen == PromotionPolicy::HotThreshold {
                return true;
            }
            return !self.numa_promotion_rate_limit(dst, rate_limit, 1, now);
        }
        // Classic NUMA balancing: private/shared, two-stage filter.
        let this = self.this_cpupid(tid);
        let frame = &mut self.nodes[src].frames[pfn as usize];
        let last = frame.atime;
        frame.atime = this;
        if self.numa_mode() & NUMA_BALANCING_MEMORY_TIERING == 0
            && !self.topo.is_toptier(NodeId(src as u8))
            && !cpupid_valid(last)
        {
            return false;
        }
        let t = &self.numa.tasks[tid];
        let seq = self.numa.mm[t.proc as usize].scan_seq;
        if (t.preferred_nid.is_none() || seq <= 4)
            && (cpupid_pid_unset(last) || self.cpupid_match_pid(tid, last))
        {
            return true;
        }
        if !cpupid_pid_unset(last) && cpupid_to_nid(last) != dst {
            return false;
        }
        // Private faults always migrate; a shared fault without a numa_group migrates too.
        true
    }

    /// `pgdat_free_space_enough`: some zone (highest first, class zone `ZONE_MOVABLE`) has
    /// free pages above `promo + max(1 GiB, node present / 16)`.
    fn pgdat_free_space_enough(&self, n: usize) -> bool {
        let node = &self.nodes[n];
        let gib = (1u64 << (30 - PAGE_SHIFT)) / self.cfg.numa.model_scale.max(1) as u64;
        let enough = gib.max(node.present >> 4);
        node.any_zone_above(|w| w.promo + enough, ZONE_MOVABLE)
    }

    /// `numa_hint_fault_latency`: time since the stored scan/fault time; stores now.
    fn numa_hint_fault_latency(&mut self, node: usize, pfn: u32, now: SimTime) -> u32 {
        let t = Self::now_ms(now) as u32 & PAGE_ACCESS_TIME_MASK;
        let f = &mut self.nodes[node].frames[pfn as usize];
        let last = f.atime;
        f.atime = t;
        t.wrapping_sub(last) & PAGE_ACCESS_TIME_MASK
    }

    /// `numa_promotion_adjust_threshold`.
    fn numa_promotion_adjust_threshold(
        &mut self,
        n: usize,
        rate_limit: u64,
        ref_th: u32,
        now: SimTime,
    ) {
        let now_ms = Self::now_ms(now) as u32;
        let period = self.cfg.numa.scan_period_max_ms;
        let start = self.numa.pgdat[n].nbp_th_start;
        if now_ms.wrapping_sub(start) <= period {
            return;
        }
        let nr_cand = self.vmstat.node(n, Vm::PgpromoteCandidate);
        let pg = &mut self.numa.pgdat[n];
        pg.nbp_th_start = now_ms;
        let ref_cand = rate_limit * period as u64 / 1000;
        let th = if pg.nbp_threshold != 0 {
            pg.nbp_threshold
        } else {
            ref_th
        };
        let m = promotion::threshold_move(nr_cand - pg.nbp_th_nr_cand, ref_cand);
        let th = promotion::step_threshold_ms(th, ref_th, m);
        pg.nbp_th_nr_cand = nr_cand;
        pg.nbp_threshold = th;
    }

    /// `numa_promotion_rate_limit`: count the candidate, then test the 1-second window.
    fn numa_promotion_rate_limit(
        &mut self,
        n: usize,
        rate_limit: u64,
        nr: u64,
        now: SimTime,
    ) -> bool {
        self.vmstat.add(n, Vm::PgpromoteCandidate, nr);
        let nr_cand = self.vmstat.node(n, Vm::PgpromoteCandidate);
        let now_ms = Self::now_ms(now) as u32;
        // MSEC_PER_SEC, and the pages allowed in it, divided by the experiment's model scale.
        let scale = self.cfg.numa.model_scale.max(1);
        let (window, limit) = (1000 / scale, rate_limit / scale as u64);
        self.numa.pgdat[n]
            .rate_window
            .exceeded(now_ms, nr_cand, window, limit)
    }

    /// `migrate_misplaced_folio_prepare`: the target must be above its high watermark + nr
    /// (`migrate_balanced_pgdat`); in tiering mode a failure wakes the target's kswapd. With
    /// `promote_ignore_watermarks` (seed 000's choice a) the check is skipped and the page is
    /// taken down to the min watermark, waking kswapd below low like a normal allocation.
    fn migrate_misplaced_prepare(&mut self, dst: usize, now: SimTime) -> bool {
        let node = &self.nodes[dst];
        if self.cfg.numa.promote_ignore_watermarks {
            if !node.any_zone_above(|w| w.low, ZONE_MOVABLE) {
                self.wakeup_kswapd(dst, now);
            }
            return self.nodes[dst].any_zone_above(|w| w.min, ZONE_MOVABLE);
        }
        // migrate_balanced_pgdat: any zone above high + nr (class zone ZONE_MOVABLE).
        if node.any_zone_above(|w| w.high + 1, ZONE_MOVABLE) {
            return true;
        }
        if self.numa_mode() & NUMA_BALANCING_MEMORY_TIERING != 0 {
            self.wakeup_kswapd(dst, now);
        }
        false
    }

    /// `migrate_misplaced_folio`: isolate, migrate (`MR_NUMA_MISPLACED`), count.
    /// `alloc_misplaced_dst_folio`: `__GFP_THISNODE` without reclaim or kswapd wakeups, the
    /// low watermark over the target's zones; `None` when none has room (the migration
    /// then fails, as `migrate_pages` does without a destination page).
    fn misplaced_dst_zone(&self, dst: usize) -> Option<usize> {
        let node = &self.nodes[dst];
        node.zone_above(|w| w.low, ZONE_MOVABLE).or_else(|| {
            // Seed 000's choice a takes the target down to its min watermark.
            self.cfg
                .numa
                .promote_ignore_watermarks
                .then(|| node.zone_above(|w| w.min, ZONE_MOVABLE))
                .flatten()
        })
    }

    fn migrate_misplaced_folio(
        &mut self,
        src: usize,
        pfn: u32,
        (dst, zone): (usize, usize),
    ) -> SimDuration {
        let new_pfn = self.isolate_and_migrate(src, pfn, (dst, zone));
        let tiering = self.numa_mode() & NUMA_BALANCING_MEMORY_TIERING != 0;
        let (src_top, dst_top) = (
            self.topo.is_toptier(NodeId(src as u8)),
            self.topo.is_toptier(NodeId(dst as u8)),
        );
        if tiering && src_top != dst_top {
            // folio_migrate_flags: crossing the top-tier boundary resets the cpupid/time field.
            self.nodes[dst].frames[new_pfn as usize].atime = CPUPID_UNSET;
        }
        self.vmstat.inc(dst, Vm::NumaPagesMigrated);
        if tiering && !src_top && dst_top {
            self.vmstat.inc(dst, Vm::PgpromoteSuccess);
        }
        self.cfg.costs.migrate_page
    }

    /// `task_numa_fault` + `task_numa_placement` + `update_task_scan_period`.
    #[allow(clippy::too_many_arguments)]
    fn task_numa_fault(
        &mut self,
        tid: usize,
        last_cpupid: u32,
        mem_node: usize,
        local: bool,
        failed: bool,
        now: SimTime,
    ) {
        if !self.topo.is_toptier(NodeId(mem_node as u8))
            && (self.numa_mode() & NUMA_BALANCING_MEMORY_TIERING != 0 || !cpupid_valid(last_cpupid))
        {
            return;
        }
        let priv_ = if last_cpupid == CPUPID_UNSET {
            true
        } else {
            self.cpupid_match_pid(tid, last_cpupid)
        };
        if Self::now_ms(now) > self.numa.tasks[tid].migrate_retry_ms {
            self.task_numa_placement(tid, now);
        }
        let t = &mut self.numa.tasks[tid];
        if failed {
            t.locality[2] += 1;
        }
        t.buf[mem_node] += 1;
        if priv_ {
            t.fault_priv += 1;
        } else {
            t.fault_shared += 1;
        }
        t.locality[local as usize] += 1;
    }

    fn task_numa_placement(&mut self, tid: usize, now: SimTime) {
        let proc = self.numa.tasks[tid].proc as usize;
        let seq = self.numa.mm[proc].scan_seq;
        if self.numa.tasks[tid].seq_seen == seq {
            return;
        }
        let t = &mut self.numa.tasks[tid];
        t.seq_seen = seq;
        let (shared, private) = (t.fault_shared, t.fault_priv);
        t.fault_shared = 0;
        t.fault_priv = 0;
        for n in 0..t.faults_mem.len() {
            t.faults_mem[n] = t.faults_mem[n] / 2 + t.buf[n];
            t.buf[n] = 0;
        }
        let best = (0..t.faults_mem.len()).max_by_key(|&n| (t.faults_mem[n], usize::MAX - n));
        if let Some(b) = best.filter(|&b| t.faults_mem[b] > 0) {
            t.preferred_nid = Some(b);
        }
        self.update_task_scan_period(tid, shared, private, now);
        // numa_migrate_preferred: once a preferred node exists, placement waits
        // min(1 s, period / 16) before it may run again (numa_migrate_retry).
        let t = &mut self.numa.tasks[tid];
        if t.preferred_nid.is_some() {
            t.migrate_retry_ms = Self::now_ms(now) + (t.period_ms / 16).min(1000);
        }
    }

    /// `update_task_scan_period`: aim for 70 % local (10 slots, threshold 7).
    fn update_task_scan_period(&mut self, tid: usize, shared: u64, private: u64, now: SimTime) {
        let proc = self.numa.tasks[tid].proc;
        let (min, max) = (self.task_scan_min(proc), self.task_scan_max(proc));
        let t = &mut self.numa.tasks[tid];
        let [remote, local, failed] = t.locality;
        if local + shared == 0 || failed > 0 {
            // Scan slower; the fault locality is kept (the kernel clears it only below).
            t.period_ms = max.min(t.period_ms * 2);
            self.numa.mm[proc as usize].next_scan_ms = Self::now_ms(now) + t.period_ms;
            return;
        }
        t.locality = [0; 3];
        let slot = t.period_ms.div_ceil(NUMA_PERIOD_SLOTS) as i64;
        let lr = NUMA_PERIOD_SLOTS * local / (local + remote);
        let ps = NUMA_PERIOD_SLOTS * private / (private + shared).max(1);
        let diff = if ps >= NUMA_PERIOD_THRESHOLD {
            (ps - NUMA_PERIOD_THRESHOLD).max(1) as i64 * slot
        } else if lr >= NUMA_PERIOD_THRESHOLD {
            (lr - NUMA_PERIOD_THRESHOLD).max(1) as i64 * slot
        } else {
            -((NUMA_PERIOD_THRESHOLD - lr.max(ps)) as i64) * slot
        };
        t.period_ms = (t.period_ms as i64 + diff).clamp(min as i64, max as i64) as u64;
    }

    /// The hot threshold in effect on node `n` (ms), for the timeline.
    pub fn effective_hot_threshold(&self, n: usize) -> u32 {
        match self.numa.pgdat.get(n).map_or(0, |p| p.nbp_threshold) {
            0 => self.cfg.numa.hot_threshold_ms,
            t => t,
        }
    }
}

#[cfg(test)]
mod hint_latency_tests {
    use super::HintLatency;

    #[test]
    fn latencies_fall_in_log2_buckets_and_the_threshold_splits_them() {
        let mut h = HintLatency::default();
        for (lat, th) in [
            (0, 1000),
            (1, 1000),
            (999, 1000),
            (1000, 1000),
            (5000, 1000),
        ] {
            h.record(lat, th);
        }
        h.record((1 << 21) - 1, 1000);
        assert_eq!(h.log2_ms[0], 1);
        assert_eq!(h.log2_ms[1], 1);
        assert_eq!(h.log2_ms[10], 2, "999 and 1000 ms are in [512, 1024)");
        assert_eq!(h.log2_ms[13], 1, "5000 ms is in [4096, 8192)");
        assert_eq!(h.log2_ms[21], 1, "the largest 21-bit latency fits");
        assert_eq!(h.under_threshold, 3);
        let s = h.summary().unwrap();
        assert_eq!(s.tested, 6);
        assert!((s.under_threshold_pct - 50.0).abs() < 1e-9);
        assert_eq!(s.median_below_ms, 1024);
        assert_eq!(s.histogram.len(), 5);
        assert_eq!((s.histogram[2].from_ms, s.histogram[2].to_ms), (512, 1024));
        assert!(HintLatency::default().summary().is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::NUMA_BALANCING_NORMAL;
    use rand_core::SeedableRng;
    use tiermem_core::config::{KernelConfig, PromotionPolicy};
    use tiermem_core::mempolicy::MemPolicy;
    use tiermem_core::topology::{MachineConfig, Topology};

    #[test]
    fn cpupid_encoding() {
        assert!(cpupid_pid_unset(CPUPID_UNSET));
        assert!(!cpupid_valid(CPUPID_UNSET));
        let c = (5 << CPU_BITS) | 1;
        assert!(!cpupid_pid_unset(c) && cpupid_valid(c));
        assert_eq!(cpupid_to_nid(c), 1);
    }

    /// Nodes 0 and 1: DRAM with CPUs on two sockets; node 2: CPU-less PMEM on socket 0.
    fn kernel(mode: u32, promotion: PromotionPolicy, dram: &str) -> Kernel {
        let text = format!(
            "name = \"t\"\n[[nodes]]\nid = 0\ncpus = 2\nsocket = 0\ncapacity = \"{dram}\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
             [[nodes]]\nid = 1\ncpus = 2\nsocket = 1\ncapacity = \"{dram}\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
             [[nodes]]\nid = 2\nsocket = 0\ncapacity = \"1GiB\"\nkind = \"pmem\"\nread_latency = \"300ns\"\nread_bandwidth = \"5GB/s\"\n"
        );
        let m: MachineConfig = toml::from_str(&text).unwrap();
        let topo = Topology::new(&m).unwrap();
        let mut cfg = KernelConfig {
            numa_balancing: mode,
            demotion_enabled: true,
            ..Default::default()
        };
        cfg.numa.promotion = promotion;
        Kernel::new(
            topo,
            cfg,
            rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1),
        )
    }

    fn at(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000_000)
    }

    /// A process running on `cpu` with pages `[0, n)`; page i placed on `place(i)`.
    fn process(k: &mut Kernel, cpu: u8, n: u32, place: impl Fn(u32) -> u8) -> (u16, usize) {
        let p = k
            .add_process(
                "p".into(),
                NodeId(cpu),
                MemPolicy::default(),
                vec![("m".into(), n, None)],
            )
            .unwrap();
        for i in 0..n {
            let node = place(i);
            k.procs[p as usize].policy = MemPolicy::new(PolicyMode::Bind, vec![NodeId(node)]);
            k.handle_fault(p, i, true, NodeId(cpu), at(0)).unwrap();
        }
        k.procs[p as usize].policy = MemPolicy::default();
        let tid = k.numa_register_task(p, NodeId(cpu), at(0));
        (p, tid)
    }

    fn node_of(k: &Kernel, p: u16, i: u32) -> usize {
        pte_node(k.procs[p as usize].ptes[i as usize])
    }

    fn protnone(k: &Kernel, p: u16, i: u32) -> bool {
        k.procs[p as usize].ptes[i as usize] & PTE_PROTNONE != 0
    }

    /// Fill every zone of node `n` to exactly its high watermark (promotion then fails the
    /// prepare check, which passes if any one zone is above high + 1 + its lowmem_reserve).
    fn fill_to_high(k: &mut Kernel, n: usize) {
        for z in 0..k.nodes[n].zones.len() {
            let zone = &k.nodes[n].zones[z];
            let take = zone.free.saturating_sub(zone.wmark.high);
            k.nodes[n].take_kernel_pages_in(z, take);
        }
    }

    #[test]
    fn tiering_only_mode_never_scans_top_tier_pages() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        // Two threads so the "already on the task's node" skip does not apply.
        let (p, _) = process(&mut k, 0, 64, |i| if i < 32 { 1 } else { 2 });
        let t2 = k.numa_register_task(p, NodeId(0), at(0));
        k.task_numa_work(t2, at(2000));
        for i in 0..64 {
            assert_eq!(
                protnone(&k, p, i),
                i >= 32,
                "page {i} on node {}",
                node_of(&k, p, i)
            );
        }
        assert_eq!(k.vmstat.total(Vm::NumaPteUpdates), 32);
        // With NORMAL on as well, top-tier pages are scanned too.
        let mut k = kernel(3, PromotionPolicy::AutoThreshold, "256MiB");
        let (p, _) = process(&mut k, 0, 64, |i| if i < 32 { 1 } else { 2 });
        let t2 = k.numa_register_task(p, NodeId(0), at(0));
        k.task_numa_work(t2, at(2000));
        assert!((0..64).all(|i| protnone(&k, p, i)));
    }

    #[test]
    fn scanner_stores_scan_time_in_slow_tier_pages() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        let (p, tid) = process(&mut k, 0, 8, |_| 2);
        k.task_numa_work(tid, at(1234));
        let pfn = pte_pfn(k.procs[p as usize].ptes[0]);
        // jiffies_to_msecs(jiffies): 1234 ms is in the jiffy that starts at 1232 ms (HZ = 250).
        assert_eq!(k.nodes[2].frames[pfn as usize].atime, 1232);
    }

    #[test]
    fn latency_test_also_stores_the_fault_time() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::HotThreshold,
            "256MiB",
        );
        fill_to_high(&mut k, 0); // no promotion, no free-space bypass
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(1500)); // latency 500 ms: hot
        let pfn = pte_pfn(k.procs[p as usize].ptes[0]);
        assert_eq!(
            k.nodes[2].frames[pfn as usize].atime, 1500,
            "the fault time is stored"
        );
        // A second fault before the next scan measures fault-to-fault time.
        k.procs[p as usize].ptes[0] |= PTE_PROTNONE;
        k.numa_hint_fault(tid, p, 0, false, at(1600));
        assert_eq!(k.nodes[2].frames[pfn as usize].atime, 1600);
    }

    #[test]
    fn rate_limit_counts_candidates_not_promotions() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::RateLimit,
            "256MiB",
        );
        fill_to_high(&mut k, 0); // every promotion fails in prepare
        let (p, tid) = process(&mut k, 0, 16, |_| 2);
        k.task_numa_work(tid, at(1000));
        for i in 0..16 {
            k.numa_hint_fault(tid, p, i, false, at(1010));
        }
        assert_eq!(k.vmstat.node(0, Vm::PgpromoteCandidate), 16);
        assert_eq!(k.vmstat.total(Vm::PgpromoteSuccess), 0);
        assert!(
            k.kswapd[0].awake,
            "a failed prepare wakes the target's kswapd in tiering mode"
        );
        assert!((0..16).all(|i| node_of(&k, p, i) == 2));
    }

    #[test]
    fn rate_limit_stops_candidates_over_the_limit() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::RateLimit,
            "256MiB",
        );
        k.cfg.numa.promote_rate_limit_mbps = 0; // limit = 0 pages/s: everything over
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(1010));
        assert_eq!(node_of(&k, p, 0), 2);
        assert_eq!(k.vmstat.node(0, Vm::PgpromoteCandidate), 1);
    }

    #[test]
    fn free_space_bypass_skips_threshold_and_rate_limit() {
        // A 4 GiB DRAM node, almost empty: free > promo + max(1 GiB, present/16).
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::AutoThreshold,
            "4GiB",
        );
        k.cfg.numa.promote_rate_limit_mbps = 0;
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(9000)); // 8 s latency: cold by the threshold
        assert_eq!(node_of(&k, p, 0), 0, "promoted anyway");
        assert_eq!(k.vmstat.total(Vm::PgpromoteSuccess), 1);
        assert_eq!(
            k.vmstat.total(Vm::PgpromoteCandidate),
            0,
            "no rate-limit accounting"
        );
        assert_eq!(k.vmstat.total(Vm::PgpromoteCandidateNrl), 1);
    }

    #[test]
    fn cold_pages_are_not_promoted_hot_ones_are() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::HotThreshold,
            "256MiB",
        );
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(3000)); // 2000 ms ≥ 1000 ms: cold
        k.numa_hint_fault(tid, p, 1, false, at(3000 - 1500)); // 500 ms: hot
        assert_eq!(node_of(&k, p, 0), 2);
        assert_eq!(node_of(&k, p, 1), 0);
        // The 5.18 (MRU) logic promotes any page touched after a scan.
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::Mru,
            "256MiB",
        );
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(30_000));
        assert_eq!(node_of(&k, p, 0), 0);
    }

    #[test]
    fn promotion_targets_only_the_faulting_cpus_node() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::HotThreshold,
            "256MiB",
        );
        // The task runs on node 1 (socket 1); its page lives on node 2 (socket 0's PMEM).
        let (p, tid) = process(&mut k, 1, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(1100));
        assert_eq!(
            node_of(&k, p, 0),
            1,
            "promoted to the faulting CPU's node, not the nearest DRAM"
        );
        assert_eq!(k.vmstat.node(1, Vm::PgpromoteSuccess), 1);
    }

    #[test]
    fn kswapd_balances_to_the_promo_watermark_in_tiering_mode() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        let w = k.nodes[0].wmark;
        assert!(w.promo > w.high);
        // Every zone just above its high watermark, below promo.
        for z in 0..k.nodes[0].zones.len() {
            let zone = &k.nodes[0].zones[z];
            let take = zone.free - (zone.wmark.high + zone.lowmem_reserve[ZONE_MOVABLE] + 1);
            k.nodes[0].take_kernel_pages_in(z, take);
        }
        assert!(
            !k.pgdat_balanced(0),
            "above high but below promo is not balanced in tiering mode"
        );
        k.numa_balancing = 0;
        assert!(k.pgdat_balanced(0));
    }

    #[test]
    fn threshold_adjusts_by_an_eighth_within_bounds() {
        let mut k = kernel(
            NUMA_BALANCING_MEMORY_TIERING,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        let rate = 100u64; // pages/s
                           // Too many candidates in a period: the threshold drops by def/8 each period, to def/8.
        let mut t = 0u64;
        for _ in 0..20 {
            t += 60_004; // one adjust period (60 s) and one jiffy
            k.vmstat.add(0, Vm::PgpromoteCandidate, rate * 60 * 2);
            k.numa_promotion_adjust_threshold(0, rate, 1000, at(t));
        }
        assert_eq!(k.numa.pgdat[0].nbp_threshold, 125);
        // Too few: it rises to 2 × def.
        for _ in 0..20 {
            t += 60_004; // one adjust period (60 s) and one jiffy
            k.numa_promotion_adjust_threshold(0, rate, 1000, at(t));
        }
        assert_eq!(k.numa.pgdat[0].nbp_threshold, 2000);
        // Within ±10 % of the reference: unchanged.
        t += 60_004; // one adjust period (60 s) and one jiffy
        k.vmstat.add(0, Vm::PgpromoteCandidate, rate * 60);
        k.numa_promotion_adjust_threshold(0, rate, 1000, at(t));
        assert_eq!(k.numa.pgdat[0].nbp_threshold, 2000);
    }

    #[test]
    fn normal_mode_does_not_promote_into_a_full_node_nor_wake_kswapd() {
        let mut k = kernel(
            NUMA_BALANCING_NORMAL,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        fill_to_high(&mut k, 0);
        let (p, tid) = process(&mut k, 0, 4, |_| 2);
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(1010)); // first fault: cpupid invalid
        k.procs[p as usize].ptes[0] |= PTE_PROTNONE;
        k.numa_hint_fault(tid, p, 0, false, at(1020)); // second: would migrate, node full
        assert_eq!(node_of(&k, p, 0), 2);
        assert!(
            !k.kswapd[0].awake,
            "without the tiering bit a failed prepare does not wake kswapd"
        );
    }

    #[test]
    fn normal_mode_moves_remote_pages_to_the_task_after_two_faults() {
        let mut k = kernel(
            NUMA_BALANCING_NORMAL,
            PromotionPolicy::AutoThreshold,
            "256MiB",
        );
        let (p, tid) = process(&mut k, 0, 4, |_| 1); // remote DRAM
        k.task_numa_work(tid, at(1000));
        k.numa_hint_fault(tid, p, 0, false, at(1010));
        assert_eq!(
            node_of(&k, p, 0),
            0,
            "top-tier pages: first fault by this task migrates early in life"
        );
        assert_eq!(k.vmstat.total(Vm::NumaPagesMigrated), 1);
        assert_eq!(
            k.vmstat.total(Vm::PgpromoteSuccess),
            0,
            "DRAM to DRAM is not a promotion"
        );
    }
}
