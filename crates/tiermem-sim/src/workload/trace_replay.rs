//! Replay of recorded traces (`type = "trace"` workloads): the [`TraceGen`] access
//! generator, streaming a tiermem trace file chunk by chunk.
//!
//! Layout: a process gets one VMA per address range of the trace footer (touched pages,
//! ranges closer than 1 MiB merged), in address order, so a virtual page maps to a
//! page-table index by a range lookup (the last range is tried first: accesses cluster).
//!
//! Time: the engine is a closed loop (each access costs CPU time plus its loaded latency).
//! The CPU time between accesses comes from the trace: the gap of trace time to the
//! previous access of the thread, × `cpi / cpu_ghz` ns per instruction for
//! instruction-indexed traces or × 1 ns for timed ones, × `time_scale`. It is applied per
//! batch of up to 256 accesses (the batch's gaps spread evenly over its accesses), which
//! keeps the engine's per-access loop unchanged; 256 accesses are microseconds, far below
//! the engine tick and the NUMA scanner's periods.
//!
//! Sizes: an access touches the 64-byte lines of `[addr, addr + size)` that fall in its
//! first page (an access straddling a page boundary counts once, on the first page). Lackey
//! `M` (modify) is a store with read-for-ownership, like every non-temporal-free store.
//!
//! Caches (`[machine.caches]`, on unless `enabled = false`): each line goes through the
//! thread's caches ([`crate::hw::cache`]). What the engine gets for one record:
//! * a touch of the page (`lines = 0`: PTE bits, faults, no traffic) for a hit, and for
//!   every store (its dirty bit, its copy-on-write fault);
//! * the lines that missed as a read (a store's read-for-ownership; its write comes later
//!   as a write-back);
//! * the lines the stream prefetcher fetched in that page, as streaming reads;
//! * each dirty line the LLC evicted, as a write-back ([`K_WRITEBACK`]) to its page.
//!
//! An L2 or LLC hit adds its hit latency ÷ `mlp` to the CPU time of the batch. Without
//! caches every line is a memory access, as the trace records it.

use crate::hw::cache::{CacheStats, Caches, Effects, Level};
use crate::workload::access::{Access, Step, K_READ, K_STREAM, K_WRITE, K_WRITEBACK};
use std::path::PathBuf;
use std::sync::Arc;
use tiermem_trace::format::{self, Footer, TimeUnit, TraceReader};
use tiermem_trace::{Kind, TraceError};

const BATCH: usize = 256;

/// A trace range mapped into a process: `[first_page, end_page)` at page-table index `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedRange {
    pub first: u64,
    pub end: u64,
    pub base: u32,
}

/// The layout shared by every thread and process replaying one trace.
#[derive(Debug)]
pub struct TraceLayout {
    pub path: PathBuf,
    pub footer: Footer,
    pub unit: TimeUnit,
    pub ranges: Vec<MappedRange>,
    pub pages: u32,
}

impl TraceLayout {
    /// Read the footer of `path` and lay its ranges out as consecutive VMAs.
    pub fn open(path: &str) -> Result<TraceLayout, TraceError> {
        let pb = PathBuf::from(path);
        let f = std::fs::File::open(&pb).map_err(|e| TraceError::Read {
            path: path.to_string(),
            source: e,
        })?;
        let mut br = std::io::BufReader::new(f);
        let (header, footer) = format::read_footer(&mut br, path)?;
        let mut ranges = Vec::with_capacity(footer.ranges.len());
        let mut base = 0u64;
        for &(first, end) in &footer.ranges {
            ranges.push(MappedRange {
                first,
                end,
                base: base as u32,
            });
            base += end - first;
            if base > u32::MAX as u64 / 2 {
                return Err(TraceError::invalid(
                    path,
                    "the trace's address ranges exceed 8 TiB of pages",
                ));
            }
        }
        Ok(TraceLayout {
            path: pb,
            unit: header.unit,
            pages: base as u32,
            ranges,
            footer,
        })
    }
}

