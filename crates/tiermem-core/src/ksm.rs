//! Configuration of KSM (`[kernel.ksm]`, the knobs of `/sys/kernel/mm/ksm/` with the
//! kernel's defaults) and of the virtual-machine guest workload (`type = "vm_guest"`,
//! `workload-models.md` §5).

use crate::units::{Bytes, NodeId, SimDuration};
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// `advisor_mode` (6.8+).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdvisorMode {
    /// `pages_to_scan` is set by hand.
    #[default]
    None,
    /// ksmd retunes `pages_to_scan` after every full pass to reach `advisor_target_scan_time`.
    ScanTime,
}

/// `[kernel.ksm]`: present = the kernel has KSM (CONFIG_KSM). Field names are the sysfs
/// file names; defaults are `mm/ksm.c`'s (kernel-mechanisms.md §3.8).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KsmConfig {
    /// `run` at boot: 0 stop, 1 merge, 2 unmerge everything and stop. Default 0.
    pub run: u32,
    /// `pages_to_scan` per ksmd wake-up. Default 100.
    pub pages_to_scan: u32,
    /// `sleep_millisecs` between batches. Default 20.
    pub sleep_millisecs: u32,
    /// `merge_across_nodes`: 1 one stable/unstable tree pair for the machine; 0 one pair per
    /// NUMA node (pages merge only with pages on the same node). Default 1.
    pub merge_across_nodes: u32,
    /// `max_page_sharing`: mappings per KSM page before a stable-node chain grows a new dup
    /// (minimum 2). Default 256.
    pub max_page_sharing: u32,
    /// `stable_node_chains_prune_millisecs`. Default 2000.
    pub stable_node_chains_prune_millisecs: u32,
    /// `use_zero_pages`: empty pages are mapped to the shared zero page. Default 0.
    pub use_zero_pages: u32,
    /// `smart_scan` (6.7+): skip pages that repeatedly failed to merge. Default 1.
    pub smart_scan: u32,
    /// `advisor_mode` (6.8+). Default `none`.
    pub advisor_mode: AdvisorMode,
    /// `advisor_max_cpu` (%). Default 70.
    pub advisor_max_cpu: u32,
    /// `advisor_min_pages_to_scan`. Default 500.
    pub advisor_min_pages_to_scan: u64,
    /// `advisor_max_pages_to_scan`. Default 30000.
    pub advisor_max_pages_to_scan: u64,
    /// `advisor_target_scan_time` (seconds, minimum 1). Default 200.
    pub advisor_target_scan_time: u64,
    /// CPU costs of ksmd and of breaking COW (assumptions, docs/model.md).
    pub costs: KsmCosts,
}

/// CPU time of KSM paths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KsmCosts {
    /// Per page visited by ksmd (`scan_get_next_rmap_item`: page walk, rmap_item lookup).
    /// Default 150 ns.
    pub scan_page: SimDuration,
    /// Checksum of one page (`calc_checksum`, xxhash of 4 KiB at ~8 GB/s). Default 500 ns.
    pub checksum: SimDuration,
    /// One `memcmp_pages` in a tree walk. Default 100 ns (most differ in the first line);
    /// an equal compare (the whole page) costs `checksum`.
    pub compare: SimDuration,
    /// Merging one page (`write_protect_page` with its TLB flush + `replace_page`).
    /// Default 3 us.
    pub merge: SimDuration,
    /// A write fault on a KSM or zero page (`do_wp_page` → `wp_page_copy`: allocate, copy
    /// 4 KiB, remap, flush). Default 2 us.
    pub cow_fault: SimDuration,
}

impl Default for KsmCosts {
    fn default() -> Self {
        KsmCosts {
            scan_page: SimDuration::from_ns(150),
            checksum: SimDuration::from_ns(500),
            compare: SimDuration::from_ns(100),
            merge: SimDuration::from_us(3),
            cow_fault: SimDuration::from_us(2),
        }
    }
}

