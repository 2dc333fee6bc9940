//! `[machine.caches]`: the CPU caches in front of memory, as trace replay models them
//! (`tiermem-sim`'s `hw::cache`).
//!
//! Three levels: a private L1d and L2 per core and a last-level cache shared by a group of
//! cores (a socket on Intel parts, a CCD on AMD ones). Lines are 64 bytes on every part
//! tiermem models (x86-64 `coherency_line_size`), so the line size is not a key.
//!
//! A level's `latency` is its load-to-use hit latency; trace replay charges an L2 or LLC
//! hit that latency divided by the thread's memory-level parallelism (an L1 hit is part of
//! the trace's CPI). Misses go to memory and pay its loaded latency as before.

use crate::units::{Bytes, SimDuration};
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// The cache line, bytes.
pub const LINE: u64 = 64;

/// One cache level.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    /// Capacity of one instance (one core's L1d or L2; one LLC domain).
    pub size: Bytes,
    /// Associativity.
    pub ways: u32,
    /// Load-to-use latency of a hit.
    pub latency: SimDuration,
}

/// `[machine.caches]`. Every key has a default, so `enabled = false` alone turns the
/// caches off and `llc = {...}` alone changes only the LLC.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachesConfig {
    /// false replays every access to memory, as if no cache were there. Default true.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Default: 48 KiB, 12-way, 1.6 ns (Sapphire Rapids class, [`Hierarchy::generic`]).
    #[serde(default)]
    pub l1d: Option<CacheLevel>,
    /// Default: 2 MiB, 16-way, 5 ns.
    #[serde(default)]
    pub l2: Option<CacheLevel>,
    /// One LLC domain. Default: 1.875 MiB per CPU of the socket, 15-way, 33 ns.
    #[serde(default)]
    pub llc: Option<CacheLevel>,
    /// Cores sharing one LLC. Default: every CPU of the socket.
    #[serde(default)]
    pub llc_cores: Option<u32>,
    /// The L2 stream prefetcher: after two misses to adjacent lines of a page it fetches
    /// the next `prefetch_distance` lines of that page ahead of the demand stream. Default true.
    #[serde(default = "yes")]
    pub prefetch: bool,
    /// Lines the prefetcher runs ahead of a detected stream. Default 16 (Intel's L2 streamer
    /// stays up to 20 lines ahead, within the 4 KiB page: Intel 64 and IA-32 Architectures
    /// Optimization Reference Manual, "Data Prefetching").
    #[serde(default = "default_distance")]
    pub prefetch_distance: u32,
}

fn yes() -> bool {
    true
}
fn default_distance() -> u32 {
    16
}

/// The caches of one socket's CPUs with every default filled in
/// ([`crate::topology::Topology::caches`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hierarchy {
    pub enabled: bool,
    pub l1d: CacheLevel,
    pub l2: CacheLevel,
    pub llc: CacheLevel,
    /// Cores sharing one LLC.
    pub llc_cores: u32,
    pub prefetch: bool,
    pub prefetch_distance: u32,
}

impl Hierarchy {
    /// The caches of a machine that names none, over a socket of `cores` CPUs: a Sapphire
    /// Rapids class core (48 KiB 12-way L1d, 2 MiB 16-way L2) and an LLC of 1.875 MiB per
    /// core, 15-way (Intel Xeon Scalable 4th generation; latencies from Chips and Cheese,
    /// "Sapphire Rapids: Golden Cove Hits Servers", 2023: L1d 5 cycles, L2 16 cycles, L3
    /// about 33 ns).
    pub fn generic(cores: u32) -> Hierarchy {
        let cores = cores.max(1);
        Hierarchy {
            enabled: true,
            l1d: CacheLevel {
                size: Bytes(48 << 10),
                ways: 12,
                latency: SimDuration::from_ps(1_600),
            },
            l2: CacheLevel {
                size: Bytes(2 << 20),
                ways: 16,
                latency: SimDuration::from_ps(5_000),
            },
            llc: CacheLevel {
                size: Bytes(cores as u64 * (1_920 << 10)), // 1.875 MiB
                ways: 15,
                latency: SimDuration::from_ps(33_000),
            },
            llc_cores: cores,
            prefetch: true,
            prefetch_distance: 16,
        }
    }
}

