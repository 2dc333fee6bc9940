//! Trace summaries: counts, threads, footprint, duration and how concentrated the accesses
//! are on pages (the page-popularity summary of `tiermem trace info`), and the
//! time × address access matrix of `tiermem trace heatmap` (after damo's heatmaps, with
//! untouched address gaps squeezed out).

use crate::format::{self, Footer, TimeUnit};
use crate::TraceError;
use serde::Serialize;
use std::path::Path;

/// Page popularity: how many pages take a given share of the accesses.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Popularity {
    /// Share of all accesses that go to the hottest 1 %, 10 % and 20 % of touched pages.
    pub top1pct_share: f64,
    pub top10pct_share: f64,
    pub top20pct_share: f64,
    /// Smallest numbers of pages that take 50 %, 90 % and 99 % of the accesses.
    pub pages_for_50pct: u64,
    pub pages_for_90pct: u64,
    pub pages_for_99pct: u64,
    /// Touched pages by accesses: `[lo, hi)` buckets of powers of two with page counts.
    pub histogram: Vec<(u64, u64, u64)>,
    /// The hottest pages as (virtual page number, accesses), at most 10.
    pub hottest: Vec<(u64, u64)>,
}

/// `tiermem trace info`.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    pub file: String,
    pub bytes: u64,
    pub time_unit: TimeUnit,
    pub source: String,
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub modifies: u64,
    pub threads: Vec<(u32, u64)>,
    pub first_time: u64,
    pub last_time: u64,
    /// Distinct pages × 4 KiB.
    pub footprint_bytes: u64,
    pub pages: u64,
    pub ranges: usize,
    /// Compressed file bytes per access.
    pub bytes_per_access: f64,
    pub popularity: Popularity,
}

/// Open-addressing page → count map (pages never equal `u64::MAX`).
struct Counts {
    keys: Vec<u64>,
    vals: Vec<u64>,
    len: usize,
    last: (u64, usize),
}

