//! `damo record` results (`damon.data` written with `--output_type json` or
//! `json_compressed`, the latter being zlib-compressed JSON), replayed as region-level
//! access probabilities.
//!
//! The document is a list of records, one per monitoring target:
//! `{"target_id", "intervals": {"sample", "aggr", ...} | null, "snapshots": [{"start_time",
//! "end_time", "regions": [{"start", "end", "nr_accesses": {"samples", "percent"} | n,
//! "age": ...}]}]}`. Numbers may be JSON numbers or strings (`"4096"`, `"1,024"`, `"5 ms"`);
//! times without a unit are ns, intervals without a unit µs (damo's own conventions).
//!
//! DAMON samples one random page per region per sampling interval and counts the samples
//! that found it accessed (`kdamond_fn` → `damon_va_check_accesses`), so
//! `p = nr_accesses / (aggr / sample)` estimates the probability that a page of the region
//! is accessed within one sampling interval. The importer regenerates accesses from that
//! estimate: in every sampling interval of a snapshot, a region of N pages gets
//! `p · N · scale` accesses (the fraction by a seeded draw) to uniformly drawn pages, all
//! stamped with the interval's start time. DAMON sees neither access kinds nor sizes:
//! accesses are one-line (64 B) reads. Targets become threads 0, 1, ... in record order.

use crate::format::{TimeUnit, TraceWriter};
use crate::{ImportStats, Kind, Record, SplitMix, TraceError};
use serde_json::Value;
use std::io::{Read, Write};
use tiermem_core::damon::Region;
use tiermem_core::damon_record::{DamonRecord, RecordSnapshot};

pub const TIME_UNIT: TimeUnit = TimeUnit::Ns;

#[derive(Clone, Copy, Debug)]
pub struct DamoOptions {
    /// Multiplier of the regenerated access rate (1 = DAMON's per-page estimate). Default 1.
    pub scale: f64,
    /// Sampling interval when the record has none, µs. Default 5000 (DAMON's default).
    pub sample_us: u64,
    /// Aggregation interval when the record has none, µs. Default 100000.
    pub aggr_us: u64,
    /// Seed of the access draws.
    pub seed: u64,
    /// Refuse to write more accesses than this (lower `scale`). Default 2^32.
    pub max_accesses: u64,
}

impl Default for DamoOptions {
    fn default() -> Self {
        DamoOptions {
            scale: 1.0,
            sample_us: 5000,
            aggr_us: 100_000,
            seed: 1,
            max_accesses: 1 << 32,
        }
    }
}

/// A region as the importer uses it: pages and the per-sampling-interval access probability.
struct Region2 {
    start_page: u64,
    pages: u64,
    p: f64,
}

struct Snapshot {
    start_ns: u64,
    end_ns: u64,
    regions: Vec<Region2>,
}

struct Target {
    sample_ns: u64,
    snapshots: Vec<Snapshot>,
}

/// A number given as a JSON number or a string with an optional unit; `unit_ns` is the
/// multiplier for unitless values when the value is a time.
fn number(v: &Value, time_unit_ns: Option<f64>) -> Option<f64> {
    match v {
        Value::Number(n) => Some(n.as_f64()? * time_unit_ns.unwrap_or(1.0)),
        Value::String(s) => {
            let s: String = s.chars().filter(|&c| c != ',').collect();
            let s = s.trim();
            let split = s
                .find(|c: char| {
                    !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e')
                })
                .unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let x: f64 = num.trim().parse().ok()?;
            let unit = unit.trim();
            let mult = match (unit, time_unit_ns) {
                ("", t) => t.unwrap_or(1.0),
                ("ns", Some(_)) => 1.0,
                ("us", Some(_)) => 1e3,
                ("ms", Some(_)) => 1e6,
                ("s", Some(_)) => 1e9,
                ("m", Some(_)) => 60e9,
                ("B", None) => 1.0,
                ("KiB", None) => 1024.0,
                ("MiB", None) => 1024.0 * 1024.0,
                ("GiB", None) => 1024.0 * 1024.0 * 1024.0,
                _ => return None,
            };
            Some(x * mult)
        }
        _ => None,
    }
}

