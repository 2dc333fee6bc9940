//! The checks of a scenario's `[validate]` table and how each compares a kernel recording
//! with a simulated run.
//!
//! Tolerances are the same for every scenario (no per-scenario knob can make a case pass):
//!
//! * **counts**: within 10 % of the kernel's value, or 1 % of the workload's pages when
//!   that is larger (a counter of a few pages is at the recording's resolution), the floor
//!   capped at a quarter of the count (a floor above the count would pass zero);
//! * **burst sizes**: within 10 % of that burst, at least a page (no floor of the
//!   workload's size: a 16-page burst must not pass against the kernel's 1 036);
//! * **event times** (first occurrence, bursts, scan passes): within one scan period
//!   (`task_scan_start` of the workload: `max(100 ms, scan_period_min / windows)`) plus one
//!   sample interval (both timelines are sampled);
//! * **exact outcomes** (placement shares, KSM page counts): within 1 %.

use super::timeline::{at, with_origin, Timeline};
use serde::{Deserialize, Serialize};
use tiermem_core::units::SimDuration;

/// One check (`[[validate.checks]]`, selected by `what`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum CheckSpec {
    /// The column's value at the end of the recording (a count).
    Final { column: String },
    /// The column's value at the given times (counts).
    At {
        column: String,
        times: Vec<SimDuration>,
    },
    /// When the column first exceeds `above` (an event time), or, with `below`, first
    /// falls under it (a region's pages leaving a node).
    First {
        column: String,
        #[serde(default)]
        above: f64,
        #[serde(default)]
        below: Option<f64>,
    },
    /// The bursts of a cumulative counter: runs of samples whose increase per second
    /// exceeds `min_rate_share` of the counter's mean rate over the run (default 0.5);
    /// compared: their number, and each burst's start (event time) and size (count).
    Bursts {
        column: String,
        #[serde(default)]
        min_rate_share: Option<f64>,
    },
    /// The NUMA scanner's passes over the workload's address space (`<workload>.numa_scan_seq`):
    /// their number (count, at least ±1) and each pass's time (event time).
    ScanPasses { workload: String },
    /// The column's final value within 1 % (an exact outcome).
    Exact { column: String },
}

impl CheckSpec {
    /// Columns the check reads (for plots).
    pub fn columns(&self) -> Vec<String> {
        match self {
            CheckSpec::Final { column }
            | CheckSpec::At { column, .. }
            | CheckSpec::First { column, .. }
            | CheckSpec::Bursts { column, .. }
            | CheckSpec::Exact { column } => vec![column.clone()],
            CheckSpec::ScanPasses { workload } => {
                vec![tiermem_core::timeline::scan_seq_column(workload)]
            }
        }
    }
}

/// The tolerances of one scenario.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Tolerances {
    /// Relative tolerance of counts (0.10).
    pub count_rel: f64,
    /// Absolute floor of counts: 1 % of the workload's pages.
    pub count_abs: f64,
    /// Event times, seconds.
    pub time_s: f64,
    /// Relative tolerance of exact outcomes (0.01).
    pub exact_rel: f64,
}

/// The outcome of one comparison (a check can give several rows).
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub check: String,
    pub kernel: String,
    pub sim: String,
    pub diff: String,
    pub tolerance: String,
    pub pass: bool,
    /// The kernel's and the simulator's values where the row compares two numbers
    /// (counts, event times): what [`any_of`] needs to place the simulated value within
    /// the recordings' spread.
    #[serde(skip)]
    pub values: Option<(f64, f64)>,
}

fn fmt_count(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:.4e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What a column counts, which sets the absolute floor of its tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Pages: the floor is 1 % of the workload's pages.
    Pages,
    /// Bytes (`damon_reclaim_bytes_*`, a DAMOS scheme's `sz_*`): the same floor in bytes.
    Bytes,
    /// Events (scan passes, full scans, stable nodes, regions, quota exceeds, accesses):
    /// half an event.
    Events,
}

