//! The CPU caches in front of memory for replayed accesses (`type = "trace"`).
//!
//! Per simulated thread: a private L1d and L2 and its share of the last-level cache, each
//! set-associative with least-recently-used replacement, write-back and write-allocate,
//! 64-byte lines (`[machine.caches]`, `tiermem_core::caches`).
//!
//! * **Hierarchy.** Non-inclusive without back-invalidation (Intel since Skylake-SP, AMD
//!   since Zen): a miss fills every level; a level's victim is dropped if clean and written
//!   into the level below if dirty; only a dirty LLC victim is a write-back to memory.
//! * **Prefetch.** An L2 stream prefetcher in the manner of Intel's "streamer": it watches
//!   the L1 misses of each 4 KiB page (up to [`STREAMS`] pages at once, least recently used
//!   replaced); after two misses to adjacent lines in one direction it fetches the next
//!   `prefetch_distance` lines of that page into L2 and the LLC, and keeps that far ahead
//!   while the stream goes on. It never crosses a page (Intel Optimization Reference
//!   Manual, "Data Prefetching"). The L1 next-line and the L2 adjacent-line prefetchers are
//!   not modelled.
//! * **Sharing.** The LLC is shared by `llc_cores` cores; the threads of one replayed
//!   program on those cores each get an equal share of its sets (`share`), and other
//!   workloads take none. Threads' private data then behaves as on hardware; data the
//!   threads share hits less often than it would (each share holds its own copy), and
//!   coherence traffic is not modelled.
//! * **Tags.** Lines are named by the process's virtual page index and the line in the
//!   page, so a page migrated or reclaimed while its lines are cached keeps them (on
//!   hardware the new frame's lines miss once); a write-back of a page no longer mapped is
//!   dropped.
//!
//! Every access still touches its page's PTE (accessed and dirty bits, NUMA hint faults,
//! DAMON's sampling see it): the trace replay hands hits to the engine as touches
//! (`lines = 0`) and only misses, prefetches and write-backs as memory traffic.

use tiermem_core::caches::{CacheLevel, Hierarchy, LINE};

/// Pages the stream prefetcher tracks at once (Intel's L2 streamer: 32 streams, one per
/// 4 KiB page; 16 keeps the table's linear search short and covers the programs replayed).
pub const STREAMS: usize = 16;

/// Where an access was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    Llc,
    Memory,
}

/// One set-associative cache: `tags[set * ways ..][..ways]`, most recently used first.
/// A tag is `(line + 1) << 1 | dirty`; 0 is an empty way.
#[derive(Clone, Debug)]
struct SetAssoc {
    ways: usize,
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the index is then a mask).
    mask: Option<u64>,
    tags: Vec<u64>,
}

impl SetAssoc {
    fn new(size: u64, ways: u32) -> SetAssoc {
        let ways = ways.max(1) as usize;
        let sets = (size / (LINE * ways as u64)).max(1);
        SetAssoc {
            ways,
            sets,
            mask: sets.is_power_of_two().then(|| sets - 1),
            tags: vec![0; sets as usize * ways],
        }
    }

    #[inline]
    fn set(&mut self, line: u64) -> &mut [u64] {
        let s = match self.mask {
            Some(m) => line & m,
            None => line % self.sets,
        } as usize;
        &mut self.tags[s * self.ways..(s + 1) * self.ways]
    }

    /// A hit moves the line to the front (and marks it dirty on `write`).
    #[inline]
    fn probe(&mut self, line: u64, write: bool) -> bool {
        let want = (line + 1) << 1;
        let set = self.set(line);
        let Some(w) = set.iter().position(|&t| t & !1 == want) else {
            return false;
        };
        let tag = set[w] | write as u64;
        set.copy_within(0..w, 1);
        set[0] = tag;
        true
    }

