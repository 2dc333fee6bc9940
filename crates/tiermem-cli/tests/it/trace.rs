//! `tiermem trace`: import → info → replay keep the source's access counts; bad inputs
//! exit with code 2 and say where; a real program recorded under Valgrind end to end.

use crate::common::{bad, json, ok, s, tiermem};
use std::path::Path;
use std::process::{Command, Output};

/// A Lackey text with a known mix: 2000 instructions, 1500 loads, 400 stores, 100 modifies.
fn lackey_text() -> String {
    let mut t = String::from("==7== Lackey, an example Valgrind tool\n");
    for i in 0..2000u64 {
        t += &format!("I  {:08x},4\n", 0x400000 + 4 * (i % 64));
        if i < 1500 {
            t += &format!(" L {:x},8\n", 0x1fff000000u64 + (i * 64) % (64 << 12));
        }
        if i < 400 {
            t += &format!(" S {:x},4\n", 0x5000000u64 + i * 4096);
        }
        if i < 100 {
            t += &format!(" M {:x},8\n", 0x5000000u64 + i * 8);
        }
    }
    t
}
/// `tiermem trace import --format lackey TXT OUT`.
fn import_lackey(txt: &Path, out: &Path) -> Output {
    tiermem(&["trace", "import", "--format", "lackey", s(txt), s(out)])
}

/// `lackey_text()` imported with `tiermem trace import` into `dir/t.tmt`; the trace's
/// path and what the import printed.
fn imported_lackey(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let txt = dir.join("lackey.txt");
    std::fs::write(&txt, lackey_text()).unwrap();
    let tmt = dir.join("t.tmt");
    let out = ok(&import_lackey(&txt, &tmt));
    (tmt, out)
}

fn replay_config(trace: &Path, numa_balancing: u32, extra: &str) -> String {
    format!(
        "duration = \"3s\"\n\
         [machine]\npreset = \"small\"\n\
         [[machine.nodes]]\nid = 0\ncpus = 4\ncapacity = \"64MiB\"\nkind = \"dram\"\nread_latency = \"85ns\"\nread_bandwidth = \"50GB/s\"\n\
         [[machine.nodes]]\nid = 1\ncapacity = \"128MiB\"\nkind = \"cxl\"\nread_latency = \"200ns\"\nread_bandwidth = \"26.8GB/s\"\nwrite_bandwidth = \"20GB/s\"\n\
         [kernel]\nnuma_balancing = {numa_balancing}\ndemotion_enabled = true\n\
         {extra}\
         [[workloads]]\ntype = \"trace\"\nname = \"replay\"\nfile = {}\n",
        toml_str(s(trace))
    )
}

fn toml_str(v: &str) -> String {
    format!("{:?}", v)
}

