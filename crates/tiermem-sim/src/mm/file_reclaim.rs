//! Reclaim of a node that holds page cache (`mm/vmscan.c` of v6.12, read in
//! docs/page-cache-kernel.md §3): `prepare_scan_control`'s deactivation bits, cache-trim
//! mode and tiny-file test, `get_scan_count`'s balance between the anon and file lists,
//! `shrink_lruvec`'s proportional scan of the four lists, and the page-cache side of
//! `shrink_active_list` / `shrink_folio_list`, with `lru_note_cost`'s decaying costs.
//!
//! A node with no page cache is reclaimed as before by [`Kernel::shrink_node`]'s anon path
//! (`SCAN_ANON`, see docs/model.md); this module takes over as soon as the node holds a
//! page-cache page.
//!
//! Left out (stated in the module doc of [`super::filemap`] too): kswapd's `pageout()` of
//! dirty page cache (the second meeting with `PG_reclaim` on a node flagged `PGDAT_DIRTY`):
//! dirty folios are activated with `PG_reclaim` and wait for the flusher, which a batch of
//! nothing but dirty folios wakes (`wakeup_flusher_threads`); `PG_writeback` stalls;
//! `no_cache_trim_mode` and the `force_deactivate` retry; memcg protection; `VM_EXEC`
//! rotation (no mapped files).

use super::vmscan::{Reclaimer, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use super::*;

/// `vm_swappiness` (default 60).
pub const SWAPPINESS: u64 = 60;
/// `MAX_SWAPPINESS`: the anon and file priorities sum to it.
pub const MAX_SWAPPINESS: u64 = 200;

/// `sc->may_deactivate`: which active lists a reclaim run may shrink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MayDeactivate {
    pub anon: bool,
    pub file: bool,
}

/// `enum scan_balance`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanBalance {
    Equal,
    Fract { anon: u64, file: u64 },
    Anon,
    File,
}

/// The four lists in `for_each_evictable_lru` order.
const LISTS: [Lru; 4] = [
    Lru::InactiveAnon,
    Lru::ActiveAnon,
    Lru::InactiveFile,
    Lru::ActiveFile,
];

impl Kernel {
    /// `prepare_scan_control`'s `may_deactivate`: the file lists when a refault activated a
    /// page since the last reclaim run (`WORKINGSET_ACTIVATE_FILE` against its snapshot) or
    /// the inactive file list is low; the anon lists when the inactive anon list is low
    /// (anon refaults are not tracked: no swap cache shadows).
    pub fn may_deactivate(&self, n: usize) -> MayDeactivate {
        let node = &self.nodes[n];
        MayDeactivate {
            anon: node.inactive_list_is_low(Lru::InactiveAnon),
            file: self.vmstat.node(n, Vm::WorkingsetActivateFile) != node.refaults_snapshot
                || node.inactive_list_is_low(Lru::InactiveFile),
        }
    }

    /// `snapshot_refaults`, when a reclaim run ends (`do_try_to_free_pages`, kswapd going to
    /// sleep).
    pub(super) fn snapshot_refaults(&mut self, n: usize) {
        self.nodes[n].refaults_snapshot = self.vmstat.node(n, Vm::WorkingsetActivateFile);
    }

    /// `get_scan_count`'s choice, first match wins: no swap space and no demotion →
    /// `SCAN_FILE`; priority 0 → `SCAN_EQUAL`; `file_is_tiny` (file + free pages within
    /// the node's high watermarks, the inactive anon list not low and not empty at this
    /// priority) → `SCAN_ANON`; `cache_trim_mode` (inactive file list non-empty at this
    /// priority and the file lists not to be deactivated) → `SCAN_FILE`; else `SCAN_FRACT`
    /// with the anon and file priorities from swappiness and the reclaim costs.
    pub fn scan_balance(&self, n: usize, priority: u8, may: MayDeactivate) -> ScanBalance {
        let node = &self.nodes[n];
        if !self.can_reclaim_anon(n) {
            return ScanBalance::File;
        }
        if priority == 0 {
            return ScanBalance::Equal;
        }
        let high: u64 = node.zones.iter().map(|z| z.wmark.high).sum();
        let file_is_tiny = node.file_lru_pages() + node.free <= high
            && !may.anon
            && node.lru_len(Lru::InactiveAnon) >> priority != 0;
        if file_is_tiny {
            return ScanBalance::Anon;
        }
        if node.lru_len(Lru::InactiveFile) >> priority != 0 && !may.file {
            return ScanBalance::File;
        }
        // Twice the total cost plus each type's own: a type's priority falls as its cost
        // rises, but not below a third of what swappiness gives it.
        let total = node.anon_cost + node.file_cost;
        let anon_cost = total + node.anon_cost;
        let file_cost = total + node.file_cost;
        let total = anon_cost + file_cost;
        ScanBalance::Fract {
            anon: SWAPPINESS * (total + 1) / (anon_cost + 1),
            file: (MAX_SWAPPINESS - SWAPPINESS) * (total + 1) / (file_cost + 1),
        }
    }

