//! Interleave node selection and the weighted-interleave weight table (`mm/mempolicy.c`,
//! `kernel-mechanisms.md` §2).
//!
//! Everything here is pure logic shared by the simulator and the live agent:
//!
//! * [`reduce_interleave_weights`] / [`weights_from_bandwidth`]: the 6.16+ `auto` weights
//!   derived from node bandwidth (scale to at most [`WEIGHTINESS`], divide by the GCD);
//! * [`WeightTable`]: the single system-wide table behind
//!   `/sys/kernel/mm/mempolicy/weighted_interleave/`, with both sysfs semantics
//!   (6.9–6.15: `0` means "default weight 1"; 6.16+: 1..255 and an `auto` switch);
//! * node choice on the kernel's three paths: the offset-based [`interleave_nid`] and
//!   [`weighted_interleave_nid`] used for VMA faults, the per-task cursor
//!   ([`IlCursor::interleave_nodes`], [`IlCursor::weighted_interleave_nodes`]) used where no
//!   interleave index exists, and the bulk allocator ([`IlCursor::bulk_interleave`],
//!   [`IlCursor::bulk_weighted_interleave`]).
//!
//! Node masks are `u64` bitmaps (`nodemask_t` with up to 64 nodes); weights are indexed by
//! node id. Weight changes affect only the selections made after them: nothing here moves
//! pages.

use serde::{Deserialize, Serialize};

/// A bitmap of node ids (`nodemask_t`, nodes 0..63).
pub type NodeMask = u64;

/// `weightiness` in `reduce_interleave_weights`: auto weights lie in 1..=32.
pub const WEIGHTINESS: u64 = 32;

/// `MAX_NUMNODES` of the simulated kernel (the width of [`NodeMask`]). The per-task cursor
/// starts at `MAX_NUMNODES − 1` so that the first pick is the mask's first node.
pub const MAX_NUMNODES: u32 = 64;

/// The mask of a list of node indices.
pub fn mask_of(nodes: impl IntoIterator<Item = usize>) -> NodeMask {
    nodes.into_iter().fold(0, |m, n| m | (1u64 << n))
}

/// `first_node(mask)`, or `None` for an empty mask.
pub fn first_node(mask: NodeMask) -> Option<u32> {
    (mask != 0).then(|| mask.trailing_zeros())
}

/// `next_node_in(prev, mask)`: the first node of `mask` after `prev`, wrapping to the first
/// node; `None` for an empty mask.
pub fn next_node_in(prev: u32, mask: NodeMask) -> Option<u32> {
    let above = if prev >= 63 {
        0
    } else {
        mask & (!0u64 << (prev + 1))
    };
    if above != 0 {
        Some(above.trailing_zeros())
    } else {
        first_node(mask)
    }
}

fn weight_of(weights: &[u8], node: u32) -> u64 {
    // get_il_weight: a missing entry (or a 6.9-style 0) is the default weight 1.
    match weights.get(node as usize) {
        Some(&w) if w > 0 => w as u64,
        _ => 1,
    }
}

/// `interleave_nid`: the `ilx mod nnodes`-th node of the mask. `None` for an empty mask
/// (the kernel then uses the local node).
pub fn interleave_nid(mask: NodeMask, ilx: u64) -> Option<u32> {
    let n = mask.count_ones() as u64;
    if n == 0 {
        return None;
    }
    let target = ilx % n;
    let mut node = first_node(mask)?;
    for _ in 0..target {
        node = next_node_in(node, mask)?;
    }
    Some(node)
}

