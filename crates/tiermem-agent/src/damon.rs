//! DAMON through its sysfs interface (`mm/damon/sysfs.c`, `sysfs-schemes.c`).
//!
//! A [`KdamondSpec`] is data (operations, attributes, targets, schemes); [`DamonSysfs`]
//! writes it into `/sys/kernel/mm/damon/admin/kdamonds/<K>/` and turns it on, and reads the
//! regions a `stat` scheme tried (`update_schemes_tried_regions`), which is how the agent
//! monitors a process's address space.
//!
//! Schemes and monitoring attributes are `tiermem-core`'s DAMON vocabulary
//! ([`SchemeConfig`], [`MonitoringAttrs`]), the one the simulator's
//! `[[kernel.damon.contexts.schemes]]` uses: an agent `[[damon.schemes]]` table is written
//! the same way. [`scheme_files`] and [`attrs_files`] translate them to the sysfs files of
//! Linux 6.12; [`DamonSysfs::check_support`] refuses, before anything is written, a setting
//! whose file (or name) the running kernel lacks.
//!
//! Limitation: a scheme's `tried_regions` do not say which target a region belongs to,
//! so monitoring uses one kdamond per monitored process.

use crate::fs::HostFs;
use crate::Error;
use serde::Serialize;
use tiermem_core::damon::{
    AddrRange, DamosAction, FilterConfig, FilterType, MonitoringAttrs, OpsKind, QuotaGoal,
    SchemeConfig,
};
use tiermem_core::ConfigError;

pub const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// Write a command (`update_schemes_stats`, `update_schemes_tried_regions`, ...) to
/// `state` of the kdamond at `kd`. The kernel takes one command at a time for all kdamonds
/// (6.12 `damon_sysfs_handle_cmd`: EBUSY while another writer's command waits for its
/// kdamond), so another process asking at the same moment (a second agent, `damon
/// status`, damo) makes the write fail with EBUSY: it is retried for up to
/// [`COMMAND_BUSY_WAIT`].
pub fn state_command(fs: &HostFs, kd: &str, cmd: &str) -> Result<(), Error> {
    let path = format!("{kd}/state");
    let t0 = std::time::Instant::now();
    loop {
        match fs.write(&path, cmd) {
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(libc::EBUSY)
                    && t0.elapsed() < COMMAND_BUSY_WAIT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// How long [`state_command`] retries a busy kernel: a command waits for its kdamond's next
/// `after_aggregation` (or `after_wmarks_check`) callback, an aggregation interval or two.
pub const COMMAND_BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Which operations set implements each DAMOS action in the kernel the agent targets
/// (6.12: `damon_va_apply_scheme`, `damon_pa_apply_scheme`); elsewhere the action applies
/// nothing, so the agent refuses it. (paddr has no `cold`; vaddr migration came in 6.16.)
pub fn ops_support(ops: OpsKind, action: DamosAction) -> bool {
    use DamosAction::*;
    match ops {
        OpsKind::Vaddr => matches!(
            action,
            Willneed | Cold | Pageout | Hugepage | Nohugepage | Stat
        ),
        OpsKind::Paddr => matches!(
            action,
            Pageout | LruPrio | LruDeprio | MigrateHot | MigrateCold | Stat
        ),
    }
}

/// The name a vocabulary value has in TOML, which is also its name in DAMON sysfs
/// (`pageout`, `free_mem_rate`, `some_mem_psi_us`, `young`, `paddr`).
pub fn sysfs_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("not a unit enum: {other:?}"),
    }
}

/// Check one scheme of the agent's config (no host needed): `tiermem-core`'s validation
/// (pattern bounds, `target_nid` for the migrate actions, watermark order, goal and filter
/// arguments), then what only a live host adds: the action must do something with `ops`,
/// and a memcg filter names its cgroup by path. Node ids are checked against the host in
/// the plan.
pub fn validate_scheme(s: &SchemeConfig, key: &str, ops: OpsKind) -> Result<(), ConfigError> {
    s.validate(usize::MAX)
        .map_err(|m| ConfigError::invalid(key, m))?;
    if !ops_support(ops, s.action) {
        return Err(ConfigError::invalid(
            format!("{key}.action"),
            format!(
                "{} is not implemented by {} operations (it would apply nothing)",
                s.action.name(),
                sysfs_name(&ops)
            ),
        ));
    }
    for (i, f) in s.filters.iter().enumerate() {
        if f.memcg.is_some() {
            return Err(ConfigError::invalid(
                format!("{key}.filters[{i}].memcg"),
                "memcg is the simulator's workload index; on a live host name the cgroup with memcg_path",
            ));
        }
        if f.kind == FilterType::Memcg && f.memcg_path.is_none() {
            return Err(ConfigError::invalid(
                format!("{key}.filters[{i}].memcg_path"),
                "a memcg filter needs memcg_path (the cgroup's path below the cgroup2 mount)",
            ));
        }
    }
    Ok(())
}

/// One DAMON sysfs file a setting goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsFile {
    /// Path under `schemes/<S>/` (schemes) or `contexts/0/` (attributes).
    pub path: String,
    pub value: String,
    /// The config key the value comes from, relative to the scheme or `attrs` table
    /// (`quotas.goals[1].metric`).
    pub key: String,
    /// The value is a name the kernel looks up (action, metric, type): a kernel that
    /// lacks it refuses the write with EINVAL.
    pub is_name: bool,
}

