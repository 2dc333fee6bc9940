//! `tiermem report heatmap|wss|access` on a simulated DAMON record, and `tiermem damon
//! import|export` of damo's kdamond configs: outputs, and bad inputs exiting with code 2.

use crate::common::{bad, ok, s, tiermem};
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/examples/damon-record.toml")
}

#[test]
fn reports_on_a_simulated_damon_record() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&tiermem(&[
        "sim",
        s(&example()),
        "--out",
        s(&run),
        "--duration",
        "4",
    ]));
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("damon.json")).unwrap()).unwrap();
    let snaps = rec[0]["snapshots"].as_array().unwrap();
    // One snapshot per 100 ms aggregation (the first at 100 ms).
    assert!((38..=40).contains(&snaps.len()), "{}", snaps.len());
    assert_eq!(rec[0]["intervals"]["aggr_us"], 100_000);

    let hm = ok(&tiermem(&["report", "heatmap", s(&run)]));
    assert_eq!(
        hm.lines().filter(|l| l.starts_with('|')).count(),
        40,
        "{hm}"
    );
    assert!(hm.contains('@'), "the hottest cell: {hm}");

    let wss = ok(&tiermem(&["report", "wss", s(&run), "--json"]));
    let wss: serde_json::Value = serde_json::from_str(&wss).unwrap();
    let median = wss["percentiles"][2][1].as_u64().unwrap();
    // The hot 32 MiB is always in the working set; DAMON's regions blur its edges.
    assert!(median >= 16 << 20, "median working set {median}");
    let text = ok(&tiermem(&[
        "report",
        "wss",
        s(&run),
        "--exclude-snapshots",
        "5",
    ]));
    assert!(
        text.contains("# avr:") && text.contains("after the first 5"),
        "{text}"
    );

    let access = ok(&tiermem(&["report", "access", s(&run), "--snapshot", "0"]));
    assert!(access.contains("snapshot 0 of"), "{access}");

    let out = dir.path().join("hm");
    ok(&tiermem(&[
        "report",
        "heatmap",
        s(&run),
        "--out",
        s(&out),
        "--no-plots",
    ]));
    let hm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("heatmap.json")).unwrap()).unwrap();
    assert_eq!(hm["counts"].as_array().unwrap().len(), 40);
    // One address range of the record: the axis keeps to it.
    let first = hm["ranges"][0][0].as_u64().unwrap() * 4096;
    let range = format!("{first:#x}-{:#x}", first + (1 << 20));
    let out2 = dir.path().join("hm2");
    ok(&tiermem(&[
        "report",
        "heatmap",
        s(&run),
        "--out",
        s(&out2),
        "--no-plots",
        "--addr-range",
        &range,
    ]));
    let hm2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("heatmap.json")).unwrap()).unwrap();
    assert!(hm2["pages"].as_u64().unwrap() <= 256, "{}", hm2["pages"]);

    // Bad input: exit 2, naming what is wrong.
    bad(&tiermem(&["report", "wss", s(dir.path())]), "no damon.json");
    bad(
        &tiermem(&["report", "access", s(&run), "--snapshot", "999"]),
        "no snapshot 999",
    );
    bad(
        &tiermem(&["report", "heatmap", s(&run), "--target", "3"]),
        "no target 3",
    );
    bad(
        &tiermem(&[
            "report",
            "heatmap",
            s(&run),
            "--addr-range",
            "0x2000-0x1000",
        ]),
        "not below the end",
    );
    bad(
        &tiermem(&["report", "heatmap", s(&run), "--addr-range", "1-2"]),
        "no monitored region lies within",
    );
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a record\"}").unwrap();
    bad(
        &tiermem(&["report", "wss", s(&junk)]),
        "expected a list of damo records",
    );
}

