//! Extra timeline columns (an observer: it reads kernel state, never changes it): KSM's
//! sysfs counters, where each synthetic region's pages are (`numa_maps`), the NUMA
//! scanner's sequence and accesses per synthetic workload. Names come from
//! [`tiermem_core::timeline`], the same the live workload runner writes.

use crate::kernel::Kernel;
use crate::mem::{pte_node, PTE_PRESENT};
use tiermem_core::config::{SimConfig, WorkloadConfig};
use tiermem_core::timeline as col;

enum Col {
    Ksm(&'static str),
    /// Pages of (process, VMA) on a node.
    Region { proc: u16, vma: usize, node: usize },
    ScanSeq { proc: u16 },
    Accesses { workload: usize },
}

/// The extra columns of one run.
pub struct ExtraColumns {
    cols: Vec<Col>,
    names: Vec<String>,
}

impl ExtraColumns {
    /// Columns for the run's config; `proc_workload[p]` is the workload of process `p`.
    pub fn new(cfg: &SimConfig, kernel: &Kernel, proc_workload: &[usize]) -> Self {
        let mut cols = Vec::new();
        let mut names = Vec::new();
        if kernel.ksm.is_some() {
            for &f in col::KSM_TIMELINE_FILES {
                cols.push(Col::Ksm(f));
                names.push(col::ksm_column(f));
            }
        }
        for (wi, w) in cfg.workloads.iter().enumerate() {
            let WorkloadConfig::Synthetic(s) = w else {
                continue;
            };
            let Some(proc) = proc_workload.iter().position(|&x| x == wi) else {
                continue;
            };
            let name = s.name.clone().unwrap_or_else(|| format!("synthetic{wi}"));
            for (vma, r) in s.regions.iter().enumerate() {
                for node in 0..kernel.nodes.len() {
                    cols.push(Col::Region {
                        proc: proc as u16,
                        vma,
                        node,
                    });
                    names.push(col::region_node_column(&name, &r.name, node));
                }
            }
            cols.push(Col::ScanSeq { proc: proc as u16 });
            names.push(col::scan_seq_column(&name));
            cols.push(Col::Accesses { workload: wi });
            names.push(col::accesses_column(&name));
        }
        ExtraColumns { cols, names }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One row: `accesses[w]` is workload `w`'s cumulative access count.
    pub fn sample(&self, kernel: &Kernel, accesses: &[u64]) -> Vec<u64> {
        let ksm = kernel.ksm_counters();
        let mut hist: Option<((u16, usize), Vec<u64>)> = None;
        self.cols
            .iter()
            .map(|c| match *c {
                Col::Ksm(f) => ksm
                    .as_ref()
                    .and_then(|m| m.get(f))
                    .map_or(0, |&v| v.max(0) as u64),
                Col::Region { proc, vma, node } => {
                    if hist.as_ref().map(|h| h.0) != Some((proc, vma)) {
                        hist = Some(((proc, vma), region_nodes(kernel, proc, vma)));
                    }
                    hist.as_ref().map_or(0, |h| h.1.get(node).copied().unwrap_or(0))
                }
                Col::ScanSeq { proc } => kernel
                    .numa
                    .mm
                    .get(proc as usize)
                    .map_or(0, |m| m.scan_seq as u64),
                Col::Accesses { workload } => accesses.get(workload).copied().unwrap_or(0),
            })
            .collect()
    }
}

/// Present pages of one VMA per node (KSM pages count on the node of their KSM page, as
/// `numa_maps` does).
fn region_nodes(kernel: &Kernel, proc: u16, vma: usize) -> Vec<u64> {
    let mut h = vec![0u64; kernel.nodes.len()];
    let p = &kernel.procs[proc as usize];
    let Some(v) = p.vmas.get(vma) else {
        return h;
    };
    let (a, b) = (v.pte_base as usize, (v.pte_base + v.pages) as usize);
    for &pte in &p.ptes[a..b.min(p.ptes.len())] {
        if pte & PTE_PRESENT != 0 {
            h[pte_node(pte)] += 1;
        }
    }
    h
}
