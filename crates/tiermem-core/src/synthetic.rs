//! The synthetic workload (`type = "synthetic"`): anonymous regions with a placement step,
//! per-region access patterns at fixed rates, idle filler and KSM content.
//!
//! It is the one workload both substrates run from the same file: the simulator builds it
//! as a process (`tiermem sim`), and `tiermem workload run` builds it on a live Linux host
//! with `mmap`, `mbind`, pinned threads and real loads and stores. Validation scenarios
//! (`tiermem validate`) are written with it, so that a kernel recording and a simulated run
//! describe the same program. The page samplers and the region schedule below are shared
//! code: both substrates draw pages and interleave regions exactly the same way.
//!
//! The lifecycle both substrates follow:
//!
//! 1. the process maps every region (one VMA each, in order);
//! 2. **placement**: each region with `place` gets it as its VMA policy (`mbind`), every
//!    region is populated in order (one store per page, with its KSM content), then each
//!    region's VMA policy becomes its `mbind` (or none: the task policy applies);
//!    `ksm` regions are marked `MADV_MERGEABLE`;
//! 3. at time 0 the kernel knobs take effect and the access threads start, pinned to
//!    `cpu_node`: each thread accesses the active regions in the order of
//!    [`RegionSchedule`], at the regions' `rate` (threads spin between accesses, so they
//!    use their CPU continuously, as the NUMA scanner's CPU-time clock assumes) or as fast
//!    as possible.
//!
//! ```
//! use tiermem_core::synthetic::{PageSampler, Pattern};
//! let s = PageSampler::new(Pattern::HotCold { hot_fraction: 0.1, hot_share: 1.0 }, 1000);
//! // every draw lands in the first 100 pages
//! assert!((0..1000u64).all(|i| s.sample(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i) < 100));
//! ```

use crate::mempolicy::MemPolicy;
use crate::units::{Bytes, NodeId, SimDuration, PAGE_SIZE};
use serde::{Deserialize, Serialize};

/// The most regions one synthetic workload may have.
pub const MAX_REGIONS: usize = 64;
/// The most threads one synthetic workload may have.
pub const MAX_THREADS: u32 = 256;
/// The highest total access rate of one thread (accesses per second).
pub const MAX_RATE_PER_S: f64 = 1e9;

/// `type = "synthetic"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticConfig {
    /// Name in reports and timeline columns. Default `synthetic<i>`.
    #[serde(default)]
    pub name: Option<String>,
    /// Access threads, all pinned to `cpu_node`. Default 1.
    #[serde(default = "one")]
    pub threads: u32,
    /// The node whose CPUs the threads run on. Default: the first node with CPUs.
    #[serde(default)]
    pub cpu_node: Option<NodeId>,
    /// Task memory policy (`set_mempolicy`) for the whole run, including the population
    /// of regions without `place`. Default: the default (local) policy.
    #[serde(default)]
    pub policy: MemPolicy,
    /// Percentage of accesses that are loads (the rest are stores). Default 100.
    #[serde(default = "hundred")]
    pub read_ratio: u32,
    /// When the access threads start (the regions are mapped and populated at 0).
    /// Default 0.
    #[serde(default)]
    pub start: SimDuration,
    /// How long the access threads run. Default: until the run ends.
    #[serde(default)]
    pub duration: Option<SimDuration>,
    /// CPU time per access besides the memory access itself, for accesses without a
    /// `rate`. Default: the machine's `cpu_per_access`.
    #[serde(default)]
    pub cpu_per_access: Option<SimDuration>,
    /// The regions, mapped in this order.
    pub regions: Vec<RegionConfig>,
}