/// The unit of a timeline column.
pub fn unit_of(column: &str) -> Unit {
    if let Some(stat) = damos_stat_of(column) {
        return if stat.starts_with("sz_") {
            Unit::Bytes
        } else {
            Unit::Events
        };
    }
    if column.contains("bytes") {
        Unit::Bytes
    } else if column.ends_with(".numa_scan_seq")
        || column.ends_with(".accesses")
        || column.starts_with("damon_reclaim_nr_")
        || matches!(
            column,
            "ksm_full_scans"
                | "ksm_stable_node_chains"
                | "ksm_stable_node_dups"
                | "oom_kill"
                | "pageoutrun"
                | "allocstall_movable"
        )
    {
        Unit::Events
    } else {
        Unit::Pages
    }
}

/// The statistic of a DAMOS scheme column (`damon_ctx0_scheme0_sz_tried` → `sz_tried`).
fn damos_stat_of(column: &str) -> Option<&'static str> {
    let rest = column.strip_prefix("damon_ctx")?;
    tiermem_core::timeline::DAMOS_STATS
        .iter()
        .copied()
        .find(|s| rest.ends_with(&format!("_{s}")) && rest.contains("_scheme"))
}

fn count_row(check: String, k: f64, s: f64, tol: &Tolerances) -> CheckResult {
    count_row_in(check, k, s, tol, Unit::Pages)
}

fn count_row_in(check: String, k: f64, s: f64, tol: &Tolerances, unit: Unit) -> CheckResult {
    count_row_within(check, k, s, tol.count_allowed(k, unit))
}

/// The share of a count its absolute floor may reach: a floor above the count itself would
/// pass any value from zero to twice the count, so the floor is capped at a quarter of it.
const FLOOR_SHARE: f64 = 0.25;

impl Tolerances {
    /// How far a count may be from the kernel's `k`: 10 % of it, or the unit's floor (1 % of
    /// the workload's pages, half an event) but never more than a quarter of `k`; at least
    /// the recordings' resolution (one page, half an event).
    pub fn count_allowed(&self, k: f64, unit: Unit) -> f64 {
        let (floor, resolution) = match unit {
            Unit::Pages => (self.count_abs, 1.0),
            Unit::Bytes => (self.count_abs * 4096.0, 4096.0),
            Unit::Events => (0.5, 0.5),
        };
        (self.count_rel * k.abs())
            .max(floor.min(FLOOR_SHARE * k.abs()))
            .max(resolution)
    }

    /// How far a burst's size (pages) may be from the kernel's burst of `k` pages: 10 % of
    /// that burst, at least a page. No floor of the workload's size: a burst is the event
    /// the check is about, and a floor larger than it would pass a burst that never came.
    pub fn burst_allowed(&self, k: f64) -> f64 {
        (self.count_rel * k.abs()).max(1.0)
    }
}

fn count_row_within(check: String, k: f64, s: f64, allowed: f64) -> CheckResult {
    let diff = if k != 0.0 {
        format!("{:+.1} %", (s - k) / k.abs() * 100.0)
    } else {
        format!("{:+}", fmt_count(s - k))
    };
    CheckResult {
        check,
        kernel: fmt_count(k),
        sim: fmt_count(s),
        diff,
        tolerance: format!("±{}", fmt_count(allowed.round())),
        pass: (s - k).abs() <= allowed,
        values: Some((k, s)),
    }
}

fn time_row(check: String, k: Option<f64>, s: Option<f64>, tol: &Tolerances) -> CheckResult {
    let show = |v: Option<f64>| v.map_or("never".to_string(), |t| format!("{t:.2} s"));
    let (diff, pass) = match (k, s) {
        (Some(a), Some(b)) => (format!("{:+.2} s", b - a), (b - a).abs() <= tol.time_s),
        (None, None) => ("".into(), true),
        _ => ("—".into(), false),
    };
    CheckResult {
        check,
        kernel: show(k),
        sim: show(s),
        diff,
        tolerance: format!("±{:.2} s", tol.time_s),
        pass,
        values: k.zip(s),
    }
}

