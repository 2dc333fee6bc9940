//! `tiermem presets [NAME]`: the machine presets, and one as TOML with its computed tiers.

use crate::{input, Failure};
use clap::Args;
use tiermem_core::ConfigError;

#[derive(Args)]
pub struct PresetsArgs {
    /// A preset to print (default: list them).
    pub name: Option<String>,
}

/// What the simulator computes from a machine, as TOML comments (the preset stays a valid
/// file): each node's abstract distance and tier (`mm/memory-tiers.c`), its demotion
/// targets (`node_demotion[].preferred`, and the lower-tier mask any lower node may take)
/// and its zonelist (allocation fallback order), as `tiermem topology` shows them for a
/// host.
fn describe_topology(t: &tiermem_core::topology::Topology) -> String {
    let ids = |v: &[tiermem_core::units::NodeId]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|n| n.0.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let mut o = String::from("\n# As the simulator computes it (mm/memory-tiers.c, zonelists):\n");
    for (i, n) in t.nodes.iter().enumerate() {
        let tier = t
            .tiers
            .iter()
            .find(|x| x.nodes.contains(&n.id))
            .map_or("-".to_string(), |x| x.id.to_string());
        let top = if t.is_toptier(n.id) { ", top tier" } else { "" };
        o.push_str(&format!(
            "#   node {}: adistance {}, memory_tier{tier}{top}; demotion to {} (allowed: {}); zonelist {}\n",
            n.id.0,
            n.adistance,
            ids(&t.demotion_preferred[i]),
            ids(&t.lower_tier_mask[i]),
            ids(&t.fallback[i]),
        ));
    }
    o
}

#[allow(
    clippy::expect_used,
    reason = "the names come from the built-in presets"
)]
pub fn cmd_presets(name: Option<String>) -> Result<(), Failure> {
    match name {
        None => {
            for n in tiermem_core::presets::machine_names() {
                let v = tiermem_core::presets::machine_value(n).expect("preset");
                let m: tiermem_core::topology::MachineConfig =
                    tiermem_core::config::typed(v, "machine").map_err(|e: ConfigError| input(e))?;
                let t = tiermem_core::topology::Topology::new(&m).map_err(input)?;
                let tiers: Vec<String> = t
                    .tiers
                    .iter()
                    .map(|x| {
                        format!(
                            "tier{}={:?}",
                            x.id,
                            x.nodes.iter().map(|n| n.0).collect::<Vec<_>>()
                        )
                    })
                    .collect();
                println!("{n:<14} {} nodes  {}", m.nodes.len(), tiers.join(" "));
            }
            Ok(())
        }
        Some(n) => match tiermem_core::presets::machine_text(&n) {
            Some(t) => {
                print!("{t}");
                let v = tiermem_core::presets::machine_value(&n).expect("preset");
                let m: tiermem_core::topology::MachineConfig =
                    tiermem_core::config::typed(v, "machine").map_err(|e: ConfigError| input(e))?;
                let topo = tiermem_core::topology::Topology::new(&m).map_err(input)?;
                print!("{}", describe_topology(&topo));
                Ok(())
            }
            None => Err(input(format!(
                "no preset {n:?}; available: {}",
                tiermem_core::presets::machine_names().join(", ")
            ))),
        },
    }
}