/// One anonymous region (`[[workloads.regions]]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionConfig {
    /// Region name (letters, digits, `_` and `-`), unique in the workload.
    pub name: String,
    /// Size, rounded up to whole pages.
    pub size: Bytes,
    /// Policy while the region is populated (its VMA policy during placement), e.g.
    /// `{ mode = "bind", nodes = [1] }`. Default: none (the task policy places it).
    #[serde(default)]
    pub place: Option<MemPolicy>,
    /// The region's VMA policy (`mbind` without `MPOL_MF_MOVE`) after placement: it decides
    /// later allocations and NUMA-balancing migrations (`mpol_misplaced`). Default none.
    #[serde(default)]
    pub mbind: Option<MemPolicy>,
    /// Whether the region is populated (one store per page) before time 0. Default true.
    #[serde(default = "yes")]
    pub populate: bool,
    /// Access pattern: `uniform`, `gaussian`, `hotcold`, `zipf`, or `idle` (filler that is
    /// populated and never touched again). Default `idle`.
    #[serde(default)]
    pub pattern: PatternKind,
    /// `gaussian`: standard deviation as a fraction of the region, centred. Default 0.1.
    #[serde(default)]
    pub sigma: Option<f64>,
    /// `hotcold`: the fraction of the region's pages (its start) that is hot. Default 0.1.
    #[serde(default)]
    pub hot_fraction: Option<f64>,
    /// `hotcold`: the share of accesses that go to the hot pages. Default 0.9.
    #[serde(default)]
    pub hot_share: Option<f64>,
    /// `zipf`: the exponent s (page of rank r, from the region's start, is drawn with
    /// probability ∝ r^−s). Default 1.0.
    #[serde(default)]
    pub exponent: Option<f64>,
    /// Accesses per second by each thread to this region. Either every active region has
    /// a rate or none has (then threads run as fast as they can).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Without rates: this region's share of each thread's accesses, relative to the other
    /// active regions. Default 1.
    #[serde(default)]
    pub weight: Option<f64>,
    /// KSM content: the region is `MADV_MERGEABLE` and filled with `identical` pages (the
    /// same content as every other `identical` region), `identical_within_region` pages
    /// (one content per region) or `unique` pages. Default: not mergeable (unique content).
    #[serde(default)]
    pub ksm: Option<KsmContent>,
}

/// A region's access pattern name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    #[default]
    Idle,
    Uniform,
    Gaussian,
    Hotcold,
    Zipf,
}

/// What a KSM region's pages hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KsmContent {
    /// Every page of every `identical` region holds the same bytes.
    Identical,
    /// Every page of this region holds the same bytes, different from other regions'.
    IdenticalWithinRegion,
    /// Every page differs from every other.
    Unique,
}

fn one() -> u32 {
    1
}
fn hundred() -> u32 {
    100
}
fn yes() -> bool {
    true
}

/// A pattern with its parameters resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    Uniform,
    /// Normal around the centre with σ = `sigma` × pages; draws outside fold back by
    /// reflection off the region's ends.
    Gaussian {
        sigma: f64,
    },
    /// The first `hot_fraction` of the pages takes `hot_share` of the accesses, uniformly;
    /// the rest is uniform over the other pages.
    HotCold {
        hot_fraction: f64,
        hot_share: f64,
    },
    /// Rank r (1-based, page r − 1) with probability ∝ r^−exponent.
    Zipf {
        exponent: f64,
    },
}

impl RegionConfig {
    /// Pages of the region.
    pub fn pages(&self) -> u64 {
        self.size.0.div_ceil(PAGE_SIZE)
    }

    /// The resolved pattern, `None` for an idle region.
    pub fn pattern(&self) -> Option<Pattern> {
        Some(match self.pattern {
            PatternKind::Idle => return None,
            PatternKind::Uniform => Pattern::Uniform,
            PatternKind::Gaussian => Pattern::Gaussian {
                sigma: self.sigma.unwrap_or(0.1),
            },
            PatternKind::Hotcold => Pattern::HotCold {
                hot_fraction: self.hot_fraction.unwrap_or(0.1),
                hot_share: self.hot_share.unwrap_or(0.9),
            },
            PatternKind::Zipf => Pattern::Zipf {
                exponent: self.exponent.unwrap_or(1.0),
            },
        })
    }

