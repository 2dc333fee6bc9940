//! Memory policies (`include/uapi/linux/mempolicy.h`, `mm/mempolicy.c`).
//!
//! A policy is data: a mode plus a node set. The simulator turns it into a preferred node
//! and an optional hard node mask for each allocation (`policy_node`/`policy_nodemask`).
//! The interleave family (INTERLEAVE, WEIGHTED_INTERLEAVE) and PREFERRED_MANY are listed
//! with their kernel mode numbers so configs and the live agent share one vocabulary; the
//! simulator refuses modes it does not model yet with a clear config error.

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
}

/// A memory policy as written in config: `{ mode = "bind", nodes = [0, 1] }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemPolicy {
    pub mode: PolicyMode,
    /// The policy's node set (empty for default/local).
    #[serde(default)]
    pub nodes: Vec<NodeId>,
}

impl Default for MemPolicy {
    fn default() -> Self {
        MemPolicy {
            mode: PolicyMode::Default,
            nodes: Vec::new(),
        }
    }
}

impl MemPolicy {
    /// Check the node set against the machine: the rules `mpol_new` enforces
    /// (DEFAULT/LOCAL take no nodes, the others need at least one; PREFERRED exactly one).
    pub fn validate(&self, nr_nodes: usize) -> Result<(), String> {
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
