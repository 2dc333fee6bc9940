//! The page-activity profiler behind `tiermem trace profile`: which pages of a live process
//! were accessed in each interval, seen through one of two kernel interfaces ([`Source`]):
//! * idle-page tracking (`Documentation/admin-guide/mm/idle_page_tracking.rst`,
//!   `CONFIG_IDLE_PAGE_TRACKING`): reads and writes, page by page;
//! * soft-dirty bits (`Documentation/admin-guide/mm/soft-dirty.rst`, `CONFIG_MEM_SOFT_DIRTY`):
//!   the pages written since the previous scan, for kernels without idle-page tracking
//!   (Debian's 6.12 and 7.2 are built without it and with soft-dirty). Reads are not seen.
//!   Writing `4` to `/proc/PID/clear_refs` write-protects the process's PTEs
//!   (`clear_soft_dirty`), so the first write to each page after a scan takes a minor fault
//!   that sets the bit again: this source costs the program about a microsecond per page it
//!   writes per interval. The read of the bits and their reset are two steps: a page first
//!   written between them is missed (in the 6.12 VM, 1 % of a program's pages while it
//!   populated them).
//!
//! One scan with idle-page tracking ([`Profiler::scan`]):
//! 1. `/proc/PID/maps`: the VMAs (readable ones; `[vsyscall]` is the kernel's);
//! 2. `/proc/PID/pagemap`: each present page's PFN (bit 63 present, bits 0–54 the PFN,
//!    which the kernel shows only to `CAP_SYS_ADMIN`: `pagemap_read` zeroes it otherwise);
//! 3. `/sys/kernel/mm/page_idle/bitmap`, read at the 8-byte words holding those PFNs: a
//!    page whose idle flag is clear was accessed since the previous scan set it
//!    (`page_idle_bitmap_read` first folds the PTEs' accessed bits in through an rmap walk,
//!    `page_idle_clear_pte_refs`). A page new since the previous scan was never marked and
//!    reads as accessed, which it was (it faulted in); a migrated page keeps its idle flag
//!    (`folio_migrate_flags` copies it), so promotion and demotion do not read as accesses;
//! 4. the same words written back with the process's PFNs set: they are idle again until
//!    the next access. Only the process's own bits are set (a written 0 changes nothing:
//!    `page_idle_bitmap_write`), and only LRU pages take the flag (`page_idle_get_folio`).
//! 5. `/proc/PID/stat` (CPU time), `/proc/PID/status` (threads, `VmRSS`) and the node of
//!    each PFN, from the memory blocks under `/sys/devices/system/node/nodeN/memoryM`.
//!
//! Setting an idle flag changes no kernel decision: the rmap walk that clears a PTE's
//! accessed bit sets PG_young, which `folio_referenced` reports to reclaim as a reference.
//! So the profiler leaves nothing to restore. Its cost is its own CPU time (recorded in
//! the profile's end frame) plus, for the process, the accessed bits it clears (the next
//! access of each page sets them again, a few cycles in the page walker).

use crate::fs::HostFs;
use crate::Error;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use tiermem_trace::profile::{Interval, Vma, VmaKind};

pub const PAGE_IDLE_BITMAP: &str = "/sys/kernel/mm/page_idle/bitmap";
const PAGEMAP_PRESENT: u64 = 1 << 63;
const PAGEMAP_SOFT_DIRTY: u64 = 1 << 55;
const PFN_MASK: u64 = (1 << 55) - 1;
/// Pagemap entries read per `pread`.
const PAGEMAP_BATCH: u64 = 1 << 16;
/// Bitmap words two reads may be apart and still be read as one (8 words = 512 PFNs).
const WORD_GAP: u64 = 8;

/// The PFN → node map of the running kernel, by memory block.
#[derive(Clone, Debug, Default)]
pub struct NodeMap {
    /// PFNs per memory block.
    block_pfns: u64,
    node_of_block: HashMap<u64, u32>,
    /// Highest node id + 1.
    pub nodes: u32,
}

