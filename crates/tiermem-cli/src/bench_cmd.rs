//! `tiermem bench`: the simulator's speed and host memory per simulated page.

use crate::{input, run_with_progress, sim_failure, Failure};
use clap::Args;
use std::path::{Path, PathBuf};
use tiermem_core::config::SimConfig;
use tiermem_sim::engine::{RunOptions, Simulation};

#[derive(Args)]
pub struct BenchArgs {
    /// Simulated memory footprint of the single pmbench process.
    #[arg(long, default_value = "16GiB")]
    pub size: String,
    /// Simulated time to run (`30s`, or seconds).
    #[arg(long, default_value = "30", allow_hyphen_values = true, value_parser = crate::parse_seconds)]
    pub duration: f64,
    /// Run with NUMA-balancing memory tiering on (numa_balancing = 2, demotion enabled).
    #[arg(long)]
    pub tiering: bool,
    /// Replay this trace (looped) instead of running pmbench.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Run the seed-001 job at full size instead (lkp's pmbench-dcpmm job A: 8 processes of
    /// 13 824 MiB on the 2-socket DRAM + Optane preset with the experiment's 16 GiB of DRAM
    /// per socket, memory tiering, kernel defaults) for `--duration` simulated seconds, and
    /// print simulated seconds per wall second.
    #[arg(long, conflicts_with_all = ["size", "tiering", "trace"])]
    pub seed_001: bool,
    /// The engine (`sim.engine`): `access` (every access through the page table) or
    /// `events` (pmbench's measured phase as page events). A trace replays on the access
    /// engine either way.
    #[arg(long, value_enum, default_value_t = Engine::Access)]
    pub engine: Engine,
    /// Time the exact capture instead: run the program after `--` natively (best of three)
    /// and under `trace record --tool qemu` into a temporary trace, and print the slowdown.
    #[arg(long, conflicts_with_all = ["size", "tiering", "trace", "seed_001"])]
    pub capture: bool,
    /// Time the profile capture instead: run the program after `--` three times natively
    /// and three times under `trace profile` (scans every `--profile-interval`), alternated,
    /// and print the overhead, best against best.
    #[arg(long, conflicts_with_all = ["size", "tiering", "trace", "seed_001", "capture"])]
    pub profile: bool,
    /// Scan interval of `--profile`.
    #[arg(long, default_value = "1s", value_parser = crate::parse_seconds)]
    pub profile_interval: f64,
    /// The program and its arguments for `--capture` and `--profile`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `sim.engine` values the bench runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Access,
    Events,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Access => "access",
            Engine::Events => "events",
        }
    }
}

pub fn run(a: BenchArgs) -> Result<(), Failure> {
    if a.capture {
        return bench_capture(&a.command);
    }
    if a.profile {
        return bench_profile(&a.command, a.profile_interval);
    }
    if !a.command.is_empty() {
        return Err(input(
            "a program after `--` is only for --capture and --profile",
        ));
    }
    if a.seed_001 {
        return bench_seed_001(a.duration, a.engine);
    }
    cmd_bench(&a.size, a.duration, a.tiering, a.trace.as_deref(), a.engine)
}

