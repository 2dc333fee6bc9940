//! Memory policies in the simulated kernel: which node a page comes from under each mode
//! (`alloc_pages_mpol`, `policy_node`/`policy_nodemask`), the interleave paths,
//! `set_mempolicy`, `mbind` with `MPOL_MF_MOVE`, and up-front population by the per-task
//! cursor or the bulk allocator.
//!
//! Three interleave paths exist in the kernel, and the simulator has all three
//! (`kernel-mechanisms.md` §2.4–§2.5):
//!
//! * anonymous VMA faults use the static, offset-based choice (`weighted_interleave_nid`,
//!   `interleave_nid`) with the interleave index `vm_pgoff + (addr − vm_start) >> PAGE_SHIFT`;
//!   for a private anonymous mapping `vm_pgoff = vm_start >> PAGE_SHIFT` (`do_mmap`), so the
//!   index is the page's virtual page number, whether the policy is the VMA's or the task's;
//! * allocations without an index (page cache, slab) use the per-task cursor
//!   (`weighted_interleave_nodes`, `interleave_nodes`) — [`Populate::Cursor`];
//! * `alloc_pages_bulk_mempolicy` (vmalloc) uses `alloc_pages_bulk_weighted_interleave` /
//!   `alloc_pages_bulk_interleave` — [`Populate::Bulk`].
//!
//! The interleave target is a preferred node, not a hard mask: allocation falls back along
//! the target's zonelist, and an allocation that lands on the target counts
//! `numa_interleave` (`NUMA_INTERLEAVE_HIT`). Weights are read at each allocation, so a
//! change of the weight table affects future allocations only.

use crate::mm::alloc::PageFor;
use crate::mm::mem::{pte_maps_frame, pte_mk, pte_node, pte_pfn, Lru, PTE_PRESENT};
use crate::mm::{FaultError, Kernel, NodeMask};
use crate::vmstat::Vm;
use tiermem_core::config::{region_matches, MbindConfig, Populate};
use tiermem_core::interleave::{interleave_nid, weighted_interleave_nid};
use tiermem_core::mempolicy::{MbindFlag, MemPolicy, PolicyMode};
use tiermem_core::units::{NodeId, SimDuration, SimTime, PAGE_SIZE};

/// Where an allocation under a policy should come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocPlan {
    /// A preferred node and an optional hard mask (DEFAULT, LOCAL, PREFERRED, BIND).
    Node {
        preferred: NodeId,
        mask: Option<NodeMask>,
    },
    /// An interleave target: preferred node, fallback anywhere, `numa_interleave` on a hit.
    Interleave { node: NodeId },
    /// PREFERRED_MANY: first the mask without direct reclaim, then anywhere.
    PreferredMany { mask: NodeMask },
}

/// Why an `mbind` call failed (the errno).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MbindError {
    /// `MPOL_MF_STRICT`: pages outside the policy's nodes exist (without MOVE: the policy
    /// is not applied) or could not be moved (with MOVE: the policy is applied).
    #[error("EIO: {0} pages do not follow the policy")]
    Eio(u64),
    #[error("EINVAL: {0}")]
    Invalid(String),
}

/// What an `mbind` call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MbindOutcome {
    /// Pages migrated.
    pub moved: u64,
    /// Pages queued for migration that could not be moved.
    pub failed: u64,
    /// Kernel time spent migrating.
    pub cost: SimDuration,
}

/// A timed `mbind` waiting for its time.
#[derive(Clone, Debug)]
pub struct PendingMbind {
    pub at: SimTime,
    pub proc: u16,
    pub cfg: MbindConfig,
}

impl Kernel {
    /// The effective policy for page-table index `idx` of process `p` (`get_vma_policy`:
    /// the VMA's policy, else the task's).
    pub fn effective_policy(&self, p: u16, idx: u32) -> &MemPolicy {
        let pr = &self.procs[p as usize];
        pr.vma_of(idx)
            .and_then(|v| v.policy.as_ref())
            .unwrap_or(&pr.policy)
    }

    /// The interleave index of a page (`get_vma_policy` for an anonymous private VMA): its
    /// virtual page number.
    pub fn interleave_index(&self, p: u16, idx: u32) -> u64 {
        let pr = &self.procs[p as usize];
        match pr.vma_of(idx) {
            Some(v) => v.start / PAGE_SIZE + (idx - v.pte_base) as u64,
            None => idx as u64,
        }
    }

