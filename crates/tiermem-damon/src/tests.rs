//! Behaviour tests of the engine against a scripted address space (the kernel rules of
//! `kernel-mechanisms.md` §4–§5).

use crate::ctx::{feed_loop_next_input, hot_score, wmark_wait_us, DamonCtx, Scheme, MAX_SCORE};
use crate::region::Region;
use crate::{ApplyRequest, ApplyResult, DamonOps, OpsFilters};
use proptest::prelude::*;
use tiermem_core::damon::*;
use tiermem_core::release::KernelRelease;
use tiermem_core::units::{NodeId, PAGE_SIZE};

const P: u64 = PAGE_SIZE;

/// A physical address space `[0, size)` where pages in `hot` are accessed every sample.
struct Mock {
    size: u64,
    hot: Vec<(u64, u64)>,
    free_permil: u64,
    /// Cost of an action per byte applied (ns per page).
    ns_per_page: u64,
    applied: Vec<(u64, u64)>,
    prepared: u64,
    checked: u64,
}

impl Mock {
    fn new(size: u64) -> Self {
        Mock {
            size,
            hot: Vec::new(),
            free_permil: 300,
            ns_per_page: 1000,
            applied: Vec::new(),
            prepared: 0,
            checked: 0,
        }
    }
}

impl DamonOps for Mock {
    fn kind(&self) -> OpsKind {
        OpsKind::Paddr
    }
    fn nr_targets(&self) -> usize {
        1
    }
    fn target_valid(&self, _t: usize) -> bool {
        true
    }
    fn target_ranges(&mut self, _t: usize) -> Vec<AddrRange> {
        vec![AddrRange {
            start: 0,
            end: self.size,
        }]
    }
    fn prepare_access_check(&mut self, _t: usize, _addr: u64) {
        self.prepared += 1;
    }
    fn check_access(&mut self, _t: usize, addr: u64) -> bool {
        self.checked += 1;
        self.hot.iter().any(|&(s, e)| addr >= s && addr < e)
    }
    fn apply(&mut self, req: &ApplyRequest<'_>) -> ApplyResult {
        let (start, end, f, budget_ns) = (req.start, req.end, &req.filters, req.budget_ns);
        // Page by page until the budget is spent, as the simulator's operations do.
        let pages = (end - start) / P;
        let fit = budget_ns.div_ceil(self.ns_per_page.max(1)).max(1);
        let done = pages.min(fit);
        let stop = start + done * P;
        self.applied.push((start, stop));
        let passed = if f.filter_out(|_| false) {
            0
        } else {
            stop - start
        };
        ApplyResult {
            applied_bytes: passed,
            filter_passed_bytes: passed,
            elapsed_ns: done * self.ns_per_page,
            resume_at: (stop < end).then_some(stop),
        }
    }
    fn goal_metric(&mut self, _m: GoalMetric, _n: Option<NodeId>) -> Option<u64> {
        None
    }
    fn free_mem_rate_permil(&mut self) -> Option<u64> {
        Some(self.free_permil)
    }
}

fn ctx_cfg(schemes: Vec<SchemeConfig>) -> ContextConfig {
    ContextConfig {
        ops: OpsKind::Paddr,
        attrs: MonitoringAttrs::default(),
        target_workloads: vec![],
        regions: vec![],
        schemes,
        record: false,
        per_workload_run: false,
    }
}

/// Run a context for `us` microseconds of simulated time.
fn run(ctx: &mut DamonCtx, ops: &mut Mock, from_us: u64, us: u64) -> u64 {
    let mut now = from_us;
    while now < from_us + us {
        match ctx.step(now, ops) {
            Some(n) => now = n,
            None => break,
        }
    }
    now
}

#[test]
fn region_count_stays_within_bounds_and_checks_within_max() {
    for size in [1u64 << 30, 64u64 << 30] {
        let mut ops = Mock::new(size);
        ops.hot = vec![
            (size / 3, size / 3 + (64 << 20)),
            (size / 2, size / 2 + (8 << 20)),
        ];
        let mut ctx = DamonCtx::new(&ctx_cfg(vec![]), Default::default(), 7).unwrap();
        let mut now = 0;
        while now < 20_000_000 {
            now = ctx.step(now, &mut ops).unwrap();
            assert!(ctx.nr_regions() <= 1000, "{}", ctx.nr_regions());
            // paddr starts from one region per range; splitting reaches min within a few
            // aggregations and sz_limit (total / min) keeps merging from going below it.
            if ctx.counters.aggregations > 10 {
                assert!(ctx.nr_regions() >= 10, "{}", ctx.nr_regions());
            }
        }
        assert!(ctx.counters.max_checks_per_sample <= 1000);
        assert_eq!(ops.checked, ctx.counters.access_checks);
        // Regions tile the space without overlap.
        let rs = &ctx.targets[0];
        assert_eq!(rs[0].start, 0);
        assert_eq!(rs.last().unwrap().end, size);
        assert!(rs.windows(2).all(|w| w[0].end == w[1].start));
    }
}

