//! The bandwidth → loaded-latency response of one memory node.
//!
//! Model (`workload-models.md` §7, a least-squares fit to the BSC Mess curves):
//!
//! ```text
//! u = D / Bsat(r)                       D: node demand in bytes/s (reads + writes), r: read fraction
//! L(u, r) = L0 · (1 + a(r)·u^b(r) / (1 − u)^g(r))        for u < U_CAP (0.98)
//! ```
//!
//! `a`, `b`, `g` are interpolated linearly in `r` between the `r = 1` and `r = 0.5` rows
//! (clamped outside). `Bsat(r)` comes from the node's sustained read and write bandwidth:
//! a half-duplex bus (DDR, PMEM) shares its time between directions,
//! `1/Bsat = r/B_R + (1 − r)/B_W`; a full-duplex link (CXL) saturates per direction,
//! `Bsat = min(B_R/r, B_W/(1 − r))`, so mixed traffic raises its total as Mess measured.
//!
//! Above `U_CAP` the node delivers at most `Bsat`: the closed loop of issuing threads is
//! throttled by queueing, which [`LatencyCurve::latency_at_or_saturated`] exposes as a latency
//! that keeps rising linearly with the excess demand (the fixed-point solver in the simulator
//! then finds the latency at which the threads' demand equals what the node can deliver).

use serde::{Deserialize, Serialize};

/// Utilisation above which the node is treated as saturated (`workload-models.md` §7).
pub const U_CAP: f64 = 0.98;

/// One row of curve-shape parameters at a given read fraction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurveShape {
    /// Scale of the queueing term.
    pub a: f64,
    /// Exponent of `u` in the numerator.
    pub b: f64,
    /// Exponent of `(1 − u)` in the denominator.
    pub g: f64,
}

/// Shape of a node's latency curve: rows at read fraction 1.0 and 0.5.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurveParams {
    /// Shape for read-only traffic.
    pub read: CurveShape,
    /// Shape for 50 % reads / 50 % writes.
    pub mixed: CurveShape,
}

impl CurveParams {
    /// DDR5 (Mess Graviton3 fit, `workload-models.md` §7 table).
    pub const DDR: CurveParams = CurveParams {
        read: CurveShape {
            a: 0.257,
            b: 1.57,
            g: 0.375,
        },
        mixed: CurveShape {
            a: 0.755,
            b: 1.99,
            g: 0.233,
        },
    };
    /// CXL expander (Mess "cxl" Micron model fit).
    pub const CXL: CurveParams = CurveParams {
        read: CurveShape {
            a: 0.036,
            b: 0.905,
            g: 0.471,
        },
        mixed: CurveShape {
            a: 0.243,
            b: 1.10,
            g: 0.153,
        },
    };

    /// Parameters interpolated at read fraction `r` (linear between the rows, clamped).
    pub fn at(&self, r: f64) -> CurveShape {
        // t = 0 at r = 0.5, 1 at r = 1.0
        let t = ((r - 0.5) / 0.5).clamp(0.0, 1.0);
        let lerp = |m: f64, rd: f64| m + (rd - m) * t;
        CurveShape {
            a: lerp(self.mixed.a, self.read.a),
            b: lerp(self.mixed.b, self.read.b),
            g: lerp(self.mixed.g, self.read.g),
        }
    }
}

/// The loaded-latency curve of one node, with its saturation bandwidths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyCurve {
    pub params: CurveParams,
    /// Sustained read-only bandwidth, bytes/s.
    pub read_bw: f64,
    /// Sustained write-only bandwidth, bytes/s.
    pub write_bw: f64,
    /// Full-duplex link (reads and writes saturate independently).
    pub duplex: bool,
}

impl LatencyCurve {
    /// Saturation bandwidth (bytes/s) for a read fraction `r` in [0, 1].
    pub fn bsat(&self, r: f64) -> f64 {
        let r = r.clamp(0.0, 1.0);
        if self.duplex {
            let by_r = if r > 0.0 {
                self.read_bw / r
            } else {
                f64::INFINITY
            };
            let by_w = if r < 1.0 {
                self.write_bw / (1.0 - r)
            } else {
                f64::INFINITY
            };
            by_r.min(by_w)
        } else {
            1.0 / (r / self.read_bw + (1.0 - r) / self.write_bw)
        }
    }

