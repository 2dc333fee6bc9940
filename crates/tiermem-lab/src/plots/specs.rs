//! The figures an experiment's `results.json` asks for (its `plots` entries), built from
//! its variants' metrics and timelines. The shapes are those of the Python package's
//! `tiermem.plots` (bar, line, timeline, weights, heatmap), which draws the same
//! `results.json` for notebooks.

use super::figure::{Bars, Figure, HLine, Heat, Line, Marker, Panel, Stroke};
use crate::validate::timeline::Timeline;
use serde_json::{Map, Value};
use std::path::Path;

/// Why a plot is not drawn (it is skipped with a warning; the others are still drawn).
#[derive(Debug)]
pub struct Skip(pub String);

impl<T: Into<String>> From<T> for Skip {
    fn from(s: T) -> Self {
        Skip(s.into())
    }
}

/// Base page size; `nodeN_used_pages` counts these.
const PAGE_SIZE: f64 = 4096.0;

/// Timeline plot kinds.
pub const KINDS: [&str; 6] = [
    "placement",
    "bandwidth",
    "latency",
    "vmstat",
    "promotion",
    "threshold",
];

fn kind_title(kind: &str) -> &'static str {
    match kind {
        "placement" => "Memory placement",
        "bandwidth" => "Memory bandwidth",
        "latency" => "Loaded memory latency",
        "vmstat" => "vmstat event rates",
        "promotion" => "Promotion and demotion rates",
        _ => "NUMA-balancing hot threshold",
    }
}

/// A plot entry of `results.json` with the accessors the builders share.
pub struct Spec<'a> {
    pub map: &'a Map<String, Value>,
    pub file: String,
    /// Warnings about parts left out (printed by the caller).
    pub warnings: Vec<String>,
}

impl<'a> Spec<'a> {
    pub fn new(map: &'a Map<String, Value>, file: String) -> Self {
        Spec {
            map,
            file,
            warnings: Vec::new(),
        }
    }

    fn str(&self, key: &str) -> Option<&'a str> {
        self.map.get(key).and_then(Value::as_str)
    }

    fn flag(&self, key: &str) -> bool {
        self.map.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// A field that is one name or a list of names (empty when absent).
    fn names(&self, key: &str) -> Result<Vec<String>, Skip> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Skip(format!("`{key}` must be a name or a list of names"))),
            Some(_) => Err(Skip(format!("`{key}` must be a name or a list of names"))),
        }
    }

    fn warn(&mut self, msg: String) {
        self.warnings.push(format!("{}: {msg}", self.file));
    }

    /// The variants the plot names (all when `variants` is absent).
    fn variants<'r>(&mut self, results: &'r Value) -> Result<Vec<&'r Value>, Skip> {
        let all: Vec<&Value> = results
            .get("variants")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let wanted = self.names("variants")?;
        let chosen: Vec<&Value> = if self.map.get("variants").is_none_or(Value::is_null) {
            all
        } else {
            let unknown: Vec<&str> = wanted
                .iter()
                .filter(|n| !all.iter().any(|v| name(v) == n.as_str()))
                .map(String::as_str)
                .collect();
            if !unknown.is_empty() {
                self.warn(format!("unknown variant(s) {} ignored", unknown.join(", ")));
            }
            wanted
                .iter()
                .filter_map(|n| all.iter().find(|v| name(v) == n.as_str()).copied())
                .collect()
        };
        if chosen.is_empty() {
            return Err("no variants to plot".into());
        }
        Ok(chosen)
    }

    /// The panel's axis labels, title and log scales from the spec, with defaults.
    fn panel(&mut self, xlabel: &str, ylabel: &str) -> Panel {
        Panel {
            title: self.str("title").map(String::from),
            xlabel: self.str("xlabel").unwrap_or(xlabel).to_string(),
            ylabel: self.str("ylabel").unwrap_or(ylabel).to_string(),
            logx: self.flag("logx"),
            logy: self.flag("logy"),
            ..Panel::default()
        }
    }

    /// Drop a log scale the data cannot take (non-positive values), with a warning.
    fn check_logs(&mut self, p: &mut Panel) {
        let xs: Vec<f64> = p
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|q| q.0))
            .collect();
        let mut ys: Vec<f64> = p
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|q| q.1))
            .collect();
        ys.extend(p.hlines.iter().map(|h| h.y));
        if let Some(b) = &p.bars {
            ys.extend(b.series.iter().flat_map(|s| s.1.iter().flatten().copied()));
        }
        let positive = |v: &[f64]| {
            let v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
            !v.is_empty() && v.iter().all(|x| *x > 0.0)
        };
        if p.logx && !positive(&xs) {
            p.logx = false;
            self.warn("logx ignored (x values must be positive)".into());
        }
        if p.logy && !positive(&ys) {
            p.logy = false;
            self.warn("logy ignored (y values must be positive)".into());
        }
    }
}

