//! tiermem-agent: tiermem on a live Linux host.
//!
//! The agent configures the kernel's tiering mechanisms from one TOML file, runs
//! user-space controllers where the kernel has none, exports what happens, and leaves the
//! host as it found it.
//!
//! * [`allow`]: the allow-list of kernel files the agent may write;
//! * [`fs`]: readers and writers of `/proc` and `/sys` under an injectable root (tests run
//!   against a fake tree without root);
//! * [`host`]: the machine as the running kernel reports it (nodes, tiers, HMAT, settings),
//!   with tiers and demotion order recomputed by `tiermem-core` as `mm/memory-tiers.c` does;
//! * [`config`]: the agent's TOML config (strict: unknown keys are errors naming the key);
//! * [`plan`]: validate everything, then produce the list of writes (all-or-nothing);
//! * [`state`]: the state file (each original value recorded before it is changed) and restore;
//! * [`weights`]: the per-node bandwidth probe (the weights derived from bandwidth are
//!   `tiermem_core::interleave::reduce_interleave_weights`, the kernel's `auto` reduction);
//! * [`damon`]: the DAMON sysfs driver (own kdamond, schemes, tried regions);
//! * [`controller`]: the user-space promotion/demotion controller (pure decisions) and
//!   [`sys`]: the syscalls it and `tiermem exec` use;
//! * [`agent`]: the run loop, signals, metrics endpoint;
//! * [`simulated_host`]: a Linux 6.12 host's `/proc` and `/sys` as files, with a thread
//!   doing what the kernel does to them (`tiermem agent --simulate`).
//!
//! ```
//! // `weighted_interleave.source = "hmat"`: DRAM 200 GB/s, CXL 64 GB/s (access1, MB/s)
//! // give the kernel's auto weights 24:7.
//! use tiermem_core::interleave::reduce_interleave_weights;
//! assert_eq!(reduce_interleave_weights(&[200_000, 64_000], &[true, true]), vec![24, 7]);
//! ```

pub mod agent;
pub mod allow;
pub mod config;
pub mod controller;
pub mod cpu_caches;
pub mod damo_config;
pub mod damon;
pub mod damon_record;
pub mod damon_status;
pub mod exec;
pub mod fs;
pub mod host;
pub mod metrics;
pub mod numastat;
pub mod plan;
pub mod policy_file;
pub mod profiler;
pub mod signals;
pub mod sim_config;
pub mod simulated_host;
pub mod state;
pub mod sys;
pub mod weights;
pub mod workload;

use std::path::{Path, PathBuf};

/// Everything that can go wrong in the agent, with the path, key, pid or capability involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot {op} {path}: {source}{hint}", hint = perm_hint(source))]
    Io {
        path: PathBuf,
        op: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A bad config: refused before anything is written (exit code 2).
    #[error("{0}")]
    Config(#[from] tiermem_core::ConfigError),
    /// The running kernel lacks something the config requires.
    #[error("kernel feature missing: {feature} ({path} does not exist){hint}")]
    Feature {
        feature: String,
        path: String,
        hint: String,
    },
    /// Not allowed: names the capability that is missing.
    #[error("permission denied: {what} needs {capability}")]
    Capability { what: String, capability: String },
    #[error("{call} failed for pid {pid}: {source}")]
    Syscall {
        call: &'static str,
        pid: i32,
        source: std::io::Error,
    },
    /// A write outside the allow-list of kernel files (a hostile config or state file).
    #[error("refusing to write {path}: {why}")]
    NotAllowed { path: PathBuf, why: String },
    /// Another agent (or restore) holds the state file's lock.
    #[error("state file {path} is in use by another tiermem agent (pid {holder}); stop it first (it restores on exit)")]
    InUse { path: PathBuf, holder: String },
    #[error("state file {path}: {message}")]
    State { path: PathBuf, message: String },
    #[error("{0}")]
    Other(String),
    /// Several problems of one config, found in one pass (the plan checks every section).
    #[error("{} problems:{}", .0.len(), list_problems(.0))]
    Problems(Vec<Error>),
}

fn list_problems(v: &[Error]) -> String {
    v.iter().map(|e| format!("\n  - {e}")).collect()
}

fn perm_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (run as root, or grant CAP_DAC_OVERRIDE and CAP_SYS_ADMIN)"
    } else {
        ""
    }
}

impl Error {
    pub fn io(path: &Path, op: &str, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            op: op.to_string(),
            source,
        }
    }

    /// Whether this is bad input (config or arguments): exit code 2.
    /// Bad input (exit code 2): a config the agent refuses whatever the host; of several
    /// problems, when any one is.
    pub fn is_input_error(&self) -> bool {
        match self {
            Error::Problems(v) => v.iter().any(Error::is_input_error),
            e => matches!(
                e,
                Error::Config(_) | Error::NotAllowed { .. } | Error::InUse { .. }
            ),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
