//! The live-host commands: `tiermem topology`, `tiermem agent`, `tiermem exec`.
//! Thin: parse arguments, call `tiermem-agent`, print.

use clap::Args;
use std::path::PathBuf;
use tiermem_agent::config::AgentConfig;
use tiermem_agent::exec::{ExecOptions, Interleave, Placement};
use tiermem_agent::fs::HostFs;
use tiermem_agent::Error;

#[derive(Args)]
pub struct TopologyArgs {
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "sim_config")]
    json: bool,
    /// Print this host as a simulator config (nodes, capacities, distances, HMAT figures,
    /// the kernel's settings; assumptions marked `# default`), ready for `tiermem sim`.
    #[arg(long)]
    sim_config: bool,
    /// Read /proc and /sys under this directory instead of / (testing).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[derive(Args)]
pub struct NumastatArgs {
    /// A process: its memory per node and kind (MiB), from /proc/PID/numa_maps.
    #[arg(short = 'p', long = "pid")]
    pid: Option<u32>,
    /// Read /proc and /sys under this directory instead of / (testing).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[derive(clap::Subcommand)]
pub enum DamonCmd {
    /// Every kdamond as the kernel has it (whoever started it): state, pid, each context's
    /// operations, intervals, region bounds and targets, each scheme's action and
    /// statistics; with --regions the regions each scheme last tried (`damo show`).
    /// Read-only unless --update.
    Status(DamonStatusArgs),
    /// `damo show`: the same as `status --regions` (every kdamond with the regions each
    /// scheme last tried, their nr_accesses and age).
    Show(DamonStatusArgs),
    /// Record DAMON's regions of a process (--pid) or of physical memory (--paddr) at every
    /// aggregation into DIR/damon.json (damo's record format) for `tiermem report`; prints
    /// what the monitoring cost (the kdamond's CPU time).
    Record(DamonRecordArgs),
    /// Convert a damo JSON kdamond config (`damo args damon --format json`) into the agent's
    /// `[damon]` table (TOML, on standard output).
    Import(DamonImportArgs),
    /// Write an agent config's `[damon]` table as a damo JSON kdamond config (for
    /// `damo start FILE`), on standard output.
    Export(DamonExportArgs),
}

#[derive(Args)]
pub struct DamonRecordArgs {
    /// The process to monitor (DAMON vaddr).
    #[arg(long, conflicts_with = "paddr", required_unless_present = "paddr")]
    pid: Option<i32>,
    /// Monitor physical memory instead (DAMON paddr, the biggest System RAM range).
    #[arg(long)]
    paddr: bool,
    /// How long (`10s`, `2min`, or seconds; the recording also ends when the process
    /// exits, or on SIGINT).
    #[arg(long, default_value = "10", allow_hyphen_values = true, value_parser = crate::parse_seconds)]
    duration: f64,
    /// Output directory (damon.json, record.json; trace.tmt with --trace).
    #[arg(long, default_value = "damon-record")]
    out: PathBuf,
    /// Sampling interval, µs (DAMON's default 5000).
    #[arg(long, default_value_t = 5000)]
    sample_us: u64,
    /// Aggregation interval, µs (DAMON's default 100000).
    #[arg(long, default_value_t = 100_000)]
    aggr_us: u64,
    /// Operations update interval, µs (how often vaddr re-reads the mappings).
    #[arg(long, default_value_t = 1_000_000)]
    update_us: u64,
    #[arg(long, default_value_t = 10)]
    min_nr_regions: u32,
    #[arg(long, default_value_t = 1000)]
    max_nr_regions: u32,
    /// Also convert the record into a tiermem trace (trace.tmt) for `tiermem sim`.
    #[arg(long)]
    trace: bool,
    /// Read and write /proc and /sys under this directory instead of / (testing).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[derive(Args)]
pub struct DamonImportArgs {
    /// The damo JSON file (`{"kdamonds": [...]}`), or `-` for standard input.
    file: PathBuf,
    /// Which kdamond of the file, when it has several.
    #[arg(long)]
    kdamond: Option<usize>,
    /// Which context of that kdamond, when it has several.
    #[arg(long)]
    context: Option<usize>,
}

#[derive(Args)]
pub struct DamonExportArgs {
    /// An agent config with a `[damon]` table.
    config: PathBuf,
}

#[derive(Args)]
pub struct DamonStatusArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also list the regions each scheme last tried, with nr_accesses and age.
    #[arg(long)]
    regions: bool,
    /// Ask each running kdamond to refresh its statistics (and tried regions) first: writes
    /// `update_schemes_stats` (and `update_schemes_tried_regions`) to its `state` file.
    #[arg(long)]
    update: bool,
    /// Read /sys under this directory instead of / (testing).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
pub fn cmd_damon(cmd: DamonCmd) -> Result<(), Error> {
    let show = matches!(cmd, DamonCmd::Show(_));
    match cmd {
        DamonCmd::Status(a) | DamonCmd::Show(a) => {
            let fs = HostFs::new(a.root);
            let s = tiermem_agent::damon_status::read(&fs, a.update, a.regions || show)?;
            if a.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&s).expect("serialisable")
                );
            } else {
                print!("{}", tiermem_agent::damon_status::render(&s));
            }
            Ok(())
        }
        DamonCmd::Import(a) => damon_import(&a),
        DamonCmd::Record(a) => damon_record(&a),
        DamonCmd::Export(a) => {
            let cfg = AgentConfig::from_file(&a.config)?;
            let name = a.config.display().to_string();
            let d = cfg.damon.as_ref().ok_or_else(|| {
                tiermem_core::ConfigError::invalid("damon", "the config has no [damon] table")
                    .in_file(&name)
            })?;
            let doc = tiermem_agent::damo_config::export(d).map_err(|e| e.in_file(&name))?;
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("serialisable")
            );
            Ok(())
        }
    }
}

