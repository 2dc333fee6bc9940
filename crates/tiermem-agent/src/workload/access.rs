//! The access threads: pinned to the workload's CPU node, they visit the regions in the
//! order of [`RegionSchedule`], draw pages with [`PageSampler`] (the simulator's code), and
//! load or store one 64-byte line per access. With rates, access `k` is issued no earlier
//! than `t0 + k / rate`: the thread spins in between (its CPU time is its wall time, as in
//! the simulator), and catches up when it falls behind.

use super::control::{monotonic_ns, Shared, RUNNING, STOPPING};
use super::memory::MappedRegion;
use crate::Error;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiermem_core::synthetic::{PageSampler, RegionSchedule, SyntheticConfig};
use tiermem_core::units::PAGE_SIZE;

/// One thread's figures at the end.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ThreadStats {
    pub accesses: u64,
    pub cpu_seconds: f64,
    /// Accesses issued more than 1 ms after their due time (the thread fell behind).
    pub late: u64,
}

/// Per-thread access plan.
struct Plan {
    schedule: RegionSchedule,
    /// Per region: (address, sampler), `None` for idle regions.
    regions: Vec<Option<(usize, PageSampler)>>,
    write_threshold: u64,
    pace: Option<f64>,
    duration: Option<Duration>,
    start: Duration,
}

/// Start the threads; they wait until the phase is RUNNING. `cpus` are the CPUs of the
/// workload's node.
pub fn spawn(
    s: &SyntheticConfig,
    regions: &[MappedRegion],
    cpus: &[u32],
    seed: u64,
    shared: Arc<Shared>,
) -> Result<Vec<std::thread::JoinHandle<()>>, Error> {
    let mut handles = Vec::new();
    for t in 0..s.threads as usize {
        let plan = Plan {
            schedule: s.schedule(),
            regions: s
                .regions
                .iter()
                .zip(regions)
                .map(|(r, mr)| {
                    r.pattern()
                        .map(|p| (mr.addr, PageSampler::new(p, r.pages())))
                })
                .collect(),
            write_threshold: (((100 - s.read_ratio.min(100)) as u64) << 32) / 100,
            pace: s.thread_rate().map(|r| 1.0 / r),
            duration: s.duration.map(|d| Duration::from_nanos(d.ps() / 1000)),
            start: Duration::from_nanos(s.start.ps() / 1000),
        };
        let cpus = cpus.to_vec();
        let sh = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("access{t}"))
            .spawn(move || {
                pin(&cpus);
                let c = sh.get();
                while c.phase() < RUNNING {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let st = run(plan, t, seed, c.t0_ns.load(Ordering::SeqCst), &sh);
                c.accesses[t].store(st.accesses, Ordering::SeqCst);
                c.late[t].store(st.late, Ordering::SeqCst);
                c.cpu_ns[t].store((st.cpu_seconds * 1e9) as u64, Ordering::SeqCst);
            })
            .map_err(|e| Error::Other(format!("cannot start access thread {t}: {e}")))?;
        handles.push(h);
    }
    Ok(handles)
}

/// `sched_setaffinity` to the node's CPUs (best effort: a failure leaves the thread free).
fn pin(cpus: &[u32]) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET and sched_setaffinity take it by pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "cannot pin an access thread");
        }
    }
}

fn thread_cpu_seconds() -> f64 {
    // SAFETY: clock_gettime writes the timespec.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }
}

fn run(mut p: Plan, t: usize, seed: u64, t0_ns: u64, sh: &Shared) -> ThreadStats {
    let c = sh.get();
    let stopping = || c.phase() >= STOPPING;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (0x5eed_0000 + t as u64));
    let begin = t0_ns + p.start.as_nanos() as u64;
    while monotonic_ns() < begin && !stopping() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = p.duration.map(|d| begin + d.as_nanos() as u64);
    let mut stats = ThreadStats::default();
    let mut sink = 0u64;
    let mut n: u64 = 0;
    if p.schedule.is_empty() {
        return stats;
    }
    let pace_ns = p.pace.map(|x| x * 1e9);
    loop {
        if n.is_multiple_of(256) {
            c.accesses[t].store(n, Ordering::Relaxed);
            if stopping() || end.is_some_and(|e| monotonic_ns() >= e) {
                break;
            }
        }
        if let Some(pace) = pace_ns {
            let due = begin + (n as f64 * pace) as u64;
            let mut now = monotonic_ns();
            if now > due + 1_000_000 {
                stats.late += 1;
            }
            while now < due {
                std::hint::spin_loop();
                now = monotonic_ns();
            }
        }
        let j = p.schedule.next_region();
        if let Some((addr, sampler)) = &p.regions[j] {
            let page = sampler.sample(rng.next_u64(), rng.next_u64());
            let r = rng.next_u64();
            let line = ((r & 63) * 64) as usize;
            let ptr = (addr + page as usize * PAGE_SIZE as usize + line) as *mut u64;
            // SAFETY: page < region pages and line < PAGE_SIZE: inside the mapping, which
            // outlives the threads (joined before it is unmapped).
            unsafe {
                if (r >> 32) < p.write_threshold {
                    std::ptr::write_volatile(ptr, std::ptr::read_volatile(ptr).wrapping_add(1));
                } else {
                    sink = sink.wrapping_add(std::ptr::read_volatile(ptr));
                }
            }
        }
        n += 1;
    }
    std::hint::black_box(sink);
    stats.accesses = n;
    stats.cpu_seconds = thread_cpu_seconds();
    stats
}
