//! The configuration language: one TOML file describes a machine, the kernel's knobs and
//! the workloads of a simulation.
//!
//! ```toml
//! seed = 1
//! duration = "10s"
//! machine = "dram-pmem-2s"          # a preset name, or a [machine] table (see topology.rs)
//!
//! [kernel]
//! watermark_scale_factor = 10
//! [kernel.zram]
//! capacity = "4GiB"
//!
//! [[workloads]]
//! type = "pmbench"
//! processes = 2
//! mapsize = "1GiB"
//! pattern = "normal_ih"
//! read_ratio = 80
//! ```
//!
//! Parsing is strict: every table denies unknown keys, sizes and durations need units, and
//! values are range-checked. Errors name the file and the dotted key. Presets and variant
//! overrides work on the TOML value before it is typed, so `machine.nodes[0].capacity` can
//! be overridden on top of a preset and the fully resolved config can be written next to
//! results.

use crate::interleave::WeightSemantics;
use crate::mempolicy::{MbindFlag, MemPolicy};
use crate::presets;
use crate::topology::MachineConfig;
use crate::units::{Bandwidth, Bytes, NodeId, SimDuration};
use crate::ConfigError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A complete simulation config.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimConfig {
    /// Seed of every random stream in the run. Default 1.
    pub seed: u64,
    /// Simulated time limit of the run. Default 10 s. The run ends earlier when every
    /// workload has finished.
    pub duration: SimDuration,
    pub machine: MachineConfig,
    pub kernel: KernelConfig,
    pub sim: EngineConfig,
    pub workloads: Vec<WorkloadConfig>,
    /// How often the user-space controllers act: the live agent's `interval`. Default 1 s.
    pub interval: SimDuration,
    /// `[tiering]`: the user-space tiering controller, written as in the agent's file
    /// ([`crate::controllers`]); its targets are workloads, by name.
    pub tiering: Option<crate::controllers::TieringConfig>,
    /// `[reclaim]`: the agent's proactive reclaim; in a simulation only
    /// `[reclaim.processes]` (a DAMOS `pageout` kdamond over the target workloads).
    pub reclaim: Option<crate::controllers::ReclaimConfig>,
}

/// Top-level keys other than machine and workloads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopLevel {
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default = "default_duration")]
    duration: SimDuration,
    #[serde(default)]
    kernel: KernelConfig,
    #[serde(default)]
    sim: EngineConfig,
    #[serde(default = "default_controller_interval")]
    interval: SimDuration,
    #[serde(default)]
    tiering: Option<crate::controllers::TieringConfig>,
    #[serde(default)]
    reclaim: Option<crate::controllers::ReclaimConfig>,
    // Parsed separately (preset expansion, tagged workloads); listed so they are not unknown.
    #[allow(dead_code)]
    machine: toml::Value,
    #[allow(dead_code)]
    #[serde(default)]
    workloads: Option<toml::Value>,
    /// A validation scenario's checks (`tiermem validate`), ignored by the simulator.
    #[allow(dead_code)]
    #[serde(default)]
    validate: Option<toml::Value>,
}

fn default_seed() -> u64 {
    1
}
fn default_controller_interval() -> SimDuration {
    SimDuration::from_secs(1)
}
fn default_duration() -> SimDuration {
    SimDuration::from_secs(10)
}

/// `[sim]`: how the engine advances time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Timing window: node latencies are re-solved from the previous window's traffic and
    /// periodic kernel work runs at least this often. Default 1 ms.
    pub tick: SimDuration,
    /// Interval of the timeline rows. Default 100 ms.
    pub sample_interval: SimDuration,
    /// How threads' accesses are simulated. Default `access`.
    pub engine: EngineKind,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            tick: SimDuration::from_ms(1),
            sample_interval: SimDuration::from_ms(100),
            engine: EngineKind::Access,
        }
    }
}

/// `sim.engine`: one access at a time, or page events for stationary workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Every access runs through the page table (the engine checked against the kernel).
    Access,
    /// Threads whose measured phase draws pages from one fixed distribution (pmbench's
    /// `uniform`, `normal_ih`, `normal`, `pareto`; synthetic workloads' access threads, paced or
    /// not) switch at its start to page events: accessed bits and faulting touches are
    /// drawn from each page's access probability, traffic and latency are accounted in
    /// aggregate. Other threads stay on the access engine.
    /// Refused with KSM, whose merging reads page contents that aggregate accesses do not
    /// write.
    Events,
    /// `events` where it applies: with KSM configured, the access engine throughout.
    Auto,
}

/// `[kernel]`: the knobs of the simulated kernel, with the kernel's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelConfig {
    /// The kernel release whose behaviour to model where releases differ (`"6.12"`, or
    /// `uname -r`'s text); default: the newest modelled behaviour. `tiermem validate` sets
    /// it from the recording when a scenario leaves it out. See `release.rs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release: Option<crate::release::KernelRelease>,
    /// `/proc/sys/vm/watermark_scale_factor`, in 1/10000 of a zone (1..3000). Default 10.
    pub watermark_scale_factor: u32,
    /// `/proc/sys/vm/min_free_kbytes`. Default: computed as `calculate_min_free_kbytes` does.
    pub min_free_kbytes: Option<u64>,
    /// `/sys/kernel/mm/numa/demotion_enabled`: reclaim demotes to the next tier instead of
    /// swapping. Default false.
    pub demotion_enabled: bool,
    /// `/proc/sys/kernel/numa_balancing`: bit 0 NUMA_BALANCING_NORMAL, bit 1
    /// NUMA_BALANCING_MEMORY_TIERING (0..3). Default 0 (the simulated machine boots
    /// without balancing unless asked).
    pub numa_balancing: u32,
    /// NUMA-balancing scanner and promotion knobs (`[kernel.numa]`).
    pub numa: NumaConfig,
    /// A swap device (`[kernel.swap]`); none by default.
    pub swap: Option<SwapConfig>,
    /// A zram swap device (`[kernel.zram]`), used before the swap device (higher priority).
    pub zram: Option<ZramConfig>,
    /// CPU costs of kernel paths.
    pub costs: KernelCosts,
    /// DAMON contexts and modules (`[kernel.damon]`, see `damon.rs`); none by default.
    pub damon: crate::damon::DamonConfig,
    /// KSM (`[kernel.ksm]`); absent = a kernel without KSM (no per-page content table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ksm: Option<crate::ksm::KsmConfig>,
    /// The weighted-interleave weight table (`[kernel.weighted_interleave]`,
    /// `/sys/kernel/mm/mempolicy/weighted_interleave/`).
    pub weighted_interleave: WeightedInterleaveConfig,
    /// `/sys/kernel/mm/transparent_hugepage/enabled`. The simulator allocates base pages
    /// only, so `never` is the one value it accepts; the live workload runner writes it so
    /// that a recording runs the same way. Default `never`.
    pub transparent_hugepage: TransparentHugepage,
    /// `/sys/kernel/mm/lru_gen/enabled`: the multi-generational LRU (MGLRU; Debian's 6.12
    /// turns it on). The simulator models the classic active/inactive lists, so `false`
    /// is the one value it accepts; the live runner writes it. Default false.
    pub lru_gen: bool,
}

/// `transparent_hugepage/enabled` (`mm/huge_memory.c`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransparentHugepage {
    #[default]
    Never,
    Madvise,
    Always,
}

impl TransparentHugepage {
    /// The value written to sysfs.
    pub fn sysfs(self) -> &'static str {
        match self {
            TransparentHugepage::Never => "never",
            TransparentHugepage::Madvise => "madvise",
            TransparentHugepage::Always => "always",
        }
    }
}

/// `[kernel.weighted_interleave]`: the system-wide interleave weights as the sysfs files
/// set them at boot (`kernel-mechanisms.md` §2.2–§2.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct WeightedInterleaveConfig {
    /// Which kernel's semantics: `"6.9"` (6.9–6.15: default weight 1, writing 0 resets to
    /// the default, no `auto`) or `"6.16"` (6.16+: weights 1..255, `auto` mode deriving
    /// the weights from each node's bandwidth). Default `"6.16"`.
    pub semantics: Option<WeightSemantics>,
    /// 6.16+ `auto`: weights from node bandwidth (`reduce_interleave_weights` over
    /// `min(read_bandwidth, write_bandwidth)` of each node, as HMAT reports them). Default
    /// true unless `weights` are given (a `nodeN` write switches auto off).
    pub auto: Option<bool>,
    /// The value written to each `nodeN` file, one per node in node order (0..255; 0 only
    /// with 6.9 semantics, where it means the default weight 1). Default: nothing written.
    pub weights: Option<Vec<u8>>,
}