#[test]
fn nr_accesses_bp_is_the_count_times_10000_at_window_end() {
    let mut ops = Mock::new(64 << 20);
    ops.hot = vec![(0, 64 << 20)];
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![]), Default::default(), 1).unwrap();
    run(&mut ctx, &mut ops, 0, 1_000_000);
    for r in &ctx.targets[0] {
        assert_eq!(r.last_nr_accesses, 20, "every sample saw an access");
        // In a uniform window the moving sum stays at last × 10000 at every sample.
        assert_eq!(r.nr_accesses_bp, 200_000);
    }
}

/// `kdamond_fn`'s sampling period: the sleep, its wakeup overshoot, and the work on every
/// region sampled (after the split, so up to three times the aggregated count). The
/// overshoot stretches the period but is not kdamond CPU time.
#[test]
fn a_sample_lasts_the_sleep_the_wakeup_and_the_regions_work() {
    let costs = DamonCosts {
        sample_region_ns: 2_500,
        sample_wakeup_ns: 250_000,
        ..Default::default()
    };
    let mut ops = Mock::new(1 << 30);
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![]), costs, 1).unwrap();
    // The first step initialises and prepares; each later step is one sample.
    let mut now = ctx.step(0, &mut ops).unwrap();
    for _ in 0..200 {
        let regions = ctx.nr_regions() as u64;
        let cpu_before = ctx.cpu_ns();
        let aggregates = ctx.counters.aggregations;
        let next = ctx.step(now, &mut ops).unwrap();
        if ctx.counters.aggregations == aggregates && ctx.nr_regions() as u64 == regions {
            // Check (half the region cost) now, prepare (the other half) after: whole µs.
            let work_us = regions * 2_500 / 1000;
            assert_eq!(next - now, 5_000 + 250 + work_us, "{regions} regions");
            assert_eq!(ctx.cpu_ns() - cpu_before, regions * 2_500);
        }
        now = next;
    }
    assert!(ctx.nr_regions() > 10, "the test saw split regions");
}

fn cold_pageout(quota: QuotaConfig) -> SchemeConfig {
    SchemeConfig {
        access_pattern: AccessPattern {
            max_nr_accesses: 0,
            ..Default::default()
        },
        quotas: quota,
        ..SchemeConfig::new(DamosAction::Pageout)
    }
}

#[test]
fn damos_resets_age_after_a_non_stat_action_only() {
    for (action, reset) in [(DamosAction::Pageout, true), (DamosAction::Stat, false)] {
        let mut ops = Mock::new(16 << 20);
        let s = SchemeConfig {
            access_pattern: AccessPattern {
                min_age: 5,
                ..Default::default()
            },
            ..SchemeConfig::new(action)
        };
        let mut ctx = DamonCtx::new(&ctx_cfg(vec![s]), Default::default(), 1).unwrap();
        run(&mut ctx, &mut ops, 0, 3_000_000);
        let max_age = ctx.targets[0].iter().map(|r| r.age).max().unwrap();
        if reset {
            // Applied at age 5, reset to 0, grows back: never far above the threshold.
            assert!(max_age <= 6, "age {max_age}");
            assert!(ctx.schemes[0].stat.nr_tried > 0);
        } else {
            assert!(max_age >= 25, "stat leaves ages alone: {max_age}");
        }
    }
}