/// One simulated thread replaying one trace thread.
pub struct TraceGen {
    layout: Arc<TraceLayout>,
    reader: Option<TraceReader<std::io::BufReader<std::fs::File>>>,
    /// Only records of this trace thread (`None`: the trace has one thread).
    thread: Option<u32>,
    /// Picoseconds per unit of trace time.
    ps_per_unit: f64,
    prev_time: Option<u64>,
    carry: f64,
    loops_left: u32,
    forever: bool,
    started: bool,
    done: bool,
    last_range: usize,
    /// CPU time per access of the batch just produced.
    batch_cpu_ps: u64,
    /// Records replayed by this thread.
    pub replayed: u64,
    /// The thread's caches (None: every line goes to memory).
    caches: Option<Box<Caches>>,
    fx: Effects,
    /// Memory-level parallelism that divides hit latencies.
    mlp: u64,
    /// A read error that ended the replay.
    error: Option<TraceError>,
}

impl TraceGen {
    pub fn new(
        layout: Arc<TraceLayout>,
        thread: Option<u32>,
        t: &tiermem_core::config::TraceConfig,
        caches: Option<Caches>,
    ) -> TraceGen {
        let (cpi, cpu_ghz, time_scale, loops) = (t.cpi, t.cpu_ghz, t.time_scale, t.loops);
        let unit_ps = match layout.unit {
            TimeUnit::Instructions => cpi * 1000.0 / cpu_ghz,
            TimeUnit::Ns => 1000.0,
        };
        TraceGen {
            layout,
            reader: None,
            thread,
            ps_per_unit: unit_ps * time_scale,
            prev_time: None,
            carry: 0.0,
            loops_left: loops,
            forever: loops == 0,
            started: false,
            done: false,
            last_range: 0,
            batch_cpu_ps: 0,
            replayed: 0,
            caches: caches.map(Box::new),
            fx: Effects::default(),
            mlp: t.mlp.max(1) as u64,
            error: None,
        }
    }

