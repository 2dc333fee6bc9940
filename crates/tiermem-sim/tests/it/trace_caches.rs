//! Trace replay through the CPU caches (`hw::cache`): what binding a program to the CXL
//! node does to it depends on how its accesses use the caches, as on hardware. On the
//! seed 002 STREAM machine (`ddr5-cxl`: DDR5 122 ns / 262 GB/s read, CXL 225.6 ns /
//! 29.9 GB/s):
//! * a program whose data fits in L2 barely notices the node (≤ 5 %);
//! * a pointer chase over 1 GiB slows by the latency ratio (1.85);
//! * 64 threads streaming over 256 MiB slow by about the bandwidth ratio (8.8).

use std::path::Path;
use tiermem_core::config::SimConfig;
use tiermem_sim::engine::Simulation;
use tiermem_sim::workload::WorkloadResult;
use tiermem_trace::format::{TimeUnit, TraceWriter};
use tiermem_trace::{Kind, Record};

const BASE: u64 = 0x7f00_0000_0000;

/// Write `records` (time, thread, address, size, kind) as a trace at `path`.
fn write_trace(path: &Path, records: impl Iterator<Item = (u64, u32, u64, u32, Kind)>) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = TraceWriter::new(f, TimeUnit::Instructions, "test").unwrap();
    for (time, thread, addr, size, kind) in records {
        w.push(&Record {
            time,
            thread,
            addr,
            size,
            kind,
        })
        .unwrap();
    }
    w.finish().unwrap();
}

/// The replay's run time (s) and cache counts with the program bound to `node`.
fn replay(trace: &Path, node: u8, caches: &str) -> (f64, WorkloadResult) {
    let text = format!(
        "duration = \"60s\"\n[machine]\npreset = \"ddr5-cxl\"\n{caches}\n[kernel]\nnuma_balancing = 0\n\
         [[workloads]]\ntype = \"trace\"\nfile = {:?}\ncpi = 1.0\ncpu_ghz = 2.5\n\
         policy = {{ mode = \"bind\", nodes = [{node}] }}\n",
        trace.display().to_string()
    );
    let cfg = SimConfig::from_toml_str(&text, "test.toml").unwrap();
    let mut sim = Simulation::new(&cfg).unwrap();
    let r = sim.run(&mut |_| {}).unwrap();
    let w = r.summary.workloads.into_iter().next().unwrap();
    match &w {
        WorkloadResult::Trace { run_seconds, .. } => (*run_seconds, w.clone()),
        other => panic!("{other:?}"),
    }
}

/// `[machine]` keys that turn the caches off.
const OFF: &str = "caches = { enabled = false }";

/// Initialise `bytes` from `base` with whole-page stores (one record per page).
fn init(base: u64, bytes: u64, thread: u32) -> impl Iterator<Item = (u64, u32, u64, u32, Kind)> {
    (0..bytes / 4096).map(move |p| (p * 8, thread, base + p * 4096, 4096, Kind::Write))
}

#[test]
fn a_program_inside_l2_runs_at_the_same_speed_on_either_node() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("sum.tmt");
    // A 256 KiB array written once, then summed 40 times (8-byte loads, 3 instructions each).
    let n = (256 << 10) / 8u64;
    let sums = (0..40 * n).map(|i| {
        let time = n * 3 + i * 3;
        (time, 0, BASE + (i % n) * 8, 8, Kind::Read)
    });
    let writes = (0..n).map(|i| (i * 3, 0, BASE + i * 8, 8, Kind::Write));
    write_trace(&t, writes.chain(sums));
    let (dram, w) = replay(&t, 0, "");
    let (cxl, _) = replay(&t, 1, "");
    let slow = cxl / dram - 1.0;
    eprintln!(
        "L2-resident sum: DRAM {dram:.6} s, CXL {cxl:.6} s, CXL/DRAM {:.4}",
        cxl / dram
    );
    assert!(
        slow <= 0.05,
        "CXL/DRAM = {:.3} (dram {dram} s, cxl {cxl} s)",
        cxl / dram
    );
    // The run takes what its instructions take (41 × 32768 × 3 at 2.5 GHz = 1.6 ms), plus
    // an L2 hit per line of the 40 sums (4096 × 40 × 5 ns = 0.8 ms: no L1 prefetcher).
    assert!(dram < 3.0e-3 && dram > 2.0e-3, "{dram} s");
    let WorkloadResult::Trace {
        cache: Some(c),
        accesses,
        ..
    } = w
    else {
        panic!("no cache counts")
    };
    assert_eq!(accesses, 41 * n);
    assert_eq!(c.misses + c.prefetched, 4096, "{c:?}");
    // Without caches every access is charged the node's latency: the old answer.
    let (dram0, _) = replay(&t, 0, OFF);
    let (cxl0, _) = replay(&t, 1, OFF);
    eprintln!("without caches: CXL/DRAM {:.3}", cxl0 / dram0);
    assert!(cxl0 / dram0 > 1.5, "{}", cxl0 / dram0);
}

