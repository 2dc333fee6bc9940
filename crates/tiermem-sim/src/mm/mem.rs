//! Physical memory: page-table entries, frames, per-node free counts, watermarks and LRU
//! lists.
//!
//! Layout, chosen for the per-access hot path and the 32-bytes-per-page budget:
//!
//! * a PTE is one `u64` (8 bytes per virtual page): frame number, node, and the
//!   present / accessed / dirty / PROT_NONE / swap bits. The hot path reads one word and
//!   sets bits in it; no other structure is touched unless the page faults.
//! * a frame is 20 bytes (per node, allocated up to the node's high-water mark): intrusive
//!   LRU links, the reverse map (owner process and virtual page: one mapping per anonymous
//!   page), page flags and the 32-bit access-time field NUMA balancing keeps in the
//!   folio's cpupid bits.
//!
//! Free frames are a count plus a LIFO list of recycled frame numbers (like the per-CPU
//! free lists, the most recently freed frame is reused first).

use tiermem_core::units::{Pages, PAGE_SIZE};

mod lru;
pub use lru::Lru;
use lru::LruList;

// --- PTE encoding ---------------------------------------------------------------------

/// Bits 0..32: frame number (present) or swap slot (swapped).
pub const PTE_PFN_MASK: u64 = 0xFFFF_FFFF;
/// Bits 32..38: node of the frame or the swap device.
pub const PTE_NODE_SHIFT: u32 = 32;
pub const PTE_NODE_MASK: u64 = 0x3F;
/// Page is mapped to a frame.
pub const PTE_PRESENT: u64 = 1 << 40;
/// Hardware accessed ("young") bit.
pub const PTE_ACCESSED: u64 = 1 << 41;
/// Hardware dirty bit.
pub const PTE_DIRTY: u64 = 1 << 42;
/// NUMA-balancing hint: mapped PROT_NONE so the next access faults (`change_prot_numa`).
pub const PTE_PROTNONE: u64 = 1 << 43;
/// Swapped out to the swap device; the low bits hold the slot.
pub const PTE_SWAP: u64 = 1 << 44;
/// Swapped out to zram; the low bits hold the slot.
pub const PTE_ZRAM: u64 = 1 << 45;
/// Written since KSM last read the page's content (the soft-dirty idea): set by the
/// access loop together with the dirty bit, cleared when KSM samples the content, so page
/// contents change on writes without the hot path touching any other table.
pub const PTE_SOFTDIRTY: u64 = 1 << 46;
/// Write-protected: a KSM page or the KSM zero page; a write faults (`do_wp_page`).
pub const PTE_RDONLY: u64 = 1 << 47;
/// Maps the shared zero page (`use_zero_pages`); there is no frame behind it.
pub const PTE_KSM_ZERO: u64 = 1 << 48;
/// Maps the shared zero page because a load touched the untouched anonymous page
/// (`do_anonymous_page` without `FAULT_FLAG_WRITE`); read-only, no frame, no RSS. A store
/// copies it (`do_wp_page` → `wp_page_copy`).
pub const PTE_ZERO: u64 = 1 << 49;

/// The PTE a load fault installs on an untouched anonymous page.
pub const PTE_ZERO_PAGE: u64 = PTE_PRESENT | PTE_RDONLY | PTE_ZERO | PTE_ACCESSED;

/// The PTE maps a frame of its own or of KSM (not the zero page): what `vm_normal_folio`
/// finds, and what migration, reclaim, DAMON and `numa_maps` see.
#[inline]
pub fn pte_maps_frame(pte: u64) -> bool {
    pte & PTE_PRESENT != 0 && pte & (PTE_KSM_ZERO | PTE_ZERO) == 0
}

/// Build a present PTE.
#[inline]
pub fn pte_mk(node: usize, pfn: u32) -> u64 {
    PTE_PRESENT | ((node as u64) << PTE_NODE_SHIFT) | pfn as u64
}

#[inline]
pub fn pte_node(pte: u64) -> usize {
    ((pte >> PTE_NODE_SHIFT) & PTE_NODE_MASK) as usize
}

#[inline]
pub fn pte_pfn(pte: u64) -> u32 {
    (pte & PTE_PFN_MASK) as u32
}

// --- Frames ----------------------------------------------------------------------------

