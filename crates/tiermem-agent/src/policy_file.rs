//! One config language: `tiermem agent --config` takes a simulator config as it is. The
//! policy it holds, in the simulator's `[kernel.*]` vocabulary, becomes the agent's
//! sections; what only describes the simulated machine and its workloads (`machine`,
//! `workloads`, `duration`, `seed`, `[sim]`, the kernel model's costs and devices) is set
//! aside and listed, never silently applied. A key the agent cannot apply on a host is an
//! error naming it (exit code 2), so a file is either deployed whole or not at all. The
//! simulator's parser checks the file first ([`check_with_simulator`]): one code path
//! validates the policy for both substrates, the agent adds what only a host can check.
//!
//! | simulator | agent |
//! |---|---|
//! | `kernel.numa_balancing` (0–3) | `numa_balancing.mode` |
//! | `kernel.numa.{scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb, hot_threshold_ms, promote_rate_limit_mbps}` | `numa_balancing.*` |
//! | `kernel.demotion_enabled`, `kernel.watermark_scale_factor` | `numa_balancing.*` |
//! | `kernel.ksm.*` (sysfs names) | `ksm.*` |
//! | `kernel.weighted_interleave.{weights, auto}` | `weighted_interleave` (`source = "given"`) |
//! | `kernel.damon.reclaim`, `kernel.damon.lru_sort` (module parameter names) | `damon_reclaim`, `damon_lru_sort` |
//! | `kernel.damon.contexts` (one `paddr` context) | `damon` |
//! | `interval`, `[tiering]`, `[reclaim]`, `state_file`, `[metrics]` | the same |

use tiermem_core::ConfigError;

/// Top-level keys of a simulator config that describe the simulated run, not a policy.
const SIM_ONLY: [&str; 5] = ["machine", "workloads", "duration", "seed", "sim"];
/// Top-level keys both files share.
const SHARED: [&str; 5] = ["interval", "tiering", "reclaim", "state_file", "metrics"];
/// `[kernel]` keys that describe the simulated kernel (its cost model, devices, the
/// algorithm variant it runs), not a setting of the host's.
const KERNEL_MODEL: [&str; 6] = [
    "costs",
    "swap",
    "zram",
    "release",
    "transparent_hugepage",
    "lru_gen",
];
const NUMA_KNOBS: [&str; 6] = [
    "scan_delay_ms",
    "scan_period_min_ms",
    "scan_period_max_ms",
    "scan_size_mb",
    "hot_threshold_ms",
    "promote_rate_limit_mbps",
];
const NUMA_MODEL: [&str; 3] = ["promotion", "promote_ignore_watermarks", "model_scale"];
const KSM_KNOBS: [&str; 8] = [
    "run",
    "pages_to_scan",
    "sleep_millisecs",
    "merge_across_nodes",
    "max_page_sharing",
    "stable_node_chains_prune_millisecs",
    "use_zero_pages",
    "smart_scan",
];
/// DAMON_RECLAIM / LRU_SORT parameters the simulator has but the modules do not (model
/// switches of the seed experiments).
const DAMON_MODULE_MODEL: [&str; 2] = ["prioritization", "use_watermarks"];

/// The simulator's own validation of the file, so that a policy the simulator refuses is
/// never deployed: a complete config (with `machine`) as `tiermem sim` reads it, else its
/// `[kernel]` table typed as the simulator types it.
pub fn check_with_simulator(text: &str, file: &str) -> Result<(), ConfigError> {
    let v = tiermem_core::config::resolve_toml(text, file)?;
    if v.get("machine").is_some() {
        tiermem_core::config::SimConfig::from_value(&v, file)?;
    } else if let Some(k) = v.get("kernel") {
        tiermem_core::config::typed::<tiermem_core::config::KernelConfig>(k.clone(), "kernel")
            .map_err(|e| e.in_file(file))?;
    }
    Ok(())
}

/// Whether a parsed file is in the simulator's shape (it has a simulator-only key or a
/// `[kernel]` table) rather than the agent's own.
pub fn is_sim_shaped(v: &toml::Table) -> bool {
    v.contains_key("kernel") || SIM_ONLY.iter().any(|k| v.contains_key(*k))
}

