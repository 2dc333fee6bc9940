//! `tiermem workload run`: run a scenario's synthetic workload on this host and record the
//! kernel's behaviour in the simulator's timeline format. Thin: parse, call
//! `tiermem_agent::workload`, print.

use clap::Subcommand;
use std::path::PathBuf;
use tiermem_agent::fs::HostFs;
use tiermem_agent::Error;

#[derive(Subcommand)]
pub enum WorkloadCmd {
    /// Run the scenario's `synthetic` workload with its `[kernel]` knobs (restored at the
    /// end) and write DIR/timeline.csv (the simulator's columns) and DIR/meta.json.
    Run {
        /// The scenario: a simulator config with one `synthetic` workload.
        spec: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Override the scenario's duration (`2s`, `500ms`, or seconds).
        #[arg(long, allow_hyphen_values = true, value_parser = crate::parse_seconds)]
        duration: Option<f64>,
        /// State file recording the knobs' originals (default OUT/knobs.state; after
        /// kill -9: `tiermem agent --restore --state-file FILE`).
        #[arg(long)]
        state_file: Option<PathBuf>,
        /// Print a progress line every this many seconds (0: quiet).
        #[arg(long, default_value_t = 5.0)]
        progress: f64,
        #[arg(long, default_value = "/", hide = true)]
        root: PathBuf,
    },
}

pub fn run(cmd: WorkloadCmd) -> Result<(), Error> {
    match cmd {
        WorkloadCmd::Run {
            spec,
            out,
            duration,
            state_file,
            progress,
            root,
        } => {
            let meta = tiermem_agent::workload::run(
                &spec,
                &HostFs::new(root),
                &tiermem_agent::workload::Options {
                    out: out.clone(),
                    duration_s: duration,
                    state_file,
                    progress_every_s: progress,
                    proc_dir: None,
                },
            )?;
            let accesses: u64 = meta.threads.iter().map(|t| t.accesses).sum();
            let late: u64 = meta.threads.iter().map(|t| t.late).sum();
            println!(
                "{}: {} thread(s), {accesses} accesses in {:.1} s on {} (population {:.2} s){}",
                meta.workload,
                meta.threads.len(),
                meta.duration_s,
                meta.kernel_release,
                meta.populate_seconds,
                if late > 0 {
                    format!(
                        "; {late} accesses more than 1 ms late (the host could not keep the rate)"
                    )
                } else {
                    String::new()
                }
            );
            println!("results in {}", out.display());
            Ok(())
        }
    }
}