pub const NIL: u32 = u32::MAX;
/// Owner value of a free frame.
pub const OWNER_FREE: u16 = u16::MAX;
/// Owner value of a KSM page: mapped by several PTEs; `vpn` holds its stable node and
/// the reverse map is the stable node's list of rmap items (`rmap_walk_ksm`).
pub const OWNER_KSM: u16 = u16::MAX - 1;
/// Owner value of a page-cache page: mapped by no process; `vpn` is its entry in the page
/// cache's table (see [`crate::mm::filemap`]).
pub const OWNER_FILE: u16 = u16::MAX - 2;

/// Frame flag: on an inactive list (anon, or file with [`F_LRU_FILE`]).
pub const F_LRU_INACTIVE: u8 = 1;
/// Frame flag: on an active list (`PG_active`; anon, or file with [`F_LRU_FILE`]).
pub const F_LRU_ACTIVE: u8 = 2;
/// Frame flag: `PG_referenced` (software second-chance bit).
pub const F_REFERENCED: u8 = 4;
/// Frame flag: page-idle `PG_idle`, set by DAMON's mkold; any later reference clears it.
pub const F_IDLE: u8 = 8;
/// Frame flag: page-idle `PG_young`, set when DAMON clears a young PTE so that reclaim's
/// `folio_referenced` still counts the access.
pub const F_YOUNG: u8 = 16;
/// Frame flag: the list flag names a file list (`!PG_swapbacked`: a page-cache page).
pub const F_LRU_FILE: u8 = 32;
/// Frame flag: `PG_dirty` of a page-cache page (anonymous pages keep theirs in the PTE).
pub const F_DIRTY: u8 = 64;
/// Frame flag: `PG_reclaim`: reclaim met the page dirty and wants it at the inactive tail
/// once written back (`folio_rotate_reclaimable`).
pub const F_RECLAIM: u8 = 128;
/// The flags that say which LRU list a frame is on.
pub const LRU_BITS: u8 = F_LRU_INACTIVE | F_LRU_ACTIVE | F_LRU_FILE;

/// One physical page frame.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Frame {
    /// Position in its LRU list's queue (`lru`), while on a list.
    pub lru_pos: u32,
    /// Virtual page index (PTE index) in the owner's page table.
    pub vpn: u32,
    /// NUMA-balancing access time (ms, masked), stored where the kernel keeps last_cpupid.
    pub atime: u32,
    /// Owning process, or [`OWNER_FREE`].
    pub owner: u16,
    pub flags: u8,
    /// The zone (position in [`NodeMem::zones`]) the frame was taken from.
    pub zone: u8,
}

/// `LAST_CPUPID_SHIFT` on x86-64 with NR_CPUS = 8192: 8 PID bits + 13 CPU bits of a
/// frame's `atime` field. The access time shares these bits, so it wraps every 2^21 ms
/// (≈ 35 min).
pub const LAST_CPUPID_SHIFT: u32 = 21;
/// `PAGE_ACCESS_TIME_MASK` (BUCKETS = 0 since LAST_CPUPID_SHIFT ≥ 12).
pub const PAGE_ACCESS_TIME_MASK: u32 = (1 << LAST_CPUPID_SHIFT) - 1;
/// The reset value of the cpupid field (`-1 & LAST_CPUPID_MASK`).
pub const CPUPID_UNSET: u32 = PAGE_ACCESS_TIME_MASK;

impl Frame {
    /// A free frame; its last-cpupid field is reset (`page_cpupid_reset_last` when a page
    /// is freed), so a new page's first NUMA hint fault sees no previous accessor.
    const FREE: Frame = Frame {
        lru_pos: 0,
        vpn: 0,
        atime: CPUPID_UNSET,
        owner: OWNER_FREE,
        flags: 0,
        zone: 0,
    };
}

pub use tiermem_core::watermarks::{
    default_min_free_kbytes, int_sqrt, zone_watermarks, Watermarks,
};