fn name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

/// A variant's numeric metric: a key of `field` (`metrics` or `published`), else a metric
/// path into it ([`crate::experiment::metric`]); None when missing, null or not a number.
pub fn metric(v: &Value, key: &str, field: &str) -> Option<f64> {
    let table = v.get(field)?;
    match table.get(key) {
        Some(x) => x.as_f64(),
        None => crate::experiment::metric(table, key),
    }
}

/// One group of bars per variant, one bar per `y` metric; published figures as dashed
/// black marks across their bars; over several seeds, ±1 sd whiskers.
pub fn bar(results: &Value, spec: &mut Spec) -> Result<Figure, Skip> {
    if spec.flag("logx") {
        spec.warn("logx does not apply to bar plots".into());
    }
    let ys = spec.names("y")?;
    if ys.is_empty() {
        return Err("a bar plot needs `y` metrics".into());
    }
    let variants = spec.variants(results)?;
    let values: Vec<Vec<Option<f64>>> = ys
        .iter()
        .map(|y| variants.iter().map(|v| metric(v, y, "metrics")).collect())
        .collect();
    if values.iter().flatten().all(Option::is_none) {
        return Err(format!("no variant has metric(s) {}", ys.join(", ")).into());
    }
    for (y, vals) in ys.iter().zip(&values) {
        let lacking: Vec<&str> = variants
            .iter()
            .zip(vals)
            .filter(|(_, v)| v.is_none())
            .map(|(v, _)| name(v))
            .collect();
        if !lacking.is_empty() {
            spec.warn(format!("metric {y} missing for {}", lacking.join(", ")));
        }
    }
    let bars = Bars {
        errors: ys
            .iter()
            .map(|y| variants.iter().map(|v| metric(v, y, "sd")).collect())
            .collect(),
        categories: variants.iter().map(|v| name(v).to_string()).collect(),
        series: ys
            .iter()
            .zip(values)
            .map(|(y, vals)| ((ys.len() > 1).then(|| y.clone()), vals))
            .collect(),
    };
    let mut panel = spec.panel("", &ys.join(", "));
    panel.logx = false;
    let mut first = true;
    for (j, y) in ys.iter().enumerate() {
        for (i, v) in variants.iter().enumerate() {
            if let Some(p) = metric(v, y, "published") {
                let c = bars.centre(i, j);
                let w = bars.width() / 2.0;
                panel.hlines.push(HLine {
                    y: p,
                    span: Some((c - w, c + w)),
                    label: first.then(|| "published".to_string()),
                    black: true,
                });
                first = false;
            }
        }
    }
    panel.y_from_zero = true;
    panel.bars = Some(bars);
    spec.check_logs(&mut panel);
    Ok(Figure {
        title: None,
        panels: vec![panel],
    })
}

