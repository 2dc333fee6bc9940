//! `tiermem._tiermem`: the native module behind the `tiermem` Python package.
//!
//! A thin layer over [`tiermem_sim::run_config_text`]: the Python side passes TOML text
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

/// Run the simulation described by the TOML `text`.
///
/// `origin` names the config in error messages; `seed` and `duration_s` (seconds)
/// override the config's values. The GIL is released while the simulation runs.
/// Returns `(summary_json, timeline_csv, resolved_config_json)`.
#[pyfunction]
#[pyo3(signature = (text, origin = "<string>", seed = None, duration_s = None))]
fn simulate_text(
    py: Python<'_>,
    text: &str,
    origin: &str,
    seed: Option<u64>,
    duration_s: Option<f64>,
) -> PyResult<(String, String, String)> {
    // Only plain data crosses back to the GIL-holding side.
    let outcome = py.allow_threads(|| {
        tiermem_sim::run_config_text(text, origin, seed, duration_s)
            .map(|out| (out.summary_json, out.timeline_csv, out.resolved_config_json))
            .map_err(|e| (e.is_input_error(), e.to_string()))
    });
    outcome.map_err(|(input_error, message)| {
        if input_error {
            ConfigError::new_err(message)
        } else {
            PyRuntimeError::new_err(message)
        }
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
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(machine_presets, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
