//! Loaded latency per node for each timing window, solved as a closed loop.
//!
//! Every thread is a closed loop: it issues its next access only when the previous ones
//! (up to its memory-level parallelism) complete, so its request rate falls as latency
//! rises. For each window the solver takes the previous window's per-thread mix (lines
//! per node, read/write, CPU time, MLP) and finds the latency multipliers `f_n` at which
//! the demand those threads would generate equals what the curve of each node says:
//!
//! ```text
//! T_t(f) = C_t + Σ_n s_tn · f_n          time thread t needs for its window's work
//! D_n(f) = Σ_t bytes_tn · (A_t/Δ) / T_t(f) + kernel traffic
//! f_n    = curve_n(D_n(f) / Bsat_n(r_n), r_n)
//! ```
//!
//! `C_t` is the thread's non-memory time, `s_tn` its idle-latency stall per node
//! (lines × L0 / MLP), `A_t` the time it was runnable in the window. The fixed point is
//! unique (demand falls and the curve rises with `f_n`); Gauss-Seidel sweeps with a
//! bisection per node find it. Past `U_CAP` the curve continues steeply, which makes the
//! solution the throttled operating point where delivered bandwidth is about `Bsat`.

use tiermem_core::timing::LatencyCurve;
use tiermem_core::units::LINE_SIZE;

/// One thread's traffic in the last window.
#[derive(Clone, Debug, Default)]
pub struct ThreadMix {
    /// Non-memory time (CPU work, faults), ps.
    pub other_ps: f64,
    /// Fraction of the window the thread was runnable.
    pub active_frac: f64,
    /// Stall at idle latency per node, ps (lines × L0 / MLP, incl. remote penalty as a constant in `other_ps`).
    pub stall_ps: Vec<f64>,
    /// Bytes read / written on each node.
    pub read_bytes: Vec<f64>,
    pub write_bytes: Vec<f64>,
}

/// Per-node solver state.
pub struct TimingModel {
    curves: Vec<LatencyCurve>,
    /// Current latency multipliers (`L / L0`).
    pub factor: Vec<f64>,
}

impl TimingModel {
    pub fn new(curves: Vec<LatencyCurve>) -> Self {
        let n = curves.len();
        TimingModel {
            curves,
            factor: vec![1.0; n],
        }
    }

    /// Bytes of memory traffic for `lines` lines of a given access kind:
    /// read 1 line; store with RFO: 1 read + 1 write-back; non-temporal store: 1 write.
    pub fn traffic(kind: u8, lines: u64) -> (u64, u64) {
        match kind {
            0 => (lines * LINE_SIZE, 0),
            1 => (lines * LINE_SIZE, lines * LINE_SIZE),
            _ => (0, lines * LINE_SIZE),
        }
    }

