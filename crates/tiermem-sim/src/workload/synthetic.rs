//! The synthetic workload in the simulator (`type = "synthetic"`,
//! [`tiermem_core::synthetic`]): the same regions, placement, patterns, rates and KSM
//! content that `tiermem workload run` produces on a live host.
//!
//! Build order follows the live runner: map every region (one VMA each); give each region
//! its `place` policy as VMA policy, populate the regions in order through the fault path
//! (`do_anonymous_page`, so interleave policies use the page offset as first touch does);
//! switch each VMA policy to the region's `mbind` (or none); mark KSM regions
//! `MADV_MERGEABLE` with their content. Population is instantaneous at time 0: the live
//! runner starts its clock when population is done, with NUMA balancing and ksmd off until
//! then.
//!
//! Tasks: the process's main thread (which populated the regions and then only waits) is
//! registered first, so that the access threads are *new threads of an existing mm* and
//! stagger their first scan as `init_numa_balancing` does; then one task per access thread.

use crate::mm::Kernel;
use crate::workload::{Access, Generator, Stationary, Step, ThreadSpec, K_READ, K_WRITE};
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use tiermem_core::synthetic::{KsmContent, PageSampler, RegionSchedule, SyntheticConfig};
use tiermem_core::units::{NodeId, SimDuration, SimTime};

/// Content id of every page of every `identical` region (below the fresh-content range).
const IDENTICAL_CONTENT: u32 = 0x7000_0000;
/// Content ids of `identical_within_region` regions: this base + workload × 64 + region.
const REGION_CONTENT_BASE: u32 = 0x7000_0001;
const BATCH: usize = 256;

/// How often the live runner's main thread wakes while it waits for the end of the run:
/// it polls the control block every 20 ms (tiermem-agent `workload::process`).
pub const MAIN_POLL: SimDuration = SimDuration::from_ms(20);

/// One thread of a synthetic workload.
pub enum SyntheticGen {
    /// The main thread: it populated the regions (that CPU time is its runtime at time 0),
    /// then only waits, waking every [`MAIN_POLL`]. NUMA balancing scans from it when a
    /// scheduler tick lands in one of its wakeups: its runtime is far ahead of its
    /// `node_stamp`, so it passes `task_tick_numa`'s test at each such tick until its scans'
    /// overhead charge catches up (the recordings' ftrace shows it scanning).
    Main { populate_cpu: SimDuration },
    /// An access thread.
    Access(Box<AccessGen>),
}

pub struct AccessGen {
    started: bool,
    schedule: RegionSchedule,
    /// Per region of the workload: (first page-table index, sampler); idle regions `None`.
    regions: Vec<Option<(u32, PageSampler)>>,
    /// Stores per 2^32 accesses.
    write_threshold: u64,
    /// Pages of the process image the loop stores to once per batch (see [`image_touches`]).
    touches: Vec<u32>,
}

impl SyntheticGen {
    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        match self {
            SyntheticGen::Main { .. } => Step::Done,
            SyntheticGen::Access(g) => g.next(rng, out),
        }
    }
}

impl AccessGen {
    fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        if !self.started {
            self.started = true;
            return Step::RunStart;
        }
        if self.schedule.is_empty() {
            // Only idle regions: the thread waits (without using CPU) until the run ends,
            // so the process and its memory stay, as the live runner's do.
            return Step::Barrier;
        }
        for _ in 0..BATCH {
            let j = self.schedule.next_region();
            let Some((base, sampler)) = &self.regions[j] else {
                continue;
            };
            let page = sampler.sample(rng.next_u64(), rng.next_u64());
            let idx = base + page as u32;
            let kind = if (rng.next_u64() >> 32) < self.write_threshold {
                // A read-modify-write (Generator::stores_load_first).
                K_WRITE
            } else {
                K_READ
            };
            out.push(Access {
                idx,
                lines: 1,
                kind,
            });
        }
        out.extend(self.touches.iter().map(|&idx| Access {
            idx,
            lines: 0,
            kind: K_WRITE,
        }));
        Step::Accesses
    }

    /// The thread's accesses as the page-event engine sees them (`None` when it accesses
    /// nothing): page i of region j is drawn with probability (region j's fraction of the
    /// schedule) × (its sampler's probability of i). The schedule interleaves the regions
    /// in a fixed order rather than at random; per page, the time to its next touch is
    /// still close to geometric, since one region's draws are independent. The image
    /// pages the loop stores to after each batch are periodic, not drawn; in the
    /// distribution (which also answers the kernel's accessed-bit tests for the whole
    /// process) they stand at once per batch. The other threads' stacks, which this one
    /// does not touch, stand at zero there.
    pub fn stationary(&self) -> Option<Stationary> {
        if self.schedule.is_empty() {
            return None;
        }
        let end = |(base, s): &(u32, PageSampler)| *base as usize + s.pages() as usize;
        let len = (self.regions.iter().flatten().map(end))
            .chain(self.touches.iter().map(|&t| t as usize + 1))
            .max()?;
        let mut pmf = vec![0.0f32; len];
        for (j, share) in self.schedule.fractions() {
            let Some((base, sampler)) = &self.regions[j] else {
                continue;
            };
            for (i, q) in sampler.pmf().into_iter().enumerate() {
                pmf[*base as usize + i] = (share * q) as f32;
            }
        }
        for &t in &self.touches {
            pmf[t as usize] = 1.0 / BATCH as f32;
        }
        Some(Stationary {
            pmf: pmf.into(),
            read_share: 1.0 - self.write_threshold as f64 / (1u64 << 32) as f64,
            periodic: self.touches.clone(),
            period: BATCH as u64,
        })
    }
}

