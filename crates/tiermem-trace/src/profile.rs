//! Page-activity profiles: which pages of a running program were accessed in each interval
//! (`tiermem trace profile`, recorded with the kernel's idle-page tracking), and their
//! replay as a trace.
//!
//! A profile is what a low-overhead observer of a live process can see: per interval, the
//! set of the process's pages whose accessed bit was set (at page granularity, not per
//! access), its CPU time, thread count and resident set, and where its pages were (pages
//! per NUMA node). Its cost grows with the program's pages per interval, not with its accesses,
//! where an exact trace costs tens of times the program's run time (`docs/traces.md`).
//!
//! File layout: the magic `TMPROF1\0`, then one zstd stream holding
//! * a little-endian `u32` length and the JSON [`ProfileHeader`] (provenance: command, pid,
//!   host, kernel, page size, interval);
//! * frames, each a tag byte and varints: `1` the process's VMAs (when they changed),
//!   `2` one [`Interval`], `3` the end: a `u32` length and the JSON [`ProfileEnd`].
//!
//! A file without its end frame is truncated (a recorder that was killed): the reader
//! refuses it, naming the offset in the decompressed stream.
//!
//! Replay ([`import`]): every page accessed in an interval gets `accesses_per_page`
//! one-line reads (writes, for a `soft_dirty` profile, which sees only writes; the
//! fraction by a seeded draw) at a random line of the page, the
//! interval's pages in a random order, the reads spread evenly over the interval's wall
//! time. The first interval is the recorder's first scan: every page present then counts
//! as accessed (it was touched before the scan), so the replay allocates the resident set
//! the program had. A profile cannot tell reads from writes nor count accesses within a
//! page and interval: the replay's memory traffic is a floor, raised by
//! `accesses_per_page`.

use crate::format::{get_varint, varint_into, TimeUnit, TraceWriter, MAX_VARINT};
use crate::{ImportStats, Kind, Record, SplitMix, TraceError};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};

pub const MAGIC: &[u8; 8] = b"TMPROF1\0";
/// The format version this reader and writer speak.
pub const VERSION: u32 = 1;
/// The page size tiermem simulates; a profile of another page size is refused.
pub const PAGE_SIZE: u64 = 4096;
/// The largest header or end document (JSON), bytes.
const MAX_JSON: u32 = 1 << 20;
/// Page numbers below 2^45 (57-bit virtual addresses with 4 KiB pages).
const MAX_PAGE: u64 = 1 << 45;
/// VMAs in one frame (the kernel's default `vm.max_map_count` is 65530).
const MAX_VMAS: u64 = 1 << 22;
/// Accessed runs in one interval: 64 Mi runs (1 GiB held while the interval is read) are
/// a 512 GiB process whose every other page was accessed.
const MAX_RUNS: u64 = 1 << 26;
/// Nodes per interval (`MAX_NUMNODES` with `CONFIG_NODES_SHIFT=10`).
const MAX_NODES: u32 = 1024;

const TAG_VMAS: u8 = 1;
const TAG_INTERVAL: u8 = 2;
const TAG_END: u8 = 3;

/// Provenance and parameters of a profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileHeader {
    pub version: u32,
    /// Bytes per page (4096).
    pub page_size: u64,
    /// `uname -m` of the recording host.
    pub arch: String,
    /// The recorder's interval between scans, ns.
    pub interval_ns: u64,
    /// What saw the accesses: `page_idle` (`/sys/kernel/mm/page_idle/bitmap`: reads and
    /// writes) or `soft_dirty` (the pagemap's soft-dirty bits: writes only).
    pub source: String,
    /// The program and its arguments (empty for `--pid` of a process the recorder did not
    /// start: then `pid` names it).
    pub command: Vec<String>,
    pub pid: u32,
    /// `uname -n` and `uname -r` of the recording host.
    pub host: String,
    pub kernel: String,
    /// Seconds since the Unix epoch when recording started.
    pub started_unix_s: u64,
    /// Entries of each interval's `node_pages` (highest node id + 1).
    pub nodes: u32,
}