#[test]
fn import_info_replay_keep_access_counts() {
    let d = tempfile::tempdir().unwrap();
    let (tmt, out) = imported_lackey(d.path());
    assert!(out.contains("-> 2000 accesses"), "{out}");
    let info = json(&ok(&tiermem(&["trace", "info", "--json", s(&tmt)])));
    assert_eq!(info["accesses"], 2000);
    assert_eq!(info["reads"], 1500);
    assert_eq!(info["writes"], 400);
    assert_eq!(info["modifies"], 100);
    assert_eq!(info["pages"], 24 + 400);
    assert_eq!(info["last_time"], 1500); // the last access follows instruction 1500
    let text = ok(&tiermem(&["trace", "info", s(&tmt)]));
    assert!(text.contains("popularity"), "{text}");
    // Replay once: the simulation sees exactly the trace's accesses, each through the
    // CPU caches; the engine's memory accesses are what left them.
    let cfg = d.path().join("replay.toml");
    std::fs::write(&cfg, replay_config(&tmt, 0, "")).unwrap();
    let sim_out = d.path().join("out");
    ok(&tiermem(&["sim", s(&cfg), "--out", s(&sim_out)]));
    let summary = json(&std::fs::read_to_string(sim_out.join("summary.json")).unwrap());
    let w = &summary["workloads"][0];
    assert_eq!(w["type"], "trace");
    assert_eq!(w["accesses"], 2000);
    assert_eq!(w["trace_accesses"], 2000);
    let c = &w["cache"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("no cache.{k}: {w}"));
    assert!(
        n("l1_hits") + n("l2_hits") + n("llc_hits") + n("misses") >= 2000,
        "{c}"
    );
    let memory = summary["accesses"].as_u64().unwrap();
    assert!(memory > 0 && memory < 2000, "{memory} memory accesses");
    // Without caches every access is a memory access.
    let off = d.path().join("replay-off.toml");
    std::fs::write(
        &off,
        replay_config(&tmt, 0, "").replace(
            "preset = \"small\"",
            "preset = \"small\"\ncaches = { enabled = false }",
        ),
    )
    .unwrap();
    ok(&tiermem(&[
        "sim",
        s(&off),
        "--out",
        s(&d.path().join("out-off")),
    ]));
    let summary_off =
        json(&std::fs::read_to_string(d.path().join("out-off/summary.json")).unwrap());
    assert_eq!(summary_off["accesses"], 2000);
    assert!(summary_off["workloads"][0].get("cache").is_none());
    // Every touched page was faulted in once: 424 pages.
    assert_eq!(summary["vmstat"]["pgfault"], 424);
    // Two processes, three loops each.
    let cfg2 = d.path().join("replay2.toml");
    std::fs::write(
        &cfg2,
        replay_config(&tmt, 0, "").replace(
            "name = \"replay\"",
            "name = \"replay\"\nprocesses = 2\nloops = 3",
        ),
    )
    .unwrap();
    ok(&tiermem(&[
        "sim",
        s(&cfg2),
        "--out",
        s(&d.path().join("out2")),
    ]));
    let summary = json(&std::fs::read_to_string(d.path().join("out2/summary.json")).unwrap());
    assert_eq!(summary["workloads"][0]["accesses"], 2 * 3 * 2000);
    assert_eq!(summary["vmstat"]["pgfault"], 2 * 424);
}

#[test]
fn heatmap_writes_the_matrix() {
    let d = tempfile::tempdir().unwrap();
    let (tmt, _) = imported_lackey(d.path());
    let hm_dir = d.path().join("hm");
    ok(&tiermem(&[
        "trace",
        "heatmap",
        s(&tmt),
        "--out",
        s(&hm_dir),
        "--time-bins",
        "10",
        "--addr-bins",
        "20",
        "--no-plots",
    ]));
    let hm = json(&std::fs::read_to_string(hm_dir.join("heatmap.json")).unwrap());
    let counts = hm["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 10);
    let total: u64 = counts
        .iter()
        .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()))
        .sum();
    assert_eq!(total, 2000);
    let results = json(&std::fs::read_to_string(hm_dir.join("results.json")).unwrap());
    assert_eq!(results["plots"][0]["type"], "heatmap");
}

