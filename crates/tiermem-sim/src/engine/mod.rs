//! The simulation loop: threads as closed loops on a virtual clock, kernel work between
//! them, the timing model per window, and the observers (timeline, summary).
//!
//! Time advances in windows of `sim.tick`. In each window every runnable thread executes
//! accesses until its own clock reaches the window end (threads in index order, so runs are
//! deterministic); faults run kernel code inline on the faulting thread's clock; kernel
//! threads (kswapd) then catch up to the window end; barriers release; the timing model
//! re-solves node latencies from the window's traffic; the timeline recorder samples.
//!
//! Call order: [`Simulation::new`] → [`Simulation::run`] (once) → results.

pub mod events;
pub mod observe;
pub mod radix;
pub mod user_tiering;

use crate::hw::timing::{ThreadMix, TimingModel};
use crate::mm::mem::{
    prefetch, pte_node, PTE_ACCESSED, PTE_DIRTY, PTE_PRESENT, PTE_PROTNONE, PTE_RDONLY,
    PTE_SOFTDIRTY, PTE_ZERO,
};
use crate::mm::Kernel;
use crate::vmstat::Vm;
use crate::workload::{
    self, Access, Generator, Step, ThreadReport, WorkloadResult, K_NTWRITE, K_STREAM, K_WRITEBACK,
    NR_KINDS,
};
use crate::SimError;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use tiermem_core::config::SimConfig;
use tiermem_core::topology::Topology;
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SIZE};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    Waiting,
    Running,
    Blocked,
    Done,
}

struct Thread {
    spec_workload: usize,
    proc: u16,
    cpu_node: NodeId,
    mlp: u32,
    cpu_per_access: u64,
    /// CPU time of a touch (`lines = 0`): 0, but for replayed cache hits the CPU time
    /// between accesses the trace gives.
    cpu_per_touch: u64,
    cpu_per_line: u64,
    cpu_per_line_at_run: Option<u64>,
    run_duration: Option<SimDuration>,
    latency_probe: bool,
    gen: Generator,
    rng: Xoshiro256PlusPlus,
    buf: Vec<Access>,
    cursor: usize,
    clock: u64,
    state: ThreadState,
    deadline: u64,
    /// Per (node, kind) latency in ps per line, divided by the MLP in effect.
    lat: Vec<u64>,
    /// Per (node, kind) loaded latency in ps (not divided by MLP), for statistics.
    lat_raw: Vec<u64>,
    // Window counters.
    win_lines: Vec<u64>,
    win_active: u64,
    /// CPU runtime (ps), which drives the NUMA scanner (`task_tick_numa`).
    runtime: u64,
    /// A thread that waits after its setup ([`Generator::waiter`]): (wake period, next
    /// wake) in ps.
    wake: Option<(u64, u64)>,
    /// Fixed-rate threads: ps between access issues (0: back to back), and the earliest
    /// issue time of the next access.
    pace: u64,
    next_slot: u64,
    // Cumulative counters.
    accesses: u64,
    lines: u64,
    lat_sum: u128,
    bytes: u64,
    run_mark: Option<(u64, u64, u64, u128, u64)>,
    run_end: Option<u64>,
    /// The benchmark harness's `memused` (docs/seed-004-page-cache.md §3): the system's
    /// used pages right after the thread's `drop_caches`, and the sum and count of the
    /// timeline samples' increase over them while the thread runs.
    memused: Option<(u64, i128, u64)>,
    /// The process's major faults at the thread's `drop_caches`: their increase until the
    /// thread ends is the harness's per-run major faults (damon-tests' `pgmajfaults`,
    /// system-wide there, where each program runs alone; the process, one thread, faults no
    /// more once that has ended).
    majflt_at_drop: Option<u64>,
    /// The kdamonds' CPU time (ns) and the time (ps) at the first and the latest timeline
    /// sample within the thread's measured phase: their increase is the per-run kdamond
    /// CPU use that damon-tests reports.
    kdamond_samples: Option<((u64, u64), (u64, u64))>,
    /// The generator's stationary phase, for a switch to page events at its start.
    stationary: Option<workload::Stationary>,
    /// Page-event state once the thread has switched ([`events`]).
    events: Option<Box<events::EventThread>>,
}

impl Thread {
    fn mlp_of(&self, kind: usize) -> u64 {
        if kind as u8 & K_STREAM != 0 {
            self.mlp.max(workload::STREAM_MLP) as u64
        } else {
            self.mlp as u64
        }
    }

    /// Where the thread's run in this window ends: `stop` or its measured phase's deadline,
    /// whichever comes first. `None` when it has nothing to run: done at its deadline (the
    /// thread is marked so), or already at the limit.
    fn window_limit(&mut self, stop: u64) -> Option<u64> {
        if self.clock >= self.deadline {
            self.state = ThreadState::Done;
            self.run_end = Some(self.deadline);
            return None;
        }
        let limit = stop.min(self.deadline);
        (self.clock < limit).then_some(limit)
    }

    /// How many accesses of mean cost `cost` (ps) the thread starts before `limit`: all
    /// that fit when it runs unpaced (at least one); when paced, the k-th starts at
    /// max(clock + (k − 1)·cost, next slot + (k − 1)·max(pace, cost)), as the access loop
    /// issues them (0 when the next slot is past the limit).
    fn accesses_before(&self, limit: u64, cost: f64) -> u64 {
        let by_cost = ((limit - self.clock) as f64 / cost).ceil().max(1.0) as u64;
        if self.pace == 0 {
            return by_cost;
        }
        if self.next_slot >= limit {
            return 0;
        }
        let step = (self.pace as f64).max(cost);
        by_cost.min(((limit - self.next_slot) as f64 / step).ceil() as u64)
    }

    fn window_bytes(&self) -> u64 {
        let mut b = 0;
        for (slot, &l) in self.win_lines.iter().enumerate() {
            let (r, w) = TimingModel::traffic((slot % NR_KINDS) as u8 & 3, l);
            b += r + w;
        }
        b
    }
}

/// One row of the timeline.
#[derive(Clone, Debug)]
struct Row {
    time_s: f64,
    throughput: f64,
    mean_latency_ns: f64,
    nodes: Vec<(u64, u64, f64, f64, f64, u32)>,
    vmstat: Vec<u64>,
    /// [`crate::engine::observe::ExtraColumns`] values.
    extra: Vec<u64>,
}

/// Per-node results in the summary.
#[derive(Clone, Debug, Serialize)]
pub struct NodeSummary {
    pub id: u8,
    /// Memory tier device id (`memory_tierN`).
    pub tier: u32,
    pub toptier: bool,
    pub kind: String,
    pub adistance: u32,
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// Kernel memory charged to the node (the zram pool).
    pub kernel_bytes: u64,
    pub mean_read_bandwidth_bytes_per_s: f64,
    pub mean_write_bandwidth_bytes_per_s: f64,
    pub mean_bandwidth_bytes_per_s: f64,
    /// Loaded read latency averaged over the run (time-weighted), ns.
    pub mean_read_latency_ns: f64,
    pub watermarks_pages: crate::mm::mem::Watermarks,
}