fn file(path: impl Into<String>, value: impl ToString, key: impl Into<String>) -> SysfsFile {
    SysfsFile {
        path: path.into(),
        value: value.to_string(),
        key: key.into(),
        is_name: false,
    }
}

fn name(path: impl Into<String>, value: String, key: impl Into<String>) -> SysfsFile {
    SysfsFile {
        is_name: true,
        ..file(path, value, key)
    }
}

/// Monitoring attributes as files under `contexts/0/` (`intervals_goal`, 6.15+, only when
/// auto-tuning is on).
pub fn attrs_files(a: &MonitoringAttrs) -> Vec<SysfsFile> {
    let iv = "monitoring_attrs/intervals";
    let mut v = vec![
        file(format!("{iv}/sample_us"), a.sample_us, "sample_us"),
        file(format!("{iv}/aggr_us"), a.aggr_us, "aggr_us"),
        file(format!("{iv}/update_us"), a.update_us, "update_us"),
        file(
            "monitoring_attrs/nr_regions/max",
            a.max_nr_regions,
            "max_nr_regions",
        ),
        file(
            "monitoring_attrs/nr_regions/min",
            a.min_nr_regions,
            "min_nr_regions",
        ),
    ];
    let g = &a.intervals_goal;
    if g.aggrs > 0 {
        let d = format!("{iv}/intervals_goal");
        v.extend([
            file(
                format!("{d}/access_bp"),
                g.access_bp,
                "intervals_goal.access_bp",
            ),
            file(format!("{d}/aggrs"), g.aggrs, "intervals_goal.aggrs"),
            file(
                format!("{d}/min_sample_us"),
                g.min_sample_us,
                "intervals_goal.min_sample_us",
            ),
            file(
                format!("{d}/max_sample_us"),
                g.max_sample_us,
                "intervals_goal.max_sample_us",
            ),
        ]);
    }
    v
}

/// A scheme as files under `schemes/<S>/`, in write order (each `nr_*` file before the
/// directories it creates). Optional files are written only when the config sets them
/// (goals, filters, `allow = true`, a goal's `nid`, `target_nid`, a non-zero
/// `apply_interval_us`), so a kernel without them is refused only when they are used.
pub fn scheme_files(s: &SchemeConfig) -> Vec<SysfsFile> {
    let p = &s.access_pattern;
    let q = &s.quotas;
    let w = &s.watermarks;
    let ap = "access_pattern";
    let mut v = vec![
        name("action", s.action.name().to_string(), "action"),
        file(format!("{ap}/sz/min"), p.min_sz, "access_pattern.min_sz"),
        file(format!("{ap}/sz/max"), p.max_sz, "access_pattern.max_sz"),
        file(
            format!("{ap}/nr_accesses/min"),
            p.min_nr_accesses,
            "access_pattern.min_nr_accesses",
        ),
        file(
            format!("{ap}/nr_accesses/max"),
            p.max_nr_accesses,
            "access_pattern.max_nr_accesses",
        ),
        file(format!("{ap}/age/min"), p.min_age, "access_pattern.min_age"),
        file(format!("{ap}/age/max"), p.max_age, "access_pattern.max_age"),
        file("quotas/ms", q.ms, "quotas.ms"),
        file("quotas/bytes", q.sz, "quotas.sz"),
        file(
            "quotas/reset_interval_ms",
            q.reset_interval_ms,
            "quotas.reset_interval_ms",
        ),
        file(
            "quotas/weights/sz_permil",
            q.weights.sz_permil,
            "quotas.weights.sz_permil",
        ),
        file(
            "quotas/weights/nr_accesses_permil",
            q.weights.nr_accesses_permil,
            "quotas.weights.nr_accesses_permil",
        ),
        file(
            "quotas/weights/age_permil",
            q.weights.age_permil,
            "quotas.weights.age_permil",
        ),
    ];
    if !q.goals.is_empty() {
        goal_files(&q.goals, &mut v);
    }
    v.extend([
        name(
            "watermarks/metric",
            sysfs_name(&w.metric),
            "watermarks.metric",
        ),
        file(
            "watermarks/interval_us",
            w.interval_us,
            "watermarks.interval_us",
        ),
        file("watermarks/high", w.high, "watermarks.high"),
        file("watermarks/mid", w.mid, "watermarks.mid"),
        file("watermarks/low", w.low, "watermarks.low"),
    ]);
    if !s.filters.is_empty() {
        filter_files(&s.filters, &mut v);
    }
    if let Some(n) = s.target_nid {
        v.push(file("target_nid", n.0, "target_nid"));
    }
    if s.apply_interval_us > 0 {
        v.push(file(
            "apply_interval_us",
            s.apply_interval_us,
            "apply_interval_us",
        ));
    }
    v
}

