//! The page cache (`mm/filemap.c`, `mm/workingset.c`, `mm/page-writeback.c`,
//! `fs/fs-writeback.c`): buffered `read(2)` and `write(2)` of whole pages, the folios'
//! place on the file LRU lists and their access marks, dirty pages and the flusher's
//! periodic writeback, eviction with shadow entries and the refault test, and the harness's
//! `sync; echo 3 > drop_caches`.
//!
//! What the kernel does, with line numbers of v6.12, is in docs/page-cache-kernel.md; the
//! choices here follow its "Simplifications a first model can take safely":
//!
//! * order-0 folios (ext4 in 6.12 does not use large folios), no per-CPU LRU batches;
//! * a miss reads exactly the pages asked for (no readahead window), each at the device's
//!   sequential cost (`KernelCosts::file_read_page`);
//! * writeback is instantaneous when the flusher runs (no `PG_writeback` interval, no I/O
//!   time charged to anyone); no `balance_dirty_pages` throttling: writers are never
//!   paused (the dirty limits are 10 / 20 % of dirtyable memory, and the workloads modelled
//!   stay below them). The background threshold still starts writeback;
//! * files are private to the process that opened them and never mapped (`mmap` of a file
//!   is not modelled), so a page-cache folio has no PTE: `folio_referenced` finds nothing,
//!   and DAMON's paddr operations read `PG_idle` alone.
//!
//! A page-cache folio is a frame owned by [`OWNER_FILE`] whose `vpn` is its entry in
//! [`PageCache::entries`]. Its flags carry `PG_referenced`, `PG_idle`, `PG_dirty`
//! ([`F_DIRTY`]) and `PG_reclaim` ([`F_RECLAIM`]). `PG_workingset` is not kept (the eight
//! flag bits are taken): a refault of a folio evicted from the workingset neither adds
//! `lru_note_cost_refault`'s cost nor counts `workingset_restore_file`.

use super::*;
use std::collections::BTreeMap;

/// An evicted page's shadow entry: the lruvec (node) and the eviction's
/// `nonresident_age` (low 32 bits), as `workingset_eviction` packs them.
const SHADOW: u64 = 1 << 50;
/// The bits of a shadow's eviction age.
const SHADOW_AGE_MASK: u64 = 0xFFFF_FFFF;

/// `dirty_expire_centisecs` (3000): an inode dirtied this long ago is written back by the
/// next periodic flush.
pub const DIRTY_EXPIRE: SimDuration = SimDuration::from_secs(30);
/// `dirty_writeback_centisecs` (500): the flusher's period.
pub const DIRTY_WRITEBACK_INTERVAL: SimDuration = SimDuration::from_secs(5);
/// `dirty_background_ratio` (10 % of dirtyable memory).
pub const DIRTY_BACKGROUND_RATIO: u64 = 10;

/// What a thread does to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// `read(2)` of the pages.
    Read,
    /// `write(2)` of the pages (whole pages, so no read before the write).
    Write,
    /// `sync; echo 3 > /proc/sys/vm/drop_caches` (the benchmark harness, before a run).
    DropCaches,
}

/// One file operation of a thread on one of its process's files, by number (`file`); the
/// file is created, `file_pages` long, on its first use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIo {
    pub op: FileOp,
    pub file: u8,
    pub file_pages: u32,
    pub first: u32,
    pub pages: u32,
}

/// A file's range of the page cache's table and its inode's dirty state.
#[derive(Clone, Debug)]
struct CachedFile {
    /// The file's first entry in [`PageCache::entries`].
    base: u32,
    pages: u32,
    /// `inode->dirtied_when`: when the inode went from clean to dirty.
    dirtied_when: Option<SimTime>,
}

/// The page cache of every file: one table entry per file page, the files end to end.
#[derive(Clone, Debug, Default)]
pub struct PageCache {
    files: Vec<CachedFile>,
    /// (process, file number) → index in `files`.
    by_owner: BTreeMap<(u16, u8), usize>,
    /// Per file page: 0 (never cached), a present entry (`pte_mk`: node and frame), or a
    /// shadow ([`SHADOW`] | node | eviction age).
    entries: Vec<u64>,
    /// `NR_FILE_DIRTY`.
    pub nr_dirty: u64,
    /// `wb->last_old_flush`.
    last_old_flush: SimTime,
    /// File pages the workloads may create ([`Kernel::reserve_file_pages`]).
    reserved: u64,
}