/// Create the process and its threads (main first, then the access threads).
pub fn build(
    s: &SyntheticConfig,
    wi: usize,
    cpu: NodeId,
    default_cpu_per_access: SimDuration,
    kernel: &mut Kernel,
) -> Result<Vec<ThreadSpec>, tiermem_core::ConfigError> {
    let name = s.name.clone().unwrap_or_else(|| format!("synthetic{wi}"));
    let image = process_image(s.threads);
    let vmas = s
        .regions
        .iter()
        .map(|r| (r.name.clone(), r.pages() as u32, r.place.clone()))
        .chain(image.iter().map(|v| (v.name.to_string(), v.pages, None)))
        .collect();
    let proc = kernel.add_process(name, cpu, s.policy.clone(), vmas)?;
    let populate_cpu = populate_image(&image, s.regions.len(), proc, cpu, kernel)
        + place_regions(s, wi, proc, cpu, kernel);
    let mut threads = vec![spec(
        wi,
        proc,
        cpu,
        SimDuration::ZERO,
        None,
        Generator::Synthetic(SyntheticGen::Main { populate_cpu }),
    )];
    let pace = s.thread_rate().map(|r| SimDuration::from_secs_f64(1.0 / r));
    let cpa = s.cpu_per_access.unwrap_or(if pace.is_some() {
        SimDuration::ZERO
    } else {
        default_cpu_per_access
    });
    for k in 0..s.threads {
        let gen = AccessGen {
            started: false,
            schedule: s.schedule(),
            regions: region_samplers(s, kernel, proc),
            write_threshold: (((100 - s.read_ratio) as u64) << 32) / 100,
            touches: image_touches(&image, s.regions.len(), proc, kernel, k as usize),
        };
        let mut t = spec(
            wi,
            proc,
            cpu,
            cpa,
            s.duration,
            Generator::Synthetic(SyntheticGen::Access(Box::new(gen))),
        );
        t.start = s.start;
        t.pace = pace;
        threads.push(t);
    }
    Ok(threads)
}

fn spec(
    wi: usize,
    proc: u16,
    cpu: NodeId,
    cpa: SimDuration,
    run: Option<SimDuration>,
    generator: Generator,
) -> ThreadSpec {
    ThreadSpec {
        workload: wi,
        proc,
        cpu_node: cpu,
        mlp: 1,
        cpu_per_access: cpa,
        cpu_per_line: SimDuration::ZERO,
        cpu_per_line_from_run: false,
        start: SimDuration::ZERO,
        run_duration: run,
        barrier_group: None,
        generator,
        latency_probe: false,
        pace: None,
    }
}

fn region_samplers(
    s: &SyntheticConfig,
    kernel: &Kernel,
    proc: u16,
) -> Vec<Option<(u32, PageSampler)>> {
    s.regions
        .iter()
        .zip(&kernel.procs()[proc as usize].vmas)
        .map(|(r, v)| {
            r.pattern()
                .map(|p| (v.pte_base, PageSampler::new(p, r.pages())))
        })
        .collect()
}

/// A VMA every process has besides its data: stacks, heap, the binary's data.
pub struct ImageVma {
    pub name: &'static str,
    pub pages: u32,
    /// Pages present (touched at start-up, on the CPU's node).
    pub present: u32,
}

/// The VMAs the live runner's workload process has besides its regions, in address order
/// after them (its `/proc/<pid>/maps` at time 0, recorded as `maps.txt`): the heap; per
/// access thread a malloc arena, a signal stack and a 2 MiB stack; the control block
/// shared with the recording process; the main thread's signal stack; the vDSO; the
/// binary's data and bss; the main stack. Guard pages, `[vvar]` and the read-only file
/// mappings are left out: the scanner skips them without looking (inaccessible,
/// unsuitable, shared read-only). The rest matter: NUMA balancing walks them, and once a
/// sequence is two old only the PID filter's forced retry scans them, one per scan, so they
/// decide how long a scan sequence takes (see `numa_scan`).
pub fn process_image(threads: u32) -> Vec<ImageVma> {
    let v = |name, pages, present| ImageVma {
        name,
        pages,
        present,
    };
    let mut out = vec![v("[heap]", 67, 16)];
    for _ in 0..threads {
        out.extend([
            v("[arena]", 33, 2),
            v("[sigaltstack]", 2, 1),
            v("[thread-stack]", 512, 4),
        ]);
    }
    out.extend([
        v("[control]", 2, 2),
        v("[sigaltstack]", 2, 1),
        v("[vdso]", 2, 2),
        v("[data]", 4, 4),
        v("[bss]", 7, 7),
        v("[stack]", 33, 8),
    ]);
    out
}

