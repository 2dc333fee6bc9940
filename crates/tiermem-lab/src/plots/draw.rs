//! Drawing a [`Figure`] with plotters, on any backend (PNG and SVG files). Log axes are
//! drawn by plotting log10 of the values with labels in the original units.

use super::figure::{Figure, HLine, Heat, Line, Marker, Panel, Stroke};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

type Res = Result<(), String>;

/// Pixel size of a figure of `panels` stacked panels (8 × 4.5 in at 120 dpi for one).
pub fn size(panels: usize) -> (u32, u32) {
    if panels <= 1 {
        (960, 540)
    } else {
        (960, (0.45 * 540.0 * panels as f64 + 120.0) as u32)
    }
}

/// The line colours (matplotlib's default cycle, so that plots match the notebooks').
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draw `fig` on `root`.
pub fn figure<DB: DrawingBackend>(fig: &Figure, root: &DrawingArea<DB, Shift>) -> Res {
    root.fill(&WHITE).map_err(err)?;
    let body = match &fig.title {
        Some(t) => {
            let (head, body) = root.split_vertically(36);
            head.titled(t, ("sans-serif", 18)).map_err(err)?;
            body
        }
        None => root.clone(),
    };
    let areas = body.split_evenly((fig.panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(&fig.panels) {
        panel(p, area)?;
    }
    root.present().map_err(err)
}

/// Legends longer than this go beside the axes, in a column this wide (pixels).
const LEGEND_INSIDE: usize = 8;
const LEGEND_WIDTH: u32 = 250;

/// A tick label, `%.3g`-like.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{v:.2e}")
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// An axis range with a margin: 2 % of the span (5 % on y) on a linear axis, a factor on
/// a log one; from 0 for counts.
fn padded((lo, hi): (f64, f64), log: bool, share: f64, from_zero: bool) -> std::ops::Range<f64> {
    if log {
        let f = (hi / lo).powf(share);
        return lo / f..hi * f;
    }
    let (lo, hi) = if from_zero {
        (lo.min(0.0), hi.max(0.0))
    } else {
        (lo, hi)
    };
    let pad = (hi - lo) * share;
    let lo = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - pad
    };
    lo..hi + pad
}

/// The panel's axis ranges.
fn ranges(p: &Panel) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
    let (x, y) = p.extent();
    let xshare = if p.heat.is_some() || p.bars.is_some() {
        0.0
    } else {
        0.02
    };
    // Bars get room above them for their value labels.
    let yshare = if p.bars.is_some() {
        0.1
    } else if p.heat.is_some() {
        0.0
    } else {
        0.05
    };
    (
        padded(x, p.logx, xshare, false),
        padded(y, p.logy, yshare, p.y_from_zero),
    )
}

/// The width of a heatmap's colour bar column (pixels).
const COLOUR_BAR_WIDTH: u32 = 120;

fn panel<DB: DrawingBackend>(p: &Panel, whole: &DrawingArea<DB, Shift>) -> Res {
    let (w, _) = whole.dim_in_pixel();
    let mut bar = None;
    let area = &if p.legend_entries() > LEGEND_INSIDE {
        let (plot, legend) = whole.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
        side_legend(p, &legend)?;
        plot
    } else if p.heat.is_some() {
        let (plot, strip) = whole.split_horizontally(w.saturating_sub(COLOUR_BAR_WIDTH));
        bar = Some(strip);
        plot
    } else {
        whole.clone()
    };
    let y_pixels = chart_of(p, area)?;
    if let (Some(h), Some(strip)) = (&p.heat, bar) {
        colour_bar(h, &strip, y_pixels)?;
    }
    Ok(())
}

/// Build and draw the panel's chart on `area`; the plotting area's vertical pixel range
/// (backend coordinates).
fn chart_of<DB: DrawingBackend>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
) -> Result<std::ops::Range<i32>, String> {
    let (xr, yr) = ranges(p);
    let slanted = p.bars.as_ref().is_some_and(|b| {
        b.categories.len() > 6 || b.categories.iter().any(|c| c.chars().count() > 12)
    });
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .x_label_area_size(if slanted { 150 } else { 45 })
        .y_label_area_size(75);
    if let Some(t) = &p.title {
        builder.caption(t, ("sans-serif", 16));
    }
    match (p.logx, p.logy) {
        (false, false) => axes(p, area, builder.build_cartesian_2d(xr, yr), slanted),
        (true, false) => axes(
            p,
            area,
            builder.build_cartesian_2d(xr.log_scale(), yr),
            slanted,
        ),
        (false, true) => axes(
            p,
            area,
            builder.build_cartesian_2d(xr, yr.log_scale()),
            slanted,
        ),
        (true, true) => axes(
            p,
            area,
            builder.build_cartesian_2d(xr.log_scale(), yr.log_scale()),
            slanted,
        ),
    }
}