impl PageCache {
    /// Point entry `idx` at a migrated folio (`folio_migrate_mapping`).
    pub(super) fn replace(&mut self, idx: u32, node: usize, pfn: u32) {
        self.entries[idx as usize] = pte_mk(node, pfn);
    }

    /// Check the table against the frames: each present entry names a frame the page cache
    /// owns at that entry, each such frame is on a file list, and the dirty count adds up.
    /// Returns the page-cache frames per node.
    pub(super) fn check(&self, nodes: &[NodeMem]) -> Result<Vec<u64>, String> {
        let mut per_node = vec![0u64; nodes.len()];
        let mut dirty = 0;
        for (idx, &e) in self.entries.iter().enumerate() {
            if e & PTE_PRESENT == 0 {
                continue;
            }
            let (n, pfn) = (pte_node(e), pte_pfn(e));
            let f = nodes[n]
                .frames
                .get(pfn as usize)
                .ok_or("page-cache entry points past the frame table")?;
            if f.owner != OWNER_FILE || f.vpn as usize != idx {
                return Err(format!(
                    "page-cache entry {idx}: frame {n}:{pfn} is owned by {}:{}",
                    f.owner, f.vpn
                ));
            }
            if !nodes[n].lru_of(pfn).is_some_and(Lru::is_file) {
                return Err(format!(
                    "page-cache entry {idx}: frame {n}:{pfn} is not on a file list"
                ));
            }
            dirty += u64::from(f.flags & F_DIRTY != 0);
            per_node[n] += 1;
        }
        if dirty != self.nr_dirty {
            return Err(format!(
                "{dirty} dirty page-cache pages, NR_FILE_DIRTY {}",
                self.nr_dirty
            ));
        }
        Ok(per_node)
    }

    /// Host bytes held by the table.
    pub fn host_bytes(&self) -> usize {
        self.entries.capacity() * 8 + self.files.capacity() * std::mem::size_of::<CachedFile>()
    }
}

/// What a file operation cost its thread, and what it did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileIoResult {
    pub cost: SimDuration,
    /// Pages read from the device (page-cache misses).
    pub misses: u64,
}

/// The most file pages all workloads together may have (the table's entries are named by
/// 32-bit frame `vpn`s).
pub const MAX_FILE_PAGES: u64 = u32::MAX as u64 / 2;

impl Kernel {
    /// Reserve `pages` file pages for workload `name` before it runs: within
    /// [`MAX_FILE_PAGES`] in all, and charged to the host-memory budget (an 8-byte table
    /// entry and at most one frame each, as a process's pages are).
    pub fn reserve_file_pages(&mut self, name: &str, pages: u64) -> Result<(), ConfigError> {
        if pages == 0 {
            return Ok(());
        }
        let total = self.page_cache.reserved + pages;
        if total > MAX_FILE_PAGES {
            return Err(ConfigError::invalid(
                "workloads",
                format!(
                    "{name}: the workloads' files come to {total} pages, more than the page cache holds ({MAX_FILE_PAGES})"
                ),
            ));
        }
        self.budget.add_process(&format!("{name} (files)"), pages)?;
        self.page_cache.reserved = total;
        Ok(())
    }