/// A simulator-shaped file translated into the agent's shape.
#[derive(Debug)]
pub struct Translated {
    pub agent: toml::Table,
    /// Keys set aside as simulation-only, with why.
    pub ignored: Vec<String>,
    /// Agent key prefix → the file's key, for error messages.
    pub renames: Vec<(String, String)>,
}

impl Translated {
    /// An agent key (`ksm.pages_to_scan`) as the file spells it (`kernel.ksm.pages_to_scan`).
    pub fn file_key(&self, agent_key: &str) -> String {
        for (a, f) in &self.renames {
            if agent_key == a {
                return f.clone();
            }
            if let Some(rest) = agent_key.strip_prefix(&format!("{a}.")) {
                return format!("{f}.{rest}");
            }
        }
        agent_key.to_string()
    }
}

fn bad(key: &str, msg: impl Into<String>) -> ConfigError {
    ConfigError::invalid(key, msg)
}

fn table<'a>(v: &'a toml::Value, key: &str) -> Result<&'a toml::Table, ConfigError> {
    v.as_table().ok_or_else(|| bad(key, "must be a table"))
}

/// Translate a simulator config's policy into the agent's sections.
pub fn translate(file: &toml::Table) -> Result<Translated, ConfigError> {
    let mut t = Translated {
        agent: toml::Table::new(),
        ignored: Vec::new(),
        renames: Vec::new(),
    };
    for (k, v) in file {
        if SIM_ONLY.contains(&k.as_str()) {
            t.ignored
                .push(format!("{k} (the simulated machine and run)"));
        } else if SHARED.contains(&k.as_str()) {
            t.agent.insert(k.clone(), v.clone());
        } else if k == "kernel" {
            kernel(table(v, "kernel")?, &mut t)?;
        } else {
            // One vocabulary per file: the agent's own policy sections do not mix with
            // the simulator's (which one would win?).
            return Err(bad(
                k,
                "not a key of a simulator config: write this policy in its [kernel] \
                 vocabulary (docs/agent.md), or use an agent-only file",
            ));
        }
    }
    Ok(t)
}

/// The agent section `name`, created empty (an agent section of the same name written
/// beside the simulator's keys is merged).
fn section<'a>(t: &'a mut Translated, name: &str) -> Result<&'a mut toml::Table, ConfigError> {
    match t
        .agent
        .entry(name.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
    {
        toml::Value::Table(tb) => Ok(tb),
        _ => Err(bad(name, "must be a table")),
    }
}

fn kernel(k: &toml::Table, t: &mut Translated) -> Result<(), ConfigError> {
    for (key, v) in k {
        let path = format!("kernel.{key}");
        match key.as_str() {
            "numa_balancing" => {
                let mode = match v.as_integer() {
                    Some(0) => "disabled",
                    Some(1) => "normal",
                    Some(2) => "tiering",
                    Some(3) => "normal-tiering",
                    _ => return Err(bad(&path, "must be 0, 1, 2 or 3")),
                };
                section(t, "numa_balancing")?.insert("mode".into(), mode.into());
                t.renames.push(("numa_balancing.mode".into(), path));
            }
            "demotion_enabled" | "watermark_scale_factor" => {
                section(t, "numa_balancing")?.insert(key.clone(), v.clone());
                t.renames.push((format!("numa_balancing.{key}"), path));
            }
            "numa" => numa(table(v, &path)?, t)?,
            "ksm" => ksm(table(v, &path)?, t)?,
            "weighted_interleave" => weighted_interleave(table(v, &path)?, t)?,
            "damon" => damon(table(v, &path)?, t)?,
            "min_free_kbytes" => {
                return Err(bad(
                    &path,
                    "the agent does not write vm.min_free_kbytes: set it on the host, or remove it",
                ))
            }
            m if KERNEL_MODEL.contains(&m) => {
                t.ignored
                    .push(format!("{path} (the simulated kernel's model)"));
            }
            _ => return Err(bad(&path, "unknown key")),
        }
    }
    Ok(())
}