    /// Insert a line that is not present at the front; the evicted line and whether it
    /// was dirty.
    #[inline]
    fn insert(&mut self, line: u64, dirty: bool) -> Option<(u64, bool)> {
        let set = self.set(line);
        let last = set[set.len() - 1];
        set.copy_within(0..set.len() - 1, 1);
        set[0] = (line + 1) << 1 | dirty as u64;
        (last != 0).then(|| ((last >> 1) - 1, last & 1 == 1))
    }

    /// Mark a present line dirty or insert it dirty (a dirty victim from the level above).
    fn absorb(&mut self, line: u64) -> Option<(u64, bool)> {
        if self.probe(line, true) {
            None
        } else {
            self.insert(line, true)
        }
    }

    fn present(&mut self, line: u64) -> bool {
        let want = (line + 1) << 1;
        self.set(line).iter().any(|&t| t & !1 == want)
    }
}

/// One prefetch stream: a page, the last line missed in it, the direction seen, and how
/// far ahead it has fetched.
#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    page: u64,
    last: u8,
    dir: i8,
    trained: bool,
    /// Next line to fetch (in the stream's direction); 64 or -1 when the page is done.
    next: i16,
    used: u64,
}

/// Counts of a thread's cache, for the workload report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    pub l1_hits: u64,
    pub l2_hits: u64,
    pub llc_hits: u64,
    /// Demand misses: lines read from memory for an access.
    pub misses: u64,
    /// Lines the stream prefetcher read from memory.
    pub prefetched: u64,
    /// Dirty lines written back to memory.
    pub writebacks: u64,
}

impl CacheStats {
    pub fn add(&mut self, o: &CacheStats) {
        self.l1_hits += o.l1_hits;
        self.l2_hits += o.l2_hits;
        self.llc_hits += o.llc_hits;
        self.misses += o.misses;
        self.prefetched += o.prefetched;
        self.writebacks += o.writebacks;
    }
}

/// What one line access did beyond its hit or miss: lines read from memory by the
/// prefetcher (all in the accessed page) and lines written back (anywhere).
#[derive(Debug, Default)]
pub struct Effects {
    pub prefetched: u32,
    pub writebacks: Vec<u64>,
}

/// One thread's caches.
#[derive(Clone, Debug)]
pub struct Caches {
    l1: SetAssoc,
    l2: SetAssoc,
    llc: SetAssoc,
    prefetch: bool,
    distance: i16,
    streams: [Stream; STREAMS],
    clock: u64,
    /// Hit latencies, ps.
    pub l2_ps: u64,
    pub llc_ps: u64,
    pub stats: CacheStats,
}

impl Caches {
    /// A thread's caches: its own L1d and L2 and `1 / share` of the LLC.
    pub fn new(cfg: &Hierarchy, share: u32) -> Caches {
        let share = share.max(1) as u64;
        let llc = CacheLevel {
            size: tiermem_core::units::Bytes(
                (cfg.llc.size.0 / share).max(LINE * cfg.llc.ways as u64),
            ),
            ..cfg.llc
        };
        Caches {
            l1: SetAssoc::new(cfg.l1d.size.0, cfg.l1d.ways),
            l2: SetAssoc::new(cfg.l2.size.0, cfg.l2.ways),
            llc: SetAssoc::new(llc.size.0, llc.ways),
            prefetch: cfg.prefetch,
            distance: cfg.prefetch_distance as i16,
            streams: [Stream::default(); STREAMS],
            clock: 0,
            l2_ps: cfg.l2.latency.ps(),
            llc_ps: cfg.llc.latency.ps(),
            stats: CacheStats::default(),
        }
    }

    /// Host bytes the caches of one thread take (before allocating them).
    pub fn host_bytes(cfg: &Hierarchy, share: u32) -> u64 {
        let lines = cfg.l1d.size.0 + cfg.l2.size.0 + cfg.llc.size.0 / share.max(1) as u64;
        lines / LINE * 8
    }