impl Default for CachesConfig {
    fn default() -> Self {
        CachesConfig {
            enabled: true,
            l1d: None,
            l2: None,
            llc: None,
            llc_cores: None,
            prefetch: true,
            prefetch_distance: default_distance(),
        }
    }
}

impl CachesConfig {
    /// This config over the generic hierarchy of a socket of `cores` CPUs.
    pub fn resolve(&self, cores: u32) -> Hierarchy {
        let g = Hierarchy::generic(cores);
        Hierarchy {
            enabled: self.enabled,
            l1d: self.l1d.unwrap_or(g.l1d),
            l2: self.l2.unwrap_or(g.l2),
            llc: self.llc.unwrap_or(g.llc),
            llc_cores: self.llc_cores.unwrap_or(g.llc_cores),
            prefetch: self.prefetch,
            prefetch_distance: self.prefetch_distance,
        }
    }

    /// Refuse a geometry no cache has, naming the key under `prefix` (`machine.caches`), for
    /// a socket of `cores` CPUs.
    pub fn validate(&self, prefix: &str, cores: u32) -> Result<(), ConfigError> {
        let h = self.resolve(cores);
        for (name, l) in [("l1d", &h.l1d), ("l2", &h.l2), ("llc", &h.llc)] {
            let key = format!("{prefix}.{name}");
            if l.ways == 0 || l.ways > 64 {
                return Err(ConfigError::invalid(
                    format!("{key}.ways"),
                    format!("ways must be 1 to 64 (got {})", l.ways),
                ));
            }
            let set_bytes = LINE * l.ways as u64;
            if l.size.0 == 0 || l.size.0 % set_bytes != 0 {
                return Err(ConfigError::invalid(
                    format!("{key}.size"),
                    format!(
                        "the size must be a positive multiple of ways × 64-byte lines ({set_bytes} bytes; got {})",
                        l.size.0
                    ),
                ));
            }
            if l.size.0 > 4 << 30 {
                return Err(ConfigError::invalid(
                    format!("{key}.size"),
                    format!("at most 4 GiB per cache (got {})", l.size),
                ));
            }
        }
        if h.l2.size.0 < h.l1d.size.0 || h.llc.size.0 < h.l2.size.0 {
            return Err(ConfigError::invalid(
                prefix.to_string(),
                "each level must be at least as large as the one before (l1d ≤ l2 ≤ llc)",
            ));
        }
        if self.llc_cores == Some(0) {
            return Err(ConfigError::invalid(
                format!("{prefix}.llc_cores"),
                "an LLC is shared by at least one core",
            ));
        }
        if self.prefetch_distance == 0 || self.prefetch_distance > 63 {
            return Err(ConfigError::invalid(
                format!("{prefix}.prefetch_distance"),
                format!(
                    "1 to 63 lines (a 4 KiB page has 64; got {})",
                    self.prefetch_distance
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generic_caches_are_valid_and_bad_geometry_is_refused() {
        let g = Hierarchy::generic(32);
        assert_eq!(g.llc.size.0, 60 << 20);
        let off: CachesConfig = toml::from_str("enabled = false").unwrap();
        off.validate("machine.caches", 32).unwrap();
        assert!(!off.resolve(32).enabled);
        let bad = |t: &str| {
            let c: CachesConfig = toml::from_str(t).unwrap();
            c.validate("machine.caches", 32).unwrap_err().to_string()
        };
        let e = bad("l2 = { size = \"1000B\", ways = 8, latency = \"4ns\" }");
        assert!(e.contains("machine.caches.l2.size"), "{e}");
        let e = bad("llc = { size = \"32MiB\", ways = 0, latency = \"30ns\" }");
        assert!(e.contains("machine.caches.llc.ways"), "{e}");
        let e = bad("l1d = { size = \"4MiB\", ways = 8, latency = \"1ns\" }");
        assert!(e.contains("at least as large"), "{e}");
        let e = bad("prefetch_distance = 64");
        assert!(e.contains("prefetch_distance"), "{e}");
    }
}
