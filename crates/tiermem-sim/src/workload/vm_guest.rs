//! Virtual-machine guests for KSM (`workload-models.md` §5): `guests` processes, each a
//! qemu with its guest RAM in one VMA, run round-robin on the CPU nodes with memory bound
//! there (the patch's test pinned each guest to a node).
//!
//! Each guest has three threads:
//!
//! * **boot**: touches every page of guest RAM once (reads of the memory image, which is
//!   written before time 0: a guest restored from a snapshot, or `-mem-prealloc`), then
//!   releases the writer;
//! * **writer**: dirties pages at the configured rates (unique pages `unique_write_pct_per_s`,
//!   shared ones `shared_write_pct_per_s`); a write gives the page a fresh content, and a
//!   write to a merged page is a COW fault. Its pace comes from `cpu_per_access` = 1/rate;
//! * **probe** (`alloc_pg`-like): from `probe_start`, for `probe_duration`, dependent
//!   reads of random pages of guest RAM; its access times come from the timing model
//!   (a page merged into a KSM page on another node pays that node's remote latency).
//!
//! Page classes per guest (deterministic from the seed): zero pages (content 0), the OS
//! image (the k-th OS page of every guest with the same image has the same content),
//! duplicates inside the guest (`intra_dup_copies` pages per content), unique pages.

use crate::mm::Kernel;
use crate::workload::{Access, Generator, Step, ThreadSpec, K_READ, K_WRITE};
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tiermem_core::ksm::{MergeMode, VmGuestConfig};
use tiermem_core::mempolicy::{MemPolicy, PolicyMode};
use tiermem_core::topology::Topology;
use tiermem_core::units::{NodeId, SimDuration, SimTime};

const BATCH: u32 = 256;
/// Content ids of OS-image pages: `OS_BASE + image × OS_STRIDE + k`.
const OS_BASE: u32 = 1;
const OS_STRIDE: u32 = 1 << 22;
/// Content ids of intra-guest duplicates start here.
const DUP_BASE: u32 = 0x4000_0000;

/// Thread roles inside a guest.
pub enum VmGen {
    Boot {
        next: u32,
        pages: u32,
        synced: bool,
    },
    Writer {
        started: bool,
        unique: Vec<u32>,
        shared: Vec<u32>,
        unique_share: f64,
    },
    Probe {
        started: bool,
        pages: u32,
    },
}

impl VmGen {
    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        match self {
            VmGen::Boot {
                next,
                pages,
                synced,
            } => {
                if *next < *pages {
                    let end = (*next + BATCH).min(*pages);
                    for p in *next..end {
                        out.push(Access {
                            idx: p,
                            lines: 1,
                            kind: K_READ,
                        });
                    }
                    *next = end;
                    Step::Accesses
                } else if !*synced {
                    *synced = true;
                    Step::Barrier
                } else {
                    Step::Done
                }
            }
            VmGen::Writer {
                started,
                unique,
                shared,
                unique_share,
            } => {
                if !*started {
                    *started = true;
                    return Step::Barrier;
                }
                if unique.is_empty() && shared.is_empty() {
                    return Step::Done;
                }
                for _ in 0..16 {
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    let from = if (u < *unique_share && !unique.is_empty()) || shared.is_empty() {
                        &*unique
                    } else {
                        &*shared
                    };
                    let i = ((rng.next_u64() >> 32) * from.len() as u64) >> 32;
                    out.push(Access {
                        idx: from[i as usize],
                        lines: 1,
                        kind: K_WRITE,
                    });
                }
                Step::Accesses
            }
            VmGen::Probe { started, pages } => {
                if !*started {
                    *started = true;
                    return Step::RunStart;
                }
                for _ in 0..BATCH {
                    let p = ((rng.next_u64() >> 32) * *pages as u64) >> 32;
                    out.push(Access {
                        idx: p as u32,
                        lines: 1,
                        kind: K_READ,
                    });
                }
                Step::Accesses
            }
        }
    }
}

fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut x = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ c.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The CPU node of each guest: round-robin over `cpu_nodes` (default: every CPU node).
pub fn guest_nodes(g: &VmGuestConfig, topo: &Topology) -> Vec<NodeId> {
    let nodes: Vec<NodeId> = if g.cpu_nodes.is_empty() {
        topo.nodes
            .iter()
            .filter(|n| n.has_cpus())
            .map(|n| n.id)
            .collect()
    } else {
        g.cpu_nodes.clone()
    };
    (0..g.guests as usize)
        .map(|i| nodes[i % nodes.len()])
        .collect()
}

/// Write the guest's memory image before time 0 (QEMU restoring a snapshot, or
/// `-mem-prealloc`): stores, so each page is allocated with the content set above rather
/// than mapped to the zero page as a load of an untouched page would be.
fn prealloc_image(kernel: &mut Kernel, proc: u16, node: NodeId, pages: u32) {
    let base = kernel.procs()[proc as usize].vmas[0].pte_base;
    for idx in base..base + pages {
        if let Err(e) = kernel.handle_fault(proc, idx, true, node, SimTime::ZERO) {
            tracing::warn!(?e, proc, "writing the guest's memory image failed");
            break;
        }
    }
}