    fn check(&self, nr_nodes: usize) -> Result<(), (String, String)> {
        let err = |k: &str, m: String| Err((k.to_string(), m));
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return err(
                "name",
                format!("{:?}: use letters, digits, `_` and `-`", self.name),
            );
        }
        if self.size.0 < PAGE_SIZE || self.pages() > (1 << 30) {
            return err("size", "must be within 4KiB..4TiB".into());
        }
        for (k, p) in [("place", &self.place), ("mbind", &self.mbind)] {
            if let Some(p) = p {
                p.validate(nr_nodes).map_err(|m| (k.to_string(), m))?;
            }
        }
        let kind = self.pattern;
        let only = |k: &str, set: bool, for_kind: PatternKind| -> Result<(), (String, String)> {
            if set && kind != for_kind {
                return err(
                    k,
                    format!("applies to pattern {for_kind:?} only").to_lowercase(),
                );
            }
            Ok(())
        };
        only("sigma", self.sigma.is_some(), PatternKind::Gaussian)?;
        only(
            "hot_fraction",
            self.hot_fraction.is_some(),
            PatternKind::Hotcold,
        )?;
        only("hot_share", self.hot_share.is_some(), PatternKind::Hotcold)?;
        only("exponent", self.exponent.is_some(), PatternKind::Zipf)?;
        let frac = |k: &str, v: Option<f64>, open_zero: bool| -> Result<(), (String, String)> {
            match v {
                Some(x) if !(x.is_finite() && x <= 1.0 && (x > 0.0 || !open_zero && x == 0.0)) => {
                    err(
                        k,
                        format!(
                            "must be within {}..1 (got {x})",
                            if open_zero { "(0" } else { "0" }
                        ),
                    )
                }
                _ => Ok(()),
            }
        };
        frac("sigma", self.sigma, true)?;
        frac("hot_fraction", self.hot_fraction, true)?;
        frac("hot_share", self.hot_share, false)?;
        if let Some(e) = self.exponent {
            if !(e.is_finite() && e > 0.0 && e <= 10.0) {
                return err("exponent", format!("must be within (0..10] (got {e})"));
            }
        }
        if kind == PatternKind::Idle && (self.rate.is_some() || self.weight.is_some()) {
            return err(
                if self.rate.is_some() {
                    "rate"
                } else {
                    "weight"
                },
                "an idle region is never accessed: set a pattern".into(),
            );
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0 && r <= MAX_RATE_PER_S) {
                return err(
                    "rate",
                    format!("must be within (0..1e9] accesses/s (got {r})"),
                );
            }
        }
        if let Some(w) = self.weight {
            if !(w.is_finite() && w > 0.0 && w <= 1e6) {
                return err("weight", format!("must be within (0..1e6] (got {w})"));
            }
        }
        if self.ksm.is_some() && !self.populate {
            return err(
                "ksm",
                "a KSM region must be populated (its content is written then)".into(),
            );
        }
        Ok(())
    }
}

impl SyntheticConfig {
    /// Field checks; errors name the key relative to the workload (`regions[1].rate`).
    /// Node ids of `cpu_node` and `policy` are checked by the caller.
    pub fn validate(&self, nr_nodes: usize) -> Result<(), (String, String)> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(("threads".into(), format!("must be within 1..{MAX_THREADS}")));
        }
        if self.read_ratio > 100 {
            return Err((
                "read_ratio".into(),
                format!("is a percentage 0..100 (got {})", self.read_ratio),
            ));
        }
        if self.regions.is_empty() || self.regions.len() > MAX_REGIONS {
            return Err((
                "regions".into(),
                format!("give 1..{MAX_REGIONS} regions ([[workloads.regions]])"),
            ));
        }
        for (j, r) in self.regions.iter().enumerate() {
            r.check(nr_nodes)
                .map_err(|(k, m)| (format!("regions[{j}].{k}"), m))?;
            if let Some(d) = self.regions[..j].iter().position(|o| o.name == r.name) {
                return Err((
                    format!("regions[{j}].name"),
                    format!("{:?} is also the name of regions[{d}]", r.name),
                ));
            }
        }
        let active: Vec<usize> = self.active_regions();
        let rated = active
            .iter()
            .filter(|&&j| self.regions[j].rate.is_some())
            .count();
        if rated != 0 && rated != active.len() {
            let j = active
                .iter()
                .copied()
                .find(|&j| self.regions[j].rate.is_none())
                .unwrap_or(0);
            return Err((
                format!("regions[{j}].rate"),
                "missing: either every accessed region has a rate or none has".into(),
            ));
        }
        if rated > 0 {
            if let Some(j) = active
                .iter()
                .copied()
                .find(|&j| self.regions[j].weight.is_some())
            {
                return Err((
                    format!("regions[{j}].weight"),
                    "regions with a rate have no weight (the rates set the mix)".into(),
                ));
            }
            let total: f64 = active.iter().filter_map(|&j| self.regions[j].rate).sum();
            if total > MAX_RATE_PER_S {
                return Err((
                    "regions".into(),
                    format!("the rates add up to {total} accesses/s per thread (at most 1e9)"),
                ));
            }
        }
        Ok(())
    }

    /// Indices of the regions that are accessed (pattern other than `idle`).
    pub fn active_regions(&self) -> Vec<usize> {
        (0..self.regions.len())
            .filter(|&j| self.regions[j].pattern != PatternKind::Idle)
            .collect()
    }

    /// Whether the threads run at fixed rates.
    pub fn paced(&self) -> bool {
        self.regions.iter().any(|r| r.rate.is_some())
    }

    /// Accesses per second of one thread over all regions (`None` when unpaced).
    pub fn thread_rate(&self) -> Option<f64> {
        self.paced()
            .then(|| self.regions.iter().filter_map(|r| r.rate).sum())
    }

    /// The schedule of one thread over the active regions (rates, or weights).
    pub fn schedule(&self) -> RegionSchedule {
        let active = self.active_regions();
        let shares = active
            .iter()
            .map(|&j| {
                let r = &self.regions[j];
                r.rate.or(r.weight).unwrap_or(1.0)
            })
            .collect();
        RegionSchedule::new(active, shares)
    }
}

