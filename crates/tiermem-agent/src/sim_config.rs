//! `tiermem topology --sim-config`: this host as a simulator config, so that "try it in the
//! simulator first" starts from the real machine.
//!
//! Taken from the host: the nodes (CPUs, `MemTotal`), the SLIT distances, each node's HMAT
//! figures from its nearest CPU (`access1`, else `access0`: read/write latency and
//! bandwidth) and the kernel's NUMA-balancing, demotion and watermark settings. What the
//! kernel does not report is filled with the simulator's documented defaults and marked
//! `# default` in the file: the kind of memory (DRAM for nodes with CPUs, CXL without),
//! and latency and bandwidth where there is no HMAT. The workload is a default one
//! (pmbench, uniform over a quarter of the first node) so that the file runs as printed;
//! replace it with your own.

use crate::host::{HostNode, HostTopology};
use crate::Error;
use std::fmt::Write as _;

/// Latency and bandwidth the simulator assumes for a node without HMAT figures (those of
/// its `small` preset: DDR with CPUs, CXL-attached DRAM without).
const DEFAULT_DRAM: (u64, u64) = (80, 20_480);
const DEFAULT_CXL: (u64, u64) = (240, 5_120);

/// The simulator config of host `h`, as TOML with comments.
pub fn sim_config(h: &HostTopology) -> Result<String, Error> {
    check_nodes(h)?;
    let mut o = String::new();
    let release = h.kernel_release.as_deref().unwrap_or("unknown").trim();
    let _ = writeln!(
        o,
        "# This host as a simulator config (tiermem topology --sim-config; kernel {release})."
    );
    let _ = writeln!(
        o,
        "# Lines marked `# default` are the simulator's assumptions where the kernel reports nothing."
    );
    let _ = writeln!(
        o,
        "# The [[workloads]] table is a default (pmbench): replace it with yours, then: tiermem sim FILE --out DIR\n"
    );
    o.push_str("duration = \"10s\"\n\n");
    write_kernel(&mut o, h);
    write_machine(&mut o, h);
    let first = h.nodes[0].mem_total_bytes >> 20;
    let _ = writeln!(
        o,
        "\n{}\ntype = \"pmbench\"\nmapsize = \"{}MiB\"\npattern = \"uniform\"",
        commented("[[workloads]]", "default workload: replace with yours"),
        (first / 4).max(1)
    );
    Ok(o)
}

/// The simulator numbers nodes 0..n and needs memory on each.
fn check_nodes(h: &HostTopology) -> Result<(), Error> {
    let bad = |msg: String| Error::Config(tiermem_core::ConfigError::invalid("--sim-config", msg));
    if h.nodes.is_empty() {
        return Err(bad(
            "no NUMA node found under /sys/devices/system/node".into()
        ));
    }
    for (i, n) in h.nodes.iter().enumerate() {
        if n.id as usize != i {
            return Err(bad(format!(
                "node ids are not 0..{} (node {} at position {i}): the simulator numbers nodes from 0 without gaps",
                h.nodes.len() - 1,
                n.id
            )));
        }
        if !n.has_memory || n.mem_total_bytes < (1 << 20) {
            return Err(bad(format!(
                "node {} has no memory (a CPU-only node): the simulator needs memory on every node",
                n.id
            )));
        }
    }
    Ok(())
}

fn write_kernel(o: &mut String, h: &HostTopology) {
    let s = &h.settings;
    let _ = writeln!(o, "{}", commented("[kernel]", "this host's settings"));
    if let Some(v) = s.numa_balancing {
        let _ = writeln!(o, "numa_balancing = {v}");
    }
    if let Some(v) = s.demotion_enabled {
        let _ = writeln!(o, "demotion_enabled = {v}");
    }
    if let Some(v) = s.watermark_scale_factor {
        let _ = writeln!(o, "watermark_scale_factor = {v}");
    }
    if let Some(v) = s.promote_rate_limit_mbps {
        let _ = writeln!(o, "[kernel.numa]\npromote_rate_limit_mbps = {v}");
    }
    o.push('\n');
}

fn write_machine(o: &mut String, h: &HostTopology) {
    o.push_str("[machine]\nname = \"this-host\"\n");
    let rows: Vec<String> = h
        .nodes
        .iter()
        .map(|n| {
            let row: Vec<String> = n.distances.iter().map(u32::to_string).collect();
            format!("[{}]", row.join(", "))
        })
        .collect();
    if h.nodes.iter().all(|n| n.distances.len() == h.nodes.len()) {
        let _ = writeln!(o, "distances = [{}]", rows.join(", "));
    }
    write_caches(o, h);
    for n in &h.nodes {
        write_node(o, n);
    }
}

