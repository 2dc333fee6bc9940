//! Workload models: access generators for pmbench, STREAM and MLC
//! (`workload-models.md` §1–§3), and the per-workload results they report.
//!
//! A generator fills a batch of [`Access`]es (page-table index, cache lines, kind) for one
//! thread, or reports a phase mark, a barrier or the end. Generation is batched and
//! allocation-free so that the engine's per-access loop stays a table lookup and a few
//! additions.

pub mod access;
pub mod ahead;
pub mod damon_workloads;
pub mod pmf;
pub mod synthetic;
pub mod trace_replay;
pub mod vm_guest;
pub mod xsbench;

use crate::mm::Kernel;
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tiermem_core::config::{
    MlcConfig, MlcTraffic, PmbenchConfig, PmbenchPattern, SimConfig, StreamConfig, TraceConfig,
    WorkloadConfig, XsbenchConfig,
};
use tiermem_core::topology::Topology;
use tiermem_core::units::{NodeId, SimDuration, SimTime, LINE_SIZE, PAGE_SIZE};

pub use crate::workload::access::{
    Access, Step, K_NTWRITE, K_READ, K_STREAM, K_WRITE, K_WRITEBACK, NR_KINDS, STREAM_MLP,
};

const BATCH: usize = 256;

/// A generator's stationary phase, as the page-event engine sees it.
#[derive(Clone)]
pub struct Stationary {
    /// Per page-table index, the probability that one access touches the page.
    pub pmf: pmf::Pmf,
    /// The share of accesses that are loads (the rest are stores).
    pub read_share: f64,
    /// Pages touched (stored to, without traffic) once every `period` accesses rather than
    /// drawn: the synthetic loop's stack and control block after each batch. Empty for
    /// pmbench.
    pub periodic: Vec<u32>,
    /// See `periodic`.
    pub period: u64,
}

/// A thread's access generator.
pub enum Generator {
    Pmbench(PmbenchGen),
    Stream(StreamGen),
    MlcBw(MlcBwGen),
    MlcLat(MlcLatGen),
    Parsec(crate::workload::damon_workloads::ParsecGen),
    HotRegions(crate::workload::damon_workloads::HotRegionsGen),
    VmGuest(crate::workload::vm_guest::VmGen),
    Xsbench(crate::workload::xsbench::XsbenchGen),
    Trace(Box<crate::workload::trace_replay::TraceGen>),
    Synthetic(crate::workload::synthetic::SyntheticGen),
    /// An open-loop generator running ahead on a producer thread ([`ahead`]).
    Ahead(Box<ahead::Ahead>),
}

impl Generator {
    /// The thread's stores are read-modify-writes of the word (the live workload runner's
    /// loop): where a store would fault, its load half faults first (on an untouched page
    /// that maps the zero page, which the store then copies).
    pub fn stores_load_first(&self) -> bool {
        match self {
            Generator::Ahead(a) => a.stores_load_first(),
            g => matches!(g, Generator::Synthetic(_)),
        }
    }

    /// The stream depends on nothing but the generator's own state and random draws (no
    /// clock, kernel or other thread), so it can run ahead ([`ahead::Ahead`]). pmbench's
    /// loop is; the others are not yet checked for it.
    pub fn is_open_loop(&self) -> bool {
        matches!(self, Generator::Pmbench(_))
    }

    /// What the page-event engine needs of a generator whose measured phase draws every
    /// page independently from one fixed distribution (pmbench's `uniform`, `normal_ih`
    /// and `pareto`; a synthetic workload's access threads); `None` for the others.
    /// `cache` shares one distribution between the pmbench threads that draw from the same
    /// pattern.
    pub fn stationary(&self, cache: &mut Vec<(Pattern, pmf::Pmf)>) -> Option<Stationary> {
        let g = match self {
            Generator::Pmbench(g) => g,
            Generator::Synthetic(crate::workload::synthetic::SyntheticGen::Access(g)) => {
                return g.stationary();
            }
            _ => return None,
        };
        let pmf = match cache.iter().find(|(p, _)| *p == g.pattern) {
            Some((_, pmf)) => pmf.clone(),
            None => {
                let pmf = pmf::of_pattern(&g.pattern)?;
                cache.push((g.pattern.clone(), pmf.clone()));
                pmf
            }
        };
        Some(Stationary {
            pmf,
            read_share: g.read_threshold as f64 / 1024.0,
            periodic: Vec::new(),
            period: 0,
        })
    }

    /// Fill `out` (cleared first) or return a control step.
    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        out.clear();
        match self {
            Generator::Pmbench(g) => g.next(rng, out),
            Generator::Stream(g) => g.next(out),
            Generator::MlcBw(g) => g.next(out),
            Generator::MlcLat(g) => g.next(rng, out),
            Generator::Parsec(g) => g.next(rng, out),
            Generator::HotRegions(g) => g.next(rng, out),
            Generator::VmGuest(g) => g.next(rng, out),
            Generator::Xsbench(g) => g.next(rng, out),
            Generator::Trace(g) => g.next(out),
            Generator::Synthetic(g) => g.next(rng, out),
            Generator::Ahead(g) => g.next(out),
        }
    }

    /// A stream the engine may draw in batches of its own size, prefetching as it draws
    /// ([`PmbenchGen::endless`]): pmbench's measured phase, drawn inline.
    pub fn endless(&mut self) -> Option<&mut PmbenchGen> {
        match self {
            Generator::Pmbench(g) if g.endless() => Some(g),
            _ => None,
        }
    }

    /// A thread that only waits after its setup, waking periodically: (its wake period,
    /// the CPU time its setup used before time 0).
    pub fn waiter(&self) -> Option<(SimDuration, SimDuration)> {
        match self {
            Generator::Synthetic(crate::workload::synthetic::SyntheticGen::Main {
                populate_cpu,
            }) => Some((crate::workload::synthetic::MAIN_POLL, *populate_cpu)),
            _ => None,
        }
    }

    /// CPU time per access of the batch just produced, for generators whose time comes
    /// from their input (trace replay); `None` keeps the thread's fixed cost.
    pub fn batch_cpu_ps(&self) -> Option<u64> {
        match self {
            Generator::Trace(g) => Some(g.batch_cpu_ps()),
            _ => None,
        }
    }

    /// What the thread's CPU caches counted, for generators replayed through them.
    pub fn cache_stats(&self) -> Option<crate::hw::cache::CacheStats> {
        match self {
            Generator::Trace(g) => g.cache_stats(),
            _ => None,
        }
    }

    /// Records a replaying generator has replayed (hits included).
    pub fn replayed(&self) -> Option<u64> {
        match self {
            Generator::Trace(g) => Some(g.replayed),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// pmbench
// ---------------------------------------------------------------------------------------

/// A pmbench page pattern (`pattern.c`), per-thread state.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    Uniform {
        n: u64,
    },
    /// Irwin-Hall: sum of 12 uniform draws over [0, k), k = round((N−1)/12), re-centred.
    NormalIh {
        n: u64,
        k: u64,
        offset: u64,
    },
    /// Box-Muller, mean N/2, σ = shape pages; out-of-range draws go to N/2.
    Normal {
        n: u64,
        sigma: f64,
        spare: Option<f64>,
    },
    /// Bounded Pareto (L = 1, H = N, α = shape) by inverse CDF; page = ⌊v⌋ − 1.
    Pareto {
        n: u64,
        alpha: f64,
        h_pow: f64,
    },
    /// 0, s, 2s, …; at the end restart at phase + 1.
    Linear {
        n: u64,
        stride: u64,
        cur: u64,
        phase: u64,
    },
}

