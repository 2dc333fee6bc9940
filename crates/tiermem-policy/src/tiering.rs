//! The user-space tiering controller: promote hot regions of chosen processes from slow to
//! fast nodes and demote cold ones, with `move_pages`.
//!
//! Decisions follow the kernel's NUMA-balancing tiering rules (kernel/sched/fair.c,
//! mm/migrate.c), transposed from hint-fault latency to DAMON access frequency:
//!
//! * hotness: a region is hot when its `nr_accesses` reaches `threshold_permil` of the
//!   maximum (`aggr_us / sample_us`), the analogue of `should_numa_migrate_memory`'s
//!   latency test; hottest regions first (DAMOS `damon_hot_score` order);
//! * candidates: slow-node pages of hot regions, counted *before* the rate limit as
//!   `pgpromote_candidate` is;
//! * rate limit (`numa_promotion_rate_limit`): at most `rate_limit` bytes of candidates are
//!   promoted per second into each fast node (the kernel's limit is per target node); the
//!   rest is counted as rate-limited. The kernel resets a 1-second window at the first
//!   fault after it ends; the agent, which acts once per tick, keeps a
//!   budget that refills at `rate_limit` per second of elapsed time and holds at most one
//!   second's worth (or one tick's, when ticks are longer), so the rate holds for any
//!   `interval` and a tick landing a few ms early does not lose a window;
//! * threshold adjustment (`numa_promotion_adjust_threshold`): every period, compare the
//!   candidates with `rate_limit × period`; above 110 % make the threshold stricter by one
//!   step, below 90 % more lenient. The kernel's threshold is a hint-fault *latency* `th`
//!   moved in steps of `ref_th × 2 / 16` (NUMA_MIGRATION_ADJUST_STEPS) within
//!   `[ref_th / 8, 2 × ref_th]`; an access *frequency* is its inverse, so the agent keeps the
//!   same latency-like level `k ∈ [1, 16]` (`th = k × ref_th / 8`, 8 at start) and requires
//!   `initial_permil × 8 / k` of the maximum `nr_accesses`: from 8× the configured hotness
//!   (strictest) down to half of it (most lenient), as the kernel ranges;
//! * headroom (`migrate_balanced_pgdat`): a node takes `nr` pages only while its free
//!   memory stays above `high_wmark + nr`; the kernel's free-space bypass of the rate limit
//!   (`pgdat_free_space_enough`) is not applied, so the configured limit always holds;
//! * demotion: regions with no access for `cold_min_age`, oldest first (DAMOS
//!   `damon_cold_score`), move from fast nodes to their demotion target (the kernel's
//!   `node_demotion[].preferred`), under a size quota per interval (DAMOS quota), except
//!   pages of a 2 MiB granule seen inside an accessed region within `cold_min_age` (the
//!   part the referenced bit plays for reclaim; see `Controller::last_accessed`).
//!
//! The controller is pure: pages are queried and moved through the [`MemoryOps`] trait,
//! which the live agent implements with `move_pages` (tiermem-agent `controller`) and the
//! simulator over its simulated page tables, so the same controller, with the same
//! parameters, runs on a host and in a simulation.

use crate::promotion::{self, ThresholdMove};
use std::collections::BTreeMap;
pub use tiermem_core::controllers::TieringConfig;
pub use tiermem_core::damon::Region;

pub const PAGE_SIZE: u64 = 4096;
/// `NUMA_MIGRATION_ADJUST_STEPS` (fair.c): the controller's latency levels.
pub const ADJUST_STEPS: u64 = promotion::ADJUST_STEPS as u64;
/// A region found with nothing to move is examined again after this long (its boundaries
/// changing, as DAMON splits and merges regions, makes it a new region at once).
pub const RECHECK_MS: u64 = 5_000;
/// Pages examined per tick at most (bounds the agent's CPU time per tick).
pub const MAX_SCAN_PAGES: usize = 1 << 18;

/// A failed [`MemoryOps`] call (the process is gone, the call was refused), as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpsError(pub String);

impl std::fmt::Display for OpsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpsError {}

/// Page placement and movement, what the controller needs of a substrate. Contract:
/// `query` and `move_to` take page-aligned addresses of process `pid` (`move_pages(2)`'s
/// arguments); statuses are node ids or negative errnos, one per page. `mappings` is called
/// once per target and tick, before any `query` of that target.
pub trait MemoryOps {
    /// The address ranges `[start, end)` of `pid`'s mappings (its VMAs), ascending. The
    /// controller looks for pages only inside them: DAMON's vaddr regions also cover the
    /// gaps between mappings (the three regions of `__damon_va_three_regions` keep all but
    /// the two biggest gaps), which on a host include about a terabyte between the mmap
    /// area and the stack.
    fn mappings(&mut self, pid: i32) -> Result<Vec<(u64, u64)>, OpsError>;
    fn query(&mut self, pid: i32, pages: &[usize]) -> Result<Vec<i32>, OpsError>;
    fn move_to(&mut self, pid: i32, pages: &[usize], node: u32) -> Result<Vec<i32>, OpsError>;
    /// Free bytes of a node now.
    fn free_bytes(&mut self, node: u32) -> u64;
    /// The node's high watermark in bytes (sum over its zones).
    fn high_wmark_bytes(&mut self, node: u32) -> u64;
}

#[derive(Clone, Debug, PartialEq)]
pub struct ControllerParams {
    pub fast_nodes: Vec<u32>,
    pub slow_nodes: Vec<u32>,
    pub demotion_target: BTreeMap<u32, u32>,
    pub rate_limit_bytes_per_s: u64,
    /// The agent's tick, ms: the promotion budget holds `max(1 s, tick)` of the rate.
    pub tick_ms: u64,
    pub initial_threshold_permil: u64,
    pub auto_threshold: bool,
    pub adjust_period_ms: u64,
    /// `aggr_us / sample_us`: the largest `nr_accesses`.
    pub max_nr_accesses: u64,
    pub aggr_us: u64,
    pub demote: bool,
    pub cold_min_age_us: u64,
    pub demote_quota_bytes: u64,
    pub demote_quota_interval_ms: u64,
}

