//! Machine description, memory tiers and demotion targets.
//!
//! A [`MachineConfig`] (from TOML) lists NUMA nodes with their CPUs, capacity and
//! performance, plus the SLIT distance matrix. [`Topology::new`] validates it and computes
//! what the kernel derives at boot:
//!
//! * the abstract distance of each node, as `mm/memory-tiers.c` does with HMAT data
//!   (`mt_set_default_dram_perf`, `mt_perf_to_adistance`), or the driver defaults
//!   (`MEMTIER_ADISTANCE_DRAM`, `MEMTIER_DEFAULT_DAX_ADISTANCE`) when performance-based
//!   distance is disabled;
//! * memory tiers in 128-wide chunks (`find_create_memory_tier`), the top tier
//!   (`establish_demotion_targets`: the slowest tier holding a CPU node), each node's
//!   preferred demotion targets and each tier's lower-tier mask;
//! * each node's allocation fallback order (`build_zonelists` via `find_next_best_node`).

use crate::timing::{CurveParams, LatencyCurve};
use crate::units::{Bandwidth, Bytes, NodeId, SimDuration};
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// `MEMTIER_CHUNK_BITS` in include/linux/memory-tiers.h.
pub const MEMTIER_CHUNK_BITS: u32 = 7;
/// `MEMTIER_CHUNK_SIZE = 1 << MEMTIER_CHUNK_BITS`.
pub const MEMTIER_CHUNK_SIZE: u32 = 1 << MEMTIER_CHUNK_BITS;
/// `MEMTIER_ADISTANCE_DRAM = 4 * MEMTIER_CHUNK_SIZE + MEMTIER_CHUNK_SIZE / 2`.
pub const MEMTIER_ADISTANCE_DRAM: u32 = 4 * MEMTIER_CHUNK_SIZE + MEMTIER_CHUNK_SIZE / 2;
/// `MEMTIER_DEFAULT_DAX_ADISTANCE = MEMTIER_ADISTANCE_DRAM * 5` (drivers/dax/kmem.c).
pub const MEMTIER_DEFAULT_DAX_ADISTANCE: u32 = MEMTIER_ADISTANCE_DRAM * 5;
/// SLIT `LOCAL_DISTANCE`.
pub const LOCAL_DISTANCE: u32 = 10;

/// What kind of memory a node holds. Sets the default latency-curve shape and, when
/// performance-based abstract distance is off, the default memory type (DRAM vs dax/kmem).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    Dram,
    Pmem,
    Cxl,
}

/// Named latency-curve shapes, or explicit parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CurveChoice {
    Named(CurveName),
    Explicit(CurveParams),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CurveName {
    Ddr,
    Cxl,
}

