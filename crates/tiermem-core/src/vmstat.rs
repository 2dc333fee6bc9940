//! Kernel event counters with their `/proc/vmstat` names.
//!
//! Counters are kept per node (as `/sys/devices/system/node/nodeN/vmstat` and `numastat`
//! do) and summed for the system view, so simulated and live runs compare by name.
//!
//! Node statistics (`enum node_stat_item`: the promotion and demotion counters here) are
//! not exact in the kernel: each CPU accumulates a differential and adds it to the node's
//! counter only when it passes the node's `stat_threshold` (`mod_node_state` in
//! mm/vmstat.c) or when `vmstat_update` folds every differential, about once a second.
//! `/proc/vmstat`, and the promotion rate limit and threshold adjustment that read
//! `node_page_state`, see only the folded part: a burst of promotions shows up in steps of
//! `threshold + 1` pages with the remainder a second later, and the rate limit lets up to
//! `threshold` pages past its quota. [`VmStat::set_node_threshold`] turns this on for a node
//! (a threshold of 0, the default, keeps counters exact); the differential is one per node
//! and item, as if every update came from one CPU.

use std::collections::BTreeMap;

macro_rules! counters {
    ($($variant:ident => $name:literal : $doc:literal),* $(,)?) => {
        /// A counter, named as in `/proc/vmstat`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Vm { $(#[doc = $doc] $variant),* }
        impl Vm {
            pub const ALL: &'static [Vm] = &[$(Vm::$variant),*];
            /// The `/proc/vmstat` name.
            pub const fn name(self) -> &'static str {
                match self { $(Vm::$variant => $name),* }
            }
        }
        /// Number of counters.
        pub const NR_VM_ITEMS: usize = [$($name),*].len();
    };
}

counters! {
    Pgfault => "pgfault": "page faults handled (`handle_mm_fault`)",
    Pgmajfault => "pgmajfault": "faults that needed swap-in I/O (`do_swap_page`)",
    PgallocNormal => "pgalloc_normal": "pages allocated",
    Pgfree => "pgfree": "pages freed",
    NumaHit => "numa_hit": "allocations on the preferred node (`zone_statistics`)",
    NumaMiss => "numa_miss": "allocations on this node that preferred another",
    NumaForeign => "numa_foreign": "allocations preferred here that went elsewhere",
    NumaLocal => "numa_local": "allocations on the allocating CPU's node",
    NumaOther => "numa_other": "allocations on another node than the CPU's",
    NumaInterleave => "numa_interleave": "interleave allocations that got their target node (`NUMA_INTERLEAVE_HIT`)",
    PgscanKswapd => "pgscan_kswapd": "inactive pages scanned by kswapd",
    PgscanDirect => "pgscan_direct": "inactive pages scanned by direct reclaim",
    PgstealKswapd => "pgsteal_kswapd": "pages reclaimed (incl. demoted) by kswapd",
    PgstealDirect => "pgsteal_direct": "pages reclaimed (incl. demoted) by direct reclaim",
    PgscanAnon => "pgscan_anon": "anonymous pages scanned",
    PgstealAnon => "pgsteal_anon": "anonymous pages reclaimed",
    PgscanFile => "pgscan_file": "page-cache pages scanned",
    PgstealFile => "pgsteal_file": "page-cache pages reclaimed",
    WorkingsetRefaultFile => "workingset_refault_file": "page-cache misses that found a shadow entry (`workingset_refault`)",
    WorkingsetActivateFile => "workingset_activate_file": "refaults recent enough to start active (`workingset_test_recent`)",
    Pgrefill => "pgrefill": "active pages scanned (`shrink_active_list`)",
    Pgactivate => "pgactivate": "pages moved to the active list",
    Pgdeactivate => "pgdeactivate": "pages moved to the inactive list",
    PgdemoteKswapd => "pgdemote_kswapd": "pages demoted by kswapd",
    PgdemoteDirect => "pgdemote_direct": "pages demoted by direct reclaim",
    PgmigrateSuccess => "pgmigrate_success": "pages migrated",
    PgmigrateFail => "pgmigrate_fail": "pages that failed to migrate",
    Pswpin => "pswpin": "pages swapped in",
    Pswpout => "pswpout": "pages swapped out",
    AllocstallMovable => "allocstall_movable": "direct reclaim entries (`do_try_to_free_pages`, user pages are GFP_HIGHUSER_MOVABLE)",
    Pageoutrun => "pageoutrun": "kswapd `balance_pgdat` runs",
    OomKill => "oom_kill": "processes killed by the OOM killer",
    NumaPteUpdates => "numa_pte_updates": "PTEs made PROT_NONE by the NUMA scanner",
    NumaHintFaults => "numa_hint_faults": "NUMA hint faults",
    NumaHintFaultsLocal => "numa_hint_faults_local": "hint faults on the faulting CPU's node",
    NumaPagesMigrated => "numa_pages_migrated": "pages migrated by hint faults",
    PgpromoteSuccess => "pgpromote_success": "pages promoted from a slow tier to the top tier (target node)",
    PgpromoteCandidate => "pgpromote_candidate": "hot pages counted against the rate limit (target node)",
    PgpromoteCandidateNrl => "pgpromote_candidate_nrl": "pages promoted through the free-space bypass (6.17+)",
}

