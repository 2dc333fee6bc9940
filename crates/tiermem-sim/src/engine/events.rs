//! The page-event engine (`sim.engine = "events"` / `"auto"`): threads whose measured phase
//! draws pages independently from one fixed distribution (pmbench's `uniform`, `normal_ih`,
//! `normal`, `pareto`; synthetic workloads' access threads) stop executing accesses one by
//! one at the phase's start. What the kernel sees of their accesses is drawn instead, from
//! each page's probability p per access:
//!
//! * **Faulting touches.** A page that faults at its next touch (made `PROT_NONE` by the NUMA
//!   scanner, swapped out, not yet mapped, or the zero page for a store) is next touched by a
//!   thread after a geometric number of that thread's accesses, G ~ Geom(p) (memoryless, so
//!   the draw may be made whenever the page starts to fault). Each such touch is an event
//!   in the thread's queue, keyed by the thread's access count; when the thread reaches it,
//!   the engine runs the access engine's fault path (`do_numa_page`, `handle_mm_fault`) at
//!   that moment of the thread's clock, so hint-fault latencies, promotion decisions, rate
//!   limits and reclaim are the same code on the same kind of input.
//! * **Accessed bits** are read lazily by the kernel ([`crate::mm::lazy`]).
//! * **Traffic and time in aggregate.** Between events, the thread runs k accesses at the
//!   mean cost of its accesses (CPU time plus lines × loaded latency of the node they land
//!   on). The mean is measured each window from up to [`SAMPLES`] accesses drawn from the
//!   generator itself and looked up in the page table, so the node mix follows migrations
//!   and the latencies follow the timing model as in the access engine; the window's lines
//!   per node and kind, the latency sums and the access counts are those k accesses'.
//!
//! Draws are hashes of (thread, page, generation), not a shared stream, so they do not
//! depend on the order in which pages are noted. Results are deterministic for a config and
//! seed; they are not the access engine's results, which they approximate (see
//! `docs/performance.md` for the cross-check).

use super::radix::RadixQueue;
use super::{Simulation, Thread, ThreadState};
use crate::mm::lazy::unit_hash;
use crate::mm::mem::{prefetch, pte_node, pte_pfn, PTE_PRESENT, PTE_PROTNONE, PTE_RDONLY};
use crate::workload::{Access, Stationary, Step, K_READ, K_WRITE, NR_KINDS};
use crate::SimError;

/// Accesses drawn from the generator per window to measure where the thread's accesses
/// land: at most this many, and at most an eighth of the accesses the window will hold
/// (short ticks), at least [`MIN_SAMPLES`].
pub const SAMPLES: usize = 256;
/// See [`SAMPLES`].
pub const MIN_SAMPLES: usize = 16;

/// A touch that faults, queued at the thread's access count: (page, page generation,
/// store only).
type Event = (u32, u8, bool);

/// The page-event state of one thread.
pub(super) struct EventThread {
    model: Stationary,
    /// Seed of this thread's draws.
    salt: u64,
    /// The thread's accesses since it switched.
    count: u64,
    queue: RadixQueue<Event>,
    /// Touches taken from the queue to fire within the current window, last due first
    /// (taken in batches so that their page-table entries can be prefetched).
    due: Vec<(u64, Event)>,
    /// Fractions carried between steps so that aggregates add up exactly: per latency
    /// slot (lines), then clock ps and latency ps × lines.
    carry_lines: Vec<f64>,
    carry_clock: f64,
    carry_lat: f64,
    /// The previous window's mean cost of an access (ps), to size the next sample.
    last_cost: f64,
}

/// The mean access of a window, from the samples.
struct Mix {
    /// ps of thread time per access.
    cost: f64,
    /// Lines per access in each latency slot.
    lines: Vec<f64>,
    /// Loaded latency × lines per access (ps).
    lat: f64,
}

/// ⌊x⌋ of a non-negative x by a cast (no libm call on the baseline target).
#[inline]
fn whole_part(x: f64) -> f64 {
    x as u64 as f64
}

/// Touches taken from the queue at a time.
const DUE_BATCH: usize = 32;

impl EventThread {
    /// Move up to [`DUE_BATCH`] touches due by access `horizon` from the queue to `due`.
    fn take_due(&mut self, horizon: u64) {
        while self.due.len() < DUE_BATCH {
            match self.queue.peek_key() {
                Some(c) if c <= horizon => {
                    if let Some(e) = self.queue.pop() {
                        self.due.push(e);
                    }
                }
                _ => break,
            }
        }
        self.due.reverse();
    }

