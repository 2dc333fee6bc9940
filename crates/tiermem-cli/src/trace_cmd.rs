//! `tiermem trace import|info|record|heatmap`: the command-line front of `tiermem-trace`.

use crate::{input, Failure};
use clap::{Subcommand, ValueEnum};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tiermem_trace::champsim::{self, ChampSimOptions};
use tiermem_trace::damo::{self, DamoOptions};
use tiermem_trace::format::{TimeUnit, TraceWriter};
use tiermem_trace::lackey::{self, LackeyOptions};
use tiermem_trace::pinatrace::{self, PinOptions};
use tiermem_trace::{ImportStats, TraceError};

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
        /// damo: seed of the access draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Summarise a trace: accesses, threads, footprint, duration, page popularity.
    Info {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a program under Valgrind Lackey and convert its trace on the fly (no text on disk).
    Record {
        /// Output trace file.
        #[arg(long, default_value = "trace.tmt")]
        out: PathBuf,
        /// Also record instruction fetches as reads.
        #[arg(long)]
        ifetch: bool,
        /// The valgrind executable.
        #[arg(long, default_value = "valgrind")]
        valgrind: String,
        /// The program and its arguments (after `--`).
        #[arg(last = true, required = true)]
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

fn trace_failure(e: TraceError) -> Failure {
    crate::classified(e.is_input_error(), e)
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
                },
            )?;
            report_import(&output, &st, &footer, t0.elapsed().as_secs_f64());
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
            ifetch,
            valgrind,
            command,
        } => record(&out, ifetch, &valgrind, &command),
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

/// Write the trace to a new temporary file beside `output` (created exclusively, so never
/// through a link), run `f` with a writer on it, finish the trace, then rename it over
/// `output`: a failed import leaves `output` as it was, and a link at `output` is replaced,
/// not followed.
fn import_to(
    output: &Path,
    unit: TimeUnit,
    source: &str,
    f: impl FnOnce(
        &mut TraceWriter<std::io::BufWriter<std::fs::File>>,
    ) -> Result<ImportStats, TraceError>,
) -> Result<(ImportStats, tiermem_trace::Footer), Failure> {
    let oname = output.display().to_string();
    let tmp = {
        let mut name = std::ffi::OsString::from(".");
        name.push(
            output
                .file_name()
                .unwrap_or_else(|| std::ffi::OsStr::new("trace")),
        );
        name.push(format!(".{}.tmp", std::process::id()));
        output.with_file_name(name)
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Failure {
            code: 1,
            err: anyhow::anyhow!("{}: {e}", tmp.display()),
        })?;
    let mut w = TraceWriter::with_name(
        std::io::BufWriter::with_capacity(1 << 20, file),
        unit,
        source,
        &oname,
    )
    .map_err(trace_failure)?;
    let r = f(&mut w).and_then(|st| w.finish().map(|footer| (st, footer)));
    let r = r.map_err(trace_failure).and_then(|ok| {
        std::fs::rename(&tmp, output)
            .map(|()| ok)
            .map_err(|e| Failure {
                code: 1,
                err: anyhow::anyhow!("cannot rename {} to {oname}: {e}", tmp.display()),
            })
    });
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

fn report_import(output: &Path, st: &ImportStats, footer: &tiermem_trace::Footer, secs: f64) {
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    println!(
        "imported {} lines/records ({} instructions, {} skipped, {} malformed) -> {} accesses in {:.2} s ({:.1} M lines/s)",
        st.lines,
        st.instructions,
        st.skipped,
        st.malformed,
        footer.records,
        secs,
        st.lines as f64 / secs.max(1e-9) / 1e6
    );
    println!(
        "wrote {} ({} bytes, {:.2} bytes/access, {} pages touched)",
        output.display(),
        size,
        if footer.records > 0 {
            size as f64 / footer.records as f64
        } else {
            0.0
        },
        footer.pages
    );
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

/// Run `command` under Valgrind Lackey with its log on a pipe (fd 3 of valgrind) and import
/// the text as it arrives; the program's own stdout and stderr stay the terminal's.
/// The program `command` names, as `execvp` would find it (a name with a `/` as a path,
/// else the first match on `PATH`), refused when it does not exist or is not executable:
/// Valgrind would only say so in its log and exit, leaving an empty trace behind.
fn resolve_program(prog: &str) -> Result<PathBuf, Failure> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return match std::fs::metadata(&p) {
            Err(e) => Err(input(format!("cannot record {prog}: {e}"))),
            Ok(_) if !runnable(&p) => Err(input(format!(
                "cannot record {prog}: not an executable file"
            ))),
            Ok(_) => Ok(p),
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(prog))
        .find(|p| runnable(p))
        .ok_or_else(|| input(format!("cannot record {prog}: no such program on PATH")))
}

fn record(out: &Path, ifetch: bool, valgrind: &str, command: &[String]) -> Result<(), Failure> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    resolve_program(&command[0])?;
    let (reader, writer) = std::io::pipe().map_err(|e| Failure {
        code: 1,
        err: anyhow::anyhow!("cannot create a pipe: {e}"),
    })?;
    let wfd = writer.as_raw_fd();
    let mut cmd = std::process::Command::new(valgrind);
    cmd.args(["--tool=lackey", "--trace-mem=yes", "--log-fd=3"])
        .args(command);
    // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(wfd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        input(format!(
            "cannot run {valgrind}: {e} (is Valgrind installed?)"
        ))
    })?;
    drop(writer); // the child holds the only write end: EOF when it exits
    let source = format!("lackey: valgrind {}", command.join(" "));
    let res = import_to(out, lackey::TIME_UNIT, &source, |w| {
        lackey::import(
            reader,
            "<valgrind lackey>",
            w,
            LackeyOptions {
                ifetch,
                lenient: false,
            },
        )
    });
    if res.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| Failure {
        code: 1,
        err: anyhow::anyhow!("waiting for valgrind: {e}"),
    })?;
    let (st, footer) = res?;
    if st.accesses == 0 {
        let _ = std::fs::remove_file(out);
        return Err(input(format!(
            "{valgrind} recorded no access of {} ({status}); nothing written to {}",
            command[0],
            out.display()
        )));
    }
    if !status.success() {
        eprintln!("tiermem: warning: the recorded program (under valgrind) exited with {status}");
    }
    report_import(out, &st, &footer, t0.elapsed().as_secs_f64());
    Ok(())
}
