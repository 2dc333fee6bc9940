//! Access generators for the DAMON evaluation workloads (`workload-models.md` §6):
//! PARSEC3/SPLASH-2X-shaped phases (grow-then-cold, hot+sparse, sweep) and a synthetic
//! workload with known hot regions.
//!
//! A PARSEC-shaped run is a fixed amount of work (a number of accesses): its runtime
//! grows when refaults or slow memory stall it, which is the slowdown the seed reports.
//! Phases are placed on a nominal clock (`access index / total × runtime`), so a page's
//! "hot for 5 s after creation" means 5 s of undisturbed progress.

use std::ops::Range;

use crate::workload::access::{Access, FileIo, FileOp, Step, K_READ, K_WRITE};
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use tiermem_core::damon_workloads::{FileTiming, HotRegionsConfig, ParsecConfig, ParsecShape};

const BATCH: usize = 256;

/// Nominal memory latency used to size a run's work (accesses = runtime / (cpu + this)).
pub const NOMINAL_ACCESS_NS: u64 = 100;

#[inline]
fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((rng.next_u64() >> 32) * n.max(1)) >> 32
}

#[inline]
fn chance(rng: &mut Xoshiro256PlusPlus, p: f64) -> bool {
    ((rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)) < p
}

/// Pages per `read(2)` / `write(2)` call of the file I/O (1 MiB).
const IO_CHUNK: u32 = 256;

/// The files of a PARSEC-shaped run, by number.
const F_ARCHIVE: u8 = 0;
const F_EXTRACTED: u8 = 1;
const F_OUTPUT: u8 = 2;

/// The file I/O around and within a PARSEC-shaped run (docs/seed-004-page-cache.md §1, §3):
/// the harness's `drop_caches`, `parsecmgmt`'s untar of the input archive into the run
/// directory (read a chunk of the archive, write it out), the program's read of the
/// extracted input and the output it writes.
#[derive(Clone, Debug)]
struct FileWork {
    drop_pending: bool,
    input: u32,
    /// Archive pages read by the untar / written out as extracted files.
    untar_read: u32,
    untar_written: u32,
    /// Extracted pages the program has read.
    read: u32,
    input_read: FileTiming,
    output: u32,
    written: u32,
    output_write: FileTiming,
}

impl FileWork {
    fn new(cfg: &ParsecConfig) -> Self {
        FileWork {
            drop_pending: cfg.drop_caches,
            input: cfg.input.pages_ceil().0 as u32,
            untar_read: 0,
            untar_written: 0,
            read: 0,
            input_read: cfg.input_read,
            output: cfg.output.pages_ceil().0 as u32,
            written: 0,
            output_write: cfg.output_write,
        }
    }

    /// A chunk of `file` from `*cursor` up to `due`, advancing the cursor.
    fn chunk(op: FileOp, file: u8, file_pages: u32, cursor: &mut u32, due: u32) -> Option<Step> {
        if *cursor >= due {
            return None;
        }
        let pages = (due - *cursor).min(IO_CHUNK);
        let io = FileIo {
            op,
            file,
            file_pages,
            first: *cursor,
            pages,
        };
        *cursor += pages;
        Some(Step::File(io))
    }

    /// Pages of a `total`-page file due after `done` of `work` units, by `timing`.
    fn due(total: u32, timing: FileTiming, done: u64, work: u64) -> u32 {
        match timing {
            FileTiming::Start => total,
            FileTiming::During => (total as u128 * done as u128 / work.max(1) as u128) as u32,
            FileTiming::End if done >= work => total,
            FileTiming::End => 0,
        }
    }

    /// The harness's cache drop before the run, once.
    fn drop_caches(&mut self) -> Option<Step> {
        std::mem::take(&mut self.drop_pending).then_some(Step::File(FileIo {
            op: FileOp::DropCaches,
            file: 0,
            file_pages: 0,
            first: 0,
            pages: 0,
        }))
    }

    /// Before the run, after the drop: the untar, chunk by chunk.
    fn untar(&mut self) -> Option<Step> {
        let n = self.input;
        if self.untar_written < self.untar_read {
            let due = self.untar_read;
            return Self::chunk(FileOp::Write, F_EXTRACTED, n, &mut self.untar_written, due);
        }
        let due = (self.untar_read + IO_CHUNK).min(n);
        Self::chunk(FileOp::Read, F_ARCHIVE, n, &mut self.untar_read, due)
    }

