//! Column names of `timeline.csv` shared by the simulator and the live workload runner, so
//! that a simulated run and a kernel recording compare column by column
//! (`tiermem validate`).
//!
//! Every timeline starts with `time_s`; cumulative kernel counters are named as in
//! `/proc/vmstat`; per-node columns are `node<N>_<what>`; the columns below add KSM,
//! per-region placement (as `numa_maps` reports it) and the NUMA scanner's sequence.
//! A cell the substrate cannot measure is left empty.

/// The `/sys/kernel/mm/ksm/` counters a timeline carries, by file name.
pub const KSM_TIMELINE_FILES: &[&str] = &[
    "pages_scanned",
    "pages_shared",
    "pages_sharing",
    "pages_unshared",
    "pages_volatile",
    "full_scans",
    "stable_node_chains",
    "stable_node_dups",
    "ksm_zero_pages",
];

/// `ksm_<file>` (`ksm_zero_pages` keeps its name).
/// DAMON_RECLAIM's statistics parameters (`/sys/module/damon_reclaim/parameters/`), all
/// cumulative, in the timeline when the config enables `[kernel.damon.reclaim]`.
pub const DAMON_RECLAIM_STATS: &[&str] = &[
    "nr_reclaim_tried_regions",
    "bytes_reclaim_tried_regions",
    "nr_reclaimed_regions",
    "bytes_reclaimed_regions",
    "nr_quota_exceeds",
];

/// The timeline column of a DAMON_RECLAIM statistic.
pub fn damon_reclaim_column(stat: &str) -> String {
    format!("damon_reclaim_{stat}")
}

/// A DAMOS scheme's statistics (`kdamonds/<K>/contexts/0/schemes/<S>/stats/`, the files of
/// `struct damos_stat`), all cumulative: in the timeline for every scheme of every
/// `[[kernel.damon.contexts]]`. `nr_*` count regions, `sz_*` bytes.
pub const DAMOS_STATS: &[&str] = &[
    "nr_tried",
    "sz_tried",
    "nr_applied",
    "sz_applied",
    "qt_exceeds",
];

/// The timeline column of statistic `stat` of scheme `scheme` of context `context`:
/// `damon_ctx<C>_scheme<S>_<stat>` (`damon_ctx0_scheme0_sz_applied`).
pub fn damos_column(context: usize, scheme: usize, stat: &str) -> String {
    format!("damon_ctx{context}_scheme{scheme}_{stat}")
}

pub fn ksm_column(file: &str) -> String {
    if file.starts_with("ksm_") {
        file.to_string()
    } else {
        format!("ksm_{file}")
    }
}

/// Pages of a workload's region on node `n` (`numa_maps`' `N<n>=` count): `<workload>.<region>.N<n>`.
pub fn region_node_column(workload: &str, region: &str, node: usize) -> String {
    format!("{workload}.{region}.N{node}")
}

/// The mm's `numa_scan_seq` (completed passes of the NUMA scanner over the address space,
/// `/proc/<pid>/sched`'s `mm->numa_scan_seq`): `<workload>.numa_scan_seq`.
pub fn scan_seq_column(workload: &str) -> String {
    format!("{workload}.numa_scan_seq")
}

/// Accesses the workload's threads made so far (cumulative): `<workload>.accesses`.
pub fn accesses_column(workload: &str) -> String {
    format!("{workload}.accesses")
}

/// Per-node columns, in order, after `node<N>_`.
pub const NODE_COLUMNS: &[&str] = &[
    "used_pages",
    "free_pages",
    "read_MBps",
    "write_MBps",
    "latency_ns",
    "hot_threshold_ms",
];

/// The columns every timeline starts with: `time_s`, throughput, mean latency, the
/// per-node columns of each node, then every [`crate::vmstat::Vm`] counter by its
/// `/proc/vmstat` name (cumulative, system-wide).
pub fn base_columns(nr_nodes: usize) -> Vec<String> {
    let mut c = vec![
        "time_s".to_string(),
        "throughput_accesses_per_s".to_string(),
        "mean_latency_ns".to_string(),
    ];
    for n in 0..nr_nodes {
        for what in NODE_COLUMNS {
            c.push(format!("node{n}_{what}"));
        }
    }
    c.extend(crate::vmstat::Vm::ALL.iter().map(|v| v.name().to_string()));
    c
}

/// A zone's free pages in the buddy allocator (`/proc/zoneinfo`'s `pages free`):
/// `node<N>_<zone>_free_pages`, e.g. `node0_DMA32_free_pages`.
pub fn zone_free_column(node: usize, zone: usize) -> String {
    let name = crate::watermarks::ZONE_NAMES
        .get(zone)
        .copied()
        .unwrap_or("zone");
    format!("node{node}_{name}_free_pages")
}

/// Free pages held in a node's per-CPU pagesets (`/proc/zoneinfo`'s `count:` lines, every
/// zone and CPU): `node<N>_pcp_pages`. They are free but not in `MemFree`.
pub fn pagesets_column(node: usize) -> String {
    format!("node{node}_pcp_pages")
}

/// The user-space tiering controller's statistics written as `tiering_<stat>` columns
/// (cumulative bytes, and the threshold in effect, per-thousand of the maximum
/// `nr_accesses`), as the agent exports them as metrics.
pub const TIERING_STATS: &[&str] = &[
    "candidate_bytes",
    "promoted_bytes",
    "promote_failed_bytes",
    "rate_limited_bytes",
    "headroom_skipped_bytes",
    "demoted_bytes",
    "threshold_permil",
];