/// Swap and zram usage at the end.
#[derive(Clone, Debug, Serialize)]
pub struct SwapSummary {
    pub swap_used_bytes: u64,
    pub zram_stored_bytes: u64,
    pub zram_pool_bytes: u64,
}

/// `summary.json`: deterministic fields only.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub machine: String,
    pub seed: u64,
    pub sim_seconds: f64,
    /// Memory accesses simulated: for a replayed trace, those that left the CPU caches
    /// (misses, prefetches, write-backs; the workload's `accesses` counts every one).
    pub accesses: u64,
    pub throughput_accesses_per_s: f64,
    /// Mean loaded memory latency per cache line accessed, ns.
    pub mean_latency_ns: f64,
    pub nodes: Vec<NodeSummary>,
    pub swap: SwapSummary,
    pub kswapd_cpu_seconds: f64,
    /// Promotion rate over the run: `pgpromote_success` pages × 4 KiB per simulated second,
    /// in MB/s (1e6 B/s), as the seed-001 cover letter reports it.
    pub promote_mbps: f64,
    /// Demotion rate over the run (`pgdemote_kswapd` + `pgdemote_direct`), MB/s.
    pub demote_mbps: f64,
    pub oom_killed: Vec<String>,
    pub vmstat: BTreeMap<String, u64>,
    pub workloads: Vec<WorkloadResult>,
    /// System-wide used memory (present − free, all nodes, incl. the zram pool) averaged
    /// over the timeline rows: the seed-004 `memused.avg`.
    pub memused_avg_bytes: f64,
    /// kdamonds (present when `[kernel.damon]` configures any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damon: Vec<crate::mm::damon::KdamondSummary>,
    /// The user-space tiering controller's totals (`[tiering]`), under the timeline's
    /// `tiering_<stat>` names without the prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiering: Option<BTreeMap<String, u64>>,
    /// KSM (`/sys/kernel/mm/ksm/*` by file name, plus `cow_ksm`, `rmap_items`,
    /// `memory_saved_bytes` and ksmd's CPU time); only for kernels with KSM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ksm: Option<KsmSummary>,
    /// Hot-page selection's hint-fault latencies and the share under the threshold (an
    /// observation the kernel does not export; present when a threshold was tested).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_fault_latency: Option<crate::mm::numa::HintLatencySummary>,
}

/// KSM results at the end of a run.
#[derive(Clone, Debug, Serialize)]
pub struct KsmSummary {
    /// sysfs files and counters by name.
    pub sysfs: BTreeMap<String, i64>,
    /// `(pages_sharing + ksm_zero_pages) × PAGE_SIZE`: memory KSM saves.
    pub memory_saved_bytes: u64,
    pub ksmd_cpu_seconds: f64,
    /// ksmd CPU time / run time, %.
    pub ksmd_cpu_pct: f64,
}

/// Progress of a run, reported to the caller's callback.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Fraction of the simulated duration done.
    pub fraction: f64,
    /// Simulated time so far, seconds.
    pub sim_seconds: f64,
    /// Accesses simulated so far.
    pub accesses: u64,
}

/// What a run produced.
pub struct SimResult {
    pub summary: Summary,
    /// `timeline.csv` text.
    pub timeline_csv: String,
    /// Host memory of page and frame tables at the end, bytes.
    pub host_table_bytes: usize,
    /// The regions of every aggregation of the contexts with `record = true` (`damon.json`).
    pub damon_records: Vec<tiermem_core::damon_record::DamonRecord>,
    /// Threads that ran their measured phase as page events (`sim.engine`).
    pub event_threads: usize,
}

/// Barrier groups: each group's thread indices and its release times.
type BarrierGroups = Vec<(Vec<usize>, Vec<SimTime>)>;

/// The engine's threads from the workloads' thread specs, and the barrier groups (their
/// members; release times are filled in as they happen).
fn make_threads(
    specs: Vec<workload::ThreadSpec>,
    seed: u64,
    nn: usize,
    opts: RunOptions,
    events: bool,
) -> (Vec<Thread>, BarrierGroups) {
    let mut groups: BarrierGroups = Vec::new();
    // A thread without wakeups draws random numbers for its accesses only, so its
    // generator may run ahead with the stream; each producer holds up to 640 KiB of chunks,
    // so a run with more of them than MAX_PRODUCERS generates inline throughout.
    let ahead_ok =
        |s: &workload::ThreadSpec| s.generator.waiter().is_none() && s.generator.is_open_loop();
    let generate_ahead = opts.generate_ahead
        && specs.iter().filter(|s| ahead_ok(s)).count() <= crate::workload::ahead::MAX_PRODUCERS;
    let mut pmfs = Vec::new();
    let threads = specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            if let Some(g) = s.barrier_group {
                if groups.len() <= g {
                    groups.resize(g + 1, (Vec::new(), Vec::new()));
                }
                groups[g].0.push(i);
            }
            let waiter = s.generator.waiter();
            let rng = mix_seed(seed, s.workload as u64 + 1, i as u64);
            let stationary = events.then(|| s.generator.stationary(&mut pmfs)).flatten();
            let gen = if generate_ahead && waiter.is_none() && s.generator.is_open_loop() {
                crate::workload::ahead::Ahead::spawn(s.generator, rng.clone())
            } else {
                s.generator
            };
            Thread {
                spec_workload: s.workload,
                proc: s.proc,
                cpu_node: s.cpu_node,
                mlp: s.mlp,
                cpu_per_access: s.cpu_per_access.ps(),
                cpu_per_touch: 0,
                cpu_per_line: if s.cpu_per_line_from_run {
                    0
                } else {
                    s.cpu_per_line.ps()
                },
                cpu_per_line_at_run: s.cpu_per_line_from_run.then(|| s.cpu_per_line.ps()),
                run_duration: s.run_duration,
                latency_probe: s.latency_probe,
                gen,
                rng,
                buf: Vec::with_capacity(256),
                cursor: 0,
                clock: s.start.ps(),
                state: ThreadState::Waiting,
                deadline: u64::MAX,
                lat: vec![0; nn * NR_KINDS],
                lat_raw: vec![0; nn * NR_KINDS],
                win_lines: vec![0; nn * NR_KINDS],
                win_active: 0,
                runtime: waiter.map_or(0, |(_, setup)| setup.ps()),
                wake: waiter.map(|(every, _)| (every.ps(), every.ps())),
                pace: s.pace.map_or(0, |p| p.ps()),
                next_slot: s.start.ps(),
                accesses: 0,
                lines: 0,
                lat_sum: 0,
                bytes: 0,
                run_mark: None,
                run_end: None,
                memused: None,
                majflt_at_drop: None,
                kdamond_samples: None,
                stationary,
                events: None,
            }
        })
        .collect();
    (threads, groups)
}