/// What a VMA maps, as `/proc/PID/maps` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum VmaKind {
    Anon = 0,
    File = 1,
    Heap = 2,
    Stack = 3,
}

impl VmaKind {
    fn from_byte(b: u8) -> Option<VmaKind> {
        Some(match b {
            0 => VmaKind::Anon,
            1 => VmaKind::File,
            2 => VmaKind::Heap,
            3 => VmaKind::Stack,
            _ => return None,
        })
    }
}

/// One VMA, in pages: `[start_page, end_page)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start_page: u64,
    pub end_page: u64,
    pub kind: VmaKind,
}

/// One interval of the profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    /// End of the interval, ns since the recorder's first scan (non-decreasing).
    pub end_ns: u64,
    /// CPU time of the program's threads within the interval, ns.
    pub cpu_ns: u64,
    /// Threads at the end of the interval.
    pub threads: u32,
    /// Resident pages (`VmRSS`) at the end of the interval.
    pub rss_pages: u64,
    /// The program's present pages per NUMA node at the end of the interval.
    pub node_pages: Vec<u64>,
    /// Pages accessed within the interval, as ascending, disjoint runs `[first, end)`.
    pub accessed: Vec<(u64, u64)>,
}

impl Interval {
    /// Pages accessed within the interval.
    pub fn accessed_pages(&self) -> u64 {
        self.accessed.iter().map(|&(a, b)| b - a).sum()
    }
}

/// The end of a profile: how the run ended and what the recording cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileEnd {
    pub intervals: u64,
    /// Wall time from the first scan to the last, ns.
    pub wall_ns: u64,
    /// CPU time of the program over the recording, ns.
    pub program_cpu_ns: u64,
    /// CPU time of the recorder itself (its scans), ns: the overhead it put on the host.
    pub recorder_cpu_ns: u64,
    /// The program's exit status, when the recorder started it and it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the program, if one did.
    pub signal: Option<i32>,
}

/// One frame of a profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    Vmas(Vec<Vma>),
    Interval(Interval),
}

fn write_err(name: &str, e: std::io::Error) -> TraceError {
    TraceError::Write {
        path: name.to_string(),
        source: e,
    }
}

/// Writes a profile frame by frame.
pub struct ProfileWriter<W: Write> {
    out: zstd::Encoder<'static, W>,
    name: String,
    buf: Vec<u8>,
    last_end_ns: u64,
    nodes: u32,
    intervals: u64,
}

impl<W: Write> ProfileWriter<W> {
    pub fn new(mut out: W, header: &ProfileHeader, name: &str) -> Result<Self, TraceError> {
        if header.page_size != PAGE_SIZE {
            return Err(TraceError::invalid(
                name,
                format!(
                    "page size {} (tiermem profiles 4 KiB pages)",
                    header.page_size
                ),
            ));
        }
        out.write_all(MAGIC).map_err(|e| write_err(name, e))?;
        let mut enc =
            zstd::Encoder::new(out, crate::format::ZSTD_LEVEL).map_err(|e| write_err(name, e))?;
        let json =
            serde_json::to_vec(header).map_err(|e| TraceError::invalid(name, e.to_string()))?;
        enc.write_all(&(json.len() as u32).to_le_bytes())
            .and_then(|_| enc.write_all(&json))
            .map_err(|e| write_err(name, e))?;
        Ok(ProfileWriter {
            out: enc,
            name: name.to_string(),
            buf: Vec::new(),
            last_end_ns: 0,
            nodes: header.nodes,
            intervals: 0,
        })
    }

    fn put(&mut self, v: u64) {
        let mut tmp = [0u8; MAX_VARINT];
        let n = varint_into(&mut tmp, v);
        self.buf.extend_from_slice(&tmp[..n]);
    }

