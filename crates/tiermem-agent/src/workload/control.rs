//! The control block shared by the recording process and the workload process: a
//! `MAP_SHARED` anonymous mapping made before `fork`, holding the phase, time 0 and the
//! access threads' counters.
//!
//! Why two processes: NUMA balancing scans an mm from whichever of its threads has used
//! enough CPU. A sampler thread inside the workload's process (reading `numa_maps` takes
//! real CPU time) would claim scans, find it has touched none of the regions (the PID
//! filter of `vma_is_accessed`) and skip them, slowing the workload's scanning: seen in the
//! first traced recordings. The simulator's process has the access threads and an idle
//! main thread; so does the workload process.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tiermem_core::synthetic::MAX_THREADS;

pub const STARTING: u32 = 0;
/// Regions mapped and populated, threads waiting.
pub const POPULATED: u32 = 1;
/// Time 0 has come: threads run.
pub const RUNNING: u32 = 2;
/// Threads stop; the process reports and exits.
pub const STOPPING: u32 = 3;
/// The workload process failed; `error` says why.
pub const FAILED: u32 = 9;

const ERROR_LEN: usize = 1024;

/// The shared block (plain atomics: valid for any bit pattern, so the zeroed mapping is a
/// valid initial state).
#[repr(C)]
pub struct Control {
    pub phase: AtomicU32,
    /// CLOCK_MONOTONIC nanoseconds at time 0 (the same clock in both processes).
    pub t0_ns: AtomicU64,
    pub populate_ns: AtomicU64,
    pub accesses: [AtomicU64; MAX_THREADS as usize],
    pub late: [AtomicU64; MAX_THREADS as usize],
    pub cpu_ns: [AtomicU64; MAX_THREADS as usize],
    error_len: AtomicU32,
    error: [AtomicU32; ERROR_LEN / 4],
}

/// Owner of the mapping.
pub struct Shared {
    ptr: *mut Control,
}

// SAFETY: the block holds only atomics.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// Map a zeroed block shared with children forked later.
    pub fn new() -> std::io::Result<Shared> {
        let len = std::mem::size_of::<Control>();
        // SAFETY: an anonymous shared mapping; zero-filled by the kernel.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Shared {
            ptr: p as *mut Control,
        })
    }

    pub fn get(&self) -> &Control {
        // SAFETY: the mapping lives as long as self and holds a Control (all atomics).
        unsafe { &*self.ptr }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: mapped in `new`, unmapped once.
        unsafe {
            libc::munmap(
                self.ptr as *mut libc::c_void,
                std::mem::size_of::<Control>(),
            );
        }
    }
}

impl Control {
    pub fn phase(&self) -> u32 {
        self.phase.load(Ordering::SeqCst)
    }
    pub fn set_phase(&self, p: u32) {
        self.phase.store(p, Ordering::SeqCst);
    }

    /// Record an error message (truncated) and the FAILED phase.
    pub fn fail(&self, msg: &str) {
        let b = msg.as_bytes();
        let n = b.len().min(ERROR_LEN);
        for (i, w) in self.error.iter().enumerate() {
            let mut v = [0u8; 4];
            for (k, x) in v.iter_mut().enumerate() {
                *x = b.get(i * 4 + k).copied().unwrap_or(0);
            }
            w.store(u32::from_le_bytes(v), Ordering::Relaxed);
        }
        self.error_len.store(n as u32, Ordering::SeqCst);
        self.set_phase(FAILED);
    }

    pub fn error(&self) -> String {
        let n = (self.error_len.load(Ordering::SeqCst) as usize).min(ERROR_LEN);
        let bytes: Vec<u8> = self
            .error
            .iter()
            .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
            .take(n)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn total_accesses(&self, threads: usize) -> u64 {
        self.accesses[..threads]
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime writes the timespec.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_round_trip_through_the_block() {
        let s = Shared::new().unwrap();
        s.get().fail("cannot map region \"hot\"");
        assert_eq!(s.get().phase(), FAILED);
        assert_eq!(s.get().error(), "cannot map region \"hot\"");
    }
}