/// One NUMA node (`[[machine.nodes]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Node id; nodes must be numbered 0..n in order.
    pub id: u8,
    /// Number of CPUs on this node; 0 makes it a CPU-less (memory-only) node.
    #[serde(default)]
    pub cpus: u32,
    /// Socket (package) the node belongs to; accesses from CPUs of another socket pay
    /// `machine.cross_socket_latency`.
    #[serde(default)]
    pub socket: u8,
    /// Memory capacity of the node (e.g. `"64GiB"`).
    pub capacity: Bytes,
    /// Kind of memory. Default: `dram` for nodes with CPUs, `cxl` for CPU-less nodes.
    #[serde(default)]
    pub kind: Option<MemoryKind>,
    /// Idle read latency from the nearest CPU (`access1` initiator), e.g. `"80ns"`.
    pub read_latency: SimDuration,
    /// Idle write latency from the nearest CPU. Default: the read latency.
    #[serde(default)]
    pub write_latency: Option<SimDuration>,
    /// Sustained read bandwidth (`Bsat` for read-only traffic), e.g. `"100GB/s"`.
    pub read_bandwidth: Bandwidth,
    /// Sustained write bandwidth. Default: the read bandwidth.
    #[serde(default)]
    pub write_bandwidth: Option<Bandwidth>,
    /// Latency-curve shape: `"ddr"`, `"cxl"` or `{ read = {a,b,g}, mixed = {a,b,g} }`.
    /// Default: `cxl` for CXL nodes, `ddr` otherwise.
    #[serde(default)]
    pub curve: Option<CurveChoice>,
    /// Full-duplex link (reads and writes saturate separately). Default: true for CXL.
    #[serde(default)]
    pub duplex: Option<bool>,
    /// Override the computed abstract distance (as a driver's `init_node_memory_type` would).
    #[serde(default)]
    pub adistance: Option<u32>,
    /// Memory of the node held by the kernel and other programs from the start (never
    /// freed or reclaimed): `MemTotal − MemFree` of an idle host. Default 0. `tiermem
    /// validate` sets it from a recording's start state.
    #[serde(default)]
    pub reserved: Option<Bytes>,
    /// Free memory of the node held in the per-CPU pagesets at the start (the sum of
    /// `zoneinfo`'s pageset `count:` lines): free but not in `MemFree`, and not handed out
    /// until the pagesets drain, which they do when kswapd runs on the node (with
    /// `ZONE_RECLAIM_ACTIVE`, `nr_pcp_high` shrinks `pcp->high` and every free flushes) or
    /// direct reclaim drains every CPU (`drain_all_pages`). Default 0. `tiermem validate`
    /// sets it from a recording's `zoneinfo.txt`.
    #[serde(default)]
    pub pagesets: Option<Bytes>,
    /// The pagesets' `high` marks at the start, summed over CPUs (`zoneinfo`'s `high:`
    /// lines): `vmstat_update` lowers them by an eighth a second (`decay_pcp_high`) and
    /// frees what lies above. Default: `pagesets` (so they decay from the first second).
    #[serde(default)]
    pub pagesets_high: Option<Bytes>,
}

/// How abstract distances are computed (`[machine] adistance = ...`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdistanceSource {
    /// HMAT performance relative to the first DRAM node (`mt_perf_to_adistance`).
    #[default]
    Hmat,
    /// No HMAT: DRAM nodes 576, PMEM/CXL (dax/kmem) nodes 2880.
    Defaults,
}

/// `[machine]`: the simulated hardware.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// A short name for reports.
    #[serde(default = "default_machine_name")]
    pub name: String,
    /// The nodes, numbered from 0.
    pub nodes: Vec<NodeConfig>,
    /// SLIT distance matrix (`distances[i][j]`, 10 = local). Default: 10 on the diagonal,
    /// 17 between nodes of one socket, 28 across sockets (see [`default_distance`]).
    #[serde(default)]
    pub distances: Option<Vec<Vec<u32>>>,
    /// Extra latency for an access from a CPU on another socket (UPI/QPI hop). Default 60 ns
    /// (MLC idle matrices: 90.6 → 146.4 ns, `workload-models.md` §7).
    #[serde(default = "default_cross_socket")]
    pub cross_socket_latency: SimDuration,
    /// Source of abstract distances.
    #[serde(default)]
    pub adistance: AdistanceSource,
    /// CPU time per access outside the memory system (pattern generation, timer reads),
    /// used by workloads that do not set their own. Default 50 ns (`workload-models.md` §1).
    #[serde(default = "default_cpu_per_access")]
    pub cpu_per_access: SimDuration,
    /// How the extra latency of a remote access is derived: `socket` (default: a flat
    /// `cross_socket_latency` for any other socket) or `distance` (scaled by the SLIT
    /// distance, see [`RemoteLatency`]).
    #[serde(default)]
    pub remote_latency: RemoteLatency,
    /// The CPU caches trace replay puts in front of memory. Default: a Sapphire Rapids class
    /// hierarchy ([`crate::caches::Hierarchy::generic`]) over each socket's CPUs.
    #[serde(default)]
    pub caches: Option<crate::caches::CachesConfig>,
}