impl ControllerParams {
    /// The parameters of a `[tiering]` section (the same in the agent's file and a
    /// simulator config), for a controller acting every `tick_ms` on a machine with these
    /// node roles (resolved from the section or the memory tiers by the caller).
    pub fn from_config(
        t: &TieringConfig,
        tick_ms: u64,
        fast_nodes: Vec<u32>,
        slow_nodes: Vec<u32>,
        demotion_target: BTreeMap<u32, u32>,
    ) -> Self {
        let a = &t.attrs;
        ControllerParams {
            fast_nodes,
            slow_nodes,
            demotion_target,
            rate_limit_bytes_per_s: t.promote_rate_limit_mbps << 20,
            tick_ms: tick_ms.max(10),
            initial_threshold_permil: t.hot_threshold_permil,
            auto_threshold: t.auto_threshold,
            adjust_period_ms: t.threshold_adjust_period.as_ms(),
            max_nr_accesses: (a.aggr_us / a.sample_us.max(1)).max(1),
            aggr_us: a.aggr_us,
            demote: t.demote,
            cold_min_age_us: t.cold_min_age.as_us(),
            demote_quota_bytes: t.demote_quota.0,
            demote_quota_interval_ms: t.demote_quota_interval.as_ms().max(1),
        }
    }
}

/// Counters (monotonic) and current values, exported as metrics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControllerStats {
    pub candidate_bytes: u64,
    pub promoted_bytes: u64,
    pub promote_failed_bytes: u64,
    pub rate_limited_bytes: u64,
    pub headroom_skipped_bytes: u64,
    pub demoted_bytes: u64,
    pub demote_quota_exceeded: u64,
    pub threshold_permil: u64,
    /// The kernel-like latency level `k` (`th = k × ref_th / 8`), 8 at start.
    pub threshold_level: u64,
    pub threshold_adjustments: u64,
    pub hot_regions: u64,
    pub cold_regions: u64,
    pub monitored_bytes: u64,
}

impl ControllerStats {
    /// A statistic by its timeline name (`tiermem_core::timeline::TIERING_STATS`).
    pub fn get(&self, stat: &str) -> Option<u64> {
        Some(match stat {
            "candidate_bytes" => self.candidate_bytes,
            "promoted_bytes" => self.promoted_bytes,
            "promote_failed_bytes" => self.promote_failed_bytes,
            "rate_limited_bytes" => self.rate_limited_bytes,
            "headroom_skipped_bytes" => self.headroom_skipped_bytes,
            "demoted_bytes" => self.demoted_bytes,
            "threshold_permil" => self.threshold_permil,
            _ => return None,
        })
    }
}

/// Regions of several targets, each with its process id.
type PidRegions = Vec<(i32, Region)>;

pub struct Controller {
    pub p: ControllerParams,
    pub stats: ControllerStats,
    /// Promotion budget (bytes) of each fast node, and when they were last refilled. The
    /// kernel limits promotion per target node (`numa_promotion_rate_limit(pgdat, ...)`).
    rl_budget: BTreeMap<u32, u64>,
    rl_last_ms: u64,
    /// Threshold-adjust period start and the candidate counter at that time.
    th_start_ms: u64,
    th_cand: u64,
    /// Demotion quota window.
    dq_start_ms: u64,
    dq_bytes: u64,
    /// Regions (pid, start, end, hot?) found with nothing to move, and until when they are
    /// not examined again: a steady state costs no page queries.
    settled: BTreeMap<(i32, u64, u64, bool), u64>,
    /// Regions whose last full scan found pages to move: scanned in full again, without the
    /// sample first, since a sample of a region nearly done (the last granule of a cold
    /// region a quota window cut off) would miss what is left and settle it.
    in_progress: std::collections::BTreeSet<(i32, u64, u64, bool)>,
    /// When each 2 MiB granule (pid, granule index) was last inside a region DAMON saw
    /// accessed. A region's boundaries drift as DAMON splits and merges it, so a cold
    /// region can reach into pages that were hot a moment ago (seen in the VM: a region
    /// mostly over an untouched mapping took the edge of a hot one, and its hot pages were
    /// demoted). Pages of a granule seen accessed within `cold_min_age` are not demoted,
    /// much as the kernel's reclaim (the demotion path) skips recently referenced pages.
    last_accessed: std::collections::HashMap<(i32, u64), u64>,
}

impl Controller {
    pub fn new(p: ControllerParams, now_ms: u64) -> Self {
        let th = p.initial_threshold_permil;
        let budget = p
            .fast_nodes
            .iter()
            .map(|&n| (n, p.rate_limit_bytes_per_s))
            .collect();
        Controller {
            p,
            stats: ControllerStats {
                threshold_permil: th,
                threshold_level: ADJUST_STEPS / 2,
                ..Default::default()
            },
            rl_budget: budget,
            rl_last_ms: now_ms,
            th_start_ms: now_ms,
            th_cand: 0,
            dq_start_ms: now_ms,
            dq_bytes: 0,
            settled: BTreeMap::new(),
            in_progress: std::collections::BTreeSet::new(),
            last_accessed: std::collections::HashMap::new(),
        }
    }

    /// The `nr_accesses` a region needs to be hot (at least 1).
    pub fn hot_nr_accesses(&self) -> u64 {
        (self.stats.threshold_permil * self.p.max_nr_accesses)
            .div_ceil(1000)
            .max(1)
    }