/// The order in which one thread visits its active regions: each region `i` with share
/// `s_i` gets its k-th access at virtual time k / s_i; the region due first goes next (ties
/// by region order). With rates as shares, access n of the thread is issued at the n-th of
/// the merged due times; the substrates pace the thread at the total rate, so each region
/// gets its own rate on average.
#[derive(Clone, Debug)]
pub struct RegionSchedule {
    regions: Vec<usize>,
    inv_share: Vec<f64>,
    count: Vec<u64>,
}

impl RegionSchedule {
    pub fn new(regions: Vec<usize>, shares: Vec<f64>) -> Self {
        let n = regions.len();
        RegionSchedule {
            regions,
            inv_share: shares.iter().map(|s| 1.0 / s).collect(),
            count: vec![0; n],
        }
    }

    /// Each scheduled region with the fraction of the thread's accesses it gets.
    pub fn fractions(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        let total: f64 = self.inv_share.iter().map(|i| 1.0 / i).sum();
        self.regions
            .iter()
            .zip(&self.inv_share)
            .map(move |(&j, i)| (j, 1.0 / i / total))
    }

    /// Whether there is any region to access.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The region (index into the workload's `regions`) of the next access.
    pub fn next_region(&mut self) -> usize {
        let mut best = 0;
        let mut best_due = f64::INFINITY;
        for i in 0..self.regions.len() {
            let due = (self.count[i] + 1) as f64 * self.inv_share[i];
            if due < best_due {
                best_due = due;
                best = i;
            }
        }
        self.count[best] += 1;
        self.regions[best]
    }
}

/// Draws page indices of one region from 64-bit random numbers (the substrates bring their
/// own generators). Pure and allocation-free after construction.
#[derive(Clone, Debug)]
pub struct PageSampler {
    pattern: Pattern,
    pages: u64,
    zipf: Option<ZipfInv>,
}

