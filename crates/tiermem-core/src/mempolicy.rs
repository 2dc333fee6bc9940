//! Memory policies (`include/uapi/linux/mempolicy.h`, `mm/mempolicy.c`).
//!
//! A policy is data: a mode plus a node set. The simulator turns it into a preferred node
//! and an optional hard node mask for each allocation (`policy_node`/`policy_nodemask`).
//! Every mode has its kernel number and every mode flag its bit, so configs and the live
//! agent share one vocabulary. Flags are checked as `sanitize_mpol_flags` and `mpol_new`
//! check them.

use crate::units::NodeId;
use serde::{Deserialize, Serialize};

/// Policy modes with their kernel numbers (`MPOL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    /// `MPOL_DEFAULT` (0): allocate on the local node, fall back along the zonelist.
    Default,
    /// `MPOL_PREFERRED` (1): allocate on the given node, fall back anywhere.
    Preferred,
    /// `MPOL_BIND` (2): allocate only on the given nodes (nearest first).
    Bind,
    /// `MPOL_INTERLEAVE` (3).
    Interleave,
    /// `MPOL_LOCAL` (4): like default, as an explicit policy.
    Local,
    /// `MPOL_PREFERRED_MANY` (5).
    PreferredMany,
    /// `MPOL_WEIGHTED_INTERLEAVE` (6, Linux 6.9+).
    WeightedInterleave,
}

/// Mode flags OR'ed into the mode argument of `set_mempolicy`/`mbind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeFlag {
    /// `MPOL_F_STATIC_NODES` (1 << 15): the node set is not remapped when the cpuset's
    /// `mems_allowed` changes.
    StaticNodes,
    /// `MPOL_F_RELATIVE_NODES` (1 << 14): the node set is relative to `mems_allowed`.
    RelativeNodes,
    /// `MPOL_F_NUMA_BALANCING` (1 << 13): BIND / PREFERRED_MANY pages may be migrated by
    /// NUMA balancing among the policy's nodes (`MPOL_F_MOF | MPOL_F_MORON`).
    NumaBalancing,
}

impl ModeFlag {
    /// The flag's bit in the mode argument.
    pub fn kernel_value(self) -> i32 {
        match self {
            ModeFlag::StaticNodes => 1 << 15,
            ModeFlag::RelativeNodes => 1 << 14,
            ModeFlag::NumaBalancing => 1 << 13,
        }
    }
}

/// `mbind` flags (the syscall's last argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MbindFlag {
    /// `MPOL_MF_STRICT` (1): fail with `EIO` if existing pages do not follow the policy
    /// (and, with MOVE, if some could not be moved).
    Strict,
    /// `MPOL_MF_MOVE` (2): migrate existing pages that lie outside the policy's node set.
    Move,
    /// `MPOL_MF_MOVE_ALL` (4, CAP_SYS_NICE): also pages shared with other processes.
    MoveAll,
}

impl MbindFlag {
    pub fn kernel_value(self) -> u32 {
        match self {
            MbindFlag::Strict => 1,
            MbindFlag::Move => 2,
            MbindFlag::MoveAll => 4,
        }
    }
}

impl PolicyMode {
    /// The `MPOL_*` value passed to `set_mempolicy`/`mbind`.
    pub fn kernel_value(self) -> i32 {
        match self {
            PolicyMode::Default => 0,
            PolicyMode::Preferred => 1,
            PolicyMode::Bind => 2,
            PolicyMode::Interleave => 3,
            PolicyMode::Local => 4,
            PolicyMode::PreferredMany => 5,
            PolicyMode::WeightedInterleave => 6,
        }
    }

    /// The mode for an `MPOL_*` value (`None` at or above `MPOL_MAX`).
    pub fn from_kernel_value(v: i32) -> Option<PolicyMode> {
        Some(match v {
            0 => PolicyMode::Default,
            1 => PolicyMode::Preferred,
            2 => PolicyMode::Bind,
            3 => PolicyMode::Interleave,
            4 => PolicyMode::Local,
            5 => PolicyMode::PreferredMany,
            6 => PolicyMode::WeightedInterleave,
            _ => return None,
        })
    }

    /// INTERLEAVE or WEIGHTED_INTERLEAVE: the modes that use an interleave index.
    pub fn is_interleave(self) -> bool {
        matches!(
            self,
            PolicyMode::Interleave | PolicyMode::WeightedInterleave
        )
    }
}