/// How remote-access latency is derived (`[machine] remote_latency`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteLatency {
    /// A CPU on another socket pays `cross_socket_latency` (one hop), whatever the distance.
    #[default]
    Socket,
    /// A CPU on another node pays `cross_socket_latency × (distance − 10) / 11`: one
    /// interconnect hop (SLIT 21) pays `cross_socket_latency`, two hops (SLIT 32) twice
    /// that. SLIT distances are defined as relative memory latency (ACPI 6.x §5.2.17), so
    /// multi-hop machines (4-socket rings, 8-socket cubes) get their latency ladder from the
    /// distance matrix.
    Distance,
}

fn default_machine_name() -> String {
    "custom".into()
}
fn default_cross_socket() -> SimDuration {
    SimDuration::from_ns(60)
}
fn default_cpu_per_access() -> SimDuration {
    SimDuration::from_ns(50)
}

/// Default SLIT distance when none is given: 10 local; 17 same socket; 28 across sockets
/// (values typical of ACPI SLITs on 2-socket Xeon + PMEM systems).
pub fn default_distance(a: &NodeConfig, b: &NodeConfig) -> u32 {
    if a.id == b.id {
        LOCAL_DISTANCE
    } else if a.socket == b.socket {
        17
    } else {
        28
    }
}

/// A validated node with derived values.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: NodeId,
    pub cpus: u32,
    pub socket: u8,
    pub capacity: Bytes,
    pub kind: MemoryKind,
    pub read_latency: SimDuration,
    pub write_latency: SimDuration,
    pub read_bandwidth: Bandwidth,
    pub write_bandwidth: Bandwidth,
    pub curve: LatencyCurve,
    /// Abstract distance (smaller = faster).
    pub adistance: u32,
    /// Memory held by the kernel and other programs from the start.
    pub reserved: Bytes,
    /// Free memory in the per-CPU pagesets at the start (see [`NodeConfig::pagesets`]).
    pub pagesets: Bytes,
    /// Their `high` marks (see [`NodeConfig::pagesets_high`]).
    pub pagesets_high: Bytes,
}

impl Node {
    pub fn has_cpus(&self) -> bool {
        self.cpus > 0
    }
}

/// A memory tier: nodes whose abstract distance falls into one 128-wide chunk.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryTier {
    /// Device id, as in `/sys/devices/virtual/memory_tiering/memory_tierN` (`adistance_start >> 7`).
    pub id: u32,
    /// `round_down(adistance, MEMTIER_CHUNK_SIZE)`.
    pub adistance_start: u32,
    pub nodes: Vec<NodeId>,
}

/// The machine as the kernel sees it after boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub name: String,
    pub nodes: Vec<Node>,
    pub distances: Vec<Vec<u32>>,
    pub cross_socket_latency: SimDuration,
    pub remote_latency: RemoteLatency,
    pub cpu_per_access: SimDuration,
    /// Tiers sorted fastest first.
    pub tiers: Vec<MemoryTier>,
    /// `top_tier_adistance`: every node whose tier starts at or below it is top tier.
    pub top_tier_adistance: u32,
    /// `node_demotion[n].preferred`: nearest nodes of the next lower tier.
    pub demotion_preferred: Vec<Vec<NodeId>>,
    /// `lower_tier_mask` of each node's tier: every node in strictly lower tiers.
    pub lower_tier_mask: Vec<Vec<NodeId>>,
    /// Allocation fallback order (zonelist) of each node, the node itself first.
    pub fallback: Vec<Vec<NodeId>>,
    /// `[machine.caches]` as written (None: the generic hierarchy, see [`Topology::caches`]).
    pub caches_config: Option<crate::caches::CachesConfig>,
}

impl Topology {
    /// The caches of the CPUs of `socket`: `[machine.caches]` over the generic hierarchy,
    /// whose LLC spans the socket's CPUs.
    pub fn caches(&self, socket: u8) -> crate::caches::Hierarchy {
        let cores = self
            .nodes
            .iter()
            .filter(|n| n.socket == socket)
            .map(|n| n.cpus)
            .sum();
        self.caches_config.unwrap_or_default().resolve(cores)
    }