    /// `get_scan_count`: pages to scan on each list at this priority (`size >> priority`,
    /// shared by the balance).
    pub fn get_scan_count(&self, n: usize, priority: u8, may: MayDeactivate) -> [u64; 4] {
        let balance = self.scan_balance(n, priority, may);
        LISTS.map(|lru| {
            let scan = self.nodes[n].lru_len(lru) >> priority;
            match balance {
                ScanBalance::Equal => scan,
                ScanBalance::Fract { anon, file } => {
                    let share = if lru.is_file() { file } else { anon };
                    scan * share / (anon + file)
                }
                ScanBalance::Anon if lru.is_file() => 0,
                ScanBalance::File if !lru.is_file() => 0,
                ScanBalance::Anon | ScanBalance::File => scan,
            }
        })
    }

    /// `lru_note_cost`: `32 × pages written + pages rotated` onto the type's cost; when the
    /// two costs together pass a quarter of the node's LRU pages, both halve.
    pub(super) fn lru_note_cost(&mut self, n: usize, file: bool, nr_io: u64, nr_rotated: u64) {
        let node = &mut self.nodes[n];
        let cost = SWAP_CLUSTER_MAX * nr_io + nr_rotated;
        if file {
            node.file_cost += cost;
        } else {
            node.anon_cost += cost;
        }
        let lrusize: u64 = LISTS.iter().map(|&l| node.lru_len(l)).sum();
        if node.file_cost + node.anon_cost > lrusize / 4 {
            node.file_cost /= 2;
            node.anon_cost /= 2;
        }
    }

    /// `shrink_lruvec` on a node with page cache: scan the four lists in batches of
    /// `SWAP_CLUSTER_MAX` toward `get_scan_count`'s targets (an active list only when its
    /// type may be deactivated); once `nr_to_reclaim` is met (and not in proportional
    /// direct reclaim at `DEF_PRIORITY`), the type with less left to scan stops and the
    /// other's targets shrink by the share the first had left; then age the active anon list
    /// if the inactive one is low.
    pub(super) fn shrink_lruvec(
        &mut self,
        n: usize,
        nr_to_reclaim: u64,
        priority: u8,
        who: Reclaimer,
    ) -> ReclaimResult {
        // kswapd_shrink_node asks for Σ max(high watermark, SWAP_CLUSTER_MAX) over the
        // zones in one call per priority; the time-sliced kswapd's batch target would end the
        // proportional scan after its first batch.
        let nr_to_reclaim = match who {
            Reclaimer::Kswapd => self.kswapd_reclaim_target(n),
            Reclaimer::Direct { .. } => nr_to_reclaim,
        };
        let may = self.may_deactivate(n);
        let targets = self.get_scan_count(n, priority, may);
        let mut nr = targets;
        let direct_clock = who.clock();
        let proportional = direct_clock.is_some() && priority == DEF_PRIORITY;
        let mut res = ReclaimResult::default();
        while nr[0] > 0 || nr[2] > 0 || nr[3] > 0 {
            if let Some(t) = direct_clock {
                self.catch_up_kswapds(t + res.cost);
            }
            for (i, &lru) in LISTS.iter().enumerate() {
                if nr[i] == 0 {
                    continue;
                }
                let batch = nr[i].min(SWAP_CLUSTER_MAX);
                nr[i] -= batch;
                let r = self.shrink_list(n, lru, batch, may, who);
                res.scanned += r.scanned;
                res.reclaimed += r.reclaimed;
                res.cost += r.cost;
            }
            if res.reclaimed < nr_to_reclaim || proportional {
                continue;
            }
            let nr_anon = nr[0] + nr[1];
            let nr_file = nr[2] + nr[3];
            if nr_anon == 0 || nr_file == 0 {
                break;
            }
            // The type with less left stops; the other scans what it would have scanned
            // of its targets had it been at the same point.
            let (stop, go, left, of) = if nr_file > nr_anon {
                (0, 2, nr_anon, targets[0] + targets[1] + 1)
            } else {
                (2, 0, nr_file, targets[2] + targets[3] + 1)
            };
            let pct = left * 100 / of;
            nr[stop] = 0;
            nr[stop + 1] = 0;
            for i in [go, go + 1] {
                let scanned = targets[i] - nr[i];
                let want = targets[i] * (100 - pct) / 100;
                nr[i] = want - want.min(scanned);
            }
        }
        if self.can_reclaim_anon(n) && self.nodes[n].inactive_is_low() {
            res.cost += self.shrink_active_list(n, SWAP_CLUSTER_MAX);
        }
        res
    }

