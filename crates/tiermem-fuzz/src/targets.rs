//! The targets and their seeds.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tiermem_trace::champsim::{self, ChampSimOptions};
use tiermem_trace::damo::{self, DamoOptions};
use tiermem_trace::format::{self, TimeUnit, TraceReader, TraceWriter};
use tiermem_trace::lackey::{self, LackeyOptions};
use tiermem_trace::pinatrace::{self, PinOptions};
use tiermem_trace::{Kind, Record};

fn text(data: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(data).map_err(|e| format!("not UTF-8: {e}"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files under the repository as seeds (missing ones are skipped).
fn files(paths: &[&str]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .filter_map(|p| std::fs::read(repo().join(p)).ok())
        .collect()
}

/// The seeds of `target`, plus its saved regressions (`regressions/<target>/*`).
fn with_regressions(target: &str, mut seeds: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target);
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        seeds.extend(paths.iter().filter_map(|p| std::fs::read(p).ok()));
    }
    seeds
}

// --- the simulator's config ------------------------------------------------------------

/// Host memory one fuzzed config may ask for: larger ones must be refused by the estimate.
const FUZZ_MEMORY_LIMIT: u64 = 256 << 20;

/// Parse, expand presets, validate and build the simulation (not run it).
pub fn sim_config(data: &[u8]) -> Result<(), String> {
    tiermem_sim::mm::budget::set_limit(Some(FUZZ_MEMORY_LIMIT));
    let cfg =
        tiermem_sim::config_from_text(text(data)?, "fuzz.toml", &[]).map_err(|e| e.to_string())?;
    tiermem_sim::engine::Simulation::new(&cfg).map_err(|e| e.to_string())?;
    Ok(())
}

pub fn sim_config_seeds() -> Vec<Vec<u8>> {
    let mut v = files(&[
        "configs/examples/damon-reclaim.toml",
        "configs/examples/damon-reclaim-page-cache.toml",
        "configs/examples/ksm-vm-guests.toml",
        "configs/examples/promote-hot-set.toml",
        "configs/examples/spill-and-swap.toml",
        "configs/examples/stream-cxl.toml",
        "configs/examples/user-tiering.toml",
        "configs/examples/stream-weighted.toml",
        "validation/promote-default/scenario.toml",
        "validation/wi-vma/scenario.toml",
        "validation/ksm-max-sharing/scenario.toml",
        "validation/hotcold/scenario.toml",
    ]);
    v.push(b"machine = \"small\"\nduration = \"10ms\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"4MiB\"\n".to_vec());
    with_regressions("sim_config", v)
}

// --- the agent's config and plan -------------------------------------------------------

/// A two-node host (DRAM + CPU-less CXL) with the files the plan builder reads.
fn fake_host() -> &'static Path {
    static TREE: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    let t = TREE.get_or_init(|| {
        let d = tempfile::tempdir().ok()?;
        let n = "sys/devices/system/node";
        let files: &[(&str, &str)] = &[
            ("proc/sys/kernel/osrelease", "6.12.117+deb12-amd64"),
            (&format!("{n}/online"), "0-1"),
            (&format!("{n}/possible"), "0-1"),
            (&format!("{n}/has_memory"), "0-1"),
            (&format!("{n}/has_cpu"), "0"),
            (&format!("{n}/node0/cpulist"), "0-1"),
            (&format!("{n}/node1/cpulist"), ""),
            (
                &format!("{n}/node0/meminfo"),
                "Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: 524288 kB",
            ),
            (
                &format!("{n}/node1/meminfo"),
                "Node 1 MemTotal: 1048576 kB\nNode 1 MemFree: 1000000 kB",
            ),
            (&format!("{n}/node0/distance"), "10 20"),
            (&format!("{n}/node1/distance"), "20 10"),
            (
                &format!("{n}/node0/access1/initiators/read_bandwidth"),
                "20000",
            ),
            (
                &format!("{n}/node0/access1/initiators/write_bandwidth"),
                "20000",
            ),
            (
                &format!("{n}/node1/access1/initiators/read_bandwidth"),
                "5000",
            ),
            (
                &format!("{n}/node1/access1/initiators/write_bandwidth"),
                "5000",
            ),
            (
                "sys/devices/virtual/memory_tiering/memory_tier4/nodelist",
                "0",
            ),
            (
                "sys/devices/virtual/memory_tiering/memory_tier22/nodelist",
                "1",
            ),
            ("proc/sys/kernel/numa_balancing", "0"),
            (
                "proc/sys/kernel/numa_balancing_promote_rate_limit_MBps",
                "65536",
            ),
            ("proc/sys/vm/watermark_scale_factor", "10"),
            ("sys/kernel/mm/numa/demotion_enabled", "false"),
            (
                "sys/kernel/debug/sched/numa_balancing/hot_threshold_ms",
                "1000",
            ),
            (
                "sys/kernel/debug/sched/numa_balancing/scan_delay_ms",
                "1000",
            ),
            ("sys/kernel/mm/mempolicy/weighted_interleave/node0", "1"),
            ("sys/kernel/mm/mempolicy/weighted_interleave/node1", "1"),
            ("sys/kernel/mm/ksm/run", "0"),
            ("sys/kernel/mm/ksm/merge_across_nodes", "1"),
            ("sys/kernel/mm/ksm/pages_to_scan", "100"),
            ("sys/kernel/mm/ksm/pages_shared", "0"),
            ("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0"),
            ("sys/module/damon_reclaim/parameters/enabled", "N"),
            ("sys/module/damon_reclaim/parameters/min_age", "120000000"),
            ("sys/module/damon_lru_sort/parameters/enabled", "N"),
            ("sys/fs/cgroup/app.slice/cgroup.procs", "300"),
            ("sys/fs/cgroup/app.slice/memory.reclaim", ""),
            ("proc/300/comm", "app"),
            ("proc/vmstat", "pgpromote_success 0"),
            (
                "proc/self/status",
                "Name:\ttiermem\nCapEff:\t000001ffffffffff",
            ),
        ];
        for (p, v) in files {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent()?).ok()?;
            std::fs::write(f, format!("{v}\n")).ok()?;
        }
        Some(d)
    });
    t.as_ref().map_or(Path::new("/nonexistent"), |d| d.path())
}