fn missing(check: String, which: &str, column: &str) -> CheckResult {
    CheckResult {
        check,
        kernel: String::new(),
        sim: String::new(),
        diff: format!("no column {column:?} in the {which} timeline"),
        tolerance: String::new(),
        pass: false,
        values: None,
    }
}

/// Evaluate one check.
pub fn evaluate(
    spec: &CheckSpec,
    kernel: &Timeline,
    sim: &Timeline,
    tol: &Tolerances,
) -> Vec<CheckResult> {
    let col = spec.columns().remove(0);
    let (ks, ss) = match (kernel.series(&col), sim.series(&col)) {
        (Some(k), Some(s)) => (k, s),
        (None, _) => return vec![missing(label(spec), "kernel", &col)],
        (_, None) => return vec![missing(label(spec), "simulated", &col)],
    };
    let end = kernel.end();
    match spec {
        CheckSpec::Final { column } => vec![count_row_in(
            label(spec),
            at(&ks, end),
            at(&with_origin(ss), end),
            tol,
            unit_of(column),
        )],
        CheckSpec::At { column, times } => {
            let ss = with_origin(ss);
            times
                .iter()
                .map(|t| {
                    let t = t.secs_f64();
                    count_row_in(
                        format!("{column} at {t} s"),
                        at(&ks, t),
                        at(&ss, t),
                        tol,
                        unit_of(column),
                    )
                })
                .collect()
        }
        CheckSpec::First { above, below, .. } => {
            let crossed = |v: f64| below.map_or(v > *above, |b| v < b);
            let first = |s: &[(f64, f64)]| s.iter().find(|p| crossed(p.1)).map(|p| p.0);
            vec![time_row(label(spec), first(&ks), first(&ss), tol)]
        }
        CheckSpec::Exact { .. } => {
            let (k, s) = (at(&ks, end), at(&ss, end));
            let allowed = tol.exact_rel * k.abs();
            vec![CheckResult {
                check: label(spec),
                kernel: fmt_count(k),
                sim: fmt_count(s),
                diff: if k != 0.0 {
                    format!("{:+.2} %", (s - k) / k.abs() * 100.0)
                } else {
                    format!("{:+}", fmt_count(s - k))
                },
                tolerance: "±1 %".into(),
                pass: (s - k).abs() <= allowed.max(0.5),
                values: None,
            }]
        }
        CheckSpec::Bursts {
            column,
            min_rate_share,
        } => {
            let share = min_rate_share.unwrap_or(0.5);
            let kb = bursts(&with_origin(ks), end, share, tol.time_s);
            let sb = bursts(&with_origin(ss), end, share, tol.time_s);
            compare_events(column, "burst", &kb, &sb, tol)
        }
        CheckSpec::ScanPasses { workload } => scan_pass_rows(workload, &[kernel], sim, tol),
    }
}