#[inline]
fn unit_f64(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl Pattern {
    pub fn new(p: PmbenchPattern, n: u64, shape: Option<f64>, stride: u64) -> Pattern {
        match p {
            PmbenchPattern::Uniform => Pattern::Uniform { n },
            PmbenchPattern::NormalIh => {
                let k = (((n - 1) as f64 / 12.0).round() as u64).max(1);
                Pattern::NormalIh {
                    n,
                    k,
                    offset: n.saturating_sub(12 * k) / 2,
                }
            }
            PmbenchPattern::Normal => Pattern::Normal {
                n,
                sigma: shape.unwrap_or(1.00001),
                spare: None,
            },
            PmbenchPattern::Pareto => {
                let alpha = shape.unwrap_or(1.161);
                Pattern::Pareto {
                    n,
                    alpha,
                    h_pow: (n as f64).powf(-alpha),
                }
            }
            PmbenchPattern::Linear => Pattern::Linear {
                n,
                stride: stride.min(n).max(1),
                cur: 0,
                phase: 0,
            },
        }
    }

    /// Irwin-Hall: twelve uniform draws over [0, k) from six 64-bit numbers (two 32-bit
    /// halves each, multiply-shift), summed and re-centred.
    #[inline(always)]
    fn normal_ih(rng: &mut Xoshiro256PlusPlus, n: u64, k: u64, offset: u64) -> u64 {
        let mut sum = 0u64;
        for _ in 0..6 {
            let r = rng.next_u64();
            sum += ((r & 0xFFFF_FFFF) * k) >> 32;
            sum += ((r >> 32) * k) >> 32;
        }
        (sum + offset).min(n - 1)
    }

    /// The next page in [0, N).
    #[inline]
    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            Pattern::Uniform { n } => ((rng.next_u64() >> 32) * *n) >> 32,
            Pattern::NormalIh { n, k, offset } => Pattern::normal_ih(rng, *n, *k, *offset),
            Pattern::Normal { n, sigma, spare } => {
                let z = match spare.take() {
                    Some(z) => z,
                    None => {
                        let u1 = unit_f64(rng).max(f64::MIN_POSITIVE);
                        let u2 = unit_f64(rng);
                        let r = (-2.0 * u1.ln()).sqrt();
                        let th = std::f64::consts::TAU * u2;
                        *spare = Some(r * th.sin());
                        r * th.cos()
                    }
                };
                let v = (*n as f64) / 2.0 + z * *sigma;
                if v >= 0.0 && v < *n as f64 {
                    v as u64
                } else {
                    *n / 2
                }
            }
            Pattern::Pareto { n, alpha, h_pow } => {
                let u = unit_f64(rng);
                let x = (1.0 - u * (1.0 - *h_pow)).powf(-1.0 / *alpha);
                ((x.floor() as u64).saturating_sub(1)).min(*n - 1)
            }
            Pattern::Linear {
                n,
                stride,
                cur,
                phase,
            } => {
                let page = *cur;
                *cur += *stride;
                if *cur >= *n {
                    *phase = (*phase + 1) % *stride;
                    *cur = *phase;
                }
                page
            }
        }
    }

    /// Warm-up draws before the timed run (`pmbench.c`: uniform 4N, linear N, normal N,
    /// normal_ih N−1, pareto 8N).
    pub fn warmup_draws(&self) -> u64 {
        match self {
            Pattern::Uniform { n } => 4 * n,
            Pattern::Linear { n, .. } | Pattern::Normal { n, .. } => *n,
            Pattern::NormalIh { n, .. } => n - 1,
            Pattern::Pareto { n, .. } => 8 * n,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PmPhase {
    Init { next: u64 },
    Warmup { left: u64 },
    StartRun,
    Run,
}

/// One pmbench thread.
pub struct PmbenchGen {
    pattern: Pattern,
    map_pages: u64,
    /// `read if draw mod 1024 < read_threshold` (= ratio·1024/100).
    read_threshold: u64,
    phase: PmPhase,
}

impl PmbenchGen {
    pub fn new(cfg: &PmbenchConfig, thread: u32) -> Self {
        let map_pages = cfg.mapsize.pages_ceil().0;
        let set_pages = cfg
            .setsize
            .unwrap_or(cfg.mapsize)
            .pages_ceil()
            .0
            .min(map_pages);
        let pattern = Pattern::new(cfg.pattern, set_pages, cfg.shape, cfg.stride);
        let warm = if cfg.cold { 0 } else { pattern.warmup_draws() };
        // Only the first thread of a process initialises the map (-i runs before the threads start).
        let phase = if cfg.initialize && thread == 0 {
            PmPhase::Init { next: 0 }
        } else if warm > 0 {
            PmPhase::Warmup { left: warm }
        } else {
            PmPhase::StartRun
        };
        PmbenchGen {
            pattern,
            map_pages,
            read_threshold: cfg.read_ratio as u64 * 1024 / 100,
            phase,
        }
    }

    fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        match self.phase {
            PmPhase::Init { next } => {
                // Sequential write of every map page (all 64 lines).
                let end = (next + BATCH as u64).min(self.map_pages);
                out.extend((next..end).map(|p| Access::first_touch(p as u32)));
                self.phase = if end >= self.map_pages {
                    let warm = self.pattern.warmup_draws();
                    PmPhase::Warmup { left: warm }
                } else {
                    PmPhase::Init { next: end }
                };
                Step::Accesses
            }
            PmPhase::Warmup { left } => {
                if left == 0 {
                    self.phase = PmPhase::StartRun;
                    return self.next(rng, out);
                }
                let n = left.min(BATCH as u64);
                self.fill(rng, out, n as usize);
                self.phase = PmPhase::Warmup { left: left - n };
                Step::Accesses
            }
            PmPhase::StartRun => {
                self.phase = PmPhase::Run;
                Step::RunStart
            }
            PmPhase::Run => {
                self.fill(rng, out, BATCH);
                Step::Accesses
            }
        }
    }

    /// `n` accesses: a page from the pattern, then the read/write draw.
    #[inline]
    fn fill(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>, n: usize) {
        out.reserve(n);
        match self.pattern {
            // The common case, with the pattern's match taken out of the loop.
            Pattern::NormalIh {
                n: pages,
                k,
                offset,
            } => out.extend((0..n).map(|_| {
                let page = Pattern::normal_ih(rng, pages, k, offset);
                self.access(page, rng)
            })),
            _ => out.extend((0..n).map(|_| {
                let page = self.pattern.next(rng);
                self.access(page, rng)
            })),
        }
    }

    /// The access to `page`: a load or a store by the read/write draw.
    #[inline(always)]
    fn access(&self, page: u64, rng: &mut Xoshiro256PlusPlus) -> Access {
        let rw = rng.next_u64() & 1023;
        Access {
            idx: page as u32,
            lines: 1,
            kind: if rw < self.read_threshold {
                K_READ
            } else {
                K_WRITE
            },
        }
    }

    /// The measured phase has begun: from here the stream is endless and the same
    /// whatever the batch size, so the engine may draw it an access at a time
    /// ([`PmbenchGen::draw`]) in batches of its own size.
    pub fn endless(&self) -> bool {
        self.phase == PmPhase::Run
    }

    /// The next access of the measured phase: the same draws, in the same order, as
    /// [`PmbenchGen::fill`] makes.
    #[inline(always)]
    pub fn draw(&mut self, rng: &mut Xoshiro256PlusPlus) -> Access {
        debug_assert!(self.endless());
        let page = self.pattern.next(rng);
        self.access(page, rng)
    }
}

// ---------------------------------------------------------------------------------------
// STREAM
// ---------------------------------------------------------------------------------------

/// STREAM kernels in order.
pub const STREAM_KERNELS: [&str; 4] = ["copy", "scale", "add", "triad"];

/// One STREAM thread: its contiguous chunk of the three arrays (static OpenMP schedule).
pub struct StreamGen {
    /// PTE bases of arrays a, b, c.
    base: [u32; 3],
    /// Page range of this thread's chunk and the bytes in the last page of the array.
    first: u64,
    end: u64,
    array_pages: u64,
    last_page_lines: u8,
    ntimes: u32,
    nt: bool,
    /// 0 = init, then 1 + iteration*4 + kernel.
    step: u32,
    page: u64,
}

impl StreamGen {
    pub fn new(cfg: &StreamConfig, base: [u32; 3], thread: u32) -> Self {
        let bytes = cfg.array_elements * 8;
        let array_pages = bytes.div_ceil(PAGE_SIZE);
        let t = cfg.threads as u64;
        let first = array_pages * thread as u64 / t;
        let end = array_pages * (thread as u64 + 1) / t;
        let tail = bytes - (array_pages - 1) * PAGE_SIZE;
        StreamGen {
            base,
            first,
            end,
            array_pages,
            last_page_lines: tail.div_ceil(LINE_SIZE) as u8,
            ntimes: cfg.ntimes,
            nt: cfg.nt_stores,
            step: 0,
            page: first,
        }
    }

    fn next(&mut self, out: &mut Vec<Access>) -> Step {
        if self.step > self.ntimes * 4 {
            return Step::Done;
        }
        if self.page >= self.end {
            self.step += 1;
            self.page = self.first;
            return Step::Barrier;
        }
        let w = if self.nt { K_NTWRITE } else { K_WRITE } | K_STREAM;
        let r = K_READ | K_STREAM;
        let stop = (self.page + (BATCH as u64 / 3)).min(self.end);
        let [a, b, c] = self.base;
        for p in self.page..stop {
            let lines = if p + 1 == self.array_pages {
                self.last_page_lines
            } else {
                64
            };
            let i = p as u32;
            let mut push = |base: u32, kind: u8| {
                out.push(Access {
                    idx: base + i,
                    lines,
                    kind,
                })
            };
            if self.step == 0 {
                // Initialisation: a = 1, b = 2, c = 0 (first touch by this thread).
                push(a, w);
                push(b, w);
                push(c, w);
            } else {
                match (self.step - 1) % 4 {
                    0 => {
                        push(a, r); // copy: c = a
                        push(c, w);
                    }
                    1 => {
                        push(c, r); // scale: b = q·c
                        push(b, w);
                    }
                    2 => {
                        push(a, r); // add: c = a + b
                        push(b, r);
                        push(c, w);
                    }
                    _ => {
                        push(b, r); // triad: a = b + q·c
                        push(c, r);
                        push(a, w);
                    }
                }
            }
        }
        self.page = stop;
        Step::Accesses
    }
}

/// STREAM's counted bytes per kernel (without write-allocate traffic), per element.
pub fn stream_counted_bytes(kernel: usize) -> u64 {
    match kernel {
        0 | 1 => 16,
        _ => 24,
    }
}

// ---------------------------------------------------------------------------------------
// MLC
// ---------------------------------------------------------------------------------------

/// The per-line access kinds of an MLC traffic type (memory-side read:write with RFO).
pub fn mlc_sequence(t: MlcTraffic) -> &'static [u8] {
    match t {
        MlcTraffic::R => &[K_READ],
        MlcTraffic::W2 => &[K_READ, K_WRITE],
        MlcTraffic::W3 | MlcTraffic::W11 => &[K_READ, K_READ, K_WRITE],
        MlcTraffic::W5 => &[K_WRITE],
        MlcTraffic::W6 => &[K_NTWRITE],
        MlcTraffic::W7 | MlcTraffic::W10 => &[K_READ, K_READ, K_NTWRITE],
        MlcTraffic::W8 => &[K_READ, K_NTWRITE],
    }
}