/// One node's memory (one zone per node).
pub struct NodeMem {
    pub frames: Vec<Frame>,
    recycled: Vec<u32>,
    /// Managed pages (all zones).
    pub present: u64,
    /// Free pages (all zones).
    pub free: u64,
    /// Free pages held in the per-CPU pagesets (counted in `kernel_pages` until they drain:
    /// not in the free counts, not allocatable).
    pub pagesets: u64,
    /// The pagesets' `high` marks, summed over CPUs.
    pub pagesets_high: u64,
    /// Pages used by the kernel outside the LRU (reserved at boot, the zram pool).
    pub kernel_pages: u64,
    /// Where the frames lie in the node's physical range (what DAMON's paddr operations
    /// see): frame `i` is page `phys_first_frame + i` of the node. See
    /// [`NodeMem::lay_out_frames`].
    pub phys_first_frame: u64,
    /// The node's watermarks summed over its zones (for reports).
    pub wmark: Watermarks,
    /// The node's populated zones, lowest index first (DMA, DMA32, NORMAL).
    pub zones: Vec<Zone>,
    lru: [LruList; 4],
    /// `lruvec->nonresident_age`: evictions and activations so far, the clock of the
    /// page cache's shadow entries (`workingset_age_nonresident`).
    pub nonresident_age: u64,
    /// `lruvec->anon_cost` and `file_cost`: the decaying cost of reclaiming each type
    /// (`lru_note_cost`), which `get_scan_count` balances.
    pub anon_cost: u64,
    pub file_cost: u64,
    /// `lruvec->refaults[WORKINGSET_FILE]`: `workingset_activate_file` when reclaim last
    /// finished (`snapshot_refaults`).
    pub refaults_snapshot: u64,
}

/// One zone of a node: its own free count, watermarks and `lowmem_reserve`. Frames remember
/// their zone, so freeing returns the page where it came from.
#[derive(Clone, Debug)]
pub struct Zone {
    /// `ZONE_DMA` (0), `ZONE_DMA32` (1) or `ZONE_NORMAL` (2).
    pub idx: usize,
    pub managed: u64,
    pub free: u64,
    pub wmark: Watermarks,
    /// `lowmem_reserve[class zone]`: pages kept from allocations that could use higher zones.
    pub lowmem_reserve: [u64; tiermem_core::watermarks::MAX_NR_ZONES],
}

impl Zone {
    /// `zone_watermark_ok` at order 0: `free > mark + lowmem_reserve[classzone]`.
    #[inline]
    pub fn ok(&self, mark: u64, classzone: usize) -> bool {
        self.free > mark + self.lowmem_reserve[classzone]
    }
}

impl NodeMem {
    /// A node of `present` managed pages with one zone (tests; the kernel sets real zones
    /// with [`NodeMem::set_zones`]).
    pub fn new(present: Pages) -> Self {
        let mut n = NodeMem {
            frames: Vec::new(),
            recycled: Vec::new(),
            present: present.0,
            free: present.0,
            kernel_pages: 0,
            phys_first_frame: 0,
            pagesets: 0,
            pagesets_high: 0,
            wmark: Watermarks::default(),
            zones: Vec::new(),
            lru: Default::default(),
            nonresident_age: 0,
            anon_cost: 0,
            file_cost: 0,
            refaults_snapshot: 0,
        };
        n.set_zones(&[tiermem_core::watermarks::ZoneSpan {
            idx: tiermem_core::watermarks::ZONE_NORMAL,
            managed: present.0,
        }]);
        n
    }

    /// Replace the zones (at boot, before any page is used).
    pub fn set_zones(&mut self, spans: &[tiermem_core::watermarks::ZoneSpan]) {
        let reserves = tiermem_core::watermarks::lowmem_reserves(spans);
        self.zones = spans
            .iter()
            .zip(reserves)
            .map(|(s, r)| Zone {
                idx: s.idx,
                managed: s.managed,
                free: s.managed,
                wmark: Watermarks::default(),
                lowmem_reserve: r,
            })
            .collect();
        self.present = spans.iter().map(|s| s.managed).sum();
        self.free = self.present;
    }

    /// Set each zone's watermarks and the node's sums.
    pub fn set_watermarks(&mut self, f: impl Fn(&Zone) -> Watermarks) {
        let mut sum = Watermarks::default();
        for z in &mut self.zones {
            z.wmark = f(z);
            sum.min += z.wmark.min;
            sum.low += z.wmark.low;
            sum.high += z.wmark.high;
            sum.promo += z.wmark.promo;
        }
        self.wmark = sum;
    }

    /// The highest zone that passes `mark(zone) + lowmem_reserve[classzone]`
    /// (`get_page_from_freelist`'s walk over one node's zones, highest first).
    #[inline]
    pub fn zone_above(&self, mark: impl Fn(&Watermarks) -> u64, classzone: usize) -> Option<usize> {
        (0..self.zones.len())
            .rev()
            .find(|&z| self.zones[z].ok(mark(&self.zones[z].wmark), classzone))
    }

