//! `tiermem._tiermem`: the native module behind the `tiermem` Python package.
//!
//! A thin layer over [`tiermem_sim::config_from_text`] and [`tiermem_sim::run_config`]:
//! the Python side passes TOML text (and optional `set`-path overrides)
//! and gets back the run's outputs as text (summary JSON, timeline CSV, resolved config
//! JSON), which `python/tiermem/__init__.py` turns into dicts and DataFrames. Invalid
//! configs raise `tiermem.ConfigError` (a `ValueError`), other failures `RuntimeError`,
//! both with the Rust error's message.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    tiermem,
    ConfigError,
    PyValueError,
    "An invalid simulation config; the message names the file and the dotted key."
);

/// Parse `(path, TOML value text)` pairs into the overrides of
/// [`tiermem_sim::config_from_text`]; a value that is not TOML is a config error at its path.
fn parse_overrides(
    origin: &str,
    overrides: Option<Vec<(String, String)>>,
) -> Result<Vec<(String, toml::Value)>, tiermem_sim::SimError> {
    overrides
        .unwrap_or_default()
        .into_iter()
        .map(|(path, text)| {
            let parsed: Option<toml::Value> = toml::from_str::<toml::Table>(&format!("v = {text}"))
                .ok()
                .filter(|t| t.len() == 1)
                .and_then(|mut t| t.remove("v"));
            match parsed {
                Some(v) => Ok((path, v)),
                None => Err(tiermem_core::ConfigError::invalid(
                    path,
                    format!("not a TOML value: {text}"),
                )
                .in_file(origin)
                .into()),
            }
        })
        .collect()
}

/// Run `f`, turning a panic (a bug in tiermem) into a `RuntimeError` that says so, instead
/// of pyo3's `PanicException` (a `BaseException` that `except Exception` does not catch).
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(PyRuntimeError::new_err(format!(
            "internal error in tiermem (please report it): {}",
            tiermem_core::panic_message(p.as_ref())
        )))
    })
}

fn to_py_err(e: tiermem_sim::SimError) -> PyErr {
    if e.is_input_error() {
        ConfigError::new_err(e.to_string())
    } else {
        PyRuntimeError::new_err(e.to_string())
    }
}

/// Run the simulation described by the TOML `text`.
///
/// `origin` names the config in error messages; `seed` and `duration_s` (seconds)
/// override the config's values; `overrides` are `(dotted path, TOML value text)` pairs
/// set after preset expansion, as an experiment variant's `set` table is. The GIL is
/// released while the simulation runs.
/// Returns `(summary_json, timeline_csv, resolved_config_json)`.
#[pyfunction]
#[pyo3(signature = (text, origin = "<string>", seed = None, duration_s = None, overrides = None))]
fn simulate_text(
    py: Python<'_>,
    text: &str,
    origin: &str,
    seed: Option<u64>,
    duration_s: Option<f64>,
    overrides: Option<Vec<(String, String)>>,
) -> PyResult<(String, String, String)> {
    // Only plain data crosses back to the GIL-holding side.
    guarded(|| {
        py.allow_threads(|| -> Result<_, tiermem_sim::SimError> {
            let overrides = parse_overrides(origin, overrides)?;
            let mut cfg = tiermem_sim::config_from_text(text, origin, &overrides)?;
            tiermem_sim::apply_overrides(&mut cfg, seed, duration_s)?;
            tiermem_sim::run_config(&cfg)
                .map(|out| (out.summary_json, out.timeline_csv, out.resolved_config_json))
        })
        .map_err(to_py_err)
    })
}

/// Check a config without running it: parse, expand presets, apply `overrides` and
/// validate, exactly as [`simulate_text`] does first. Returns the effective config
/// (every default filled in) as JSON.
#[pyfunction]
#[pyo3(signature = (text, origin = "<string>", overrides = None))]
fn check_config(
    text: &str,
    origin: &str,
    overrides: Option<Vec<(String, String)>>,
) -> PyResult<String> {
    guarded(|| {
        let overrides = parse_overrides(origin, overrides).map_err(to_py_err)?;
        let cfg = tiermem_sim::config_from_text(text, origin, &overrides).map_err(to_py_err)?;
        serde_json::to_string_pretty(&cfg)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot serialise the config: {e}")))
    })
}

/// The version of the tiermem crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Names of the built-in machines (`machine = "NAME"` in a config).
#[pyfunction]
fn machine_presets() -> Vec<&'static str> {
    tiermem_core::presets::machine_names()
}

#[pymodule]
fn _tiermem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add_function(wrap_pyfunction!(simulate_text, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(machine_presets, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