/// The preparation phase every MLC thread goes through: write its buffer (first touch),
/// wait for all threads (MLC prepares every buffer before measuring), then start measuring.
struct BufferPrep {
    base: u32,
    pages: u32,
    init_next: u32,
    synced: bool,
    started: bool,
}

impl BufferPrep {
    fn new(base: u32, pages: u32) -> Self {
        BufferPrep {
            base,
            pages,
            init_next: 0,
            synced: false,
            started: false,
        }
    }

    /// The next preparation step, or `None` once measuring has started.
    fn step(&mut self, out: &mut Vec<Access>) -> Option<Step> {
        if self.init_next < self.pages {
            let end = (self.init_next + BATCH as u32).min(self.pages);
            out.extend((self.init_next..end).map(|p| Access::first_touch(self.base + p)));
            self.init_next = end;
            return Some(Step::Accesses);
        }
        if !self.synced {
            self.synced = true;
            return Some(Step::Barrier);
        }
        if !self.started {
            self.started = true;
            return Some(Step::RunStart);
        }
        None
    }
}

/// An MLC bandwidth thread: sequential lines over a private buffer.
pub struct MlcBwGen {
    prep: BufferPrep,
    seq: &'static [u8],
    page: u32,
}

impl MlcBwGen {
    pub fn new(base: u32, pages: u32, traffic: MlcTraffic) -> Self {
        MlcBwGen {
            prep: BufferPrep::new(base, pages),
            seq: mlc_sequence(traffic),
            page: 0,
        }
    }

    fn next(&mut self, out: &mut Vec<Access>) -> Step {
        if let Some(step) = self.prep.step(out) {
            return step;
        }
        // The traffic type's kinds alternate line by line, so every page sees the same
        // mix: each page is split into one access per kind of the sequence (a page-level
        // alternation would alias with interleaving, sending all reads to some nodes and all
        // stores to others).
        let k = self.seq.len() as u8;
        for _ in 0..BATCH / self.seq.len() {
            for (j, &kind) in self.seq.iter().enumerate() {
                let lines = 64 / k + u8::from((j as u8) < 64 % k);
                out.push(Access {
                    idx: self.prep.base + self.page,
                    lines,
                    kind: kind | K_STREAM,
                });
            }
            self.page = (self.page + 1) % self.prep.pages;
        }
        Step::Accesses
    }
}

/// The MLC latency thread: dependent random reads over its buffer.
pub struct MlcLatGen {
    prep: BufferPrep,
}

impl MlcLatGen {
    pub fn new(base: u32, pages: u32) -> Self {
        MlcLatGen {
            prep: BufferPrep::new(base, pages),
        }
    }

    fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        if let Some(step) = self.prep.step(out) {
            return step;
        }
        for _ in 0..BATCH {
            let p = ((rng.next_u64() >> 32) * self.prep.pages as u64) >> 32;
            out.push(Access {
                idx: self.prep.base + p as u32,
                lines: 1,
                kind: K_READ,
            });
        }
        Step::Accesses
    }
}

// ---------------------------------------------------------------------------------------
// Building threads from config
// ---------------------------------------------------------------------------------------

