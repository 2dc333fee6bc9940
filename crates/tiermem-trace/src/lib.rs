//! tiermem-trace: memory traces of real programs, in tiermem's own compact format.
//!
//! * [`format`]: the binary trace format (versioned header, zstd-compressed chunks of
//!   delta- and varint-encoded records, a JSON footer with counts and address ranges), a
//!   streaming [`TraceWriter`] and a streaming [`TraceReader`], so traces larger than
//!   memory are written and replayed without being loaded whole;
//! * importers: [`lackey`] (Valgrind `--tool=lackey --trace-mem=yes` text), [`pinatrace`]
//!   (Intel Pin `pinatrace.out`), [`champsim`] (64-byte `input_instr` records) and
//!   [`damo`] (`damo record` JSON and zlib-compressed JSON, replayed as region-level
//!   access probabilities);
//! * [`info`]: counts, footprint, duration and a page-popularity summary; the
//!   time × address matrix behind `tiermem trace heatmap`.
//!
//! The formats are described in `docs/traces.md`. Every importer and the reader report bad
//! input as a [`TraceError`] naming the file and the line number or byte offset; none
//! panics on any input (each has a property test over arbitrary bytes).
//!
//! ```
//! use tiermem_trace::{format::{TraceWriter, TraceReader, TimeUnit}, Record, Kind};
//! let mut buf = Vec::new();
//! let mut w = TraceWriter::new(&mut buf, TimeUnit::Instructions, "example").unwrap();
//! w.push(&Record { time: 3, thread: 0, addr: 0x1000, size: 8, kind: Kind::Read }).unwrap();
//! let footer = w.finish().unwrap();
//! assert_eq!(footer.records, 1);
//! let mut r = TraceReader::new(std::io::Cursor::new(buf), "mem").unwrap();
//! assert_eq!(r.next_record().unwrap().unwrap().addr, 0x1000);
//! assert!(r.next_record().unwrap().is_none());
//! ```

pub mod champsim;
mod compress;
pub mod damo;
pub mod format;
pub mod info;
pub mod lackey;
pub mod pinatrace;
pub mod profile;
pub mod qemu;
pub mod report;
mod textbuf;

pub use format::{Footer, TimeUnit, TraceReader, TraceWriter};

/// Kind of one memory access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// A load.
    #[default]
    Read = 0,
    /// A store.
    Write = 1,
    /// A read-modify-write of one location (Lackey `M`): one access that loads and stores.
    Modify = 2,
}

impl Kind {
    pub fn from_bits(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Read),
            1 => Some(Kind::Write),
            2 => Some(Kind::Modify),
            _ => None,
        }
    }
    /// Whether the access stores (dirties the page).
    pub fn writes(self) -> bool {
        self != Kind::Read
    }
}

/// One memory access: the normalised form of every input format
/// (`workload-models.md` §8: `(t_ns | instr_idx, tid, vaddr, size, R/W/M)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Instruction index or nanoseconds since the start (the trace's [`TimeUnit`]);
    /// never decreases along a trace.
    pub time: u64,
    /// Thread (or DAMON target) number within the trace.
    pub thread: u32,
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Bytes accessed (at least 1).
    pub size: u32,
    pub kind: Kind,
}

impl Record {
    /// The virtual page number (`addr >> 12`).
    #[inline]
    pub fn page(&self) -> u64 {
        self.addr >> tiermem_core::units::PAGE_SHIFT
    }
}

/// Errors of trace reading, writing and importing.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The input could not be opened or read.
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The output could not be written (not the input's fault: exit code 1 at the CLI).
    #[error("{path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    /// A text input has a malformed line.
    #[error("{path}: line {line}: {msg}")]
    Line {
        path: String,
        line: u64,
        msg: String,
    },
    /// A binary input is malformed at a byte offset.
    #[error("{path}: byte offset {offset}: {msg}")]
    Offset {
        path: String,
        offset: u64,
        msg: String,
    },
    /// The input is malformed as a whole (a JSON document, a missing end marker...).
    #[error("{path}: {msg}")]
    Invalid { path: String, msg: String },
}

impl TraceError {
    /// True when the error is the user's input (exit code 2 at the CLI).
    pub fn is_input_error(&self) -> bool {
        !matches!(self, TraceError::Write { .. })
    }
    pub fn offset(path: &str, offset: u64, msg: impl Into<String>) -> TraceError {
        TraceError::Offset {
            path: path.to_string(),
            offset,
            msg: msg.into(),
        }
    }
    pub fn line(path: &str, line: u64, msg: impl Into<String>) -> TraceError {
        TraceError::Line {
            path: path.to_string(),
            line,
            msg: msg.into(),
        }
    }
    pub fn invalid(path: &str, msg: impl Into<String>) -> TraceError {
        TraceError::Invalid {
            path: path.to_string(),
            msg: msg.into(),
        }
    }
}

/// What an importer did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportStats {
    /// Input lines (text formats) or records (binary formats) read.
    pub lines: u64,
    /// Memory-access records written.
    pub accesses: u64,
    /// Instructions seen (Lackey `I` lines, pinatrace instruction pointers, ChampSim records).
    pub instructions: u64,
    /// Lines skipped: Valgrind `==pid==` messages, comments, and malformed lines in
    /// lenient mode.
    pub skipped: u64,
    /// Malformed lines skipped in lenient mode.
    pub malformed: u64,
}

/// SplitMix64: the importers' seeded draws (deterministic across platforms).
pub(crate) struct SplitMix(u64);
impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
