//! `tiermem agent --simulate`: the agent end to end on a simulated host
//! (`tiermem_agent::simulated_host`): the dry run's plan, the files the agent changed when
//! it applied it, the metrics it serves, and the check that every file reads as before once
//! it stopped. Needs no root and no tiered machine; reads and writes only the simulated
//! host's directory.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tiermem_agent::agent::{Event, RunOptions};
use tiermem_agent::config::{AgentConfig, WeightSource};
use tiermem_agent::fs::HostFs;
use tiermem_agent::simulated_host::{self, Change, SimulatedKernel};
use tiermem_agent::Error;

/// The config a simulation runs when none is given: the example with every section.
const EXAMPLE: &str = include_str!("../../../configs/agent/example.toml");
const EXAMPLE_NAME: &str = "configs/agent/example.toml (built in)";

/// The state file, inside the simulated host (its `/run`).
const STATE_FILE: &str = "run/tiermem/agent.state";

pub struct SimulateOptions<'a> {
    pub config: Option<&'a Path>,
    /// Write the simulated host here and keep it (default: a temporary directory).
    pub dir: Option<PathBuf>,
    /// Stop (and restore) after this many ticks; `None`: at SIGINT/SIGTERM.
    pub ticks: Option<u64>,
}

pub fn run(o: &SimulateOptions) -> Result<(), Error> {
    let cfg = match o.config {
        Some(p) => AgentConfig::from_file(p)?,
        None => AgentConfig::from_toml_str(EXAMPLE, EXAMPLE_NAME)?,
    };
    if cfg
        .weighted_interleave
        .as_ref()
        .is_some_and(|w| w.source == WeightSource::Probe)
    {
        return Err(tiermem_core::ConfigError::invalid(
            "weighted_interleave.source",
            "\"probe\" measures this machine's real nodes, not the simulated host's: use \"hmat\" or \"given\" with --simulate",
        )
        .into());
    }
    let tmp;
    let root = match &o.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| Error::Other(format!("cannot create a temporary directory: {e}")))?;
            tmp.path().to_path_buf()
        }
    };
    simulated_host::create(&root)?;
    println!(
        "simulated host in {}: Linux {}, node 0 DRAM (CPUs 0-1, 1 GiB), node 1 CPU-less CXL (1 GiB); \
         nothing outside this directory is read or written",
        root.display(),
        simulated_host::KERNEL_RELEASE
    );
    println!(
        "config: {}",
        o.config
            .map_or(EXAMPLE_NAME.to_string(), |p| p.display().to_string())
    );
    let fs = HostFs::new(&root);
    let state_file = root.join(STATE_FILE);
    println!("\n== plan (as --dry-run prints it)");
    tiermem_agent::agent::run(
        &cfg,
        &fs,
        &RunOptions {
            dry_run: true,
            ..Default::default()
        },
    )?;
    let before = simulated_host::snapshot(&root)?;
    let kernel = SimulatedKernel::start(root.clone())?;
    let ticks = o.ticks;
    println!(
        "\n== running{}",
        match ticks {
            Some(n) => format!(" for {n} tick(s) of {} ms", cfg.interval.as_ms()),
            None => " (Ctrl-C stops it and restores)".to_string(),
        }
    );
    let (tx, rx) = mpsc::channel();
    let result = std::thread::scope(|s| {
        let agent = s.spawn(|| {
            tiermem_agent::agent::run(
                &cfg,
                &fs,
                &RunOptions {
                    state_file: Some(state_file.clone()),
                    max_ticks: ticks,
                    events: Some(tx),
                    ..Default::default()
                },
            )
        });
        for e in rx {
            match e {
                Event::Listening(a) => println!("metrics: curl http://{a}/metrics"),
                Event::Applied => match simulated_host::snapshot(&root) {
                    Ok(now) => {
                        print_applied(&simulated_host::changed_files(&before, &now, Some("/run")))
                    }
                    Err(e) => eprintln!("tiermem: warning: {e}"),
                },
                Event::Tick { n, metrics } if n == 1 || ticks == Some(n) => {
                    print_metrics(n, &metrics)
                }
                Event::Tick { .. } => {}
            }
        }
        agent
            .join()
            .unwrap_or_else(|_| Err(Error::Other("the agent's thread panicked".into())))
    });
    drop(kernel);
    result?;
    let after = simulated_host::snapshot(&root)?;
    let left = simulated_host::changed_files(&before, &after, Some("/run"));
    println!("\n== stopped");
    if !left.is_empty() {
        for c in &left {
            println!("  not restored: {}", describe(c));
        }
        return Err(Error::Other(format!(
            "{} file(s) of the simulated host differ from before the run",
            left.len()
        )));
    }
    println!(
        "restored: every file the agent changed reads as before the run{}",
        if state_file.exists() {
            ""
        } else {
            "; the state file is gone"
        }
    );
    if o.dir.is_some() {
        println!("the simulated host stays in {}", root.display());
    }
    Ok(())
}

fn describe(c: &Change) -> String {
    let show = |v: &Option<String>| match v {
        Some(s) => format!("{:?}", s.trim()),
        None => "(absent)".to_string(),
    };
    format!("{}: {} -> {}", c.path, show(&c.before), show(&c.after))
}

/// The files the agent changed, kdamond directories folded into one line each.
fn print_applied(changes: &[Change]) {
    println!("applied: {} file(s) changed", changes.len());
    let mut kdamonds: std::collections::BTreeMap<String, usize> = Default::default();
    for c in changes {
        let kd = c
            .path
            .strip_prefix(tiermem_agent::damon::KDAMONDS)
            .and_then(|r| r.trim_start_matches('/').split_once('/'))
            .map(|(k, _)| k.to_string());
        match kd {
            Some(k) => *kdamonds.entry(k).or_default() += 1,
            None => println!("  {}", describe(c)),
        }
    }
    for (k, n) in kdamonds {
        println!(
            "  {}/{k}/: {n} file(s) (the kdamond's context, targets and schemes)",
            tiermem_agent::damon::KDAMONDS
        );
    }
}

/// The tiermem-specific series of the metrics, and how many there are in all.
fn print_metrics(tick: u64, text: &str) {
    let series: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    println!(
        "tick {tick}: the endpoint serves {} series, e.g.",
        series.len()
    );
    for l in series
        .iter()
        .filter(|l| {
            l.starts_with("tiermem_vmstat")
                || l.starts_with("tiermem_damos")
                || l.starts_with("tiermem_ksm")
                || l.starts_with("tiermem_agent_ticks")
        })
        .take(8)
    {
        println!("  {l}");
    }
}