#[test]
fn bad_inputs_exit_2_with_a_location() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.tmt");
    let txt = d.path().join("bad.txt");
    std::fs::write(&txt, "I  0400,4\n L 1fff,8\n L 1fff;8\n").unwrap();
    bad(&import_lackey(&txt, &out), "bad.txt: line 3:");
    assert!(!out.exists(), "a failed import leaves no partial trace");
    std::fs::write(&txt, "0x1: R 0x2\n").unwrap();
    bad(
        &tiermem(&["trace", "import", "--format", "pinatrace", s(&txt), s(&out)]),
        "truncated",
    );
    std::fs::write(&txt, [0u8; 100]).unwrap();
    bad(
        &tiermem(&["trace", "import", "--format", "champsim", s(&txt), s(&out)]),
        "byte offset 64",
    );
    std::fs::write(&txt, "[{\"snapshots\": 3}]").unwrap();
    bad(
        &tiermem(&["trace", "import", "--format", "damo", s(&txt), s(&out)]),
        "records[0].snapshots",
    );
    bad(
        &tiermem(&[
            "trace",
            "import",
            "--format",
            "lackey",
            "/nonexistent/x",
            s(&out),
        ]),
        "/nonexistent/x",
    );
    // A good trace, then damaged copies.
    std::fs::write(&txt, lackey_text()).unwrap();
    ok(&import_lackey(&txt, &out));
    let good = std::fs::read(&out).unwrap();
    let f = d.path().join("damaged.tmt");
    std::fs::write(&f, &good[..good.len() - 10]).unwrap();
    bad(&tiermem(&["trace", "info", s(&f)]), "truncated");
    let mut m = good.clone();
    m[0] = b'Z';
    std::fs::write(&f, &m).unwrap();
    bad(
        &tiermem(&["trace", "info", s(&f)]),
        "byte offset 0: wrong magic",
    );
    let mut m = good.clone();
    m[64 + 9..64 + 13].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&f, &m).unwrap();
    bad(
        &tiermem(&["trace", "info", s(&f)]),
        "byte offset 64: implausible chunk header",
    );
    let mut m = good.clone();
    m[100] ^= 0x55;
    std::fs::write(&f, &m).unwrap();
    bad(
        &tiermem(&["trace", "info", s(&f)]),
        "byte offset 77: corrupt chunk data",
    );
    // The simulator names a missing trace file, the config file and the key.
    let cfg = d.path().join("cfg.toml");
    std::fs::write(&cfg, replay_config(Path::new("/nonexistent/t.tmt"), 0, "")).unwrap();
    let run = tiermem(&["sim", s(&cfg), "--out", s(&d.path().join("o"))]);
    bad(&run, "/nonexistent/t.tmt");
    bad(&run, "cfg.toml: key `workloads[0].file`");
    std::fs::write(
        &cfg,
        replay_config(&out, 0, "").replace("name = \"replay\"", "name = \"replay\"\ncpi = -1.0"),
    )
    .unwrap();
    bad(
        &tiermem(&["sim", s(&cfg), "--out", s(&d.path().join("o"))]),
        "workloads[0].cpi",
    );
}

/// Record `tests/programs/hashsort.c` under Valgrind Lackey, import on the fly, check the
/// trace, and replay it on a 2-tier machine whose DRAM is full when the program starts:
/// with NUMA-balancing tiering (2) its hot pages are promoted and accesses get faster;
/// without (0) they stay on CXL.
#[test]
#[ignore = "slow: runs a program under valgrind (~5-20 s)"]
fn record_hashsort_under_valgrind_and_replay_with_and_without_tiering() {
    let d = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/hashsort.c");
    let exe = d.path().join("hashsort");
    let cc = Command::new("cc")
        .args(["-O1", "-o", s(&exe), s(&src)])
        .status()
        .expect("cc is needed");
    assert!(cc.success());
    let tmt = d.path().join("hashsort.tmt");
    let out = ok(&tiermem(&[
        "trace",
        "record",
        "--tool",
        "lackey",
        "--out",
        s(&tmt),
        "--",
        s(&exe),
        "3000",
    ]));
    assert!(out.contains("0 malformed"), "{out}");
    let info = json(&ok(&tiermem(&["trace", "info", "--json", s(&tmt)])));
    let accesses = info["accesses"].as_u64().unwrap();
    // 3000 keys: the table (6000 slots), keys and tmp arrays are ~94 KiB; with the stack,
    // libc and the loader the program touches well over 30 pages and makes 100k+ accesses.
    assert!(accesses > 100_000, "{info}");
    assert!(info["pages"].as_u64().unwrap() > 30, "{info}");
    assert!(info["writes"].as_u64().unwrap() > 10_000, "{info}");
    assert!(info["bytes_per_access"].as_f64().unwrap() < 4.0, "{info}");
    // A filler fills DRAM for the first 300 ms; the program starts at 100 ms and loops.
    // Its data (~94 KiB) lives in the CPU caches: promoting its pages changes little. With
    // the caches off, every access pays its node's latency and tiering speeds it up.
    let filler = "[[workloads]]\ntype = \"pmbench\"\nname = \"filler\"\nmapsize = \"63MiB\"\ninitialize = true\ncold = true\nduration = \"300ms\"\n";
    // With the caches on most accesses cost a nanosecond or two, so the program is replayed
    // with ten times its instructions between accesses (`time_scale`): the three simulated
    // seconds stay a few wall seconds.
    let run = |nb: u32, caches: &str| {
        let cfg = d.path().join(format!("nb{nb}{}.toml", caches.len()));
        let scale = if caches.is_empty() { 10.0 } else { 1.0 };
        let text = replay_config(&tmt, nb, filler)
            .replace(
                "name = \"replay\"",
                &format!("name = \"replay\"\nstart = \"100ms\"\nloops = 0\ntime_scale = {scale:?}"),
            )
            .replace(
                "preset = \"small\"",
                &format!("preset = \"small\"\n{caches}"),
            );
        std::fs::write(&cfg, text).unwrap();
        let o = d.path().join(format!("out{nb}-{}", caches.len()));
        ok(&tiermem(&["sim", s(&cfg), "--out", s(&o)]));
        json(&std::fs::read_to_string(o.join("summary.json")).unwrap())
    };
    let mean = |r: &serde_json::Value| r["workloads"][1]["mean_access_ns"].as_f64().unwrap();
    let (c0, c2) = (run(0, ""), run(2, ""));
    assert_eq!(c0["vmstat"]["pgpromote_success"], 0);
    assert!(
        c2["vmstat"]["pgpromote_success"].as_u64().unwrap() > 10,
        "{}",
        c2["vmstat"]
    );
    let (m0, m2) = (mean(&c0), mean(&c2));
    assert!(
        (m2 / m0 - 1.0).abs() < 0.1,
        "a cache-resident program barely notices tiering: {m2} vs {m0} ns"
    );
    // Each full pass replays the trace's accesses exactly.
    assert!(c0["workloads"][1]["accesses"].as_u64().unwrap() >= accesses);
    let off = "caches = { enabled = false }";
    let (u0, u2) = (run(0, off), run(2, off));
    let (m0, m2) = (mean(&u0), mean(&u2));
    assert!(
        m2 < 0.8 * m0,
        "without caches tiering should speed accesses up: {m2} vs {m0} ns"
    );
    assert!(
        u2["workloads"][1]["accesses"].as_u64().unwrap()
            > u0["workloads"][1]["accesses"].as_u64().unwrap()
    );
}

