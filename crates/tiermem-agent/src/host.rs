//! The machine as the running kernel reports it: `tiermem topology`.
//!
//! Nodes, CPUs, memory and free memory come from `/sys/devices/system/node`; memory tiers
//! from `/sys/devices/virtual/memory_tiering`; HMAT access coordinates from
//! `nodeN/access{0,1}/initiators/*` (access0: the best initiator of any kind; access1: the
//! best CPU initiator, the class `node_set_perf_attrs` hands to memory tiering and
//! weighted interleave). The demotion order "as the kernel would compute it" is obtained by
//! feeding these figures to [`tiermem_core::topology::Topology`], which follows
//! `mt_perf_to_adistance` and `establish_demotion_targets`; the tiers the kernel actually
//! formed are shown beside it, so a difference (e.g. a driver-assigned memory type) is visible.

use crate::fs::{format_list, parse_list, parse_meminfo_kb, HostFs};
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use tiermem_core::topology::{
    AdistanceSource, MachineConfig, MemoryKind, NodeConfig, Topology, MEMTIER_ADISTANCE_DRAM,
};
use tiermem_core::units::{Bandwidth, Bytes, SimDuration};

pub const NODE_DIR: &str = "/sys/devices/system/node";
pub const TIER_DIR: &str = "/sys/devices/virtual/memory_tiering";
pub const NUMA_BALANCING: &str = "/proc/sys/kernel/numa_balancing";
pub const PROMOTE_RATE_LIMIT: &str = "/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps";
pub const DEBUGFS_NB: &str = "/sys/kernel/debug/sched/numa_balancing";
pub const DEMOTION_ENABLED: &str = "/sys/kernel/mm/numa/demotion_enabled";
pub const WATERMARK_SCALE_FACTOR: &str = "/proc/sys/vm/watermark_scale_factor";
pub const WI_DIR: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";
/// The weighted-interleave mode switch (6.16+), as configs and plans name it.
pub const WI_AUTO: &str = "/sys/kernel/mm/mempolicy/weighted_interleave/auto";
/// The same file where the kernel names it `__auto_type`. mm/mempolicy.c of 6.16 declares
/// the attribute with `__ATTR(auto, ...)`, which names the file by stringifying the token,
/// and include/linux/compiler_types.h later defines `auto` as `__auto_type`: a 6.18.44 host
/// has `__auto_type` holding `true`. 7.2.13's mempolicy.c spells the name out as the string
/// `"auto"`. Which releases between those two use which name is not checked: the agent
/// takes whichever of the two files the host has.
const WI_AUTO_MANGLED: &str = "/sys/kernel/mm/mempolicy/weighted_interleave/__auto_type";

/// The host's weighted-interleave `auto` file under the name its kernel gives it; `None`
/// before 6.16.
pub fn wi_auto_file(fs: &HostFs) -> Option<&'static str> {
    [WI_AUTO, WI_AUTO_MANGLED]
        .into_iter()
        .find(|p| fs.exists(p))
}

/// `kpath` as this host names it: [`WI_AUTO`] becomes `__auto_type` where the kernel uses
/// that name; every other path is itself.
pub fn host_name<'a>(fs: &HostFs, kpath: &'a str) -> &'a str {
    match kpath {
        WI_AUTO => wi_auto_file(fs).unwrap_or(WI_AUTO),
        _ => kpath,
    }
}
pub const KSM_DIR: &str = "/sys/kernel/mm/ksm";
pub const DAMON_ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// The NUMA-balancing knobs under debugfs (`kernel/sched/debug.c`).
pub const NB_DEBUGFS_KNOBS: [&str; 5] = [
    "scan_delay_ms",
    "scan_period_min_ms",
    "scan_period_max_ms",
    "scan_size_mb",
    "hot_threshold_ms",
];
/// Read-write KSM knobs (`mm/ksm.c` sysfs attributes); `run` and `merge_across_nodes`
/// are handled apart because of their ordering rules.
pub const KSM_KNOBS: [&str; 7] = [
    "pages_to_scan",
    "sleep_millisecs",
    "max_page_sharing",
    "stable_node_chains_prune_millisecs",
    "use_zero_pages",
    "smart_scan",
    "advisor_mode",
];
pub const KSM_STATS: [&str; 6] = [
    "pages_shared",
    "pages_sharing",
    "pages_unshared",
    "pages_volatile",
    "full_scans",
    "general_profit",
];

