//! Regions and their adjustment (`mm/damon/core.c`): `damon_set_regions`, the merge and
//! split of `kdamond_merge_regions` / `kdamond_split_regions`, vaddr's three initial
//! regions (`__damon_va_three_regions`) and the even split of `__damon_va_init_regions`.
//!
//! A target's regions are a `Vec` sorted by address and never overlapping; the kernel's
//! linked list becomes index arithmetic.

use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tiermem_core::damon::AddrRange;

/// `DAMON_MIN_REGION_SZ`: PAGE_SIZE.
pub const MIN_REGION_SZ: u64 = tiermem_core::units::PAGE_SIZE;

/// `struct damon_region`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    /// Samples in the current aggregation window that saw an access.
    pub nr_accesses: u32,
    /// Pseudo-moving sum of accesses in bp (`damon_update_region_access_rate`).
    pub nr_accesses_bp: u32,
    /// The previous window's `nr_accesses`.
    pub last_nr_accesses: u32,
    /// Aggregation windows the access level stayed similar.
    pub age: u32,
    #[serde(skip)]
    pub sampling_addr: u64,
}

impl Region {
    pub fn new(start: u64, end: u64) -> Self {
        Region {
            start,
            end,
            nr_accesses: 0,
            nr_accesses_bp: 0,
            last_nr_accesses: 0,
            age: 0,
            sampling_addr: start,
        }
    }
    pub fn size(&self) -> u64 {
        self.end - self.start
    }
}

pub fn align_down(x: u64, a: u64) -> u64 {
    x / a * a
}
pub fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// `damon_split_region_at`: cut `regions[i]` after `sz_r` bytes; the right part inherits
/// the counters and is inserted after it.
pub fn split_region_at(regions: &mut Vec<Region>, i: usize, sz_r: u64) {
    let r = &mut regions[i];
    debug_assert!(sz_r > 0 && sz_r < r.size());
    let mut new = r.clone();
    new.start = r.start + sz_r;
    r.end = new.start;
    regions.insert(i + 1, new);
}

/// `damon_set_regions`: keep the regions that intersect `ranges` (which are sorted and
/// disjoint), stretch the first/last intersecting region of each range to its bounds
/// (aligned to `min_sz`), fill holes with new regions, and add one region for a range no
/// region intersects.
pub fn set_regions(regions: &mut Vec<Region>, ranges: &[AddrRange], min_sz: u64) {
    let intersects = |r: &Region, a: &AddrRange| r.start < a.end && a.start < r.end;
    regions.retain(|r| ranges.iter().any(|a| intersects(r, a)));
    for a in ranges {
        let start = align_down(a.start, min_sz);
        let end = align_up(a.end, min_sz);
        let hits: Vec<usize> = (0..regions.len())
            .filter(|&i| intersects(&regions[i], a))
            .collect();
        match (hits.first(), hits.last()) {
            (Some(&f), Some(&l)) => {
                regions[f].start = start;
                regions[l].end = end;
                // damon_fill_regions_holes between first and last.
                let mut i = f;
                let mut last = l;
                while i < last {
                    if regions[i].end < regions[i + 1].start {
                        let hole = Region::new(regions[i].end, regions[i + 1].start);
                        regions.insert(i + 1, hole);
                        last += 1;
                    }
                    i += 1;
                }
            }
            _ => {
                let pos = regions.partition_point(|r| r.end <= start);
                regions.insert(pos, Region::new(start, end));
            }
        }
    }
}

/// `damon_va_evenly_split_region`: split one region into `nr_pieces` equal pieces (aligned
/// to `min_sz`), the last absorbing the remainder.
pub fn evenly_split(regions: &mut Vec<Region>, i: usize, nr_pieces: u64, min_sz: u64) {
    if nr_pieces <= 1 {
        return;
    }
    let orig_end = regions[i].end;
    let piece = align_down(regions[i].size() / nr_pieces, min_sz);
    if piece == 0 {
        return;
    }
    let template = regions[i].clone();
    regions[i].end = regions[i].start + piece;
    let mut start = regions[i].end;
    let mut at = i + 1;
    while start + piece <= orig_end {
        let mut n = template.clone();
        n.start = start;
        n.end = start + piece;
        regions.insert(at, n);
        at += 1;
        start += piece;
    }
    regions[at - 1].end = orig_end;
}