fn numa(n: &toml::Table, t: &mut Translated) -> Result<(), ConfigError> {
    for (key, v) in n {
        let path = format!("kernel.numa.{key}");
        if NUMA_KNOBS.contains(&key.as_str()) {
            section(t, "numa_balancing")?.insert(key.clone(), v.clone());
            t.renames.push((format!("numa_balancing.{key}"), path));
        } else if NUMA_MODEL.contains(&key.as_str()) {
            t.ignored.push(format!(
                "{path} (which kernel algorithm the simulator runs; a host runs its own)"
            ));
        } else {
            return Err(bad(&path, "unknown key"));
        }
    }
    Ok(())
}

fn ksm(k: &toml::Table, t: &mut Translated) -> Result<(), ConfigError> {
    for (key, v) in k {
        let path = format!("kernel.ksm.{key}");
        if KSM_KNOBS.contains(&key.as_str()) {
            section(t, "ksm")?.insert(key.clone(), v.clone());
            t.renames.push((format!("ksm.{key}"), path));
        } else if key == "costs" {
            t.ignored
                .push(format!("{path} (the simulated kernel's model)"));
        } else {
            return Err(bad(
                &path,
                "not a knob the agent writes (it writes run, pages_to_scan, sleep_millisecs, \
                 merge_across_nodes, max_page_sharing, stable_node_chains_prune_millisecs, \
                 use_zero_pages, smart_scan)",
            ));
        }
    }
    Ok(())
}

fn weighted_interleave(w: &toml::Table, t: &mut Translated) -> Result<(), ConfigError> {
    let mut out = toml::Table::new();
    out.insert("source".into(), "given".into());
    for (key, v) in w {
        let path = format!("kernel.weighted_interleave.{key}");
        match key.as_str() {
            "weights" => {
                let a = v
                    .as_array()
                    .ok_or_else(|| bad(&path, "must be an array of weights, one per node"))?;
                let weights: toml::Table = a
                    .iter()
                    .enumerate()
                    .map(|(i, w)| (format!("node{i}"), w.clone()))
                    .collect();
                out.insert("weights".into(), weights.into());
            }
            "auto" => {
                out.insert("auto".into(), v.clone());
            }
            "semantics" => t.ignored.push(format!(
                "{path} (the simulated kernel's; a host has its own)"
            )),
            _ => return Err(bad(&path, "unknown key")),
        }
    }
    t.agent.insert("weighted_interleave".into(), out.into());
    t.renames.push((
        "weighted_interleave".into(),
        "kernel.weighted_interleave".into(),
    ));
    Ok(())
}