    /// Validate a machine config and compute tiers, demotion targets and zonelists.
    pub fn new(cfg: &MachineConfig) -> Result<Topology, ConfigError> {
        check_nodes(cfg)?;
        if let Some(c) = &cfg.caches {
            for socket in cfg.nodes.iter().filter(|n| n.cpus > 0).map(|n| n.socket) {
                let cores = cfg
                    .nodes
                    .iter()
                    .filter(|n| n.socket == socket)
                    .map(|n| n.cpus)
                    .sum();
                c.validate("machine.caches", cores)?;
            }
        }
        let distances = distance_matrix(cfg)?;
        let mut nodes: Vec<Node> = cfg
            .nodes
            .iter()
            .map(|nc| {
                let kind = nc.kind.unwrap_or(if nc.cpus > 0 {
                    MemoryKind::Dram
                } else {
                    MemoryKind::Cxl
                });
                let write_bandwidth = nc.write_bandwidth.unwrap_or(nc.read_bandwidth);
                let params = match nc.curve {
                    Some(CurveChoice::Explicit(p)) => p,
                    Some(CurveChoice::Named(CurveName::Cxl)) => CurveParams::CXL,
                    Some(CurveChoice::Named(CurveName::Ddr)) => CurveParams::DDR,
                    None if kind == MemoryKind::Cxl => CurveParams::CXL,
                    None => CurveParams::DDR,
                };
                Node {
                    id: NodeId(nc.id),
                    cpus: nc.cpus,
                    socket: nc.socket,
                    capacity: nc.capacity,
                    kind,
                    read_latency: nc.read_latency,
                    write_latency: nc.write_latency.unwrap_or(nc.read_latency),
                    read_bandwidth: nc.read_bandwidth,
                    write_bandwidth,
                    curve: LatencyCurve {
                        params,
                        read_bw: nc.read_bandwidth.bytes_per_s(),
                        write_bw: write_bandwidth.bytes_per_s(),
                        duplex: nc.duplex.unwrap_or(kind == MemoryKind::Cxl),
                    },
                    adistance: 0,
                    reserved: nc.reserved.unwrap_or(Bytes(0)),
                    pagesets: nc.pagesets.unwrap_or(Bytes(0)),
                    pagesets_high: nc.pagesets_high.or(nc.pagesets).unwrap_or(Bytes(0)),
                }
            })
            .collect();

        assign_adistances(cfg, &mut nodes);
        let tiers = build_tiers(&nodes);
        let (top_tier_adistance, demotion_preferred, lower_tier_mask) =
            demotion_targets(&nodes, &tiers, &distances);
        let fallback = zonelists(&nodes, &distances);
        Ok(Topology {
            name: cfg.name.clone(),
            nodes,
            distances,
            cross_socket_latency: cfg.cross_socket_latency,
            remote_latency: cfg.remote_latency,
            cpu_per_access: cfg.cpu_per_access,
            tiers,
            top_tier_adistance,
            demotion_preferred,
            lower_tier_mask,
            fallback,
            caches_config: cfg.caches,
        })
    }

    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }

    /// `node_is_toptier`.
    pub fn is_toptier(&self, id: NodeId) -> bool {
        let a = self.nodes[id.idx()].adistance;
        a / MEMTIER_CHUNK_SIZE * MEMTIER_CHUNK_SIZE <= self.top_tier_adistance
    }

    /// Index of the node's tier in [`Topology::tiers`] (0 = fastest).
    pub fn tier_index(&self, id: NodeId) -> usize {
        self.tiers
            .iter()
            .position(|t| t.nodes.contains(&id))
            .unwrap_or(0)
    }

    /// Idle latency of an access from a CPU on `cpu_node` to memory on `mem_node`.
    pub fn idle_latency(&self, cpu_node: NodeId, mem_node: NodeId, write: bool) -> SimDuration {
        let m = &self.nodes[mem_node.idx()];
        let base = if write {
            m.write_latency
        } else {
            m.read_latency
        };
        match self.remote_latency {
            RemoteLatency::Socket if self.nodes[cpu_node.idx()].socket != m.socket => {
                base + self.cross_socket_latency
            }
            RemoteLatency::Socket => base,
            RemoteLatency::Distance => {
                let d = self.distances[cpu_node.idx()][mem_node.idx()].saturating_sub(10) as u64;
                SimDuration(base.0 + self.cross_socket_latency.0 * d / 11)
            }
        }
    }

    /// The nearest node that has CPUs (the node a CPU-less node's memory is "local" to).
    #[allow(
        clippy::expect_used,
        reason = "Topology::new refuses a machine without a CPU node"
    )]
    pub fn nearest_cpu_node(&self, id: NodeId) -> NodeId {
        self.nodes
            .iter()
            .filter(|n| n.has_cpus())
            .min_by_key(|n| (self.distances[id.idx()][n.id.idx()], n.id))
            .map(|n| n.id)
            .expect("a CPU node exists")
    }
}