#[test]
fn quota_charges_sizes_and_converts_time_to_size_from_throughput() {
    // 10 ms per 1000 ms; before any charge the throughput is PAGE_SIZE × 1024 bytes/ms.
    let mut ops = Mock::new(1 << 30);
    ops.ns_per_page = 4000; // 1 GiB/s... 4 us per 4 KiB page = 1 MiB/ms
    let q = QuotaConfig {
        ms: 10,
        reset_interval_ms: 1000,
        ..Default::default()
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![cold_pageout(q)]), Default::default(), 1).unwrap();
    let now = run(&mut ctx, &mut ops, 0, 150_000);
    let s = &ctx.schemes[0];
    assert_eq!(
        s.quota.esz,
        PAGE_SIZE * 1024 * 10,
        "first window: 4 MiB/ms × 10 ms"
    );
    assert!(s.quota.charged_sz <= s.quota.esz);
    assert_eq!(s.quota.charged_sz, s.stat.sz_tried, "charged = tried bytes");
    // Next window: lifetime throughput = charged bytes / charged ns.
    run(&mut ctx, &mut ops, now, 1_100_000);
    let s = &ctx.schemes[0];
    let thr = 1_000_000 * 4096 / 4000; // bytes per ms at 4 us per page
    assert_eq!(s.quota.esz, thr * 10, "esz = throughput × ms");
    assert!(s.stat.qt_exceeds >= 1, "the first window ran out");
    // A size quota caps the time-derived size.
    let q = QuotaConfig {
        ms: 10,
        sz: 1 << 20,
        reset_interval_ms: 1000,
        ..Default::default()
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![cold_pageout(q)]), Default::default(), 1).unwrap();
    run(&mut ctx, &mut ops, 0, 150_000);
    assert_eq!(ctx.schemes[0].quota.esz, 1 << 20);
    assert_eq!(ctx.schemes[0].stat.sz_tried, 1 << 20);
}

/// A context paging out idle regions under a 10 ms per second time quota.
fn ten_ms_quota_ctx() -> DamonCtx {
    let q = QuotaConfig {
        ms: 10,
        reset_interval_ms: 1000,
        ..Default::default()
    };
    DamonCtx::new(&ctx_cfg(vec![cold_pageout(q)]), Default::default(), 1).unwrap()
}

/// `ktime_get_coarse_ts64` moves once a tick: an action is charged the ticks that passed
/// while it ran, so walks far shorter than a tick are mostly charged nothing and the
/// default throughput (4 MiB/ms) holds, where the exact time would raise it at once.
#[test]
fn the_time_quota_reads_a_coarse_clock() {
    const TICK: u64 = 4_000_000;
    let ctx = DamonCtx::new(&ctx_cfg(vec![]), Default::default(), 1).unwrap();
    let coarse = DamonCtx::new(&ctx_cfg(vec![]), Default::default(), 1)
        .unwrap()
        .with_coarse_clock(TICK);
    assert_eq!(ctx.measured_ns(3_900_000, 50_000), 50_000, "exact");
    assert_eq!(coarse.measured_ns(3_000_000, 50_000), 0, "within a tick");
    assert_eq!(
        coarse.measured_ns(3_990_000, 50_000),
        TICK,
        "across a boundary"
    );
    assert_eq!(coarse.measured_ns(4_000_000, 9_000_000), 2 * TICK);
    // Free memory walked at 10 ns a page: 40 MiB a window take 102 µs.
    let esz_after = |tick: u64| {
        let mut ops = Mock::new(16 << 30);
        ops.ns_per_page = 10;
        let mut ctx = ten_ms_quota_ctx().with_coarse_clock(tick);
        run(&mut ctx, &mut ops, 0, 5_100_000);
        let q = &ctx.schemes[0].quota;
        (q.esz, q.total_charged_ns)
    };
    let (exact_esz, exact_ns) = esz_after(0);
    let (coarse_esz, coarse_ns) = esz_after(TICK);
    assert!(
        exact_ns > 0 && exact_esz > 50 * PAGE_SIZE * 1024 * 10,
        "{exact_esz}"
    );
    assert_eq!(coarse_ns % TICK, 0);
    assert!(coarse_esz < exact_esz / 10, "{coarse_esz} vs {exact_esz}");
}