/// `weighted_interleave_nid`: the static, offset-based choice used for every VMA fault.
/// `total = Σ weight(n)` over the mask; `target = ilx mod total`; walk the mask from its
/// first node subtracting weights until `target < weight`. Consecutive interleave indices
/// thus fill node A with w_A pages, then node B with w_B pages, and so on, the same way
/// every time for a given index. `None` for an empty mask.
pub fn weighted_interleave_nid(mask: NodeMask, weights: &[u8], ilx: u64) -> Option<u32> {
    let mut total = 0u64;
    let mut m = mask;
    while m != 0 {
        let n = m.trailing_zeros();
        total += weight_of(weights, n);
        m &= m - 1;
    }
    if total == 0 {
        return None;
    }
    let mut target = ilx % total;
    let mut node = first_node(mask)?;
    while target > 0 {
        let w = weight_of(weights, node);
        if target < w {
            break;
        }
        target -= w;
        node = next_node_in(node, mask)?;
    }
    Some(node)
}

/// The per-task interleave state (`task_struct::il_prev`, `il_weight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlCursor {
    /// The node of the current run (`il_prev`); `MAX_NUMNODES − 1` after a reset.
    pub il_prev: u32,
    /// Allocations left on `il_prev` in the current run (`il_weight`).
    pub il_weight: u8,
}

impl Default for IlCursor {
    /// The state `set_mempolicy` leaves for (weighted) interleave: `il_prev = MAX_NUMNODES − 1`,
    /// `il_weight = 0`.
    fn default() -> Self {
        IlCursor {
            il_prev: MAX_NUMNODES - 1,
            il_weight: 0,
        }
    }
}

impl IlCursor {
    /// `interleave_nodes`: plain interleave without an index moves the cursor to the next
    /// node of the mask and returns it.
    pub fn interleave_nodes(&mut self, mask: NodeMask) -> Option<u32> {
        let n = next_node_in(self.il_prev, mask)?;
        self.il_prev = n;
        Some(n)
    }

    /// `weighted_interleave_nodes`: if the current run is used up (`il_weight == 0`) or its
    /// node left the mask, move to the next node and load its weight; then take one.
    pub fn weighted_interleave_nodes(&mut self, mask: NodeMask, weights: &[u8]) -> Option<u32> {
        let mut node = self.il_prev;
        if self.il_weight == 0 || node >= 64 || mask & (1u64 << node) == 0 {
            node = next_node_in(node, mask)?;
            self.il_prev = node;
            self.il_weight = weight_of(weights, node).min(255) as u8;
        }
        self.il_weight -= 1;
        Some(node)
    }

    /// `get_mempolicy(MPOL_F_NODE)` without an address on a weighted task policy: the node
    /// the next allocation would use, without moving the cursor.
    pub fn peek_weighted(&self, mask: NodeMask) -> Option<u32> {
        if self.il_weight > 0 && self.il_prev < 64 && mask & (1u64 << self.il_prev) != 0 {
            Some(self.il_prev)
        } else {
            next_node_in(self.il_prev, mask)
        }
    }

    /// `alloc_pages_bulk_interleave`: each node of the mask (from the cursor on) gets
    /// `n / nodes` pages and the first `n mod nodes` of them one more. Returns (node, pages)
    /// in allocation order, assuming every page is allocated.
    #[allow(clippy::expect_used, reason = "callers pass a non-empty node mask")]
    pub fn bulk_interleave(&mut self, mask: NodeMask, n: u64) -> Vec<(u32, u64)> {
        let nodes = mask.count_ones() as u64;
        if nodes == 0 || n == 0 {
            return Vec::new();
        }
        let per = n / nodes;
        let mut delta = n - per * nodes;
        let mut out = Vec::new();
        for _ in 0..nodes {
            let node = self.interleave_nodes(mask).expect("mask is not empty");
            let pages = if delta > 0 {
                delta -= 1;
                per + 1
            } else {
                per
            };
            if pages > 0 {
                out.push((node, pages));
            }
        }
        out
    }

