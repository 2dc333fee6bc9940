//! Workloads for the DAMON evaluation (`workload-models.md` §6): PARSEC3/SPLASH-2X-shaped
//! access models and a synthetic workload with known hot regions.

use crate::units::{Bytes, NodeId, SimDuration, PAGE_SIZE};
use serde::{Deserialize, Serialize};

/// The phase shapes of `workload-models.md` §6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParsecShape {
    /// First touch at rss/(grow·runtime) per second; each page stays hot for `hot_window`
    /// after it is created; a `1 − cold_frac` share of the footprint stays warm throughout;
    /// with `revisit_frac`, part of the cold footprint is touched again now and then.
    GrowThenCold,
    /// A hot `hot_frac` of the footprint takes most accesses; the rest is touched sparsely
    /// and uniformly.
    HotSparse,
    /// Every page swept sequentially, `phases` times per run; with a `band`, the pages of a
    /// window of that share of the swept part, moving with the sweep, are accessed at random.
    Sweep,
}

/// `type = "parsec"`: a PARSEC3/SPLASH-2X-shaped single-threaded workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParsecConfig {
    /// Name in reports (e.g. `splash2x/radiosity`). Default `parsec<i>`.
    #[serde(default)]
    pub name: Option<String>,
    pub shape: ParsecShape,
    /// Resident set size. Default 256 MiB.
    #[serde(default = "d_rss")]
    pub rss: Bytes,
    /// Nominal runtime without interference: sets the amount of work. Default 10 s.
    #[serde(default = "d_runtime")]
    pub runtime: SimDuration,
    /// Fraction of the footprint idle for long periods (the published RSS cut). Default 0.5.
    #[serde(default = "d_cold")]
    pub cold_frac: f64,
    /// grow_then_cold: how long a new page stays hot. Default 5 s.
    #[serde(default = "d_window")]
    pub hot_window: SimDuration,
    /// hot_sparse: the hot fraction of the footprint. Default 0.05.
    #[serde(default = "d_hot_frac")]
    pub hot_frac: f64,
    /// Share of accesses that go to the hot part (recent pages, hot set). Default 0.9.
    #[serde(default = "d_hot_share")]
    pub hot_share: f64,
    /// grow_then_cold: the share of the run over which the footprint is first touched.
    /// Default 0.3.
    #[serde(default = "d_grow")]
    pub grow: f64,
    /// grow_then_cold: the share of the footprint, taken from the cold part just below the
    /// warm part, that is touched again after its hot window: single touches at random,
    /// each page about once per `revisit_interval` (a program walking its structures now and
    /// then, which DAMON's region sampling barely sees but which makes paged-out pages come
    /// back). Must not exceed `cold_frac`. Default 0.
    #[serde(default)]
    pub revisit_frac: f64,
    /// grow_then_cold: the mean time between two touches of one revisited page. Needed when
    /// `revisit_frac` is above 0.
    #[serde(default)]
    pub revisit_interval: SimDuration,
    /// sweep: passes over the footprint per run. Default 10.
    #[serde(default = "d_phases")]
    pub phases: u32,
    /// sweep: the share of the swept part in use at a time, a window that moves through it
    /// with the sweep and is accessed at random (a time-stepping program working through its
    /// particles or cells, seen in DAMON's heatmaps as a diagonal band). Default 0: each page
    /// touched once a pass, in order.
    #[serde(default)]
    pub band: f64,
    /// sweep: the share of the footprint the sweep goes over; the rest (the first pages) is
    /// written once when the run starts and then left idle. Default 1.
    #[serde(default = "d_one")]
    pub swept_frac: f64,
    /// sweep: the swept part shrinks as an LU factorisation's trailing matrix does: after a
    /// share t of the work, its first 1 − (1 − t)^(1/3) (the finished columns: step k of n
    /// costs (n − k)², so t = 1 − (1 − k/n)³) is left idle for good. Default false.
    #[serde(default)]
    pub shrink: bool,
    /// CPU time per access. Default 100 ns.
    #[serde(default = "d_cpa")]
    pub cpu_per_access: SimDuration,
    /// Default: the first node with CPUs.
    #[serde(default)]
    pub cpu_node: Option<NodeId>,
    /// Default 0.
    #[serde(default)]
    pub start: SimDuration,
    /// The harness's `sync; echo 3 > /proc/sys/vm/drop_caches` before the run (damon-tests'
    /// start runner, docs/seed-004-page-cache.md §3). Default true.
    #[serde(default = "d_true")]
    pub drop_caches: bool,
    /// Size of the native input archive. Before the run, `parsecmgmt` untars it into a fresh
    /// run directory (the archive read, the same amount written as files); the program then
    /// reads the extracted copy (docs/seed-004-page-cache.md §1). Default 0 (no input file).
    #[serde(default)]
    pub input: Bytes,
    /// When the program reads its extracted input. Default `start`.
    #[serde(default)]
    pub input_read: FileTiming,
    /// Size of the output the program writes. Default 0.
    #[serde(default)]
    pub output: Bytes,
    /// When the program writes its output. Default `end`.
    #[serde(default = "d_end")]
    pub output_write: FileTiming,
    /// Memory the benchmark harness brings into use at the start of each run and then
    /// leaves idle: its shell and script processes (`parsecmgmt`, the runners) and the page
    /// cache of the binaries they read again after the `drop_caches`. Counted in memused
    /// like the program's own memory, and as idle as memory gets, so what a physical-address
    /// reclaimer takes first. Modelled as a mapping of the program's process, first-touched
    /// once after the cache drop, before the untar. Default 0.
    #[serde(default)]
    pub harness: Bytes,
    /// How well the program's anonymous data compresses when it is paged out to zram: the
    /// bytes paged out over their compressed size (zero-filled pages take nothing; zram's
    /// allocator adds about 3 % at hundreds of MiB, not modelled). It sets how much memory
    /// a pageout of the program's data frees; its `harness` memory keeps the device's
    /// ratio. Measured for a program with `scripts/reaccess-probe.py`'s zram columns
    /// (`scripts/reaccess-stats.py` prints it). Default: the device's
    /// `kernel.zram.compression_ratio`.
    #[serde(default)]
    pub compression_ratio: Option<f64>,
}