    fn flush_frame(&mut self) -> Result<(), TraceError> {
        let r = self.out.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| write_err(&self.name, e))
    }

    /// The process's VMAs, ascending and disjoint.
    pub fn vmas(&mut self, vmas: &[Vma]) -> Result<(), TraceError> {
        self.buf.push(TAG_VMAS);
        self.put(vmas.len() as u64);
        let mut prev = 0;
        for v in vmas {
            if v.start_page < prev || v.end_page <= v.start_page {
                return Err(TraceError::invalid(
                    &self.name,
                    "VMAs must be ascending and disjoint",
                ));
            }
            self.put(v.start_page - prev);
            self.put(v.end_page - v.start_page);
            self.buf.push(v.kind as u8);
            prev = v.end_page;
        }
        self.flush_frame()
    }

    /// One interval; its runs ascending and disjoint, its `node_pages` one per node.
    pub fn interval(&mut self, iv: &Interval) -> Result<(), TraceError> {
        if iv.end_ns < self.last_end_ns || iv.node_pages.len() != self.nodes as usize {
            return Err(TraceError::invalid(
                &self.name,
                "an interval ends before the previous one or has the wrong node count",
            ));
        }
        self.buf.push(TAG_INTERVAL);
        self.put(iv.end_ns - self.last_end_ns);
        self.last_end_ns = iv.end_ns;
        self.put(iv.cpu_ns);
        self.put(iv.threads as u64);
        self.put(iv.rss_pages);
        for &n in &iv.node_pages {
            self.put(n);
        }
        self.put(iv.accessed.len() as u64);
        let mut prev = 0;
        for &(a, b) in &iv.accessed {
            if a < prev || b <= a {
                return Err(TraceError::invalid(
                    &self.name,
                    "accessed runs must be ascending and disjoint",
                ));
            }
            self.put(a - prev);
            self.put(b - a);
            prev = b;
        }
        self.intervals += 1;
        self.flush_frame()
    }

    /// Write the end frame and finish the stream; the inner writer is returned.
    pub fn finish(mut self, end: &ProfileEnd) -> Result<W, TraceError> {
        let end = ProfileEnd {
            intervals: self.intervals,
            ..end.clone()
        };
        let json =
            serde_json::to_vec(&end).map_err(|e| TraceError::invalid(&self.name, e.to_string()))?;
        self.buf.push(TAG_END);
        self.buf
            .extend_from_slice(&(json.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&json);
        self.flush_frame()?;
        self.out.finish().map_err(|e| write_err(&self.name, e))
    }
}

/// Counts the bytes read through it: the offset reported in errors.
struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Reads a profile frame by frame.
pub struct ProfileReader<R: Read> {
    inner: BufReader<Counting<zstd::Decoder<'static, BufReader<R>>>>,
    name: String,
    pub header: ProfileHeader,
    end: Option<ProfileEnd>,
    last_end_ns: u64,
}