/// HMAT performance of one access class (`nodeN/accessK/initiators/`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AccessCoords {
    /// Initiator nodes of this class (`initiators/nodeX` links).
    pub initiators: Vec<u32>,
    pub read_bandwidth_mbps: Option<u64>,
    pub write_bandwidth_mbps: Option<u64>,
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
}

impl AccessCoords {
    pub fn complete(&self) -> bool {
        self.read_bandwidth_mbps.unwrap_or(0) > 0
            && self.write_bandwidth_mbps.unwrap_or(0) > 0
            && self.read_latency_ns.unwrap_or(0) > 0
            && self.write_latency_ns.unwrap_or(0) > 0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostNode {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub has_memory: bool,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    /// SLIT row, indexed like `nodes`.
    pub distances: Vec<u32>,
    pub access0: Option<AccessCoords>,
    pub access1: Option<AccessCoords>,
    /// The tier the kernel placed this node in (`memory_tierN` device id).
    pub tier: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostTier {
    pub id: u32,
    /// `adistance_start = id << MEMTIER_CHUNK_BITS`.
    pub adistance_start: u32,
    pub nodes: Vec<u32>,
}

/// What `tiermem-core` computes from the reported figures (`mm/memory-tiers.c` rules).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComputedTiers {
    /// `hmat` when every memory node had access1 figures, else `defaults`.
    pub source: String,
    pub adistance: BTreeMap<u32, u32>,
    pub tiers: Vec<HostTier>,
    /// `node_demotion[n].preferred`.
    pub demotion_targets: BTreeMap<u32, Vec<u32>>,
    pub top_tier_nodes: Vec<u32>,
}

/// The machine and the kernel's current settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostTopology {
    pub kernel_release: Option<String>,
    pub nodes: Vec<HostNode>,
    pub tiers: Vec<HostTier>,
    pub computed: Option<ComputedTiers>,
    /// Why `computed` is absent, when it is.
    pub computed_note: Option<String>,
    pub settings: KernelSettings,
    /// cpu0's data caches (`/sys/devices/system/cpu/cpu0/cache`), when the kernel lists them.
    pub caches: Option<crate::cpu_caches::HostCaches>,
}

impl HostTopology {
    /// The ids of the nodes with memory (N_MEMORY), ascending.
    pub fn memory_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.has_memory)
            .map(|n| n.id)
            .collect()
    }
}

/// Current values of every knob the agent manages; `None` = the kernel lacks it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KernelSettings {
    pub numa_balancing: Option<u64>,
    pub promote_rate_limit_mbps: Option<u64>,
    /// debugfs knobs (absent when debugfs is not mounted or not readable).
    pub numa_balancing_debugfs: BTreeMap<String, u64>,
    pub demotion_enabled: Option<bool>,
    pub watermark_scale_factor: Option<u64>,
    pub weighted_interleave: Option<WeightedInterleaveState>,
    pub ksm: Option<BTreeMap<String, String>>,
    pub damon_sysfs: bool,
    pub nr_kdamonds: Option<u64>,
    /// `damon_reclaim` / `damon_lru_sort` parameters, when the modules are built in.
    pub damon_modules: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WeightedInterleaveState {
    pub weights: BTreeMap<u32, u64>,
    /// The `auto` file (6.16+); `None` on kernels without it.
    pub auto: Option<bool>,
}

/// Parse a sysfs boolean as `kstrtobool` does (`1/y/Y/on/true`, `0/n/N/off/false`).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "on" | "true" => Some(true),
        "0" | "n" | "no" | "off" | "false" => Some(false),
        _ => None,
    }
}