#[test]
fn the_time_quota_throughput_wraps_at_64_bits_before_6_17() {
    // 1.5 × 2^64 / 10^6 bytes charged over 1000 s: the exact throughput is 27.7 MB/ms; the
    // kernel before 6.17 computes `sz * 1000000` in 64 bits, which keeps half of 2^64.
    let (sz, ns) = (3 * (u64::MAX / 1_000_000 / 2), 1_000_000_000_000u64);
    let esz = |release: Option<KernelRelease>| {
        let mut ops = Mock::new(1 << 30);
        ops.ns_per_page = 4000;
        let mut ctx = ten_ms_quota_ctx().for_release(release);
        let now = run(&mut ctx, &mut ops, 0, 150_000);
        ctx.schemes[0].quota.total_charged_sz = sz;
        ctx.schemes[0].quota.total_charged_ns = ns;
        run(&mut ctx, &mut ops, now, 1_100_000);
        ctx.schemes[0].quota.esz as f64
    };
    let exact = (sz as u128 * 1_000_000 / ns as u128) as f64 * 10.0;
    let wrapped = (sz.wrapping_mul(1_000_000) / ns) as f64 * 10.0;
    assert!(wrapped < exact / 2.0, "{wrapped} vs {exact}");
    for (release, want) in [
        (None, exact),
        (Some(KernelRelease::new(6, 17)), exact),
        (Some(KernelRelease::new(6, 12)), wrapped),
        (Some(KernelRelease::new(5, 13)), wrapped),
    ] {
        let got = esz(release);
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{release:?}: esz {got}, want {want}"
        );
    }
}

#[test]
fn histogram_cut_off_picks_the_highest_priority_bytes() {
    // Two cold areas: one idle for a long time, one recently idle. With an age weight and
    // a quota smaller than either, only the oldest bytes are paged out.
    let mut ops = Mock::new(64 << 20);
    ops.hot = vec![(32 << 20, 64 << 20)];
    let q = QuotaConfig {
        sz: 4 << 20,
        reset_interval_ms: 1000,
        weights: QuotaWeights {
            sz_permil: 0,
            nr_accesses_permil: 0,
            age_permil: 1,
        },
        ..Default::default()
    };
    let s = SchemeConfig {
        apply_interval_us: 5_000_000,
        ..cold_pageout(q)
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![s]), Default::default(), 3).unwrap();
    // The upper half is hot for 4.5 s, then goes idle; the lower half was idle from the start.
    let now = run(&mut ctx, &mut ops, 0, 4_500_000);
    ops.hot.clear();
    run(&mut ctx, &mut ops, now, 600_000);
    let s = &ctx.schemes[0];
    assert!(s.stat.sz_tried > 0 && s.stat.sz_tried <= 4 << 20);
    for &(a, b) in &ops.applied {
        assert!(
            b <= 32 << 20,
            "applied only to the long-idle half: {a:#x}..{b:#x}"
        );
    }
    // The cut-off: regions with a score below min_score were skipped.
    assert!(s.quota.min_score > 0);
}

#[test]
fn hot_and_cold_scores_follow_damon_hot_score() {
    let attrs = MonitoringAttrs::default();
    let mut r = Region::new(0, P);
    r.nr_accesses = 20;
    r.age = 0;
    // freq 100, age_in_log 0 → age_sub 50; equal weights → 75 → ×99/100 = 74.
    assert_eq!(hot_score(&r, &attrs, 1, 1), 74);
    r.nr_accesses = 0;
    r.age = 100; // 10 s → log 4 → −4 (idle) → (28)·100/64 = 43
    assert_eq!(hot_score(&r, &attrs, 0, 1), 43 * 99 / 100);
    assert!(hot_score(&r, &attrs, 0, 1) <= MAX_SCORE);
}

#[test]
fn feed_loop_moves_towards_the_goal() {
    assert_eq!(feed_loop_next_input(50_000, 10_000), 50_000);
    assert_eq!(
        feed_loop_next_input(50_000, 20_000),
        10_000,
        "≥ 2× goal → minimum"
    );
    assert_eq!(
        feed_loop_next_input(50_000, 5_000),
        75_000,
        "half the goal → +50 %"
    );
    assert_eq!(feed_loop_next_input(50_000, 15_000), 25_000, "1.5× → −50 %");
    assert_eq!(
        feed_loop_next_input(10_000, 19_000),
        10_000,
        "never below the minimum"
    );
}

#[test]
fn quota_goal_feedback_grows_the_quota_while_under_the_goal() {
    let mut ops = Mock::new(1 << 30);
    let q = QuotaConfig {
        sz: 0,
        reset_interval_ms: 100,
        goals: vec![QuotaGoal {
            metric: GoalMetric::UserInput,
            target_value: 10_000,
            current_value: 2_500,
            nid: None,
        }],
        ..Default::default()
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![cold_pageout(q)]), Default::default(), 1).unwrap();
    let now = run(&mut ctx, &mut ops, 0, 1_000_000);
    let e1 = ctx.schemes[0].quota.esz;
    assert!(e1 > 1, "under-achieving: quota grew to {e1}");
    ctx.set_user_goal_value(0, 0, 30_000);
    run(&mut ctx, &mut ops, now, 300_000);
    assert_eq!(
        ctx.schemes[0].quota.esz_bp, 10_000,
        "over 2× the goal: back to the minimum"
    );
}