/// `__damon_va_three_regions`: the three ranges covering the mappings, excluding the two
/// largest gaps between consecutive VMAs. `None` if there are fewer than two gaps.
pub fn three_regions(vmas: &[AddrRange], min_sz: u64) -> Option<[AddrRange; 3]> {
    if vmas.len() < 3 {
        return None;
    }
    // The two biggest gaps (first found wins ties, like the kernel's strict comparisons).
    let mut first = AddrRange { start: 0, end: 0 };
    let mut second = AddrRange { start: 0, end: 0 };
    for w in vmas.windows(2) {
        let gap = AddrRange {
            start: w[0].end,
            end: w[1].start,
        };
        let sz = gap.end.saturating_sub(gap.start);
        if sz > first.end - first.start {
            second = first;
            first = gap;
        } else if sz > second.end - second.start {
            second = gap;
        }
    }
    if second.end == second.start {
        return None;
    }
    let (g1, g2) = if first.start < second.start {
        (first, second)
    } else {
        (second, first)
    };
    let lo = vmas.first()?.start;
    let hi = vmas.last()?.end;
    let a = |s: u64, e: u64| AddrRange {
        start: align_up(s, min_sz),
        end: align_up(e, min_sz),
    };
    Some([a(lo, g1.start), a(g1.end, g2.start), a(g2.end, hi)])
}

/// `__damon_va_init_regions` for one target: the three ranges, each evenly split into
/// `size / (total / min_nr_regions)` pieces.
pub fn init_regions_from_ranges(
    ranges: &[AddrRange],
    min_nr_regions: u32,
    min_sz: u64,
) -> Vec<Region> {
    let total: u64 = ranges.iter().map(|a| a.end - a.start).sum();
    let sz = (total / min_nr_regions.max(1) as u64).max(min_sz);
    let mut regions = Vec::new();
    for a in ranges {
        if a.end <= a.start {
            continue;
        }
        regions.push(Region::new(a.start, a.end));
        let i = regions.len() - 1;
        let pieces = regions[i].size() / sz;
        evenly_split(&mut regions, i, pieces, min_sz);
    }
    regions
}

/// `damon_merge_two_regions`: size-weighted averages of nr_accesses and age.
fn merge_two(l: &mut Region, r: &Region) {
    let (sl, sr) = (l.size() as u128, r.size() as u128);
    l.nr_accesses = ((l.nr_accesses as u128 * sl + r.nr_accesses as u128 * sr) / (sl + sr)) as u32;
    l.nr_accesses_bp = l.nr_accesses.saturating_mul(10_000);
    l.age = ((l.age as u128 * sl + r.age as u128 * sr) / (sl + sr)) as u32;
    l.end = r.end;
}

/// `damon_merge_regions_of`: update each region's age (reset when its access count moved
/// by more than `thres` or switched between zero and non-zero, else +1), then merge it
/// into the previous region when adjacent, close in accesses and within `sz_limit`.
pub fn merge_regions_of(regions: &mut Vec<Region>, thres: u32, sz_limit: u64) {
    let mut out: Vec<Region> = Vec::with_capacity(regions.len());
    for mut r in regions.drain(..) {
        let diff = r.nr_accesses.abs_diff(r.last_nr_accesses);
        if diff > thres || ((r.nr_accesses == 0) != (r.last_nr_accesses == 0)) {
            r.age = 0;
        } else {
            r.age = r.age.saturating_add(1);
        }
        if let Some(prev) = out.last_mut() {
            if prev.end == r.start
                && prev.nr_accesses.abs_diff(r.nr_accesses) <= thres
                && prev.size() + r.size() <= sz_limit
            {
                merge_two(prev, &r);
                continue;
            }
        }
        out.push(r);
    }
    *regions = out;
}

