//! damo's JSON kdamond configs (`damo args damon --format json`, `damo start FILE`) to and
//! from the agent's `[damon]` table: `tiermem damon import` and `tiermem damon export`.
//!
//! The shape (damo 2.4 to 3.3, read from `src/_damon.py` and `src/_damo_fmt_str.py` of
//! github.com/damonitor/damo): `{"kdamonds": [{"contexts": [{"ops", "targets": [{"pid",
//! "regions": [{"start", "end"}]}], "intervals": {"sample_us", "aggr_us", "ops_update_us",
//! "intervals_goal"}, "nr_regions": {"min", "max"}, "schemes": [{"action", "target_nid",
//! "access_pattern": {"sz_bytes", "nr_accesses", "age"}, "apply_interval_us", "quotas",
//! "watermarks", "filters"}]}]}]}`. Values are JSON numbers or damo's text: `"1,000"`,
//! `"5 ms"`, `"128.000 MiB"`, `"0 %"`, `"max"`. damo reads a bare number in the field's own
//! unit (µs for `*_us`, ms for `*_ms`, bytes for sizes, permil for weights and watermarks,
//! percent for `nr_accesses`); `nr_accesses` is a percentage of the samples per aggregation
//! (`"N %"`) or `"N samples"`;
//! `age` is a time or `"N aggr_intervals"`. Percent and time forms are converted to the
//! kernel's units as damo does (`add_unset_unit`): `samples = ⌊percent · (aggr/sample) / 100⌋`,
//! `aggr_intervals = ⌊age_us / aggr_us⌋`.
//!
//! Export writes every value in a form damo reads back exactly: times with a unit in the
//! field's own resolution, sizes in bytes, `nr_accesses` in samples and `age` in aggregation
//! intervals, so import ∘ export is the identity on `[damon]` tables.
//!
//! Not carried over, and refused rather than dropped: more than one kdamond or context
//! without `--kdamond`/`--context`, `fvaddr`, vaddr target regions, `dests`, `hugepage_size`
//! and `unmapped` filters, memcg quota goals, `addr_unit` other than 1, paused contexts,
//! probes and sample filters. damo's `--raw` output writes `age`, `quotas.time_ms`,
//! `reset_interval_ms` and `watermarks.interval_us` in nanoseconds but reads them in their
//! own units (damo's own bug, read from its source); export from damo without `--raw`.

use crate::config::DamonConfig;
use serde_json::{json, Map, Value};
use tiermem_core::controllers::TargetSelector;
use tiermem_core::damon::{
    AccessPattern, AddrRange, DamosAction, FilterConfig, FilterType, GoalMetric, IntervalsGoal,
    MonitoringAttrs, OpsKind, QuotaConfig, QuotaGoal, QuotaWeights, SchemeConfig, Watermarks,
    WmarkMetric,
};
use tiermem_core::units::NodeId;
use tiermem_core::ConfigError;

/// Keys damo writes that describe state, not configuration: read past.
const STATE_KEYS: &[&str] = &[
    "state",
    "pid",
    "refresh_ms",
    "stats",
    "tried_regions",
    "effective_sz_bytes",
    "obsolete",
];

/// Where in the document a value is, for errors (`kdamonds[0].contexts[0].intervals`).
#[derive(Clone)]
struct At(String);

impl At {
    fn key(&self, k: &str) -> At {
        At(if self.0.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.0)
        })
    }
    fn idx(&self, i: usize) -> At {
        At(format!("{}[{i}]", self.0))
    }
    fn err(&self, msg: impl Into<String>) -> ConfigError {
        ConfigError::invalid(self.0.clone(), msg)
    }
}

/// An object's fields, refusing keys this module does not know (a newer damo's setting
/// must not be dropped silently) unless they hold damo's "unset" value.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    at: At,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, at: &At, known: &[&str]) -> Result<Obj<'a>, ConfigError> {
        let map = v
            .as_object()
            .ok_or_else(|| at.err(format!("expected an object, found {v}")))?;
        for (k, val) in map {
            if known.contains(&k.as_str()) || STATE_KEYS.contains(&k.as_str()) || is_unset(val) {
                continue;
            }
            return Err(at.key(k).err(format!(
                "not supported by tiermem's [damon] table (value {val}); remove it or leave it unset"
            )));
        }
        Ok(Obj {
            map,
            at: at.clone(),
        })
    }
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.map.get(k).filter(|v| !v.is_null())
    }
    fn at(&self, k: &str) -> At {
        self.at.key(k)
    }
    fn list(&self, k: &str) -> Result<&'a [Value], ConfigError> {
        match self.get(k) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(self.at(k).err(format!("expected a list, found {v}"))),
        }
    }
}