    /// One access to `line` (page index × 64 + line in the page). Prefetches and
    /// write-backs it caused are added to `fx`.
    #[inline]
    pub fn access(&mut self, line: u64, write: bool, fx: &mut Effects) -> Level {
        if self.l1.probe(line, write) {
            self.stats.l1_hits += 1;
            return Level::L1;
        }
        let level = if self.l2.probe(line, false) {
            self.stats.l2_hits += 1;
            Level::L2
        } else if self.llc.probe(line, false) {
            self.stats.llc_hits += 1;
            self.fill_l2(line, fx);
            Level::Llc
        } else {
            self.stats.misses += 1;
            self.fill_llc(line, false, fx);
            self.fill_l2(line, fx);
            Level::Memory
        };
        if let Some((v, true)) = self.l1.insert(line, write) {
            self.write_down_l2(v, fx);
        }
        if self.prefetch {
            self.train(line, fx);
        }
        level
    }

    fn fill_l2(&mut self, line: u64, fx: &mut Effects) {
        if let Some((v, true)) = self.l2.insert(line, false) {
            self.write_down_llc(v, fx);
        }
    }

    fn fill_llc(&mut self, line: u64, dirty: bool, fx: &mut Effects) {
        if let Some((v, true)) = self.llc.insert(line, dirty) {
            self.stats.writebacks += 1;
            fx.writebacks.push(v);
        }
    }

    fn write_down_l2(&mut self, line: u64, fx: &mut Effects) {
        if let Some((v, true)) = self.l2.absorb(line) {
            self.write_down_llc(v, fx);
        }
    }

    fn write_down_llc(&mut self, line: u64, fx: &mut Effects) {
        if let Some((v, true)) = self.llc.absorb(line) {
            self.stats.writebacks += 1;
            fx.writebacks.push(v);
        }
    }