/// Lines of a random cyclic permutation over `lines` lines (Sattolo's algorithm).
fn chase_order(lines: u64, steps: u64) -> Vec<u64> {
    let mut next: Vec<u32> = (0..lines as u32).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..lines as usize).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        next.swap(i, j);
    }
    let mut at = 0u32;
    (0..steps)
        .map(|_| {
            at = next[at as usize];
            at as u64
        })
        .collect()
}

#[test]
fn a_pointer_chase_over_1_gib_slows_by_the_latency_ratio() {
    let d = tempfile::tempdir().unwrap();
    let (bytes, steps) = (1u64 << 30, 1_000_000u64);
    let only_init = d.path().join("init.tmt");
    let chase = d.path().join("chase.tmt");
    write_trace(&only_init, init(BASE, bytes, 0));
    let t0 = bytes / 4096 * 8;
    let order = chase_order(bytes / 64, steps);
    write_trace(
        &chase,
        init(BASE, bytes, 0).chain(
            order
                .iter()
                .enumerate()
                .map(|(i, &l)| (t0 + i as u64 * 4, 0, BASE + l * 64, 8, Kind::Read)),
        ),
    );
    let time = |node| replay(&chase, node, "").0 - replay(&only_init, node, "").0;
    let (dram, cxl) = (time(0), time(1));
    let ratio = cxl / dram;
    eprintln!("1 GiB chase: DRAM {dram:.4} s, CXL {cxl:.4} s, CXL/DRAM {ratio:.3}");
    let latency_ratio = 225.6 / 122.0;
    assert!(
        (ratio / latency_ratio - 1.0).abs() < 0.1,
        "chase CXL/DRAM = {ratio:.3} against the latency ratio {latency_ratio:.3} ({dram} s, {cxl} s)"
    );
    // Each step waits for memory: about 122 ns + 1.6 ns of instructions on DRAM.
    let per_step = dram / steps as f64 * 1e9;
    assert!((110.0..150.0).contains(&per_step), "{per_step} ns per step");
}

#[test]
fn streaming_threads_slow_by_the_bandwidth_ratio() {
    let d = tempfile::tempdir().unwrap();
    let (threads, chunk) = (64u32, 4u64 << 20);
    let only_init = d.path().join("init.tmt");
    let stream = d.path().join("stream.tmt");
    let inits = || {
        (0..chunk / 4096).flat_map(move |p| {
            (0..threads).map(move |t| {
                (
                    p * 8,
                    t,
                    BASE + t as u64 * chunk + p * 4096,
                    4096,
                    Kind::Write,
                )
            })
        })
    };
    write_trace(&only_init, inits());
    let t0 = chunk / 4096 * 8;
    let lines = chunk / 64;
    let reads = (0..2 * lines).flat_map(move |i| {
        (0..threads).map(move |t| {
            let addr = BASE + t as u64 * chunk + (i % lines) * 64;
            (t0 + i * 2, t, addr, 64, Kind::Read)
        })
    });
    write_trace(&stream, inits().chain(reads));
    let time = |node| replay(&stream, node, "").0 - replay(&only_init, node, "").0;
    let (dram, cxl) = (time(0), time(1));
    let ratio = cxl / dram;
    eprintln!("64-thread stream: DRAM {dram:.4} s, CXL {cxl:.4} s, CXL/DRAM {ratio:.2}");
    let bandwidth_ratio = 262.0 / 29.9;
    assert!(
        (ratio / bandwidth_ratio - 1.0).abs() < 0.25,
        "stream CXL/DRAM = {ratio:.2} against the bandwidth ratio {bandwidth_ratio:.2} ({dram} s, {cxl} s)"
    );
}