fn read_access(fs: &HostFs, node: u32, class: u32) -> Result<Option<AccessCoords>, Error> {
    let dir = format!("{NODE_DIR}/node{node}/access{class}/initiators");
    if !fs.exists(&dir) {
        return Ok(None);
    }
    let get = |f: &str| fs.read_u64_opt(&format!("{dir}/{f}"));
    Ok(Some(AccessCoords {
        initiators: fs.numbered_entries(&dir, "node")?,
        read_bandwidth_mbps: get("read_bandwidth")?,
        write_bandwidth_mbps: get("write_bandwidth")?,
        read_latency_ns: get("read_latency")?,
        write_latency_ns: get("write_latency")?,
    }))
}

fn read_list(fs: &HostFs, kpath: &str) -> Result<Vec<u32>, Error> {
    let s = fs.read(kpath)?;
    parse_list(&s).map_err(|m| Error::Parse {
        path: fs.path(kpath),
        message: m,
    })
}

/// Read the nodes (online ones) with CPUs, memory, distances and HMAT figures.
pub fn read_nodes(fs: &HostFs) -> Result<Vec<HostNode>, Error> {
    if !fs.exists(&format!("{NODE_DIR}/online")) {
        return Err(Error::Feature {
            feature: "NUMA (CONFIG_NUMA)".into(),
            path: format!("{NODE_DIR}/online"),
            hint: String::new(),
        });
    }
    let online = read_list(fs, &format!("{NODE_DIR}/online"))?;
    let with_mem = match fs.read_opt(&format!("{NODE_DIR}/has_memory"))? {
        Some(s) => parse_list(&s).map_err(|m| Error::Parse {
            path: fs.path(&format!("{NODE_DIR}/has_memory")),
            message: m,
        })?,
        None => online.clone(),
    };
    let mut nodes = Vec::new();
    for &id in &online {
        let nd = format!("{NODE_DIR}/node{id}");
        let cpus = match fs.read_opt(&format!("{nd}/cpulist"))? {
            Some(s) => parse_list(&s).map_err(|m| Error::Parse {
                path: fs.path(&format!("{nd}/cpulist")),
                message: m,
            })?,
            None => Vec::new(),
        };
        let meminfo = fs.read_opt(&format!("{nd}/meminfo"))?.unwrap_or_default();
        let distances = match fs.read_opt(&format!("{nd}/distance"))? {
            Some(s) => s
                .split_whitespace()
                .map(|d| d.parse::<u32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| Error::Parse {
                    path: fs.path(&format!("{nd}/distance")),
                    message: format!("bad distance row {s:?}"),
                })?,
            None => Vec::new(),
        };
        nodes.push(HostNode {
            id,
            cpus,
            has_memory: with_mem.contains(&id),
            mem_total_bytes: parse_meminfo_kb(&meminfo, "MemTotal").unwrap_or(0),
            mem_free_bytes: parse_meminfo_kb(&meminfo, "MemFree").unwrap_or(0),
            distances,
            access0: read_access(fs, id, 0)?,
            access1: read_access(fs, id, 1)?,
            tier: None,
        });
    }
    Ok(nodes)
}

/// Read `/sys/devices/virtual/memory_tiering/memory_tierN/nodelist`.
pub fn read_tiers(fs: &HostFs) -> Result<Vec<HostTier>, Error> {
    let mut tiers = Vec::new();
    for id in fs.numbered_entries(TIER_DIR, "memory_tier")? {
        let nodes = read_list(fs, &format!("{TIER_DIR}/memory_tier{id}/nodelist"))?;
        tiers.push(HostTier {
            id,
            adistance_start: id << tiermem_core::topology::MEMTIER_CHUNK_BITS,
            nodes,
        });
    }
    Ok(tiers)
}

