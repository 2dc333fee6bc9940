//! Kernel releases, for the few behaviours that differ between the releases tiermem models
//! (`kernel.release`). A release is `MAJOR.MINOR`, read from a string such as `6.12` or
//! `uname -r`'s `6.12.117+deb12-amd64`; without one, the newest modelled behaviour applies.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A kernel's `MAJOR.MINOR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelRelease {
    pub major: u32,
    pub minor: u32,
}

impl KernelRelease {
    pub const fn new(major: u32, minor: u32) -> Self {
        KernelRelease { major, minor }
    }

    /// Parse `MAJOR.MINOR[.PATCH][suffix]` (what `uname -r` prints).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("`{s}` is not a kernel release (expected e.g. \"6.12\" or \"6.12.117+deb12-amd64\")")
        };
        let mut parts = s.trim().splitn(3, '.');
        let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let minor_text = parts.next().ok_or_else(bad)?;
        let digits: String = minor_text
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let minor = digits.parse().map_err(|_| bad())?;
        Ok(KernelRelease { major, minor })
    }

    /// DAMON_RECLAIM drops its scheme when it is enabled: from 6.11 ("mm/damon/reclaim: use
    /// damon_commit_ctx()", 11ddcfc257a3, `damon_reclaim_apply_parameters` commits the
    /// empty parameter context over the running one) until 6.17 (fed48693bdfe, "use
    /// parameter context correctly"). The kdamond monitors; nothing is ever reclaimed.
    pub fn damon_reclaim_drops_scheme(self) -> bool {
        (KernelRelease::new(6, 11)..KernelRelease::new(6, 17)).contains(&self)
    }

    /// `damos_set_effective_quota` computes the time quota's throughput as
    /// `total_charged_sz * 1000000 / total_charged_ns` in `unsigned long`, which wraps once
    /// the scheme has charged 2^64 / 10^6 bytes (16.8 TiB: a paddr scheme that walks a
    /// 130 GiB machine's free memory every few seconds gets there within the hour), and
    /// `throughput * ms` wraps too. From the time quota's introduction (1cd243030059,
    /// "mm/damon/schemes: implement time quota", 5.16; the DAMON_RECLAIM RFC's trees carry
    /// the same code) until 6.17, whose "mm/damon/core: prevent unnecessary overflow in
    /// damos_set_effective_quota()" (2025-08) uses `mult_frac`. The fix went to the stable
    /// trees from 5.16 on; releases are compared by MAJOR.MINOR here, so a stable kernel
    /// that has the backport is modelled as wrapping (set `release` to 6.17 to model it).
    pub fn damos_throughput_wraps(self) -> bool {
        self < KernelRelease::new(6, 17)
    }
}

impl fmt::Display for KernelRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for KernelRelease {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KernelRelease {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        KernelRelease::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_as_uname_prints_them() {
        assert_eq!(
            KernelRelease::parse("6.12").unwrap(),
            KernelRelease::new(6, 12)
        );
        assert_eq!(
            KernelRelease::parse("6.12.117+deb12-amd64").unwrap(),
            KernelRelease::new(6, 12)
        );
        assert_eq!(
            KernelRelease::parse("6.17-rc3").unwrap(),
            KernelRelease::new(6, 17)
        );
        for bad in ["", "6", "six.12", "6.x"] {
            assert!(KernelRelease::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_damon_reclaim_regression_spans_6_11_to_6_16() {
        let r = |m| KernelRelease::new(6, m).damon_reclaim_drops_scheme();
        assert!(!r(10) && r(11) && r(12) && r(16) && !r(17));
    }
}