/// Whether `bytes` (a file's start) is a profile.
pub fn is_profile(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl<R: Read> ProfileReader<R> {
    pub fn new(mut raw: R, name: &str) -> Result<Self, TraceError> {
        let mut magic = [0u8; 8];
        raw.read_exact(&mut magic)
            .map_err(|_| TraceError::offset(name, 0, "too short for a tiermem profile"))?;
        if &magic != MAGIC {
            return Err(TraceError::offset(
                name,
                0,
                "not a tiermem profile (bad magic)",
            ));
        }
        let dec = zstd::Decoder::new(raw).map_err(|e| TraceError::Read {
            path: name.to_string(),
            source: e,
        })?;
        let mut r = ProfileReader {
            inner: BufReader::new(Counting { inner: dec, pos: 0 }),
            name: name.to_string(),
            header: ProfileHeader::default(),
            end: None,
            last_end_ns: 0,
        };
        let header: ProfileHeader = r.json("header")?;
        let at = r.offset();
        let bad = |msg: String| Err(TraceError::offset(name, at, msg));
        if header.version != VERSION {
            return bad(format!(
                "profile format version {} (this tiermem reads {VERSION})",
                header.version
            ));
        }
        if header.page_size != PAGE_SIZE {
            return bad(format!(
                "page size {} bytes: tiermem simulates 4 KiB pages (record on a 4 KiB-page kernel)",
                header.page_size
            ));
        }
        if header.source != "page_idle" && header.source != "soft_dirty" {
            return bad(format!(
                "source `{}` (page_idle or soft_dirty)",
                header.source
            ));
        }
        if header.interval_ns == 0 {
            return bad("interval_ns is 0".into());
        }
        if header.nodes == 0 || header.nodes > MAX_NODES {
            return bad(format!("nodes = {} (1..{MAX_NODES})", header.nodes));
        }
        r.header = header;
        Ok(r)
    }

    /// Offset in the decompressed stream of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.inner.get_ref().pos - self.inner.buffer().len() as u64
    }

    fn err(&self, msg: impl Into<String>) -> TraceError {
        TraceError::offset(
            &self.name,
            self.offset(),
            format!("{} (offset in the decompressed stream)", msg.into()),
        )
    }

    fn fill(&mut self) -> Result<&[u8], TraceError> {
        let name = self.name.clone();
        self.inner.fill_buf().map_err(|e| TraceError::Read {
            path: name,
            source: e,
        })
    }

    fn byte(&mut self) -> Result<Option<u8>, TraceError> {
        let b = self.fill()?.first().copied();
        if b.is_some() {
            self.inner.consume(1);
        }
        Ok(b)
    }

    fn varint(&mut self, what: &str) -> Result<u64, TraceError> {
        let mut tmp = [0u8; MAX_VARINT];
        let mut n = 0;
        loop {
            let Some(b) = self.byte()? else {
                return Err(self.err(format!("truncated in {what}")));
            };
            tmp[n] = b;
            n += 1;
            if b < 0x80 || n == MAX_VARINT {
                break;
            }
        }
        let mut pos = 0;
        get_varint(&tmp[..n], &mut pos).ok_or_else(|| self.err(format!("bad varint in {what}")))
    }

    fn bounded(&mut self, what: &str, max: u64) -> Result<u64, TraceError> {
        let v = self.varint(what)?;
        if v > max {
            return Err(self.err(format!("{what} = {v} (at most {max})")));
        }
        Ok(v)
    }

    fn json<T: serde::de::DeserializeOwned>(&mut self, what: &str) -> Result<T, TraceError> {
        let mut len = [0u8; 4];
        for b in &mut len {
            *b = self
                .byte()?
                .ok_or_else(|| self.err(format!("truncated in the {what}")))?;
        }
        let len = u32::from_le_bytes(len);
        if len > MAX_JSON {
            return Err(self.err(format!("{what} of {len} bytes (at most {MAX_JSON})")));
        }
        let mut text = vec![0u8; len as usize];
        let at = self.offset();
        self.inner
            .read_exact(&mut text)
            .map_err(|_| self.err(format!("truncated in the {what}")))?;
        serde_json::from_slice(&text)
            .map_err(|e| TraceError::offset(&self.name, at, format!("{what}: {e}")))
    }

    /// The next frame; `None` after the end frame (then [`Self::end`] holds it).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, TraceError> {
        if self.end.is_some() {
            return Ok(None);
        }
        let Some(tag) = self.byte()? else {
            return Err(
                self.err("truncated: the profile has no end frame (was the recorder killed?)")
            );
        };
        match tag {
            TAG_VMAS => self.read_vmas().map(|v| Some(Frame::Vmas(v))),
            TAG_INTERVAL => self.read_interval().map(|i| Some(Frame::Interval(i))),
            TAG_END => {
                let end: ProfileEnd = self.json("end frame")?;
                if self.byte()?.is_some() {
                    return Err(self.err("bytes after the end frame"));
                }
                self.end = Some(end);
                Ok(None)
            }
            t => Err(self.err(format!("unknown frame tag {t}"))),
        }
    }

    /// The end frame, once [`Self::next_frame`] has returned `None`.
    pub fn end(&self) -> Option<&ProfileEnd> {
        self.end.as_ref()
    }

    fn page_after(
        &self,
        prev: u64,
        gap: u64,
        len: u64,
        what: &str,
    ) -> Result<(u64, u64), TraceError> {
        let first = prev.checked_add(gap).filter(|&p| p < MAX_PAGE);
        let end = first
            .and_then(|f| f.checked_add(len))
            .filter(|&e| e <= MAX_PAGE);
        match (first, end) {
            (Some(f), Some(e)) if len > 0 => Ok((f, e)),
            _ => Err(self.err(format!("{what}: a page range beyond 2^45 pages or empty"))),
        }
    }

    fn read_vmas(&mut self) -> Result<Vec<Vma>, TraceError> {
        let n = self.bounded("VMA count", MAX_VMAS)?;
        let mut out = Vec::with_capacity(n.min(4096) as usize);
        let mut prev = 0;
        for _ in 0..n {
            let gap = self.varint("a VMA")?;
            let len = self.varint("a VMA")?;
            let (start_page, end_page) = self.page_after(prev, gap, len, "a VMA")?;
            let b = self.byte()?.ok_or_else(|| self.err("truncated in a VMA"))?;
            let kind = VmaKind::from_byte(b).ok_or_else(|| self.err(format!("VMA kind {b}")))?;
            out.push(Vma {
                start_page,
                end_page,
                kind,
            });
            prev = end_page;
        }
        Ok(out)
    }

    fn read_interval(&mut self) -> Result<Interval, TraceError> {
        let dt = self.varint("an interval's time")?;
        let end_ns = self
            .last_end_ns
            .checked_add(dt)
            .ok_or_else(|| self.err("interval end beyond 2^64 ns"))?;
        self.last_end_ns = end_ns;
        let cpu_ns = self.varint("an interval's CPU time")?;
        let threads = self.bounded("threads", u32::MAX as u64)? as u32;
        let rss_pages = self.bounded("rss_pages", MAX_PAGE)?;
        let mut node_pages = Vec::with_capacity(self.header.nodes as usize);
        for _ in 0..self.header.nodes {
            node_pages.push(self.bounded("node pages", MAX_PAGE)?);
        }
        let runs = self.bounded("accessed run count", MAX_RUNS)?;
        let mut accessed = Vec::with_capacity(runs.min(1 << 16) as usize);
        let mut prev = 0;
        for _ in 0..runs {
            let gap = self.varint("an accessed run")?;
            let len = self.varint("an accessed run")?;
            let run = self.page_after(prev, gap, len, "an accessed run")?;
            accessed.push(run);
            prev = run.1;
        }
        Ok(Interval {
            end_ns,
            cpu_ns,
            threads,
            rss_pages,
            node_pages,
            accessed,
        })
    }
}