/// What the engine needs to run one thread.
pub struct ThreadSpec {
    pub workload: usize,
    pub proc: u16,
    pub cpu_node: NodeId,
    /// Base memory-level parallelism (lines in flight).
    pub mlp: u32,
    pub cpu_per_access: SimDuration,
    pub cpu_per_line: SimDuration,
    /// The per-line CPU cost applies only from `RunStart` on (MLC's inject delay is not
    /// paid while buffers are initialised).
    pub cpu_per_line_from_run: bool,
    pub start: SimDuration,
    /// Length of the measured phase after `RunStart`, if bounded.
    pub run_duration: Option<SimDuration>,
    /// Barrier group (threads of one process that synchronise).
    pub barrier_group: Option<usize>,
    pub generator: Generator,
    /// Is this the MLC latency thread?
    pub latency_probe: bool,
    /// Fixed access rate: access k is issued no earlier than `start + k × pace` (the
    /// thread spins in between, so its CPU time is its wall time). `None`: back to back.
    pub pace: Option<SimDuration>,
}

impl ThreadSpec {
    /// A thread of process `proc` of workload `workload` on `cpu_node` running `generator`:
    /// one line in flight, no CPU cost of its own, from time 0, unbounded, no barrier, not
    /// a latency probe, accesses back to back. Builders set what differs.
    pub fn new(workload: usize, proc: u16, cpu_node: NodeId, generator: Generator) -> Self {
        ThreadSpec {
            workload,
            proc,
            cpu_node,
            mlp: 1,
            cpu_per_access: SimDuration::ZERO,
            cpu_per_line: SimDuration::ZERO,
            cpu_per_line_from_run: false,
            start: SimDuration::ZERO,
            run_duration: None,
            barrier_group: None,
            generator,
            latency_probe: false,
            pace: None,
        }
    }
}

/// A trace file that cannot be read is a config error at its key (`workloads[i].file`,
/// so that the CLI names the config file too); a malformed trace names the trace itself.
fn trace_open_error(wi: usize, e: tiermem_trace::TraceError) -> crate::SimError {
    match e {
        tiermem_trace::TraceError::Read { path, source } => {
            crate::SimError::Config(tiermem_core::ConfigError::invalid(
                format!("workloads[{wi}].file"),
                format!("cannot read the trace {path}: {source}"),
            ))
        }
        e => crate::SimError::Trace(e),
    }
}

/// Create the processes of every workload in the kernel and return their threads.
pub fn build(
    cfg: &SimConfig,
    topo: &Topology,
    kernel: &mut Kernel,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let first_cpu = topo
        .nodes
        .iter()
        .find(|n| n.has_cpus())
        .map(|n| n.id)
        .unwrap_or(NodeId(0));
    let mut threads = Vec::new();
    let mut barrier_groups = 0;
    for (wi, w) in cfg.workloads.iter().enumerate() {
        match w {
            WorkloadConfig::Pmbench(p) => {
                threads.extend(build_pmbench(p, wi, first_cpu, topo, kernel)?)
            }
            WorkloadConfig::Stream(s) => {
                threads.extend(build_stream(s, wi, first_cpu, kernel, &mut barrier_groups)?)
            }
            WorkloadConfig::Mlc(m) => {
                threads.extend(build_mlc(m, wi, first_cpu, kernel, &mut barrier_groups)?)
            }
            WorkloadConfig::Parsec(p) => {
                let name = p.name.clone().unwrap_or_else(|| format!("parsec{wi}"));
                // The archive, its extracted copy and the output.
                let file_pages = 2 * p.input.pages_ceil().0 + p.output.pages_ceil().0;
                kernel.reserve_file_pages(&name, file_pages)?;
                let thread = damon_workload_thread(
                    kernel,
                    wi,
                    name,
                    p.cpu_node.unwrap_or(first_cpu),
                    (p.rss.pages_ceil().0 as u32, p.harness.pages_ceil().0 as u32),
                    (p.cpu_per_access, p.start, None),
                    Generator::Parsec(crate::workload::damon_workloads::ParsecGen::new(p)),
                )?;
                // The program's data (not the harness's memory) compresses as measured for it.
                kernel.set_zram_ratio(thread.proc, 0, p.compression_ratio);
                threads.push(thread);
            }
            WorkloadConfig::Hotregions(h) => {
                let name = h.name.clone().unwrap_or_else(|| format!("hotregions{wi}"));
                threads.push(damon_workload_thread(
                    kernel,
                    wi,
                    name,
                    h.cpu_node.unwrap_or(first_cpu),
                    (h.size.pages_ceil().0 as u32, 0),
                    (h.cpu_per_access, h.start, h.duration),
                    Generator::HotRegions(crate::workload::damon_workloads::HotRegionsGen::new(h)),
                )?);
            }
            WorkloadConfig::VmGuest(g) => threads.extend(crate::workload::vm_guest::build(
                g,
                wi,
                cfg.seed,
                topo,
                kernel,
                &mut barrier_groups,
            )?),
            WorkloadConfig::Xsbench(x) => threads.extend(build_xsbench(
                x,
                wi,
                first_cpu,
                kernel,
                &mut barrier_groups,
            )?),
            WorkloadConfig::Synthetic(s) => threads.extend(crate::workload::synthetic::build(
                s,
                wi,
                s.cpu_node.unwrap_or(first_cpu),
                topo.cpu_per_access,
                kernel,
            )?),
            WorkloadConfig::Trace(t) => {
                threads.extend(build_trace(t, wi, first_cpu, topo, kernel)?)
            }
        }
    }
    Ok(threads)
}

/// pmbench: `processes` processes of one mapping, `threads` threads each, spread over `cpu_nodes`.
fn build_pmbench(
    p: &PmbenchConfig,
    wi: usize,
    first_cpu: NodeId,
    topo: &Topology,
    kernel: &mut Kernel,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let mut threads = Vec::new();
    let name = p.name.clone().unwrap_or_else(|| format!("pmbench{wi}"));
    let cpu_nodes = if p.cpu_nodes.is_empty() {
        vec![first_cpu]
    } else {
        p.cpu_nodes.clone()
    };
    let pages = p.mapsize.pages_ceil().0 as u32;
    for pi in 0..p.processes {
        let cpu = cpu_nodes[pi as usize % cpu_nodes.len()];
        let proc = kernel.add_process(
            format!("{name}.{pi}"),
            cpu,
            p.policy.clone(),
            vec![("map".into(), pages, None)],
        )?;
        for t in 0..p.threads {
            threads.push(ThreadSpec {
                cpu_per_access: p.cpu_per_access.unwrap_or(topo.cpu_per_access),
                start: p.start,
                run_duration: p.duration,
                ..ThreadSpec::new(wi, proc, cpu, Generator::Pmbench(PmbenchGen::new(p, t)))
            });
        }
    }
    Ok(threads)
}

/// STREAM: arrays a, b, c in one process; its threads share a barrier group.
fn build_stream(
    s: &StreamConfig,
    wi: usize,
    first_cpu: NodeId,
    kernel: &mut Kernel,
    barrier_groups: &mut usize,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let mut threads = Vec::new();
    let name = s.name.clone().unwrap_or_else(|| format!("stream{wi}"));
    let cpu = s.cpu_node.unwrap_or(first_cpu);
    let pages = (s.array_elements * 8).div_ceil(PAGE_SIZE) as u32;
    let proc = kernel.add_process(
        name,
        cpu,
        s.policy.clone(),
        vec![
            ("a".into(), pages, None),
            ("b".into(), pages, None),
            ("c".into(), pages, None),
        ],
    )?;
    prepare_regions(kernel, proc, &s.mbind, s.populate);
    let group = *barrier_groups;
    *barrier_groups += 1;
    for t in 0..s.threads {
        threads.push(ThreadSpec {
            mlp: s.mlp,
            cpu_per_line: s.cpu_per_line,
            start: s.start,
            barrier_group: Some(group),
            ..ThreadSpec::new(
                wi,
                proc,
                cpu,
                Generator::Stream(StreamGen::new(s, [0, pages, 2 * pages], t)),
            )
        });
    }
    Ok(threads)
}

