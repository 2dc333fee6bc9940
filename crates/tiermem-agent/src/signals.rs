//! The signals that end the agent and the workload runner only after they restore the
//! kernel settings they changed.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT set a flag that the run loops poll (every 20 ms at
//! most); the loop then ends and the restore runs. SIGKILL cannot be caught: `tiermem agent
//! --restore`, run by the systemd unit's `ExecStopPost=` and once at boot, restores from
//! the state file instead. SIGSTOP only pauses the process.

use std::sync::atomic::{AtomicBool, Ordering};

/// Every catchable signal whose default action would end the process without a restore
/// and that an operator, a terminal or a service manager sends to stop a daemon.
pub const RESTORING: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Clear the flag and install the handlers for [`RESTORING`].
pub fn install() {
    STOP.store(false, Ordering::SeqCst);
    let h = on_signal as extern "C" fn(libc::c_int);
    for sig in RESTORING {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(sig, h as libc::sighandler_t);
        }
    }
}

/// Whether a stop was asked for.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