    /// Whether any zone passes (`pgdat_balanced`, `migrate_balanced_pgdat`: one zone suffices).
    #[inline]
    pub fn any_zone_above(&self, mark: impl Fn(&Watermarks) -> u64, classzone: usize) -> bool {
        self.zone_above(mark, classzone).is_some()
    }

    /// Place the frames user pages will get in the node's physical range, once the boot
    /// reservations are taken: above the lower zones (a user allocation takes them only
    /// when the highest zone is short: `ZONE_DMA` is the first 16 MiB) and above the memory
    /// in use at boot (kernel image, memblock, page cache and slab allocated before the
    /// workload), in allocation order. Recorded in the VM (`frames.txt` of
    /// `damos-pageout-zram`): the workload's first pages at 50-64 MiB of a 1 GiB node, the
    /// rest contiguous from there. DAMON's paddr regions see that layout, so which pages
    /// share a region with others depends on it.
    pub fn lay_out_frames(&mut self) {
        let lower: u64 = self.zones.iter().rev().skip(1).map(|z| z.managed).sum();
        self.phys_first_frame = (lower + self.kernel_pages).min(self.present);
    }

    /// The frame at page `p` of the node's physical range, if one was ever handed out
    /// there. Frames beyond the end of the range wrap to its start (the lower zones and boot
    /// memory), so every frame has a place.
    pub fn frame_at_phys(&self, p: u64) -> Option<u32> {
        if p >= self.present {
            return None;
        }
        let i = if p >= self.phys_first_frame {
            p - self.phys_first_frame
        } else {
            p + self.present - self.phys_first_frame
        };
        (i < self.frames.len() as u64).then_some(i as u32)
    }

    /// The page of the node's physical range where frame `pfn` lies (the inverse of
    /// [`NodeMem::frame_at_phys`]).
    pub fn phys_of_frame(&self, pfn: u32) -> u64 {
        let p = self.phys_first_frame + pfn as u64;
        if p >= self.present {
            p - self.present
        } else {
            p
        }
    }

    /// Move up to `n` free pages to the kernel (highest zone first); returns how many.
    pub fn take_kernel_pages(&mut self, n: u64) -> u64 {
        let mut left = n;
        for z in self.zones.iter_mut().rev() {
            let d = left.min(z.free);
            z.free -= d;
            left -= d;
        }
        let taken = n - left;
        self.free -= taken;
        self.kernel_pages += taken;
        taken
    }

    /// Move up to `n` free pages of zone `z` to the kernel; returns how many.
    pub fn take_kernel_pages_in(&mut self, z: usize, n: u64) -> u64 {
        let d = n.min(self.zones[z].free);
        self.zones[z].free -= d;
        self.free -= d;
        self.kernel_pages += d;
        d
    }

    /// Give up to `n` kernel pages back (highest zone first, up to each zone's size).
    pub fn return_kernel_pages(&mut self, n: u64) {
        let mut left = n.min(self.kernel_pages);
        let back = left;
        for z in self.zones.iter_mut().rev() {
            let room = z.managed.saturating_sub(z.free);
            let d = left.min(room);
            z.free += d;
            left -= d;
        }
        self.free += back - left;
        self.kernel_pages -= back - left;
    }

    /// The per-CPU pagesets go back to the buddy lists (`drain_pages`).
    pub fn drain_pagesets(&mut self) {
        let p = std::mem::take(&mut self.pagesets);
        self.return_kernel_pages(p);
    }

    /// `decay_pcp_high`, once a second from `vmstat_update`, on the node's pagesets summed
    /// over `cpus`: `high` drops by an eighth, to no less than `count − (batch << 5)` per
    /// CPU nor the zones' low watermark (`high_min`, the low watermark shared out over the
    /// CPUs), and the pages above `high` are freed. `batch` is 63 (`zone_batchsize` of a
    /// zone over 256 MiB).
    pub fn decay_pagesets(&mut self, cpus: u64) {
        if self.pagesets == 0 {
            return;
        }
        const BATCH_SCALED: u64 = 63 << 5;
        let high_min: u64 = self.zones.iter().map(|z| z.wmark.low).sum();
        let high = self
            .pagesets
            .saturating_sub(BATCH_SCALED * cpus)
            .max(self.pagesets_high - self.pagesets_high / 8)
            .max(high_min);
        self.pagesets_high = high;
        if self.pagesets > high {
            let d = self.pagesets - high;
            self.pagesets = high;
            self.return_kernel_pages(d);
        }
    }

    /// Pages holding user data (mapped frames).
    pub fn used_user(&self) -> u64 {
        self.present - self.free - self.kernel_pages
    }