    /// `numa_promotion_adjust_threshold`, once per period.
    fn adjust_threshold(&mut self, now_ms: u64) {
        if !self.p.auto_threshold || now_ms < self.th_start_ms + self.p.adjust_period_ms {
            return;
        }
        let period_ms = now_ms - self.th_start_ms;
        let ref_cand = self.p.rate_limit_bytes_per_s.saturating_mul(period_ms) / 1000;
        let diff = self.stats.candidate_bytes - self.th_cand;
        let k = self.stats.threshold_level;
        // Lower latency level = stricter (fair.c: th = max(th - unit, unit) when candidates
        // exceed the reference by 10 %, min(th + unit, 2 × ref_th) when 10 % short).
        let new = match promotion::threshold_move(diff, ref_cand) {
            ThresholdMove::Stricter => k.saturating_sub(1).max(1),
            ThresholdMove::Looser => (k + 1).min(ADJUST_STEPS),
            ThresholdMove::Keep => k,
        };
        let permil = threshold_permil(self.p.initial_threshold_permil, new);
        if new != k {
            self.stats.threshold_adjustments += 1;
            tracing::info!(
                from = self.stats.threshold_permil,
                to = permil,
                candidates = diff,
                reference = ref_cand,
                "hot threshold adjusted"
            );
        }
        self.stats.threshold_level = new;
        self.stats.threshold_permil = permil;
        self.th_start_ms = now_ms;
        self.th_cand = self.stats.candidate_bytes;
    }

    /// Promote `cands` (ascending slow-node pages of one chunk): into the fast node with
    /// budget left and the most free memory (the kernel's target is the faulting CPU's
    /// node; user space has no fault to go by), then the next, each at most its budget
    /// (`numa_promotion_rate_limit`) and only while it stays above its watermark after the
    /// move (`migrate_balanced_pgdat`). What no node takes is counted as rate-limited, or
    /// as headroom-skipped when a node had budget but no room.
    fn promote(&mut self, pid: i32, cands: &[usize], ops: &mut dyn MemoryOps) {
        let mut rest = cands;
        let mut tried: Vec<u32> = Vec::new();
        let mut no_room = false;
        while !rest.is_empty() {
            let mut best: Option<(u32, u64)> = None;
            for &f in &self.p.fast_nodes {
                if tried.contains(&f) || self.rl_budget[&f] < PAGE_SIZE {
                    continue;
                }
                let free = ops.free_bytes(f);
                if best.is_none_or(|(_, b)| free > b) {
                    best = Some((f, free));
                }
            }
            let Some((dst, free)) = best else {
                let bytes = rest.len() as u64 * PAGE_SIZE;
                if no_room {
                    self.stats.headroom_skipped_bytes += bytes;
                } else {
                    self.stats.rate_limited_bytes += bytes;
                }
                return;
            };
            tried.push(dst);
            let room = (self.rl_budget[&dst] / PAGE_SIZE) as usize;
            let n = cut_at_granule(rest, room.min(rest.len()));
            if free < ops.high_wmark_bytes(dst) + n as u64 * PAGE_SIZE {
                no_room = true;
                continue;
            }
            let moving = &rest[..n];
            rest = &rest[n..];
            if let Some(b) = self.rl_budget.get_mut(&dst) {
                *b -= n as u64 * PAGE_SIZE;
            }
            match ops.move_to(pid, moving, dst) {
                Ok(st) => {
                    let ok = st.iter().filter(|&&s| s == dst as i32).count() as u64;
                    tracing::trace!(pid, first = moving[0], n, ok, dst, "promoted");
                    self.stats.promoted_bytes += ok * PAGE_SIZE;
                    self.stats.promote_failed_bytes += (n as u64 - ok) * PAGE_SIZE;
                }
                Err(e) => {
                    self.stats.promote_failed_bytes += n as u64 * PAGE_SIZE;
                    tracing::debug!(pid, error = %e, "promotion failed");
                }
            }
        }
    }

    /// A sample first (DAMON's own principle): a region of more than 256 pages whose 64
    /// sampled pages have none on the `from` nodes is settled for [`RECHECK_MS`] without
    /// querying every page. Whether to look at every page of `all`.
    #[allow(clippy::too_many_arguments)]
    fn worth_full_scan(
        &mut self,
        ops: &mut dyn MemoryOps,
        pid: i32,
        all: &[usize],
        from: &[u32],
        key: (i32, u64, u64, bool),
        now_ms: u64,
        scanned: &mut usize,
    ) -> bool {
        if self.in_progress.contains(&key) {
            return true;
        }
        let Some(sample) = sample_pages(all, now_ms) else {
            return true;
        };
        *scanned += sample.len();
        match ops.query(pid, &sample) {
            Ok(st) if !st.iter().any(|&n| n >= 0 && from.contains(&(n as u32))) => {
                tracing::trace!(
                    pid,
                    start = key.1,
                    end = key.2,
                    hot = key.3,
                    "nothing to move in the sample"
                );
                self.settled.insert(key, now_ms + RECHECK_MS);
                false
            }
            Ok(_) => true,
            Err(_) => false,
        }
    }

    /// One tick over the regions of each target (`pid → regions`).
    pub fn tick(
        &mut self,
        now_ms: u64,
        targets: &BTreeMap<i32, Vec<Region>>,
        ops: &mut dyn MemoryOps,
    ) -> Result<(), OpsError> {
        self.refill(now_ms);
        self.adjust_threshold(now_ms);
        let (hot, cold) = self.classify(targets);
        let mut maps: BTreeMap<i32, Vec<(u64, u64)>> = BTreeMap::new();
        for &pid in targets.keys() {
            match ops.mappings(pid) {
                Ok(m) => {
                    maps.insert(pid, m);
                }
                Err(e) => tracing::debug!(pid, error = %e, "no mappings (process gone?)"),
            }
        }
        let hot: PidRegions = hot
            .into_iter()
            .filter(|(p, _)| maps.contains_key(p))
            .collect();
        let cold: PidRegions = cold
            .into_iter()
            .filter(|(p, _)| maps.contains_key(p))
            .collect();
        let mut scanned = 0usize;
        self.settled.retain(|_, until| *until > now_ms);
        // Forget regions DAMON has split or merged away.
        self.in_progress.retain(|(pid, start, end, _)| {
            targets
                .get(pid)
                .is_some_and(|rs| rs.iter().any(|r| r.start == *start && r.end == *end))
        });
        if self.p.demote {
            self.note_accessed(now_ms, targets);
        }
        self.promote_hot(now_ms, &hot, &maps, ops, &mut scanned);
        if self.p.demote {
            self.demote_cold(now_ms, &cold, &maps, ops, &mut scanned);
        }
        Ok(())
    }