/// Read damo's record document into [`DamonRecord`]s. Intervals missing from a record are
/// `default_sample_us` / `default_aggr_us`; `nr_accesses` given in percent becomes samples
/// (rounded), an age given in µs becomes aggregation intervals. damo's markers (a `0-0`
/// region, `nr_accesses` −1) are dropped.
pub fn parse_records(
    doc: &Value,
    name: &str,
    default_sample_us: u64,
    default_aggr_us: u64,
) -> Result<Vec<DamonRecord>, TraceError> {
    let bad = |path: String, what: &str| TraceError::invalid(name, format!("{path}: {what}"));
    let recs = doc
        .as_array()
        .ok_or_else(|| bad("top level".into(), "expected a list of damo records"))?;
    let mut out = Vec::new();
    for (ri, rec) in recs.iter().enumerate() {
        let rp = format!("records[{ri}]");
        let (mut sample_us, mut aggr_us) = (default_sample_us as f64, default_aggr_us as f64);
        let mut update_us = 0f64;
        if let Some(iv) = rec.get("intervals").filter(|v| !v.is_null()) {
            // damo 3 writes `sample_us`; older versions `sample`.
            let interval = |keys: [&str; 2]| -> Result<Option<f64>, TraceError> {
                let Some((k, v)) = keys.iter().find_map(|k| iv.get(*k).map(|v| (k, v))) else {
                    return Ok(None);
                };
                let x = number(v, Some(1e3))
                    .ok_or_else(|| bad(format!("{rp}.intervals.{k}"), "not a time"))?;
                Ok(Some(x / 1e3))
            };
            sample_us = interval(["sample_us", "sample"])?.unwrap_or(sample_us);
            aggr_us = interval(["aggr_us", "aggr"])?.unwrap_or(aggr_us);
            update_us = interval(["ops_update_us", "ops_update"])?.unwrap_or(0.0);
        }
        if !(sample_us >= 1.0 && aggr_us >= sample_us && aggr_us < 1e12) {
            return Err(bad(format!("{rp}.intervals"), "need 1us <= sample <= aggr"));
        }
        let max_samples = (aggr_us / sample_us).max(1.0);
        let snaps = rec
            .get("snapshots")
            .and_then(|s| s.as_array())
            .ok_or_else(|| bad(format!("{rp}.snapshots"), "missing or not a list"))?;
        let field = |k: &str| {
            rec.get(k)
                .and_then(|v| number(v, None))
                .filter(|x| (0.0..1.8e19).contains(x))
                .map_or(0, |x| x as u64)
        };
        let mut t = DamonRecord {
            kdamond_idx: field("kdamond_idx") as usize,
            context_idx: field("context_idx") as usize,
            target_id: field("target_id"),
            sample_us: sample_us as u64,
            aggr_us: aggr_us as u64,
            ops_update_us: update_us as u64,
            snapshots: Vec::new(),
        };
        for (si, s) in snaps.iter().enumerate() {
            let sp = format!("{rp}.snapshots[{si}]");
            let time = |k: &str| -> Result<u64, TraceError> {
                let v = s
                    .get(k)
                    .ok_or_else(|| bad(format!("{sp}.{k}"), "missing"))?;
                let x =
                    number(v, Some(1.0)).ok_or_else(|| bad(format!("{sp}.{k}"), "not a time"))?;
                if !(0.0..1.8e19).contains(&x) {
                    return Err(bad(format!("{sp}.{k}"), "out of range"));
                }
                Ok(x as u64)
            };
            let (start_ns, end_ns) = (time("start_time")?, time("end_time")?);
            if end_ns < start_ns {
                return Err(bad(sp, "end_time is before start_time"));
            }
            let regions = s
                .get("regions")
                .and_then(|r| r.as_array())
                .ok_or_else(|| bad(format!("{sp}.regions"), "missing or not a list"))?;
            let mut snap = RecordSnapshot {
                start_ns,
                end_ns,
                regions: Vec::new(),
            };
            for (gi, r) in regions.iter().enumerate() {
                let gp = format!("{sp}.regions[{gi}]");
                if let Some(region) = parse_region(r, &gp, max_samples, aggr_us, &bad)? {
                    snap.regions.push(region);
                }
            }
            t.snapshots.push(snap);
        }
        out.push(t);
    }
    Ok(out)
}