    /// Take a free frame from zone `z` (a position in `zones`); the caller checked the zone
    /// has a free page.
    #[inline]
    pub fn take_frame_in(&mut self, z: usize, owner: u16, vpn: u32) -> u32 {
        debug_assert!(self.zones[z].free > 0);
        self.zones[z].free -= 1;
        self.free -= 1;
        let pfn = match self.recycled.pop() {
            Some(p) => p,
            None => {
                if self.frames.len() == self.frames.capacity() {
                    // Grow in bounded steps (not doubling): the table stays within a few
                    // percent of the frames actually used.
                    let step = (self.frames.len() / 16).clamp(1 << 12, 1 << 20) as u64;
                    let room = self.present.saturating_sub(self.frames.len() as u64).max(1);
                    self.frames.reserve_exact(step.min(room) as usize);
                }
                self.frames.push(Frame::FREE);
                (self.frames.len() - 1) as u32
            }
        };
        let f = &mut self.frames[pfn as usize];
        *f = Frame::FREE;
        f.owner = owner;
        f.vpn = vpn;
        f.zone = z as u8;
        pfn
    }

    /// Take a free frame from the highest zone that has one (no watermark: the caller decided).
    #[inline]
    pub fn take_frame(&mut self, owner: u16, vpn: u32) -> u32 {
        let z = (0..self.zones.len())
            .rev()
            .find(|&z| self.zones[z].free > 0)
            .unwrap_or(0);
        self.take_frame_in(z, owner, vpn)
    }

    /// Return a frame (already off the LRU) to its zone's free pool.
    #[inline]
    pub fn free_frame(&mut self, pfn: u32) {
        let f = &mut self.frames[pfn as usize];
        debug_assert!(f.owner != OWNER_FREE, "double free of pfn {pfn}");
        debug_assert!(f.flags & LRU_BITS == 0);
        let z = f.zone as usize;
        *f = Frame::FREE;
        self.recycled.push(pfn);
        self.free += 1;
        if let Some(zone) = self.zones.get_mut(z) {
            zone.free += 1;
        }
    }

    /// Add at the head (most recent end) of a list.
    pub fn lru_add(&mut self, list: Lru, pfn: u32) {
        self.lru[list as usize].add(&mut self.frames, list, pfn);
    }

    /// Add at the tail (the end reclaim takes first): `lru_move_tail`, as
    /// `folio_rotate_reclaimable` does when a page reclaim met dirty is written back.
    pub fn lru_add_tail(&mut self, list: Lru, pfn: u32) {
        self.lru[list as usize].add_tail(&mut self.frames, list, pfn);
    }

    /// Which list a frame is on.
    #[inline]
    pub fn lru_of(&self, pfn: u32) -> Option<Lru> {
        Lru::of_flags(self.frames[pfn as usize].flags)
    }

    /// Take a frame off whatever list it is on (isolation).
    pub fn lru_del(&mut self, pfn: u32) {
        if let Some(list) = self.lru_of(pfn) {
            self.lru[list as usize].del(&mut self.frames, list, pfn);
        }
    }

    /// The oldest frame of a list.
    pub fn lru_tail(&mut self, list: Lru) -> Option<u32> {
        self.lru[list as usize].tail(&self.frames, list)
    }

    pub fn lru_len(&self, list: Lru) -> u64 {
        self.lru[list as usize].len()
    }

    /// `inactive_is_low` of the anon lists.
    pub fn inactive_is_low(&self) -> bool {
        self.inactive_list_is_low(Lru::InactiveAnon)
    }

    /// Pages on the two file lists (`NR_ACTIVE_FILE + NR_INACTIVE_FILE`).
    pub fn file_lru_pages(&self) -> u64 {
        self.lru_len(Lru::InactiveFile) + self.lru_len(Lru::ActiveFile)
    }