/// How a profile is replayed as a trace.
#[derive(Clone, Copy, Debug)]
pub struct ProfileImport {
    /// Reads per accessed page and interval (the fraction by a seeded draw). Default 1.
    pub accesses_per_page: f64,
    pub seed: u64,
    /// Refuse to write more accesses than this (lower `accesses_per_page`).
    pub max_accesses: u64,
}

impl Default for ProfileImport {
    fn default() -> Self {
        ProfileImport {
            accesses_per_page: 1.0,
            seed: 1,
            max_accesses: 1 << 32,
        }
    }
}

/// Replay a profile as a timed trace (ns): see the module documentation.
pub fn import<R: Read, W: Write>(
    input: R,
    name: &str,
    w: &mut TraceWriter<W>,
    opts: ProfileImport,
) -> Result<ImportStats, TraceError> {
    if !(opts.accesses_per_page > 0.0
        && opts.accesses_per_page.is_finite()
        && opts.accesses_per_page <= 4096.0)
    {
        return Err(TraceError::invalid(
            name,
            "accesses per page must be within (0, 4096]",
        ));
    }
    let mut r = ProfileReader::new(input, name)?;
    let kind = if r.header.source == "soft_dirty" {
        Kind::Write
    } else {
        Kind::Read
    };
    let mut rng = SplitMix(opts.seed);
    let mut st = ImportStats::default();
    let mut start_ns = 0u64;
    let mut pages: Vec<u64> = Vec::new();
    while let Some(frame) = r.next_frame()? {
        st.lines += 1;
        let Frame::Interval(iv) = frame else { continue };
        // Checked before the pages are expanded: a hostile run of 2^44 pages is refused, not
        // allocated.
        let expected = iv.accessed_pages() as f64 * opts.accesses_per_page;
        if st.accesses as f64 + expected > opts.max_accesses as f64 {
            return Err(over_budget(name, opts.max_accesses, iv.end_ns));
        }
        pages.clear();
        for &(a, b) in &iv.accessed {
            pages.extend(a..b);
        }
        // Fisher-Yates: the interval's pages in a random order (a sweep in page order would
        // read as a sequential stream to the cache model's prefetcher).
        for i in (1..pages.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            pages.swap(i, j);
        }
        let x = opts.accesses_per_page;
        let counts: Vec<u32> = pages
            .iter()
            .map(|_| {
                let n = x.floor() as u32;
                n + u32::from(rng.unit() < x - n as f64)
            })
            .collect();
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        if st.accesses + total > opts.max_accesses {
            return Err(over_budget(name, opts.max_accesses, iv.end_ns));
        }
        let span = (iv.end_ns - start_ns) as u128;
        let mut k = 0u128;
        for (&page, &c) in pages.iter().zip(&counts) {
            for _ in 0..c {
                let time = start_ns + (span * k / total.max(1) as u128) as u64;
                let line = rng.next() % (PAGE_SIZE / 64);
                w.push(&Record {
                    time,
                    thread: 0,
                    addr: page * PAGE_SIZE + line * 64,
                    size: 64,
                    kind,
                })?;
                k += 1;
            }
        }
        st.accesses += total;
        start_ns = iv.end_ns;
    }
    Ok(st)
}