/// The legend of a panel with many lines, in its own column: each labelled line's colour
/// and stroke, then its label.
fn side_legend<DB: DrawingBackend>(p: &Panel, area: &DrawingArea<DB, Shift>) -> Res {
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    let mut y = 40;
    for l in p.lines.iter().filter(|l| l.label.is_some()) {
        let c = color(l.color);
        let (on, off) = match l.stroke {
            Stroke::Dashed => (8, 5),
            Stroke::Dotted => (2, 4),
            Stroke::DashDot => (10, 4),
            Stroke::Solid | Stroke::None => (24, 0),
        };
        area.draw(&plotters::element::DashedPathElement::new(
            vec![(8, y), (32, y)],
            on,
            off,
            c.stroke_width(3),
        ))
        .map_err(err)?;
        let label = l.label.clone().unwrap_or_default();
        area.draw(&Text::new(label, (38, y - 7), font.clone()))
            .map_err(err)?;
        y += 16;
    }
    Ok(())
}

/// The mesh, labels and contents of a built chart. Bar groups sit at whole x units, with
/// ticks every half unit; the formatter names the whole ones.
fn axes<'a, DB: DrawingBackend + 'a, X, Y, E: std::fmt::Display>(
    p: &Panel,
    area: &DrawingArea<DB, Shift>,
    built: Result<ChartContext<'a, DB, Cartesian2d<X, Y>>, E>,
    slanted: bool,
) -> Result<std::ops::Range<i32>, String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = built.map_err(err)?;
    let names: Vec<String> = p
        .bars
        .as_ref()
        .map(|b| b.categories.clone())
        .unwrap_or_default();
    let fmt = |v: &f64| tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(&p.xlabel)
        .y_desc(&p.ylabel)
        .y_labels(8)
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 13));
    if names.is_empty() {
        mesh.x_labels(8);
    } else {
        mesh.x_labels(0).disable_x_mesh();
    }
    mesh.draw().map_err(err)?;
    category_labels(&names, area, &chart, slanted)?;
    contents(p, &mut chart)?;
    Ok(chart.plotting_area().get_pixel_range().1)
}