/// A variant's value of a grouping key: a label (a sweep parameter) or a metric.
fn group_value(v: &Value, key: &str) -> String {
    if let Some(l) = v.get("labels").and_then(|l| l.get(key)) {
        return match l {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
    }
    metric(v, key, "metrics").map_or("missing".into(), |x| format!("{x}"))
}

/// `y` metrics against the `x` metric across variants, one line per `y` (or, with
/// `group`, one per distinct value of that label or metric); published figures as
/// crosses of the line's colour.
pub fn line(results: &Value, spec: &mut Spec) -> Result<Figure, Skip> {
    let x_name = spec
        .str("x")
        .ok_or_else(|| Skip::from("a line plot needs an `x` metric"))?
        .to_string();
    let ys = spec.names("y")?;
    if ys.is_empty() {
        return Err("a line plot needs `y` metrics".into());
    }
    let variants = spec.variants(results)?;
    let lacking: Vec<&str> = variants
        .iter()
        .filter(|v| metric(v, &x_name, "metrics").is_none())
        .map(|v| name(v))
        .collect();
    if !lacking.is_empty() {
        spec.warn(format!(
            "metric {x_name} missing for {}",
            lacking.join(", ")
        ));
    }
    let mut points: Vec<(f64, &Value)> = variants
        .iter()
        .filter_map(|v| Some((metric(v, &x_name, "metrics")?, *v)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.is_empty() {
        return Err(format!("no variant has metric {x_name}").into());
    }
    let pairs = |members: &[(f64, &Value)], y: &str, field: &str| -> Vec<(f64, f64)> {
        members
            .iter()
            .filter_map(|(x, v)| Some((*x, metric(v, y, field)?)))
            .collect()
    };
    let present: Vec<&String> = ys
        .iter()
        .filter(|y| !pairs(&points, y, "metrics").is_empty())
        .collect();
    for y in ys.iter().filter(|y| !present.contains(y)) {
        spec.warn(format!("no variant has metric {y}"));
    }
    if present.is_empty() {
        return Err(format!("no variant has metric(s) {}", ys.join(", ")).into());
    }
    let mut panel = spec.panel(&x_name, &ys.join(", "));
    let mut color = 0;
    if let Some(group) = spec.str("group") {
        let mut groups: Vec<(String, Vec<(f64, &Value)>)> = Vec::new();
        for &(x, v) in &points {
            let g = group_value(v, group);
            match groups.iter_mut().find(|(k, _)| *k == g) {
                Some((_, m)) => m.push((x, v)),
                None => groups.push((g, vec![(x, v)])),
            }
        }
        for y in &present {
            for (value, members) in &groups {
                let pts = pairs(members, y, "metrics");
                if pts.is_empty() {
                    continue;
                }
                let suffix = if present.len() > 1 {
                    format!(" ({y})")
                } else {
                    String::new()
                };
                let mut l = Line::new(format!("{group} = {value}{suffix}"), pts, color);
                l.marker = Some(Marker::Circle);
                panel.lines.push(l);
                color += 1;
            }
        }
    } else {
        for y in &present {
            let published = pairs(&points, y, "published");
            let label = if present.len() > 1 {
                Some(y.to_string())
            } else {
                (!published.is_empty()).then(|| "simulated".to_string())
            };
            let mut l = Line::new(label, pairs(&points, y, "metrics"), color);
            l.marker = Some(Marker::Circle);
            panel.lines.push(l);
            if !published.is_empty() {
                let mut p = Line::new(format!("{y} (published)"), published, color);
                p.stroke = Stroke::None;
                p.marker = Some(Marker::Cross);
                panel.lines.push(p);
            }
            color += 1;
        }
    }
    spec.check_logs(&mut panel);
    Ok(Figure {
        title: None,
        panels: vec![panel],
    })
}

/// A metric against an interleave weight (the tuner's sweep): the curve with its best
/// point starred; variants without the weight as grey reference lines, or, with an
/// `auto_<x>` metric (the weight a kernel derives from bandwidth), as a diamond there.
pub fn weights(results: &Value, spec: &mut Spec) -> Result<Figure, Skip> {
    let x_name = spec
        .str("x")
        .ok_or_else(|| Skip::from("a weights plot needs an `x` metric (the weight)"))?
        .to_string();
    let ys = spec.names("y")?;
    let [y_name] = ys.as_slice() else {
        return Err("a weights plot needs exactly one `y` metric".into());
    };
    let mut curve = Vec::new();
    let mut refs = Vec::new();
    for v in spec.variants(results)? {
        let Some(y) = metric(v, y_name, "metrics") else {
            spec.warn(format!("metric {y_name} missing for {}", name(v)));
            continue;
        };
        match metric(v, &x_name, "metrics") {
            Some(x) => curve.push((x, y)),
            None => refs.push((
                name(v).to_string(),
                y,
                metric(v, &format!("auto_{x_name}"), "metrics"),
            )),
        }
    }
    if curve.is_empty() {
        return Err(format!("no sweep variant has metrics {x_name} and {y_name}").into());
    }
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    let best = curve
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(curve[0]);
    let mut panel = spec.panel(&x_name, y_name);
    let mut sweep = Line::new("sweep".to_string(), curve, 0);
    sweep.marker = Some(Marker::Circle);
    panel.lines.push(sweep);
    let mut star = Line::new(format!("best: {}", best.0), vec![best], 3);
    star.stroke = Stroke::None;
    star.marker = Some(Marker::Star);
    panel.lines.push(star);
    for (i, (n, y, auto)) in refs.into_iter().enumerate() {
        match auto {
            Some(x) => {
                let mut d = Line::new(format!("{n} ({x})"), vec![(x, y)], 4 + i);
                d.stroke = Stroke::None;
                d.marker = Some(Marker::Diamond);
                panel.lines.push(d);
            }
            None => panel.hlines.push(HLine {
                y,
                span: None,
                label: Some(n),
                black: false,
            }),
        }
    }
    spec.check_logs(&mut panel);
    Ok(Figure {
        title: None,
        panels: vec![panel],
    })
}

/// Per-second rates of a cumulative counter that is 0 at time 0 (each sample's rate
/// covers the interval since the previous one; samples with no elapsed time dropped).
fn rates(s: &[(f64, f64)], scale: f64) -> Vec<(f64, f64)> {
    let mut prev = (0.0, 0.0);
    let mut out = Vec::new();
    for &(t, v) in s {
        if t > prev.0 {
            out.push((t, (v - prev.1) / (t - prev.0) * scale));
        }
        prev = (t, v);
    }
    out
}

/// The node ids with `nodeN_` columns, ascending.
fn node_ids(tl: &Timeline) -> Vec<u32> {
    let mut ids: Vec<u32> = tl
        .header
        .iter()
        .filter_map(|h| {
            let rest = h.strip_prefix("node")?;
            let (n, _) = rest.split_once('_')?;
            n.parse().ok()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Per node: the sum of the columns `nodeN_<suffix>` times `scale`.
fn node_series(tl: &Timeline, suffixes: &[&str], scale: f64) -> Result<Series, String> {
    let mut out = Vec::new();
    for n in node_ids(tl) {
        let cols: Option<Vec<Vec<(f64, f64)>>> = suffixes
            .iter()
            .map(|s| tl.series(&format!("node{n}_{s}")))
            .collect();
        let Some(cols) = cols else { continue };
        let pts = cols[0]
            .iter()
            .enumerate()
            .map(|(i, &(t, _))| {
                let sum: f64 = cols.iter().filter_map(|c| c.get(i)).map(|p| p.1).sum();
                (t, sum * scale)
            })
            .collect();
        out.push((format!("node {n}"), pts));
    }
    if out.is_empty() {
        let wanted: Vec<String> = suffixes.iter().map(|s| format!("nodeN_{s}")).collect();
        return Err(format!("the timeline has no {} columns", wanted.join(", ")));
    }
    Ok(out)
}

/// Columns that are neither the base columns nor per-node ones, and moved.
fn vmstat_columns(tl: &Timeline) -> Vec<String> {
    tl.header
        .iter()
        .filter(|h| {
            !matches!(
                h.as_str(),
                "time_s" | "throughput_accesses_per_s" | "mean_latency_ns"
            ) && node_ids_of(h).is_none()
        })
        .filter(|h| tl.series(h).is_some_and(|s| s.iter().any(|p| p.1 != 0.0)))
        .cloned()
        .collect()
}

fn node_ids_of(h: &str) -> Option<u32> {
    h.strip_prefix("node")?.split_once('_')?.0.parse().ok()
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

/// The lines a timeline of `kind` draws, and its y label.
pub fn timeline_series(tl: &Timeline, kind: &str) -> Result<(Series, String), String> {
    Ok(match kind {
        "placement" => (
            node_series(tl, &["used_pages"], PAGE_SIZE / (1u64 << 30) as f64)?,
            "used memory (GiB)".into(),
        ),
        "bandwidth" => (
            node_series(tl, &["read_MBps", "write_MBps"], 1.0)?,
            "read + write (MB/s)".into(),
        ),
        "latency" => (
            node_series(tl, &["latency_ns"], 1.0)?,
            "loaded latency (ns)".into(),
        ),
        "vmstat" => (
            vmstat_columns(tl)
                .into_iter()
                .filter_map(|c| Some((rates(&tl.series(&c)?, 1.0), c)))
                .map(|(s, c)| (c, s))
                .collect(),
            "events per second".into(),
        ),
        "promotion" => (
            ["pgpromote_success", "pgdemote_kswapd", "pgdemote_direct"]
                .iter()
                .filter_map(|c| {
                    let s = tl.series(c)?;
                    s.iter().any(|p| p.1 > 0.0).then(|| {
                        let label = c
                            .replace("pgpromote_success", "promoted")
                            .replace("pgdemote_", "demoted by ");
                        (label, rates(&s, PAGE_SIZE / 1e6))
                    })
                })
                .collect(),
            "MB/s".into(),
        ),
        "threshold" => (
            node_series(tl, &["hot_threshold_ms"], 1.0)?
                .into_iter()
                .filter(|(_, s)| s.iter().any(|p| p.1 > 0.0))
                .collect(),
            "hot threshold (ms)".into(),
        ),
        other => {
            return Err(format!(
                "unknown timeline plot kind {other:?}: expected one of {}",
                KINDS.join(", ")
            ))
        }
    })
}

/// Series re-plotted against another timeline column instead of time.
fn against(tl: &Timeline, series: Series, x: &str) -> Result<Series, String> {
    let col = tl
        .series(x)
        .ok_or_else(|| format!("the timeline has no column {x}"))?;
    Ok(series
        .into_iter()
        .map(|(label, s)| {
            let pts = s
                .into_iter()
                .filter_map(|(t, y)| {
                    let i = col.iter().position(|p| p.0 == t)?;
                    Some((col[i].1, y))
                })
                .collect();
            (label, pts)
        })
        .collect())
}

/// Timelines of the variants: a `kind` or raw `y` columns; on one axes each variant has
/// a colour and its lines differ by style, or with `subplots` one panel per variant.
pub fn timeline(dir: &Path, results: &Value, spec: &mut Spec) -> Result<Figure, Skip> {
    let columns = spec.names("y")?;
    let kind = match spec.str("kind") {
        Some(k) if !KINDS.contains(&k) => {
            return Err(format!(
                "unknown timeline kind {k:?}: expected one of {}",
                KINDS.join(", ")
            )
            .into())
        }
        Some(k) => Some(k),
        None if columns.is_empty() => Some("placement"),
        None => None,
    };
    let x_col = spec.str("x").filter(|x| *x != "time_s");
    let mut runs = Vec::new();
    for v in spec.variants(results)? {
        let Some(tl) = read_timeline(dir, v, spec) else {
            continue;
        };
        let made = match kind {
            Some(k) => timeline_series(&tl, k),
            None => columns
                .iter()
                .map(|c| {
                    tl.series(c)
                        .map(|s| (c.clone(), s))
                        .ok_or_else(|| format!("the timeline has no column(s) {c}"))
                })
                .collect::<Result<Series, String>>()
                .map(|s| (s, columns.join(", "))),
        }
        .and_then(|(s, label)| match x_col {
            Some(x) => against(&tl, s, x).map(|s| (s, label)),
            None => Ok((s, label)),
        });
        match made {
            Ok((series, label)) => runs.push((name(v).to_string(), series, label)),
            Err(e) => spec.warn(format!("variant {}: {e}", name(v))),
        }
    }
    if runs.is_empty() {
        return Err("no variant has a usable timeline".into());
    }
    let ylabel = runs[0].2.clone();
    let xlabel = x_col.unwrap_or("time (s)").to_string();
    let title = spec.str("title").map(String::from).or_else(|| {
        kind.map(
            |k| match results.get("experiment").and_then(Value::as_str) {
                Some(e) => format!("{e}: {}", kind_title(k)),
                None => kind_title(k).to_string(),
            },
        )
    });
    let from_zero =
        matches!(kind, Some("placement" | "bandwidth" | "vmstat")) && !spec.flag("logy");
    let empty_note = |s: &Series| {
        s.is_empty()
            .then(|| "no vmstat counter changed".to_string())
    };
    let mut fig = Figure::default();
    if spec.flag("subplots") {
        for (name, series, _) in &runs {
            let mut p = spec.panel("", &ylabel);
            p.title = Some(name.clone());
            p.xlabel = String::new();
            p.y_from_zero = from_zero;
            p.note = empty_note(series);
            p.lines = series
                .iter()
                .enumerate()
                .map(|(i, (l, s))| Line::new(l.clone(), s.clone(), i))
                .collect();
            spec.check_logs(&mut p);
            fig.panels.push(p);
        }
        if let Some(last) = fig.panels.last_mut() {
            last.xlabel = spec.str("xlabel").unwrap_or(&xlabel).to_string();
        }
        fig.title = title;
    } else {
        let mut p = spec.panel(&xlabel, &ylabel);
        p.title = title;
        p.y_from_zero = from_zero;
        if runs.iter().all(|r| r.1.is_empty()) {
            p.note = Some("no vmstat counter changed".into());
        }
        for (c, (name, series, _)) in runs.iter().enumerate() {
            for (i, (l, s)) in series.iter().enumerate() {
                let mut line = Line::new(format!("{name}: {l}"), s.clone(), c);
                line.stroke = Stroke::nth(i);
                p.lines.push(line);
            }
        }
        spec.check_logs(&mut p);
        fig.panels.push(p);
    }
    Ok(fig)
}

fn read_timeline(dir: &Path, v: &Value, spec: &mut Spec) -> Option<Timeline> {
    let Some(rel) = v.get("timeline_csv").and_then(Value::as_str) else {
        spec.warn(format!("variant {} has no timeline", name(v)));
        return None;
    };
    let path = dir.join(rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            spec.warn(format!("cannot read {}: {e}", path.display()));
            return None;
        }
    };
    match Timeline::parse(&text, &path.display().to_string()) {
        Ok(t) => Some(t),
        Err(e) => {
            spec.warn(format!("{e}"));
            None
        }
    }
}

/// A trace or DAMON heatmap (time × address, colour = accesses on a log scale) from the
/// JSON matrix named by `data` (what `tiermem report heatmap --out` and `tiermem trace
/// heatmap` write).
pub fn heatmap(dir: &Path, spec: &mut Spec) -> Result<Figure, Skip> {
    let data = spec
        .str("data")
        .ok_or_else(|| Skip::from("`data` must name the heatmap JSON file"))?;
    let path = super::inside(dir, data)?;
    let hm: Value = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| Skip(format!("cannot read {data}: {e}")))?;
    let counts: Vec<Vec<f64>> = hm
        .get("counts")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    r.as_array()
                        .map(|c| c.iter().map(|x| x.as_f64().unwrap_or(0.0)).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default();
    if counts.is_empty() || counts.iter().any(|r: &Vec<f64>| r.is_empty()) {
        return Err(format!("{data}: `counts` must be a non-empty matrix").into());
    }
    let num = |k: &str, d: f64| hm.get(k).and_then(Value::as_f64).unwrap_or(d);
    let (scale, tlabel) = if hm.get("time_unit").and_then(Value::as_str) == Some("ns") {
        (1e-9, "time (s)")
    } else {
        (1e-6, "instructions (millions)")
    };
    let (t0, t1) = (num("first_time", 0.0), num("last_time", 1.0));
    let mib = num("pages", 1.0) * PAGE_SIZE / (1u64 << 20) as f64;
    let mut boundaries = Vec::new();
    let mut pos = 0.0;
    if let Some(ranges) = hm.get("ranges").and_then(Value::as_array) {
        for r in ranges.iter().take(ranges.len().saturating_sub(1)) {
            let a = r.get(0).and_then(Value::as_f64).unwrap_or(0.0);
            let b = r.get(1).and_then(Value::as_f64).unwrap_or(0.0);
            pos += (b - a) * PAGE_SIZE / (1u64 << 20) as f64;
            boundaries.push(pos);
        }
    }
    let mut panel = spec.panel(tlabel, "touched address space (MiB, gaps removed)");
    panel.title = Some(spec.str("title").map(String::from).unwrap_or_else(|| {
        format!(
            "access heatmap of {}",
            hm.get("file").and_then(Value::as_str).unwrap_or("")
        )
    }));
    panel.logx = false;
    panel.logy = false;
    panel.heat = Some(Heat {
        counts,
        x: (t0 * scale, t1.max(t0 + 1.0) * scale),
        y: (0.0, mib),
        boundaries,
        value_label: hm
            .get("value_label")
            .and_then(Value::as_str)
            .unwrap_or("accesses per cell")
            .to_string(),
    });
    Ok(Figure {
        title: None,
        panels: vec![panel],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: &Value) -> Spec<'_> {
        Spec::new(v.as_object().unwrap(), "p.png".into())
    }

    #[test]
    fn metrics_are_keys_or_dotted_paths() {
        let v = json!({"metrics": {"a.b": 1.0, "w": {"x": 2}, "n": null}});
        assert_eq!(metric(&v, "a.b", "metrics"), Some(1.0));
        assert_eq!(metric(&v, "w.x", "metrics"), Some(2.0));
        assert_eq!(metric(&v, "n", "metrics"), None);
        assert_eq!(metric(&v, "w.y", "metrics"), None);
        let w = json!({"metrics": {"workloads": [{"score": 3.5}]}});
        assert_eq!(metric(&w, "workloads[0].score", "metrics"), Some(3.5));
    }

    #[test]
    fn a_bar_plot_has_a_group_per_variant_and_published_marks() {
        let r = json!({"variants": [
            {"name": "a", "metrics": {"t": 1.0}, "published": {"t": 1.5}},
            {"name": "b", "metrics": {"t": 2.0}}]});
        let s = json!({"file": "p.png", "type": "bar", "y": "t"});
        let mut sp = spec(&s);
        let f = bar(&r, &mut sp).unwrap();
        let b = f.panels[0].bars.as_ref().unwrap();
        assert_eq!(b.categories, ["a", "b"]);
        assert_eq!(b.series[0].1, [Some(1.0), Some(2.0)]);
        assert_eq!(f.panels[0].hlines.len(), 1);
        assert!(sp.warnings.is_empty());
        assert_eq!(b.error(0, 0), None, "one seed: no whiskers");
    }

    #[test]
    fn bars_over_several_seeds_get_whiskers_that_the_axis_takes_in() {
        let r = json!({"variants": [
            {"name": "a", "metrics": {"t": 1.0}, "sd": {"t": 0.5}},
            {"name": "b", "metrics": {"t": 2.0}}]});
        let s = json!({"file": "p.png", "type": "bar", "y": "t"});
        let f = bar(&r, &mut spec(&s)).unwrap();
        let b = f.panels[0].bars.as_ref().unwrap();
        assert_eq!((b.error(0, 0), b.error(1, 0)), (Some(0.5), None));
        let (_, (lo, hi)) = f.panels[0].extent();
        assert!(lo <= 0.5 && hi >= 2.0, "{lo}..{hi}");
        let dir = tempfile::tempdir().unwrap();
        crate::plots::write(&dir.path().join("p.png"), &f).unwrap();
    }

    #[test]
    fn a_line_plot_sorts_by_x_and_groups_by_label() {
        let r = json!({"variants": [
            {"name": "1", "metrics": {"x": 2.0, "y": 20.0}, "labels": {"g": "a"}},
            {"name": "2", "metrics": {"x": 1.0, "y": 10.0}, "labels": {"g": "a"}},
            {"name": "3", "metrics": {"x": 1.0, "y": 5.0}, "labels": {"g": "b"}}]});
        let s = json!({"file": "p.png", "type": "line", "x": "x", "y": ["y"], "group": "g"});
        let f = line(&r, &mut spec(&s)).unwrap();
        let lines = &f.panels[0].lines;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].label.as_deref(), Some("g = a"));
        assert_eq!(lines[0].points, [(1.0, 10.0), (2.0, 20.0)]);
    }

    #[test]
    fn missing_data_skips_with_a_reason() {
        let r = json!({"variants": [{"name": "a", "metrics": {}}]});
        let s = json!({"file": "p.png", "type": "bar", "y": "t"});
        let e = bar(&r, &mut spec(&s)).unwrap_err();
        assert!(e.0.contains("no variant has metric"), "{}", e.0);
        let s = json!({"file": "p.png", "type": "line", "y": "t"});
        assert!(line(&r, &mut spec(&s)).unwrap_err().0.contains("`x`"));
        let s = json!({"file": "p.png", "type": "bar", "y": "t", "variants": ["zz"]});
        assert!(bar(&r, &mut spec(&s))
            .unwrap_err()
            .0
            .contains("no variants"));
    }

    #[test]
    fn rates_of_a_cumulative_counter() {
        assert_eq!(
            rates(&[(0.5, 10.0), (1.0, 30.0), (1.0, 31.0)], 1.0),
            [(0.5, 20.0), (1.0, 40.0)]
        );
    }

    #[test]
    fn timeline_kinds_read_node_columns() {
        let tl = Timeline::parse(
            "time_s,node0_used_pages,node1_used_pages,pgpromote_success,node0_hot_threshold_ms\n\
             0.5,262144,0,0,0\n1.0,262144,10,256,0\n",
            "t",
        )
        .unwrap();
        let (s, y) = timeline_series(&tl, "placement").unwrap();
        assert_eq!(y, "used memory (GiB)");
        assert_eq!(s[0].1, [(0.5, 1.0), (1.0, 1.0)]);
        let (s, _) = timeline_series(&tl, "promotion").unwrap();
        assert_eq!(s[0].0, "promoted");
        let (s, _) = timeline_series(&tl, "threshold").unwrap();
        assert!(s.is_empty(), "a threshold that never moved is not drawn");
        assert!(timeline_series(&tl, "latency").is_err());
    }
}
