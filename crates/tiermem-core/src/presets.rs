//! Built-in machine presets (`machine = "NAME"` in a config).
//!
//! Each preset is a TOML `[machine]` table kept in `crates/tiermem-core/presets/`, so users
//! can read and copy it; `tiermem presets` prints them.

/// (name, TOML text) of every built-in machine.
pub const MACHINES: &[(&str, &str)] = &[
    ("small", include_str!("../presets/small.toml")),
    ("dram-pmem-2s", include_str!("../presets/dram-pmem-2s.toml")),
    ("ddr5-cxl", include_str!("../presets/ddr5-cxl.toml")),
    ("ddr5-cxl4", include_str!("../presets/ddr5-cxl4.toml")),
    ("ddr5-cxl-xs", include_str!("../presets/ddr5-cxl-xs.toml")),
    ("vm-2node", include_str!("../presets/vm-2node.toml")),
    ("vm-3node", include_str!("../presets/vm-3node.toml")),
];

/// Names of the built-in machines.
pub fn machine_names() -> Vec<&'static str> {
    MACHINES.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of a preset.
pub fn machine_text(name: &str) -> Option<&'static str> {
    MACHINES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The preset as a TOML value (the `[machine]` table).
#[allow(
    clippy::expect_used,
    reason = "built-in presets are valid TOML (tested)"
)]
pub fn machine_value(name: &str) -> Option<toml::Value> {
    machine_text(name).map(|t| toml::from_str(t).expect("built-in presets are valid TOML"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{MachineConfig, Topology};

    #[test]
    fn every_preset_is_a_valid_machine() {
        for name in machine_names() {
            let v = machine_value(name).unwrap();
            let m: MachineConfig =
                crate::config::typed(v, "machine").unwrap_or_else(|e| panic!("{name}: {e}"));
            let t = Topology::new(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(t.tiers.len() >= 2, "{name} should be tiered");
        }
    }
}