/// `[machine.caches]` from cpu0's caches; the kernel gives no latencies, so the generic
/// hierarchy's are written, marked `# default`. Nothing when the host lists no caches (the
/// simulator then uses its generic hierarchy).
fn write_caches(o: &mut String, h: &HostTopology) {
    let Some(c) = &h.caches else {
        let _ = writeln!(
            o,
            "# no CPU cache information under /sys/devices/system/cpu/cpu0/cache: the simulator's generic caches apply"
        );
        return;
    };
    let g = tiermem_core::caches::Hierarchy::generic(1);
    let levels = [
        ("l1d", &c.l1d, g.l1d.latency),
        ("l2", &c.l2, g.l2.latency),
        ("llc", &c.llc, g.llc.latency),
    ];
    for (name, hc, latency) in levels {
        let line = format!(
            "caches.{name} = {{ size = \"{}KiB\", ways = {}, latency = \"{}ns\" }}",
            hc.whole_sets() >> 10,
            hc.ways,
            latency.ps() as f64 / 1e3
        );
        let _ = writeln!(o, "{}", commented(&line, "latency: default"));
    }
    let _ = writeln!(o, "caches.llc_cores = {}", c.llc.shared_cpus);
}

fn write_node(o: &mut String, n: &HostNode) {
    let cpu = !n.cpus.is_empty();
    let _ = writeln!(
        o,
        "[[machine.nodes]]\nid = {}\ncpus = {}\ncapacity = \"{}MiB\"",
        n.id,
        n.cpus.len(),
        n.mem_total_bytes >> 20
    );
    let kind = format!("kind = \"{}\"", if cpu { "dram" } else { "cxl" });
    let _ = writeln!(
        o,
        "{}",
        commented(
            &kind,
            "default: the kernel does not say what memory this is"
        )
    );
    let hmat = n.access1.as_ref().or(n.access0.as_ref());
    let (dl, db) = if cpu { DEFAULT_DRAM } else { DEFAULT_CXL };
    let figures = [
        (
            "read_latency",
            hmat.and_then(|a| a.read_latency_ns),
            dl,
            "ns",
        ),
        (
            "read_bandwidth",
            hmat.and_then(|a| a.read_bandwidth_mbps),
            db,
            "MiB/s",
        ),
    ];
    for (key, v, d, unit) in figures {
        let line = match v.filter(|&x| x > 0) {
            Some(x) => format!("{key} = \"{x}{unit}\""),
            None => commented(&format!("{key} = \"{d}{unit}\""), "default: no HMAT figure"),
        };
        let _ = writeln!(o, "{line}");
    }
    if let Some(a) = hmat {
        if let Some(w) = a.write_latency_ns.filter(|&w| w > 0) {
            let _ = writeln!(o, "write_latency = \"{w}ns\"");
        }
        if let Some(w) = a.write_bandwidth_mbps.filter(|&w| w > 0) {
            let _ = writeln!(o, "write_bandwidth = \"{w}MiB/s\"");
        }
    }
}

/// `line`, then `# comment` at column 37.
fn commented(line: &str, comment: &str) -> String {
    format!("{line:<36} # {comment}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_host_becomes_a_config_the_simulator_runs() {
        let t = crate::host::fake_two_node();
        let h = crate::host::read_host(&t.fs()).unwrap();
        let text = sim_config(&h).unwrap();
        let cfg = tiermem_core::config::SimConfig::from_toml_str(&text, "host.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(cfg.machine.nodes.len(), 2);
        assert_eq!(cfg.machine.nodes[0].cpus, 2);
        assert_eq!(cfg.machine.nodes[1].cpus, 0);
        assert_eq!(cfg.machine.nodes[0].capacity.0, 1 << 30);
        assert!(text.contains("# default"), "{text}");
        assert_eq!(
            cfg.machine.distances,
            Some(vec![vec![10, 20], vec![20, 10]])
        );
    }

    #[test]
    fn the_hosts_caches_become_the_machines() {
        use crate::cpu_caches::{HostCache, HostCaches};
        let t = crate::host::fake_two_node();
        let mut h = crate::host::read_host(&t.fs()).unwrap();
        let c = |size, ways, shared_cpus| HostCache {
            size,
            ways,
            shared_cpus,
        };
        h.caches = Some(HostCaches {
            l1d: c(48 << 10, 12, 2),
            l2: c(2 << 20, 16, 2),
            llc: c(105 << 20, 15, 2),
        });
        let text = sim_config(&h).unwrap();
        let cfg = tiermem_core::config::SimConfig::from_toml_str(&text, "host.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let caches = cfg.machine.caches.expect("caches written");
        assert_eq!(
            caches.llc.map(|l| (l.size.0, l.ways)),
            Some((105 << 20, 15))
        );
        assert_eq!(caches.llc_cores, Some(2));
    }

    #[test]
    fn a_memoryless_node_is_refused_by_name() {
        let t = crate::host::fake_two_node();
        let mut h = crate::host::read_host(&t.fs()).unwrap();
        h.nodes[1].has_memory = false;
        let e = sim_config(&h).unwrap_err();
        assert!(e.to_string().contains("node 1 has no memory"), "{e}");
    }
}