/// The image pages access thread `k` stores to as it runs: the top of its stack (the loop's
/// frames and the `clock_gettime` results of its pacing) and the shared control block (its
/// access count, published every 256 accesses: `workload::access` in tiermem-agent). They
/// are top-tier pages the scanner marks like any other, so in NUMA_BALANCING_NORMAL mode
/// the thread takes a local hint fault right after each scan: that fault runs
/// `task_numa_placement` and adapts the scan period at the start of the sequence, as on
/// the live host (without it the first accounted fault came a sequence late).
fn image_touches(
    image: &[ImageVma],
    first: usize,
    proc: u16,
    kernel: &Kernel,
    k: usize,
) -> Vec<u32> {
    let base = |i: usize| kernel.procs()[proc as usize].vmas[first + i].pte_base;
    let stack_top = image
        .iter()
        .enumerate()
        .filter(|(_, v)| v.name == "[thread-stack]")
        .nth(k)
        .map(|(i, v)| base(i) + v.present.min(v.pages).saturating_sub(1));
    let control = image.iter().position(|v| v.name == "[control]").map(base);
    stack_top.into_iter().chain(control).collect()
}

/// Fault in the image VMAs' present pages (first VMA index `first`), on the CPU's node.
/// Fault in the image's present pages; returns the faults' CPU time.
fn populate_image(
    image: &[ImageVma],
    first: usize,
    proc: u16,
    cpu: NodeId,
    kernel: &mut Kernel,
) -> SimDuration {
    let mut cpu_time = SimDuration::ZERO;
    for (k, v) in image.iter().enumerate() {
        let base = kernel.procs()[proc as usize].vmas[first + k].pte_base;
        for idx in base..base + v.present.min(v.pages) {
            match kernel.handle_fault(proc, idx, true, cpu, SimTime::ZERO) {
                Ok(c) => cpu_time += c,
                Err(_) => return cpu_time,
            }
        }
    }
    cpu_time
}

/// Placement: populate each region under its `place` policy (already its VMA policy),
/// then install the run-time VMA policies, contents and KSM advice. Returns the
/// population's CPU time (its faults).
fn place_regions(
    s: &SyntheticConfig,
    wi: usize,
    proc: u16,
    cpu: NodeId,
    kernel: &mut Kernel,
) -> SimDuration {
    let mut cpu_time = SimDuration::ZERO;
    for (j, r) in s.regions.iter().enumerate() {
        let (base, pages) = {
            let v = &kernel.procs()[proc as usize].vmas[j];
            (v.pte_base, v.pages)
        };
        if r.populate {
            for idx in base..base + pages {
                match kernel.handle_fault(proc, idx, true, cpu, SimTime::ZERO) {
                    Ok(c) => cpu_time += c,
                    Err(e) => {
                        tracing::warn!(?e, region = %r.name, "populating the region failed");
                        break;
                    }
                }
            }
        }
        if let Some(k) = r.ksm {
            for idx in base..base + pages {
                let c = match k {
                    KsmContent::Identical => Some(IDENTICAL_CONTENT),
                    KsmContent::IdenticalWithinRegion => {
                        Some(REGION_CONTENT_BASE + (wi as u32 % 1024) * 64 + j as u32)
                    }
                    KsmContent::Unique => kernel.ksm_fresh_content(),
                };
                if let Some(c) = c {
                    kernel.ksm_set_content(proc, idx, c);
                }
            }
        }
    }
    for (j, r) in s.regions.iter().enumerate() {
        kernel.set_vma_policy(proc, j, r.mbind.clone());
        if r.ksm.is_some() {
            if let Err(e) = kernel.ksm_madvise_mergeable(proc, j) {
                tracing::warn!(%e, region = %r.name, "MADV_MERGEABLE failed");
            }
        }
    }
    cpu_time
}

/// The per-workload result of a synthetic workload.
pub fn result(
    s: &SyntheticConfig,
    wi: usize,
    reports: &[&crate::workload::ThreadReport],
) -> crate::workload::WorkloadResult {
    let mut accesses = 0;
    let mut run = 0.0f64;
    for r in reports {
        accesses += r.run_accesses;
        if let (Some(a), Some(b)) = (r.run_start, r.run_end) {
            run = run.max(b.since(a).secs_f64());
        }
    }
    crate::workload::WorkloadResult::Synthetic {
        name: s.name.clone().unwrap_or_else(|| format!("synthetic{wi}")),
        threads: s.threads,
        accesses,
        run_seconds: run,
        accesses_per_s: if run > 0.0 {
            accesses as f64 / run
        } else {
            0.0
        },
    }
}