fn over_budget(name: &str, max: u64, end_ns: u64) -> TraceError {
    TraceError::invalid(
        name,
        format!("would write more than {max} accesses by the interval ending at {end_ns} ns: lower the accesses per page"),
    )
}

/// The time unit of a replayed profile.
pub const TIME_UNIT: TimeUnit = TimeUnit::Ns;

/// A profile's summary (`tiermem trace info`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProfileInfo {
    pub header: Option<ProfileHeader>,
    pub end: Option<ProfileEnd>,
    pub intervals: u64,
    pub peak_rss_pages: u64,
    /// Distinct pages accessed over the whole profile.
    pub touched_pages: u64,
    /// Mean pages accessed per interval (after the first scan).
    pub mean_accessed_pages: f64,
    /// Median pages accessed per interval (after the first scan; the interval in which a
    /// program populates its memory does not move it).
    pub median_accessed_pages: u64,
    /// The program's mean share of present pages on each node.
    pub node_share: Vec<f64>,
}

/// Read a whole profile into its summary.
pub fn info<R: Read>(input: R, name: &str) -> Result<ProfileInfo, TraceError> {
    let mut r = ProfileReader::new(input, name)?;
    let mut out = ProfileInfo {
        node_share: vec![0.0; r.header.nodes as usize],
        ..ProfileInfo::default()
    };
    let mut touched: std::collections::BTreeMap<u64, u64> = Default::default(); // start -> end
    let mut accessed_sum = 0u64;
    let mut per_interval: Vec<u64> = Vec::new();
    while let Some(frame) = r.next_frame()? {
        let Frame::Interval(iv) = frame else { continue };
        out.intervals += 1;
        out.peak_rss_pages = out.peak_rss_pages.max(iv.rss_pages);
        if out.intervals > 1 {
            accessed_sum += iv.accessed_pages();
            per_interval.push(iv.accessed_pages());
        }
        let present: u64 = iv.node_pages.iter().sum();
        for (s, &n) in out.node_share.iter_mut().zip(&iv.node_pages) {
            *s += n as f64 / present.max(1) as f64;
        }
        for &(a, b) in &iv.accessed {
            insert_run(&mut touched, a, b);
        }
    }
    for s in &mut out.node_share {
        *s /= out.intervals.max(1) as f64;
    }
    out.touched_pages = touched.iter().map(|(a, b)| b - a).sum();
    out.mean_accessed_pages = accessed_sum as f64 / (out.intervals.saturating_sub(1)).max(1) as f64;
    per_interval.sort_unstable();
    out.median_accessed_pages = per_interval
        .get(per_interval.len() / 2)
        .copied()
        .unwrap_or(0);
    out.end = r.end().cloned();
    out.header = Some(r.header.clone());
    Ok(out)
}

