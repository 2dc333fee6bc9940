//! One experiment over several seeds: each variant runs once per seed, its metrics are
//! derived against the *same seed's* baseline, and the report shows the mean over the
//! seeds with the sample standard deviation beside it.
//!
//! Why: a simulated figure of one seed is one sample. Seed 004's variants, for example,
//! move by 1.5 to 5 points of memory saving from one seed to the next (docs/seeds.md), so
//! a published change of a few points between two variants cannot be judged from one
//! seed. With `seeds = [4, 5, 6, 7]` in the experiment file (or `--seeds` on the command
//! line) the report says whether the change holds on the mean, how far the per-seed
//! changes spread, and in how many seeds it holds.

use std::collections::BTreeMap;

/// The most seeds one experiment runs (each is a full set of variant runs, and every run's
/// result stays in memory until all have ended).
pub const MAX_SEEDS: usize = 16;

/// Check a list of seeds: not empty, at most [`MAX_SEEDS`], no repeats, each a TOML
/// integer (at most `i64::MAX`, as the config's `seed` key is). The message names the
/// first problem.
pub fn check(seeds: &[u64]) -> Result<(), String> {
    if seeds.is_empty() {
        return Err("give at least one seed".into());
    }
    if seeds.len() > MAX_SEEDS {
        return Err(format!(
            "{} seeds: at most {MAX_SEEDS} (each runs every variant)",
            seeds.len()
        ));
    }
    for (i, s) in seeds.iter().enumerate() {
        if i64::try_from(*s).is_err() {
            return Err(format!("seed {s} is above {} (a TOML integer)", i64::MAX));
        }
        if seeds[..i].contains(s) {
            return Err(format!("seed {s} is given twice"));
        }
    }
    Ok(())
}

/// Mean and sample standard deviation (n − 1) of `xs`; the deviation is `None` for fewer
/// than two values.
pub fn mean_sd(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.len() > 1).then(|| {
        let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1.0)).sqrt()
    });
    Some((mean, sd))
}

/// One variant's metrics over the seeds: each metric's mean over the seeds that produced
/// it, and its standard deviation where at least two did and they differ (a label, or a
/// figure the seed does not move, has none).
pub fn combine(
    per_seed: &[&BTreeMap<String, f64>],
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for m in per_seed {
        for (k, v) in m.iter() {
            values.entry(k.as_str()).or_default().push(*v);
        }
    }
    let (mut mean, mut sd) = (BTreeMap::new(), BTreeMap::new());
    for (k, xs) in values {
        if let Some((m, s)) = mean_sd(&xs) {
            mean.insert(k.to_string(), m);
            if let Some(s) = s.filter(|s| *s > 0.0) {
                sd.insert(k.to_string(), s);
            }
        }
    }
    (mean, sd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_deviation() {
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((m - 5.0).abs() < 1e-12);
        // Sample (n − 1) deviation: sqrt(32 / 7).
        assert!((s.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), Some((3.0, None)));
        assert_eq!(mean_sd(&[]), None);
    }

    #[test]
    fn metrics_missing_in_some_seeds_average_over_the_others() {
        let a: BTreeMap<String, f64> = [("x".into(), 1.0), ("y".into(), 10.0)].into();
        let b: BTreeMap<String, f64> = [("x".into(), 3.0)].into();
        let (mean, sd) = combine(&[&a, &b]);
        assert_eq!(mean["x"], 2.0);
        assert_eq!(mean["y"], 10.0);
        assert!((sd["x"] - 2f64.sqrt()).abs() < 1e-12);
        assert!(!sd.contains_key("y"), "one value has no deviation");
        let (_, sd) = combine(&[&b, &b]);
        assert!(sd.is_empty(), "equal values have none");
    }

    #[test]
    fn seed_lists_are_checked() {
        assert!(check(&[4, 5, 6, 7]).is_ok());
        assert!(check(&[]).unwrap_err().contains("at least one"));
        assert!(check(&[4, 5, 4])
            .unwrap_err()
            .contains("seed 4 is given twice"));
        assert!(check(&[u64::MAX]).unwrap_err().contains("TOML integer"));
        let many: Vec<u64> = (0..=MAX_SEEDS as u64).collect();
        assert!(check(&many).unwrap_err().contains("at most 16"));
    }
}
