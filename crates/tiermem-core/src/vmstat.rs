//! Kernel event counters with their `/proc/vmstat` names.
//!
//! Counters are kept per node (as `/sys/devices/system/node/nodeN/vmstat` and `numastat`
//! do) and summed for the system view, so simulated and live runs compare by name.

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

/// Per-node event counters.
#[derive(Clone, Debug)]
pub struct VmStat {
    per_node: Vec<[u64; NR_VM_ITEMS]>,
}

impl VmStat {
    pub fn new(nr_nodes: usize) -> Self {
        VmStat {
            per_node: vec![[0; NR_VM_ITEMS]; nr_nodes],
        }
    }

    #[inline]
    pub fn add(&mut self, node: usize, item: Vm, n: u64) {
        self.per_node[node][item as usize] += n;
    }

    #[inline]
    pub fn inc(&mut self, node: usize, item: Vm) {
        self.per_node[node][item as usize] += 1;
    }

    /// System-wide value (`/proc/vmstat`).
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
