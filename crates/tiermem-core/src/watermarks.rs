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

