//! How close a simulated figure is to its published one.
//!
//! * A figure, and a step (the change from one variant to another, in per cent), is within
//!   ±25 % of its published value.
//! * An experiment file may widen that for a metric to a floor in the metric's own units
//!   (`[tolerance.floors]` for figures, `[tolerance.step_floors]` in percentage points for
//!   steps), with the reason it gives: run-to-run noise the published runs had too. A floor
//!   must stay below half of every published value it applies to ([`MAX_FLOOR_SHARE`];
//!   the file is refused otherwise), so every tolerance can fail: a 0.32 % spread judged
//!   against 0.0004 % is outside whatever the file says.
//!
//! Every report lists each published figure with its tolerance and verdict; a figure
//! outside carries the experiment file's explanation (`explain`), or says that none is
//! recorded.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The relative tolerance on a published figure or change.
pub const RELATIVE: f64 = 0.25;
/// A floor may not reach this share of a published value it applies to.
pub const MAX_FLOOR_SHARE: f64 = 0.5;

/// How far a simulated value may be from the published one: the wider of `relative` ×
/// |published| and `floor` (in the metric's units; 0 for none).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    pub relative: f64,
    pub floor: f64,
}

impl Tolerance {
    /// ±25 %, widened to `floor` where the experiment file sets one.
    pub fn new(floor: Option<f64>) -> Tolerance {
        Tolerance {
            relative: RELATIVE,
            floor: floor.unwrap_or(0.0),
        }
    }

    /// The largest distance from `published` that is within.
    pub fn width(self, published: f64) -> f64 {
        (self.relative * published.abs()).max(self.floor)
    }

    /// Whether `simulated` is within the tolerance of `published`.
    pub fn holds(self, simulated: f64, published: f64) -> bool {
        (simulated - published).abs() <= self.width(published)
    }

    /// As the report writes it for `published`: `±25 %`, or the floor where it is wider
    /// (`±0.5 (floor)`; `unit` follows the number, e.g. ` pp` for a step).
    pub fn describe(self, published: f64, unit: &str) -> String {
        if self.floor > self.relative * published.abs() {
            format!("±{}{unit} (floor)", self.floor)
        } else {
            format!("±{:.0} %", self.relative * 100.0)
        }
    }
}

/// An experiment file's floor for one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    /// In the metric's units (percentage points for a step).
    pub value: f64,
    /// Why the published figure cannot be held closer (shown in the report).
    pub why: String,
}

/// An experiment file's `[tolerance]`: floors per metric, for figures and for steps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub floors: BTreeMap<String, Floor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub step_floors: BTreeMap<String, Floor>,
}

impl Floors {
    pub fn is_empty(&self) -> bool {
        self.floors.is_empty() && self.step_floors.is_empty()
    }

    /// The tolerance on a published figure of `metric`.
    pub fn figure(&self, metric: &str) -> Tolerance {
        Tolerance::new(self.floors.get(metric).map(|f| f.value))
    }

    /// The tolerance on a published change of `metric`.
    pub fn step(&self, metric: &str) -> Tolerance {
        Tolerance::new(self.step_floors.get(metric).map(|f| f.value))
    }

