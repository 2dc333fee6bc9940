//! Kernel samepage merging (`mm/ksm.c`, kernel-mechanisms.md §3): page contents, enrolment,
//! ksmd with its scan cursor, the checksum volatility filter, unstable and stable trees
//! (one pair per NUMA node when `merge_across_nodes = 0`), stable-node chains under
//! `max_page_sharing`, the zero page, smart scan, the advisor, copy-on-write of merged
//! pages, unmerging, and the sysfs interface with its counters.
//!
//! Design:
//!
//! * **Contents exist only when KSM is configured.** The kernel holds a [`Ksm`] only
//!   for `[kernel.ksm]`; it keeps a content id (`u32`) per virtual page of each process in
//!   a side table (0 is the zero page; workloads assign image and duplicate ids; anything
//!   else gets a fresh id). Runs without KSM carry no per-page cost.
//! * **Writes change contents without touching the hot path.** The access loop already
//!   ORs the dirty bit into the PTE on stores; the same constant also sets
//!   [`PTE_SOFTDIRTY`]. When KSM reads a page (checksum, tree compare) a set bit means the
//!   page was written since the last look: it gets a fresh content id and the bit is
//!   cleared. This is exactly "a write gives the page a fresh content id", evaluated lazily.
//! * **Trees are keyed by content.** The kernel's red-black trees are ordered by
//!   `memcmp_pages`; equal contents are equal keys, so a `BTreeMap` per tree gives the
//!   same matches. Each search is charged `log2(size)` compares plus one whole-page compare.
//! * **A KSM page is a frame with several mappings**: its owner is [`OWNER_KSM`] and its
//!   `vpn` field holds the stable node, whose rmap list is the reverse map (reclaim's
//!   reference check and migration walk it, as `rmap_walk_ksm` does). Merged PTEs carry
//!   [`PTE_RDONLY`]; a store faults into [`Kernel::ksm_wp_fault`] (`do_wp_page`).
//!
//! Simplifications (stated): stale stable nodes do not exist because the rmap item of a
//! page that leaves a KSM page (COW, unmap, exit) is removed at once (the kernel leaves it
//! until ksmd next visits the page, so its `pages_sharing` drops a scan later);
//! `stable_node_chains_prune_millisecs` therefore has nothing to prune. KSM pages are not
//! swapped (reclaim keeps them active) but they are demoted and migrated. The zero page
//! lives on node 0.

use crate::mm::alloc::PageFor;
use crate::mm::mem::*;
use crate::mm::{FaultError, Kernel};
use crate::vmstat::Vm;
use std::collections::BTreeMap;
use tiermem_core::ksm::{AdvisorMode, KsmConfig};
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SIZE};

/// `sizeof(struct ksm_rmap_item)` on 64-bit builds (kernel-mechanisms.md §3.8, UNVERIFIED
/// there: layout-dependent), used by `general_profit`.
pub const RMAP_ITEM_BYTES: i64 = 64;
/// `KSM_ADVISOR_MIN_CPU` (%).
pub const KSM_ADVISOR_MIN_CPU: u64 = 10;
/// `EWMA_WEIGHT` of the advisor (%).
const ADVISOR_EWMA_WEIGHT: u64 = 30;
/// First id handed out for freshly written contents; workloads use ids below it.
pub const FRESH_CONTENT_BASE: u32 = 0x8000_0000;
/// Content id of an all-zero page.
pub const ZERO_CONTENT: u32 = 0;

/// An error of a sysfs write, as the store function's errno.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KsmError {
    #[error("/sys/kernel/mm/ksm/{knob}: EINVAL: {why}")]
    Invalid { knob: String, why: String },
    #[error("/sys/kernel/mm/ksm/{knob}: EBUSY: KSM pages exist (write 2 to run first)")]
    Busy { knob: String },
    #[error("/sys/kernel/mm/ksm/{0}: no such file")]
    NoSuchKnob(String),
    #[error("the kernel has no KSM ([kernel.ksm] is not configured)")]
    NotConfigured,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ItemState {
    /// Free slot.
    Free,
    /// Tracked, in no tree.
    Idle,
    /// In `unstable_tree[tree]` under `key` (the tree may have been reset since).
    Unstable { tree: u16, key: u32 },
    /// Hanging off stable node `node`.
    Stable { node: u32 },
}

/// `struct ksm_rmap_item`.
#[derive(Clone, Copy, Debug)]
struct RmapItem {
    proc: u16,
    vpn: u32,
    oldchecksum: u32,
    age: u8,
    remaining_skips: u8,
    state: ItemState,
}

/// `struct ksm_stable_node` (a dup or a plain node; chains are the tree's dup lists).
#[derive(Clone, Debug)]
struct StableNode {
    content: u32,
    /// Tree the node is linked in (`stable_node->nid`).
    tree: u16,
    /// Where the KSM page is (`kpfn`).
    node: u8,
    pfn: u32,
    rmap: Vec<u32>,
    live: bool,
}

/// Per-process state (`ksm_mm_slot` + the mm's KSM fields).
#[derive(Clone, Debug, Default)]
struct MmSlot {
    enrolled: bool,
    /// `MMF_VM_MERGE_ANY` (prctl).
    merge_any: bool,
    /// VM_MERGEABLE per VMA.
    mergeable: Vec<bool>,
    /// rmap item per virtual page (NIL = none); allocated on enrolment.
    item_of: Vec<u32>,
    merging_pages: u64,
    zero_pages: u64,
    rmap_items: u64,
}

/// The KSM state of the simulated kernel.
pub struct Ksm {
    /// The live sysfs knob values.
    pub cfg: KsmConfig,
    nr_nodes: usize,
    /// Content id per virtual page, per process.
    content: Vec<Vec<u32>>,
    next_fresh: u32,
    mm: Vec<MmSlot>,
    /// Enrolled processes in scan order (`ksm_mm_head` list).
    mm_list: Vec<u16>,
    items: Vec<RmapItem>,
    free_items: Vec<u32>,
    stable: Vec<StableNode>,
    free_stable: Vec<u32>,
    /// content → dups (one = a plain node, more = a stable-node chain), per tree.
    stable_tree: Vec<BTreeMap<u32, Vec<u32>>>,
    /// content → rmap item, per tree.
    unstable_tree: Vec<BTreeMap<u32, u32>>,
    /// Cursor: index into `mm_list` and the next virtual page.
    cur_slot: usize,
    cur_vpn: u32,
    in_pass: bool,
    // Counters (sysfs).
    pub pages_scanned: u64,
    pub pages_shared: u64,
    pub pages_sharing: u64,
    pub pages_unshared: u64,
    pub pages_skipped: u64,
    pub ksm_zero_pages: u64,
    pub full_scans: u64,
    pub rmap_items: u64,
    /// `cow_ksm` (/proc/vmstat): write faults that copied a KSM page.
    pub cow_ksm: u64,
    /// Pages copied by unmerging (`run = 2`, MADV_UNMERGEABLE).
    pub pages_unmerged: u64,
    // ksmd.
    next_wake: SimTime,
    /// ksmd CPU time.
    pub cpu_time: SimDuration,
    pass_start: SimTime,
    pass_cpu: SimDuration,
    adv_scan_time_s: u64,
    adv_change: u64,
}

