//! The simulated kernel's memory management: page faults, the page allocator with node
//! fallback and watermarks, LRU reclaim (kswapd and direct), demotion, swap and zram, and
//! the OOM killer.
//!
//! Each function names the kernel function whose behaviour it follows. Simplifications
//! (stated where they are made): one zone per node; anonymous memory only (no page cache,
//! so reclaim scans the anon lists only, `SCAN_ANON`); order-0 pages (no THP); one
//! mapping per anonymous page (no fork), so the reverse map is the frame's owner/vpn.

use crate::mem::*;
use crate::vmstat::{Vm, VmStat};
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use tiermem_core::config::{KernelConfig, SwapConfig, ZramConfig};
use tiermem_core::interleave::{IlCursor, WeightTable};
use tiermem_core::mempolicy::MemPolicy;
use tiermem_core::topology::Topology;
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SIZE};
use tiermem_core::watermarks::{Watermarks, ZONE_MOVABLE};
use tiermem_core::ConfigError;

/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u8 = 12;
/// `MAX_RECLAIM_RETRIES`.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// A bitmask of nodes (`nodemask_t`, up to 64 nodes).
pub type NodeMask = u64;

/// One virtual memory area.
#[derive(Clone, Debug)]
pub struct Vma {
    /// Virtual start address.
    pub start: u64,
    pub pages: u32,
    /// Index of the VMA's first page in the process page table.
    pub pte_base: u32,
    /// VMA policy (`mbind`); `None` falls back to the task policy.
    pub policy: Option<MemPolicy>,
    pub name: String,
}

/// A simulated process: an address space and a task memory policy.
pub struct Process {
    pub name: String,
    /// Page table, one entry per virtual page of all VMAs.
    pub ptes: Vec<u64>,
    pub vmas: Vec<Vma>,
    pub policy: MemPolicy,
    /// Node of the CPUs the process runs on.
    pub cpu_node: NodeId,
    pub alive: bool,
    /// Resident pages (`get_mm_rss`).
    pub rss: u64,
    /// The task's interleave cursor (`il_prev`, `il_weight`).
    pub il: IlCursor,
}

impl Process {
    /// The VMA containing a page-table index.
    pub fn vma_of(&self, idx: u32) -> Option<&Vma> {
        self.vmas
            .iter()
            .find(|v| idx >= v.pte_base && idx < v.pte_base + v.pages)
    }
}

/// Who is reclaiming (`reclaimer_offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclaimer {
    Kswapd,
    Direct,
}

/// A swap area: slot allocator plus per-slot node (zram: the node its pool bytes are on).
struct SwapArea {
    capacity: u64,
    used: u64,
    next: u32,
    free_slots: Vec<u32>,
    slot_node: Vec<u8>,
}

