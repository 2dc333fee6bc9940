//! The agent against a fake `/proc` + `/sys` tree (`--root`): every setting it changed is
//! back after each signal that ends it, after kill -9 plus `--restore`, and a second agent
//! on the same state file is refused while the first runs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem"))
}

/// The files the agent reads and the knobs it changes, with their host values.
const KNOBS: [(&str, &str); 4] = [
    ("proc/sys/kernel/numa_balancing", "0"),
    ("sys/kernel/mm/numa/demotion_enabled", "false"),
    ("sys/kernel/mm/ksm/run", "0"),
    ("sys/kernel/mm/ksm/pages_to_scan", "100"),
];

fn fake_host(root: &Path) {
    let files: &[(&str, &str)] = &[
        ("proc/sys/kernel/osrelease", "6.12.117+deb12-amd64"),
        ("sys/devices/system/node/online", "0-1"),
        ("sys/devices/system/node/possible", "0-1"),
        ("sys/devices/system/node/has_memory", "0-1"),
        ("sys/devices/system/node/has_cpu", "0"),
        ("sys/devices/system/node/node0/cpulist", "0-1"),
        ("sys/devices/system/node/node1/cpulist", ""),
        (
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: 524288 kB",
        ),
        (
            "sys/devices/system/node/node1/meminfo",
            "Node 1 MemTotal: 1048576 kB\nNode 1 MemFree: 1000000 kB",
        ),
        ("sys/devices/system/node/node0/distance", "10 20"),
        ("sys/devices/system/node/node1/distance", "20 10"),
        (
            "sys/devices/virtual/memory_tiering/memory_tier4/nodelist",
            "0",
        ),
        (
            "sys/devices/virtual/memory_tiering/memory_tier22/nodelist",
            "1",
        ),
        ("sys/kernel/mm/ksm/merge_across_nodes", "1"),
        ("sys/kernel/mm/ksm/sleep_millisecs", "20"),
        ("sys/kernel/mm/ksm/pages_shared", "0"),
        ("proc/vmstat", "pgpromote_success 0\npgdemote_kswapd 0"),
        (
            "proc/self/status",
            "Name:\ttiermem\nCapEff:\t000001ffffffffff",
        ),
    ];
    for (p, v) in files.iter().chain(KNOBS.iter()) {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, format!("{v}\n")).unwrap();
    }
}

fn knob(root: &Path, p: &str) -> String {
    std::fs::read_to_string(root.join(p))
        .unwrap()
        .trim()
        .to_string()
}

fn config(dir: &Path) -> PathBuf {
    let c = dir.join("agent.toml");
    std::fs::write(
        &c,
        "interval = \"50ms\"\n[numa_balancing]\nmode = \"tiering\"\ndemotion_enabled = true\n[ksm]\nrun = 1\npages_to_scan = 500\n",
    )
    .unwrap();
    c
}

fn start(root: &Path, cfg: &Path, state: &Path) -> Child {
    Command::new(bin())
        .args(["--log", "info", "agent", "--root"])
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .arg("--state-file")
        .arg(state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait until the agent applied its plan (every knob changed).
fn wait_applied(root: &Path, child: &mut Child) {
    let t0 = Instant::now();
    while KNOBS.iter().any(|(p, v)| knob(root, p) == *v) {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("agent exited early ({st}): {err}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the agent did not apply its plan"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_restored(root: &Path, state: &Path) {
    for (p, v) in KNOBS {
        assert_eq!(knob(root, p), v, "{p} restored");
    }
    assert!(!state.exists(), "state file removed after a full restore");
}

#[test]
fn every_stopping_signal_restores_every_setting() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fake_host(&root);
        let (cfg, state) = (config(d.path()), d.path().join("agent.state"));
        let mut child = start(&root, &cfg, &state);
        wait_applied(&root, &mut child);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "signal {sig}: {err}");
        assert_restored(&root, &state);
        // Logs to a file or pipe are plain text: some lines, no colour codes.
        assert!(err.contains("INFO"), "{err}");
        assert!(
            !err.contains('\u{1b}'),
            "ANSI codes in a piped log: {err:?}"
        );
    }
}

#[test]
fn a_second_agent_is_refused_and_kill_9_is_undone_by_restore() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fake_host(&root);
    let (cfg, state) = (config(d.path()), d.path().join("agent.state"));
    let mut first = start(&root, &cfg, &state);
    wait_applied(&root, &mut first);
    let second = start(&root, &cfg, &state).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.id())),
        "names the holder: {err}"
    );
    // The first agent's knobs are untouched by the refused one.
    assert_eq!(knob(&root, KNOBS[0].0), "2");
    first.kill().unwrap(); // SIGKILL: nothing restored
    first.wait().unwrap();
    assert_eq!(knob(&root, KNOBS[0].0), "2");
    let o = Command::new(bin())
        .args(["agent", "--restore", "--root"])
        .arg(&root)
        .arg("--state-file")
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_restored(&root, &state);
}

