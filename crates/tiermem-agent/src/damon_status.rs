//! `tiermem damon status`: every kdamond of DAMON's sysfs interface as the kernel has it,
//! whoever started it (this agent, damo, a script): state and pid, each context's
//! operations, intervals, region bounds and targets, each scheme's action and statistics,
//! and, with `--regions`, the regions each scheme last tried with their `nr_accesses` and
//! age (`damo show`'s view).
//!
//! Read-only by default: statistics and tried regions are the kernel's copies from the last
//! `update_schemes_stats` / `update_schemes_tried_regions` command. `--update` writes those
//! commands to each running kdamond's `state` first (the only writes; they change no
//! setting).

use crate::damon::{state_command, KDAMONDS};
use crate::fs::HostFs;
use crate::Error;
use serde::Serialize;
use std::fmt::Write as _;
use tiermem_core::damon::{Region, SchemeStats};

#[derive(Debug, Serialize)]
pub struct KdamondStatus {
    pub index: u32,
    pub state: String,
    pub pid: Option<i64>,
    pub contexts: Vec<ContextStatus>,
}

#[derive(Debug, Serialize)]
pub struct ContextStatus {
    pub operations: String,
    pub sample_us: u64,
    pub aggr_us: u64,
    pub update_us: u64,
    pub min_nr_regions: u64,
    pub max_nr_regions: u64,
    /// `pid_target` of each target (vaddr), empty for paddr.
    pub target_pids: Vec<i64>,
    pub schemes: Vec<SchemeStatus>,
}

#[derive(Debug, Serialize)]
pub struct SchemeStatus {
    pub action: String,
    pub stats: SchemeStats,
    /// The regions the scheme last tried (`--regions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tried_regions: Option<Vec<Region>>,
}

/// Read every kdamond; with `update`, ask running ones to refresh statistics (and tried
/// regions when `regions`) first.
pub fn read(fs: &HostFs, update: bool, regions: bool) -> Result<Vec<KdamondStatus>, Error> {
    if !fs.exists(KDAMONDS) {
        return Err(Error::Feature {
            feature: "DAMON sysfs (CONFIG_DAMON_SYSFS, Linux 5.18+)".into(),
            path: KDAMONDS.into(),
            hint: String::new(),
        });
    }
    let mut out = Vec::new();
    for k in fs.numbered_entries(KDAMONDS, "")? {
        let kd = format!("{KDAMONDS}/{k}");
        let state = fs
            .read_opt(&format!("{kd}/state"))?
            .unwrap_or_default()
            .trim()
            .to_string();
        if update && state == "on" {
            state_command(fs, &kd, "update_schemes_stats")?;
            if regions {
                state_command(fs, &kd, "update_schemes_tried_regions")?;
            }
        }
        let pid = fs
            .read_opt(&format!("{kd}/pid"))?
            .and_then(|p| p.trim().parse().ok());
        let mut contexts = Vec::new();
        for c in fs.numbered_entries(&format!("{kd}/contexts"), "")? {
            contexts.push(read_context(fs, &format!("{kd}/contexts/{c}"), regions)?);
        }
        out.push(KdamondStatus {
            index: k,
            state,
            pid,
            contexts,
        });
    }
    Ok(out)
}

fn read_context(fs: &HostFs, c: &str, regions: bool) -> Result<ContextStatus, Error> {
    let u =
        |f: &str| -> Result<u64, Error> { Ok(fs.read_u64_opt(&format!("{c}/{f}"))?.unwrap_or(0)) };
    let operations = fs
        .read_opt(&format!("{c}/operations"))?
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut target_pids = Vec::new();
    // paddr targets have a pid_target file too, unused (0).
    let targets = if operations == "paddr" {
        Vec::new()
    } else {
        fs.numbered_entries(&format!("{c}/targets"), "")?
    };
    for t in targets {
        if let Some(p) = fs.read_opt(&format!("{c}/targets/{t}/pid_target"))? {
            target_pids.push(p.trim().parse().unwrap_or(0));
        }
    }
    let mut schemes = Vec::new();
    for s in fs.numbered_entries(&format!("{c}/schemes"), "")? {
        let sd = format!("{c}/schemes/{s}");
        let st = |f: &str| -> Result<u64, Error> {
            Ok(fs.read_u64_opt(&format!("{sd}/stats/{f}"))?.unwrap_or(0))
        };
        let tried_regions = if regions {
            let dir = format!("{sd}/tried_regions");
            let mut rs = Vec::new();
            for r in fs.numbered_entries(&dir, "")? {
                let rd = format!("{dir}/{r}");
                let g = |f: &str| -> Result<u64, Error> {
                    Ok(fs.read_u64_opt(&format!("{rd}/{f}"))?.unwrap_or(0))
                };
                rs.push(Region {
                    start: g("start")?,
                    end: g("end")?,
                    nr_accesses: g("nr_accesses")?,
                    age: g("age")?,
                });
            }
            rs.sort_by_key(|r| r.start);
            Some(rs)
        } else {
            None
        };
        schemes.push(SchemeStatus {
            action: fs
                .read_opt(&format!("{sd}/action"))?
                .unwrap_or_default()
                .trim()
                .to_string(),
            stats: SchemeStats {
                nr_tried: st("nr_tried")?,
                sz_tried: st("sz_tried")?,
                nr_applied: st("nr_applied")?,
                sz_applied: st("sz_applied")?,
                sz_ops_filter_passed: st("sz_ops_filter_passed")?,
                qt_exceeds: st("qt_exceeds")?,
            },
            tried_regions,
        });
    }
    Ok(ContextStatus {
        operations,
        sample_us: u("monitoring_attrs/intervals/sample_us")?,
        aggr_us: u("monitoring_attrs/intervals/aggr_us")?,
        update_us: u("monitoring_attrs/intervals/update_us")?,
        min_nr_regions: u("monitoring_attrs/nr_regions/min")?,
        max_nr_regions: u("monitoring_attrs/nr_regions/max")?,
        target_pids,
        schemes,
    })
}