    /// `shrink_list`: one batch of one list.
    fn shrink_list(
        &mut self,
        n: usize,
        lru: Lru,
        nr: u64,
        may: MayDeactivate,
        who: Reclaimer,
    ) -> ReclaimResult {
        match lru {
            Lru::InactiveAnon => self.shrink_inactive_list(n, nr, who),
            Lru::ActiveAnon if may.anon => ReclaimResult {
                cost: self.shrink_active_list(n, nr),
                ..Default::default()
            },
            Lru::InactiveFile => self.shrink_inactive_file_list(n, nr, who),
            Lru::ActiveFile if may.file => ReclaimResult {
                cost: self.shrink_active_file_list(n, nr),
                ..Default::default()
            },
            Lru::ActiveAnon | Lru::ActiveFile => ReclaimResult::default(),
        }
    }

    /// `shrink_active_list` of the file list: an unmapped folio has no referencing PTE, so
    /// every one goes inactive (only referenced `VM_EXEC` folios stay), keeping
    /// `PG_referenced`.
    fn shrink_active_file_list(&mut self, n: usize, nr: u64) -> SimDuration {
        let isolated = self.isolate_lru_folios(n, Lru::ActiveFile, nr);
        let scanned = isolated.len() as u64;
        for pfn in isolated {
            self.nodes[n].lru_add(Lru::InactiveFile, pfn);
        }
        self.vmstat.add(n, Vm::Pgdeactivate, scanned);
        self.vmstat.add(n, Vm::Pgrefill, scanned);
        // Nothing rotates (no VM_EXEC folios), so no lru_note_cost.
        SimDuration(self.cfg.costs.reclaim_scan_page.0 * scanned)
    }

