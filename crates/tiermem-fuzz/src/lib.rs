//! Fuzz targets of every parser that reads what users download or write: the simulator's
//! config, the agent's config and plan builder, and every trace decoder.
//!
//! Each target takes arbitrary bytes and must either accept them or return an error; a
//! panic, an abort or a memory blow-up is a bug. The same targets run two ways:
//!
//! * `fuzz/` (cargo-fuzz, libFuzzer, nightly): `scripts/fuzz.sh` runs each for a given time;
//! * [`mutate::run_bounded`] (stable): random mutations of the seed inputs for
//!   `TIERMEM_FUZZ_SECS` per target, in the slow test suite (`tests/fuzz.rs`).
//!
//! Inputs that once crashed a target are kept in `regressions/<target>/` and replayed by
//! the default test run.

pub mod mutate;
pub mod targets;

/// A fuzz target: a name, the function, and its seed inputs.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]) -> Result<(), String>,
    pub seeds: fn() -> Vec<Vec<u8>>,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "sim_config",
        run: targets::sim_config,
        seeds: targets::sim_config_seeds,
    },
    Target {
        name: "agent_plan",
        run: targets::agent_plan,
        seeds: targets::agent_plan_seeds,
    },
    Target {
        name: "lackey",
        run: targets::lackey,
        seeds: targets::lackey_seeds,
    },
    Target {
        name: "pinatrace",
        run: targets::pinatrace,
        seeds: targets::pinatrace_seeds,
    },
    Target {
        name: "champsim",
        run: targets::champsim,
        seeds: targets::champsim_seeds,
    },
    Target {
        name: "qemu",
        run: targets::qemu,
        seeds: targets::qemu_seeds,
    },
    Target {
        name: "damo",
        run: targets::damo,
        seeds: targets::damo_seeds,
    },
    Target {
        name: "damo_config",
        run: targets::damo_config,
        seeds: targets::damo_config_seeds,
    },
    Target {
        name: "damon_report",
        run: targets::damon_report,
        seeds: targets::damon_report_seeds,
    },
    Target {
        name: "trace_reader",
        run: targets::trace_reader,
        seeds: targets::trace_reader_seeds,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