/// damo's defaults for settings that newer versions added: nothing to carry over.
fn is_unset(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::Bool(true) => false,
        Value::Array(a) => a.is_empty(),
        Value::String(s) => matches!(s.as_str(), "0" | "consist" | "1" | "1 B"),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Object(m) => is_default_sample_control(m),
    }
}

/// `sample_control` (damo 3.0.7+) at its default: page-table sampling, no filters.
fn is_default_sample_control(m: &Map<String, Value>) -> bool {
    let prim = m.get("primitives_enabled");
    let filters_empty = m
        .get("sample_filters")
        .is_none_or(|f| f.as_array().is_some_and(|a| a.is_empty()));
    let prim_default = prim.is_none_or(|p| {
        p.get("page_table") != Some(&Value::Bool(false))
            && p.get("page_fault").is_none_or(|v| v == &Value::Bool(false))
    });
    filters_empty && prim_default
}

// ---------------------------------------------------------------------------------------
// damo's text values (`_damo_fmt_str.py`).

/// A number: JSON number, or text with thousands separators; `max` is ULONG_MAX.
fn text_nr(v: &Value, at: &At) -> Result<f64, ConfigError> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| at.err("not a number")),
        Value::String(s) => {
            let t: String = s.trim().chars().filter(|&c| c != ',').collect();
            match t.as_str() {
                "max" => Ok(u64::MAX as f64),
                "min" => Ok(0.0),
                _ => t
                    .parse::<f64>()
                    .map_err(|_| at.err(format!("`{s}` is not a number"))),
            }
        }
        _ => Err(at.err(format!("expected a number, found {v}"))),
    }
}

/// Split `"128.000 MiB"` / `"5ms"` into its number and unit.
fn split_unit(s: &str) -> (String, String) {
    let t: String = s.trim().chars().filter(|&c| c != ',').collect();
    let i = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    (t[..i].trim().to_string(), t[i..].trim().to_string())
}

/// `text_to_bytes`: B, K/KB/KiB … E/EB/EiB, all powers of 1024.
fn text_bytes(v: &Value, at: &At) -> Result<u64, ConfigError> {
    let Value::String(s) = v else {
        return to_u64(text_nr(v, at)?, at);
    };
    if matches!(s.trim(), "max" | "min") {
        return to_u64(text_nr(v, at)?, at);
    }
    let (n, unit) = split_unit(s);
    let shift = match unit.trim_end_matches("iB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        "P" => 50,
        "E" => 60,
        _ => return Err(at.err(format!("`{s}`: unknown size unit `{unit}`"))),
    };
    let n: f64 = n
        .parse()
        .map_err(|_| at.err(format!("`{s}` is not a size")))?;
    to_u64(n * (1u64 << shift) as f64, at)
}

/// `text_to_ns` divided to `unit_ns`: one or more `N unit` pairs (`"1 m 30.500 s"`); a bare
/// number is already in the field's unit. `max` saturates.
fn text_time(v: &Value, unit_ns: u64, at: &At) -> Result<u64, ConfigError> {
    let Value::String(s) = v else {
        return to_u64(text_nr(v, at)?, at);
    };
    let t = s.trim();
    if matches!(t, "max" | "min") || t.replace(',', "").parse::<f64>().is_ok() {
        return to_u64(text_nr(v, at)?, at);
    }
    let mut ns = 0f64;
    let mut rest = t.replace(',', "");
    while !rest.trim().is_empty() {
        let (n, tail) = split_unit(&rest);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(tail.len());
        let unit = &tail[..unit_len];
        let mult = match unit {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => return Err(at.err(format!("`{s}`: unknown time unit `{unit}`"))),
        };
        let n: f64 = n
            .parse()
            .map_err(|_| at.err(format!("`{s}` is not a time")))?;
        ns += n * mult;
        rest = tail[unit_len..].to_string();
    }
    to_u64(ns / unit_ns as f64, at)
}

/// A share given as `"X %"`, or a bare number in `bare_per` parts (permil = 1000, bp =
/// 10000); the result in `per` parts.
fn text_share(v: &Value, per: f64, at: &At) -> Result<u64, ConfigError> {
    if let Value::String(s) = v {
        if let Some(p) = s.trim().strip_suffix('%') {
            let x: f64 = p
                .trim()
                .replace(',', "")
                .parse()
                .map_err(|_| at.err(format!("`{s}` is not a percentage")))?;
            return to_u64(x * per / 100.0, at);
        }
    }
    to_u64(text_nr(v, at)?, at)
}

fn to_u64(x: f64, at: &At) -> Result<u64, ConfigError> {
    if !x.is_finite() || x < 0.0 {
        return Err(at.err(format!("{x} is not a non-negative value")));
    }
    // Values at or past ULONG_MAX are damo's "max" (its raw age is ULONG_MAX · 1000).
    Ok(if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.floor() as u64
    })
}

