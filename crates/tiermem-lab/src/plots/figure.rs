//! What a plot shows, apart from how it is drawn: panels of lines, bars, reference marks
//! or a heatmap, with their axes. The builders ([`super::specs`]) make these from an
//! experiment's `results.json`; [`super::draw`] turns them into PNG or SVG.

/// A figure: one panel, or several stacked panels sharing the x axis.
#[derive(Clone, Debug, Default)]
pub struct Figure {
    pub title: Option<String>,
    pub panels: Vec<Panel>,
}

/// One set of axes.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: Option<String>,
    pub xlabel: String,
    pub ylabel: String,
    pub logx: bool,
    pub logy: bool,
    /// The y axis starts at 0 (counts, bandwidths), not at the data's minimum.
    pub y_from_zero: bool,
    pub lines: Vec<Line>,
    pub hlines: Vec<HLine>,
    pub bars: Option<Bars>,
    pub heat: Option<Heat>,
    /// A centred grey note (for an empty panel).
    pub note: Option<String>,
}

/// How a line is stroked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    Dotted,
    DashDot,
    /// Markers only, no line.
    None,
}

impl Stroke {
    /// The n-th style of the cycle that tells a run's lines apart.
    pub fn nth(n: usize) -> Stroke {
        [
            Stroke::Solid,
            Stroke::Dashed,
            Stroke::Dotted,
            Stroke::DashDot,
        ][n % 4]
    }
}

/// A point marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Cross,
    Star,
    Diamond,
}

/// A polyline through points (x ascending for sweeps, time for timelines).
#[derive(Clone, Debug)]
pub struct Line {
    pub label: Option<String>,
    pub points: Vec<(f64, f64)>,
    /// Index into the palette.
    pub color: usize,
    pub stroke: Stroke,
    pub marker: Option<Marker>,
}

impl Line {
    pub fn new(label: impl Into<Option<String>>, points: Vec<(f64, f64)>, color: usize) -> Self {
        Line {
            label: label.into(),
            points,
            color,
            stroke: Stroke::Solid,
            marker: None,
        }
    }
}

/// A horizontal reference: across the panel (`span` None) or over `[x0, x1]`.
#[derive(Clone, Debug)]
pub struct HLine {
    pub y: f64,
    pub span: Option<(f64, f64)>,
    pub label: Option<String>,
    /// Black dashed (published figures) or grey (reference variants).
    pub black: bool,
}

/// Grouped bars: one group per category, one bar per series.
#[derive(Clone, Debug)]
pub struct Bars {
    pub categories: Vec<String>,
    /// (label, value per category).
    pub series: Vec<(Option<String>, Vec<Option<f64>>)>,
    /// Per series, each bar's standard deviation over an experiment's seeds, drawn as a
    /// whisker of ±1 sd (empty, or None for a bar, where there is none).
    pub errors: Vec<Vec<Option<f64>>>,
}

impl Bars {
    /// Width of one bar (groups are 0.8 wide, one unit apart).
    pub fn width(&self) -> f64 {
        0.8 / self.series.len().max(1) as f64
    }

    /// The standard deviation of series `j`'s bar in category `i`, if it has one.
    pub fn error(&self, i: usize, j: usize) -> Option<f64> {
        self.errors.get(j)?.get(i).copied().flatten()
    }

    /// Centre of series `j`'s bar in category `i`.
    pub fn centre(&self, i: usize, j: usize) -> f64 {
        let n = self.series.len() as f64;
        i as f64 + (j as f64 - (n - 1.0) / 2.0) * self.width()
    }
}

/// A time × address matrix of counts, drawn on a log colour scale (cells of 0 blank).
#[derive(Clone, Debug)]
pub struct Heat {
    /// `counts[t][a]`.
    pub counts: Vec<Vec<f64>>,
    pub x: (f64, f64),
    pub y: (f64, f64),
    /// y positions of the boundaries between concatenated address ranges.
    pub boundaries: Vec<f64>,
    pub value_label: String,
}

impl Panel {
    /// How many entries the legend has.
    pub fn legend_entries(&self) -> usize {
        let lines = self.lines.iter().filter(|l| l.label.is_some()).count();
        let marks = self
            .hlines
            .iter()
            .filter(|h| h.label.is_some() && h.span.is_some())
            .count();
        let bars = self
            .bars
            .as_ref()
            .map_or(0, |b| b.series.iter().filter(|s| s.0.is_some()).count());
        lines + marks + bars
    }

    /// The data's x and y ranges (finite values only), before log scaling.
    pub fn extent(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        for l in &self.lines {
            for &(x, y) in &l.points {
                xs.push(x);
                ys.push(y);
            }
        }
        for h in &self.hlines {
            ys.push(h.y);
            if let Some((a, b)) = h.span {
                xs.extend([a, b]);
            }
        }
        if let Some(b) = &self.bars {
            xs.extend([-0.6, b.categories.len() as f64 - 0.4]);
            for (j, (_, vals)) in b.series.iter().enumerate() {
                for (i, v) in vals.iter().enumerate() {
                    let Some(v) = *v else { continue };
                    ys.push(v);
                    if let Some(e) = b.error(i, j) {
                        ys.extend([v - e, v + e]);
                    }
                }
            }
        }
        if let Some(h) = &self.heat {
            xs.extend([h.x.0, h.x.1]);
            ys.extend([h.y.0, h.y.1]);
        }
        (range(&xs, self.logx), range(&ys, self.logy))
    }
}

/// The finite (and, on a log axis, positive) range of values, widened when empty or flat.
fn range(v: &[f64], log: bool) -> (f64, f64) {
    let ok = v
        .iter()
        .copied()
        .filter(|x| x.is_finite() && (!log || *x > 0.0));
    let (lo, hi) = ok.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if lo > hi {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if lo == hi {
        return if log {
            (lo / 2.0, hi * 2.0)
        } else {
            (
                lo - 0.5_f64.max(lo.abs() * 0.05),
                hi + 0.5_f64.max(hi.abs() * 0.05),
            )
        };
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_centred_in_their_group() {
        let b = Bars {
            errors: Vec::new(),
            categories: vec!["a".into(), "b".into()],
            series: vec![(None, vec![Some(1.0), Some(2.0)]); 2],
        };
        assert!((b.width() - 0.4).abs() < 1e-12);
        assert!((b.centre(1, 0) - 0.8).abs() < 1e-12);
        assert!((b.centre(1, 1) - 1.2).abs() < 1e-12);
    }

    #[test]
    fn extents_skip_non_finite_and_non_positive_log_values() {
        let p = Panel {
            logy: true,
            lines: vec![Line::new(
                None,
                vec![(0.0, 0.0), (1.0, 10.0), (2.0, f64::NAN)],
                0,
            )],
            ..Panel::default()
        };
        assert_eq!(p.extent(), ((0.0, 2.0), (5.0, 20.0)));
    }
}