    /// The static node choice of a policy for interleave index `ilx` (`policy_node` /
    /// `policy_nodemask` with an index): what a VMA fault, `mbind` migration and
    /// `mpol_misplaced` use.
    pub fn policy_plan(&self, policy: &MemPolicy, ilx: u64, cpu_node: NodeId) -> AllocPlan {
        let mask = policy.node_mask();
        match policy.mode {
            PolicyMode::Default | PolicyMode::Local => AllocPlan::Node {
                preferred: cpu_node,
                mask: None,
            },
            PolicyMode::Preferred => AllocPlan::Node {
                preferred: policy.nodes[0],
                mask: None,
            },
            // The local zonelist restricted to the mask: nearest allowed node first.
            PolicyMode::Bind => AllocPlan::Node {
                preferred: cpu_node,
                mask: Some(mask),
            },
            PolicyMode::PreferredMany => AllocPlan::PreferredMany { mask },
            PolicyMode::Interleave => match interleave_nid(mask, ilx) {
                Some(n) => AllocPlan::Interleave {
                    node: NodeId(n as u8),
                },
                None => AllocPlan::Node {
                    preferred: cpu_node,
                    mask: None,
                },
            },
            PolicyMode::WeightedInterleave => {
                match weighted_interleave_nid(mask, &self.wi.weights(), ilx) {
                    Some(n) => AllocPlan::Interleave {
                        node: NodeId(n as u8),
                    },
                    None => AllocPlan::Node {
                        preferred: cpu_node,
                        mask: None,
                    },
                }
            }
        }
    }

    /// The node choice without an interleave index (`alloc_pages` in process context): the
    /// per-task cursor for the interleave modes, the static choice otherwise.
    pub fn policy_plan_cursor(
        &mut self,
        p: u16,
        policy: &MemPolicy,
        cpu_node: NodeId,
    ) -> AllocPlan {
        let mask = policy.node_mask();
        let node = match policy.mode {
            PolicyMode::Interleave => self.procs[p as usize].il.interleave_nodes(mask),
            PolicyMode::WeightedInterleave => {
                let w = self.wi.weights();
                self.procs[p as usize]
                    .il
                    .weighted_interleave_nodes(mask, &w)
            }
            _ => return self.policy_plan(policy, 0, cpu_node),
        };
        match node {
            Some(n) => AllocPlan::Interleave {
                node: NodeId(n as u8),
            },
            None => AllocPlan::Node {
                preferred: cpu_node,
                mask: None,
            },
        }
    }

    /// Allocate a frame for `who` under a plan (`alloc_pages_mpol`). Returns the node,
    /// frame and time spent in direct reclaim.
    pub fn alloc_by_plan(
        &mut self,
        who: PageFor,
        plan: AllocPlan,
        cpu_node: NodeId,
        now: SimTime,
    ) -> Result<(usize, u32, SimDuration), FaultError> {
        match plan {
            AllocPlan::Node { preferred, mask } => {
                self.alloc_user_page(who, preferred, mask, cpu_node, now)
            }
            AllocPlan::Interleave { node } => {
                let r = self.alloc_user_page(who, node, None, cpu_node, now)?;
                if r.0 == node.idx() {
                    self.vmstat.inc(r.0, Vm::NumaInterleave);
                }
                Ok(r)
            }
            AllocPlan::PreferredMany { mask } => {
                // alloc_pages_preferred_many: the mask first with __GFP_NOWARN and without
                // direct reclaim (the fast path, kswapd wakeups, the min watermark), then the
                // local node without a mask.
                if let Some(r) = self.alloc_no_direct_reclaim(who, cpu_node, mask, cpu_node, now) {
                    return Ok(r);
                }
                self.alloc_user_page(who, cpu_node, None, cpu_node, now)
            }
        }
    }