/// One column after the base columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtraColumn {
    /// Free pages of zone `zone` (an index, [`crate::watermarks::ZONE_NAMES`]) of a node.
    ZoneFree { node: usize, zone: usize },
    /// Free pages in a node's per-CPU pagesets.
    Pagesets { node: usize },
    /// A statistic of the user-space tiering controller ([`TIERING_STATS`]).
    Tiering(&'static str),
    /// A `/sys/kernel/mm/ksm/` counter (present when the config has `[kernel.ksm]`).
    Ksm(&'static str),
    /// Pages of region `region` of workload `workload` on node `node`.
    RegionNode {
        workload: usize,
        region: usize,
        node: usize,
    },
    /// The NUMA scanner's `numa_scan_seq` of the workload's process.
    ScanSeq { workload: usize },
    /// Cumulative accesses of the workload's threads.
    Accesses { workload: usize },
    /// A DAMON_RECLAIM statistic ([`DAMON_RECLAIM_STATS`]).
    DamonReclaim(&'static str),
    /// A statistic ([`DAMOS_STATS`]) of scheme `scheme` of `kernel.damon.contexts[context]`.
    DamosStat {
        context: usize,
        scheme: usize,
        stat: &'static str,
    },
}

/// The extra columns of a config, in timeline order with their names: each node's zones'
/// free pages and its pagesets (zones as the nodes' physical layout gives them,
/// [`crate::watermarks::node_zones`]), KSM counters, DAMON_RECLAIM's statistics, the statistics of each context's schemes, then for each
/// synthetic workload its regions × nodes, its scan sequence and its accesses.
pub fn extra_columns(cfg: &crate::config::SimConfig) -> Vec<(ExtraColumn, String)> {
    let mut out = Vec::new();
    let managed: Vec<u64> = cfg
        .machine
        .nodes
        .iter()
        .map(|n| n.capacity.pages_floor().0)
        .collect();
    let zones = crate::watermarks::node_zones(&managed, cfg.kernel.numa.model_scale as u64);
    for (node, spans) in zones.iter().enumerate() {
        for z in spans {
            out.push((
                ExtraColumn::ZoneFree { node, zone: z.idx },
                zone_free_column(node, z.idx),
            ));
        }
        out.push((ExtraColumn::Pagesets { node }, pagesets_column(node)));
    }
    if cfg.tiering.is_some() {
        for &s in TIERING_STATS {
            out.push((ExtraColumn::Tiering(s), format!("tiering_{s}")));
        }
    }
    if cfg.kernel.ksm.is_some() {
        for &f in KSM_TIMELINE_FILES {
            out.push((ExtraColumn::Ksm(f), ksm_column(f)));
        }
    }
    if cfg.kernel.damon.reclaim.as_ref().is_some_and(|r| r.enabled) {
        for &s in DAMON_RECLAIM_STATS {
            out.push((ExtraColumn::DamonReclaim(s), damon_reclaim_column(s)));
        }
    }
    for (context, c) in cfg.kernel.damon.contexts.iter().enumerate() {
        for scheme in 0..c.schemes.len() {
            for &stat in DAMOS_STATS {
                out.push((
                    ExtraColumn::DamosStat {
                        context,
                        scheme,
                        stat,
                    },
                    damos_column(context, scheme, stat),
                ));
            }
        }
    }
    let nr_nodes = cfg.machine.nodes.len();
    for (wi, w) in cfg.workloads.iter().enumerate() {
        let crate::config::WorkloadConfig::Synthetic(s) = w else {
            continue;
        };
        let name = s.name.clone().unwrap_or_else(|| format!("synthetic{wi}"));
        for (ri, r) in s.regions.iter().enumerate() {
            for node in 0..nr_nodes {
                out.push((
                    ExtraColumn::RegionNode {
                        workload: wi,
                        region: ri,
                        node,
                    },
                    region_node_column(&name, &r.name, node),
                ));
            }
        }
        out.push((
            ExtraColumn::ScanSeq { workload: wi },
            scan_seq_column(&name),
        ));
        out.push((
            ExtraColumn::Accesses { workload: wi },
            accesses_column(&name),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_of_each_context_has_its_statistics_columns() {
        let cfg = crate::config::SimConfig::from_toml_str(
            "machine = \"small\"\n[[kernel.damon.contexts]]\nops = \"paddr\"\n[[kernel.damon.contexts.schemes]]\naction = \"pageout\"\n[[kernel.damon.contexts.schemes]]\naction = \"stat\"\n[[kernel.damon.contexts]]\nops = \"paddr\"\n",
            "t.toml",
        )
        .unwrap();
        let names: Vec<String> = extra_columns(&cfg)
            .into_iter()
            .filter(|(c, _)| matches!(c, ExtraColumn::DamosStat { .. }))
            .map(|(_, n)| n)
            .collect();
        assert_eq!(
            names.len(),
            10,
            "two schemes of context 0, none of context 1"
        );
        assert_eq!(
            &names[..5],
            [
                "damon_ctx0_scheme0_nr_tried",
                "damon_ctx0_scheme0_sz_tried",
                "damon_ctx0_scheme0_nr_applied",
                "damon_ctx0_scheme0_sz_applied",
                "damon_ctx0_scheme0_qt_exceeds",
            ]
        );
        assert_eq!(names[9], "damon_ctx0_scheme1_qt_exceeds");
    }
}
