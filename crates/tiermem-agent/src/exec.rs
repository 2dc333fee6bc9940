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

#[derive(Clone, Debug, Default)]
pub struct ExecOptions {
    pub interleave: Option<Interleave>,
    /// Policy nodes; default: every memory node. Without `interleave`, `MPOL_BIND` to them.
    pub nodes: Vec<u32>,
    pub ksm: bool,
    pub argv: Vec<String>,
}

/// The policy (mode value, nodes) that `opts` asks for, checked against the host.
pub fn policy_for(fs: &HostFs, opts: &ExecOptions) -> Result<Option<(i32, Vec<u32>)>, Error> {
    if opts.interleave.is_none() && opts.nodes.is_empty() {
        return Ok(None);
    }
    let mem: Vec<u32> = host::read_nodes(fs)?
        .into_iter()
        .filter(|n| n.has_memory)
        .map(|n| n.id)
        .collect();
    let nodes = if opts.nodes.is_empty() {
        mem.clone()
    } else {
        opts.nodes.clone()
    };
    if let Some(n) = nodes.iter().find(|n| !mem.contains(n)) {
        return Err(Error::Config(tiermem_core::ConfigError::invalid(
            "--nodes",
            format!(
                "node {n} is not a memory node (memory nodes: {})",
                crate::fs::format_list(&mem)
            ),
        )));
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

/// Set the policy and KSM flag, then replace this process with the program.
pub fn exec(fs: &HostFs, opts: &ExecOptions) -> Result<std::convert::Infallible, Error> {
    let Some((prog, args)) = opts.argv.split_first() else {
        return Err(Error::Config(tiermem_core::ConfigError::invalid(
            "CMD",
            "no command given",
        )));
    };
    if let Some((mode, nodes)) = policy_for(fs, opts)? {
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