/// `tiermem damon record`: the recording, its files and what it cost.
#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
fn damon_record(a: &DamonRecordArgs) -> Result<(), Error> {
    use tiermem_agent::damon_record::{record, RecordOptions};
    if !(a.duration > 0.0 && a.duration <= 86_400.0) {
        return Err(tiermem_core::ConfigError::invalid(
            "--duration",
            format!("{} s: give 0 < seconds <= 86400", a.duration),
        )
        .into());
    }
    let opts = RecordOptions {
        pid: a.pid,
        attrs: tiermem_core::damon::MonitoringAttrs {
            sample_us: a.sample_us,
            aggr_us: a.aggr_us,
            update_us: a.update_us,
            min_nr_regions: a.min_nr_regions,
            max_nr_regions: a.max_nr_regions,
            ..Default::default()
        },
        duration: std::time::Duration::from_secs_f64(a.duration),
    };
    // Snapshots in memory: at most one per aggregation, each of at most max_nr_regions.
    let estimate = tiermem_core::damon_record::estimated_bytes(
        (a.duration * 1e6 / a.aggr_us.max(1) as f64) as u64 + 1,
        a.max_nr_regions.into(),
    );
    if estimate > 4 << 30 {
        return Err(tiermem_core::ConfigError::invalid(
            "--duration",
            format!(
                "the record would need up to {} MiB of memory: record less time, a longer --aggr-us or fewer --max-nr-regions",
                estimate >> 20
            ),
        )
        .into());
    }
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(&a.out, "create", e))?;
    let fs = HostFs::new(&a.root);
    let what = match a.pid {
        Some(p) => format!("process {p}"),
        None => "physical memory".into(),
    };
    eprintln!(
        "recording DAMON's regions of {what} for {} s into {} ...",
        a.duration,
        a.out.display()
    );
    let mut last_report = std::time::Instant::now();
    let r = record(&fs, &opts, &mut |n, t| {
        if last_report.elapsed().as_secs_f64() >= 5.0 {
            eprintln!("  {:.0} s: {n} snapshots", t.as_secs_f64());
            last_report = std::time::Instant::now();
        }
    })?;
    let json_path = a.out.join("damon.json");
    let source = format!("tiermem damon record ({what})");
    std::fs::write(
        &json_path,
        tiermem_core::damon_record::to_damo_json(std::slice::from_ref(&r.record), &source),
    )
    .map_err(|e| Error::io(&json_path, "write", e))?;
    let wall = r.wall.as_secs_f64().max(1e-9);
    let regions: usize = r.record.snapshots.iter().map(|s| s.regions.len()).sum();
    let n = r.record.snapshots.len();
    let meta = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "kernel": fs.read_opt("/proc/sys/kernel/osrelease").ok().flatten().map(|s| s.trim().to_string()),
        "target": what,
        "attrs": opts.attrs,
        "wall_seconds": wall,
        "snapshots": n,
        "mean_regions": if n > 0 { regions as f64 / n as f64 } else { 0.0 },
        "kdamond_cpu_seconds": r.kdamond_cpu_ns.map(|c| c as f64 / 1e9),
        "recorder_cpu_seconds": r.recorder_cpu_ns.map(|c| c as f64 / 1e9),
        "ended_early": r.ended_early,
    });
    let meta_path = a.out.join("record.json");
    std::fs::write(
        &meta_path,
        serde_json::to_string_pretty(&meta).expect("serialisable"),
    )
    .map_err(|e| Error::io(&meta_path, "write", e))?;
    if let Some(why) = &r.ended_early {
        eprintln!("recording ended after {wall:.1} s: {why}");
    }
    println!(
        "{n} snapshots in {wall:.1} s ({:.0} regions on average) -> {}",
        if n > 0 {
            regions as f64 / n as f64
        } else {
            0.0
        },
        json_path.display()
    );
    let pct = |ns: Option<u64>| {
        ns.map_or("unknown".to_string(), |c| {
            format!(
                "{:.3} s, {:.2} % of one CPU",
                c as f64 / 1e9,
                100.0 * c as f64 / 1e9 / wall
            )
        })
    };
    println!(
        "cost: kdamond {}; reading the snapshots {}",
        pct(r.kdamond_cpu_ns),
        pct(r.recorder_cpu_ns)
    );
    if a.trace {
        let trace_path = a.out.join("trace.tmt");
        let convert = || -> Result<u64, String> {
            let input = std::fs::File::open(&json_path).map_err(|e| e.to_string())?;
            let out = std::fs::File::create(&trace_path).map_err(|e| e.to_string())?;
            let mut w = tiermem_trace::format::TraceWriter::new(
                std::io::BufWriter::new(out),
                tiermem_trace::damo::TIME_UNIT,
                "damo",
            )
            .map_err(|e| e.to_string())?;
            let name = json_path.display().to_string();
            let st = tiermem_trace::damo::import(input, &name, &mut w, Default::default())
                .map_err(|e| e.to_string())?;
            w.finish().map_err(|e| e.to_string())?;
            Ok(st.accesses)
        };
        let accesses =
            convert().map_err(|e| Error::Other(format!("{}: {e}", trace_path.display())))?;
        println!(
            "trace: {accesses} accesses regenerated from the record -> {}",
            trace_path.display()
        );
    }
    println!("look at it: tiermem report heatmap {}", a.out.display());
    Ok(())
}

