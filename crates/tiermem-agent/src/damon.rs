//! DAMON through its sysfs interface (`mm/damon/sysfs.c`, `sysfs-schemes.c`).
//!
//! A [`KdamondSpec`] is data (operations, attributes, targets, schemes); [`DamonSysfs`]
//! writes it into `/sys/kernel/mm/damon/admin/kdamonds/<K>/` and turns it on, and reads the
//! regions a `stat` scheme tried (`update_schemes_tried_regions`), which is how the agent
//! monitors a process's address space.
//!
//! [`SchemeConfig`] is the agent's DAMOS scheme vocabulary (pattern, action, quota,
//! weights, watermarks, as in kernel-mechanisms §5.1–5.8). It is a small module of its
//! own so the shared DAMOS types of `tiermem-core` can replace it when they land; the
//! sysfs writer only needs [`SchemeConfig::sysfs_files`].
//!
//! Limitation: a scheme's `tried_regions` do not say which target a region belongs to,
//! so monitoring uses one kdamond per monitored process.

use crate::config::{DamonOps, MonitoringAttrs};
use crate::fs::HostFs;
use crate::Error;
use serde::Deserialize;
use tiermem_core::units::Bytes;
use tiermem_core::ConfigError;

pub const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// DAMOS actions (`damos_action` names in sysfs-schemes.c) and the ops that implement them.
pub const ACTIONS: [(&str, bool, bool); 10] = [
    // (name, vaddr, paddr)
    ("willneed", true, false),
    ("cold", true, true),
    ("pageout", true, true),
    ("hugepage", true, false),
    ("nohugepage", true, false),
    ("lru_prio", false, true),
    ("lru_deprio", false, true),
    ("migrate_hot", false, true),
    ("migrate_cold", false, true),
    ("stat", true, true),
];

/// One DAMOS scheme, kernel defaults where a field is omitted.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchemeConfig {
    pub action: String,
    /// Destination node of `migrate_hot`/`migrate_cold` (6.11+).
    #[serde(default)]
    pub target_nid: Option<u32>,
    /// Region size range. Default 4KiB (PAGE_SIZE) .. unlimited.
    #[serde(default = "d_min_size")]
    pub min_size: Bytes,
    #[serde(default)]
    pub max_size: Option<Bytes>,
    /// `nr_accesses` range (samples per aggregation interval).
    #[serde(default)]
    pub min_nr_accesses: u64,
    #[serde(default)]
    pub max_nr_accesses: Option<u64>,
    /// Age range, in aggregation intervals.
    #[serde(default)]
    pub min_age: u64,
    #[serde(default)]
    pub max_age: Option<u64>,
    /// Quotas (0 = none): time, size, charge window.
    #[serde(default)]
    pub quota_ms: u64,
    #[serde(default)]
    pub quota_bytes: Bytes,
    #[serde(default)]
    pub quota_reset_interval_ms: u64,
    /// Prioritisation weights (permil).
    #[serde(default)]
    pub weight_sz_permil: u64,
    #[serde(default)]
    pub weight_nr_accesses_permil: u64,
    #[serde(default)]
    pub weight_age_permil: u64,
    /// Watermarks: `none` or `free_mem_rate` (permil of free memory).
    #[serde(default = "d_metric")]
    pub wmarks_metric: String,
    #[serde(default)]
    pub wmarks_interval_us: u64,
    #[serde(default)]
    pub wmarks_high: u64,
    #[serde(default)]
    pub wmarks_mid: u64,
    #[serde(default)]
    pub wmarks_low: u64,
    /// Apply interval (0 = the aggregation interval; 6.7+).
    #[serde(default)]
    pub apply_interval_us: u64,
}

fn d_min_size() -> Bytes {
    Bytes(4096)
}
fn d_metric() -> String {
    "none".into()
}

impl SchemeConfig {
    /// A `stat` scheme over every region: the monitoring probe.
    pub fn stat_all() -> Self {
        SchemeConfig {
            action: "stat".into(),
            target_nid: None,
            min_size: Bytes(0),
            max_size: None,
            min_nr_accesses: 0,
            max_nr_accesses: None,
            min_age: 0,
            max_age: None,
            quota_ms: 0,
            quota_bytes: Bytes(0),
            quota_reset_interval_ms: 0,
            weight_sz_permil: 0,
            weight_nr_accesses_permil: 0,
            weight_age_permil: 0,
            wmarks_metric: "none".into(),
            wmarks_interval_us: 0,
            wmarks_high: 0,
            wmarks_mid: 0,
            wmarks_low: 0,
            apply_interval_us: 0,
        }
    }