/// Recompute tiers and demotion targets from the reported figures with the kernel's rules.
/// Returns `Err(reason)` when the figures do not allow it (sparse node ids, no CPU node).
pub fn compute_tiers(nodes: &[HostNode]) -> Result<ComputedTiers, String> {
    let mem: Vec<&HostNode> = nodes.iter().filter(|n| n.has_memory).collect();
    if mem.iter().enumerate().any(|(i, n)| n.id as usize != i) {
        return Err("memory node ids are not 0..n (not modelled)".into());
    }
    let hmat = mem
        .iter()
        .all(|n| n.access1.as_ref().is_some_and(|a| a.complete()));
    let cfg_nodes: Vec<NodeConfig> = mem
        .iter()
        .map(|n| {
            let a = n.access1.clone().unwrap_or_default();
            let lat = |v: Option<u64>| SimDuration::from_ns(v.unwrap_or(100).max(1));
            let bw = |v: Option<u64>| Bandwidth(v.unwrap_or(10_000).max(1) as f64 * 1e6);
            NodeConfig {
                id: n.id as u8,
                cpus: n.cpus.len() as u32,
                socket: 0,
                capacity: Bytes(n.mem_total_bytes.clamp(16 << 20, 1 << 42)),
                kind: Some(MemoryKind::Dram),
                read_latency: lat(a.read_latency_ns),
                write_latency: Some(lat(a.write_latency_ns)),
                read_bandwidth: bw(a.read_bandwidth_mbps),
                write_bandwidth: Some(bw(a.write_bandwidth_mbps)),
                curve: None,
                duplex: None,
                // Without HMAT every node keeps the default DRAM memory type (the dax/kmem
                // default cannot be told apart from sysfs; the kernel's own tiers show it).
                adistance: if hmat {
                    None
                } else {
                    Some(MEMTIER_ADISTANCE_DRAM)
                },
                reserved: None,
                pagesets: None,
                pagesets_high: None,
            }
        })
        .collect();
    let n = mem.len();
    let distances: Option<Vec<Vec<u32>>> = if mem.iter().all(|m| m.distances.len() >= n) {
        Some(mem.iter().map(|m| m.distances[..n].to_vec()).collect())
    } else {
        None
    };
    let cfg = MachineConfig {
        name: "host".into(),
        nodes: cfg_nodes,
        distances,
        cross_socket_latency: SimDuration::from_ns(60),
        adistance: if hmat {
            AdistanceSource::Hmat
        } else {
            AdistanceSource::Defaults
        },
        cpu_per_access: SimDuration::from_ns(50),
        remote_latency: Default::default(),
        caches: None,
    };
    let topo = Topology::new(&cfg).map_err(|e| e.to_string())?;
    Ok(ComputedTiers {
        source: if hmat { "hmat" } else { "defaults" }.into(),
        adistance: topo
            .nodes
            .iter()
            .map(|n| (n.id.0 as u32, n.adistance))
            .collect(),
        tiers: topo
            .tiers
            .iter()
            .map(|t| HostTier {
                id: t.id,
                adistance_start: t.adistance_start,
                nodes: t.nodes.iter().map(|n| n.0 as u32).collect(),
            })
            .collect(),
        demotion_targets: topo
            .nodes
            .iter()
            .map(|n| {
                (
                    n.id.0 as u32,
                    topo.demotion_preferred[n.id.idx()]
                        .iter()
                        .map(|t| t.0 as u32)
                        .collect(),
                )
            })
            .collect(),
        top_tier_nodes: topo
            .nodes
            .iter()
            .filter(|n| topo.is_toptier(n.id))
            .map(|n| n.id.0 as u32)
            .collect(),
    })
}

