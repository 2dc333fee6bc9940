//! The NUMA-balancing scanner: `task_tick_numa` → `task_numa_work` → `change_prot_numa`
//! (kernel/sched/fair.c, mm/mempolicy.c, mm/mprotect.c), with the per-VMA scan state of
//! Linux 6.4+ (`vma->numab_state`).
//!
//! What decides when and what is scanned:
//!
//! * **when**: a task's CPU runtime (not wall time) must pass `node_stamp + numa_scan_period`
//!   and the mm's `numa_next_scan` must have come. Each scan then adds 32× its own CPU time
//!   to `node_stamp` (the 3 % overhead cap): on a machine where scanning is slow (a VM
//!   under software emulation) this, not the scan period, spaces the scans.
//! * **what**: VMAs from `numa_scan_offset` on, each at most once per scan sequence
//!   (`prev_scan_seq`), new VMAs only after `scan_delay` (`next_scan`), and after a VMA's
//!   first two sequences only if the scanning thread faulted in it recently
//!   (`vma_is_accessed`: its PID's bit in `pids_active`, which rotates every
//!   4 × `scan_delay`), or the scan already started inside it, or it has been skipped for
//!   more sequences than the process has threads. When every VMA left was skipped for the
//!   PID filter alone, one VMA is scanned anyway (the forced retry).
//! * **how much**: `scan_size_mb` of pages in chunks that end on 2 MiB boundaries, a
//!   chunk counting only if it changed a PTE; at most 8× that of virtual range.
//!
//! The scanning thread pays the scan's CPU time. Simplifications: VMAs never change after
//! the process is built (no munmap), so a VMA is its index; `hash_32(pid, 6)` uses the
//! simulated task's pid.

use crate::mm::mem::*;
use crate::mm::Kernel;
use crate::mm::{HPAGE_PAGES, NUMA_BALANCING_NORMAL, TICK_NS};
use crate::vmstat::Vm;
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SHIFT};

/// `vma->numab_state` (include/linux/mm_types.h).
#[derive(Clone, Debug, Default)]
pub struct VmaNumab {
    /// `numa_scan_seq` when the VMA was first seen.
    pub start_scan_seq: u32,
    /// No scan before this time (ms): a new VMA waits `scan_delay`.
    pub next_scan_ms: u64,
    /// When `pids_active` rotates next (ms).
    pub pids_active_reset_ms: u64,
    /// PIDs (hashed to 64 bits) that faulted in the VMA: `[0]` the previous window, `[1]`
    /// the current one.
    pub pids_active: [u64; 2],
    /// The sequence in which the VMA was last fully scanned.
    pub prev_scan_seq: u32,
}

/// `hash_32(val, bits)` (include/linux/hash.h): multiply by `GOLDEN_RATIO_32`, keep the top bits.
fn hash_32(val: u32, bits: u32) -> u32 {
    val.wrapping_mul(0x61C8_8647) >> (32 - bits)
}

/// The task's bit in `pids_active` (`ilog2(BITS_PER_LONG)` = 6 bits on 64-bit).
pub(crate) fn pid_bit(pid: u32) -> u64 {
    1u64 << hash_32(pid, 6)
}

/// Why a VMA was passed over (the kernel's `sched_skip_vma_numa` reasons, those that apply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    ScanDelay,
    SeqCompleted,
    PidInactive,
}

/// Where a scan stopped.
enum Stop {
    /// The budget ran out inside the address space, at this page-table index.
    Budget(u64),
    /// A forced scan of one VMA ended at this index.
    Forced(u64),
    /// The walk went past the last VMA.
    End,
}

impl Kernel {
    /// `task_tick_numa`: called at each scheduler tick with the task's CPU runtime. Returns the
    /// CPU time the task spends in `task_numa_work` (run on return to user space).
    pub fn task_tick_numa(&mut self, tid: usize, runtime_ns: u64, now: SimTime) -> SimDuration {
        if self.numa_mode() == 0 {
            return SimDuration::ZERO;
        }
        let proc = self.numa.tasks[tid].proc;
        if !self.procs[proc as usize].alive {
            return SimDuration::ZERO;
        }
        let period_ns = self.numa.tasks[tid].period_ms * 1_000_000;
        let t = &self.numa.tasks[tid];
        if runtime_ns <= t.node_stamp_ns + period_ns {
            return SimDuration::ZERO;
        }
        if t.node_stamp_ns == 0 {
            let start = self.task_scan_min(proc);
            self.numa.tasks[tid].period_ms = start;
        }
        self.numa.tasks[tid].node_stamp_ns += period_ns;
        if Self::now_ms(now) >= self.numa.mm[proc as usize].next_scan_ms {
            self.task_numa_work(tid, now)
        } else {
            SimDuration::ZERO
        }
    }

