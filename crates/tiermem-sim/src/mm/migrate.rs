//! Page migration (`migrate_pages` for one order-0 anonymous folio): allocate on the
//! target, copy, remap, free the source; and `move_pages(2)`, which migrates named pages
//! of a process (the user-space tiering controller's tool).

use super::*;

impl Kernel {
    /// Isolate a mapped frame from its LRU list and migrate it to `dst` ([`Self::migrate_frame`]),
    /// keeping it active if it was. Returns the new frame.
    pub(crate) fn isolate_and_migrate(&mut self, src: usize, pfn: u32, dst: (usize, usize)) -> u32 {
        let active = matches!(
            self.nodes[src].lru_of(pfn),
            Some(Lru::ActiveAnon | Lru::ActiveFile)
        );
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
            // folio_migrate_flags keeps idle/young too, and a page-cache page's dirty and
            // reclaim bits.
            nf.flags = f.flags & (F_REFERENCED | F_IDLE | F_YOUNG | F_DIRTY | F_RECLAIM);
            nf.atime = f.atime;
        }
        // remove_migration_pte rebuilds the PTE from the VMA's protection: the NUMA hint is lost.
        if f.owner == OWNER_KSM {
            self.ksm_migrated(f.vpn, dst, new_pfn);
        } else if f.owner == OWNER_FILE {
            // folio_migrate_mapping: the page cache's entry names the new folio.
            self.page_cache.replace(f.vpn, dst, new_pfn);
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
            self.nodes[dst].frames[new_pfn as usize].atime = CPUPID_UNSET;
        }
        let list = match (f.owner == OWNER_FILE, active) {
            (false, false) => Lru::InactiveAnon,
            (false, true) => Lru::ActiveAnon,
            (true, false) => Lru::InactiveFile,
            (true, true) => Lru::ActiveFile,
        };
        self.nodes[dst].lru_add(list, new_pfn);
        self.nodes[src].free_frame(pfn);
        self.vmstat.inc(dst, Vm::PgallocNormal);
        self.vmstat.inc(src, Vm::Pgfree);
        self.vmstat.inc(src, Vm::PgmigrateSuccess);
        self.kernel_traffic[src].0 += PAGE_SIZE;
        self.kernel_traffic[dst].1 += PAGE_SIZE;
        new_pfn
    }
}

/// `errno` values `move_pages(2)` reports per page.
const ENOENT: i32 = 2;
const EFAULT: i32 = 14;
const ENOMEM: i32 = 12;

impl Kernel {
    /// `move_pages(2)` on process `p`: with `node`, migrate each page to it (`MPOL_MF_MOVE`,
    /// the target allocated with `__GFP_THISNODE` down to its min watermark); without,
    /// only report. Statuses, one per address: the page's node, or `-ENOENT` (not present:
    /// never touched, swapped out), `-EFAULT` (no VMA, or the shared zero page, which
    /// `follow_page(FOLL_DUMP)` refuses), `-ENOMEM` (the target has no free page).
    pub fn move_pages(&mut self, p: u16, addrs: &[usize], node: Option<usize>) -> Vec<i32> {
        addrs
            .iter()
            .map(|&a| {
                let Some(idx) = self.pte_index(p, a as u64) else {
                    return -EFAULT;
                };
                let pte = self.procs[p as usize].ptes[idx as usize];
                if pte & PTE_PRESENT == 0 {
                    return -ENOENT;
                }
                if !pte_maps_frame(pte) {
                    return -EFAULT;
                }
                let src = pte_node(pte);
                match node {
                    Some(dst) if dst != src => self.move_page(src, pte_pfn(pte), dst),
                    _ => src as i32,
                }
            })
            .collect()
    }

    /// The page-table index of address `addr` of process `p` (the VMA holding it).
    pub(crate) fn pte_index(&self, p: u16, addr: u64) -> Option<u32> {
        self.procs[p as usize]
            .vmas
            .iter()
            .find(|v| addr >= v.start && addr < v.start + v.pages as u64 * PAGE_SIZE)
            .map(|v| v.pte_base + ((addr - v.start) / PAGE_SIZE) as u32)
    }

    /// Migrate one mapped frame to node `dst` (`migrate_pages` with `MR_SYSCALL`).
    fn move_page(&mut self, src: usize, pfn: u32, dst: usize) -> i32 {
        let Some(zone) =
            self.nodes[dst].zone_above(|w| w.min, tiermem_core::watermarks::ZONE_MOVABLE)
        else {
            self.vmstat.inc(src, Vm::PgmigrateFail);
            return -ENOMEM;
        };
        self.isolate_and_migrate(src, pfn, (dst, zone));
        dst as i32
    }
}