    pub fn validate(&self, key: &str, ops: DamonOps) -> Result<(), ConfigError> {
        let bad = |f: &str, m: String| ConfigError::invalid(format!("{key}.{f}"), m);
        let Some(&(_, v, p)) = ACTIONS.iter().find(|a| a.0 == self.action) else {
            let names: Vec<&str> = ACTIONS.iter().map(|a| a.0).collect();
            return Err(bad(
                "action",
                format!(
                    "unknown action {:?}; one of {}",
                    self.action,
                    names.join(", ")
                ),
            ));
        };
        let ok = match ops {
            DamonOps::Vaddr => v,
            DamonOps::Paddr => p,
        };
        if !ok {
            return Err(bad(
                "action",
                format!("{} is not supported by {:?} operations", self.action, ops),
            ));
        }
        if self.action.starts_with("migrate_") != self.target_nid.is_some() {
            return Err(bad(
                "target_nid",
                "migrate_hot/migrate_cold need target_nid; other actions take none".into(),
            ));
        }
        if matches!(self.max_size, Some(m) if m.0 < self.min_size.0) {
            return Err(bad("max_size", "below min_size".into()));
        }
        if matches!(self.max_nr_accesses, Some(m) if m < self.min_nr_accesses) {
            return Err(bad("max_nr_accesses", "below min_nr_accesses".into()));
        }
        if matches!(self.max_age, Some(m) if m < self.min_age) {
            return Err(bad("max_age", "below min_age".into()));
        }
        match self.wmarks_metric.as_str() {
            "none" => {}
            "free_mem_rate" => {
                if !(self.wmarks_high >= self.wmarks_mid
                    && self.wmarks_mid >= self.wmarks_low
                    && self.wmarks_high <= 1000)
                {
                    return Err(bad("wmarks_high", "need 1000 >= high >= mid >= low".into()));
                }
            }
            m => {
                return Err(bad(
                    "wmarks_metric",
                    format!("{m:?}: use none or free_mem_rate"),
                ))
            }
        }
        Ok(())
    }

    /// The scheme as (relative path, value) writes under `schemes/<S>/`.
    pub fn sysfs_files(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = vec![
            ("action".into(), self.action.clone()),
            ("access_pattern/sz/min".into(), self.min_size.0.to_string()),
            (
                "access_pattern/sz/max".into(),
                self.max_size.map(|b| b.0).unwrap_or(u64::MAX).to_string(),
            ),
            (
                "access_pattern/nr_accesses/min".into(),
                self.min_nr_accesses.to_string(),
            ),
            (
                "access_pattern/nr_accesses/max".into(),
                self.max_nr_accesses.unwrap_or(u32::MAX as u64).to_string(),
            ),
            ("access_pattern/age/min".into(), self.min_age.to_string()),
            (
                "access_pattern/age/max".into(),
                self.max_age.unwrap_or(u32::MAX as u64).to_string(),
            ),
            ("quotas/ms".into(), self.quota_ms.to_string()),
            ("quotas/bytes".into(), self.quota_bytes.0.to_string()),
            (
                "quotas/reset_interval_ms".into(),
                self.quota_reset_interval_ms.to_string(),
            ),
            (
                "quotas/weights/sz_permil".into(),
                self.weight_sz_permil.to_string(),
            ),
            (
                "quotas/weights/nr_accesses_permil".into(),
                self.weight_nr_accesses_permil.to_string(),
            ),
            (
                "quotas/weights/age_permil".into(),
                self.weight_age_permil.to_string(),
            ),
            ("watermarks/metric".into(), self.wmarks_metric.clone()),
            (
                "watermarks/interval_us".into(),
                self.wmarks_interval_us.to_string(),
            ),
            ("watermarks/high".into(), self.wmarks_high.to_string()),
            ("watermarks/mid".into(), self.wmarks_mid.to_string()),
            ("watermarks/low".into(), self.wmarks_low.to_string()),
        ];
        if let Some(n) = self.target_nid {
            v.push(("target_nid".into(), n.to_string()));
        }
        if self.apply_interval_us > 0 {
            v.push((
                "apply_interval_us".into(),
                self.apply_interval_us.to_string(),
            ));
        }
        v
    }
}