    /// In the run, after `done` of `work` units: the input reads and output writes due.
    fn in_run(&mut self, done: u64, work: u64) -> Option<Step> {
        let (n, o) = (self.input, self.output);
        let due = Self::due(n, self.input_read, done, work);
        Self::chunk(FileOp::Read, F_EXTRACTED, n, &mut self.read, due).or_else(|| {
            let due = Self::due(o, self.output_write, done, work);
            Self::chunk(FileOp::Write, F_OUTPUT, o, &mut self.written, due)
        })
    }
}

/// One PARSEC-shaped thread.
pub struct ParsecGen {
    shape: ParsecShape,
    /// Pages of the data VMA (the first VMA, PTE base 0).
    pages: u64,
    total: u64,
    done: u64,
    started: bool,
    /// Pages first-touched so far (grow_then_cold) / initialised (others).
    created: u64,
    /// grow_then_cold: pages created per nominal access; hot window in accesses.
    window_accesses: u64,
    grow_accesses: u64,
    warm_from: u64,
    /// grow_then_cold: the revisited pages (just below `warm_from`) and the share of the
    /// accesses that go to them.
    revisit_lo: u64,
    revisit_share: f64,
    hot_lo: u64,
    hot_pages: u64,
    hot_share: f64,
    phases: u64,
    /// sweep: the share of the swept pages in use behind the sweep's position (0: in order).
    band: f64,
    /// sweep: the first page the sweep goes over (the pages below stay idle).
    swept_from: u64,
    /// sweep: whether the swept part shrinks as LU's trailing matrix.
    shrink: bool,
    files: FileWork,
    /// The harness's pages (a VMA after the data area) and how many are touched so far.
    harness: Range<u32>,
    harness_touched: u32,
}

impl ParsecGen {
    /// Accesses a complete run makes: the work plus one first touch per page.
    pub fn total_accesses(cfg: &ParsecConfig) -> u64 {
        let per_access_ps = cfg.cpu_per_access.ps() + NOMINAL_ACCESS_NS * 1000;
        (cfg.runtime.ps() / per_access_ps).max(1) + cfg.rss.pages_ceil().0
    }

    pub fn new(cfg: &ParsecConfig) -> Self {
        let pages = cfg.rss.pages_ceil().0;
        let per_access_ps = cfg.cpu_per_access.ps() + NOMINAL_ACCESS_NS * 1000;
        let total = (cfg.runtime.ps() / per_access_ps).max(1);
        let runtime_ps = cfg.runtime.ps().max(1) as f64;
        let window_accesses = (cfg.hot_window.ps() as f64 / runtime_ps * total as f64) as u64;
        let hot_pages = ((pages as f64 * cfg.hot_frac) as u64).clamp(1, pages);
        let warm_from = ((pages as f64) * cfg.cold_frac) as u64;
        let revisited = ((pages as f64) * cfg.revisit_frac) as u64;
        ParsecGen {
            shape: cfg.shape,
            pages,
            total,
            done: 0,
            started: false,
            created: 0,
            window_accesses: window_accesses.max(1),
            grow_accesses: ((total as f64) * cfg.grow).max(1.0) as u64,
            warm_from,
            revisit_lo: warm_from - revisited.min(warm_from),
            revisit_share: Self::revisit_share(cfg, revisited, total),
            hot_lo: (pages * 2 / 5).min(pages - hot_pages),
            hot_pages,
            hot_share: cfg.hot_share,
            phases: cfg.phases as u64,
            band: cfg.band,
            swept_from: ((pages as f64 * (1.0 - cfg.swept_frac)) as u64).min(pages - 1),
            shrink: cfg.shrink,
            files: FileWork::new(cfg),
            harness: pages as u32..(pages + cfg.harness.pages_ceil().0) as u32,
            harness_touched: 0,
        }
    }