impl Vm {
    /// A `node_stat_item` (per-CPU differentials, see the module doc) rather than a
    /// `vm_event_item` (summed over CPUs when read, so exact).
    pub const fn is_node_stat(self) -> bool {
        matches!(
            self,
            Vm::PgpromoteSuccess
                | Vm::PgpromoteCandidate
                | Vm::PgpromoteCandidateNrl
                | Vm::PgdemoteKswapd
                | Vm::PgdemoteDirect
        )
    }
}

/// `calculate_normal_threshold` (mm/vmstat.c): a zone's per-CPU stat threshold from its
/// managed pages and the online CPUs, `2 × fls(cpus) × (1 + fls(managed / 128 MiB))`, at
/// most 125. A node's threshold is the largest of its populated zones'
/// (`refresh_zone_stat_thresholds`).
pub fn normal_stat_threshold(managed_pages: u64, online_cpus: u32) -> u32 {
    fn fls(x: u64) -> u32 {
        u64::BITS - x.leading_zeros()
    }
    let mem = managed_pages >> (27 - crate::units::PAGE_SHIFT);
    (2 * fls(online_cpus as u64) * (1 + fls(mem))).min(125)
}

/// Per-node event counters.
#[derive(Clone, Debug)]
pub struct VmStat {
    per_node: Vec<[u64; NR_VM_ITEMS]>,
    /// Per node: the not yet folded differential of each node statistic.
    diff: Vec<[i64; NR_VM_ITEMS]>,
    /// Per node: `stat_threshold` (0: exact counters).
    threshold: Vec<i64>,
}

impl VmStat {
    pub fn new(nr_nodes: usize) -> Self {
        VmStat {
            per_node: vec![[0; NR_VM_ITEMS]; nr_nodes],
            diff: vec![[0; NR_VM_ITEMS]; nr_nodes],
            threshold: vec![0; nr_nodes],
        }
    }

    /// Give node statistics of `node` per-CPU differentials with this threshold.
    pub fn set_node_threshold(&mut self, node: usize, threshold: u32) {
        self.threshold[node] = threshold as i64;
    }

    #[inline]
    pub fn add(&mut self, node: usize, item: Vm, n: u64) {
        let t = self.threshold[node];
        if t > 0 && item.is_node_stat() {
            // mod_node_state with overstep 0, as mod_node_page_state calls it.
            let d = &mut self.diff[node][item as usize];
            let v = *d + n as i64;
            if v.abs() > t {
                self.per_node[node][item as usize] += v as u64;
                *d = 0;
            } else {
                *d = v;
            }
        } else {
            self.per_node[node][item as usize] += n;
        }
    }

    #[inline]
    pub fn inc(&mut self, node: usize, item: Vm) {
        self.add(node, item, 1);
    }

    /// `refresh_cpu_vm_stats` from `vmstat_update`: fold every differential.
    pub fn fold(&mut self) {
        for (counts, diff) in self.per_node.iter_mut().zip(&mut self.diff) {
            for (c, d) in counts.iter_mut().zip(diff.iter_mut()) {
                *c = c.wrapping_add_signed(*d);
                *d = 0;
            }
        }
    }

    /// System-wide value (`/proc/vmstat`: node statistics without their differentials).
    pub fn total(&self, item: Vm) -> u64 {
        self.per_node.iter().map(|c| c[item as usize]).sum()
    }

    pub fn node(&self, node: usize, item: Vm) -> u64 {
        self.per_node[node][item as usize]
    }

    /// All system-wide counters by name.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        Vm::ALL
            .iter()
            .map(|&v| (v.name().to_string(), self.total(v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_as_the_kernel_computes_them() {
        // The VM's node 0: DMA32 with 253 773 managed pages, 2 CPUs (zoneinfo: 16).
        assert_eq!(normal_stat_threshold(253_773, 2), 16);
        // Its 512 MiB node 1 and a large node (capped at 125).
        assert_eq!(normal_stat_threshold(108_000, 2), 12);
        assert_eq!(normal_stat_threshold(1 << 30, 256), 125);
    }

    #[test]
    fn node_stats_fold_past_the_threshold_and_on_refresh() {
        let mut v = VmStat::new(1);
        v.set_node_threshold(0, 16);
        for _ in 0..1036 {
            v.inc(0, Vm::PgpromoteSuccess);
            v.inc(0, Vm::NumaHintFaults);
        }
        // Steps of 17 (the recorded 1020 of a 1036-page burst); events stay exact.
        assert_eq!(v.total(Vm::PgpromoteSuccess), 1020);
        assert_eq!(v.total(Vm::NumaHintFaults), 1036);
        v.fold();
        assert_eq!(v.total(Vm::PgpromoteSuccess), 1036);
        // A batch larger than the threshold goes through at once.
        v.add(0, Vm::PgdemoteKswapd, 32);
        assert_eq!(v.total(Vm::PgdemoteKswapd), 32);
    }
}