/// Read every setting the agent manages.
pub fn read_settings(fs: &HostFs) -> Result<KernelSettings, Error> {
    let mut s = KernelSettings {
        numa_balancing: fs.read_u64_opt(NUMA_BALANCING)?,
        promote_rate_limit_mbps: fs.read_u64_opt(PROMOTE_RATE_LIMIT)?,
        watermark_scale_factor: fs.read_u64_opt(WATERMARK_SCALE_FACTOR)?,
        demotion_enabled: fs.read_opt(DEMOTION_ENABLED)?.and_then(|v| parse_bool(&v)),
        ..Default::default()
    };
    for k in NB_DEBUGFS_KNOBS {
        // debugfs is root-only: an unreadable file is reported as absent, not as an error.
        if let Ok(Some(v)) = fs.read_u64_opt(&format!("{DEBUGFS_NB}/{k}")) {
            s.numa_balancing_debugfs.insert(k.to_string(), v);
        }
    }
    if fs.exists(WI_DIR) {
        let mut weights = BTreeMap::new();
        for n in fs.numbered_entries(WI_DIR, "node")? {
            weights.insert(n, fs.read_u64(&format!("{WI_DIR}/node{n}"))?);
        }
        let auto = match wi_auto_file(fs) {
            Some(p) => fs.read_opt(p)?.and_then(|v| parse_bool(&v)),
            None => None,
        };
        s.weighted_interleave = Some(WeightedInterleaveState { weights, auto });
    }
    if fs.exists(&format!("{KSM_DIR}/run")) {
        let mut m = BTreeMap::new();
        for k in ["run", "merge_across_nodes"]
            .into_iter()
            .chain(KSM_KNOBS)
            .chain(KSM_STATS)
        {
            if let Some(v) = fs.read_opt(&format!("{KSM_DIR}/{k}"))? {
                m.insert(k.to_string(), v.trim().to_string());
            }
        }
        s.ksm = Some(m);
    }
    s.nr_kdamonds = fs.read_u64_opt(&format!("{DAMON_ADMIN}/kdamonds/nr_kdamonds"))?;
    s.damon_sysfs = s.nr_kdamonds.is_some();
    for module in ["damon_reclaim", "damon_lru_sort"] {
        let dir = format!("/sys/module/{module}/parameters");
        let p = fs.path(&dir);
        let Ok(rd) = std::fs::read_dir(&p) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .collect();
        names.sort();
        let mut params = BTreeMap::new();
        for n in names {
            if let Ok(Some(v)) = fs.read_opt(&format!("{dir}/{n}")) {
                params.insert(n, v.trim().to_string());
            }
        }
        s.damon_modules.insert(module.to_string(), params);
    }
    Ok(s)
}

/// Read everything `tiermem topology` shows.
pub fn read_host(fs: &HostFs) -> Result<HostTopology, Error> {
    let mut nodes = read_nodes(fs)?;
    let tiers = read_tiers(fs)?;
    for n in &mut nodes {
        n.tier = tiers.iter().find(|t| t.nodes.contains(&n.id)).map(|t| t.id);
    }
    let (computed, computed_note) = match compute_tiers(&nodes) {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e)),
    };
    Ok(HostTopology {
        kernel_release: fs.read_opt("/proc/sys/kernel/osrelease")?,
        nodes,
        tiers,
        computed,
        computed_note,
        settings: read_settings(fs)?,
        caches: crate::cpu_caches::read_caches(fs)?,
    })
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// The SLIT distances as `numactl --hardware` prints them (`node distances:`, a row per
/// node). Columns are the online nodes in order, as each node's `distance` file lists them.
fn distance_matrix(h: &HostTopology) -> String {
    use std::fmt::Write;
    let mut o = String::from("node distances:\nnode ");
    for n in &h.nodes {
        let _ = write!(o, "{:>4}", n.id);
    }
    o.push('\n');
    for n in &h.nodes {
        let _ = write!(o, "{:>3}: ", n.id);
        for d in &n.distances {
            let _ = write!(o, "{d:>4}");
        }
        o.push('\n');
    }
    o
}

