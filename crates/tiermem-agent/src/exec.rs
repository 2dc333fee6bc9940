//! `tiermem exec`: start a program under a memory policy and/or process-wide KSM merging.
//!
//! The policy is set on this thread with `set_mempolicy` and survives `execve` (a task's
//! mempolicy is kept across exec, `mm/mempolicy.c`); `prctl(PR_SET_MEMORY_MERGE)` marks the
//! mm as KSM-mergeable (`ksm_enable_merge_any`), which is inherited by the new program too.

use crate::fs::HostFs;
use crate::host;
use crate::Error;
use std::os::unix::process::CommandExt;
use tiermem_core::mempolicy::PolicyMode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    /// `MPOL_WEIGHTED_INTERLEAVE`: pages in the ratio of the sysfs weights.
    Weighted,
    /// `MPOL_INTERLEAVE`: round robin.
    Plain,
}

/// A memory policy other than interleave, as numactl spells them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// `--preferred NODE`: `MPOL_PREFERRED`, one node, fall back anywhere.
    Preferred(u32),
    /// `--preferred-many NODES`: `MPOL_PREFERRED_MANY` (Linux 5.15+).
    PreferredMany(Vec<u32>),
    /// `--localalloc`: `MPOL_LOCAL`, the node of the CPU that allocates.
    Local,
}

#[derive(Clone, Debug, Default)]
pub struct ExecOptions {
    pub interleave: Option<Interleave>,
    /// Policy nodes; default: every memory node. Without `interleave`, `MPOL_BIND` to them
    /// (`--membind`).
    pub nodes: Vec<u32>,
    /// `--preferred`, `--preferred-many`, `--localalloc` (exclusive with the above).
    pub placement: Option<Placement>,
    /// `--cpunodebind`: run only on the CPUs of these nodes.
    pub cpu_nodes: Vec<u32>,
    /// `--physcpubind`: run only on these CPUs.
    pub cpus: Vec<u32>,
    pub ksm: bool,
    pub argv: Vec<String>,
}

/// The CPUs the program may run on (`sched_setaffinity`), from `--cpunodebind` and
/// `--physcpubind` (their intersection when both are given, as numactl applies both), checked
/// against the host; `None` leaves the affinity alone.
pub fn affinity_for(fs: &HostFs, opts: &ExecOptions) -> Result<Option<Vec<u32>>, Error> {
    if opts.cpu_nodes.is_empty() && opts.cpus.is_empty() {
        return Ok(None);
    }
    let nodes = host::read_nodes(fs)?;
    let all: Vec<u32> = nodes.iter().flat_map(|n| n.cpus.iter().copied()).collect();
    let mut set: Vec<u32> = if opts.cpu_nodes.is_empty() {
        all.clone()
    } else {
        let mut v = Vec::new();
        for &id in &opts.cpu_nodes {
            let Some(n) = nodes.iter().find(|n| n.id == id) else {
                return Err(bad(
                    "--cpunodebind",
                    format!("no node {id} (nodes: {})", list(nodes.iter().map(|n| n.id))),
                ));
            };
            if n.cpus.is_empty() {
                return Err(bad(
                    "--cpunodebind",
                    format!("node {id} has no CPUs (a memory-only node: use --membind for memory)"),
                ));
            }
            v.extend(&n.cpus);
        }
        v
    };
    if !opts.cpus.is_empty() {
        if let Some(c) = opts.cpus.iter().find(|c| !all.contains(c)) {
            return Err(bad(
                "--physcpubind",
                format!(
                    "CPU {c} is not online (CPUs: {})",
                    list(all.iter().copied())
                ),
            ));
        }
        set.retain(|c| opts.cpus.contains(c));
        if set.is_empty() {
            return Err(bad(
                "--physcpubind",
                "none of these CPUs is on the --cpunodebind nodes",
            ));
        }
    }
    set.sort_unstable();
    set.dedup();
    Ok(Some(set))
}

