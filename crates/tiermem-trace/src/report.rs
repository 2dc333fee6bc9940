//! Reports on DAMON records (`tiermem report heatmap|wss|access`), computed as
//! `damo report` computes them (damo 3.x, `src/damo_report_heatmap.py`, `damo_wss.py`,
//! `damo_report_access.py`):
//!
//! * **heatmap**: time × address; a cell's value is the access frequency of the regions
//!   that cover it (`nr_accesses` per aggregation interval, in samples per second), weighted
//!   by the time and bytes each region overlaps the cell. The address axis concatenates the
//!   ranges of the regions found accessed at least once (or, with `all_ranges`, every
//!   monitored range), gaps removed as in `tiermem trace heatmap`, optionally clipped to one
//!   address range (damo's `--address_range`); damo instead shows one contiguous range, by
//!   default the hottest.
//! * **wss**: the working set of each snapshot, the bytes of regions with `nr_accesses` at
//!   least `acc_thres` samples and size at least `sz_thres`, after the first
//!   `exclude_snapshots` snapshots; targets of one snapshot index are summed (damo's
//!   default); percentiles of the sorted sizes, `dists[⌊p/100 · n⌋]`.
//! * **access**: the regions of one snapshot with their size, access rate and age.

use crate::format::TimeUnit;
use crate::info::Heatmap;
use crate::TraceError;
use serde::Serialize;
use tiermem_core::damon::Region;
use tiermem_core::damon_record::{DamonRecord, RecordSnapshot};

/// A DAMON heatmap: `map.counts[t][a]` in accesses (samples) per second, time in ns.
#[derive(Clone, Debug, Serialize)]
pub struct DamonHeatmap {
    #[serde(flatten)]
    pub map: Heatmap<f64>,
    pub value_label: &'static str,
    pub target_id: u64,
}

/// Merge every snapshot's regions (only those found accessed, unless `all`) into the
/// sorted, disjoint address ranges they cover.
fn covered_ranges(rec: &DamonRecord, all: bool) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = rec
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter())
        .filter(|r| all || r.nr_accesses > 0)
        .map(|r| (r.start, r.end))
        .collect();
    all.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in all {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The record of `target` (an index into `records`), with a clear error otherwise.
pub fn pick_target<'a>(
    records: &'a [DamonRecord],
    target: usize,
    name: &str,
) -> Result<&'a DamonRecord, TraceError> {
    records.get(target).ok_or_else(|| {
        TraceError::invalid(
            name,
            format!(
                "no target {target}: the record has {} target(s) (0..{})",
                records.len(),
                records.len().saturating_sub(1)
            ),
        )
    })
}

/// The ranges clipped to `[lo, hi)`.
fn clip(ranges: Vec<(u64, u64)>, (lo, hi): (u64, u64)) -> Vec<(u64, u64)> {
    ranges
        .into_iter()
        .filter_map(|(s, e)| {
            let (s, e) = (s.max(lo), e.min(hi));
            (s < e).then_some((s, e))
        })
        .collect()
}