#[test]
fn a_long_record_is_refused_before_it_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    bad(
        &tiermem(&[
            "--max-memory",
            "64MiB",
            "sim",
            s(&example()),
            "--out",
            s(&dir.path().join("x")),
            "--duration",
            "100000",
        ]),
        "kernel.damon.contexts[0].record",
    );
}

#[test]
fn damo_configs_import_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let damo = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../tiermem-agent/src/damo_config/testdata/damo-3-3-pageout.exported.damo-3.4.3.json",
    );
    let toml = ok(&tiermem(&["damon", "import", s(&damo)]));
    assert!(toml.contains("action = \"pageout\""), "{toml}");
    let cfg = dir.path().join("agent.toml");
    std::fs::write(&cfg, &toml).unwrap();
    let json = ok(&tiermem(&["damon", "export", s(&cfg)]));
    let exported = dir.path().join("exported.json");
    std::fs::write(&exported, &json).unwrap();
    let again = ok(&tiermem(&["damon", "import", s(&exported)]));
    // Same table (the first line names the source file).
    let body = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&again), body(&toml));

    let bad_doc = dir.path().join("bad.json");
    std::fs::write(
        &bad_doc,
        r#"{"kdamonds": [{"contexts": [{"ops": "vaddr", "targets": [{"pid": 1}], "pause": true}]}]}"#,
    )
    .unwrap();
    bad(
        &tiermem(&["damon", "import", s(&bad_doc)]),
        "kdamonds[0].contexts[0].pause",
    );
    std::fs::write(&bad_doc, "not json").unwrap();
    bad(&tiermem(&["damon", "import", s(&bad_doc)]), "not JSON");
    std::fs::write(&cfg, "[numa_balancing]\nmode = \"tiering\"\n").unwrap();
    bad(&tiermem(&["damon", "export", s(&cfg)]), "no [damon] table");
}

/// configs/examples/damon-record.toml shows what its comment says: after the first seconds
/// DAMON sees the hot and the warm region apart from the idle one (most of the hot and a
/// good part of the warm mapping in regions found accessed, the idle one never), and
/// `report access` says how much it monitors.
#[test]
fn the_damon_record_example_shows_its_three_regions() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&tiermem(&["sim", s(&example()), "--out", s(&run)]));
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("damon.json")).unwrap()).unwrap();
    let snaps = rec[0]["snapshots"].as_array().unwrap();
    // The example's mappings: hot 32 MiB, warm 128 MiB, idle 256 MiB, laid out as the
    // simulator lays out a process.
    let mib = 256u64; // pages per MiB
    let starts = tiermem_core::layout::lay_out([32 * mib, 128 * mib, 256 * mib]);
    let vma = |i: usize, pages: u64| (starts[i], starts[i] + pages * 4096);
    let (hot, warm, idle) = (vma(0, 32 * mib), vma(1, 128 * mib), vma(2, 256 * mib));
    // The mean share of a mapping that lies in regions found accessed, from 2 s on.
    let share = |(a, b): (u64, u64)| -> f64 {
        let later = &snaps[20..];
        later
            .iter()
            .map(|sn| {
                let bytes: u64 = sn["regions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["nr_accesses"]["samples"].as_u64().unwrap() > 0)
                    .map(|r| {
                        let (s0, e0) = (r["start"].as_u64().unwrap(), r["end"].as_u64().unwrap());
                        e0.min(b).saturating_sub(s0.max(a))
                    })
                    .sum();
                bytes as f64 / (b - a) as f64
            })
            .sum::<f64>()
            / later.len() as f64
    };
    let (h, w, i) = (share(hot), share(warm), share(idle));
    assert!(h > 0.9, "hot: {h:.2} of it seen accessed");
    assert!(w > 0.3, "warm: {w:.2} of it seen accessed");
    assert!(i < 0.02, "idle: {i:.2} of it seen accessed");
    let access = ok(&tiermem(&["report", "access", s(&run)]));
    assert!(access.contains("GiB monitored"), "{access}");
}