/// A memory policy as written in config: `{ mode = "bind", nodes = [0, 1] }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemPolicy {
    pub mode: PolicyMode,
    /// The policy's node set (empty for default/local).
    #[serde(default)]
    pub nodes: Vec<NodeId>,
    /// Mode flags (`static_nodes`, `relative_nodes`, `numa_balancing`). Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ModeFlag>,
}

impl Default for MemPolicy {
    fn default() -> Self {
        MemPolicy {
            mode: PolicyMode::Default,
            nodes: Vec::new(),
            flags: Vec::new(),
        }
    }
}

impl MemPolicy {
    /// A policy without flags.
    pub fn new(mode: PolicyMode, nodes: Vec<NodeId>) -> Self {
        MemPolicy {
            mode,
            nodes,
            flags: Vec::new(),
        }
    }

    pub fn has_flag(&self, f: ModeFlag) -> bool {
        self.flags.contains(&f)
    }

    /// The mode argument of the syscall: mode number OR'ed with the flag bits.
    pub fn kernel_mode_arg(&self) -> i32 {
        self.flags
            .iter()
            .fold(self.mode.kernel_value(), |m, f| m | f.kernel_value())
    }

    /// The node set as a bitmap.
    pub fn node_mask(&self) -> u64 {
        self.nodes.iter().fold(0u64, |m, n| m | (1u64 << n.0))
    }

    /// Check the node set against the machine: the rules `mpol_new` enforces
    /// (DEFAULT/LOCAL take no nodes, the others need at least one; PREFERRED exactly one),
    /// and the flag rules of `sanitize_mpol_flags` (STATIC and RELATIVE exclude each other;
    /// NUMA_BALANCING only with BIND or PREFERRED_MANY; DEFAULT/LOCAL take no flags).
    pub fn validate(&self, nr_nodes: usize) -> Result<(), String> {
        if self.has_flag(ModeFlag::StaticNodes) && self.has_flag(ModeFlag::RelativeNodes) {
            return Err("flags static_nodes and relative_nodes exclude each other (EINVAL)".into());
        }
        if self.has_flag(ModeFlag::NumaBalancing)
            && !matches!(self.mode, PolicyMode::Bind | PolicyMode::PreferredMany)
        {
            return Err(format!(
                "flag numa_balancing is valid only with bind or preferred_many, not {:?} (EINVAL)",
                self.mode
            ));
        }
        if matches!(self.mode, PolicyMode::Default | PolicyMode::Local) && !self.flags.is_empty() {
            return Err(format!("mode {:?} takes no flags (EINVAL)", self.mode));
        }
        for n in &self.nodes {
            if n.idx() >= nr_nodes {
                return Err(format!(
                    "node {} does not exist (the machine has nodes 0..{})",
                    n.0,
                    nr_nodes - 1
                ));
            }
        }
        let mut sorted = self.nodes.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != self.nodes.len() {
            return Err("a node is listed twice".into());
        }
        match self.mode {
            PolicyMode::Default | PolicyMode::Local if !self.nodes.is_empty() => {
                Err(format!("mode {:?} takes no nodes (EINVAL)", self.mode))
            }
            PolicyMode::Preferred if self.nodes.len() != 1 => {
                Err("mode preferred takes exactly one node".into())
            }
            PolicyMode::Bind
            | PolicyMode::PreferredMany
            | PolicyMode::Interleave
            | PolicyMode::WeightedInterleave
                if self.nodes.is_empty() =>
            {
                Err(format!(
                    "mode {:?} needs at least one node (EINVAL)",
                    self.mode
                ))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_sanitize_mpol_flags() {
        let mut p = MemPolicy::new(PolicyMode::WeightedInterleave, vec![NodeId(0), NodeId(1)]);
        assert!(p.validate(2).is_ok());
        assert_eq!(p.kernel_mode_arg(), 6);
        p.flags = vec![ModeFlag::StaticNodes];
        assert_eq!(p.kernel_mode_arg(), 6 | 1 << 15);
        p.flags.push(ModeFlag::RelativeNodes);
        assert!(p.validate(2).unwrap_err().contains("exclude"));
        p.flags = vec![ModeFlag::NumaBalancing];
        assert!(p.validate(2).is_err());
        p.mode = PolicyMode::Bind;
        assert!(p.validate(2).is_ok());
        let l = MemPolicy {
            flags: vec![ModeFlag::StaticNodes],
            ..MemPolicy::new(PolicyMode::Local, vec![])
        };
        assert!(l.validate(2).is_err());
        assert_eq!(
            PolicyMode::from_kernel_value(6),
            Some(PolicyMode::WeightedInterleave)
        );
        assert_eq!(PolicyMode::from_kernel_value(7), None);
    }
}