/// MLC: one buffer per bandwidth thread, plus the latency thread's buffer; one barrier group.
fn build_mlc(
    m: &MlcConfig,
    wi: usize,
    first_cpu: NodeId,
    kernel: &mut Kernel,
    barrier_groups: &mut usize,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let mut threads = Vec::new();
    let name = m.name.clone().unwrap_or_else(|| format!("mlc{wi}"));
    let cpu = m.cpu_node.unwrap_or(first_cpu);
    let bw_pages = m.buffer.pages_ceil().0 as u32;
    let lat_pages = m.latency_buffer.pages_ceil().0 as u32;
    let mut vmas: Vec<(String, u32, Option<_>)> = (0..m.bw_threads)
        .map(|t| (format!("buf{t}"), bw_pages, None))
        .collect();
    if m.latency_thread {
        vmas.push(("latbuf".into(), lat_pages, None));
    }
    let proc = kernel.add_process(name, cpu, m.policy.clone(), vmas)?;
    prepare_regions(kernel, proc, &m.mbind, m.populate);
    let group = *barrier_groups;
    *barrier_groups += 1;
    let per_line = SimDuration::from_ns_f64(m.delay_cycles as f64 / m.cpu_ghz);
    for t in 0..m.bw_threads {
        threads.push(ThreadSpec {
            mlp: m.mlp,
            cpu_per_line: per_line,
            cpu_per_line_from_run: true,
            start: m.start,
            run_duration: m.duration,
            barrier_group: Some(group),
            ..ThreadSpec::new(
                wi,
                proc,
                cpu,
                Generator::MlcBw(MlcBwGen::new(t * bw_pages, bw_pages, m.traffic)),
            )
        });
    }
    if m.latency_thread {
        threads.push(ThreadSpec {
            cpu_per_access: SimDuration::from_ns(1),
            start: m.start,
            run_duration: m.duration,
            barrier_group: Some(group),
            latency_probe: true,
            ..ThreadSpec::new(
                wi,
                proc,
                cpu,
                Generator::MlcLat(MlcLatGen::new(m.bw_threads * bw_pages, lat_pages)),
            )
        });
    }
    Ok(threads)
}

/// XSBench: the energy, index and nuclide grids in one process; one barrier group.
fn build_xsbench(
    x: &XsbenchConfig,
    wi: usize,
    first_cpu: NodeId,
    kernel: &mut Kernel,
    barrier_groups: &mut usize,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let mut threads = Vec::new();
    let name = x.name.clone().unwrap_or_else(|| format!("xsbench{wi}"));
    let cpu = x.cpu_node.unwrap_or(first_cpu);
    let bytes = crate::workload::xsbench::XsLayout::region_bytes(x);
    let pages = bytes.map(|b| b.div_ceil(PAGE_SIZE) as u32);
    let proc = kernel.add_process(
        name,
        cpu,
        x.policy.clone(),
        vec![
            ("energy".into(), pages[0], None),
            ("index".into(), pages[1], None),
            ("nuclide".into(), pages[2], None),
        ],
    )?;
    prepare_regions(kernel, proc, &x.mbind, x.populate);
    let base = [0, pages[0], pages[0] + pages[1]];
    let layout = std::sync::Arc::new(crate::workload::xsbench::XsLayout::new(x, base));
    let group = *barrier_groups;
    *barrier_groups += 1;
    for t in 0..x.threads {
        threads.push(ThreadSpec {
            // Dependent search reads run one at a time; the row and nuclide reads
            // are marked streaming and overlap (STREAM_MLP).
            mlp: 1,
            cpu_per_access: x.cpu_per_nuclide,
            start: x.start,
            barrier_group: Some(group),
            ..ThreadSpec::new(
                wi,
                proc,
                cpu,
                Generator::Xsbench(crate::workload::xsbench::XsbenchGen::new(
                    layout.clone(),
                    x,
                    t,
                )),
            )
        });
    }
    Ok(threads)
}

/// A trace replay: the trace's ranges as VMAs, one thread per trace thread, per process.
fn build_trace(
    t: &TraceConfig,
    wi: usize,
    first_cpu: NodeId,
    topo: &Topology,
    kernel: &mut Kernel,
) -> Result<Vec<ThreadSpec>, crate::SimError> {
    let mut threads = Vec::new();
    let name = t.name.clone().unwrap_or_else(|| format!("trace{wi}"));
    let cpu = t.cpu_node.unwrap_or(first_cpu);
    let layout = std::sync::Arc::new(
        crate::workload::trace_replay::TraceLayout::open(&t.file)
            .map_err(|e| trace_open_error(wi, e))?,
    );
    let mut trace_threads: Vec<u32> = layout.footer.threads.iter().map(|x| x.0).collect();
    if trace_threads.is_empty() {
        trace_threads.push(0); // an empty trace: one thread that ends at once
    }
    let single = trace_threads.len() == 1;
    let (caches, share) = trace_caches(t, topo, cpu, trace_threads.len() as u32)?;
    for pi in 0..t.processes {
        let vmas = layout
            .ranges
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("range{i}"), (r.end - r.first) as u32, None))
            .collect();
        let proc = kernel.add_process(format!("{name}.{pi}"), cpu, t.policy.clone(), vmas)?;
        for &tt in &trace_threads {
            threads.push(ThreadSpec {
                mlp: t.mlp,
                start: t.start,
                ..ThreadSpec::new(
                    wi,
                    proc,
                    cpu,
                    Generator::Trace(Box::new(crate::workload::trace_replay::TraceGen::new(
                        layout.clone(),
                        (!single).then_some(tt),
                        t,
                        caches
                            .as_ref()
                            .map(|c| crate::hw::cache::Caches::new(c, share)),
                    ))),
                )
            });
        }
    }
    Ok(threads)
}

/// The caches a trace's threads on `cpu` replay through, and how many threads share one
/// LLC: the program's threads (`processes` × trace threads) up to the cores one LLC spans.
/// None when the machine's caches are off. Refused when the caches would not fit in
/// host memory.
fn trace_caches(
    t: &TraceConfig,
    topo: &Topology,
    cpu: NodeId,
    threads: u32,
) -> Result<(Option<tiermem_core::caches::Hierarchy>, u32), crate::SimError> {
    let socket = topo.nodes.get(cpu.idx()).map_or(0, |n| n.socket);
    let c = topo.caches(socket);
    if !c.enabled {
        return Ok((None, 1));
    }
    let span = c.llc_cores.max(1);
    let share = (t.processes.saturating_mul(threads)).clamp(1, span);
    let all = t.processes as u64 * threads as u64;
    let bytes = all.saturating_mul(crate::hw::cache::Caches::host_bytes(&c, share));
    if bytes > 8 << 30 {
        return Err(crate::SimError::Config(tiermem_core::ConfigError::invalid(
            "machine.caches",
            format!(
                "the caches of {all} replaying threads would take {} GiB of host memory (at most 8)",
                bytes >> 30
            ),
        )));
    }
    Ok((Some(c), share))
}