    /// `mbind(addr, len, mode|flags, nodes, flags)` on every VMA of process `p` matching
    /// `region` (`do_mbind`). Pages whose node is **not** in the new node set are queued
    /// (`queue_pages_range` with `MPOL_MF_INVERT`): with MOVE/MOVE_ALL they migrate to the
    /// policy's static target for their interleave index (`alloc_migration_target_by_mpol`);
    /// pages already on one of the policy's nodes stay where they are, so mbind(MOVE) does not
    /// rebalance pages among the new nodes. With STRICT alone, a misplaced page fails the
    /// call with EIO before the policy is applied. Mode `default` removes the VMA policy.
    pub fn mbind(
        &mut self,
        p: u16,
        region: &str,
        policy: &MemPolicy,
        flags: &[MbindFlag],
        now: SimTime,
    ) -> Result<MbindOutcome, MbindError> {
        policy
            .validate(self.topo.nr_nodes())
            .map_err(MbindError::Invalid)?;
        let moving = flags.contains(&MbindFlag::Move) || flags.contains(&MbindFlag::MoveAll);
        let strict = flags.contains(&MbindFlag::Strict);
        let vmas: Vec<usize> = self.procs[p as usize]
            .vmas
            .iter()
            .enumerate()
            .filter(|(_, v)| region_matches(region, &v.name))
            .map(|(i, _)| i)
            .collect();
        if vmas.is_empty() {
            return Err(MbindError::Invalid(format!(
                "no region {region:?} (EFAULT)"
            )));
        }
        let nmask = policy.node_mask();
        // queue_pages_range with MPOL_MF_INVERT.
        let mut queued: Vec<u32> = Vec::new();
        for &vi in &vmas {
            let v = &self.procs[p as usize].vmas[vi];
            for idx in v.pte_base..v.pte_base + v.pages {
                let pte = self.procs[p as usize].ptes[idx as usize];
                if pte_maps_frame(pte) && nmask & (1u64 << pte_node(pte)) == 0 {
                    queued.push(idx);
                }
            }
        }
        if strict && !moving && !queued.is_empty() {
            return Err(MbindError::Eio(queued.len() as u64));
        }
        // mbind_range: install the new VMA policy (default = none).
        let newpol = (policy.mode != PolicyMode::Default).then(|| policy.clone());
        for &vi in &vmas {
            self.procs[p as usize].vmas[vi].policy = newpol.clone();
        }
        let mut out = MbindOutcome::default();
        if !moving {
            return Ok(out);
        }
        // Convert MPOL_DEFAULT's NULL to the task policy for the migration target.
        let target_pol = newpol.unwrap_or_else(|| self.procs[p as usize].policy.clone());
        let cpu = self.procs[p as usize].cpu_node;
        for idx in queued {
            let ilx = self.interleave_index(p, idx);
            let plan = self.policy_plan(&target_pol, ilx, cpu);
            let (first, mask) = match plan {
                AllocPlan::Node { preferred, mask } => (preferred, mask),
                AllocPlan::Interleave { node } => (node, None),
                AllocPlan::PreferredMany { mask } => (cpu, Some(mask)),
            };
            let pte = self.procs[p as usize].ptes[idx as usize];
            let (src, pfn) = (pte_node(pte), pte_pfn(pte));
            // The target's zonelist (restricted to the mask for BIND), free pages above min.
            let dst = self.topo.fallback[first.idx()]
                .iter()
                .map(|n| n.idx())
                .filter(|&n| mask.is_none_or(|m| m & (1u64 << n) != 0))
                .find_map(|n| {
                    self.nodes[n]
                        .zone_above(|w| w.min, tiermem_core::watermarks::ZONE_MOVABLE)
                        .map(|z| (n, z))
                });
            match dst {
                Some(d) if d.0 != src => {
                    self.isolate_and_migrate(src, pfn, d);
                    out.moved += 1;
                    out.cost += self.cfg.costs.migrate_page;
                }
                Some(_) => {}
                None => {
                    self.vmstat.inc(src, Vm::PgmigrateFail);
                    out.failed += 1;
                }
            }
        }
        let _ = now;
        if strict && out.failed > 0 {
            return Err(MbindError::Eio(out.failed));
        }
        Ok(out)
    }

    /// `set_mempolicy`: replace the task policy and reset the interleave cursor
    /// (`il_prev = MAX_NUMNODES − 1`, `il_weight = 0`).
    pub fn set_mempolicy(&mut self, p: u16, policy: MemPolicy) -> Result<(), MbindError> {
        policy
            .validate(self.topo.nr_nodes())
            .map_err(MbindError::Invalid)?;
        let pr = &mut self.procs[p as usize];
        pr.policy = policy;
        pr.il = Default::default();
        Ok(())
    }

    /// Queue an `mbind` for later or run it now (`at` = `None`).
    pub fn schedule_mbind(&mut self, p: u16, cfg: &MbindConfig) {
        match cfg.at {
            None => {
                if let Err(e) = self.mbind(p, &cfg.region, &cfg.policy, &cfg.flags, SimTime::ZERO) {
                    tracing::warn!(region = %cfg.region, error = %e, "mbind failed");
                }
            }
            Some(at) => self.pending_mbinds.push(PendingMbind {
                at: SimTime(at.ps()),
                proc: p,
                cfg: cfg.clone(),
            }),
        }
    }