impl NodeMap {
    /// Read `/sys/devices/system/memory/block_size_bytes` and each node's `memoryM` links.
    /// Without them (no memory hotplug sysfs), every page is on node 0.
    pub fn read(fs: &HostFs) -> Result<NodeMap, Error> {
        let nodes = fs
            .numbered_entries("/sys/devices/system/node", "node")
            .unwrap_or_default();
        let Some(text) = fs.read_opt("/sys/devices/system/memory/block_size_bytes")? else {
            return Ok(NodeMap {
                block_pfns: 0,
                node_of_block: HashMap::new(),
                nodes: 1,
            });
        };
        let path = fs.path("/sys/devices/system/memory/block_size_bytes");
        let bytes = u64::from_str_radix(text.trim(), 16)
            .ok()
            .filter(|&b| b >= 4096)
            .ok_or_else(|| Error::Parse {
                path,
                message: format!("`{}` is not a block size in hex", text.trim()),
            })?;
        let mut node_of_block = HashMap::new();
        for &n in &nodes {
            for m in fs.numbered_entries(&format!("/sys/devices/system/node/node{n}"), "memory")? {
                node_of_block.insert(m as u64, n);
            }
        }
        Ok(NodeMap {
            block_pfns: bytes / 4096,
            node_of_block,
            nodes: nodes.iter().max().map_or(1, |&m| m + 1),
        })
    }

    fn node(&self, pfn: u64) -> u32 {
        if self.block_pfns == 0 {
            return 0;
        }
        self.node_of_block
            .get(&(pfn / self.block_pfns))
            .copied()
            .unwrap_or(0)
    }
}

/// Where the accessed pages come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `/sys/kernel/mm/page_idle/bitmap`: every access.
    PageIdle,
    /// Soft-dirty bits of `/proc/PID/pagemap`: writes only.
    SoftDirty,
}

impl Source {
    /// The name written in the profile's header.
    pub fn name(self) -> &'static str {
        match self {
            Source::PageIdle => "page_idle",
            Source::SoftDirty => "soft_dirty",
        }
    }
}

/// The best source the running kernel offers: idle-page tracking, else soft-dirty bits
/// (found by a probe on the calling process: clear its soft-dirty bits, write one page of
/// its own, read the bit back), else an error naming both config options.
pub fn detect_source(fs: &HostFs) -> Result<Source, Error> {
    if fs.exists(PAGE_IDLE_BITMAP) {
        return Ok(Source::PageIdle);
    }
    if soft_dirty_works() {
        return Ok(Source::SoftDirty);
    }
    Err(Error::Feature {
        feature: "page access tracking".into(),
        path: PAGE_IDLE_BITMAP.into(),
        hint: " and soft-dirty bits do not work: the kernel is built without CONFIG_IDLE_PAGE_TRACKING and without CONFIG_MEM_SOFT_DIRTY".into(),
    })
}

/// Whether writing a page after `clear_refs` 4 sets its soft-dirty bit, tried on this
/// process's own memory (the probe's page is freed after).
fn soft_dirty_works() -> bool {
    let mut page = vec![0u8; 8192];
    let addr = (page.as_ptr() as u64).next_multiple_of(4096);
    let off = (addr - page.as_ptr() as u64) as usize;
    page[off] = 1; // faulted in
    if std::fs::write("/proc/self/clear_refs", "4").is_err() {
        return false;
    }
    // SAFETY: a volatile write inside the vector we own.
    unsafe { std::ptr::write_volatile(page.as_mut_ptr().add(off), 2) };
    let Ok(pm) = File::open("/proc/self/pagemap") else {
        return false;
    };
    let mut e = [0u8; 8];
    let ok = pm.read_exact_at(&mut e, addr / 4096 * 8).is_ok();
    std::hint::black_box(&page);
    ok && u64::from_le_bytes(e) & PAGEMAP_SOFT_DIRTY != 0
}

/// Parse `/proc/PID/maps` into readable VMAs, in pages.
pub fn parse_maps(text: &str, path: &Path) -> Result<Vec<Vma>, Error> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |what: &str| Error::Parse {
            path: path.to_path_buf(),
            message: format!("line {}: {what}: `{line}`", i + 1),
        };
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            return Err(bad("expected `START-END PERMS ...`"));
        };
        let (a, b) = range
            .split_once('-')
            .ok_or_else(|| bad("no address range"))?;
        let start = u64::from_str_radix(a, 16).map_err(|_| bad("bad start address"))?;
        let end = u64::from_str_radix(b, 16).map_err(|_| bad("bad end address"))?;
        if end <= start || start % 4096 != 0 || end % 4096 != 0 {
            return Err(bad("not a page-aligned range"));
        }
        let name = f.nth(3).unwrap_or("");
        if !perms.starts_with('r')
            || name == "[vsyscall]"
            || name == "[vvar]"
            || name == "[vvar_vclock]"
        {
            continue;
        }
        let kind = match name {
            "" => VmaKind::Anon,
            "[heap]" => VmaKind::Heap,
            "[stack]" => VmaKind::Stack,
            n if n.starts_with('[') => VmaKind::Anon,
            _ => VmaKind::File,
        };
        out.push(Vma {
            start_page: start / 4096,
            end_page: end / 4096,
            kind,
        });
    }
    Ok(out)
}