    /// The share of the accesses that touches each of `revisited` pages once per
    /// `revisit_interval` on average: the accesses are spread evenly over the runtime, so a
    /// page drawn with probability share / revisited at `total / runtime` accesses a second
    /// is touched `share · total / (revisited · runtime)` times a second.
    fn revisit_share(cfg: &ParsecConfig, revisited: u64, total: u64) -> f64 {
        if revisited == 0 || cfg.revisit_interval.0 == 0 {
            return 0.0;
        }
        let per_second = revisited as f64 / cfg.revisit_interval.secs_f64();
        let accesses_per_second = total as f64 / cfg.runtime.secs_f64();
        (per_second / accesses_per_second).min(1.0)
    }

    /// Pages that should exist after `done` accesses (grow_then_cold: linear over the
    /// first `grow` share of the run).
    fn target_created(&self) -> u64 {
        match self.shape {
            ParsecShape::GrowThenCold => ((self.done as u128 * self.pages as u128
                / self.grow_accesses as u128) as u64)
                .min(self.pages)
                .max(1),
            _ => self.pages,
        }
    }

    /// The first page a sweep goes over now: `swept_from`, or with `shrink` the start of
    /// LU's trailing matrix after the share of the work done (one cube root a batch).
    fn sweep_start(&self) -> u64 {
        if !self.shrink {
            return self.swept_from;
        }
        let t = self.done as f64 / self.total as f64;
        let done_cols = 1.0 - (1.0 - t).max(0.0).cbrt();
        let swept = self.pages - self.swept_from;
        self.swept_from + ((swept as f64 * done_cols) as u64).min(swept - 1)
    }

    /// The harness's memory comes into use (a batch of first touches at a time), after the
    /// cache drop and before the untar; it is not touched again.
    fn touch_harness(&mut self, out: &mut Vec<Access>) -> Option<Step> {
        let next = self.harness.start + self.harness_touched;
        if next >= self.harness.end {
            return None;
        }
        let end = (next + BATCH as u32).min(self.harness.end);
        out.extend((next..end).map(Access::first_touch));
        self.harness_touched += end - next;
        Some(Step::Accesses)
    }

    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        if !self.started {
            if let Some(step) = self.files.drop_caches() {
                return step;
            }
            if let Some(step) = self.touch_harness(out) {
                return step;
            }
            if let Some(step) = self.files.untar() {
                return step;
            }
            self.started = true;
            return Step::RunStart;
        }
        if let Some(step) = self.files.in_run(self.done, self.total) {
            return step;
        }
        if self.done >= self.total {
            return Step::Done;
        }
        // First touch of the pages due by now (a sequential write, part of the work).
        let due = self.target_created();
        if self.created < due {
            let end = due.min(self.created + BATCH as u64);
            out.extend((self.created..end).map(|p| Access::first_touch(p as u32)));
            self.created = end;
            return Step::Accesses;
        }
        let n = (self.total - self.done).min(BATCH as u64);
        let swept_from = self.sweep_start();
        let band_pages = ((self.pages - swept_from) as f64 * self.band) as u64;
        for _ in 0..n {
            let page = match self.shape {
                ParsecShape::GrowThenCold
                    if self.revisit_share > 0.0
                        && self.created > self.revisit_lo
                        && chance(rng, self.revisit_share) =>
                {
                    let hi = self.created.min(self.warm_from);
                    self.revisit_lo + below(rng, hi - self.revisit_lo)
                }
                ParsecShape::GrowThenCold => {
                    // Pages created within the hot window are "recent".
                    let window_pages = (self.window_accesses as u128 * self.pages as u128
                        / self.grow_accesses as u128)
                        .max(1) as u64;
                    let growing = self.created < self.pages || self.done < self.grow_accesses;
                    let recent_lo = self.created.saturating_sub(window_pages);
                    let warm_hi = self.created;
                    let warm_lo = self.warm_from.min(warm_hi.saturating_sub(1));
                    if growing && chance(rng, self.hot_share) || warm_hi <= warm_lo {
                        recent_lo + below(rng, self.created - recent_lo)
                    } else {
                        warm_lo + below(rng, warm_hi - warm_lo)
                    }
                }
                ParsecShape::HotSparse => {
                    if chance(rng, self.hot_share) {
                        self.hot_lo + below(rng, self.hot_pages)
                    } else {
                        below(rng, self.pages)
                    }
                }
                ParsecShape::Sweep => {
                    let swept = self.pages - swept_from;
                    let at = ((self.done as u128 * self.phases as u128 * swept as u128
                        / self.total as u128)
                        % swept as u128) as u64;
                    let at = if band_pages > 1 {
                        (at + swept - below(rng, band_pages)) % swept
                    } else {
                        at
                    };
                    swept_from + at
                }
            };
            self.done += 1;
            out.push(Access {
                idx: page as u32,
                lines: 1,
                kind: if rng.next_u64() & 3 == 0 {
                    K_WRITE
                } else {
                    K_READ
                },
            });
        }
        Step::Accesses
    }
}