/// The human table of `tiermem topology`.
pub fn render_table(h: &HostTopology) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let mib = |b: u64| b / (1 << 20);
    let _ = writeln!(o, "kernel: {}", opt(h.kernel_release.as_ref()));
    let _ = writeln!(
        o,
        "{:<5} {:<10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>8} {:>8}",
        "node", "cpus", "total_MiB", "free_MiB", "tier", "rd_MB/s", "wr_MB/s", "rd_ns", "wr_ns"
    );
    for n in &h.nodes {
        let a = n.access1.clone().unwrap_or_default();
        let _ = writeln!(
            o,
            "{:<5} {:<10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>8} {:>8}",
            n.id,
            if n.cpus.is_empty() {
                "-".to_string()
            } else {
                format_list(&n.cpus)
            },
            mib(n.mem_total_bytes),
            mib(n.mem_free_bytes),
            opt(n.tier),
            opt(a.read_bandwidth_mbps),
            opt(a.write_bandwidth_mbps),
            opt(a.read_latency_ns),
            opt(a.write_latency_ns),
        );
    }
    o.push_str(&distance_matrix(h));
    let _ = writeln!(o, "HMAT figures: access class 1 (CPU initiators)");
    let _ = writeln!(o, "memory tiers (kernel):");
    for t in &h.tiers {
        let _ = writeln!(
            o,
            "  memory_tier{:<3} adistance {:>5}..{:<5} nodes {}",
            t.id,
            t.adistance_start,
            t.adistance_start + 127,
            format_list(&t.nodes)
        );
    }
    match &h.computed {
        Some(c) => {
            let _ = writeln!(o, "computed from {} (mm/memory-tiers.c rules):", c.source);
            for (n, a) in &c.adistance {
                let d = c.demotion_targets.get(n).cloned().unwrap_or_default();
                let _ = writeln!(
                    o,
                    "  node {n}: adistance {a}, demotes to {}{}",
                    if d.is_empty() {
                        "-".to_string()
                    } else {
                        format_list(&d)
                    },
                    if c.top_tier_nodes.contains(n) {
                        " (top tier)"
                    } else {
                        ""
                    }
                );
            }
        }
        None => {
            let _ = writeln!(
                o,
                "computed tiers: unavailable ({})",
                opt(h.computed_note.as_ref())
            );
        }
    }
    let s = &h.settings;
    let _ = writeln!(o, "settings:");
    let _ = writeln!(
        o,
        "  numa_balancing {}  promote_rate_limit_MBps {}  demotion_enabled {}  watermark_scale_factor {}",
        opt(s.numa_balancing),
        opt(s.promote_rate_limit_mbps),
        opt(s.demotion_enabled),
        opt(s.watermark_scale_factor)
    );
    if s.numa_balancing_debugfs.is_empty() {
        let _ = writeln!(
            o,
            "  debugfs numa_balancing knobs: not readable (mount debugfs, run as root)"
        );
    } else {
        let kv: Vec<String> = s
            .numa_balancing_debugfs
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(o, "  {}", kv.join("  "));
    }
    match &s.weighted_interleave {
        Some(w) => {
            let kv: Vec<String> = w
                .weights
                .iter()
                .map(|(k, v)| format!("node{k}={v}"))
                .collect();
            let _ = writeln!(
                o,
                "  weighted_interleave {} (auto: {})",
                kv.join(" "),
                w.auto
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| "not supported (< 6.16)".into())
            );
        }
        None => {
            let _ = writeln!(o, "  weighted_interleave: not supported (< 6.9)");
        }
    }
    match &s.ksm {
        Some(k) => {
            let kv: Vec<String> = k.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(o, "  ksm {}", kv.join(" "));
        }
        None => {
            let _ = writeln!(o, "  ksm: not built");
        }
    }
    let _ = writeln!(
        o,
        "  damon sysfs: {}  nr_kdamonds {}",
        if s.damon_sysfs { "yes" } else { "no" },
        opt(s.nr_kdamonds)
    );
    for (m, p) in &s.damon_modules {
        let en = p.get("enabled").map(String::as_str).unwrap_or("-");
        let _ = writeln!(o, "  {m}: enabled={en} ({} parameters)", p.len());
    }
    o
}

