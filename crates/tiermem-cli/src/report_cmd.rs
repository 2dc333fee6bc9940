//! `tiermem report heatmap|wss|access`: `damo report`'s views of a DAMON record, from
//! `tiermem damon record` (the kernel), a simulated run with a recording context, or damo's
//! own `damon.data` JSON; `heatmap` also reads a tiermem trace.

use crate::{input, write_file, Failure};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use tiermem_core::damon_record::DamonRecord;
use tiermem_trace::damo;
use tiermem_trace::report;

#[derive(Subcommand)]
pub enum ReportCmd {
    /// Time × address access heatmap (text on the terminal; heatmap.json and .png with --out).
    Heatmap(HeatmapArgs),
    /// Working-set size distribution over the snapshots (`damo report wss`).
    Wss(WssArgs),
    /// The regions of one snapshot with size, access rate and age (`damo report access`).
    Access(AccessArgs),
}

/// What a report reads.
#[derive(Args)]
pub struct Source {
    /// A DAMON record: the directory `tiermem damon record --out` or `tiermem sim` wrote
    /// (its damon.json), a damo JSON record (json or json_compressed), or for `heatmap` a
    /// tiermem trace (.tmt).
    input: PathBuf,
}

#[derive(Args)]
pub struct HeatmapArgs {
    #[command(flatten)]
    source: Source,
    /// Which target of the record (its index).
    #[arg(long, default_value_t = 0)]
    target: usize,
    /// Rows (time bins). Default 40, damo's terminal resolution.
    #[arg(long, default_value_t = 40)]
    time_bins: usize,
    /// Columns (address bins). Default 80.
    #[arg(long, default_value_t = 80)]
    addr_bins: usize,
    /// Write heatmap.json and heatmap.png here instead of printing.
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: write only heatmap.json, not the PNG.
    #[arg(long)]
    no_plots: bool,
    /// Show every monitored range, not only the ranges found accessed at least once.
    #[arg(long)]
    all_ranges: bool,
    /// Show only this address range, START-END in bytes (hex with 0x, or decimal; END
    /// excluded), as damo's `--address_range`: e.g. one mapping of a vaddr record.
    #[arg(long, value_parser = parse_addr_range)]
    addr_range: Option<(u64, u64)>,
}

/// `START-END`, each hex (`0x…`) or decimal, START below END.
fn parse_addr_range(s: &str) -> Result<(u64, u64), String> {
    let num = |t: &str| {
        let t = t.trim();
        match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => t.parse(),
        }
        .map_err(|e| format!("`{t}` is not an address ({e})"))
    };
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("`{s}` is not START-END"))?;
    let (a, b) = (num(a)?, num(b)?);
    if a >= b {
        return Err(format!("the start {a:#x} is not below the end {b:#x}"));
    }
    Ok((a, b))
}

#[derive(Args)]
pub struct WssArgs {
    #[command(flatten)]
    source: Source,
    /// A region is in the working set with at least this many samples (`--acc_thres`).
    #[arg(long, default_value_t = 1)]
    acc_thres: u64,
    /// ... and at least this many bytes (`--sz_thres`).
    #[arg(long, default_value_t = 1)]
    sz_thres: u64,
    /// Snapshots skipped at the start, while DAMON adapts its regions (damo's 20).
    #[arg(long, default_value_t = 20)]
    exclude_snapshots: usize,
    /// Percentiles to print.
    #[arg(long, value_delimiter = ',', default_value = "0,25,50,75,100")]
    percentiles: Vec<u32>,
    /// Print JSON (the series and the percentiles).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct AccessArgs {
    #[command(flatten)]
    source: Source,
    /// Which snapshot (negative counts from the end). Default the last.
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    snapshot: i64,
}

/// A record read from `path`, with the name errors use.
fn load(path: &Path) -> Result<(Vec<DamonRecord>, String), Failure> {
    let file = if path.is_dir() {
        path.join("damon.json")
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let f = std::fs::File::open(&file).map_err(|e| {
        input(if path.is_dir() {
            format!(
                "{}: no damon.json ({e}); record with `tiermem damon record --out DIR` or set `record = true` on a simulated DAMON context",
                path.display()
            )
        } else {
            format!("{name}: cannot read: {e}")
        })
    })?;
    let doc = damo::read_document(f, &name).map_err(input)?;
    let defaults = damo::DamoOptions::default();
    let recs =
        damo::parse_records(&doc, &name, defaults.sample_us, defaults.aggr_us).map_err(input)?;
    if recs.is_empty() {
        return Err(input(format!("{name}: the record has no targets")));
    }
    Ok((recs, name))
}

fn is_trace(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
        && &magic == tiermem_trace::format::MAGIC
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
pub fn run(cmd: ReportCmd) -> Result<(), Failure> {
    match cmd {
        ReportCmd::Heatmap(a) => heatmap(a),
        ReportCmd::Wss(a) => {
            let (recs, _) = load(&a.source.input)?;
            let w = report::wss(
                &recs,
                a.acc_thres,
                a.sz_thres,
                a.exclude_snapshots,
                &a.percentiles,
            );
            if a.json {
                println!("{}", serde_json::to_string_pretty(&w).expect("serialises"));
            } else {
                print!("{}", report::render_wss(&w));
            }
            Ok(())
        }
        ReportCmd::Access(a) => {
            let (recs, name) = load(&a.source.input)?;
            let text = report::render_access(&recs, a.snapshot)
                .map_err(|e| input(format!("{name}: {e}")))?;
            print!("{text}");
            Ok(())
        }
    }
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
fn heatmap(a: HeatmapArgs) -> Result<(), Failure> {
    let path = &a.source.input;
    let (json, text) = if is_trace(path) {
        if a.addr_range.is_some() {
            return Err(input(format!(
                "{}: --addr-range applies to DAMON records, not to traces",
                path.display()
            )));
        }
        let hm = tiermem_trace::info::heatmap(path, a.time_bins, a.addr_bins).map_err(input)?;
        let json = serde_json::to_string(&hm).expect("serialises");
        (json, None)
    } else {
        let (recs, name) = load(path)?;
        let rec = report::pick_target(&recs, a.target, &name).map_err(input)?;
        let hm = report::heatmap(
            rec,
            &name,
            (a.time_bins, a.addr_bins),
            a.all_ranges,
            a.addr_range,
        )
        .map_err(input)?;
        (
            serde_json::to_string(&hm).expect("serialises"),
            Some(report::render_heatmap(&hm)),
        )
    };
    let Some(out) = a.out else {
        match text {
            Some(t) => print!("{t}"),
            None => {
                return Err(input(format!(
                    "{}: a trace's heatmap is drawn into a directory: add --out DIR (or use `tiermem trace heatmap`)",
                    path.display()
                )))
            }
        }
        return Ok(());
    };
    std::fs::create_dir_all(&out).map_err(|e| Failure {
        code: 1,
        err: anyhow::anyhow!("cannot create {}: {e}", out.display()),
    })?;
    write_file(&out.join("heatmap.json"), &json)?;
    let results = serde_json::json!({
        "experiment": "report-heatmap",
        "variants": [],
        "plots": [{"file": "heatmap.png", "type": "heatmap", "data": "heatmap.json"}],
    });
    write_file(
        &out.join("results.json"),
        &serde_json::to_string_pretty(&results).expect("serialises"),
    )?;
    println!("heatmap -> {}", out.join("heatmap.json").display());
    if !a.no_plots {
        crate::render_plots(&out);
    }
    Ok(())
}