    /// A floor that is not a positive number, or that reaches half of a published value
    /// it applies to: `figures` and `steps` are (row or step, metric, published) triples.
    /// The message names the key.
    pub fn check(
        &self,
        figures: &[(String, String, f64)],
        steps: &[(String, String, f64)],
    ) -> Result<(), (String, String)> {
        for (table, floors, published) in [
            ("floors", &self.floors, figures),
            ("step_floors", &self.step_floors, steps),
        ] {
            for (metric, f) in floors {
                let key = format!("tolerance.{table}.{metric}");
                if !(f.value.is_finite() && f.value > 0.0) {
                    return Err((key, format!("{} is not a positive number", f.value)));
                }
                let applies: Vec<_> = published.iter().filter(|(_, m, _)| m == metric).collect();
                if applies.is_empty() {
                    return Err((
                        key,
                        format!("no published {metric} for the floor to apply to"),
                    ));
                }
                if let Some((row, _, p)) = applies
                    .iter()
                    .find(|(_, _, p)| f.value >= MAX_FLOOR_SHARE * p.abs())
                {
                    return Err((
                        key,
                        format!(
                            "{} is half or more of {row}'s published {p}: a tolerance that wide cannot fail",
                            f.value
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One published figure against its simulated value.
#[derive(Clone, Debug, Serialize)]
pub struct Agreement {
    pub row: String,
    pub metric: String,
    pub published: f64,
    /// None when the run did not produce the metric. Over several seeds: the mean.
    pub simulated: Option<f64>,
    /// Over several seeds: the standard deviation of the simulated figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulated_sd: Option<f64>,
    pub tolerance: Tolerance,
    pub within: bool,
    /// Why the figure differs, from the experiment file (shown when it is outside).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<String>,
}

impl Agreement {
    /// `simulated` against `published` for `metric` of `row`, within `tolerance`.
    pub fn figure(
        row: &str,
        metric: &str,
        simulated: Option<f64>,
        published: f64,
        tolerance: Tolerance,
        explain: Option<&String>,
    ) -> Agreement {
        Agreement {
            row: row.to_string(),
            metric: metric.to_string(),
            published,
            simulated,
            simulated_sd: None,
            tolerance,
            within: simulated.is_some_and(|s| tolerance.holds(s, published)),
            explain: explain.cloned(),
        }
    }
}

/// The report's word for a verdict.
pub fn verdict(within: bool) -> &'static str {
    if within {
        "yes"
    } else {
        "**no**"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_steps_are_held_to_a_quarter() {
        let t = Floors::default().figure("workloads[0].score_accesses_per_s");
        assert!(t.holds(1.2 * 146.9e6, 146.9e6));
        assert!(!t.holds(0.7 * 146.9e6, 146.9e6));
        assert_eq!(t.describe(146.9e6, ""), "±25 %");
        // A small percentage is relative too: 0.0004 % against 0.32 % is outside.
        let t = Floors::default().figure("spread_pct");
        assert!(!t.holds(0.0004, 0.32));
        assert!(t.holds(0.36, 0.32));
        let t = Floors::default().step("promote_mbps");
        assert!(t.holds(-31.0, -25.0));
        assert!(!t.holds(-1.2, -1.7 * 2.0));
    }

    #[test]
    fn a_floor_widens_small_figures_but_never_to_half_of_one() {
        let f = Floors {
            floors: [(
                "slowdown_pct".to_string(),
                Floor {
                    value: 0.5,
                    why: "noise".into(),
                },
            )]
            .into(),
            ..Default::default()
        };
        let t = f.figure("slowdown_pct");
        // 1.84 %: a quarter is 0.46 points, the floor 0.5.
        assert!(t.holds(2.3, 1.84));
        assert!(!t.holds(2.4, 1.84));
        assert_eq!(t.describe(1.84, " pp"), "±0.5 pp (floor)");
        // 5.4 %: a quarter (1.35) is wider than the floor.
        assert!(t.holds(6.7, 5.4));
        assert_eq!(t.describe(5.4, " pp"), "±25 %");
        let fig = |p: f64| vec![("v".to_string(), "slowdown_pct".to_string(), p)];
        assert!(f.check(&fig(1.84), &[]).is_ok());
        let (key, msg) = f.check(&fig(0.9), &[]).unwrap_err();
        assert_eq!(key, "tolerance.floors.slowdown_pct");
        assert!(msg.contains("cannot fail"), "{msg}");
        assert!(f.check(&[], &[]).unwrap_err().1.contains("no published"));
    }

    #[test]
    fn a_missing_value_is_outside() {
        let t = Floors::default().figure("slowdown_pct");
        let a = Agreement::figure("v", "slowdown_pct", None, 5.4, t, None);
        assert!(!a.within);
        let a = Agreement::figure("v", "slowdown_pct", Some(4.5), 5.4, t, None);
        assert!(a.within);
    }
}