/// The scan-pass rows against one or more recordings of the kernel: the number of passes
/// (within ±1, or 10 %, of any recording), and each pass's end time within one scan period
/// of the same pass in any recording. The period is the one the kernel was using when the
/// pass ended (the gap between its last two scans by then, from `numa_pte_updates`), at
/// least the scenario's time tolerance. The times row reports the pass furthest outside,
/// or nearest to, its tolerance, with every recording's time for that pass.
pub fn scan_pass_rows(
    workload: &str,
    kernels: &[&Timeline],
    sim: &Timeline,
    tol: &Tolerances,
) -> Vec<CheckResult> {
    let col = tiermem_core::timeline::scan_seq_column(workload);
    let label = format!("{workload} scan passes");
    let Some(ss) = sim.series(&col) else {
        return vec![missing(label, "simulated", &col)];
    };
    let sp = passes(&with_origin(ss));
    // Per recording: its pass times and the scan period in effect at each.
    let mut recs: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
    for k in kernels {
        let Some(ks) = k.series(&col) else {
            return vec![missing(label, "kernel", &col)];
        };
        let kp = passes(&ks);
        let scans = k.series("numa_pte_updates").map(|s| scan_times(&s));
        let allowed = kp
            .iter()
            .map(|&t| {
                scans
                    .as_deref()
                    .map_or(tol.time_s, |sc| period_at(sc, t).max(tol.time_s))
            })
            .collect();
        recs.push((kp, allowed));
    }
    let mut counts = recs.iter().map(|(kp, _)| {
        let mut r = count_row(label.clone(), kp.len() as f64, sp.len() as f64, tol);
        let allowed = (tol.count_rel * kp.len() as f64).max(1.0);
        r.tolerance = format!("±{}", fmt_count(allowed.round()));
        r.pass = (sp.len() as f64 - kp.len() as f64).abs() <= allowed;
        r
    });
    let Some(first) = counts.next() else {
        return Vec::new();
    };
    let mut out = vec![any_of(first, counts.collect())];
    // Per simulated pass: the recording that comes closest (relative to its tolerance).
    let best = |i: usize| {
        recs.iter()
            .filter(|(kp, _)| i < kp.len())
            .map(|(kp, al)| (kp[i], al[i], (sp[i] - kp[i]).abs() / al[i]))
            .min_by(|a, b| a.2.total_cmp(&b.2))
    };
    let n = sp
        .len()
        .min(recs.iter().map(|r| r.0.len()).max().unwrap_or(0));
    let worst = (0..n)
        .filter_map(|i| best(i).map(|b| (i, b)))
        .max_by(|a, b| a.1 .2.total_cmp(&b.1 .2));
    if let Some((i, (k, allowed, _))) = worst {
        let t = Tolerances {
            time_s: allowed,
            ..*tol
        };
        let mut r = time_row(String::new(), Some(k), Some(sp[i]), &t);
        r.check = format!("{workload} scan pass times (worst of {n}: pass {})", i + 1);
        r.kernel = recs
            .iter()
            .filter(|(kp, _)| i < kp.len())
            .map(|(kp, _)| format!("{:.2} s", kp[i]))
            .collect::<Vec<_>>()
            .join(" / ");
        out.push(r);
    }
    out
}

/// One row for a check made against several recordings (the first one's row, then the
/// others'): it passes when any does, showing every recording's kernel value (the first
/// recording's row when none passes).
///
/// It also passes when the simulated value lies between the lowest and the highest of the
/// recordings' values (a count or an event time, not an exact outcome): where the kernel's
/// own runs spread wider than the tolerance, a value inside that spread is as close to the
/// kernel as its runs are to each other. Such a row says so (`within the recordings' range`).
pub fn any_of(first: CheckResult, others: Vec<CheckResult>) -> CheckResult {
    let rows: Vec<&CheckResult> = std::iter::once(&first).chain(&others).collect();
    let kernel = rows
        .iter()
        .map(|r| r.kernel.clone())
        .collect::<Vec<_>>()
        .join(" / ");
    if let Some(best) = rows.iter().find(|r| r.pass) {
        return CheckResult {
            kernel,
            ..(*best).clone()
        };
    }
    if let Some(row) = within_spread(&rows) {
        return CheckResult { kernel, ..row };
    }
    CheckResult { kernel, ..first }
}

/// The first row, passed, when its simulated value lies within the recordings' range (see
/// [`any_of`]); `None` when a row has no values or the value lies outside.
fn within_spread(rows: &[&CheckResult]) -> Option<CheckResult> {
    let values: Vec<(f64, f64)> = rows.iter().map(|r| r.values).collect::<Option<_>>()?;
    let sim = values.first()?.1;
    let lo = values.iter().map(|v| v.0).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|v| v.0).fold(f64::NEG_INFINITY, f64::max);
    (lo <= sim && sim <= hi).then(|| CheckResult {
        diff: "within the recordings' range".into(),
        pass: true,
        ..rows[0].clone()
    })
}