/// Bin one target's snapshots into a time × address heatmap, over the ranges found
/// accessed (every monitored range with `all_ranges`), within `addr_range` if given.
pub fn heatmap(
    rec: &DamonRecord,
    name: &str,
    (time_bins, addr_bins): (usize, usize),
    all_ranges: bool,
    addr_range: Option<(u64, u64)>,
) -> Result<DamonHeatmap, TraceError> {
    let time_bins = time_bins.clamp(1, 10_000);
    let addr_bins = addr_bins.clamp(1, 10_000);
    let mut ranges = covered_ranges(rec, all_ranges);
    if ranges.is_empty() {
        // Nothing was ever accessed: show what was monitored.
        ranges = covered_ranges(rec, true);
    }
    if let Some((lo, hi)) = addr_range {
        ranges = clip(ranges, (lo, hi));
        if ranges.is_empty() {
            return Err(TraceError::invalid(
                name,
                format!("no monitored region lies within the address range {lo:#x}-{hi:#x}"),
            ));
        }
    }
    let first = rec.snapshots.iter().map(|s| s.start_ns).min();
    let last = rec.snapshots.iter().map(|s| s.end_ns).max();
    let (Some(t0), Some(t1)) = (first, last) else {
        return Err(TraceError::invalid(name, "the record has no snapshots"));
    };
    if ranges.is_empty() {
        return Err(TraceError::invalid(name, "the record has no regions"));
    }
    // Start of each range on the concatenated axis, bytes.
    let mut bases = Vec::with_capacity(ranges.len());
    let mut total = 0u64;
    for r in &ranges {
        bases.push(total);
        total += r.1 - r.0;
    }
    let span = (t1 - t0).max(1) as f64;
    let bin_t = span / time_bins as f64;
    let bin_a = total as f64 / addr_bins as f64;
    let hz = 1e6 / rec.aggr_us.max(1) as f64;
    let mut values = vec![vec![0f64; addr_bins]; time_bins];
    for s in &rec.snapshots {
        for r in &s.regions {
            // The range a region overlaps: one at most, as the ranges are unions of regions
            // (clipped at most at their ends); one outside them (never accessed, or outside
            // the address range asked for) adds nothing.
            let k = ranges.partition_point(|x| x.1 <= r.start);
            let Some(range) = ranges.get(k).filter(|x| x.0 < r.end) else {
                continue;
            };
            let (s0, s1) = (r.start.max(range.0), r.end.min(range.1));
            let a0 = (bases[k] + (s0 - range.0)) as f64;
            let a1 = a0 + (s1 - s0) as f64;
            let heat = r.nr_accesses as f64 * hz;
            spread(
                &mut values,
                ((s.start_ns - t0) as f64, (s.end_ns - t0) as f64),
                (a0, a1),
                (bin_t, bin_a),
                heat,
            );
        }
    }
    Ok(DamonHeatmap {
        map: Heatmap {
            file: name.to_string(),
            time_unit: TimeUnit::Ns,
            first_time: t0,
            last_time: t1,
            ranges: ranges
                .iter()
                .map(|r| (r.0 >> 12, r.1.div_ceil(4096)))
                .collect(),
            pages: total.div_ceil(4096),
            time_bins,
            addr_bins,
            counts: values,
        },
        value_label: "accesses per second (DAMON samples)",
        target_id: rec.target_id,
    })
}

/// Add `heat` over the cells a time × address rectangle overlaps, weighted by the share of
/// each cell it covers (damo's `Σ value · overlap_time · overlap_bytes / cell area`).
fn spread(
    values: &mut [Vec<f64>],
    (t0, t1): (f64, f64),
    (a0, a1): (f64, f64),
    (bin_t, bin_a): (f64, f64),
    heat: f64,
) {
    if heat == 0.0 || t1 <= t0 || a1 <= a0 {
        return;
    }
    let nt = values.len();
    let na = values[0].len();
    let cells = |x0: f64, x1: f64, bin: f64, n: usize| {
        let first = ((x0 / bin) as usize).min(n - 1);
        let last = (((x1 / bin).ceil() as usize).max(first + 1)).min(n);
        (first, last)
    };
    let (ft, lt) = cells(t0, t1, bin_t, nt);
    let (fa, la) = cells(a0, a1, bin_a, na);
    for (ti, row) in values.iter_mut().enumerate().take(lt).skip(ft) {
        let ot = (t1.min((ti + 1) as f64 * bin_t) - t0.max(ti as f64 * bin_t)).max(0.0);
        if ot == 0.0 {
            continue;
        }
        for (ai, cell) in row.iter_mut().enumerate().take(la).skip(fa) {
            let oa = (a1.min((ai + 1) as f64 * bin_a) - a0.max(ai as f64 * bin_a)).max(0.0);
            *cell += heat * ot * oa / (bin_t * bin_a);
        }
    }
}

/// Ten levels, coldest first, for a terminal heatmap.
const LEVELS: &[u8] = b" .:-=+*#%@";

/// The heatmap as text: one row per time bin, one column per address bin; each cell a
/// level of the largest value (damo's terminal view, without colour).
pub fn render_heatmap(dhm: &DamonHeatmap) -> String {
    let hm = &dhm.map;
    let max = hm.counts.iter().flatten().fold(0f64, |m, &v| m.max(v));
    let mut out = format!(
        "# heatmap of target {} in {}: {} time rows x {} address columns; time {:.3}-{:.3} s, {} MiB of addresses shown in {} range(s)\n# levels '{}' (blank: no access) up to {:.1} accesses/s\n",
        dhm.target_id,
        hm.file,
        hm.time_bins,
        hm.addr_bins,
        hm.first_time as f64 / 1e9,
        hm.last_time as f64 / 1e9,
        (hm.pages * 4096) >> 20,
        hm.ranges.len(),
        String::from_utf8_lossy(LEVELS),
        max
    );
    for row in &hm.counts {
        out.push('|');
        for &v in row {
            let level = if v <= 0.0 || max <= 0.0 {
                0
            } else {
                (1 + ((v / max) * (LEVELS.len() - 2) as f64) as usize).min(LEVELS.len() - 1)
            };
            out.push(LEVELS[level] as char);
        }
        out.push_str("|\n");
    }
    out
}

