//! The live agent's user-space tiering controller, run in the simulator: the same
//! [`tiermem_policy::tiering::Controller`], built from the same `[tiering]` section
//! ([`ControllerParams::from_config`]), fed by a simulated DAMON `vaddr` context per target
//! and moving pages through `move_pages(2)` over the simulated page tables
//! ([`Kernel::move_pages`]). What a policy does to a workload can be simulated first and
//! then deployed with `tiermem agent` unchanged.
//!
//! As on a host: one kdamond per target process, with the section's `attrs` and no scheme;
//! the controller acts every `interval` (the agent's tick) on each target's regions as of
//! the last complete aggregation window (`nr_accesses` of that window and the region's
//! age, what the agent reads from a `stat` scheme's tried regions). The agent's own CPU
//! time is not charged to the workload (it runs on its own CPU); the migrations' copy
//! traffic is, as the kernel's.

use crate::mm::damon::Kdamond;
use crate::mm::Kernel;
use std::collections::BTreeMap;
use tiermem_core::config::SimConfig;
use tiermem_core::damon::{ContextConfig, OpsKind, Region};
use tiermem_core::units::NodeId;
use tiermem_policy::tiering::{
    Controller, ControllerParams, ControllerStats, MemoryOps, OpsError, PAGE_SIZE,
};

/// [`MemoryOps`] over the simulated kernel; a "pid" is a process index.
struct SimMemory<'a> {
    kernel: &'a mut Kernel,
}

impl MemoryOps for SimMemory<'_> {
    /// The process's VMAs, as `/proc/PID/maps` lists them.
    fn mappings(&mut self, pid: i32) -> Result<Vec<(u64, u64)>, OpsError> {
        let p = self.proc_of(pid)?;
        Ok(self.kernel.procs()[p as usize]
            .vmas
            .iter()
            .map(|v| (v.start, v.start + v.pages as u64 * PAGE_SIZE))
            .collect())
    }
    fn query(&mut self, pid: i32, pages: &[usize]) -> Result<Vec<i32>, OpsError> {
        let p = self.proc_of(pid)?;
        Ok(self.kernel.move_pages(p, pages, None))
    }
    fn move_to(&mut self, pid: i32, pages: &[usize], node: u32) -> Result<Vec<i32>, OpsError> {
        let p = self.proc_of(pid)?;
        Ok(self.kernel.move_pages(p, pages, Some(node as usize)))
    }
    fn free_bytes(&mut self, node: u32) -> u64 {
        self.kernel.nodes()[node as usize].free * PAGE_SIZE
    }
    /// The high (or, in a 6.1+ kernel, promo) watermarks summed over the node's zones, as
    /// the agent reads them from `/proc/zoneinfo`.
    fn high_wmark_bytes(&mut self, node: u32) -> u64 {
        self.kernel.nodes()[node as usize]
            .zones
            .iter()
            .map(|z| z.wmark.high.max(z.wmark.promo))
            .sum::<u64>()
            * PAGE_SIZE
    }
}

impl SimMemory<'_> {
    fn proc_of(&self, pid: i32) -> Result<u16, OpsError> {
        u16::try_from(pid)
            .ok()
            .filter(|&p| self.kernel.procs().get(p as usize).is_some_and(|x| x.alive))
            .ok_or_else(|| OpsError(format!("no process {pid} (ESRCH)")))
    }
}

/// The controller of a simulation's `[tiering]` section and its kdamonds.
pub struct UserTiering {
    controller: Controller,
    /// Per kdamond of the controller: its index in the simulation's kdamonds.
    kdamonds: Vec<usize>,
    interval_ms: u64,
    next_ms: u64,
}