/// The files of a scheme's quota goals (`quotas/goals/<i>/`).
fn goal_files(goals: &[QuotaGoal], v: &mut Vec<SysfsFile>) {
    v.push(file("quotas/goals/nr_goals", goals.len(), "quotas.goals"));
    for (i, g) in goals.iter().enumerate() {
        let d = format!("quotas/goals/{i}");
        let k = format!("quotas.goals[{i}]");
        v.push(name(
            format!("{d}/target_metric"),
            sysfs_name(&g.metric),
            format!("{k}.metric"),
        ));
        v.push(file(
            format!("{d}/target_value"),
            g.target_value,
            format!("{k}.target_value"),
        ));
        v.push(file(
            format!("{d}/current_value"),
            g.current_value,
            format!("{k}.current_value"),
        ));
        if let Some(n) = g.nid {
            v.push(file(format!("{d}/nid"), n.0, format!("{k}.nid")));
        }
    }
}

/// The files of a scheme's filters (`filters/<i>/`): type, matching, allow and what the
/// type needs (memcg path, address range, target index).
fn filter_files(filters: &[FilterConfig], v: &mut Vec<SysfsFile>) {
    v.push(file("filters/nr_filters", filters.len(), "filters"));
    for (i, f) in filters.iter().enumerate() {
        let d = format!("filters/{i}");
        let k = format!("filters[{i}]");
        v.push(name(
            format!("{d}/type"),
            sysfs_name(&f.kind),
            format!("{k}.type"),
        ));
        let yn = |b: bool| if b { "Y" } else { "N" };
        v.push(file(
            format!("{d}/matching"),
            yn(f.matching),
            format!("{k}.matching"),
        ));
        if f.allow {
            v.push(file(format!("{d}/allow"), "Y", format!("{k}.allow")));
        }
        match f.kind {
            FilterType::Memcg => {
                if let Some(path) = &f.memcg_path {
                    v.push(file(
                        format!("{d}/memcg_path"),
                        path,
                        format!("{k}.memcg_path"),
                    ));
                }
            }
            FilterType::Addr => {
                if let Some(r) = f.addr {
                    v.push(file(
                        format!("{d}/addr_start"),
                        r.start,
                        format!("{k}.addr.start"),
                    ));
                    v.push(file(
                        format!("{d}/addr_end"),
                        r.end,
                        format!("{k}.addr.end"),
                    ));
                }
            }
            FilterType::Target => {
                if let Some(t) = f.target_idx {
                    // The file is `damon_target_idx` (sysfs-schemes.c), not `target_idx`.
                    v.push(file(
                        format!("{d}/damon_target_idx"),
                        t,
                        format!("{k}.target_idx"),
                    ));
                }
            }
            FilterType::Anon | FilterType::Active | FilterType::Young => {}
        }
    }
}

