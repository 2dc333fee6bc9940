//! XSBench (ANL-CESAR, unionized grid, `workload-models.md` §4): the access generator.
//!
//! Three regions, allocated in XSBench's order: the unionized energy array
//! (`n_iso·n_gp` doubles), the index grid (`n_iso·n_gp·n_iso` ints, which dominates) and
//! the nuclide grid (`n_iso·n_gp` records of 48 bytes). Every thread first writes its
//! share of the three grids (the parallel initialisation, which also first-touches them),
//! waits at a barrier, then performs its lookups. One lookup:
//!
//! 1. draws an energy `E ~ U[0,1)` and a material by volume fraction;
//! 2. binary-searches `E` in the energy array: one dependent one-line read per level below
//!    the `cached_levels` that stay in cache (memory-level parallelism 1);
//! 3. reads the lines of the index-grid row that hold the material's nuclides;
//! 4. reads two adjacent grid points (two lines) at a uniform position inside each nuclide's
//!    segment of the nuclide grid.
//!
//! Steps 3–4 are independent loads the core overlaps (the streaming MLP of
//! [`crate::workload::access::STREAM_MLP`] lines, within the 8–16 of the model's assumption).
//! The figure of merit is lookups per second over the lookup phase.

use crate::workload::access::{Access, Step, K_READ, K_STREAM};
use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::Arc;
use tiermem_core::config::{XsbenchConfig, XsbenchSize};
use tiermem_core::units::{LINE_SIZE, PAGE_SIZE};

/// Volume fractions of the 12 materials (XSBench `Materials.c`, `workload-models.md` §4):
/// fuel, cladding, cold water, hot water, RPV, reflectors, plates, nozzles (and two more
/// 21-nuclide structures), FA top, FA bottom.
const FRACTIONS: [f64; 12] = [
    0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013,
];
/// Nuclides per material (large/XL; small has 34 in fuel).
const COUNTS: [u32; 12] = [321, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];

/// The problem's shape, shared by all threads.
pub struct XsLayout {
    pub n_iso: u64,
    pub n_gp: u64,
    /// PTE bases of the energy array, index grid and nuclide grid.
    pub base: [u32; 3],
    /// Pages of each region.
    pub pages: [u32; 3],
    /// Sorted nuclide ids of each material.
    materials: Vec<Vec<u32>>,
    /// Cumulative volume fractions.
    cum: [f64; 12],
    levels: u32,
}

impl XsLayout {
    /// Region sizes in bytes: energy, index, nuclide.
    pub fn region_bytes(cfg: &XsbenchConfig) -> [u64; 3] {
        let (n_iso, gp) = cfg.size.dims();
        let n_gp = cfg.gridpoints.unwrap_or(gp);
        let n = n_iso * n_gp;
        [n * 8, n * n_iso * 4, n * 48]
    }

    pub fn new(cfg: &XsbenchConfig, base: [u32; 3]) -> Self {
        let (n_iso, gp) = cfg.size.dims();
        let n_gp = cfg.gridpoints.unwrap_or(gp);
        let bytes = Self::region_bytes(cfg);
        let pages = bytes.map(|b| b.div_ceil(PAGE_SIZE) as u32);
        let n_fuel = if cfg.size == XsbenchSize::Small {
            34
        } else {
            321
        } as u32;
        // Fuel holds the first n_fuel nuclides; the other materials draw from the rest
        // (the water, boron and structural nuclides), so those nuclides are shared by many
        // materials, as the page-popularity note of workload-models.md §4 says.
        let pool: Vec<u32> = (n_fuel..n_iso as u32).collect();
        let mut materials = vec![(0..n_fuel).collect::<Vec<u32>>()];
        for (m, &c) in COUNTS.iter().enumerate().skip(1) {
            let mut v: Vec<u32> = (0..c as usize)
                .map(|j| pool[(j * 7 + m * 3) % pool.len()])
                .collect();
            v.sort_unstable();
            v.dedup();
            materials.push(v);
        }
        let mut cum = [0.0; 12];
        let mut acc = 0.0;
        let total: f64 = FRACTIONS.iter().sum();
        for (i, f) in FRACTIONS.iter().enumerate() {
            acc += f / total;
            cum[i] = acc;
        }
        let n = n_iso * n_gp;
        XsLayout {
            n_iso,
            n_gp,
            base,
            pages,
            materials,
            cum,
            levels: 64 - (n - 1).leading_zeros(),
        }
    }

    /// Mean nuclides per lookup.
    pub fn mean_nuclides(&self) -> f64 {
        let mut prev = 0.0;
        let mut s = 0.0;
        for (i, m) in self.materials.iter().enumerate() {
            s += (self.cum[i] - prev) * m.len() as f64;
            prev = self.cum[i];
        }
        s
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Init { region: usize, next: u32 },
    Sync,
    Start,
    Lookups,
    Done,
}

/// One XSBench thread.
pub struct XsbenchGen {
    layout: Arc<XsLayout>,
    thread: u32,
    threads: u32,
    cached_levels: u32,
    lookups_left: u64,
    phase: Phase,
}

impl XsbenchGen {
    pub fn new(layout: Arc<XsLayout>, cfg: &XsbenchConfig, thread: u32) -> Self {
        let t = cfg.threads as u64;
        let lookups = cfg.lookups / t + u64::from((thread as u64) < cfg.lookups % t);
        XsbenchGen {
            layout,
            thread,
            threads: cfg.threads,
            cached_levels: cfg.cached_levels,
            lookups_left: lookups,
            phase: Phase::Init { region: 0, next: 0 },
        }
    }