/// `tiermem damon import`: damo's JSON to a `[damon]` table, checked as the agent checks it.
fn damon_import(a: &DamonImportArgs) -> Result<(), Error> {
    use std::io::Read;
    let name = a.file.display().to_string();
    let bad = |m: String| tiermem_core::ConfigError::whole_file(&name, m);
    let mut text = String::new();
    if name == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(&a.file).and_then(|mut f| f.read_to_string(&mut text))
    }
    .map_err(|e| bad(format!("cannot read: {e}")))?;
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        return Err(bad(
            "YAML is not read; write the config with `damo args damon --format json`".into(),
        )
        .into());
    }
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let d = tiermem_agent::damo_config::import(&doc, a.kdamond, a.context)
        .map_err(|e| e.in_file(&name))?;
    let toml = tiermem_agent::damo_config::to_toml(&d);
    // What the agent would refuse is refused here, not at deploy time.
    AgentConfig::from_toml_str(&toml, &format!("{name} (as imported)"))?;
    println!("# Imported from damo's kdamond config {name} by `tiermem damon import`.");
    print!("{toml}");
    Ok(())
}

#[derive(Args)]
pub struct MigrateArgs {
    /// The process.
    pid: u32,
    /// Nodes to move pages from (comma-separated: `1,2`).
    #[arg(long, value_delimiter = ',', required = true)]
    from: Vec<u32>,
    /// Nodes to move them to (the same count keeps relative placement).
    #[arg(long, value_delimiter = ',', required = true)]
    to: Vec<u32>,
    /// Read /proc and /sys under this directory instead of / (testing).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[derive(Args)]
pub struct AgentArgs {
    /// The agent config (TOML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Validate and print what would be written; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Restore the settings recorded in the state file (after a crash or kill -9) and exit.
    #[arg(long)]
    restore: bool,
    /// State file (default: the config's `state_file`, else /run/tiermem/agent.state).
    #[arg(long)]
    state_file: Option<PathBuf>,
    /// Run on a simulated host instead of this one: a Linux 6.12 machine with DRAM and CXL
    /// as a tree of files (no root needed, nothing outside it touched). Prints the plan, what
    /// the agent changed, the metrics it serves, and checks that everything reads as
    /// before once it stops. Without --config, the built-in configs/agent/example.toml.
    #[arg(long, conflicts_with_all = ["dry_run", "restore", "root", "state_file"])]
    simulate: bool,
    /// With --simulate: write the simulated host into this (empty) directory and keep it
    /// (default: a temporary directory, removed at the end).
    #[arg(long, requires = "simulate", value_name = "DIR")]
    simulate_dir: Option<PathBuf>,
    /// Stop after this many ticks (each `interval` long) and restore, as on SIGTERM.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ticks: Option<u64>,
    /// Read and write /proc and /sys under this directory instead of / (a copied or
    /// simulated tree, e.g. one kept by --simulate-dir; tests).
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

/// The options of numactl(8), spelled as numactl spells them (docs/agent.md has the table).
/// NODES and CPUS: `all`, a list with ranges (`0,2-3`), or `!` and a list for all but those.
#[derive(Args)]
pub struct ExecArgs {
    /// Interleave the program's memory round robin over NODES (MPOL_INTERLEAVE).
    #[arg(short = 'i', long, value_name = "NODES", conflicts_with_all = ["weighted_interleave", "membind", "preferred", "preferred_many", "localalloc"])]
    interleave: Option<String>,
    /// Interleave over NODES in the ratio of the sysfs weights
    /// (MPOL_WEIGHTED_INTERLEAVE, Linux 6.9+).
    #[arg(short = 'w', long, value_name = "NODES", conflicts_with_all = ["membind", "preferred", "preferred_many", "localalloc"])]
    weighted_interleave: Option<String>,
    /// Allocate only from NODES (MPOL_BIND).
    #[arg(short = 'm', long, visible_alias = "nodes", value_name = "NODES", conflicts_with_all = ["preferred", "preferred_many", "localalloc"])]
    membind: Option<String>,
    /// Prefer NODE, fall back anywhere (MPOL_PREFERRED).
    #[arg(short = 'p', long, value_name = "NODE", conflicts_with_all = ["preferred_many", "localalloc"])]
    preferred: Option<String>,
    /// Prefer NODES, fall back anywhere (MPOL_PREFERRED_MANY, Linux 5.15+).
    #[arg(short = 'P', long, value_name = "NODES", conflicts_with = "localalloc")]
    preferred_many: Option<String>,
    /// Allocate on the node of the CPU that allocates (MPOL_LOCAL).
    #[arg(short = 'l', long)]
    localalloc: bool,
    /// Run only on the CPUs of NODES.
    #[arg(short = 'N', long, value_name = "NODES")]
    cpunodebind: Option<String>,
    /// Run only on CPUS (e.g. `0-3,8`).
    #[arg(short = 'C', long, value_name = "CPUS")]
    physcpubind: Option<String>,
    /// Make all of the program's anonymous memory KSM-mergeable (PR_SET_MEMORY_MERGE;
    /// not a numactl option).
    #[arg(long)]
    ksm: bool,
    /// Print this process's memory policy and CPU binding, as `numactl --show`, and exit.
    #[arg(short = 's', long)]
    show: bool,
    /// Print the nodes, their CPUs, sizes and distances, as `numactl --hardware`, and exit.
    #[arg(short = 'H', long, conflicts_with = "show")]
    hardware: bool,
    /// The program and its arguments (after `--`).
    #[arg(trailing_var_arg = true, required_unless_present_any = ["show", "hardware"])]
    cmd: Vec<String>,
}

fn input(key: &str, msg: String) -> Error {
    Error::Config(tiermem_core::ConfigError::invalid(key, msg))
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
pub fn cmd_topology(a: TopologyArgs) -> Result<(), Error> {
    let h = tiermem_agent::host::read_host(&HostFs::new(a.root))?;
    if a.sim_config {
        print!("{}", tiermem_agent::sim_config::sim_config(&h)?);
        return Ok(());
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&h).expect("serialisable")
        );
    } else {
        print!("{}", tiermem_agent::host::render_table(&h));
    }
    Ok(())
}

pub fn cmd_numastat(a: NumastatArgs) -> Result<(), Error> {
    let fs = HostFs::new(a.root);
    let text = match a.pid {
        Some(pid) => tiermem_agent::numastat::process(&fs, pid)?,
        None => tiermem_agent::numastat::system(&fs)?,
    };
    print!("{text}");
    Ok(())
}

pub fn cmd_migrate(a: MigrateArgs) -> Result<(), Error> {
    let fs = HostFs::new(a.root);
    print!(
        "{}",
        tiermem_agent::numastat::migrate(&fs, a.pid, &a.from, &a.to)?
    );
    Ok(())
}

pub fn cmd_agent(a: AgentArgs) -> Result<(), Error> {
    if a.simulate {
        return crate::agent_sim::run(&crate::agent_sim::SimulateOptions {
            config: a.config.as_deref(),
            dir: a.simulate_dir,
            ticks: a.ticks,
        });
    }
    if a.restore {
        let path = a
            .state_file
            .clone()
            .or_else(|| a.config.as_deref().map(restore_state_file))
            .unwrap_or_else(|| PathBuf::from("/run/tiermem/agent.state"));
        if std::fs::symlink_metadata(&path).is_err() {
            println!("nothing to restore ({} does not exist)", path.display());
            return Ok(());
        }
        let root = (a.root != std::path::Path::new("/")).then_some(a.root.as_path());
        let rep = tiermem_agent::state::restore_from_file(&path, root)?;
        for r in &rep.restored {
            println!("restored {r}");
        }
        return Ok(());
    }
    let cfg = match &a.config {
        Some(p) => Some(AgentConfig::from_file(p)?),
        None => None,
    };
    let Some(cfg) = cfg else {
        return Err(input(
            "--config",
            "tiermem agent needs --config FILE (or --restore; --simulate tries it on a simulated host)".into(),
        ));
    };
    tiermem_agent::agent::run(
        &cfg,
        &HostFs::new(a.root),
        &tiermem_agent::agent::RunOptions {
            dry_run: a.dry_run,
            state_file: a.state_file,
            max_ticks: a.ticks,
            events: None,
        },
    )
}

/// The state file `--restore --config FILE` restores: the config's `state_file`. Restoring
/// must not depend on the config being valid (a config broken after the agent was killed
/// would leave the host changed), so a config the agent refuses is read only for that key,
/// and a file without it (or not TOML at all) means the default, with a warning.
fn restore_state_file(config: &std::path::Path) -> PathBuf {
    match AgentConfig::from_file(config) {
        Ok(c) => c.state_file,
        Err(e) => {
            let lenient = std::fs::read_to_string(config)
                .ok()
                .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
                .and_then(|t| t.get("state_file")?.as_str().map(PathBuf::from));
            let path = lenient.unwrap_or_else(|| PathBuf::from("/run/tiermem/agent.state"));
            eprintln!(
                "tiermem: warning: {e}; restoring from {} all the same",
                path.display()
            );
            path
        }
    }
}

pub fn cmd_exec(a: ExecArgs) -> Result<(), Error> {
    let fs = HostFs::default();
    if a.show {
        print!("{}", tiermem_agent::exec::show(&fs)?);
        return Ok(());
    }
    if a.hardware {
        print!("{}", tiermem_agent::exec::hardware(&fs)?);
        return Ok(());
    }
    let host_nodes = tiermem_agent::host::read_nodes(&fs)?;
    let mem: Vec<u32> = host_nodes
        .iter()
        .filter(|n| n.has_memory)
        .map(|n| n.id)
        .collect();
    let with_cpus: Vec<u32> = host_nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .map(|n| n.id)
        .collect();
    let all_cpus: Vec<u32> = host_nodes.iter().flat_map(|n| n.cpus.clone()).collect();
    let spec = |key: &str, v: &Option<String>, universe: &[u32]| -> Result<Vec<u32>, Error> {
        match v {
            Some(s) => {
                if matches!(s.as_str(), "weighted" | "plain") {
                    return Err(input(
                        key,
                        format!("{s:?}: give nodes as numactl does (`-i 0,1`, `-i all`); weighted interleave is `-w NODES`"),
                    ));
                }
                tiermem_agent::exec::resolve_spec(key, s, universe)
            }
            None => Ok(Vec::new()),
        }
    };
    let (interleave, nodes) = if a.weighted_interleave.is_some() {
        (
            Some(Interleave::Weighted),
            spec("--weighted-interleave", &a.weighted_interleave, &mem)?,
        )
    } else if a.interleave.is_some() {
        (
            Some(Interleave::Plain),
            spec("--interleave", &a.interleave, &mem)?,
        )
    } else {
        (None, spec("--membind", &a.membind, &mem)?)
    };
    let placement = if let Some(p) = &a.preferred {
        let n = spec("--preferred", &Some(p.clone()), &mem)?;
        if n.len() != 1 {
            return Err(input(
                "--preferred",
                format!("{p:?}: one node (several: --preferred-many)"),
            ));
        }
        Some(Placement::Preferred(n[0]))
    } else if a.preferred_many.is_some() {
        Some(Placement::PreferredMany(spec(
            "--preferred-many",
            &a.preferred_many,
            &mem,
        )?))
    } else if a.localalloc {
        Some(Placement::Local)
    } else {
        None
    };
    let opts = ExecOptions {
        interleave,
        nodes,
        placement,
        cpu_nodes: spec("--cpunodebind", &a.cpunodebind, &with_cpus)?,
        cpus: spec("--physcpubind", &a.physcpubind, &all_cpus)?,
        ksm: a.ksm,
        argv: a.cmd,
    };
    match tiermem_agent::exec::exec(&HostFs::default(), &opts)? {}
}