/// One kdamond with one context.
#[derive(Clone, Debug, PartialEq)]
pub struct KdamondSpec {
    /// What it is for (metrics label, logs).
    pub purpose: String,
    pub ops: DamonOps,
    pub attrs: MonitoringAttrs,
    pub pids: Vec<i32>,
    pub schemes: Vec<SchemeConfig>,
}

/// A region as a scheme tried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u64,
    pub age: u64,
}

impl Region {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// Scheme statistics (`schemes/<S>/stats/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchemeStats {
    pub nr_tried: u64,
    pub sz_tried: u64,
    pub nr_applied: u64,
    pub sz_applied: u64,
    pub qt_exceeds: u64,
}

/// The biggest top-level `System RAM` range of `/proc/iomem`, as `[start, end)`.
pub fn biggest_system_ram(iomem: &str) -> Option<(u64, u64)> {
    iomem
        .lines()
        .filter(|l| !l.starts_with(' ') && l.trim_end().ends_with(": System RAM"))
        .filter_map(|l| {
            let (range, _) = l.split_once(" : ")?;
            let (a, b) = range.trim().split_once('-')?;
            let a = u64::from_str_radix(a, 16).ok()?;
            let b = u64::from_str_radix(b, 16).ok()?;
            Some((a, b + 1))
        })
        .max_by_key(|(a, b)| b - a)
}

/// The DAMON sysfs driver.
#[derive(Clone, Debug)]
pub struct DamonSysfs {
    fs: HostFs,
}

impl DamonSysfs {
    pub fn new(fs: HostFs) -> Self {
        DamonSysfs { fs }
    }

    pub fn available(&self) -> bool {
        self.fs.exists(&format!("{KDAMONDS}/nr_kdamonds"))
    }

    pub fn nr_kdamonds(&self) -> Result<u64, Error> {
        self.fs.read_u64(&format!("{KDAMONDS}/nr_kdamonds"))
    }

    /// The writes that build `spec` into kdamond `k` (directories must exist after the
    /// `nr_*` writes, which the kernel creates on the fly). Order matters: `nr_*` files first.
    pub fn spec_writes(&self, k: usize, spec: &KdamondSpec) -> Vec<(String, String)> {
        let base = format!("{KDAMONDS}/{k}");
        let c = format!("{base}/contexts/0");
        let a = &spec.attrs;
        let mut w = vec![
            (format!("{base}/contexts/nr_contexts"), "1".to_string()),
            (
                format!("{c}/operations"),
                match spec.ops {
                    DamonOps::Vaddr => "vaddr",
                    DamonOps::Paddr => "paddr",
                }
                .to_string(),
            ),
            (
                format!("{c}/monitoring_attrs/intervals/sample_us"),
                a.sample_us.to_string(),
            ),
            (
                format!("{c}/monitoring_attrs/intervals/aggr_us"),
                a.aggr_us.to_string(),
            ),
            (
                format!("{c}/monitoring_attrs/intervals/update_us"),
                a.update_us.to_string(),
            ),
            (
                format!("{c}/monitoring_attrs/nr_regions/max"),
                a.max_nr_regions.to_string(),
            ),
            (
                format!("{c}/monitoring_attrs/nr_regions/min"),
                a.min_nr_regions.to_string(),
            ),
        ];
        let nr_targets = if spec.ops == DamonOps::Paddr {
            1
        } else {
            spec.pids.len()
        };
        w.push((format!("{c}/targets/nr_targets"), nr_targets.to_string()));
        for (i, pid) in spec.pids.iter().enumerate() {
            w.push((format!("{c}/targets/{i}/pid_target"), pid.to_string()));
        }
        if spec.ops == DamonOps::Paddr {
            // paddr has no default regions through sysfs: monitor the biggest System RAM
            // resource, DAMON_RECLAIM's default (`damon_set_region_biggest_system_ram_default`).
            if let Some((start, end)) = self
                .fs
                .read_opt("/proc/iomem")
                .ok()
                .flatten()
                .and_then(|t| biggest_system_ram(&t))
            {
                w.push((format!("{c}/targets/0/regions/nr_regions"), "1".into()));
                w.push((format!("{c}/targets/0/regions/0/start"), start.to_string()));
                w.push((format!("{c}/targets/0/regions/0/end"), end.to_string()));
            }
        }
        w.push((
            format!("{c}/schemes/nr_schemes"),
            spec.schemes.len().to_string(),
        ));
        for (i, s) in spec.schemes.iter().enumerate() {
            for (f, v) in s.sysfs_files() {
                w.push((format!("{c}/schemes/{i}/{f}"), v));
            }
        }
        w
    }