/// TOML integers stop at 2^63 − 1, so a `[damon]` table cannot hold damo's ULONG_MAX
/// ("max") for settings whose default is not already unlimited: such values become 2^63 − 1
/// (292 million years of ms, 8 EiB), the same in effect.
fn toml_max(x: u64) -> u64 {
    x.min(i64::MAX as u64)
}

fn node(v: &Value, at: &At) -> Result<NodeId, ConfigError> {
    let n = to_u64(text_nr(v, at)?, at)?;
    u8::try_from(n)
        .map(NodeId)
        .map_err(|_| at.err(format!("{n} is not a node id")))
}

fn to_u32(x: u64, at: &At) -> Result<u32, ConfigError> {
    u32::try_from(x).map_err(|_| at.err(format!("{x} is above {}", u32::MAX)))
}

/// An unsigned int bound where damo's ULONG_MAX means unlimited.
fn sat_u32(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

fn text_bool(v: &Value, at: &At) -> Result<bool, ConfigError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(true),
            "n" | "no" | "false" => Ok(false),
            _ => Err(at.err(format!("`{s}` is not a boolean"))),
        },
        _ => Err(at.err(format!("expected a boolean, found {v}"))),
    }
}

fn text_str<'a>(v: &'a Value, at: &At) -> Result<&'a str, ConfigError> {
    v.as_str()
        .ok_or_else(|| at.err(format!("expected a string, found {v}")))
}

// ---------------------------------------------------------------------------------------
// Import.

/// Read a damo kdamond config (the whole `{"kdamonds": [...]}` document, or a bare list
/// of kdamonds as `damo report damon --json` prints) into a `[damon]` table. `kdamond` and
/// `context` choose one when the document has several.
pub fn import(
    doc: &Value,
    kdamond: Option<usize>,
    context: Option<usize>,
) -> Result<DamonConfig, ConfigError> {
    let root = At(String::new());
    let (kds, kd_at) = match doc {
        Value::Array(a) => (a.as_slice(), root.clone()),
        Value::Object(m) => {
            Obj::new(doc, &root, &["kdamonds"])?;
            match m.get("kdamonds") {
                Some(Value::Array(a)) => (a.as_slice(), root.key("kdamonds")),
                _ => return Err(root.key("kdamonds").err("expected a list of kdamonds")),
            }
        }
        _ => return Err(root.err("expected damo's {\"kdamonds\": [...]} document")),
    };
    let (kd, at) = pick(kds, kdamond, "kdamond", &kd_at)?;
    let kd = Obj::new(kd, &at, &["contexts"])?;
    let ctxs = kd.list("contexts")?;
    let (ctx, at) = pick(ctxs, context, "context", &kd.at("contexts"))?;
    import_context(ctx, &at)
}

/// Element `want` of `items`, or the only one.
fn pick<'a>(
    items: &'a [Value],
    want: Option<usize>,
    what: &str,
    at: &At,
) -> Result<(&'a Value, At), ConfigError> {
    let i = match want {
        Some(i) => i,
        None if items.len() == 1 => 0,
        None => {
            return Err(at.err(format!(
                "{} {what}s; tiermem's [damon] table holds one: choose with --{what} N",
                items.len()
            )))
        }
    };
    items
        .get(i)
        .map(|v| (v, at.idx(i)))
        .ok_or_else(|| at.err(format!("no {what} {i} ({} in the file)", items.len())))
}

fn import_context(v: &Value, at: &At) -> Result<DamonConfig, ConfigError> {
    let c = Obj::new(
        v,
        at,
        &["ops", "targets", "intervals", "nr_regions", "schemes"],
    )?;
    let ops = match c
        .get("ops")
        .map(|o| text_str(o, &c.at("ops")))
        .transpose()?
    {
        Some("vaddr") => OpsKind::Vaddr,
        Some("paddr") => OpsKind::Paddr,
        Some(o) => {
            return Err(c
                .at("ops")
                .err(format!("`{o}`: tiermem's [damon] takes vaddr or paddr")))
        }
        None => return Err(c.at("ops").err("missing")),
    };
    let attrs = import_attrs(&c)?;
    let (targets, regions) = import_targets(&c, ops)?;
    let schemes = c
        .list("schemes")?
        .iter()
        .enumerate()
        .map(|(i, s)| import_scheme(s, &c.at("schemes").idx(i), &attrs))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DamonConfig {
        ops,
        targets,
        regions,
        attrs,
        schemes,
    })
}

