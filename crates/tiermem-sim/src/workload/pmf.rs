//! The page distribution of a stationary access pattern: for each page of the pattern's
//! set, the probability that one access picks it. The page-event engine
//! ([`crate::engine::events`]) derives from it when a page is next touched (a memoryless
//! page touched with probability p per access is next touched after a geometric number of
//! accesses), so the distribution must be the one the generator draws from, exactly where
//! that is cheap: the formulas follow pmbench's `pattern.c` draws as
//! [`crate::workload::Pattern::next`] implements them.

pub use crate::mm::lazy::Pmf;
use crate::workload::Pattern;

/// The distribution of `pattern`'s page draws, or `None` for patterns whose draws are not
/// independent of each other (`linear` walks the map in order).
pub fn of_pattern(pattern: &Pattern) -> Option<Pmf> {
    let p: Vec<f32> = match *pattern {
        Pattern::Uniform { n } => vec![1.0 / n as f32; n as usize],
        Pattern::NormalIh { n, k, offset } => irwin_hall(n, k, offset),
        Pattern::Pareto { n, alpha, h_pow } => pareto(n, alpha, h_pow),
        Pattern::Normal { n, sigma, .. } => normal(n, sigma),
        Pattern::Linear { .. } => return None,
    };
    Some(p.into())
}

/// pmbench's `normal`: N/2 + z·σ from Box-Muller (both numbers of a pair are independent
/// standard normals, so the draws are independent), truncated to its page; a draw outside
/// `[0, N)` lands on page N/2.
fn normal(n: u64, sigma: f64) -> Vec<f32> {
    let (mean, sd) = (n as f64 / 2.0, sigma.max(f64::MIN_POSITIVE));
    let mass = |a: f64, b: f64| tiermem_core::synthetic::normal_mass(a, b, mean, sd);
    let mut p: Vec<f64> = (0..n).map(|i| mass(i as f64, i as f64 + 1.0)).collect();
    let outside = mass(f64::NEG_INFINITY, 0.0) + mass(n as f64, f64::INFINITY);
    if let Some(mid) = p.get_mut((n / 2) as usize) {
        *mid += outside;
    }
    p.into_iter().map(|x| x as f32).collect()
}

/// pmbench's `normal_ih`: the sum of twelve independent uniform draws over `[0, k)`, plus
/// `offset`, clamped to `n − 1`. The sum's distribution is the twelve-fold convolution of
/// the uniform one, computed exactly by running sums (12 passes over at most 12k entries).
fn irwin_hall(n: u64, k: u64, offset: u64) -> Vec<f32> {
    let k = k as usize;
    let mut dist = vec![1.0f64];
    for _ in 0..12 {
        let mut next = vec![0.0f64; dist.len() + k - 1];
        // next[s] = (1/k) Σ_{j<k} dist[s − j]: a window sum sliding over dist.
        let mut window = 0.0;
        for (s, out) in next.iter_mut().enumerate() {
            if s < dist.len() {
                window += dist[s];
            }
            if s >= k {
                window -= dist[s - k];
            }
            *out = window / k as f64;
        }
        dist = next;
    }
    let mut p = vec![0.0f64; n as usize];
    for (s, &q) in dist.iter().enumerate() {
        let page = (s as u64 + offset).min(n - 1);
        p[page as usize] += q;
    }
    p.into_iter().map(|q| q as f32).collect()
}

/// pmbench's bounded Pareto (L = 1, H = n, α): the draw x has
/// F(x) = (1 − x^−α) / (1 − H^−α) on [1, H], and the page is ⌊x⌋ − 1, clamped to `n − 1`.
fn pareto(n: u64, alpha: f64, h_pow: f64) -> Vec<f32> {
    let cdf = |x: f64| {
        if x >= n as f64 {
            1.0
        } else {
            (1.0 - x.powf(-alpha)) / (1.0 - h_pow)
        }
    };
    (0..n)
        .map(|i| {
            let hi = if i + 1 == n { 1.0 } else { cdf(i as f64 + 2.0) };
            (hi - cdf(i as f64 + 1.0)) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use tiermem_core::config::PmbenchPattern;

    /// The pmf against a histogram of the generator's own draws: every page's count within
    /// 5 standard deviations of its expectation, and the total variation small.
    fn matches_draws(kind: PmbenchPattern, n: u64, shape: Option<f64>) {
        let mut pat = Pattern::new(kind, n, shape, 1);
        let pmf = of_pattern(&pat).unwrap();
        let total: f64 = pmf.iter().map(|&q| q as f64).sum();
        assert!((total - 1.0).abs() < 1e-4, "{kind:?} sums to {total}");
        let draws = 2_000_000u64;
        let mut hist = vec![0u64; n as usize];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        for _ in 0..draws {
            hist[pat.next(&mut rng) as usize] += 1;
        }
        let mut tv = 0.0;
        for (i, (&h, &q)) in hist.iter().zip(pmf.iter()).enumerate() {
            let e = q as f64 * draws as f64;
            let sd = e.max(1.0).sqrt();
            assert!(
                (h as f64 - e).abs() < 5.0 * sd + 2.0,
                "{kind:?} page {i}: {h} draws, expected {e:.1}"
            );
            tv += (h as f64 / draws as f64 - q as f64).abs();
        }
        assert!(tv / 2.0 < 0.01, "{kind:?}: total variation {tv}");
    }

    #[test]
    fn the_distributions_are_the_generators() {
        matches_draws(PmbenchPattern::NormalIh, 1000, None);
        matches_draws(PmbenchPattern::NormalIh, 37, None);
        matches_draws(PmbenchPattern::Uniform, 500, None);
        matches_draws(PmbenchPattern::Pareto, 800, None);
        matches_draws(PmbenchPattern::Pareto, 800, Some(0.5));
        // σ of 10 pages over 100 (nothing falls outside) and of 40 (a tenth lands on N/2).
        matches_draws(PmbenchPattern::Normal, 100, Some(10.0));
        matches_draws(PmbenchPattern::Normal, 100, Some(40.0));
    }

    #[test]
    fn patterns_with_dependent_draws_have_none() {
        let lin = Pattern::new(PmbenchPattern::Linear, 100, None, 3);
        assert!(of_pattern(&lin).is_none());
    }
}