/// A numactl node (or CPU) specification against `universe` (the host's memory nodes,
/// nodes with CPUs, or online CPUs): `all`, a list with ranges (`0,2-3`), or `!` and a list
/// for every id of the universe but those (numactl's `numa_parse_nodestring`; the `+`
/// form, relative to the cpuset, is not taken). An id outside the universe is refused,
/// naming `key`.
pub fn resolve_spec(key: &str, spec: &str, universe: &[u32]) -> Result<Vec<u32>, Error> {
    let t = spec.trim();
    let (invert, list) = match t.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    if list.starts_with('+') {
        return Err(bad(
            key,
            format!(
                "{spec:?}: ids relative to the cpuset (+) are not taken; give them as they are"
            ),
        ));
    }
    let ids = if list == "all" {
        universe.to_vec()
    } else {
        crate::fs::parse_list(list).map_err(|m| bad(key, m))?
    };
    if let Some(id) = ids.iter().find(|i| !universe.contains(i)) {
        return Err(bad(
            key,
            format!(
                "{id} is not one of this host's ({})",
                crate::fs::format_list(universe)
            ),
        ));
    }
    let mut out: Vec<u32> = if invert {
        universe
            .iter()
            .copied()
            .filter(|u| !ids.contains(u))
            .collect()
    } else {
        ids
    };
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad(key, format!("{spec:?} names no node or CPU")));
    }
    Ok(out)
}

/// What `numactl --hardware` prints: the nodes with their CPUs, size and free memory in
/// MB, and the SLIT distances.
pub fn hardware(fs: &HostFs) -> Result<String, Error> {
    use std::fmt::Write;
    let nodes = host::read_nodes(fs)?;
    let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "available: {} nodes ({})",
        nodes.len(),
        crate::fs::format_list(&ids)
    );
    for n in &nodes {
        let cpus: String = n.cpus.iter().map(|c| format!(" {c}")).collect();
        let _ = writeln!(o, "node {} cpus:{cpus}", n.id);
        let _ = writeln!(o, "node {} size: {} MB", n.id, n.mem_total_bytes >> 20);
        let _ = writeln!(o, "node {} free: {} MB", n.id, n.mem_free_bytes >> 20);
    }
    let _ = writeln!(o, "node distances:");
    let _ = write!(o, "node ");
    for id in &ids {
        let _ = write!(o, "{id:>3} ");
    }
    o.push('\n');
    for n in &nodes {
        let _ = write!(o, "{:>3}: ", n.id);
        for d in &n.distances {
            let _ = write!(o, "{d:>3} ");
        }
        o.push('\n');
    }
    Ok(o)
}

fn bad(key: &str, msg: impl Into<String>) -> Error {
    Error::Config(tiermem_core::ConfigError::invalid(key, msg))
}

fn list(ids: impl Iterator<Item = u32>) -> String {
    crate::fs::format_list(&ids.collect::<Vec<_>>())
}

/// The policy (mode value, nodes) that `opts` asks for, checked against the host.
pub fn policy_for(fs: &HostFs, opts: &ExecOptions) -> Result<Option<(i32, Vec<u32>)>, Error> {
    if opts.interleave.is_none() && opts.nodes.is_empty() && opts.placement.is_none() {
        return Ok(None);
    }
    let mem: Vec<u32> = host::read_nodes(fs)?
        .into_iter()
        .filter(|n| n.has_memory)
        .map(|n| n.id)
        .collect();
    let check = |key: &str, nodes: &[u32]| match nodes.iter().find(|n| !mem.contains(n)) {
        Some(n) => Err(bad(
            key,
            format!(
                "node {n} is not a memory node (memory nodes: {})",
                crate::fs::format_list(&mem)
            ),
        )),
        None => Ok(()),
    };
    match &opts.placement {
        Some(Placement::Preferred(n)) => {
            check("--preferred", &[*n])?;
            return Ok(Some((PolicyMode::Preferred.kernel_value(), vec![*n])));
        }
        Some(Placement::PreferredMany(nodes)) => {
            check("--preferred-many", nodes)?;
            return Ok(Some((
                PolicyMode::PreferredMany.kernel_value(),
                nodes.clone(),
            )));
        }
        Some(Placement::Local) => return Ok(Some((PolicyMode::Local.kernel_value(), Vec::new()))),
        None => {}
    }
    let nodes = if opts.nodes.is_empty() {
        mem.clone()
    } else {
        opts.nodes.clone()
    };
    check("--nodes", &nodes)?;
    if opts.interleave.is_some() && nodes.len() == 1 {
        tracing::warn!(
            node = nodes[0],
            "interleaving over one node places every page there, as binding to it does"
        );
    }
    let mode = match opts.interleave {
        Some(Interleave::Weighted) => {
            if !fs.exists(host::WI_DIR) {
                return Err(Error::Feature {
                    feature: "weighted interleave (Linux 6.9+)".into(),
                    path: host::WI_DIR.into(),
                    hint: String::new(),
                });
            }
            PolicyMode::WeightedInterleave
        }
        Some(Interleave::Plain) => PolicyMode::Interleave,
        None => PolicyMode::Bind,
    };
    Ok(Some((mode.kernel_value(), nodes)))
}

