//! Swap and zram: swap slots (`get_swap_page` / `swap_free`), swap-out of an anonymous
//! page (`pageout` → `swap_writepage`, zram's compression into its pool) and the pool's
//! per-node accounting.

use super::*;

/// A swap area: slot allocator plus per-slot node (zram: the node its pool bytes are on)
/// and, for zram, the bytes the slot's compressed page takes in the pool.
pub(super) struct SwapArea {
    capacity: u64,
    used: u64,
    next: u32,
    free_slots: Vec<u32>,
    slot_node: Vec<u8>,
    slot_bytes: Vec<u16>,
}

impl SwapArea {
    pub(super) fn new(capacity_pages: u64) -> Self {
        SwapArea {
            capacity: capacity_pages,
            used: 0,
            next: 0,
            free_slots: Vec::new(),
            slot_node: Vec::new(),
            slot_bytes: Vec::new(),
        }
    }
    pub(super) fn has_room(&self) -> bool {
        self.used < self.capacity
    }
    /// A slot for a page whose stored copy takes `bytes` (0 on a swap device).
    pub(super) fn alloc(&mut self, node: usize, bytes: u16) -> u32 {
        self.used += 1;
        let s = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.next += 1;
                self.slot_node.push(0);
                self.slot_bytes.push(0);
                self.next - 1
            }
        };
        self.slot_node[s as usize] = node as u8;
        self.slot_bytes[s as usize] = bytes;
        s
    }
    /// Free a slot: the node and bytes it had.
    pub(super) fn free(&mut self, slot: u32) -> (usize, u16) {
        self.used -= 1;
        self.free_slots.push(slot);
        (
            self.slot_node[slot as usize] as usize,
            self.slot_bytes[slot as usize],
        )
    }
}

impl Kernel {
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
            // The ratio of the mapping's data where its workload gives one, else the device's.
            let ratio = self.procs[f.owner as usize]
                .vma_of(f.vpn)
                .and_then(|v| v.zram_ratio)
                .unwrap_or(z.compression_ratio);
            let compressed = (PAGE_SIZE as f64 / ratio).ceil() as u16;
            let slot = area.alloc(pool_node, compressed);
            cost += z.compress_cost;
            new_pte = PTE_ZRAM | slot as u64;
            self.zram_pool_add(pool_node, compressed as i64);
            self.kernel_traffic[n].0 += PAGE_SIZE;
        } else if let Some((s, area)) = self.swap.as_mut().filter(|(_, a)| a.has_room()) {
            let slot = area.alloc(n, 0);
            cost += SimDuration::from_secs_f64(PAGE_SIZE as f64 / s.write_bandwidth.bytes_per_s());
            new_pte = PTE_SWAP | slot as u64;
            self.kernel_traffic[n].0 += PAGE_SIZE;
        } else {
            return None;
        }
        self.procs[f.owner as usize].ptes[f.vpn as usize] = new_pte;
        self.note_will_fault(f.owner as usize, f.vpn);
        self.procs[f.owner as usize].rss -= 1;
        self.nodes[n].free_frame(pfn);
        self.vmstat.inc(n, Vm::Pswpout);
        self.vmstat.inc(n, Vm::Pgfree);
        Some(cost)
    }

    /// Adjust the zram pool on node `n` by `delta` bytes, charging whole pages to the node.
    pub(super) fn zram_pool_add(&mut self, n: usize, delta: i64) {
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

    pub(super) fn zram_free_slot(&mut self, slot: u32) {
        let Some((_, area)) = self.zram.as_mut() else {
            return;
        };
        let (n, compressed) = area.free(slot);
        self.zram_pool_add(n, -(compressed as i64));
    }

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
}