/// The times at which a cumulative counter grew (the sample rows that saw a scan).
fn scan_times(series: &[(f64, f64)]) -> Vec<f64> {
    series
        .windows(2)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| w[1].0)
        .collect()
}

/// The scan period in effect at `t`: the gap between the last two scans at or before it
/// (0 with fewer than two).
fn period_at(scans: &[f64], t: f64) -> f64 {
    let k = scans.partition_point(|&s| s <= t + 1e-9);
    if k >= 2 {
        scans[k - 1] - scans[k - 2]
    } else {
        0.0
    }
}

fn label(spec: &CheckSpec) -> String {
    match spec {
        CheckSpec::Final { column } => format!("final {column}"),
        CheckSpec::At { column, .. } => format!("{column} at"),
        CheckSpec::First {
            column,
            below: Some(b),
            ..
        } => format!("first {column} < {b}"),
        CheckSpec::First { column, above, .. } => format!("first {column} > {above}"),
        CheckSpec::Bursts { column, .. } => format!("{column} bursts"),
        CheckSpec::ScanPasses { workload } => format!("{workload} scan passes"),
        CheckSpec::Exact { column } => format!("exact {column}"),
    }
}

/// A burst: (start time, size).
type Burst = (f64, f64);

/// Runs of samples whose rate exceeds `share` × the mean rate over `[0, end]`; runs less
/// than `merge_s` apart are one burst (the activity after one scan can straddle samples).
/// The gap is judged in whole sample intervals (less than `merge_s` minus half an
/// interval), so that a recording's jitter of a few milliseconds in its sample times does
/// not decide the count when a gap is exactly `merge_s`.
fn bursts(s: &[(f64, f64)], end: f64, share: f64, merge_s: f64) -> Vec<Burst> {
    let runs = rate_runs(s, end, share);
    let limit = merge_s - median_interval(s) / 2.0;
    let mut out: Vec<(f64, f64, f64)> = Vec::new();
    for (start, stop, size) in runs {
        match out.last_mut() {
            Some(last) if start - last.1 < limit => {
                last.1 = stop;
                last.2 += size;
            }
            _ => out.push((start, stop, size)),
        }
    }
    out.into_iter().map(|(a, _, n)| (a, n)).collect()
}

/// The median time between samples (0 for fewer than two).
fn median_interval(s: &[(f64, f64)]) -> f64 {
    let mut d: Vec<f64> = s.windows(2).map(|w| w[1].0 - w[0].0).collect();
    if d.is_empty() {
        return 0.0;
    }
    d.sort_by(f64::total_cmp);
    d[d.len() / 2]
}

/// Runs of samples above the rate threshold: (start, end, size).
fn rate_runs(s: &[(f64, f64)], end: f64, share: f64) -> Vec<(f64, f64, f64)> {
    let total = at(s, end) - s.first().map_or(0.0, |p| p.1);
    if total <= 0.0 || end <= 0.0 {
        return Vec::new();
    }
    let threshold = share * total / end;
    let mut out = Vec::new();
    let mut open: Option<(f64, f64, f64)> = None;
    for w in s.windows(2) {
        let ((t0, v0), (t1, v1)) = (w[0], w[1]);
        if t0 >= end {
            break;
        }
        let rate = (v1 - v0) / (t1 - t0).max(1e-9);
        match (&mut open, rate > threshold) {
            (Some(b), true) => {
                b.1 = t1;
                b.2 += v1 - v0;
            }
            (None, true) => open = Some((t0, t1, v1 - v0)),
            (Some(_), false) => out.extend(open.take()),
            (None, false) => {}
        }
    }
    out.extend(open);
    out
}