/// What `numactl --show` prints: this process's memory policy and CPU binding, with the
/// nodes those CPUs belong to.
pub fn show(fs: &HostFs) -> Result<String, Error> {
    let (mode, nodes) = crate::sys::get_mempolicy()?;
    let cpus = crate::sys::get_affinity()?;
    let host_nodes = host::read_nodes(fs)?;
    let name = match mode & 0xff {
        0 => "default",
        1 => "preferred",
        2 => "bind",
        3 => "interleave",
        4 => "local",
        5 => "preferred-many",
        6 => "weighted-interleave",
        _ => "unknown",
    };
    let cpu_nodes: Vec<u32> = host_nodes
        .iter()
        .filter(|n| n.cpus.iter().any(|c| cpus.contains(c)))
        .map(|n| n.id)
        .collect();
    let mem: Vec<u32> = host_nodes
        .iter()
        .filter(|n| n.has_memory)
        .map(|n| n.id)
        .collect();
    let shown = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
    let policy_nodes = if nodes.is_empty() { mem.clone() } else { nodes };
    Ok(format!(
        "policy: {name}\nphyscpubind: {}\ncpubind: {}\nnodebind: {}\nmembind: {}\n",
        shown(&cpus),
        shown(&cpu_nodes),
        shown(&cpu_nodes),
        shown(&policy_nodes),
    ))
}

