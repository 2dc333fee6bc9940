//! `tiermem damon record`: DAMON's view of a process (vaddr) or of physical memory (paddr),
//! one snapshot of regions per aggregation interval, into damo's record format
//! ([`tiermem_core::damon_record`]), at DAMON's own cost.
//!
//! How: one kdamond of our own through DAMON sysfs, one context, one `stat` scheme that
//! matches every region (it does nothing to memory). At each aggregation the recorder writes
//! `update_schemes_tried_regions` to the kdamond's `state`; the kernel fills the scheme's
//! `tried_regions/` with the regions it applied the scheme to at its next aggregation
//! (every region, with `nr_accesses` and `age`) and the write returns after
//! (`damon_sysfs_handle_cmd` waits for the kdamond). This is `damo record`'s fallback
//! when the `damon:damon_aggregated` tracepoint is not used; it writes no tracing state.
//! The kernel polls for the command's completion every 100 ms (6.12), so when the
//! aggregation interval is shorter, snapshots are one aggregation each but some
//! aggregations between them are not recorded.
//!
//! Safety: refused while DAMON sysfs has kdamonds of anyone else (writing `nr_kdamonds`
//! would discard their configuration); the kdamond is turned off and `nr_kdamonds` set
//! back to 0 on every exit path, including SIGINT/SIGTERM/SIGHUP/SIGQUIT and errors.

use crate::damon::{stat_all, DamonSysfs, KdamondSpec};
use crate::fs::HostFs;
use crate::Error;
use std::time::{Duration, Instant};
use tiermem_core::damon::{MonitoringAttrs, OpsKind};
use tiermem_core::damon_record::{DamonRecord, RecordSnapshot};

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// `Some(pid)`: that process's virtual address space; `None`: physical memory (the
    /// biggest System RAM range, DAMON_RECLAIM's default).
    pub pid: Option<i32>,
    pub attrs: MonitoringAttrs,
    pub duration: Duration,
}

/// A finished recording and what it cost.
#[derive(Clone, Debug)]
pub struct Recording {
    pub record: DamonRecord,
    /// The kdamond thread's CPU time while recording (`/proc/PID/schedstat`), ns.
    pub kdamond_cpu_ns: Option<u64>,
    /// This process's CPU time spent reading the snapshots, ns.
    pub recorder_cpu_ns: Option<u64>,
    pub wall: Duration,
    /// Why the recording ended before its duration, if it did.
    pub ended_early: Option<String>,
}

/// Turns the recording kdamond off and restores `nr_kdamonds` = 0 when dropped.
struct Teardown<'a>(&'a DamonSysfs);

impl Drop for Teardown<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.stop_all(0) {
            tracing::error!("damon record: could not stop its kdamond: {e}");
        }
    }
}

/// Check that DAMON sysfs is there and free, and that the target exists.
fn check(fs: &HostFs, sysfs: &DamonSysfs, opts: &RecordOptions) -> Result<(), Error> {
    if !sysfs.available() {
        return Err(Error::Feature {
            feature: "DAMON sysfs".into(),
            path: crate::damon::KDAMONDS.into(),
            hint: " (CONFIG_DAMON_SYSFS; mount sysfs)".into(),
        });
    }
    let n = sysfs.nr_kdamonds()?;
    if n > 0 {
        let on: Vec<String> = (0..n as usize)
            .filter(|&k| sysfs.is_on(k))
            .map(|k| k.to_string())
            .collect();
        return Err(Error::InUse {
            path: format!("{}/nr_kdamonds", crate::damon::KDAMONDS).into(),
            holder: format!(
                "DAMON sysfs has {n} kdamond(s) configured (running: {}); `damon record` uses DAMON sysfs alone and will not discard another tool's kdamonds: stop them and write 0 to nr_kdamonds",
                if on.is_empty() { "none".into() } else { on.join(", ") }
            ),
        });
    }
    if let Some(pid) = opts.pid {
        if pid <= 0 || !fs.exists(&format!("/proc/{pid}/stat")) {
            return Err(
                tiermem_core::ConfigError::invalid("--pid", format!("no process {pid}")).into(),
            );
        }
    }
    crate::config::check_attrs(&opts.attrs, "attrs")?;
    if opts.attrs.aggr_us < opts.attrs.sample_us {
        return Err(tiermem_core::ConfigError::invalid(
            "--aggr-us",
            "the aggregation interval must be at least the sampling interval",
        )
        .into());
    }
    Ok(())
}

