//! tiermem-sim: a deterministic simulator of a tiered-memory Linux machine.
//!
//! The machine (nodes, tiers, loaded-latency curves) comes from `tiermem-core`; this crate
//! adds the hardware and kernel that run on it, one module per thing modelled:
//!
//! * [`mm`]: the kernel's memory management: page tables and frames, the page allocator,
//!   faults, reclaim (kswapd, direct) with demotion, swap and zram, the OOM killer, memory
//!   policies, NUMA balancing, KSM and DAMON's operations, with kernel counter names
//!   ([`vmstat`]);
//! * [`hw`]: the memory system's timing (per-window closed-loop solution of node
//!   latencies under load);
//! * [`workload`]: the access generators (pmbench, STREAM, MLC, XSBench, PARSEC-like
//!   phases, VM guests, synthetic scenarios) and trace replay;
//! * [`engine`]: the simulation loop, its clock and the observers (summary, timeline),
//!   and the user-space tiering controller's substrate.
//!
//! Dependencies run one way: `engine` → `workload` → `mm`, and `engine` → `hw`.
//!
//! ```no_run
//! let cfg = tiermem_core::config::SimConfig::from_toml_str(
//!     "machine = \"small\"\nduration = \"1s\"\n[[workloads]]\ntype = \"pmbench\"\n", "x.toml").unwrap();
//! let mut sim = tiermem_sim::engine::Simulation::new(&cfg).unwrap();
//! let result = sim.run(&mut |_| {}).unwrap();
//! println!("{}", result.summary.throughput_accesses_per_s);
//! ```

pub mod engine;
pub mod hw;
pub mod mm;
pub use tiermem_core::vmstat;
pub mod workload;

use tiermem_core::config::SimConfig;
use tiermem_core::units::SimDuration;
use tiermem_core::ConfigError;

/// Errors of the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The configuration is invalid (exit code 2 at the CLI).
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// A trace workload's file is missing or malformed.
    #[error("{0}")]
    Trace(#[from] tiermem_trace::TraceError),
    /// Writing results failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl SimError {
    /// True when the error is the user's input (config), not the simulator.
    pub fn is_input_error(&self) -> bool {
        matches!(self, SimError::Config(_))
            || matches!(self, SimError::Trace(e) if e.is_input_error())
    }
}

/// Everything a run produces, as text (for the Python bindings and writers).
pub struct RunOutput {
    pub summary_json: String,
    pub timeline_csv: String,
    pub resolved_config_json: String,
    pub summary: engine::Summary,
}

/// Parse a config text, apply optional seed/duration overrides, run it.
pub fn run_config_text(
    text: &str,
    origin: &str,
    seed: Option<u64>,
    duration_s: Option<f64>,
) -> Result<RunOutput, SimError> {
    let mut cfg = config_from_text(text, origin, &[])?;
    apply_overrides(&mut cfg, seed, duration_s)?;
    run_config(&cfg)
}

/// Parse a config text, expand its machine preset, apply `set`-path overrides in the order
/// given (after preset expansion, as experiment variants apply theirs, see
/// [`tiermem_core::config::set_path`]), then type and validate the result. Parameter
/// sweeps use this so that each point is checked exactly as a config file would be.
pub fn config_from_text(
    text: &str,
    origin: &str,
    overrides: &[(String, toml::Value)],
) -> Result<SimConfig, SimError> {
    let mut value = tiermem_core::config::resolve_toml(text, origin)?;
    for (path, new) in overrides {
        tiermem_core::config::set_path(&mut value, path, new.clone())
            .map_err(|e| e.in_file(origin))?;
    }
    Ok(SimConfig::from_value(&value, origin)?)
}

/// Run a validated config and collect its outputs as text.
#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own result types cannot fail"
)]
pub fn run_config(cfg: &SimConfig) -> Result<RunOutput, SimError> {
    let mut sim = engine::Simulation::new(cfg)?;
    let res = sim.run(&mut |_| {})?;
    Ok(RunOutput {
        summary_json: serde_json::to_string_pretty(&res.summary).expect("summary serialises"),
        timeline_csv: res.timeline_csv,
        resolved_config_json: serde_json::to_string_pretty(cfg).expect("config serialises"),
        summary: res.summary,
    })
}

/// Apply the CLI's `--seed` and `--duration` overrides.
pub fn apply_overrides(
    cfg: &mut SimConfig,
    seed: Option<u64>,
    duration_s: Option<f64>,
) -> Result<(), SimError> {
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if let Some(d) = duration_s {
        if !(d > 0.0 && d.is_finite() && d < 1e7) {
            return Err(ConfigError::invalid(
                "duration",
                format!("must be a positive number of seconds (got {d})"),
            )
            .into());
        }
        cfg.duration = SimDuration::from_secs_f64(d);
    }
    Ok(())
}