impl SwapArea {
    fn new(capacity_pages: u64) -> Self {
        SwapArea {
            capacity: capacity_pages,
            used: 0,
            next: 0,
            free_slots: Vec::new(),
            slot_node: Vec::new(),
        }
    }
    fn has_room(&self) -> bool {
        self.used < self.capacity
    }
    fn alloc(&mut self, node: usize) -> u32 {
        self.used += 1;
        let s = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.next += 1;
                self.slot_node.push(0);
                self.next - 1
            }
        };
        self.slot_node[s as usize] = node as u8;
        s
    }
    fn free(&mut self, slot: u32) -> usize {
        self.used -= 1;
        self.free_slots.push(slot);
        self.slot_node[slot as usize] as usize
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
    fn reset_sweep(&mut self) {
        self.priority = DEF_PRIORITY;
        self.pass_scanned = 0;
        self.pass_reclaimed = 0;
        self.sweep_reclaimed = 0;
    }

    fn new() -> Self {
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

/// Why a fault could not be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// The faulting process was chosen by the OOM killer.
    OomKilled,
}

/// The simulated kernel.
pub struct Kernel {
    pub topo: Topology,
    pub cfg: KernelConfig,
    pub nodes: Vec<NodeMem>,
    pub procs: Vec<Process>,
    pub vmstat: VmStat,
    pub kswapd: Vec<Kswapd>,
    swap: Option<(SwapConfig, SwapArea)>,
    zram: Option<(ZramConfig, SwapArea)>,
    /// Compressed bytes held by zram, per node whose pages hold them.
    zram_pool_bytes: Vec<u64>,
    /// Memory traffic generated by the kernel (faults' zeroing, migration, swap) in the
    /// current timing window: (read bytes, write bytes) per node.
    pub kernel_traffic: Vec<(u64, u64)>,
    /// `numa_balancing` mode bits (`NUMA_BALANCING_MEMORY_TIERING` = 2 makes kswapd balance to
    /// the promo watermark). Set by the NUMA-balancing model.
    pub numa_balancing: u32,
    rng: Xoshiro256PlusPlus,
    /// NUMA-balancing state (scanner, hint faults, promotion).
    pub numa: crate::numa::NumaState,
    /// Processes killed by the OOM killer, in order.
    pub oom_victims: Vec<u16>,
    /// KSM (`[kernel.ksm]`): page contents, ksmd, the trees. `None` without KSM.
    pub ksm: Option<Box<crate::ksm::Ksm>>,
    /// The weighted-interleave weight table (`/sys/kernel/mm/mempolicy/weighted_interleave`).
    pub wi: WeightTable,
    /// `mbind` calls scheduled for later.
    pub pending_mbinds: Vec<crate::mempolicy::PendingMbind>,
    /// Host memory the page tables may still take.
    pub budget: crate::budget::Budget,
}

/// `NUMA_BALANCING_MEMORY_TIERING`.
pub const NUMA_BALANCING_MEMORY_TIERING: u32 = 2;

impl Kernel {
    pub fn new(topo: Topology, cfg: KernelConfig, rng: Xoshiro256PlusPlus) -> Self {
        let n = topo.nr_nodes();
        let numa_balancing = cfg.numa_balancing;
        let ksm = Self::ksm_init(cfg.ksm.as_ref(), n);
        let nodes = Self::boot_nodes(&topo, &cfg);
        let swap = cfg.swap.clone().map(|s| {
            let cap = s.capacity.pages_floor().0;
            (s, SwapArea::new(cap))
        });
        let zram = cfg.zram.clone().map(|z| {
            let cap = z.capacity.pages_floor().0;
            (z, SwapArea::new(cap))
        });
        let wi = boot_weight_table(&topo, &cfg);
        Kernel {
            budget: crate::budget::Budget::unlimited(&topo),
            wi,
            pending_mbinds: Vec::new(),
            topo,
            cfg,
            nodes,
            procs: Vec::new(),
            vmstat: VmStat::new(n),
            kswapd: vec![Kswapd::new(); n],
            swap,
            zram,
            zram_pool_bytes: vec![0; n],
            kernel_traffic: vec![(0, 0); n],
            numa_balancing,
            rng,
            numa: crate::numa::NumaState {
                pgdat: vec![Default::default(); n],
                ..Default::default()
            },
            oom_victims: Vec::new(),
            ksm,
        }
    }

    /// Per-CPU differentials for node statistics, with each node's `stat_threshold`
    /// (`refresh_zone_stat_thresholds`: the largest of its populated zones'). The simulation
    /// sets them and folds once a second; a kernel built alone keeps exact counters.
    pub fn set_vmstat_thresholds(&mut self) {
        let cpus: u32 = self.topo.nodes.iter().map(|n| n.cpus).sum::<u32>().max(1);
        let scale = (self.cfg.numa.model_scale as u64).max(1);
        for (n, node) in self.nodes.iter().enumerate() {
            let t = node
                .zones
                .iter()
                .filter(|z| z.managed > 0)
                .map(|z| tiermem_core::vmstat::normal_stat_threshold(z.managed * scale, cpus))
                .max()
                .unwrap_or(0);
            self.vmstat.set_node_threshold(n, t);
        }
    }

    /// The page frees a live machine makes on every CPU all the time (kernel buffers, other
    /// processes; in a recording, the recording process freeing what its reads of `/proc`
    /// allocated at each sample), taken at each timeline sample. They matter while reclaim
    /// is active on a node: `balance_pgdat` set `ZONE_RECLAIM_ACTIVE`, so `nr_pcp_high`
    /// lowers the pageset's `high` and the free that follows (`free_unref_page_commit`)
    /// flushes the list to the buddy allocator, even when kswapd itself frees nothing yet.
    /// Recorded (`low-free-fast`): node 0's pagesets come back 0.2–0.4 s after kswapd wakes,
    /// with no page demoted, and kswapd goes back to sleep after 90 000 pages scanned.
    pub fn background_frees(&mut self) {
        for n in 0..self.nodes.len() {
            if self.kswapd[n].awake {
                self.nodes[n].drain_pagesets();
            }
        }
    }

    /// `vmstat_update`, once a second: fold the counters' differentials and decay the
    /// pagesets' high marks.
    pub fn vmstat_update(&mut self) {
        self.vmstat.fold();
        let cpus = self
            .topo
            .nodes
            .iter()
            .map(|n| n.cpus as u64)
            .sum::<u64>()
            .max(1);
        for node in &mut self.nodes {
            node.decay_pagesets(cpus);
        }
    }

    /// The nodes' memory at boot: zones as `zone_sizes_init` derives them from the nodes'
    /// physical ranges ([`tiermem_core::watermarks::node_zones`]), each zone's watermarks
    /// (`__setup_per_zone_wmarks`: `min_free_kbytes` split over every zone by managed pages)
    /// and `lowmem_reserve`, then the memory the kernel and other programs hold (`reserved`).
    fn boot_nodes(topo: &Topology, cfg: &KernelConfig) -> Vec<NodeMem> {
        let managed: Vec<u64> = topo
            .nodes
            .iter()
            .map(|nd| nd.capacity.pages_floor().0)
            .collect();
        let spans = tiermem_core::watermarks::node_zones(&managed, cfg.numa.model_scale as u64);
        let mut nodes: Vec<NodeMem> = spans
            .iter()
            .map(|z| {
                let mut n = NodeMem::new(tiermem_core::units::Pages(0));
                n.set_zones(z);
                n
            })
            .collect();
        let total: u64 = managed.iter().sum();
        let mfk = cfg
            .min_free_kbytes
            .unwrap_or_else(|| default_min_free_kbytes(total));
        let wsf = cfg.watermark_scale_factor;
        for node in nodes.iter_mut() {
            node.set_watermarks(|z| zone_watermarks(z.managed, total, mfk, wsf));
        }
        for (node, nc) in nodes.iter_mut().zip(&topo.nodes) {
            node.take_kernel_pages(nc.reserved.pages_floor().0);
            node.pagesets = node.take_kernel_pages(nc.pagesets.pages_floor().0);
            node.pagesets_high = nc.pagesets_high.pages_floor().0;
            node.lay_out_frames();
        }
        nodes
    }

    /// Create a process with the given VMAs (name, size in pages, optional VMA policy).
    /// VMAs are laid out with gaps between them, like heap and mmap areas.
    pub fn add_process(
        &mut self,
        name: String,
        cpu_node: NodeId,
        policy: MemPolicy,
        vmas: Vec<(String, u32, Option<MemPolicy>)>,
    ) -> Result<u16, ConfigError> {
        let id = self.procs.len();
        // Frame owners are 16-bit, with two values reserved (free, KSM).
        if id >= OWNER_KSM as usize {
            return Err(ConfigError::invalid(
                "workloads",
                format!("more than {} processes in all (process {name})", OWNER_KSM),
            ));
        }
        let pages: u64 = vmas.iter().map(|v| v.1 as u64).sum();
        if pages > u32::MAX as u64 / 2 {
            return Err(ConfigError::invalid(
                "workloads",
                format!("process {name} maps {pages} pages, over the simulator's 2^31 per process"),
            ));
        }
        self.budget.add_process(&name, pages)?;
        let mut total = 0u32;
        let mut addr = 0x5555_0000_0000u64;
        let mut out = Vec::new();
        for (vname, pages, pol) in vmas {
            out.push(Vma {
                start: addr,
                pages,
                pte_base: total,
                policy: pol,
                name: vname,
            });
            total += pages;
            // A 1 GiB-aligned gap after each VMA.
            addr = (addr + pages as u64 * PAGE_SIZE + (2 << 30)) & !((1 << 30) - 1);
        }
        self.procs.push(Process {
            name,
            ptes: vec![0; total as usize],
            vmas: out,
            policy,
            cpu_node,
            alive: true,
            rss: 0,
            il: IlCursor::default(),
        });
        self.ksm_add_process(id as u16);
        Ok(id as u16)
    }

    // --- Page allocator -----------------------------------------------------------------

    /// The zonelist of a node filtered by a nodemask (`for_each_zone_zonelist_nodemask`).
    fn zonelist(
        &self,
        preferred: NodeId,
        mask: Option<NodeMask>,
    ) -> impl Iterator<Item = usize> + '_ {
        self.topo.fallback[preferred.idx()]
            .iter()
            .map(|n| n.idx())
            .filter(move |n| mask.is_none_or(|m| m & (1u64 << n) != 0))
    }

    /// An allocation without direct reclaim (`gfp & ~__GFP_DIRECT_RECLAIM`, as
    /// `alloc_pages_preferred_many`'s first try): the fast path at the low watermark, then
    /// the slow path's kswapd wakeups and the min watermark; `None` if that fails.
    pub fn alloc_no_direct_reclaim(
        &mut self,
        owner: u16,
        vpn: u32,
        preferred: NodeId,
        mask: NodeMask,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Option<(usize, u32, SimDuration)> {
        let zl: Vec<usize> = self.zonelist(preferred, Some(mask)).collect();
        let first = *zl.first()?;
        let pick = self.first_zone(&zl, |w| w.low).or_else(|| {
            for &n in &zl {
                self.wakeup_kswapd(n, now);
            }
            self.first_zone(&zl, |w| w.min)
        })?;
        let (n, pfn) = self.take_on(pick, first, cpu_node.idx(), owner, vpn);
        Some((n, pfn, SimDuration::ZERO))
    }

    /// The first (node, zone) of a zonelist (nodes in fallback order, each node's zones
    /// highest first) that passes `mark` for a user page (`get_page_from_freelist` at
    /// order 0, class zone `ZONE_MOVABLE`).
    pub(crate) fn first_zone(
        &self,
        zl: &[usize],
        mark: impl Fn(&Watermarks) -> u64,
    ) -> Option<(usize, usize)> {
        zl.iter().find_map(|&n| {
            self.nodes[n]
                .zone_above(&mark, ZONE_MOVABLE)
                .map(|z| (n, z))
        })
    }

    /// Take a frame from zone `z` of node `n` and count `zone_statistics`.
    fn take_on(
        &mut self,
        (n, z): (usize, usize),
        preferred: usize,
        cpu_node: usize,
        owner: u16,
        vpn: u32,
    ) -> (usize, u32) {
        let pfn = self.nodes[n].take_frame_in(z, owner, vpn);
        self.vmstat.inc(n, Vm::PgallocNormal);
        if n == preferred {
            self.vmstat.inc(n, Vm::NumaHit);
        } else {
            self.vmstat.inc(n, Vm::NumaMiss);
            self.vmstat.inc(preferred, Vm::NumaForeign);
        }
        self.vmstat.inc(
            n,
            if n == cpu_node {
                Vm::NumaLocal
            } else {
                Vm::NumaOther
            },
        );
        (n, pfn)
    }

    /// `__alloc_pages` for a user page: fast path at the low watermark along the zonelist;
    /// slow path (`__alloc_pages_slowpath`): wake every kswapd of the zonelist, retry at the
    /// min watermark, then direct reclaim (`try_to_free_pages`) and retry, up to
    /// `MAX_RECLAIM_RETRIES` rounds without progress, then the OOM killer.
    /// Returns the node and frame, and the time the caller spent in direct reclaim.
    pub fn alloc_user_page(
        &mut self,
        owner: u16,
        vpn: u32,
        preferred: NodeId,
        mask: Option<NodeMask>,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<(usize, u32, SimDuration), FaultError> {
        let zl: Vec<usize> = self.zonelist(preferred, mask).collect();
        let first = zl.first().copied().unwrap_or(preferred.idx());
        // Fast path: ALLOC_WMARK_LOW. A node failing it is skipped without waking its
        // kswapd (node_reclaim_mode is 0).
        if let Some(at) = self.first_zone(&zl, |w| w.low) {
            let (n, pfn) = self.take_on(at, first, cpu_node.idx(), owner, vpn);
            return Ok((n, pfn, SimDuration::ZERO));
        }
        // Slow path: wake_all_kswapds, then the min watermark, then direct reclaim; repeated
        // until MAX_RECLAIM_RETRIES rounds make no progress.
        let mut cost = SimDuration::ZERO;
        let mut no_progress = 0;
        let mut oom_kills = 0;
        loop {
            for &n in &zl {
                self.wakeup_kswapd(n, now);
            }
            if let Some(at) = self.first_zone(&zl, |w| w.min) {
                let (n, pfn) = self.take_on(at, first, cpu_node.idx(), owner, vpn);
                return Ok((n, pfn, cost));
            }
            if no_progress <= MAX_RECLAIM_RETRIES {
                let r = self.try_to_free_pages(&zl);
                cost += r.cost;
                if r.reclaimed > 0 {
                    no_progress = 0;
                    continue;
                }
                no_progress += 1;
                if r.scanned > 0 {
                    continue;
                }
            }
            // __alloc_pages_may_oom: a last try at the high watermark, then the OOM killer;
            // after a kill the slow path starts over.
            if let Some(at) = self.first_zone(&zl, |w| w.high) {
                let (n, pfn) = self.take_on(at, first, cpu_node.idx(), owner, vpn);
                return Ok((n, pfn, cost));
            }
            self.out_of_memory(owner);
            oom_kills += 1;
            if !self.procs[owner as usize].alive {
                return Err(FaultError::OomKilled);
            }
            no_progress = 0;
            if oom_kills > self.procs.len() {
                self.kill_process(owner);
                return Err(FaultError::OomKilled);
            }
        }
    }

    /// `out_of_memory` → `select_bad_process`: kill the live process with the most
    /// resident + swapped pages (oom_badness without adjustments).
    fn out_of_memory(&mut self, requester: u16) {
        let victim = (0..self.procs.len())
            .filter(|&p| self.procs[p].alive)
            .max_by_key(|&p| {
                let pages = self.procs[p]
                    .ptes
                    .iter()
                    .filter(|&&e| pte_maps_frame(e) || e & (PTE_SWAP | PTE_ZRAM) != 0)
                    .count();
                (pages, usize::MAX - p)
            })
            .unwrap_or(requester as usize);
        tracing::warn!(victim = %self.procs[victim].name, "out of memory: killing process");
        self.kill_process(victim as u16);
    }

    /// The OOM killer's kill: count it, then tear the process down.
    pub fn kill_process(&mut self, p: u16) {
        if !self.procs[p as usize].alive {
            return;
        }
        self.oom_victims.push(p);
        let node0 = self.procs[p as usize].cpu_node.idx();
        self.vmstat.inc(node0, Vm::OomKill);
        self.exit_process(p);
    }

    /// A process exits (`exit_mmap`): free its frames and swap slots.
    pub fn exit_process(&mut self, p: u16) {
        if !self.procs[p as usize].alive {
            return;
        }
        self.procs[p as usize].alive = false;
        let ptes = std::mem::take(&mut self.procs[p as usize].ptes);
        for (vpn, pte) in ptes.iter().copied().enumerate() {
            if pte & PTE_ZERO != 0 {
                continue;
            }
            if pte & PTE_RDONLY != 0 && pte & PTE_PRESENT != 0 {
                // A KSM page or the KSM zero page: drop this mapping only.
                self.ksm_unmap(p, vpn as u32, pte);
                continue;
            }
            self.release_pte(pte);
        }
        self.ksm_exit(p);
        self.procs[p as usize].ptes = vec![0; ptes.len()];
        self.procs[p as usize].rss = 0;
    }

    fn release_pte(&mut self, pte: u64) {
        if pte & PTE_PRESENT != 0 {
            let n = pte_node(pte);
            let pfn = pte_pfn(pte);
            self.nodes[n].lru_del(pfn);
            self.nodes[n].free_frame(pfn);
            self.vmstat.inc(n, Vm::Pgfree);
        } else if pte & PTE_ZRAM != 0 {
            self.zram_free_slot(pte_pfn(pte));
        } else if pte & PTE_SWAP != 0 {
            if let Some((_, a)) = self.swap.as_mut() {
                a.free(pte_pfn(pte));
            }
        }
    }

    // --- Faults -------------------------------------------------------------------------

    /// Handle a fault on a non-present PTE: a first-touch anonymous fault
    /// (`do_anonymous_page`) or a swap-in (`do_swap_page`). Returns the time the faulting
    /// thread spends in the kernel.
    #[allow(
        clippy::expect_used,
        reason = "a zram or swap PTE exists only when that device is configured"
    )]
    pub fn handle_fault(
        &mut self,
        p: u16,
        idx: u32,
        write: bool,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<SimDuration, FaultError> {
        let pte = self.procs[p as usize].ptes[idx as usize];
        debug_assert!(pte & PTE_PRESENT == 0);
        if !write && pte & (PTE_SWAP | PTE_ZRAM) == 0 {
            // do_anonymous_page: a load maps the shared zero page; nothing is allocated.
            self.procs[p as usize].ptes[idx as usize] = PTE_ZERO_PAGE;
            self.vmstat.inc(cpu_node.0 as usize, Vm::Pgfault);
            return Ok(self.cfg.costs.zero_page_fault);
        }
        // get_vma_policy + alloc_pages_mpol: interleave modes pick by the page's index.
        let ilx = self.interleave_index(p, idx);
        let plan = self.policy_plan(self.effective_policy(p, idx), ilx, cpu_node);
        let (n, pfn, reclaim_cost) = self.alloc_by_plan(p, idx, plan, cpu_node, now)?;
        let mut cost = reclaim_cost;
        self.vmstat.inc(n, Vm::Pgfault);
        let mut new_pte = pte_mk(n, pfn) | PTE_ACCESSED;
        if pte & (PTE_SWAP | PTE_ZRAM) != 0 {
            // Swap-in: read the page back, free the slot (the page is exclusive to this mm).
            let slot = pte_pfn(pte);
            cost += self.cfg.costs.swapin_fault;
            if pte & PTE_ZRAM != 0 {
                let z = self
                    .zram
                    .as_ref()
                    .expect("zram PTE without zram")
                    .0
                    .decompress_cost;
                cost += z;
                self.zram_free_slot(slot);
            } else {
                let (s, a) = self.swap.as_mut().expect("swap PTE without swap");
                cost += s.read_latency;
                a.free(slot);
            }
            self.vmstat.inc(n, Vm::Pswpin);
            self.vmstat.inc(n, Vm::Pgmajfault);
        } else {
            // First touch: zero-filled page.
            cost += self.cfg.costs.anon_fault;
        }
        // The page fill (zeroing or decompression, 4 KiB of stores) is memory traffic of
        // the faulting thread; the engine charges it to the thread so that it is throttled
        // like the thread's own accesses.
        if write {
            new_pte |= PTE_DIRTY;
        }
        self.procs[p as usize].ptes[idx as usize] = new_pte;
        self.procs[p as usize].rss += 1;
        // folio_add_lru_vma: new anonymous pages start on the inactive list (no MGLRU).
        self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
        Ok(cost)
    }

    /// A store to the zero page (`do_wp_page` → `wp_page_copy`): a zeroed page, placed by
    /// the policy as a first touch is, replaces the mapping.
    pub fn zero_page_wp_fault(
        &mut self,
        p: u16,
        idx: u32,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<SimDuration, FaultError> {
        debug_assert!(self.procs[p as usize].ptes[idx as usize] & PTE_ZERO != 0);
        self.procs[p as usize].ptes[idx as usize] = 0;
        self.handle_fault(p, idx, true, cpu_node, now)
    }

    // --- Reclaim ------------------------------------------------------------------------

    /// `can_demote`: demotion enabled and a demotion target exists.
    pub fn can_demote(&self, n: usize) -> bool {
        self.cfg.demotion_enabled && !self.topo.demotion_preferred[n].is_empty()
    }

    fn swap_has_room(&self) -> bool {
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
            // kswapd_shrink_node: Σ over the eligible zones of max(high, SWAP_CLUSTER_MAX).
            let nr_to_reclaim: u64 = self.nodes[n]
                .zones
                .iter()
                .map(|z| z.wmark.high.max(SWAP_CLUSTER_MAX))
                .sum();
            let lru_total =
                self.nodes[n].lru_len(Lru::InactiveAnon) + self.nodes[n].lru_len(Lru::ActiveAnon);
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
                }
            }
        }
    }

    fn kswapd_sleep(&mut self, n: usize) {
        let k = &mut self.kswapd[n];
        k.awake = false;
        k.reset_sweep();
    }

    /// `try_to_free_pages` → `do_try_to_free_pages`: reclaim `SWAP_CLUSTER_MAX` pages from
    /// the zonelist, lowering the priority from `DEF_PRIORITY` until enough is reclaimed.
    fn try_to_free_pages(&mut self, zl: &[usize]) -> ReclaimResult {
        let mut total = ReclaimResult::default();
        if let Some(&first) = zl.first() {
            self.vmstat.inc(first, Vm::AllocstallMovable);
        }
        // __alloc_pages_direct_reclaim retries after drain_all_pages: every CPU's pagesets.
        for node in &mut self.nodes {
            node.drain_pagesets();
        }
        let mut prio = DEF_PRIORITY as i32;
        while prio >= 0 && total.reclaimed < SWAP_CLUSTER_MAX {
            for &n in zl {
                let r = self.shrink_node(
                    n,
                    SWAP_CLUSTER_MAX - total.reclaimed.min(SWAP_CLUSTER_MAX),
                    prio as u8,
                    Reclaimer::Direct,
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
        total
    }

    /// `shrink_node` → `shrink_lruvec` with `SCAN_ANON`: scan up to `lru_size >> priority`
    /// of each anon list in `SWAP_CLUSTER_MAX` batches until `nr_to_reclaim` is met; the
    /// active list is aged only while the inactive list is low (`may_deactivate`); then
    /// `shrink_active_list(SWAP_CLUSTER_MAX)` if the inactive list is still low.
    pub fn shrink_node(
        &mut self,
        n: usize,
        nr_to_reclaim: u64,
        priority: u8,
        who: Reclaimer,
    ) -> ReclaimResult {
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
        let proportional = who == Reclaimer::Direct && priority == DEF_PRIORITY;
        while nr_inactive > 0 {
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
    fn folio_referenced(&mut self, n: usize, pfn: u32) -> u32 {
        let f = self.nodes[n].frames[pfn as usize];
        if f.owner == OWNER_KSM {
            return self.ksm_folio_referenced(f.vpn);
        }
        let pte = &mut self.procs[f.owner as usize].ptes[f.vpn as usize];
        let mut refs = 0;
        if *pte & PTE_ACCESSED != 0 {
            *pte &= !PTE_ACCESSED;
            refs = 1;
        }
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

    /// `shrink_active_list`: move pages from the tail of the active list to the inactive
    /// list. Referenced anonymous pages are deactivated too (only executable file pages are
    /// kept active); the rmap walk clears their accessed bits.
    fn shrink_active_list(&mut self, n: usize, nr: u64) -> SimDuration {
        let mut scanned = 0;
        while scanned < nr {
            let Some(pfn) = self.nodes[n].lru_tail(Lru::ActiveAnon) else {
                break;
            };
            scanned += 1;
            self.nodes[n].lru_del(pfn);
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
    fn shrink_inactive_list(&mut self, n: usize, nr: u64, who: Reclaimer) -> ReclaimResult {
        let mut res = ReclaimResult::default();
        let mut to_reclaim: Vec<u32> = Vec::with_capacity(nr as usize);
        while res.scanned < nr {
            let Some(pfn) = self.nodes[n].lru_tail(Lru::InactiveAnon) else {
                break;
            };
            res.scanned += 1;
            self.nodes[n].lru_del(pfn);
            let refs = self.folio_referenced(n, pfn);
            let f = &mut self.nodes[n].frames[pfn as usize];
            let referenced_folio = f.flags & F_REFERENCED != 0;
            f.flags &= !F_REFERENCED;
            if refs > 0 {
                f.flags |= F_REFERENCED;
                if referenced_folio {
                    self.nodes[n].lru_add(Lru::ActiveAnon, pfn);
                    self.vmstat.inc(n, Vm::Pgactivate);
                } else {
                    self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
                }
            } else {
                to_reclaim.push(pfn);
            }
        }
        let (scan_ev, steal_ev, demote_ev) = match who {
            Reclaimer::Kswapd => (Vm::PgscanKswapd, Vm::PgstealKswapd, Vm::PgdemoteKswapd),
            Reclaimer::Direct => (Vm::PgscanDirect, Vm::PgstealDirect, Vm::PgdemoteDirect),
        };
        self.vmstat.add(n, scan_ev, res.scanned);
        self.vmstat.add(n, Vm::PgscanAnon, res.scanned);
        res.cost += SimDuration(self.cfg.costs.reclaim_scan_page.0 * res.scanned);

        let mut failed = Vec::new();
        if self.can_demote(n) && !to_reclaim.is_empty() {
            let (demoted, cost) = self.demote_folio_list(n, &to_reclaim, &mut failed);
            res.reclaimed += demoted;
            res.cost += cost;
            self.vmstat.add(n, demote_ev, demoted);
        } else {
            failed = to_reclaim;
        }
        // Second pass without demotion: swap out or activate.
        for pfn in failed {
            match self.swap_out(n, pfn) {
                Some(cost) => {
                    res.reclaimed += 1;
                    res.cost += cost;
                }
                None => {
                    self.nodes[n].lru_add(Lru::ActiveAnon, pfn);
                    self.vmstat.inc(n, Vm::Pgactivate);
                }
            }
        }
        self.vmstat.add(n, steal_ev, res.reclaimed);
        self.vmstat.add(n, Vm::PgstealAnon, res.reclaimed);
        res
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
    fn demote_folio_list(
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

    /// Isolate a mapped frame from its LRU list and migrate it to `dst` ([`Self::migrate_frame`]),
    /// keeping it active if it was. Returns the new frame.
    pub(crate) fn isolate_and_migrate(&mut self, src: usize, pfn: u32, dst: (usize, usize)) -> u32 {
        let active = self.nodes[src].lru_of(pfn) == Some(Lru::ActiveAnon);
        self.nodes[src].lru_del(pfn);
        self.migrate_frame(src, pfn, dst, active)
    }

    /// Move one isolated (off-LRU) page from node `src` to node `dst` (`migrate_pages` for
    /// one folio): allocate on `dst` (the caller checked the watermark), copy, remap the PTE
    /// (keeping its accessed/dirty bits), put the new frame on `dst`'s LRU (inactive unless
    /// `active`), free the old frame. Charges the copy traffic to both nodes.
    pub fn migrate_frame(
        &mut self,
        src: usize,
        pfn: u32,
        (dst, zone): (usize, usize),
        active: bool,
    ) -> u32 {
        let f = self.nodes[src].frames[pfn as usize];
        let new_pfn = self.nodes[dst].take_frame_in(zone, f.owner, f.vpn);
        {
            let nf = &mut self.nodes[dst].frames[new_pfn as usize];
            nf.flags = f.flags & (F_REFERENCED | F_IDLE | F_YOUNG); // folio_migrate_flags keeps idle/young too
            nf.atime = f.atime;
        }
        // remove_migration_pte rebuilds the PTE from the VMA's protection: the NUMA hint is lost.
        if f.owner == OWNER_KSM {
            self.ksm_migrated(f.vpn, dst, new_pfn);
        } else {
            let pte = &mut self.procs[f.owner as usize].ptes[f.vpn as usize];
            let keep = *pte & (PTE_ACCESSED | PTE_DIRTY | PTE_SOFTDIRTY);
            *pte = pte_mk(dst, new_pfn) | keep;
        }
        // folio_migrate_flags: in tiering mode crossing the top-tier boundary resets the
        // cpupid/access-time field.
        if self.numa_balancing & NUMA_BALANCING_MEMORY_TIERING != 0
            && self.topo.is_toptier(NodeId(src as u8)) != self.topo.is_toptier(NodeId(dst as u8))
        {
            self.nodes[dst].frames[new_pfn as usize].atime = crate::numa::CPUPID_UNSET;
        }
        self.nodes[dst].lru_add(
            if active {
                Lru::ActiveAnon
            } else {
                Lru::InactiveAnon
            },
            new_pfn,
        );
        self.nodes[src].free_frame(pfn);
        self.vmstat.inc(dst, Vm::PgallocNormal);
        self.vmstat.inc(src, Vm::Pgfree);
        self.vmstat.inc(src, Vm::PgmigrateSuccess);
        self.kernel_traffic[src].0 += PAGE_SIZE;
        self.kernel_traffic[dst].1 += PAGE_SIZE;
        new_pfn
    }

    /// `pageout` via `add_to_swap`: zram first (higher swap priority), then the swap device.
    /// Returns the cost, or `None` when no swap space is left.
    pub(crate) fn swap_out(&mut self, n: usize, pfn: u32) -> Option<SimDuration> {
        let f = self.nodes[n].frames[pfn as usize];
        if f.owner == OWNER_KSM {
            // Simplification: KSM pages are not swapped (the kernel can swap them through
            // the rmap walk); reclaim keeps them, demotion may still move them.
            return None;
        }
        let mut cost = self.cfg.costs.reclaim_unmap_page;
        let new_pte;
        if let Some((z, area)) = self.zram.as_mut().filter(|(_, a)| a.has_room()) {
            // zs_malloc allocates on the reclaiming CPU's node: kswapd of a CPU-less node runs
            // on the nearest CPU node, so its compressed pages land there.
            let pool_node = self.topo.nearest_cpu_node(NodeId(n as u8)).idx();
            let slot = area.alloc(pool_node);
            cost += z.compress_cost;
            let compressed = (PAGE_SIZE as f64 / z.compression_ratio).ceil() as u64;
            new_pte = PTE_ZRAM | slot as u64;
            self.zram_pool_add(pool_node, compressed as i64);
            self.kernel_traffic[n].0 += PAGE_SIZE;
        } else if let Some((s, area)) = self.swap.as_mut().filter(|(_, a)| a.has_room()) {
            let slot = area.alloc(n);
            cost += SimDuration::from_secs_f64(PAGE_SIZE as f64 / s.write_bandwidth.bytes_per_s());
            new_pte = PTE_SWAP | slot as u64;
            self.kernel_traffic[n].0 += PAGE_SIZE;
        } else {
            return None;
        }
        self.procs[f.owner as usize].ptes[f.vpn as usize] = new_pte;
        self.procs[f.owner as usize].rss -= 1;
        self.nodes[n].free_frame(pfn);
        self.vmstat.inc(n, Vm::Pswpout);
        self.vmstat.inc(n, Vm::Pgfree);
        Some(cost)
    }

    /// Adjust the zram pool on node `n` by `delta` bytes, charging whole pages to the node.
    fn zram_pool_add(&mut self, n: usize, delta: i64) {
        let before = self.zram_pool_bytes[n].div_ceil(PAGE_SIZE);
        self.zram_pool_bytes[n] = (self.zram_pool_bytes[n] as i64 + delta).max(0) as u64;
        let after = self.zram_pool_bytes[n].div_ceil(PAGE_SIZE);
        let node = &mut self.nodes[n];
        if after > before {
            node.take_kernel_pages(after - before);
        } else {
            node.return_kernel_pages(before - after);
        }
    }

    fn zram_free_slot(&mut self, slot: u32) {
        let Some((z, area)) = self.zram.as_mut() else {
            return;
        };
        let compressed = (PAGE_SIZE as f64 / z.compression_ratio).ceil() as u64;
        let n = area.free(slot);
        self.zram_pool_add(n, -(compressed as i64));
    }

    // --- Accounting ---------------------------------------------------------------------

    /// Pages in swap and zram.
    pub fn swapped_pages(&self) -> (u64, u64) {
        (
            self.swap.as_ref().map_or(0, |(_, a)| a.used),
            self.zram.as_ref().map_or(0, |(_, a)| a.used),
        )
    }

    /// Bytes of compressed data in zram.
    pub fn zram_pool_bytes(&self) -> u64 {
        self.zram_pool_bytes.iter().sum()
    }

    /// Host memory used by page tables and frame tables (bytes).
    pub fn host_bytes(&self) -> usize {
        self.procs
            .iter()
            .map(|p| p.ptes.capacity() * 8)
            .sum::<usize>()
            + self.nodes.iter().map(|n| n.host_bytes()).sum::<usize>()
            + self.ksm.as_ref().map_or(0, |k| k.host_bytes())
    }

    /// Check the memory invariants; returns a description of the first violation.
    /// Pages on nodes + swapped + zram = pages mapped by processes; each present PTE points
    /// at a frame owned by exactly that PTE; free counts add up.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut user_on_node = vec![0u64; self.nodes.len()];
        let (mut swapped, mut zrammed) = (0u64, 0u64);
        for (pi, p) in self.procs.iter().enumerate() {
            for (vi, &pte) in p.ptes.iter().enumerate() {
                if pte & PTE_ZERO != 0 {
                    continue;
                }
                if pte & PTE_PRESENT != 0 && pte & PTE_RDONLY != 0 {
                    // KSM mappings are checked against the stable nodes by ksm_check.
                    if pte & PTE_KSM_ZERO == 0 {
                        let f = self.nodes[pte_node(pte)].frames[pte_pfn(pte) as usize];
                        if f.owner != OWNER_KSM {
                            return Err(format!(
                                "proc {pi} vpn {vi}: write-protected PTE on a non-KSM frame"
                            ));
                        }
                    }
                } else if pte & PTE_PRESENT != 0 {
                    let n = pte_node(pte);
                    let f = self.nodes[n]
                        .frames
                        .get(pte_pfn(pte) as usize)
                        .ok_or("PTE points past the frame table")?;
                    if f.owner as usize != pi || f.vpn as usize != vi {
                        return Err(format!(
                            "proc {pi} vpn {vi}: frame {}:{} is owned by {}:{}",
                            n,
                            pte_pfn(pte),
                            f.owner,
                            f.vpn
                        ));
                    }
                    user_on_node[n] += 1;
                } else if pte & PTE_ZRAM != 0 {
                    zrammed += 1;
                } else if pte & PTE_SWAP != 0 {
                    swapped += 1;
                }
            }
        }
        for (n, node) in self.nodes.iter().enumerate() {
            user_on_node[n] += node.frames.iter().filter(|f| f.owner == OWNER_KSM).count() as u64;
            let owned = node.frames.iter().filter(|f| f.owner != OWNER_FREE).count() as u64;
            if owned != user_on_node[n] {
                return Err(format!(
                    "node {n}: {owned} frames owned but {} mapped",
                    user_on_node[n]
                ));
            }
            let zone_free: u64 = node.zones.iter().map(|z| z.free).sum();
            if zone_free != node.free {
                return Err(format!(
                    "node {n}: zones hold {zone_free} free pages, the node {}",
                    node.free
                ));
            }
            if node.free + node.kernel_pages + owned != node.present {
                return Err(format!(
                    "node {n}: free {} + kernel {} + used {owned} != present {}",
                    node.free, node.kernel_pages, node.present
                ));
            }
            let on_lru = node.lru_len(Lru::InactiveAnon) + node.lru_len(Lru::ActiveAnon);
            if on_lru != owned {
                return Err(format!(
                    "node {n}: {on_lru} pages on LRU lists but {owned} in use"
                ));
            }
        }
        self.ksm_check()?;
        let (s, z) = self.swapped_pages();
        if s != swapped || z != zrammed {
            return Err(format!(
                "swap slots {s}/{z} != swapped PTEs {swapped}/{zrammed}"
            ));
        }
        Ok(())
    }
}

/// The weight table at boot: the configured semantics; on 6.16+ every node with memory
/// reports its bandwidth (`node_set_perf_attrs` → `mempolicy_set_node_perf`, the HMAT
/// access-class-1 figures: the machine's read and write bandwidth), which sets the `auto`
/// weights; then the configured sysfs writes (`nodeN`, then `auto`).
fn boot_weight_table(topo: &Topology, cfg: &KernelConfig) -> WeightTable {
    let wc = &cfg.weighted_interleave;
    let has_memory: Vec<bool> = topo.nodes.iter().map(|n| n.capacity.0 > 0).collect();
    let mut t = WeightTable::new(wc.semantics(), has_memory.clone());
    for (i, n) in topo.nodes.iter().enumerate() {
        if has_memory[i] {
            t.set_node_perf(
                i as u32,
                n.read_bandwidth.bytes_per_s(),
                n.write_bandwidth.bytes_per_s(),
            );
        }
    }
    if let Some(w) = &wc.weights {
        for (i, v) in w.iter().enumerate() {
            if has_memory.get(i).copied().unwrap_or(false) {
                // Validated with the config: cannot fail.
                let _ = t.write_node(i as u32, &v.to_string());
            }
        }
    }
    if let Some(a) = wc.auto {
        let _ = t.write_auto(if a { "1" } else { "0" });
    }
    t
}