/// The same program recorded under QEMU with tiermem's plugin (the default recorder) and
/// under Valgrind Lackey: the two see the same accesses (QEMU splits a read-modify-write
/// into a load and a store, Lackey counts it once as `M`), and QEMU's trace carries its
/// provenance.
#[test]
#[ignore = "slow: runs a program under qemu-user and valgrind (~10-30 s)"]
fn qemu_and_lackey_record_the_same_accesses() {
    let d = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/programs/hashsort.c");
    let exe = d.path().join("hashsort");
    let cc = Command::new("cc")
        .args(["-O1", "-o", s(&exe), s(&src)])
        .status()
        .expect("cc is needed");
    assert!(cc.success());
    let info = |tool: &str| {
        let tmt = d.path().join(format!("{tool}.tmt"));
        ok(&tiermem(&[
            "trace",
            "record",
            "--tool",
            tool,
            "--out",
            s(&tmt),
            "--",
            s(&exe),
            "3000",
        ]));
        json(&ok(&tiermem(&["trace", "info", "--json", s(&tmt)])))
    };
    let (q, l) = (info("qemu"), info("lackey"));
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap() as f64;
    let lackey_ops = n(&l, "reads") + n(&l, "writes") + 2.0 * n(&l, "modifies");
    let qemu_ops = n(&q, "reads") + n(&q, "writes");
    assert!(
        (qemu_ops / lackey_ops - 1.0).abs() < 0.15,
        "qemu {qemu_ops} against lackey {lackey_ops} loads and stores\n{q}\n{l}"
    );
    assert!((n(&q, "writes") / (n(&l, "writes") + n(&l, "modifies")) - 1.0).abs() < 0.15);
    let source = q["source"].as_str().unwrap();
    assert!(
        source.starts_with("qemu: ") && source.contains("kernel") && source.contains("capture"),
        "{source}"
    );
    // A #! script is recorded as its interpreter running it (QEMU loads ELF files only).
    let script = d.path().join("run.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ni=0; while [ $i -lt 200 ]; do i=$((i+1)); done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmt = d.path().join("script.tmt");
    ok(&tiermem(&[
        "trace",
        "record",
        "--out",
        s(&tmt),
        "--",
        s(&script),
    ]));
    let sh = json(&ok(&tiermem(&["trace", "info", "--json", s(&tmt)])));
    assert!(sh["accesses"].as_u64().unwrap() > 10_000, "{sh}");
    assert!(sh["source"].as_str().unwrap().contains("run.sh"), "{sh}");
}

/// A trace that cannot be read to its end, or that gives no accesses, fails the replay
/// with exit code 2 and the file (and offset), not a run of zero accesses with exit 0.
#[test]
fn corrupt_or_empty_traces_fail_the_replay() {
    let d = tempfile::tempdir().unwrap();
    let (tmt, _) = imported_lackey(d.path());
    // Flip bytes in the middle of the first chunk (its zstd frame has a checksum).
    let mut bytes = std::fs::read(&tmt).unwrap();
    let mid = bytes.len() / 3;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    let bad_tmt = d.path().join("corrupt.tmt");
    std::fs::write(&bad_tmt, &bytes).unwrap();
    let cfg = d.path().join("replay.toml");
    std::fs::write(&cfg, replay_config(&bad_tmt, 0, "")).unwrap();
    bad(
        &tiermem(&["sim", s(&cfg), "--out", s(&d.path().join("o1"))]),
        "corrupt.tmt",
    );
    // Truncated: the footer is gone.
    std::fs::write(&bad_tmt, &bytes[..bytes.len() / 2]).unwrap();
    bad(
        &tiermem(&["sim", s(&cfg), "--out", s(&d.path().join("o2"))]),
        "corrupt.tmt",
    );
    // An empty trace replays nothing: an error, not a silent zero.
    let empty_txt = d.path().join("empty.txt");
    std::fs::write(&empty_txt, "==7== Lackey\n").unwrap();
    let empty = d.path().join("empty.tmt");
    ok(&import_lackey(&empty_txt, &empty));
    std::fs::write(&cfg, replay_config(&empty, 0, "")).unwrap();
    bad(
        &tiermem(&["sim", s(&cfg), "--out", s(&d.path().join("o3"))]),
        "no accesses",
    );
}

/// `trace import` never destroys its input or writes through a link at its output.
#[test]
fn import_refuses_its_input_as_output_and_replaces_links() {
    let d = tempfile::tempdir().unwrap();
    let txt = d.path().join("lackey.txt");
    let text = lackey_text();
    std::fs::write(&txt, &text).unwrap();
    bad(&import_lackey(&txt, &txt), "the output is the input");
    assert_eq!(std::fs::read_to_string(&txt).unwrap(), text, "input intact");
    let link = d.path().join("link.tmt");
    std::os::unix::fs::symlink(&txt, &link).unwrap();
    bad(&import_lackey(&txt, &link), "the output is the input");
    // A link to another file is replaced by the trace; its target is untouched.
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link2 = d.path().join("out.tmt");
    std::os::unix::fs::symlink(&victim, &link2).unwrap();
    ok(&import_lackey(&txt, &link2));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(!std::fs::symlink_metadata(&link2)
        .unwrap()
        .file_type()
        .is_symlink());
    // A failed import leaves no temporary file behind.
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !names.iter().any(|n| n.to_string_lossy().ends_with(".tmp")),
        "{names:?}"
    );
}