/// One region of a snapshot; `None` for damo's markers.
fn parse_region(
    r: &Value,
    gp: &str,
    max_samples: f64,
    aggr_us: f64,
    bad: &dyn Fn(String, &str) -> TraceError,
) -> Result<Option<Region>, TraceError> {
    let addr = |k: &str| -> Result<u64, TraceError> {
        let x = r
            .get(k)
            .and_then(|v| number(v, None))
            .ok_or_else(|| bad(format!("{gp}.{k}"), "missing or not an address"))?;
        if !(0.0..1.8e19).contains(&x) {
            return Err(bad(format!("{gp}.{k}"), "out of range"));
        }
        Ok(x as u64)
    };
    let (start, end) = (addr("start")?, addr("end")?);
    if start == 0 && end == 0 {
        return Ok(None); // damo's fake snapshot marker region
    }
    if end <= start {
        return Err(bad(gp.to_string(), "end must be above start"));
    }
    let na = r
        .get("nr_accesses")
        .ok_or_else(|| bad(format!("{gp}.nr_accesses"), "missing"))?;
    let samples = match na {
        Value::Object(o) => match (
            o.get("samples").filter(|v| !v.is_null()),
            o.get("percent").filter(|v| !v.is_null()),
        ) {
            (Some(s), _) => number(s, None),
            (None, Some(pc)) => number(pc, None).map(|x| (x / 100.0 * max_samples).round()),
            _ => None,
        },
        v => number(v, None),
    }
    .ok_or_else(|| bad(format!("{gp}.nr_accesses"), "not a count"))?;
    if samples < 0.0 {
        return Ok(None); // fake region (-1)
    }
    let age = match r.get("age") {
        Some(Value::Object(o)) => match (
            o.get("aggr_intervals").filter(|v| !v.is_null()),
            o.get("usec").filter(|v| !v.is_null()),
        ) {
            (Some(a), _) => number(a, None),
            (None, Some(u)) => number(u, Some(1e3)).map(|ns| (ns / 1e3 / aggr_us).floor()),
            _ => Some(0.0),
        },
        Some(Value::Null) | None => Some(0.0),
        Some(v) => number(v, None),
    }
    .filter(|a| *a >= 0.0)
    .ok_or_else(|| bad(format!("{gp}.age"), "not an age"))?;
    Ok(Some(Region {
        start,
        end,
        nr_accesses: samples.min(u64::MAX as f64) as u64,
        age: age.min(u64::MAX as f64) as u64,
    }))
}