/// A uniform double in [0, 1) from the top 53 bits.
#[inline]
pub fn unit(r: u64) -> f64 {
    (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform index in [0, n) (Lemire's multiply-shift on the top 32 bits for n < 2^32,
/// 128-bit otherwise).
#[inline]
pub fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}

impl PageSampler {
    pub fn new(pattern: Pattern, pages: u64) -> Self {
        let zipf = match pattern {
            Pattern::Zipf { exponent } => Some(ZipfInv::new(pages, exponent)),
            _ => None,
        };
        PageSampler {
            pattern,
            pages: pages.max(1),
            zipf,
        }
    }

    /// One page index in `[0, pages)`. `r1` and `r2` are independent 64-bit random numbers
    /// (the second is used only by patterns that need two: Gaussian, hot/cold, Zipf).
    #[inline]
    pub fn sample(&self, r1: u64, r2: u64) -> u64 {
        let n = self.pages;
        match self.pattern {
            Pattern::Uniform => below(r1, n),
            Pattern::Gaussian { sigma } => {
                // Box-Muller from two uniforms; out-of-range draws fold back by reflection
                // off the region's ends (keeps the draw O(1) and the shape symmetric).
                let u1 = unit(r1).max(f64::MIN_POSITIVE);
                let u2 = unit(r2);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = n as f64 / 2.0 + z * sigma * n as f64;
                let period = 2.0 * n as f64;
                let mut y = x.rem_euclid(period);
                if y >= n as f64 {
                    y = period - y - f64::EPSILON;
                }
                (y as u64).min(n - 1)
            }
            Pattern::HotCold {
                hot_fraction,
                hot_share,
            } => {
                let hot = ((n as f64 * hot_fraction).round() as u64).clamp(1, n);
                if unit(r1) < hot_share || hot == n {
                    below(r2, hot)
                } else {
                    hot + below(r2, n - hot)
                }
            }
            Pattern::Zipf { .. } => match &self.zipf {
                Some(z) => z.sample(unit(r1), unit(r2)) - 1,
                None => 0,
            },
        }
    }

    /// The pages drawn from (`[0, pages)`).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// The exact distribution of [`PageSampler::sample`]: for each page, the probability
    /// that one draw picks it (the page-event engine derives when a page is next touched
    /// from it). Cost: one pass over the pages (Gaussian: a few erfc per page).
    pub fn pmf(&self) -> Vec<f64> {
        let n = self.pages;
        match self.pattern {
            Pattern::Uniform => vec![1.0 / n as f64; n as usize],
            Pattern::Gaussian { sigma } => gaussian_pmf(n, sigma),
            Pattern::HotCold {
                hot_fraction,
                hot_share,
            } => {
                let hot = ((n as f64 * hot_fraction).round() as u64).clamp(1, n);
                if hot == n {
                    return vec![1.0 / n as f64; n as usize];
                }
                let (h, c) = (hot_share / hot as f64, (1.0 - hot_share) / (n - hot) as f64);
                (0..n).map(|i| if i < hot { h } else { c }).collect()
            }
            Pattern::Zipf { exponent } => {
                // Rejection-inversion draws the exact law: rank r ∝ r^−s.
                let w: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-exponent)).collect();
                let total: f64 = w.iter().sum();
                w.into_iter().map(|x| x / total).collect()
            }
        }
    }
}

/// P(a ≤ x < b) for x ~ N(mean, sd), from the tail nearer to the interval (erfc keeps the
/// far tails' precision where a difference of CDFs near 1 would lose it).
pub fn normal_mass(a: f64, b: f64, mean: f64, sd: f64) -> f64 {
    let r = std::f64::consts::FRAC_1_SQRT_2 / sd;
    let (za, zb) = ((a - mean) * r, (b - mean) * r);
    if za >= 0.0 {
        0.5 * (libm::erfc(za) - libm::erfc(zb))
    } else {
        0.5 * (libm::erfc(-zb) - libm::erfc(-za))
    }
}

/// The Gaussian draw's page distribution: x = n/2 + z·σ·n folded into `[0, n)` by
/// reflection off the ends (period 2n), so page i collects the normal mass of
/// `[i, i + 1)` and of its mirror `(2n − i − 1, 2n − i]`, shifted by every multiple of 2n.
fn gaussian_pmf(n: u64, sigma: f64) -> Vec<f64> {
    let (nf, sd) = (n as f64, (sigma * n as f64).max(f64::MIN_POSITIVE));
    let mass = |a: f64, b: f64| normal_mass(a, b, nf / 2.0, sd);
    // Images beyond 10 σ carry nothing a float can hold.
    let images = ((10.0 * sd / (2.0 * nf)).ceil() as i64).max(1);
    (0..n)
        .map(|i| {
            let i = i as f64;
            (-images..=images)
                .map(|k| {
                    let shift = 2.0 * nf * k as f64;
                    mass(i + shift, i + 1.0 + shift)
                        + mass(2.0 * nf - i - 1.0 + shift, 2.0 * nf - i + shift)
                })
                .sum()
        })
        .collect()
}