/// `mt_set_default_dram_perf` + `mt_perf_to_adistance`: abstract distance from HMAT-style
/// performance (latency in ns, bandwidth in MB/s), integer arithmetic left to right.
/// Returns `None` (the kernel's permanent `-EIO`) when CPU nodes differ by more than 10 %.
fn perf_adistances(nodes: &[Node]) -> Option<Vec<u32>> {
    struct Perf {
        rl: u64,
        wl: u64,
        rb: u64,
        wb: u64,
    }
    let perf = |n: &Node| Perf {
        rl: (n.read_latency.ns_f64().round() as u64).max(1),
        wl: (n.write_latency.ns_f64().round() as u64).max(1),
        rb: (n.read_bandwidth.mb_per_s().round() as u64).max(1),
        wb: (n.write_bandwidth.mb_per_s().round() as u64).max(1),
    };
    let dram = nodes.iter().find(|n| n.has_cpus())?;
    let d = perf(dram);
    // Every other CPU+memory node must be within 10 % on each of the four figures.
    let within = |a: u64, b: u64| a.abs_diff(b) * 10 <= b;
    for n in nodes.iter().filter(|n| n.has_cpus()) {
        let p = perf(n);
        if !(within(p.rl, d.rl) && within(p.wl, d.wl) && within(p.rb, d.rb) && within(p.wb, d.wb)) {
            return None;
        }
    }
    Some(
        nodes
            .iter()
            .map(|n| {
                let p = perf(n);
                let a = MEMTIER_ADISTANCE_DRAM as u64 * (p.rl + p.wl) / (d.rl + d.wl)
                    * (d.rb + d.wb)
                    / (p.rb + p.wb);
                a.min(u32::MAX as u64) as u32
            })
            .collect(),
    )
}

/// The node list: 1..=64 nodes numbered in order, sane sizes and latencies, a CPU node.
fn check_nodes(cfg: &MachineConfig) -> Result<(), ConfigError> {
    let n = cfg.nodes.len();
    if n == 0 {
        return Err(ConfigError::invalid(
            "machine.nodes",
            "a machine needs at least one node",
        ));
    }
    if n > 64 {
        return Err(ConfigError::invalid(
            "machine.nodes",
            format!("at most 64 nodes are supported (got {n})"),
        ));
    }
    for (i, nc) in cfg.nodes.iter().enumerate() {
        let key = |f: &str| format!("machine.nodes[{i}].{f}");
        if nc.id as usize != i {
            return Err(ConfigError::invalid(
                key("id"),
                format!(
                    "nodes must be numbered 0..{} in order; entry {i} has id {}",
                    n - 1,
                    nc.id
                ),
            ));
        }
        if nc.capacity.0 < (16 << 20) {
            return Err(ConfigError::invalid(
                key("capacity"),
                format!("{} is too small (minimum 16MiB)", nc.capacity),
            ));
        }
        if nc.capacity.0 > (1u64 << 42) {
            return Err(ConfigError::invalid(
                key("capacity"),
                format!("{} is too large (maximum 4TiB per node)", nc.capacity),
            ));
        }
        if nc.read_latency.0 == 0 {
            return Err(ConfigError::invalid(
                key("read_latency"),
                "must be positive",
            ));
        }
        if matches!(nc.write_latency, Some(d) if d.0 == 0) {
            return Err(ConfigError::invalid(
                key("write_latency"),
                "must be positive",
            ));
        }
    }
    if !cfg.nodes.iter().any(|n| n.cpus > 0) {
        return Err(ConfigError::invalid(
            "machine.nodes",
            "at least one node must have CPUs",
        ));
    }
    Ok(())
}

