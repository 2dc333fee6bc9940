//! Units as types: sizes, page counts, bandwidth and simulated time.
//!
//! Most address and time bugs in a memory simulator are unit bugs; these
//! newtypes make them compiler errors. Sizes and bandwidths parse from the
//! human strings used in config files (`"16GiB"`, `"4096"`, `"24.5GB/s"`,
//! `"80ns"`, `"1.5ms"`), so a wrong unit is a config error that names the key.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

/// Base page size of the simulated machine (x86-64 4 KiB pages).
pub const PAGE_SIZE: u64 = 4096;
/// `PAGE_SHIFT` for [`PAGE_SIZE`].
pub const PAGE_SHIFT: u32 = 12;
/// Cache line size in bytes; the unit of memory traffic.
pub const LINE_SIZE: u64 = 64;

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A count of base (4 KiB) pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pages(pub u64);

impl Bytes {
    pub const fn new(b: u64) -> Self {
        Bytes(b)
    }
    pub const fn gib(g: u64) -> Self {
        Bytes(g << 30)
    }
    pub const fn mib(m: u64) -> Self {
        Bytes(m << 20)
    }
    /// Whole pages contained in this size (rounding down).
    pub const fn pages_floor(self) -> Pages {
        Pages(self.0 / PAGE_SIZE)
    }
    /// Pages needed to hold this size (rounding up).
    pub const fn pages_ceil(self) -> Pages {
        Pages(self.0.div_ceil(PAGE_SIZE))
    }
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl Pages {
    pub const fn bytes(self) -> Bytes {
        Bytes(self.0 * PAGE_SIZE)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl Add for Pages {
    type Output = Pages;
    fn add(self, o: Pages) -> Pages {
        Pages(self.0 + o.0)
    }
}
impl Sub for Pages {
    type Output = Pages;
    fn sub(self, o: Pages) -> Pages {
        Pages(self.0 - o.0)
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, size) in UNITS {
            if b >= size && b.is_multiple_of(size) {
                return write!(f, "{}{}", b / size, name);
            }
        }
        for (name, size) in UNITS {
            if b >= size {
                return write!(f, "{:.2}{}", b as f64 / size as f64, name);
            }
        }
        write!(f, "{b}B")
    }
}

/// Parse a size: a bare integer (bytes) or a number with a unit
/// (`B`, `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` binary; `KB`, `MB`, `GB`, `TB` decimal).
pub fn parse_bytes(s: &str) -> Result<Bytes, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!(
            "invalid size {s:?}: expected a number with a unit such as 16GiB"
        ));
    }
    let mult: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "K" | "KiB" | "k" => 1024.0,
        "M" | "MiB" => (1u64 << 20) as f64,
        "G" | "GiB" => (1u64 << 30) as f64,
        "T" | "TiB" => (1u64 << 40) as f64,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => {
            return Err(format!(
                "invalid size unit {other:?} in {s:?}: use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB"
            ))
        }
    };
    let v: f64 = num.parse().map_err(|_| format!("invalid size {s:?}"))?;
    let bytes = v * mult;
    if !bytes.is_finite() || !(0.0..=1.8e19).contains(&bytes) {
        return Err(format!("size {s:?} is out of range"));
    }
    Ok(Bytes(bytes.round() as u64))
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// Accepts an integer number of bytes or a string with a unit; rejects negatives.
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: bytes as an integer or a string such as \"16GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                if v < 0 {
                    Err(E::custom(format!("size must not be negative (got {v})")))
                } else {
                    Ok(Bytes(v as u64))
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bytes, E> {
                Err(E::custom(format!(
                    "size must be a whole number of bytes or a string with a unit (got {v})"
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                parse_bytes(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A bandwidth in bytes per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Bandwidth(pub f64);

impl Bandwidth {
    pub fn bytes_per_s(self) -> f64 {
        self.0
    }
    pub fn gb_per_s(self) -> f64 {
        self.0 / 1e9
    }
    pub fn mb_per_s(self) -> f64 {
        self.0 / 1e6
    }
    pub fn from_gb_per_s(g: f64) -> Self {
        Bandwidth(g * 1e9)
    }
}

/// Parse a bandwidth: `"24.5GB/s"`, `"200000MB/s"`, `"12GiB/s"`; a bare number is MB/s
/// (the unit HMAT and sysfs use).
pub fn parse_bandwidth(s: &str) -> Result<Bandwidth, String> {
    let t = s.trim();
    let Some(base) = t.strip_suffix("/s") else {
        return Err(format!(
            "invalid bandwidth {s:?}: expected a rate such as \"24.5GB/s\" or \"200000MB/s\""
        ));
    };
    let b = parse_bytes(base).map_err(|e| format!("invalid bandwidth {s:?}: {e}"))?;
    if b.0 == 0 {
        return Err(format!("bandwidth {s:?} must be positive"));
    }
    Ok(Bandwidth(b.0 as f64))
}

impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}MB/s", self.0 / 1e6))
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Bandwidth;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a bandwidth such as \"24.5GB/s\" (a bare number means MB/s)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bandwidth, E> {
                if v == 0 {
                    return Err(E::custom("bandwidth must be positive"));
                }
                Ok(Bandwidth(v as f64 * 1e6))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bandwidth, E> {
                if v <= 0 {
                    return Err(E::custom(format!("bandwidth must be positive (got {v})")));
                }
                Ok(Bandwidth(v as f64 * 1e6))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bandwidth, E> {
                if !(v > 0.0 && v.is_finite()) {
                    return Err(E::custom(format!("bandwidth must be positive (got {v})")));
                }
                Ok(Bandwidth(v * 1e6))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bandwidth, E> {
                parse_bandwidth(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A span of simulated time, in picoseconds (so per-access costs of a few ns
/// add up without rounding drift).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

/// An instant on the simulated clock, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const fn from_ps(ps: u64) -> Self {
        SimDuration(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimDuration(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimDuration(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimDuration(ms * 1_000_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000_000)
    }
    pub fn from_ns_f64(ns: f64) -> Self {
        SimDuration((ns * 1000.0).round().max(0.0) as u64)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        SimDuration((s * 1e12).round().max(0.0) as u64)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }
    pub const fn as_ms(self) -> u64 {
        self.0 / 1_000_000_000
    }
    pub const fn as_us(self) -> u64 {
        self.0 / 1_000_000
    }
}

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }
    /// Milliseconds since boot, as the kernel's `jiffies_to_msecs(jiffies)` (HZ=1000).
    pub const fn as_ms(self) -> u64 {
        self.0 / 1_000_000_000
    }
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0 + d.0)
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 += d.0
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0 + d.0)
    }
}
impl AddAssign for SimDuration {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 += d.0
    }
}
impl SubAssign for SimDuration {
    fn sub_assign(&mut self, d: SimDuration) {
        self.0 -= d.0
    }
}

/// Parse a duration: `"80ns"`, `"1.5us"`, `"10ms"`, `"2s"`, `"5min"`.
pub fn parse_duration(s: &str) -> Result<SimDuration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.replace('_', "").parse().map_err(|_| {
        format!("invalid duration {s:?}: expected e.g. \"80ns\", \"10ms\" or \"2s\"")
    })?;
    let ps_per: f64 = match unit.trim() {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        "min" => 60e12,
        "h" => 3600e12,
        "" => return Err(format!("duration {s:?} needs a unit (ns, us, ms, s, min)")),
        other => {
            return Err(format!(
                "invalid duration unit {other:?} in {s:?}: use ns, us, ms, s or min"
            ))
        }
    };
    let ps = v * ps_per;
    if !ps.is_finite() || !(0.0..=1.8e19).contains(&ps) {
        return Err(format!("duration {s:?} is out of range"));
    }
    Ok(SimDuration(ps.round() as u64))
}

impl Serialize for SimDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ps = self.0;
        let txt = if ps.is_multiple_of(1_000_000_000_000) {
            format!("{}s", ps / 1_000_000_000_000)
        } else if ps.is_multiple_of(1_000_000_000) {
            format!("{}ms", ps / 1_000_000_000)
        } else if ps.is_multiple_of(1_000_000) {
            format!("{}us", ps / 1_000_000)
        } else if ps.is_multiple_of(1000) {
            format!("{}ns", ps / 1000)
        } else {
            format!("{ps}ps")
        };
        s.serialize_str(&txt)
    }
}

impl<'de> Deserialize<'de> for SimDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = SimDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration string with a unit, such as \"80ns\" or \"10s\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SimDuration, E> {
                parse_duration(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "duration {v} has no unit: write it as a string such as \"{v}ms\""
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SimDuration, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "duration {v} has no unit: write it as a string such as \"{v}s\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A NUMA node id, as in `/sys/devices/system/node/nodeN`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NodeId(pub u8);

impl NodeId {
    pub const fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_with_units() {
        assert_eq!(parse_bytes("16GiB").unwrap(), Bytes::gib(16));
        assert_eq!(parse_bytes("4096").unwrap(), Bytes(4096));
        assert_eq!(parse_bytes("1.5 MiB").unwrap(), Bytes(3 << 19));
        assert_eq!(parse_bytes("2GB").unwrap(), Bytes(2_000_000_000));
        assert!(parse_bytes("16 parsecs").is_err());
        assert!(parse_bytes("-5GiB").is_err());
        assert!(parse_bytes("").is_err());
    }

    #[test]
    fn parses_bandwidth_and_durations() {
        assert_eq!(parse_bandwidth("24.5GB/s").unwrap().gb_per_s(), 24.5);
        assert!(parse_bandwidth("24.5GB").is_err());
        assert_eq!(parse_duration("80ns").unwrap(), SimDuration::from_ns(80));
        assert_eq!(parse_duration("1.5ms").unwrap(), SimDuration::from_us(1500));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("10 fortnights").is_err());
    }

    #[test]
    fn displays_sizes() {
        assert_eq!(Bytes::gib(16).to_string(), "16GiB");
        assert_eq!(Bytes(1536 << 20).to_string(), "1536MiB");
    }
}