    /// Create `specs.len()` kdamonds, configure and start them.
    pub fn start(&self, specs: &[KdamondSpec]) -> Result<Vec<i32>, Error> {
        self.fs
            .write(&format!("{KDAMONDS}/nr_kdamonds"), &specs.len().to_string())?;
        let mut pids = Vec::new();
        for (k, spec) in specs.iter().enumerate() {
            for (path, value) in self.spec_writes(k, spec) {
                // A scheme file absent on this kernel (e.g. apply_interval_us before 6.7)
                // is skipped only when it holds its default.
                if !self.fs.exists(&path) && path.ends_with("apply_interval_us") {
                    continue;
                }
                self.fs.write(&path, &value)?;
            }
            self.fs.write(&format!("{KDAMONDS}/{k}/state"), "on")?;
            pids.push(
                self.fs
                    .read_opt(&format!("{KDAMONDS}/{k}/pid"))?
                    .and_then(|p| p.trim().parse().ok())
                    .unwrap_or(-1),
            );
        }
        Ok(pids)
    }

    /// Turn every kdamond off and set `nr_kdamonds` back to `nr`.
    pub fn stop_all(&self, nr: u64) -> Result<(), Error> {
        let n = self.nr_kdamonds().unwrap_or(0);
        for k in 0..n {
            let st = format!("{KDAMONDS}/{k}/state");
            if self.fs.read_opt(&st)?.as_deref().map(str::trim) == Some("on") {
                // Writing off to a kdamond that just exited fails with EINVAL: ignore.
                let _ = self.fs.write(&st, "off");
            }
        }
        self.fs
            .write(&format!("{KDAMONDS}/nr_kdamonds"), &nr.to_string())
    }

    pub fn is_on(&self, k: usize) -> bool {
        self.fs
            .read_opt(&format!("{KDAMONDS}/{k}/state"))
            .ok()
            .flatten()
            .is_some_and(|s| s.trim() == "on")
    }

    /// Ask the kernel to fill `tried_regions` of every scheme of kdamond `k`, then read
    /// scheme `s`'s regions.
    pub fn tried_regions(&self, k: usize, s: usize) -> Result<Vec<Region>, Error> {
        self.fs.write(
            &format!("{KDAMONDS}/{k}/state"),
            "update_schemes_tried_regions",
        )?;
        let dir = format!("{KDAMONDS}/{k}/contexts/0/schemes/{s}/tried_regions");
        let mut out = Vec::new();
        for r in self.fs.numbered_entries(&dir, "")? {
            let rd = format!("{dir}/{r}");
            out.push(Region {
                start: self.fs.read_u64(&format!("{rd}/start"))?,
                end: self.fs.read_u64(&format!("{rd}/end"))?,
                nr_accesses: self.fs.read_u64(&format!("{rd}/nr_accesses"))?,
                age: self.fs.read_u64(&format!("{rd}/age"))?,
            });
        }
        out.sort_by_key(|r| r.start);
        Ok(out)
    }