/// Parse the agent's config and build its plan against a fake host (reads only; the
/// bandwidth probe, which allocates and measures, is not run).
pub fn agent_plan(data: &[u8]) -> Result<(), String> {
    use tiermem_agent::config::{AgentConfig, WeightSource};
    let cfg = AgentConfig::from_toml_str(text(data)?, "fuzz.toml").map_err(|e| e.to_string())?;
    if cfg
        .weighted_interleave
        .as_ref()
        .is_some_and(|w| w.source == WeightSource::Probe)
    {
        return Err("the bandwidth probe is not fuzzed".into());
    }
    let fs = tiermem_agent::fs::HostFs::new(fake_host());
    let host = tiermem_agent::host::read_host(&fs).map_err(|e| e.to_string())?;
    tiermem_agent::plan::build_plan(&cfg, &fs, &host).map_err(|e| e.to_string())?;
    Ok(())
}

pub fn agent_plan_seeds() -> Vec<Vec<u8>> {
    let mut v = files(&["configs/agent/example.toml"]);
    v.push(b"[numa_balancing]\nmode = \"tiering\"\ndemotion_enabled = true\nwatermark_scale_factor = 200\n[ksm]\nrun = 1\npages_to_scan = 500\n".to_vec());
    v.push(b"[weighted_interleave]\nsource = \"given\"\nweights = { node0 = 3, node1 = 1 }\n[damon_reclaim]\nmin_age = 5000000\nenabled = true\n".to_vec());
    v.push(b"[numa_balancing]\nmode = \"disabled\"\n[tiering]\ntargets = { names = [\"app\"], cgroups = [\"app.slice\"] }\n[reclaim]\ncgroups = [{ path = \"/sys/fs/cgroup/app.slice\", bytes = \"64MiB\", interval = \"10s\" }]\n".to_vec());
    with_regressions("agent_plan", v)
}

// --- trace decoders ----------------------------------------------------------------------

fn sink(unit: TimeUnit) -> Result<TraceWriter<Vec<u8>>, String> {
    TraceWriter::new(Vec::new(), unit, "fuzz").map_err(|e| e.to_string())
}