impl Default for KsmConfig {
    fn default() -> Self {
        KsmConfig {
            run: 0,
            pages_to_scan: 100,
            sleep_millisecs: 20,
            merge_across_nodes: 1,
            max_page_sharing: 256,
            stable_node_chains_prune_millisecs: 2000,
            use_zero_pages: 0,
            smart_scan: 1,
            advisor_mode: AdvisorMode::None,
            advisor_max_cpu: 70,
            advisor_min_pages_to_scan: 500,
            advisor_max_pages_to_scan: 30000,
            advisor_target_scan_time: 200,
            costs: KsmCosts::default(),
        }
    }
}

impl KsmConfig {
    /// The scanner's tunables in `/sys/kernel/mm/ksm/`, by file name, in the order the agent
    /// writes them (`merge_across_nodes` first: it needs ksmd stopped and no KSM pages).
    /// `run`, `smart_scan` (6.7+) and the advisor's files (6.8+) are not in the list: the
    /// agent writes them apart, and the simulator reports them beside these.
    pub fn tunables(&self) -> [(&'static str, u64); 6] {
        [
            ("merge_across_nodes", self.merge_across_nodes.into()),
            ("pages_to_scan", self.pages_to_scan.into()),
            ("sleep_millisecs", self.sleep_millisecs.into()),
            ("max_page_sharing", self.max_page_sharing.into()),
            (
                "stable_node_chains_prune_millisecs",
                self.stable_node_chains_prune_millisecs.into(),
            ),
            ("use_zero_pages", self.use_zero_pages.into()),
        ]
    }

    /// The range checks the sysfs store functions make (`run_store`, `max_page_sharing_store`,
    /// ...), reported against `kernel.ksm.<knob>`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let key = |k: &str| format!("kernel.ksm.{k}");
        if self.run > 2 {
            return Err(ConfigError::invalid(
                key("run"),
                format!("0 stop, 1 merge, 2 unmerge (got {})", self.run),
            ));
        }
        for (k, v) in [
            ("merge_across_nodes", self.merge_across_nodes),
            ("use_zero_pages", self.use_zero_pages),
            ("smart_scan", self.smart_scan),
        ] {
            if v > 1 {
                return Err(ConfigError::invalid(key(k), format!("is 0 or 1 (got {v})")));
            }
        }
        if self.pages_to_scan == 0 {
            return Err(ConfigError::invalid(
                key("pages_to_scan"),
                "must be positive",
            ));
        }
        if self.max_page_sharing < 2 {
            return Err(ConfigError::invalid(
                key("max_page_sharing"),
                format!("must be at least 2 (got {})", self.max_page_sharing),
            ));
        }
        if self.advisor_max_cpu == 0 || self.advisor_max_cpu > 100 {
            return Err(ConfigError::invalid(
                key("advisor_max_cpu"),
                "is a percentage 1..100",
            ));
        }
        if self.advisor_min_pages_to_scan == 0
            || self.advisor_max_pages_to_scan < self.advisor_min_pages_to_scan
        {
            return Err(ConfigError::invalid(
                key("advisor_max_pages_to_scan"),
                "must be >= advisor_min_pages_to_scan > 0",
            ));
        }
        if self.advisor_target_scan_time == 0 {
            return Err(ConfigError::invalid(
                key("advisor_target_scan_time"),
                "must be at least 1 second",
            ));
        }
        Ok(())
    }
}

/// How a guest's RAM is enrolled in KSM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MergeMode {
    /// `madvise(MADV_MERGEABLE)` over guest RAM, as qemu does (`mem-merge=on`).
    #[default]
    Madvise,
    /// `prctl(PR_SET_MEMORY_MERGE, 1)`: every compatible VMA of the process (6.4+).
    Prctl,
    /// Not enrolled.
    Off,
}