impl WeightedInterleaveConfig {
    /// The semantics in effect (default 6.16).
    pub fn semantics(&self) -> WeightSemantics {
        self.semantics.unwrap_or(WeightSemantics::V6_16)
    }
}

/// An `mbind` call on one region of a workload's address space
/// (`[[workloads.mbind]]`): `region = "a"`, `policy = { mode = "weighted_interleave",
/// nodes = [0, 1] }`, `flags = ["move"]`, `at = "20ms"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MbindConfig {
    /// The region (VMA) by name: STREAM `a`, `b`, `c`; MLC `buf0`.. and `latbuf`; XSBench
    /// `energy`, `index`, `nuclide`. A trailing `*` matches every region with that prefix.
    pub region: String,
    /// The VMA policy (mode `default` removes the VMA policy: the task policy applies).
    pub policy: MemPolicy,
    /// `mbind` flags: `strict`, `move`, `move_all`. Default none.
    #[serde(default)]
    pub flags: Vec<MbindFlag>,
    /// When the call is made, from the start of the simulation. Default: when the process
    /// is created, before any page is touched.
    #[serde(default)]
    pub at: Option<SimDuration>,
}

/// How a workload's regions get their pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Populate {
    /// First touch: one anonymous fault per page; interleave policies use the VMA offset
    /// (`weighted_interleave_nid`). Default.
    #[default]
    Fault,
    /// Allocated up front one page at a time in process context without an interleave
    /// index (as page-cache and slab allocations are): the per-task cursor
    /// (`weighted_interleave_nodes`).
    Cursor,
    /// Allocated up front by `alloc_pages_bulk_mempolicy` (as vmalloc does):
    /// `alloc_pages_bulk_weighted_interleave`, one call per region.
    Bulk,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            release: None,
            watermark_scale_factor: 10,
            min_free_kbytes: None,
            demotion_enabled: false,
            numa_balancing: 0,
            numa: NumaConfig::default(),
            swap: None,
            zram: None,
            costs: KernelCosts::default(),
            damon: Default::default(),
            ksm: None,
            weighted_interleave: WeightedInterleaveConfig::default(),
            transparent_hugepage: TransparentHugepage::Never,
            lru_gen: false,
        }
    }
}

/// Which generation of the tiering promotion logic (`should_numa_migrate_memory`) runs:
/// the seed-001 patch series step by step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromotionPolicy {
    /// Linux 5.18: every slow-tier page touched after a scan is promoted (MRU).
    Mru,
    /// Plus hot-page selection by hint-fault latency against a fixed `hot_threshold_ms`,
    /// with the free-space bypass ([PATCH 1/3]).
    HotThreshold,
    /// Plus the promotion rate limit on candidates ([PATCH 2/3]).
    RateLimit,
    /// Plus automatic threshold adjustment ([PATCH 3/3], Linux 6.0 and later).
    AutoThreshold,
}

/// `[kernel.numa]`: NUMA-balancing knobs with the kernel's defaults
/// (debugfs `sched/numa_balancing/*`, sysctls).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NumaConfig {
    /// `scan_delay_ms`: delay before the first scan of a new mm. Default 1000.
    pub scan_delay_ms: u32,
    /// `scan_period_min_ms`. Default 1000.
    pub scan_period_min_ms: u32,
    /// `scan_period_max_ms`; also the threshold-adjustment period. Default 60000.
    pub scan_period_max_ms: u32,
    /// `scan_size_mb`: address space made PROT_NONE per scan. Default 256.
    pub scan_size_mb: u32,
    /// `hot_threshold_ms`: hint-fault latency below which a slow-tier page is hot. Default 1000.
    pub hot_threshold_ms: u32,
    /// `numa_balancing_promote_rate_limit_MBps` per target node. Default 65536.
    pub promote_rate_limit_mbps: u64,
    /// Promotion logic generation. Default `auto-threshold` (current kernels).
    pub promotion: PromotionPolicy,
    /// Seed 000's rejected "choice a": promote without checking the target's high
    /// watermark (`migrate_balanced_pgdat`), letting reclaim catch up. Default false
    /// (the kernel's choice b: kswapd keeps promo-watermark headroom).
    pub promote_ignore_watermarks: bool,
    /// Not a kernel knob: divides the kernel's hard-coded constants that a scaled-down
    /// experiment must scale with the rest — the one-second period of the promotion rate limit
    /// (`numa_promotion_rate_limit`) and the 1 GiB floor of `pgdat_free_space_enough`. Such
    /// experiments divide memory, `scan_size_mb` and every time knob above by the same factor,
    /// so access rates per page stay in step with the scanner. Default 1 (the kernel).
    pub model_scale: u32,
}

impl Default for NumaConfig {
    fn default() -> Self {
        NumaConfig {
            scan_delay_ms: 1000,
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60000,
            scan_size_mb: 256,
            hot_threshold_ms: 1000,
            promote_rate_limit_mbps: 65536,
            promotion: PromotionPolicy::AutoThreshold,
            promote_ignore_watermarks: false,
            model_scale: 1,
        }
    }
}

/// A block swap device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapConfig {
    /// Size of the swap area.
    pub capacity: Bytes,
    /// Latency of reading one page back (a major fault). Default 80 us (NVMe).
    #[serde(default = "default_swap_read")]
    pub read_latency: SimDuration,
    /// Sustained write bandwidth for swap-out. Default 1 GB/s.
    #[serde(default = "default_swap_write_bw")]
    pub write_bandwidth: Bandwidth,
}

fn default_swap_read() -> SimDuration {
    SimDuration::from_us(80)
}
fn default_swap_write_bw() -> Bandwidth {
    Bandwidth::from_gb_per_s(1.0)
}

/// A zram device: compressed swap in RAM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZramConfig {
    /// `disksize`: uncompressed capacity.
    pub capacity: Bytes,
    /// Uncompressed / compressed size. Default 3.0 (lzo-rle on typical anonymous memory).
    #[serde(default = "default_ratio")]
    pub compression_ratio: f64,
    /// CPU time to compress one page on swap-out. Default 4 us.
    #[serde(default = "default_compress")]
    pub compress_cost: SimDuration,
    /// CPU time to decompress one page on swap-in. Default 1.5 us.
    #[serde(default = "default_decompress")]
    pub decompress_cost: SimDuration,
}

fn default_ratio() -> f64 {
    3.0
}
fn default_compress() -> SimDuration {
    SimDuration::from_us(4)
}
fn default_decompress() -> SimDuration {
    SimDuration::from_ns(1500)
}

/// CPU costs of kernel paths (assumptions, documented in docs/model.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelCosts {
    /// First-touch anonymous fault: trap, allocation and zeroing. Default 1 us.
    pub anon_fault: SimDuration,
    /// A load's fault on an untouched anonymous page, which maps the shared zero page
    /// (`do_anonymous_page` without a write): trap and PTE only. Default 250 ns.
    pub zero_page_fault: SimDuration,
    /// Fixed overhead of a swap-in fault, on top of the device or decompression time. Default 2 us.
    pub swapin_fault: SimDuration,
    /// A page fault's allocation that misses the fast path (free pages below the low
    /// watermark): `__alloc_pages_slowpath`'s extra work (kswapd wakeups with their
    /// `pgdat_balanced` checks, the retry at the min watermark) and the zone and LRU locks
    /// it then shares with a running kswapd. Charged once per allocating fault below low,
    /// on top of direct reclaim if that follows. Default 1 us.
    pub alloc_slowpath: SimDuration,
    /// Reclaim: per page scanned on an LRU list (rmap walk, accessed-bit check). Default 150 ns.
    pub reclaim_scan_page: SimDuration,
    /// Reclaim: per page unmapped and freed (TLB flush, swap entry). Default 1 us.
    pub reclaim_unmap_page: SimDuration,
    /// Migration of one page (demotion/promotion): unmap, copy, remap. Default 2 us, plus
    /// the copy traffic charged to both nodes.
    pub migrate_page: SimDuration,
    /// NUMA scanner: per PTE visited by `change_prot_numa`. Default 5 ns.
    pub numa_scan_pte: SimDuration,
    /// NUMA scanner: per PTE made PROT_NONE (incl. the TLB flush share). Default 25 ns.
    pub numa_pte_update: SimDuration,
    /// A NUMA hint fault without migration (trap, `do_numa_page`). Default 1 us.
    pub numa_hint_fault: SimDuration,
    /// One sleep–wake cycle of a waiting thread: the timer interrupt, the wakeup, the
    /// return to user space, the thread's check and the syscall back to sleep. A
    /// scheduler tick lands inside it with probability `task_wakeup / tick`, which is how
    /// a mostly sleeping thread gets `task_tick_numa` calls. Default 5 us.
    pub task_wakeup: SimDuration,
    /// A page-cache miss of `read(2)`: the page read from the storage device in a
    /// sequential stream. Default 4 us (4 KiB at 1 GB/s: an assumption for a virtio or
    /// SATA-SSD disk; docs/model.md).
    pub file_read_page: SimDuration,
    /// The copy of one 4 KiB page between the page cache and user space in `read(2)` and
    /// `write(2)`, with the page-cache lookup. Default 500 ns (about 8 GB/s for one core).
    pub file_copy_page: SimDuration,
}