/// Times at which a sequence counter advanced (one entry per step of 1).
fn passes(s: &[(f64, f64)]) -> Vec<f64> {
    let mut out = Vec::new();
    for w in s.windows(2) {
        let steps = (w[1].1 - w[0].1).round().max(0.0) as usize;
        out.extend(std::iter::repeat_n(w[1].0, steps));
    }
    out
}

fn compare_events(
    column: &str,
    what: &str,
    k: &[Burst],
    s: &[Burst],
    tol: &Tolerances,
) -> Vec<CheckResult> {
    let mut out = vec![{
        let allowed = (tol.count_rel * k.len() as f64).max(1.0);
        CheckResult {
            check: format!("{column} {what}s"),
            kernel: k.len().to_string(),
            sim: s.len().to_string(),
            diff: format!("{:+}", s.len() as i64 - k.len() as i64),
            tolerance: format!("±{}", allowed.round()),
            pass: (s.len() as f64 - k.len() as f64).abs() <= allowed,
            values: Some((k.len() as f64, s.len() as f64)),
        }
    }];
    for (i, kb) in k.iter().enumerate() {
        let sb = s.get(i);
        out.push(time_row(
            format!("{column} {what} {} start", i + 1),
            Some(kb.0),
            sb.map(|b| b.0),
            tol,
        ));
        out.push(count_row_within(
            format!("{column} {what} {} size", i + 1),
            kb.1,
            sb.map_or(0.0, |b| b.1),
            tol.burst_allowed(kb.1),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl(text: &str) -> Timeline {
        Timeline::parse(text, "t").unwrap()
    }

    const TOL: Tolerances = Tolerances {
        count_rel: 0.1,
        count_abs: 1.0,
        time_s: 0.5,
        exact_rel: 0.01,
    };

    #[test]
    fn damos_statistics_count_bytes_or_events() {
        assert_eq!(unit_of("damon_ctx0_scheme0_sz_tried"), Unit::Bytes);
        assert_eq!(unit_of("damon_ctx1_scheme2_sz_applied"), Unit::Bytes);
        assert_eq!(unit_of("damon_ctx0_scheme0_nr_applied"), Unit::Events);
        assert_eq!(unit_of("damon_ctx0_scheme0_qt_exceeds"), Unit::Events);
        assert_eq!(unit_of("damon_reclaim_nr_quota_exceeds"), Unit::Events);
        assert_eq!(unit_of("app.cold.N0"), Unit::Pages);
    }

    #[test]
    fn final_counts_pass_within_ten_percent() {
        let k = tl("time_s,c\n0,0\n1,50\n2,100\n");
        let s = tl("time_s,c\n1,55\n2,109\n");
        let r = evaluate(&CheckSpec::Final { column: "c".into() }, &k, &s, &TOL);
        assert!(r[0].pass, "{r:?}");
        let s = tl("time_s,c\n1,55\n2,111\n");
        assert!(!evaluate(&CheckSpec::Final { column: "c".into() }, &k, &s, &TOL)[0].pass);
    }

    #[test]
    fn no_count_tolerance_reaches_the_count_it_checks() {
        // A 984 MiB workload's floor: 1 % of its pages.
        let tol = Tolerances {
            count_abs: 2519.0,
            ..TOL
        };
        for k in [16.0, 271.0, 1036.0, 4553.0, 12811.0, 1e6] {
            for unit in [Unit::Pages, Unit::Events] {
                let allowed = tol.count_allowed(k, unit);
                assert!(allowed <= 0.25 * k, "{k} {unit:?}: ±{allowed}");
                assert!(allowed >= 0.1 * k, "{k} {unit:?}: ±{allowed}");
            }
            assert!(tol.count_allowed(k * 4096.0, Unit::Bytes) <= 0.25 * k * 4096.0);
            assert_eq!(tol.burst_allowed(k), (0.1 * k).max(1.0));
        }
        assert_eq!(tol.count_allowed(100_000.0, Unit::Pages), 10_000.0);
        assert_eq!(
            tol.count_allowed(0.0, Unit::Pages),
            1.0,
            "a page of resolution"
        );
        assert_eq!(tol.count_allowed(0.0, Unit::Bytes), 4096.0);
        assert_eq!(tol.count_allowed(0.0, Unit::Events), 0.5);
        // The kernel's burst of 1 036 pages against the simulator's 16 fails.
        let row = count_row_within("b".into(), 1036.0, 16.0, tol.burst_allowed(1036.0));
        assert!(!row.pass, "{row:?}");
    }

    #[test]
    fn bursts_are_found_and_compared_by_start_and_size() {
        // A rate-limited promotion: 100 pages in the first second of each 3 s.
        let k = tl("time_s,c\n0,0\n1,100\n2,100\n3,100\n4,200\n5,200\n6,200\n");
        let s = tl("time_s,c\n1,100\n2,100\n3,100\n4,100\n5,200\n6,200\n");
        let r = evaluate(
            &CheckSpec::Bursts {
                column: "c".into(),
                min_rate_share: None,
            },
            &k,
            &s,
            &TOL,
        );
        assert_eq!(r[0].kernel, "2");
        assert!(r[0].pass);
        assert!(r[1].pass, "burst 1 starts at 0 in both");
        assert!(
            !r[3].pass,
            "burst 2 starts 1 s later in the simulation: {r:?}"
        );
    }

    #[test]
    fn scan_passes_compare_count_and_times() {
        let k = tl("time_s,app.numa_scan_seq\n0,0\n1,0\n2,1\n3,1\n4,2\n");
        let s = tl("time_s,app.numa_scan_seq\n1,0\n2,1\n3,1\n4,1\n");
        let r = evaluate(
            &CheckSpec::ScanPasses {
                workload: "app".into(),
            },
            &k,
            &s,
            &TOL,
        );
        assert_eq!((r[0].kernel.as_str(), r[0].sim.as_str()), ("2", "1"));
        assert!(r[0].pass, "±1 pass");
        assert!(r[1].pass, "the first pass at 2 s in both");
    }

    #[test]
    fn a_late_pass_is_judged_by_the_scan_period_the_kernel_was_using() {
        // The kernel scans at 1, 2 and then every 4 s; its second pass ends with the scan
        // at 10 s. A simulated pass 3 s off is inside that 4 s period; 5 s off is not.
        let k = tl("time_s,app.numa_scan_seq,numa_pte_updates\n\
                    0,0,0\n1,0,10\n2,1,20\n6,1,30\n10,2,40\n");
        let check = |first: f64, second: f64| {
            let s = tl(&format!(
                "time_s,app.numa_scan_seq\n0.5,0\n{first},1\n{},1\n{second},2\n",
                second - 1.0
            ));
            let spec = CheckSpec::ScanPasses {
                workload: "app".into(),
            };
            evaluate(&spec, &k, &s, &TOL).remove(1)
        };
        let r = check(2.0, 7.0);
        assert!(r.pass && r.tolerance == "±4.00 s", "{r:?}");
        assert!(!check(2.0, 15.0).pass);
        // The first pass, after scans 1 s apart, is held to 1 s.
        let r = check(3.5, 10.0);
        assert!(!r.pass && r.check.ends_with("pass 1)"), "{r:?}");
    }

    #[test]
    fn a_missing_column_fails_and_says_which() {
        let k = tl("time_s,c\n0,0\n");
        let s = tl("time_s,d\n1,0\n");
        let r = evaluate(&CheckSpec::Exact { column: "c".into() }, &k, &s, &TOL);
        assert!(!r[0].pass && r[0].diff.contains("simulated"), "{r:?}");
    }
}