/// `type = "vm_guest"`: KVM guests pinned to NUMA nodes, with KSM-relevant page contents,
/// and an `alloc_pg`-like probe that reads random pages of each guest
/// (`workload-models.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VmGuestConfig {
    /// Name in reports. Default `vm<i>`.
    pub name: Option<String>,
    /// Number of guests. Default 8.
    pub guests: u32,
    /// RAM per guest. Default 4 GiB.
    pub guest_mem: Bytes,
    /// Nodes the guests run on, round-robin. Default: every node with CPUs.
    pub cpu_nodes: Vec<NodeId>,
    /// Bind each guest's memory to its CPU node (`numactl --membind`, as in the patch's
    /// test). Default true.
    pub pin_memory: bool,
    /// Share of guest pages that are zero. Default 0.30.
    pub zero_fraction: f64,
    /// Share holding the OS image (identical across guests with the same image). Default 0.10.
    pub os_shared_fraction: f64,
    /// Share duplicated inside a guest. Default 0.03.
    pub intra_dup_fraction: f64,
    /// Copies of each intra-guest duplicate. Default 4.
    pub intra_dup_copies: u32,
    /// Distinct OS images; guest g runs image g mod os_images. Default 1.
    pub os_images: u32,
    /// Writes to unique pages, % of them per second. Default 1.0.
    pub unique_write_pct_per_s: f64,
    /// Writes to shared (zero, OS, duplicate) pages, % of them per second. Default 0.01.
    pub shared_write_pct_per_s: f64,
    /// KSM enrolment. Default `madvise`.
    pub merge: MergeMode,
    /// When the probe starts reading (give ksmd time to merge). Default 10 s.
    pub probe_start: SimDuration,
    /// Length of the probe. Default 1 s.
    pub probe_duration: SimDuration,
    /// CPU time per probe access. Default: the machine's `cpu_per_access`.
    pub probe_cpu_per_access: Option<SimDuration>,
}

impl Default for VmGuestConfig {
    fn default() -> Self {
        VmGuestConfig {
            name: Default::default(),
            guests: 8,
            guest_mem: Bytes::gib(4),
            cpu_nodes: Default::default(),
            pin_memory: true,
            zero_fraction: 0.30,
            os_shared_fraction: 0.10,
            intra_dup_fraction: 0.03,
            intra_dup_copies: 4,
            os_images: 1,
            unique_write_pct_per_s: 1.0,
            shared_write_pct_per_s: 0.01,
            merge: Default::default(),
            probe_start: SimDuration::from_secs(10),
            probe_duration: SimDuration::from_secs(1),
            probe_cpu_per_access: Default::default(),
        }
    }
}

impl VmGuestConfig {
    /// Field checks, reported under `prefix` (`workloads[i]`).
    pub fn validate(&self, prefix: &str) -> Result<(), ConfigError> {
        let key = |k: &str| format!("{prefix}.{k}");
        if self.guests == 0 || self.guests > 1024 {
            return Err(ConfigError::invalid(
                key("guests"),
                "must be within 1..1024",
            ));
        }
        if self.guest_mem.0 < 16 * crate::units::PAGE_SIZE
            || self.guest_mem.pages_ceil().0 > (1 << 30)
        {
            return Err(ConfigError::invalid(
                key("guest_mem"),
                "must be within 64KiB..4TiB",
            ));
        }
        for (k, v) in [
            ("zero_fraction", self.zero_fraction),
            ("os_shared_fraction", self.os_shared_fraction),
            ("intra_dup_fraction", self.intra_dup_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(ConfigError::invalid(key(k), "must be within 0..1"));
            }
        }
        if self.zero_fraction + self.os_shared_fraction + self.intra_dup_fraction > 1.0 {
            return Err(ConfigError::invalid(
                key("zero_fraction"),
                "zero + os_shared + intra_dup fractions exceed 1",
            ));
        }
        if self.intra_dup_copies < 2 {
            return Err(ConfigError::invalid(
                key("intra_dup_copies"),
                "must be at least 2",
            ));
        }
        if self.os_images == 0 {
            return Err(ConfigError::invalid(key("os_images"), "must be positive"));
        }
        for (k, v) in [
            ("unique_write_pct_per_s", self.unique_write_pct_per_s),
            ("shared_write_pct_per_s", self.shared_write_pct_per_s),
        ] {
            if !(0.0..=100_000.0).contains(&v) {
                return Err(ConfigError::invalid(key(k), "must be within 0..100000"));
            }
        }
        if self.probe_duration.0 == 0 {
            return Err(ConfigError::invalid(
                key("probe_duration"),
                "must be positive",
            ));
        }
        Ok(())
    }
}