    /// Run the timed `mbind` calls that are due (in schedule order). Returns the migration
    /// time per process, for the engine to charge to the calling thread.
    pub fn run_due_mbinds(&mut self, now: SimTime) -> Vec<(u16, SimDuration)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.pending_mbinds.len() {
            if self.pending_mbinds[i].at <= now {
                let pm = self.pending_mbinds.remove(i);
                if !self.procs[pm.proc as usize].alive {
                    continue;
                }
                match self.mbind(pm.proc, &pm.cfg.region, &pm.cfg.policy, &pm.cfg.flags, now) {
                    Ok(o) => out.push((pm.proc, o.cost)),
                    Err(e) => tracing::warn!(region = %pm.cfg.region, error = %e, "mbind failed"),
                }
            } else {
                i += 1;
            }
        }
        out
    }

    /// Allocate every page of the regions of `p` up front (`Populate::Cursor` or `Bulk`),
    /// in address order, under each page's effective policy. Pages are mapped but not yet
    /// accessed. `Populate::Fault` does nothing (pages come with first touch).
    pub fn populate(&mut self, p: u16, how: Populate) -> Result<(), FaultError> {
        if how == Populate::Fault {
            return Ok(());
        }
        let cpu = self.procs[p as usize].cpu_node;
        let nv = self.procs[p as usize].vmas.len();
        for vi in 0..nv {
            let (base, pages) = {
                let v = &self.procs[p as usize].vmas[vi];
                (v.pte_base, v.pages)
            };
            let policy = self.effective_policy(p, base).clone();
            if how == Populate::Bulk && policy.mode.is_interleave() {
                // alloc_pages_bulk_mempolicy: one call for the whole region.
                let mask = policy.node_mask();
                let w = self.wi.weights();
                let il = &mut self.procs[p as usize].il;
                let runs = if policy.mode == PolicyMode::WeightedInterleave {
                    il.bulk_weighted_interleave(mask, &w, pages as u64)
                } else {
                    il.bulk_interleave(mask, pages as u64)
                };
                let mut idx = base;
                for (node, count) in runs {
                    for _ in 0..count {
                        let plan = AllocPlan::Interleave {
                            node: NodeId(node as u8),
                        };
                        self.map_new_page(p, idx, plan, cpu)?;
                        idx += 1;
                    }
                }
            } else {
                for idx in base..base + pages {
                    let plan = self.policy_plan_cursor(p, &policy, cpu);
                    self.map_new_page(p, idx, plan, cpu)?;
                }
            }
        }
        Ok(())
    }

    fn map_new_page(
        &mut self,
        p: u16,
        idx: u32,
        plan: AllocPlan,
        cpu: NodeId,
    ) -> Result<(), FaultError> {
        if self.procs[p as usize].ptes[idx as usize] & PTE_PRESENT != 0 {
            return Ok(());
        }
        let (n, pfn, _) = self.alloc_by_plan(PageFor::anon(p, idx), plan, cpu, SimTime::ZERO)?;
        self.procs[p as usize].ptes[idx as usize] = pte_mk(n, pfn);
        self.procs[p as usize].rss += 1;
        self.nodes[n].lru_add(Lru::InactiveAnon, pfn);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use tiermem_core::config::KernelConfig;
    use tiermem_core::interleave::WeightSemantics;
    use tiermem_core::topology::Topology;

    /// A 2-node machine (DRAM with CPUs + CPU-less CXL) large enough for the tests.
    fn kernel(weights: Option<Vec<u8>>) -> Kernel {
        let v = tiermem_core::presets::machine_value("ddr5-cxl").unwrap();
        let m = tiermem_core::config::typed(v, "machine").unwrap();
        let topo = Topology::new(&m).unwrap();
        let mut cfg = KernelConfig::default();
        cfg.weighted_interleave.semantics = Some(WeightSemantics::V6_9);
        cfg.weighted_interleave.weights = weights;
        Kernel::new(
            topo,
            cfg,
            rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1),
        )
    }

    fn wi(nodes: &[u8]) -> MemPolicy {
        MemPolicy::new(
            PolicyMode::WeightedInterleave,
            nodes.iter().map(|&n| NodeId(n)).collect(),
        )
    }

    fn per_node(k: &Kernel, p: u16) -> [u64; 2] {
        let mut c = [0u64; 2];
        for &e in &k.procs[p as usize].ptes {
            if e & PTE_PRESENT != 0 {
                c[pte_node(e)] += 1;
            }
        }
        c
    }

    const PAGES: u32 = 61_440;

    fn fault_all(k: &mut Kernel, p: u16) {
        for i in 0..PAGES {
            k.handle_fault(p, i, true, NodeId(0), SimTime::ZERO)
                .unwrap();
        }
    }

    fn proc_with(k: &mut Kernel, policy: MemPolicy) -> u16 {
        k.add_process(
            "t".into(),
            NodeId(0),
            policy,
            vec![("m".into(), PAGES, None)],
        )
        .unwrap()
    }

    /// Seed 002's eatmem check: 5:1 puts exactly 1/6 on the second node, 9:1 exactly 1/10,
    /// on the fault path (VMA offset), the cursor path and the bulk path.
    #[test]
    fn weights_5_1_and_9_1_split_61440_pages_exactly_on_every_path() {
        for (w, share) in [(5u8, 6u64), (9, 10)] {
            for how in [Populate::Fault, Populate::Cursor, Populate::Bulk] {
                let mut k = kernel(Some(vec![w, 1]));
                let p = proc_with(&mut k, wi(&[0, 1]));
                if how == Populate::Fault {
                    fault_all(&mut k, p);
                } else {
                    k.populate(p, how).unwrap();
                }
                let c = per_node(&k, p);
                assert_eq!(c[1], PAGES as u64 / share, "{w}:1 {how:?}: {c:?}");
                assert_eq!(c[0], PAGES as u64 - PAGES as u64 / share, "{w}:1 {how:?}");
                assert_eq!(k.vmstat.total(Vm::NumaInterleave), PAGES as u64);
            }
        }
    }

    #[test]
    fn equal_weights_behave_as_plain_interleave() {
        for how in [Populate::Fault, Populate::Cursor, Populate::Bulk] {
            let mut a = kernel(Some(vec![3, 3]));
            let pa = proc_with(&mut a, wi(&[0, 1]));
            let mut b = kernel(None);
            let pb = proc_with(
                &mut b,
                MemPolicy::new(PolicyMode::Interleave, vec![NodeId(0), NodeId(1)]),
            );
            if how == Populate::Fault {
                fault_all(&mut a, pa);
                fault_all(&mut b, pb);
            } else {
                a.populate(pa, how).unwrap();
                b.populate(pb, how).unwrap();
            }
            assert_eq!(per_node(&a, pa), [PAGES as u64 / 2; 2], "{how:?}");
            assert_eq!(per_node(&b, pb), [PAGES as u64 / 2; 2], "{how:?}");
            if how == Populate::Fault {
                // Weights 1:1 on the offset path are exactly plain interleave page by page.
                let mut c = kernel(Some(vec![1, 1]));
                let pc = proc_with(&mut c, wi(&[0, 1]));
                fault_all(&mut c, pc);
                let nodes = |k: &Kernel, p: u16| -> Vec<usize> {
                    k.procs[p as usize]
                        .ptes
                        .iter()
                        .map(|&e| pte_node(e))
                        .collect()
                };
                assert_eq!(nodes(&c, pc), nodes(&b, pb));
            }
        }
    }

    #[test]
    fn weight_changes_affect_future_allocations_only() {
        let mut k = kernel(Some(vec![1, 1]));
        let p = proc_with(&mut k, wi(&[0, 1]));
        for i in 0..PAGES / 2 {
            k.handle_fault(p, i, true, NodeId(0), SimTime::ZERO)
                .unwrap();
        }
        let before = per_node(&k, p);
        assert_eq!(before, [PAGES as u64 / 4; 2]);
        k.wi.write_node(0, "9").unwrap();
        for i in PAGES / 2..PAGES {
            k.handle_fault(p, i, true, NodeId(0), SimTime::ZERO)
                .unwrap();
        }
        let after = per_node(&k, p);
        // The first half kept its 1:1 placement; the second half went 9:1.
        assert_eq!(after[1] - before[1], PAGES as u64 / 2 / 10);
        assert_eq!(k.vmstat.total(Vm::PgmigrateSuccess), 0);
    }

    #[test]
    fn task_policy_faults_use_the_offset_not_the_cursor() {
        // Faulting the pages in reverse order gives the same placement: the node depends
        // on the page's index, not on the allocation order.
        let mut a = kernel(Some(vec![5, 1]));
        let pa = proc_with(&mut a, wi(&[0, 1]));
        fault_all(&mut a, pa);
        let mut b = kernel(Some(vec![5, 1]));
        let pb = proc_with(&mut b, wi(&[0, 1]));
        for i in (0..PAGES).rev() {
            b.handle_fault(pb, i, true, NodeId(0), SimTime::ZERO)
                .unwrap();
        }
        for i in 0..PAGES as usize {
            assert_eq!(
                pte_node(a.procs[pa as usize].ptes[i]),
                pte_node(b.procs[pb as usize].ptes[i])
            );
        }
        assert_eq!(
            a.procs[pa as usize].il,
            Default::default(),
            "cursor untouched"
        );
    }

    #[test]
    fn mbind_move_migrates_only_pages_outside_the_new_nodes() {
        // Pages first bound to CXL (node 1), then mbind weighted {0,1} with MOVE: nothing
        // moves (every page is on a node of the new set). mbind bind {0} with MOVE then
        // moves them all to node 0.
        let mut k = kernel(Some(vec![9, 1]));
        let p = proc_with(&mut k, MemPolicy::new(PolicyMode::Bind, vec![NodeId(1)]));
        fault_all(&mut k, p);
        assert_eq!(per_node(&k, p), [0, PAGES as u64]);
        let o = k
            .mbind(p, "m", &wi(&[0, 1]), &[MbindFlag::Move], SimTime::ZERO)
            .unwrap();
        assert_eq!(o.moved, 0);
        let o = k
            .mbind(
                p,
                "m",
                &MemPolicy::new(PolicyMode::Bind, vec![NodeId(0)]),
                &[MbindFlag::Move],
                SimTime::ZERO,
            )
            .unwrap();
        assert_eq!(o.moved, PAGES as u64);
        assert_eq!(per_node(&k, p), [PAGES as u64, 0]);
        // STRICT without MOVE: misplaced pages are EIO and the policy is not applied.
        let e = k.mbind(
            p,
            "m",
            &MemPolicy::new(PolicyMode::Bind, vec![NodeId(1)]),
            &[MbindFlag::Strict],
            SimTime::ZERO,
        );
        assert_eq!(e, Err(MbindError::Eio(PAGES as u64)));
        assert_eq!(
            k.procs[p as usize].vmas[0].policy,
            Some(MemPolicy::new(PolicyMode::Bind, vec![NodeId(0)]))
        );
        k.check_invariants().unwrap();
    }

    #[test]
    fn mbind_move_to_weighted_set_places_moved_pages_by_offset() {
        // Pages on node 0, then mbind weighted over {1}: every page is outside the new set
        // and moves to its static target, node 1.
        let mut k = kernel(Some(vec![9, 1]));
        let p = proc_with(&mut k, MemPolicy::default());
        fault_all(&mut k, p);
        let o = k
            .mbind(p, "m", &wi(&[1]), &[MbindFlag::Move], SimTime::ZERO)
            .unwrap();
        assert_eq!(o.moved, PAGES as u64);
        assert_eq!(per_node(&k, p), [0, PAGES as u64]);
        assert_eq!(k.vmstat.total(Vm::PgmigrateSuccess), PAGES as u64);
        k.check_invariants().unwrap();
    }

    #[test]
    fn set_mempolicy_resets_the_cursor() {
        let mut k = kernel(Some(vec![5, 1]));
        let p = proc_with(&mut k, wi(&[0, 1]));
        let pol = wi(&[0, 1]);
        let _ = k.policy_plan_cursor(p, &pol, NodeId(0));
        assert_eq!(k.procs[p as usize].il.il_weight, 4);
        k.set_mempolicy(p, wi(&[0, 1])).unwrap();
        assert_eq!(k.procs[p as usize].il, Default::default());
    }

    #[test]
    fn preferred_many_falls_back_outside_its_mask() {
        let mut k = kernel(None);
        let p = proc_with(
            &mut k,
            MemPolicy::new(PolicyMode::PreferredMany, vec![NodeId(1)]),
        );
        k.handle_fault(p, 0, true, NodeId(0), SimTime::ZERO)
            .unwrap();
        assert_eq!(pte_node(k.procs[p as usize].ptes[0]), 1);
    }
}