/// The kdamonds: the contexts and modules of `[kernel.damon]` (a recording context's record
/// charged to the memory budget first), then the agent's `[reclaim.processes]` kdamond.
fn make_kdamonds(
    cfg: &SimConfig,
    kernel: &mut Kernel,
    proc_workload: &[usize],
) -> Result<Vec<crate::mm::damon::Kdamond>, SimError> {
    let bases = crate::mm::damon::node_bases(kernel);
    let node_range = |n: NodeId| tiermem_core::damon::AddrRange {
        start: bases[n.idx()],
        end: bases[n.idx()] + kernel.nodes()[n.idx()].present * PAGE_SIZE,
    };
    let mut kdamonds = Vec::new();
    if let Some(r) = cfg
        .kernel
        .release
        .filter(|r| r.damon_reclaim_drops_scheme())
    {
        if cfg.kernel.damon.reclaim.as_ref().is_some_and(|p| p.enabled) {
            tracing::warn!(
                "DAMON_RECLAIM on Linux {r}: the module drops its scheme when enabled (6.11 \
                     to 6.16; fixed in 6.17 by fed48693bdfe), so it monitors but never reclaims"
            );
        }
    }
    for (i, nc) in
        tiermem_damon::modules::contexts(&cfg.kernel.damon, cfg.kernel.release, node_range)
            .iter()
            .enumerate()
    {
        let seed = mix_seed(cfg.seed, 0xDA30, i as u64).next_u64();
        let k = crate::mm::damon::Kdamond::new(
            nc,
            kernel,
            proc_workload,
            &cfg.kernel.damon.costs,
            cfg.kernel.release,
            seed,
        )?;
        if nc.cfg.record {
            let a = &nc.cfg.attrs;
            let snapshots = cfg.duration.ps() / 1_000_000 / a.aggr_us.max(1) + 1;
            let targets = k.procs.len().max(1) as u64;
            kernel.budget_mut().take(
                &format!("kernel.damon.contexts[{i}].record"),
                &format!("the DAMON record of {} ({snapshots} snapshots)", nc.name),
                tiermem_core::damon_record::estimated_bytes(
                    snapshots,
                    u64::from(a.max_nr_regions) * targets,
                ),
            )?;
        }
        kdamonds.push(k);
    }
    if let Some(p) = cfg.reclaim.as_ref().and_then(|r| r.processes.as_ref()) {
        // The agent's [reclaim.processes]: its kdamond, as `tiermem agent` builds it.
        let targets = cfg.selected_workloads(&p.targets);
        let nc = tiermem_damon::modules::NamedContext {
            name: "reclaim-processes".into(),
            cfg: tiermem_core::damon::ContextConfig {
                ops: tiermem_core::damon::OpsKind::Vaddr,
                attrs: p.attrs.clone(),
                target_workloads: targets,
                regions: Vec::new(),
                schemes: vec![p.scheme()],
                record: false,
                per_workload_run: false,
            },
        };
        let seed = mix_seed(cfg.seed, 0xDA31, 0).next_u64();
        kdamonds.push(crate::mm::damon::Kdamond::new(
            &nc,
            kernel,
            proc_workload,
            &cfg.kernel.damon.costs,
            cfg.kernel.release,
            seed,
        )?);
    }
    Ok(kdamonds)
}

/// A configured simulation.
pub struct Simulation {
    cfg: SimConfig,
    extra: crate::engine::observe::ExtraColumns,
    pub kernel: Kernel,
    timing: TimingModel,
    threads: Vec<Thread>,
    groups: BarrierGroups,
    now: u64,
    rows: Vec<Row>,
    // Cumulative per-node bytes and time-weighted latency.
    node_read_bytes: Vec<u64>,
    node_write_bytes: Vec<u64>,
    node_lat_time: Vec<f64>,
    // Sample-interval accumulators.
    sample_accesses: u64,
    sample_read: Vec<u64>,
    sample_write: Vec<u64>,
    sample_lat: (u128, u64),
    /// kdamonds (`[kernel.damon]`) and the workload of each process (memcg-like groups).
    pub kdamonds: Vec<crate::mm::damon::Kdamond>,
    proc_workload: Vec<usize>,
    /// Per workload: whether its run's start and its end were told to the kdamonds, and
    /// its threads (both empty without a `per_workload_run` kdamond: nothing to tell).
    runs_told: Vec<(bool, bool)>,
    workload_threads: Vec<Vec<usize>>,
    /// The user-space tiering controller of `[tiering]`.
    user_tiering: Option<crate::engine::user_tiering::UserTiering>,
    /// Σ over timeline rows of used memory (all nodes, incl. the zram pool), pages.
    memused_sum: (u128, u64),
}

/// How many accesses ahead the hot loop prefetches page-table entries: the batch is
/// generated before it is executed, so the PTE lines can be in flight while earlier
/// accesses are processed.
const PREFETCH_AHEAD: usize = 12;

/// How many accesses of an endless stream ([`Generator::endless`]) are drawn at a time.
/// Each access's PTE is prefetched as it is drawn, so the generator's arithmetic runs
/// while the PTE lines are on their way, and the hot loop then finds them in the L1 cache
/// (64 lines: 4 KiB). The draws and their order are those of the generator's own batches
/// (results are identical).
const ENDLESS_BATCH: usize = 64;

/// Draw the next [`ENDLESS_BATCH`] accesses of `g` into `buf` (cleared first), prefetching
/// each one's PTE.
#[inline(never)]
fn draw_prefetched(
    g: &mut workload::PmbenchGen,
    rng: &mut Xoshiro256PlusPlus,
    ptes: &[u64],
    buf: &mut Vec<Access>,
) {
    // A local copy, so that the generator's state stays in registers.
    let mut r = rng.clone();
    buf.clear();
    buf.extend((0..ENDLESS_BATCH).map(|_| {
        let a = g.draw(&mut r);
        prefetch(ptes, a.idx as usize);
        a
    }));
    *rng = r;
}

#[allow(
    clippy::expect_used,
    reason = "seeding a xoshiro from a SplitMix64 cannot fail"
)]
fn mix_seed(seed: u64, a: u64, b: u64) -> Xoshiro256PlusPlus {
    let mut sm = SplitMix64::seed_from_u64(
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
    );
    Xoshiro256PlusPlus::from_rng(&mut sm).expect("seeding cannot fail")
}

/// How a simulation uses the host; results are the same under every choice.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Open-loop generators (pmbench) draw their accesses ahead on producer threads, one
    /// per simulated thread ([`crate::workload::ahead`]), so the engine's core spends no time
    /// on them. Default: on when the host has more than one CPU. Turn it off when other
    /// simulations already keep every core busy (the lab's parallel variants).
    pub generate_ahead: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            generate_ahead: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
        }
    }
}

