//! Watermarks and `min_free_kbytes` as `mm/page_alloc.c` computes them, shared by the
//! simulator (its zones' watermarks) and the live workload runner (which writes the
//! simulator's `min_free_kbytes` so that a recording runs with the same watermarks: a
//! Debian kernel with transparent hugepages raises it at boot, `set_recommended_min_free_kbytes`).

use serde::Serialize;

/// Zone watermarks in pages (`__setup_per_zone_wmarks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
    /// `WMARK_PROMO = high + tmp` (5.18+), kswapd's target in tiering mode.
    pub promo: u64,
}

/// Integer square root (`int_sqrt`).
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `calculate_min_free_kbytes`: `int_sqrt(lowmem_kbytes * 16)` clamped to [128, 262144].
pub fn default_min_free_kbytes(total_pages: u64) -> u64 {
    let lowmem_kbytes = total_pages * (crate::units::PAGE_SIZE / 1024);
    int_sqrt(lowmem_kbytes * 16).clamp(128, 262_144)
}

/// `__setup_per_zone_wmarks` for one zone: `min` is the zone's share of `min_free_kbytes`
/// by managed pages; `tmp = max(min/4, managed * watermark_scale_factor / 10000)`;
/// low = min + tmp, high = low + tmp, promo = high + tmp.
pub fn zone_watermarks(
    managed: u64,
    total_managed: u64,
    min_free_kbytes: u64,
    wsf: u32,
) -> Watermarks {
    let pages_min = min_free_kbytes >> (crate::units::PAGE_SHIFT - 10);
    let min = (pages_min as u128 * managed as u128 / total_managed.max(1) as u128) as u64;
    let tmp = (min >> 2).max((managed as u128 * wsf as u128 / 10_000) as u64);
    Watermarks {
        min,
        low: min + tmp,
        high: min + 2 * tmp,
        promo: min + 3 * tmp,
    }
}

/// Zone indices as x86-64 numbers them (`enum zone_type`). `ZONE_MOVABLE` is the class zone
/// of user allocations (`gfp_zone(GFP_HIGHUSER_MOVABLE)`): the index their watermark checks
/// use for `lowmem_reserve`.
pub const ZONE_DMA: usize = 0;
pub const ZONE_DMA32: usize = 1;
pub const ZONE_NORMAL: usize = 2;
pub const ZONE_MOVABLE: usize = 3;
pub const MAX_NR_ZONES: usize = 4;
/// The zones' names as `/proc/zoneinfo` prints them, by index.
pub const ZONE_NAMES: [&str; MAX_NR_ZONES] = ["DMA", "DMA32", "Normal", "Movable"];

/// `sysctl_lowmem_reserve_ratio` defaults (DMA 256, DMA32 256, NORMAL 32, MOVABLE 0).
pub const LOWMEM_RESERVE_RATIO: [u64; MAX_NR_ZONES] = [256, 256, 32, 0];

/// One populated zone of a node: its index and managed pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneSpan {
    pub idx: usize,
    pub managed: u64,
}

const MIB_PAGES: u64 = (1 << 20) / crate::units::PAGE_SIZE;
const GIB_PAGES: u64 = 1024 * MIB_PAGES;