    /// `alloc_pages_bulk_weighted_interleave`: finish the current run on `il_prev` first;
    /// then whole rounds (`rounds = rem / total`) plus the partial round `delta = rem % total`
    /// walking the mask from after `il_prev`, each node getting `w·rounds + min(delta, w)`;
    /// the node where `delta` runs out inside its weight becomes the resume point
    /// (`il_prev`, `il_weight = w − delta`), otherwise the node after the last one
    /// with its full weight. Returns (node, pages) in allocation order, assuming every page
    /// is allocated.
    #[allow(clippy::expect_used, reason = "callers pass a non-empty node mask")]
    pub fn bulk_weighted_interleave(
        &mut self,
        mask: NodeMask,
        weights: &[u8],
        n: u64,
    ) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        if n == 0 || mask == 0 {
            return out;
        }
        let mut rem = n;
        let node = self.il_prev;
        let weight = self.il_weight as u64;
        if weight > 0 && node < 64 && mask & (1u64 << node) != 0 {
            let first = rem.min(weight);
            out.push((node, first));
            if rem <= weight {
                self.il_weight -= rem as u8;
                return out;
            }
            rem -= weight;
        }
        self.il_weight = 0;
        let mut prev = node;
        let mut total = 0u64;
        let mut m = mask;
        while m != 0 {
            total += weight_of(weights, m.trailing_zeros());
            m &= m - 1;
        }
        let rounds = rem / total;
        let mut delta = rem % total;
        let mut resume_node = next_node_in(prev, mask).expect("mask is not empty");
        let mut resume_weight = weight_of(weights, resume_node);
        let mut allocated = n - rem;
        for _ in 0..mask.count_ones() {
            let node = next_node_in(prev, mask).expect("mask is not empty");
            let w = weight_of(weights, node);
            if delta > 0 && delta < w {
                resume_node = node;
                resume_weight = w - delta;
            }
            let take = delta.min(w);
            let pages = w * rounds + take;
            delta -= take;
            if pages == 0 {
                break;
            }
            out.push((node, pages));
            allocated += pages;
            if allocated == n {
                break;
            }
            prev = node;
        }
        self.il_prev = resume_node;
        self.il_weight = resume_weight.min(255) as u8;
        out
    }
}

/// Which kernel's weighted-interleave sysfs semantics the table follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WeightSemantics {
    /// Linux 6.9–6.15: default weight 1 for every node; writing `0` (or nothing) to `nodeN`
    /// resets it to the default; no `auto` file.
    #[serde(rename = "6.9")]
    V6_9,
    /// Linux 6.16+: weights 1..255 (0 is `EINVAL`); an `auto` mode, on by default, that
    /// derives the weights from the node bandwidth HMAT/CDAT report; any `nodeN` write
    /// switches to manual mode.
    #[serde(rename = "6.16")]
    V6_16,
}

/// Why a sysfs write was refused (the errno the kernel returns).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WeightError {
    #[error("invalid value {0:?} (EINVAL)")]
    Invalid(String),
    #[error("no bandwidth data has been reported for any node (ENODEV)")]
    NoBandwidth,
    #[error("node {0} has no weight file (it has no memory)")]
    NoSuchNode(u32),
    #[error("this kernel ({0:?}) has no `auto` file")]
    NoAutoFile(WeightSemantics),
}

/// `kstrtou8(buf, 0, &v)`: decimal, `0x` hex or leading-`0` octal, an optional `+` and one
/// trailing newline.
pub fn kstrtou8(s: &str) -> Option<u8> {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u8::from_str_radix(digits, radix).ok()
}