impl Simulation {
    /// Build the machine, kernel and workloads of a validated config.
    pub fn new(cfg: &SimConfig) -> Result<Simulation, SimError> {
        Simulation::new_with(cfg, RunOptions::default())
    }

    /// [`Simulation::new`] with explicit [`RunOptions`].
    pub fn new_with(cfg: &SimConfig, opts: RunOptions) -> Result<Simulation, SimError> {
        cfg.validate()?;
        let topo = Topology::new(&cfg.machine)?;
        let nn = topo.nr_nodes();
        let curves = topo.nodes.iter().map(|n| n.curve).collect();
        let budget = crate::mm::budget::Budget::from_limit(&topo);
        let mut kernel = Kernel::new(topo, cfg.kernel.clone(), mix_seed(cfg.seed, 0xFFFF, 1));
        *kernel.budget_mut() = budget;
        let topo_copy = kernel.topo().clone();
        let specs = workload::build(cfg, &topo_copy, &mut kernel)?;
        if cfg
            .workloads
            .iter()
            .any(|w| matches!(w, tiermem_core::config::WorkloadConfig::Synthetic(_)))
        {
            // A synthetic workload's placement happens before time 0, as the live runner's
            // does (its counters start at the end of population): so do the counters here.
            kernel.reset_vmstat();
        }
        kernel.set_vmstat_thresholds();
        let events = cfg.sim.engine != tiermem_core::config::EngineKind::Access;
        let (threads, groups) = make_threads(specs, cfg.seed, nn, opts, events);
        for (i, th) in threads.iter().enumerate() {
            let tid = kernel.numa_register_task(th.proc, th.cpu_node, SimTime(th.clock));
            debug_assert_eq!(tid, i);
        }
        let mut proc_workload = vec![usize::MAX; kernel.procs().len()];
        for th in &threads {
            proc_workload[th.proc as usize] = th.spec_workload;
        }
        let mut kdamonds = make_kdamonds(cfg, &mut kernel, &proc_workload)?;
        let user_tiering = crate::engine::user_tiering::UserTiering::new(
            cfg,
            &kernel,
            &proc_workload,
            &mut kdamonds,
            mix_seed(cfg.seed, 0x7131, 0).next_u64(),
        )?;
        let extra = crate::engine::observe::ExtraColumns::new(cfg, &proc_workload);
        let told = if kdamonds.iter().any(|k| k.per_workload_run()) {
            cfg.workloads.len()
        } else {
            0
        };
        let workload_threads = (0..told)
            .map(|w| {
                (0..threads.len())
                    .filter(|&t| proc_workload.get(threads[t].proc as usize) == Some(&w))
                    .collect()
            })
            .collect();
        let mut sim = Simulation {
            extra,
            kdamonds,
            user_tiering,
            proc_workload,
            runs_told: vec![(false, false); told],
            workload_threads,
            memused_sum: (0, 0),
            cfg: cfg.clone(),
            kernel,
            timing: TimingModel::new(curves),
            threads,
            groups,
            now: 0,
            rows: Vec::new(),
            node_read_bytes: vec![0; nn],
            node_write_bytes: vec![0; nn],
            node_lat_time: vec![0.0; nn],
            sample_accesses: 0,
            sample_read: vec![0; nn],
            sample_write: vec![0; nn],
            sample_lat: (0, 0),
        };
        for t in 0..sim.threads.len() {
            sim.update_latency_table(t);
        }
        Ok(sim)
    }

    fn update_latency_table(&mut self, ti: usize) {
        let topo = self.kernel.topo();
        let th = &mut self.threads[ti];
        for n in 0..topo.nr_nodes() {
            let f = self.timing.factor[n];
            for kind in 0..NR_KINDS {
                let write = kind & 3 != 0;
                let node = &topo.nodes[n];
                let l0 = if write {
                    node.write_latency
                } else {
                    node.read_latency
                };
                let remote = topo.idle_latency(th.cpu_node, node.id, write).ps() - l0.ps();
                // A write-back is posted: it loads the node, the thread does not wait.
                let loaded = if kind == K_WRITEBACK as usize {
                    0
                } else {
                    (l0.ps() as f64 * f) as u64 + remote
                };
                th.lat_raw[n * NR_KINDS + kind] = loaded;
                th.lat[n * NR_KINDS + kind] = loaded / th.mlp_of(kind).max(1);
            }
        }
    }

