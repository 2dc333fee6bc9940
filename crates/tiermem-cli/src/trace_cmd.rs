//! `tiermem trace import|info|record|heatmap`: the command-line front of `tiermem-trace`.

use crate::capture::{import_to, report_import, trace_failure};
use crate::{input, Failure};
use clap::{Subcommand, ValueEnum};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tiermem_trace::champsim::{self, ChampSimOptions};
use tiermem_trace::damo::{self, DamoOptions};
use tiermem_trace::format::TimeUnit;
use tiermem_trace::lackey::{self, LackeyOptions};
use tiermem_trace::pinatrace::{self, PinOptions};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Valgrind `--tool=lackey --trace-mem=yes` text.
    Lackey,
    /// Intel Pin pinatrace.out text.
    Pinatrace,
    /// ChampSim 64-byte (or 65-byte) instruction records, uncompressed.
    Champsim,
    /// `damo record` JSON or zlib-compressed JSON (json / json_compressed).
    Damo,
    /// The raw stream of tiermem's QEMU plugin (`qemu-x86_64 -plugin qemu_mem.so PROG 3>FILE`).
    Qemu,
    /// A page-activity profile (`tiermem trace profile`), replayed as reads of each page
    /// accessed in each interval.
    Profile,
}

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Convert a trace from another format into tiermem's format.
    Import {
        /// Input format.
        #[arg(long)]
        format: Format,
        /// Input file, or `-` for standard input.
        input: PathBuf,
        /// Output trace file.
        output: PathBuf,
        /// Skip malformed lines (counted) instead of stopping at the first.
        #[arg(long)]
        lenient: bool,
        /// Lackey: also record instruction fetches as reads.
        #[arg(long)]
        ifetch: bool,
        /// pinatrace, ChampSim: bytes per access (the formats do not record sizes).
        #[arg(long, default_value_t = 8)]
        access_size: u32,
        /// ChampSim: record size, 64 or 65 (default: from the file length, 64 for stdin).
        #[arg(long)]
        record_size: Option<usize>,
        /// damo: multiplier of the regenerated access rate.
        #[arg(long, default_value_t = 1.0)]
        damo_scale: f64,
        /// damo, profile: seed of the access draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// profile: reads per accessed page and interval (a profile does not count accesses
        /// within a page: 1 is the floor of the program's traffic).
        #[arg(long, default_value_t = 1.0)]
        accesses_per_page: f64,
    },
    /// Summarise a trace: accesses, threads, footprint, duration, page popularity.
    Info {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a program and record every memory access it makes, converted on the fly: under
    /// QEMU user-mode emulation with tiermem's plugin (default; tens of times slower than
    /// native), or under Valgrind Lackey (thousands of times slower).
    Record {
        /// Output trace file.
        #[arg(long, default_value = "trace.tmt")]
        out: PathBuf,
        /// The recorder: `qemu` (qemu-user and a C compiler, for the plugin) or `lackey`.
        #[arg(long, value_enum, default_value_t = Recorder::Qemu)]
        tool: Recorder,
        /// Also record instruction fetches as reads (Lackey only).
        #[arg(long)]
        ifetch: bool,
        /// The valgrind executable (`--tool lackey`).
        #[arg(long, default_value = "valgrind")]
        valgrind: String,
        /// The QEMU user-mode emulator (`--tool qemu`).
        #[arg(long, default_value = "qemu-x86_64")]
        qemu: String,
        /// The program and its arguments (after `--`).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Profile a running program at page granularity with the kernel's idle-page tracking
    /// (root; `CONFIG_IDLE_PAGE_TRACKING`): every `--interval`, which of its pages were
    /// accessed, its CPU time, threads, resident set and pages per node. Its cost grows with
    /// the pages, not the accesses (`bench --profile` measures it); replay with `trace import
    /// --format profile`.
    Profile {
        /// Output profile file.
        #[arg(long, default_value = "profile.tmprof")]
        out: PathBuf,
        /// Time between scans (`1s`, `200ms`; at least 10 ms).
        #[arg(long, default_value = "1s", value_parser = crate::parse_seconds)]
        interval: f64,
        /// Stop after this long (default: when the program exits, or on Ctrl-C).
        #[arg(long, value_parser = crate::parse_seconds)]
        duration: Option<f64>,
        /// Profile this running process instead of starting a program.
        #[arg(long, conflicts_with = "command")]
        pid: Option<u32>,
        /// The program and its arguments (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Draw a time × address access heatmap (heatmap.json, heatmap.png) into a directory.
    Heatmap {
        file: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 200)]
        time_bins: usize,
        #[arg(long, default_value_t = 200)]
        addr_bins: usize,
        /// Write only heatmap.json, not the PNG.
        #[arg(long)]
        no_plots: bool,
    },
}