pub fn lackey(data: &[u8]) -> Result<(), String> {
    for lenient in [false, true] {
        let mut w = sink(TimeUnit::Instructions)?;
        let opts = LackeyOptions {
            ifetch: true,
            lenient,
        };
        lackey::import(data, "fuzz", &mut w, opts).map_err(|e| e.to_string())?;
        w.finish().map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub fn lackey_seeds() -> Vec<Vec<u8>> {
    with_regressions(
        "lackey",
        vec![
            b"==1== Lackey\nI  04014073,3\n L 1fff000668,8\n S 04a2b010,4\n M 1fff0006a0,16\n"
                .to_vec(),
            b"I  0108d0e0,2\nI  0108d0e2,5\n L 0108f3a8,8\n".to_vec(),
        ],
    )
}

pub fn pinatrace(data: &[u8]) -> Result<(), String> {
    for lenient in [false, true] {
        let mut w = sink(TimeUnit::Instructions)?;
        pinatrace::import(data, "fuzz", &mut w, PinOptions { size: 8, lenient })
            .map_err(|e| e.to_string())?;
        w.finish().map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub fn pinatrace_seeds() -> Vec<Vec<u8>> {
    with_regressions(
        "pinatrace",
        vec![
            b"0x7f5a1c2d: R 0x7ffd1000\n0x7f5a1c2d: W 0x7ffd1000\n0x40: W 0x601040\n#eof\n"
                .to_vec(),
        ],
    )
}

pub fn champsim(data: &[u8]) -> Result<(), String> {
    for record_size in [64, 65] {
        let mut w = sink(TimeUnit::Instructions)?;
        let opts = ChampSimOptions {
            record_size,
            size: 8,
        };
        champsim::import(data, "fuzz", &mut w, opts).map_err(|e| e.to_string())?;
        w.finish().map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub fn champsim_seeds() -> Vec<Vec<u8>> {
    let mut rec = vec![0u8; 128];
    rec[16..24].copy_from_slice(&0x7000u64.to_le_bytes());
    rec[32..40].copy_from_slice(&0x8000u64.to_le_bytes());
    rec[64 + 40..64 + 48].copy_from_slice(&0x9000u64.to_le_bytes());
    with_regressions("champsim", vec![rec])
}

pub fn qemu(data: &[u8]) -> Result<(), String> {
    let mut w = sink(tiermem_trace::qemu::TIME_UNIT)?;
    tiermem_trace::qemu::import(data, "fuzz", &mut w).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    Ok(())
}

/// Two threads' blocks as the plugin writes them.
pub fn qemu_seeds() -> Vec<Vec<u8>> {
    let block = |vcpu: u32, words: &[u64]| {
        let mut b = b"TMQ2".to_vec();
        b.extend_from_slice(&vcpu.to_le_bytes());
        b.extend_from_slice(&(words.len() as u32).to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    };
    // Accesses (address | gap << 48 | size shift << 56 | store << 60), a time word (bit 61)
    // and an address word (bit 62).
    let mut s = block(
        0,
        &[0x1000 | 3 << 48 | 3 << 56, 1 << 61 | 5000, 0x2000 | 1 << 60],
    );
    s.extend(block(1, &[1 << 62 | 0xff_0000_0000_1000, 2 << 56]));
    with_regressions("qemu", vec![s])
}

pub fn damo(data: &[u8]) -> Result<(), String> {
    let mut w = sink(TimeUnit::Ns)?;
    let opts = DamoOptions {
        max_accesses: 1 << 20,
        ..DamoOptions::default()
    };
    damo::import(data, "fuzz", &mut w, opts).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    Ok(())
}

pub fn damo_seeds() -> Vec<Vec<u8>> {
    let doc = br#"[{"target_id": 0, "intervals": {"sample": "5 ms", "aggr": "100 ms"},
      "snapshots": [{"start_time": "0", "end_time": "100000000",
        "regions": [{"start": "4096", "end": "65536", "nr_accesses": {"samples": 3, "percent": null}, "age": {"usec": null, "aggr_intervals": 1}}]}]}]"#.to_vec();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let zdoc = std::io::Write::write_all(&mut z, &doc)
        .ok()
        .and_then(|_| z.finish().ok());
    let mut v = vec![doc];
    v.extend(zdoc);
    with_regressions("damo", v)
}

/// damo kdamond configs: whatever imports must export, import back to the same table, and
/// print TOML the agent parses to the same table.
#[allow(
    clippy::panic,
    reason = "a broken round trip is the finding this target reports"
)]
pub fn damo_config(data: &[u8]) -> Result<(), String> {
    use tiermem_agent::damo_config::{export, import, to_toml};
    let doc: serde_json::Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let table = import(&doc, None, None).map_err(|e| e.to_string())?;
    let Ok(exported) = export(&table) else {
        return Ok(()); // only names/cgroups targets refuse, and import makes pids
    };
    let back = import(&exported, None, None)
        .unwrap_or_else(|e| panic!("the export does not import: {e}\n{exported}"));
    assert_eq!(back, table, "export → import changed the table");
    // The agent may refuse the table (its own checks); it must not read it differently.
    if let Ok(cfg) = tiermem_agent::config::AgentConfig::from_toml_str(&to_toml(&table), "fuzz") {
        assert_eq!(cfg.damon.as_ref(), Some(&table), "TOML changed the table");
    }
    Ok(())
}

pub fn damo_config_seeds() -> Vec<Vec<u8>> {
    let dir = "crates/tiermem-agent/src/damo_config/testdata";
    with_regressions(
        "damo_config",
        files(&[
            &format!("{dir}/damo-3-3-pageout.exported.damo-3.4.3.json"),
            &format!("{dir}/damo-3-3-paddr.exported.damo-3.4.3.json"),
            &format!("{dir}/damo-2-4.exported.damo-3.4.3.json"),
        ]),
    )
}

/// DAMON records through the reports: parse, then every report of every target.
pub fn damon_report(data: &[u8]) -> Result<(), String> {
    use tiermem_trace::report;
    let doc = damo::read_document(data, "fuzz").map_err(|e| e.to_string())?;
    let recs = damo::parse_records(&doc, "fuzz", 5000, 100_000).map_err(|e| e.to_string())?;
    for r in &recs {
        if let Ok(hm) = report::heatmap(r, "fuzz", (7, 13), false, None) {
            let _ = report::render_heatmap(&hm);
        }
    }
    let _ = report::render_wss(&report::wss(&recs, 1, 1, 2, &[0, 50, 100]));
    let _ = report::render_access(&recs, -1);
    Ok(())
}

pub fn damon_report_seeds() -> Vec<Vec<u8>> {
    let mut v = damo_seeds();
    v.extend(with_regressions("damon_report", Vec::new()));
    v
}

/// The binary reader: read every record; a trace that reads to its end must have the
/// footer's count.
pub fn trace_reader(data: &[u8]) -> Result<(), String> {
    let mut c = std::io::Cursor::new(data);
    let footer = format::read_footer(&mut c, "fuzz").ok().map(|(_, f)| f);
    let mut r = TraceReader::new(std::io::Cursor::new(data), "fuzz").map_err(|e| e.to_string())?;
    let mut n = 0u64;
    while r.next_record().map_err(|e| e.to_string())?.is_some() {
        n += 1;
    }
    if let Some(f) = footer {
        // A broken invariant, not bad input: fail the fuzzer as a crash does.
        assert_eq!(
            f.records, n,
            "a trace that reads to its end has the footer's count"
        );
    }
    Ok(())
}

pub fn trace_reader_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (n, stride) in [(1u64, 0u64), (5000, 4160)] {
        let mut buf = Vec::new();
        if let Ok(mut w) = TraceWriter::new(&mut buf, TimeUnit::Instructions, "fuzz") {
            for i in 0..n {
                let rec = Record {
                    time: i,
                    thread: (i % 2) as u32,
                    addr: 0x5000 + i * stride,
                    size: [1, 8, 3, 64][i as usize % 4],
                    kind: [Kind::Read, Kind::Write, Kind::Modify][i as usize % 3],
                };
                if w.push(&rec).is_err() {
                    break;
                }
            }
            let _ = w.finish();
        }
        out.push(buf);
    }
    with_regressions("trace_reader", out)
}