/// Apply a workload's `mbind` calls (now, or queued for their time) and populate its
/// regions up front if asked.
fn prepare_regions(
    kernel: &mut Kernel,
    proc: u16,
    mbind: &[tiermem_core::config::MbindConfig],
    populate: tiermem_core::config::Populate,
) {
    for m in mbind {
        kernel.schedule_mbind(proc, m);
    }
    if let Err(e) = kernel.populate(proc, populate) {
        tracing::warn!(?e, "populating the regions failed");
    }
}

/// Per-thread figures the engine hands to the workload reports.
#[derive(Clone, Debug, Default)]
pub struct ThreadReport {
    pub workload: usize,
    pub latency_probe: bool,
    /// Time of the `RunStart` mark and the end of the measured phase.
    pub run_start: Option<SimTime>,
    pub run_end: Option<SimTime>,
    /// Accesses, traffic bytes and summed loaded latency (ps × lines) in the measured phase.
    pub run_accesses: u64,
    pub run_bytes: u64,
    pub run_lines: u64,
    pub run_latency_ps: u128,
    /// The harness's `memused.avg` over the thread's life from its `drop_caches`, bytes.
    pub memused_avg_bytes: Option<f64>,
    /// Major faults from the thread's `drop_caches` to its end.
    pub major_faults: Option<u64>,
    /// kdamond CPU time over the thread's measured phase as a share of one CPU, percent
    /// (damon-tests' per-run `kdamond_cpu_util`), from the timeline samples in it.
    pub kdamond_cpu_pct: Option<f64>,
    /// Records a replaying thread replayed over its whole life, hits included.
    pub replayed: Option<u64>,
    /// What the thread's CPU caches counted (trace replay).
    pub cache: Option<crate::hw::cache::CacheStats>,
}

/// Results of one workload.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum WorkloadResult {
    Pmbench {
        name: String,
        processes: u32,
        threads: u32,
        /// Σ over threads of accesses (whole 10k batches) / run time, as lkp's
        /// `pmbench.throughput.aps`.
        score_accesses_per_s: f64,
        /// Mean time per access over threads (pmbench's `latency.ns.average`).
        mean_access_ns: f64,
        run_seconds: f64,
    },
    Stream {
        name: String,
        threads: u32,
        /// Best rate per kernel in MB/s (1e6 bytes), STREAM's counting (no write-allocate).
        copy_mbps: f64,
        scale_mbps: f64,
        add_mbps: f64,
        triad_mbps: f64,
        /// Whether all `ntimes` iterations completed within the simulation.
        complete: bool,
    },
    Xsbench {
        name: String,
        threads: u32,
        /// Lookups performed in the lookup phase.
        lookups: u64,
        /// XSBench's figure of merit: lookups / lookup-phase time (the slowest thread's).
        lookups_per_s: f64,
        run_seconds: f64,
        /// Whether every thread finished its lookups within the simulation.
        complete: bool,
    },
    Mlc {
        name: String,
        traffic: String,
        delay_cycles: u64,
        /// Reads + writes at the memory, all threads, MB/s.
        bandwidth_mbps: f64,
        /// Mean loaded latency seen by the latency thread, ns.
        latency_ns: f64,
    },
    Parsec {
        name: String,
        shape: String,
        /// Time from start to the end of the fixed work (the seed's `runtime`).
        runtime_seconds: f64,
        /// Whether the work finished within the simulation.
        complete: bool,
        accesses: u64,
        /// `memused.avg` as damon-tests measures it: the increase of the system's used
        /// memory over its value right after the harness's `drop_caches`, averaged over
        /// the samples until the program exits (untar included). Absent without the drop.
        #[serde(skip_serializing_if = "Option::is_none")]
        memused_avg_bytes: Option<f64>,
        /// `pgmajfault` from the `drop_caches` to the program's exit (swap-ins; damon-tests'
        /// per-run `pgmajfaults`). Absent without the drop, or when the run did not end.
        #[serde(skip_serializing_if = "Option::is_none")]
        major_faults: Option<u64>,
        /// The kdamonds' CPU time while the program ran, as a share of one CPU, percent
        /// (damon-tests' per-run `kdamond_cpu_util`: DAMON runs only while the program
        /// does), from the timeline samples within the run. Absent without DAMON, or when
        /// the run did not end or spanned fewer than two samples.
        #[serde(skip_serializing_if = "Option::is_none")]
        kdamond_cpu_pct: Option<f64>,
    },
    Hotregions {
        name: String,
        accesses: u64,
        run_seconds: f64,
    },
    /// Virtual-machine guests (`vm_guest`): the probe's access times per guest.
    #[serde(rename = "vm_guest")]
    VmGuest {
        name: String,
        guests: Vec<crate::workload::vm_guest::GuestProbe>,
        /// Population standard deviation of the guests' mean access times, % of the mean.
        access_time_spread_pct: f64,
        /// The same over the memory latency alone.
        latency_spread_pct: f64,
        /// Mean over guests of the probe's time per access, ns.
        mean_access_ns: f64,
    },
    /// `type = "synthetic"`: accesses by the access threads.
    Synthetic {
        name: String,
        threads: u32,
        accesses: u64,
        /// Longest thread run time, seconds.
        run_seconds: f64,
        accesses_per_s: f64,
    },
    Trace {
        name: String,
        processes: u32,
        threads: u32,
        /// Accesses replayed (all processes and threads), cache hits included.
        accesses: u64,
        /// Accesses of one pass over the trace, times processes.
        trace_accesses: u64,
        /// Longest thread run time, seconds.
        run_seconds: f64,
        /// Replayed accesses per simulated second (all threads).
        accesses_per_s: f64,
        /// Mean time per replayed access, ns (CPU time from the trace, cache hit latencies
        /// and the memory latency of misses).
        mean_access_ns: f64,
        /// What the CPU caches did, summed over threads (absent with the caches off).
        #[serde(skip_serializing_if = "Option::is_none")]
        cache: Option<crate::hw::cache::CacheStats>,
    },
}

/// The one thread of a DAMON-evaluation workload (`parsec`, `hotregions`): a process with
/// the heap/mmap/stack layout of `damon_workloads::vmas`, one access in flight.
/// `pages` is (data pages, harness pages); `timing` is (CPU per access, start, run duration).
fn damon_workload_thread(
    kernel: &mut Kernel,
    workload: usize,
    name: String,
    cpu: NodeId,
    pages: (u32, u32),
    timing: (SimDuration, SimDuration, Option<SimDuration>),
    generator: Generator,
) -> Result<ThreadSpec, crate::SimError> {
    let proc = kernel.add_process(
        name,
        cpu,
        Default::default(),
        crate::workload::damon_workloads::vmas(pages.0, pages.1),
    )?;
    Ok(ThreadSpec {
        cpu_per_access: timing.0,
        start: timing.1,
        run_duration: timing.2,
        ..ThreadSpec::new(workload, proc, cpu, generator)
    })
}