/// The SLIT matrix: the configured one, checked (n×n, 10 on the diagonal, remote above 10,
/// at most 254), or the defaults from the nodes' kinds and sockets.
fn distance_matrix(cfg: &MachineConfig) -> Result<Vec<Vec<u32>>, ConfigError> {
    let n = cfg.nodes.len();
    Ok(match &cfg.distances {
        Some(d) => {
            if d.len() != n || d.iter().any(|row| row.len() != n) {
                return Err(ConfigError::invalid(
                    "machine.distances",
                    format!("must be a {n}×{n} matrix (one row per node)"),
                ));
            }
            for (i, row) in d.iter().enumerate() {
                if row[i] != LOCAL_DISTANCE {
                    return Err(ConfigError::invalid(
                        format!("machine.distances[{i}][{i}]"),
                        format!("the local distance must be {LOCAL_DISTANCE}"),
                    ));
                }
                for (j, &dij) in row.iter().enumerate() {
                    if i != j && dij <= LOCAL_DISTANCE {
                        return Err(ConfigError::invalid(
                            format!("machine.distances[{i}][{j}]"),
                            format!("remote distances must exceed {LOCAL_DISTANCE}"),
                        ));
                    }
                    if d[i][j] > 254 {
                        return Err(ConfigError::invalid(
                            format!("machine.distances[{i}][{j}]"),
                            "SLIT distances are at most 254",
                        ));
                    }
                }
            }
            d.clone()
        }
        None => cfg
            .nodes
            .iter()
            .map(|a| cfg.nodes.iter().map(|b| default_distance(a, b)).collect())
            .collect(),
    })
}

/// Each node's abstract distance: configured, from HMAT performance
/// (`mt_perf_to_adistance`), or the DRAM / default-DAX constants.
fn assign_adistances(cfg: &MachineConfig, nodes: &mut [Node]) {
    let perf_adist = match cfg.adistance {
        AdistanceSource::Hmat => perf_adistances(nodes),
        AdistanceSource::Defaults => None,
    };
    for (i, node) in nodes.iter_mut().enumerate() {
        node.adistance = if let Some(a) = cfg.nodes[i].adistance {
            a
        } else if let Some(p) = &perf_adist {
            p[i]
        } else if node.kind == MemoryKind::Dram {
            MEMTIER_ADISTANCE_DRAM
        } else {
            MEMTIER_DEFAULT_DAX_ADISTANCE
        };
    }
}

/// Memory tiers: nodes grouped by abstract-distance chunk, fastest first
/// (`find_create_memory_tier` keeps the list sorted by `adistance_start`).
fn build_tiers(nodes: &[Node]) -> Vec<MemoryTier> {
    let mut starts: Vec<u32> = nodes
        .iter()
        .map(|n| n.adistance / MEMTIER_CHUNK_SIZE * MEMTIER_CHUNK_SIZE)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
        .iter()
        .map(|&s| MemoryTier {
            id: s >> MEMTIER_CHUNK_BITS,
            adistance_start: s,
            nodes: nodes
                .iter()
                .filter(|n| n.adistance / MEMTIER_CHUNK_SIZE * MEMTIER_CHUNK_SIZE == s)
                .map(|n| n.id)
                .collect(),
        })
        .collect()
}