/// Who records a program's accesses (`trace record --tool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Recorder {
    Qemu,
    Lackey,
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
pub fn run(cmd: TraceCmd) -> Result<(), Failure> {
    match cmd {
        TraceCmd::Import {
            format,
            input: inp,
            output,
            lenient,
            ifetch,
            access_size,
            record_size,
            damo_scale,
            seed,
            accesses_per_page,
        } => {
            if access_size == 0 || access_size > 4096 {
                return Err(input("--access-size: within 1..4096"));
            }
            let name = inp.display().to_string();
            refuse_same_file(&inp, &output)?;
            let (reader, len): (Box<dyn Read>, Option<u64>) = if inp == Path::new("-") {
                (Box::new(std::io::stdin().lock()), None)
            } else {
                let f = std::fs::File::open(&inp).map_err(|e| input(format!("{name}: {e}")))?;
                let len = f.metadata().ok().map(|m| m.len());
                (Box::new(f), len)
            };
            let unit = match format {
                Format::Damo => TimeUnit::Ns,
                Format::Profile => tiermem_trace::profile::TIME_UNIT,
                _ => TimeUnit::Instructions,
            };
            let t0 = Instant::now();
            let (st, footer) = import_to(
                &output,
                unit,
                &format!("{format:?}: {name}").to_lowercase(),
                |w| match format {
                    Format::Lackey => {
                        lackey::import(reader, &name, w, LackeyOptions { ifetch, lenient })
                    }
                    Format::Pinatrace => pinatrace::import(
                        reader,
                        &name,
                        w,
                        PinOptions {
                            size: access_size,
                            lenient,
                        },
                    ),
                    Format::Champsim => {
                        let rs = match (record_size, len) {
                            (Some(r), _) => r,
                            (None, Some(l)) => champsim::record_size_for_len(l, &name)?,
                            (None, None) => champsim::RECORD,
                        };
                        champsim::import(
                            reader,
                            &name,
                            w,
                            ChampSimOptions {
                                record_size: rs,
                                size: access_size,
                            },
                        )
                    }
                    Format::Qemu => tiermem_trace::qemu::import(
                        std::io::BufReader::with_capacity(4 << 20, reader),
                        &name,
                        w,
                    ),
                    Format::Damo => damo::import(
                        reader,
                        &name,
                        w,
                        DamoOptions {
                            scale: damo_scale,
                            seed,
                            ..DamoOptions::default()
                        },
                    ),
                    Format::Profile => tiermem_trace::profile::import(
                        reader,
                        &name,
                        w,
                        tiermem_trace::profile::ProfileImport {
                            accesses_per_page,
                            seed,
                            ..Default::default()
                        },
                    ),
                },
            )?;
            report_import(&output, &st, &footer, t0.elapsed().as_secs_f64());
            Ok(())
        }
        TraceCmd::Info { file, json } if is_profile_file(&file) => {
            let name = file.display().to_string();
            let f = std::fs::File::open(&file).map_err(|e| input(format!("{name}: {e}")))?;
            let info = tiermem_trace::profile::info(std::io::BufReader::new(f), &name)
                .map_err(trace_failure)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&info).expect("serialises")
                );
            } else {
                print_profile_info(&name, &info);
            }
            Ok(())
        }
        TraceCmd::Info { file, json } => {
            let info = tiermem_trace::info::info(&file).map_err(trace_failure)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&info).expect("serialises")
                );
            } else {
                print_info(&info);
            }
            Ok(())
        }
        TraceCmd::Record {
            out,
            tool,
            ifetch,
            valgrind,
            qemu,
            command,
        } => match tool {
            Recorder::Lackey => crate::capture::record_lackey(&out, ifetch, &valgrind, &command),
            Recorder::Qemu => {
                if ifetch {
                    return Err(input("--ifetch: only with --tool lackey"));
                }
                crate::capture::record_qemu(&out, &qemu, &command)
            }
        },
        TraceCmd::Profile {
            out,
            interval,
            duration,
            pid,
            command,
        } => {
            if interval < 0.01 {
                return Err(input("--interval: at least 10ms"));
            }
            let target = match (pid, command.is_empty()) {
                (Some(p), _) => crate::profile_cmd::Target::Pid(p),
                (None, false) => crate::profile_cmd::Target::Command(&command),
                (None, true) => {
                    return Err(input(
                        "trace profile: give a program after `--`, or --pid PID",
                    ))
                }
            };
            let r = crate::profile_cmd::record(
                &out,
                target,
                std::time::Duration::from_secs_f64(interval),
                duration.map(std::time::Duration::from_secs_f64),
                std::process::Stdio::inherit(),
            )?;
            crate::profile_cmd::report(&out, &r);
            Ok(())
        }
        TraceCmd::Heatmap {
            file,
            out,
            time_bins,
            addr_bins,
            no_plots,
        } => {
            let hm =
                tiermem_trace::info::heatmap(&file, time_bins, addr_bins).map_err(trace_failure)?;
            std::fs::create_dir_all(&out).map_err(|e| Failure {
                code: 1,
                err: anyhow::anyhow!("cannot create {}: {e}", out.display()),
            })?;
            crate::write_file(
                &out.join("heatmap.json"),
                &serde_json::to_string(&hm).expect("serialises"),
            )?;
            let results = serde_json::json!({
                "experiment": "trace-heatmap",
                "variants": [],
                "plots": [{"file": "heatmap.png", "type": "heatmap", "data": "heatmap.json"}],
            });
            crate::write_file(
                &out.join("results.json"),
                &serde_json::to_string_pretty(&results).expect("serialises"),
            )?;
            println!(
                "heatmap: {} time bins x {} address bins over {} pages in {} ranges -> {}",
                hm.time_bins,
                hm.addr_bins,
                hm.pages,
                hm.ranges.len(),
                out.join("heatmap.json").display()
            );
            if !no_plots {
                crate::render_plots(&out);
            }
            Ok(())
        }
    }
}

