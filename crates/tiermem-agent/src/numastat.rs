//! `tiermem numastat [-p PID]`, after numactl's `numastat`: the allocator's per-node
//! counters (`/sys/devices/system/node/node<N>/numastat`: `numa_hit`, `numa_miss`, …, in
//! pages), or one process's memory per node from `/proc/<pid>/numa_maps`, in MiB by kind
//! (huge pages, heap, stack, other anonymous memory, files), as `numastat -p` shows it;
//! and `tiermem migrate PID --from N --to M`, after `migratepages(8)`.

use crate::fs::HostFs;
use crate::Error;
use std::collections::BTreeMap;
use std::fmt::Write;

const NODE_DIR: &str = "/sys/devices/system/node";

/// The kinds of memory `numastat -p` separates, in its order.
pub const KINDS: [&str; 5] = ["Huge", "Heap", "Stack", "Anon", "File"];

/// Bytes per node of each kind in a `numa_maps` text. A line's `N<node>=<pages>` counts are
/// in its `kernelpagesize_kB` pages (2 MiB for huge pages).
pub fn process_bytes(numa_maps: &str) -> BTreeMap<&'static str, BTreeMap<u32, u64>> {
    let mut out: BTreeMap<&'static str, BTreeMap<u32, u64>> = BTreeMap::new();
    for line in numa_maps.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let page_kb = toks
            .iter()
            .find_map(|t| t.strip_prefix("kernelpagesize_kB="))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(4);
        let kind = if page_kb > 4 {
            "Huge"
        } else if toks.contains(&"heap") {
            "Heap"
        } else if toks.contains(&"stack") {
            "Stack"
        } else if toks.iter().any(|t| t.starts_with("file=")) {
            "File"
        } else {
            "Anon"
        };
        for t in &toks {
            let Some((n, c)) = t.strip_prefix('N').and_then(|t| t.split_once('=')) else {
                continue;
            };
            if let (Ok(n), Ok(c)) = (n.parse::<u32>(), c.parse::<u64>()) {
                *out.entry(kind).or_default().entry(n).or_default() += c * page_kb * 1024;
            }
        }
    }
    out
}

/// The `numastat -p` table of a process: MiB per node and in total, per kind.
pub fn render_process(pid: u32, numa_maps: &str, nodes: &[u32]) -> String {
    let bytes = process_bytes(numa_maps);
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let mut o = format!(
        "Per-node process memory usage (in MiBs) for PID {pid}\n{:<10}",
        ""
    );
    for n in nodes {
        let _ = write!(o, "{:>12}", format!("Node {n}"));
    }
    let _ = writeln!(o, "{:>12}", "Total");
    let mut totals = vec![0u64; nodes.len()];
    for kind in KINDS {
        let per = bytes.get(kind);
        let _ = write!(o, "{kind:<10}");
        let mut sum = 0;
        for (i, n) in nodes.iter().enumerate() {
            let b = per.and_then(|p| p.get(n)).copied().unwrap_or(0);
            totals[i] += b;
            sum += b;
            let _ = write!(o, "{:>12.2}", mib(b));
        }
        let _ = writeln!(o, "{:>12.2}", mib(sum));
    }
    let _ = write!(o, "{:<10}", "Total");
    for t in &totals {
        let _ = write!(o, "{:>12.2}", mib(*t));
    }
    let _ = writeln!(o, "{:>12.2}", mib(totals.iter().sum()));
    o
}

/// One process's table, read from `/proc/<pid>/numa_maps`.
pub fn process(fs: &HostFs, pid: u32) -> Result<String, Error> {
    if !fs.exists(&format!("/proc/{pid}")) {
        return Err(Error::Config(tiermem_core::ConfigError::invalid(
            "-p",
            format!("no process {pid}"),
        )));
    }
    let nodes = fs.numbered_entries(NODE_DIR, "node")?;
    let maps = fs.read(&format!("/proc/{pid}/numa_maps"))?;
    Ok(render_process(pid, &maps, &nodes))
}

/// Bytes per node of a process, all kinds together.
fn node_totals(numa_maps: &str) -> BTreeMap<u32, u64> {
    let mut t = BTreeMap::new();
    for per in process_bytes(numa_maps).values() {
        for (n, b) in per {
            *t.entry(*n).or_default() += b;
        }
    }
    t
}

/// `migratepages PID FROM TO`: check the process and the nodes (online ones with memory),
/// move the pages with `migrate_pages(2)`, and report MiB per node before and after and the
/// pages that stayed.
pub fn migrate(fs: &HostFs, pid: u32, from: &[u32], to: &[u32]) -> Result<String, Error> {
    let bad = |k: &str, m: String| Error::Config(tiermem_core::ConfigError::invalid(k, m));
    if !fs.exists(&format!("/proc/{pid}")) {
        return Err(bad("PID", format!("no process {pid}")));
    }
    let nodes = fs.numbered_entries(NODE_DIR, "node")?;
    for (key, set) in [("--from", from), ("--to", to)] {
        if set.is_empty() {
            return Err(bad(key, "name at least one node".into()));
        }
        if let Some(n) = set.iter().find(|n| !nodes.contains(n)) {
            return Err(bad(
                key,
                format!("node {n} is not online (nodes: {nodes:?})"),
            ));
        }
    }
    let maps = |fs: &HostFs| fs.read(&format!("/proc/{pid}/numa_maps"));
    let before = node_totals(&maps(fs)?);
    let stayed = crate::sys::migrate_pages(pid as i32, from, to)?;
    let after = node_totals(&maps(fs)?);
    let mib = |b: Option<&u64>| b.copied().unwrap_or(0) as f64 / (1u64 << 20) as f64;
    let mut o = format!("PID {pid}: MiB per node before -> after\n");
    for n in &nodes {
        let _ = writeln!(
            o,
            "  node {n}: {:>10.2} -> {:>10.2}",
            mib(before.get(n)),
            mib(after.get(n))
        );
    }
    let _ = writeln!(o, "pages not moved: {stayed}");
    Ok(o)
}