    /// Run a thread's file operation (process `p`, CPUs on `cpu_node`).
    pub fn file_io(
        &mut self,
        p: u16,
        io: &FileIo,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<FileIoResult, FaultError> {
        let open = |k: &mut Kernel| {
            let file = k.open_file(p, io.file, io.file_pages);
            let f = &k.page_cache.files[file];
            let end = io.first.saturating_add(io.pages).min(f.pages);
            (file, f.base + io.first.min(end)..f.base + end)
        };
        match io.op {
            FileOp::DropCaches => {
                self.drop_caches();
                Ok(FileIoResult::default())
            }
            FileOp::Read => {
                let (_, range) = open(self);
                self.filemap_read(p, range, cpu_node, now)
            }
            FileOp::Write => {
                let (file, range) = open(self);
                self.filemap_write(p, file, range, cpu_node, now)
            }
        }
    }

    /// The page-cache file `slot` of process `p`, created `pages` long on first use.
    fn open_file(&mut self, p: u16, slot: u8, pages: u32) -> usize {
        let pc = &mut self.page_cache;
        if let Some(&i) = pc.by_owner.get(&(p, slot)) {
            return i;
        }
        // Within MAX_FILE_PAGES when the workloads reserved their files; a file beyond that
        // (never made by the workloads) is cut to what is left.
        let pages = pages
            .min((MAX_FILE_PAGES as usize - pc.entries.len().min(MAX_FILE_PAGES as usize)) as u32);
        let base = pc.entries.len() as u32;
        pc.entries.resize(pc.entries.len() + pages as usize, 0);
        pc.files.push(CachedFile {
            base,
            pages,
            dirtied_when: None,
        });
        pc.by_owner.insert((p, slot), pc.files.len() - 1);
        pc.files.len() - 1
    }

    /// `filemap_read`: each page present is marked accessed once (one mark per folio per
    /// `read(2)` call); a missing one is read from the device into a new folio
    /// (`filemap_create_folio` → `filemap_add_folio`), then marked. Every page costs the copy
    /// to user space.
    fn filemap_read(
        &mut self,
        p: u16,
        range: std::ops::Range<u32>,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<FileIoResult, FaultError> {
        let mut res = FileIoResult::default();
        for idx in range {
            let (n, pfn, created) = self.find_or_create_folio(p, idx, true, cpu_node, now)?;
            if let Some(reclaim) = created {
                res.misses += 1;
                res.cost += reclaim + self.cfg.costs.file_read_page;
            }
            self.folio_mark_accessed(n, pfn);
            res.cost += self.cfg.costs.file_copy_page;
        }
        Ok(res)
    }

    /// `generic_perform_write` of whole pages: `write_begin` (`FGP_WRITEBEGIN`, no
    /// `FGP_ACCESSED`) finds the folio and only clears `PG_idle`, or allocates a new one
    /// with `__GFP_WRITE` (no refault test), which lands on the inactive list unreferenced;
    /// `folio_mark_dirty` clears `PG_reclaim`, counts `NR_FILE_DIRTY` and dates the inode
    /// if it was clean (`__mark_inode_dirty`).
    fn filemap_write(
        &mut self,
        p: u16,
        file: usize,
        range: std::ops::Range<u32>,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<FileIoResult, FaultError> {
        let mut res = FileIoResult::default();
        for idx in range {
            let (n, pfn, created) = self.find_or_create_folio(p, idx, false, cpu_node, now)?;
            res.cost += created.unwrap_or(SimDuration::ZERO);
            let f = &mut self.nodes[n].frames[pfn as usize];
            f.flags &= !(F_IDLE | F_RECLAIM);
            if f.flags & F_DIRTY == 0 {
                f.flags |= F_DIRTY;
                self.page_cache.nr_dirty += 1;
                self.page_cache.files[file].dirtied_when.get_or_insert(now);
            }
            res.cost += self.cfg.costs.file_copy_page;
        }
        Ok(res)
    }

    /// The folio at entry `idx`, or a new one there (`filemap_alloc_folio` then
    /// `filemap_add_folio`, which tests a read's shadow for a refault): its node and frame,
    /// and for a new one the time spent in direct reclaim.
    fn find_or_create_folio(
        &mut self,
        p: u16,
        idx: u32,
        read: bool,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<(usize, u32, Option<SimDuration>), FaultError> {
        let e = self.page_cache.entries[idx as usize];
        if e & PTE_PRESENT != 0 {
            return Ok((pte_node(e), pte_pfn(e), None));
        }
        let (n, pfn, reclaim) = self.filemap_alloc_folio(p, idx, cpu_node, now)?;
        self.filemap_add_folio(idx, n, pfn, e, read);
        Ok((n, pfn, Some(reclaim)))
    }

    /// `filemap_alloc_folio`: a page by the task's policy (`alloc_pages` in process
    /// context: the interleave modes take the task's cursor), charged to process `p`.
    fn filemap_alloc_folio(
        &mut self,
        p: u16,
        idx: u32,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<(usize, u32, SimDuration), FaultError> {
        let policy = self.procs[p as usize].policy.clone();
        let plan = self.policy_plan_cursor(p, &policy, cpu_node);
        let who = alloc::PageFor {
            owner: OWNER_FILE,
            vpn: idx,
            requester: p,
        };
        self.alloc_by_plan(who, plan, cpu_node, now)
    }

    /// `filemap_add_folio`: the new folio takes entry `idx` (whose old value was `old`) and
    /// goes on the file LRU, inactive unless a read (`refault_check`) finds a recent shadow
    /// (`workingset_refault` → `workingset_test_recent`: the distance since its eviction is
    /// within the active file list, plus the anon lists while swap has room), which starts it
    /// active and counts `workingset_activate_file`.
    fn filemap_add_folio(&mut self, idx: u32, n: usize, pfn: u32, old: u64, refault_check: bool) {
        self.page_cache.entries[idx as usize] = pte_mk(n, pfn);
        let mut list = Lru::InactiveFile;
        if refault_check && old & SHADOW != 0 {
            // The distance is measured on the evicting lruvec; the counters and the aging
            // are the new folio's (`folio_pgdat(folio)`).
            let sn = pte_node(old);
            self.vmstat.inc(n, Vm::WorkingsetRefaultFile);
            let distance = self.nodes[sn].nonresident_age.wrapping_sub(old) & SHADOW_AGE_MASK;
            let mut workingset = self.nodes[sn].lru_len(Lru::ActiveFile);
            if self.swap_has_room() {
                workingset += self.nodes[sn].lru_len(Lru::ActiveAnon)
                    + self.nodes[sn].lru_len(Lru::InactiveAnon);
            }
            if distance <= workingset {
                list = Lru::ActiveFile;
                self.nodes[n].nonresident_age += 1;
                self.vmstat.inc(n, Vm::WorkingsetActivateFile);
            }
        }
        self.nodes[n].lru_add(list, pfn);
    }

    /// `folio_mark_accessed`: an unreferenced folio becomes referenced; a referenced
    /// inactive one is activated (`folio_activate`), loses `PG_referenced` and ages the
    /// lruvec's `nonresident_age` (`workingset_activation`); `PG_idle` is cleared always.
    pub(super) fn folio_mark_accessed(&mut self, n: usize, pfn: u32) {
        let node = &mut self.nodes[n];
        let flags = node.frames[pfn as usize].flags;
        if flags & F_REFERENCED == 0 {
            node.frames[pfn as usize].flags |= F_REFERENCED;
        } else if let Some(list @ (Lru::InactiveFile | Lru::InactiveAnon)) = node.lru_of(pfn) {
            node.lru_del(pfn);
            node.lru_add(list.active(), pfn);
            node.frames[pfn as usize].flags &= !F_REFERENCED;
            node.nonresident_age += 1;
            self.vmstat.inc(n, Vm::Pgactivate);
        }
        self.nodes[n].frames[pfn as usize].flags &= !F_IDLE;
    }

    /// `__remove_mapping` of a clean, unmapped page-cache folio (already off the LRU):
    /// the entry keeps a shadow when reclaim evicts it (`workingset_eviction`, which ages
    /// `nonresident_age`), none when it is invalidated (`drop_caches`, truncation); the
    /// frame is freed.
    pub(super) fn remove_mapping(&mut self, n: usize, pfn: u32, shadow: bool) {
        let f = self.nodes[n].frames[pfn as usize];
        debug_assert!(f.owner == OWNER_FILE && f.flags & F_DIRTY == 0);
        self.page_cache.entries[f.vpn as usize] = if shadow {
            let age = self.nodes[n].nonresident_age & SHADOW_AGE_MASK;
            self.nodes[n].nonresident_age += 1;
            SHADOW | ((n as u64) << PTE_NODE_SHIFT) | age
        } else {
            0
        };
        self.nodes[n].free_frame(pfn);
        self.vmstat.inc(n, Vm::Pgfree);
    }

    /// Write back one dirty folio (the flusher's `do_writepages`, instantaneous here): it
    /// is clean; one that reclaim met dirty (`PG_reclaim`) moves to the inactive tail
    /// (`folio_end_writeback` → `folio_rotate_reclaimable`, which clears `PG_active`).
    fn writeback_folio(&mut self, n: usize, pfn: u32) {
        let f = &mut self.nodes[n].frames[pfn as usize];
        if f.flags & F_DIRTY == 0 {
            return;
        }
        f.flags &= !F_DIRTY;
        self.page_cache.nr_dirty -= 1;
        if f.flags & F_RECLAIM != 0 {
            f.flags &= !F_RECLAIM;
            if self.nodes[n].lru_of(pfn).is_some() {
                self.nodes[n].lru_del(pfn);
                self.nodes[n].lru_add_tail(Lru::InactiveFile, pfn);
            }
        }
    }

    /// Write back every dirty page of file `i` (`writeback_single_inode`); the inode is clean.
    fn writeback_file(&mut self, i: usize) {
        let f = &mut self.page_cache.files[i];
        if f.dirtied_when.take().is_none() {
            return;
        }
        let (base, pages) = (f.base, f.pages);
        for idx in base..base + pages {
            let e = self.page_cache.entries[idx as usize];
            if e & PTE_PRESENT != 0 {
                self.writeback_folio(pte_node(e), pte_pfn(e));
            }
        }
    }

    /// `wakeup_flusher_threads`: write back every dirty inode now.
    pub(super) fn writeback_all(&mut self) {
        for i in 0..self.page_cache.files.len() {
            self.writeback_file(i);
        }
    }

    /// The flusher, called once a second: every `dirty_writeback_interval` it writes back
    /// the inodes dirtied more than `dirty_expire_interval` ago (`wb_check_old_data_flush`);
    /// and while dirty pages exceed the background threshold (`dirty_background_ratio` of
    /// free plus file-LRU pages, `domain_dirty_limits`) it writes back inodes oldest first
    /// (`wb_check_background_flush`) until they do not.
    pub fn wb_flush(&mut self, now: SimTime) {
        if self.page_cache.nr_dirty == 0 {
            self.page_cache.last_old_flush = now;
            return;
        }
        let mut by_age: Vec<(SimTime, usize)> = self
            .page_cache
            .files
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.dirtied_when.map(|t| (t, i)))
            .collect();
        by_age.sort_unstable();
        let dirtyable: u64 = self.nodes.iter().map(|n| n.free + n.file_lru_pages()).sum();
        let bg_thresh = dirtyable * DIRTY_BACKGROUND_RATIO / 100;
        let periodic = now.0 >= self.page_cache.last_old_flush.0 + DIRTY_WRITEBACK_INTERVAL.ps();
        if periodic {
            self.page_cache.last_old_flush = now;
        }
        for (dirtied, i) in by_age {
            let expired = periodic && dirtied.0 + DIRTY_EXPIRE.ps() <= now.0;
            if expired || self.page_cache.nr_dirty > bg_thresh {
                self.writeback_file(i);
            }
        }
    }

    /// `sync` then `drop_caches` (mode 1, page cache): every dirty inode is written back,
    /// then every clean unmapped page-cache folio is invalidated without a shadow
    /// (`invalidate_mapping_pages`).
    fn drop_caches(&mut self) {
        self.writeback_all();
        for idx in 0..self.page_cache.entries.len() {
            let e = self.page_cache.entries[idx];
            if e & PTE_PRESENT != 0 {
                let (n, pfn) = (pte_node(e), pte_pfn(e));
                self.nodes[n].lru_del(pfn);
                self.remove_mapping(n, pfn, false);
            } else {
                self.page_cache.entries[idx] = 0;
            }
        }
    }

    /// Page-cache pages resident, all nodes (`NR_FILE_PAGES`).
    pub fn file_pages(&self) -> u64 {
        self.nodes.iter().map(NodeMem::file_lru_pages).sum()
    }

    /// Dirty page-cache pages (`NR_FILE_DIRTY`).
    pub fn file_dirty_pages(&self) -> u64 {
        self.page_cache.nr_dirty
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// A kernel on the `ddr5-cxl` preset (demotion off) and one process.
    pub(in crate::mm) fn kernel() -> (Kernel, u16) {
        let v = tiermem_core::presets::machine_value("ddr5-cxl").unwrap();
        let m = tiermem_core::config::typed(v, "machine").unwrap();
        let mut k = Kernel::new(
            Topology::new(&m).unwrap(),
            KernelConfig::default(),
            Xoshiro256PlusPlus::seed_from_u64(1),
        );
        let p = k
            .add_process(
                "p".into(),
                NodeId(0),
                MemPolicy::default(),
                vec![("heap".into(), 16, None)],
            )
            .unwrap();
        (k, p)
    }

    /// `pages` pages of file `file` (as long as its end, at least 64 pages) from `first`.
    pub(in crate::mm) fn io(op: FileOp, file: u8, first: u32, pages: u32) -> FileIo {
        FileIo {
            op,
            file,
            file_pages: (first + pages).max(64),
            first,
            pages,
        }
    }

    fn frame(k: &Kernel, idx: usize) -> (usize, u32) {
        let e = k.page_cache.entries[idx];
        assert!(e & PTE_PRESENT != 0, "entry {idx} not present");
        (pte_node(e), pte_pfn(e))
    }

    #[test]
    fn first_read_is_inactive_referenced_and_second_activates() {
        let (mut k, p) = kernel();
        let r = k
            .file_io(p, &io(FileOp::Read, 0, 0, 4), NodeId(0), SimTime::ZERO)
            .unwrap();
        assert_eq!(r.misses, 4);
        let (n, pfn) = frame(&k, 2);
        assert_eq!(k.nodes[n].lru_of(pfn), Some(Lru::InactiveFile));
        assert!(k.nodes[n].frames[pfn as usize].flags & F_REFERENCED != 0);
        let r = k
            .file_io(p, &io(FileOp::Read, 0, 2, 1), NodeId(0), SimTime::ZERO)
            .unwrap();
        assert_eq!(r.misses, 0);
        assert_eq!(k.nodes[n].lru_of(pfn), Some(Lru::ActiveFile));
        assert_eq!(k.nodes[n].frames[pfn as usize].flags & F_REFERENCED, 0);
        assert_eq!(k.file_pages(), 4);
    }

    #[test]
    fn writes_dirty_without_marking_and_the_flusher_cleans_expired_inodes() {
        let (mut k, p) = kernel();
        k.file_io(p, &io(FileOp::Write, 0, 0, 8), NodeId(0), SimTime::ZERO)
            .unwrap();
        let (n, pfn) = frame(&k, 0);
        let fl = k.nodes[n].frames[pfn as usize].flags;
        assert_eq!(fl & (F_REFERENCED | F_IDLE), 0);
        assert!(fl & F_DIRTY != 0);
        assert_eq!(k.file_dirty_pages(), 8);
        // Not expired at 29 s; written back by the first periodic flush after 30 s.
        for s in 1..=34 {
            k.wb_flush(SimTime::ZERO + SimDuration::from_secs(s));
            assert_eq!(k.file_dirty_pages() == 0, s >= 30, "at {s} s");
        }
        assert_eq!(k.file_dirty_pages(), 0);
        assert_eq!(k.nodes[n].lru_of(pfn), Some(Lru::InactiveFile));
    }

    #[test]
    fn drop_caches_frees_everything_and_a_later_read_misses() {
        let (mut k, p) = kernel();
        k.file_io(p, &io(FileOp::Write, 0, 0, 8), NodeId(0), SimTime::ZERO)
            .unwrap();
        k.file_io(p, &io(FileOp::Read, 0, 8, 8), NodeId(0), SimTime::ZERO)
            .unwrap();
        let free = k.nodes[0].free;
        k.file_io(
            p,
            &io(FileOp::DropCaches, 0, 0, 0),
            NodeId(0),
            SimTime::ZERO,
        )
        .unwrap();
        assert_eq!(k.file_pages(), 0);
        assert_eq!(k.file_dirty_pages(), 0);
        assert_eq!(k.nodes[0].free, free + 16);
        let r = k
            .file_io(p, &io(FileOp::Read, 0, 0, 16), NodeId(0), SimTime::ZERO)
            .unwrap();
        assert_eq!(r.misses, 16);
        assert_eq!(k.vmstat.total(Vm::WorkingsetRefaultFile), 0, "no shadows");
    }

    #[test]
    fn an_evicted_page_refaults_active_when_recent() {
        let (mut k, p) = kernel();
        k.file_io(p, &io(FileOp::Read, 0, 0, 4), NodeId(0), SimTime::ZERO)
            .unwrap();
        // Activate page 1 so the active file list is not empty, then evict page 0.
        k.file_io(p, &io(FileOp::Read, 0, 1, 1), NodeId(0), SimTime::ZERO)
            .unwrap();
        let (n, pfn) = frame(&k, 0);
        k.nodes[n].lru_del(pfn);
        k.remove_mapping(n, pfn, true);
        k.file_io(p, &io(FileOp::Read, 0, 0, 1), NodeId(0), SimTime::ZERO)
            .unwrap();
        let (n, pfn) = frame(&k, 0);
        assert_eq!(k.nodes[n].lru_of(pfn), Some(Lru::ActiveFile));
        assert_eq!(k.vmstat.total(Vm::WorkingsetActivateFile), 1);
    }
}