/// The seed-001 job at the paper's sizes: experiments/seed-001-base.toml without its 1/32
/// scaling (its `[kernel.numa]` periods and `model_scale`, its `[sim]` tick, processes of
/// 432 MiB × 32) on the experiment's 16 GiB of DRAM and 512 GiB of Optane per socket: how many simulated seconds
/// a wall second buys, and what one simulated hour and lkp's 900 s run would take (issue
/// 19's yardstick for full size).
#[allow(clippy::expect_used, reason = "the built-in base file is valid")]
fn bench_seed_001(duration: f64, engine: Engine) -> Result<(), Failure> {
    if !(duration > 0.0 && duration <= 3600.0) {
        return Err(input("--duration: seconds within (0, 3600]"));
    }
    const BASE: &str = include_str!("../../../experiments/seed-001-base.toml");
    let mut value = tiermem_core::config::resolve_toml(BASE, "seed-001-base.toml")
        .expect("the built-in seed-001 base parses");
    let table = value.as_table_mut().expect("a TOML document is a table");
    table.remove("sim");
    if let Some(kernel) = table.get_mut("kernel").and_then(|k| k.as_table_mut()) {
        kernel.remove("numa");
    }
    for (path, v) in [
        ("duration", toml::Value::String(format!("{duration}s"))),
        (
            "workloads[0].mapsize",
            toml::Value::String("13824MiB".into()),
        ),
        ("sim.engine", toml::Value::String(engine.name().into())),
        // The experiment's DRAM (16 GiB per socket), so that 108 GiB of pmbench spills to
        // Optane and tiering works throughout, as in the seed-001 experiment.
        (
            "machine.nodes[0].capacity",
            toml::Value::String("16GiB".into()),
        ),
        (
            "machine.nodes[1].capacity",
            toml::Value::String("16GiB".into()),
        ),
        // The published 512 GiB of Optane per socket (the base file's are at 1/32 scale).
        (
            "machine.nodes[2].capacity",
            toml::Value::String("512GiB".into()),
        ),
        (
            "machine.nodes[3].capacity",
            toml::Value::String("512GiB".into()),
        ),
    ] {
        tiermem_core::config::set_path(&mut value, path, v).map_err(input)?;
    }
    let cfg = SimConfig::from_value(&value, "<bench --seed-001>").map_err(input)?;
    let mut sim = Simulation::new(&cfg).map_err(sim_failure)?;
    let mut samples: Vec<(f64, f64)> = Vec::new();
    let (res, wall) = run_with_progress(&mut sim, "seed-001 full size", |wall_s, p| {
        samples.push((wall_s, p.sim_seconds))
    })?;
    // Steady state: the second half of the simulated time (population of the 108 GiB of
    // processes comes first and goes faster).
    let half = samples
        .iter()
        .position(|s| s.1 >= duration / 2.0)
        .unwrap_or(0);
    let (w0, s0) = samples.get(half).copied().unwrap_or((0.0, 0.0));
    let per_wall = (duration - s0) / (wall - w0).max(1e-9);
    println!(
        "bench: the seed-001 job at full size (8 x 13824 MiB pmbench normal_ih, dram-pmem-2s with 16 GiB DRAM per socket, tiering), {duration} simulated s, {} engine, pmbench drawn ahead: {}",
        engine.name(),
        if RunOptions::default().generate_ahead { "yes" } else { "no (one CPU)" }
    );
    println!("  wall time                         {wall:.2} s");
    println!(
        "  simulated accesses                {} ({:.2} M per wall second)",
        res.summary.accesses,
        res.summary.accesses as f64 / wall.max(1e-9) / 1e6
    );
    println!(
        "  simulated seconds per wall second {:.3} (all), {per_wall:.3} (second half, steady)",
        duration / wall.max(1e-9)
    );
    println!(
        "  one simulated hour                {:.0} min of wall time; lkp's 900 s run {:.0} min (steady)",
        3600.0 / per_wall / 60.0,
        900.0 / per_wall / 60.0
    );
    Ok(())
}

/// Run `cfg` to the end with `opts`: the result, the wall time and the steady access rate
/// (accesses per wall second over the second half of the wall time, after initialisation).
fn timed_run(
    cfg: &SimConfig,
    opts: RunOptions,
    label: &str,
) -> Result<(tiermem_sim::engine::SimResult, f64, f64), Failure> {
    let mut sim = Simulation::new_with(cfg, opts).map_err(sim_failure)?;
    let mut samples: Vec<(f64, u64)> = Vec::new();
    let (res, wall) = run_with_progress(&mut sim, label, |wall_s, p| {
        samples.push((wall_s, p.accesses))
    })?;
    let half = samples.iter().position(|s| s.0 >= wall / 2.0).unwrap_or(0);
    let (w0, a0) = samples.get(half).copied().unwrap_or((0.0, 0));
    let steady = (res.summary.accesses - a0) as f64 / (wall - w0).max(1e-9);
    Ok((res, wall, steady))
}

