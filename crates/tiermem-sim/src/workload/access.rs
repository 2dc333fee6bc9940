//! The vocabulary of access streams: what a workload generator hands the engine (one
//! [`Access`] per page touch, or a [`Step`] mark) and the access kinds. Apart from
//! [`crate::workload`] so that the generators depend on it without depending on the
//! workload module that dispatches to them.

/// Access kinds (low 2 bits) and the streaming flag.
pub const K_READ: u8 = 0;
/// A store with read-for-ownership (RFO read + write-back).
pub const K_WRITE: u8 = 1;
/// A non-temporal store (write only).
pub const K_NTWRITE: u8 = 2;
/// A dirty cache line written back to memory (trace replay's caches): write traffic to the
/// page's node that neither sets its PTE bits nor takes a fault, as the CPU's write-back of
/// a physical line does not; dropped if the page is no longer mapped.
pub const K_WRITEBACK: u8 = 3;
/// Streaming access: uses the thread's streaming MLP instead of its base MLP.
pub const K_STREAM: u8 = 4;
/// Number of latency-table slots per node (kind | stream).
pub const NR_KINDS: usize = 8;

/// One memory access of a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Index into the process page table.
    pub idx: u32,
    /// Cache lines touched in this page (1..=64); 0 marks a touch of a cache-resident page
    /// (the thread's stack): it takes faults and sets the PTE bits but costs no traffic or
    /// time and is not counted (nor paced) as an access.
    pub lines: u8,
    pub kind: u8,
}

impl Access {
    /// A whole-page streaming store: how a program first touches (initialises) its memory.
    pub fn first_touch(idx: u32) -> Access {
        Access {
            idx,
            lines: 64,
            kind: K_WRITE | K_STREAM,
        }
    }
}

pub use crate::mm::filemap::{FileIo, FileOp};

/// What a generator produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The batch holds accesses.
    Accesses,
    /// A `read(2)` / `write(2)` through the page cache, or the harness's `drop_caches`
    /// (the batch is empty).
    File(FileIo),
    /// The measured phase starts now (pmbench run, MLC measurement).
    RunStart,
    /// Wait for the other threads of the process (OpenMP barrier).
    Barrier,
    /// The thread has finished.
    Done,
}

/// Lines in flight for streaming accesses (`K_STREAM`): hardware prefetch and fill
/// buffers keep 10–16 lines outstanding per core (`workload-models.md` §2).
pub const STREAM_MLP: u32 = 12;