fn import_attrs(c: &Obj) -> Result<MonitoringAttrs, ConfigError> {
    let mut a = MonitoringAttrs::default();
    if let Some(v) = c.get("intervals") {
        let iv = Obj::new(
            v,
            &c.at("intervals"),
            &["sample_us", "aggr_us", "ops_update_us", "intervals_goal"],
        )?;
        for (k, field) in [
            ("sample_us", &mut a.sample_us),
            ("aggr_us", &mut a.aggr_us),
            ("ops_update_us", &mut a.update_us),
        ] {
            if let Some(x) = iv.get(k) {
                *field = toml_max(text_time(x, 1000, &iv.at(k))?);
            }
        }
        if let Some(g) = iv.get("intervals_goal") {
            a.intervals_goal = import_intervals_goal(g, &iv.at("intervals_goal"))?;
        }
    }
    if let Some(v) = c.get("nr_regions") {
        let nr = Obj::new(v, &c.at("nr_regions"), &["min", "max"])?;
        if let Some(x) = nr.get("min") {
            a.min_nr_regions = to_u32(
                to_u64(text_nr(x, &nr.at("min"))?, &nr.at("min"))?,
                &nr.at("min"),
            )?;
        }
        if let Some(x) = nr.get("max") {
            a.max_nr_regions = sat_u32(to_u64(text_nr(x, &nr.at("max"))?, &nr.at("max"))?);
        }
    }
    Ok(a)
}

fn import_intervals_goal(v: &Value, at: &At) -> Result<IntervalsGoal, ConfigError> {
    let g = Obj::new(
        v,
        at,
        &["access_bp", "aggrs", "min_sample_us", "max_sample_us"],
    )?;
    let mut out = IntervalsGoal::default();
    if let Some(x) = g.get("access_bp") {
        out.access_bp = toml_max(text_share(x, 10_000.0, &g.at("access_bp"))?);
    }
    if let Some(x) = g.get("aggrs") {
        out.aggrs = toml_max(to_u64(text_nr(x, &g.at("aggrs"))?, &g.at("aggrs"))?);
    }
    if let Some(x) = g.get("min_sample_us") {
        out.min_sample_us = toml_max(text_time(x, 1000, &g.at("min_sample_us"))?);
    }
    if let Some(x) = g.get("max_sample_us") {
        out.max_sample_us = toml_max(text_time(x, 1000, &g.at("max_sample_us"))?);
    }
    Ok(out)
}

fn import_targets(c: &Obj, ops: OpsKind) -> Result<(TargetSelector, Vec<AddrRange>), ConfigError> {
    let mut sel = TargetSelector::default();
    let mut regions = Vec::new();
    let targets = c.list("targets")?;
    if ops == OpsKind::Paddr && targets.len() > 1 {
        return Err(c
            .at("targets")
            .err("paddr has one target (physical memory)"));
    }
    for (i, t) in targets.iter().enumerate() {
        let at = c.at("targets").idx(i);
        let t = Obj::new(t, &at, &["pid", "regions"])?;
        let rs = t.list("regions")?;
        if ops == OpsKind::Vaddr {
            let pid = t
                .get("pid")
                .ok_or_else(|| t.at("pid").err("vaddr targets need a pid"))?;
            let pid = text_nr(pid, &t.at("pid"))?;
            sel.pids.push(
                i32::try_from(pid as i64)
                    .ok()
                    .filter(|p| *p > 0 && pid.fract() == 0.0)
                    .ok_or_else(|| t.at("pid").err(format!("{pid} is not a process id")))?,
            );
            if !rs.is_empty() {
                return Err(t.at("regions").err(
                    "fixed vaddr regions are not supported: tiermem's vaddr takes regions from the mappings",
                ));
            }
        }
        for (j, r) in rs.iter().enumerate() {
            let at = t.at("regions").idx(j);
            regions.push(import_range(r, &at)?);
        }
    }
    Ok((sel, regions))
}

fn import_range(v: &Value, at: &At) -> Result<AddrRange, ConfigError> {
    let r = Obj::new(v, at, &["start", "end"])?;
    let get = |k: &str| -> Result<u64, ConfigError> {
        let x = r.get(k).ok_or_else(|| r.at(k).err("missing"))?;
        text_bytes(x, &r.at(k))
    };
    Ok(AddrRange {
        start: toml_max(get("start")?),
        end: toml_max(get("end")?),
    })
}

fn import_scheme(v: &Value, at: &At, attrs: &MonitoringAttrs) -> Result<SchemeConfig, ConfigError> {
    let s = Obj::new(
        v,
        at,
        &[
            "action",
            "target_nid",
            "access_pattern",
            "apply_interval_us",
            "quotas",
            "watermarks",
            "filters",
        ],
    )?;
    let action_name = text_str(
        s.get("action")
            .ok_or_else(|| s.at("action").err("missing"))?,
        &s.at("action"),
    )?;
    let action: DamosAction =
        serde_json::from_value(Value::String(action_name.into())).map_err(|_| {
            s.at("action")
                .err(format!("unknown action `{action_name}`"))
        })?;
    let mut out = SchemeConfig::new(action);
    if let Some(n) = s.get("target_nid") {
        out.target_nid = Some(node(n, &s.at("target_nid"))?);
    }
    if let Some(p) = s.get("access_pattern") {
        out.access_pattern = import_pattern(p, &s.at("access_pattern"), attrs)?;
    }
    if let Some(x) = s.get("apply_interval_us") {
        out.apply_interval_us = toml_max(text_time(x, 1000, &s.at("apply_interval_us"))?);
    }
    if let Some(q) = s.get("quotas") {
        out.quotas = import_quotas(q, &s.at("quotas"))?;
    }
    if let Some(w) = s.get("watermarks") {
        out.watermarks = import_watermarks(w, &s.at("watermarks"))?;
    }
    for (i, f) in s.list("filters")?.iter().enumerate() {
        out.filters.push(import_filter(f, &s.at("filters").idx(i))?);
    }
    Ok(out)
}