/// `trace import IN OUT` with OUT the same file as IN (or a link to it) would destroy the
/// input: refused before either is opened.
fn refuse_same_file(inp: &Path, output: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::MetadataExt;
    let (Ok(a), Ok(b)) = (std::fs::metadata(inp), std::fs::metadata(output)) else {
        return Ok(());
    };
    if a.dev() == b.dev() && a.ino() == b.ino() {
        return Err(input(format!(
            "{}: the output is the input file; write the trace elsewhere",
            output.display()
        )));
    }
    Ok(())
}

/// Whether `path` starts with the profile magic (a trace, or unreadable, otherwise: the
/// trace reader then reports it).
fn is_profile_file(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| tiermem_trace::profile::is_profile(&head))
}

fn print_profile_info(name: &str, i: &tiermem_trace::profile::ProfileInfo) {
    println!("file        {name} (page-activity profile)");
    if let Some(h) = &i.header {
        let what = if h.command.is_empty() {
            format!("pid {}", h.pid)
        } else {
            h.command.join(" ")
        };
        println!("program     {what}");
        println!(
            "recorded    host {}, kernel {}, {}, every {:.3} s",
            h.host,
            h.kernel,
            h.source,
            h.interval_ns as f64 / 1e9
        );
    }
    println!(
        "intervals   {} (peak RSS {:.1} MiB, {:.1} MiB touched, pages accessed per interval: mean {:.0}, median {})",
        i.intervals,
        i.peak_rss_pages as f64 / 256.0,
        i.touched_pages as f64 / 256.0,
        i.mean_accessed_pages,
        i.median_accessed_pages
    );
    let share: Vec<String> = i
        .node_share
        .iter()
        .enumerate()
        .map(|(n, s)| format!("{n}:{:.1}%", 100.0 * s))
        .collect();
    println!("on nodes    {}", share.join(" "));
    if let Some(e) = &i.end {
        println!(
            "cost        program CPU {:.2} s, recorder CPU {:.3} s over {:.2} s",
            e.program_cpu_ns as f64 / 1e9,
            e.recorder_cpu_ns as f64 / 1e9,
            e.wall_ns as f64 / 1e9
        );
    }
}

fn print_info(i: &tiermem_trace::info::Info) {
    let unit = match i.time_unit {
        TimeUnit::Instructions => "instructions",
        TimeUnit::Ns => "ns",
    };
    println!(
        "file        {} ({} bytes, {:.2} bytes/access)",
        i.file, i.bytes, i.bytes_per_access
    );
    println!("source      {}", i.source);
    println!(
        "accesses    {} (reads {}, writes {}, modifies {})",
        i.accesses, i.reads, i.writes, i.modifies
    );
    let th: Vec<String> = i.threads.iter().map(|(t, n)| format!("{t}:{n}")).collect();
    println!("threads     {} [{}]", i.threads.len(), th.join(" "));
    println!(
        "footprint   {} pages = {} in {} address ranges",
        i.pages,
        tiermem_core::units::Bytes(i.footprint_bytes),
        i.ranges
    );
    println!(
        "duration    {} {unit} (from {} to {})",
        i.last_time.saturating_sub(i.first_time),
        i.first_time,
        i.last_time
    );
    let p = &i.popularity;
    println!(
        "popularity  hottest 1% of pages take {:.1}% of accesses, 10% take {:.1}%, 20% take {:.1}%",
        100.0 * p.top1pct_share,
        100.0 * p.top10pct_share,
        100.0 * p.top20pct_share
    );
    println!(
        "            pages for 50% / 90% / 99% of accesses: {} / {} / {}",
        p.pages_for_50pct, p.pages_for_90pct, p.pages_for_99pct
    );
    let h: Vec<String> = p
        .histogram
        .iter()
        .map(|(lo, hi, n)| format!("[{lo},{hi}):{n}"))
        .collect();
    println!("            pages by accesses: {}", h.join(" "));
    let hot: Vec<String> = p
        .hottest
        .iter()
        .map(|(pg, n)| format!("{:#x}:{n}", pg << 12))
        .collect();
    println!("            hottest pages: {}", hot.join(" "));
}