impl Default for KernelCosts {
    fn default() -> Self {
        KernelCosts {
            anon_fault: SimDuration::from_us(1),
            zero_page_fault: SimDuration::from_ns(250),
            swapin_fault: SimDuration::from_us(2),
            alloc_slowpath: SimDuration::from_us(1),
            reclaim_scan_page: SimDuration::from_ns(150),
            reclaim_unmap_page: SimDuration::from_us(1),
            migrate_page: SimDuration::from_us(2),
            numa_scan_pte: SimDuration::from_ns(5),
            numa_pte_update: SimDuration::from_ns(25),
            numa_hint_fault: SimDuration::from_us(1),
            task_wakeup: SimDuration::from_us(5),
            file_read_page: SimDuration::from_us(4),
            file_copy_page: SimDuration::from_ns(500),
        }
    }
}

/// One workload (`[[workloads]]`, selected by `type`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum WorkloadConfig {
    Pmbench(PmbenchConfig),
    Stream(StreamConfig),
    Mlc(MlcConfig),
    /// PARSEC3/SPLASH-2X-shaped workload for the DAMON evaluation.
    Parsec(crate::damon_workloads::ParsecConfig),
    /// Synthetic workload with known hot regions.
    Hotregions(crate::damon_workloads::HotRegionsConfig),
    #[serde(rename = "vm_guest")]
    VmGuest(crate::ksm::VmGuestConfig),
    Xsbench(XsbenchConfig),
    Trace(TraceConfig),
    /// Regions with placement, access patterns at fixed rates, idle filler and KSM
    /// content: the workload `tiermem workload run` also runs on a live host.
    Synthetic(crate::synthetic::SyntheticConfig),
}

impl WorkloadConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadConfig::Pmbench(_) => "pmbench",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Mlc(_) => "mlc",
            WorkloadConfig::Parsec(_) => "parsec",
            WorkloadConfig::Hotregions(_) => "hotregions",
            WorkloadConfig::VmGuest(_) => "vm_guest",
            WorkloadConfig::Xsbench(_) => "xsbench",
            WorkloadConfig::Trace(_) => "trace",
            WorkloadConfig::Synthetic(_) => "synthetic",
        }
    }
}

/// pmbench access patterns (`-p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PmbenchPattern {
    Uniform,
    NormalIh,
    Normal,
    Pareto,
    Linear,
}

/// pmbench (`workload-models.md` §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PmbenchConfig {
    /// Name in reports. Default `pmbench<i>`.
    pub name: Option<String>,
    /// Independent processes (each its own address space). Default 1.
    pub processes: u32,
    /// Threads per process (`-j`). Default 1.
    pub threads: u32,
    /// `-m`: mapped size per process. Default 256 MiB.
    pub mapsize: Bytes,
    /// `-s`: accessed prefix of the map. Default: the whole map.
    pub setsize: Option<Bytes>,
    /// `-p`. Default uniform.
    pub pattern: PmbenchPattern,
    /// `-e`: σ in pages for `normal`, α for `pareto`. Default 1.00001 (normal) / 1.161 (pareto).
    pub shape: Option<f64>,
    /// Stride in pages for `linear`. Default 1.
    pub stride: u64,
    /// `-r`: read percentage 0..100. Default 50.
    pub read_ratio: u32,
    /// `-i`: write the whole map sequentially before the run. Default false.
    pub initialize: bool,
    /// `-c`: no warm-up. Default false (warm-up draws run first, untimed).
    pub cold: bool,
    /// Benchmark run length. Default: until the simulation ends.
    pub duration: Option<SimDuration>,
    /// CPU nodes the processes run on, round-robin. Default: the first node with CPUs.
    pub cpu_nodes: Vec<NodeId>,
    /// Task memory policy of each process. Default: local.
    pub policy: MemPolicy,
    /// CPU time per access (pattern + timer). Default: `machine.cpu_per_access`.
    pub cpu_per_access: Option<SimDuration>,
    /// Start time of the workload. Default 0.
    pub start: SimDuration,
}

impl Default for PmbenchConfig {
    fn default() -> Self {
        PmbenchConfig {
            name: Default::default(),
            processes: 1,
            threads: 1,
            mapsize: Bytes::mib(256),
            setsize: Default::default(),
            pattern: PmbenchPattern::Uniform,
            shape: Default::default(),
            stride: 1,
            read_ratio: 50,
            initialize: Default::default(),
            cold: Default::default(),
            duration: Default::default(),
            cpu_nodes: Default::default(),
            policy: Default::default(),
            cpu_per_access: Default::default(),
            start: Default::default(),
        }
    }
}

fn one() -> u32 {
    1
}

/// STREAM (`workload-models.md` §2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConfig {
    pub name: Option<String>,
    /// `STREAM_ARRAY_SIZE`: elements (doubles) per array. Default 10,000,000.
    pub array_elements: u64,
    /// OpenMP threads. Default 1.
    pub threads: u32,
    /// `NTIMES`. Default 10.
    pub ntimes: u32,
    /// CPU node the threads run on. Default: the first node with CPUs.
    pub cpu_node: Option<NodeId>,
    /// Task memory policy. Default: local.
    pub policy: MemPolicy,
    /// Lines in flight per thread (memory-level parallelism). Default 12.
    pub mlp: u32,
    /// Non-temporal stores (no RFO read for destination lines). Default false.
    pub nt_stores: bool,
    /// CPU time per cache line processed. Default 1 ns.
    pub cpu_per_line: SimDuration,
    pub start: SimDuration,
    /// VMA policies of the arrays (`mbind`), e.g. seed 002's targeted weights. Default none.
    pub mbind: Vec<MbindConfig>,
    /// How the arrays get their pages. Default `fault` (first touch).
    pub populate: Populate,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            name: Default::default(),
            array_elements: 10_000_000,
            threads: 1,
            ntimes: 10,
            cpu_node: Default::default(),
            policy: Default::default(),
            mlp: 12,
            nt_stores: Default::default(),
            cpu_per_line: SimDuration::from_ns(1),
            start: Default::default(),
            mbind: Default::default(),
            populate: Default::default(),
        }
    }
}

/// MLC traffic types (`-R`, `-Wn`), `workload-models.md` §3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MlcTraffic {
    R,
    W2,
    W3,
    W5,
    W6,
    W7,
    W8,
    W10,
    W11,
}

/// Intel MLC-style loaded-latency / bandwidth generator (`workload-models.md` §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MlcConfig {
    pub name: Option<String>,
    /// Traffic type. Default R (reads only).
    pub traffic: MlcTraffic,
    /// Bandwidth-generating threads. Default 8.
    pub bw_threads: u32,
    /// Inject delay between requests, in CPU cycles (`-d`). Default 0.
    pub delay_cycles: u64,
    /// CPU clock for the delay. Default 2.5 GHz.
    pub cpu_ghz: f64,
    /// Private buffer per bandwidth thread (`-b`). Default 100,000 KiB.
    pub buffer: Bytes,
    /// Lines in flight per bandwidth thread. Default 12.
    pub mlp: u32,
    /// Run the dependent-load latency thread (`-T` turns it off). Default true.
    pub latency_thread: bool,
    /// Buffer of the latency thread. Default 200 MB.
    pub latency_buffer: Bytes,
    /// CPU node of all threads. Default: the first node with CPUs.
    pub cpu_node: Option<NodeId>,
    /// Memory policy of the buffers. Default: local.
    pub policy: MemPolicy,
    /// Measurement length after the buffers are initialised. Default: until the end.
    pub duration: Option<SimDuration>,
    pub start: SimDuration,
    /// VMA policies of the buffers (`mbind`). Default none.
    pub mbind: Vec<MbindConfig>,
    /// How the buffers get their pages. Default `fault` (first touch).
    pub populate: Populate,
}