/// After kill -9, `--restore --config FILE` restores even when FILE has been broken since
/// (as the systemd unit runs it before a restart): the state file is read from the config's
/// `state_file` all the same.
#[test]
fn restore_does_not_need_the_config_to_be_valid() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fake_host(&root);
    let state = d.path().join("custom.state");
    let cfg = d.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "interval = \"50ms\"\nstate_file = {:?}\n[numa_balancing]\nmode = \"tiering\"\ndemotion_enabled = true\n[ksm]\nrun = 1\npages_to_scan = 500\n",
            state.display().to_string()
        ),
    )
    .unwrap();
    let mut agent = Command::new(bin())
        .args(["agent", "--root"])
        .arg(&root)
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_applied(&root, &mut agent);
    agent.kill().unwrap();
    agent.wait().unwrap();
    // The operator edits the config meanwhile and gets a key wrong.
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}[ksm_typo]\nrun = 2\n")).unwrap();
    let o = Command::new(bin())
        .args(["agent", "--restore", "--root"])
        .arg(&root)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("ksm_typo") && err.contains("restoring from"),
        "{err}"
    );
    assert_restored(&root, &state);
}

/// `tiermem workload run` refuses a DAMON context it cannot run live before writing
/// anything: exit code 2, the key named, every knob and DAMON sysfs as they were.
#[test]
fn workload_run_refuses_a_damon_context_it_cannot_run_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fake_host(&root);
    let nr = root.join("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds");
    std::fs::create_dir_all(nr.parent().unwrap()).unwrap();
    std::fs::write(&nr, "0\n").unwrap();
    let spec = dir.path().join("s.toml");
    std::fs::write(
        &spec,
        "duration = \"1s\"\n[machine]\nname = \"t\"\n[[machine.nodes]]\nid = 0\ncpus = 2\ncapacity = \"1GiB\"\nread_latency = \"80ns\"\nread_bandwidth = \"20GB/s\"\n[[machine.nodes]]\nid = 1\ncapacity = \"1GiB\"\nread_latency = \"240ns\"\nread_bandwidth = \"5GB/s\"\n[[kernel.damon.contexts]]\nops = \"paddr\"\nregions = [{ start = 0, end = 1073741824 }]\n[[kernel.damon.contexts.schemes]]\naction = \"pageout\"\n[[workloads]]\ntype = \"synthetic\"\nname = \"app\"\n[[workloads.regions]]\nname = \"r\"\nsize = \"64KiB\"\npattern = \"uniform\"\nrate = 1000\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(bin())
        .args(["workload", "run", "--root"])
        .arg(&root)
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("kernel.damon.contexts[0].regions"), "{err}");
    assert_eq!(std::fs::read_to_string(&nr).unwrap(), "0\n");
    for (p, v) in KNOBS {
        assert_eq!(knob(&root, p), v, "{p} untouched");
    }
    assert!(!out.exists(), "nothing written");
}

/// `tiermem agent --dry-run` of `cfg` on the fake host at `root`: (exit code, stdout, stderr).
fn dry_run(root: &Path, cfg: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(bin())
        .args(["agent", "--dry-run", "--root"])
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_agent_validates_a_simulator_config_unchanged() {
    // One config language: configs/examples/user-tiering.toml runs in `tiermem sim` and,
    // as it is, validates in `tiermem agent --dry-run`; what only describes the simulated
    // run is listed, never applied.
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fake_host(&root);
    let damon = root.join("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds");
    std::fs::create_dir_all(damon.parent().unwrap()).unwrap();
    std::fs::write(&damon, "0\n").unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/examples/user-tiering.toml");
    let (code, out, err) = dry_run(&root, &example);
    assert_eq!(code, Some(0), "{err}");
    for line in [
        "simulation only, not applied: machine",
        "simulation only, not applied: workloads",
        "tiering: promote ≤ 16 MB/s",
        "dry run: nothing written",
    ] {
        assert!(out.contains(line), "{line:?} not in: {out}");
    }
    // A simulator key the host cannot take is refused by its own name; a value the
    // simulator refuses is refused by the simulator's own check, with its message.
    let bad = d.path().join("bad.toml");
    for (text, key) in [
        (
            "[kernel.ksm]\nadvisor_mode = \"scan-time\"\n",
            "kernel.ksm.advisor_mode",
        ),
        (
            "[kernel.numa]\nscan_size_mb = 0\n",
            "key `kernel.numa`: scan_size_mb",
        ),
        (
            "[kernel.numa]\nhot_threshold_ms = 0\n",
            "kernel.numa.hot_threshold_ms`: must be positive",
        ),
    ] {
        std::fs::write(&bad, format!("machine = \"small\"\n{text}")).unwrap();
        let (code, _, err) = dry_run(&root, &bad);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(key), "{key} not in: {err}");
    }
}