impl Counts {
    fn new() -> Self {
        Counts {
            keys: vec![u64::MAX; 1 << 16],
            vals: vec![0; 1 << 16],
            len: 0,
            last: (u64::MAX, 0),
        }
    }
    #[inline]
    fn add(&mut self, page: u64) {
        if self.last.0 == page {
            self.vals[self.last.1] += 1;
            return;
        }
        let mask = self.keys.len() - 1;
        let mut i = (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17) as usize & mask;
        loop {
            if self.keys[i] == page {
                break;
            }
            if self.keys[i] == u64::MAX {
                self.keys[i] = page;
                self.len += 1;
                if self.len * 2 > self.keys.len() {
                    self.grow();
                    return self.add(page);
                }
                break;
            }
            i = (i + 1) & mask;
        }
        self.vals[i] += 1;
        self.last = (page, i);
    }
    fn grow(&mut self) {
        let n = self.keys.len() * 2;
        let keys = std::mem::replace(&mut self.keys, vec![u64::MAX; n]);
        let vals = std::mem::replace(&mut self.vals, vec![0; n]);
        self.len = 0;
        self.last = (u64::MAX, 0);
        for (k, v) in keys.into_iter().zip(vals) {
            if k != u64::MAX && v > 0 {
                let mask = n - 1;
                let mut i = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17) as usize & mask;
                while self.keys[i] != u64::MAX {
                    i = (i + 1) & mask;
                }
                self.keys[i] = k;
                self.vals[i] = v;
                self.len += 1;
            } else if k != u64::MAX {
                // Inserted but not yet counted (the page being added during growth).
                let mask = n - 1;
                let mut i = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17) as usize & mask;
                while self.keys[i] != u64::MAX {
                    i = (i + 1) & mask;
                }
                self.keys[i] = k;
                self.len += 1;
            }
        }
    }
    /// (page, count) sorted by count descending, then page.
    fn sorted(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self
            .keys
            .iter()
            .zip(&self.vals)
            .filter(|(k, _)| **k != u64::MAX)
            .map(|(k, c)| (*k, *c))
            .collect();
        v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// The popularity summary of per-page access counts sorted hottest first.
pub fn popularity(sorted: &[(u64, u64)]) -> Popularity {
    let total: u64 = sorted.iter().map(|x| x.1).sum();
    if total == 0 {
        return Popularity::default();
    }
    let n = sorted.len();
    let share = |frac: f64| {
        let k = ((n as f64 * frac).ceil() as usize).clamp(1, n);
        sorted[..k].iter().map(|x| x.1).sum::<u64>() as f64 / total as f64
    };
    let pages_for = |frac: f64| {
        let need = (total as f64 * frac).ceil() as u64;
        let mut acc = 0;
        for (i, x) in sorted.iter().enumerate() {
            acc += x.1;
            if acc >= need {
                return i as u64 + 1;
            }
        }
        n as u64
    };
    let mut hist: Vec<(u64, u64, u64)> = Vec::new();
    for &(_, c) in sorted.iter().rev() {
        let lo = 1u64 << (63 - c.leading_zeros());
        match hist.last_mut() {
            Some(h) if h.0 == lo => h.2 += 1,
            _ => hist.push((lo, lo.saturating_mul(2), 1)),
        }
    }
    Popularity {
        top1pct_share: share(0.01),
        top10pct_share: share(0.10),
        top20pct_share: share(0.20),
        pages_for_50pct: pages_for(0.5),
        pages_for_90pct: pages_for(0.9),
        pages_for_99pct: pages_for(0.99),
        histogram: hist,
        hottest: sorted.iter().take(10).copied().collect(),
    }
}

/// Read a whole trace (streaming) and summarise it. Every chunk is decoded, so this also
/// verifies the file.
pub fn info(path: &Path) -> Result<Info, TraceError> {
    let (mut r, footer) = format::open(path)?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut counts = Counts::new();
    while let Some(rec) = r.next_record()? {
        counts.add(rec.page());
    }
    let sorted = counts.sorted();
    Ok(summarise(
        path,
        bytes,
        r.header.unit,
        &footer,
        popularity(&sorted),
    ))
}

fn summarise(path: &Path, bytes: u64, unit: TimeUnit, f: &Footer, popularity: Popularity) -> Info {
    Info {
        file: path.display().to_string(),
        bytes,
        time_unit: unit,
        source: f.source.clone(),
        accesses: f.records,
        reads: f.reads,
        writes: f.writes,
        modifies: f.modifies,
        threads: f.threads.clone(),
        first_time: f.first_time,
        last_time: f.last_time,
        footprint_bytes: f.pages * 4096,
        pages: f.pages,
        ranges: f.ranges.len(),
        bytes_per_access: if f.records > 0 {
            bytes as f64 / f.records as f64
        } else {
            0.0
        },
        popularity,
    }
}

/// A time × address matrix: a trace's accesses (`V` = u64, counts) or a DAMON record's
/// access rates (`V` = f64, `report::DamonHeatmap`). The plots read both alike.
#[derive(Clone, Debug, Serialize)]
pub struct Heatmap<V = u64> {
    pub file: String,
    pub time_unit: TimeUnit,
    pub first_time: u64,
    pub last_time: u64,
    /// Address ranges shown, in order (`[first_page, end_page)`); the address axis
    /// concatenates them.
    pub ranges: Vec<(u64, u64)>,
    pub pages: u64,
    pub time_bins: usize,
    pub addr_bins: usize,
    /// `counts[t][a]`: the value of time bin t at address bin a.
    pub counts: Vec<Vec<V>>,
}

/// Bin every access of a trace by time and by position in the touched address space.
pub fn heatmap(path: &Path, time_bins: usize, addr_bins: usize) -> Result<Heatmap, TraceError> {
    let (mut r, footer) = format::open(path)?;
    let time_bins = time_bins.clamp(1, 10_000);
    let addr_bins = addr_bins.clamp(1, 10_000);
    let total: u64 = footer.range_pages().max(1);
    // Start of each range on the concatenated axis.
    let mut bases = Vec::with_capacity(footer.ranges.len());
    let mut acc = 0u64;
    for r in &footer.ranges {
        bases.push(acc);
        acc += r.1 - r.0;
    }
    let t0 = footer.first_time;
    let span = footer.last_time.saturating_sub(t0).max(1) as u128;
    let mut counts = vec![vec![0u64; addr_bins]; time_bins];
    let mut last = 0usize;
    while let Some(rec) = r.next_record()? {
        let p = rec.page();
        let ranges = &footer.ranges;
        if !(last < ranges.len() && ranges[last].0 <= p && p < ranges[last].1) {
            let k = ranges.partition_point(|r| r.1 <= p);
            if k >= ranges.len() || ranges[k].0 > p {
                return Err(TraceError::invalid(
                    &path.display().to_string(),
                    format!("page {p:#x} is outside the ranges listed in the footer"),
                ));
            }
            last = k;
        }
        let pos = bases[last] + (p - footer.ranges[last].0);
        let tb = ((rec.time.saturating_sub(t0) as u128 * time_bins as u128) / (span + 1)) as usize;
        let ab = ((pos as u128 * addr_bins as u128) / total as u128) as usize;
        counts[tb.min(time_bins - 1)][ab.min(addr_bins - 1)] += 1;
    }
    Ok(Heatmap {
        file: path.display().to_string(),
        time_unit: r.header.unit,
        first_time: footer.first_time,
        last_time: footer.last_time,
        ranges: footer.ranges.clone(),
        pages: total,
        time_bins,
        addr_bins,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn popularity_of_a_skewed_set() {
        // Page 0 has 90 accesses, pages 1..=10 one each.
        let mut v = vec![(0u64, 90u64)];
        v.extend((1..=10).map(|p| (p, 1)));
        let p = popularity(&v);
        assert_eq!(p.pages_for_50pct, 1);
        assert_eq!(p.pages_for_90pct, 1);
        assert_eq!(p.pages_for_99pct, 10);
        assert!((p.top1pct_share - 0.9).abs() < 1e-9);
        assert_eq!(p.histogram, vec![(1, 2, 10), (64, 128, 1)]);
    }

    #[test]
    fn counts_grow_and_keep_totals() {
        let mut c = Counts::new();
        for i in 0..300_000u64 {
            c.add(i % 100_003);
        }
        let s = c.sorted();
        assert_eq!(s.len(), 100_003);
        assert_eq!(s.iter().map(|x| x.1).sum::<u64>(), 300_000);
    }
}