    /// The next touch due by access `horizon`: the earlier of the batch's next and the
    /// queue's head (touches queued since the batch was taken).
    fn next_due(&mut self, horizon: u64) -> Option<(u64, Event)> {
        let batch = self.due.last().map(|e| e.0);
        let queued = self.queue.peek_key();
        match (batch, queued) {
            (Some(b), q) if b <= horizon && q.is_none_or(|q| b <= q) => self.due.pop(),
            (_, Some(q)) if q <= horizon => self.queue.pop(),
            _ => None,
        }
    }

    /// The number of accesses until the thread next touches a page of probability `p`
    /// (≥ 1), `None` when it never does.
    fn next_touch(&self, idx: u32, gen: u8, store: bool, p: f64) -> Option<u64> {
        if p <= 0.0 {
            return None;
        }
        let key = self.salt ^ ((idx as u64) << 24) ^ ((gen as u64) << 8) ^ store as u64;
        let u = 1.0 - unit_hash(key); // (0, 1]
        if p >= 1.0 {
            return Some(1);
        }
        // ⌊ln u / ln(1 − p)⌋ (a cast truncates, which is the floor of a non-negative value;
        // the baseline x86-64 target has no rounding instruction).
        let g = u.ln() / (-p).ln_1p();
        (g < 1e18).then(|| 1 + g as u64)
    }

    /// Queue the next touch of a page that faults at it (store-only touches for the zero
    /// page, whose loads do not fault).
    fn schedule(&mut self, idx: u32, gen: u8, store: bool) {
        if self.model.periodic.contains(&idx) {
            // Touched after every batch: at the next multiple of the period.
            let period = self.model.period.max(1);
            self.queue
                .push((self.count / period + 1) * period, (idx, gen, store));
            return;
        }
        let mut p = self.model.pmf.get(idx as usize).copied().unwrap_or(0.0) as f64;
        if store {
            p *= 1.0 - self.model.read_share;
        }
        if let Some(g) = self.next_touch(idx, gen, store, p) {
            self.queue.push(self.count + g, (idx, gen, store));
        }
    }
}

impl Simulation {
    /// Whether thread `ti` may leave the access engine at the start of its measured phase.
    pub(super) fn wants_events(&self, ti: usize) -> bool {
        use tiermem_core::config::EngineKind;
        let th = &self.threads[ti];
        let engine = self.cfg.sim.engine;
        engine != EngineKind::Access
            && th.stationary.is_some()
            && !th.latency_probe
            && self.cfg.kernel.ksm.is_none()
    }

    /// Switch thread `ti` to page events: its process's accessed bits become lazy, and
    /// every page of its distribution that faults at its next touch gets that touch queued.
    pub(super) fn switch_to_events(&mut self, ti: usize) {
        let th = &mut self.threads[ti];
        let Some(model) = th.stationary.take() else {
            return;
        };
        let proc = th.proc;
        let salt = unit_hash(self.cfg.seed ^ 0xE7E7_0000 ^ ti as u64).to_bits();
        self.kernel
            .lazy_enable(proc, model.pmf.clone(), salt ^ 0x5A5A);
        let mut et = EventThread {
            model,
            salt,
            count: 0,
            queue: RadixQueue::default(),
            due: Vec::with_capacity(DUE_BATCH),
            carry_lines: vec![0.0; th.lat.len()],
            carry_clock: 0.0,
            carry_lat: 0.0,
            last_cost: 0.0,
        };
        let ptes = &self.kernel.procs()[proc as usize].ptes;
        let gens = self.kernel.lazy_gens(proc).unwrap_or_default();
        for idx in 0..et.model.pmf.len().min(ptes.len()) as u32 {
            let pte = ptes[idx as usize];
            let gen = gens.get(idx as usize).copied().unwrap_or(0);
            if pte & (PTE_PRESENT | PTE_PROTNONE) != PTE_PRESENT {
                et.schedule(idx, gen, false);
            } else if pte & PTE_RDONLY != 0 {
                et.schedule(idx, gen, true);
            }
        }
        self.threads[ti].events = Some(Box::new(et));
    }

    /// The pages the kernel noted as faulting since the last call, queued on every
    /// page-event thread of their process.
    fn schedule_noted(&mut self) {
        let noted = self.kernel.lazy_take_will_fault();
        if noted.is_empty() {
            return;
        }
        for th in &mut self.threads {
            let Some(et) = th.events.as_mut() else {
                continue;
            };
            for &(p, idx, gen) in &noted {
                if p == th.proc {
                    et.schedule(idx, gen, false);
                }
            }
        }
    }