impl Default for MlcConfig {
    fn default() -> Self {
        MlcConfig {
            name: Default::default(),
            traffic: MlcTraffic::R,
            bw_threads: 8,
            delay_cycles: Default::default(),
            cpu_ghz: 2.5,
            buffer: Bytes(100_000 * 1024),
            mlp: 12,
            latency_thread: true,
            latency_buffer: Bytes(200_000_000),
            cpu_node: Default::default(),
            policy: Default::default(),
            duration: Default::default(),
            start: Default::default(),
            mbind: Default::default(),
            populate: Default::default(),
        }
    }
}

/// XSBench problem sizes (`-s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XsbenchSize {
    Small,
    Large,
    Xl,
    Xxl,
}

impl XsbenchSize {
    /// (`n_isotopes`, `n_gridpoints`) as XSBench's `io.c` sets them.
    pub fn dims(self) -> (u64, u64) {
        match self {
            XsbenchSize::Small => (68, 11_303),
            XsbenchSize::Large => (355, 11_303),
            XsbenchSize::Xl => (355, 238_847),
            XsbenchSize::Xxl => (355, 501_578),
        }
    }
}

/// XSBench, unionized grid, history-style lookups (`workload-models.md` §4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct XsbenchConfig {
    pub name: Option<String>,
    /// `-s`. Default `large`.
    pub size: XsbenchSize,
    /// `-g`: grid points per nuclide, overriding the size's (a smaller problem with the
    /// same access pattern). Default: the size's.
    pub gridpoints: Option<u64>,
    /// OpenMP threads (`-t`). Default 1.
    pub threads: u32,
    /// Lookups in total, split evenly over the threads (`-l`). Default 1,000,000.
    pub lookups: u64,
    /// Levels of the energy binary search that stay in cache. Default 10.
    pub cached_levels: u32,
    /// CPU time per nuclide of a lookup (micro cross-section interpolation). Default 10 ns.
    pub cpu_per_nuclide: SimDuration,
    /// CPU node of the threads. Default: the first node with CPUs.
    pub cpu_node: Option<NodeId>,
    /// Task memory policy. Default: local.
    pub policy: MemPolicy,
    /// VMA policies of the grids (`energy`, `index`, `nuclide`). Default none.
    pub mbind: Vec<MbindConfig>,
    /// How the grids get their pages. Default `fault` (first touch by the init loop).
    pub populate: Populate,
    pub start: SimDuration,
}

impl Default for XsbenchConfig {
    fn default() -> Self {
        XsbenchConfig {
            name: Default::default(),
            size: XsbenchSize::Large,
            gridpoints: Default::default(),
            threads: 1,
            lookups: 1_000_000,
            cached_levels: 10,
            cpu_per_nuclide: SimDuration::from_ns(10),
            cpu_node: Default::default(),
            policy: Default::default(),
            mbind: Default::default(),
            populate: Default::default(),
            start: Default::default(),
        }
    }
}

fn default_ghz() -> f64 {
    2.5
}

/// Replay of a recorded memory trace (`tiermem trace import|record`, `docs/traces.md`).
///
/// Each process gets the trace's touched address ranges as VMAs; each trace thread becomes
/// a simulated thread. Time between accesses comes from the trace: instructions × `cpi` /
/// `cpu_ghz` for instruction-indexed traces, the recorded nanoseconds for timed ones, times
/// `time_scale`; the memory latency of each access is added by the timing model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Name in reports. Default `trace<i>`.
    #[serde(default)]
    pub name: Option<String>,
    /// The trace file (tiermem format), relative to the working directory.
    pub file: String,
    /// Independent copies of the traced program (each its own address space). Default 1.
    #[serde(default = "one")]
    pub processes: u32,
    /// Cycles per instruction for instruction-indexed traces. Default 1.0
    /// (`workload-models.md` §8).
    #[serde(default = "default_cpi")]
    pub cpi: f64,
    /// CPU clock turning cycles into time. Default 2.5 GHz.
    #[serde(default = "default_ghz")]
    pub cpu_ghz: f64,
    /// Multiplier of the time between accesses (0.5 replays twice as densely). Default 1.0.
    #[serde(default = "default_time_scale")]
    pub time_scale: f64,
    /// Passes over the trace; 0 repeats until the simulation ends. Default 1.
    #[serde(default = "one")]
    pub loops: u32,
    /// Lines in flight per thread (memory-level parallelism). Default 1.
    #[serde(default = "one")]
    pub mlp: u32,
    /// CPU node of the threads. Default: the first node with CPUs.
    #[serde(default)]
    pub cpu_node: Option<NodeId>,
    /// Task memory policy. Default: local.
    #[serde(default)]
    pub policy: MemPolicy,
    #[serde(default)]
    pub start: SimDuration,
}