#[inline]
fn checksum_of(content: u32) -> u32 {
    // A 32-bit mix (murmur3 fmix32) standing in for xxhash of the page.
    let mut h = content ^ 0x9E37_79B9;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// `skip_age`: pages to skip after a page of this age failed to merge.
fn skip_age(age: u8) -> u8 {
    match age {
        0..=3 => 1,
        4..=5 => 2,
        6..=8 => 4,
        _ => 8,
    }
}

fn compares(n: usize) -> u64 {
    (usize::BITS - n.leading_zeros()) as u64
}

impl Ksm {
    pub fn new(cfg: KsmConfig, nr_nodes: usize) -> Ksm {
        let trees = if cfg.merge_across_nodes == 1 {
            1
        } else {
            nr_nodes
        };
        Ksm {
            cfg,
            nr_nodes,
            content: Vec::new(),
            next_fresh: FRESH_CONTENT_BASE,
            mm: Vec::new(),
            mm_list: Vec::new(),
            items: Vec::new(),
            free_items: Vec::new(),
            stable: Vec::new(),
            free_stable: Vec::new(),
            stable_tree: vec![BTreeMap::new(); trees],
            unstable_tree: vec![BTreeMap::new(); trees],
            cur_slot: 0,
            cur_vpn: 0,
            in_pass: false,
            pages_scanned: 0,
            pages_shared: 0,
            pages_sharing: 0,
            pages_unshared: 0,
            pages_skipped: 0,
            ksm_zero_pages: 0,
            full_scans: 0,
            rmap_items: 0,
            cow_ksm: 0,
            pages_unmerged: 0,
            next_wake: SimTime::ZERO,
            cpu_time: SimDuration::ZERO,
            pass_start: SimTime::ZERO,
            pass_cpu: SimDuration::ZERO,
            adv_scan_time_s: 0,
            adv_change: 0,
        }
    }

    /// A fresh content id (a page just written).
    pub fn fresh_content(&mut self) -> u32 {
        let c = self.next_fresh;
        self.next_fresh = self.next_fresh.wrapping_add(1).max(FRESH_CONTENT_BASE);
        c
    }

    /// `get_kpfn_nid`: the tree of a page on `node`.
    fn tree_of(&self, node: usize) -> usize {
        if self.cfg.merge_across_nodes == 1 {
            0
        } else {
            node
        }
    }

    /// Host memory of the KSM tables: content ids and rmap-item index per virtual page,
    /// rmap items, stable nodes (tree maps excluded).
    pub fn host_bytes(&self) -> usize {
        self.content.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + self
                .mm
                .iter()
                .map(|m| m.item_of.capacity() * 4)
                .sum::<usize>()
            + self.items.capacity() * std::mem::size_of::<RmapItem>()
            + self
                .stable
                .iter()
                .map(|s| std::mem::size_of::<StableNode>() + s.rmap.capacity() * 4)
                .sum::<usize>()
    }

    /// `pages_volatile`.
    pub fn pages_volatile(&self) -> u64 {
        self.rmap_items
            .saturating_sub(self.pages_shared + self.pages_sharing + self.pages_unshared)
    }

    /// `general_profit` in bytes.
    pub fn general_profit(&self) -> i64 {
        (self.pages_sharing + self.ksm_zero_pages) as i64 * PAGE_SIZE as i64
            - self.rmap_items as i64 * RMAP_ITEM_BYTES
    }

    /// `stable_node_chains` and `stable_node_dups`.
    pub fn chains_and_dups(&self) -> (u64, u64) {
        let mut chains = 0;
        let mut dups = 0;
        for t in &self.stable_tree {
            for d in t.values() {
                if d.len() > 1 {
                    chains += 1;
                    dups += d.len() as u64;
                }
            }
        }
        (chains, dups)
    }

    /// Every sysfs counter and knob by file name, plus `cow_ksm` and ksmd's CPU time.
    pub fn counters(&self) -> BTreeMap<String, i64> {
        let (chains, dups) = self.chains_and_dups();
        let c = &self.cfg;
        let tunables = c.tunables().map(|(f, v)| (f, v as i64));
        [
            ("run", c.run as i64),
            ("smart_scan", c.smart_scan as i64),
            ("advisor_max_cpu", c.advisor_max_cpu as i64),
            (
                "advisor_min_pages_to_scan",
                c.advisor_min_pages_to_scan as i64,
            ),
            (
                "advisor_max_pages_to_scan",
                c.advisor_max_pages_to_scan as i64,
            ),
            (
                "advisor_target_scan_time",
                c.advisor_target_scan_time as i64,
            ),
            ("pages_scanned", self.pages_scanned as i64),
            ("pages_shared", self.pages_shared as i64),
            ("pages_sharing", self.pages_sharing as i64),
            ("pages_unshared", self.pages_unshared as i64),
            ("pages_volatile", self.pages_volatile() as i64),
            ("pages_skipped", self.pages_skipped as i64),
            ("ksm_zero_pages", self.ksm_zero_pages as i64),
            ("full_scans", self.full_scans as i64),
            ("stable_node_chains", chains as i64),
            ("stable_node_dups", dups as i64),
            ("general_profit", self.general_profit()),
            ("rmap_items", self.rmap_items as i64),
            ("cow_ksm", self.cow_ksm as i64),
        ]
        .into_iter()
        .chain(tunables)
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn alloc_item(&mut self, proc: u16, vpn: u32) -> u32 {
        let it = RmapItem {
            proc,
            vpn,
            oldchecksum: 0,
            age: 0,
            remaining_skips: 0,
            state: ItemState::Idle,
        };
        let id = slab_insert(&mut self.items, &mut self.free_items, it);
        self.rmap_items += 1;
        let mm = &mut self.mm[proc as usize];
        mm.rmap_items += 1;
        mm.item_of[vpn as usize] = id;
        id
    }

    /// Take an item out of whatever tree it is in (`remove_rmap_item_from_tree`).
    fn remove_from_tree(&mut self, id: u32, kernel_nodes: &mut [NodeMem]) {
        match self.items[id as usize].state {
            ItemState::Unstable { tree, key } => {
                let t = tree as usize;
                if t < self.unstable_tree.len() && self.unstable_tree[t].get(&key) == Some(&id) {
                    self.unstable_tree[t].remove(&key);
                }
                self.pages_unshared -= 1;
            }
            ItemState::Stable { node } => self.remove_rmap(node, id, kernel_nodes),
            _ => {}
        }
        self.items[id as usize].state = ItemState::Idle;
    }

    /// Free every rmap item of process `p`.
    fn free_items_of(&mut self, p: u16, nodes: &mut [NodeMem]) {
        let ids: Vec<u32> = self.mm[p as usize]
            .item_of
            .iter()
            .copied()
            .filter(|&i| i != NIL)
            .collect();
        for id in ids {
            self.free_item(id, nodes);
        }
    }

    fn free_item(&mut self, id: u32, kernel_nodes: &mut [NodeMem]) {
        self.remove_from_tree(id, kernel_nodes);
        let it = self.items[id as usize];
        let mm = &mut self.mm[it.proc as usize];
        mm.rmap_items -= 1;
        mm.item_of[it.vpn as usize] = NIL;
        self.items[id as usize].state = ItemState::Free;
        self.free_items.push(id);
        self.rmap_items -= 1;
    }

    fn add_rmap(&mut self, sid: u32, id: u32) {
        let s = &mut self.stable[sid as usize];
        if s.rmap.is_empty() {
            self.pages_shared += 1;
        } else {
            self.pages_sharing += 1;
        }
        s.rmap.push(id);
        let proc = self.items[id as usize].proc;
        self.items[id as usize].state = ItemState::Stable { node: sid };
        self.mm[proc as usize].merging_pages += 1;
    }

    /// Drop one mapping from a stable node; the last one frees the KSM page and the node.
    fn remove_rmap(&mut self, sid: u32, id: u32, nodes: &mut [NodeMem]) {
        let proc = self.items[id as usize].proc;
        self.mm[proc as usize].merging_pages -= 1;
        let s = &mut self.stable[sid as usize];
        if let Some(p) = s.rmap.iter().position(|&x| x == id) {
            s.rmap.swap_remove(p);
        }
        if !s.rmap.is_empty() {
            self.pages_sharing -= 1;
            return;
        }
        self.pages_shared -= 1;
        // The KSM page has no mapping left: free it and its stable node.
        let (node, pfn, tree, content) = (s.node as usize, s.pfn, s.tree as usize, s.content);
        s.live = false;
        nodes[node].lru_del(pfn);
        nodes[node].free_frame(pfn);
        if let Some(d) = self.stable_tree[tree].get_mut(&content) {
            d.retain(|&x| x != sid);
            if d.is_empty() {
                self.stable_tree[tree].remove(&content);
            }
        }
        self.free_stable.push(sid);
    }

    fn new_stable(&mut self, content: u32, tree: usize, node: usize, pfn: u32) -> u32 {
        let s = StableNode {
            content,
            tree: tree as u16,
            node: node as u8,
            pfn,
            rmap: Vec::new(),
            live: true,
        };
        let sid = slab_insert(&mut self.stable, &mut self.free_stable, s);
        // stable_tree_insert: an equal node makes (or extends) a chain.
        self.stable_tree[tree].entry(content).or_default().push(sid);
        sid
    }

    /// `stable_node_dup`: the dup that can take one more mapping with the most mappings.
    fn choose_dup(&self, dups: &[u32]) -> Option<u32> {
        let max = self.cfg.max_page_sharing as usize;
        dups.iter()
            .copied()
            .filter(|&d| {
                let l = self.stable[d as usize].rmap.len();
                l > 0 && l < max
            })
            .max_by_key(|&d| (self.stable[d as usize].rmap.len(), std::cmp::Reverse(d)))
    }
}

impl Kernel {
    /// Set up KSM if configured (called by [`Kernel::new`]).
    pub(crate) fn ksm_init(cfg: Option<&KsmConfig>, nr_nodes: usize) -> Option<Box<Ksm>> {
        cfg.map(|c| Box::new(Ksm::new(c.clone(), nr_nodes)))
    }

    /// A process was created: give it a content table (all pages zero) and a KSM slot.
    pub(crate) fn ksm_add_process(&mut self, p: u16) {
        if let Some(k) = self.ksm.as_mut() {
            let pr = &self.procs[p as usize];
            while k.mm.len() <= p as usize {
                k.mm.push(MmSlot::default());
                k.content.push(Vec::new());
            }
            k.content[p as usize] = vec![ZERO_CONTENT; pr.ptes.len()];
            k.mm[p as usize].mergeable = vec![false; pr.vmas.len()];
        }
    }

    /// Set the content of a page (a workload's memory image). No-op without KSM.
    pub fn ksm_set_content(&mut self, p: u16, vpn: u32, content: u32) {
        if let Some(k) = self.ksm.as_mut() {
            k.content[p as usize][vpn as usize] = content;
        }
    }

    /// A fresh content id for a workload's unique page (`None` without KSM).
    pub fn ksm_fresh_content(&mut self) -> Option<u32> {
        self.ksm.as_mut().map(|k| k.fresh_content())
    }

    /// The current content of a page: a write since the last look (`PTE_SOFTDIRTY`) made
    /// it new. Clears the bit.
    fn ksm_read_content(&mut self, k: &mut Ksm, p: u16, vpn: u32) -> u32 {
        let pte = &mut self.procs[p as usize].ptes[vpn as usize];
        if *pte & PTE_SOFTDIRTY != 0 {
            *pte &= !PTE_SOFTDIRTY;
            let c = k.fresh_content();
            k.content[p as usize][vpn as usize] = c;
        }
        k.content[p as usize][vpn as usize]
    }

    /// The content of a page as KSM would see it now (for tests and reports).
    pub fn ksm_page_content(&mut self, p: u16, vpn: u32) -> Option<u32> {
        let mut k = self.ksm.take()?;
        let c = self.ksm_read_content(&mut k, p, vpn);
        self.ksm = Some(k);
        Some(c)
    }

    fn ksm_enrol(k: &mut Ksm, p: u16, nptes: usize) {
        let mm = &mut k.mm[p as usize];
        if !mm.enrolled {
            mm.enrolled = true;
            if mm.item_of.is_empty() {
                mm.item_of = vec![NIL; nptes];
            }
            k.mm_list.push(p);
        }
    }

    /// `madvise(MADV_MERGEABLE)` (`ksm_madvise` + `__ksm_enter`) on one VMA.
    pub fn ksm_madvise_mergeable(&mut self, p: u16, vma: usize) -> Result<(), KsmError> {
        let nptes = self.procs[p as usize].ptes.len();
        let k = self.ksm.as_mut().ok_or(KsmError::NotConfigured)?;
        k.mm[p as usize].mergeable[vma] = true;
        Self::ksm_enrol(k, p, nptes);
        Ok(())
    }

    /// `prctl(PR_SET_MEMORY_MERGE, 1)` (`ksm_enable_merge_any`): every VMA of the process.
    pub fn ksm_set_merge_any(&mut self, p: u16) -> Result<(), KsmError> {
        let nptes = self.procs[p as usize].ptes.len();
        let k = self.ksm.as_mut().ok_or(KsmError::NotConfigured)?;
        let mm = &mut k.mm[p as usize];
        mm.merge_any = true;
        mm.mergeable.iter_mut().for_each(|m| *m = true);
        Self::ksm_enrol(k, p, nptes);
        Ok(())
    }

    /// `madvise(MADV_UNMERGEABLE)` on one VMA: break COW on every KSM page in it
    /// (`unmerge_ksm_pages`), drop its rmap items, clear VM_MERGEABLE. Returns the CPU time.
    #[allow(
        clippy::expect_used,
        reason = "the caller checked that KSM is configured"
    )]
    pub fn ksm_madvise_unmergeable(
        &mut self,
        p: u16,
        vma: usize,
        now: SimTime,
    ) -> Result<SimDuration, KsmError> {
        if self.ksm.is_none() {
            return Err(KsmError::NotConfigured);
        }
        let v = self.procs[p as usize].vmas[vma].clone();
        let mut cost = SimDuration::ZERO;
        for vpn in v.pte_base..v.pte_base + v.pages {
            cost += self.ksm_break_one(p, vpn, now);
        }
        let mut k = self.ksm.take().expect("checked");
        for vpn in v.pte_base..v.pte_base + v.pages {
            let id = k.mm[p as usize]
                .item_of
                .get(vpn as usize)
                .copied()
                .unwrap_or(NIL);
            if id != NIL {
                k.free_item(id, &mut self.nodes);
            }
        }
        k.mm[p as usize].mergeable[vma] = false;
        self.ksm = Some(k);
        Ok(cost)
    }

    fn ksm_vma_mergeable(&self, k: &Ksm, p: u16, vpn: u32) -> Option<(bool, u32)> {
        let pr = &self.procs[p as usize];
        pr.vmas
            .iter()
            .enumerate()
            .find(|(_, v)| vpn >= v.pte_base && vpn < v.pte_base + v.pages)
            .map(|(i, v)| (k.mm[p as usize].mergeable[i], v.pte_base + v.pages))
    }

    /// Break one write-protected mapping: copy a KSM page (or the zero page) into a new
    /// page of the process (`break_ksm`, `wp_page_copy`). Returns the CPU time; nothing
    /// to do for a normal page.
    fn ksm_break_one(&mut self, p: u16, vpn: u32, now: SimTime) -> SimDuration {
        let pte = self.procs[p as usize].ptes[vpn as usize];
        if pte & PTE_PRESENT == 0 || pte & PTE_RDONLY == 0 || pte & PTE_ZERO != 0 {
            return SimDuration::ZERO;
        }
        let cpu = self.procs[p as usize].cpu_node;
        match self.ksm_copy_on_write(p, vpn, cpu, now, false) {
            Ok(c) => {
                if let Some(k) = self.ksm.as_mut() {
                    k.pages_unmerged += 1;
                }
                c
            }
            Err(FaultError::OomKilled) => SimDuration::ZERO,
        }
    }

    /// A store to a write-protected (KSM or zero) page: `do_wp_page` → `wp_page_copy`.
    /// KSM pages are never reused in place (`folio_test_ksm`), so the writer always gets a
    /// copy, allocated by its memory policy on its CPU's node. Returns the fault's cost.
    pub fn ksm_wp_fault(
        &mut self,
        p: u16,
        vpn: u32,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<SimDuration, FaultError> {
        let c = self.ksm_copy_on_write(p, vpn, cpu_node, now, true)?;
        if let Some(k) = self.ksm.as_mut() {
            k.cow_ksm += 1;
        }
        Ok(c)
    }

    #[allow(
        clippy::expect_used,
        reason = "the caller checked that KSM is configured"
    )]
    fn ksm_copy_on_write(
        &mut self,
        p: u16,
        vpn: u32,
        cpu_node: NodeId,
        now: SimTime,
        write: bool,
    ) -> Result<SimDuration, FaultError> {
        // The new copy is placed by the VMA/task policy with the page's interleave index, as
        // a fault is (`alloc_pages_mpol`).
        let policy = self.effective_policy(p, vpn).clone();
        let plan = self.policy_plan(&policy, self.interleave_index(p, vpn), cpu_node);
        // Allocate first: reclaim may demote the KSM page meanwhile (KSM state stays in place).
        let (n, pfn, reclaim) = self.alloc_by_plan(PageFor::anon(p, vpn), plan, cpu_node, now)?;
        let pte = self.procs[p as usize].ptes[vpn as usize];
        let mut k = self
            .ksm
            .take()
            .expect("write-protected PTEs exist only with KSM");
        if pte & PTE_KSM_ZERO != 0 {
            k.ksm_zero_pages -= 1;
            k.mm[p as usize].zero_pages -= 1;
        } else {
            let src = pte_node(pte);
            let f = self.nodes[src].frames[pte_pfn(pte) as usize];
            debug_assert_eq!(f.owner, OWNER_KSM);
            let id = k.mm[p as usize].item_of[vpn as usize];
            debug_assert!(
                matches!(k.items[id as usize].state, ItemState::Stable { node } if node == f.vpn)
            );
            k.remove_from_tree(id, &mut self.nodes);
            self.kernel_traffic[src].0 += PAGE_SIZE;
        }
        self.ksm = Some(k);
        self.kernel_traffic[n].1 += PAGE_SIZE;
        let mut new_pte = pte_mk(n, pfn) | (pte & PTE_ACCESSED);
        if write {
            new_pte |= PTE_ACCESSED | PTE_DIRTY;
        }
        self.procs[p as usize].ptes[vpn as usize] = new_pte;
        self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
        self.vmstat.inc(n, Vm::Pgfault);
        let cost = self
            .ksm
            .as_ref()
            .map_or(SimDuration::ZERO, |k| k.cfg.costs.cow_fault);
        Ok(cost + reclaim)
    }

    /// A PTE of an exiting process maps a KSM page or the zero page: drop the mapping.
    pub(crate) fn ksm_unmap(&mut self, p: u16, vpn: u32, pte: u64) {
        let Some(mut k) = self.ksm.take() else { return };
        if pte & PTE_KSM_ZERO != 0 {
            k.ksm_zero_pages -= 1;
            k.mm[p as usize].zero_pages -= 1;
        } else {
            let id = k.mm[p as usize].item_of[vpn as usize];
            if id != NIL {
                k.remove_from_tree(id, &mut self.nodes);
            }
        }
        self.ksm = Some(k);
    }

    /// An exiting process (`ksm_exit`): free its rmap items and leave the scan list.
    pub(crate) fn ksm_exit(&mut self, p: u16) {
        let Some(mut k) = self.ksm.take() else { return };
        if (p as usize) < k.mm.len() && k.mm[p as usize].enrolled {
            k.free_items_of(p, &mut self.nodes);
            k.mm[p as usize].enrolled = false;
            if let Some(pos) = k.mm_list.iter().position(|&x| x == p) {
                k.mm_list.remove(pos);
                if k.cur_slot > pos {
                    k.cur_slot -= 1;
                } else if k.cur_slot == pos {
                    k.cur_vpn = 0;
                }
            }
        }
        self.ksm = Some(k);
    }

    /// `rmap_walk_ksm` for `folio_referenced`: test and clear the accessed bit of every
    /// PTE that maps the KSM page. Returns the number of referencing PTEs.
    pub(crate) fn ksm_folio_referenced(&mut self, sid: u32) -> u32 {
        let Some(k) = self.ksm.as_ref() else { return 0 };
        let mut refs = 0;
        for &id in &k.stable[sid as usize].rmap {
            let it = k.items[id as usize];
            let pte = &mut self.procs[it.proc as usize].ptes[it.vpn as usize];
            if *pte & PTE_ACCESSED != 0 {
                *pte &= !PTE_ACCESSED;
                refs += 1;
            }
        }
        refs
    }

    /// `ksm_migrate_folio` + `remove_migration_ptes` over the rmap: a KSM page moved to
    /// (`dst`, `new_pfn`); every mapping follows. The stable node keeps its tree until ksmd
    /// next meets it (then `cmp_and_merge_page` moves it to the right tree).
    pub(crate) fn ksm_migrated(&mut self, sid: u32, dst: usize, new_pfn: u32) {
        let Some(k) = self.ksm.as_mut() else { return };
        let s = &mut k.stable[sid as usize];
        s.node = dst as u8;
        s.pfn = new_pfn;
        for &id in &s.rmap {
            let it = k.items[id as usize];
            let pte = &mut self.procs[it.proc as usize].ptes[it.vpn as usize];
            let keep = *pte & (PTE_ACCESSED | PTE_DIRTY | PTE_RDONLY | PTE_SOFTDIRTY);
            *pte = pte_mk(dst, new_pfn) | keep;
        }
    }

    /// The stable node behind a KSM frame (for tests and reports).
    pub fn ksm_stable_node_of(&self, p: u16, vpn: u32) -> Option<(u32, usize, usize)> {
        let k = self.ksm.as_ref()?;
        let pte = self.procs[p as usize].ptes[vpn as usize];
        if !pte_maps_frame(pte) {
            return None;
        }
        let f = self.nodes[pte_node(pte)].frames[pte_pfn(pte) as usize];
        (f.owner == OWNER_KSM).then(|| {
            let s = &k.stable[f.vpn as usize];
            (f.vpn, s.node as usize, s.tree as usize)
        })
    }

    /// Mappings of a stable node (tests).
    pub fn ksm_stable_mappings(&self, sid: u32) -> usize {
        self.ksm
            .as_ref()
            .map_or(0, |k| k.stable[sid as usize].rmap.len())
    }

    /// KSM counters, or `None` without KSM.
    pub fn ksm_counters(&self) -> Option<BTreeMap<String, i64>> {
        self.ksm.as_ref().map(|k| k.counters())
    }

    /// ksmd CPU time.
    pub fn ksmd_cpu_time(&self) -> SimDuration {
        self.ksm.as_ref().map_or(SimDuration::ZERO, |k| k.cpu_time)
    }

    /// `/proc/<pid>/ksm_stat`: (rmap_items, zero_pages, merging_pages, process_profit).
    pub fn ksm_stat(&self, p: u16) -> Option<(u64, u64, u64, i64)> {
        let k = self.ksm.as_ref()?;
        let mm = k.mm.get(p as usize)?;
        let profit = (mm.merging_pages + mm.zero_pages) as i64 * PAGE_SIZE as i64
            - mm.rmap_items as i64 * RMAP_ITEM_BYTES;
        Some((mm.rmap_items, mm.zero_pages, mm.merging_pages, profit))
    }

    // --- ksmd -------------------------------------------------------------------------

    /// Run ksmd until `until` (`ksm_scan_thread`): while `run` is 1 and an mm is enrolled,
    /// scan `pages_to_scan` pages, then sleep `sleep_millisecs`. ksmd's CPU time is its own
    /// (nice 5, on an otherwise idle CPU); its page reads are memory traffic.
    pub fn run_ksmd(&mut self, until: SimTime) {
        let Some(mut k) = self.ksm.take() else { return };
        while k.next_wake < until {
            if k.cfg.run != 1 || k.mm_list.is_empty() {
                // wait_event_freezable(ksm_thread_wait, ksmd_should_run()).
                k.next_wake = until;
                break;
            }
            let now = k.next_wake;
            // A wake-up costs at least the scheduling round trip (and keeps time moving
            // with pages_to_scan = sleep_millisecs = 0).
            let cost = self.ksm_do_scan(&mut k, now).max(SimDuration::from_us(1));
            k.cpu_time += cost;
            k.pass_cpu += cost;
            k.next_wake = ksmd_wake_after(SimTime(now.0 + cost.0), k.cfg.sleep_millisecs);
        }
        self.ksm = Some(k);
    }

    /// `ksm_do_scan`: up to `pages_to_scan` pages. Returns ksmd's CPU time.
    fn ksm_do_scan(&mut self, k: &mut Ksm, now: SimTime) -> SimDuration {
        let mut cost = SimDuration::ZERO;
        for _ in 0..k.cfg.pages_to_scan {
            match self.ksm_next_item(k, now, &mut cost) {
                Some(id) => {
                    k.pages_scanned += 1;
                    cost += self.ksm_cmp_and_merge(k, id);
                }
                None => break,
            }
        }
        cost
    }

    /// `scan_get_next_rmap_item`: the next present page of a mergeable VMA, with its rmap
    /// item (created if new); items of pages no longer present are freed. `None` at the end
    /// of a full pass (which counts `full_scans` and runs the advisor).
    fn ksm_next_item(&mut self, k: &mut Ksm, now: SimTime, cost: &mut SimDuration) -> Option<u32> {
        if k.mm_list.is_empty() {
            return None;
        }
        if !k.in_pass {
            // Start of a full pass: every unstable tree root is reset.
            k.in_pass = true;
            k.unstable_tree.iter_mut().for_each(|t| t.clear());
            k.pass_start = now;
            k.pass_cpu = SimDuration::ZERO;
        }
        loop {
            if k.cur_slot >= k.mm_list.len() {
                k.cur_slot = 0;
                k.cur_vpn = 0;
                k.in_pass = false;
                k.full_scans += 1;
                self.ksm_advisor(k, now);
                return None;
            }
            let p = k.mm_list[k.cur_slot];
            let nptes = self.procs[p as usize].ptes.len() as u32;
            if k.cur_vpn >= nptes || !self.procs[p as usize].alive {
                k.cur_slot += 1;
                k.cur_vpn = 0;
                continue;
            }
            let vpn = k.cur_vpn;
            let Some((mergeable, vma_end)) = self.ksm_vma_mergeable(k, p, vpn) else {
                k.cur_vpn += 1;
                continue;
            };
            if !mergeable {
                k.cur_vpn = vma_end;
                continue;
            }
            k.cur_vpn += 1;
            *cost += k.cfg.costs.scan_page;
            let pte = self.procs[p as usize].ptes[vpn as usize];
            let id = k.mm[p as usize].item_of[vpn as usize];
            if !pte_maps_frame(pte) {
                // Not a page ksmd can look at (swapped, unmapped, the zero page): its
                // rmap item goes (remove_trailing_rmap_items).
                if id != NIL {
                    k.free_item(id, &mut self.nodes);
                }
                continue;
            }
            let id = if id == NIL { k.alloc_item(p, vpn) } else { id };
            // should_skip_rmap_item (smart scan).
            let is_ksm = self.nodes[pte_node(pte)].frames[pte_pfn(pte) as usize].owner == OWNER_KSM;
            if k.cfg.smart_scan == 1 && !is_ksm {
                let it = &mut k.items[id as usize];
                let age = it.age;
                if age != u8::MAX {
                    it.age += 1;
                }
                if age >= 3 {
                    if it.remaining_skips == 0 {
                        it.remaining_skips = skip_age(age);
                    } else {
                        it.remaining_skips -= 1;
                        k.remove_from_tree(id, &mut self.nodes);
                        k.pages_skipped += 1;
                        continue;
                    }
                }
            }
            return Some(id);
        }
    }

    /// `cmp_and_merge_page` for one rmap item. Returns ksmd's CPU time.
    fn ksm_cmp_and_merge(&mut self, k: &mut Ksm, id: u32) -> SimDuration {
        let c = k.cfg.costs.clone();
        let it = k.items[id as usize];
        let (p, vpn) = (it.proc, it.vpn);
        let pte = self.procs[p as usize].ptes[vpn as usize];
        let node = pte_node(pte);
        let pfn = pte_pfn(pte);
        let frame = self.nodes[node].frames[pfn as usize];
        if frame.owner == OWNER_KSM {
            // Already a KSM page. With per-node trees, a page that migrated is moved to its
            // node's tree (migrate_nodes, then the next stable search relinks it; here in
            // one step: it joins the equal-content entry there, as a chain if one exists).
            let sid = frame.vpn;
            let want = k.tree_of(k.stable[sid as usize].node as usize);
            let s = &k.stable[sid as usize];
            if want != s.tree as usize {
                let (old, content) = (s.tree as usize, s.content);
                if let Some(d) = k.stable_tree[old].get_mut(&content) {
                    d.retain(|&x| x != sid);
                    if d.is_empty() {
                        k.stable_tree[old].remove(&content);
                    }
                }
                k.stable_tree[want].entry(content).or_default().push(sid);
                k.stable[sid as usize].tree = want as u16;
            }
            // Its rmap item already hangs off the stable node: cmp_and_merge_page returns
            // at once, nothing beyond the page walk (charged by ksm_next_item) is spent.
            return SimDuration::ZERO;
        }
        k.remove_from_tree(id, &mut self.nodes);
        // The volatility filter: the checksum must be unchanged since the last pass.
        let content = self.ksm_read_content(k, p, vpn);
        let sum = checksum_of(content);
        let mut cost = c.checksum;
        self.kernel_traffic[node].0 += PAGE_SIZE;
        if sum != k.items[id as usize].oldchecksum {
            k.items[id as usize].oldchecksum = sum;
            return cost;
        }
        // The zero page (use_zero_pages): try_to_merge_with_zero_page.
        if k.cfg.use_zero_pages == 1 && content == ZERO_CONTENT {
            self.nodes[node].lru_del(pfn);
            self.nodes[node].free_frame(pfn);
            self.vmstat.inc(node, Vm::Pgfree);
            let keep = pte & PTE_ACCESSED;
            self.procs[p as usize].ptes[vpn as usize] =
                pte_mk(0, 0) | PTE_RDONLY | PTE_KSM_ZERO | keep;
            k.ksm_zero_pages += 1;
            k.mm[p as usize].zero_pages += 1;
            return cost + c.merge;
        }
        let tree = k.tree_of(node);
        // stable_tree_search.
        cost += SimDuration(c.compare.0 * compares(k.stable_tree[tree].len()));
        if let Some(dups) = k.stable_tree[tree].get(&content) {
            cost += c.checksum; // the equal memcmp reads the whole page
            if let Some(sid) = k.choose_dup(dups) {
                let s = &k.stable[sid as usize];
                let (kn, kpfn) = (s.node as usize, s.pfn);
                self.kernel_traffic[kn].0 += PAGE_SIZE;
                self.nodes[node].lru_del(pfn);
                self.nodes[node].free_frame(pfn);
                self.vmstat.inc(node, Vm::Pgfree);
                let keep = pte & PTE_ACCESSED;
                self.procs[p as usize].ptes[vpn as usize] = pte_mk(kn, kpfn) | PTE_RDONLY | keep;
                k.add_rmap(sid, id);
                return cost + c.merge;
            }
            // Every dup is full: the page waits to form a new KSM page through the unstable tree.
        }
        // unstable_tree_search_insert.
        cost += SimDuration(c.compare.0 * compares(k.unstable_tree[tree].len()));
        if let Some(&tid) = k.unstable_tree[tree].get(&content) {
            let t = k.items[tid as usize];
            let tpte = self.procs[t.proc as usize].ptes[t.vpn as usize];
            let tnode = pte_node(tpte);
            let valid = tid != id
                && self.procs[t.proc as usize].alive
                && tpte & PTE_PRESENT != 0
                && tpte & PTE_RDONLY == 0;
            let tcontent = if valid {
                self.ksm_read_content(k, t.proc, t.vpn)
            } else {
                !content
            };
            cost += c.checksum;
            if tcontent == content {
                if k.cfg.merge_across_nodes == 0 && tnode != node {
                    // The tree page has moved to another node: no merge, no insert.
                    return cost;
                }
                // try_to_merge_two_pages: the scanned page becomes the KSM page.
                k.remove_from_tree(tid, &mut self.nodes);
                let sid = k.new_stable(content, tree, node, pfn);
                {
                    let f = &mut self.nodes[node].frames[pfn as usize];
                    f.owner = OWNER_KSM;
                    f.vpn = sid;
                }
                let ptes = &mut self.procs[p as usize].ptes;
                ptes[vpn as usize] =
                    (ptes[vpn as usize] & !(PTE_DIRTY | PTE_PROTNONE)) | PTE_RDONLY;
                let tpfn = pte_pfn(tpte);
                self.nodes[tnode].lru_del(tpfn);
                self.nodes[tnode].free_frame(tpfn);
                self.vmstat.inc(tnode, Vm::Pgfree);
                self.kernel_traffic[tnode].0 += PAGE_SIZE;
                self.procs[t.proc as usize].ptes[t.vpn as usize] =
                    pte_mk(node, pfn) | PTE_RDONLY | (tpte & PTE_ACCESSED);
                k.add_rmap(sid, tid);
                k.add_rmap(sid, id);
                return cost + c.merge + c.merge;
            }
            // The tree page changed since it was inserted: it no longer belongs there.
            k.unstable_tree[tree].remove(&content);
        }
        k.unstable_tree[tree].insert(content, id);
        k.items[id as usize].state = ItemState::Unstable {
            tree: tree as u16,
            key: content,
        };
        k.pages_unshared += 1;
        cost
    }

    /// `scan_time_advisor` at the end of a full pass (advisor_mode = scan-time).
    fn ksm_advisor(&mut self, k: &mut Ksm, now: SimTime) {
        if k.cfg.advisor_mode != AdvisorMode::ScanTime {
            return;
        }
        let elapsed_s = now.since(k.pass_start).secs_f64() as u64;
        let scan_time = elapsed_s.max(1);
        let cpu_ms = k.pass_cpu.as_ms();
        let cpu_pct = (cpu_ms * 100 / (scan_time * 1000)).max(1);
        let factor = (k.cfg.advisor_target_scan_time * 100 / scan_time).max(1);
        if k.adv_scan_time_s == 0 {
            k.adv_scan_time_s = scan_time;
        }
        let cur = (scan_time * 100 / k.adv_scan_time_s).max(1);
        let change = ((100 - ADVISOR_EWMA_WEIGHT) * k.adv_change + ADVISOR_EWMA_WEIGHT * cur) / 100;
        let pts = k.cfg.pages_to_scan as u64;
        let mut pages = pts * 100 / factor;
        pages = pages * change / 100;
        let per_page_cost = (pts / cpu_pct).max(1);
        pages = pages.min(per_page_cost * k.cfg.advisor_max_cpu as u64);
        pages = pages.max(per_page_cost * KSM_ADVISOR_MIN_CPU);
        pages = pages.min(k.cfg.advisor_max_pages_to_scan);
        k.adv_scan_time_s = scan_time;
        k.adv_change = change;
        k.cfg.pages_to_scan = pages.min(u32::MAX as u64) as u32;
    }

    // --- sysfs --------------------------------------------------------------------------

    /// Read `/sys/kernel/mm/ksm/<name>`.
    pub fn ksm_sysfs_read(&self, name: &str) -> Result<String, KsmError> {
        let k = self.ksm.as_ref().ok_or(KsmError::NotConfigured)?;
        if name == "advisor_mode" {
            return Ok(match k.cfg.advisor_mode {
                AdvisorMode::None => "[none] scan-time".into(),
                AdvisorMode::ScanTime => "none [scan-time]".into(),
            });
        }
        k.counters()
            .get(name)
            .filter(|_| name != "rmap_items" && name != "cow_ksm")
            .map(|v| v.to_string())
            .ok_or_else(|| KsmError::NoSuchKnob(name.into()))
    }

    /// Write `/sys/kernel/mm/ksm/<name>` as the store functions do. `run = 2` unmerges
    /// everything (`unmerge_and_remove_all_rmap_items`) and returns its CPU time.
    pub fn ksm_sysfs_write(
        &mut self,
        name: &str,
        value: &str,
        now: SimTime,
    ) -> Result<SimDuration, KsmError> {
        let k = self.ksm.as_mut().ok_or(KsmError::NotConfigured)?;
        let inval = |why: &str| KsmError::Invalid {
            knob: name.into(),
            why: why.into(),
        };
        let num = || -> Result<u64, KsmError> {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| inval("not a decimal number"))
        };
        let boolean = || -> Result<u32, KsmError> {
            match value.trim() {
                "0" | "n" | "N" | "off" => Ok(0),
                "1" | "y" | "Y" | "on" => Ok(1),
                _ => Err(inval("expects 0 or 1")),
            }
        };
        let busy = k.pages_shared > 0;
        match name {
            "run" => {
                let v = num()?;
                if v > 2 {
                    return Err(inval("0, 1 or 2"));
                }
                k.cfg.run = v as u32;
                if v == 1 && k.next_wake < now {
                    k.next_wake = now;
                }
                if v == 2 {
                    return Ok(self.ksm_unmerge_all(now));
                }
            }
            "pages_to_scan" => {
                if k.cfg.advisor_mode == AdvisorMode::ScanTime {
                    return Err(inval("the advisor sets pages_to_scan"));
                }
                k.cfg.pages_to_scan = num()?.min(u32::MAX as u64) as u32;
            }
            "sleep_millisecs" => {
                let v = num()?;
                if v > 3_600_000 {
                    return Err(inval("at most one hour"));
                }
                k.cfg.sleep_millisecs = v as u32;
                // The sleep is cut short when the setting changes.
                k.next_wake = k.next_wake.min(now);
            }
            "merge_across_nodes" => {
                let v = boolean()?;
                if v != k.cfg.merge_across_nodes {
                    if busy {
                        return Err(KsmError::Busy { knob: name.into() });
                    }
                    k.cfg.merge_across_nodes = v;
                    let trees = if v == 1 { 1 } else { k.nr_nodes };
                    k.stable_tree = vec![BTreeMap::new(); trees];
                    k.unstable_tree = vec![BTreeMap::new(); trees];
                }
            }
            "max_page_sharing" => {
                let v = num()?;
                if v < 2 {
                    return Err(inval("at least 2"));
                }
                if v as u32 != k.cfg.max_page_sharing {
                    if busy {
                        return Err(KsmError::Busy { knob: name.into() });
                    }
                    k.cfg.max_page_sharing = v.min(u32::MAX as u64) as u32;
                }
            }
            "stable_node_chains_prune_millisecs" => {
                k.cfg.stable_node_chains_prune_millisecs = num()?.min(u32::MAX as u64) as u32
            }
            "use_zero_pages" => k.cfg.use_zero_pages = boolean()?,
            "smart_scan" => k.cfg.smart_scan = boolean()?,
            "advisor_mode" => {
                let m = match value.trim() {
                    "none" => AdvisorMode::None,
                    "scan-time" => AdvisorMode::ScanTime,
                    _ => return Err(inval("none or scan-time")),
                };
                if m != k.cfg.advisor_mode {
                    k.cfg.advisor_mode = m;
                    k.adv_scan_time_s = 0;
                    k.adv_change = 0;
                    k.cfg.pages_to_scan = match m {
                        AdvisorMode::None => 100,
                        AdvisorMode::ScanTime => k.cfg.advisor_min_pages_to_scan as u32,
                    };
                }
            }
            "advisor_max_cpu" => {
                let v = num()?;
                if v == 0 || v > 100 {
                    return Err(inval("a percentage 1..100"));
                }
                k.cfg.advisor_max_cpu = v as u32;
            }
            "advisor_min_pages_to_scan" => k.cfg.advisor_min_pages_to_scan = num()?,
            "advisor_max_pages_to_scan" => k.cfg.advisor_max_pages_to_scan = num()?,
            "advisor_target_scan_time" => {
                let v = num()?;
                if v < 1 {
                    return Err(inval("at least 1"));
                }
                k.cfg.advisor_target_scan_time = v;
            }
            _ => return Err(KsmError::NoSuchKnob(name.into())),
        }
        Ok(SimDuration::ZERO)
    }

    /// `unmerge_and_remove_all_rmap_items`: break COW on every KSM and zero page of every
    /// enrolled mm, free all rmap items; mm slots stay enrolled.
    #[allow(
        clippy::expect_used,
        reason = "the caller checked that KSM is configured"
    )]
    fn ksm_unmerge_all(&mut self, now: SimTime) -> SimDuration {
        let Some(k) = self.ksm.as_ref() else {
            return SimDuration::ZERO;
        };
        let procs = k.mm_list.clone();
        let mut cost = SimDuration::ZERO;
        for &p in &procs {
            for vpn in 0..self.procs[p as usize].ptes.len() as u32 {
                cost += self.ksm_break_one(p, vpn, now);
            }
        }
        let mut k = self.ksm.take().expect("checked");
        for &p in &procs {
            k.free_items_of(p, &mut self.nodes);
        }
        k.unstable_tree.iter_mut().for_each(|t| t.clear());
        k.cur_slot = 0;
        k.cur_vpn = 0;
        k.in_pass = false;
        self.ksm = Some(k);
        cost
    }

    /// Check KSM's books against the page tables: every KSM mapping is on its stable
    /// node's rmap, the counters match the nodes, frames are owned as recorded.
    pub fn ksm_check(&self) -> Result<(), String> {
        let Some(k) = self.ksm.as_ref() else {
            return Ok(());
        };
        let (mut shared, mut sharing) = (0u64, 0u64);
        for (sid, s) in k.stable.iter().enumerate() {
            if !s.live {
                continue;
            }
            if s.rmap.is_empty() {
                return Err(format!("stable node {sid} without mappings"));
            }
            shared += 1;
            sharing += s.rmap.len() as u64 - 1;
            let f = self.nodes[s.node as usize].frames[s.pfn as usize];
            if f.owner != OWNER_KSM || f.vpn != sid as u32 {
                return Err(format!("stable node {sid}: frame not owned by it"));
            }
            for &id in &s.rmap {
                let it = k.items[id as usize];
                let pte = self.procs[it.proc as usize].ptes[it.vpn as usize];
                if pte_node(pte) != s.node as usize
                    || pte_pfn(pte) != s.pfn
                    || pte & PTE_RDONLY == 0
                {
                    return Err(format!(
                        "stable node {sid}: proc {} vpn {} does not map it",
                        it.proc, it.vpn
                    ));
                }
            }
            if !k.stable_tree[s.tree as usize]
                .get(&s.content)
                .is_some_and(|d| d.contains(&(sid as u32)))
            {
                return Err(format!("stable node {sid} is not in its tree"));
            }
        }
        if shared != k.pages_shared || sharing != k.pages_sharing {
            return Err(format!(
                "pages_shared/sharing {}/{} but nodes give {shared}/{sharing}",
                k.pages_shared, k.pages_sharing
            ));
        }
        Ok(())
    }
}