    /// `task_numa_work`: claim the scan (`numa_next_scan`), walk the VMAs from
    /// `numa_scan_offset` marking up to `scan_size_mb` of pages PROT_NONE, then apply the
    /// overhead cap. Returns the scan's CPU time.
    pub(crate) fn task_numa_work(&mut self, tid: usize, now: SimTime) -> SimDuration {
        let now_ms = Self::now_ms(now);
        let proc = self.numa.tasks[tid].proc as usize;
        let delay = self.cfg.numa.scan_delay_ms as u64;
        {
            let mm = &mut self.numa.mm[proc];
            if mm.next_scan_ms == 0 {
                mm.next_scan_ms = now_ms + delay;
            }
            if now_ms < mm.next_scan_ms {
                return SimDuration::ZERO;
            }
        }
        if self.numa.tasks[tid].period_ms == 0 {
            self.numa.tasks[tid].period_ms = self.task_scan_min(proc as u16);
        }
        let period = self.numa.tasks[tid].period_ms;
        self.numa.mm[proc].next_scan_ms = now_ms + period;
        self.numa.tasks[tid].node_stamp_ns += 2 * TICK_NS;

        let scan_pages = (self.cfg.numa.scan_size_mb as i64) << (20 - PAGE_SHIFT);
        let mut budget = Budget {
            pages: scan_pages,
            virtpages: 8 * scan_pages,
            visited: 0,
            updated: 0,
            skipped_for_pid: false,
        };
        let nvmas = self.procs[proc].vmas.len();
        if self.numa.mm[proc].numab.len() < nvmas {
            self.numa.mm[proc].numab.resize(nvmas, None);
        }
        let mut stop = self.scan_vmas(tid, proc, now_ms, false, &mut budget);
        if matches!(stop, Stop::End) && budget.skipped_for_pid {
            // VMAs were skipped for the PID filter and none is left: scan one anyway.
            stop = self.scan_vmas(tid, proc, now_ms, true, &mut budget);
        }
        let mm = &mut self.numa.mm[proc];
        match stop {
            Stop::Budget(at) | Stop::Forced(at) => mm.scan_offset = at,
            Stop::End => {
                // reset_ptenuma_scan
                mm.scan_offset = 0;
                mm.scan_seq = mm.scan_seq.wrapping_add(1);
            }
        }
        let c = &self.cfg.costs;
        let cost =
            SimDuration(c.numa_scan_pte.0 * budget.visited + c.numa_pte_update.0 * budget.updated);
        // Overhead cap: 32× the work's CPU time is added to node_stamp (≈ 3 % of runtime).
        self.numa.tasks[tid].node_stamp_ns += 32 * cost.ps() / 1000;
        cost
    }

    /// One walk over the VMAs from `numa_scan_offset` (the body of `task_numa_work` between
    /// `retry_pids` and `out`). `forced`: the retry that ignores the PID filter and scans a
    /// single VMA.
    fn scan_vmas(
        &mut self,
        tid: usize,
        proc: usize,
        now_ms: u64,
        forced: bool,
        b: &mut Budget,
    ) -> Stop {
        let total = self.procs[proc].ptes.len() as u64;
        let mut start = self.numa.mm[proc].scan_offset.min(total);
        let mut first = self.procs[proc]
            .vmas
            .iter()
            .position(|v| (v.pte_base + v.pages) as u64 > start);
        if first.is_none() {
            // Past the last VMA: a new sequence starts at the beginning.
            let mm = &mut self.numa.mm[proc];
            mm.scan_offset = 0;
            mm.scan_seq = mm.scan_seq.wrapping_add(1);
            start = 0;
            first = (!self.procs[proc].vmas.is_empty()).then_some(0);
        }
        let Some(first) = first else {
            return Stop::End;
        };
        let target_node =
            (self.numa.mm[proc].users == 1).then_some(self.numa.tasks[tid].cpu_node.idx());
        for vi in first..self.procs[proc].vmas.len() {
            let (vstart, vend) = {
                let v = &self.procs[proc].vmas[vi];
                (v.pte_base as u64, (v.pte_base + v.pages) as u64)
            };
            match self.numab_check(tid, proc, vi, now_ms, forced) {
                Err(Skip::SeqCompleted) => {
                    self.numa.mm[proc].scan_offset = vend;
                    continue;
                }
                Err(Skip::PidInactive) => {
                    b.skipped_for_pid = true;
                    continue;
                }
                Err(Skip::ScanDelay) => continue,
                Ok(()) => {}
            }
            start = start.max(vstart);
            loop {
                // ALIGN(start + pages, HPAGE_SIZE) in virtual addresses: VMAs start on 1 GiB
                // boundaries, so align the offset within the VMA.
                let off = start - vstart + b.pages.max(0) as u64;
                let end = (vstart + off.next_multiple_of(HPAGE_PAGES)).min(vend);
                let n =
                    self.change_prot_numa(proc, start, end, target_node, now_ms, &mut b.visited);
                b.updated += n;
                if n > 0 {
                    b.pages -= (end - start) as i64;
                }
                b.virtpages -= (end - start) as i64;
                start = end;
                if b.pages <= 0 || b.virtpages <= 0 {
                    return Stop::Budget(start);
                }
                if end == vend {
                    break;
                }
            }
            let seq = self.numa.mm[proc].scan_seq;
            if let Some(st) = self.numa.mm[proc].numab[vi].as_mut() {
                st.prev_scan_seq = seq;
            }
            if forced {
                return Stop::Forced(start);
            }
        }
        Stop::End
    }