/// Zipf ranks 1..=n by rejection-inversion (Hörmann and Derflinger, "Rejection-inversion to
/// generate variates from monotone discrete distributions", ACM TOMACS 6(3), 1996): O(1)
/// per draw for any n, with an acceptance rate close to 1.
#[derive(Clone, Debug)]
struct ZipfInv {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    threshold: f64,
}

impl ZipfInv {
    fn new(n: u64, s: f64) -> Self {
        let mut z = ZipfInv {
            n: n.max(1) as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            threshold: 0.0,
        };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(z.n + 0.5);
        z.threshold = 2.0 - z.h_inv(z.h(2.5) - 2f64.powf(-s));
        z
    }

    /// H(x) = ∫ x^−s: ((x^(1−s)) − 1)/(1 − s), or ln x when s = 1.
    fn h(&self, x: f64) -> f64 {
        let t = (1.0 - self.s) * x.ln();
        x.ln() * helper_expm1_over(t)
    }

    fn h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0 + 1e-300);
        (y * helper_log1p_over(t)).exp()
    }

    fn sample(&self, u1: f64, u2: f64) -> u64 {
        // Up to a few rounds; a rejected round draws its successor from a hash of its
        // own numbers (a fixed shift of `a` would move the rejected mass onto a fixed set
        // of ranks and bias the law), so the draw stays a pure function of (u1, u2).
        let (mut a, mut b) = (u1, u2);
        for round in 0..16u64 {
            if round > 0 {
                let seed = a.to_bits() ^ b.to_bits().rotate_left(29) ^ round;
                a = unit(splitmix64(seed));
                b = unit(splitmix64(seed ^ 0x9E37_79B9_7F4A_7C15));
            }
            let u = self.h_n + a * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h(k + 0.5) - k.powf(-self.s) {
                return k as u64;
            }
        }
        1
    }
}

/// SplitMix64's output function (Steele, Lea and Flood, OOPSLA 2014): a bijective mix of
/// 64 bits.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// (e^t − 1)/t, continuous at t = 0.
fn helper_expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.exp_m1() / t
    } else {
        1.0 + t / 2.0 + t * t / 6.0
    }
}