    /// Multiplier `L/L0` at utilisation `u < U_CAP` and read fraction `r`.
    pub fn factor(&self, u: f64, r: f64) -> f64 {
        let u = u.clamp(0.0, U_CAP);
        if u <= 0.0 {
            return 1.0;
        }
        let s = self.params.at(r);
        1.0 + s.a * u.powf(s.b) / (1.0 - u).powf(s.g)
    }

    /// Multiplier `L/L0` for utilisation `u`, continued past `U_CAP` as a steep line so that a
    /// closed-loop solver can find the throttled operating point (`Lsat + backlog/Bsat`).
    pub fn factor_or_saturated(&self, u: f64, r: f64) -> f64 {
        if u < U_CAP {
            return self.factor(u, r);
        }
        let at_cap = self.factor(U_CAP, r);
        // Slope of the curve at the cap, times a large gain: latency grows quickly with the
        // backlog, which is what makes issuers throttle to Bsat.
        let eps = 1e-4;
        let slope = (at_cap - self.factor(U_CAP - eps, r)) / eps;
        at_cap + (u - U_CAP) * slope.max(1.0) * 1000.0
    }

    /// The utilisation at which [`LatencyCurve::factor_or_saturated`] reaches `factor` (its
    /// inverse, by bisection; it rises monotonically): where on the curve a measured latency
    /// puts a node. 0 for factors at or below 1.
    pub fn utilisation_at(&self, factor: f64, r: f64) -> f64 {
        if factor <= 1.0 {
            return 0.0;
        }
        let (mut lo, mut hi) = (0.0, 1.0);
        while self.factor_or_saturated(hi, r) < factor {
            hi *= 2.0;
        }
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if self.factor_or_saturated(mid, r) < factor {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ddr() -> LatencyCurve {
        LatencyCurve {
            params: CurveParams::DDR,
            read_bw: 284.5e9,
            write_bw: 239.6e9,
            duplex: false,
        }
    }
    fn cxl() -> LatencyCurve {
        LatencyCurve {
            params: CurveParams::CXL,
            read_bw: 26.8e9,
            write_bw: 20.0e9,
            duplex: true,
        }
    }

    /// The fit checks of workload-models.md §7 (measured/fit latency at given utilisation).
    #[test]
    fn reproduces_published_fit_points() {
        let l0 = 122.0;
        let c = ddr();
        for (u, want) in [
            (0.3, 128.0),
            (0.5, 137.0),
            (0.7, 151.0),
            (0.8, 164.0),
            (0.9, 186.0),
            (0.95, 213.0),
        ] {
            let got = l0 * c.factor(u, 1.0);
            assert!(
                (got - want).abs() / want < 0.02,
                "ddr u={u}: {got} vs {want}"
            );
        }
        let l0 = 225.6;
        let c = cxl();
        for (u, want) in [(0.5, 231.0), (0.8, 239.0), (0.9, 247.0), (0.95, 257.0)] {
            let got = l0 * c.factor(u, 1.0);
            assert!(
                (got - want).abs() / want < 0.02,
                "cxl u={u}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn bsat_matches_table_rows() {
        // DDR: 284.5 reads, 259.9 at 50 % with the half-duplex rule.
        assert!((ddr().bsat(0.5) / 1e9 - 259.9).abs() < 0.5);
        // CXL: 26.8 reads, 40.0 at 50 % with the duplex rule (mixed traffic raises it).
        assert!((cxl().bsat(1.0) / 1e9 - 26.8).abs() < 1e-9);
        assert!((cxl().bsat(0.5) / 1e9 - 40.0).abs() < 1e-9);
    }

    #[test]
    fn saturated_continuation_is_monotone() {
        let c = ddr();
        let mut last = 0.0;
        for i in 0..200 {
            let u = i as f64 / 100.0;
            let f = c.factor_or_saturated(u, 0.8);
            assert!(f >= last, "not monotone at u={u}");
            last = f;
        }
    }

    #[test]
    fn utilisation_at_inverts_the_curve_including_its_saturated_line() {
        for c in [ddr(), cxl()] {
            for u in [0.0, 0.1, 0.5, 0.9, 0.95, 0.979, 0.99, 1.2] {
                let f = c.factor_or_saturated(u, 1.0);
                let back = c.utilisation_at(f, 1.0);
                assert!((back - u).abs() < 1e-9, "u {u}: back {back}");
            }
        }
    }
}
