//! The promotion rules of NUMA balancing's memory-tiering mode (`kernel/sched/fair.c`,
//! `NUMA_BALANCING_MEMORY_TIERING`, Linux 6.1+): the rate limit's one-second window and
//! the automatic hot threshold's adjustment once per `numa_balancing_scan_period_max_ms`.
//!
//! The kernel model in `tiermem-sim` calls these with pages and milliseconds; the live
//! agent's controller calls [`threshold_move`] with bytes of candidates.

/// `NUMA_MIGRATION_ADJUST_STEPS`: the threshold moves in steps of `2 × ref_th / 16`.
pub const ADJUST_STEPS: u32 = 16;

/// Which way `numa_promotion_adjust_threshold` moves the hot threshold after a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMove {
    /// More than 10 % more candidates than the rate limit allows: a stricter (lower
    /// latency) threshold.
    Stricter,
    /// More than 10 % fewer: a looser (higher latency) threshold.
    Looser,
    /// Within 10 % of the reference.
    Keep,
}

/// The decision of `numa_promotion_adjust_threshold`: compare the candidates of the period
/// with the reference, the rate limit times the period (`ref_cand`), with a 10 % band.
pub fn threshold_move(candidates: u64, reference: u64) -> ThresholdMove {
    if candidates > reference * 11 / 10 {
        ThresholdMove::Stricter
    } else if candidates < reference * 9 / 10 {
        ThresholdMove::Looser
    } else {
        ThresholdMove::Keep
    }
}

/// The kernel's step of the hot-latency threshold (ms): by `unit = 2 × ref_th / 16`, down to
/// at least `unit`, up to at most `2 × ref_th`.
pub fn step_threshold_ms(th: u32, ref_th: u32, m: ThresholdMove) -> u32 {
    let unit = ref_th * 2 / ADJUST_STEPS;
    match m {
        ThresholdMove::Stricter => th.saturating_sub(unit).max(unit),
        ThresholdMove::Looser => (th + unit).min(ref_th * 2),
        ThresholdMove::Keep => th,
    }
}

/// `numa_promotion_rate_limit`'s window (`pgdat->nbp_rl_start`, `nbp_rl_nr_cand`): the
/// candidates counted since the window opened, against the limit of one window. The
/// counter is the node's `pgpromote_candidate`, read as the kernel reads it (folded
/// per-CPU differentials), so up to a threshold's worth can pass beyond the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateWindow {
    /// When the window opened, ms (jiffies in ms, wrapping as a `u32`).
    pub start_ms: u32,
    /// The candidate counter when it opened.
    pub start_candidates: u64,
}

impl RateWindow {
    /// Open a new window when more than `window_ms` passed since this one opened, then say
    /// whether the candidates counted in it (`candidates` is the node's running count,
    /// including the one asking) reach `limit`: the candidate is then not promoted.
    pub fn exceeded(&mut self, now_ms: u32, candidates: u64, window_ms: u32, limit: u64) -> bool {
        if now_ms.wrapping_sub(self.start_ms) > window_ms {
            self.start_ms = now_ms;
            self.start_candidates = candidates;
        }
        candidates - self.start_candidates >= limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_threshold_moves_outside_a_ten_percent_band() {
        assert_eq!(threshold_move(1101, 1000), ThresholdMove::Stricter);
        assert_eq!(threshold_move(1100, 1000), ThresholdMove::Keep);
        assert_eq!(threshold_move(900, 1000), ThresholdMove::Keep);
        assert_eq!(threshold_move(899, 1000), ThresholdMove::Looser);
        // ref_th 1000 ms: unit 125 ms, between 125 ms and 2 s.
        assert_eq!(step_threshold_ms(1000, 1000, ThresholdMove::Stricter), 875);
        assert_eq!(step_threshold_ms(125, 1000, ThresholdMove::Stricter), 125);
        assert_eq!(step_threshold_ms(1900, 1000, ThresholdMove::Looser), 2000);
        assert_eq!(step_threshold_ms(700, 1000, ThresholdMove::Keep), 700);
    }

    #[test]
    fn a_window_admits_its_limit_then_reopens_after_it_passed() {
        let mut w = RateWindow {
            start_ms: 10,
            start_candidates: 0,
        };
        // 4 candidates allowed per 1000 ms window; the counter includes the asking one.
        let verdicts: Vec<bool> = (1..=6).map(|c| w.exceeded(10, c, 1000, 4)).collect();
        assert_eq!(verdicts, [false, false, false, true, true, true]);
        // 1000 ms later is still the same window (the kernel compares with `>`).
        assert!(w.exceeded(10 + 1000, 7, 1000, 4));
        assert!(
            !w.exceeded(10 + 1001, 8, 1000, 4),
            "a new window from candidate 8"
        );
        assert_eq!(w.start_candidates, 8);
    }

    proptest! {
        #[test]
        fn the_threshold_stays_within_its_bounds(th in 0u32..5000, ref_th in 16u32..5000, c in 0u64..10_000, r in 0u64..10_000) {
            let th = th.min(ref_th * 2);
            let next = step_threshold_ms(th, ref_th, threshold_move(c, r));
            let unit = ref_th * 2 / ADJUST_STEPS;
            prop_assert!(next <= ref_th * 2);
            prop_assert!(next >= th.min(unit));
        }
    }
}