/// The kdamond's CPU time so far (first field of `/proc/PID/schedstat`), ns.
fn cpu_ns(fs: &HostFs, pid: &str) -> Option<u64> {
    let text = fs.read_opt(&format!("/proc/{pid}/schedstat")).ok()??;
    text.split_whitespace().next()?.parse().ok()
}

/// Record until the duration ends, the kdamond stops (its target exited) or a stop signal
/// arrives. `progress(snapshots, elapsed)` is called after each snapshot.
pub fn record(
    fs: &HostFs,
    opts: &RecordOptions,
    progress: &mut dyn FnMut(usize, Duration),
) -> Result<Recording, Error> {
    let sysfs = DamonSysfs::new(fs.clone());
    check(fs, &sysfs, opts)?;
    crate::signals::install();
    let spec = KdamondSpec {
        purpose: "record".into(),
        ops: if opts.pid.is_some() {
            OpsKind::Vaddr
        } else {
            OpsKind::Paddr
        },
        attrs: opts.attrs.clone(),
        pids: opts.pid.into_iter().collect(),
        regions: Vec::new(),
        schemes: vec![stat_all()],
    };
    let teardown = Teardown(&sysfs);
    let kpids = sysfs.start(std::slice::from_ref(&spec))?;
    let kpid = kpids.first().map(|p| p.to_string());
    let t0 = Instant::now();
    let cpu0 = kpid.as_deref().and_then(|p| cpu_ns(fs, p));
    let self0 = cpu_ns(fs, "self");
    let aggr = Duration::from_micros(opts.attrs.aggr_us);
    let mut rec = DamonRecord {
        target_id: 0,
        sample_us: opts.attrs.sample_us,
        aggr_us: opts.attrs.aggr_us,
        ops_update_us: opts.attrs.update_us,
        ..Default::default()
    };
    let mut ended_early = None;
    let mut next = t0 + aggr;
    let mut read_ns = 0u64;
    while t0.elapsed() < opts.duration {
        if crate::signals::stop_requested() {
            ended_early = Some("stopped by a signal".into());
            break;
        }
        // One aggregation apart at least (the kernel's write waits for the next one too).
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        if !sysfs.is_on(0) {
            ended_early = Some("the kdamond stopped (its target process exited)".into());
            break;
        }
        let before = cpu_ns(fs, "self");
        let regions = match sysfs.tried_regions(0, 0) {
            Ok(r) => r,
            Err(_) if !sysfs.is_on(0) => {
                ended_early = Some("the kdamond stopped (its target process exited)".into());
                break;
            }
            Err(e) => return Err(e),
        };
        if let (Some(a), Some(b)) = (before, cpu_ns(fs, "self")) {
            read_ns += b.saturating_sub(a);
        }
        let end = t0.elapsed();
        let end_ns = end.as_nanos() as u64;
        let start_ns = end_ns.saturating_sub(opts.attrs.aggr_us * 1000).max(
            rec.snapshots
                .last()
                .map_or(0, |s: &RecordSnapshot| s.end_ns),
        );
        rec.snapshots.push(RecordSnapshot {
            start_ns,
            end_ns,
            regions,
        });
        next = Instant::now() + aggr;
        progress(rec.snapshots.len(), end);
    }
    let cpu1 = kpid.as_deref().and_then(|p| cpu_ns(fs, p));
    let wall = t0.elapsed();
    drop(teardown);
    Ok(Recording {
        record: rec,
        kdamond_cpu_ns: cpu0.zip(cpu1).map(|(a, b)| b.saturating_sub(a)),
        recorder_cpu_ns: self0.map(|_| read_ns),
        wall,
        ended_early,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::damon::KDAMONDS;
    use crate::fs::fake::FakeTree;

    fn opts(pid: Option<i32>) -> RecordOptions {
        RecordOptions {
            pid,
            attrs: MonitoringAttrs {
                sample_us: 1000,
                aggr_us: 20_000,
                ..MonitoringAttrs::default()
            },
            duration: Duration::from_millis(150),
        }
    }

    fn tree() -> FakeTree {
        let t = FakeTree::new()
            .file(&format!("{KDAMONDS}/nr_kdamonds"), "0")
            .file("/proc/42/stat", "42 (app) S")
            .file("/proc/7/schedstat", "5000000 0 1");
        let k = format!("{KDAMONDS}/0");
        let c = format!("{k}/contexts/0");
        for f in [
            "contexts/nr_contexts",
            "contexts/0/operations",
            "contexts/0/targets/nr_targets",
            "contexts/0/targets/0/pid_target",
            "contexts/0/schemes/nr_schemes",
        ] {
            t.set(&format!("{k}/{f}"), "");
        }
        for f in crate::damon::attrs_files(&MonitoringAttrs::default()) {
            t.set(&format!("{c}/{}", f.path), "");
        }
        for f in crate::damon::scheme_files(&stat_all()) {
            t.set(&format!("{c}/schemes/0/{}", f.path), "");
        }
        t.set(&format!("{k}/state"), "off");
        t.set(&format!("{k}/pid"), "7");
        let r = format!("{c}/schemes/0/tried_regions/0");
        t.set(&format!("{r}/start"), "4096");
        t.set(&format!("{r}/end"), "65536");
        t.set(&format!("{r}/nr_accesses"), "3");
        t.set(&format!("{r}/age"), "2");
        t
    }

    #[test]
    fn records_snapshots_and_leaves_sysfs_as_it_found_it() {
        let t = tree();
        let mut calls = 0;
        // The fake `state` file keeps the last write: "on" after the start, then the
        // refresh command, which the recorder reads as a stopped kdamond (the kernel would
        // still say "on"). So: one snapshot, an early end, and the teardown.
        let r = record(&t.fs(), &opts(Some(42)), &mut |_, _| calls += 1).unwrap();
        assert_eq!(calls, 1);
        assert!(r.ended_early.unwrap().contains("stopped"));
        assert_eq!(
            r.kdamond_cpu_ns,
            Some(0),
            "schedstat of the kdamond (pid 7) read"
        );
        assert_eq!(t.get(&format!("{KDAMONDS}/nr_kdamonds")), "0");
        assert_eq!(
            t.get(&format!("{KDAMONDS}/0/contexts/0/targets/0/pid_target")),
            "42"
        );
        assert_eq!(r.record.snapshots.len(), calls);
        for s in &r.record.snapshots {
            assert_eq!(s.regions.len(), 1);
            assert_eq!((s.regions[0].nr_accesses, s.regions[0].age), (3, 2));
        }
    }

    #[test]
    fn refuses_a_busy_damon_or_a_missing_process() {
        let t = tree();
        t.set(&format!("{KDAMONDS}/nr_kdamonds"), "1");
        t.set(&format!("{KDAMONDS}/0/state"), "on");
        let e = record(&t.fs(), &opts(None), &mut |_, _| {}).unwrap_err();
        assert!(
            e.is_input_error() && e.to_string().contains("running: 0"),
            "{e}"
        );
        assert_eq!(t.get(&format!("{KDAMONDS}/nr_kdamonds")), "1", "untouched");
        let t = tree();
        let e = record(&t.fs(), &opts(Some(4242)), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("no process 4242"), "{e}");
    }
}