/// The known-hot-regions thread.
pub struct HotRegionsGen {
    pages: u64,
    init_next: Option<u64>,
    started: bool,
    /// Hot page ranges (start page, pages).
    hot: Vec<(u64, u64)>,
    hot_total: u64,
    cold_share: f64,
}

impl HotRegionsGen {
    pub fn new(cfg: &HotRegionsConfig) -> Self {
        let hot: Vec<(u64, u64)> = cfg
            .hot
            .iter()
            .map(|h| {
                (
                    h.offset.0 / tiermem_core::units::PAGE_SIZE,
                    h.size.pages_ceil().0,
                )
            })
            .collect();
        HotRegionsGen {
            pages: cfg.size.pages_ceil().0,
            init_next: cfg.initialize.then_some(0),
            started: false,
            hot_total: hot.iter().map(|h| h.1).sum(),
            hot,
            cold_share: cfg.cold_share,
        }
    }

    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        if let Some(next) = self.init_next {
            let end = (next + BATCH as u64).min(self.pages);
            out.extend((next..end).map(|p| Access::first_touch(p as u32)));
            self.init_next = (end < self.pages).then_some(end);
            return Step::Accesses;
        }
        if !self.started {
            self.started = true;
            return Step::RunStart;
        }
        for _ in 0..BATCH {
            let page = if chance(rng, self.cold_share) {
                below(rng, self.pages)
            } else {
                let mut k = below(rng, self.hot_total);
                let mut page = 0;
                for &(s, n) in &self.hot {
                    if k < n {
                        page = s + k;
                        break;
                    }
                    k -= n;
                }
                page
            };
            out.push(Access {
                idx: page as u32,
                lines: 1,
                kind: K_READ,
            });
        }
        Step::Accesses
    }
}