/// Add `[a, b)` to a set of disjoint runs keyed by start.
fn insert_run(set: &mut std::collections::BTreeMap<u64, u64>, mut a: u64, mut b: u64) {
    if let Some((&s, &e)) = set.range(..=a).next_back() {
        if e >= a {
            a = s;
            b = b.max(e);
            set.remove(&s);
        }
    }
    while let Some((&s, &e)) = set.range(a..=b).next() {
        b = b.max(e);
        set.remove(&s);
    }
    set.insert(a, b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::TraceReader;

    fn header(nodes: u32) -> ProfileHeader {
        ProfileHeader {
            version: VERSION,
            page_size: PAGE_SIZE,
            arch: "x86_64".into(),
            interval_ns: 1_000_000_000,
            source: "page_idle".into(),
            command: vec!["prog".into()],
            pid: 42,
            host: "h".into(),
            kernel: "6.12.0".into(),
            started_unix_s: 0,
            nodes,
        }
    }

    fn sample() -> Vec<u8> {
        let mut w = ProfileWriter::new(Vec::new(), &header(2), "mem").unwrap();
        w.vmas(&[
            Vma {
                start_page: 0x400,
                end_page: 0x500,
                kind: VmaKind::File,
            },
            Vma {
                start_page: 0x1000,
                end_page: 0x1100,
                kind: VmaKind::Anon,
            },
        ])
        .unwrap();
        w.interval(&Interval {
            end_ns: 0,
            cpu_ns: 0,
            threads: 1,
            rss_pages: 300,
            node_pages: vec![200, 100],
            accessed: vec![(0x400, 0x42c), (0x1000, 0x1100)],
        })
        .unwrap();
        w.interval(&Interval {
            end_ns: 1_000_000_000,
            cpu_ns: 990_000_000,
            threads: 1,
            rss_pages: 300,
            node_pages: vec![250, 50],
            accessed: vec![(0x1000, 0x1010)],
        })
        .unwrap();
        w.finish(&ProfileEnd {
            wall_ns: 1_000_000_000,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn frames_round_trip() {
        let bytes = sample();
        assert!(is_profile(&bytes));
        let mut r = ProfileReader::new(&bytes[..], "mem").unwrap();
        assert_eq!(r.header, header(2));
        let Some(Frame::Vmas(v)) = r.next_frame().unwrap() else {
            panic!()
        };
        assert_eq!(
            v[1],
            Vma {
                start_page: 0x1000,
                end_page: 0x1100,
                kind: VmaKind::Anon
            }
        );
        let Some(Frame::Interval(a)) = r.next_frame().unwrap() else {
            panic!()
        };
        assert_eq!(a.accessed_pages(), 0x2c + 0x100);
        let Some(Frame::Interval(b)) = r.next_frame().unwrap() else {
            panic!()
        };
        assert_eq!(
            (b.end_ns, b.node_pages.clone(), b.accessed.clone()),
            (1_000_000_000, vec![250, 50], vec![(0x1000, 0x1010)])
        );
        assert!(r.next_frame().unwrap().is_none());
        assert_eq!(r.end().unwrap().intervals, 2);
    }

    #[test]
    fn the_replay_reads_every_accessed_page_within_its_interval() {
        let bytes = sample();
        let mut out = Vec::new();
        let mut w = TraceWriter::new(&mut out, TIME_UNIT, "profile").unwrap();
        let st = import(&bytes[..], "mem", &mut w, ProfileImport::default()).unwrap();
        w.finish().unwrap();
        assert_eq!(st.accesses, 0x2c + 0x100 + 0x10);
        let mut r = TraceReader::new(std::io::Cursor::new(out), "t").unwrap();
        let mut second: Vec<u64> = Vec::new();
        let mut last = 0;
        while let Some(rec) = r.next_record().unwrap() {
            assert!(rec.time >= last);
            last = rec.time;
            if rec.time > 0 {
                assert!(rec.time < 1_000_000_000);
                second.push(rec.addr >> 12);
            }
        }
        second.sort();
        // The second interval's 16 pages, once each (its first read may fall at time 0).
        assert!(
            second.len() >= 15 && second.iter().all(|p| (0x1000..0x1010).contains(p)),
            "{second:?}"
        );
        let twice = ProfileImport {
            accesses_per_page: 2.0,
            ..Default::default()
        };
        let mut w = TraceWriter::new(Vec::new(), TIME_UNIT, "profile").unwrap();
        assert_eq!(
            import(&bytes[..], "mem", &mut w, twice).unwrap().accesses,
            2 * st.accesses
        );
        let few = ProfileImport {
            max_accesses: 10,
            ..Default::default()
        };
        let mut w = TraceWriter::new(Vec::new(), TIME_UNIT, "profile").unwrap();
        assert!(import(&bytes[..], "mem", &mut w, few).is_err());
    }

    #[test]
    fn the_summary_counts_pages_and_nodes() {
        let i = info(&sample()[..], "mem").unwrap();
        assert_eq!(
            (i.intervals, i.peak_rss_pages, i.touched_pages),
            (2, 300, 0x2c + 0x100)
        );
        assert_eq!((i.mean_accessed_pages, i.median_accessed_pages), (16.0, 16));
        assert!((i.node_share[0] - (200.0 / 300.0 + 250.0 / 300.0) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn truncated_and_foreign_profiles_are_refused_with_an_offset() {
        let bytes = sample();
        // Re-encode the decompressed stream cut short: no end frame.
        let mut raw = Vec::new();
        zstd::Decoder::new(&bytes[8..])
            .unwrap()
            .read_to_end(&mut raw)
            .unwrap();
        for cut in [3, 10, raw.len() - 20, raw.len() - 1] {
            let mut f = MAGIC.to_vec();
            f.extend(zstd::encode_all(&raw[..cut], 1).unwrap());
            let e = (|| {
                let mut r = ProfileReader::new(&f[..], "p.tmprof")?;
                while r.next_frame()?.is_some() {}
                Ok::<_, TraceError>(())
            })()
            .unwrap_err();
            assert!(
                e.to_string().starts_with("p.tmprof: byte offset"),
                "{cut}: {e}"
            );
        }
        let mut h = header(1);
        h.page_size = 16384;
        let json = serde_json::to_vec(&h).unwrap();
        let mut body = (json.len() as u32).to_le_bytes().to_vec();
        body.extend(json);
        let mut f = MAGIC.to_vec();
        f.extend(zstd::encode_all(&body[..], 1).unwrap());
        let e = ProfileReader::new(&f[..], "p").err().unwrap();
        assert!(e.to_string().contains("4 KiB"), "{e}");
        assert!(ProfileReader::new(&b"TMTRACE\0xxxx"[..], "p").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_streams_are_refused_without_a_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..512), cut in 0usize..4096) {
            // A valid header, then arbitrary frames; and the sample cut anywhere.
            let mut raw = Vec::new();
            zstd::Decoder::new(&sample()[8..]).unwrap().read_to_end(&mut raw).unwrap();
            let json_end = 4 + u32::from_le_bytes(raw[..4].try_into().unwrap()) as usize;
            for stream in [[&raw[..json_end], &body[..]].concat(), raw[..cut.min(raw.len())].to_vec()] {
                let mut f = MAGIC.to_vec();
                f.extend(zstd::encode_all(&stream[..], 1).unwrap());
                let mut w = TraceWriter::new(Vec::new(), TIME_UNIT, "profile").unwrap();
                let opts = ProfileImport { max_accesses: 1 << 20, ..Default::default() };
                let _ = import(&f[..], "p", &mut w, opts);
                let _ = info(&f[..], "p");
            }
        }
    }

    #[test]
    fn runs_merge_into_touched_pages() {
        let mut s = Default::default();
        insert_run(&mut s, 10, 20);
        insert_run(&mut s, 30, 40);
        insert_run(&mut s, 15, 31);
        insert_run(&mut s, 50, 51);
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![(10, 40), (50, 51)]);
    }
}