fn default_cpi() -> f64 {
    1.0
}
fn default_time_scale() -> f64 {
    1.0
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

impl SimConfig {
    /// The name a controller's `targets.names` selects a workload by: a synthetic
    /// workload's `name` (default `synthetic<i>`), else the workload's type and index
    /// (`pmbench0`).
    pub fn workload_target_name(&self, i: usize) -> String {
        match &self.workloads[i] {
            WorkloadConfig::Synthetic(s) => {
                s.name.clone().unwrap_or_else(|| format!("synthetic{i}"))
            }
            w => format!("{}{i}", w.kind()),
        }
    }

    /// The workloads a controller's selector picks (indices), by its `names`.
    pub fn selected_workloads(&self, sel: &crate::controllers::TargetSelector) -> Vec<usize> {
        (0..self.workloads.len())
            .filter(|&i| {
                let name = self.workload_target_name(i);
                sel.names
                    .iter()
                    .any(|p| crate::controllers::glob_match(p, &name))
            })
            .collect()
    }

    /// A controller's target selector in a simulation: workloads by name, every name
    /// matching one; no host pids or cgroups. `key` is the selector's config path.
    fn check_selector(
        &self,
        sel: &crate::controllers::TargetSelector,
        key: &str,
    ) -> Result<(), ConfigError> {
        for (what, empty) in [
            ("pids", sel.pids.is_empty()),
            ("cgroups", sel.cgroups.is_empty()),
        ] {
            if !empty {
                return Err(ConfigError::invalid(
                    format!("{key}.{what}"),
                    "a simulation has no host processes: select workloads by `names` (a synthetic workload's name, else its type and index, e.g. \"pmbench0\")",
                ));
            }
        }
        if let Some(p) = sel.names.iter().find(|p| {
            !(0..self.workloads.len())
                .any(|i| crate::controllers::glob_match(p, &self.workload_target_name(i)))
        }) {
            let names: Vec<String> = (0..self.workloads.len())
                .map(|i| self.workload_target_name(i))
                .collect();
            return Err(ConfigError::invalid(
                format!("{key}.names"),
                format!(
                    "{p:?} matches no workload (workloads: {})",
                    names.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// `[reclaim]` in a simulation: `processes` as on a host (its own rules, workloads by
    /// name); `cgroups` (`memory.reclaim` writes) has no simulated counterpart.
    fn check_reclaim(&self) -> Result<(), ConfigError> {
        let Some(r) = &self.reclaim else {
            return Ok(());
        };
        if !r.cgroups.is_empty() {
            return Err(ConfigError::invalid(
                "reclaim.cgroups",
                "cgroup memory.reclaim writes are not simulated (a simulation has no cgroups); use [reclaim.processes]",
            ));
        }
        if let Some(p) = &r.processes {
            p.check()?;
            self.check_selector(&p.targets, "reclaim.processes.targets")?;
        }
        Ok(())
    }

    /// `[tiering]` in a simulation: the section's own rules, then what a simulation can
    /// select (workloads by name; no host pids or cgroups), its nodes, and no NUMA
    /// balancing beside it (the agent refuses the same).
    fn check_tiering(&self, nr_nodes: usize) -> Result<(), ConfigError> {
        let Some(t) = &self.tiering else {
            return Ok(());
        };
        if self.interval.as_ms() < 10 {
            return Err(ConfigError::invalid("interval", "must be at least 10ms"));
        }
        t.check()?;
        self.check_selector(&t.targets, "tiering.targets")?;
        for (key, list) in [
            ("tiering.fast_nodes", &t.fast_nodes),
            ("tiering.slow_nodes", &t.slow_nodes),
        ] {
            if let Some(n) = list.iter().find(|&&n| n as usize >= nr_nodes) {
                return Err(ConfigError::invalid(
                    key,
                    format!("node {n} does not exist (the machine has {nr_nodes} nodes)"),
                ));
            }
        }
        if self.kernel.numa_balancing != 0 {
            return Err(ConfigError::invalid(
                "tiering",
                "the user-space tiering controller conflicts with NUMA balancing (kernel.numa_balancing would migrate the targets' pages too): set kernel.numa_balancing = 0 or drop [tiering]",
            ));
        }
        Ok(())
    }

    /// Parse and validate a config from TOML text. `origin` names the file in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<SimConfig, ConfigError> {
        let value = resolve_toml(text, origin)?;
        SimConfig::from_value(&value, origin)
    }

    /// Read, parse and validate a config file.
    pub fn from_file(path: &std::path::Path) -> Result<(SimConfig, toml::Value), ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::whole_file(&origin, format!("cannot read: {e}")))?;
        let value = resolve_toml(&text, &origin)?;
        let cfg = SimConfig::from_value(&value, &origin)?;
        Ok((cfg, value))
    }

    /// Type and validate a resolved TOML value (presets already expanded).
    pub fn from_value(value: &toml::Value, origin: &str) -> Result<SimConfig, ConfigError> {
        let machine_v = value.get("machine").ok_or_else(|| {
            ConfigError::invalid(
                "machine",
                "missing: name a preset (machine = \"small\") or give a [machine] table",
            )
            .in_file(origin)
        })?;
        let top: TopLevel = typed(value.clone(), "").map_err(|e| e.in_file(origin))?;
        let machine: MachineConfig =
            typed(machine_v.clone(), "machine").map_err(|e| e.in_file(origin))?;
        let mut workloads = Vec::new();
        if let Some(ws) = value.get("workloads") {
            let arr = ws.as_array().ok_or_else(|| {
                ConfigError::invalid("workloads", "must be an array of tables ([[workloads]])")
                    .in_file(origin)
            })?;
            for (i, w) in arr.iter().enumerate() {
                workloads.push(parse_workload(w, i).map_err(|e| e.in_file(origin))?);
            }
        }
        let cfg = SimConfig {
            seed: top.seed,
            duration: top.duration,
            machine,
            kernel: top.kernel,
            sim: top.sim,
            workloads,
            interval: top.interval,
            tiering: top.tiering,
            reclaim: top.reclaim,
        };
        cfg.validate().map_err(|e| e.in_file(origin))?;
        Ok(cfg)
    }

    /// Cross-field checks that serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let topo = crate::topology::Topology::new(&self.machine)?;
        let n = topo.nr_nodes();
        if self.duration.0 == 0 {
            return Err(ConfigError::invalid("duration", "must be positive"));
        }
        self.check_tiering(n)?;
        self.check_reclaim()?;
        self.check_kernel(n)?;
        self.check_engine()?;
        let chk = NodeChecks { topo: &topo, n };
        for (i, w) in self.workloads.iter().enumerate() {
            let key = |f: &str| {
                if f.is_empty() {
                    format!("workloads[{i}]")
                } else {
                    format!("workloads[{i}].{f}")
                }
            };
            match w {
                WorkloadConfig::Pmbench(p) => check_pmbench(p, &key, &chk)?,
                WorkloadConfig::Stream(s) => check_stream(s, &key, &chk, w.regions())?,
                WorkloadConfig::Mlc(m) => check_mlc(m, &key, &chk, w.regions())?,
                WorkloadConfig::Xsbench(x) => check_xsbench(x, &key, &chk, w.regions())?,
                WorkloadConfig::Parsec(p) => {
                    p.validate()
                        .map_err(|(k, m)| ConfigError::invalid(key(&k), m))?;
                    if let Some(c) = p.cpu_node {
                        chk.node(key("cpu_node"), c, true)?;
                    }
                }
                WorkloadConfig::Hotregions(h) => {
                    h.validate()
                        .map_err(|(k, m)| ConfigError::invalid(key(&k), m))?;
                    if let Some(c) = h.cpu_node {
                        chk.node(key("cpu_node"), c, true)?;
                    }
                }
                WorkloadConfig::VmGuest(g) => {
                    g.validate(&format!("workloads[{i}]"))?;
                    for (j, c) in g.cpu_nodes.iter().enumerate() {
                        chk.node(key(&format!("cpu_nodes[{j}]")), *c, true)?;
                    }
                }
                WorkloadConfig::Trace(t) => check_trace(t, &key, &chk)?,
                WorkloadConfig::Synthetic(s) => {
                    s.validate(n)
                        .map_err(|(k, m)| ConfigError::invalid(key(&k), m))?;
                    chk.placement(&key, s.cpu_node, &s.policy, &[], &[])?;
                }
            }
        }
        Ok(())
    }

    /// `[kernel]`: ranges and what the simulator does not model.
    fn check_kernel(&self, n: usize) -> Result<(), ConfigError> {
        let k = &self.kernel;
        if k.transparent_hugepage != TransparentHugepage::Never {
            return Err(ConfigError::invalid(
                "kernel.transparent_hugepage",
                "the simulator allocates base (4 KiB) pages only: only \"never\" is modelled",
            ));
        }
        if k.lru_gen {
            return Err(ConfigError::invalid(
                "kernel.lru_gen",
                "the multi-generational LRU is not modelled (the simulator reclaims from the classic active/inactive lists)",
            ));
        }
        if !(1..=3000).contains(&k.watermark_scale_factor) {
            return Err(ConfigError::invalid(
                "kernel.watermark_scale_factor",
                format!("must be within 1..3000 (got {})", k.watermark_scale_factor),
            ));
        }
        if k.numa_balancing > 3 {
            return Err(ConfigError::invalid(
                "kernel.numa_balancing",
                format!(
                    "is a bit field: 0 off, 1 NORMAL, 2 MEMORY_TIERING, 3 both (got {})",
                    k.numa_balancing
                ),
            ));
        }
        let nm = &k.numa;
        if nm.scan_size_mb == 0
            || nm.scan_period_min_ms == 0
            || nm.scan_period_max_ms < nm.scan_period_min_ms
        {
            return Err(ConfigError::invalid(
                "kernel.numa",
                "scan_size_mb and scan_period_min_ms must be positive and scan_period_max_ms >= scan_period_min_ms",
            ));
        }
        if nm.hot_threshold_ms == 0 {
            return Err(ConfigError::invalid(
                "kernel.numa.hot_threshold_ms",
                "must be positive",
            ));
        }
        if !(1..=1000).contains(&nm.model_scale) {
            return Err(ConfigError::invalid(
                "kernel.numa.model_scale",
                format!("must be within 1..1000 (got {})", nm.model_scale),
            ));
        }
        if let Some(m) = k.min_free_kbytes {
            if m < 128 {
                return Err(ConfigError::invalid(
                    "kernel.min_free_kbytes",
                    "must be at least 128",
                ));
            }
        }
        if let Some(ksm) = &k.ksm {
            ksm.validate()?;
        }
        if let Some(z) = &k.zram {
            if !(z.compression_ratio >= 1.0 && z.compression_ratio <= 64.0) {
                return Err(ConfigError::invalid(
                    "kernel.zram.compression_ratio",
                    "must be within 1.0..64.0",
                ));
            }
        }
        k.damon.validate(n, self.workloads.len())?;
        self.kernel
            .weighted_interleave
            .validate(n)
            .map_err(|(k, m)| ConfigError::invalid(format!("kernel.weighted_interleave.{k}"), m))?;
        Ok(())
    }

    /// `[sim]`: the tick, the sampling interval and the engine.
    fn check_engine(&self) -> Result<(), ConfigError> {
        let tick = self.sim.tick;
        if tick < SimDuration::from_us(10) || tick > SimDuration::from_ms(100) {
            return Err(ConfigError::invalid(
                "sim.tick",
                "must be within 10us..100ms",
            ));
        }
        if self.sim.sample_interval < tick {
            return Err(ConfigError::invalid(
                "sim.sample_interval",
                "must be at least sim.tick",
            ));
        }
        if self.sim.engine == EngineKind::Events && self.kernel.ksm.is_some() {
            return Err(ConfigError::invalid(
                "sim.engine",
                "\"events\" does not model KSM (merging reads the page contents that only \
                 simulated accesses write); use \"access\", or \"auto\" to fall back to it",
            ));
        }
        Ok(())
    }
}

/// The node, policy and mbind checks every workload type shares.
struct NodeChecks<'a> {
    topo: &'a crate::topology::Topology,
    n: usize,
}

impl NodeChecks<'_> {
    /// `id` is a node of the machine (with CPUs when threads run there).
    fn node(&self, key: String, id: NodeId, need_cpus: bool) -> Result<(), ConfigError> {
        let n = self.n;
        if id.idx() >= n {
            return Err(ConfigError::invalid(
                key,
                format!(
                    "node {} does not exist (the machine has nodes 0..{})",
                    id.0,
                    n - 1
                ),
            ));
        }
        if need_cpus && !self.topo.nodes[id.idx()].has_cpus() {
            return Err(ConfigError::invalid(
                key,
                format!("node {} has no CPUs to run threads on", id.0),
            ));
        }
        Ok(())
    }

    /// A workload's placement: its CPU node (if any), task policy and `mbind`s.
    fn placement(
        &self,
        key: &dyn Fn(&str) -> String,
        cpu_node: Option<NodeId>,
        policy: &MemPolicy,
        mbind: &[MbindConfig],
        regions: &[String],
    ) -> Result<(), ConfigError> {
        if let Some(c) = cpu_node {
            self.node(key("cpu_node"), c, true)?;
        }
        self.policy(key("policy"), policy)?;
        self.mbind(&key(""), mbind, regions)
    }

    fn policy(&self, key: String, p: &MemPolicy) -> Result<(), ConfigError> {
        p.validate(self.n)
            .map_err(|m| ConfigError::invalid(key.clone(), m))
    }

    /// Each `mbind` names a region of the workload and a valid policy.
    fn mbind(
        &self,
        prefix: &str,
        list: &[MbindConfig],
        regions: &[String],
    ) -> Result<(), ConfigError> {
        for (j, m) in list.iter().enumerate() {
            let k = format!("{prefix}.mbind[{j}]");
            let hits = regions
                .iter()
                .filter(|r| region_matches(&m.region, r))
                .count();
            if hits == 0 {
                return Err(ConfigError::invalid(
                    format!("{k}.region"),
                    format!(
                        "no region named {:?} (this workload has {})",
                        m.region,
                        regions.join(", ")
                    ),
                ));
            }
            self.policy(format!("{k}.policy"), &m.policy)?;
        }
        Ok(())
    }
}

