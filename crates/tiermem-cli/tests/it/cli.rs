//! CLI behaviour: bad input exits with code 2 and names the file and key; good runs write
//! their outputs; same seed, same summary.json bytes.

use crate::common::{bad, json, ok, s, tiermem};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const GOOD: &str = "machine = \"small\"\nduration = \"200ms\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"64MiB\"\npattern = \"normal_ih\"\n";

fn sim(cfg: &Path, out: &Path) -> std::process::Output {
    Command::new(bin())
        .arg("sim")
        .arg(cfg)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn assert_bad(text: &str, key: &str) {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(d.path(), "bad.toml", text);
    let o = sim(&cfg, &d.path().join("out"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("bad.toml"), "file not named: {err}");
    assert!(err.contains(key), "key {key} not named: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn unknown_key_is_exit_2() {
    assert_bad(&GOOD.replace("pattern", "patern"), "workloads[0]");
    assert_bad(&format!("{GOOD}\n[kernel]\nswapiness = 60\n"), "kernel");
}

#[test]
fn wrong_unit_is_exit_2() {
    assert_bad(
        &GOOD.replace("\"64MiB\"", "\"64 furlongs\""),
        "workloads[0].mapsize",
    );
    assert_bad(&GOOD.replace("\"200ms\"", "200"), "duration");
}

#[test]
fn missing_node_is_exit_2() {
    assert_bad(
        &format!("{GOOD}cpu_nodes = [9]\n"),
        "workloads[0].cpu_nodes[0]",
    );
    assert_bad(
        &format!("{GOOD}policy = {{ mode = \"bind\", nodes = [4] }}\n"),
        "workloads[0].policy",
    );
}

#[test]
fn negative_size_is_exit_2() {
    assert_bad(&GOOD.replace("\"64MiB\"", "-4096"), "workloads[0].mapsize");
    assert_bad("[machine]\npreset = \"small\"\n[[machine.nodes]]\nid = 0\ncpus = 1\ncapacity = -1\nread_latency = \"80ns\"\nread_bandwidth = \"10GB/s\"\n", "machine.nodes[0].capacity");
}

#[test]
fn syntax_errors_and_missing_files_are_exit_2() {
    assert_bad("machine = \"small\"\n[kernel\n", "line 2");
    let o = Command::new(bin())
        .args(["sim", "/nonexistent/x.toml", "--out", "/tmp/x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(bin()).args(["sim"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(bin())
        .args(["experiment", "no-such-experiment", "--out", "/tmp/x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(bin())
        .args(["bench", "--size", "lots"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    for args in [
        &["bench", "--seed-001", "--size", "1GiB"][..],
        &["bench", "--seed-001", "--duration", "0"][..],
    ] {
        let o = Command::new(bin()).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    // A mistyped log filter is refused, not replaced by a default.
    let o = Command::new(bin())
        .args(["--log", "tiermem_agent=verbose", "presets"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--log"));
}

#[test]
fn sim_writes_outputs_and_is_deterministic() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(d.path(), "good.toml", GOOD);
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    for out in [&a, &b] {
        let o = sim(&cfg, out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let sa = std::fs::read(a.join("summary.json")).unwrap();
    assert_eq!(sa, std::fs::read(b.join("summary.json")).unwrap());
    assert_eq!(
        std::fs::read(a.join("timeline.csv")).unwrap(),
        std::fs::read(b.join("timeline.csv")).unwrap()
    );
    let s: serde_json::Value = serde_json::from_slice(&sa).unwrap();
    for k in [
        "sim_seconds",
        "accesses",
        "throughput_accesses_per_s",
        "mean_latency_ns",
        "nodes",
        "vmstat",
    ] {
        assert!(s.get(k).is_some(), "summary lacks {k}");
    }
    assert!(s["nodes"][0].get("capacity_bytes").is_some());
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("run.json")).unwrap()).unwrap();
    assert!(run["simulated_accesses_per_wall_second"].as_f64().unwrap() > 0.0);
    assert!(run["resolved_config"]["machine"]["nodes"].is_array());
    // --seed changes the run.
    let c = d.path().join("c");
    let o = Command::new(bin())
        .arg("sim")
        .arg(&cfg)
        .arg("--out")
        .arg(&c)
        .args(["--seed", "7"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_ne!(sa, std::fs::read(c.join("summary.json")).unwrap());
}

#[test]
fn experiment_list_and_file() {
    let o = Command::new(bin())
        .args(["experiment", "--list"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("loaded-latency") && s.contains("stream-placement"));
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "base.toml", GOOD);
    let exp = write(
        d.path(),
        "exp.toml",
        "name = \"wsf\"\nbase = \"base.toml\"\nmetrics = [\"accesses\"]\n[[variants]]\nname = \"a\"\nset = { \"kernel.watermark_scale_factor\" = 10 }\n\
         [[variants]]\nname = \"b\"\nset = { \"kernel.watermark_scale_factor\" = 100 }\npublished = { accesses = 1000 }\n",
    );
    let out = d.path().join("out");
    let o = Command::new(bin())
        .arg("experiment")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .arg("--no-plots")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| a |") && report.contains("accesses (published)"));
    assert!(out.join("variants/b/config.toml").exists());
    // A bad override names the variant key.
    let bad = write(d.path(), "bad.toml", "name = \"x\"\nbase = \"base.toml\"\n[[variants]]\nname = \"a\"\nset = { \"kernel.watermark_scale_factor\" = 0 }\n");
    let o = Command::new(bin())
        .arg("experiment")
        .arg(&bad)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("watermark_scale_factor"));
    // --seeds: every variant once per seed, means ± deviations; a bad list is exit 2.
    let seeded = d.path().join("seeded");
    let o = Command::new(bin())
        .arg("experiment")
        .arg(&exp)
        .args(["--no-plots", "--seeds", "1,2", "--out"])
        .arg(&seeded)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 variants × 2 seeds = 4 runs"));
    assert!(seeded.join("variants/a/seed-2/summary.json").exists());
    let report = std::fs::read_to_string(seeded.join("report.md")).unwrap();
    assert!(
        report.contains("Every variant ran with seeds 1, 2"),
        "{report}"
    );
    for bad in ["1,1", "x", "1,-2"] {
        let o = Command::new(bin())
            .arg("experiment")
            .arg(&exp)
            .args(["--no-plots", "--seeds", bad, "--out"])
            .arg(&seeded)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "--seeds {bad}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("seeds"),
            "--seeds {bad}"
        );
    }
}

#[test]
fn the_user_tiering_example_reports_its_controller() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/examples/user-tiering.toml");
    let d = tempfile::tempdir().unwrap();
    let o = sim(&example, d.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("tiering controller: promoted "))
        .unwrap_or_else(|| panic!("no controller line in: {out}"));
    assert!(line.contains("promoted 64MiB"), "{line}");
    // The whole cold region went to the CXL node (with some of the process's other idle
    // pages: heap, stacks).
    let csv = std::fs::read_to_string(d.path().join("timeline.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let last: Vec<&str> = csv.lines().last().unwrap().split(',').collect();
    let col = |name: &str| last[head.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("app.cold.N1"), "65536", "{line}");
    assert_eq!(col("app.cold.N0"), "0", "{line}");
}

/// A PNG file's signature.
fn is_png(p: &std::path::Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

#[test]
fn a_sweep_runs_its_grid_natively_and_draws_its_plots() {
    // No Python anywhere on the PATH: the CLI must not need it.
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "base.toml", GOOD);
    let file = write(
        d.path(),
        "sweep.toml",
        "name = \"wsf\"\nbase = \"base.toml\"\nmetrics = [\"accesses\"]\n\
         [grid]\n\"kernel.watermark_scale_factor\" = [10, 100]\nseed = [1, 2]\n\
         [[plots]]\nfile = \"acc.png\"\ntype = \"line\"\nx = \"kernel.watermark_scale_factor\"\ny = \"accesses\"\ngroup = \"seed\"\n",
    );
    let out = d.path().join("out");
    let o = Command::new(bin())
        .args(["sweep"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .env("PATH", d.path().join("no-bin"))
        .output()
        .unwrap();
    let stdout = ok(&o);
    assert!(stdout.contains("4 points of wsf"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0], "point,kernel.watermark_scale_factor,seed,accesses",
        "the grid's paths in file order, then the metrics"
    );
    assert_eq!(lines.len(), 5);
    assert!(
        lines[2].starts_with("1,10,2,"),
        "the last path varies fastest: {csv}"
    );
    let results = json(&std::fs::read_to_string(out.join("results.json")).unwrap());
    assert_eq!(results["variants"].as_array().unwrap().len(), 4);
    assert_eq!(results["variants"][3]["labels"]["seed"], 2);
    assert!(out.join("points/0003/summary.json").exists());
    assert!(out.join("points/0003/timeline.csv").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("points/0001/overrides.toml")).unwrap(),
        "\"kernel.watermark_scale_factor\" = 10\n\"seed\" = 2\n"
    );
    assert!(
        is_png(&out.join("acc.png")),
        "the plot is drawn without Python"
    );
    // Same sweep, same numbers (the points are independent runs).
    let again = d.path().join("again");
    ok(&tiermem(&[
        "sweep",
        s(&file),
        "--out",
        s(&again),
        "--no-plots",
        "--workers",
        "1",
    ]));
    assert_eq!(
        std::fs::read_to_string(again.join("results.csv")).unwrap(),
        csv
    );
    assert!(!again.join("acc.png").exists());
}

#[test]
fn bad_sweeps_are_input_errors() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "base.toml", GOOD);
    let file = write(
        d.path(),
        "s.toml",
        "base = \"base.toml\"\n[grid]\nseed = [1]\n",
    );
    let out = d.path().join("out");
    bad(
        &tiermem(&["sweep", s(&file), "--out", s(&out), "--engine", "dask"]),
        "python3 -m tiermem.sweeps",
    );
    // Unknown engines are rejected by the argument parser (exit 2).
    let o = tiermem(&["sweep", s(&file), "--out", s(&out), "--engine", "ray"]);
    assert_eq!(o.status.code(), Some(2));
    let nogrid = write(d.path(), "n.toml", "base = \"base.toml\"\n");
    bad(&tiermem(&["sweep", s(&nogrid), "--out", s(&out)]), "grid");
    let badpoint = write(
        d.path(),
        "p.toml",
        "base = \"base.toml\"\n[grid]\n\"kernel.watermark_scale_factor\" = [10, 0]\n",
    );
    bad(
        &tiermem(&["sweep", s(&badpoint), "--out", s(&out)]),
        "sweep point 1: kernel.watermark_scale_factor=0",
    );
}

#[test]
fn plot_draws_an_output_directory_and_refuses_a_missing_one() {
    let d = tempfile::tempdir().unwrap();
    bad(&tiermem(&["plot", s(d.path())]), "results.json");
    std::fs::write(
        d.path().join("results.json"),
        r#"{"variants": [{"name": "a", "metrics": {"x": 1}}, {"name": "b", "metrics": {"x": 3}}],
            "plots": [{"file": "x.png", "type": "bar", "y": "x"},
                      {"file": "x.svg", "type": "bar", "y": "x"},
                      {"file": "../escape.png", "type": "bar", "y": "x"},
                      {"file": "none.png", "type": "bar", "y": "nope"}]}"#,
    )
    .unwrap();
    let o = tiermem(&["plot", s(d.path())]);
    let stdout = ok(&o);
    assert!(stdout.contains("wrote 2 plot(s)"), "{stdout}");
    assert!(is_png(&d.path().join("x.png")));
    let svg = std::fs::read_to_string(d.path().join("x.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("outside") && err.contains("no variant has metric"),
        "{err}"
    );
    assert!(!d.path().join("../escape.png").exists());
}

#[test]
fn tune_needs_a_weighted_interleave_policy_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(d.path(), "t.toml", GOOD);
    let o = Command::new(bin()).arg("tune").arg(&cfg).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("weighted_interleave"), "{err}");
    assert_bad(
        "machine = \"small\"\n[kernel.weighted_interleave]\nweights = [0, 1]\n",
        "kernel.weighted_interleave.weights[0]",
    );
}

#[test]
fn agent_bad_config_is_exit_2_before_touching_the_host() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(
        d.path(),
        "agent.toml",
        "[numa_balancing]\nmode = \"tiering\"\n[tiering]\ntargets = { pids = [1] }\n",
    );
    let state = d.path().join("agent.state");
    let o = Command::new(bin())
        .args(["agent", "--config"])
        .arg(&cfg)
        .arg("--state-file")
        .arg(&state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("agent.toml") && err.contains("`tiering`"),
        "{err}"
    );
    assert!(!state.exists(), "nothing recorded for a refused config");
    // --restore with no state file has nothing to do.
    let o = Command::new(bin())
        .args(["agent", "--restore", "--state-file"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(o.status.success());
    // exec needs a command.
    let o = Command::new(bin())
        .args(["exec", "--ksm"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Configs that would crash or exhaust the host are refused up front (exit 2, file, key,
/// the estimate and the limit), not aborted on an allocation or an assertion.
#[test]
fn configs_too_large_for_the_host_are_refused_with_the_estimate() {
    // 17 workloads of 4096 processes: more processes than the simulator can number.
    let mut many = String::from("machine = \"small\"\nduration = \"10ms\"\n");
    for _ in 0..17 {
        many.push_str("[[workloads]]\ntype = \"pmbench\"\nmapsize = \"4KiB\"\nprocesses = 4096\n");
    }
    assert_bad(&many, "processes");
    // 64 processes of 1 TiB each: 2 GiB of page tables each, over a 1 GiB limit.
    let d = tempfile::tempdir().unwrap();
    let cfg = write(
        d.path(),
        "huge.toml",
        "machine = \"small\"\nduration = \"10ms\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"1TiB\"\nprocesses = 64\n",
    );
    let o = Command::new(bin())
        .args(["--max-memory", "1GiB", "sim"])
        .arg(&cfg)
        .arg("--out")
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("huge.toml")
            && err.contains("workloads")
            && err.contains("over the limit of 1.0 GiB"),
        "{err}"
    );
    // exec with a node id that would expand to billions of ids.
    let o = Command::new(bin())
        .args(["exec", "--nodes", "0-4000000000", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("out of range"), "{err}");
}

#[test]
fn a_reader_that_stops_early_does_not_make_a_command_panic() {
    // `tiermem presets | head -0`: the reader is gone before the first line is written.
    use std::process::Stdio;
    let mut child = Command::new(bin())
        .arg("presets")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(o.status.code(), Some(101), "{err}");
}

#[test]
fn a_preset_shows_its_tiers_demotion_targets_and_zonelists_and_stays_a_valid_file() {
    let o = Command::new(bin())
        .args(["presets", "dram-pmem-2s"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("node 0: adistance 576, memory_tier4, top tier; demotion to 2 (allowed: 2 3); zonelist 0 2 1 3"),
        "{text}"
    );
    assert!(text.contains("node 2: adistance 5317, memory_tier41; demotion to none"));
    let m: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(m["machine"]["name"].as_str(), Some("dram-pmem-2s"));
}

/// `tiermem presets NAME` is offered "to copy and edit": its output, as it is, is a config
/// `tiermem sim` runs, for every preset.
#[test]
fn every_preset_printed_is_a_config_sim_runs() {
    let d = tempfile::tempdir().unwrap();
    let list = Command::new(bin()).arg("presets").output().unwrap();
    let names: Vec<String> = String::from_utf8(list.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        let o = Command::new(bin())
            .args(["presets", &name])
            .output()
            .unwrap();
        assert!(o.status.success());
        let cfg = write(
            d.path(),
            &format!("{name}.toml"),
            &String::from_utf8(o.stdout).unwrap(),
        );
        let o = Command::new(bin())
            .arg("sim")
            .arg(&cfg)
            .args(["--duration", "200ms", "--out"])
            .arg(d.path().join(&name))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `--duration` takes what config files take (`2s`, `500ms`) or bare seconds; zero and
/// negative values are refused as bad input, not read as flags.
#[test]
fn durations_on_the_command_line_take_units_and_refuse_negatives() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(
        d.path(),
        "c.toml",
        "machine = \"small\"\nduration = \"10s\"\n[[workloads]]\ntype = \"pmbench\"\nmapsize = \"16MiB\"\n",
    );
    for (arg, secs) in [("150ms", "0.150"), ("0.2", "0.200"), ("1s", "1.000")] {
        let out = d.path().join(arg);
        let o = Command::new(bin())
            .arg("sim")
            .arg(&cfg)
            .args(["--duration", arg, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{arg}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            text.contains(&format!("simulated {secs} s")),
            "{arg}: {text}"
        );
    }
    for bad in ["-1", "0", "2 parsecs", "-2s"] {
        let o = Command::new(bin())
            .arg("sim")
            .arg(&cfg)
            .args(["--duration", bad, "--out"])
            .arg(d.path().join("x"))
            .output()
            .unwrap();
        crate::common::bad(&o, "--duration");
    }
}

/// deploy/install.sh, followed as its header says (staged with DESTDIR): everything the
/// unit and the docs point to is installed, and the installed config is a valid agent config.
#[test]
fn the_install_steps_install_what_the_unit_needs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dest = tempfile::tempdir().unwrap();
    let o = Command::new("sh")
        .arg("deploy/install.sh")
        .arg(bin())
        .env("DESTDIR", dest.path())
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let unit =
        std::fs::read_to_string(dest.path().join("etc/systemd/system/tiermem-agent.service"))
            .unwrap();
    // Every absolute path the unit names (binary, config, documentation) was installed.
    for word in unit.split(|c: char| c.is_whitespace() || c == '=') {
        let path = word.trim_start_matches("-").trim_start_matches("file://");
        if path.starts_with("/usr/") || path.starts_with("/etc/") {
            assert!(
                dest.path().join(&path[1..]).exists(),
                "the unit names {path}, which install.sh does not install"
            );
        }
    }
    let cfg = std::fs::read_to_string(dest.path().join("etc/tiermem/agent.toml")).unwrap();
    tiermem_agent::config::AgentConfig::from_toml_str(&cfg, "agent.toml").unwrap();
    // A second run keeps an edited config.
    std::fs::write(dest.path().join("etc/tiermem/agent.toml"), "# mine\n").unwrap();
    let o = Command::new("sh")
        .arg("deploy/install.sh")
        .arg(bin())
        .env("DESTDIR", dest.path())
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(dest.path().join("etc/tiermem/agent.toml")).unwrap(),
        "# mine\n"
    );
}

/// deploy/kubernetes/tiermem-agent.yaml: its ConfigMap holds a valid agent config whose
/// state file lives on the host mount, the init container restores with the same config
/// before the agent starts, and the pod has what the agent needs (privileged, host PIDs).
#[test]
fn the_daemonset_restores_first_and_keeps_its_state_on_the_host() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/tiermem-agent.yaml"),
    )
    .unwrap();
    // The ConfigMap's agent.toml: the indented block after `agent.toml: |`.
    let start = text.find("agent.toml: |\n").unwrap() + "agent.toml: |\n".len();
    let cfg: String = text[start..]
        .lines()
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    let c =
        tiermem_agent::config::AgentConfig::from_toml_str(&cfg, "configmap agent.toml").unwrap();
    let state_dir = c.state_file.parent().unwrap().to_str().unwrap().to_string();
    assert!(
        text.contains(&format!("mountPath: {state_dir} ")),
        "the state file's directory {state_dir} must be a host mount"
    );
    assert!(
        text.contains(&format!("path: {state_dir},")),
        "a hostPath volume at {state_dir}"
    );
    let init = text.find("initContainers:").unwrap();
    let main = text.find("\n      containers:").unwrap();
    assert!(init < main);
    let restore = &text[init..main];
    assert!(restore.contains("\"agent\", \"--config\", \"/etc/tiermem/agent.toml\", \"--restore\""));
    assert!(text[main..].contains("\"agent\", \"--config\", \"/etc/tiermem/agent.toml\""));
    assert!(text.contains("mountPath: /etc/tiermem,"));
    for needed in [
        "hostPID: true",
        "privileged: true",
        "mountPath: /sys }",
        "mountPath: /sys/kernel/debug }",
    ] {
        assert!(text.contains(needed), "missing {needed}");
    }
}

#[test]
#[ignore = "slow: the seed-001 job at full size (8 x 13.5 GiB), about 5 s"]
fn bench_runs_the_full_size_seed_001_job() {
    let o = Command::new(bin())
        .args(["bench", "--seed-001", "--duration", "2"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("simulated seconds per wall second"), "{out}");
    assert!(out.contains("one simulated hour"), "{out}");
}

/// `tiermem agent --simulate`: on a simulated 6.12 host the agent prints its plan, applies
/// it (the files it changed), serves metrics, and once stopped every file reads as before.
#[test]
fn the_agent_runs_end_to_end_on_a_simulated_host() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write(
        d.path(),
        "agent.toml",
        "interval = \"50ms\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n\
         [numa_balancing]\nmode = \"tiering\"\ndemotion_enabled = true\n\
         [weighted_interleave]\nsource = \"hmat\"\n[ksm]\nrun = 1\nmerge_across_nodes = 0\n\
         [damon]\nops = \"paddr\"\n[[damon.schemes]]\naction = \"pageout\"\n\
         access_pattern = { max_nr_accesses = 0, min_age = 10 }\n",
    );
    let host = d.path().join("host");
    let o = Command::new(bin())
        .args(["agent", "--simulate", "--ticks", "4", "--config"])
        .arg(&cfg)
        .arg("--simulate-dir")
        .arg(&host)
        .output()
        .unwrap();
    let out = ok(&o);
    for want in [
        "== plan (as --dry-run prints it)",
        "write /proc/sys/kernel/numa_balancing: 0 -> 2",
        "applied: ",
        "/sys/kernel/mm/mempolicy/weighted_interleave/node0: \"1\" -> \"25\"",
        "metrics: curl http://127.0.0.1:",
        "tiermem_vmstat_total{counter=\"pgpromote_success\"}",
        "restored: every file the agent changed reads as before the run",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
    // The simulated host stays where it was asked to be, as it was before the run.
    let knob = std::fs::read_to_string(host.join("proc/sys/kernel/numa_balancing")).unwrap();
    assert_eq!(knob.trim(), "0");
    // It is an ordinary tree for --root, and a second simulation refuses to overwrite it.
    let o = Command::new(bin())
        .args(["agent", "--dry-run", "--config"])
        .arg(&cfg)
        .arg("--root")
        .arg(&host)
        .output()
        .unwrap();
    assert!(ok(&o).contains("dry run: nothing written"));
    let o = Command::new(bin())
        .args(["agent", "--simulate", "--ticks", "1", "--simulate-dir"])
        .arg(&host)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
}

/// A dry run reports every problem of a config at once, not only the first.
#[test]
fn a_dry_run_lists_every_problem_at_once() {
    let d = tempfile::tempdir().unwrap();
    let host = d.path().join("host");
    let o = Command::new(bin())
        .args(["agent", "--simulate", "--ticks", "1", "--config"])
        .arg(write(d.path(), "min.toml", "interval = \"20ms\"\n"))
        .arg("--simulate-dir")
        .arg(&host)
        .output()
        .unwrap();
    ok(&o);
    // A host without debugfs and without KSM.
    std::fs::remove_dir_all(host.join("sys/kernel/debug")).unwrap();
    std::fs::remove_dir_all(host.join("sys/kernel/mm/ksm")).unwrap();
    let cfg = write(
        d.path(),
        "agent.toml",
        "[numa_balancing]\nmode = \"tiering\"\nscan_size_mb = 64\nhot_threshold_ms = 500\n\
         [ksm]\nrun = 1\n[weighted_interleave]\nsource = \"given\"\nweights = { node7 = 2 }\n",
    );
    let o = Command::new(bin())
        .args(["agent", "--dry-run", "--config"])
        .arg(&cfg)
        .arg("--root")
        .arg(&host)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // The weight of a node that does not exist is bad input: exit 2 for the whole list.
    assert_eq!(o.status.code(), Some(2), "{err}");
    for want in [
        "4 problems:",
        "scan_size_mb",
        "hot_threshold_ms",
        "KSM (CONFIG_KSM)",
        "weighted_interleave.weights.node7",
    ] {
        assert!(err.contains(want), "{want:?} not in: {err}");
    }
}

/// `tiermem exec` takes numactl's spellings; tiermem's old `--interleave weighted` is
/// refused with the numactl form to use.
#[test]
fn exec_takes_numactls_spellings() {
    let o = Command::new(bin())
        .args(["exec", "--interleave", "weighted", "--", "true"])
        .output()
        .unwrap();
    bad(&o, "-w NODES");
    let o = Command::new(bin())
        .args(["exec", "-i", "0-4000000000", "--", "true"])
        .output()
        .unwrap();
    bad(&o, "out of range");
    // Conflicting policies, as numactl refuses them.
    let o = Command::new(bin())
        .args(["exec", "-i", "all", "-m", "0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    if Path::new("/sys/devices/system/node/node0").exists() {
        let o = Command::new(bin()).args(["exec", "-H"]).output().unwrap();
        let out = ok(&o);
        assert!(out.starts_with("available: "), "{out}");
        assert!(out.contains("node distances:"), "{out}");
        let o = Command::new(bin())
            .args(["exec", "-m", "all", "--", "true"])
            .output()
            .unwrap();
        ok(&o);
    }
}
