//! tiermem-core: the vocabulary shared by the simulator and the live agent.
//!
//! * [`units`]: sizes, bandwidths, simulated time and node ids as types;
//! * [`topology`]: the machine (nodes, SLIT distances), memory tiers computed as
//!   `mm/memory-tiers.c` does, demotion targets and allocation fallback order;
//! * [`timing`]: the loaded-latency curve of a memory node;
//! * [`mempolicy`]: memory policies (`set_mempolicy`/`mbind` modes and flags);
//! * [`interleave`]: interleave node choice and the weighted-interleave weight table,
//!   including weights derived from node bandwidth;
//! * [`config`]: the TOML configuration language (machine, kernel knobs, workloads),
//!   parsed strictly: unknown keys, wrong units and impossible values are errors naming
//!   the file and key.
//!
//! Pure logic: no I/O besides reading a config file, time is always passed in.
//!
//! ```
//! use tiermem_core::config::SimConfig;
//! let cfg = SimConfig::from_toml_str(r#"
//!     machine = "small"
//!     [[workloads]]
//!     type = "pmbench"
//!     mapsize = "256MiB"
//! "#, "example.toml").unwrap();
//! let topo = tiermem_core::topology::Topology::new(&cfg.machine).unwrap();
//! assert_eq!(topo.nr_nodes(), 2);
//! ```

pub mod caches;
pub mod config;
pub mod controllers;
pub mod damon;
pub mod damon_record;
pub mod damon_workloads;
pub mod interleave;
pub mod ksm;
pub mod layout;
pub mod mempolicy;
pub mod presets;
pub mod release;
pub mod synthetic;
pub mod timeline;
pub mod timing;
pub mod topology;
pub mod units;
pub mod vmstat;
pub mod watermarks;
pub mod zoneinfo;

use std::fmt;

/// The message of a caught panic (`std::panic::catch_unwind`'s payload): the agent, the
/// Python module and the fuzzer report it instead of dying with it.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown")
}

/// A configuration problem: where (file and key) and what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    /// The file the value came from, when known.
    pub file: Option<String>,
    /// Dotted path of the offending key (`machine.nodes[1].capacity`), empty for the whole file.
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn invalid(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            file: None,
            key: key.into(),
            message: message.into(),
        }
    }
    /// A problem with a file as a whole (unreadable, not TOML).
    pub fn whole_file(file: &str, message: impl Into<String>) -> Self {
        ConfigError {
            file: Some(file.to_string()),
            key: String::new(),
            message: message.into(),
        }
    }

    /// Attach the file name if none is set yet.
    pub fn in_file(mut self, file: &str) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_string());
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        if !self.key.is_empty() {
            write!(f, "key `{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)
    }
}

/// An empty table deserialises to each config type's `Default`: the serde defaults and the
/// `Default` impls are one set of values (the types take their defaults from `Default`).
#[cfg(test)]
mod default_tests {
    fn empty_is_default<T>()
    where
        T: serde::de::DeserializeOwned + Default + std::fmt::Debug,
    {
        let v: T = toml::from_str("").unwrap();
        assert_eq!(
            format!("{v:?}"),
            format!("{:?}", T::default()),
            "{}",
            std::any::type_name::<T>()
        );
    }

    #[test]
    fn empty_tables_are_the_defaults() {
        empty_is_default::<crate::config::EngineConfig>();
        empty_is_default::<crate::config::KernelConfig>();
        empty_is_default::<crate::config::NumaConfig>();
        empty_is_default::<crate::config::KernelCosts>();
        empty_is_default::<crate::damon::MonitoringAttrs>();
        empty_is_default::<crate::damon::AccessPattern>();
        empty_is_default::<crate::damon::ReclaimParams>();
        empty_is_default::<crate::damon::LruSortParams>();
        empty_is_default::<crate::damon::TieringParams>();
        empty_is_default::<crate::damon::DamonCosts>();
        empty_is_default::<crate::ksm::KsmConfig>();
        empty_is_default::<crate::ksm::KsmCosts>();
        empty_is_default::<crate::ksm::VmGuestConfig>();
        empty_is_default::<crate::config::PmbenchConfig>();
        empty_is_default::<crate::config::StreamConfig>();
        empty_is_default::<crate::config::MlcConfig>();
        empty_is_default::<crate::config::XsbenchConfig>();
        empty_is_default::<crate::damon_workloads::HotRegionsConfig>();
        empty_is_default::<crate::controllers::ReclaimConfig>();
    }
}