/// The bar groups' names under the x axis, turned a quarter when they would collide.
fn category_labels<'a, DB: DrawingBackend + 'a, X, Y>(
    names: &[String],
    area: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'a, DB, Cartesian2d<X, Y>>,
    slanted: bool,
) -> Res
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (bx, by) = area.get_base_pixel();
    let bottom = chart.y_range().start;
    let font = ("sans-serif", 12).into_font();
    let style = if slanted {
        font.transform(FontTransform::Rotate90)
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center))
    } else {
        font.color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top))
    };
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, bottom));
        area.draw(&Text::new(
            name.clone(),
            (x - bx, y - by + 6),
            style.clone(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// Everything inside the axes: heatmap cells, bars, lines, reference lines, the legend.
fn contents<'a, DB: DrawingBackend + 'a, X, Y>(
    p: &Panel,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Res
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let logy = p.logy;
    let mut labelled = false;
    if let Some(h) = &p.heat {
        heat(h, chart)?;
    }
    if let Some(b) = &p.bars {
        let w = b.width();
        // Bars rise from 0, or from the bottom of a log axis.
        let base = if logy { chart.y_range().start } else { 0.0 };
        for (j, (label, vals)) in b.series.iter().enumerate() {
            let c = color(j);
            let rects = vals.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                let x = b.centre(i, j);
                Some(Rectangle::new(
                    [(x - w / 2.0, base), (x + w / 2.0, v)],
                    c.filled(),
                ))
            });
            let drawn = chart.draw_series(rects).map_err(err)?;
            if let Some(l) = label {
                labelled = true;
                drawn.label(l.as_str()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())
                });
            }
            let whiskers = vals.iter().enumerate().filter_map(|(i, v)| {
                let (v, e) = ((*v)?, b.error(i, j)?);
                let (x, cap) = (b.centre(i, j), w / 6.0);
                // On a log axis a whisker below zero stops at the axis.
                let lo = if logy { (v - e).max(base) } else { v - e };
                Some(PathElement::new(
                    vec![
                        (x - cap, lo),
                        (x + cap, lo),
                        (x, lo),
                        (x, v + e),
                        (x - cap, v + e),
                        (x + cap, v + e),
                    ],
                    BLACK.stroke_width(1),
                ))
            });
            chart.draw_series(whiskers).map_err(err)?;
            let texts = vals.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                let top = v + b.error(i, j).unwrap_or(0.0);
                Some(Text::new(
                    tick(v),
                    (b.centre(i, j), top),
                    ("sans-serif", 11)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                ))
            });
            chart.draw_series(texts).map_err(err)?;
        }
    }
    for l in &p.lines {
        labelled |= line(l, chart)?;
    }
    for h in &p.hlines {
        labelled |= hline(h, chart)?;
    }
    if let Some(n) = &p.note {
        let (xr, yr) = (chart.x_range(), chart.y_range());
        let at = ((xr.start + xr.end) / 2.0, (yr.start + yr.end) / 2.0);
        chart
            .draw_series(std::iter::once(Text::new(
                n.clone(),
                at,
                ("sans-serif", 14)
                    .into_font()
                    .color(&RGBColor(128, 128, 128)),
            )))
            .map_err(err)?;
    }
    // A long legend is drawn beside the axes instead ([`side_legend`]).
    if labelled && p.legend_entries() <= LEGEND_INSIDE {
        let corner = legend_corner(p, chart);
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .position(corner)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// The corner of the plotting area where the legend covers the least data (as
/// matplotlib's `loc="best"`): the points of every line (with 16 more along each
/// segment), the tops of the bars and the reference lines, counted under a box the size
/// the legend takes in each corner; ties keep the first of upper right, upper left, lower
/// right, lower left.
fn legend_corner<'a, DB: DrawingBackend + 'a, X, Y>(
    p: &Panel,
    chart: &ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> SeriesLabelPosition
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let longest = p
        .lines
        .iter()
        .filter_map(|l| l.label.as_ref())
        .chain(p.hlines.iter().filter_map(|h| h.label.as_ref()))
        .chain(
            p.bars
                .iter()
                .flat_map(|b| b.series.iter().filter_map(|s| s.0.as_ref())),
        )
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0) as i32;
    let (bw, bh) = (40 + 7 * longest, 10 + 18 * p.legend_entries() as i32);
    let mut pts: Vec<(i32, i32)> = Vec::new();
    let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
    for l in &p.lines {
        for w in l.points.windows(2) {
            for k in 0..16 {
                let t = k as f64 / 16.0;
                pts.push(px(
                    w[0].0 + (w[1].0 - w[0].0) * t,
                    w[0].1 + (w[1].1 - w[0].1) * t,
                ));
            }
        }
        pts.extend(l.points.iter().map(|&(x, y)| px(x, y)));
    }
    let (xr, yr) = (chart.x_range(), chart.y_range());
    // Data counts four times a reference line; a reference line's label counts as data.
    let mut pts: Vec<(i32, i32)> = pts.into_iter().flat_map(|q| [q; 4]).collect();
    for h in &p.hlines {
        let (x0, x1) = h.span.unwrap_or((xr.start, xr.end));
        pts.extend((0..=32).map(|k| px(x0 + (x1 - x0) * k as f64 / 32.0, h.y)));
        if let (Some(l), None) = (&h.label, h.span) {
            let (lx, ly) = px(xr.start, h.y);
            let len = 7 * l.chars().count() as i32;
            for k in 0..=8 {
                pts.extend([(lx + len * k / 8, ly - 6); 4]);
            }
        }
    }
    if let Some(b) = &p.bars {
        for (j, (_, vals)) in b.series.iter().enumerate() {
            for (i, v) in vals.iter().enumerate() {
                if let Some(v) = v {
                    let top = (*v).max(yr.start);
                    // A bar covers everything below its top.
                    pts.extend([px(b.centre(i, j), top); 4]);
                    pts.extend([px(b.centre(i, j), (top + yr.start) / 2.0); 4]);
                }
            }
        }
    }
    let corners = [
        (SeriesLabelPosition::UpperRight, xs.end - bw, ys.start),
        (SeriesLabelPosition::UpperLeft, xs.start, ys.start),
        (SeriesLabelPosition::LowerRight, xs.end - bw, ys.end - bh),
        (SeriesLabelPosition::LowerLeft, xs.start, ys.end - bh),
    ];
    let covered = |x: i32, y: i32| {
        pts.iter()
            .filter(|(a, b)| *a >= x && *a <= x + bw && *b >= y && *b <= y + bh)
            .count()
    };
    let mut best = (usize::MAX, SeriesLabelPosition::UpperRight);
    for (pos, x, y) in corners {
        let n = covered(x, y);
        if n < best.0 {
            best = (n, pos);
        }
    }
    best.1
}