    /// Run page-event thread `ti` until its clock reaches `stop`, or it finishes.
    pub(super) fn run_events(&mut self, ti: usize, stop: u64) -> Result<(), SimError> {
        self.schedule_noted();
        let th = &mut self.threads[ti];
        if !self.kernel.procs()[th.proc as usize].alive {
            th.state = ThreadState::Done;
            return Ok(());
        }
        let Some(limit) = th.window_limit(stop) else {
            return Ok(());
        };
        let Some(mix) = self.sample_mix(ti, limit) else {
            return Ok(());
        };
        while self.threads[ti].clock < limit {
            let th = &mut self.threads[ti];
            // Accesses until the window ends: the last one starts before the limit.
            let to_limit = th.accesses_before(limit, mix.cost);
            if to_limit == 0 {
                // A paced thread whose next access is due after the window spins to its end.
                th.win_active += limit - th.clock;
                th.clock = limit;
                break;
            }
            let Some(et) = th.events.as_mut() else {
                return Ok(());
            };
            let horizon = et.count + to_limit;
            if et.due.is_empty() {
                et.take_due(horizon);
                self.prefetch_due(ti);
            }
            let Some(et) = self.threads[ti].events.as_mut() else {
                return Ok(());
            };
            match et.next_due(horizon) {
                Some((count, ev)) => {
                    let k = count.saturating_sub(et.count);
                    self.prefetch_frame(ti);
                    self.advance(ti, k, &mix);
                    if self.fire(ti, count, ev)? {
                        return Ok(());
                    }
                    self.schedule_noted();
                }
                None => self.advance(ti, to_limit, &mix),
            }
        }
        Ok(())
    }

    /// Start loading the frame of the batch's touch after next: its page-table entry was
    /// prefetched with the batch, the frame (which the hint fault reads) not yet.
    fn prefetch_frame(&self, ti: usize) {
        let th = &self.threads[ti];
        let Some(et) = th.events.as_ref() else {
            return;
        };
        let Some(&(_, (idx, _, _))) = et.due.len().checked_sub(2).and_then(|i| et.due.get(i))
        else {
            return;
        };
        let pte = self.kernel.procs()[th.proc as usize].ptes[idx as usize];
        if pte & PTE_PRESENT != 0 {
            let frames = &self.kernel.nodes()[pte_node(pte)].frames;
            prefetch(frames, pte_pfn(pte) as usize);
        }
    }

    /// Start loading the page-table entries and generations of the touches about to fire:
    /// each is a cache miss in tables of gigabytes otherwise.
    fn prefetch_due(&self, ti: usize) {
        let th = &self.threads[ti];
        let Some(et) = th.events.as_ref() else {
            return;
        };
        let ptes = &self.kernel.procs()[th.proc as usize].ptes;
        let gens = self.kernel.lazy_gens(th.proc);
        for &(_, (idx, _, _)) in &et.due {
            prefetch(ptes, idx as usize);
            if let Some(g) = gens {
                prefetch(g, idx as usize);
            }
        }
    }

    /// A touch of thread `ti` at its access `count`, if the page still faults at it. True
    /// when the fault ended the thread (OOM kill).
    fn fire(&mut self, ti: usize, count: u64, (idx, gen, store): Event) -> Result<bool, SimError> {
        let th = &self.threads[ti];
        let Some(et) = th.events.as_ref() else {
            return Ok(false);
        };
        let proc = th.proc;
        if self.kernel.lazy_gen(proc, idx) != Some(gen) {
            return Ok(false);
        }
        let pte = self.kernel.procs()[proc as usize].ptes[idx as usize];
        let mask = if store {
            PTE_PRESENT | PTE_PROTNONE | PTE_RDONLY
        } else {
            PTE_PRESENT | PTE_PROTNONE
        };
        if pte & mask == PTE_PRESENT {
            return Ok(false);
        }
        // A store only where the touch is drawn as one: the kind of a touch is
        // independent of which page it lands on. A periodic touch is a store without
        // traffic.
        let periodic = et.model.periodic.contains(&idx);
        let write = store
            || periodic
            || unit_hash(et.salt ^ 0x51DE ^ count.rotate_left(20) ^ idx as u64)
                >= et.model.read_share;
        let a = Access {
            idx,
            lines: u8::from(!periodic),
            kind: if write { K_WRITE } else { K_READ },
        };
        let clock = th.clock;
        if self.access_fault(ti, a, clock) {
            return Ok(true);
        }
        let now = self.kernel.procs()[proc as usize].ptes[idx as usize];
        if write && now & PTE_RDONLY != 0 {
            // A read-modify-write whose load half mapped the zero page: its store faults
            // next, in the same access (as the access loop retries it).
            let clock = self.threads[ti].clock;
            return Ok(self.access_fault(ti, a, clock));
        }
        // A load that mapped the zero page faults again at the page's next store.
        if now & PTE_RDONLY != 0 {
            if let Some(et) = self.threads[ti].events.as_mut() {
                et.schedule(idx, gen, true);
            }
        }
        Ok(false)
    }

