//! tiermem's binary trace format, version 1 (described in `docs/traces.md`).
//!
//! ```text
//! header   64 B   "TMTRACE\0", u16 version = 1, u16 header length = 64, u8 time unit
//!                 (0 instructions, 1 ns), u8 source format, zero padding
//! chunk*          u8 'C', u32 records, u32 raw bytes, u32 compressed bytes,
//!                 a zstd frame (with content checksum) of the encoded records
//! end             u8 'E', u32 length, the footer as JSON ([`Footer`])
//! trailer  16 B   u64 byte offset of the 'E' tag, "TMTREND\0"
//! ```
//!
//! All integers are little-endian. Inside a chunk each record is one tag byte
//! `kind (2 bits) | time code (2) | thread flag (1) | size code (3)` followed by the
//! varints the tag asks for: the time delta (when the time code is 3; codes 0..2 are the
//! delta itself), the thread (when it changed), the size (size code 7; codes 0..6 are
//! sizes 1..64 as powers of two) and always the zigzag varint of the address delta. Delta
//! state resets at each chunk, so a chunk decodes on its own.
//!
//! Why this shape: addresses of real programs cluster (stack, heap, code), so address
//! deltas are one or two varint bytes and times are mostly 0 or 1 instruction apart; zstd
//! then removes most of what repeats. The footer, found through the fixed-size trailer,
//! gives counts and the touched address ranges before any chunk is read, which replay
//! needs to lay out the simulated process.

use crate::compress::{Chunk, ChunkCompressor, Compressed};
use crate::{Kind, Record, TraceError};
use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom, Write};

pub const MAGIC: &[u8; 8] = b"TMTRACE\0";
pub const END_MAGIC: &[u8; 8] = b"TMTREND\0";
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 64;
/// Records per chunk written by [`TraceWriter`].
pub const CHUNK_RECORDS: u32 = 1 << 20;
/// Largest decoded chunk a reader accepts (a writer produces at most ~20 MiB).
pub const MAX_CHUNK_RAW: u32 = 64 << 20;
/// Largest footer a reader accepts.
pub const MAX_FOOTER: u32 = 256 << 20;
/// Pages apart two touched pages may be and still share one address range in the footer
/// (1 MiB: fewer simulated VMAs; untouched pages inside a range cost only a page-table slot).
pub const RANGE_GAP_PAGES: u64 = 256;
/// zstd level of the chunks. Level 1 (the "fast" strategy with zstd's smallest tables):
/// compression shares the two cores with the recorder and the converter during a capture,
/// and level 1 captured GNU sort 10–15 % faster than level 2 for a 4 % larger trace
/// (0.41 against 0.40 bytes per access); negative levels compress no faster on that stream.
pub const ZSTD_LEVEL: i32 = 1;

/// What a trace's `time` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Instructions executed before the access (Lackey, pinatrace, ChampSim).
    Instructions,
    /// Nanoseconds since the start of the trace (damo).
    Ns,
}

/// Summary stored at the end of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footer {
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    pub modifies: u64,
    pub chunks: u64,
    /// `(thread, records)` per thread, by thread number.
    pub threads: Vec<(u32, u64)>,
    pub first_time: u64,
    pub last_time: u64,
    /// Distinct 4 KiB pages touched.
    pub pages: u64,
    /// Touched page ranges `[first, end)`, sorted, pages closer than
    /// [`RANGE_GAP_PAGES`] merged.
    pub ranges: Vec<(u64, u64)>,
    /// Where the trace came from (importer and input).
    pub source: String,
}

impl Footer {
    /// Pages covered by the ranges (the simulated process's page-table size).
    pub fn range_pages(&self) -> u64 {
        self.ranges.iter().map(|r| r.1 - r.0).sum()
    }
}

// --- varints ---------------------------------------------------------------------------

/// Bytes of the longest varint (a u64).
pub(crate) const MAX_VARINT: usize = 10;
/// Bytes of the longest encoded record: the tag and four varints.
const MAX_RECORD: usize = 1 + 4 * MAX_VARINT;