/// One line with its markers; returns whether it has a legend entry.
fn line<'a, DB: DrawingBackend + 'a, X, Y>(
    l: &Line,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<bool, String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let c = color(l.color);
    let style = c.stroke_width(2);
    let pts: Vec<(f64, f64)> = l
        .points
        .iter()
        .copied()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    let legend =
        move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3));
    let mut labelled = false;
    if let Some(m) = l.marker {
        let drawn = match m {
            Marker::Circle => chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled()))),
            Marker::Cross => {
                chart.draw_series(pts.iter().map(|&p| Cross::new(p, 6, c.stroke_width(2))))
            }
            Marker::Star => {
                chart.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 10, c.filled())))
            }
            Marker::Diamond => chart.draw_series(pts.iter().map(|&p| {
                EmptyElement::at(p)
                    + Polygon::new(vec![(0, -7), (7, 0), (0, 7), (-7, 0)], c.filled())
            })),
        }
        .map_err(err)?;
        if let (Stroke::None, Some(label)) = (l.stroke, &l.label) {
            drawn.label(label.as_str()).legend(legend);
            labelled = true;
        }
    }
    let dashes = match l.stroke {
        Stroke::None => return Ok(labelled),
        Stroke::Solid => None,
        Stroke::Dashed => Some((8, 5)),
        Stroke::Dotted => Some((2, 4)),
        Stroke::DashDot => Some((10, 4)),
    };
    let drawn = match dashes {
        None => chart.draw_series(LineSeries::new(pts, style)),
        Some((on, off)) => chart.draw_series(DashedLineSeries::new(pts, on, off, style)),
    }
    .map_err(err)?;
    if let Some(label) = &l.label {
        let (on, off) = dashes.unwrap_or((24, 0));
        drawn.label(label.as_str()).legend(move |(x, y)| {
            plotters::element::DashedPathElement::new(
                vec![(x, y), (x + 24, y)],
                on,
                off,
                c.stroke_width(3),
            )
        });
        labelled = true;
    }
    Ok(labelled)
}

fn hline<'a, DB: DrawingBackend + 'a, X, Y>(
    h: &HLine,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Result<bool, String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let y = h.y;
    let xr = chart.x_range();
    let (x0, x1) = h.span.unwrap_or((xr.start, xr.end));
    let c = if h.black {
        BLACK
    } else {
        RGBColor(128, 128, 128)
    };
    let series = DashedLineSeries::new(vec![(x0, y), (x1, y)], 6, 4, c.stroke_width(2));
    match (&h.label, h.span) {
        (Some(l), Some(_)) => {
            chart
                .draw_series(series)
                .map_err(err)?
                .label(l.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            Ok(true)
        }
        (label, _) => {
            chart.draw_series(series).map_err(err)?;
            if let Some(l) = label {
                // Above the line, not across it.
                chart
                    .draw_series(std::iter::once(Text::new(
                        l.clone(),
                        (xr.start, y),
                        ("sans-serif", 11)
                            .into_font()
                            .color(&c)
                            .pos(Pos::new(HPos::Left, VPos::Bottom)),
                    )))
                    .map_err(err)?;
            }
            Ok(false)
        }
    }
}

/// A colour of the viridis map at `f` in [0, 1] (five anchor colours, interpolated).
fn viridis(f: f64) -> RGBColor {
    const A: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let f = f.clamp(0.0, 1.0) * (A.len() - 1) as f64;
    let i = (f.floor() as usize).min(A.len() - 2);
    let t = f - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    RGBColor(
        mix(A[i].0, A[i + 1].0),
        mix(A[i].1, A[i + 1].1),
        mix(A[i].2, A[i + 1].2),
    )
}

/// Decades of a heatmap's log colour scale, below its largest value.
const HEAT_DECADES: f64 = 3.0;

/// A heatmap's colour scale: log from the smallest non-zero value, but at most
/// [`HEAT_DECADES`] below the largest (smaller values take the lowest colour), to the
/// largest. (lo, hi, ln(hi / lo)).
fn heat_scale(h: &Heat) -> (f64, f64, f64) {
    let nz = h.counts.iter().flatten().copied().filter(|v| *v > 0.0);
    let (lo, hi) = nz.fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(v), b.max(v)));
    if hi <= 0.0 {
        return (1.0, 1.0, 1e-12);
    }
    let lo = lo.max(hi / 10f64.powf(HEAT_DECADES)).min(hi);
    (lo, hi, (hi / lo).ln().max(1e-12))
}

