//! DAMON's policy modules as contexts built from their parameters: DAMON_RECLAIM
//! (`mm/damon/reclaim.c`), DAMON_LRU_SORT (`mm/damon/lru_sort.c`) and DAMON-based memory
//! tiering as damo's memory-tiering example sets it up (two paddr contexts with
//! `migrate_cold` / `migrate_hot` and quota goals on the fast node's memory use).

use tiermem_core::damon::{
    AccessPattern, AddrRange, ContextConfig, DamonConfig, DamosAction, FilterConfig, FilterType,
    GoalMetric, IntervalsGoal, LruSortParams, MonitoringAttrs, OpsKind, QuotaConfig, QuotaGoal,
    QuotaWeights, ReclaimParams, SchemeConfig, TieringParams, Watermarks, WmarkMetric,
};
use tiermem_core::release::KernelRelease;
use tiermem_core::units::{NodeId, PAGE_SIZE};

/// A context and the name it reports under.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedContext {
    pub name: String,
    pub cfg: ContextConfig,
}

/// A module's monitoring attributes from its four parameters, which every module names
/// alike (`sample_interval`, `aggr_interval`, `min_nr_regions`, `max_nr_regions` of
/// modules-common.h's `DEFINE_DAMON_MODULES_MON_ATTRS_PARAMS`).
macro_rules! module_attrs {
    ($p:expr) => {
        MonitoringAttrs {
            sample_us: $p.sample_interval_us,
            aggr_us: $p.aggr_interval_us,
            min_nr_regions: $p.min_nr_regions,
            max_nr_regions: $p.max_nr_regions,
            ..Default::default()
        }
    };
}

fn monitor_ranges(start: u64, end: u64) -> Vec<AddrRange> {
    if start == 0 && end == 0 {
        Vec::new() // all system RAM, filled in by the ops
    } else {
        vec![AddrRange { start, end }]
    }
}

/// `damon_reclaim_new_scheme` and `damon_reclaim_apply_parameters`.
pub fn reclaim(p: &ReclaimParams) -> NamedContext {
    let mut a = module_attrs!(p);
    if p.autotune_monitoring_intervals {
        // The module's documented tuning goal: 0.4 % accesses, every 3 aggregations,
        // sample interval within 5 ms..10 s, starting from 5 ms / 100 ms.
        a.sample_us = 5000;
        a.aggr_us = 100_000;
        a.intervals_goal = IntervalsGoal {
            access_bp: 40,
            aggrs: 3,
            min_sample_us: 5000,
            max_sample_us: 10_000_000,
        };
    }
    let mut goals = Vec::new();
    if p.quota_mem_pressure_us > 0 {
        goals.push(QuotaGoal {
            metric: GoalMetric::SomeMemPsiUs,
            target_value: p.quota_mem_pressure_us,
            current_value: 0,
            nid: None,
        });
    }
    if p.quota_autotune_feedback > 0 {
        goals.push(QuotaGoal {
            metric: GoalMetric::UserInput,
            target_value: 10_000,
            current_value: p.quota_autotune_feedback,
            nid: None,
        });
    }
    let mut filters = Vec::new();
    if p.skip_anon {
        filters.push(FilterConfig::new(FilterType::Anon, true, false));
    }
    let scheme = SchemeConfig {
        action: DamosAction::Pageout,
        access_pattern: AccessPattern {
            min_sz: PAGE_SIZE,
            max_sz: u64::MAX,
            min_nr_accesses: 0,
            max_nr_accesses: 0,
            min_age: (p.min_age_us / p.aggr_interval_us.max(1)) as u32,
            max_age: u32::MAX,
        },
        apply_interval_us: 0,
        quotas: QuotaConfig {
            ms: p.quota_ms,
            sz: p.quota_sz,
            reset_interval_ms: p.quota_reset_interval_ms,
            weights: if p.prioritization {
                QuotaWeights {
                    sz_permil: 0,
                    nr_accesses_permil: 0,
                    age_permil: 1,
                }
            } else {
                QuotaWeights::default()
            },
            goals,
        },
        watermarks: Watermarks {
            metric: if p.use_watermarks {
                WmarkMetric::FreeMemRate
            } else {
                WmarkMetric::None
            },
            interval_us: p.wmarks_interval_us,
            high: p.wmarks_high,
            mid: p.wmarks_mid,
            low: p.wmarks_low,
        },
        filters,
        target_nid: None,
    };
    NamedContext {
        name: "damon_reclaim".into(),
        cfg: ContextConfig {
            ops: OpsKind::Paddr,
            attrs: a,
            target_workloads: Vec::new(),
            regions: monitor_ranges(p.monitor_region_start, p.monitor_region_end),
            schemes: vec![scheme],
            record: false,
            per_workload_run: false,
        },
    }
}