/// A memory figure of this process from `/proc/self/status` (`VmHWM`, `VmRSS`), in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[allow(clippy::expect_used, reason = "a constant machine description")]
fn cmd_bench(
    size: &str,
    duration: f64,
    tiering: bool,
    trace: Option<&Path>,
    engine: Engine,
) -> Result<(), Failure> {
    let bytes =
        tiermem_core::units::parse_bytes(size).map_err(|e| input(format!("--size: {e}")))?;
    if bytes.0 < (64 << 20) {
        return Err(input("--size: at least 64MiB"));
    }
    if !(duration > 0.0 && duration <= 3600.0) {
        return Err(input("--duration: seconds within (0, 3600]"));
    }
    // A 2-node machine: DRAM holding half the footprint, a CXL node holding the rest.
    let dram = bytes.0 / 2;
    let text = format!(
        "machine = {{ preset = \"small\", nodes = [] }}\nduration = \"{duration}s\"\nseed = 1\n[sim]\nsample_interval = \"1s\"\nengine = \"{}\"\n\
         [[workloads]]\ntype = \"pmbench\"\nmapsize = \"{}\"\npattern = \"normal_ih\"\nread_ratio = 80\ninitialize = true\ncold = true\n",
        engine.name(),
        bytes.0
    );
    let text = match trace {
        // Trace replay instead: the trace looped for the whole run.
        Some(t) => format!(
            "machine = {{ preset = \"small\", nodes = [] }}\nduration = \"{duration}s\"\nseed = 1\n[sim]\nsample_interval = \"1s\"\n\
             [[workloads]]\ntype = \"trace\"\nfile = {}\nloops = 0\n",
            toml::Value::String(t.display().to_string())
        ),
        None => text,
    };
    let text = if tiering {
        format!("{text}[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n")
    } else {
        text
    };
    let mut value = tiermem_core::config::resolve_toml(&text, "<bench>").map_err(input)?;
    // Replace the preset's nodes with sized ones.
    let nodes = format!(
        "[[nodes]]\nid = 0\ncpus = 4\ncapacity = {dram}\nkind = \"dram\"\nread_latency = \"85ns\"\nread_bandwidth = \"50GB/s\"\n\
         [[nodes]]\nid = 1\ncapacity = {}\nkind = \"cxl\"\nread_latency = \"200ns\"\nread_bandwidth = \"26.8GB/s\"\nwrite_bandwidth = \"20GB/s\"\n",
        bytes.0
    );
    let nodes_v: toml::Value = toml::from_str(&nodes).expect("valid");
    tiermem_core::config::set_path(
        &mut value,
        "machine.nodes",
        nodes_v.get("nodes").expect("nodes").clone(),
    )
    .map_err(input)?;
    let cfg = SimConfig::from_value(&value, "<bench>").map_err(input)?;
    let rss0 = proc_status_bytes("VmRSS:").unwrap_or(0);
    let ahead = RunOptions::default();
    let (res, wall, steady) = timed_run(&cfg, ahead, "bench")?;
    let pages = bytes.pages_ceil().0 as f64;
    let peak = proc_status_bytes("VmHWM:").unwrap_or(0);
    // The same run with every access drawn on the engine's core, for the one-core ratio.
    let one_core = if ahead.generate_ahead && engine == Engine::Access {
        Some(
            timed_run(
                &cfg,
                RunOptions {
                    generate_ahead: false,
                },
                "bench, one core",
            )?
            .2,
        )
    } else {
        None
    };
    println!(
        "bench: {}, {} over a 2-node machine (DRAM {} + CXL), {duration} simulated s, tiering {}, {} engine",
        match trace {
            Some(t) => format!("replay of {} (looped)", t.display()),
            None => "pmbench normal_ih 80% reads".to_string(),
        },
        bytes,
        tiermem_core::units::Bytes(dram),
        if tiering { "on" } else { "off" },
        if trace.is_some() { "access" } else { engine.name() }
    );
    if tiering {
        let v = &res.summary.vmstat;
        println!(
            "  promoted / demoted pages          {} / {}",
            v["pgpromote_success"], v["pgdemote_kswapd"]
        );
    }
    println!(
        "  wall time                         {wall:.2} s ({:.2} simulated s per wall s)",
        duration / wall.max(1e-9)
    );
    println!(
        "  simulated accesses                {}",
        res.summary.accesses
    );
    println!(
        "  accesses per wall second (all)    {:.2} M",
        res.summary.accesses as f64 / wall / 1e6
    );
    if trace.is_some() {
        print_replay(&res.summary.workloads, wall);
    }
    let limits = host_limits();
    println!(
        "  host limit (random RMW, 120 MiB)  {:.2} M per second, one core, plain loop",
        limits.naive / 1e6
    );
    println!(
        "                                    {:.2} M per second, one core, prefetched {LIMIT_AHEAD} ahead",
        limits.prefetched / 1e6
    );
    let producers = if ahead.generate_ahead {
        "pmbench drawn ahead on a producer thread"
    } else {
        "one core"
    };
    let ratios = |rate: f64| {
        format!(
            "steady / limit = {:.2} (plain), {:.2} (prefetched)",
            rate / limits.naive,
            rate / limits.prefetched
        )
    };
    println!(
        "  accesses per wall second (steady) {:.2} M ({producers}); {}",
        steady / 1e6,
        ratios(steady)
    );
    if let Some(one) = one_core {
        println!(
            "                                    {:.2} M (one core, drawn inline); {}",
            one / 1e6,
            ratios(one)
        );
    }
    println!(
        "  page+frame tables                 {:.1} bytes per simulated page",
        res.host_table_bytes as f64 / pages
    );
    println!(
        "  peak RSS growth                   {:.1} bytes per simulated page",
        peak.saturating_sub(rss0) as f64 / pages
    );
    Ok(())
}