    /// `inactive_is_low` of the lists of `list`'s type: `inactive * ratio < active`,
    /// ratio = `int_sqrt(10 * GB)` or 1.
    pub fn inactive_list_is_low(&self, list: Lru) -> bool {
        let inactive = self.lru_len(list);
        let active = self.lru_len(list.active());
        let gb = ((inactive + active) * PAGE_SIZE) >> 30;
        let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// Bytes of host memory used by this node's frame tables.
    pub fn host_bytes(&self) -> usize {
        self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.recycled.capacity() * 4
            + self.lru.iter().map(LruList::host_bytes).sum::<usize>()
    }
}

/// Hint the CPU to load `slice[idx]` (a no-op off x86-64 or out of bounds).
#[inline(always)]
pub fn prefetch<T>(slice: &[T], idx: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = slice.get(idx) {
        // SAFETY: prefetching a valid reference has no side effects.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                r as *const T as *const i8,
                std::arch::x86_64::_MM_HINT_T0,
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, idx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pagesets_decay_by_an_eighth_of_high_then_drain_above_it() {
        let mut n = NodeMem::new(Pages(100_000));
        n.pagesets = n.take_kernel_pages(5_000);
        n.pagesets_high = 20_000;
        let free0 = n.free;
        // high: 20000 → 17500 → 15313 → … → 5264 stays above 5000 for 10 seconds.
        for _ in 0..10 {
            n.decay_pagesets(2);
            assert_eq!(n.pagesets, 5_000);
        }
        n.decay_pagesets(2);
        assert_eq!((n.pagesets, n.pagesets_high), (4_606, 4_606));
        assert_eq!(n.free + n.pagesets, free0 + 5_000);
        for _ in 0..60 {
            n.decay_pagesets(2);
        }
        // Down to high_min, the zones' low watermark (0 here; an eighth of less than 8
        // pages rounds to nothing, as in the kernel).
        assert!(n.pagesets < 8);
        assert_eq!(n.free + n.pagesets, free0 + 5_000);
        n.drain_pagesets();
        assert_eq!((n.pagesets, n.free), (0, free0 + 5_000));
    }

    #[test]
    fn frame_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Frame>(), 16);
    }

    #[test]
    fn watermarks_follow_setup_per_zone_wmarks() {
        // 16 GiB single node: min_free_kbytes = int_sqrt(16 GiB in KiB * 16) = 16384.
        let pages = 4 << 20;
        let mfk = default_min_free_kbytes(pages);
        assert_eq!(mfk, 16384);
        let w = zone_watermarks(pages, pages, mfk, 10);
        assert_eq!(w.min, 4096);
        // tmp = max(1024, 4194304 * 10 / 10000 = 4194)
        assert_eq!(w.low, 4096 + 4194);
        assert_eq!(w.high, 4096 + 2 * 4194);
        assert_eq!(w.promo, 4096 + 3 * 4194);
        // Clamp bounds.
        assert_eq!(default_min_free_kbytes(1), 128);
        assert_eq!(default_min_free_kbytes(1 << 40), 262_144);
    }

    #[test]
    fn lru_links_stay_consistent() {
        let mut n = NodeMem::new(Pages(16));
        let a = n.take_frame(0, 0);
        let b = n.take_frame(0, 1);
        let c = n.take_frame(0, 2);
        for p in [a, b, c] {
            n.lru_add(Lru::InactiveAnon, p);
        }
        assert_eq!(n.lru_tail(Lru::InactiveAnon), Some(a));
        n.lru_del(b);
        assert_eq!(n.lru_len(Lru::InactiveAnon), 2);
        n.lru_del(a);
        assert_eq!(n.lru_tail(Lru::InactiveAnon), Some(c));
        n.lru_del(c);
        assert_eq!(n.lru_tail(Lru::InactiveAnon), None);
        n.free_frame(a);
        assert_eq!(n.take_frame(1, 9), a, "LIFO reuse");
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn frames_lie_above_lower_zones_and_boot_memory_and_wrap_below() {
        let mut n = NodeMem::new(Pages(1000));
        n.set_zones(&[
            tiermem_core::watermarks::ZoneSpan {
                idx: tiermem_core::watermarks::ZONE_DMA,
                managed: 100,
            },
            tiermem_core::watermarks::ZoneSpan {
                idx: tiermem_core::watermarks::ZONE_DMA32,
                managed: 900,
            },
        ]);
        n.take_kernel_pages(50);
        n.lay_out_frames();
        assert_eq!(n.phys_first_frame, 150);
        for i in 0..900u32 {
            n.take_frame(1, i);
        }
        assert_eq!(n.frame_at_phys(150), Some(0));
        assert_eq!(n.frame_at_phys(149), None, "boot memory below the frames");
        // Frames past the end of the range wrap into the low part: every one has a place.
        assert_eq!(n.phys_of_frame(899), 49);
        for i in 0..900u32 {
            assert_eq!(n.frame_at_phys(n.phys_of_frame(i)), Some(i));
        }
        assert_eq!(n.frame_at_phys(1000), None);
    }
}
