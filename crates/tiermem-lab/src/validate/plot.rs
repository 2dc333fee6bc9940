//! The overlay plot of a scenario: each checked column over time, the kernel's recording
//! (solid) and the simulation (dashed), one small chart per column, as SVG.

use super::timeline::Timeline;
use plotters::prelude::*;

const W: u32 = 420;
const H: u32 = 260;

/// SVG text of the overlay (an empty string when there is nothing to plot).
pub fn overlay(title: &str, kernel: &Timeline, sim: &Timeline, columns: &[String]) -> String {
    let cols: Vec<&String> = columns
        .iter()
        .filter(|c| kernel.column(c).is_some() || sim.column(c).is_some())
        .collect();
    if cols.is_empty() {
        return String::new();
    }
    // Text needs the embedded font registered (plotters measures it even for SVG).
    crate::fonts::register();
    let per_row = cols.len().min(3);
    let rows = cols.len().div_ceil(per_row);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W * per_row as u32, H * rows as u32 + 30))
            .into_drawing_area();
        let _ = root.fill(&WHITE);
        let (head, body) = root.split_vertically(30);
        let _ = head.titled(
            &format!("{title}: kernel (solid) vs simulation (dashed)"),
            ("sans-serif", 16),
        );
        let areas = body.split_evenly((rows, per_row));
        for (area, col) in areas.iter().zip(cols) {
            let _ = chart(area, col, kernel.series(col), sim.series(col));
        }
        let _ = root.present();
    }
    svg
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn chart<'a>(
    area: &'a Area<'_>,
    name: &str,
    k: Option<Vec<(f64, f64)>>,
    s: Option<Vec<(f64, f64)>>,
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    let all = k.iter().chain(s.iter()).flatten();
    let (mut tmax, mut ymin, mut ymax) = (1e-9f64, 0f64, 1e-9f64);
    for &(t, y) in all {
        tmax = tmax.max(t);
        ymin = ymin.min(y);
        ymax = ymax.max(y);
    }
    let mut c = ChartBuilder::on(area)
        .caption(name, ("sans-serif", 13))
        .margin(6)
        .x_label_area_size(24)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..tmax, ymin..ymax * 1.05)?;
    c.configure_mesh()
        .x_desc("s")
        .x_labels(6)
        .y_labels(5)
        .label_style(("sans-serif", 10))
        .draw()?;
    if let Some(k) = k {
        c.draw_series(LineSeries::new(k, BLUE.stroke_width(2)))?;
    }
    if let Some(s) = s {
        c.draw_series(DashedLineSeries::new(
            s,
            6,
            4,
            RGBColor(230, 120, 0).stroke_width(2),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_overlay_has_its_charts_and_labels() {
        let k = super::Timeline::parse("time_s,x\n0,0\n1,5\n", "k").unwrap();
        let s = super::Timeline::parse("time_s,x\n0,0\n1,4\n", "s").unwrap();
        let svg = super::overlay("t", &k, &s, &["x".to_string()]);
        assert!(svg.contains("<text"), "no labels drawn: {svg}");
        assert!(
            svg.contains("<polyline") || svg.contains("<path"),
            "no lines drawn"
        );
    }
}
