//! The bandwidth probe behind `weighted_interleave.source = "probe"`.
//!
//! The weights themselves come from `tiermem_core::interleave::reduce_interleave_weights`
//! (the kernel's `auto` reduction, shared with the simulator); this module only measures
//! the MB/s it is given when the host has no HMAT figures.

use crate::sys;
use crate::Error;
use std::time::Instant;

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
    fn probe_measures_a_positive_bandwidth_on_node_0() {
        // mbind may be forbidden in a container (EPERM); then there is nothing to measure.
        match probe_node_bandwidth(0, 4 << 20, 2) {
            Ok(mbps) => assert!(mbps > 10, "{mbps} MB/s"),
            Err(Error::Syscall { source, .. }) => eprintln!("mbind not permitted here: {source}"),
            Err(e) => panic!("{e}"),
        }
    }
}
