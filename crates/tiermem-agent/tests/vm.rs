//! Real-kernel integration tests: boots Debian's 6.12 kernel under QEMU (TCG) with 2 and 3
//! NUMA nodes and HMAT, and runs the agent scenarios inside (tests/vm/run.sh, guest.sh).
//! Slow (about 10 minutes including the static build); CI runs it with --include-ignored.

use std::process::Command;

#[test]
#[ignore = "slow: boots QEMU VMs (tests/vm/run.sh), about 10 minutes under TCG"]
fn vm_scenarios_two_and_three_nodes() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vm/run.sh");
    let status = Command::new("bash")
        .arg(script)
        .status()
        .expect("run tests/vm/run.sh");
    // run.sh writes one line per VM (failed scenarios, or how far a VM got) into the cache.
    let cache = std::env::var("TIERMEM_VM_CACHE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/vm").into());
    let summary = std::fs::read_to_string(format!("{cache}/summary.txt")).unwrap_or_default();
    assert!(
        status.success(),
        "VM scenarios failed (logs in target/vm/guest-*.log):\n{summary}"
    );
}