    /// Refresh and read scheme `s`'s statistics.
    pub fn scheme_stats(&self, k: usize, s: usize) -> Result<SchemeStats, Error> {
        self.fs
            .write(&format!("{KDAMONDS}/{k}/state"), "update_schemes_stats")?;
        let d = format!("{KDAMONDS}/{k}/contexts/0/schemes/{s}/stats");
        let g = |f: &str| self.fs.read_u64(&format!("{d}/{f}"));
        Ok(SchemeStats {
            nr_tried: g("nr_tried")?,
            sz_tried: g("sz_tried")?,
            nr_applied: g("nr_applied")?,
            sz_applied: g("sz_applied")?,
            qt_exceeds: g("qt_exceeds")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fake::FakeTree;

    fn spec() -> KdamondSpec {
        KdamondSpec {
            purpose: "t".into(),
            ops: DamonOps::Vaddr,
            attrs: MonitoringAttrs::default(),
            pids: vec![42],
            schemes: vec![SchemeConfig::stat_all()],
        }
    }

    #[test]
    fn spec_writes_build_the_quick_start_tree() {
        let d = DamonSysfs::new(FakeTree::new().fs());
        let w = d.spec_writes(0, &spec());
        let get = |suffix: &str| {
            w.iter()
                .find(|(p, _)| p.ends_with(suffix))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("contexts/nr_contexts").as_deref(), Some("1"));
        assert_eq!(get("contexts/0/operations").as_deref(), Some("vaddr"));
        assert_eq!(get("targets/0/pid_target").as_deref(), Some("42"));
        assert_eq!(get("schemes/0/action").as_deref(), Some("stat"));
        assert_eq!(get("intervals/sample_us").as_deref(), Some("5000"));
        // nr_ files precede the files they create.
        let pos = |s: &str| w.iter().position(|(p, _)| p.ends_with(s)).unwrap();
        assert!(pos("nr_targets") < pos("pid_target"));
        assert!(pos("nr_schemes") < pos("schemes/0/action"));
    }

    #[test]
    fn start_writes_and_reads_regions_from_fake_tree() {
        let t = FakeTree::new().file(&format!("{KDAMONDS}/nr_kdamonds"), "0");
        let d = DamonSysfs::new(t.fs());
        // The fake tree needs the files the kernel would create.
        for (p, _) in d.spec_writes(0, &spec()) {
            t.set(&p, "");
        }
        t.set(&format!("{KDAMONDS}/0/state"), "off");
        t.set(&format!("{KDAMONDS}/0/pid"), "777");
        let pids = d.start(&[spec()]).unwrap();
        assert_eq!(pids, vec![777]);
        assert_eq!(t.get(&format!("{KDAMONDS}/0/state")), "on");
        assert_eq!(
            t.get(&format!("{KDAMONDS}/0/contexts/0/targets/0/pid_target")),
            "42"
        );
        let r = format!("{KDAMONDS}/0/contexts/0/schemes/0/tried_regions");
        for (i, (s, e, n, a)) in [(8192u64, 16384u64, 20u64, 3u64), (4096, 8192, 0, 9)]
            .iter()
            .enumerate()
        {
            t.set(&format!("{r}/{i}/start"), &s.to_string());
            t.set(&format!("{r}/{i}/end"), &e.to_string());
            t.set(&format!("{r}/{i}/nr_accesses"), &n.to_string());
            t.set(&format!("{r}/{i}/age"), &a.to_string());
        }
        t.set(&format!("{r}/total_bytes"), "8192");
        let regs = d.tried_regions(0, 0).unwrap();
        assert_eq!(regs.len(), 2);
        assert_eq!(regs[0].start, 4096, "sorted by address");
        assert_eq!(regs[1].nr_accesses, 20);
        t.set(&format!("{KDAMONDS}/0/state"), "on"); // the kernel reads back on/off
        d.stop_all(0).unwrap();
        assert_eq!(t.get(&format!("{KDAMONDS}/0/state")), "off");
        assert_eq!(t.get(&format!("{KDAMONDS}/nr_kdamonds")), "0");
    }

    #[test]
    fn paddr_monitors_the_biggest_system_ram() {
        let iomem = "00001000-0009fbff : System RAM\n000a0000-000bffff : PCI Bus 0000:00\n00100000-7ffdffff : System RAM\n  01000000-01ffffff : Kernel code\n100000000-13fffffff : System RAM\n";
        assert_eq!(biggest_system_ram(iomem), Some((0x100000, 0x7ffe0000)));
        let t = FakeTree::new().file("/proc/iomem", iomem);
        let d = DamonSysfs::new(t.fs());
        let mut s = spec();
        s.ops = DamonOps::Paddr;
        s.pids.clear();
        let w = d.spec_writes(0, &s);
        assert!(w.contains(&(
            format!("{KDAMONDS}/0/contexts/0/targets/0/regions/0/end"),
            (0x7ffe0000u64).to_string()
        )));
    }

    #[test]
    fn scheme_validation() {
        let mut s = SchemeConfig::stat_all();
        s.action = "pageout".into();
        assert!(s.validate("k", DamonOps::Vaddr).is_ok());
        s.action = "lru_prio".into();
        assert!(s.validate("k", DamonOps::Vaddr).is_err());
        s.action = "migrate_cold".into();
        assert_eq!(
            s.validate("k", DamonOps::Paddr).unwrap_err().key,
            "k.target_nid"
        );
        s.target_nid = Some(1);
        assert!(s.validate("k", DamonOps::Paddr).is_ok());
        s.action = "nope".into();
        assert!(s.validate("k", DamonOps::Paddr).is_err());
    }
}