    /// Run to the end. `progress` is called with the fraction of simulated time done.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<SimResult, SimError> {
        let end = self.cfg.duration.ps();
        let tick = self.cfg.sim.tick.ps();
        let sample = self.cfg.sim.sample_interval.ps();
        let mut next_sample = sample;
        let mut last_progress = 0u64;
        while self.now < end {
            let stop = (self.now + tick).min(end);
            if self.kernel.has_pending_mbinds() {
                self.run_due_mbinds();
            }
            self.run_window(stop)?;
            self.end_window(stop - self.now);
            self.now = stop;
            if let Some(u) = &mut self.user_tiering {
                u.run_due(self.now / 1_000_000_000, &mut self.kernel, &self.kdamonds);
            }
            if self.now >= next_sample || self.now >= end {
                self.sample_row();
                next_sample += sample;
                self.kernel.background_frees();
            }
            if self.now - last_progress >= end / 400 {
                last_progress = self.now;
                progress(self.progress(end));
            }
            if self.threads.iter().all(|t| t.state == ThreadState::Done) {
                if self
                    .rows
                    .last()
                    .is_none_or(|r| r.time_s < SimTime(self.now).secs_f64())
                {
                    self.sample_row();
                }
                break;
            }
        }
        progress(self.progress(end));
        for th in &mut self.threads {
            if let crate::workload::Generator::Trace(g) = &mut th.gen {
                if let Some(e) = g.take_failure() {
                    return Err(SimError::Trace(e));
                }
            }
        }
        Ok(self.finish())
    }

    /// Tell the kdamonds the workload runs that started or ended since the last call (for
    /// `per_workload_run` contexts): a workload's run starts with its first thread's
    /// measured phase and ends when all its threads are done.
    fn tell_workload_runs(&mut self) {
        for w in 0..self.runs_told.len() {
            if self.runs_told[w] == (true, true) {
                continue;
            }
            let (mut start, mut end, mut all_done) = (None::<u64>, 0u64, true);
            for &ti in &self.workload_threads[w] {
                let th = &self.threads[ti];
                if let Some(m) = th.run_mark {
                    start = Some(start.map_or(m.0, |s| s.min(m.0)));
                }
                match (th.run_end, th.state) {
                    (Some(e), _) => end = end.max(e),
                    (None, ThreadState::Done) => end = end.max(th.clock),
                    _ => all_done = false,
                }
            }
            let told = &mut self.runs_told[w];
            let mut tell = |t: u64, started: bool| {
                for k in &mut self.kdamonds {
                    k.workload_run(w, t / 1_000_000, started);
                }
            };
            if let (Some(s), false) = (start, told.0) {
                told.0 = true;
                tell(s, true);
            }
            if told.0 && all_done && !told.1 {
                told.1 = true;
                tell(end, false);
            }
        }
    }

    fn progress(&self, end: u64) -> Progress {
        Progress {
            fraction: self.now as f64 / end as f64,
            sim_seconds: SimTime(self.now).secs_f64(),
            accesses: self.threads.iter().map(|t| t.accesses).sum(),
        }
    }

    fn run_window(&mut self, stop: u64) -> Result<(), SimError> {
        let done_before = self
            .threads
            .iter()
            .filter(|t| t.state == ThreadState::Done)
            .count();
        loop {
            for ti in 0..self.threads.len() {
                if self.threads[ti].state == ThreadState::Waiting && self.threads[ti].clock < stop {
                    self.threads[ti].state = ThreadState::Running;
                }
                if self.threads[ti].state == ThreadState::Running {
                    if self.threads[ti].events.is_some() {
                        self.run_events(ti, stop)?;
                    } else {
                        self.run_thread(ti, stop)?;
                    }
                }
            }
            // Kernel threads catch up.
            for n in 0..self.kernel.nodes().len() {
                if self.kernel.kswapd_awake(n) {
                    self.kernel.run_kswapd(n, SimTime(stop));
                }
            }
            // kdamonds catch up (their CPU time is their own).
            self.tell_workload_runs();
            for k in &mut self.kdamonds {
                k.run_until(
                    &mut self.kernel,
                    &self.proc_workload,
                    &self.cfg.kernel.damon.costs,
                    stop / 1_000_000,
                );
            }
            self.kernel.run_ksmd(SimTime(stop));
            // Barriers: release a group when every unfinished member waits.
            let mut released = false;
            for g in 0..self.groups.len() {
                let members = &self.groups[g].0;
                let live: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|&m| self.threads[m].state != ThreadState::Done)
                    .collect();
                if !live.is_empty()
                    && live
                        .iter()
                        .all(|&m| self.threads[m].state == ThreadState::Blocked)
                {
                    let t = live
                        .iter()
                        .map(|&m| self.threads[m].clock)
                        .max()
                        .unwrap_or(stop);
                    self.groups[g].1.push(SimTime(t));
                    for &m in &live {
                        self.threads[m].clock = t;
                        self.threads[m].state = ThreadState::Running;
                    }
                    released = true;
                }
            }
            if !released {
                if self
                    .threads
                    .iter()
                    .filter(|t| t.state == ThreadState::Done)
                    .count()
                    > done_before
                {
                    self.reap_exited();
                }
                return Ok(());
            }
        }
    }

    /// Timed `mbind` calls due at the window start; the migration time is charged to the
    /// process's first unfinished thread (the caller).
    fn run_due_mbinds(&mut self) {
        for (proc, cost) in self.kernel.run_due_mbinds(SimTime(self.now)) {
            if let Some(th) = self
                .threads
                .iter_mut()
                .find(|t| t.proc == proc && t.state != ThreadState::Done)
            {
                th.clock = th.clock.max(self.now) + cost.ps();
            }
        }
    }

    /// A process whose threads have all finished exits and frees its memory.
    fn reap_exited(&mut self) {
        for p in 0..self.kernel.procs().len() {
            if self.kernel.procs()[p].alive
                && self
                    .threads
                    .iter()
                    .filter(|t| t.proc as usize == p)
                    .all(|t| t.state == ThreadState::Done)
            {
                self.kernel.exit_process(p as u16);
            }
        }
    }

    /// Execute one thread until its clock reaches `stop`, it blocks, or it finishes.
    fn run_thread(&mut self, ti: usize, stop: u64) -> Result<(), SimError> {
        // Every access sets the accessed bit; stores also the dirty bit and the soft-dirty
        // bit KSM reads contents through. A cache write-back (kind 3) sets none.
        const A: u64 = PTE_ACCESSED;
        const W: u64 = PTE_ACCESSED | PTE_DIRTY | PTE_SOFTDIRTY;
        const SET: [u64; NR_KINDS] = [A, W, W, 0, A, W, W, A];
        // Bits that must read PRESENT alone for the access to proceed: stores also fault on
        // write-protected (KSM) pages; a write-back only on a page no longer mapped.
        const R: u64 = PTE_PRESENT | PTE_PROTNONE;
        const WP: u64 = R | PTE_RDONLY;
        const WB: u64 = PTE_PRESENT;
        const FAULT_MASK: [u64; NR_KINDS] = [R, WP, WP, WB, R, WP, WP, R];
        loop {
            let th = &mut self.threads[ti];
            if !self.kernel.procs()[th.proc as usize].alive {
                th.state = ThreadState::Done;
                return Ok(());
            }
            if th.cursor >= th.buf.len() {
                if let Some(g) = th.gen.endless() {
                    let ptes = self.kernel.procs()[th.proc as usize].ptes.as_slice();
                    draw_prefetched(g, &mut th.rng, ptes, &mut th.buf);
                    th.cursor = 0;
                    continue;
                }
                match th.gen.next(&mut th.rng, &mut th.buf) {
                    Step::Accesses => {
                        th.cursor = 0;
                        if let Some(c) = th.gen.batch_cpu_ps() {
                            th.cpu_per_access = c;
                            th.cpu_per_touch = c;
                        }
                    }
                    Step::RunStart => {
                        let bytes = th.bytes + th.window_bytes();
                        th.run_mark = Some((th.clock, th.accesses, th.lines, th.lat_sum, bytes));
                        if let Some(c) = th.cpu_per_line_at_run {
                            th.cpu_per_line = c;
                        }
                        if let Some(d) = th.run_duration {
                            th.deadline = th.clock + d.ps();
                        }
                        if self.wants_events(ti) {
                            self.switch_to_events(ti);
                            return self.run_events(ti, stop);
                        }
                        continue;
                    }
                    Step::Barrier => {
                        th.state = ThreadState::Blocked;
                        return Ok(());
                    }
                    Step::File(io) => {
                        if self.file_step(ti, io) {
                            return Ok(());
                        }
                        continue;
                    }
                    Step::Done => {
                        th.state = ThreadState::Done;
                        th.run_end = Some(th.clock);
                        return Ok(());
                    }
                }
                if th.buf.is_empty() {
                    continue;
                }
            }
            let Some(limit) = th.window_limit(stop) else {
                return Ok(());
            };
            // The hot path.
            let ptes = self.kernel.ptes_mut(th.proc);
            let mut clock = th.clock;
            let start_clock = clock;
            let mut i = th.cursor;
            let n = th.buf.len();
            let (cpa, cpl, cpt) = (th.cpu_per_access, th.cpu_per_line, th.cpu_per_touch);
            let (pace, mut next_slot) = (th.pace, th.next_slot);
            let mut accesses = 0u64;
            let mut lines_total = 0u64;
            let mut lat_sum = 0u64;
            let mut fault = None;
            while i < n && clock < limit {
                if i + PREFETCH_AHEAD < n {
                    prefetch(ptes, th.buf[i + PREFETCH_AHEAD].idx as usize);
                }
                if clock < next_slot {
                    // A fixed-rate thread spins until the access's issue time (within
                    // this window; past it, the spin continues in the next one).
                    if next_slot >= limit {
                        clock = limit;
                        break;
                    }
                    clock = next_slot;
                }
                let a = th.buf[i];
                let e = ptes[a.idx as usize];
                let kind = a.kind as usize;
                if e & FAULT_MASK[kind] != PTE_PRESENT {
                    fault = Some(a);
                    break;
                }
                ptes[a.idx as usize] = e | SET[kind];
                let slot = pte_node(e) * NR_KINDS + kind;
                let lines = a.lines as u64;
                i += 1;
                if lines == 0 {
                    // A touch of a cache-resident line (the thread's own stack, a replayed
                    // cache hit): no traffic, not one of the paced accesses.
                    clock += cpt;
                    continue;
                }
                next_slot += pace;
                clock += cpa + lines * (cpl + th.lat[slot]);
                lat_sum += lines * th.lat_raw[slot];
                th.win_lines[slot] += lines;
                lines_total += lines;
                accesses += 1;
            }
            th.cursor = i;
            th.next_slot = next_slot;
            th.accesses += accesses;
            th.lines += lines_total;
            th.lat_sum += lat_sum as u128;
            th.win_active += clock - start_clock;
            th.clock = clock;
            self.sample_accesses += accesses;
            self.sample_lat.0 += lat_sum as u128;
            self.sample_lat.1 += lines_total;
            if let Some(a) = fault {
                if self.access_fault(ti, a, clock) {
                    return Ok(());
                }
            }
        }
    }

    /// The fault an access of thread `ti` took at `clock`: a NUMA hint fault, a copy on
    /// write (zero page, KSM page) or a missing page; the thread is charged its cost and the
    /// page fill. True when the fault ended the thread (OOM kill).
    #[cold]
    fn access_fault(&mut self, ti: usize, a: Access, clock: u64) -> bool {
        let th = &self.threads[ti];
        let (proc, cpu) = (th.proc, th.cpu_node);
        let pte = self.kernel.procs()[proc as usize].ptes[a.idx as usize];
        if a.kind == K_WRITEBACK {
            // The write-back of a page no longer mapped: its data left with the page.
            self.threads[ti].cursor += 1;
            return false;
        }
        // Only a write-protected page lets a read-modify-write's load through; any
        // other fault is the load's (the store retries and may fault again).
        let write = a.kind & 3 != 0 && !(th.gen.stores_load_first() && pte & PTE_RDONLY == 0);
        if pte & PTE_PROTNONE != 0 {
            // A NUMA hint fault; the access then proceeds on the (possibly new) page.
            let cost = self
                .kernel
                .numa_hint_fault(ti, proc, a.idx, write, SimTime(clock));
            let th = &mut self.threads[ti];
            th.clock += cost.ps();
            th.win_active += cost.ps();
            return false;
        }
        let result = if pte & PTE_ZERO != 0 {
            // A store to the zero page a load mapped: copy on write.
            self.kernel
                .zero_page_wp_fault(proc, a.idx, cpu, SimTime(clock))
        } else if pte & PTE_PRESENT != 0 {
            // A store to a write-protected KSM page or KSM zero page: copy on write.
            debug_assert!(write && pte & PTE_RDONLY != 0);
            self.kernel.ksm_wp_fault(proc, a.idx, cpu, SimTime(clock))
        } else {
            self.kernel
                .handle_fault(proc, a.idx, write, cpu, SimTime(clock))
        };
        match result {
            Ok(cost) => {
                // The page fill: 64 streaming stores to the new page's node (none
                // when a load mapped the shared zero page).
                let new = self.kernel.procs()[proc as usize].ptes[a.idx as usize];
                let th = &mut self.threads[ti];
                let mut fill = 0;
                if new & PTE_ZERO == 0 {
                    let slot = pte_node(new) * NR_KINDS + (K_NTWRITE | K_STREAM) as usize;
                    fill = 64 * th.lat[slot];
                    th.win_lines[slot] += 64;
                }
                th.clock += cost.ps() + fill;
                th.win_active += cost.ps() + fill;
                false
            }
            Err(crate::mm::FaultError::OomKilled) => self.oom_killed(ti),
        }
    }

    /// A thread's `read(2)`, `write(2)` or `drop_caches`: the kernel's time (the copies,
    /// the device reads of misses, any direct reclaim) is the thread's. True when it ended
    /// the thread (OOM kill).
    #[cold]
    fn file_step(&mut self, ti: usize, io: crate::workload::access::FileIo) -> bool {
        let th = &self.threads[ti];
        let (proc, cpu, clock) = (th.proc, th.cpu_node, th.clock);
        match self.kernel.file_io(proc, &io, cpu, SimTime(clock)) {
            Ok(r) => {
                let used = self.used_pages();
                let th = &mut self.threads[ti];
                if io.op == crate::mm::filemap::FileOp::DropCaches {
                    th.memused = Some((used, 0, 0));
                    th.majflt_at_drop = Some(self.kernel.procs()[proc as usize].maj_flt);
                }
                th.clock += r.cost.ps();
                th.win_active += r.cost.ps();
                false
            }
            Err(crate::mm::FaultError::OomKilled) => self.oom_killed(ti),
        }
    }

    /// Thread `ti`'s process was killed by the OOM killer in its fault or system call: the
    /// thread ends there. Returns true (the thread ended).
    fn oom_killed(&mut self, ti: usize) -> bool {
        let th = &mut self.threads[ti];
        th.state = ThreadState::Done;
        th.run_end = Some(th.clock);
        true
    }

    /// Pages in use on all nodes (present − free, the zram pool included).
    fn used_pages(&self) -> u64 {
        self.kernel.nodes().iter().map(|n| n.present - n.free).sum()
    }

    /// Close a timing window: account traffic, solve the next window's latencies.
    fn end_window(&mut self, window_ps: u64) {
        let nn = self.kernel.nodes().len();
        let mut mixes = Vec::with_capacity(self.threads.len());
        for th in &mut self.threads {
            let mut mix = ThreadMix {
                other_ps: 0.0,
                active_frac: (th.win_active as f64 / window_ps as f64).min(1.0),
                stall_ps: vec![0.0; nn],
                read_bytes: vec![0.0; nn],
                write_bytes: vec![0.0; nn],
            };
            let mut stall_now = 0.0;
            for n in 0..nn {
                for kind in 0..NR_KINDS {
                    let l = th.win_lines[n * NR_KINDS + kind];
                    if l == 0 {
                        continue;
                    }
                    let (r, w) = TimingModel::traffic(kind as u8 & 3, l);
                    mix.read_bytes[n] += r as f64;
                    mix.write_bytes[n] += w as f64;
                    self.node_read_bytes[n] += r;
                    self.node_write_bytes[n] += w;
                    self.sample_read[n] += r;
                    self.sample_write[n] += w;
                    th.bytes += r + w;
                    let node = &self.kernel.topo().nodes[n];
                    let l0 = if kind & 3 != 0 {
                        node.write_latency
                    } else {
                        node.read_latency
                    }
                    .ps() as f64;
                    if kind == K_WRITEBACK as usize {
                        continue; // traffic without a stall
                    }
                    let mlp = th.mlp_of(kind) as f64;
                    mix.stall_ps[n] += l as f64 * l0 / mlp;
                    stall_now += l as f64 * l0 * self.timing.factor[n] / mlp;
                }
            }
            mix.other_ps = (th.win_active as f64 - stall_now).max(0.0);
            th.runtime += th.win_active;
            th.win_lines.iter_mut().for_each(|x| *x = 0);
            th.win_active = 0;
            mixes.push(mix);
        }
        for n in 0..nn {
            let (r, w) = self.kernel.kernel_traffic()[n];
            self.node_read_bytes[n] += r;
            self.node_write_bytes[n] += w;
            self.sample_read[n] += r;
            self.sample_write[n] += w;
            self.node_lat_time[n] += self.timing.factor[n] * window_ps as f64;
        }
        self.timing
            .solve(&mixes, self.kernel.kernel_traffic(), window_ps as f64);
        self.kernel.clear_kernel_traffic();
        for t in 0..self.threads.len() {
            self.update_latency_table(t);
        }
        // vmstat_update, once a second.
        const SEC_PS: u64 = 1_000_000_000_000;
        if (self.now + window_ps) / SEC_PS > self.now / SEC_PS {
            self.kernel.vmstat_update();
            self.kernel.wb_flush(SimTime(self.now + window_ps));
        }
        // Scheduler tick of each running task: the NUMA scanner runs in task context.
        let now = SimTime(self.now + window_ps);
        for ti in 0..self.threads.len() {
            if self.threads[ti].wake.is_some() {
                self.wake_waiting_thread(ti, now);
                continue;
            }
            if self.threads[ti].state != ThreadState::Running {
                continue;
            }
            let cost = self
                .kernel
                .task_tick_numa(ti, self.threads[ti].runtime / 1000, now);
            let th = &mut self.threads[ti];
            th.clock += cost.ps();
            th.win_active += cost.ps();
        }
    }

    /// The wakeups of a waiting thread up to `now`: each costs `task_wakeup` of CPU time,
    /// and a scheduler tick lands in it with probability `task_wakeup / TICK` (drawn from
    /// the thread's own random stream, so runs stay reproducible), calling
    /// `task_tick_numa` with the thread's runtime as `task_tick_fair` would.
    fn wake_waiting_thread(&mut self, ti: usize, now: SimTime) {
        let wake_ps = self.kernel.config().costs.task_wakeup.ps();
        // P(hit) as a 64-bit threshold: wake / tick (a wake longer than a tick always hits).
        let tick_ps = crate::mm::TICK_NS * 1000;
        let threshold = if wake_ps >= tick_ps {
            u64::MAX
        } else {
            ((wake_ps as u128) << 64).div_euclid(tick_ps as u128) as u64
        };
        loop {
            let th = &mut self.threads[ti];
            let Some((every, next)) = th.wake else {
                return;
            };
            if next > now.ps() || !self.kernel.procs()[th.proc as usize].alive {
                return;
            }
            th.wake = Some((every, next + every));
            th.runtime += wake_ps;
            if th.rng.next_u64() >= threshold {
                continue;
            }
            let cost = self
                .kernel
                .task_tick_numa(ti, th.runtime / 1000, SimTime(next));
            self.threads[ti].runtime += cost.ps();
        }
    }

    fn sample_row(&mut self) {
        let prev_t = self.rows.last().map_or(0.0, |r| r.time_s);
        let t = SimTime(self.now).secs_f64();
        let dt = (t - prev_t).max(1e-12);
        let nodes = (0..self.kernel.nodes().len())
            .map(|n| {
                let node = &self.kernel.nodes()[n];
                let lat = self.kernel.topo().nodes[n].read_latency.ns_f64() * self.timing.factor[n];
                let tiering = self.kernel.memory_tiering();
                let th = if tiering && self.kernel.topo().is_toptier(NodeId(n as u8)) {
                    self.kernel.effective_hot_threshold(n)
                } else {
                    0
                };
                (
                    node.used_user(),
                    node.free,
                    self.sample_read[n] as f64 / dt / 1e6,
                    self.sample_write[n] as f64 / dt / 1e6,
                    lat,
                    th,
                )
            })
            .collect();
        let vmstat = Vm::ALL
            .iter()
            .map(|&v| self.kernel.vmstat().total(v))
            .collect();
        let used = self.used_pages();
        let kdamond_ns: u64 = self.kdamonds.iter().map(|k| k.cpu_ns()).sum();
        self.memused_sum.0 += used as u128;
        self.memused_sum.1 += 1;
        for th in self
            .threads
            .iter_mut()
            .filter(|t| t.state != ThreadState::Done)
        {
            if let Some((base, sum, n)) = &mut th.memused {
                *sum += used as i128 - *base as i128;
                *n += 1;
            }
            if th.run_mark.is_some() && !self.kdamonds.is_empty() {
                let now = (kdamond_ns, self.now);
                th.kdamond_samples = Some((th.kdamond_samples.map_or(now, |s| s.0), now));
            }
        }
        let mean_lat = if self.sample_lat.1 > 0 {
            self.sample_lat.0 as f64 / self.sample_lat.1 as f64 / 1e3
        } else {
            0.0
        };
        let mut per_workload = vec![0u64; self.cfg.workloads.len()];
        for th in &self.threads {
            per_workload[th.spec_workload] += th.accesses;
        }
        let extra = self.extra.sample(
            &self.kernel,
            &per_workload,
            &self.kdamonds,
            self.user_tiering.as_ref().map(|u| u.stats()),
        );
        self.rows.push(Row {
            time_s: t,
            throughput: self.sample_accesses as f64 / dt,
            mean_latency_ns: mean_lat,
            nodes,
            vmstat,
            extra,
        });
        self.sample_accesses = 0;
        self.sample_lat = (0, 0);
        self.sample_read.iter_mut().for_each(|x| *x = 0);
        self.sample_write.iter_mut().for_each(|x| *x = 0);
    }

    fn timeline_csv(&self) -> String {
        let nn = self.kernel.nodes().len();
        let mut header = tiermem_core::timeline::base_columns(nn);
        header.extend(self.extra.names().iter().cloned());
        let mut s = header.join(",");
        s.push('\n');
        for r in &self.rows {
            let _ = write!(
                s,
                "{:.6},{:.1},{:.3}",
                r.time_s, r.throughput, r.mean_latency_ns
            );
            for (u, f, rd, wr, l, th) in &r.nodes {
                let _ = write!(s, ",{u},{f},{rd:.3},{wr:.3},{l:.3},{th}");
            }
            for v in r.vmstat.iter().chain(&r.extra) {
                let _ = write!(s, ",{v}");
            }
            s.push('\n');
        }
        s
    }

    fn finish(&mut self) -> SimResult {
        for k in self.kdamonds.iter().filter(|k| k.never_started()) {
            tracing::warn!(
                "kernel.damon ({}): per_workload_run, but no run of its workloads started (only \
                 workloads with a measured phase have runs): it never ran",
                k.name
            );
        }
        let sim_secs = SimTime(self.now).secs_f64().max(1e-12);
        let now = self.now;
        let reports: Vec<ThreadReport> = self
            .threads
            .iter()
            .map(|th| {
                let mut r = ThreadReport {
                    workload: th.spec_workload,
                    latency_probe: th.latency_probe,
                    ..Default::default()
                };
                if let Some((t0, acc, lines, lat, bytes)) = th.run_mark {
                    let t_end = th.run_end.unwrap_or(th.clock.min(now)).max(t0);
                    r.run_start = Some(SimTime(t0));
                    r.run_end = Some(SimTime(t_end));
                    r.run_accesses = th.accesses - acc;
                    r.run_lines = th.lines - lines;
                    r.run_latency_ps = th.lat_sum - lat;
                    r.run_bytes = th.bytes - bytes;
                }
                r.replayed = th.gen.replayed();
                r.cache = th.gen.cache_stats();
                r.memused_avg_bytes = th
                    .memused
                    .filter(|m| m.2 > 0)
                    .map(|(_, sum, n)| sum as f64 / n as f64 * PAGE_SIZE as f64);
                r.major_faults = th
                    .majflt_at_drop
                    .filter(|_| th.state == ThreadState::Done)
                    .map(|base| self.kernel.procs()[th.proc as usize].maj_flt - base);
                r.kdamond_cpu_pct = th
                    .kdamond_samples
                    .filter(|((_, t0), (_, t1))| th.state == ThreadState::Done && t1 > t0)
                    .map(|((c0, t0), (c1, t1))| (c1 - c0) as f64 * 1e3 / (t1 - t0) as f64 * 100.0);
                r
            })
            .collect();
        let barriers: Vec<Vec<SimTime>> = self.groups.iter().map(|g| g.1.clone()).collect();
        let workloads = workload::results(&self.cfg, &reports, &barriers);
        let accesses: u64 = self.threads.iter().map(|t| t.accesses).sum();
        let lines: u64 = self.threads.iter().map(|t| t.lines).sum();
        let lat: u128 = self.threads.iter().map(|t| t.lat_sum).sum();
        let topo = self.kernel.topo();
        let nodes = (0..topo.nr_nodes())
            .map(|n| {
                let node = &self.kernel.nodes()[n];
                let tn = &topo.nodes[n];
                NodeSummary {
                    id: n as u8,
                    tier: topo.tiers[topo.tier_index(tn.id)].id,
                    toptier: topo.is_toptier(tn.id),
                    kind: format!("{:?}", tn.kind).to_lowercase(),
                    adistance: tn.adistance,
                    capacity_bytes: node.present * PAGE_SIZE,
                    used_bytes: node.used_user() * PAGE_SIZE,
                    free_bytes: node.free * PAGE_SIZE,
                    kernel_bytes: node.kernel_pages * PAGE_SIZE,
                    mean_read_bandwidth_bytes_per_s: self.node_read_bytes[n] as f64 / sim_secs,
                    mean_write_bandwidth_bytes_per_s: self.node_write_bytes[n] as f64 / sim_secs,
                    mean_bandwidth_bytes_per_s: (self.node_read_bytes[n] + self.node_write_bytes[n])
                        as f64
                        / sim_secs,
                    mean_read_latency_ns: tn.read_latency.ns_f64() * self.node_lat_time[n]
                        / (self.now.max(1) as f64),
                    watermarks_pages: node.wmark,
                }
            })
            .collect();
        let (swap_pages, zram_pages) = self.kernel.swapped_pages();
        let vmstat = self.kernel.vmstat().snapshot();
        let mbps = |names: &[&str]| {
            let pages: u64 = names.iter().filter_map(|n| vmstat.get(*n)).sum();
            (pages * PAGE_SIZE) as f64 / sim_secs / 1e6
        };
        let promote_mbps = mbps(&["pgpromote_success"]);
        let demote_mbps = mbps(&["pgdemote_kswapd", "pgdemote_direct"]);
        let summary = Summary {
            machine: topo.name.clone(),
            seed: self.cfg.seed,
            sim_seconds: SimTime(self.now).secs_f64(),
            accesses,
            throughput_accesses_per_s: accesses as f64 / sim_secs,
            mean_latency_ns: if lines > 0 {
                lat as f64 / lines as f64 / 1e3
            } else {
                0.0
            },
            nodes,
            swap: SwapSummary {
                swap_used_bytes: swap_pages * PAGE_SIZE,
                zram_stored_bytes: zram_pages * PAGE_SIZE,
                zram_pool_bytes: self.kernel.zram_pool_bytes(),
            },
            kswapd_cpu_seconds: self.kernel.kswapd_cpu_seconds(),
            promote_mbps,
            demote_mbps,
            oom_killed: self
                .kernel
                .oom_victims()
                .iter()
                .map(|&p| self.kernel.procs()[p as usize].name.clone())
                .collect(),
            vmstat,
            workloads,
            memused_avg_bytes: if self.memused_sum.1 > 0 {
                (self.memused_sum.0 * PAGE_SIZE as u128) as f64 / self.memused_sum.1 as f64
            } else {
                0.0
            },
            damon: crate::mm::damon::summaries(&self.kdamonds, SimTime(self.now).secs_f64()),
            tiering: self.user_tiering.as_ref().map(|u| {
                tiermem_core::timeline::TIERING_STATS
                    .iter()
                    .filter_map(|s| Some((s.to_string(), u.stats().get(s)?)))
                    .collect()
            }),
            ksm: self.kernel.ksm_counters().map(|sysfs| {
                let saved = (sysfs["pages_sharing"] + sysfs["ksm_zero_pages"]).max(0) as u64;
                let cpu = self.kernel.ksmd_cpu_time().secs_f64();
                KsmSummary {
                    sysfs,
                    memory_saved_bytes: saved * PAGE_SIZE,
                    ksmd_cpu_seconds: cpu,
                    ksmd_cpu_pct: 100.0 * cpu / sim_secs,
                }
            }),
            hint_fault_latency: self.kernel.hint_latency().summary(),
        };
        SimResult {
            summary,
            timeline_csv: self.timeline_csv(),
            host_table_bytes: self.kernel.host_bytes(),
            damon_records: crate::mm::damon::records(&self.kdamonds),
            event_threads: self.threads.iter().filter(|t| t.events.is_some()).count(),
        }
    }
}