    /// Refill the promotion budget for the time elapsed (at most one second's worth, or one
    /// tick's when ticks are longer than a second) and open a new demotion-quota window when
    /// the last one has passed.
    fn refill(&mut self, now_ms: u64) {
        let dt = now_ms.saturating_sub(self.rl_last_ms);
        let rate = self.p.rate_limit_bytes_per_s;
        let cap = rate.saturating_mul(self.p.tick_ms.max(1000)) / 1000;
        for b in self.rl_budget.values_mut() {
            *b = (*b + rate.saturating_mul(dt) / 1000).min(cap);
        }
        self.rl_last_ms = now_ms;
        if now_ms >= self.dq_start_ms + self.p.demote_quota_interval_ms {
            self.dq_start_ms = now_ms;
            self.dq_bytes = 0;
        }
    }

    /// The hot regions of all targets (hottest first, then older, then lower pid and
    /// address) and the cold ones (oldest first), with the monitoring statistics.
    fn classify(&mut self, targets: &BTreeMap<i32, Vec<Region>>) -> (PidRegions, PidRegions) {
        let hot_min = self.hot_nr_accesses();
        let cold_age = self.p.cold_min_age_us.div_ceil(self.p.aggr_us.max(1));
        let mut hot: Vec<(i32, Region)> = Vec::new();
        let mut cold: Vec<(i32, Region)> = Vec::new();
        self.stats.monitored_bytes = 0;
        for (&pid, regions) in targets {
            for r in regions {
                self.stats.monitored_bytes += r.len();
                if r.nr_accesses >= hot_min {
                    hot.push((pid, *r));
                } else if r.nr_accesses == 0 && r.age >= cold_age {
                    cold.push((pid, *r));
                }
            }
        }
        self.stats.hot_regions = hot.len() as u64;
        self.stats.cold_regions = cold.len() as u64;
        if tracing::enabled!(tracing::Level::TRACE) {
            for (&pid, regions) in targets {
                let list: Vec<String> = regions
                    .iter()
                    .map(|r| {
                        format!(
                            "{:x}+{}K:{}/{}",
                            r.start,
                            r.len() >> 10,
                            r.nr_accesses,
                            r.age
                        )
                    })
                    .collect();
                tracing::trace!(pid, hot_min, regions = %list.join(" "), "damon regions");
            }
        }
        hot.sort_by_key(|(pid, r)| {
            (
                std::cmp::Reverse(r.nr_accesses),
                std::cmp::Reverse(r.age),
                *pid,
                r.start,
            )
        });
        cold.sort_by_key(|(pid, r)| (std::cmp::Reverse(r.age), *pid, r.start));

        (hot, cold)
    }

    /// Remember the 2 MiB granules of every region seen accessed, for `cold_min_age`: a
    /// granule accessed since then is not demoted.
    fn note_accessed(&mut self, now_ms: u64, targets: &BTreeMap<i32, Vec<Region>>) {
        let cold_ms = self.p.cold_min_age_us / 1000;
        for (&pid, regions) in targets {
            for r in regions.iter().filter(|r| r.nr_accesses > 0) {
                for g in r.start / HPAGE_SIZE..r.end.div_ceil(HPAGE_SIZE) {
                    self.last_accessed.insert((pid, g), now_ms);
                }
            }
        }
        self.last_accessed
            .retain(|_, t| now_ms.saturating_sub(*t) < cold_ms);
    }

