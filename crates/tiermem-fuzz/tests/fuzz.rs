//! The fuzz targets under the stable mutation fuzzer: every seed and saved regression in
//! the default run; `TIERMEM_FUZZ_SECS` (default 3) of mutations per target in the slow
//! run. A crashing input is written to `target/fuzz-crashes/<target>-<n>.bin` (add it to
//! `regressions/<target>/` once fixed).

use std::time::Duration;
use tiermem_fuzz::{mutate, TARGETS};

fn save_crash(name: &str, input: &[u8]) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-crashes");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}-{:016x}.bin", fxhash(input)));
    let _ = std::fs::write(&path, input);
    path.display().to_string()
}

fn fxhash(d: &[u8]) -> u64 {
    d.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x1000_0000_01b3)
    })
}

fn run(budget: Duration) {
    for t in TARGETS {
        let seeds = (t.seeds)();
        assert!(!seeds.is_empty(), "{}: no seeds", t.name);
        match mutate::run_bounded(t.name, &seeds, t.run, budget) {
            Ok(r) => eprintln!(
                "{}: {} inputs in {:.1} s, {} rejected with an error",
                t.name, r.inputs, r.secs, r.rejected
            ),
            Err((why, input)) => panic!(
                "{}: {why}; input saved to {} ({:?})",
                t.name,
                save_crash(t.name, &input),
                String::from_utf8_lossy(&input[..input.len().min(400)])
            ),
        }
    }
}

#[test]
fn seeds_and_saved_regressions_do_not_crash() {
    run(Duration::ZERO);
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target, default 3)"]
fn bounded_fuzz_every_target() {
    let secs = std::env::var("TIERMEM_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    run(Duration::from_secs_f64(secs));
}
