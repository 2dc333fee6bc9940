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

/// `ksm_<file>`.
pub fn ksm_column(file: &str) -> String {
    format!("ksm_{file}")
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