/// Compute each workload's result from its threads' reports and barrier release times.
pub fn results(
    cfg: &SimConfig,
    reports: &[ThreadReport],
    barriers: &[Vec<SimTime>],
) -> Vec<WorkloadResult> {
    let mut out = Vec::new();
    let mut group = 0;
    for (wi, w) in cfg.workloads.iter().enumerate() {
        let rs: Vec<&ThreadReport> = reports.iter().filter(|r| r.workload == wi).collect();
        match w {
            WorkloadConfig::Pmbench(p) => out.push(pmbench_result(p, wi, &rs)),
            WorkloadConfig::Stream(s) => {
                group += 1;
                out.push(stream_result(s, wi, &barriers[group - 1]));
            }
            WorkloadConfig::Mlc(m) => {
                group += 1;
                out.push(mlc_result(m, wi, &rs))
            }
            WorkloadConfig::Parsec(p) => {
                let r = rs.first();
                let secs = r
                    .and_then(|r| r.run_start.zip(r.run_end))
                    .map_or(0.0, |(s, e)| e.since(s).secs_f64());
                let complete = r.is_some_and(|r| {
                    r.run_accesses >= crate::workload::damon_workloads::ParsecGen::total_accesses(p)
                });
                out.push(WorkloadResult::Parsec {
                    name: p.name.clone().unwrap_or_else(|| format!("parsec{wi}")),
                    shape: format!("{:?}", p.shape),
                    runtime_seconds: secs,
                    complete,
                    accesses: r.map_or(0, |r| r.run_accesses),
                    memused_avg_bytes: r.and_then(|r| r.memused_avg_bytes),
                    major_faults: r.and_then(|r| r.major_faults),
                    kdamond_cpu_pct: r.and_then(|r| r.kdamond_cpu_pct),
                });
            }
            WorkloadConfig::Hotregions(h) => {
                let r = rs.first();
                out.push(WorkloadResult::Hotregions {
                    name: h.name.clone().unwrap_or_else(|| format!("hotregions{wi}")),
                    accesses: r.map_or(0, |r| r.run_accesses),
                    run_seconds: r
                        .and_then(|r| r.run_start.zip(r.run_end))
                        .map_or(0.0, |(s, e)| e.since(s).secs_f64()),
                });
            }
            WorkloadConfig::VmGuest(g) => {
                group += g.guests as usize;
                out.push(vm_guest_result(cfg, g, wi, &rs));
            }
            WorkloadConfig::Xsbench(x) => {
                group += 1;
                out.push(xsbench_result(x, wi, &rs));
            }
            WorkloadConfig::Synthetic(s) => {
                out.push(crate::workload::synthetic::result(s, wi, &rs))
            }
            WorkloadConfig::Trace(t) => out.push(trace_result(t, wi, &rs)),
        }
    }
    out
}

/// pmbench: the sum over threads of whole 10,000-access batches per second of each thread's run, and the mean access time.
fn pmbench_result(p: &PmbenchConfig, wi: usize, rs: &[&ThreadReport]) -> WorkloadResult {
    let mut score = 0.0;
    let mut lat = 0.0;
    let mut run = 0.0f64;
    let mut nthr = 0;
    for r in rs {
        if let (Some(s), Some(e)) = (r.run_start, r.run_end) {
            let secs = e.since(s).secs_f64();
            if secs > 0.0 {
                // pmbench counts whole batches of 10,000 accesses.
                score += (r.run_accesses / 10_000 * 10_000) as f64 / secs;
                if r.run_accesses > 0 {
                    lat += secs * 1e9 / r.run_accesses as f64;
                }
                run = run.max(secs);
                nthr += 1;
            }
        }
    }
    WorkloadResult::Pmbench {
        name: p.name.clone().unwrap_or_else(|| format!("pmbench{wi}")),
        processes: p.processes,
        threads: p.threads,
        score_accesses_per_s: score,
        mean_access_ns: if nthr > 0 { lat / nthr as f64 } else { 0.0 },
        run_seconds: run,
    }
}

/// STREAM: each kernel's best time over the iterations after the first (barrier releases), as MB/s of STREAM's counted bytes.
fn stream_result(s: &StreamConfig, wi: usize, rel: &[SimTime]) -> WorkloadResult {
    // rel[0] = end of init; then one release per kernel.
    let mut best = [f64::INFINITY; 4];
    let mut complete = true;
    for it in 1..s.ntimes as usize {
        for (k, bk) in best.iter_mut().enumerate() {
            let i = it * 4 + k;
            match (rel.get(i), rel.get(i + 1)) {
                (Some(a), Some(b)) => *bk = bk.min(b.since(*a).secs_f64()),
                _ => complete = false,
            }
        }
    }
    let rate = |k: usize| {
        if best[k].is_finite() && best[k] > 0.0 {
            1e-6 * (stream_counted_bytes(k) * s.array_elements) as f64 / best[k]
        } else {
            0.0
        }
    };
    WorkloadResult::Stream {
        name: s.name.clone().unwrap_or_else(|| format!("stream{wi}")),
        threads: s.threads,
        copy_mbps: rate(0),
        scale_mbps: rate(1),
        add_mbps: rate(2),
        triad_mbps: rate(3),
        complete,
    }
}

/// VM guests: each guest's probe (mean access time and loaded latency) and the spread over the guests (the seed-003 metric).
fn vm_guest_result(
    cfg: &SimConfig,
    g: &tiermem_core::ksm::VmGuestConfig,
    wi: usize,
    rs: &[&ThreadReport],
) -> WorkloadResult {
    let nodes = tiermem_core::topology::Topology::new(&cfg.machine)
        .map(|t| crate::workload::vm_guest::guest_nodes(g, &t))
        .unwrap_or_default();
    let guests: Vec<crate::workload::vm_guest::GuestProbe> = rs
        .iter()
        .filter(|r| r.latency_probe)
        .enumerate()
        .map(|(gi, r)| {
            let secs = match (r.run_start, r.run_end) {
                (Some(s), Some(e)) => e.since(s).secs_f64(),
                _ => 0.0,
            };
            crate::workload::vm_guest::GuestProbe {
                guest: gi as u32,
                node: nodes.get(gi).map_or(0, |n| n.0),
                mean_access_ns: if r.run_accesses > 0 {
                    secs * 1e9 / r.run_accesses as f64
                } else {
                    0.0
                },
                mean_latency_ns: if r.run_lines > 0 {
                    r.run_latency_ps as f64 / r.run_lines as f64 / 1e3
                } else {
                    0.0
                },
                accesses: r.run_accesses,
            }
        })
        .collect();
    let acc: Vec<f64> = guests.iter().map(|x| x.mean_access_ns).collect();
    let lat: Vec<f64> = guests.iter().map(|x| x.mean_latency_ns).collect();
    WorkloadResult::VmGuest {
        name: g.name.clone().unwrap_or_else(|| format!("vm{wi}")),
        access_time_spread_pct: crate::workload::vm_guest::spread_pct(&acc),
        latency_spread_pct: crate::workload::vm_guest::spread_pct(&lat),
        mean_access_ns: if acc.is_empty() {
            0.0
        } else {
            acc.iter().sum::<f64>() / acc.len() as f64
        },
        guests,
    }
}

/// XSBench: lookups per second over the span of all threads, when every thread finished.
fn xsbench_result(x: &XsbenchConfig, wi: usize, rs: &[&ThreadReport]) -> WorkloadResult {
    let start = rs.iter().filter_map(|r| r.run_start).min();
    let end = rs.iter().filter_map(|r| r.run_end).max();
    let complete = rs
        .iter()
        .all(|r| r.run_end.is_some() && r.run_start.is_some());
    let secs = match (start, end) {
        (Some(a), Some(b)) if b > a => b.since(a).secs_f64(),
        _ => 0.0,
    };
    WorkloadResult::Xsbench {
        name: x.name.clone().unwrap_or_else(|| format!("xsbench{wi}")),
        threads: x.threads,
        lookups: if complete { x.lookups } else { 0 },
        lookups_per_s: if complete && secs > 0.0 {
            x.lookups as f64 / secs
        } else {
            0.0
        },
        run_seconds: secs,
        complete,
    }
}