/// Where a scheme file of goal or filter `i` sits in the probe kdamond, which has one
/// scheme with one goal and one filter: index 0.
fn probe_path(path: &str) -> String {
    let mut parts: Vec<&str> = path.split('/').collect();
    for i in 1..parts.len() {
        if matches!(parts[i - 1], "goals" | "filters") && parts[i].parse::<u32>().is_ok() {
            parts[i] = "0";
        }
    }
    parts.join("/")
}

/// A kdamond as the config describes it, before targets are resolved: what
/// [`DamonSysfs::check_support`] checks against the running kernel.
#[derive(Clone, Debug)]
pub struct ConfiguredKdamond {
    /// The config table it comes from (`damon`, `tiering`, `reclaim.processes`).
    pub key: String,
    pub ops: OpsKind,
    pub attrs: MonitoringAttrs,
    /// Each scheme with the config key its errors name (`damon.schemes[0]`).
    pub schemes: Vec<(String, SchemeConfig)>,
}

/// A `stat` scheme over every region: the monitoring probe of the tiering controller.
pub fn stat_all() -> SchemeConfig {
    SchemeConfig::new(DamosAction::Stat)
}

/// One kdamond with one context.
#[derive(Clone, Debug, PartialEq)]
pub struct KdamondSpec {
    /// What it is for (metrics label, logs).
    pub purpose: String,
    pub ops: OpsKind,
    pub attrs: MonitoringAttrs,
    pub pids: Vec<i32>,
    /// paddr: the physical ranges to monitor; empty = the biggest System RAM resource.
    pub regions: Vec<AddrRange>,
    pub schemes: Vec<SchemeConfig>,
}

/// A monitored region as DAMON reports it, the simulator's type.
pub use tiermem_core::damon::Region;