/// `kstrtobool`: `1/y/Y/t/T` true, `0/n/N/f/F` false, `on`/`off` (case-insensitive).
pub fn kstrtobool(s: &str) -> Option<bool> {
    let b = s.as_bytes();
    match b.first()? {
        b'1' | b'y' | b'Y' | b't' | b'T' => Some(true),
        b'0' | b'n' | b'N' | b'f' | b'F' => Some(false),
        b'o' | b'O' => match b.get(1)? {
            b'n' | b'N' => Some(true),
            b'f' | b'F' => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `reduce_interleave_weights` (6.16+ form): with `S = Σ bw[n]` over the nodes with memory,
/// each such node gets `floor(32·bw[n] / S)` if `bw[n] > 0` and `S < 32·bw[n]`, else 1; then
/// every weight is divided by the GCD of them all. Nodes without memory get 1.
/// `bw` is in MB/s per node id.
pub fn reduce_interleave_weights(bw: &[u64], has_memory: &[bool]) -> Vec<u8> {
    let mem = |n: usize| has_memory.get(n).copied().unwrap_or(false);
    let sum: u64 = (0..bw.len()).filter(|&n| mem(n)).map(|n| bw[n]).sum();
    let mut w = vec![1u8; bw.len()];
    let mut g = 0u64;
    for n in 0..bw.len() {
        if !mem(n) {
            continue;
        }
        let scaled = WEIGHTINESS * bw[n];
        let v = if bw[n] > 0 && sum < scaled {
            scaled / sum
        } else {
            1
        };
        w[n] = v as u8;
        g = if g == 0 { v } else { gcd(g, v) };
    }
    if g > 1 {
        for (n, wn) in w.iter_mut().enumerate().take(bw.len()) {
            if mem(n) {
                *wn = (*wn as u64 / g) as u8;
            }
        }
    }
    w
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The bandwidth value `mempolicy_set_node_perf` uses for a node: `min(read, write)` in MB/s.
pub fn node_perf_mbps(read_bytes_per_s: f64, write_bytes_per_s: f64) -> u64 {
    (read_bytes_per_s.min(write_bytes_per_s) / 1e6).max(0.0) as u64
}

/// Weights a 6.16+ kernel in `auto` mode derives from each node's (read, write) bandwidth in
/// bytes/s: `node_perf_mbps` per node, then [`reduce_interleave_weights`] over all nodes
/// given (every node listed is taken to have memory). For the live agent and the tuner.
pub fn weights_from_bandwidth(read_write_bytes_per_s: &[(f64, f64)]) -> Vec<u8> {
    let bw: Vec<u64> = read_write_bytes_per_s
        .iter()
        .map(|&(r, w)| node_perf_mbps(r, w))
        .collect();
    reduce_interleave_weights(&bw, &vec![true; bw.len()])
}

/// The system-wide weight table (`wi_state` / `iw_table`) and its sysfs interface.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightTable {
    semantics: WeightSemantics,
    /// `mode_auto` (6.16+).
    auto: bool,
    /// The published table; `None` until the first write or bandwidth report (all weights 1).
    table: Option<Vec<u8>>,
    /// `node_bw_table`: bandwidth (MB/s) reported per node, cached even in manual mode.
    node_bw: Vec<Option<u64>>,
    has_memory: Vec<bool>,
}

impl WeightTable {
    /// The boot state: no table (every weight 1), auto mode on 6.16+.
    pub fn new(semantics: WeightSemantics, has_memory: Vec<bool>) -> Self {
        WeightTable {
            semantics,
            auto: semantics == WeightSemantics::V6_16,
            table: None,
            node_bw: vec![None; has_memory.len()],
            has_memory,
        }
    }

    pub fn semantics(&self) -> WeightSemantics {
        self.semantics
    }

    /// Whether weights follow the bandwidth table (`auto` reads `true`). Always false on 6.9.
    pub fn is_auto(&self) -> bool {
        self.auto
    }

    /// `get_il_weight(node)`: the table entry, 1 without a table (and, on 6.9, for a 0 entry).
    pub fn weight(&self, node: u32) -> u8 {
        match &self.table {
            Some(t) => match t.get(node as usize) {
                Some(&0) | None => 1,
                Some(&w) => w,
            },
            None => 1,
        }
    }

    /// Effective weights of every node, indexed by node id (what the allocator uses).
    pub fn weights(&self) -> Vec<u8> {
        (0..self.has_memory.len() as u32)
            .map(|n| self.weight(n))
            .collect()
    }

    fn check_node(&self, node: u32) -> Result<(), WeightError> {
        if self.has_memory.get(node as usize).copied().unwrap_or(false) {
            Ok(())
        } else {
            Err(WeightError::NoSuchNode(node))
        }
    }

    /// Reading `nodeN`: the decimal weight in effect.
    pub fn read_node(&self, node: u32) -> Result<String, WeightError> {
        self.check_node(node)?;
        Ok(format!("{}\n", self.weight(node)))
    }

    /// Writing `nodeN` (`node_store`). 6.16+: 1..255, anything else (0, empty, junk) is
    /// `EINVAL`; a valid write copies the table (1s if none), sets the node and switches to
    /// manual mode. 6.9–6.15: 0..255, an empty write or 0 stores 0, which reads as the
    /// default weight 1.
    pub fn write_node(&mut self, node: u32, buf: &str) -> Result<(), WeightError> {
        self.check_node(node)?;
        let empty = buf.is_empty() || buf == "\n";
        let value = match self.semantics {
            WeightSemantics::V6_16 => match kstrtou8(buf) {
                Some(v) if v > 0 && !empty => v,
                _ => return Err(WeightError::Invalid(buf.to_string())),
            },
            WeightSemantics::V6_9 => {
                if empty {
                    0
                } else {
                    kstrtou8(buf).ok_or_else(|| WeightError::Invalid(buf.to_string()))?
                }
            }
        };
        let mut t = self
            .table
            .clone()
            .unwrap_or_else(|| vec![1; self.has_memory.len()]);
        t[node as usize] = value;
        self.table = Some(t);
        self.auto = false;
        Ok(())
    }

    /// Reading `auto` (6.16+).
    pub fn read_auto(&self) -> Result<String, WeightError> {
        match self.semantics {
            WeightSemantics::V6_16 => Ok(if self.auto { "true\n" } else { "false\n" }.into()),
            s => Err(WeightError::NoAutoFile(s)),
        }
    }

    /// Writing `auto` (`weighted_interleave_auto_store`, 6.16+): the current mode is a
    /// no-op; `false` keeps the current weights as manual ones; `true` recomputes them from
    /// the cached bandwidth, or fails with `ENODEV` if none was ever reported.
    pub fn write_auto(&mut self, buf: &str) -> Result<(), WeightError> {
        if self.semantics != WeightSemantics::V6_16 {
            return Err(WeightError::NoAutoFile(self.semantics));
        }
        let on = kstrtobool(buf).ok_or_else(|| WeightError::Invalid(buf.to_string()))?;
        if on == self.auto {
            return Ok(());
        }
        if !on {
            self.table = Some(self.weights());
            self.auto = false;
            return Ok(());
        }
        if self.node_bw.iter().all(Option::is_none) {
            return Err(WeightError::NoBandwidth);
        }
        self.auto = true;
        self.recompute();
        Ok(())
    }

    /// `mempolicy_set_node_perf(nid, coord)`: a node's CPU-initiator bandwidth reported by
    /// HMAT/CDAT. The value (`min(read, write)`, MB/s) is cached; in auto mode the weights
    /// are recomputed and published at once. 6.9–6.15 kernels ignore it.
    pub fn set_node_perf(&mut self, node: u32, read_bytes_per_s: f64, write_bytes_per_s: f64) {
        if self.semantics != WeightSemantics::V6_16 {
            return;
        }
        if let Some(slot) = self.node_bw.get_mut(node as usize) {
            *slot = Some(node_perf_mbps(read_bytes_per_s, write_bytes_per_s));
        }
        if self.auto {
            self.recompute();
        }
    }

    fn recompute(&mut self) {
        let bw: Vec<u64> = self.node_bw.iter().map(|b| b.unwrap_or(0)).collect();
        self.table = Some(reduce_interleave_weights(&bw, &self.has_memory));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_follows_the_documented_example() {
        // kernel-mechanisms.md §2.3: 200000 and 64000 MB/s give 24:7.
        assert_eq!(
            reduce_interleave_weights(&[200_000, 64_000], &[true, true]),
            vec![24, 7]
        );
        // Equal bandwidth: 16:16 reduced by the GCD to 1:1.
        assert_eq!(
            reduce_interleave_weights(&[100, 100], &[true, true]),
            vec![1, 1]
        );
        // A node with at most 1/32 of the total gets 1; memoryless nodes get 1.
        assert_eq!(
            reduce_interleave_weights(&[1000, 10, 0], &[true, true, false]),
            vec![31, 1, 1]
        );
        // 3:1 bandwidth: 24:8 → 3:1.
        assert_eq!(
            reduce_interleave_weights(&[300, 100], &[true, true]),
            vec![3, 1]
        );
        // Weights stay within 1..=32.
        let w = weights_from_bandwidth(&[(284.5e9, 239.6e9), (26.8e9, 20e9)]);
        assert_eq!(w, vec![29, 2]);
    }

    #[test]
    fn reduction_of_the_vm_test_machines() {
        // tests/vm/guest.sh: HMAT access1 bandwidth in MB/s, every node with memory.
        // 20480 : 5120 → floor(25.6) : floor(6.4) = 25 : 6 (GCD 1).
        assert_eq!(
            reduce_interleave_weights(&[20_480, 5_120], &[true, true]),
            vec![25, 6]
        );
        assert_eq!(
            reduce_interleave_weights(&[20_000, 5_000], &[true, true]),
            vec![25, 6]
        );
        // 20480 : 10240 : 5120 → floor(18.3) : floor(9.1) : floor(4.6) = 18 : 9 : 4.
        assert_eq!(
            reduce_interleave_weights(&[20_480, 10_240, 5_120], &[true, true, true]),
            vec![18, 9, 4]
        );
        // MB/s given as bytes/s through node_perf_mbps (min of read and write).
        assert_eq!(
            weights_from_bandwidth(&[(20_480e6, 30_000e6), (6_000e6, 5_120e6)]),
            vec![25, 6]
        );
    }

    #[test]
    fn reduction_of_zero_and_tiny_bandwidth() {
        // No figure for any node: every weight 1 (S = 0).
        assert_eq!(
            reduce_interleave_weights(&[0, 0], &[true, true]),
            vec![1, 1]
        );
        // A memory node with no figure takes no share but keeps weight 1.
        assert_eq!(
            reduce_interleave_weights(&[1_000_000, 10, 0], &[true, true, true]),
            vec![31, 1, 1]
        );
    }

    #[test]
    fn reduced_weights_stay_within_weightiness() {
        for a in [1u64, 7, 1000, 123_456] {
            for b in [1u64, 3, 999, 65_536] {
                let w = reduce_interleave_weights(&[a, b], &[true, true]);
                assert!(w.iter().all(|&x| (1..=32).contains(&x)), "{a} {b} {w:?}");
            }
        }
    }

    #[test]
    fn weighted_nid_fills_runs_in_mask_order() {
        let mask = mask_of([0, 2]);
        let w = [3, 9, 2];
        let picks: Vec<u32> = (0..10)
            .map(|i| weighted_interleave_nid(mask, &w, i).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 0, 0, 2, 2, 0, 0, 0, 2, 2]);
        assert_eq!(weighted_interleave_nid(0, &w, 5), None);
        let plain: Vec<u32> = (0..4).map(|i| interleave_nid(mask, i).unwrap()).collect();
        assert_eq!(plain, vec![0, 2, 0, 2]);
    }

    #[test]
    fn cursor_runs_and_bulk_resume_point() {
        let mask = mask_of([0, 1]);
        let w = [5, 1];
        let mut c = IlCursor::default();
        let picks: Vec<u32> = (0..12)
            .map(|_| c.weighted_interleave_nodes(mask, &w).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
        // Bulk: 8 pages from a fresh cursor: 5 on node 0, 1 on node 1 (one round), then 2
        // more on node 0 (delta), leaving 3 of node 0's run.
        let mut c = IlCursor::default();
        let got = c.bulk_weighted_interleave(mask, &w, 8);
        assert_eq!(got, vec![(0, 7), (1, 1)]);
        assert_eq!(
            c,
            IlCursor {
                il_prev: 0,
                il_weight: 3
            }
        );
        // The next page-by-page picks continue the run exactly where bulk left it.
        let next: Vec<u32> = (0..4)
            .map(|_| c.weighted_interleave_nodes(mask, &w).unwrap())
            .collect();
        assert_eq!(next, vec![0, 0, 0, 1]);
        // A request inside the current run only shortens it.
        let mut c = IlCursor {
            il_prev: 0,
            il_weight: 4,
        };
        assert_eq!(c.bulk_weighted_interleave(mask, &w, 2), vec![(0, 2)]);
        assert_eq!(c.il_weight, 2);
    }

    #[test]
    fn sysfs_semantics_by_version() {
        let mut t = WeightTable::new(WeightSemantics::V6_9, vec![true, true]);
        assert_eq!(t.weights(), vec![1, 1]);
        t.write_node(0, "5\n").unwrap();
        assert_eq!(t.weights(), vec![5, 1]);
        t.write_node(0, "0").unwrap();
        assert_eq!(t.read_node(0).unwrap(), "1\n");
        t.write_node(1, "").unwrap();
        assert_eq!(t.weight(1), 1);
        assert!(t.write_node(1, "256").is_err());
        assert!(t.read_auto().is_err());
        t.set_node_perf(0, 100e9, 100e9); // ignored before 6.16
        assert_eq!(t.weights(), vec![1, 1]);

        let mut t = WeightTable::new(WeightSemantics::V6_16, vec![true, true]);
        assert!(t.is_auto());
        assert_eq!(
            t.write_auto("1"),
            Ok(()),
            "writing the current mode is a no-op"
        );
        t.set_node_perf(0, 200_000e6, 250_000e6);
        t.set_node_perf(1, 64_000e6, 70_000e6);
        assert_eq!(t.weights(), vec![24, 7]);
        assert!(matches!(t.write_node(1, "0"), Err(WeightError::Invalid(_))));
        assert!(matches!(t.write_node(1, ""), Err(WeightError::Invalid(_))));
        t.write_node(1, "0x2").unwrap();
        assert!(!t.is_auto(), "a node write switches to manual");
        assert_eq!(t.weights(), vec![24, 2]);
        // Bandwidth reports are cached in manual mode but do not change the weights.
        t.set_node_perf(1, 100_000e6, 100_000e6);
        assert_eq!(t.weights(), vec![24, 2]);
        t.write_auto("on").unwrap();
        // 200000:100000 MB/s: floor(32·2/3) = 21 and floor(32/3) = 10, GCD 1.
        assert_eq!(t.weights(), vec![21, 10]);
    }

    #[test]
    fn auto_without_bandwidth_is_enodev() {
        let mut t = WeightTable::new(WeightSemantics::V6_16, vec![true, true]);
        t.write_auto("n").unwrap();
        assert_eq!(t.weights(), vec![1, 1]);
        assert_eq!(t.write_auto("y"), Err(WeightError::NoBandwidth));
        assert!(t.write_node(5, "1").is_err());
    }

    #[test]
    fn kstrto_parsers() {
        assert_eq!(kstrtou8("9\n"), Some(9));
        assert_eq!(kstrtou8("0x1f"), Some(31));
        assert_eq!(kstrtou8("017"), Some(15));
        assert_eq!(kstrtou8("256"), None);
        assert_eq!(kstrtou8("-1"), None);
        assert_eq!(kstrtou8("1 "), None);
        assert_eq!(kstrtobool("off"), Some(false));
        assert_eq!(kstrtobool("Yes"), Some(true));
        assert_eq!(kstrtobool("x"), None);
    }
}