/// The zones of each node, from the nodes' managed pages, laid out as QEMU's q35 machine and
/// most x86 firmware do: nodes one after another from physical address 0; RAM below 4 GiB
/// ends at 2.75 GiB when all RAM fits there, else at 2 GiB with the rest from 4 GiB up
/// (`pc_q35_init`'s lowmem split). `zone_sizes_init` then cuts at 16 MiB (ZONE_DMA) and
/// 4 GiB (ZONE_DMA32); the rest is ZONE_NORMAL. Each node's managed pages are spread over
/// its zones in proportion to their spans (the kernel's own reservations, memmap and
/// firmware areas, are not placed).
///
/// `scale` divides the physical boundaries (16 MiB, 2, 2.75 and 4 GiB) for a machine modelled
/// at `1/scale` of its size (`kernel.numa.model_scale`), so that its zones keep the full-size
/// machine's proportions; 1 for a machine at its real size.
pub fn node_zones(managed: &[u64], scale: u64) -> Vec<Vec<ZoneSpan>> {
    let scale = scale.max(1);
    let (mib, gib) = (MIB_PAGES / scale, GIB_PAGES / scale);
    let total: u64 = managed.iter().sum();
    let low_end = if total <= 2 * gib + 3 * gib / 4 {
        u64::MAX
    } else {
        2 * gib
    };
    // Physical page ranges: RAM below `low_end`, then from 4 GiB.
    let phys = |ram_page: u64| -> u64 {
        if ram_page < low_end {
            ram_page
        } else {
            4 * gib + (ram_page - low_end)
        }
    };
    let bounds = [(16 * mib).max(1), 4 * gib, u64::MAX];
    let mut start = 0u64;
    managed
        .iter()
        .map(|&m| {
            let (a, b) = (start, start + m);
            start = b;
            // Split [a, b) of RAM at the zone bounds in physical addresses.
            let mut spans = [0u64; 3];
            let mut p = a;
            while p < b {
                let phys_p = phys(p);
                let z = bounds.iter().position(|&e| phys_p < e).unwrap_or(2);
                // Pages from p until the zone bound or the low-RAM end, whichever first.
                let to_bound = bounds[z].saturating_sub(phys_p);
                let to_low_end = if p < low_end { low_end - p } else { u64::MAX };
                let n = (b - p).min(to_bound).min(to_low_end).max(1);
                spans[z] += n;
                p += n;
            }
            (0..3)
                .filter(|&z| spans[z] > 0)
                .map(|z| ZoneSpan {
                    idx: z,
                    managed: spans[z],
                })
                .collect()
        })
        .collect()
}

/// `setup_per_zone_lowmem_reserve` for one node's zones (ascending index): zone i keeps
/// `Σ managed(zones i+1..=j) / ratio[i]` pages from allocations whose class zone is j.
pub fn lowmem_reserves(zones: &[ZoneSpan]) -> Vec<[u64; MAX_NR_ZONES]> {
    zones
        .iter()
        .map(|zi| {
            let mut r = [0u64; MAX_NR_ZONES];
            let ratio = LOWMEM_RESERVE_RATIO[zi.idx];
            if ratio == 0 || zi.managed == 0 {
                return r;
            }
            for (j, slot) in r.iter_mut().enumerate().skip(zi.idx + 1) {
                let above: u64 = zones
                    .iter()
                    .filter(|z| z.idx > zi.idx && z.idx <= j)
                    .map(|z| z.managed)
                    .sum();
                *slot = above / ratio;
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_vm_has_dma_and_dma32_only() {
        // The 2-node VM: node 0 = 1 GiB at 0, node 1 = 512 MiB above it.
        let z = node_zones(&[262_144, 131_072], 1);
        assert_eq!(
            z[0],
            vec![
                ZoneSpan {
                    idx: ZONE_DMA,
                    managed: 4096
                },
                ZoneSpan {
                    idx: ZONE_DMA32,
                    managed: 258_048
                }
            ]
        );
        assert_eq!(
            z[1],
            vec![ZoneSpan {
                idx: ZONE_DMA32,
                managed: 131_072
            }]
        );
        // lowmem_reserve of node 0's DMA for user pages: DMA32 / 256 (recorded: 991 of 253 773).
        assert_eq!(lowmem_reserves(&z[0])[0][ZONE_MOVABLE], 258_048 / 256);
        assert_eq!(lowmem_reserves(&z[0])[1], [0; 4]);
    }

    #[test]
    fn a_large_machine_has_a_normal_zone_above_4gib() {
        let gib = 262_144u64;
        let z = node_zones(&[64 * gib, 64 * gib], 1);
        // 2 GiB below 4 GiB on node 0, the rest of it and all of node 1 in ZONE_NORMAL.
        assert_eq!(
            z[0][0],
            ZoneSpan {
                idx: ZONE_DMA,
                managed: 4096
            }
        );
        assert_eq!(
            z[0][1],
            ZoneSpan {
                idx: ZONE_DMA32,
                managed: 2 * gib - 4096
            }
        );
        assert_eq!(
            z[0][2],
            ZoneSpan {
                idx: ZONE_NORMAL,
                managed: 62 * gib
            }
        );
        assert_eq!(
            z[1],
            vec![ZoneSpan {
                idx: ZONE_NORMAL,
                managed: 64 * gib
            }]
        );
    }
}