/// `Ok` when `ok`, else the error for `key`.
fn ensure(ok: bool, key: String, message: impl Into<String>) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::invalid(key, message))
    }
}

/// `value` within `lo..=hi`, else the error workload checks give ("must be within lo..hi").
fn within(key: String, value: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            format!("must be within {lo}..{hi}"),
        ))
    }
}

/// `[[workloads]]` of type `pmbench`.
fn check_pmbench(
    p: &PmbenchConfig,
    key: &dyn Fn(&str) -> String,
    chk: &NodeChecks,
) -> Result<(), ConfigError> {
    within(key("processes"), p.processes.into(), 1, 4096)?;
    within(key("threads"), p.threads.into(), 1, 1024)?;
    ensure(
        p.mapsize.0 >= crate::units::PAGE_SIZE,
        key("mapsize"),
        "must be at least one page (4096)",
    )?;
    ensure(
        p.mapsize.pages_ceil().0 <= u32::MAX as u64 / 2,
        key("mapsize"),
        "is too large (at most 8TiB)",
    )?;
    if let Some(s) = p.setsize {
        ensure(
            s <= p.mapsize && s.0 >= crate::units::PAGE_SIZE,
            key("setsize"),
            "must be between one page and mapsize",
        )?;
    }
    ensure(
        p.read_ratio <= 100,
        key("read_ratio"),
        format!("is a percentage 0..100 (got {})", p.read_ratio),
    )?;
    if let Some(s) = p.shape {
        ensure(s > 0.0 && s.is_finite(), key("shape"), "must be positive")?;
    }
    ensure(p.stride > 0, key("stride"), "must be positive")?;
    for (j, c) in p.cpu_nodes.iter().enumerate() {
        chk.node(key(&format!("cpu_nodes[{j}]")), *c, true)?;
    }
    chk.policy(key("policy"), &p.policy)?;
    Ok(())
}

/// `[[workloads]]` of type `stream`.
fn check_stream(
    s: &StreamConfig,
    key: &dyn Fn(&str) -> String,
    chk: &NodeChecks,
    regions: Vec<String>,
) -> Result<(), ConfigError> {
    ensure(
        s.array_elements >= 512,
        key("array_elements"),
        "must be at least 512 (one page)",
    )?;
    ensure(
        s.array_elements <= 1u64 << 36,
        key("array_elements"),
        "is too large",
    )?;
    within(key("threads"), s.threads.into(), 1, 1024)?;
    ensure(
        s.ntimes >= 2,
        key("ntimes"),
        "must be at least 2 (the first iteration is discarded)",
    )?;
    within(key("mlp"), s.mlp.into(), 1, 256)?;
    chk.placement(key, s.cpu_node, &s.policy, &s.mbind, &regions)
}

/// `[[workloads]]` of type `mlc`.
fn check_mlc(
    m: &MlcConfig,
    key: &dyn Fn(&str) -> String,
    chk: &NodeChecks,
    regions: Vec<String>,
) -> Result<(), ConfigError> {
    ensure(
        m.bw_threads <= 1024,
        key("bw_threads"),
        "must be at most 1024",
    )?;
    ensure(
        m.bw_threads > 0 || m.latency_thread,
        key("bw_threads"),
        "no threads: set bw_threads > 0 or latency_thread = true",
    )?;
    ensure(
        m.cpu_ghz > 0.1 && m.cpu_ghz < 10.0,
        key("cpu_ghz"),
        "must be within 0.1..10",
    )?;
    within(key("mlp"), m.mlp.into(), 1, 256)?;
    ensure(
        m.buffer.0 >= crate::units::PAGE_SIZE && m.latency_buffer.0 >= crate::units::PAGE_SIZE,
        key("buffer"),
        "buffers must be at least one page",
    )?;
    chk.placement(key, m.cpu_node, &m.policy, &m.mbind, &regions)
}

/// `[[workloads]]` of type `xsbench`.
fn check_xsbench(
    x: &XsbenchConfig,
    key: &dyn Fn(&str) -> String,
    chk: &NodeChecks,
    regions: Vec<String>,
) -> Result<(), ConfigError> {
    within(key("threads"), x.threads.into(), 1, 1024)?;
    ensure(
        x.lookups >= x.threads as u64,
        key("lookups"),
        "must be at least one per thread",
    )?;
    if let Some(g) = x.gridpoints {
        within(key("gridpoints"), g, 16, 10_000_000)?;
    }
    let (iso, gp) = x.size.dims();
    let gp = x.gridpoints.unwrap_or(gp);
    // The index grid (n_iso² · n_gp ints) dominates; the page table is u32-indexed.
    ensure(
        iso * iso * gp * 4 / crate::units::PAGE_SIZE <= u32::MAX as u64 / 2,
        key("size"),
        "the grids are too large to simulate (at most 8TiB)",
    )?;
    ensure(
        x.cached_levels <= 40,
        key("cached_levels"),
        "must be at most 40",
    )?;
    chk.placement(key, x.cpu_node, &x.policy, &x.mbind, &regions)
}

/// `[[workloads]]` of type `trace`.
fn check_trace(
    t: &TraceConfig,
    key: &dyn Fn(&str) -> String,
    chk: &NodeChecks,
) -> Result<(), ConfigError> {
    ensure(!t.file.is_empty(), key("file"), "must name a trace file")?;
    within(key("processes"), t.processes.into(), 1, 4096)?;
    for (f, v, lo, hi) in [
        ("cpi", t.cpi, 0.01, 1000.0),
        ("cpu_ghz", t.cpu_ghz, 0.1, 10.0),
        ("time_scale", t.time_scale, 0.0, 1e6),
    ] {
        ensure(
            v >= lo && v <= hi,
            key(f),
            format!("must be within {lo}..{hi} (got {v})"),
        )?;
    }
    within(key("mlp"), t.mlp.into(), 1, 256)?;
    chk.placement(key, t.cpu_node, &t.policy, &[], &[])
}