/// The text view.
pub fn render(kds: &[KdamondStatus]) -> String {
    let mut o = String::new();
    if kds.is_empty() {
        o.push_str("no kdamond\n");
    }
    for k in kds {
        let pid = k.pid.map_or("-".to_string(), |p| p.to_string());
        let _ = writeln!(o, "kdamond {}: {} (pid {pid})", k.index, k.state);
        for (ci, c) in k.contexts.iter().enumerate() {
            let targets = if c.target_pids.is_empty() {
                String::new()
            } else {
                format!(
                    ", targets pid {}",
                    c.target_pids
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            };
            let _ = writeln!(
                o,
                "  context {ci}: {}, sample {} us, aggr {} us, update {} us, regions {}..{}{targets}",
                c.operations, c.sample_us, c.aggr_us, c.update_us, c.min_nr_regions, c.max_nr_regions
            );
            for (si, s) in c.schemes.iter().enumerate() {
                let st = &s.stats;
                let _ = writeln!(
                    o,
                    "    scheme {si}: {}: tried {} regions / {} B, applied {} / {} B, quota exceeded {}",
                    s.action, st.nr_tried, st.sz_tried, st.nr_applied, st.sz_applied, st.qt_exceeds
                );
                for r in s.tried_regions.iter().flatten() {
                    let _ = writeln!(
                        o,
                        "      {:#x}-{:#x} ({} KiB): nr_accesses {}, age {}",
                        r.start,
                        r.end,
                        r.len() >> 10,
                        r.nr_accesses,
                        r.age
                    );
                }
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_kdamond_with_its_scheme_stats_and_regions() {
        let t = crate::fs::fake::FakeTree::new();
        crate::damon::fake_kdamond_6_12(&t);
        let k = format!("{KDAMONDS}/0");
        let c = format!("{k}/contexts/0");
        t.set(&format!("{k}/state"), "on\n");
        t.set(&format!("{k}/pid"), "812\n");
        t.set(&format!("{c}/operations"), "vaddr\n");
        t.set(
            &format!("{c}/monitoring_attrs/intervals/sample_us"),
            "5000\n",
        );
        t.set(
            &format!("{c}/monitoring_attrs/intervals/aggr_us"),
            "100000\n",
        );
        t.set(&format!("{c}/targets/0/pid_target"), "42\n");
        t.set(&format!("{c}/schemes/0/action"), "pageout\n");
        t.set(&format!("{c}/schemes/0/stats/nr_tried"), "3\n");
        t.set(&format!("{c}/schemes/0/stats/sz_tried"), "12288\n");
        t.set(&format!("{c}/schemes/0/tried_regions/0/start"), "4096\n");
        t.set(&format!("{c}/schemes/0/tried_regions/0/end"), "12288\n");
        t.set(&format!("{c}/schemes/0/tried_regions/0/nr_accesses"), "0\n");
        t.set(&format!("{c}/schemes/0/tried_regions/0/age"), "51\n");
        let s = read(&t.fs(), false, true).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].state.as_str(), s[0].pid), ("on", Some(812)));
        let ctx = &s[0].contexts[0];
        assert_eq!((ctx.operations.as_str(), ctx.sample_us), ("vaddr", 5000));
        assert_eq!(ctx.target_pids, vec![42]);
        let sch = &ctx.schemes[0];
        assert_eq!(
            (sch.action.as_str(), sch.stats.sz_tried),
            ("pageout", 12288)
        );
        let r = sch.tried_regions.as_ref().unwrap();
        assert_eq!((r[0].start, r[0].end, r[0].age), (4096, 12288, 51));
        let text = render(&s);
        assert!(text.contains("kdamond 0: on (pid 812)"), "{text}");
        assert!(
            text.contains("scheme 0: pageout: tried 3 regions / 12288 B"),
            "{text}"
        );
        assert!(
            text.contains("0x1000-0x3000 (8 KiB): nr_accesses 0, age 51"),
            "{text}"
        );
        // Read-only unless asked: the state file still says "on".
        assert_eq!(t.get(&format!("{k}/state")).trim(), "on");
        read(&t.fs(), true, true).unwrap();
        assert_eq!(
            t.get(&format!("{k}/state")).trim(),
            "update_schemes_tried_regions",
            "--update asks the kdamond for fresh figures"
        );
    }

    #[test]
    fn without_damon_sysfs_the_feature_is_named() {
        let t = crate::fs::fake::FakeTree::new();
        let e = read(&t.fs(), false, false).unwrap_err();
        assert!(e.to_string().contains("DAMON sysfs"), "{e}");
    }
}