/// A fake two-node (DRAM + CPU-less CXL with HMAT) tree, shared by the crate's tests: the
/// simulated host's machine ([`crate::simulated_host::two_node_files`]).
#[cfg(test)]
pub fn fake_two_node() -> crate::fs::fake::FakeTree {
    let t = crate::fs::fake::FakeTree::new();
    crate::simulated_host::write_tree(
        t.dir.path(),
        &crate::simulated_host::two_node_files(),
        &crate::simulated_host::two_node_dirs(),
    )
    .unwrap();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nodes_tiers_hmat_and_settings() {
        let t = fake_two_node();
        let h = read_host(&t.fs()).unwrap();
        assert_eq!(h.nodes.len(), 2);
        assert_eq!(h.nodes[0].cpus, vec![0, 1]);
        assert!(h.nodes[1].cpus.is_empty());
        assert_eq!(h.nodes[1].mem_free_bytes, 1_000_000 * 1024);
        assert_eq!(h.nodes[0].distances, vec![10, 20]);
        let a1 = h.nodes[1].access1.as_ref().unwrap();
        assert_eq!(a1.read_bandwidth_mbps, Some(5000));
        assert_eq!(a1.initiators, vec![0]);
        assert_eq!(h.nodes[0].tier, Some(4));
        assert_eq!(h.nodes[1].tier, Some(22));
        assert_eq!(h.settings.numa_balancing, Some(0));
        assert_eq!(h.settings.demotion_enabled, Some(false));
        assert_eq!(h.settings.numa_balancing_debugfs["hot_threshold_ms"], 1000);
        let wi = h.settings.weighted_interleave.as_ref().unwrap();
        assert_eq!(wi.weights[&1], 1);
        assert_eq!(wi.auto, None, "6.12 has no auto file");
        assert_eq!(h.settings.ksm.as_ref().unwrap()["merge_across_nodes"], "1");
        assert!(h.settings.damon_sysfs);
        assert_eq!(
            h.settings.damon_modules["damon_reclaim"]["min_age"],
            "120000000"
        );
    }

    #[test]
    fn the_auto_file_is_read_under_either_name() {
        let t = fake_two_node();
        t.set(&format!("{WI_DIR}/__auto_type"), "true\n");
        let fs = t.fs();
        let h = read_host(&fs).unwrap();
        assert_eq!(h.settings.weighted_interleave.unwrap().auto, Some(true));
        assert_eq!(host_name(&fs, WI_AUTO), WI_AUTO_MANGLED);
        assert_eq!(host_name(&fs, NUMA_BALANCING), NUMA_BALANCING);
        t.set(WI_AUTO, "false\n");
        assert_eq!(
            host_name(&fs, WI_AUTO),
            WI_AUTO,
            "auto wins where both exist"
        );
        let h = read_host(&fs).unwrap();
        assert_eq!(h.settings.weighted_interleave.unwrap().auto, Some(false));
    }

    #[test]
    fn the_table_prints_the_distance_matrix_as_numactl_does() {
        let t = fake_two_node();
        let table = render_table(&read_host(&t.fs()).unwrap());
        assert!(
            table.contains("node distances:\nnode    0   1\n  0:   10  20\n  1:   20  10\n"),
            "{table}"
        );
    }

    #[test]
    fn computed_tiers_follow_mt_perf_to_adistance() {
        let t = fake_two_node();
        let h = read_host(&t.fs()).unwrap();
        let c = h.computed.unwrap();
        assert_eq!(c.source, "hmat");
        // 576 × (240+240)/(80+80) × (20000+20000)/(5000+5000) = 576 × 3 × 4 = 6912.
        assert_eq!(c.adistance[&0], 576);
        assert_eq!(c.adistance[&1], 6912);
        assert_eq!(c.demotion_targets[&0], vec![1]);
        assert!(c.demotion_targets[&1].is_empty());
        assert_eq!(c.top_tier_nodes, vec![0]);
        assert_eq!(c.tiers[1].id, 6912 >> 7);
    }

    #[test]
    fn without_hmat_all_nodes_are_dram() {
        let t = fake_two_node();
        std::fs::remove_dir_all(t.fs().path(&format!("{NODE_DIR}/node1/access1"))).unwrap();
        let h = read_host(&t.fs()).unwrap();
        let c = h.computed.unwrap();
        assert_eq!(c.source, "defaults");
        assert_eq!(c.tiers.len(), 1);
    }

    #[test]
    fn missing_numa_is_a_feature_error() {
        let t = crate::fs::fake::FakeTree::new();
        let e = read_host(&t.fs()).unwrap_err();
        assert!(matches!(e, Error::Feature { .. }), "{e}");
    }

    #[test]
    fn table_names_tiers_and_missing_features() {
        let t = fake_two_node();
        let h = read_host(&t.fs()).unwrap();
        let s = render_table(&h);
        assert!(s.contains("memory_tier22"), "{s}");
        assert!(
            s.contains("node 0: adistance 576, demotes to 1 (top tier)"),
            "{s}"
        );
        assert!(s.contains("auto: not supported (< 6.16)"), "{s}");
    }
}