    /// Solve the window's latency multipliers. `window_ps` is Δ; `kernel` the kernel's
    /// (read, write) bytes per node in the last window.
    pub fn solve(&mut self, threads: &[ThreadMix], kernel: &[(u64, u64)], window_ps: f64) {
        let nn = self.curves.len();
        // Read fraction per node from the last window's bytes.
        let mut rd = vec![0.0; nn];
        let mut wr = vec![0.0; nn];
        for t in threads {
            for n in 0..nn {
                rd[n] += t.read_bytes[n] * t.active_frac.min(1.0);
                wr[n] += t.write_bytes[n] * t.active_frac.min(1.0);
            }
        }
        let bg: Vec<f64> = kernel
            .iter()
            .map(|&(r, w)| (r + w) as f64 / (window_ps * 1e-12))
            .collect();
        let r_frac: Vec<f64> = (0..nn)
            .map(|n| {
                let r = rd[n] + kernel[n].0 as f64;
                let w = wr[n] + kernel[n].1 as f64;
                if r + w > 0.0 {
                    r / (r + w)
                } else {
                    1.0
                }
            })
            .collect();
        let bsat: Vec<f64> = (0..nn).map(|n| self.curves[n].bsat(r_frac[n])).collect();
        let active: Vec<&ThreadMix> = threads.iter().filter(|t| t.active_frac > 0.0).collect();
        let mut f = self.factor.clone();
        for _sweep in 0..12 {
            let mut max_change: f64 = 0.0;
            for n in 0..nn {
                let users: Vec<(f64, f64, f64)> = active
                    .iter()
                    .filter(|t| t.read_bytes[n] + t.write_bytes[n] > 0.0)
                    .map(|t| {
                        let others: f64 = t.other_ps
                            + (0..nn)
                                .filter(|&m| m != n)
                                .map(|m| t.stall_ps[m] * f[m])
                                .sum::<f64>();
                        // Demand in bytes/s is bytes·active_frac / T, T = others + stall_n·f_n in ps.
                        (
                            (t.read_bytes[n] + t.write_bytes[n]) * t.active_frac * 1e12,
                            others,
                            t.stall_ps[n],
                        )
                    })
                    .collect();
                if users.is_empty() && bg[n] == 0.0 {
                    max_change = max_change.max((f[n] - 1.0).abs());
                    f[n] = 1.0;
                    continue;
                }
                let demand = |fv: f64| -> f64 {
                    bg[n]
                        + users
                            .iter()
                            .map(|&(b, k, s)| b / (k + s * fv).max(1.0))
                            .sum::<f64>()
                };
                let curve = &self.curves[n];
                let g = |fv: f64| curve.factor_or_saturated(demand(fv) / bsat[n], r_frac[n]) - fv;
                let mut lo = 1.0;
                let mut hi = f[n].max(1.5);
                let mut guard = 0;
                while g(hi) > 0.0 && guard < 80 {
                    lo = hi;
                    hi *= 2.0;
                    guard += 1;
                }
                if g(lo) <= 0.0 {
                    hi = lo;
                }
                for _ in 0..50 {
                    if hi - lo <= 1e-7 * hi {
                        break;
                    }
                    let mid = 0.5 * (lo + hi);
                    if g(mid) > 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let new = 0.5 * (lo + hi);
                max_change = max_change.max((new - f[n]).abs() / f[n]);
                f[n] = new;
            }
            if max_change < 1e-6 {
                break;
            }
        }
        self.factor = f;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::timing::CurveParams;

    fn curve() -> LatencyCurve {
        LatencyCurve {
            params: CurveParams::DDR,
            read_bw: 100e9,
            write_bw: 80e9,
            duplex: false,
        }
    }

    #[test]
    fn idle_threads_see_idle_latency() {
        let mut m = TimingModel::new(vec![curve()]);
        m.solve(&[], &[(0, 0)], 1e9);
        assert_eq!(m.factor[0], 1.0);
    }

    #[test]
    fn closed_loop_settles_on_the_curve_and_below_bsat() {
        // 64 streaming threads, each could pull 12 lines / 100 ns = 7.7 GB/s at idle
        // latency: 490 GB/s of demand against 100 GB/s.
        let window = 1e9; // 1 ms in ps
        let l0 = 100_000.0; // 100 ns in ps
        let lines = 1_000_000.0;
        let t = ThreadMix {
            other_ps: 0.0,
            active_frac: 1.0,
            stall_ps: vec![lines * l0 / 12.0],
            read_bytes: vec![lines * 64.0],
            write_bytes: vec![0.0],
        };
        let threads = vec![t; 64];
        let mut m = TimingModel::new(vec![curve()]);
        m.solve(&threads, &[(0, 0)], window);
        let f = m.factor[0];
        let per_thread_time = lines * l0 / 12.0 * f; // ps
        let bw = 64.0 * lines * 64.0 / (per_thread_time * 1e-12);
        assert!(bw <= 100e9 * 1.001, "delivered {bw} exceeds Bsat");
        assert!(bw >= 95e9, "saturated bandwidth too low: {bw}");
        // And a light load lies exactly on the curve.
        let light = vec![
            ThreadMix {
                stall_ps: vec![lines * l0],
                ..threads[0].clone()
            };
            2
        ];
        m.solve(&light, &[(0, 0)], window);
        let f = m.factor[0];
        let bw = 2.0 * lines * 64.0 / (lines * l0 * f * 1e-12);
        let want = curve().factor(bw / 100e9, 1.0);
        assert!((f - want).abs() < 1e-4, "{f} vs {want}");
    }
}