/// `{"min", "max"}` of an access pattern field.
fn min_max<'a>(p: &Obj<'a>, k: &str) -> Result<Option<(&'a Value, &'a Value, At)>, ConfigError> {
    let Some(v) = p.get(k) else {
        return Ok(None);
    };
    let at = p.at(k);
    let o = Obj::new(v, &at, &["min", "max"])?;
    let min = o.get("min").ok_or_else(|| at.key("min").err("missing"))?;
    let max = o.get("max").ok_or_else(|| at.key("max").err("missing"))?;
    Ok(Some((min, max, at)))
}

fn import_pattern(
    v: &Value,
    at: &At,
    attrs: &MonitoringAttrs,
) -> Result<AccessPattern, ConfigError> {
    let p = Obj::new(v, at, &["sz_bytes", "nr_accesses", "age"])?;
    let mut out = AccessPattern::default();
    if let Some((min, max, at)) = min_max(&p, "sz_bytes")? {
        out.min_sz = toml_max(text_bytes(min, &at.key("min"))?);
        out.max_sz = text_bytes(max, &at.key("max"))?;
    }
    if let Some((min, max, at)) = min_max(&p, "nr_accesses")? {
        out.min_nr_accesses = nr_accesses(min, &at.key("min"), attrs)?;
        out.max_nr_accesses = nr_accesses(max, &at.key("max"), attrs)?;
    }
    if let Some((min, max, at)) = min_max(&p, "age")? {
        out.min_age = age(min, &at.key("min"), attrs)?;
        out.max_age = age(max, &at.key("max"), attrs)?;
    }
    Ok(out)
}

/// `"N %"` of the samples an aggregation takes, or `"N samples"`; a bare number is a
/// percentage (damo's `text_to_percent`).
fn nr_accesses(v: &Value, at: &At, attrs: &MonitoringAttrs) -> Result<u32, ConfigError> {
    let per_aggr = attrs.aggr_us as f64 / attrs.sample_us.max(1) as f64;
    let s = match v {
        Value::String(s) => s.trim(),
        _ => return Ok(sat_u32(to_u64(text_nr(v, at)? * per_aggr / 100.0, at)?)),
    };
    if s == "max" {
        return Ok(u32::MAX);
    }
    if s == "min" {
        return Ok(0);
    }
    let (n, unit) = split_unit(s);
    let n: f64 = n
        .parse()
        .map_err(|_| at.err(format!("`{s}` is not an access rate")))?;
    let samples = match unit.as_str() {
        "%" | "" => n * per_aggr / 100.0,
        "samples" => n,
        _ => return Err(at.err(format!("`{s}`: the unit is `%` or `samples`"))),
    };
    Ok(sat_u32(to_u64(samples, at)?))
}

/// A time or `"N aggr_intervals"`.
fn age(v: &Value, at: &At, attrs: &MonitoringAttrs) -> Result<u32, ConfigError> {
    if let Value::String(s) = v {
        if let Some(n) = s.trim().strip_suffix("aggr_intervals") {
            return Ok(sat_u32(to_u64(text_nr(&Value::String(n.into()), at)?, at)?));
        }
    }
    let us = text_time(v, 1000, at)?;
    if us == u64::MAX {
        return Ok(u32::MAX);
    }
    Ok(sat_u32(us / attrs.aggr_us.max(1)))
}

fn import_quotas(v: &Value, at: &At) -> Result<QuotaConfig, ConfigError> {
    let q = Obj::new(
        v,
        at,
        &[
            "time_ms",
            "sz_bytes",
            "reset_interval_ms",
            "goals",
            "weights",
        ],
    )?;
    let mut out = QuotaConfig::default();
    if let Some(x) = q.get("time_ms") {
        out.ms = toml_max(text_time(x, 1_000_000, &q.at("time_ms"))?);
    }
    if let Some(x) = q.get("sz_bytes") {
        out.sz = toml_max(text_bytes(x, &q.at("sz_bytes"))?);
    }
    if let Some(x) = q.get("reset_interval_ms") {
        out.reset_interval_ms = toml_max(text_time(x, 1_000_000, &q.at("reset_interval_ms"))?);
    }
    if let Some(w) = q.get("weights") {
        let at = q.at("weights");
        let w = Obj::new(w, &at, &["sz_permil", "nr_accesses_permil", "age_permil"])?;
        let mut weights = QuotaWeights::default();
        for (k, field) in [
            ("sz_permil", &mut weights.sz_permil),
            ("nr_accesses_permil", &mut weights.nr_accesses_permil),
            ("age_permil", &mut weights.age_permil),
        ] {
            if let Some(x) = w.get(k) {
                *field = to_u32(text_share(x, 1000.0, &w.at(k))?, &w.at(k))?;
            }
        }
        out.weights = weights;
    }
    for (i, g) in q.list("goals")?.iter().enumerate() {
        out.goals.push(import_goal(g, &q.at("goals").idx(i))?);
    }
    Ok(out)
}