impl UserTiering {
    /// Build the controller of `cfg.tiering` (if any): node roles as the agent resolves
    /// them (fast = the top tier, slow = the rest, demotion target = the kernel's preferred
    /// one among the slow nodes, else the nearest), and one kdamond per target workload,
    /// appended to `kdamonds`.
    pub fn new(
        cfg: &SimConfig,
        kernel: &Kernel,
        proc_workload: &[usize],
        kdamonds: &mut Vec<Kdamond>,
        seed: u64,
    ) -> Result<Option<UserTiering>, tiermem_core::ConfigError> {
        let Some(t) = &cfg.tiering else {
            return Ok(None);
        };
        let topo = kernel.topo();
        let nodes: Vec<u32> = (0..topo.nr_nodes() as u32).collect();
        let fast: Vec<u32> = if t.fast_nodes.is_empty() {
            nodes
                .iter()
                .copied()
                .filter(|&n| topo.is_toptier(NodeId(n as u8)))
                .collect()
        } else {
            t.fast_nodes.clone()
        };
        let slow: Vec<u32> = if t.slow_nodes.is_empty() {
            nodes
                .iter()
                .copied()
                .filter(|n| !fast.contains(n))
                .collect()
        } else {
            t.slow_nodes.clone()
        };
        if slow.is_empty() {
            return Err(tiermem_core::ConfigError::invalid(
                "tiering",
                "this machine has no slow memory node to promote from",
            ));
        }
        let demotion_target: BTreeMap<u32, u32> = fast
            .iter()
            .filter_map(|&f| {
                let preferred = topo.demotion_preferred[f as usize]
                    .iter()
                    .map(|n| n.0 as u32)
                    .find(|n| slow.contains(n));
                let nearest = slow
                    .iter()
                    .copied()
                    .min_by_key(|&s| (topo.distances[f as usize][s as usize], s));
                preferred.or(nearest).map(|d| (f, d))
            })
            .collect();
        let params =
            ControllerParams::from_config(t, cfg.interval.as_ms(), fast, slow, demotion_target);
        let mut mine = Vec::new();
        for (k, wi) in cfg.selected_workloads(&t.targets).into_iter().enumerate() {
            let nc = tiermem_damon::modules::NamedContext {
                name: format!("tiering{k}"),
                cfg: ContextConfig {
                    ops: OpsKind::Vaddr,
                    attrs: t.attrs.clone(),
                    target_workloads: vec![wi],
                    regions: Vec::new(),
                    schemes: Vec::new(),
                    record: false,
                    per_workload_run: false,
                },
            };
            mine.push(kdamonds.len());
            kdamonds.push(Kdamond::new(
                &nc,
                kernel,
                proc_workload,
                &cfg.kernel.damon.costs,
                cfg.kernel.release,
                seed.wrapping_add(k as u64),
            )?);
        }
        Ok(Some(UserTiering {
            controller: Controller::new(params, 0),
            kdamonds: mine,
            interval_ms: cfg.interval.as_ms().max(10),
            next_ms: cfg.interval.as_ms().max(10),
        }))
    }

    /// Run the controller's ticks due by `now_ms`, over its kdamonds' regions.
    pub fn run_due(&mut self, now_ms: u64, kernel: &mut Kernel, kdamonds: &[Kdamond]) {
        while self.next_ms <= now_ms {
            let at = self.next_ms;
            self.next_ms += self.interval_ms;
            let mut targets: BTreeMap<i32, Vec<Region>> = BTreeMap::new();
            for &k in &self.kdamonds {
                let kd = &kdamonds[k];
                for (ti, &p) in kd.procs.iter().enumerate() {
                    if !kernel.procs()[p as usize].alive {
                        continue;
                    }
                    let regions = kd.ctx.targets.get(ti).map_or(Vec::new(), |rs| {
                        rs.iter()
                            .map(|r| Region {
                                start: r.start,
                                end: r.end,
                                nr_accesses: r.last_nr_accesses as u64,
                                age: r.age as u64,
                            })
                            .collect()
                    });
                    targets.insert(p as i32, regions);
                }
            }
            let mut ops = SimMemory {
                kernel: &mut *kernel,
            };
            if let Err(e) = self.controller.tick(at, &targets, &mut ops) {
                tracing::debug!(error = %e, "tiering controller tick");
            }
        }
    }

    pub fn stats(&self) -> &ControllerStats {
        &self.controller.stats
    }
}