/// `/proc/PID/stat`'s utime + stime, in clock ticks (fields 14 and 15, after the `)` that
/// ends the command name).
pub fn parse_stat_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    // Fields after the name start at 3 (state); utime is 14, stime 15.
    let utime: u64 = f.nth(11)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

fn status_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// A running process under observation.
pub struct Profiler {
    fs: HostFs,
    pid: u32,
    pagemap: File,
    bitmap: Option<File>,
    nodes: NodeMap,
    ticks_ns: u64,
    last_ticks: u64,
    source: Source,
    scans: u64,
    /// Scratch: the present pages of the scan, (page, pagemap entry), in page order.
    present: Vec<(u64, u64)>,
}

impl Profiler {
    /// Open the process's pagemap (and the idle bitmap for [`Source::PageIdle`]); errors
    /// name what is missing.
    pub fn attach(fs: &HostFs, pid: u32, source: Source) -> Result<Profiler, Error> {
        let bitmap = match source {
            Source::PageIdle => Some(fs.open_rw(PAGE_IDLE_BITMAP).map_err(|e| match e {
                Error::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::PermissionDenied =>
                {
                    Error::Capability {
                        what: format!("reading and setting {PAGE_IDLE_BITMAP}"),
                        capability: "root".into(),
                    }
                }
                e => e,
            })?),
            Source::SoftDirty => None,
        };
        let pm = fs.path(&format!("/proc/{pid}/pagemap"));
        let pagemap = File::open(&pm).map_err(|e| Error::io(&pm, "open", e))?;
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let mut p = Profiler {
            fs: fs.clone(),
            pid,
            pagemap,
            bitmap,
            nodes: NodeMap::read(fs)?,
            ticks_ns: 1_000_000_000 / (if ticks > 0 { ticks as u64 } else { 100 }),
            last_ticks: 0,
            source,
            scans: 0,
            present: Vec::new(),
        };
        p.last_ticks = p.cpu_ticks()?;
        Ok(p)
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// Highest node id + 1 (the profile's `nodes`).
    pub fn nodes(&self) -> u32 {
        self.nodes.nodes
    }

    fn cpu_ticks(&self) -> Result<u64, Error> {
        let kpath = format!("/proc/{}/stat", self.pid);
        let text = self.fs.read(&kpath)?;
        parse_stat_ticks(&text).ok_or_else(|| Error::Parse {
            path: self.fs.path(&kpath),
            message: "no utime/stime fields".into(),
        })
    }

    /// Present pages of `vmas` with their PFNs, into `self.present`.
    fn read_pagemap(&mut self, vmas: &[Vma]) -> Result<(), Error> {
        self.present.clear();
        let mut buf = vec![0u8; (PAGEMAP_BATCH * 8) as usize];
        let mut saw_pfn = false;
        for v in vmas {
            let mut page = v.start_page;
            while page < v.end_page {
                let n = (v.end_page - page).min(PAGEMAP_BATCH);
                let bytes = &mut buf[..(n * 8) as usize];
                let got = read_full_at(&self.pagemap, bytes, page * 8).map_err(|e| {
                    Error::io(
                        &self.fs.path(&format!("/proc/{}/pagemap", self.pid)),
                        "read",
                        e,
                    )
                })?;
                for (k, e) in bytes[..got].chunks_exact(8).enumerate() {
                    let e = u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
                    if e & PAGEMAP_PRESENT != 0 {
                        saw_pfn |= e & PFN_MASK != 0;
                        self.present.push((page + k as u64, e));
                    }
                }
                if got < bytes.len() {
                    break; // the VMA went away under us
                }
                page += n;
            }
        }
        if !self.present.is_empty() && !saw_pfn {
            return Err(Error::Capability {
                what: format!("reading page frame numbers from /proc/{}/pagemap", self.pid),
                capability: "CAP_SYS_ADMIN".into(),
            });
        }
        Ok(())
    }

    /// One scan: the VMAs now, and the interval since the previous scan (`end_ns` is left 0
    /// for the caller to stamp).
    pub fn scan(&mut self) -> Result<(Vec<Vma>, Interval), Error> {
        let kmaps = format!("/proc/{}/maps", self.pid);
        let vmas = parse_maps(&self.fs.read(&kmaps)?, &self.fs.path(&kmaps))?;
        self.read_pagemap(&vmas)?;
        let mut accessed = match &self.bitmap {
            Some(bitmap) => self.idle_scan(bitmap)?,
            None => self.soft_dirty_scan()?,
        };
        if self.scans == 0 {
            // The first scan: every present page was touched before it (for idle-page
            // tracking, where no page was marked yet, this is what the bitmap says anyway).
            accessed = runs(self.present.iter());
        }
        self.scans += 1;
        let mut node_pages = vec![0u64; self.nodes.nodes as usize];
        for &(_, e) in &self.present {
            if let Some(n) = node_pages.get_mut(self.nodes.node(e & PFN_MASK) as usize) {
                *n += 1;
            }
        }
        let ticks = self.cpu_ticks()?;
        let cpu_ns = ticks.saturating_sub(self.last_ticks) * self.ticks_ns;
        self.last_ticks = ticks;
        let status = self.fs.read(&format!("/proc/{}/status", self.pid))?;
        let interval = Interval {
            end_ns: 0,
            cpu_ns,
            threads: status_field(&status, "Threads:").unwrap_or(1) as u32,
            rss_pages: status_field(&status, "VmRSS:").unwrap_or(0) / 4,
            node_pages,
            accessed,
        };
        Ok((vmas, interval))
    }

    /// Idle-page tracking: the present pages whose idle flag is clear, as runs; then every
    /// present page marked idle.
    fn idle_scan(&self, bitmap: &File) -> Result<Vec<(u64, u64)>, Error> {
        // The bitmap words holding the present PFNs, each with the process's bits.
        let mut words: Vec<(u64, u64)> = self
            .present
            .iter()
            .map(|&(_, e)| ((e & PFN_MASK) / 64, 1u64 << ((e & PFN_MASK) % 64)))
            .collect();
        words.sort_unstable_by_key(|w| w.0);
        words.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 |= b.1;
                true
            } else {
                false
            }
        });
        let idle = self.read_idle(bitmap, &words)?;
        self.mark_idle(bitmap, &words)?;
        Ok(runs(self.present.iter().filter(|&&(_, e)| {
            let pfn = e & PFN_MASK;
            let w = words.partition_point(|x| x.0 < pfn / 64);
            idle[w] & (1 << (pfn % 64)) == 0
        })))
    }

    /// Soft-dirty bits: the present pages written since the previous scan, as runs; then
    /// the bits cleared (`clear_refs` 4).
    fn soft_dirty_scan(&self) -> Result<Vec<(u64, u64)>, Error> {
        let out = runs(
            self.present
                .iter()
                .filter(|&&(_, e)| e & PAGEMAP_SOFT_DIRTY != 0),
        );
        self.fs
            .write(&format!("/proc/{}/clear_refs", self.pid), "4")?;
        Ok(out)
    }

    /// The idle words for `words`, read in runs (words at most [`WORD_GAP`] apart in one
    /// read).
    fn read_idle(&self, bitmap: &File, words: &[(u64, u64)]) -> Result<Vec<u64>, Error> {
        let mut out = vec![0u64; words.len()];
        let mut i = 0;
        let mut buf: Vec<u8> = Vec::new();
        while i < words.len() {
            let mut j = i + 1;
            while j < words.len() && words[j].0 - words[j - 1].0 <= WORD_GAP {
                j += 1;
            }
            let (first, last) = (words[i].0, words[j - 1].0);
            buf.resize(((last - first + 1) * 8) as usize, 0);
            let got = read_full_at(bitmap, &mut buf, first * 8)
                .map_err(|e| Error::io(&self.fs.path(PAGE_IDLE_BITMAP), "read", e))?;
            for (k, w) in words[i..j].iter().enumerate() {
                let at = ((w.0 - first) * 8) as usize;
                if at + 8 <= got {
                    let b = &buf[at..at + 8];
                    out[i + k] =
                        u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                }
            }
            i = j;
        }
        Ok(out)
    }

    /// Set the idle flag of the process's pages: each run of consecutive words in one write.
    fn mark_idle(&self, bitmap: &File, words: &[(u64, u64)]) -> Result<(), Error> {
        let mut i = 0;
        let mut buf: Vec<u8> = Vec::new();
        while i < words.len() {
            let mut j = i + 1;
            while j < words.len() && words[j].0 == words[j - 1].0 + 1 {
                j += 1;
            }
            buf.clear();
            for w in &words[i..j] {
                buf.extend_from_slice(&w.1.to_ne_bytes());
            }
            bitmap
                .write_all_at(&buf, words[i].0 * 8)
                .map_err(|e| Error::io(&self.fs.path(PAGE_IDLE_BITMAP), "write", e))?;
            i = j;
        }
        Ok(())
    }
}