fn parse_workload(v: &toml::Value, i: usize) -> Result<WorkloadConfig, ConfigError> {
    let prefix = format!("workloads[{i}]");
    let table = v
        .as_table()
        .ok_or_else(|| ConfigError::invalid(prefix.clone(), "must be a table"))?;
    let ty = table.get("type").and_then(|t| t.as_str()).ok_or_else(|| {
        ConfigError::invalid(
            format!("{prefix}.type"),
            "missing: one of \"pmbench\", \"stream\", \"mlc\", \"xsbench\", \"parsec\", \"hotregions\", \"vm_guest\", \"trace\", \"synthetic\"",
        )
    })?;
    let mut rest = table.clone();
    rest.remove("type");
    let rest = toml::Value::Table(rest);
    Ok(match ty {
        "pmbench" => WorkloadConfig::Pmbench(typed(rest, &prefix)?),
        "stream" => WorkloadConfig::Stream(typed(rest, &prefix)?),
        "mlc" => WorkloadConfig::Mlc(typed(rest, &prefix)?),
        "parsec" => WorkloadConfig::Parsec(typed(rest, &prefix)?),
        "hotregions" => WorkloadConfig::Hotregions(typed(rest, &prefix)?),
        "vm_guest" => WorkloadConfig::VmGuest(typed(rest, &prefix)?),
        "xsbench" => WorkloadConfig::Xsbench(typed(rest, &prefix)?),
        "trace" => WorkloadConfig::Trace(typed(rest, &prefix)?),
        "synthetic" => WorkloadConfig::Synthetic(typed(rest, &prefix)?),
        other => {
            return Err(ConfigError::invalid(
                format!("{prefix}.type"),
                format!(
                    "unknown workload type {other:?}: expected \"pmbench\", \"stream\", \"mlc\", \"xsbench\", \"parsec\", \"hotregions\", \"vm_guest\", \"trace\" or \"synthetic\""
                ),
            ))
        }
    })
}

/// Does a region pattern (`a`, `buf*`) match a region name?
pub fn region_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

impl WorkloadConfig {
    /// The names of the workload's regions (VMAs), in address order.
    pub fn regions(&self) -> Vec<String> {
        match self {
            WorkloadConfig::Pmbench(_) => vec!["map".into()],
            WorkloadConfig::Stream(_) => vec!["a".into(), "b".into(), "c".into()],
            WorkloadConfig::Mlc(m) => {
                let mut v: Vec<String> = (0..m.bw_threads).map(|t| format!("buf{t}")).collect();
                if m.latency_thread {
                    v.push("latbuf".into());
                }
                v
            }
            WorkloadConfig::Xsbench(_) => {
                vec!["energy".into(), "index".into(), "nuclide".into()]
            }
            WorkloadConfig::Parsec(_) | WorkloadConfig::Hotregions(_) => {
                vec!["heap".into(), "mmap".into(), "stack".into()]
            }
            // Guests map their memory themselves, traces from their address ranges: no
            // mbind regions.
            WorkloadConfig::VmGuest(_) | WorkloadConfig::Trace(_) => Vec::new(),
            WorkloadConfig::Synthetic(s) => s.regions.iter().map(|r| r.name.clone()).collect(),
        }
    }
}

impl WeightedInterleaveConfig {
    /// Checks against the machine; errors are (key, message).
    pub fn validate(&self, nr_nodes: usize) -> Result<(), (String, String)> {
        let sem = self.semantics();
        if sem == WeightSemantics::V6_9 && self.auto.is_some() {
            return Err((
                "auto".into(),
                "6.9 semantics have no `auto` file (it appeared in 6.16)".into(),
            ));
        }
        if let Some(w) = &self.weights {
            if w.len() != nr_nodes {
                return Err((
                    "weights".into(),
                    format!(
                        "one weight per node: the machine has {nr_nodes} nodes, {} weights given",
                        w.len()
                    ),
                ));
            }
            if sem == WeightSemantics::V6_16 {
                if let Some(j) = w.iter().position(|&x| x == 0) {
                    return Err((
                        format!("weights[{j}]"),
                        "6.16+ weights are 1..255; writing 0 is EINVAL (use semantics = \"6.9\" for 0 = default)".into(),
                    ));
                }
                if self.auto == Some(true) {
                    return Err((
                        "auto".into(),
                        "auto = true recomputes the weights from bandwidth, replacing the `weights` given; set one or the other".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Deserialize `value` into `T`, reporting the dotted key path of any error under `prefix`.
pub fn typed<T: DeserializeOwned>(value: toml::Value, prefix: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let key = match (prefix.is_empty(), inner == ".") {
            (true, _) => {
                if inner == "." {
                    String::new()
                } else {
                    inner
                }
            }
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}.{inner}"),
        };
        let key = key.replace(".[", "[");
        // The TOML deserializer appends "\nin `table`"; the key path already says where.
        let msg = e.into_inner().to_string();
        let msg = msg
            .split("\nin `")
            .next()
            .unwrap_or(&msg)
            .trim_end()
            .to_string();
        ConfigError::invalid(key, msg)
    })
}

/// Parse TOML text and expand presets (`machine = "name"` or `[machine] preset = "name"`
/// with overriding keys). The result is the resolved config value.
pub fn resolve_toml(text: &str, origin: &str) -> Result<toml::Value, ConfigError> {
    let mut value = parse_toml(text, origin)?;
    expand_machine_preset(&mut value).map_err(|e| e.in_file(origin))?;
    Ok(value)
}

/// Parse TOML text; a syntax error names the file, line and column.
pub fn parse_toml(text: &str, origin: &str) -> Result<toml::Value, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let (line, col) = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                (
                    before.matches('\n').count() + 1,
                    before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
                )
            })
            .unwrap_or((0, 0));
        ConfigError {
            file: Some(origin.to_string()),
            key: String::new(),
            message: format!(
                "TOML syntax error at line {line}, column {col}: {}",
                e.message()
            ),
        }
    })
}

/// Replace `machine = "NAME"` (or a `[machine]` table with `preset = "NAME"` and
/// overrides) with the preset's table.
pub fn expand_machine_preset(value: &mut toml::Value) -> Result<(), ConfigError> {
    let Some(table) = value.as_table_mut() else {
        return Err(ConfigError::invalid("", "the config must be a TOML table"));
    };
    let Some(machine) = table.get_mut("machine") else {
        return Ok(());
    };
    let (name, overrides) = match machine {
        toml::Value::String(s) => (s.clone(), None),
        toml::Value::Table(t) => match t.remove("preset") {
            Some(toml::Value::String(s)) => (s, Some(t.clone())),
            Some(_) => {
                return Err(ConfigError::invalid(
                    "machine.preset",
                    "must be a preset name (string)",
                ))
            }
            None => return Ok(()),
        },
        _ => {
            return Err(ConfigError::invalid(
                "machine",
                "must be a preset name or a [machine] table",
            ))
        }
    };
    let mut base = presets::machine_value(&name).ok_or_else(|| {
        ConfigError::invalid(
            "machine",
            format!(
                "unknown machine preset {name:?}; available: {}",
                presets::machine_names().join(", ")
            ),
        )
    })?;
    if let Some(over) = overrides {
        merge(&mut base, toml::Value::Table(over));
    }
    *machine = base;
    Ok(())
}

/// Deep-merge `over` into `base`: tables merge key by key, everything else replaces.
pub fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Set a value at a dotted path such as `kernel.watermark_scale_factor` or
/// `workloads[0].policy.nodes` (used by experiment variants and sweeps). Intermediate
/// tables are created; array indices must exist.
pub fn set_path(value: &mut toml::Value, path: &str, new: toml::Value) -> Result<(), ConfigError> {
    let mut cur = value;
    let parts = split_path(path).map_err(|m| ConfigError::invalid(path, m))?;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match part {
            PathPart::Key(k) => {
                let t = cur.as_table_mut().ok_or_else(|| {
                    ConfigError::invalid(path, format!("`{k}` is not inside a table"))
                })?;
                if last {
                    t.insert(k.clone(), new);
                    return Ok(());
                }
                cur = t
                    .entry(k.clone())
                    .or_insert_with(|| toml::Value::Table(Default::default()));
            }
            PathPart::Index(idx) => {
                let a = cur.as_array_mut().ok_or_else(|| {
                    ConfigError::invalid(path, "indexing something that is not an array")
                })?;
                let len = a.len();
                let slot = a.get_mut(*idx).ok_or_else(|| {
                    ConfigError::invalid(
                        path,
                        format!("index {idx} is out of range (length {len})"),
                    )
                })?;
                if last {
                    *slot = new;
                    return Ok(());
                }
                cur = slot;
            }
        }
    }
    Err(ConfigError::invalid(path, "empty path"))
}

/// One step of a dotted key path: a table key or an array index.
pub enum PathPart {
    Key(String),
    Index(usize),
}