    /// The window's mean access: up to [`SAMPLES`] accesses from the generator, looked up in the
    /// page table. `None` when the generator has ended (the thread is then done).
    fn sample_mix(&mut self, ti: usize, limit: u64) -> Option<Mix> {
        let th = &mut self.threads[ti];
        let last_cost = th.events.as_ref().map_or(0.0, |e| e.last_cost);
        let samples = if last_cost > 0.0 {
            // A paced thread runs one access per slot at most.
            let expected = (limit - th.clock) as f64 / last_cost.max(th.pace as f64);
            ((expected / 8.0) as usize).clamp(MIN_SAMPLES, SAMPLES)
        } else {
            SAMPLES
        };
        let ptes = &self.kernel.procs()[th.proc as usize].ptes;
        let mut lines = vec![0.0; th.lat.len()];
        let (mut time, mut lat, mut n) = (0.0, 0.0, 0usize);
        while n < samples {
            if th.cursor >= th.buf.len() {
                th.cursor = 0;
                match th.gen.next(&mut th.rng, &mut th.buf) {
                    Step::Accesses => continue,
                    // Stationary generators (the only ones on page events) do no file I/O.
                    Step::RunStart | Step::Barrier | Step::File(_) => continue,
                    Step::Done => {
                        th.state = ThreadState::Done;
                        th.run_end = Some(th.clock);
                        return None;
                    }
                }
            }
            if let Some(ahead) = th.buf.get(th.cursor + super::PREFETCH_AHEAD) {
                prefetch(ptes, ahead.idx as usize);
            }
            let a = th.buf[th.cursor];
            th.cursor += 1;
            if a.lines == 0 {
                // A periodic touch of the loop's own pages: not an access (events fire it).
                continue;
            }
            let pte = ptes[a.idx as usize];
            n += 1;
            if pte & PTE_PRESENT == 0 {
                // A page not mapped yet costs its fault (an event), not a memory access.
                time += th.cpu_per_access as f64;
                continue;
            }
            let slot = pte_node(pte) * NR_KINDS + a.kind as usize;
            let l = a.lines as f64;
            lines[slot] += l;
            time += th.cpu_per_access as f64 + l * (th.cpu_per_line + th.lat[slot]) as f64;
            lat += l * th.lat_raw[slot] as f64;
        }
        let m = samples as f64;
        lines.iter_mut().for_each(|l| *l /= m);
        let cost = (time / m).max(1.0);
        if let Some(e) = th.events.as_mut() {
            e.last_cost = cost;
        }
        Some(Mix {
            cost,
            lines,
            lat: lat / m,
        })
    }

    /// `k` accesses of thread `ti` at the window's mean: its clock, window lines and
    /// counters, and its process's access count for the lazy accessed bits.
    fn advance(&mut self, ti: usize, k: u64, mix: &Mix) {
        if k == 0 {
            return;
        }
        let th: &mut Thread = &mut self.threads[ti];
        let Some(et) = th.events.as_mut() else {
            return;
        };
        let kf = k as f64;
        let mut lines_total = 0;
        for (slot, &l) in mix.lines.iter().enumerate() {
            if l == 0.0 {
                continue;
            }
            let exact = kf * l + et.carry_lines[slot];
            let whole = whole_part(exact);
            et.carry_lines[slot] = exact - whole;
            th.win_lines[slot] += whole as u64;
            lines_total += whole as u64;
        }
        let dt = if th.pace == 0 {
            kf * mix.cost + et.carry_clock
        } else {
            // The k-th access starts at the later of its slot and the previous one's end:
            // the last ends at max(clock + k·cost, slot + (k − 1)·max(pace, cost) + cost).
            let step = (th.pace as f64).max(mix.cost);
            let slot_end = th.next_slot as f64 + (kf - 1.0) * step + mix.cost;
            th.next_slot += k * th.pace;
            (kf * mix.cost + et.carry_clock).max(slot_end - th.clock as f64)
        };
        let dt_whole = whole_part(dt);
        et.carry_clock = dt - dt_whole;
        let lat = kf * mix.lat + et.carry_lat;
        let lat_whole = whole_part(lat);
        et.carry_lat = lat - lat_whole;
        et.count += k;
        th.clock += dt_whole as u64;
        th.win_active += dt_whole as u64;
        th.accesses += k;
        th.lines += lines_total;
        th.lat_sum += lat_whole as u128;
        self.sample_accesses += k;
        self.sample_lat.0 += lat_whole as u128;
        self.sample_lat.1 += lines_total;
        let proc = th.proc;
        self.kernel.lazy_add_accesses(proc, k);
    }
}