/// When ksmd wakes after its batch ends at `t`: `wait_event_freezable_timeout` for
/// `msecs_to_jiffies(sleep_millisecs)` = N jiffies (HZ = 250). The timer wheel files the timer
/// one jiffy later than its expiry so that it never fires early (`calc_index` in
/// kernel/time/timer.c rounds `expires + 1` up to the level's granularity), so ksmd wakes on
/// the (N + 1)-th jiffy boundary after the one its batch ended in: 20–24 ms for the default
/// 20 ms. The 6.12 recording of `validation/ksm-pacing` (traced with the ksm_start_scan /
/// ksm_stop_scan events) shows 24.1–24.6 ms per batch of 100 pages.
pub fn ksmd_wake_after(t: SimTime, sleep_millisecs: u32) -> SimTime {
    const TICK_PS: u64 = 4_000_000_000;
    let jiffies = (sleep_millisecs as u64 * 1_000_000_000).div_ceil(TICK_PS);
    if jiffies == 0 {
        return t;
    }
    SimTime((t.0 / TICK_PS + jiffies + 1) * TICK_PS)
}

/// Store `v` in a slot freed earlier, else at the end: its index (the kernel's slab caches
/// of rmap items and stable nodes, as an index-addressed arena).
fn slab_insert<T>(slab: &mut Vec<T>, free: &mut Vec<u32>, v: T) -> u32 {
    match free.pop() {
        Some(i) => {
            slab[i as usize] = v;
            i
        }
        None => {
            slab.push(v);
            (slab.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use tiermem_core::config::KernelConfig;
    use tiermem_core::mempolicy::{MemPolicy, PolicyMode};
    use tiermem_core::topology::{MachineConfig, Topology};

    /// Two DRAM nodes on two sockets, KSM configured with `edit` applied.
    fn kernel(edit: impl FnOnce(&mut KsmConfig)) -> Kernel {
        let text = "name = \"t\"\n[[nodes]]\nid = 0\ncpus = 2\nsocket = 0\ncapacity = \"64MiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
                    [[nodes]]\nid = 1\ncpus = 2\nsocket = 1\ncapacity = \"64MiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n";
        let m: MachineConfig = toml::from_str(text).unwrap();
        let mut ksm = KsmConfig {
            run: 1,
            ..KsmConfig::default()
        };
        edit(&mut ksm);
        let cfg = KernelConfig {
            ksm: Some(ksm),
            ..KernelConfig::default()
        };
        Kernel::new(
            Topology::new(&m).unwrap(),
            cfg,
            rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1),
        )
    }

    /// A mergeable process on `node` whose pages have the given contents, all faulted in there.
    fn guest(k: &mut Kernel, node: u8, contents: &[u32]) -> u16 {
        let policy = MemPolicy {
            mode: PolicyMode::Bind,
            nodes: vec![NodeId(node)],
            ..Default::default()
        };
        let p = k
            .add_process(
                format!("g{node}"),
                NodeId(node),
                policy,
                vec![("ram".into(), contents.len() as u32, None)],
            )
            .unwrap();
        for (vpn, &c) in contents.iter().enumerate() {
            k.ksm_set_content(p, vpn as u32, c);
            k.handle_fault(p, vpn as u32, true, NodeId(node), SimTime::ZERO)
                .unwrap();
        }
        k.ksm_madvise_mergeable(p, 0).unwrap();
        p
    }

    /// Run ksmd until one more full pass has completed.
    fn pass(k: &mut Kernel) {
        let mut ksm = k.ksm.take().unwrap();
        let target = ksm.full_scans + 1;
        while ksm.full_scans < target {
            k.ksm_do_scan(&mut ksm, SimTime::ZERO);
        }
        k.ksm = Some(ksm);
        k.check_invariants().unwrap();
    }

    fn c(k: &Kernel, name: &str) -> i64 {
        k.ksm_counters().unwrap()[name]
    }

    fn is_ksm(k: &Kernel, p: u16, vpn: u32) -> bool {
        k.procs[p as usize].ptes[vpn as usize] & PTE_RDONLY != 0
    }

    #[test]
    fn ksm_needs_two_equal_checksums_before_the_unstable_tree() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[7, 7]);
        pass(&mut k);
        // First pass: both checksums are new (rmap items start at 0): volatile, no tree.
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_unshared")), (0, 0));
        assert_eq!(c(&k, "pages_volatile"), 2);
        pass(&mut k);
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (1, 1));
        assert!(is_ksm(&k, p, 0) && is_ksm(&k, p, 1));
    }

    #[test]
    fn a_page_written_between_passes_is_volatile_again() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[7, 7]);
        pass(&mut k);
        // A store between passes (the access loop's soft-dirty bit) gives a new content...
        k.procs[p as usize].ptes[0] |= PTE_SOFTDIRTY;
        pass(&mut k);
        assert_eq!(c(&k, "pages_shared"), 0);
        assert_ne!(k.ksm_page_content(p, 0), Some(7));
        // ...and the unchanged page waits alone in the unstable tree.
        assert_eq!(c(&k, "pages_unshared"), 1);
        // Its new content is stable from now on, but equal to nothing: never merged.
        pass(&mut k);
        pass(&mut k);
        assert_eq!(c(&k, "pages_shared"), 0);
    }

    #[test]
    fn the_unstable_tree_is_rebuilt_every_full_pass() {
        let mut k = kernel(|_| {});
        guest(&mut k, 0, &[1, 2, 3]);
        pass(&mut k);
        pass(&mut k);
        let mut ksm = k.ksm.take().unwrap();
        assert_eq!(ksm.unstable_tree[0].len(), 3);
        let mut cost = SimDuration::ZERO;
        assert!(k
            .ksm_next_item(&mut ksm, SimTime::ZERO, &mut cost)
            .is_some());
        assert!(
            ksm.unstable_tree[0].is_empty(),
            "reset at the start of a pass"
        );
        // The items keep their UNSTABLE flag (and pages_unshared) until ksmd reaches them.
        assert_eq!(ksm.pages_unshared, 3);
        k.ksm = Some(ksm);
    }

    #[test]
    fn per_node_trees_never_merge_across_nodes() {
        for mam in [1, 0] {
            let mut k = kernel(|c| c.merge_across_nodes = mam);
            let a = guest(&mut k, 0, &[5, 5, 9]);
            let b = guest(&mut k, 1, &[5, 9]);
            for _ in 0..4 {
                pass(&mut k);
            }
            let merged_b = is_ksm(&k, b, 0) || is_ksm(&k, b, 1);
            if mam == 1 {
                // One tree: everything with equal content is merged, wherever it lives.
                assert!(merged_b);
                assert_eq!(c(&k, "pages_sharing"), 3);
                assert_eq!(c(&k, "pages_shared"), 2);
            } else {
                // Per-node trees: node 0's two 5s merge; node 1's pages are never merged
                // with node 0's.
                assert!(!merged_b);
                assert!(is_ksm(&k, a, 0) && is_ksm(&k, a, 1) && !is_ksm(&k, a, 2));
                assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (1, 1));
                for vpn in 0..3 {
                    if let Some((_, node, tree)) = k.ksm_stable_node_of(a, vpn) {
                        assert_eq!((node, tree), (0, 0));
                    }
                }
            }
        }
    }

    #[test]
    fn merge_across_nodes_changes_only_without_ksm_pages() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[3, 3, 3]);
        pass(&mut k);
        pass(&mut k);
        assert!(c(&k, "pages_shared") > 0);
        let now = SimTime::ZERO;
        let busy = |r| matches!(r, Err(KsmError::Busy { .. }));
        let invalid = |r| matches!(r, Err(KsmError::Invalid { .. }));
        assert!(busy(k.ksm_sysfs_write("merge_across_nodes", "0", now)));
        assert!(busy(k.ksm_sysfs_write("max_page_sharing", "16", now)));
        // Writing the current value is not a change.
        k.ksm_sysfs_write("merge_across_nodes", "1", now).unwrap();
        assert!(invalid(k.ksm_sysfs_write("run", "3", now)));
        assert!(invalid(k.ksm_sysfs_write("max_page_sharing", "1", now)));
        // run = 2 unmerges everything; then the knob can change.
        k.ksm_sysfs_write("run", "2", now).unwrap();
        assert_eq!(c(&k, "pages_shared"), 0);
        assert_eq!(c(&k, "pages_sharing"), 0);
        assert_eq!(c(&k, "rmap_items"), 0);
        assert!((0..3).all(|v| !is_ksm(&k, p, v)));
        assert_eq!(
            k.ksm_page_content(p, 2),
            Some(3),
            "unmerging copies the content"
        );
        k.check_invariants().unwrap();
        k.ksm_sysfs_write("merge_across_nodes", "0", now).unwrap();
        assert_eq!(k.ksm_sysfs_read("merge_across_nodes").unwrap(), "0");
        k.ksm_sysfs_write("max_page_sharing", "16", now).unwrap();
        // ksmd idles with run = 2.
        k.run_ksmd(SimTime(1_000_000_000_000));
        assert_eq!(c(&k, "pages_shared"), 0);
        k.ksm_sysfs_write("run", "1", now).unwrap();
        pass(&mut k);
        pass(&mut k);
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (1, 2));
    }

    #[test]
    fn max_page_sharing_grows_stable_node_chains() {
        let mut k = kernel(|c| {
            c.max_page_sharing = 2;
            c.smart_scan = 0;
        });
        let p = guest(&mut k, 0, &[4; 5]);
        for _ in 0..4 {
            pass(&mut k);
        }
        // Two KSM pages (dups) of two mappings each in one chain; the fifth page waits.
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (2, 2));
        assert_eq!(c(&k, "stable_node_chains"), 1);
        assert_eq!(c(&k, "stable_node_dups"), 2);
        let mut per_dup = BTreeMap::new();
        for v in 0..5 {
            if let Some((sid, _, _)) = k.ksm_stable_node_of(p, v) {
                *per_dup.entry(sid).or_insert(0) += 1;
            }
        }
        assert_eq!(per_dup.values().copied().collect::<Vec<_>>(), vec![2, 2]);
        // A write frees room in one dup: the waiting page joins it (the fullest candidate).
        k.ksm_wp_fault(p, 0, NodeId(0), SimTime::ZERO).unwrap();
        assert_eq!(c(&k, "pages_sharing"), 1);
        k.procs[p as usize].ptes[0] |= PTE_SOFTDIRTY;
        pass(&mut k);
        assert_eq!(c(&k, "pages_sharing"), 2);
    }

    #[test]
    fn zero_pages_merge_into_the_zero_page_with_use_zero_pages() {
        for zp in [1, 0] {
            let mut k = kernel(|c| c.use_zero_pages = zp);
            let p = guest(&mut k, 0, &[0, 0, 0, 8]);
            let free0 = k.nodes[0].free;
            pass(&mut k);
            pass(&mut k);
            if zp == 1 {
                assert_eq!(c(&k, "ksm_zero_pages"), 3);
                assert_eq!(c(&k, "pages_shared"), 0);
                assert_eq!(k.nodes[0].free, free0 + 3, "the three frames are freed");
                assert!(k.procs[p as usize].ptes[0] & PTE_KSM_ZERO != 0);
                assert_eq!(
                    c(&k, "general_profit"),
                    3 * PAGE_SIZE as i64 - c(&k, "rmap_items") * RMAP_ITEM_BYTES
                );
                // A store to the zero page gets a private copy.
                k.ksm_wp_fault(p, 1, NodeId(0), SimTime::ZERO).unwrap();
                assert_eq!(c(&k, "ksm_zero_pages"), 2);
                assert_eq!(k.ksm_stat(p).unwrap().1, 2);
                k.check_invariants().unwrap();
            } else {
                assert_eq!(c(&k, "ksm_zero_pages"), 0);
                assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (1, 2));
                assert_eq!(k.nodes[0].free, free0 + 2);
            }
        }
    }

    #[test]
    fn a_write_to_a_merged_page_breaks_sharing_by_copy_on_write() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[6, 6]);
        pass(&mut k);
        pass(&mut k);
        let (sid, _, _) = k.ksm_stable_node_of(p, 0).unwrap();
        assert_eq!(k.ksm_stable_mappings(sid), 2);
        // The writer runs on node 1; its policy binds it to node 0, so the copy is there.
        let cost = k.ksm_wp_fault(p, 1, NodeId(1), SimTime::ZERO).unwrap();
        assert_eq!(cost, tiermem_core::ksm::KsmCosts::default().cow_fault);
        assert!(!is_ksm(&k, p, 1));
        assert!(k.procs[p as usize].ptes[1] & PTE_DIRTY != 0);
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (1, 0));
        assert_eq!(c(&k, "cow_ksm"), 1);
        k.check_invariants().unwrap();
        // The last mapping's write frees the KSM page.
        let free = k.nodes[0].free;
        k.ksm_wp_fault(p, 0, NodeId(0), SimTime::ZERO).unwrap();
        assert_eq!(c(&k, "pages_shared"), 0);
        assert_eq!(k.nodes[0].free, free, "one page copied, the KSM page freed");
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_migrated_ksm_page_moves_to_its_new_nodes_tree() {
        let mut k = kernel(|c| c.merge_across_nodes = 0);
        let a = guest(&mut k, 0, &[2, 2]);
        let b = guest(&mut k, 1, &[2]);
        pass(&mut k);
        pass(&mut k);
        let (sid, node, tree) = k.ksm_stable_node_of(a, 0).unwrap();
        assert_eq!((node, tree), (0, 0));
        // Migrate the KSM page to node 1 (as demotion or move_pages would).
        let pfn = pte_pfn(k.procs[a as usize].ptes[0]);
        k.nodes[0].lru_del(pfn);
        let z = k.nodes[1].zones.len() - 1;
        k.migrate_frame(0, pfn, (1, z), false);
        for v in 0..2 {
            assert_eq!(
                pte_node(k.procs[a as usize].ptes[v]),
                1,
                "every mapping follows"
            );
        }
        assert_eq!(k.ksm_stable_node_of(a, 1).unwrap(), (sid, 1, 0));
        k.check_invariants().unwrap();
        // ksmd finds the node on the wrong tree and relinks it; then node 1's page merges in.
        pass(&mut k);
        assert_eq!(k.ksm_stable_node_of(a, 0).unwrap(), (sid, 1, 1));
        pass(&mut k);
        assert_eq!(k.ksm_stable_node_of(b, 0).map(|x| x.0), Some(sid));
        assert_eq!(k.ksm_stable_mappings(sid), 3);
    }

    #[test]
    fn reclaim_sees_references_through_every_mapping() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[1, 1, 1]);
        pass(&mut k);
        pass(&mut k);
        let (sid, _, _) = k.ksm_stable_node_of(p, 0).unwrap();
        for v in 0..3 {
            k.procs[p as usize].ptes[v] |= PTE_ACCESSED;
        }
        assert_eq!(k.ksm_folio_referenced(sid), 3);
        assert_eq!(k.ksm_folio_referenced(sid), 0, "test-and-clear");
    }

    #[test]
    fn smart_scan_skips_pages_that_keep_failing_to_merge() {
        for smart in [1, 0] {
            let mut k = kernel(|c| c.smart_scan = smart);
            guest(&mut k, 0, &[11, 12, 13, 14]);
            for _ in 0..8 {
                pass(&mut k);
            }
            let skipped = c(&k, "pages_skipped");
            if smart == 1 {
                // Ages 0..2 are never skipped; from age 3 every other visit, then rarer.
                assert!(skipped > 0 && skipped < 4 * 8, "{skipped}");
            } else {
                assert_eq!(skipped, 0);
            }
        }
    }

    #[test]
    fn the_advisor_owns_pages_to_scan() {
        let mut k = kernel(|_| {});
        guest(&mut k, 0, &[1; 64]);
        let now = SimTime::ZERO;
        k.ksm_sysfs_write("advisor_mode", "scan-time", now).unwrap();
        assert_eq!(k.ksm_sysfs_read("pages_to_scan").unwrap(), "500");
        assert_eq!(
            k.ksm_sysfs_read("advisor_mode").unwrap(),
            "none [scan-time]"
        );
        assert!(matches!(
            k.ksm_sysfs_write("pages_to_scan", "100", now),
            Err(KsmError::Invalid { .. })
        ));
        // One pass in well under a second with almost no CPU: scan_time = 1 s, cpu% = 1,
        // factor = 200·100/1, pages = 500·100/20000 · change(30)/100 = 0; per_page_cost =
        // 500/1, so the floor per_page_cost × KSM_ADVISOR_MIN_CPU = 5000 wins.
        pass(&mut k);
        assert_eq!(k.ksm_sysfs_read("pages_to_scan").unwrap(), "5000");
        // The next pass: per_page_cost = 5000, floor 50000, capped by advisor_max_pages_to_scan.
        pass(&mut k);
        assert_eq!(k.ksm_sysfs_read("pages_to_scan").unwrap(), "30000");
        k.ksm_sysfs_write("advisor_mode", "none", now).unwrap();
        assert_eq!(k.ksm_sysfs_read("pages_to_scan").unwrap(), "100");
    }

    #[test]
    fn exit_drops_mappings_and_rmap_items() {
        let mut k = kernel(|_| {});
        let a = guest(&mut k, 0, &[1, 2, 3]);
        let b = guest(&mut k, 0, &[1, 2, 4]);
        pass(&mut k);
        pass(&mut k);
        assert_eq!(c(&k, "pages_shared"), 2);
        k.exit_process(a);
        k.check_invariants().unwrap();
        // b's pages are KSM pages with one mapping left.
        assert_eq!((c(&k, "pages_shared"), c(&k, "pages_sharing")), (2, 0));
        assert_eq!(c(&k, "rmap_items"), 3);
        k.exit_process(b);
        k.check_invariants().unwrap();
        assert_eq!(c(&k, "pages_shared"), 0);
        assert_eq!(c(&k, "rmap_items"), 0);
        assert_eq!(k.nodes[0].used_user(), 0);
    }

    #[test]
    fn unmergeable_and_prctl_enrolment() {
        let mut k = kernel(|_| {});
        let p = guest(&mut k, 0, &[1, 1]);
        pass(&mut k);
        pass(&mut k);
        assert_eq!(c(&k, "pages_sharing"), 1);
        k.ksm_madvise_unmergeable(p, 0, SimTime::ZERO).unwrap();
        assert_eq!((c(&k, "pages_shared"), c(&k, "rmap_items")), (0, 0));
        pass(&mut k);
        pass(&mut k);
        assert_eq!(c(&k, "pages_shared"), 0, "no longer VM_MERGEABLE");
        k.ksm_set_merge_any(p).unwrap();
        pass(&mut k);
        pass(&mut k);
        assert_eq!(c(&k, "pages_sharing"), 1);
    }

    #[test]
    fn skip_age_follows_smart_scan_steps() {
        assert_eq!(
            (0..12).map(skip_age).collect::<Vec<_>>(),
            [1, 1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8]
        );
    }

    #[test]
    fn general_profit_subtracts_rmap_items() {
        let mut k = Ksm::new(KsmConfig::default(), 2);
        k.pages_sharing = 10;
        k.ksm_zero_pages = 2;
        k.rmap_items = 30;
        assert_eq!(k.general_profit(), 12 * 4096 - 30 * 64);
        k.pages_shared = 5;
        k.pages_unshared = 3;
        assert_eq!(k.pages_volatile(), 30 - 5 - 10 - 3);
    }

    fn vm_config(ksm: &str) -> tiermem_core::config::SimConfig {
        let text = format!(
            "duration = \"2s\"\n[machine]\nname = \"t\"\nremote_latency = \"distance\"\n\
             [[machine.nodes]]\nid = 0\ncpus = 2\nsocket = 0\ncapacity = \"64MiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
             [[machine.nodes]]\nid = 1\ncpus = 2\nsocket = 1\ncapacity = \"64MiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
             {ksm}\n[[workloads]]\ntype = \"vm_guest\"\nguests = 4\nguest_mem = \"1MiB\"\nshared_write_pct_per_s = 20.0\n\
             unique_write_pct_per_s = 20.0\nprobe_start = \"1.5s\"\nprobe_duration = \"0.1s\"\n"
        );
        tiermem_core::config::SimConfig::from_toml_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn guests_merge_and_writes_from_the_access_loop_break_cow() {
        let cfg = vm_config("[kernel.ksm]\nrun = 1\npages_to_scan = 200\n");
        let mut sim = crate::engine::Simulation::new(&cfg).unwrap();
        let r = sim.run(&mut |_| {}).unwrap();
        sim.kernel.check_invariants().unwrap();
        let ksm = r.summary.ksm.as_ref().unwrap();
        assert!(ksm.sysfs["full_scans"] >= 3);
        assert!(ksm.sysfs["pages_sharing"] > 100, "{:?}", ksm.sysfs);
        assert!(
            ksm.sysfs["cow_ksm"] > 0,
            "stores to merged pages fault and copy"
        );
        assert!(
            ksm.sysfs["pages_volatile"] > 0,
            "unique writes make pages volatile"
        );
        assert!(ksm.ksmd_cpu_seconds > 0.0);
        assert_eq!(
            ksm.memory_saved_bytes,
            (ksm.sysfs["pages_sharing"] + ksm.sysfs["ksm_zero_pages"]) as u64 * PAGE_SIZE
        );
        // Same config and seed: byte-identical summary.
        let again = crate::engine::Simulation::new(&cfg)
            .unwrap()
            .run(&mut |_| {})
            .unwrap();
        assert_eq!(
            serde_json::to_string(&r.summary).unwrap(),
            serde_json::to_string(&again.summary).unwrap()
        );
    }

    #[test]
    fn without_ksm_guests_run_and_the_summary_has_no_ksm_section() {
        let cfg = vm_config("");
        let mut sim = crate::engine::Simulation::new(&cfg).unwrap();
        assert!(sim.kernel.ksm.is_none());
        let r = sim.run(&mut |_| {}).unwrap();
        sim.kernel.check_invariants().unwrap();
        let j = serde_json::to_value(&r.summary).unwrap();
        assert!(j.get("ksm").is_none());
        assert_eq!(j["workloads"][0]["guests"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn ksm_pages_survive_demotion_under_memory_pressure() {
        // 24 MiB of guests on a 16 MiB DRAM node with a CXL node below it: reclaim demotes
        // pages, KSM pages among them (every mapping follows), and with per-node trees
        // ksmd relinks the demoted KSM pages into the CXL node's tree.
        let text = "duration = \"3s\"\n[machine]\nname = \"t\"\n\
             [[machine.nodes]]\nid = 0\ncpus = 2\ncapacity = \"16MiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n\
             [[machine.nodes]]\nid = 1\ncapacity = \"64MiB\"\nkind = \"cxl\"\nread_latency = \"200ns\"\nread_bandwidth = \"10GB/s\"\n\
             [kernel]\ndemotion_enabled = true\n[kernel.ksm]\nrun = 1\npages_to_scan = 400\nmerge_across_nodes = 0\n\
             [[workloads]]\ntype = \"vm_guest\"\nguests = 6\nguest_mem = \"4MiB\"\n\
             shared_write_pct_per_s = 5.0\nprobe_start = \"2s\"\nprobe_duration = \"0.5s\"\n";
        let cfg = tiermem_core::config::SimConfig::from_toml_str(text, "t.toml").unwrap();
        let mut sim = crate::engine::Simulation::new(&cfg).unwrap();
        let r = sim.run(&mut |_| {}).unwrap();
        sim.kernel.check_invariants().unwrap();
        assert!(r.summary.vmstat["pgdemote_kswapd"] + r.summary.vmstat["pgdemote_direct"] > 0);
        let ksm = sim.kernel.ksm.as_ref().unwrap();
        let on_cxl = ksm
            .stable
            .iter()
            .filter(|s| s.live && s.node == 1)
            .inspect(|s| assert_eq!(s.tree, 1, "a KSM page on node 1 ends in node 1's tree"))
            .count();
        assert!(on_cxl > 0, "some KSM pages live on the CXL node");
    }
}