/// ln(1 + t)/t, continuous at t = 0.
fn helper_log1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.ln_1p() / t
    } else {
        1.0 - t / 2.0 + t * t / 3.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut z = x;
            z ^= z >> 33;
            z = z.wrapping_mul(0xff51afd7ed558ccd);
            z ^ (z >> 33)
        }
    }

    fn histogram(p: Pattern, pages: u64, draws: usize) -> Vec<u64> {
        let s = PageSampler::new(p, pages);
        let mut r = lcg(7);
        let mut h = vec![0u64; pages as usize];
        for _ in 0..draws {
            let i = s.sample(r(), r());
            h[i as usize] += 1;
        }
        h
    }

    #[test]
    fn hotcold_puts_the_hot_share_on_the_hot_fraction() {
        let h = histogram(
            Pattern::HotCold {
                hot_fraction: 0.2,
                hot_share: 0.8,
            },
            100,
            200_000,
        );
        let hot: u64 = h[..20].iter().sum();
        let share = hot as f64 / 200_000.0;
        assert!((share - 0.8).abs() < 0.01, "{share}");
    }

    #[test]
    fn gaussian_is_centred_with_the_given_sigma() {
        let n = 10_000u64;
        let s = PageSampler::new(Pattern::Gaussian { sigma: 0.05 }, n);
        let mut r = lcg(3);
        let xs: Vec<f64> = (0..100_000).map(|_| s.sample(r(), r()) as f64).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 5000.0).abs() < 20.0, "{mean}");
        assert!((sd - 500.0).abs() < 10.0, "{sd}");
        // A wide Gaussian stays inside the region.
        let s = PageSampler::new(Pattern::Gaussian { sigma: 1.0 }, 10);
        assert!((0..10_000).all(|_| s.sample(r(), r()) < 10));
    }

    #[test]
    fn zipf_ranks_follow_the_power_law() {
        let n = 1000u64;
        let h = histogram(Pattern::Zipf { exponent: 1.0 }, n, 500_000);
        // P(rank 1) = 1 / H_1000 ≈ 1/7.485.
        let p1 = h[0] as f64 / 500_000.0;
        assert!((p1 - 1.0 / 7.485).abs() < 0.004, "{p1}");
        // rank 1 : rank 10 ≈ 10.
        let ratio = h[0] as f64 / h[9] as f64;
        assert!((ratio - 10.0).abs() < 1.0, "{ratio}");
        let h = histogram(Pattern::Zipf { exponent: 0.5 }, 100, 200_000);
        let ratio = h[0] as f64 / h[3] as f64; // (4/1)^0.5 = 2
        assert!((ratio - 2.0).abs() < 0.15, "{ratio}");
    }

    /// Each pattern's `pmf` against a histogram of its own draws (χ²-like: every page
    /// within 5 standard errors, and the masses add up to one).
    #[test]
    fn pmf_is_the_law_of_the_draws() {
        let draws = 400_000;
        for (p, n) in [
            (Pattern::Uniform, 50),
            (Pattern::Gaussian { sigma: 0.1 }, 200),
            (Pattern::Gaussian { sigma: 0.7 }, 40),
            (
                Pattern::HotCold {
                    hot_fraction: 0.1,
                    hot_share: 0.9,
                },
                100,
            ),
            (Pattern::Zipf { exponent: 1.0 }, 300),
            (Pattern::Zipf { exponent: 0.6 }, 100),
        ] {
            let pmf = PageSampler::new(p, n).pmf();
            let total: f64 = pmf.iter().sum();
            assert!((total - 1.0).abs() < 1e-9, "{p:?}: {total}");
            let h = histogram(p, n, draws);
            for (i, (&c, &q)) in h.iter().zip(&pmf).enumerate() {
                let expect = q * draws as f64;
                let se = expect.max(1.0).sqrt();
                assert!(
                    (c as f64 - expect).abs() < 5.0 * se + 2.0,
                    "{p:?} page {i}: {c} drawn, {expect:.1} expected"
                );
            }
        }
    }

    #[test]
    fn uniform_covers_every_page() {
        let h = histogram(Pattern::Uniform, 64, 64_000);
        assert!(h.iter().all(|&c| (800..1200).contains(&c)), "{h:?}");
    }

    #[test]
    fn schedule_interleaves_by_share() {
        let mut s = RegionSchedule::new(vec![3, 5], vec![3000.0, 1000.0]);
        let picks: Vec<usize> = (0..8).map(|_| s.next_region()).collect();
        assert_eq!(picks, vec![3, 3, 3, 5, 3, 3, 3, 5]);
    }

    fn cfg(text: &str) -> Result<SyntheticConfig, String> {
        let c: SyntheticConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate(2).map_err(|(k, m)| format!("{k}: {m}"))?;
        Ok(c)
    }

    #[test]
    fn validation_names_the_key() {
        let ok = cfg("[[regions]]\nname = \"hot\"\nsize = \"64MiB\"\npattern = \"uniform\"\nrate = 1000\n[[regions]]\nname = \"filler\"\nsize = \"1GiB\"\n");
        assert!(ok.is_ok(), "{ok:?}");
        let e = cfg("[[regions]]\nname = \"a\"\nsize = \"1MiB\"\npattern = \"uniform\"\nrate = 10\n[[regions]]\nname = \"b\"\nsize = \"1MiB\"\npattern = \"uniform\"\n").unwrap_err();
        assert!(e.starts_with("regions[1].rate"), "{e}");
        let e =
            cfg("[[regions]]\nname = \"a\"\nsize = \"1MiB\"\npattern = \"uniform\"\nsigma = 0.1\n")
                .unwrap_err();
        assert!(e.starts_with("regions[0].sigma"), "{e}");
        let e = cfg("[[regions]]\nname = \"a\"\nsize = \"1MiB\"\n[[regions]]\nname = \"a\"\nsize = \"1MiB\"\n").unwrap_err();
        assert!(e.contains("also the name"), "{e}");
        let e = cfg("[[regions]]\nname = \"a b\"\nsize = \"1MiB\"\n").unwrap_err();
        assert!(e.starts_with("regions[0].name"), "{e}");
        let e = cfg("[[regions]]\nname = \"a\"\nsize = \"1MiB\"\nplace = { mode = \"bind\", nodes = [7] }\n").unwrap_err();
        assert!(e.starts_with("regions[0].place"), "{e}");
    }
}