    /// Promote the slow-node pages of the hot regions, hottest first, within the rate
    /// limit; a region with nothing to move is settled for a while.
    fn promote_hot(
        &mut self,
        now_ms: u64,
        hot: &[(i32, Region)],
        maps: &BTreeMap<i32, Vec<(u64, u64)>>,
        ops: &mut dyn MemoryOps,
        scanned: &mut usize,
    ) {
        let slow = self.p.slow_nodes.clone();
        'hot: for (pid, r) in hot {
            let key = (*pid, r.start, r.end, true);
            if self.settled.contains_key(&key) {
                tracing::trace!(pid, start = r.start, end = r.end, "hot region settled");
                continue;
            }
            let mut found = false;
            // Whole 2 MiB granules around a hot region: a THP at its edge moves whole, so it
            // is listed (and charged to the rate limit) whole.
            let all = pages_of(
                &Region {
                    start: r.start / HPAGE_SIZE * HPAGE_SIZE,
                    end: r.end.div_ceil(HPAGE_SIZE) * HPAGE_SIZE,
                    ..*r
                },
                &maps[pid],
            );
            if !self.worth_full_scan(ops, *pid, &all, &slow, key, now_ms, scanned) {
                continue;
            }
            for chunk in granule_chunks(&all) {
                if *scanned >= MAX_SCAN_PAGES {
                    break 'hot;
                }
                *scanned += chunk.len();
                let st = match ops.query(*pid, chunk) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::debug!(pid, error = %e, "query failed (process gone?)");
                        continue 'hot;
                    }
                };
                let cands: Vec<usize> = chunk
                    .iter()
                    .zip(&st)
                    .filter(|(_, &n)| n >= 0 && slow.contains(&(n as u32)))
                    .map(|(&p, _)| p)
                    .collect();
                if cands.is_empty() {
                    continue;
                }
                found = true;
                self.stats.candidate_bytes += cands.len() as u64 * PAGE_SIZE;
                self.promote(*pid, &cands, ops);
            }
            if found {
                self.in_progress.insert(key);
            } else {
                self.in_progress.remove(&key);
                self.settled.insert(key, now_ms + RECHECK_MS);
            }
        }
    }

    /// Demote the fast-node pages of the cold regions, oldest first, to each node's
    /// demotion target within the demotion quota and the target's high watermark.
    fn demote_cold(
        &mut self,
        now_ms: u64,
        cold: &[(i32, Region)],
        maps: &BTreeMap<i32, Vec<(u64, u64)>>,
        ops: &mut dyn MemoryOps,
        scanned: &mut usize,
    ) {
        let fast = self.p.fast_nodes.clone();
        'cold: for (pid, r) in cold {
            let key = (*pid, r.start, r.end, false);
            if self.settled.contains_key(&key) {
                continue;
            }
            let mut found = false;
            // Only whole 2 MiB granules of a cold region: a THP straddling its edge may be
            // partly hot, and move_pages would drag all of it along.
            let all = full_granule_pages(r, &maps[pid]);
            if !self.worth_full_scan(ops, *pid, &all, &fast, key, now_ms, scanned) {
                continue;
            }
            for chunk in granule_chunks(&all) {
                if *scanned >= MAX_SCAN_PAGES {
                    break 'cold;
                }
                let room = self.p.demote_quota_bytes.saturating_sub(self.dq_bytes) / PAGE_SIZE;
                if room == 0 {
                    self.stats.demote_quota_exceeded += 1;
                    break 'cold;
                }
                *scanned += chunk.len();
                let Ok(st) = ops.query(*pid, chunk) else {
                    continue 'cold;
                };
                // Group this chunk's fast-node pages by their demotion target.
                let mut by_dst: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
                for (&p, &n) in chunk.iter().zip(&st) {
                    let recent = self.last_accessed.contains_key(&(*pid, granule(p)));
                    if n >= 0 && fast.contains(&(n as u32)) && !recent {
                        if let Some(&d) = self.p.demotion_target.get(&(n as u32)) {
                            by_dst.entry(d).or_default().push(p);
                        }
                    }
                }
                found |= !by_dst.is_empty();
                for (dst, pages) in by_dst {
                    let room = (self.p.demote_quota_bytes.saturating_sub(self.dq_bytes) / PAGE_SIZE)
                        as usize;
                    let n = cut_at_granule(&pages, room.min(pages.len()));
                    if n == 0 {
                        continue;
                    }
                    if ops.free_bytes(dst) < ops.high_wmark_bytes(dst) + n as u64 * PAGE_SIZE {
                        continue;
                    }
                    self.dq_bytes += n as u64 * PAGE_SIZE;
                    if let Ok(st) = ops.move_to(*pid, &pages[..n], dst) {
                        let ok = st.iter().filter(|&&s| s == dst as i32).count() as u64;
                        self.stats.demoted_bytes += ok * PAGE_SIZE;
                    }
                }
            }
            if found {
                self.in_progress.insert(key);
            } else {
                self.in_progress.remove(&key);
                self.settled.insert(key, now_ms + RECHECK_MS);
            }
        }
    }
}

/// The hotness (permil of the maximum `nr_accesses`) at latency level `k`: the configured
/// hotness at `k = 8`, eight times it at `k = 1`, half of it at `k = 16`, at most 1000.
pub fn threshold_permil(initial_permil: u64, k: u64) -> u64 {
    (initial_permil * (ADJUST_STEPS / 2))
        .div_ceil(k.max(1))
        .clamp(1, 1000)
}

/// Pages sampled before a full scan of a region: 64 evenly spaced pages, the offset rotating
/// with time so that every page is eventually sampled. `None` for small regions.
pub const SAMPLE_PAGES: usize = 64;

fn sample_pages(all: &[usize], now_ms: u64) -> Option<Vec<usize>> {
    if all.len() <= SAMPLE_PAGES * 4 {
        return None;
    }
    let stride = all.len() / SAMPLE_PAGES;
    let off = (now_ms / 1000) as usize % stride;
    Some(all.iter().skip(off).step_by(stride).copied().collect())
}

/// 2 MiB: a transparent huge page. `move_pages` migrates the whole folio of any listed
/// address, so budgets are cut at granule boundaries and chunks hold whole granules.
pub const HPAGE_SIZE: u64 = 2 << 20;

fn granule(p: usize) -> u64 {
    p as u64 / HPAGE_SIZE
}

/// Split ascending pages into chunks of at most two whole 2 MiB granules.
fn granule_chunks(pages: &[usize]) -> Vec<&[usize]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut granules = 0;
    for i in 0..pages.len() {
        if i == 0 || granule(pages[i]) != granule(pages[i - 1]) {
            granules += 1;
            if granules > 2 {
                out.push(&pages[start..i]);
                start = i;
                granules = 1;
            }
        }
    }
    if start < pages.len() {
        out.push(&pages[start..]);
    }
    out
}

/// Keep at most `n` of ascending `pages` without splitting a 2 MiB granule (a THP would
/// move whole and overshoot the budget). When the budget is below one granule, `n` is
/// kept as is (a THP then overshoots by less than 2 MiB).
pub fn cut_at_granule(pages: &[usize], n: usize) -> usize {
    if n >= pages.len() || n == 0 {
        return n.min(pages.len());
    }
    let g = granule(pages[n]);
    let mut k = n;
    while k > 0 && granule(pages[k - 1]) == g {
        k -= 1;
    }
    if k == 0 {
        n
    } else {
        k
    }
}