/// When a PARSEC-shaped program does its file I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileTiming {
    /// All of it when the run starts (loading the input).
    #[default]
    Start,
    /// Spread over the run, in step with the work (streaming frames, images).
    During,
    /// All of it when the work is done (writing the results).
    End,
}

fn d_one() -> f64 {
    1.0
}
fn d_grow() -> f64 {
    0.3
}
fn d_true() -> bool {
    true
}
fn d_end() -> FileTiming {
    FileTiming::End
}

/// One hot range of a [`HotRegionsConfig`], relative to the start of the data VMA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotRange {
    pub offset: Bytes,
    pub size: Bytes,
}

/// `type = "hotregions"`: uniform accesses to known hot ranges of a large data area, a
/// small share of uniform accesses to the rest (the ground truth for accuracy tests).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HotRegionsConfig {
    pub name: Option<String>,
    /// Data area size. Default 1 GiB.
    pub size: Bytes,
    /// The hot ranges. Default: 64 MiB at 256 MiB and 32 MiB at 768 MiB.
    pub hot: Vec<HotRange>,
    /// Share of accesses to the cold remainder. Default 0.02.
    pub cold_share: f64,
    /// Write the whole area first (so every page is resident). Default true.
    pub initialize: bool,
    /// Default 100 ns.
    pub cpu_per_access: SimDuration,
    pub cpu_node: Option<NodeId>,
    /// Run for this long after initialisation; default: until the end of the simulation.
    pub duration: Option<SimDuration>,
    pub start: SimDuration,
}

impl Default for HotRegionsConfig {
    fn default() -> Self {
        HotRegionsConfig {
            name: Default::default(),
            size: Bytes::gib(1),
            hot: d_hot(),
            cold_share: 0.02,
            initialize: true,
            cpu_per_access: SimDuration::from_ns(100),
            cpu_node: Default::default(),
            duration: Default::default(),
            start: Default::default(),
        }
    }
}

fn d_rss() -> Bytes {
    Bytes::mib(256)
}
fn d_runtime() -> SimDuration {
    SimDuration::from_secs(10)
}
fn d_cold() -> f64 {
    0.5
}
fn d_window() -> SimDuration {
    SimDuration::from_secs(5)
}
fn d_hot_frac() -> f64 {
    0.05
}
fn d_hot_share() -> f64 {
    0.9
}
fn d_phases() -> u32 {
    10
}
fn d_cpa() -> SimDuration {
    SimDuration::from_ns(100)
}

fn d_hot() -> Vec<HotRange> {
    vec![
        HotRange {
            offset: Bytes::mib(256),
            size: Bytes::mib(64),
        },
        HotRange {
            offset: Bytes::mib(768),
            size: Bytes::mib(32),
        },
    ]
}