    /// The per-VMA checks of `task_numa_work`: create `numab_state`, wait out a new VMA's
    /// scan delay, rotate `pids_active`, skip a VMA already scanned in this sequence or not
    /// accessed by this task (`vma_is_accessed`).
    fn numab_check(
        &mut self,
        tid: usize,
        proc: usize,
        vi: usize,
        now_ms: u64,
        forced: bool,
    ) -> Result<(), Skip> {
        let delay = self.cfg.numa.scan_delay_ms as u64;
        let reset_period = 4 * delay; // VMA_PID_RESET_PERIOD
        let seq = self.numa.mm[proc].scan_seq;
        let offset = self.numa.mm[proc].scan_offset;
        let vstart = self.procs[proc].vmas[vi].pte_base as u64;
        let threads = self.numa.mm[proc].users;
        let pid = self.numa.tasks[tid].pid;
        let st = self.numa.mm[proc].numab[vi].get_or_insert_with(|| VmaNumab {
            start_scan_seq: seq,
            next_scan_ms: now_ms + delay,
            pids_active_reset_ms: now_ms + delay + reset_period,
            pids_active: [0; 2],
            prev_scan_seq: seq.wrapping_sub(1),
        });
        if seq != 0 && now_ms < st.next_scan_ms {
            return Err(Skip::ScanDelay);
        }
        if seq != 0 && now_ms > st.pids_active_reset_ms {
            st.pids_active_reset_ms += reset_period;
            st.pids_active = [st.pids_active[1], 0];
        }
        if st.prev_scan_seq == seq {
            return Err(Skip::SeqCompleted);
        }
        let accessed = seq.wrapping_sub(st.start_scan_seq) < 2
            || (st.pids_active[0] | st.pids_active[1]) & pid_bit(pid) != 0
            || offset > vstart
            || seq > st.prev_scan_seq.wrapping_add(threads);
        if !forced && !accessed {
            return Err(Skip::PidInactive);
        }
        Ok(())
    }

    /// `vma_set_access_pid_bit` (from `numa_migrate_check`, at every hint fault).
    pub(crate) fn vma_set_access_pid_bit(&mut self, tid: usize, proc: usize, idx: u32) {
        let pid = self.numa.tasks[tid].pid;
        let Some(vi) = self.procs[proc]
            .vmas
            .iter()
            .position(|v| idx >= v.pte_base && idx < v.pte_base + v.pages)
        else {
            return;
        };
        if let Some(Some(st)) = self.numa.mm[proc].numab.get_mut(vi) {
            st.pids_active[1] |= pid_bit(pid);
        }
    }

    /// `change_prot_numa` over page-table indices `[start, end)`: mark eligible present pages
    /// PROT_NONE; store the scan time in slow-tier pages when tiering is on. Returns PTEs updated.
    fn change_prot_numa(
        &mut self,
        proc: usize,
        start: u64,
        end: u64,
        target_node: Option<usize>,
        now_ms: u64,
        visited: &mut u64,
    ) -> u64 {
        let mode = self.numa_mode();
        let mut updated = 0;
        for idx in start..end {
            let pte = self.procs[proc].ptes[idx as usize];
            if pte & PTE_PRESENT == 0 {
                continue;
            }
            *visited += 1;
            // change_pte_range skips KSM pages and the zero page (write-protected here).
            if pte & (PTE_PROTNONE | PTE_RDONLY) != 0 {
                continue;
            }
            let nid = pte_node(pte);
            if target_node == Some(nid) {
                continue;
            }
            let toptier = self.topo.is_toptier(NodeId(nid as u8));
            if mode & NUMA_BALANCING_NORMAL == 0 && toptier {
                // Tiering-only mode never scans top-tier pages.
                continue;
            }
            if self.use_access_time(nid) {
                self.nodes[nid].frames[pte_pfn(pte) as usize].atime =
                    now_ms as u32 & PAGE_ACCESS_TIME_MASK;
            }
            self.procs[proc].ptes[idx as usize] = pte | PTE_PROTNONE;
            self.note_will_fault(proc, idx as u32);
            self.vmstat.inc(nid, Vm::NumaPteUpdates);
            updated += 1;
        }
        updated
    }
}

/// What one `task_numa_work` may still do, and what it did.
struct Budget {
    pages: i64,
    virtpages: i64,
    visited: u64,
    updated: u64,
    /// `vma_pids_skipped`: a VMA was passed over for the PID filter alone.
    skipped_for_pid: bool,
}