    /// The streamer sees an L1 miss to `line`.
    fn train(&mut self, line: u64, fx: &mut Effects) {
        self.clock += 1;
        let (page, at) = (line >> 6, (line & 63) as i16);
        let slot = match self.streams.iter().position(|s| s.page == page + 1) {
            Some(i) => i,
            None => {
                let (i, _) = self
                    .streams
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, s)| s.used)
                    .unwrap_or((0, &self.streams[0]));
                self.streams[i] = Stream {
                    page: page + 1,
                    last: at as u8,
                    dir: 0,
                    trained: false,
                    next: 0,
                    used: self.clock,
                };
                return;
            }
        };
        let s = &mut self.streams[slot];
        s.used = self.clock;
        let step = at - s.last as i16;
        s.last = at as u8;
        match step {
            0 => return,
            1 | -1 => {
                if !s.trained || s.dir as i16 != step {
                    s.trained = true;
                    s.dir = step as i8;
                    s.next = at + step;
                }
            }
            _ => {
                // Not adjacent: train again from here.
                s.trained = false;
                return;
            }
        }
        let dir = s.dir as i16;
        let horizon = at + dir * self.distance;
        // Never behind the demand stream.
        let mut next = if dir > 0 {
            s.next.max(at + 1)
        } else {
            s.next.min(at - 1)
        };
        let mut fetched = 0u32;
        while (0..64).contains(&next) && (next - horizon) * dir <= 0 {
            let l = page << 6 | next as u64;
            if !self.l2.present(l) {
                if !self.llc.probe(l, false) {
                    fetched += 1;
                    self.fill_llc(l, false, fx);
                }
                self.fill_l2(l, fx);
            }
            next += dir;
        }
        self.streams[slot].next = next;
        self.stats.prefetched += fetched as u64;
        fx.prefetched += fetched;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::units::{Bytes, SimDuration};

    fn cfg(prefetch: bool) -> Hierarchy {
        let lvl = |size: u64, ways| CacheLevel {
            size: Bytes(size),
            ways,
            latency: SimDuration::from_ns(5),
        };
        Hierarchy {
            enabled: true,
            l1d: lvl(32 << 10, 8),
            l2: lvl(256 << 10, 8),
            llc: lvl(1 << 20, 16),
            llc_cores: 1,
            prefetch,
            prefetch_distance: 16,
        }
    }

    fn run(c: &mut Caches, lines: impl Iterator<Item = u64>, write: bool) -> (Vec<Level>, Effects) {
        let mut fx = Effects::default();
        let levels = lines.map(|l| c.access(l, write, &mut fx)).collect();
        (levels, fx)
    }

    #[test]
    fn a_working_set_inside_l1_misses_once_per_line() {
        let mut c = Caches::new(&cfg(false), 1);
        for _ in 0..10 {
            run(&mut c, 0..256, false); // 16 KiB
        }
        assert_eq!(c.stats.misses, 256);
        assert_eq!(c.stats.l1_hits, 9 * 256);
    }

    #[test]
    fn a_set_larger_than_the_llc_misses_every_time_under_lru() {
        let mut c = Caches::new(&cfg(false), 1);
        let lines = (2 << 20) / 64; // 2 MiB cycled through a 1 MiB LLC
        for _ in 0..3 {
            run(&mut c, 0..lines, false);
        }
        assert_eq!(c.stats.misses, 3 * lines);
    }

    #[test]
    fn a_share_of_the_llc_holds_less() {
        let lines = (768 << 10) / 64;
        let mut whole = Caches::new(&cfg(false), 1);
        let mut half = Caches::new(&cfg(false), 2);
        for _ in 0..3 {
            run(&mut whole, 0..lines, false);
            run(&mut half, 0..lines, false);
        }
        assert_eq!(whole.stats.misses, lines);
        assert_eq!(half.stats.misses, 3 * lines);
    }

    #[test]
    fn dirty_lines_are_written_back_once_when_they_leave_the_llc() {
        let mut c = Caches::new(&cfg(false), 1);
        let lines = (4 << 20) / 64;
        let (_, fx) = run(&mut c, 0..lines, true);
        // Everything but what the three levels still hold has been written back, once.
        let mut wb = fx.writebacks.clone();
        wb.sort_unstable();
        wb.dedup();
        assert_eq!(wb.len(), fx.writebacks.len());
        let held = (32 + 256 + 1024) * 1024 / 64;
        assert!(
            fx.writebacks.len() as u64 >= lines - held && fx.writebacks.len() as u64 <= lines,
            "{} write-backs",
            fx.writebacks.len()
        );
        // Reads write nothing back.
        let mut r = Caches::new(&cfg(false), 1);
        let (_, fx) = run(&mut r, 0..lines, false);
        assert!(fx.writebacks.is_empty());
    }

    #[test]
    fn the_streamer_fetches_ahead_of_a_sequential_scan_within_each_page() {
        let mut c = Caches::new(&cfg(true), 1);
        let pages = 64u64;
        let (levels, fx) = run(&mut c, 0..pages * 64, false);
        let demand = levels.iter().filter(|&&l| l == Level::Memory).count() as u64;
        // Two demand misses train each page's stream; the prefetcher brings the rest.
        assert_eq!(demand, 2 * pages);
        assert_eq!(c.stats.prefetched, 62 * pages);
        assert_eq!(fx.prefetched as u64, 62 * pages);
        // Descending works too.
        let mut d = Caches::new(&cfg(true), 1);
        let (levels, _) = run(&mut d, (0..64).rev(), false);
        assert_eq!(levels.iter().filter(|&&l| l == Level::Memory).count(), 2);
    }

    #[test]
    fn random_lines_train_no_stream() {
        let mut c = Caches::new(&cfg(true), 1);
        let mut x = 12345u64;
        let lines = (0..20_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (64 << 20) / 64
        });
        run(&mut c, lines, false);
        assert!(c.stats.prefetched < 200, "{}", c.stats.prefetched);
    }
}