/// Set the policy and KSM flag, then replace this process with the program.
pub fn exec(fs: &HostFs, opts: &ExecOptions) -> Result<std::convert::Infallible, Error> {
    let Some((prog, args)) = opts.argv.split_first() else {
        return Err(Error::Config(tiermem_core::ConfigError::invalid(
            "CMD",
            "no command given",
        )));
    };
    let policy = policy_for(fs, opts)?;
    let affinity = affinity_for(fs, opts)?;
    if let Some(cpus) = affinity {
        crate::sys::set_affinity(&cpus)?;
    }
    if let Some((mode, nodes)) = policy {
        crate::sys::set_mempolicy(mode, &nodes)?;
    }
    if opts.ksm {
        crate::sys::set_memory_merge().map_err(|e| match e {
            Error::Syscall { source, .. } if source.raw_os_error() == Some(libc::EPERM) => {
                Error::Capability {
                    what: "prctl(PR_SET_MEMORY_MERGE)".into(),
                    capability: "CAP_SYS_RESOURCE".into(),
                }
            }
            Error::Syscall { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                Error::Feature {
                    feature: "process-wide KSM (PR_SET_MEMORY_MERGE, Linux 6.4+)".into(),
                    path: host::KSM_DIR.into(),
                    hint: String::new(),
                }
            }
            other => other,
        })?;
    }
    let err = std::process::Command::new(prog).args(args).exec();
    Err(Error::Other(format!("cannot execute {prog}: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_policy_over_all_memory_nodes_by_default() {
        let t = host::fake_two_node();
        let p = policy_for(
            &t.fs(),
            &ExecOptions {
                interleave: Some(Interleave::Weighted),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p, Some((6, vec![0, 1])));
        let p = policy_for(
            &t.fs(),
            &ExecOptions {
                nodes: vec![1],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(p, Some((2, vec![1])), "nodes without interleave bind");
        assert_eq!(policy_for(&t.fs(), &ExecOptions::default()).unwrap(), None);
    }

    #[test]
    fn numactl_node_specifications() {
        let mem = [0, 1, 2];
        assert_eq!(resolve_spec("-i", "all", &mem).unwrap(), vec![0, 1, 2]);
        assert_eq!(resolve_spec("-i", "0,2", &mem).unwrap(), vec![0, 2]);
        assert_eq!(resolve_spec("-i", "1-2", &mem).unwrap(), vec![1, 2]);
        assert_eq!(resolve_spec("-m", "!0", &mem).unwrap(), vec![1, 2]);
        let e = resolve_spec("-m", "3", &mem).unwrap_err().to_string();
        assert!(e.contains("-m") && e.contains("0-2"), "{e}");
        assert!(resolve_spec("-m", "!all", &mem).is_err());
        assert!(resolve_spec("-m", "+1", &mem).is_err());
        assert!(resolve_spec("-m", "weighted", &mem).is_err());
    }

    #[test]
    fn hardware_prints_nodes_and_distances_as_numactl() {
        let t = host::fake_two_node();
        let h = hardware(&t.fs()).unwrap();
        assert!(h.starts_with("available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\nnode 0 free: 512 MB\nnode 1 cpus:\n"), "{h}");
        assert!(
            h.ends_with("node distances:\nnode   0   1 \n  0:  10  20 \n  1:  20  10 \n"),
            "{h}"
        );
    }

    #[test]
    fn numactl_placements() {
        let t = host::fake_two_node();
        let with = |p: Placement| {
            policy_for(
                &t.fs(),
                &ExecOptions {
                    placement: Some(p),
                    ..Default::default()
                },
            )
        };
        assert_eq!(with(Placement::Preferred(1)).unwrap(), Some((1, vec![1])));
        assert_eq!(
            with(Placement::PreferredMany(vec![0, 1])).unwrap(),
            Some((5, vec![0, 1]))
        );
        assert_eq!(with(Placement::Local).unwrap(), Some((4, vec![])));
        let e = with(Placement::Preferred(7)).unwrap_err();
        assert!(e.to_string().contains("--preferred"), "{e}");
    }

    #[test]
    fn cpu_binding_by_node_and_cpu() {
        let t = host::fake_two_node();
        let aff = |cpu_nodes: Vec<u32>, cpus: Vec<u32>| {
            affinity_for(
                &t.fs(),
                &ExecOptions {
                    cpu_nodes,
                    cpus,
                    ..Default::default()
                },
            )
        };
        let node0: Vec<u32> = host::read_nodes(&t.fs()).unwrap()[0].cpus.clone();
        assert!(!node0.is_empty());
        assert_eq!(aff(vec![0], vec![]).unwrap(), Some(node0.clone()));
        assert_eq!(aff(vec![], vec![]).unwrap(), None);
        assert_eq!(aff(vec![], vec![node0[0]]).unwrap(), Some(vec![node0[0]]));
        let e = aff(vec![1], vec![]).unwrap_err();
        assert!(e.to_string().contains("no CPUs"), "{e}");
        let e = aff(vec![], vec![999]).unwrap_err();
        assert!(e.to_string().contains("--physcpubind"), "{e}");
    }

    #[test]
    fn bad_node_and_missing_feature() {
        let t = host::fake_two_node();
        let e = policy_for(
            &t.fs(),
            &ExecOptions {
                nodes: vec![4],
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.is_input_error());
        std::fs::remove_dir_all(t.fs().path(host::WI_DIR)).unwrap();
        let e = policy_for(
            &t.fs(),
            &ExecOptions {
                interleave: Some(Interleave::Weighted),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("6.9"), "{e}");
    }
}