impl ParsecConfig {
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        if self.rss.0 < 16 * PAGE_SIZE || self.rss.pages_ceil().0 > u32::MAX as u64 / 4 {
            return e("rss", "must be within 64KiB..4TiB");
        }
        if self.runtime.0 == 0 {
            return e("runtime", "must be positive");
        }
        for (k, v) in [
            ("cold_frac", self.cold_frac),
            ("hot_frac", self.hot_frac),
            ("hot_share", self.hot_share),
            ("band", self.band),
            ("swept_frac", self.swept_frac),
            ("grow", self.grow),
            ("revisit_frac", self.revisit_frac),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return e(k, "must be within 0..1");
            }
        }
        if self.phases == 0 {
            return e("phases", "must be positive");
        }
        if self.shape != ParsecShape::Sweep {
            if self.band > 0.0 {
                return e("band", "applies to shape = \"sweep\" only");
            }
            if self.swept_frac < 1.0 {
                return e("swept_frac", "applies to shape = \"sweep\" only");
            }
            if self.shrink {
                return e("shrink", "applies to shape = \"sweep\" only");
            }
        }
        if self.shape != ParsecShape::GrowThenCold {
            for (k, set) in [
                ("grow", self.grow != d_grow()),
                ("revisit_frac", self.revisit_frac > 0.0),
                ("revisit_interval", self.revisit_interval.0 > 0),
            ] {
                if set {
                    return e(k, "applies to shape = \"grow_then_cold\" only");
                }
            }
        }
        if self.grow <= 0.0 {
            return e("grow", "must be within (0, 1]");
        }
        if self.revisit_frac > self.cold_frac {
            return e(
                "revisit_frac",
                "must not exceed cold_frac (it is part of the cold footprint)",
            );
        }
        if self.revisit_frac > 0.0 && self.revisit_interval.0 == 0 {
            return e(
                "revisit_interval",
                "must be given (positive) when revisit_frac is above 0",
            );
        }
        if self.swept_frac <= 0.0 {
            return e("swept_frac", "must be within (0, 1]");
        }
        if let Some(r) = self.compression_ratio {
            // A compressed page takes at least one byte of the pool.
            if !(1.0..=4096.0).contains(&r) {
                return e("compression_ratio", "must be within 1.0..4096.0");
            }
        }
        if self.cpu_per_access.0 == 0 {
            return e("cpu_per_access", "must be positive");
        }
        for (k, v) in [
            ("input", self.input),
            ("output", self.output),
            ("harness", self.harness),
        ] {
            if v.pages_ceil().0 > u32::MAX as u64 / 4 {
                return e(k, "must be within 0..4TiB");
            }
        }
        Ok(())
    }
}

impl HotRegionsConfig {
    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        if self.size.0 < 16 * PAGE_SIZE || self.size.pages_ceil().0 > u32::MAX as u64 / 4 {
            return e("size", "must be within 64KiB..4TiB");
        }
        if self.hot.is_empty() {
            return e("hot", "needs at least one hot range");
        }
        for (i, h) in self.hot.iter().enumerate() {
            if h.size.0 < PAGE_SIZE || h.offset.0 + h.size.0 > self.size.0 {
                return e(&format!("hot[{i}]"), "must lie within size and hold a page");
            }
        }
        if !(0.0..=1.0).contains(&self.cold_share) {
            return e("cold_share", "must be within 0..1");
        }
        if self.cpu_per_access.0 == 0 {
            return e("cpu_per_access", "must be positive");
        }
        Ok(())
    }

    /// Whether a page of the data area is in a hot range (the ground truth).
    pub fn is_hot_page(&self, page: u64) -> bool {
        let b = page * PAGE_SIZE;
        self.hot
            .iter()
            .any(|h| b >= h.offset.0 && b < h.offset.0 + h.size.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsec(toml_text: &str) -> Result<(), (String, String)> {
        toml::from_str::<ParsecConfig>(toml_text)
            .expect("parses")
            .validate()
    }

    /// The sweep's band, swept share and shrink, and grow_then_cold's growth and revisits,
    /// are checked and refused for other shapes, naming the key.
    #[test]
    fn sweep_keys_are_checked() {
        assert_eq!(
            parsec("shape = \"sweep\"\nband = 0.5\nswept_frac = 0.5\nshrink = true"),
            Ok(())
        );
        let gtc = "shape = \"grow_then_cold\"\ncold_frac = 0.9\ngrow = 0.02\nrevisit_frac = 0.3";
        assert_eq!(
            parsec(&format!("{gtc}\nrevisit_interval = \"10s\"")),
            Ok(())
        );
        assert_eq!(
            parsec(gtc).map_err(|e| e.0),
            Err("revisit_interval".to_string())
        );
        for (text, key) in [
            ("shape = \"sweep\"\nband = 1.5", "band"),
            ("shape = \"sweep\"\nband = nan", "band"),
            ("shape = \"sweep\"\nswept_frac = 0.0", "swept_frac"),
            ("shape = \"grow_then_cold\"\nband = 0.5", "band"),
            ("shape = \"hot_sparse\"\nswept_frac = 0.5", "swept_frac"),
            ("shape = \"grow_then_cold\"\nshrink = true", "shrink"),
            ("shape = \"grow_then_cold\"\ngrow = 0.0", "grow"),
            ("shape = \"sweep\"\ngrow = 0.5", "grow"),
            ("shape = \"hot_sparse\"\nrevisit_frac = 0.1", "revisit_frac"),
            (
                "shape = \"grow_then_cold\"\ncold_frac = 0.2\nrevisit_frac = 0.3",
                "revisit_frac",
            ),
            (
                "shape = \"sweep\"\nrevisit_interval = \"1s\"",
                "revisit_interval",
            ),
            (
                "shape = \"sweep\"\ncompression_ratio = 0.5",
                "compression_ratio",
            ),
            (
                "shape = \"sweep\"\ncompression_ratio = nan",
                "compression_ratio",
            ),
        ] {
            assert_eq!(
                parsec(text).map_err(|e| e.0),
                Err(key.to_string()),
                "{text}"
            );
        }
    }
}