fn damon(d: &toml::Table, t: &mut Translated) -> Result<(), ConfigError> {
    for (key, v) in d {
        let path = format!("kernel.damon.{key}");
        match key.as_str() {
            "reclaim" | "lru_sort" => {
                let mut params = table(v, &path)?.clone();
                for m in DAMON_MODULE_MODEL {
                    if params.remove(m).is_some() {
                        t.ignored
                            .push(format!("{path}.{m} (a switch of the simulated module)"));
                    }
                }
                let name = format!("damon_{key}");
                t.agent.insert(name.clone(), params.into());
                t.renames.push((name, path));
            }
            "contexts" => {
                let a = v
                    .as_array()
                    .ok_or_else(|| bad(&path, "must be an array of tables"))?;
                match a.as_slice() {
                    [] => {}
                    [one] => {
                        let mut ctx = table(one, &format!("{path}[0]"))?.clone();
                        if ctx.get("ops").and_then(toml::Value::as_str) != Some("paddr") {
                            return Err(bad(
                                &format!("{path}[0].ops"),
                                "a vaddr context monitors simulated workloads: on a host, \
                                 write an agent [damon] table with `targets` naming processes",
                            ));
                        }
                        if ctx.remove("record").is_some() {
                            t.ignored.push(format!(
                                "{path}[0].record (use `tiermem damon record` on a host)"
                            ));
                        }
                        if ctx.remove("per_workload_run").is_some() {
                            t.ignored.push(format!(
                                "{path}[0].per_workload_run (the agent's kdamond runs while the agent does)"
                            ));
                        }
                        ctx.remove("target_workloads");
                        t.agent.insert("damon".into(), ctx.into());
                        t.renames.push(("damon".into(), format!("{path}[0]")));
                    }
                    _ => {
                        return Err(bad(
                            &path,
                            "the agent runs one kdamond of its own: one context at most",
                        ))
                    }
                }
            }
            "costs" => t
                .ignored
                .push(format!("{path} (the simulated kdamond's model)")),
            _ => return Err(bad(
                &path,
                "not translated for the agent (it takes reclaim, lru_sort and one paddr context)",
            )),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(text: &str) -> Result<Translated, ConfigError> {
        translate(&toml::from_str(text).unwrap())
    }

    #[test]
    fn the_policy_sections_become_the_agents() {
        let t = tr("machine = \"small\"\nduration = \"10s\"\ninterval = \"1s\"\n\
                    [kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n\
                    [kernel.numa]\nhot_threshold_ms = 500\npromotion = \"rate-limit\"\n\
                    [kernel.ksm]\npages_to_scan = 1000\n[kernel.ksm.costs]\nscan_page = \"3us\"\n\
                    [kernel.weighted_interleave]\nweights = [3, 1]\n\
                    [kernel.damon.reclaim]\nenabled = true\nmin_age_us = 5000000\nprioritization = true\n\
                    [[workloads]]\ntype = \"pmbench\"\n")
        .unwrap();
        let a = &t.agent;
        assert_eq!(a["numa_balancing"]["mode"].as_str(), Some("tiering"));
        assert_eq!(
            a["numa_balancing"]["hot_threshold_ms"].as_integer(),
            Some(500)
        );
        assert_eq!(
            a["numa_balancing"]["demotion_enabled"].as_bool(),
            Some(true)
        );
        assert_eq!(a["ksm"]["pages_to_scan"].as_integer(), Some(1000));
        assert!(a["ksm"].get("costs").is_none());
        assert_eq!(
            a["weighted_interleave"]["weights"]["node0"].as_integer(),
            Some(3)
        );
        assert_eq!(a["damon_reclaim"]["min_age_us"].as_integer(), Some(5000000));
        assert!(a["damon_reclaim"].get("prioritization").is_none());
        assert_eq!(a["interval"].as_str(), Some("1s"));
        assert!(!a.contains_key("machine") && !a.contains_key("workloads"));
        let ignored = t.ignored.join("; ");
        for k in [
            "machine",
            "workloads",
            "duration",
            "kernel.numa.promotion",
            "kernel.ksm.costs",
        ] {
            assert!(ignored.contains(k), "{k} not listed: {ignored}");
        }
        assert_eq!(t.file_key("ksm.pages_to_scan"), "kernel.ksm.pages_to_scan");
        assert_eq!(t.file_key("numa_balancing.mode"), "kernel.numa_balancing");
        assert_eq!(t.file_key("tiering.targets"), "tiering.targets");
    }

    #[test]
    fn what_a_host_cannot_take_is_refused_by_name() {
        for (text, key) in [
            ("[kernel]\nnuma_balancing = 7\n", "kernel.numa_balancing"),
            (
                "[kernel]\nmin_free_kbytes = 1000\n",
                "kernel.min_free_kbytes",
            ),
            (
                "[kernel.ksm]\nadvisor_mode = \"scan-time\"\n",
                "kernel.ksm.advisor_mode",
            ),
            (
                "[kernel.numa]\nscan_sise_mb = 1\n",
                "kernel.numa.scan_sise_mb",
            ),
            (
                "[[kernel.damon.contexts]]\nops = \"vaddr\"\n",
                "kernel.damon.contexts[0].ops",
            ),
            (
                "[kernel.damon.tiering]\nenabled = true\n",
                "kernel.damon.tiering",
            ),
        ] {
            let e = tr(text).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn agent_files_are_not_sim_shaped() {
        let agent: toml::Table = toml::from_str("[numa_balancing]\nmode = \"tiering\"\n").unwrap();
        assert!(!is_sim_shaped(&agent));
        let sim: toml::Table = toml::from_str("machine = \"small\"\n").unwrap();
        assert!(is_sim_shaped(&sim));
    }
}