/// `damon_lru_sort_new_hot_scheme` / `_cold_scheme`: two paddr schemes, each with half
/// the time quota.
pub fn lru_sort(p: &LruSortParams) -> NamedContext {
    let a = module_attrs!(p);
    let max_nr = a.max_nr_accesses() as u64;
    let hot_thres = (max_nr * p.hot_thres_access_freq / 1000) as u32;
    let wm = Watermarks {
        metric: WmarkMetric::FreeMemRate,
        interval_us: p.wmarks_interval_us,
        high: p.wmarks_high,
        mid: p.wmarks_mid,
        low: p.wmarks_low,
    };
    let quota = |w: QuotaWeights| QuotaConfig {
        ms: p.quota_ms / 2,
        sz: 0,
        reset_interval_ms: p.quota_reset_interval_ms,
        weights: w,
        goals: Vec::new(),
    };
    let hot = SchemeConfig {
        action: DamosAction::LruPrio,
        access_pattern: AccessPattern {
            min_sz: PAGE_SIZE,
            min_nr_accesses: hot_thres,
            ..Default::default()
        },
        quotas: quota(QuotaWeights {
            sz_permil: 0,
            nr_accesses_permil: 1,
            age_permil: 0,
        }),
        watermarks: wm.clone(),
        ..SchemeConfig::new(DamosAction::LruPrio)
    };
    let cold = SchemeConfig {
        action: DamosAction::LruDeprio,
        access_pattern: AccessPattern {
            min_sz: PAGE_SIZE,
            max_nr_accesses: 0,
            min_age: (p.cold_min_age_us / p.aggr_interval_us.max(1)) as u32,
            ..Default::default()
        },
        quotas: quota(QuotaWeights {
            sz_permil: 0,
            nr_accesses_permil: 0,
            age_permil: 1,
        }),
        watermarks: wm,
        ..SchemeConfig::new(DamosAction::LruDeprio)
    };
    NamedContext {
        name: "damon_lru_sort".into(),
        cfg: ContextConfig {
            ops: OpsKind::Paddr,
            attrs: a,
            target_workloads: Vec::new(),
            regions: monitor_ranges(p.monitor_region_start, p.monitor_region_end),
            schemes: vec![hot, cold],
            record: false,
            per_workload_run: false,
        },
    }
}

/// damo's memory-tiering setup: a context on the fast node demoting cold memory while
/// the node's free memory is below the goal, and one on the slow node promoting hot
/// memory while the fast node's used memory is below the goal. `node_range(n)` gives the
/// physical range of a node.
pub fn tiering(p: &TieringParams, node_range: impl Fn(NodeId) -> AddrRange) -> Vec<NamedContext> {
    let a = module_attrs!(p);
    let max_nr = a.max_nr_accesses() as u64;
    let young = |allow: bool| FilterConfig::new(FilterType::Young, true, allow);
    let quota = |metric: GoalMetric, target: u64| QuotaConfig {
        ms: 0,
        sz: p.quota_sz,
        reset_interval_ms: p.quota_reset_interval_ms,
        weights: QuotaWeights::default(),
        goals: vec![QuotaGoal {
            metric,
            target_value: target,
            current_value: 0,
            nid: Some(p.fast_node),
        }],
    };
    let demote = SchemeConfig {
        access_pattern: AccessPattern {
            max_nr_accesses: 0,
            ..Default::default()
        },
        apply_interval_us: p.apply_interval_us,
        quotas: quota(GoalMetric::NodeMemFreeBp, p.fast_free_target_bp),
        filters: vec![young(false)],
        target_nid: Some(p.slow_node),
        ..SchemeConfig::new(DamosAction::MigrateCold)
    };
    let promote = SchemeConfig {
        access_pattern: AccessPattern {
            min_nr_accesses: (max_nr * p.hot_access_permil / 1000) as u32,
            ..Default::default()
        },
        apply_interval_us: p.apply_interval_us,
        quotas: quota(GoalMetric::NodeMemUsedBp, p.fast_used_target_bp),
        filters: vec![young(true)],
        target_nid: Some(p.fast_node),
        ..SchemeConfig::new(DamosAction::MigrateHot)
    };
    vec![
        NamedContext {
            name: format!("damon_tiering.node{}", p.fast_node.0),
            cfg: ContextConfig {
                ops: OpsKind::Paddr,
                attrs: a.clone(),
                target_workloads: Vec::new(),
                regions: vec![node_range(p.fast_node)],
                schemes: vec![demote],
                record: false,
                per_workload_run: false,
            },
        },
        NamedContext {
            name: format!("damon_tiering.node{}", p.slow_node.0),
            cfg: ContextConfig {
                ops: OpsKind::Paddr,
                attrs: a,
                target_workloads: Vec::new(),
                regions: vec![node_range(p.slow_node)],
                schemes: vec![promote],
                record: false,
                per_workload_run: false,
            },
        },
    ]
}