/// `v` as a varint at the start of `out` (at least [`MAX_VARINT`] bytes); its length.
#[inline(always)]
pub(crate) fn varint_into(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 && i < MAX_VARINT - 1 {
        out[i] = v as u8 | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Read a varint at `*pos`; `None` when the buffer ends or it is longer than 10 bytes.
#[inline(always)]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7F) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

// --- page set --------------------------------------------------------------------------

/// Distinct pages touched: a direct-mapped cache of recent pages in front of an
/// open-addressing hash set, so the common repeated page costs one compare.
pub(crate) struct PageSet {
    recent: Vec<u64>,
    table: Vec<u64>,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl PageSet {
    pub(crate) fn new() -> Self {
        PageSet {
            recent: vec![EMPTY; 1 << 14],
            table: vec![EMPTY; 1 << 12],
            len: 0,
        }
    }
    #[inline(always)]
    fn hash(p: u64) -> usize {
        (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize
    }
    #[inline(always)]
    pub(crate) fn insert(&mut self, page: u64) {
        let slot = (page as usize) & (self.recent.len() - 1);
        if self.recent[slot] == page {
            return;
        }
        self.recent[slot] = page;
        self.insert_slow(page);
    }
    fn insert_slow(&mut self, page: u64) {
        if page == EMPTY {
            return; // cannot occur: pages are addr >> 12
        }
        let mask = self.table.len() - 1;
        let mut i = Self::hash(page) & mask;
        loop {
            let v = self.table[i];
            if v == page {
                return;
            }
            if v == EMPTY {
                self.table[i] = page;
                self.len += 1;
                if self.len * 2 > self.table.len() {
                    self.grow();
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }
    fn grow(&mut self) {
        let old = std::mem::replace(
            &mut self.table,
            vec![EMPTY; self.len.next_power_of_two() * 4],
        );
        self.len = 0;
        for p in old.into_iter().filter(|&p| p != EMPTY) {
            self.insert_slow(p);
        }
    }
    pub(crate) fn len(&self) -> u64 {
        self.len as u64
    }
    /// Sorted distinct pages.
    pub(crate) fn sorted(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.table.iter().copied().filter(|&p| p != EMPTY).collect();
        v.sort_unstable();
        v
    }
}

/// Merge sorted distinct pages into ranges, joining pages less than `gap` apart.
pub fn page_ranges(sorted: &[u64], gap: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &p in sorted {
        match out.last_mut() {
            Some(r) if p < r.1.saturating_add(gap) => r.1 = r.1.max(p + 1),
            _ => out.push((p, p + 1)),
        }
    }
    out
}

// --- writer ----------------------------------------------------------------------------

/// Streaming writer: records go into a chunk buffer, each full chunk is compressed and
/// written. Call [`TraceWriter::finish`] to write the footer; a trace without it is
/// reported as truncated by the reader.
pub struct TraceWriter<W: Write> {
    out: W,
    name: String,
    /// The chunk being encoded: `raw[..used]`; beyond it, room for the next record.
    raw: Vec<u8>,
    used: usize,
    /// A raw buffer back from the compressor, for the next chunk.
    spare: Vec<u8>,
    zstd: ChunkCompressor,
    in_chunk: u32,
    prev_time: u64,
    prev_addr: u64,
    prev_thread: u32,
    offset: u64,
    footer: Footer,
    threads: std::collections::BTreeMap<u32, u64>,
    pages: PageSet,
    started: bool,
    run_thread: u32,
    run_len: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Write the header. `source` is recorded in the footer.
    pub fn new(out: W, unit: TimeUnit, source: &str) -> Result<Self, TraceError> {
        Self::with_name(out, unit, source, "<output>")
    }

    /// As [`TraceWriter::new`], naming the output in errors.
    pub fn with_name(
        mut out: W,
        unit: TimeUnit,
        source: &str,
        name: &str,
    ) -> Result<Self, TraceError> {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..10].copy_from_slice(&VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        h[12] = match unit {
            TimeUnit::Instructions => 0,
            TimeUnit::Ns => 1,
        };
        let werr = |e| TraceError::Write {
            path: name.to_string(),
            source: e,
        };
        out.write_all(&h).map_err(werr)?;
        let zstd = ChunkCompressor::new(ZSTD_LEVEL).map_err(werr)?;
        Ok(TraceWriter {
            out,
            name: name.to_string(),
            raw: Vec::new(),
            used: 0,
            spare: Vec::new(),
            zstd,
            in_chunk: 0,
            prev_time: 0,
            prev_addr: 0,
            prev_thread: 0,
            offset: HEADER_LEN as u64,
            footer: Footer {
                source: source.to_string(),
                ..Footer::default()
            },
            threads: Default::default(),
            pages: PageSet::new(),
            started: false,
            run_thread: 0,
            run_len: 0,
        })
    }

    /// Append one record. Times must not decrease; sizes must be positive.
    #[inline]
    pub fn push(&mut self, r: &Record) -> Result<(), TraceError> {
        if r.time < self.footer.last_time && self.started {
            return Err(TraceError::invalid(
                &self.name,
                format!(
                    "record {}: time {} is before the previous record's {}",
                    self.footer.records, r.time, self.footer.last_time
                ),
            ));
        }
        if !self.started {
            self.started = true;
            self.footer.first_time = r.time;
        }
        let size = r.size.max(1);
        let dt = r.time - self.prev_time;
        let tcode = if dt < 3 { dt as u8 } else { 3 };
        let scode = if size <= 64 && size.is_power_of_two() {
            size.trailing_zeros() as u8
        } else {
            7
        };
        let tflag = (r.thread != self.prev_thread) as u8;
        // Encoded in place: the buffer always has room for the longest record, so there is
        // one bounds check per record and no copy.
        if self.raw.len() < self.used + MAX_RECORD {
            let len = (self.used + MAX_RECORD)
                .max(2 * self.raw.len())
                .max(1 << 16);
            self.raw.resize(len, 0);
        }
        let enc = &mut self.raw[self.used..self.used + MAX_RECORD];
        enc[0] = r.kind as u8 | tcode << 2 | tflag << 4 | scode << 5;
        let mut n = 1;
        if tcode == 3 {
            n += varint_into(&mut enc[n..], dt);
        }
        if tflag != 0 {
            n += varint_into(&mut enc[n..], r.thread as u64);
        }
        if scode == 7 {
            n += varint_into(&mut enc[n..], size as u64);
        }
        n += varint_into(
            &mut enc[n..],
            zigzag(r.addr.wrapping_sub(self.prev_addr) as i64),
        );
        self.used += n;
        self.prev_time = r.time;
        self.prev_addr = r.addr;
        self.prev_thread = r.thread;
        let f = &mut self.footer;
        f.records += 1;
        match r.kind {
            Kind::Read => f.reads += 1,
            Kind::Write => f.writes += 1,
            Kind::Modify => f.modifies += 1,
        }
        f.last_time = r.time;
        // Per-thread counts: a run of one thread is added to the map when the thread changes.
        if tflag != 0 || self.in_chunk == 0 {
            self.flush_thread_run();
            self.run_thread = r.thread;
        }
        self.run_len += 1;
        self.pages.insert(r.page());
        self.in_chunk += 1;
        if self.in_chunk == CHUNK_RECORDS {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_thread_run(&mut self) {
        if self.run_len > 0 {
            *self.threads.entry(self.run_thread).or_insert(0) += self.run_len;
            self.run_len = 0;
        }
    }

    /// Hand the chunk to the compressor and write the one compressed before it.
    fn flush_chunk(&mut self) -> Result<(), TraceError> {
        if self.in_chunk == 0 {
            return Ok(());
        }
        let mut raw = std::mem::replace(&mut self.raw, std::mem::take(&mut self.spare));
        raw.truncate(self.used);
        self.used = 0;
        let chunk = Chunk {
            records: self.in_chunk,
            raw,
        };
        if let Some(c) = self.zstd.submit(chunk).map_err(|e| self.werr(e))? {
            self.write_chunk(c)?;
        }
        self.in_chunk = 0;
        self.prev_time = 0;
        self.prev_addr = 0;
        self.prev_thread = 0;
        Ok(())
    }

    /// Write the chunk still being compressed, if any.
    fn drain(&mut self) -> Result<(), TraceError> {
        if let Some(c) = self.zstd.take().map_err(|e| self.werr(e))? {
            self.write_chunk(c)?;
        }
        Ok(())
    }

    fn write_chunk(&mut self, c: Compressed) -> Result<(), TraceError> {
        let mut h = [0u8; 13];
        h[0] = b'C';
        h[1..5].copy_from_slice(&c.records.to_le_bytes());
        h[5..9].copy_from_slice(&(c.raw.len() as u32).to_le_bytes());
        h[9..13].copy_from_slice(&(c.comp.len() as u32).to_le_bytes());
        self.out.write_all(&h).map_err(|e| self.werr(e))?;
        self.out.write_all(&c.comp).map_err(|e| self.werr(e))?;
        self.offset += 13 + c.comp.len() as u64;
        self.footer.chunks += 1;
        self.spare = c.raw;
        Ok(())
    }

    fn werr(&self, e: std::io::Error) -> TraceError {
        TraceError::Write {
            path: self.name.clone(),
            source: e,
        }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.footer.records
    }

    /// Replace the footer's `source` (a recorder states what it measured once it is done).
    pub fn set_source(&mut self, source: &str) {
        self.footer.source = source.to_string();
    }

    /// Flush the last chunk, write the footer and trailer; returns the footer.
    pub fn finish(mut self) -> Result<Footer, TraceError> {
        let last = self.prev_time;
        self.flush_chunk()?;
        self.drain()?;
        self.flush_thread_run();
        self.prev_time = last;
        let mut footer = std::mem::take(&mut self.footer);
        footer.threads = self.threads.iter().map(|(&t, &n)| (t, n)).collect();
        footer.pages = self.pages.len();
        footer.ranges = page_ranges(&self.pages.sorted(), RANGE_GAP_PAGES);
        let werr = |e| TraceError::Write {
            path: self.name.clone(),
            source: e,
        };
        let json = serde_json::to_vec(&footer).map_err(|e| werr(std::io::Error::other(e)))?;
        let mut h = [0u8; 5];
        h[0] = b'E';
        h[1..5].copy_from_slice(&(json.len() as u32).to_le_bytes());
        self.out.write_all(&h).map_err(werr)?;
        self.out.write_all(&json).map_err(werr)?;
        self.out
            .write_all(&self.offset.to_le_bytes())
            .map_err(werr)?;
        self.out.write_all(END_MAGIC).map_err(werr)?;
        self.out.flush().map_err(werr)?;
        Ok(footer)
    }
}

// --- reader ----------------------------------------------------------------------------

/// The fixed header of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub unit: TimeUnit,
}

fn parse_header(h: &[u8], path: &str) -> Result<Header, TraceError> {
    if h.len() < HEADER_LEN {
        return Err(TraceError::offset(
            path,
            h.len() as u64,
            format!(
                "truncated header ({} of {HEADER_LEN} bytes): not a tiermem trace",
                h.len()
            ),
        ));
    }
    if &h[..8] != MAGIC {
        return Err(TraceError::offset(
            path,
            0,
            "wrong magic: not a tiermem trace (import other formats with `tiermem trace import`)",
        ));
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version != VERSION {
        return Err(TraceError::offset(
            path,
            8,
            format!("unsupported trace version {version} (this tiermem reads version {VERSION})"),
        ));
    }
    let hl = u16::from_le_bytes([h[10], h[11]]) as usize;
    if hl != HEADER_LEN {
        return Err(TraceError::offset(
            path,
            10,
            format!("header length {hl}, expected {HEADER_LEN}"),
        ));
    }
    let unit = match h[12] {
        0 => TimeUnit::Instructions,
        1 => TimeUnit::Ns,
        u => {
            return Err(TraceError::offset(
                path,
                12,
                format!("unknown time unit {u}"),
            ));
        }
    };
    Ok(Header { version, unit })
}

/// Read the header and the footer of a seekable trace (without reading the chunks).
pub fn read_footer<R: Read + Seek>(r: &mut R, path: &str) -> Result<(Header, Footer), TraceError> {
    let rerr = |e| TraceError::Read {
        path: path.to_string(),
        source: e,
    };
    let len = r.seek(SeekFrom::End(0)).map_err(rerr)?;
    r.seek(SeekFrom::Start(0)).map_err(rerr)?;
    let mut h = Vec::with_capacity(HEADER_LEN);
    r.by_ref()
        .take(HEADER_LEN as u64)
        .read_to_end(&mut h)
        .map_err(rerr)?;
    let header = parse_header(&h, path)?;
    if len < (HEADER_LEN + 16 + 5) as u64 {
        return Err(TraceError::offset(
            path,
            len,
            "truncated: the file ends before the end record (was the import interrupted?)",
        ));
    }
    let mut t = [0u8; 16];
    r.seek(SeekFrom::Start(len - 16)).map_err(rerr)?;
    r.read_exact(&mut t).map_err(rerr)?;
    if &t[8..] != END_MAGIC {
        return Err(TraceError::offset(
            path,
            len - 8,
            "truncated: no end marker (was the import interrupted?)",
        ));
    }
    let end = le_u64(&t[..8]);
    if end < HEADER_LEN as u64 || end + 5 > len - 16 {
        return Err(TraceError::offset(
            path,
            len - 16,
            format!("end record offset {end} is outside the file ({len} bytes)"),
        ));
    }
    let mut e = [0u8; 5];
    r.seek(SeekFrom::Start(end)).map_err(rerr)?;
    r.read_exact(&mut e).map_err(rerr)?;
    let flen = le_u32(&e[1..5]);
    if e[0] != b'E' || end + 5 + flen as u64 != len - 16 || flen > MAX_FOOTER {
        return Err(TraceError::offset(
            path,
            end,
            format!("bad end record (tag {:#04x}, length {flen})", e[0]),
        ));
    }
    let mut json = vec![0u8; flen as usize];
    r.read_exact(&mut json).map_err(rerr)?;
    let footer: Footer = serde_json::from_slice(&json)
        .map_err(|e| TraceError::offset(path, end + 5, format!("bad footer: {e}")))?;
    if footer.threads.iter().map(|t| t.1).sum::<u64>() != footer.records
        || footer.ranges.iter().any(|r| r.0 >= r.1)
        || footer.ranges.windows(2).any(|w| w[0].1 > w[1].0)
    {
        return Err(TraceError::offset(
            path,
            end + 5,
            "bad footer: per-thread counts or ranges are inconsistent",
        ));
    }
    r.seek(SeekFrom::Start(HEADER_LEN as u64)).map_err(rerr)?;
    Ok((header, footer))
}

/// Open a trace file: header and footer checked, positioned at the first chunk.
pub fn open(
    path: &std::path::Path,
) -> Result<(TraceReader<std::io::BufReader<std::fs::File>>, Footer), TraceError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| TraceError::Read {
        path: name.clone(),
        source: e,
    })?;
    let mut br = std::io::BufReader::with_capacity(1 << 20, f);
    let (header, footer) = read_footer(&mut br, &name)?;
    let r = TraceReader::after_header(br, header, &name)?;
    Ok((r, footer))
}

/// Streaming reader: decodes one chunk at a time (at most [`MAX_CHUNK_RAW`] bytes).
pub struct TraceReader<R: Read> {
    inner: R,
    name: String,
    pub header: Header,
    offset: u64,
    chunk_offset: u64,
    raw: Vec<u8>,
    comp: Vec<u8>,
    dctx: zstd::bulk::Decompressor<'static>,
    pos: usize,
    left: u32,
    time: u64,
    addr: u64,
    thread: u32,
    records: u64,
    /// Time of the previous record (times never decrease).
    floor: u64,
    ended: bool,
}

impl<R: Read> TraceReader<R> {
    /// Read the header from a stream (no seeking: the footer is checked when reached).
    pub fn new(mut inner: R, name: &str) -> Result<Self, TraceError> {
        let mut h = Vec::with_capacity(HEADER_LEN);
        inner
            .by_ref()
            .take(HEADER_LEN as u64)
            .read_to_end(&mut h)
            .map_err(|e| TraceError::Read {
                path: name.to_string(),
                source: e,
            })?;
        let header = parse_header(&h, name)?;
        Self::after_header(inner, header, name)
    }

    fn after_header(inner: R, header: Header, name: &str) -> Result<Self, TraceError> {
        Ok(TraceReader {
            inner,
            name: name.to_string(),
            header,
            offset: HEADER_LEN as u64,
            chunk_offset: 0,
            raw: Vec::new(),
            comp: Vec::new(),
            dctx: zstd::bulk::Decompressor::new().map_err(|e| TraceError::Read {
                path: name.to_string(),
                source: e,
            })?,
            pos: 0,
            left: 0,
            time: 0,
            addr: 0,
            thread: 0,
            records: 0,
            floor: 0,
            ended: false,
        })
    }

    fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<(), TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(TraceError::offset(
                        &self.name,
                        self.offset + got as u64,
                        format!("truncated: the file ends inside {what}"),
                    ))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError::Read {
                        path: self.name.clone(),
                        source: e,
                    })
                }
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    /// Load the next chunk; false at the end record.
    fn next_chunk(&mut self) -> Result<bool, TraceError> {
        if self.pos != self.raw.len() {
            return Err(TraceError::offset(
                &self.name,
                self.chunk_offset,
                format!(
                    "chunk has {} bytes after its last record",
                    self.raw.len() - self.pos
                ),
            ));
        }
        let at = self.offset;
        let mut tag = [0u8; 1];
        self.read_exact_at(&mut tag, "a chunk header (the end record is missing)")?;
        match tag[0] {
            b'C' => {}
            b'E' => {
                let mut l = [0u8; 4];
                self.read_exact_at(&mut l, "the end record")?;
                let flen = u32::from_le_bytes(l);
                if flen > MAX_FOOTER {
                    return Err(TraceError::offset(&self.name, at, "footer too large"));
                }
                let mut json = vec![0u8; flen as usize];
                self.read_exact_at(&mut json, "the footer")?;
                let footer: Footer = serde_json::from_slice(&json).map_err(|e| {
                    TraceError::offset(&self.name, at + 5, format!("bad footer: {e}"))
                })?;
                if footer.records != self.records {
                    return Err(TraceError::offset(
                        &self.name,
                        at,
                        format!(
                            "the footer counts {} records but the chunks hold {}",
                            footer.records, self.records
                        ),
                    ));
                }
                self.ended = true;
                return Ok(false);
            }
            t => {
                return Err(TraceError::offset(
                    &self.name,
                    at,
                    format!("expected a chunk ('C') or the end record ('E'), found byte {t:#04x}"),
                ))
            }
        }
        let mut h = [0u8; 12];
        self.read_exact_at(&mut h, "a chunk header")?;
        let n = le_u32(&h[0..4]);
        let raw_len = le_u32(&h[4..8]);
        let comp_len = le_u32(&h[8..12]);
        if raw_len > MAX_CHUNK_RAW
            || comp_len as usize > zstd::zstd_safe::compress_bound(MAX_CHUNK_RAW as usize)
            || n == 0
            || (n as u64) * 2 > raw_len as u64
        {
            return Err(TraceError::offset(
                &self.name,
                at,
                format!(
                    "implausible chunk header: {n} records, {raw_len} raw bytes, {comp_len} compressed bytes (limit {MAX_CHUNK_RAW} raw)"
                ),
            ));
        }
        self.comp.resize(comp_len as usize, 0);
        let mut comp = std::mem::take(&mut self.comp);
        let r = self.read_exact_at(&mut comp, "a chunk's data");
        self.comp = comp;
        r?;
        self.raw.clear();
        self.raw.reserve(raw_len as usize);
        let got = self
            .dctx
            .decompress_to_buffer(&self.comp, &mut self.raw)
            .map_err(|e| {
                TraceError::offset(&self.name, at + 13, format!("corrupt chunk data: {e}"))
            })?;
        if got != raw_len as usize {
            return Err(TraceError::offset(
                &self.name,
                at + 13,
                format!("chunk decompresses to {got} bytes, header says {raw_len}"),
            ));
        }
        self.chunk_offset = at;
        self.pos = 0;
        self.left = n;
        self.time = 0;
        self.addr = 0;
        self.thread = 0;
        Ok(true)
    }

    /// The next record, `None` after the last one.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        if self.left == 0 && (self.ended || !self.next_chunk()?) {
            return Ok(None);
        }
        match self.decode() {
            Some(r) if r.time >= self.floor => {
                self.left -= 1;
                self.records += 1;
                self.floor = r.time;
                Ok(Some(r))
            }
            Some(r) => Err(TraceError::offset(
                &self.name,
                self.chunk_offset,
                format!(
                    "record {}: time {} is before the previous record's {}",
                    self.records, r.time, self.floor
                ),
            )),
            None => Err(TraceError::offset(
                &self.name,
                self.chunk_offset,
                format!(
                    "chunk record {} is malformed (at byte {} of the decoded chunk)",
                    self.records, self.pos
                ),
            )),
        }
    }

    #[inline(always)]
    fn decode(&mut self) -> Option<Record> {
        let buf = &self.raw;
        let mut pos = self.pos;
        let tag = *buf.get(pos)?;
        pos += 1;
        let kind = Kind::from_bits(tag & 3)?;
        let tcode = (tag >> 2) & 3;
        let dt = if tcode == 3 {
            get_varint(buf, &mut pos)?
        } else {
            tcode as u64
        };
        if tag & 0x10 != 0 {
            let t = get_varint(buf, &mut pos)?;
            self.thread = u32::try_from(t).ok()?;
        }
        let scode = tag >> 5;
        let size = if scode == 7 {
            let s = get_varint(buf, &mut pos)?;
            if s == 0 {
                return None;
            }
            u32::try_from(s).ok()?
        } else {
            1u32 << scode
        };
        let da = unzigzag(get_varint(buf, &mut pos)?);
        self.time = self.time.checked_add(dt)?;
        self.addr = self.addr.wrapping_add(da as u64);
        self.pos = pos;
        Some(Record {
            time: self.time,
            thread: self.thread,
            addr: self.addr,
            size,
            kind,
        })
    }

    /// Records returned so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }
}

/// Test helper for the importers: run `import` into an in-memory trace of `unit`, then read
/// every record back. The importer's own result comes back beside the records.
/// A little-endian `u32` from a 4-byte field (a shorter slice reads zero-padded: the
/// callers pass fixed-size fields, and a decoder must not panic on any input).
pub(crate) fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    let n = b.len().min(4);
    a[..n].copy_from_slice(&b[..n]);
    u32::from_le_bytes(a)
}

/// A little-endian `u64` from an 8-byte field (see [`le_u32`]).
pub(crate) fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(a)
}

/// A text importer's arbitrary-input property: given `data`, strictly and leniently,
/// `import` either succeeds or fails with an error that names a line.
#[cfg(test)]
pub(crate) fn fails_only_with_a_line<T>(
    unit: TimeUnit,
    data: &[u8],
    import: impl Fn(&[u8], &mut TraceWriter<&mut Vec<u8>>, bool) -> Result<T, TraceError>,
) -> bool {
    [false, true].into_iter().all(|lenient| {
        let mut buf = Vec::new();
        let mut w = TraceWriter::new(&mut buf, unit, "fuzz").expect("in-memory writer");
        import(data, &mut w, lenient).map_or_else(|e| e.to_string().contains("line "), |_| true)
    })
}

#[cfg(test)]
pub(crate) fn import_and_read<T>(
    unit: TimeUnit,
    import: impl FnOnce(&mut TraceWriter<&mut Vec<u8>>) -> Result<T, TraceError>,
) -> Result<(T, Vec<Record>), TraceError> {
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, unit, "test").expect("in-memory writer");
    let out = import(&mut w)?;
    w.finish().expect("in-memory finish");
    let mut r = TraceReader::new(std::io::Cursor::new(buf), "t").expect("written trace reads");
    let mut v = Vec::new();
    while let Some(x) = r.next_record().expect("written trace decodes") {
        v.push(x);
    }
    Ok((out, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u64) -> Vec<Record> {
        (0..n)
            .map(|i| Record {
                time: i / 3,
                thread: (i % 7 == 0) as u32,
                addr: 0x1f_ff00_0000 + (i * 8) % 40960 + if i % 5 == 0 { 0x4000_0000 } else { 0 },
                size: [1, 2, 4, 8, 16, 3, 100][i as usize % 7],
                kind: Kind::from_bits((i % 3) as u8).unwrap(),
            })
            .collect()
    }

    fn write(recs: &[Record]) -> (Vec<u8>, Footer) {
        let mut buf = Vec::new();
        let mut w = TraceWriter::new(&mut buf, TimeUnit::Instructions, "test").unwrap();
        for r in recs {
            w.push(r).unwrap();
        }
        let f = w.finish().unwrap();
        (buf, f)
    }

    #[test]
    fn round_trip_across_chunks() {
        let recs = sample(CHUNK_RECORDS as u64 + 1000);
        let (buf, f) = write(&recs);
        assert_eq!(f.records, recs.len() as u64);
        assert_eq!(f.chunks, 2);
        let mut c = std::io::Cursor::new(&buf);
        let (_, f2) = read_footer(&mut c, "t").unwrap();
        assert_eq!(f, f2);
        let mut r = TraceReader::new(std::io::Cursor::new(&buf), "t").unwrap();
        for (i, want) in recs.iter().enumerate() {
            let got = r.next_record().unwrap().unwrap();
            assert_eq!(&got, want, "record {i}");
        }
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn varint_and_zigzag_extremes() {
        for v in [0u64, 1, 127, 128, u32::MAX as u64, u64::MAX] {
            let mut b = [0u8; MAX_VARINT];
            let n = varint_into(&mut b, v);
            let b = &b[..n];
            let mut p = 0;
            assert_eq!(get_varint(b, &mut p), Some(v));
            assert_eq!(p, b.len());
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        let mut p = 0;
        assert_eq!(get_varint(&[0xFF; 11], &mut p), None);
    }

    #[test]
    fn wrong_magic_truncation_and_huge_sizes_are_errors_with_offsets() {
        let (buf, _) = write(&sample(1000));
        let mut bad = buf.clone();
        bad[0] = b'X';
        let e = TraceReader::new(std::io::Cursor::new(&bad), "t")
            .err()
            .unwrap();
        assert!(e.to_string().contains("byte offset 0: wrong magic"), "{e}");
        let e = read_footer(&mut std::io::Cursor::new(&buf[..buf.len() - 3]), "t")
            .err()
            .unwrap();
        assert!(e.to_string().contains("no end marker"), "{e}");
        // Truncated mid-chunk, read as a stream.
        let mut r = TraceReader::new(std::io::Cursor::new(&buf[..200]), "t").unwrap();
        let e = r.next_record().err().unwrap();
        assert!(e.to_string().contains("truncated"), "{e}");
        // A chunk header claiming 4 GiB.
        let mut huge = buf.clone();
        huge[HEADER_LEN + 5..HEADER_LEN + 9].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut r = TraceReader::new(std::io::Cursor::new(&huge), "t").unwrap();
        let e = r.next_record().err().unwrap();
        assert!(
            e.to_string()
                .contains("byte offset 64: implausible chunk header"),
            "{e}"
        );
    }

    #[test]
    fn time_must_not_go_back() {
        let mut buf = Vec::new();
        let mut w = TraceWriter::new(&mut buf, TimeUnit::Ns, "t").unwrap();
        w.push(&Record {
            time: 5,
            ..Record::default()
        })
        .unwrap();
        assert!(w
            .push(&Record {
                time: 4,
                ..Record::default()
            })
            .is_err());
    }

    #[test]
    fn ranges_merge_close_pages() {
        assert_eq!(
            page_ranges(&[1, 2, 3, 10, 1000], 8),
            vec![(1, 11), (1000, 1001)]
        );
        let mut s = PageSet::new();
        for p in (0..100_000u64).chain(0..100_000) {
            s.insert(p * 3);
        }
        assert_eq!(s.len(), 100_000);
        assert_eq!(s.sorted()[..3], [0, 3, 6]);
    }
}
