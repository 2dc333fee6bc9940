//! The page allocator and page faults: the zonelist walk at the low and min watermarks
//! (`get_page_from_freelist`), the slow path's kswapd wakeups, direct reclaim and OOM
//! kill (`__alloc_pages_slowpath`), and the anonymous fault paths (`do_anonymous_page`,
//! `do_swap_page`, the zero page's write-protect fault).

use super::*;

/// Whom a page is allocated for: the frame's owner and index (its reverse map), and the
/// process whose allocation it is (the OOM killer's requester). An anonymous page is its
/// process's; a page-cache page is the page cache's, allocated by the reading process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageFor {
    pub owner: u16,
    pub vpn: u32,
    pub requester: u16,
}

impl PageFor {
    /// Page `vpn` of process `p`'s page table.
    pub fn anon(p: u16, vpn: u32) -> Self {
        PageFor {
            owner: p,
            vpn,
            requester: p,
        }
    }
}

impl Kernel {
    /// The zonelist of a node filtered by a nodemask (`for_each_zone_zonelist_nodemask`).
    pub(super) fn zonelist(
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
        who: PageFor,
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
        let (n, pfn) = self.take_on(pick, first, cpu_node.idx(), who);
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
    pub(super) fn take_on(
        &mut self,
        (n, z): (usize, usize),
        preferred: usize,
        cpu_node: usize,
        who: PageFor,
    ) -> (usize, u32) {
        let pfn = self.nodes[n].take_frame_in(z, who.owner, who.vpn);
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
    /// Returns the node and frame, and the time the caller spent beyond the fast path:
    /// `costs.alloc_slowpath` once it entered the slow path, plus any direct reclaim.
    pub fn alloc_user_page(
        &mut self,
        who: PageFor,
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
            let (n, pfn) = self.take_on(at, first, cpu_node.idx(), who);
            return Ok((n, pfn, SimDuration::ZERO));
        }
        // Slow path: wake_all_kswapds, then the min watermark, then direct reclaim; repeated
        // until MAX_RECLAIM_RETRIES rounds make no progress.
        let mut cost = self.cfg.costs.alloc_slowpath;
        let mut no_progress = 0;
        let mut oom_kills = 0;
        loop {
            for &n in &zl {
                self.wakeup_kswapd(n, now);
            }
            if let Some(at) = self.first_zone(&zl, |w| w.min) {
                let (n, pfn) = self.take_on(at, first, cpu_node.idx(), who);
                return Ok((n, pfn, cost));
            }
            if no_progress <= MAX_RECLAIM_RETRIES {
                let r = self.try_to_free_pages(&zl, now + cost);
                cost += r.cost;
                if r.reclaimed > 0 {
                    // __alloc_pages_direct_reclaim: after progress, get_page_from_freelist;
                    // if that fails, drain_all_pages (every CPU's pagesets) and try once more.
                    let at = self.first_zone(&zl, |w| w.min).or_else(|| {
                        for node in &mut self.nodes {
                            node.drain_pagesets();
                        }
                        self.first_zone(&zl, |w| w.min)
                    });
                    if let Some(at) = at {
                        let (n, pfn) = self.take_on(at, first, cpu_node.idx(), who);
                        return Ok((n, pfn, cost));
                    }
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
                let (n, pfn) = self.take_on(at, first, cpu_node.idx(), who);
                return Ok((n, pfn, cost));
            }
            self.out_of_memory(who.requester);
            oom_kills += 1;
            if !self.procs[who.requester as usize].alive {
                return Err(FaultError::OomKilled);
            }
            no_progress = 0;
            if oom_kills > self.procs.len() {
                self.kill_process(who.requester);
                return Err(FaultError::OomKilled);
            }
        }
    }

    /// `out_of_memory` → `select_bad_process`: kill the live process with the most
    /// resident + swapped pages (oom_badness without adjustments).
    pub(super) fn out_of_memory(&mut self, requester: u16) {
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
        let (n, pfn, reclaim_cost) =
            self.alloc_by_plan(PageFor::anon(p, idx), plan, cpu_node, now)?;
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
            self.procs[p as usize].maj_flt += 1;
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
}