fn import_goal(v: &Value, at: &At) -> Result<QuotaGoal, ConfigError> {
    let g = Obj::new(
        v,
        at,
        &[
            "metric",
            "target_value",
            "current_value",
            "nid",
            "target_value_bp",
            "current_value_bp",
        ],
    )?;
    let name = text_str(
        g.get("metric")
            .ok_or_else(|| g.at("metric").err("missing"))?,
        &g.at("metric"),
    )?;
    let metric: GoalMetric = serde_json::from_value(Value::String(name.into())).map_err(|_| {
        g.at("metric").err(format!(
            "`{name}`: tiermem models user_input, some_mem_psi_us, node_mem_used_bp, node_mem_free_bp, active_mem_bp and inactive_mem_bp"
        ))
    })?;
    // damo reads `target_value` in the metric's unit and `current_value` as a number.
    let value = |k: &str, old: &str, in_unit: bool| -> Result<u64, ConfigError> {
        let (x, at) = match (g.get(k), g.get(old)) {
            (Some(x), _) => (x, g.at(k)),
            (None, Some(x)) => (x, g.at(old)),
            (None, None) => return Ok(0),
        };
        Ok(toml_max(match metric {
            _ if !in_unit => to_u64(text_nr(x, &at)?, &at)?,
            GoalMetric::UserInput => to_u64(text_nr(x, &at)?, &at)?,
            GoalMetric::SomeMemPsiUs => text_time(x, 1000, &at)?,
            _ => text_share(x, 10_000.0, &at)?,
        }))
    };
    let nid = g.get("nid").map(|n| node(n, &g.at("nid"))).transpose()?;
    Ok(QuotaGoal {
        metric,
        target_value: value("target_value", "target_value_bp", true)?,
        current_value: value("current_value", "current_value_bp", false)?,
        nid,
    })
}

fn import_watermarks(v: &Value, at: &At) -> Result<Watermarks, ConfigError> {
    let w = Obj::new(
        v,
        at,
        &[
            "metric",
            "interval_us",
            "high_permil",
            "mid_permil",
            "low_permil",
        ],
    )?;
    let mut out = Watermarks::default();
    if let Some(m) = w.get("metric") {
        out.metric = match text_str(m, &w.at("metric"))? {
            "none" => WmarkMetric::None,
            "free_mem_rate" => WmarkMetric::FreeMemRate,
            o => return Err(w.at("metric").err(format!("unknown metric `{o}`"))),
        };
    }
    if let Some(x) = w.get("interval_us") {
        out.interval_us = toml_max(text_time(x, 1000, &w.at("interval_us"))?);
    }
    for (k, field) in [
        ("high_permil", &mut out.high),
        ("mid_permil", &mut out.mid),
        ("low_permil", &mut out.low),
    ] {
        if let Some(x) = w.get(k) {
            *field = toml_max(text_share(x, 1000.0, &w.at(k))?);
        }
    }
    Ok(out)
}