/// Working-set sizes (`damo report wss`).
#[derive(Clone, Debug, Serialize)]
pub struct Wss {
    pub acc_thres: u64,
    pub sz_thres: u64,
    pub excluded_snapshots: usize,
    /// `(time_ns, bytes)` per snapshot index, targets summed, in time order.
    pub series: Vec<(u64, u64)>,
    /// `(percentile, bytes)`.
    pub percentiles: Vec<(u32, u64)>,
    pub average: f64,
}

/// Working set of every snapshot (targets summed by snapshot index).
pub fn wss(
    records: &[DamonRecord],
    acc_thres: u64,
    sz_thres: u64,
    exclude_snapshots: usize,
    percentiles: &[u32],
) -> Wss {
    let n = records.iter().map(|r| r.snapshots.len()).max().unwrap_or(0);
    // damo skips the first snapshots (DAMON still adapting its regions); never all of them.
    let skip = exclude_snapshots.min(n.saturating_sub(1));
    let series: Vec<(u64, u64)> = (skip..n)
        .map(|i| {
            let snaps: Vec<&RecordSnapshot> =
                records.iter().filter_map(|r| r.snapshots.get(i)).collect();
            let time = snaps.iter().map(|s| s.end_ns).max().unwrap_or(0);
            let bytes = snaps
                .iter()
                .flat_map(|s| s.regions.iter())
                .filter(|r| r.nr_accesses >= acc_thres && r.len() >= sz_thres)
                .map(Region::len)
                .sum();
            (time, bytes)
        })
        .collect();
    let mut sorted: Vec<u64> = series.iter().map(|s| s.1).collect();
    sorted.sort_unstable();
    let pct = percentiles
        .iter()
        .filter_map(|&p| {
            let i = ((p as f64 / 100.0) * sorted.len() as f64) as usize;
            sorted
                .get(i.min(sorted.len().saturating_sub(1)))
                .map(|&v| (p, v))
        })
        .collect();
    let average = if sorted.is_empty() {
        0.0
    } else {
        sorted.iter().sum::<u64>() as f64 / sorted.len() as f64
    };
    Wss {
        acc_thres,
        sz_thres,
        excluded_snapshots: skip,
        series,
        percentiles: pct,
        average,
    }
}

/// Bytes as damo prints them (`1.500 MiB`).
pub fn fmt_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{x:.3} {}", units[u])
    }
}

pub fn render_wss(w: &Wss) -> String {
    let mut out = format!(
        "# working set: regions with nr_accesses >= {} samples and size >= {} B; {} snapshots after the first {}\n# avr: {}\n# percentile  wss\n",
        w.acc_thres,
        w.sz_thres,
        w.series.len(),
        w.excluded_snapshots,
        fmt_bytes(w.average as u64)
    );
    for (p, v) in &w.percentiles {
        out += &format!("{p:>12}  {}\n", fmt_bytes(*v));
    }
    out
}