#[test]
fn watermarks_have_hysteresis() {
    let mut s = Scheme::new(SchemeConfig {
        watermarks: Watermarks {
            metric: WmarkMetric::FreeMemRate,
            interval_us: 5_000_000,
            high: 500,
            mid: 400,
            low: 200,
        },
        ..SchemeConfig::new(DamosAction::Pageout)
    });
    assert!(s.activated, "new schemes start active");
    assert_eq!(
        wmark_wait_us(&mut s, Some(600)),
        5_000_000,
        "above high: off"
    );
    assert!(!s.activated);
    assert_eq!(
        wmark_wait_us(&mut s, Some(450)),
        5_000_000,
        "between mid and high: stays off"
    );
    assert!(!s.activated);
    assert_eq!(wmark_wait_us(&mut s, Some(350)), 0, "below mid: on");
    assert!(s.activated);
    assert_eq!(
        wmark_wait_us(&mut s, Some(450)),
        0,
        "active between mid and high: stays on"
    );
    assert_eq!(
        wmark_wait_us(&mut s, Some(100)),
        5_000_000,
        "below low: off (emergency)"
    );
    assert!(!s.activated);
    assert_eq!(wmark_wait_us(&mut s, None), 0, "unreadable metric: active");
}

#[test]
fn kdamond_sleeps_without_monitoring_while_all_schemes_are_inactive() {
    let mut ops = Mock::new(64 << 20);
    ops.free_permil = 900;
    let s = SchemeConfig {
        watermarks: Watermarks {
            metric: WmarkMetric::FreeMemRate,
            interval_us: 1_000_000,
            high: 500,
            mid: 400,
            low: 200,
        },
        ..SchemeConfig::new(DamosAction::Pageout)
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![s]), Default::default(), 1).unwrap();
    let now = run(&mut ctx, &mut ops, 0, 3_000_000);
    assert_eq!(ops.checked, 0);
    ops.free_permil = 300;
    run(&mut ctx, &mut ops, now, 1_000_000);
    assert!(ops.checked > 0);
}

#[test]
fn filters_first_match_decides_and_default_is_inverse_of_last() {
    let f = FilterConfig::new;
    // Ops filters: anon (allow) then young (reject). A young anon page: allowed by the first.
    let fs = [
        f(FilterType::Anon, true, true),
        f(FilterType::Young, true, false),
    ];
    let of = OpsFilters {
        filters: &fs,
        core_allowed: false,
        default_reject: true,
    };
    let mut order = Vec::new();
    assert!(!of.filter_out(|x| {
        order.push(x.kind);
        true
    }));
    assert_eq!(
        order,
        vec![FilterType::Anon],
        "evaluation stops at the first match"
    );
    // A non-anon young page: rejected by the second.
    assert!(of.filter_out(|x| x.kind == FilterType::Young));
    // Nothing matches: default = inverse of the last filter's allow (reject here).
    assert!(!OpsFilters {
        filters: &fs[1..],
        core_allowed: false,
        default_reject: false
    }
    .filter_out(|_| false));
    // A core allow skips the ops filters.
    assert!(!OpsFilters {
        filters: &fs[1..],
        core_allowed: true,
        default_reject: true
    }
    .filter_out(|_| true));
    // Scheme-level defaults.
    let sc = |filters| {
        Scheme::new(SchemeConfig {
            filters,
            ..SchemeConfig::new(DamosAction::Pageout)
        })
    };
    let mut addr = f(FilterType::Addr, true, true);
    addr.addr = Some(AddrRange {
        start: 0,
        end: 8 << 20,
    });
    // Core addr allow filter, no ops filters: unmatched regions are rejected.
    let mut ops = Mock::new(32 << 20);
    let s = SchemeConfig {
        filters: vec![addr.clone()],
        ..SchemeConfig::new(DamosAction::Pageout)
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![s]), Default::default(), 1).unwrap();
    run(&mut ctx, &mut ops, 0, 250_000);
    assert!(!ops.applied.is_empty());
    assert!(
        ops.applied.iter().all(|&(_, e)| e <= 8 << 20),
        "{:?}",
        ops.applied
    );
    let _ = sc(vec![addr]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn regions_never_overlap_and_stay_bounded(seed in 0u64..1000, hot_mb in 1u64..200, min in 3u32..30, max_extra in 0u32..200) {
        let size = 256u64 << 20;
        let mut ops = Mock::new(size);
        ops.hot = vec![((seed % 50) << 20, ((seed % 50) + hot_mb).min(256) << 20)];
        let mut cfg = ctx_cfg(vec![]);
        cfg.attrs.min_nr_regions = min;
        cfg.attrs.max_nr_regions = min + max_extra;
        let mut ctx = DamonCtx::new(&cfg, Default::default(), seed).unwrap();
        let mut now = 0;
        while now < 3_000_000 {
            now = ctx.step(now, &mut ops).unwrap();
            let rs = &ctx.targets[0];
            prop_assert!(rs.windows(2).all(|w| w[0].end <= w[1].start && w[0].start < w[0].end));
            prop_assert!(rs.len() <= (min + max_extra) as usize);
        }
    }
}