/// A trace replay: accesses, the longest thread's run, and the mean access time over the threads' busy time.
fn trace_result(t: &TraceConfig, wi: usize, rs: &[&ThreadReport]) -> WorkloadResult {
    let mut accesses = 0u64;
    let mut run = 0.0f64;
    let mut busy = 0.0f64;
    let mut cache: Option<crate::hw::cache::CacheStats> = None;
    for r in rs {
        accesses += r.replayed.unwrap_or(r.run_accesses);
        if let Some(c) = &r.cache {
            cache.get_or_insert_with(Default::default).add(c);
        }
        if let (Some(s), Some(e)) = (r.run_start, r.run_end) {
            let secs = e.since(s).secs_f64();
            run = run.max(secs);
            busy += secs;
        }
    }
    // The footer is small; re-reading it keeps the config the only input.
    let per_pass = crate::workload::trace_replay::TraceLayout::open(&t.file)
        .map(|l| l.footer.records)
        .unwrap_or(0);
    WorkloadResult::Trace {
        name: t.name.clone().unwrap_or_else(|| format!("trace{wi}")),
        processes: t.processes,
        threads: rs.len() as u32,
        accesses,
        trace_accesses: per_pass * t.processes as u64,
        run_seconds: run,
        accesses_per_s: if run > 0.0 {
            accesses as f64 / run
        } else {
            0.0
        },
        mean_access_ns: if accesses > 0 {
            busy * 1e9 / accesses as f64
        } else {
            0.0
        },
        cache,
    }
}

fn mlc_result(m: &MlcConfig, wi: usize, rs: &[&ThreadReport]) -> WorkloadResult {
    let lat: Vec<&&ThreadReport> = rs.iter().filter(|r| r.latency_probe).collect();
    let latency_ns = lat.first().map_or(0.0, |r| {
        if r.run_lines > 0 {
            r.run_latency_ps as f64 / r.run_lines as f64 / 1e3
        } else {
            0.0
        }
    });
    // Bandwidth counted over each thread's own window (threads start measuring at slightly
    // different times after initialising their buffers).
    let bw: f64 = rs
        .iter()
        .filter_map(|r| match (r.run_start, r.run_end) {
            (Some(s), Some(e)) if e > s => Some(r.run_bytes as f64 / e.since(s).secs_f64()),
            _ => None,
        })
        .sum();
    WorkloadResult::Mlc {
        name: m.name.clone().unwrap_or_else(|| format!("mlc{wi}")),
        traffic: format!("{:?}", m.traffic),
        delay_cycles: m.delay_cycles,
        bandwidth_mbps: bw / 1e6,
        latency_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn normal_ih_has_sigma_n_over_12_and_central_mass() {
        let n = 120_000u64;
        let mut p = Pattern::new(PmbenchPattern::NormalIh, n, None, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let draws = 200_000;
        let (mut sum, mut sq, mut central) = (0.0, 0.0, 0u64);
        for _ in 0..draws {
            let x = p.next(&mut rng) as f64;
            sum += x;
            sq += x * x;
            if (x - n as f64 / 2.0).abs() < n as f64 / 12.0 {
                central += 1;
            }
        }
        let mean = sum / draws as f64;
        let sd = (sq / draws as f64 - mean * mean).sqrt();
        assert!((mean / n as f64 - 0.5).abs() < 0.005, "mean {mean}");
        assert!((sd / (n as f64 / 12.0) - 1.0).abs() < 0.02, "sd {sd}");
        // ±1σ holds 68.3 % of accesses.
        let frac = central as f64 / draws as f64;
        assert!((frac - 0.683).abs() < 0.01, "central {frac}");
    }

    #[test]
    fn pareto_puts_hot_pages_first() {
        let n = 10_000;
        let mut p = Pattern::new(PmbenchPattern::Pareto, n, None, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let low = (0..100_000).filter(|_| p.next(&mut rng) < n / 5).count();
        assert!(low > 70_000, "80/20-ish expected, got {low}");
    }

    #[test]
    fn linear_touches_every_page() {
        let mut p = Pattern::new(PmbenchPattern::Linear, 10, None, 3);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut seen: Vec<u64> = (0..10).map(|_| p.next(&mut rng)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 10);
    }

    /// One access at a time ([`PmbenchGen::draw`]) gives the batches' accesses and leaves
    /// the random stream where they leave it, for each pattern.
    #[test]
    fn drawing_one_at_a_time_gives_the_batches_stream() {
        for pattern in [
            PmbenchPattern::NormalIh,
            PmbenchPattern::Uniform,
            PmbenchPattern::Normal,
            PmbenchPattern::Pareto,
            PmbenchPattern::Linear,
        ] {
            let cfg = PmbenchConfig {
                mapsize: tiermem_core::units::Bytes::mib(64),
                pattern,
                stride: 3,
                cold: true,
                ..Default::default()
            };
            let (mut batched, mut single) = (PmbenchGen::new(&cfg, 0), PmbenchGen::new(&cfg, 0));
            let mut rng_b = Xoshiro256PlusPlus::seed_from_u64(11);
            let mut rng_s = rng_b.clone();
            let mut out = Vec::new();
            assert!(
                !single.endless(),
                "{pattern:?}: endless before the run starts"
            );
            assert_eq!(batched.next(&mut rng_b, &mut out), Step::RunStart);
            assert_eq!(single.next(&mut rng_s, &mut out), Step::RunStart);
            assert!(single.endless(), "{pattern:?}");
            assert_eq!(batched.next(&mut rng_b, &mut out), Step::Accesses);
            let drawn: Vec<Access> = (0..out.len()).map(|_| single.draw(&mut rng_s)).collect();
            assert_eq!(drawn, out, "{pattern:?}");
            assert_eq!(
                rng_b.next_u64(),
                rng_s.next_u64(),
                "{pattern:?}: stream position"
            );
        }
    }

    #[test]
    fn read_ratio_80_gives_79_98_percent_reads() {
        let cfg = PmbenchConfig {
            name: None,
            processes: 1,
            threads: 1,
            mapsize: tiermem_core::units::Bytes::mib(4),
            setsize: None,
            pattern: PmbenchPattern::Uniform,
            shape: None,
            stride: 1,
            read_ratio: 80,
            initialize: false,
            cold: true,
            duration: None,
            cpu_nodes: vec![],
            policy: Default::default(),
            cpu_per_access: None,
            start: SimDuration::ZERO,
        };
        let mut g = PmbenchGen::new(&cfg, 0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut out = Vec::new();
        assert_eq!(g.next(&mut rng, &mut out), Step::RunStart);
        let mut reads = 0;
        let mut total = 0;
        for _ in 0..4000 {
            g.next(&mut rng, &mut out);
            reads += out.iter().filter(|a| a.kind == K_READ).count();
            total += out.len();
        }
        let f = reads as f64 / total as f64;
        assert!((f - 0.7998).abs() < 0.003, "{f}");
    }

    #[test]
    fn mlc_sequences_have_published_read_shares() {
        let share = |t| {
            let s = mlc_sequence(t);
            let (mut r, mut w) = (0, 0);
            for &k in s {
                let (a, b) = crate::hw::timing::TimingModel::traffic(k, 1);
                r += a;
                w += b;
            }
            r as f64 / (r + w) as f64
        };
        assert!((share(MlcTraffic::W2) - 2.0 / 3.0).abs() < 1e-9);
        assert!((share(MlcTraffic::W5) - 0.5).abs() < 1e-9);
        assert!((share(MlcTraffic::W3) - 0.75).abs() < 1e-9);
        assert_eq!(share(MlcTraffic::W6), 0.0);
        assert_eq!(share(MlcTraffic::R), 1.0);
    }
}