/// Ascending pages (with their pagemap entries) as runs `[first, end)`.
fn runs<'a>(pages: impl Iterator<Item = &'a (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(page, _) in pages {
        match out.last_mut() {
            Some(run) if run.1 == page => run.1 += 1,
            _ => out.push((page, page + 1)),
        }
    }
    out
}

/// `pread` until `buf` is full or the file ends; the bytes read.
fn read_full_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The calling process's own CPU time (utime + stime), ns: the recorder's overhead.
pub fn self_cpu_ns() -> u64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) } != 0 {
        return 0;
    }
    // SAFETY: initialised by the successful call above (and zeroed before it).
    let ru = unsafe { ru.assume_init() };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fake::FakeTree;

    #[test]
    fn maps_keep_readable_vmas_in_pages() {
        let text = "00400000-00452000 r-xp 00000000 08:01 123 /usr/bin/prog\n\
                    00651000-00652000 ---p 00051000 08:01 123 /usr/bin/prog\n\
                    01a2c000-01a4d000 rw-p 00000000 00:00 0 [heap]\n\
                    7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n\
                    7ffc0000e000-7ffc0002f000 rw-p 00000000 00:00 0 [stack]\n\
                    ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
        let v = parse_maps(text, Path::new("maps")).unwrap();
        let kinds: Vec<VmaKind> = v.iter().map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            vec![VmaKind::File, VmaKind::Heap, VmaKind::Anon, VmaKind::Stack]
        );
        assert_eq!((v[2].start_page, v[2].end_page), (0x7f0000000, 0x7f0000100));
        let e = parse_maps("zz-10 rw-p 0 0 0\n", Path::new("/proc/7/maps")).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn stat_ticks_survive_a_command_with_spaces_and_parentheses() {
        let s = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat_ticks(s), Some(300));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }

    /// A fake process with two pages of one VMA at PFNs 65 and 130 (nodes 0 and 1), and a
    /// bitmap file the test edits as the kernel would.
    fn fake() -> (FakeTree, HostFs) {
        let t = FakeTree::new()
            .file("/proc/7/maps", "00010000-00013000 rw-p 00000000 00:00 0\n")
            .file(
                "/proc/7/stat",
                "7 (p) R 1 7 7 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 5 0 0",
            )
            .file(
                "/proc/7/status",
                "Name:\tp\nVmRSS:\t      8 kB\nThreads:\t3\n",
            )
            .file("/sys/devices/system/memory/block_size_bytes", "2000\n") // 8 KiB = 2 PFNs
            .file("/sys/devices/system/node/node0/memory32/online", "1")
            .file("/sys/devices/system/node/node1/memory65/online", "1")
            .file("/proc/7/pagemap", "")
            .file(PAGE_IDLE_BITMAP, "")
            .file("/proc/7/clear_refs", "");
        let fs = t.fs();
        // Pages 0x10 and 0x12 present at PFNs 65 and 130; 0x11 absent.
        let mut pm = vec![0u8; 0x13 * 8];
        pm[0x10 * 8..0x11 * 8].copy_from_slice(&(PAGEMAP_PRESENT | 65).to_le_bytes());
        pm[0x12 * 8..0x13 * 8].copy_from_slice(&(PAGEMAP_PRESENT | 130).to_le_bytes());
        std::fs::write(fs.path("/proc/7/pagemap"), pm).unwrap();
        std::fs::write(fs.path(PAGE_IDLE_BITMAP), vec![0u8; 8 * 4]).unwrap();
        (t, fs)
    }

    #[test]
    fn a_scan_reports_pages_not_idle_and_marks_them_idle() {
        let (_t, fs) = fake();
        let mut p = Profiler::attach(&fs, 7, Source::PageIdle).unwrap();
        assert_eq!(p.nodes(), 2);
        let (vmas, first) = p.scan().unwrap();
        assert_eq!(vmas.len(), 1);
        // Never marked: both pages read as accessed.
        assert_eq!(first.accessed, vec![(0x10, 0x11), (0x12, 0x13)]);
        assert_eq!(
            (first.node_pages.clone(), first.threads, first.rss_pages),
            (vec![1, 1], 3, 2)
        );
        // The scan set bits 65 (word 1, bit 1) and 130 (word 2, bit 2).
        let bm = std::fs::read(fs.path(PAGE_IDLE_BITMAP)).unwrap();
        let word = |i: usize| u64::from_ne_bytes(bm[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!((word(0), word(1), word(2), word(3)), (0, 1 << 1, 1 << 2, 0));
        // Nothing touched: nothing accessed.
        assert!(p.scan().unwrap().1.accessed.is_empty());
        // The kernel clears PFN 130's flag on an access.
        let mut bm = std::fs::read(fs.path(PAGE_IDLE_BITMAP)).unwrap();
        bm[16..24].copy_from_slice(&0u64.to_ne_bytes());
        std::fs::write(fs.path(PAGE_IDLE_BITMAP), bm).unwrap();
        std::fs::write(
            fs.path("/proc/7/stat"),
            "7 (p) R 1 7 7 0 -1 0 0 0 0 0 30 5 0 0 20 0 1 0 5 0 0",
        )
        .unwrap();
        let (_, third) = p.scan().unwrap();
        assert_eq!(third.accessed, vec![(0x12, 0x13)]);
        assert_eq!(third.cpu_ns, 20 * p.ticks_ns);
    }

    #[test]
    fn soft_dirty_scans_report_the_pages_written_and_clear_the_bits() {
        let (t, fs) = fake();
        let mut p = Profiler::attach(&fs, 7, Source::SoftDirty).unwrap();
        // First scan: both present pages, whatever their bits.
        assert_eq!(
            p.scan().unwrap().1.accessed,
            vec![(0x10, 0x11), (0x12, 0x13)]
        );
        assert_eq!(t.get("/proc/7/clear_refs"), "4");
        assert!(p.scan().unwrap().1.accessed.is_empty());
        let mut pm = std::fs::read(fs.path("/proc/7/pagemap")).unwrap();
        pm[0x10 * 8..0x11 * 8]
            .copy_from_slice(&(PAGEMAP_PRESENT | PAGEMAP_SOFT_DIRTY | 65).to_le_bytes());
        std::fs::write(fs.path("/proc/7/pagemap"), pm).unwrap();
        assert_eq!(p.scan().unwrap().1.accessed, vec![(0x10, 0x11)]);
    }

    #[test]
    fn missing_tracking_and_hidden_pfns_are_named() {
        let (_t, fs) = fake();
        std::fs::remove_file(fs.path(PAGE_IDLE_BITMAP)).unwrap();
        match detect_source(&fs) {
            // This machine's kernel has soft-dirty bits (the probe ran on this process).
            Ok(s) => assert_eq!(s, Source::SoftDirty),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("CONFIG_IDLE_PAGE_TRACKING") && e.contains("CONFIG_MEM_SOFT_DIRTY"),
                    "{e}"
                );
            }
        }
        let (_t, fs) = fake();
        assert_eq!(detect_source(&fs).unwrap(), Source::PageIdle);
        let mut pm = vec![0u8; 0x13 * 8];
        pm[0x10 * 8..0x11 * 8].copy_from_slice(&PAGEMAP_PRESENT.to_le_bytes());
        std::fs::write(fs.path("/proc/7/pagemap"), pm).unwrap();
        let e = Profiler::attach(&fs, 7, Source::PageIdle)
            .unwrap()
            .scan()
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("CAP_SYS_ADMIN"), "{e}");
    }
}