#[test]
fn interval_tuning_grows_intervals_when_too_few_accesses_are_seen() {
    // Nothing is accessed: the score is 0, the adaptation doubles the sampling interval
    // every `aggrs` aggregations, keeping the samples per aggregation.
    let mut ops = Mock::new(64 << 20);
    let mut cfg = ctx_cfg(vec![]);
    cfg.attrs.intervals_goal = IntervalsGoal {
        access_bp: 40,
        aggrs: 3,
        min_sample_us: 5000,
        max_sample_us: 20_000,
    };
    let mut ctx = DamonCtx::new(&cfg, Default::default(), 1).unwrap();
    run(&mut ctx, &mut ops, 0, 2_000_000);
    assert!(ctx.counters.intervals_tunings >= 2);
    assert_eq!(ctx.attrs().sample_us, 20_000, "clamped at max_sample_us");
    assert_eq!(ctx.attrs().aggr_us, 20_000 * 20);
    // Everything accessed: far above the 0.4 % goal, intervals shrink (at most halving).
    ops.hot = vec![(0, 64 << 20)];
    let mut cfg2 = cfg.clone();
    cfg2.attrs.sample_us = 20_000;
    cfg2.attrs.aggr_us = 400_000;
    let mut ctx = DamonCtx::new(&cfg2, Default::default(), 1).unwrap();
    run(&mut ctx, &mut ops, 0, 1_300_000);
    assert_eq!(ctx.attrs().sample_us, 10_000, "halved once");
}

#[test]
fn a_long_action_runs_in_slices_and_the_kdamond_waits_for_it() {
    // 64 MiB idle, paged out at 100 us a page: 16384 pages take 1.6 s, during which the
    // kdamond neither samples nor updates its statistics (damos_apply_scheme runs the
    // action to completion), while the pages go gradually.
    let mut ops = Mock::new(64 << 20);
    ops.ns_per_page = 100_000;
    let q = QuotaConfig {
        sz: 64 << 20,
        reset_interval_ms: 1000,
        ..Default::default()
    };
    let mut ctx = DamonCtx::new(&ctx_cfg(vec![cold_pageout(q)]), Default::default(), 1).unwrap();
    let mut now = 0;
    while ops.applied.is_empty() {
        now = ctx.step(now, &mut ops).unwrap();
    }
    let (checks, started) = (ops.checked, now);
    let mut slices = 1;
    while ctx.schemes[0].stat.nr_tried == 0 {
        assert_eq!(ops.checked, checks, "no sampling during an application");
        let done: u64 = ops.applied.iter().map(|(a, b)| b - a).sum();
        assert!(done < 64 << 20);
        now = ctx.step(now, &mut ops).unwrap();
        slices += 1;
    }
    let took = now - started;
    let s = &ctx.schemes[0].stat;
    assert!(slices > 100, "applied in slices: {slices}");
    assert!(s.sz_tried > 0 && s.sz_tried == s.sz_applied);
    let pages = s.sz_tried / P;
    assert!(
        (took as i64 - (pages * 100) as i64).abs() < 20_000,
        "the application took {took} us for {pages} pages"
    );
    let done: u64 = ops.applied.iter().map(|(a, b)| b - a).sum();
    assert_eq!(done, s.sz_tried, "every slice counted once");
}