/// Scheme statistics (`schemes/<S>/stats/`), the simulator's type.
pub use tiermem_core::damon::SchemeStats;

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
        let mut w = vec![
            (format!("{base}/contexts/nr_contexts"), "1".to_string()),
            (format!("{c}/operations"), sysfs_name(&spec.ops)),
        ];
        for f in attrs_files(&spec.attrs) {
            w.push((format!("{c}/{}", f.path), f.value));
        }
        let nr_targets = if spec.ops == OpsKind::Paddr {
            1
        } else {
            spec.pids.len()
        };
        w.push((format!("{c}/targets/nr_targets"), nr_targets.to_string()));
        for (i, pid) in spec.pids.iter().enumerate() {
            w.push((format!("{c}/targets/{i}/pid_target"), pid.to_string()));
        }
        if spec.ops == OpsKind::Paddr {
            // paddr has no default regions through sysfs: unless the config names ranges,
            // monitor the biggest System RAM resource, DAMON_RECLAIM's default
            // (`damon_set_region_biggest_system_ram_default`).
            let regions = if spec.regions.is_empty() {
                self.fs
                    .read_opt("/proc/iomem")
                    .ok()
                    .flatten()
                    .and_then(|t| biggest_system_ram(&t))
                    .map(|(start, end)| vec![AddrRange { start, end }])
                    .unwrap_or_default()
            } else {
                spec.regions.clone()
            };
            let r = format!("{c}/targets/0/regions");
            if !regions.is_empty() {
                w.push((format!("{r}/nr_regions"), regions.len().to_string()));
            }
            for (i, range) in regions.iter().enumerate() {
                w.push((format!("{r}/{i}/start"), range.start.to_string()));
                w.push((format!("{r}/{i}/end"), range.end.to_string()));
            }
        }
        w.push((
            format!("{c}/schemes/nr_schemes"),
            spec.schemes.len().to_string(),
        ));
        for (i, s) in spec.schemes.iter().enumerate() {
            for f in scheme_files(s) {
                w.push((format!("{c}/schemes/{i}/{}", f.path), f.value));
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
            // check_support has made sure every file exists on this kernel.
            for (path, value) in self.spec_writes(k, spec) {
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

    /// Check, before anything is written, that the running kernel's DAMON sysfs has a file
    /// for every setting of `kdamonds` and accepts every name (action, goal metric, filter
    /// type, watermark metric, operations); a missing one is a config error naming the key.
    ///
    /// A scheme's files exist only under a scheme directory, which exists only under a
    /// kdamond, so this builds one throw-away kdamond (off, no targets: it does nothing)
    /// with one context, one scheme, one goal and one filter, looks, and sets
    /// `nr_kdamonds` back to 0 whatever happened. Call it only while `nr_kdamonds` is 0.
    pub fn check_support(&self, kdamonds: &[ConfiguredKdamond]) -> Result<(), Error> {
        if kdamonds.is_empty() {
            return Ok(());
        }
        let nr = format!("{KDAMONDS}/nr_kdamonds");
        let ctx = format!("{KDAMONDS}/0/contexts/0");
        let scheme = format!("{ctx}/schemes/0");
        let build = || -> Result<(), Error> {
            self.fs.write(&nr, "1")?;
            self.fs
                .write(&format!("{KDAMONDS}/0/contexts/nr_contexts"), "1")?;
            self.fs.write(&format!("{ctx}/schemes/nr_schemes"), "1")?;
            for f in ["quotas/goals/nr_goals", "filters/nr_filters"] {
                let p = format!("{scheme}/{f}");
                if self.fs.exists(&p) {
                    self.fs.write(&p, "1")?;
                }
            }
            Ok(())
        };
        let release = self
            .fs
            .read_opt("/proc/sys/kernel/osrelease")
            .ok()
            .flatten()
            .map(|r| r.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let r = build().and_then(|()| {
            for kd in kdamonds {
                self.probe(
                    &ctx,
                    &name("operations", sysfs_name(&kd.ops), "ops"),
                    &kd.key,
                    &release,
                )?;
                for f in attrs_files(&kd.attrs) {
                    self.probe(&ctx, &f, &format!("{}.attrs", kd.key), &release)?;
                }
                for (key, s) in &kd.schemes {
                    for f in scheme_files(s) {
                        self.probe(&scheme, &f, key, &release)?;
                    }
                }
            }
            Ok(())
        });
        let reset = self.fs.write(&nr, "0");
        r.and(reset)
    }

    fn probe(&self, dir: &str, f: &SysfsFile, key: &str, release: &str) -> Result<(), Error> {
        let rel = probe_path(&f.path);
        let path = format!("{dir}/{rel}");
        let shown = rel
            .replace("goals/0/", "goals/<N>/")
            .replace("filters/0/", "filters/<N>/");
        let key = format!("{key}.{}", f.key);
        if !self.fs.exists(&path) {
            return Err(Error::Config(ConfigError::invalid(
                key,
                format!("the running kernel ({release}) has no DAMON sysfs file `{shown}` for this setting (it needs a newer kernel)"),
            )));
        }
        if f.is_name {
            if let Err(e) = self.fs.write(&path, &f.value) {
                return Err(Error::Config(ConfigError::invalid(
                    key,
                    format!(
                        "the running kernel ({release}) does not accept {:?} in `{shown}` ({e})",
                        f.value
                    ),
                )));
            }
        }
        Ok(())
    }

    /// Turn every kdamond off and set `nr_kdamonds` back to `nr`. A kdamond whose state
    /// does not read `off` (or cannot be read) is sent `off`; the kernel refuses that for a
    /// kdamond that is off or just exited (EINVAL), which is ignored: setting
    /// `nr_kdamonds` is what must not be skipped.
    pub fn stop_all(&self, nr: u64) -> Result<(), Error> {
        let n = self.nr_kdamonds().unwrap_or(0);
        for k in 0..n {
            let st = format!("{KDAMONDS}/{k}/state");
            let off = matches!(self.fs.read_opt(&st), Ok(Some(s)) if s.trim() == "off");
            if !off {
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
        state_command(
            &self.fs,
            &format!("{KDAMONDS}/{k}"),
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
        state_command(&self.fs, &format!("{KDAMONDS}/{k}"), "update_schemes_stats")?;
        self.read_scheme_stats(k, s)
    }

    /// Refresh the statistics of kdamond `k` once (the kdamond copies them at its next
    /// check; the write returns after) and read its schemes `0..nr`.
    pub fn schemes_stats(&self, k: usize, nr: usize) -> Result<Vec<SchemeStats>, Error> {
        state_command(&self.fs, &format!("{KDAMONDS}/{k}"), "update_schemes_stats")?;
        (0..nr).map(|s| self.read_scheme_stats(k, s)).collect()
    }

    fn read_scheme_stats(&self, k: usize, s: usize) -> Result<SchemeStats, Error> {
        let d = format!("{KDAMONDS}/{k}/contexts/0/schemes/{s}/stats");
        let g = |f: &str| self.fs.read_u64(&format!("{d}/{f}"));
        Ok(SchemeStats {
            nr_tried: g("nr_tried")?,
            sz_tried: g("sz_tried")?,
            nr_applied: g("nr_applied")?,
            sz_applied: g("sz_applied")?,
            // A file since 6.14.
            sz_ops_filter_passed: self
                .fs
                .read_u64_opt(&format!("{d}/sz_ops_filter_passed"))?
                .unwrap_or(0),
            qt_exceeds: g("qt_exceeds")?,
        })
    }
}

/// A fake DAMON sysfs with the files of one Linux 6.12 kdamond (one context, one scheme,
/// one goal, one filter): what [`DamonSysfs::check_support`] finds on that kernel.
#[cfg(test)]
pub(crate) fn fake_kdamond_6_12(t: &crate::fs::fake::FakeTree) {
    let mut files = vec![format!("{KDAMONDS}/nr_kdamonds")];
    files.extend(crate::simulated_host::kdamond_files_6_12(0, 0, 0, 1));
    for f in files {
        if !t.fs().exists(&f) {
            t.set(&f, "0\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;
    use crate::fs::fake::FakeTree;
    use tiermem_core::config::SimConfig;
    use tiermem_core::damon::FilterConfig;

    fn spec() -> KdamondSpec {
        KdamondSpec {
            purpose: "t".into(),
            ops: OpsKind::Vaddr,
            attrs: MonitoringAttrs::default(),
            pids: vec![42],
            regions: Vec::new(),
            schemes: vec![stat_all()],
        }
    }

    /// One scheme table with every part of the vocabulary Linux 6.12's sysfs has.
    const SCHEME: &str = r#"action = "migrate_cold"
target_nid = 1
apply_interval_us = 1000000
access_pattern = { min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }
quotas = { ms = 10, sz = 209715200, reset_interval_ms = 1000, weights = { age_permil = 1 }, goals = [{ metric = "some_mem_psi_us", target_value = 1000 }] }
watermarks = { metric = "free_mem_rate", interval_us = 5000000, high = 500, mid = 400, low = 200 }
filters = [
  { type = "young" },
  { type = "addr", matching = false, addr = { start = 4096, end = 1048576 } },
  { type = "target", target_idx = 0 },
]
"#;

    #[test]
    fn a_scheme_table_is_the_same_for_the_agent_and_the_simulator() {
        let agent = AgentConfig::from_toml_str(
            &format!("[damon]\nops = \"paddr\"\n[[damon.schemes]]\n{SCHEME}"),
            "agent.toml",
        )
        .unwrap();
        let sim = SimConfig::from_toml_str(
            &format!(
                "machine = \"small\"\n[[kernel.damon.contexts]]\nops = \"paddr\"\n[[kernel.damon.contexts.schemes]]\n{SCHEME}"
            ),
            "sim.toml",
        )
        .unwrap();
        let a = &agent.damon.as_ref().unwrap().schemes;
        let s = &sim.kernel.damon.contexts[0].schemes;
        assert_eq!(a, s);
        assert_eq!(a[0].filters[0].kind, FilterType::Young);

        // The sysfs writes of that scheme, in order.
        let w: Vec<String> = scheme_files(&a[0])
            .iter()
            .map(|f| format!("{}={}", f.path, f.value))
            .collect();
        let want = [
            "action=migrate_cold",
            "access_pattern/sz/min=0",
            "access_pattern/sz/max=18446744073709551615",
            "access_pattern/nr_accesses/min=0",
            "access_pattern/nr_accesses/max=0",
            "access_pattern/age/min=50",
            "access_pattern/age/max=4294967295",
            "quotas/ms=10",
            "quotas/bytes=209715200",
            "quotas/reset_interval_ms=1000",
            "quotas/weights/sz_permil=0",
            "quotas/weights/nr_accesses_permil=0",
            "quotas/weights/age_permil=1",
            "quotas/goals/nr_goals=1",
            "quotas/goals/0/target_metric=some_mem_psi_us",
            "quotas/goals/0/target_value=1000",
            "quotas/goals/0/current_value=0",
            "watermarks/metric=free_mem_rate",
            "watermarks/interval_us=5000000",
            "watermarks/high=500",
            "watermarks/mid=400",
            "watermarks/low=200",
            "filters/nr_filters=3",
            "filters/0/type=young",
            "filters/0/matching=Y",
            "filters/1/type=addr",
            "filters/1/matching=N",
            "filters/1/addr_start=4096",
            "filters/1/addr_end=1048576",
            "filters/2/type=target",
            "filters/2/matching=Y",
            "filters/2/damon_target_idx=0",
            "target_nid=1",
            "apply_interval_us=1000000",
        ];
        assert_eq!(w, want);

        // Everything it needs exists on 6.12: the check passes and leaves no kdamond.
        let t = FakeTree::new().file("/proc/sys/kernel/osrelease", "6.12.117\n");
        fake_kdamond_6_12(&t);
        let d = DamonSysfs::new(t.fs());
        d.check_support(&agent.kdamonds()).unwrap();
        assert_eq!(t.get(&format!("{KDAMONDS}/nr_kdamonds")), "0");
        // And start() writes the files under kdamond 0.
        let spec = KdamondSpec {
            purpose: "own".into(),
            ops: OpsKind::Paddr,
            attrs: MonitoringAttrs::default(),
            pids: vec![],
            regions: Vec::new(),
            schemes: a.clone(),
        };
        for (p, _) in d.spec_writes(0, &spec) {
            t.set(&p, "");
        }
        d.start(&[spec]).unwrap();
        let s0 = format!("{KDAMONDS}/0/contexts/0/schemes/0");
        assert_eq!(t.get(&format!("{s0}/filters/1/addr_end")), "1048576");
        assert_eq!(
            t.get(&format!("{s0}/quotas/goals/0/target_metric")),
            "some_mem_psi_us"
        );
        assert_eq!(
            t.get(&format!(
                "{KDAMONDS}/0/contexts/0/monitoring_attrs/intervals/update_us"
            )),
            "60000000",
            "damon_new_ctx's default"
        );
    }

    #[test]
    fn paddr_regions_of_the_config_replace_the_system_ram_default() {
        let t = FakeTree::new().file(
            "/proc/iomem",
            "00001000-0009ffff : System RAM\n00100000-7fffffff : System RAM\n",
        );
        let d = DamonSysfs::new(t.fs());
        let mut spec = KdamondSpec {
            purpose: "own".into(),
            ops: OpsKind::Paddr,
            attrs: MonitoringAttrs::default(),
            pids: vec![],
            regions: Vec::new(),
            schemes: vec![stat_all()],
        };
        let r = format!("{KDAMONDS}/0/contexts/0/targets/0/regions");
        let find = |w: &[(String, String)], k: &str| {
            w.iter().find(|(p, _)| p == k).map(|(_, v)| v.clone())
        };
        let w = d.spec_writes(0, &spec);
        assert_eq!(
            find(&w, &format!("{r}/0/start")).as_deref(),
            Some("1048576")
        );
        assert_eq!(
            find(&w, &format!("{r}/0/end")).as_deref(),
            Some("2147483648")
        );
        spec.regions = vec![
            AddrRange {
                start: 4096,
                end: 8192,
            },
            AddrRange {
                start: 1 << 20,
                end: 2 << 20,
            },
        ];
        let w = d.spec_writes(0, &spec);
        assert_eq!(find(&w, &format!("{r}/nr_regions")).as_deref(), Some("2"));
        assert_eq!(find(&w, &format!("{r}/1/end")).as_deref(), Some("2097152"));
    }

    #[test]
    fn what_6_12_lacks_is_refused_naming_the_key() {
        let t = FakeTree::new().file("/proc/sys/kernel/osrelease", "6.12.117\n");
        fake_kdamond_6_12(&t);
        let d = DamonSysfs::new(t.fs());
        let check = |toml: &str| {
            let cfg =
                AgentConfig::from_toml_str(&format!("[damon]\nops = \"paddr\"\n{toml}"), "t.toml")
                    .unwrap();
            let r = d.check_support(&cfg.kdamonds());
            assert_eq!(
                t.get(&format!("{KDAMONDS}/nr_kdamonds")),
                "0",
                "probe undone"
            );
            r
        };
        let key_of = |e: Error| {
            assert!(e.is_input_error(), "{e}");
            match e {
                Error::Config(c) => (c.key, c.message),
                _ => unreachable!(),
            }
        };
        // filters/<N>/allow came in 6.14.
        let (k, m) = key_of(
            check("[[damon.schemes]]\naction = \"pageout\"\nfilters = [{ type = \"young\", allow = true }]\n")
                .unwrap_err(),
        );
        assert_eq!(k, "damon.schemes[0].filters[0].allow");
        assert!(
            m.contains("6.12.117") && m.contains("filters/<N>/allow"),
            "{m}"
        );
        // allow = false is the 6.12 behaviour: nothing to write.
        check("[[damon.schemes]]\naction = \"pageout\"\nfilters = [{ type = \"young\", allow = false }]\n")
            .unwrap();
        // A goal's nid (6.16) and interval auto-tuning (6.15).
        let (k, _) = key_of(
            check("[[damon.schemes]]\naction = \"pageout\"\nquotas = { goals = [{ metric = \"node_mem_free_bp\", target_value = 50, nid = 0 }] }\n")
                .unwrap_err(),
        );
        assert_eq!(k, "damon.schemes[0].quotas.goals[0].nid");
        let (k, _) = key_of(
            check("attrs = { intervals_goal = { access_bp = 40, aggrs = 3, min_sample_us = 1000, max_sample_us = 10000 } }\n[[damon.schemes]]\naction = \"stat\"\n")
                .unwrap_err(),
        );
        assert_eq!(k, "damon.attrs.intervals_goal.access_bp");
        // A name the kernel refuses (EINVAL; here the write fails because the file is a
        // directory) names the key too.
        let tm = format!("{KDAMONDS}/0/contexts/0/schemes/0/quotas/goals/0/target_metric");
        std::fs::remove_file(t.fs().path(&tm)).unwrap();
        std::fs::create_dir(t.fs().path(&tm)).unwrap();
        let (k, m) = key_of(
            check("[[damon.schemes]]\naction = \"pageout\"\nquotas = { goals = [{ metric = \"user_input\", target_value = 5 }] }\n")
                .unwrap_err(),
        );
        assert_eq!(k, "damon.schemes[0].quotas.goals[0].metric");
        assert!(m.contains("\"user_input\""), "{m}");
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
        // A stat scheme over everything: no goals, filters, target node.
        assert!(get("nr_goals").is_none() && get("nr_filters").is_none());
        assert!(get("target_nid").is_none() && get("apply_interval_us").is_none());
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
        s.ops = OpsKind::Paddr;
        s.pids.clear();
        let w = d.spec_writes(0, &s);
        assert!(w.contains(&(
            format!("{KDAMONDS}/0/contexts/0/targets/0/regions/0/end"),
            (0x7ffe0000u64).to_string()
        )));
    }

    #[test]
    fn scheme_validation() {
        let mut s = SchemeConfig::new(DamosAction::Pageout);
        assert!(validate_scheme(&s, "k", OpsKind::Vaddr).is_ok());
        s.action = DamosAction::Cold;
        assert!(validate_scheme(&s, "k", OpsKind::Vaddr).is_ok());
        assert!(validate_scheme(&s, "k", OpsKind::Paddr).is_err());
        s.action = DamosAction::LruPrio;
        assert_eq!(
            validate_scheme(&s, "k", OpsKind::Vaddr).unwrap_err().key,
            "k.action"
        );
        s.action = DamosAction::MigrateCold;
        let e = validate_scheme(&s, "k", OpsKind::Paddr).unwrap_err();
        assert!(e.message.contains("target_nid"), "{e}");
        s.target_nid = Some(tiermem_core::units::NodeId(1));
        assert!(validate_scheme(&s, "k", OpsKind::Paddr).is_ok());
        s.access_pattern.min_age = 10;
        s.access_pattern.max_age = 5;
        assert!(validate_scheme(&s, "k", OpsKind::Paddr).is_err());
        // memcg filters name a cgroup path on a live host, not a workload index.
        let mut s = SchemeConfig::new(DamosAction::Pageout);
        let memcg = |memcg, memcg_path| FilterConfig {
            kind: FilterType::Memcg,
            matching: true,
            allow: false,
            memcg,
            memcg_path,
            addr: None,
            target_idx: None,
        };
        s.filters = vec![memcg(Some(0), None)];
        assert_eq!(
            validate_scheme(&s, "k", OpsKind::Paddr).unwrap_err().key,
            "k.filters[0].memcg"
        );
        s.filters = vec![memcg(None, Some("/batch.slice".into()))];
        validate_scheme(&s, "k", OpsKind::Paddr).unwrap();
        let f: Vec<String> = scheme_files(&s)
            .iter()
            .map(|f| format!("{}={}", f.path, f.value))
            .collect();
        assert!(
            f.contains(&"filters/0/memcg_path=/batch.slice".to_string()),
            "{f:?}"
        );
    }
}