/// `establish_demotion_targets`' results: the top tier's last abstract distance, each
/// node's preferred targets, each node's allowed lower-tier nodes.
type DemotionTargets = (u32, Vec<Vec<NodeId>>, Vec<Vec<NodeId>>);

/// The top tier's last abstract distance and, per node, the preferred demotion targets and
/// the allowed lower-tier mask (`establish_demotion_targets`).
#[allow(
    clippy::expect_used,
    reason = "check_nodes refuses a machine without a CPU node; every node has a tier"
)]
fn demotion_targets(
    nodes: &[Node],
    tiers: &[MemoryTier],
    distances: &[Vec<u32>],
) -> DemotionTargets {
    let n = nodes.len();
    let tier_of = |id: NodeId| {
        tiers
            .iter()
            .position(|t| t.nodes.contains(&id))
            .expect("every node has a tier")
    };

    // establish_demotion_targets: the slowest tier that holds a CPU node defines the top tier.
    let top_tier_adistance = tiers
        .iter()
        .rev()
        .find(|t| t.nodes.iter().any(|id| nodes[id.idx()].has_cpus()))
        .map(|t| t.adistance_start + MEMTIER_CHUNK_SIZE - 1)
        .expect("a CPU node exists");

    let mut demotion_preferred = vec![Vec::new(); n];
    let mut lower_tier_mask = vec![Vec::new(); n];
    for node in nodes {
        let ti = tier_of(node.id);
        lower_tier_mask[node.id.idx()] = tiers[ti + 1..]
            .iter()
            .flat_map(|t| t.nodes.iter().copied())
            .collect();
        if ti + 1 >= tiers.len() {
            continue;
        }
        // find_next_best_node over the next lower tier only; keep all at the best distance.
        let candidates = &tiers[ti + 1].nodes;
        let best = candidates
            .iter()
            .map(|c| distances[node.id.idx()][c.idx()])
            .min();
        if let Some(best) = best {
            demotion_preferred[node.id.idx()] = candidates
                .iter()
                .copied()
                .filter(|c| distances[node.id.idx()][c.idx()] == best)
                .collect();
        }
    }

    (top_tier_adistance, demotion_preferred, lower_tier_mask)
}