/// The mapped pages of a region's whole 2 MiB granules (all its mapped pages when it holds
/// fewer than two granules).
fn full_granule_pages(r: &Region, maps: &[(u64, u64)]) -> Vec<usize> {
    let s = r.start.div_ceil(HPAGE_SIZE) * HPAGE_SIZE;
    let e = r.end / HPAGE_SIZE * HPAGE_SIZE;
    if e < s + 2 * HPAGE_SIZE {
        return pages_of(r, maps);
    }
    pages_of(
        &Region {
            start: s,
            end: e,
            ..*r
        },
        maps,
    )
}

/// The pages of `r` inside the mappings `maps` (ascending ranges).
fn pages_of(r: &Region, maps: &[(u64, u64)]) -> Vec<usize> {
    let first = maps.partition_point(|&(_, end)| end <= r.start);
    maps[first..]
        .iter()
        .take_while(|&&(start, _)| start < r.end)
        .flat_map(|&(start, end)| {
            let a = r.start.max(start).div_ceil(PAGE_SIZE) * PAGE_SIZE;
            (a..r.end.min(end)).step_by(PAGE_SIZE as usize)
        })
        .map(|a| a as usize)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages in a map; every node has `free` bytes and a watermark.
    struct FakePages {
        node_of: BTreeMap<usize, i32>,
        free: BTreeMap<u32, u64>,
        wmark: u64,
        moves: u64,
        /// The process's mappings (default: the whole user address space).
        mapped: Vec<(u64, u64)>,
        /// Pages queried so far.
        queried: usize,
    }

    impl MemoryOps for FakePages {
        fn mappings(&mut self, _pid: i32) -> Result<Vec<(u64, u64)>, OpsError> {
            Ok(self.mapped.clone())
        }
        fn query(&mut self, _pid: i32, pages: &[usize]) -> Result<Vec<i32>, OpsError> {
            self.queried += pages.len();
            Ok(pages
                .iter()
                .map(|p| *self.node_of.get(p).unwrap_or(&-2))
                .collect())
        }
        fn move_to(&mut self, _pid: i32, pages: &[usize], node: u32) -> Result<Vec<i32>, OpsError> {
            self.moves += 1;
            Ok(pages
                .iter()
                .map(|p| {
                    let from = self.node_of[p] as u32;
                    *self.free.get_mut(&from).unwrap() += PAGE_SIZE;
                    *self.free.get_mut(&node).unwrap() -= PAGE_SIZE;
                    self.node_of.insert(*p, node as i32);
                    node as i32
                })
                .collect())
        }
        fn free_bytes(&mut self, node: u32) -> u64 {
            self.free[&node]
        }
        fn high_wmark_bytes(&mut self, _node: u32) -> u64 {
            self.wmark
        }
    }

    fn params() -> ControllerParams {
        ControllerParams {
            fast_nodes: vec![0],
            slow_nodes: vec![1],
            demotion_target: [(0, 1)].into_iter().collect(),
            rate_limit_bytes_per_s: 100 * PAGE_SIZE,
            tick_ms: 1000,
            initial_threshold_permil: 500,
            auto_threshold: true,
            adjust_period_ms: 10_000,
            max_nr_accesses: 20,
            aggr_us: 100_000,
            demote: true,
            cold_min_age_us: 1_000_000,
            demote_quota_bytes: 50 * PAGE_SIZE,
            demote_quota_interval_ms: 1000,
        }
    }

    fn pages(start: usize, n: usize, node: i32) -> Vec<(usize, i32)> {
        (0..n)
            .map(|i| (start + i * PAGE_SIZE as usize, node))
            .collect()
    }

    fn fake(layout: Vec<(usize, i32)>) -> FakePages {
        FakePages {
            node_of: layout.into_iter().collect(),
            free: [(0, 1 << 30), (1, 1 << 30)].into_iter().collect(),
            wmark: 1 << 20,
            moves: 0,
            mapped: vec![(0, 1 << 47)],
            queried: 0,
        }
    }

    /// The regions of process 1.
    fn of_pid1(regions: Vec<Region>) -> BTreeMap<i32, Vec<Region>> {
        [(1, regions)].into_iter().collect()
    }

    fn region(start: u64, n: u64, nr: u64, age: u64) -> Region {
        Region {
            start,
            end: start + n * PAGE_SIZE,
            nr_accesses: nr,
            age,
        }
    }

    #[test]
    fn hot_slow_pages_are_promoted_within_the_rate_limit() {
        let mut f = fake(pages(0x100000, 300, 1));
        let mut c = Controller::new(params(), 0);
        let t = of_pid1(vec![region(0x100000, 300, 15, 2)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(
            c.stats.promoted_bytes,
            100 * PAGE_SIZE,
            "one second's budget"
        );
        assert_eq!(
            c.stats.candidate_bytes,
            300 * PAGE_SIZE,
            "candidates counted before the limit"
        );
        assert_eq!(c.stats.rate_limited_bytes, 200 * PAGE_SIZE);
        // Half a second later: half a second's budget.
        c.tick(500, &t, &mut f).unwrap();
        assert_eq!(c.stats.promoted_bytes, 150 * PAGE_SIZE);
        c.tick(1000, &t, &mut f).unwrap();
        assert_eq!(c.stats.promoted_bytes, 200 * PAGE_SIZE);
        let on_fast = f.node_of.values().filter(|&&n| n == 0).count();
        assert_eq!(on_fast, 200);
        // An idle stretch does not bank more than one second's budget.
        let mut c = Controller::new(params(), 0);
        let mut g = fake(pages(0x100000, 300, 1));
        c.tick(0, &BTreeMap::new(), &mut g).unwrap();
        c.tick(10_000, &t, &mut g).unwrap();
        assert_eq!(c.stats.promoted_bytes, 100 * PAGE_SIZE);
        // Ticks longer than a second get a tick's worth (the rate holds for any interval).
        let mut p = params();
        p.tick_ms = 2000;
        let mut c = Controller::new(p, 0);
        let mut g = fake(pages(0x100000, 300, 1));
        c.tick(0, &t, &mut g).unwrap();
        c.tick(2000, &t, &mut g).unwrap();
        assert_eq!(c.stats.promoted_bytes, 300 * PAGE_SIZE);
    }

    #[test]
    fn each_fast_node_has_its_own_rate_limit() {
        let mut f = fake(pages(0x100000, 300, 1));
        f.free.insert(2, 1 << 30);
        let mut p = params();
        p.fast_nodes = vec![0, 2];
        let mut c = Controller::new(p, 0);
        let t = of_pid1(vec![region(0x100000, 300, 15, 2)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(
            c.stats.promoted_bytes,
            200 * PAGE_SIZE,
            "100 pages into each"
        );
        for node in [0, 2] {
            assert_eq!(f.node_of.values().filter(|&&n| n == node).count(), 100);
        }
        assert_eq!(c.stats.rate_limited_bytes, 100 * PAGE_SIZE);
    }

    #[test]
    fn cold_or_lukewarm_regions_are_not_promoted() {
        let mut f = fake(pages(0, 10, 1));
        let mut c = Controller::new(params(), 0);
        // Threshold 500‰ of 20 = 10 accesses; 9 is not hot.
        let t = of_pid1(vec![region(0, 10, 9, 0)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(c.stats.candidate_bytes, 0);
        assert_eq!(f.moves, 0);
    }

    #[test]
    fn headroom_rule_blocks_promotion_into_a_full_node() {
        let mut f = fake(pages(0, 10, 1));
        f.free.insert(0, (1 << 20) + 5 * PAGE_SIZE); // watermark + 5 pages: 10 do not fit
        let mut c = Controller::new(params(), 0);
        let t = of_pid1(vec![region(0, 10, 20, 0)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(c.stats.promoted_bytes, 0);
        assert_eq!(c.stats.headroom_skipped_bytes, 10 * PAGE_SIZE);
    }

    #[test]
    fn threshold_rises_when_candidates_exceed_the_rate_and_falls_when_scarce() {
        let mut f = fake(pages(0, 3000, 1));
        let mut p = params();
        p.adjust_period_ms = 1000;
        let mut c = Controller::new(p, 0);
        let t = of_pid1(vec![region(0, 3000, 20, 0)]);
        c.tick(0, &t, &mut f).unwrap(); // 3000 candidate pages vs 100/s reference
        let empty: BTreeMap<i32, Vec<Region>> = BTreeMap::new();
        c.tick(1000, &empty, &mut f).unwrap();
        assert_eq!(
            c.stats.threshold_permil, 572,
            "one latency step down: 500 × 8/7"
        );
        // No candidates for a period: more lenient, one step per period.
        c.tick(2000, &empty, &mut f).unwrap();
        c.tick(3000, &empty, &mut f).unwrap();
        assert_eq!(c.stats.threshold_permil, 445, "500 × 8/9: {:?}", c.stats);
        assert_eq!(c.stats.threshold_adjustments, 3);
        // The kernel's bounds: latency within [ref/8, 2 × ref], hotness within [½, 8×].
        for _ in 0..20 {
            let t = c.th_start_ms + 1000;
            c.tick(t, &empty, &mut f).unwrap();
        }
        assert_eq!(
            c.stats.threshold_permil, 250,
            "most lenient: half the configured"
        );
        assert_eq!(threshold_permil(100, 1), 800, "strictest: 8×");
        assert_eq!(threshold_permil(500, 1), 1000, "never above the maximum");
    }

    #[test]
    fn cold_fast_pages_are_demoted_under_the_quota() {
        let mut f = fake(pages(0, 200, 0));
        let mut c = Controller::new(params(), 0);
        // age 20 windows × 100 ms = 2 s ≥ 1 s.
        let t = of_pid1(vec![region(0, 200, 0, 20)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(c.stats.demoted_bytes, 50 * PAGE_SIZE, "quota per interval");
        c.tick(1000, &t, &mut f).unwrap();
        assert_eq!(c.stats.demoted_bytes, 100 * PAGE_SIZE);
        // Young idle regions are not cold yet.
        let mut c2 = Controller::new(params(), 0);
        let young = of_pid1(vec![region(0, 200, 0, 5)]);
        c2.tick(0, &young, &mut f).unwrap();
        assert_eq!(c2.stats.demoted_bytes, 0);
    }

    #[test]
    fn a_cold_region_drifting_over_hot_pages_does_not_demote_them() {
        let g = HPAGE_SIZE as usize;
        let per_g = g / PAGE_SIZE as usize;
        // Four granules on the fast node: 0-1 hot, 2-3 idle.
        let mut f = fake(pages(0, 4 * per_g, 0));
        let mut p = params();
        p.demote_quota_bytes = 1 << 30;
        let mut c = Controller::new(p, 0);
        let hot =
            |start: usize, n: usize, nr: u64, age: u64| region(start as u64, n as u64, nr, age);
        let t0: BTreeMap<i32, Vec<Region>> = [(
            1,
            vec![hot(0, 2 * per_g, 20, 5), hot(2 * g, 2 * per_g, 0, 5)],
        )]
        .into_iter()
        .collect();
        c.tick(0, &t0, &mut f).unwrap();
        assert_eq!(c.stats.demoted_bytes, 0, "nothing cold for long enough yet");
        // DAMON merges and splits: a long-idle region now starts inside the hot granules.
        let t1 = of_pid1(vec![hot(0, per_g, 20, 0), hot(g, 3 * per_g, 0, 20)]);
        c.tick(500, &t1, &mut f).unwrap();
        assert_eq!(
            c.stats.demoted_bytes,
            2 * g as u64,
            "only the two granules idle for cold_min_age move"
        );
        let hot_on_fast = (0..2 * per_g)
            .filter(|i| f.node_of[&(i * PAGE_SIZE as usize)] == 0)
            .count();
        assert_eq!(hot_on_fast, 2 * per_g);
        // Once granule 1 has been unseen for cold_min_age, it is cold like any other.
        c.tick(1600, &t1, &mut f).unwrap();
        c.tick(1600 + RECHECK_MS, &t1, &mut f).unwrap();
        assert_eq!(c.stats.demoted_bytes, 3 * g as u64);
    }

    /// DAMON's regions span the gaps between mappings (about a terabyte between the mmap
    /// area and the stack on a host): only the mapped pages of a region are looked at, so a
    /// gap neither costs a page list of its size nor uses up the tick's scan budget.
    #[test]
    fn only_the_mapped_pages_of_a_region_are_queried() {
        let g = (HPAGE_SIZE / PAGE_SIZE) as usize;
        // 2 granules mapped on the slow node, then a 1 TiB gap, then 2 more.
        let far = (1usize << 40) + 4 * HPAGE_SIZE as usize;
        let mut layout = pages(0, 2 * g, 1);
        layout.extend(pages(far, 2 * g, 1));
        let mut f = fake(layout);
        f.mapped = vec![
            (0, 2 * HPAGE_SIZE),
            (far as u64, far as u64 + 2 * HPAGE_SIZE),
        ];
        let mut p = params();
        p.rate_limit_bytes_per_s = 1 << 30;
        let mut c = Controller::new(p, 0);
        let hot = region(0, (far / PAGE_SIZE as usize + 2 * g) as u64, 20, 0);
        c.tick(0, &of_pid1(vec![hot]), &mut f).unwrap();
        assert_eq!(c.stats.promoted_bytes, 4 * HPAGE_SIZE, "both ends promoted");
        assert!(
            f.queried <= 4 * g + SAMPLE_PAGES,
            "{} pages queried",
            f.queried
        );
    }

    #[test]
    fn settled_regions_are_not_requeried_until_recheck() {
        let mut f = fake(pages(0, 10, 0));
        let mut c = Controller::new(params(), 0);
        let t = of_pid1(vec![region(0, 10, 20, 0)]);
        c.tick(0, &t, &mut f).unwrap();
        assert_eq!(c.stats.candidate_bytes, 0, "already on the fast node");
        // The pages move to the slow node behind our back; not seen before RECHECK_MS.
        for i in 0..10 {
            f.node_of.insert(i * PAGE_SIZE as usize, 1);
        }
        *f.free.get_mut(&1).unwrap() -= 10 * PAGE_SIZE;
        *f.free.get_mut(&0).unwrap() += 10 * PAGE_SIZE;
        c.tick(1000, &t, &mut f).unwrap();
        assert_eq!(c.stats.candidate_bytes, 0);
        c.tick(RECHECK_MS, &t, &mut f).unwrap();
        assert_eq!(c.stats.promoted_bytes, 10 * PAGE_SIZE);
    }

    #[test]
    fn large_settled_regions_cost_a_sample_only() {
        let mut f = fake(pages(0, 4096, 0));
        let mut c = Controller::new(params(), 0);
        let t = of_pid1(vec![region(0, 4096, 20, 0)]);
        struct Counting<'a>(&'a mut FakePages, usize);
        impl MemoryOps for Counting<'_> {
            fn mappings(&mut self, pid: i32) -> Result<Vec<(u64, u64)>, OpsError> {
                self.0.mappings(pid)
            }
            fn query(&mut self, pid: i32, p: &[usize]) -> Result<Vec<i32>, OpsError> {
                self.1 += p.len();
                self.0.query(pid, p)
            }
            fn move_to(&mut self, pid: i32, p: &[usize], n: u32) -> Result<Vec<i32>, OpsError> {
                self.0.move_to(pid, p, n)
            }
            fn free_bytes(&mut self, n: u32) -> u64 {
                self.0.free_bytes(n)
            }
            fn high_wmark_bytes(&mut self, n: u32) -> u64 {
                self.0.high_wmark_bytes(n)
            }
        }
        let mut ops = Counting(&mut f, 0);
        c.tick(0, &t, &mut ops).unwrap();
        assert_eq!(ops.1, SAMPLE_PAGES, "only the sample was queried");
        // A region with slow pages is scanned in full and promoted.
        let mut g = fake(pages(0, 4096, 1));
        let mut c = Controller::new(params(), 0);
        c.tick(0, &t, &mut g).unwrap();
        assert_eq!(c.stats.promoted_bytes, 100 * PAGE_SIZE);
    }

    #[test]
    fn budgets_never_split_a_huge_page_granule() {
        let g = HPAGE_SIZE as usize;
        let pages: Vec<usize> = (0..1024).map(|i| g + i * 4096).collect(); // 2 granules
        assert_eq!(cut_at_granule(&pages, 1024), 1024);
        assert_eq!(
            cut_at_granule(&pages, 700),
            512,
            "cut back to the granule boundary"
        );
        assert_eq!(cut_at_granule(&pages, 100), 100, "below one granule: kept");
        let many: Vec<usize> = (0..2000).map(|i| 4096 * 10 + i * 4096).collect();
        let chunks = granule_chunks(&many);
        assert!(chunks.iter().all(|c| c
            .iter()
            .map(|&p| granule(p))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            <= 2));
        assert_eq!(chunks.iter().map(|c| c.len()).sum::<usize>(), 2000);
        let r = Region {
            start: 4096,
            end: 3 * HPAGE_SIZE + 4096,
            nr_accesses: 0,
            age: 0,
        };
        let f = full_granule_pages(&r, &[(0, 1 << 47)]);
        assert_eq!(f.first().copied(), Some(g));
        assert_eq!(f.len(), 1024);
    }
}