/// The regions of snapshot `index` (negative: from the end) of every target.
pub fn render_access(records: &[DamonRecord], index: i64) -> Result<String, String> {
    let mut out = String::new();
    for (ti, rec) in records.iter().enumerate() {
        let n = rec.snapshots.len() as i64;
        let i = if index < 0 { n + index } else { index };
        let Some(s) = usize::try_from(i).ok().and_then(|i| rec.snapshots.get(i)) else {
            return Err(format!(
                "target {ti} has {n} snapshots: no snapshot {index}"
            ));
        };
        let max = rec.max_nr_accesses();
        let aggr_s = rec.aggr_us as f64 / 1e6;
        let total: u64 = s.regions.iter().map(Region::len).sum();
        let accessed: u64 = s
            .regions
            .iter()
            .filter(|r| r.nr_accesses > 0)
            .map(Region::len)
            .sum();
        out += &format!(
            "# target {ti} (id {}), snapshot {i} of {n}: {:.3}-{:.3} s, {} regions, {} monitored, {} accessed\n",
            rec.target_id,
            s.start_ns as f64 / 1e9,
            s.end_ns as f64 / 1e9,
            s.regions.len(),
            fmt_bytes(total),
            fmt_bytes(accessed)
        );
        out += &format!(
            "{:>5} {:>18} {:>18} {:>14} {:>16} {:>20}\n",
            "idx", "start", "end", "size", "access rate", "age"
        );
        for (k, r) in s.regions.iter().enumerate() {
            out += &format!(
                "{k:>5} {:>#18x} {:>#18x} {:>14} {:>7} ({:>5.1} %) {:>9} ({:.1} s)\n",
                r.start,
                r.end,
                fmt_bytes(r.len()),
                r.nr_accesses,
                100.0 * r.nr_accesses as f64 / max as f64,
                r.age,
                r.age as f64 * aggr_s
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> DamonRecord {
        // Two snapshots of 100 ms over two ranges with a gap: [0, 1 MiB) hot in the first
        // half, [2 MiB, 3 MiB) idle.
        let snap = |t: u64, hot: u64| RecordSnapshot {
            start_ns: t,
            end_ns: t + 100_000_000,
            regions: vec![
                Region {
                    start: 0,
                    end: 512 << 10,
                    nr_accesses: hot,
                    age: 3,
                },
                Region {
                    start: 512 << 10,
                    end: 1 << 20,
                    nr_accesses: 0,
                    age: 9,
                },
                Region {
                    start: 2 << 20,
                    end: 3 << 20,
                    nr_accesses: 0,
                    age: 9,
                },
            ],
        };
        DamonRecord {
            sample_us: 5000,
            aggr_us: 100_000,
            snapshots: vec![snap(0, 20), snap(100_000_000, 10)],
            ..Default::default()
        }
    }

    #[test]
    fn heatmap_weights_cells_by_overlap_and_removes_gaps() {
        let r = rec();
        let hm = heatmap(&r, "t", (2, 4), true, None).unwrap();
        assert_eq!(
            hm.map.ranges,
            vec![(0, 256), (512, 768)],
            "the 1 MiB gap is not shown"
        );
        assert_eq!(hm.map.pages, 512);
        // 20 samples per 100 ms = 200 /s over the first quarter of the axis, then 100 /s.
        assert_eq!(hm.map.counts[0], vec![200.0, 0.0, 0.0, 0.0]);
        assert_eq!(hm.map.counts[1], vec![100.0, 0.0, 0.0, 0.0]);
        // A cell half covered gets half the value.
        let hm = heatmap(&r, "t", (1, 2), true, None).unwrap();
        assert_eq!(hm.map.counts[0], vec![75.0, 0.0]);
        let text = render_heatmap(&hm);
        assert!(text.contains("|@ |"), "{text}");
        // By default only what was accessed: the first 512 KiB.
        let hm = heatmap(&r, "t", (1, 2), false, None).unwrap();
        assert_eq!(hm.map.ranges, vec![(0, 128)]);
        assert_eq!(hm.map.counts[0], vec![150.0, 150.0]);
    }

    /// An address range clips the axis, also through a region (its overlap counts).
    #[test]
    fn heatmap_keeps_to_an_address_range() {
        let r = rec();
        let hm = heatmap(
            &r,
            "t",
            (1, 2),
            true,
            Some((256 << 10, (2 << 20) + (256 << 10))),
        )
        .unwrap();
        assert_eq!(hm.map.ranges, vec![(64, 256), (512, 576)]);
        // [256 KiB, 512 KiB) of the hot region (150 /s) and 256 KiB idle make the first
        // half of the 1 MiB axis; the rest is idle.
        assert_eq!(hm.map.counts[0], vec![75.0, 0.0]);
        let err = heatmap(&r, "t", (1, 2), true, Some((4 << 20, 5 << 20))).unwrap_err();
        assert!(err.to_string().contains("0x400000-0x500000"), "{err}");
    }

    #[test]
    fn wss_counts_accessed_regions_and_takes_damo_percentiles() {
        let r = rec();
        let w = wss(&[r.clone(), r], 1, 1, 0, &[0, 50, 100]);
        // Two targets summed: 2 × 512 KiB accessed in each snapshot.
        assert_eq!(
            w.series,
            vec![(100_000_000, 1 << 20), (200_000_000, 1 << 20)]
        );
        assert_eq!(
            w.percentiles,
            vec![(0, 1 << 20), (50, 1 << 20), (100, 1 << 20)]
        );
        let w = wss(&[rec()], 15, 1, 0, &[0, 100]);
        assert_eq!(w.series[1].1, 0, "10 samples are below a threshold of 15");
        // Excluding more snapshots than there are keeps the last.
        assert_eq!(wss(&[rec()], 1, 1, 20, &[50]).series.len(), 1);
    }

    #[test]
    fn access_lists_one_snapshot() {
        let text = render_access(&[rec()], -1).unwrap();
        assert!(text.contains("snapshot 1 of 2"), "{text}");
        assert!(text.contains("10 ( 50.0 %)"), "{text}");
        assert!(render_access(&[rec()], 5).is_err());
    }
}
