//! The workload process: forked from the recording process before it starts any thread,
//! it sets the task policy, maps, places and populates the regions, starts the access
//! threads and then waits (idle, as the simulator's main thread) until told to stop.
//! `PR_SET_PDEATHSIG` ends it with the recording process.

use super::control::{monotonic_ns, Control, Shared, FAILED, POPULATED, STOPPING};
use super::{access, memory};
use crate::Error;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiermem_core::synthetic::SyntheticConfig;

/// The forked workload process.
pub struct Child {
    pub pid: u32,
    /// The workload's index in the scenario.
    pub workload: usize,
}

/// Fork the workload process. Call while the calling process has no other thread (fork
/// copies only the caller; a lock held by another thread would stay locked in the child).
pub fn spawn(
    s: &SyntheticConfig,
    workload: usize,
    cpus: &[u32],
    seed: u64,
    shared: Arc<Shared>,
) -> Result<Child, Error> {
    // SAFETY: the process is single-threaded here (see above); the child only runs
    // `child_main` and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(Error::Other(format!(
            "cannot fork the workload process: {}",
            std::io::Error::last_os_error()
        ))),
        0 => {
            let code = child_main(s, workload, cpus, seed, shared);
            // SAFETY: leave without running the parent's destructors or exit handlers.
            unsafe { libc::_exit(code) }
        }
        p => Ok(Child {
            pid: p as u32,
            workload,
        }),
    }
}

fn child_main(
    s: &SyntheticConfig,
    workload: usize,
    cpus: &[u32],
    seed: u64,
    shared: Arc<Shared>,
) -> i32 {
    // SAFETY: plain prctl: die with the recording process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    match body(s, workload, cpus, seed, &shared) {
        Ok(()) => 0,
        Err(e) => {
            shared.get().fail(&e.to_string());
            1
        }
    }
}

fn body(
    s: &SyntheticConfig,
    workload: usize,
    cpus: &[u32],
    seed: u64,
    shared: &Arc<Shared>,
) -> Result<(), Error> {
    let c = shared.get();
    if s.policy != Default::default() {
        let flags: i32 = s.policy.flags.iter().map(|f| f.kernel_value()).sum();
        let nodes: Vec<u32> = s.policy.nodes.iter().map(|n| n.0 as u32).collect();
        crate::sys::set_mempolicy(s.policy.mode.kernel_value() | flags, &nodes)?;
    }
    let mapping = memory::map_regions(s)?;
    let t0 = monotonic_ns();
    memory::place_and_populate(s, workload, &mapping)?;
    c.populate_ns.store(monotonic_ns() - t0, Ordering::SeqCst);
    let handles = access::spawn(s, &mapping.regions, cpus, seed, shared.clone())?;
    c.set_phase(POPULATED);
    while c.phase() < STOPPING {
        std::thread::sleep(Duration::from_millis(20));
    }
    for h in handles {
        let _ = h.join();
    }
    drop(mapping);
    Ok(())
}

impl Child {
    /// Wait until the regions are populated (or the process failed, died, or a signal came).
    pub fn wait_for_population(&self, c: &Control) -> Result<(), Error> {
        loop {
            match c.phase() {
                POPULATED => return Ok(()),
                FAILED => {
                    return Err(Error::Other(format!(
                        "the workload process failed: {}",
                        c.error()
                    )))
                }
                _ => {}
            }
            if crate::signals::stop_requested() {
                return Err(Error::Other("stopped by a signal during population".into()));
            }
            if let Some(status) = self.try_wait() {
                return Err(Error::Other(format!(
                    "the workload process ended during population ({status})"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn try_wait(&self) -> Option<String> {
        let mut st = 0;
        // SAFETY: waitpid on our own child with WNOHANG.
        let r = unsafe { libc::waitpid(self.pid as i32, &mut st, libc::WNOHANG) };
        (r == self.pid as i32).then(|| describe(st))
    }

    /// Wait for the process to exit (after STOPPING); an error if it failed.
    pub fn wait(&self) -> Result<(), Error> {
        let mut st = 0;
        // SAFETY: waitpid on our own child.
        let r = unsafe { libc::waitpid(self.pid as i32, &mut st, 0) };
        if r != self.pid as i32 {
            // Already reaped by try_wait.
            return Ok(());
        }
        if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 {
            Ok(())
        } else {
            Err(Error::Other(format!(
                "the workload process {}",
                describe(st)
            )))
        }
    }
}

fn describe(st: i32) -> String {
    if libc::WIFEXITED(st) {
        format!("exited with status {}", libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        format!("was killed by signal {}", libc::WTERMSIG(st))
    } else {
        format!("ended with wait status {st:#x}")
    }
}