    /// What the thread's caches counted (None without caches).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.caches.as_ref().map(|c| c.stats)
    }

    /// CPU time per access of the last batch, ps.
    pub fn batch_cpu_ps(&self) -> u64 {
        self.batch_cpu_ps
    }

    fn fail(&mut self, e: TraceError) -> Step {
        tracing::error!("trace replay stopped: {e}");
        self.error = Some(e);
        self.done = true;
        Step::Done
    }

    /// Why this replay failed, if it did: a read or decode error (with the file and the
    /// offset), or a trace that ran out without giving this thread a single access. A
    /// replay the run ended before it started is not a failure.
    pub fn take_failure(&mut self) -> Option<TraceError> {
        if let Some(e) = self.error.take() {
            return Some(e);
        }
        (self.done && self.started && self.replayed == 0).then(|| {
            let path = self.layout.path.display().to_string();
            TraceError::invalid(
                &path,
                match self.thread {
                    Some(t) => format!("the trace has no accesses of thread {t}"),
                    None => "the trace has no accesses".into(),
                },
            )
        })
    }

    #[inline]
    fn map(&mut self, page: u64) -> Option<u32> {
        let rs = &self.layout.ranges;
        let r = rs.get(self.last_range)?;
        if r.first <= page && page < r.end {
            return Some(r.base + (page - r.first) as u32);
        }
        let k = rs.partition_point(|r| r.end <= page);
        let r = rs.get(k)?;
        if r.first > page {
            return None;
        }
        self.last_range = k;
        Some(r.base + (page - r.first) as u32)
    }

    #[allow(clippy::expect_used, reason = "the reader was opened just above")]
    pub fn next(&mut self, out: &mut Vec<Access>) -> Step {
        if self.done {
            return Step::Done;
        }
        if !self.started {
            self.started = true;
            return Step::RunStart;
        }
        let mut gap_units = 0u64;
        let mut hit_ps = 0u64;
        while out.len() < BATCH {
            if self.reader.is_none() {
                if !self.forever && self.loops_left == 0 {
                    break;
                }
                self.loops_left = self.loops_left.saturating_sub(1);
                match format::open(&self.layout.path) {
                    Ok((r, _)) => self.reader = Some(r),
                    Err(e) => return self.fail(e),
                }
                // The next pass starts right after the previous one.
                self.prev_time = None;
            }
            let rec = match self.reader.as_mut().expect("opened").next_record() {
                Ok(Some(r)) => r,
                Ok(None) => {
                    self.reader = None;
                    if !self.forever && self.loops_left == 0 {
                        break;
                    }
                    if self.replayed == 0 {
                        break; // an empty trace (for this thread) cannot loop
                    }
                    continue;
                }
                Err(e) => return self.fail(e),
            };
            if let Some(t) = self.thread {
                if rec.thread != t {
                    continue;
                }
            }
            if let Some(p) = self.prev_time {
                gap_units += rec.time.saturating_sub(p);
            }
            self.prev_time = Some(rec.time);
            let page = rec.page();
            let idx = match self.map(page) {
                Some(i) => i,
                None => {
                    let path = self.layout.path.display().to_string();
                    return self.fail(TraceError::invalid(
                        &path,
                        format!("access to page {page:#x} outside the footer's ranges"),
                    ));
                }
            };
            let off = rec.addr & 4095;
            let first_line = off >> 6;
            let last_line = ((off + rec.size as u64 - 1) >> 6).min(63);
            let lines = (last_line - first_line + 1) as u8;
            let write = rec.kind != Kind::Read;
            match self.caches.as_mut() {
                None => out.push(Access {
                    idx,
                    lines,
                    kind: if write { K_WRITE } else { K_READ },
                }),
                Some(c) => {
                    hit_ps += through_caches(c, &mut self.fx, out, idx, first_line, lines, write);
                }
            }
            self.replayed += 1;
        }
        if out.is_empty() {
            self.done = true;
            return Step::Done;
        }
        let total = gap_units as f64 * self.ps_per_unit + (hit_ps / self.mlp) as f64 + self.carry;
        let per = (total / out.len() as f64).floor();
        self.carry = total - per * out.len() as f64;
        self.batch_cpu_ps = per as u64;
        Step::Accesses
    }
}

/// One record's lines through the thread's caches: the accesses the engine gets for it
/// (module doc) pushed to `out`; returns the hit latency of its L2 and LLC hits, ps.
fn through_caches(
    c: &mut Caches,
    fx: &mut Effects,
    out: &mut Vec<Access>,
    idx: u32,
    first_line: u64,
    lines: u8,
    write: bool,
) -> u64 {
    let base = (idx as u64) << 6 | first_line;
    let (mut missed, mut hit_ps) = (0u8, 0u64);
    for l in 0..lines as u64 {
        match c.access(base + l, write, fx) {
            Level::L1 => {}
            Level::L2 => hit_ps += c.l2_ps,
            Level::Llc => hit_ps += c.llc_ps,
            Level::Memory => missed += 1,
        }
    }
    if write || missed == 0 {
        out.push(Access {
            idx,
            lines: 0,
            kind: if write { K_WRITE } else { K_READ },
        });
    }
    if missed > 0 {
        out.push(Access {
            idx,
            lines: missed,
            kind: K_READ,
        });
    }
    if fx.prefetched > 0 {
        out.push(Access {
            idx,
            lines: fx.prefetched as u8,
            kind: K_READ | K_STREAM,
        });
        fx.prefetched = 0;
    }
    for v in fx.writebacks.drain(..) {
        out.push(Access {
            idx: (v >> 6) as u32,
            lines: 1,
            kind: K_WRITEBACK,
        });
    }
    hit_ps
}