fn import_filter(v: &Value, at: &At) -> Result<FilterConfig, ConfigError> {
    let f = Obj::new(
        v,
        at,
        &[
            "filter_type",
            "matching",
            "allow",
            "filter_pass",
            "memcg_path",
            "address_range",
            "damon_target_idx",
        ],
    )?;
    let name = text_str(
        f.get("filter_type")
            .ok_or_else(|| f.at("filter_type").err("missing"))?,
        &f.at("filter_type"),
    )?;
    let kind = match name {
        "anon" => FilterType::Anon,
        "active" => FilterType::Active,
        "memcg" => FilterType::Memcg,
        "young" => FilterType::Young,
        "addr" => FilterType::Addr,
        "target" => FilterType::Target,
        o => {
            return Err(f.at("filter_type").err(format!(
                "`{o}`: tiermem models anon, active, memcg, young, addr and target filters"
            )))
        }
    };
    let flag = |k: &str| f.get(k).map(|x| text_bool(x, &f.at(k))).transpose();
    let matching = flag("matching")?.unwrap_or(true);
    let allow = flag("allow")?.or(flag("filter_pass")?).unwrap_or(false);
    let mut out = FilterConfig::new(kind, matching, allow);
    match kind {
        FilterType::Memcg => {
            let p = f
                .get("memcg_path")
                .ok_or_else(|| f.at("memcg_path").err("a memcg filter needs memcg_path"))?;
            out.memcg_path = Some(text_str(p, &f.at("memcg_path"))?.to_string());
        }
        FilterType::Addr => {
            let r = f.get("address_range").ok_or_else(|| {
                f.at("address_range")
                    .err("an addr filter needs address_range")
            })?;
            out.addr = Some(import_range(r, &f.at("address_range"))?);
        }
        FilterType::Target => {
            let at = f.at("damon_target_idx");
            let i = f
                .get("damon_target_idx")
                .ok_or_else(|| at.err("a target filter needs damon_target_idx"))?;
            out.target_idx = Some(to_u32(to_u64(text_nr(i, &at)?, &at)?, &at)?);
        }
        _ => {}
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Export.

/// The `[damon]` table as damo's kdamond config document (one kdamond, one context).
/// Refuses targets damo cannot name (command names, cgroups: damo takes pids).
pub fn export(d: &DamonConfig) -> Result<Value, ConfigError> {
    if !d.targets.names.is_empty() || !d.targets.cgroups.is_empty() {
        return Err(ConfigError::invalid(
            "damon.targets",
            "damo names vaddr targets by pid only; replace names/cgroups with pids to export",
        ));
    }
    let targets: Vec<Value> = match d.ops {
        OpsKind::Vaddr => d
            .targets
            .pids
            .iter()
            .map(|p| json!({"pid": p, "regions": []}))
            .collect(),
        OpsKind::Paddr => vec![json!({
            "pid": null,
            "regions": d.regions.iter().map(range_json).collect::<Vec<_>>(),
        })],
    };
    let a = &d.attrs;
    let mut intervals = json!({
        "sample_us": us(a.sample_us),
        "aggr_us": us(a.aggr_us),
        "ops_update_us": us(a.update_us),
    });
    if a.intervals_goal != IntervalsGoal::default() {
        let g = &a.intervals_goal;
        intervals["intervals_goal"] = json!({
            "access_bp": share(g.access_bp, 100),
            "aggrs": g.aggrs.to_string(),
            "min_sample_us": us(g.min_sample_us),
            "max_sample_us": us(g.max_sample_us),
        });
    }
    let ctx = json!({
        "ops": match d.ops { OpsKind::Vaddr => "vaddr", OpsKind::Paddr => "paddr" },
        "targets": targets,
        "intervals": intervals,
        "nr_regions": {"min": a.min_nr_regions.to_string(), "max": a.max_nr_regions.to_string()},
        "schemes": d.schemes.iter().map(export_scheme).collect::<Vec<_>>(),
    });
    Ok(json!({"kdamonds": [{"contexts": [ctx]}]}))
}

fn us(x: u64) -> String {
    if x == u64::MAX {
        "max".into()
    } else {
        format!("{x} us")
    }
}

fn ms(x: u64) -> String {
    if x == u64::MAX {
        "max".into()
    } else {
        format!("{x} ms")
    }
}

fn bytes(x: u64) -> String {
    if x == u64::MAX {
        "max".into()
    } else {
        format!("{x} B")
    }
}

/// `parts` of `per_percent` (10 for permil, 100 for bp) as an exact `"X %"`.
fn share(parts: u64, per_percent: u64) -> String {
    let digits = if per_percent == 10 { 1 } else { 2 };
    let frac = parts % per_percent;
    if frac == 0 {
        format!("{} %", parts / per_percent)
    } else {
        format!("{}.{:0digits$} %", parts / per_percent, frac)
    }
}

fn range_json(r: &AddrRange) -> Value {
    json!({"start": r.start.to_string(), "end": r.end.to_string()})
}

fn export_scheme(s: &SchemeConfig) -> Value {
    let p = &s.access_pattern;
    let q = &s.quotas;
    let w = &s.watermarks;
    let mut v = json!({
        "action": s.action.name(),
        "access_pattern": {
            "sz_bytes": {"min": bytes(p.min_sz), "max": bytes(p.max_sz)},
            "nr_accesses": {
                "min": format!("{} samples", p.min_nr_accesses),
                "max": format!("{} samples", p.max_nr_accesses),
            },
            "age": {
                "min": format!("{} aggr_intervals", p.min_age),
                "max": format!("{} aggr_intervals", p.max_age),
            },
        },
        "apply_interval_us": us(s.apply_interval_us),
        "quotas": {
            "time_ms": ms(q.ms),
            "sz_bytes": bytes(q.sz),
            "reset_interval_ms": ms(q.reset_interval_ms),
            "goals": q.goals.iter().map(export_goal).collect::<Vec<_>>(),
            "weights": {
                "sz_permil": share(q.weights.sz_permil.into(), 10),
                "nr_accesses_permil": share(q.weights.nr_accesses_permil.into(), 10),
                "age_permil": share(q.weights.age_permil.into(), 10),
            },
        },
        "watermarks": {
            "metric": match w.metric { WmarkMetric::None => "none", WmarkMetric::FreeMemRate => "free_mem_rate" },
            "interval_us": us(w.interval_us),
            "high_permil": share(w.high, 10),
            "mid_permil": share(w.mid, 10),
            "low_permil": share(w.low, 10),
        },
        "filters": s.filters.iter().map(export_filter).collect::<Vec<_>>(),
    });
    if let Some(n) = s.target_nid {
        v["target_nid"] = json!(n.0);
    }
    v
}

fn export_goal(g: &QuotaGoal) -> Value {
    // damo takes a bare number in the metric's own unit (bp, µs, or the user's number).
    let target = match g.metric {
        GoalMetric::SomeMemPsiUs => us(g.target_value),
        _ => g.target_value.to_string(),
    };
    let metric = serde_json::to_value(g.metric).unwrap_or(Value::Null);
    json!({
        "metric": metric,
        "nid": g.nid.map(|n| n.0),
        "target_value": target,
        "current_value": g.current_value.to_string(),
    })
}

fn export_filter(f: &FilterConfig) -> Value {
    let kind = serde_json::to_value(f.kind).unwrap_or(Value::Null);
    json!({
        "filter_type": kind,
        "matching": f.matching,
        "allow": f.allow,
        "memcg_path": f.memcg_path,
        "address_range": f.addr.as_ref().map(range_json),
        "damon_target_idx": f.target_idx,
    })
}

// ---------------------------------------------------------------------------------------
// TOML for `tiermem damon import`.

/// The `[damon]` table as agent-config TOML, writing only what differs from the defaults.
pub fn to_toml(d: &DamonConfig) -> String {
    let mut out = String::from("[damon]\n");
    out += &format!("ops = \"{}\"\n", crate::damon::sysfs_name(&d.ops));
    if !d.targets.pids.is_empty() {
        out += &format!("targets = {{ pids = {:?} }}\n", d.targets.pids);
    }
    if !d.regions.is_empty() {
        let rs: Vec<String> = d
            .regions
            .iter()
            .map(|r| format!("{{ start = {:#x}, end = {:#x} }}", r.start, r.end))
            .collect();
        out += &format!("regions = [{}]\n", rs.join(", "));
    }
    let attrs = diff_table(&d.attrs, &MonitoringAttrs::default());
    if !attrs.is_empty() {
        out += &format!("\n[damon.attrs]\n{}", toml_body(&attrs));
    }
    for s in &d.schemes {
        out += "\n[[damon.schemes]]\n";
        let mut t = diff_table(s, &SchemeConfig::new(s.action));
        t.insert("action".into(), toml::Value::String(s.action.name().into()));
        let filters = s
            .filters
            .iter()
            .map(|f| toml::Value::Table(filter_table(f)))
            .collect::<Vec<_>>();
        t.remove("filters");
        out += &toml_body(&t);
        for f in filters {
            if let toml::Value::Table(f) = f {
                out += "\n[[damon.schemes.filters]]\n";
                out += &toml_body(&f);
            }
        }
    }
    out
}

fn filter_table(f: &FilterConfig) -> toml::Table {
    let mut t = diff_table(f, &FilterConfig::new(f.kind, true, false));
    t.insert(
        "type".into(),
        toml::Value::String(
            serde_json::to_value(f.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        ),
    );
    t
}

/// The fields of `v` (as a TOML table) whose values differ from `default`'s, recursively.
fn diff_table<T: serde::Serialize>(v: &T, default: &T) -> toml::Table {
    let a = serde_json::to_value(v).unwrap_or(Value::Null);
    let b = serde_json::to_value(default).unwrap_or(Value::Null);
    match json_to_toml(&diff_json(&a, &b)) {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    }
}

fn diff_json(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => Value::Object(
            x.iter()
                .filter(|(k, v)| y.get(*k) != Some(v))
                .map(|(k, v)| {
                    let d = y.get(k).map_or_else(|| v.clone(), |w| diff_json(v, w));
                    (k.clone(), d)
                })
                .collect(),
        ),
        _ => a.clone(),
    }
}

fn json_to_toml(v: &Value) -> Option<toml::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().filter_map(json_to_toml).collect()),
        Value::Object(m) => toml::Value::Table(
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), json_to_toml(v)?)))
                .collect(),
        ),
    })
}

/// A table's keys as `key = value` lines, nested tables inline.
fn toml_body(t: &toml::Table) -> String {
    t.iter().map(|(k, v)| format!("{k} = {v}\n")).collect()
}

#[cfg(test)]
mod tests;