    /// `shrink_inactive_list` + `shrink_folio_list` for unmapped page-cache folios:
    /// `folio_check_references` clears `PG_referenced` and reclaims either way (a
    /// referenced one as `FOLIOREF_RECLAIM_CLEAN`); with demotion on, all go to the demote
    /// list first, dirty ones too; what is left is freed when clean (`__remove_mapping`,
    /// leaving a shadow) and activated with `PG_reclaim` when dirty (only kswapd writes
    /// dirty page cache, not modelled: the flusher does).
    pub(super) fn shrink_inactive_file_list(
        &mut self,
        n: usize,
        nr: u64,
        who: Reclaimer,
    ) -> ReclaimResult {
        let mut res = ReclaimResult::default();
        let isolated = self.isolate_lru_folios(n, Lru::InactiveFile, nr);
        res.scanned = isolated.len() as u64;
        for &pfn in &isolated {
            self.nodes[n].frames[pfn as usize].flags &= !F_REFERENCED;
        }
        if res.scanned == 0 {
            return res;
        }
        self.count_scan(n, who, true, &mut res);
        let mut dirty = 0;
        for pfn in self.demote_or_keep(n, who, isolated, &mut res) {
            let f = &mut self.nodes[n].frames[pfn as usize];
            if f.flags & F_DIRTY != 0 {
                f.flags |= F_RECLAIM;
                dirty += 1;
                self.putback_active(n, Lru::ActiveFile, pfn);
            } else {
                self.remove_mapping(n, pfn, true);
                res.reclaimed += 1;
            }
        }
        self.count_steal(n, who, true, res.reclaimed);
        self.lru_note_cost(n, true, 0, res.scanned - res.reclaimed);
        if dirty == res.scanned {
            // Every folio taken was dirty and not under writeback (nr_unqueued_dirty ==
            // nr_taken): wakeup_flusher_threads.
            self.writeback_all();
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::filemap::FileOp;

    use crate::mm::filemap::tests::{io, kernel};

    const NO: MayDeactivate = MayDeactivate {
        anon: false,
        file: false,
    };

    #[test]
    fn without_swap_or_demotion_only_the_file_lists_are_scanned() {
        let (mut k, p) = kernel();
        k.file_io(p, &io(FileOp::Read, 0, 0, 8192), NodeId(0), SimTime::ZERO)
            .unwrap();
        assert_eq!(k.scan_balance(0, DEF_PRIORITY, NO), ScanBalance::File);
        let nr = k.get_scan_count(0, 1, NO);
        assert_eq!((nr[0], nr[1]), (0, 0));
        assert_eq!(nr[2], 4096, "inactive file >> 1");
    }

    #[test]
    fn scan_fract_splits_by_swappiness_and_costs() {
        let (mut k, _) = kernel();
        let cfg = tiermem_core::config::SwapConfig {
            capacity: tiermem_core::units::Bytes::gib(4),
            read_latency: SimDuration::from_us(80),
            write_bandwidth: tiermem_core::units::Bandwidth::from_gb_per_s(1.0),
        };
        k.swap = Some((cfg, swap::SwapArea::new(1 << 20)));
        let may = MayDeactivate {
            anon: false,
            file: true,
        };
        // No costs yet: anon 60 × 1 / 1, file 140 × 1 / 1.
        assert_eq!(
            k.scan_balance(0, DEF_PRIORITY, may),
            ScanBalance::Fract {
                anon: 60,
                file: 140
            }
        );
        // Costly anon reclaim lowers the anon share (but not below a third of 60).
        k.nodes[0].anon_cost = 1000;
        let ScanBalance::Fract { anon, file } = k.scan_balance(0, DEF_PRIORITY, may) else {
            panic!("not SCAN_FRACT")
        };
        assert_eq!((anon, file), (60 * 3001 / 2001, 140 * 3001 / 1001));
        assert!(anon * 3 > 60 && file > 140);
        assert_eq!(k.scan_balance(0, 0, may), ScanBalance::Equal);
    }

    #[test]
    fn clean_folios_are_freed_and_dirty_ones_wait_for_writeback_at_the_inactive_tail() {
        let (mut k, p) = kernel();
        // File 0 read (clean), file 1 written (dirty): 64 pages each, all inactive.
        k.file_io(p, &io(FileOp::Read, 0, 0, 64), NodeId(0), SimTime::ZERO)
            .unwrap();
        k.file_io(p, &io(FileOp::Write, 1, 0, 64), NodeId(0), SimTime::ZERO)
            .unwrap();
        let free = k.nodes[0].free;
        let r = k.shrink_inactive_file_list(0, 128, Reclaimer::Kswapd);
        assert_eq!((r.scanned, r.reclaimed), (128, 64));
        assert_eq!(k.nodes[0].free, free + 64);
        assert_eq!(
            k.nodes[0].lru_len(Lru::ActiveFile),
            64,
            "dirty: PG_reclaim, activated"
        );
        assert_eq!(k.vmstat.total(Vm::PgstealFile), 64);
        // Writeback rotates them to the inactive tail, where the next scan frees them.
        k.wb_flush(SimTime::ZERO + SimDuration::from_secs(30));
        assert_eq!(k.nodes[0].lru_len(Lru::InactiveFile), 64);
        let r = k.shrink_inactive_file_list(0, 64, Reclaimer::Kswapd);
        assert_eq!(r.reclaimed, 64);
        assert_eq!(k.file_pages(), 0);
    }

    #[test]
    fn note_cost_halves_both_costs_past_a_quarter_of_the_lists() {
        let (mut k, p) = kernel();
        k.file_io(p, &io(FileOp::Read, 0, 0, 400), NodeId(0), SimTime::ZERO)
            .unwrap();
        k.lru_note_cost(0, true, 0, 90);
        assert_eq!(k.nodes[0].file_cost, 90);
        k.lru_note_cost(0, false, 1, 0);
        // 90 + 32 = 122 > 400 / 4: both halve.
        assert_eq!((k.nodes[0].file_cost, k.nodes[0].anon_cost), (45, 16));
    }
}
