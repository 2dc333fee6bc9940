//! Host memory: estimated before the simulator allocates it, refused with the figure and
//! the limit instead of an allocation abort or the host's OOM killer.
//!
//! The large tables are each process's page table (one 8-byte PTE per page of its address
//! space, allocated when the workload adds the process) and the nodes' frame tables (one
//! [`Frame`] per page in use and its LRU queue entry, grown as pages are allocated: at
//! most one per mapped page and at most the nodes' capacity). [`Budget::add_process`]
//! charges both for each process before its page table is allocated; the rest (per-thread buffers, DAMON regions, KSM
//! rmap items, swap slots, all bounded by the mapped pages) is small beside them and
//! covered by the headroom the limit leaves.
//!
//! The limit is the host's `MemAvailable` unless set with [`set_limit`] (the CLI's
//! `--max-memory`).

use crate::mm::mem::Frame;
use std::sync::atomic::{AtomicU64, Ordering};
use tiermem_core::topology::Topology;
use tiermem_core::ConfigError;

/// 0: the host's available memory.
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Bytes of host memory per page-table entry.
pub const PTE_BYTES: u64 = 8;

/// Bytes of host memory per frame on an LRU list besides the frame: its queue entry (4 B)
/// and as many again for stale entries and the queue's spare capacity (the queue compacts
/// when stale entries exceed half the live ones, and grows by an eighth).
pub const LRU_ENTRY_BYTES: u64 = 8;

/// Host memory of one process and its threads besides the page table: the process, NUMA
/// and KSM state and each thread's buffers and latency tables (measured: 65 534 one-page
/// pmbench processes peak at 938 MB, about 14 KiB each).
pub const PROCESS_BYTES: u64 = 16 << 10;

/// Set the limit in bytes (`None`: the host's `MemAvailable`).
pub fn set_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::SeqCst);
}

/// The limit in force: the one set, else `MemAvailable` from `/proc/meminfo`, else none.
pub fn limit() -> (u64, &'static str) {
    match LIMIT.load(Ordering::SeqCst) {
        0 => match mem_available() {
            Some(b) => (b, "the memory available on this host"),
            None => (u64::MAX, "no limit"),
        },
        b => (b, "--max-memory"),
    }
}

fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// What one simulation may still allocate.
#[derive(Clone, Debug)]
pub struct Budget {
    limit: u64,
    source: &'static str,
    used: u64,
    /// Pages of capacity no process has been charged a frame for yet.
    frames_left: u64,
}

impl Budget {
    /// A budget at the limit in force for a machine (what [`crate::engine::Simulation`]
    /// gives its kernel).
    pub fn from_limit(topo: &Topology) -> Self {
        let (limit, source) = limit();
        Budget::with_limit(topo, limit, source)
    }

    /// No limit: a kernel built on its own (unit tests of the mechanisms).
    pub fn unlimited(topo: &Topology) -> Self {
        Budget::with_limit(topo, u64::MAX, "no limit")
    }

    fn with_limit(topo: &Topology, limit: u64, source: &'static str) -> Self {
        Budget {
            limit,
            source,
            used: 0,
            frames_left: topo.nodes.iter().map(|n| n.capacity.pages_floor().0).sum(),
        }
    }

    /// Charge a process of `pages` pages: its page table and the frames its pages may take.
    pub fn add_process(&mut self, name: &str, pages: u64) -> Result<(), ConfigError> {
        let frames = pages.min(self.frames_left);
        let bytes = pages
            .saturating_mul(PTE_BYTES)
            .saturating_add(
                frames.saturating_mul(std::mem::size_of::<Frame>() as u64 + LRU_ENTRY_BYTES),
            )
            .saturating_add(PROCESS_BYTES);
        self.take(
            "workloads",
            &format!("process {name}: {pages} pages mapped"),
            bytes,
        )?;
        self.frames_left -= frames;
        Ok(())
    }

    /// Account `bytes` for `what` under the config key that asks for them, or refuse with
    /// the estimate and the limit.
    pub fn take(&mut self, key: &str, what: &str, bytes: u64) -> Result<(), ConfigError> {
        let total = self.used.saturating_add(bytes);
        if total > self.limit {
            return Err(ConfigError::invalid(
                key,
                format!(
                    "the simulation needs about {} of host memory ({} for {what}), over the limit of {} ({}); use a smaller machine or workload, or raise the limit with --max-memory",
                    human(total),
                    human(bytes),
                    human(self.limit),
                    self.source
                ),
            ));
        }
        self.used = total;
        Ok(())
    }

    pub fn used(&self) -> u64 {
        self.used
    }
}

fn human(b: u64) -> String {
    const G: f64 = (1u64 << 30) as f64;
    if b == u64::MAX {
        "unlimited".into()
    } else if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / G)
    } else {
        format!("{:.0} MiB", (b as f64 / (1u64 << 20) as f64).ceil())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_the_key_the_estimate_and_the_limit() {
        let mut b = Budget {
            limit: 1 << 30,
            source: "--max-memory",
            used: 0,
            frames_left: 1 << 20,
        };
        // 4 GiB mapped on 4 GiB of capacity: 8 MiB of PTEs, 16 MiB of frames, 8 MiB of LRU
        // queue entries.
        b.add_process("a", 1 << 20).unwrap();
        assert_eq!(b.used(), (1 << 20) * (8 + 16 + 8) + PROCESS_BYTES);
        // Beyond the capacity only the page table counts.
        b.add_process("b", 1 << 20).unwrap();
        assert_eq!(b.used(), (1 << 20) * (8 + 16 + 8 + 8) + 2 * PROCESS_BYTES);
        let e = b.add_process("c", 1 << 27).unwrap_err().to_string();
        assert!(
            e.contains("workloads")
                && e.contains("process c")
                && e.contains("GiB")
                && e.contains("--max-memory"),
            "{e}"
        );
        assert_eq!(
            b.used(),
            (1 << 20) * 40 + 2 * PROCESS_BYTES,
            "a refused request is not accounted"
        );
    }
}