/// Every context a `[kernel.damon]` section asks for, in a fixed order: hand-written
/// contexts, then DAMON_RECLAIM, DAMON_LRU_SORT and tiering when enabled.
///
/// `release`: the kernel release modelled; on 6.11–6.16 DAMON_RECLAIM runs without its
/// scheme ([`KernelRelease::damon_reclaim_drops_scheme`]).
pub fn contexts(
    cfg: &DamonConfig,
    release: Option<KernelRelease>,
    node_range: impl Fn(NodeId) -> AddrRange,
) -> Vec<NamedContext> {
    let mut out: Vec<NamedContext> = cfg
        .contexts
        .iter()
        .enumerate()
        .map(|(i, c)| NamedContext {
            name: format!("ctx{i}"),
            cfg: c.clone(),
        })
        .collect();
    if let Some(r) = cfg.reclaim.as_ref().filter(|r| r.enabled) {
        let mut c = reclaim(r);
        if release.is_some_and(KernelRelease::damon_reclaim_drops_scheme) {
            c.cfg.schemes.clear();
        }
        out.push(c);
    }
    if let Some(l) = cfg.lru_sort.as_ref().filter(|l| l.enabled) {
        out.push(lru_sort(l));
    }
    if let Some(t) = cfg.tiering.as_ref().filter(|t| t.enabled) {
        out.extend(tiering(t, node_range));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaim_scheme_follows_the_module() {
        let p = ReclaimParams {
            enabled: true,
            skip_anon: true,
            ..Default::default()
        };
        let c = reclaim(&p);
        let s = &c.cfg.schemes[0];
        assert_eq!(s.action, DamosAction::Pageout);
        assert_eq!(s.access_pattern.min_age, 1200, "120 s at 100 ms");
        assert_eq!(
            (
                s.access_pattern.min_nr_accesses,
                s.access_pattern.max_nr_accesses
            ),
            (0, 0)
        );
        assert_eq!(s.access_pattern.min_sz, PAGE_SIZE);
        assert_eq!(s.quotas.weights.age_permil, 1);
        assert_eq!((s.quotas.ms, s.quotas.sz), (10, 128 << 20));
        assert_eq!(s.watermarks.metric, WmarkMetric::FreeMemRate);
        assert_eq!(s.filters.len(), 1);
        assert!(!s.filters[0].allow && s.filters[0].kind == FilterType::Anon);
        assert_eq!(c.cfg.ops, OpsKind::Paddr);
    }

    #[test]
    fn lru_sort_splits_the_time_quota_and_thresholds() {
        let c = lru_sort(&LruSortParams::default());
        assert_eq!(c.cfg.schemes.len(), 2);
        assert_eq!(
            c.cfg.schemes[0].access_pattern.min_nr_accesses, 10,
            "20 × 500‰"
        );
        assert_eq!(c.cfg.schemes[0].quotas.ms, 5);
        assert_eq!(c.cfg.schemes[1].access_pattern.min_age, 1200);
    }
}