/// Create the guests' processes and memory images; return their threads.
pub fn build(
    g: &VmGuestConfig,
    wi: usize,
    seed: u64,
    topo: &Topology,
    kernel: &mut Kernel,
    barrier_groups: &mut usize,
) -> Result<Vec<ThreadSpec>, tiermem_core::ConfigError> {
    let name = g.name.clone().unwrap_or_else(|| format!("vm{wi}"));
    let pages = g.guest_mem.pages_ceil().0 as u32;
    let mut threads = Vec::new();
    let mut dup_next = DUP_BASE;
    let total_writes = |n_unique: usize, n_shared: usize| {
        (n_unique as f64 * g.unique_write_pct_per_s + n_shared as f64 * g.shared_write_pct_per_s)
            / 100.0
    };
    for (gi, node) in guest_nodes(g, topo).into_iter().enumerate() {
        let policy = if g.pin_memory {
            MemPolicy {
                mode: PolicyMode::Bind,
                nodes: vec![node],
                ..Default::default()
            }
        } else {
            MemPolicy::default()
        };
        let proc = kernel.add_process(
            format!("{name}.guest{gi}"),
            node,
            policy,
            vec![("guest-ram".into(), pages, None)],
        )?;
        match g.merge {
            MergeMode::Madvise => {
                let _ = kernel.ksm_madvise_mergeable(proc, 0);
            }
            MergeMode::Prctl => {
                let _ = kernel.ksm_set_merge_any(proc);
            }
            MergeMode::Off => {}
        }
        // The memory image.
        let image = gi as u32 % g.os_images;
        let (z, o, d) = (
            g.zero_fraction,
            g.zero_fraction + g.os_shared_fraction,
            g.zero_fraction + g.os_shared_fraction + g.intra_dup_fraction,
        );
        let mut unique = Vec::new();
        let mut shared = Vec::new();
        let (mut os_k, mut dup_k) = (0u32, 0u32);
        for vpn in 0..pages {
            let u = (mix(seed, wi as u64 * 4096 + gi as u64, vpn as u64) >> 11) as f64
                / (1u64 << 53) as f64;
            let content = if u < z {
                Some(crate::mm::ksm::ZERO_CONTENT)
            } else if u < o {
                os_k += 1;
                Some(OS_BASE + image * OS_STRIDE + (os_k - 1) % OS_STRIDE)
            } else if u < d {
                let c = dup_next + dup_k / g.intra_dup_copies;
                dup_k += 1;
                Some(c)
            } else {
                None
            };
            match content {
                Some(c) => {
                    kernel.ksm_set_content(proc, vpn, c);
                    shared.push(vpn);
                }
                None => {
                    if let Some(c) = kernel.ksm_fresh_content() {
                        kernel.ksm_set_content(proc, vpn, c);
                    }
                    unique.push(vpn);
                }
            }
        }
        dup_next += dup_k.div_ceil(g.intra_dup_copies);
        prealloc_image(kernel, proc, node, pages);
        let group = *barrier_groups;
        *barrier_groups += 1;
        let base = |gen: VmGen, cpa: SimDuration, latency_probe: bool| ThreadSpec {
            cpu_per_access: cpa,
            latency_probe,
            ..ThreadSpec::new(wi, proc, node, Generator::VmGuest(gen))
        };
        let mut boot = base(
            VmGen::Boot {
                next: 0,
                pages,
                synced: false,
            },
            topo.cpu_per_access,
            false,
        );
        boot.barrier_group = Some(group);
        threads.push(boot);
        let rate = total_writes(unique.len(), shared.len());
        let unique_share = if rate > 0.0 {
            unique.len() as f64 * g.unique_write_pct_per_s / 100.0 / rate
        } else {
            0.0
        };
        let (unique, shared) = if rate > 0.0 {
            (unique, shared)
        } else {
            (Vec::new(), Vec::new())
        };
        let mut writer = base(
            VmGen::Writer {
                started: false,
                unique,
                shared,
                unique_share,
            },
            if rate > 0.0 {
                SimDuration::from_secs_f64(1.0 / rate)
            } else {
                SimDuration::ZERO
            },
            false,
        );
        writer.barrier_group = Some(group);
        threads.push(writer);
        let mut probe = base(
            VmGen::Probe {
                started: false,
                pages,
            },
            g.probe_cpu_per_access.unwrap_or(topo.cpu_per_access),
            true,
        );
        probe.start = g.probe_start;
        probe.run_duration = Some(g.probe_duration);
        threads.push(probe);
    }
    Ok(threads)
}

/// One guest's probe result.
#[derive(Clone, Debug, Serialize)]
pub struct GuestProbe {
    pub guest: u32,
    pub node: u8,
    /// Probe time per access (CPU + memory), ns.
    pub mean_access_ns: f64,
    /// Loaded memory latency per access from the timing model, ns.
    pub mean_latency_ns: f64,
    pub accesses: u64,
}

/// Population standard deviation as % of the mean (the seed's metric).
pub fn spread_pct(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    100.0 * var.sqrt() / mean
}