/// The host's limits for what the access engine does per simulated access, measured in
/// the same run so that a noisy machine shows in both: random read-modify-writes of 8-byte
/// words over a 120 MiB table (far beyond the caches, like the engine's page and frame
/// tables), indices from a xorshift generator, on one core. Accesses per second.
struct HostLimits {
    /// A plain loop: each access waits for its own cache miss.
    naive: f64,
    /// The same accesses with their words prefetched [`LIMIT_AHEAD`] accesses ahead, so
    /// that several misses are in flight: the ceiling a per-access page-table simulator
    /// can approach (issue 46).
    prefetched: f64,
}

const LIMIT_WORDS: u64 = (120 << 20) / 8;
const LIMIT_ACCESSES: u64 = 40_000_000;
/// How far ahead the prefetching limit loads: 16 accesses (on the development host 8, 16
/// and 32 ahead gave 72, 83 and 76 M/s: 16 is the best of the three).
const LIMIT_AHEAD: usize = 16;

/// The limit's index stream: xorshift64, mapped onto the table by multiply-shift (no
/// division).
struct LimitIndices(u64);

impl LimitIndices {
    #[inline(always)]
    fn next(&mut self) -> (usize, u64) {
        let x = &mut self.0;
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        ((((*x >> 32) * LIMIT_WORDS) >> 32) as usize, *x)
    }
}

fn host_limits() -> HostLimits {
    // Initialised here, so that neither loop pays the table's page faults.
    let mut table = vec![1u64; LIMIT_WORDS as usize];
    let naive = host_rmw_naive(&mut table);
    let prefetched = host_rmw_prefetched(&mut table);
    std::hint::black_box(&table);
    HostLimits { naive, prefetched }
}

fn host_rmw_naive(table: &mut [u64]) -> f64 {
    let mut ix = LimitIndices(0x9E37_79B9_7F4A_7C15);
    let t0 = std::time::Instant::now();
    for _ in 0..LIMIT_ACCESSES {
        let (i, x) = ix.next();
        table[i] = table[i].wrapping_add(x);
    }
    LIMIT_ACCESSES as f64 / t0.elapsed().as_secs_f64()
}

/// Indices drawn into a ring [`LIMIT_AHEAD`] ahead of their use; each word is prefetched
/// when its index is drawn.
fn host_rmw_prefetched(table: &mut [u64]) -> f64 {
    let mut ix = LimitIndices(0x2545_F491_4F6C_DD1D);
    let mut ring = [(0usize, 0u64); LIMIT_AHEAD];
    for r in ring.iter_mut() {
        *r = ix.next();
        tiermem_sim::mm::mem::prefetch(table, r.0);
    }
    let t0 = std::time::Instant::now();
    for k in 0..LIMIT_ACCESSES as usize {
        let slot = k % LIMIT_AHEAD;
        let (i, x) = ring[slot];
        let upcoming = ix.next();
        tiermem_sim::mm::mem::prefetch(table, upcoming.0);
        ring[slot] = upcoming;
        table[i] = table[i].wrapping_add(x);
    }
    LIMIT_ACCESSES as f64 / t0.elapsed().as_secs_f64()
}

/// A trace bench's replay rate: the trace's accesses (cache hits included) per wall second,
/// and what the CPU caches did with them.
fn print_replay(workloads: &[tiermem_sim::workload::WorkloadResult], wall: f64) {
    for w in workloads {
        if let tiermem_sim::workload::WorkloadResult::Trace {
            accesses, cache, ..
        } = w
        {
            println!(
                "  replayed accesses per wall second {:.2} M (each through the CPU caches)",
                *accesses as f64 / wall.max(1e-9) / 1e6
            );
            if let Some(c) = cache {
                // Per line accessed (an access may span several lines).
                let all = (c.l1_hits + c.l2_hits + c.llc_hits + c.misses).max(1) as f64;
                println!(
                    "  lines served: L1 {:.1} %, L2 {:.1} %, LLC {:.1} %, memory {:.1} %; {} lines prefetched, {} written back",
                    c.l1_hits as f64 / all * 100.0,
                    c.l2_hits as f64 / all * 100.0,
                    c.llc_hits as f64 / all * 100.0,
                    c.misses as f64 / all * 100.0,
                    c.prefetched,
                    c.writebacks
                );
            }
        }
    }
}

