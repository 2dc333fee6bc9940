//! Native plots of an experiment directory: the PNG (or SVG) files its `results.json`
//! asks for (`plots`: bar, line, timeline, weights, heatmap), drawn with plotters and an
//! embedded font, so that `tiermem experiment` needs no Python. The Python package draws
//! the same entries with matplotlib for notebooks (`tiermem.plots`).
//!
//! A plot whose data is missing is skipped with a warning; the others are still drawn.

mod draw;
mod figure;
mod specs;

use figure::Figure;

use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `results.json` is missing or malformed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ResultsError {
    pub path: String,
    pub reason: String,
}

/// What [`render_experiment`] did.
#[derive(Debug, Default)]
pub struct Rendered {
    /// The files written.
    pub written: Vec<PathBuf>,
    /// Plots skipped or partly drawn, one line each (`FILE: reason`).
    pub warnings: Vec<String>,
}

/// Read and check `dir/results.json`.
pub fn load_results(dir: &Path) -> Result<Value, ResultsError> {
    let path = dir.join("results.json");
    let fail = |reason: String| ResultsError {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        fail(format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let variants = v
        .get("variants")
        .and_then(Value::as_array)
        .ok_or_else(|| fail("`variants` must be a list".into()))?;
    for (i, var) in variants.iter().enumerate() {
        if var.get("name").and_then(Value::as_str).is_none() {
            return Err(fail(format!(
                "variants[{i}] must be an object with a string `name`"
            )));
        }
        for field in ["metrics", "published"] {
            if var
                .get(field)
                .is_some_and(|m| !m.is_object() && !m.is_null())
            {
                return Err(fail(format!(
                    "variants[{i}].{field} must be an object or null"
                )));
            }
        }
    }
    match v.get("plots") {
        None | Some(Value::Array(_)) => Ok(v),
        Some(_) => Err(fail("`plots` must be a list".into())),
    }
}

/// `file` under `dir`, refused when it would lead outside it.
fn inside(dir: &Path, file: &str) -> Result<PathBuf, specs::Skip> {
    let rel = Path::new(file);
    if file.is_empty()
        || rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(specs::Skip(format!(
            "{file:?} is outside {}",
            dir.display()
        )));
    }
    Ok(dir.join(rel))
}

/// Write the plots `dir/results.json` asks for into `dir`.
pub fn render_experiment(dir: &Path) -> Result<Rendered, ResultsError> {
    let results = load_results(dir)?;
    let mut out = Rendered::default();
    let plots = results.get("plots").and_then(Value::as_array);
    for (i, entry) in plots.into_iter().flatten().enumerate() {
        let label = entry
            .get("file")
            .and_then(Value::as_str)
            .map_or(format!("plots[{i}]"), String::from);
        let Some(map) = entry.as_object() else {
            out.warnings
                .push(format!("skipping {label}: not an object"));
            continue;
        };
        let mut spec = specs::Spec::new(map, label.clone());
        let made = build(dir, &results, &mut spec).and_then(|(path, fig)| {
            write(&path, &fig).map_err(specs::Skip)?;
            Ok(path)
        });
        out.warnings.append(&mut spec.warnings);
        match made {
            Ok(path) => out.written.push(path),
            Err(e) => out.warnings.push(format!("skipping {label}: {}", e.0)),
        }
    }
    Ok(out)
}

fn build(
    dir: &Path,
    results: &Value,
    spec: &mut specs::Spec,
) -> Result<(PathBuf, Figure), specs::Skip> {
    let file = spec
        .map
        .get("file")
        .and_then(Value::as_str)
        .ok_or_else(|| specs::Skip("`file` must be a non-empty string".into()))?;
    let path = inside(dir, file)?;
    let fig = match spec.map.get("type").and_then(Value::as_str) {
        Some("bar") => specs::bar(results, spec)?,
        Some("line") => specs::line(results, spec)?,
        Some("timeline") => specs::timeline(dir, results, spec)?,
        Some("weights") => specs::weights(results, spec)?,
        Some("heatmap") => specs::heatmap(dir, spec)?,
        other => {
            return Err(specs::Skip(format!(
                "unknown plot type {other:?}: expected bar, line, timeline, weights or heatmap"
            )))
        }
    };
    Ok((path, fig))
}

/// Draw `fig` into `path`: SVG for a `.svg` name, PNG otherwise.
pub(crate) fn write(path: &Path, fig: &Figure) -> Result<(), String> {
    crate::fonts::register();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let size = draw::size(fig.panels.len());
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw::figure(fig, &root)
    } else {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw::figure(fig, &root)
    }
    .map_err(|e| format!("cannot draw {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_files_stay_inside_the_directory() {
        let d = Path::new("/tmp/x");
        assert!(inside(d, "a/b.png").is_ok());
        assert!(inside(d, "../b.png").is_err());
        assert!(inside(d, "/etc/b.png").is_err());
        assert!(inside(d, "").is_err());
    }
}