/// Recording a program that does not exist (or is not executable) is bad input, before
/// Valgrind runs, and leaves no trace file.
#[test]
fn recording_a_missing_program_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("t.tmt");
    let o = tiermem(&[
        "trace",
        "record",
        "--out",
        s(&out),
        "--",
        "./no-such-program",
    ]);
    bad(&o, "cannot record ./no-such-program");
    let o = tiermem(&[
        "trace",
        "record",
        "--out",
        s(&out),
        "--",
        "no-such-program-on-path",
    ]);
    bad(&o, "no such program on PATH");
    let o = tiermem(&["trace", "record", "--out", s(&out), "--", s(d.path())]);
    bad(&o, "not an executable file");
    // What QEMU user mode cannot load is refused before it starts.
    use std::os::unix::fs::PermissionsExt;
    let exe = |name: &str, bytes: &[u8]| {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    let text = exe("notes.txt", b"hello\n");
    let o = tiermem(&["trace", "record", "--out", s(&out), "--", s(&text)]);
    bad(&o, "neither an ELF executable nor a #! script");
    let mut arm = b"\x7fELF\x02\x01\x01".to_vec();
    arm.resize(18, 0);
    arm.extend_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    let arm = exe("arm", &arm);
    let o = tiermem(&["trace", "record", "--out", s(&out), "--", s(&arm)]);
    bad(&o, "machine 183 (64-bit), not x86-64");
    let script = exe("run.sh", b"#!/no/such/shell\n");
    let o = tiermem(&["trace", "record", "--out", s(&out), "--", s(&script)]);
    bad(&o, "cannot record /no/such/shell");
    assert!(!out.exists());
}