/// `bench --capture -- PROG ARGS`: the exact capture's slowdown over a native run of the
/// same program, both measured now. The program's output is discarded.
fn bench_capture(command: &[String]) -> Result<(), Failure> {
    if command.is_empty() {
        return Err(input("--capture needs a program after `--`"));
    }
    let native = native_best_of_3(command)?;
    let dir = temp_dir()?;
    let out = dir.path().join("capture.tmt");
    let t0 = std::time::Instant::now();
    crate::capture::record_qemu_with(&out, "qemu-x86_64", command, std::process::Stdio::null())?;
    let capture = t0.elapsed().as_secs_f64();
    println!("bench --capture: {}", command.join(" "));
    println!("  native run (best of 3)            {native:.3} s");
    println!("  exact capture (qemu plugin)       {capture:.3} s");
    println!(
        "  slowdown                          {:.1}x (target <= 50x)",
        capture / native.max(1e-9)
    );
    Ok(())
}

fn temp_dir() -> Result<tempfile::TempDir, Failure> {
    tempfile::tempdir().map_err(|e| Failure {
        code: 1,
        err: anyhow::anyhow!("cannot create a temporary directory: {e}"),
    })
}

/// Run times as "1.234, 1.250, 1.241".
fn seconds(times: impl Iterator<Item = f64>) -> String {
    times
        .map(|t| format!("{t:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The best of three native runs of `command` (its output discarded), seconds.
fn native_best_of_3(command: &[String]) -> Result<f64, Failure> {
    crate::capture::resolve_program(&command[0])?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        best = best.min(native_run(command)?);
    }
    Ok(best)
}

/// One native run of `command` (its output discarded), seconds.
fn native_run(command: &[String]) -> Result<f64, Failure> {
    let t0 = std::time::Instant::now();
    let st = std::process::Command::new(&command[0])
        .args(&command[1..])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| input(format!("cannot run {}: {e}", command[0])))?;
    if !st.success() {
        return Err(input(format!("{} exited with {st}", command[0])));
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// `bench --profile -- PROG ARGS`: the profile capture's overhead on the program's run
/// time: three native runs and three profiled runs, alternated so that a drift of the
/// host's speed (a neighbour, a VM's emulation) falls on both, compared best against best.
/// The recorder's CPU time is printed beside it: on a host with a spare core it is what the
/// profile costs the machine, not the program.
fn bench_profile(command: &[String], interval: f64) -> Result<(), Failure> {
    if command.is_empty() {
        return Err(input("--profile needs a program after `--`"));
    }
    tiermem_agent::profiler::detect_source(&tiermem_agent::fs::HostFs::default())
        .map_err(crate::live_failure)?;
    crate::capture::resolve_program(&command[0])?;
    let dir = temp_dir()?;
    let out = dir.path().join("bench.tmprof");
    let profile_run = || {
        crate::profile_cmd::record(
            &out,
            crate::profile_cmd::Target::Command(command),
            std::time::Duration::from_secs_f64(interval),
            None,
            std::process::Stdio::null(),
        )
    };
    let mut native = vec![native_run(command)?];
    let mut profiled = vec![profile_run()?];
    for _ in 1..3 {
        native.push(native_run(command)?);
        profiled.push(profile_run()?);
    }
    let best_native = native.iter().copied().fold(f64::INFINITY, f64::min);
    let best =
        profiled[1..].iter().fold(
            &profiled[0],
            |best, r| {
                if r.wall_s < best.wall_s {
                    r
                } else {
                    best
                }
            },
        );
    println!("bench --profile: {}", command.join(" "));
    println!(
        "  native runs                       {} s (best {best_native:.3} s)",
        seconds(native.iter().copied())
    );
    println!(
        "  under the profile capture         {} s (best {:.3} s: {} scans, every {interval} s)",
        seconds(profiled.iter().map(|r| r.wall_s)),
        best.wall_s,
        best.end.intervals
    );
    println!(
        "  recorder CPU (best run)           {:.3} s",
        best.end.recorder_cpu_ns as f64 / 1e9
    );
    println!(
        "  overhead (best against best)      {:+.1} % (target <= 5 %)",
        100.0 * (best.wall_s / best_native.max(1e-9) - 1.0)
    );
    Ok(())
}