/// The allocator's counters per node, in pages, as `numastat` prints them.
pub fn system(fs: &HostFs) -> Result<String, Error> {
    let nodes = fs.numbered_entries(NODE_DIR, "node")?;
    let mut rows: Vec<(String, Vec<u64>)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let text = fs.read(&format!("{NODE_DIR}/node{n}/numastat"))?;
        for line in text.lines() {
            let Some((k, v)) = line.split_once(' ') else {
                continue;
            };
            let v = v.trim().parse::<u64>().unwrap_or(0);
            match rows.iter_mut().find(|(name, _)| name == k) {
                Some((_, vals)) => vals[i] = v,
                None => {
                    let mut vals = vec![0; nodes.len()];
                    vals[i] = v;
                    rows.push((k.to_string(), vals));
                }
            }
        }
    }
    let mut o = format!("{:<16}", "");
    for n in &nodes {
        let _ = write!(o, "{:>16}", format!("node{n}"));
    }
    o.push('\n');
    for (k, vals) in rows {
        let _ = write!(o, "{k:<16}");
        for v in vals {
            let _ = write!(o, "{v:>16}");
        }
        o.push('\n');
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "555500000000 default heap anon=256 dirty=256 N0=256 kernelpagesize_kB=4\n\
        7f0000000000 default anon=1024 dirty=1024 N0=512 N1=512 kernelpagesize_kB=4\n\
        7f1000000000 default file=/usr/lib/libc.so mapped=64 N0=64 kernelpagesize_kB=4\n\
        7f2000000000 bind:1 anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n\
        7ffc00000000 default stack anon=8 dirty=8 N0=8 kernelpagesize_kB=4\n";

    #[test]
    fn numa_maps_lines_are_counted_by_kind_and_node() {
        let b = process_bytes(MAPS);
        assert_eq!(b["Heap"][&0], 256 * 4096);
        assert_eq!(b["Anon"][&1], 512 * 4096);
        assert_eq!(b["File"][&0], 64 * 4096);
        assert_eq!(b["Huge"][&1], 2 * 2048 * 1024, "counts in huge pages");
        assert_eq!(b["Stack"][&0], 8 * 4096);
        let t = render_process(42, MAPS, &[0, 1]);
        assert!(t.contains("PID 42"), "{t}");
        // Node 1: 2 MiB of anon + 4 MiB huge; total 1 + 2 + 0.25 + 4 + 2 + 0.03 MiB.
        assert!(
            t.lines()
                .any(|l| l.starts_with("Huge") && l.contains("4.00")),
            "{t}"
        );
        assert!(
            t.lines().last().unwrap().trim_end().ends_with("9.28"),
            "{t}"
        );
    }

    #[test]
    fn migrate_checks_the_process_and_the_nodes_first() {
        let t = crate::fs::fake::FakeTree::new();
        t.set("/sys/devices/system/node/node0/numastat", "numa_hit 1\n");
        t.set("/proc/7/numa_maps", "");
        let e = migrate(&t.fs(), 8, &[0], &[0]).unwrap_err();
        assert!(
            e.is_input_error() && e.to_string().contains("no process 8"),
            "{e}"
        );
        let e = migrate(&t.fs(), 7, &[0], &[3]).unwrap_err();
        assert!(
            e.is_input_error() && e.to_string().contains("node 3 is not online"),
            "{e}"
        );
        let e = migrate(&t.fs(), 7, &[], &[0]).unwrap_err();
        assert!(e.to_string().contains("--from"), "{e}");
    }

    #[test]
    fn migrating_this_process_within_its_node_moves_nothing() {
        let fs = HostFs::new("/");
        let pid = std::process::id();
        let Some(&n) = fs
            .numbered_entries(NODE_DIR, "node")
            .unwrap_or_default()
            .first()
        else {
            return; // no NUMA sysfs on this host
        };
        match migrate(&fs, pid, &[n], &[n]) {
            Ok(report) => assert!(report.contains("pages not moved: 0"), "{report}"),
            // Kernels without CONFIG_NUMA, or a sandbox that forbids the call.
            Err(Error::Syscall { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_system_counters_come_from_each_node() {
        let t = crate::fs::fake::FakeTree::new();
        t.set(
            "/sys/devices/system/node/node0/numastat",
            "numa_hit 100\nnuma_miss 0\nlocal_node 90\n",
        );
        t.set(
            "/sys/devices/system/node/node1/numastat",
            "numa_hit 7\nnuma_miss 3\nlocal_node 0\n",
        );
        let s = system(&t.fs()).unwrap();
        let hit = s.lines().find(|l| l.starts_with("numa_hit")).unwrap();
        assert_eq!(
            hit.split_whitespace().collect::<Vec<_>>(),
            ["numa_hit", "100", "7"]
        );
    }
}