/// A soft-dirty profile of 3 intervals: 64 pages at the first scan, then 16 written pages
/// in each of two one-second intervals.
fn write_profile(path: &Path) {
    use tiermem_trace::profile::*;
    let header = ProfileHeader {
        version: VERSION,
        page_size: PAGE_SIZE,
        arch: "x86_64".into(),
        interval_ns: 1_000_000_000,
        source: "soft_dirty".into(),
        command: vec!["prog".into()],
        pid: 9,
        host: "h".into(),
        kernel: "6.12.117".into(),
        started_unix_s: 0,
        nodes: 2,
    };
    let f = std::fs::File::create(path).unwrap();
    let mut w = ProfileWriter::new(f, &header, "p").unwrap();
    let iv = |end_ns, accessed| Interval {
        end_ns,
        cpu_ns: end_ns,
        threads: 1,
        rss_pages: 64,
        node_pages: vec![48, 16],
        accessed,
    };
    w.interval(&iv(0, vec![(0x1000, 0x1040)])).unwrap();
    w.interval(&iv(1_000_000_000, vec![(0x1000, 0x1010)]))
        .unwrap();
    w.interval(&iv(2_000_000_000, vec![(0x1000, 0x1008), (0x1020, 0x1028)]))
        .unwrap();
    w.finish(&ProfileEnd::default()).unwrap();
}

#[test]
fn a_profile_is_summarised_and_replayed_and_a_cut_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.tmprof");
    write_profile(&p);
    let info = json(&ok(&tiermem(&["trace", "info", "--json", s(&p)])));
    assert_eq!(info["intervals"], 3);
    assert_eq!(info["touched_pages"], 64);
    assert_eq!(info["mean_accessed_pages"], 16.0);
    assert!(ok(&tiermem(&["trace", "info", s(&p)])).contains("page-activity profile"));
    let t = dir.path().join("p.tmt");
    ok(&tiermem(&[
        "trace",
        "import",
        "--format",
        "profile",
        s(&p),
        s(&t),
    ]));
    let ti = json(&ok(&tiermem(&["trace", "info", "--json", s(&t)])));
    // Soft-dirty profiles see writes: every replayed access is a store.
    assert_eq!(
        (ti["accesses"].as_u64(), ti["writes"].as_u64()),
        (Some(96), Some(96))
    );
    let t2 = dir.path().join("p2.tmt");
    ok(&tiermem(&[
        "trace",
        "import",
        "--format",
        "profile",
        "--accesses-per-page",
        "3",
        s(&p),
        s(&t2),
    ]));
    assert_eq!(
        json(&ok(&tiermem(&["trace", "info", "--json", s(&t2)])))["accesses"],
        288
    );
    // Cut short: no end frame.
    let bytes = std::fs::read(&p).unwrap();
    let cut = dir.path().join("cut.tmprof");
    std::fs::write(&cut, &bytes[..bytes.len() - 12]).unwrap();
    bad(&tiermem(&["trace", "info", s(&cut)]), "cut.tmprof");
    bad(
        &tiermem(&["trace", "import", "--format", "profile", s(&cut), s(&t)]),
        "cut.tmprof",
    );
    bad(&tiermem(&["trace", "profile"]), "--pid");
    bad(
        &tiermem(&["trace", "profile", "--interval", "1ms", "--", "true"]),
        "10ms",
    );
}