    /// This thread's page range of a region (static OpenMP schedule).
    fn chunk(&self, region: usize) -> (u32, u32) {
        let p = self.layout.pages[region] as u64;
        let t = self.threads as u64;
        let i = self.thread as u64;
        ((p * i / t) as u32, (p * (i + 1) / t) as u32)
    }

    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) -> Step {
        match self.phase {
            Phase::Init { region, next } => {
                if region >= 3 {
                    self.phase = Phase::Sync;
                    return self.next(rng, out);
                }
                let (first, end) = self.chunk(region);
                let start = next.max(first);
                if start >= end {
                    self.phase = Phase::Init {
                        region: region + 1,
                        next: 0,
                    };
                    return self.next(rng, out);
                }
                let stop = (start + 256).min(end);
                out.extend(
                    (start..stop).map(|p| Access::first_touch(self.layout.base[region] + p)),
                );
                self.phase = Phase::Init { region, next: stop };
                Step::Accesses
            }
            Phase::Sync => {
                self.phase = Phase::Start;
                Step::Barrier
            }
            Phase::Start => {
                self.phase = Phase::Lookups;
                Step::RunStart
            }
            Phase::Lookups => {
                if self.lookups_left == 0 {
                    self.phase = Phase::Done;
                    return Step::Done;
                }
                while self.lookups_left > 0 && out.len() < 192 {
                    self.lookup(rng, out);
                    self.lookups_left -= 1;
                }
                Step::Accesses
            }
            Phase::Done => Step::Done,
        }
    }

    fn lookup(&self, rng: &mut Xoshiro256PlusPlus, out: &mut Vec<Access>) {
        let l = &*self.layout;
        let unit = |r: u64| (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let e = unit(rng.next_u64());
        let mu = unit(rng.next_u64());
        let mat = l.cum.iter().position(|&c| mu < c).unwrap_or(11);
        let n = l.n_iso * l.n_gp;
        let idx = ((e * n as f64) as u64).min(n - 1);
        // Binary search: the probe of level k is the middle of idx's interval at that level.
        for k in self.cached_levels.min(l.levels)..l.levels {
            let shift = l.levels - k - 1;
            let probe = (((idx >> (shift + 1)) << (shift + 1)) + (1 << shift)).min(n - 1);
            out.push(Access {
                idx: l.base[0] + (probe * 8 / PAGE_SIZE) as u32,
                lines: 1,
                kind: K_READ,
            });
        }
        // The index-grid row of idx: the lines holding the material's nuclides, per page.
        let nucs = &l.materials[mat];
        let row = idx * l.n_iso * 4;
        let mut cur_page = u64::MAX;
        let mut last_line = u64::MAX;
        let mut lines = 0u8;
        for &nuc in nucs {
            let byte = row + nuc as u64 * 4;
            let line = byte / LINE_SIZE;
            if line == last_line {
                continue;
            }
            last_line = line;
            let page = byte / PAGE_SIZE;
            if page != cur_page {
                if lines > 0 {
                    out.push(Access {
                        idx: l.base[1] + cur_page as u32,
                        lines,
                        kind: K_READ | K_STREAM,
                    });
                }
                cur_page = page;
                lines = 0;
            }
            lines += 1;
        }
        if lines > 0 {
            out.push(Access {
                idx: l.base[1] + cur_page as u32,
                lines,
                kind: K_READ | K_STREAM,
            });
        }
        // Two adjacent grid points of each nuclide, uniform inside its segment.
        for &nuc in nucs {
            let j = ((rng.next_u64() >> 32) * (l.n_gp - 1)) >> 32;
            let byte = (nuc as u64 * l.n_gp + j) * 48;
            out.push(Access {
                idx: l.base[2] + (byte / PAGE_SIZE) as u32,
                lines: 2,
                kind: K_READ | K_STREAM,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn cfg(size: &str) -> XsbenchConfig {
        let v: toml::Value =
            toml::from_str(&format!("size = \"{size}\"\nthreads = 2\nlookups = 1000\n")).unwrap();
        tiermem_core::config::typed(v, "x").unwrap()
    }

    #[test]
    fn sizes_and_mean_nuclides_match_the_model() {
        let c = cfg("large");
        let b = XsLayout::region_bytes(&c);
        // workload-models.md §4: index grid 5.70 GB, nuclide grid 193 MB for large.
        assert!((b[1] as f64 / 1e9 - 5.70).abs() < 0.01, "{}", b[1]);
        assert!((b[2] as f64 / 1e6 - 192.6).abs() < 1.0, "{}", b[2]);
        let l = XsLayout::new(&c, [0, 1, 2]);
        assert!(
            (l.mean_nuclides() - 55.7).abs() < 0.5,
            "{}",
            l.mean_nuclides()
        );
        assert_eq!(l.levels, 22);
        let xl = XsLayout::region_bytes(&cfg("xl"));
        assert!((xl.iter().sum::<u64>() as f64 / 1e9 - 125.0).abs() < 1.0);
    }

    #[test]
    fn lookups_stay_inside_their_regions_and_end() {
        let mut c = cfg("small");
        c.gridpoints = Some(1000);
        let l = XsLayout::new(&c, [0, 0, 0]);
        let pages = l.pages;
        let base = [0, pages[0], pages[0] + pages[1]];
        let l = Arc::new(XsLayout::new(&c, base));
        let mut g = XsbenchGen::new(l, &c, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut out = Vec::new();
        let total: u32 = pages.iter().sum();
        let mut steps = Vec::new();
        loop {
            out.clear();
            let s = g.next(&mut rng, &mut out);
            for a in &out {
                assert!(a.idx < total);
                assert!(a.lines >= 1 && a.lines <= 64);
            }
            if s != Step::Accesses {
                steps.push(s);
            }
            if s == Step::Done {
                break;
            }
        }
        assert_eq!(steps, vec![Step::Barrier, Step::RunStart, Step::Done]);
    }
}