/// A record as the importer's access probabilities.
fn target_of(rec: &DamonRecord) -> Target {
    let max_samples = (rec.aggr_us as f64 / rec.sample_us as f64).max(1.0);
    Target {
        sample_ns: rec.sample_us * 1000,
        snapshots: rec
            .snapshots
            .iter()
            .map(|s| Snapshot {
                start_ns: s.start_ns,
                end_ns: s.end_ns,
                regions: s
                    .regions
                    .iter()
                    .map(|r| {
                        let start_page = r.start >> 12;
                        Region2 {
                            start_page,
                            pages: ((r.end + 4095) >> 12).saturating_sub(start_page).max(1),
                            p: (r.nr_accesses as f64 / max_samples).min(1.0),
                        }
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The largest damo document read, before and after zlib decompression: a day-long record
/// of a large process is tens of MiB of JSON, so a bigger one is a mistake or a zip bomb.
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// Sampling intervals an import may expand a record into (each one 24 bytes while the
/// records are ordered): 16 Mi intervals are 4.6 hours of 1 ms sampling.
pub const MAX_SAMPLING_INTERVALS: u64 = 1 << 24;

/// Read a damo JSON or zlib-compressed JSON document (detected from its first byte), at
/// most [`MAX_DOCUMENT_BYTES`] either way.
pub fn read_document<R: Read>(input: R, name: &str) -> Result<Value, TraceError> {
    let too_big = |what: &str| {
        TraceError::invalid(
            name,
            format!(
                "{what} is larger than {} MiB: not a damo record this tool reads",
                MAX_DOCUMENT_BYTES >> 20
            ),
        )
    };
    let mut data = Vec::new();
    input
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(|e| TraceError::Read {
            path: name.to_string(),
            source: e,
        })?;
    if data.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(too_big("the file"));
    }
    let first = data.iter().copied().find(|c| !c.is_ascii_whitespace());
    let text = match first {
        Some(b'[') | Some(b'{') => data,
        Some(0x78) if data[0] == 0x78 => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&data[..])
                .take(MAX_DOCUMENT_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| TraceError::invalid(name, format!("json_compressed: bad zlib data: {e}")))?;
            if out.len() as u64 > MAX_DOCUMENT_BYTES {
                return Err(too_big("the decompressed document"));
            }
            out
        }
        _ => {
            return Err(TraceError::offset(
                name,
                0,
                "not a damo record: expected JSON (`--output_type json`) or zlib-compressed JSON (`json_compressed`)",
            ))
        }
    };
    serde_json::from_slice(&text).map_err(|e| TraceError::Line {
        path: name.to_string(),
        line: e.line() as u64,
        msg: format!("column {}: {e}", e.column()),
    })
}

pub fn import<R: Read, W: Write>(
    input: R,
    name: &str,
    w: &mut TraceWriter<W>,
    opts: DamoOptions,
) -> Result<ImportStats, TraceError> {
    if !(opts.scale > 0.0 && opts.scale.is_finite()) {
        return Err(TraceError::invalid(name, "damo scale must be positive"));
    }
    let doc = read_document(input, name)?;
    let records = parse_records(&doc, name, opts.sample_us, opts.aggr_us)?;
    let targets: Vec<Target> = records.iter().map(target_of).collect();
    // Sampling intervals of every target, in time order (ties by target).
    let mut slots: Vec<(u64, u32, u32, u64)> = Vec::new(); // (time, target, snapshot, k)
    let mut expected = 0f64;
    let t0 = targets
        .iter()
        .flat_map(|t| t.snapshots.iter().map(|s| s.start_ns))
        .min()
        .unwrap_or(0);
    for (ti, t) in targets.iter().enumerate() {
        for (si, s) in t.snapshots.iter().enumerate() {
            let n = ((s.end_ns - s.start_ns) / t.sample_ns.max(1)).max(1);
            if slots.len() as u64 + n > MAX_SAMPLING_INTERVALS {
                return Err(TraceError::invalid(
                    name,
                    format!(
                        "the snapshots span more than {MAX_SAMPLING_INTERVALS} sampling intervals (records[{ti}].snapshots[{si}] alone has {n}): a longer record than this importer expands; import a shorter part"
                    ),
                ));
            }
            let per: f64 = s
                .regions
                .iter()
                .map(|r| r.p * r.pages as f64 * opts.scale)
                .sum();
            expected += per * n as f64;
            for k in 0..n {
                slots.push((s.start_ns - t0 + k * t.sample_ns, ti as u32, si as u32, k));
            }
        }
    }
    if expected > opts.max_accesses as f64 {
        return Err(TraceError::invalid(
            name,
            format!(
                "would generate about {expected:.3e} accesses (limit {}): lower the damo scale",
                opts.max_accesses
            ),
        ));
    }
    slots.sort_unstable();
    let mut rng = SplitMix(opts.seed);
    let mut st = ImportStats {
        lines: targets.iter().map(|t| t.snapshots.len() as u64).sum(),
        ..ImportStats::default()
    };
    for (time, ti, si, _) in slots {
        let snap = &targets[ti as usize].snapshots[si as usize];
        for r in &snap.regions {
            let x = r.p * r.pages as f64 * opts.scale;
            let mut n = x.floor() as u64;
            if rng.unit() < x - n as f64 {
                n += 1;
            }
            for _ in 0..n {
                let page = r.start_page + ((rng.next() >> 32) * r.pages) / (1 << 32);
                w.push(&Record {
                    time,
                    thread: ti,
                    addr: page << 12,
                    size: 64,
                    kind: Kind::Read,
                })?;
                st.accesses += 1;
            }
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"[{"kdamond_idx": 0, "context_idx": 0,
        "intervals": {"sample": "5000", "aggr": "100000", "ops_update": "1000000"},
        "scheme_idx": null, "target_id": 0,
        "snapshots": [
          {"start_time": "1000000000", "end_time": "1100000000", "total_bytes": "1",
           "regions": [
             {"start": "4194304", "end": "8388608", "nr_accesses": {"samples": 20, "percent": null},
              "age": {"usec": null, "aggr_intervals": 3}, "sz_filter_passed": "0"},
             {"start": "140737488000000", "end": "140737490097152", "nr_accesses": {"samples": 0, "percent": null},
              "age": {"usec": null, "aggr_intervals": 9}, "sz_filter_passed": "0"}]},
          {"start_time": "1100000000", "end_time": "1200000000",
           "regions": [{"start": 4194304, "end": 8388608, "nr_accesses": 5, "age": 0}]}
        ]}]"#;

    fn run(data: &[u8], opts: DamoOptions) -> Result<Vec<Record>, TraceError> {
        crate::format::import_and_read(TIME_UNIT, |w| import(data, "damon.data", w, opts))
            .map(|(_, v)| v)
    }

    #[test]
    fn regions_become_access_probabilities() {
        let v = run(DOC.as_bytes(), DamoOptions::default()).unwrap();
        // Snapshot 1: 1024 pages, p = 1, 20 samples -> 20480 accesses; the idle region none.
        // Snapshot 2: p = 5/20 -> 256 per sample -> 5120.
        assert_eq!(v.len(), 20480 + 5120);
        assert!(v.iter().all(|r| (1024..2048).contains(&r.page())));
        assert_eq!(v[0].time, 0);
        assert_eq!(v.last().unwrap().time, 100_000_000 + 19 * 5_000_000);
        // The zlib-compressed form gives the same trace.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(DOC.as_bytes()).unwrap();
        let v2 = run(&z.finish().unwrap(), DamoOptions::default()).unwrap();
        assert_eq!(v, v2);
    }

    #[test]
    fn bad_documents_name_the_place() {
        let e = run(
            b"[{\"snapshots\": [{\"start_time\": 1}]}]",
            DamoOptions::default(),
        )
        .err()
        .unwrap();
        assert!(
            e.to_string()
                .contains("records[0].snapshots[0].end_time: missing"),
            "{e}"
        );
        let e = run(b"[\n{\"snapshots\": [}", DamoOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = run(b"PK\x03\x04", DamoOptions::default()).err().unwrap();
        assert!(e.to_string().contains("byte offset 0"), "{e}");
        let e = run(b"\x78\x9c\x01\x02", DamoOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("zlib"), "{e}");
        let huge = DOC.replace("\"8388608\"", "\"140000000000000\"");
        let e = run(huge.as_bytes(), DamoOptions::default()).err().unwrap();
        assert!(e.to_string().contains("lower the damo scale"), "{e}");
    }

    #[test]
    fn small_records_cannot_ask_for_huge_memory() {
        // A record of a few hundred bytes whose snapshot spans 10^12 sampling intervals
        // with no accesses: refused before the intervals are laid out.
        let rec = br#"[{"intervals": {"sample": 1000, "aggr": 1000},
            "snapshots": [{"start_time": 0, "end_time": 1000000000000000,
            "regions": [{"start": 4096, "end": 8192, "nr_accesses": 0}]}]}]"#;
        let e = run(rec, DamoOptions::default()).err().unwrap().to_string();
        assert!(e.contains("sampling intervals"), "{e}");
        // A zlib bomb: 2 GiB of spaces in a few MiB, cut off at the cap.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let block = vec![b' '; 1 << 20];
        for _ in 0..(MAX_DOCUMENT_BYTES >> 20) + 1 {
            z.write_all(&block).unwrap();
        }
        let e = run(&z.finish().unwrap(), DamoOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("decompressed document is larger"), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, .. Default::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = run(&data, DamoOptions { max_accesses: 100_000, ..DamoOptions::default() });
        }
        #[test]
        fn mutated_documents_never_panic(pos in 0usize..1200, byte in proptest::prelude::any::<u8>()) {
            let mut d = DOC.as_bytes().to_vec();
            let p = pos % d.len();
            d[p] = byte;
            let _ = run(&d, DamoOptions { max_accesses: 1_000_000, ..DamoOptions::default() });
        }
    }
}
