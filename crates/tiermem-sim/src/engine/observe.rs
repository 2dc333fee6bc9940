//! Extra timeline columns (an observer: it reads kernel state, never changes it): KSM's
//! sysfs counters, DAMON_RECLAIM's and each context's DAMOS statistics, where each
//! synthetic region's pages are (`numa_maps`), the NUMA scanner's sequence and accesses
//! per synthetic workload. Columns and names come from
//! [`tiermem_core::timeline::extra_columns`], which the live workload runner uses too.

use crate::mm::mem::{pte_maps_frame, pte_node};
use crate::mm::Kernel;
use tiermem_core::config::SimConfig;
use tiermem_core::timeline::{extra_columns, ExtraColumn};

/// The extra columns of one run.
pub struct ExtraColumns {
    cols: Vec<ExtraColumn>,
    names: Vec<String>,
    /// The process of each workload (its first).
    workload_proc: Vec<Option<u16>>,
}

impl ExtraColumns {
    /// Columns for the run's config; `proc_workload[p]` is the workload of process `p`.
    pub fn new(cfg: &SimConfig, proc_workload: &[usize]) -> Self {
        let (cols, names) = extra_columns(cfg).into_iter().unzip();
        let workload_proc = (0..cfg.workloads.len())
            .map(|w| proc_workload.iter().position(|&x| x == w).map(|p| p as u16))
            .collect();
        ExtraColumns {
            cols,
            names,
            workload_proc,
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One row: `accesses[w]` is workload `w`'s cumulative access count.
    pub fn sample(
        &self,
        kernel: &Kernel,
        accesses: &[u64],
        kdamonds: &[crate::mm::damon::Kdamond],
        tiering: Option<&tiermem_policy::tiering::ControllerStats>,
    ) -> Vec<u64> {
        let ksm = kernel.ksm_counters();
        let reclaim = kdamonds.iter().find(|k| k.name == "damon_reclaim");
        let mut hist: Option<((u16, usize), Vec<u64>)> = None;
        let proc_of = |w: usize| self.workload_proc.get(w).copied().flatten();
        self.cols
            .iter()
            .map(|c| match *c {
                ExtraColumn::Ksm(f) => ksm
                    .as_ref()
                    .and_then(|m| m.get(f))
                    .map_or(0, |&v| v.max(0) as u64),
                ExtraColumn::RegionNode {
                    workload,
                    region,
                    node,
                } => {
                    let Some(proc) = proc_of(workload) else {
                        return 0;
                    };
                    if hist.as_ref().map(|h| h.0) != Some((proc, region)) {
                        hist = Some(((proc, region), region_nodes(kernel, proc, region)));
                    }
                    hist.as_ref()
                        .map_or(0, |h| h.1.get(node).copied().unwrap_or(0))
                }
                ExtraColumn::ScanSeq { workload } => proc_of(workload)
                    .and_then(|p| kernel.numa_scan_seq(p))
                    .unwrap_or(0),
                ExtraColumn::Accesses { workload } => accesses.get(workload).copied().unwrap_or(0),
                ExtraColumn::ZoneFree { node, zone } => kernel.nodes().get(node).map_or(0, |n| {
                    n.zones.iter().find(|z| z.idx == zone).map_or(0, |z| z.free)
                }),
                ExtraColumn::Pagesets { node } => {
                    kernel.nodes().get(node).map_or(0, |n| n.pagesets)
                }
                ExtraColumn::Tiering(stat) => tiering.and_then(|t| t.get(stat)).unwrap_or(0),
                ExtraColumn::DamonReclaim(stat) => reclaim
                    .and_then(|k| k.scheme_stats(0))
                    .map_or(0, |s| crate::mm::damon::reclaim_module_stat(&s, stat)),
                ExtraColumn::DamosStat {
                    context,
                    scheme,
                    stat,
                } => context_scheme_stat(kdamonds, context, scheme, stat),
            })
            .collect()
    }
}

/// A statistic of scheme `scheme` of `kernel.damon.contexts[context]`, whose kdamond is
/// named `ctx<context>` (`tiermem_damon::modules::contexts`); names as in `stats/`.
fn context_scheme_stat(
    kdamonds: &[crate::mm::damon::Kdamond],
    context: usize,
    scheme: usize,
    stat: &str,
) -> u64 {
    let name = format!("ctx{context}");
    kdamonds
        .iter()
        .find(|k| k.name == name)
        .and_then(|k| k.scheme_stats(scheme))
        .map_or(0, |s| s.get(stat).unwrap_or(0))
}

/// Present pages of one VMA per node (KSM pages count on the node of their KSM page, as
/// `numa_maps` does).
fn region_nodes(kernel: &Kernel, proc: u16, vma: usize) -> Vec<u64> {
    let mut h = vec![0u64; kernel.nodes().len()];
    let p = &kernel.procs()[proc as usize];
    let Some(v) = p.vmas.get(vma) else {
        return h;
    };
    let (a, b) = (v.pte_base as usize, (v.pte_base + v.pages) as usize);
    for &pte in &p.ptes[a..b.min(p.ptes.len())] {
        if pte_maps_frame(pte) {
            h[pte_node(pte)] += 1;
        }
    }
    h
}