fn zonelists(nodes: &[Node], distances: &[Vec<u32>]) -> Vec<Vec<NodeId>> {
    // build_zonelists: the local node, then find_next_best_node order — by distance,
    // preferring CPU-less nodes (PENALTY_FOR_NODE_WITH_CPUS) and then lower ids.
    nodes
        .iter()
        .map(|me| {
            let mut others: Vec<&Node> = nodes.iter().filter(|o| o.id != me.id).collect();
            others.sort_by_key(|o| (distances[me.id.idx()][o.id.idx()], o.has_cpus(), o.id));
            std::iter::once(me.id)
                .chain(others.into_iter().map(|o| o.id))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u8, cpus: u32, socket: u8, lat: u64, bw_gbs: f64, kind: MemoryKind) -> NodeConfig {
        NodeConfig {
            id,
            cpus,
            socket,
            capacity: Bytes::gib(16),
            kind: Some(kind),
            read_latency: SimDuration::from_ns(lat),
            write_latency: None,
            read_bandwidth: Bandwidth::from_gb_per_s(bw_gbs),
            write_bandwidth: None,
            curve: None,
            duplex: None,
            adistance: None,
            reserved: None,
            pagesets: None,
            pagesets_high: None,
        }
    }

    fn machine(nodes: Vec<NodeConfig>) -> MachineConfig {
        MachineConfig {
            name: "t".into(),
            nodes,
            distances: None,
            cross_socket_latency: SimDuration::from_ns(60),
            remote_latency: RemoteLatency::Socket,
            caches: None,
            adistance: AdistanceSource::Hmat,
            cpu_per_access: SimDuration::from_ns(50),
        }
    }

    #[test]
    fn dram_node_lands_in_tier4_and_slow_node_below() {
        let t = Topology::new(&machine(vec![
            node(0, 8, 0, 80, 100.0, MemoryKind::Dram),
            node(1, 0, 0, 240, 25.0, MemoryKind::Cxl),
        ]))
        .unwrap();
        assert_eq!(t.nodes[0].adistance, MEMTIER_ADISTANCE_DRAM);
        assert_eq!(t.tiers[0].id, 4);
        // 576 * 480/160 * 200000/50000 = 6912 → tier 54
        assert_eq!(t.nodes[1].adistance, 6912);
        assert_eq!(t.tiers[1].id, 54);
        assert!(t.is_toptier(NodeId(0)));
        assert!(!t.is_toptier(NodeId(1)));
        assert_eq!(t.demotion_preferred[0], vec![NodeId(1)]);
        assert!(t.demotion_preferred[1].is_empty());
        assert_eq!(t.fallback[0], vec![NodeId(0), NodeId(1)]);
    }

    #[test]
    fn two_socket_pmem_demotes_to_nearest_pmem() {
        let t = Topology::new(&machine(vec![
            node(0, 24, 0, 80, 100.0, MemoryKind::Dram),
            node(1, 24, 1, 80, 100.0, MemoryKind::Dram),
            node(2, 0, 0, 300, 39.0, MemoryKind::Pmem),
            node(3, 0, 1, 300, 39.0, MemoryKind::Pmem),
        ]))
        .unwrap();
        assert_eq!(t.tiers.len(), 2);
        assert_eq!(t.demotion_preferred[0], vec![NodeId(2)]);
        assert_eq!(t.demotion_preferred[1], vec![NodeId(3)]);
        assert_eq!(t.lower_tier_mask[0], vec![NodeId(2), NodeId(3)]);
        // Zonelist of node 0: itself, its socket's PMEM (17), then the other socket (28),
        // CPU-less first among equals.
        assert_eq!(
            t.fallback[0],
            vec![NodeId(0), NodeId(2), NodeId(3), NodeId(1)]
        );
    }

    #[test]
    fn mismatched_dram_nodes_disable_perf_adistance() {
        let t = Topology::new(&machine(vec![
            node(0, 8, 0, 80, 100.0, MemoryKind::Dram),
            node(1, 8, 1, 120, 100.0, MemoryKind::Dram),
            node(2, 0, 0, 300, 30.0, MemoryKind::Pmem),
        ]))
        .unwrap();
        assert_eq!(t.nodes[1].adistance, MEMTIER_ADISTANCE_DRAM);
        assert_eq!(t.nodes[2].adistance, MEMTIER_DEFAULT_DAX_ADISTANCE);
    }

    #[test]
    fn top_tier_is_slowest_tier_with_cpus() {
        // A CPU node in a slow tier makes every tier above it "top tier".
        let mut cfg = machine(vec![
            node(0, 8, 0, 80, 100.0, MemoryKind::Dram),
            node(1, 0, 0, 40, 200.0, MemoryKind::Dram),
        ]);
        cfg.nodes[1].adistance = Some(200);
        let t = Topology::new(&cfg).unwrap();
        assert!(t.is_toptier(NodeId(0)));
        assert!(t.is_toptier(NodeId(1)));
    }

    #[test]
    fn rejects_bad_machines() {
        let mut cfg = machine(vec![node(0, 0, 0, 80, 100.0, MemoryKind::Dram)]);
        assert!(Topology::new(&cfg)
            .unwrap_err()
            .to_string()
            .contains("CPUs"));
        cfg.nodes[0].cpus = 1;
        cfg.nodes[0].id = 3;
        assert!(Topology::new(&cfg)
            .unwrap_err()
            .to_string()
            .contains("machine.nodes[0].id"));
        cfg.nodes[0].id = 0;
        cfg.distances = Some(vec![vec![10, 20]]);
        assert!(Topology::new(&cfg)
            .unwrap_err()
            .to_string()
            .contains("machine.distances"));
    }
}