/// The most steps a dotted path may have: a config is at most a handful of levels deep,
/// and a path of thousands of keys would build tables nested deep enough to overflow the
/// stack when they are read or dropped.
pub const MAX_PATH_DEPTH: usize = 16;

/// Split `a.b[2].c` into its steps.
pub fn split_path(path: &str) -> Result<Vec<PathPart>, String> {
    if path.split(['.', '[']).count() > MAX_PATH_DEPTH {
        return Err(format!(
            "deeper than {MAX_PATH_DEPTH} steps: no config key is nested that deep"
        ));
    }
    let mut out = Vec::new();
    for seg in path.split('.') {
        let (key, mut rest) = match seg.find('[') {
            Some(p) => (&seg[..p], &seg[p..]),
            None => (seg, ""),
        };
        if key.is_empty() && out.is_empty() {
            return Err("a path must start with a key".into());
        }
        if !key.is_empty() {
            out.push(PathPart::Key(key.to_string()));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or("unclosed [")?;
            let idx: usize = r[..end]
                .parse()
                .map_err(|_| format!("bad index {:?}", &r[..end]))?;
            out.push(PathPart::Index(idx));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("unexpected {rest:?}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<SimConfig, ConfigError> {
        SimConfig::from_toml_str(s, "test.toml")
    }

    #[test]
    fn minimal_config_uses_defaults() {
        let c = parse("machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\n").unwrap();
        assert_eq!(c.seed, 1);
        assert_eq!(c.kernel.watermark_scale_factor, 10);
        assert_eq!(c.workloads.len(), 1);
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let e = parse("machine = \"small\"\n[kernel]\nwatermark_scale_factr = 10\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("test.toml: "), "{s}");
        assert!(s.contains("watermark_scale_factr"), "{s}");
        let e =
            parse("machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\nmapsiz = \"1GiB\"\n")
                .unwrap_err();
        assert!(e.to_string().contains("workloads[0]"), "{e}");
        assert!(e.to_string().contains("mapsiz"), "{e}");
    }

    #[test]
    fn wrong_unit_names_key() {
        let e = parse(
            "machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"1 parsec\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "workloads[0].mapsize");
        let e = parse("machine = \"small\"\nduration = 10\n").unwrap_err();
        assert_eq!(e.key, "duration");
        assert!(e.message.contains("unit"));
    }

    #[test]
    fn negative_size_is_rejected() {
        let e = parse("machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = -4096\n")
            .unwrap_err();
        assert_eq!(e.key, "workloads[0].mapsize");
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn missing_node_is_rejected() {
        let e = parse("machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\ncpu_nodes = [7]\n")
            .unwrap_err();
        assert_eq!(e.key, "workloads[0].cpu_nodes[0]");
        let e = parse("machine = \"small\"\n[[workloads]]\ntype = \"stream\"\npolicy = { mode = \"bind\", nodes = [5] }\n").unwrap_err();
        assert_eq!(e.key, "workloads[0].policy");
        assert!(e.message.contains("does not exist"));
    }

    #[test]
    fn preset_with_override() {
        let c = parse("[machine]\npreset = \"small\"\nname = \"mine\"\n").unwrap();
        assert_eq!(c.machine.name, "mine");
        let e = parse("machine = \"nope\"\n").unwrap_err();
        assert!(e.message.contains("available"));
    }

    #[test]
    fn set_path_refuses_absurdly_deep_paths() {
        let mut v = toml::Value::Table(Default::default());
        let deep = vec!["a"; 100_000].join(".");
        let e = set_path(&mut v, &deep, toml::Value::Integer(1)).unwrap_err();
        assert!(e.to_string().contains("deeper than"), "{e}");
        let deep_idx = format!("a{}", "[0]".repeat(1000));
        assert!(set_path(&mut v, &deep_idx, toml::Value::Integer(1)).is_err());
    }

    #[test]
    fn set_path_overrides_nested_values() {
        let mut v = resolve_toml(
            "machine = \"small\"\n[[workloads]]\ntype = \"pmbench\"\n",
            "t",
        )
        .unwrap();
        set_path(&mut v, "workloads[0].read_ratio", toml::Value::Integer(80)).unwrap();
        set_path(
            &mut v,
            "machine.nodes[1].capacity",
            toml::Value::String("2GiB".into()),
        )
        .unwrap();
        set_path(
            &mut v,
            "kernel.demotion_enabled",
            toml::Value::Boolean(true),
        )
        .unwrap();
        let c = SimConfig::from_value(&v, "t").unwrap();
        assert!(c.kernel.demotion_enabled);
        assert_eq!(c.machine.nodes[1].capacity, Bytes::gib(2));
        assert!(set_path(&mut v, "workloads[3].x", toml::Value::Integer(1)).is_err());
    }

    #[test]
    fn syntax_error_has_line() {
        let e = parse("machine = \"small\"\n[kernel\n").unwrap_err();
        assert!(e.message.contains("line 2"), "{e}");
    }

    #[test]
    fn weighted_interleave_keys_follow_the_kernel_versions() {
        let base = "machine = \"small\"\n[kernel.weighted_interleave]\n";
        let ok = parse(&format!("{base}weights = [9, 1]\n")).unwrap();
        assert_eq!(ok.kernel.weighted_interleave.weights, Some(vec![9, 1]));
        let e = parse(&format!("{base}weights = [9, 0]\n")).unwrap_err();
        assert_eq!(e.key, "kernel.weighted_interleave.weights[1]");
        assert!(e.message.contains("EINVAL"), "{e}");
        parse(&format!("{base}semantics = \"6.9\"\nweights = [9, 0]\n")).unwrap();
        let e = parse(&format!("{base}semantics = \"6.9\"\nauto = true\n")).unwrap_err();
        assert_eq!(e.key, "kernel.weighted_interleave.auto");
        let e = parse(&format!("{base}auto = true\nweights = [1, 1]\n")).unwrap_err();
        assert_eq!(e.key, "kernel.weighted_interleave.auto");
        let e = parse(&format!("{base}weights = [1, 1, 1]\n")).unwrap_err();
        assert_eq!(e.key, "kernel.weighted_interleave.weights");
        let e = parse(&format!("{base}weights = [300, 1]\n")).unwrap_err();
        assert!(
            e.key.starts_with("kernel.weighted_interleave.weights"),
            "{e}"
        );
        let e = parse(&format!("{base}semantics = \"6.12\"\n")).unwrap_err();
        assert_eq!(e.key, "kernel.weighted_interleave.semantics");
    }

    #[test]
    fn mbind_regions_and_policies_are_checked() {
        let w = "machine = \"small\"\n[[workloads]]\ntype = \"stream\"\n[[workloads.mbind]]\n";
        let c = parse(&format!(
            "{w}region = \"a\"\npolicy = {{ mode = \"weighted_interleave\", nodes = [0, 1] }}\nflags = [\"move\"]\nat = \"1ms\"\n"
        ))
        .unwrap();
        match &c.workloads[0] {
            WorkloadConfig::Stream(s) => assert_eq!(s.mbind[0].flags, vec![MbindFlag::Move]),
            _ => unreachable!(),
        }
        let e = parse(&format!(
            "{w}region = \"d\"\npolicy = {{ mode = \"local\" }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "workloads[0].mbind[0].region");
        assert!(e.message.contains("a, b, c"), "{e}");
        let e = parse(&format!(
            "{w}region = \"a\"\npolicy = {{ mode = \"interleave\", nodes = [0], flags = [\"numa_balancing\"] }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "workloads[0].mbind[0].policy");
        let e = parse(&format!(
            "{w}region = \"a\"\npolicy = {{ mode = \"bind\", nodes = [0] }}\nflags = [\"lazy\"]\n"
        ))
        .unwrap_err();
        assert!(e.key.starts_with("workloads[0].mbind[0].flags"), "{e}");
        // MLC buffers by prefix; XSBench grids by name.
        parse("machine = \"small\"\n[[workloads]]\ntype = \"mlc\"\n[[workloads.mbind]]\nregion = \"buf*\"\npolicy = { mode = \"bind\", nodes = [1] }\n").unwrap();
        parse("machine = \"small\"\n[[workloads]]\ntype = \"xsbench\"\nsize = \"small\"\npopulate = \"bulk\"\n[[workloads.mbind]]\nregion = \"index\"\npolicy = { mode = \"interleave\", nodes = [0, 1] }\n").unwrap();
        let e = parse(
            "machine = \"small\"\n[[workloads]]\ntype = \"xsbench\"\nthreads = 4\nlookups = 2\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "workloads[0].lookups");
    }
}