/// `damon_split_regions_of`: split each region larger than `2 * min_sz` into up to
/// `nr_subs` pieces at random 10 %–90 % points (aligned to `min_sz`).
pub fn split_regions_of(
    regions: &mut Vec<Region>,
    nr_subs: u32,
    min_sz: u64,
    rng: &mut Xoshiro256PlusPlus,
) {
    let mut i = 0;
    while i < regions.len() {
        let mut sz_region = regions[i].size();
        let mut added = 0;
        let mut k = 0;
        while k + 1 < nr_subs && sz_region > 2 * min_sz {
            k += 1;
            // damon_rand(1, 10): 1..=9
            let frac = 1 + rng.next_u64() % 9;
            let sz_sub = align_down((frac as u128 * sz_region as u128 / 10) as u64, min_sz);
            if sz_sub == 0 || sz_sub >= sz_region {
                continue;
            }
            split_region_at(regions, i, sz_sub);
            added += 1;
            sz_region = sz_sub;
        }
        i += 1 + added;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    const P: u64 = MIN_REGION_SZ;

    fn r(s: u64, e: u64, n: u32) -> Region {
        let mut x = Region::new(s * P, e * P);
        x.nr_accesses = n;
        x.nr_accesses_bp = n * 10_000;
        x
    }

    #[test]
    fn three_regions_exclude_the_two_biggest_gaps() {
        let v = |s: u64, e: u64| AddrRange { start: s, end: e };
        let vmas = [
            v(0, 10),
            v(12, 20),
            v(1000, 1010),
            v(1011, 1100),
            v(5000, 5010),
        ];
        let t = three_regions(&vmas, 1).unwrap();
        assert_eq!(t, [v(0, 20), v(1000, 1100), v(5000, 5010)]);
        assert!(
            three_regions(&vmas[..2], 1).is_none(),
            "fewer than two gaps"
        );
    }

    #[test]
    fn init_regions_split_evenly_with_the_last_piece_absorbing_rounding() {
        let ranges = [
            AddrRange {
                start: 0,
                end: 100 * P,
            },
            AddrRange {
                start: 200 * P,
                end: 203 * P,
            },
        ];
        let rs = init_regions_from_ranges(&ranges, 10, P);
        // sz = 103 pages / 10 = 10.3 pages (not aligned): 100 pages make 9 pieces of 11
        // pages, the last absorbing the rest; 3 pages make no piece (one region).
        assert_eq!(rs.len(), 10);
        assert_eq!(rs[0].size(), 11 * P);
        assert_eq!(rs[8].end, 100 * P);
        assert_eq!(rs[8].size(), 12 * P);
        assert_eq!(rs[9].size(), 3 * P);
        assert!(rs.windows(2).all(|w| w[0].end <= w[1].start));
    }

    #[test]
    fn merge_threshold_merges_close_neighbours_only() {
        let mut rs = vec![r(0, 10, 5), r(10, 20, 6), r(20, 30, 12), r(40, 50, 12)];
        merge_regions_of(&mut rs, 2, u64::MAX);
        // 5 and 6 merge (|diff| 1 <= 2); 12 differs by > 2; the last is not adjacent.
        assert_eq!(rs.len(), 3);
        assert_eq!((rs[0].start, rs[0].end), (0, 20 * P));
        assert_eq!(
            rs[0].nr_accesses, 5,
            "size-weighted integer average (5*10+6*10)/20"
        );
        assert_eq!(rs[0].nr_accesses_bp, 50_000);
        // The size limit stops a merge.
        let mut rs = vec![r(0, 10, 5), r(10, 20, 5)];
        merge_regions_of(&mut rs, 2, 15 * P);
        assert_eq!(rs.len(), 2);
    }

    #[test]
    fn age_resets_on_change_and_grows_otherwise() {
        let mut a = r(0, 10, 5);
        a.last_nr_accesses = 5;
        a.age = 7;
        let mut b = r(20, 30, 9);
        b.last_nr_accesses = 2;
        b.age = 7;
        let mut c = r(40, 50, 0);
        c.last_nr_accesses = 1;
        c.age = 7;
        let mut rs = vec![a, b, c];
        merge_regions_of(&mut rs, 2, u64::MAX);
        assert_eq!(rs[0].age, 8);
        assert_eq!(rs[1].age, 0, "moved by 7 > threshold 2");
        assert_eq!(rs[2].age, 0, "switched between zero and non-zero");
    }

    #[test]
    fn split_cuts_at_aligned_points_and_inherits_counters() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut rs = vec![r(0, 100, 4), r(100, 101, 2), r(101, 103, 1)];
        rs[0].age = 9;
        split_regions_of(&mut rs, 3, P, &mut rng);
        // The big region became 3 pieces; the 1-page and 2-page ones are too small.
        assert_eq!(rs.len(), 5);
        assert!(rs
            .iter()
            .all(|x| x.start % P == 0 && x.end % P == 0 && x.size() > 0));
        assert!(rs[..3].iter().all(|x| x.age == 9 && x.nr_accesses == 4));
        assert_eq!(rs[2].end, 100 * P);
        assert!(rs.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn set_regions_keeps_overlapping_state_and_fills_holes() {
        let mut rs = vec![r(0, 10, 3), r(20, 30, 4), r(100, 110, 5)];
        let ranges = [
            AddrRange {
                start: 5 * P,
                end: 40 * P,
            },
            AddrRange {
                start: 60 * P,
                end: 70 * P,
            },
        ];
        set_regions(&mut rs, &ranges, P);
        let spans: Vec<(u64, u64)> = rs.iter().map(|x| (x.start / P, x.end / P)).collect();
        assert_eq!(spans, vec![(5, 10), (10, 20), (20, 40), (60, 70)]);
        assert_eq!(rs[0].nr_accesses, 3);
        assert_eq!(rs[2].nr_accesses, 4);
    }
}
