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

/// A preset as a whole config that `tiermem sim` runs as it is: the preset's own comments,
/// a duration and seed, the machine as a `[machine]` table (`[[nodes]]` become
/// `[[machine.nodes]]`), what the simulator computes from it (as comments) and one
/// pmbench workload to replace with yours, sized to a quarter of the first node with CPUs
/// (at most 1 GiB, so the copy runs in seconds).
fn as_config(
    preset: &str,
    m: &tiermem_core::topology::MachineConfig,
    topo: &tiermem_core::topology::Topology,
) -> String {
    let mut head = String::new();
    let mut body = String::new();
    let mut in_body = false;
    for line in preset.lines() {
        let t = line.trim_start();
        if !(in_body || t.is_empty() || t.starts_with('#')) {
            in_body = true;
            body.push_str("[machine]\n");
        }
        let out = if in_body { &mut body } else { &mut head };
        // The preset's tables are the machine's: `[[nodes]]`, `[caches]`.
        if let Some(table) = t.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
            out.push_str(&format!("[[machine.{table}]]\n"));
        } else if let Some(table) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            out.push_str(&format!("[machine.{table}]\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    let cpu_node = m.nodes.iter().find(|n| n.cpus > 0).unwrap_or(&m.nodes[0]);
    let mib = (cpu_node.capacity.0 >> 20) / 4;
    let mapsize_mib = mib.clamp(16, 1024);
    let cpu_ids: Vec<String> = m
        .nodes
        .iter()
        .filter(|n| n.cpus > 0)
        .map(|n| n.id.to_string())
        .collect();
    format!(
        "{head}# Printed by `tiermem presets`: a whole config, ready for `tiermem sim FILE --out DIR`.\n\
         # Keys, units and defaults: docs/config.md.\n\
         duration = \"10s\"\nseed = 1\n\n{body}{}\n\
         # A workload to start from (replace it with yours: pmbench, stream, mlc, synthetic,\n\
         # trace, ...; docs/config.md). The kernel's settings are its defaults: add a\n\
         # [kernel] table to change them (numa_balancing = 2 for memory tiering).\n\
         [[workloads]]\ntype = \"pmbench\"\nprocesses = 1\nmapsize = \"{mapsize_mib}MiB\"\n\
         pattern = \"normal_ih\"\nread_ratio = 80\ncpu_nodes = [{}]\n",
        describe_topology(topo),
        cpu_ids.join(", "),
    )
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
                let v = tiermem_core::presets::machine_value(&n).expect("preset");
                let m: tiermem_core::topology::MachineConfig =
                    tiermem_core::config::typed(v, "machine").map_err(|e: ConfigError| input(e))?;
                let topo = tiermem_core::topology::Topology::new(&m).map_err(input)?;
                print!("{}", as_config(t, &m, &topo));
                Ok(())
            }
            None => Err(input(format!(
                "no preset {n:?}; available: {}",
                tiermem_core::presets::machine_names().join(", ")
            ))),
        },
    }
}