/// The heatmap's cells and the boundaries between address ranges.
fn heat<'a, DB: DrawingBackend + 'a, X, Y>(
    h: &Heat,
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Res
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (lo, _, span) = heat_scale(h);
    let nt = h.counts.len() as f64;
    let dx = (h.x.1 - h.x.0) / nt;
    let cells = h.counts.iter().enumerate().flat_map(|(i, row)| {
        let dy = (h.y.1 - h.y.0) / row.len() as f64;
        row.iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0)
            .map(move |(j, v)| {
                let x = h.x.0 + i as f64 * dx;
                let y = h.y.0 + j as f64 * dy;
                Rectangle::new(
                    [(x, y), (x + dx, y + dy)],
                    viridis((v / lo).ln().max(0.0) / span).filled(),
                )
            })
    });
    chart.draw_series(cells).map_err(err)?;
    for &b in &h.boundaries {
        chart
            .draw_series(LineSeries::new(
                vec![(h.x.0, b), (h.x.1, b)],
                WHITE.mix(0.6),
            ))
            .map_err(err)?;
    }
    Ok(())
}

/// The heatmap's colour scale beside it, over the plotting area's height `ys` (backend
/// pixels): the colours from the lowest to the highest value, ticks at the ends and at
/// the powers of ten between, and what the colour measures.
fn colour_bar<DB: DrawingBackend>(
    h: &Heat,
    strip: &DrawingArea<DB, Shift>,
    ys: std::ops::Range<i32>,
) -> Res {
    let (lo, hi, span) = heat_scale(h);
    let (_, by) = strip.get_base_pixel();
    let (top, bottom) = (ys.start - by, ys.end - by);
    let (x0, x1) = (12, 30);
    let steps = (bottom - top).max(1);
    for k in 0..steps {
        let f = 1.0 - k as f64 / steps as f64;
        strip
            .draw(&Rectangle::new(
                [(x0, top + k), (x1, top + k + 1)],
                viridis(f).filled(),
            ))
            .map_err(err)?;
    }
    strip
        .draw(&Rectangle::new(
            [(x0, top), (x1, bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
    let y_of = |v: f64| bottom - (((v / lo).ln() / span) * (bottom - top) as f64).round() as i32;
    let font = ("sans-serif", 11).into_font().color(&BLACK);
    let mut ticks = vec![lo, hi];
    let mut d = 10f64.powf(lo.log10().ceil());
    while d < hi {
        if (d / lo).ln() / span > 0.08 && (hi / d).ln() / span > 0.08 {
            ticks.push(d);
        }
        d *= 10.0;
    }
    for v in ticks {
        let y = y_of(v);
        strip
            .draw(&PathElement::new(vec![(x1, y), (x1 + 4, y)], BLACK))
            .map_err(err)?;
        strip
            .draw(&Text::new(
                tick(v),
                (x1 + 6, y),
                font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
    }
    let label = format!("{} (log)", h.value_label);
    strip
        .draw(&Text::new(
            label,
            (98, (top + bottom) / 2),
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90)
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_like_matplotlibs() {
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1.5e7), "1.50e7");
    }

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
    }
}