/// The VMAs of a DAMON-evaluation process: the data area plus two small mappings, so
/// that the vaddr operations find the two gaps of a heap/mmap/stack layout; a PARSEC-shaped
/// run's harness memory (`harness_pages` > 0) is one more mapping after the data area.
pub fn vmas(
    data_pages: u32,
    harness_pages: u32,
) -> Vec<(String, u32, Option<tiermem_core::mempolicy::MemPolicy>)> {
    let mut v = vec![("heap".into(), data_pages, None)];
    if harness_pages > 0 {
        v.push(("harness".into(), harness_pages, None));
    }
    v.push(("mmap".into(), 16, None));
    v.push(("stack".into(), 16, None));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::access::K_STREAM;
    use rand_core::SeedableRng;
    use tiermem_core::units::{Bytes, SimDuration};

    fn cfg(shape: ParsecShape) -> ParsecConfig {
        toml::from_str::<ParsecConfig>(&format!(
            "shape = \"{}\"",
            match shape {
                ParsecShape::GrowThenCold => "grow_then_cold",
                ParsecShape::HotSparse => "hot_sparse",
                ParsecShape::Sweep => "sweep",
            }
        ))
        .map(|mut c| {
            c.rss = Bytes::mib(16);
            c.runtime = SimDuration::from_secs(2);
            c
        })
        .unwrap()
    }

    /// The untar (archive read, extracted files written, chunk by chunk) precedes the run
    /// start; the program reads its input at the start and writes its output at the end.
    #[test]
    fn file_io_brackets_the_run() {
        let mut c = cfg(ParsecShape::Sweep);
        c.input = Bytes::mib(3);
        c.output = Bytes::mib(1);
        let mut g = ParsecGen::new(&c);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut out = Vec::new();
        let mut log = Vec::new();
        loop {
            out.clear();
            match g.next(&mut rng, &mut out) {
                Step::Done => break,
                Step::File(io) => log.push((io.op, io.file, io.first, io.pages)),
                Step::RunStart => log.push((FileOp::DropCaches, 99, 0, 0)),
                _ => {}
            }
        }
        use FileOp::*;
        assert_eq!(
            log,
            vec![
                (DropCaches, 0, 0, 0),
                (Read, 0, 0, 256),
                (Write, 1, 0, 256),
                (Read, 0, 256, 256),
                (Write, 1, 256, 256),
                (Read, 0, 512, 256),
                (Write, 1, 512, 256),
                (DropCaches, 99, 0, 0),
                (Read, 1, 0, 256),
                (Read, 1, 256, 256),
                (Read, 1, 512, 256),
                (Write, 2, 0, 256),
            ]
        );
    }

    /// The harness's pages are first-touched once, after the cache drop and before the
    /// untar, in their own mapping after the data area, and never again.
    #[test]
    fn harness_memory_comes_into_use_before_the_untar_and_stays_idle() {
        let mut c = cfg(ParsecShape::GrowThenCold);
        c.input = Bytes::mib(1);
        c.harness = Bytes::mib(2);
        let data = c.rss.pages_ceil().0 as u32;
        let harness = data..data + 512;
        let mut g = ParsecGen::new(&c);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let (mut out, mut seen, mut order) = (Vec::new(), 0u32, Vec::new());
        loop {
            out.clear();
            let step = g.next(&mut rng, &mut out);
            let in_harness = out.iter().filter(|a| harness.contains(&a.idx)).count() as u32;
            match step {
                Step::Done => break,
                Step::File(io) if order.last() != Some(&io.op) => order.push(io.op),
                Step::Accesses if in_harness > 0 => {
                    assert_eq!(
                        in_harness as usize,
                        out.len(),
                        "a batch of harness touches only"
                    );
                    assert!(out.iter().all(|a| a.kind == K_WRITE | K_STREAM));
                    assert_eq!(
                        order,
                        vec![FileOp::DropCaches],
                        "after the drop, before the untar"
                    );
                    seen += in_harness;
                }
                _ => {}
            }
        }
        assert_eq!(seen, 512, "each harness page touched exactly once");
        let names: Vec<String> = vmas(data, 512).into_iter().map(|v| v.0).collect();
        assert_eq!(names, ["heap", "harness", "mmap", "stack"]);
    }

    fn drain(g: &mut ParsecGen) -> Vec<u64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut out = Vec::new();
        let mut hits = vec![0u64; 4096];
        loop {
            out.clear();
            match g.next(&mut rng, &mut out) {
                Step::Done => break,
                _ => {
                    for a in &out {
                        hits[a.idx as usize] += 1;
                    }
                }
            }
        }
        hits
    }

    /// Runs `g` to the end and calls `f(page, n)` for each access of the work (first
    /// touches left out), `n` counting them from 0; returns how many there were.
    fn each_work_access(g: &mut ParsecGen, mut f: impl FnMut(usize, u64)) -> u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let (mut out, mut n) = (Vec::new(), 0u64);
        loop {
            out.clear();
            if let Step::Done = g.next(&mut rng, &mut out) {
                return n;
            }
            for a in out.iter().filter(|a| a.kind & K_STREAM == 0) {
                f(a.idx as usize, n);
                n += 1;
            }
        }
    }

    #[test]
    fn grow_then_cold_leaves_the_cold_fraction_idle_late() {
        let mut g = ParsecGen::new(&cfg(ParsecShape::GrowThenCold));
        let hits = drain(&mut g);
        assert!(hits.iter().all(|&h| h > 0), "every page is created");
        // Warm half (cold_frac 0.5) gets most accesses after growth.
        let cold: u64 = hits[..2048].iter().sum();
        let warm: u64 = hits[2048..].iter().sum();
        assert!(warm > 2 * cold, "warm {warm} cold {cold}");
    }

    /// Revisited pages (below the warm part) are touched about once per revisit_interval
    /// after the growth; the cold pages below them not at all.
    #[test]
    fn revisited_pages_come_back_once_an_interval() {
        let mut c = cfg(ParsecShape::GrowThenCold);
        c.cold_frac = 0.9;
        c.revisit_frac = 0.4;
        c.revisit_interval = SimDuration::from_ms(500);
        c.grow = 0.05;
        c.hot_window = SimDuration::from_ms(100);
        let mut g = ParsecGen::new(&c);
        let total = ParsecGen::total_accesses(&c);
        let mut late = vec![0u64; 4096];
        each_work_access(&mut g, |page, n| {
            if n > total / 2 {
                late[page] += 1;
            }
        });
        // The last second of the two-second run.
        let (lo, hi) = ((4096.0 * 0.5) as usize, (4096.0 * 0.9) as usize);
        assert!(late[..lo].iter().all(|&h| h == 0), "cold pages stay idle");
        let mean = late[lo..hi].iter().sum::<u64>() as f64 / (hi - lo) as f64;
        assert!(
            (1.7..2.3).contains(&mean),
            "revisits per page in 1 s: {mean}"
        );
        let warm = late[hi..].iter().sum::<u64>() as f64 / (4096 - hi) as f64;
        assert!(warm > 100.0 * mean, "the warm part stays hot: {warm}");
    }

    #[test]
    fn sweep_touches_every_page_each_phase() {
        let mut g = ParsecGen::new(&cfg(ParsecShape::Sweep));
        let hits = drain(&mut g);
        assert!(hits.iter().all(|&h| h >= 10));
    }

    /// With a band, each page is in use while the window passes over it and then rests for
    /// the rest of the pass: the longest rest is (1 − band) of a pass.
    #[test]
    fn a_sweep_band_leaves_each_page_idle_for_the_rest_of_a_pass() {
        let mut c = cfg(ParsecShape::Sweep);
        c.phases = 4;
        c.band = 0.25;
        let mut last = vec![None::<u64>; 4096];
        let mut longest = vec![0u64; 4096];
        let mut hits = vec![0u64; 4096];
        let n = each_work_access(&mut ParsecGen::new(&c), |p, n| {
            if let Some(l) = last[p] {
                longest[p] = longest[p].max(n - l);
            }
            last[p] = Some(n);
            hits[p] += 1;
        });
        let pass = n / 4;
        assert!(
            hits.iter().all(|&h| h >= 4),
            "every page used in every pass"
        );
        // Pages away from the wrap-around rest about 3/4 of a pass between the band's visits.
        for p in [1000, 2000, 3000] {
            let rest = longest[p] as f64 / pass as f64;
            assert!(
                (0.7..0.8).contains(&rest),
                "page {p} rests {rest:.3} of a pass"
            );
        }
    }

    /// A sweep over part of the footprint leaves the first pages idle after their first
    /// touch and goes over every other page in every pass.
    #[test]
    fn a_partial_sweep_leaves_the_first_pages_idle() {
        let mut c = cfg(ParsecShape::Sweep);
        c.swept_frac = 0.25;
        c.band = 0.5;
        let hits = drain(&mut ParsecGen::new(&c));
        assert!(hits[..3072].iter().all(|&h| h == 1), "first touch only");
        assert!(hits[3072..].iter().all(|&h| h >= 10), "swept in each pass");
    }

    /// A shrinking sweep leaves page p of the swept part idle for good once the share
    /// 1 − (1 − p)³ of the work is done (LU's finished columns): the last access to a page
    /// a quarter of the way in comes at about 58 % of the work, halfway in at 88 %.
    #[test]
    fn a_shrinking_sweep_finishes_its_first_pages_first() {
        let mut c = cfg(ParsecShape::Sweep);
        c.band = 1.0;
        c.shrink = true;
        let mut last = vec![0u64; 4096];
        let n = each_work_access(&mut ParsecGen::new(&c), |p, n| last[p] = n);
        for (page, expect) in [(1024, 1.0 - 0.75f64.powi(3)), (2048, 0.875)] {
            let end = last[page] as f64 / n as f64;
            assert!(
                (end - expect).abs() < 0.02,
                "page {page}: last use at {end:.3}"
            );
        }
        assert!(
            last[4095] as f64 / n as f64 > 0.99,
            "the last page is used to the end"
        );
    }

    #[test]
    fn hot_sparse_concentrates_on_the_hot_set() {
        let mut g = ParsecGen::new(&cfg(ParsecShape::HotSparse));
        let hits = drain(&mut g);
        let hot: u64 = hits[1638..1638 + 204].iter().sum();
        let all: u64 = hits.iter().sum();
        assert!(hot as f64 > 0.85 * all as f64);
    }
}
