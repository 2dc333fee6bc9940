//! Weighted-interleave weights: the kernel's reduction from bandwidth, and a bandwidth probe.
//!
//! Kept behind two small functions ([`reduce_interleave_weights`], [`probe_node_bandwidth`])
//! so the shared weight-from-bandwidth function of `tiermem-core` can replace the first one
//! once it lands; the agent only needs "bandwidth per node in, weight per node out".

use crate::sys;
use crate::Error;
use std::time::Instant;

/// `weightiness` in mm/mempolicy.c: auto weights lie in 1..=32 before the GCD reduction.
pub const WEIGHTINESS: u64 = 32;

/// Weights from per-node bandwidth (MB/s), as `reduce_interleave_weights` (mm/mempolicy.c,
/// 6.16+ form) computes them for N_MEMORY nodes: with `S = Σ bw`, a node gets
/// `floor(32·bw / S)` when `bw > 0` and `S < 32·bw`, else 1; then every weight is divided
/// by the GCD of all weights. The caller passes `min(read_bw, write_bw)` per node, as
/// `mempolicy_set_node_perf` does.
pub fn reduce_interleave_weights(bw_mbps: &[u64]) -> Vec<u8> {
    let sum: u64 = bw_mbps.iter().sum();
    let w: Vec<u64> = bw_mbps
        .iter()
        .map(|&b| {
            let scaled = WEIGHTINESS.saturating_mul(b);
            if b > 0 && sum < scaled {
                scaled / sum
            } else {
                1
            }
        })
        .collect();
    let g = w.iter().copied().fold(0, gcd).max(1);
    w.iter().map(|&x| (x / g) as u8).collect()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Bandwidth of one node as `mempolicy_set_node_perf` takes it: `min(read, write)` MB/s.
pub fn node_bandwidth(read_mbps: u64, write_mbps: u64) -> u64 {
    read_mbps.min(write_mbps)
}

/// Measure a node's copy bandwidth in MB/s with a STREAM-like kernel (`a[i] = b[i] + s·c[i]`,
/// STREAM's triad) over three arrays bound to `node` with `mbind(MPOL_BIND)`, best of
/// `reps` passes after a warm-up pass (STREAM reports the best time, too). Bytes counted as
/// STREAM counts them: 3 × 8 bytes per element (two reads, one write).
pub fn probe_node_bandwidth(node: u32, array_bytes: usize, reps: u32) -> Result<u64, Error> {
    let n = (array_bytes / 8).max(1024);
    let mut bufs = Vec::new();
    for _ in 0..3 {
        bufs.push(sys::NodeBuffer::new_on_node(n * 8, node)?);
    }
    let [a, b, c] = [0, 1, 2].map(|i| bufs[i].as_f64_ptr());
    // SAFETY: each buffer holds n f64s, is private to this function and lives until return.
    let (a, b, c) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n),
            std::slice::from_raw_parts_mut(b, n),
            std::slice::from_raw_parts_mut(c, n),
        )
    };
    b.fill(1.0);
    c.fill(2.0);
    a.fill(0.0);
    let mut best = f64::INFINITY;
    for r in 0..=reps {
        let t = Instant::now();
        for i in 0..n {
            a[i] = b[i] + 3.0 * c[i];
        }
        std::hint::black_box(&a);
        let dt = t.elapsed().as_secs_f64();
        if r > 0 {
            best = best.min(dt);
        }
    }
    let bytes = 3.0 * 8.0 * n as f64;
    Ok((bytes / best.max(1e-9) / 1e6) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_example_24_to_7() {
        // kernel-mechanisms.md §2.3: 200000 and 64000 MB/s give 24:7.
        assert_eq!(reduce_interleave_weights(&[200_000, 64_000]), vec![24, 7]);
    }

    #[test]
    fn gcd_reduces_equal_shares() {
        assert_eq!(reduce_interleave_weights(&[100, 100]), vec![1, 1]);
        // 20000:5000 → 25.6 and 6.4 → 25:6 (gcd 1).
        assert_eq!(reduce_interleave_weights(&[20_000, 5_000]), vec![25, 6]);
        // 3:1 exactly: 24:8 → gcd 8 → 3:1.
        assert_eq!(reduce_interleave_weights(&[30_000, 10_000]), vec![3, 1]);
    }

    #[test]
    fn tiny_and_zero_bandwidth_get_one() {
        // A node with at most 1/32 of the total gets 1, as does a node with no figure.
        assert_eq!(
            reduce_interleave_weights(&[1_000_000, 10, 0]),
            vec![31, 1, 1]
        );
        assert_eq!(reduce_interleave_weights(&[0, 0]), vec![1, 1]);
    }

    #[test]
    fn weights_never_exceed_weightiness() {
        for a in [1u64, 7, 1000, 123_456] {
            for b in [1u64, 3, 999, 65_536] {
                let w = reduce_interleave_weights(&[a, b]);
                assert!(w.iter().all(|&x| (1..=32).contains(&x)), "{a} {b} {w:?}");
            }
        }
    }

    #[test]
    fn probe_measures_a_positive_bandwidth_on_node_0() {
        // mbind may be forbidden in a container (EPERM); then there is nothing to measure.
        match probe_node_bandwidth(0, 4 << 20, 2) {
            Ok(mbps) => assert!(mbps > 10, "{mbps} MB/s"),
            Err(Error::Syscall { source, .. }) => eprintln!("mbind not permitted here: {source}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn bandwidth_is_min_of_read_and_write() {
        assert_eq!(node_bandwidth(100, 40), 40);
    }
}
