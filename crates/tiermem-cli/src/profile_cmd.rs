//! `tiermem trace profile`: a page-activity profile of a running program (a program it
//! starts, or `--pid` of one already running), scanned every `--interval` by
//! [`tiermem_agent::profiler`] and written as a `tiermem_trace::profile` file beside its
//! destination, then renamed over it.
//!
//! The recording ends when the program exits, at `--duration`, or on SIGINT/SIGTERM (the
//! profile is still written whole). The program's last partial interval is not seen: once
//! it has exited its page tables are gone.

use crate::capture::{failure, host_and_kernel, rename_into_place, resolve_program, temp_beside};
use crate::{input, Failure};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use tiermem_agent::fs::HostFs;
use tiermem_agent::profiler::{self_cpu_ns, Profiler};
use tiermem_trace::profile::{ProfileEnd, ProfileHeader, ProfileWriter, Vma, PAGE_SIZE, VERSION};

/// What to profile.
pub enum Target<'a> {
    Pid(u32),
    Command(&'a [String]),
}

/// What a recording measured, for the summary line and `bench --profile`.
pub struct Recorded {
    pub end: ProfileEnd,
    pub wall_s: f64,
}

/// Whether `pid` is still a process that has page tables (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].trim_start().starts_with(['Z', 'X']))
        })
        .is_some_and(|zombie| !zombie)
}

fn exit_of(child: &mut Option<Child>) -> Option<std::process::ExitStatus> {
    child.as_mut().and_then(|c| c.try_wait().ok().flatten())
}

/// Record a profile of `target` into `out`, scanning every `interval` for at most `limit`.
pub fn record(
    out: &Path,
    target: Target,
    interval: Duration,
    limit: Option<Duration>,
    stdout: std::process::Stdio,
) -> Result<Recorded, Failure> {
    let fs = HostFs::default();
    // Refused before a program is started.
    let source = tiermem_agent::profiler::detect_source(&fs).map_err(crate::live_failure)?;
    let (pid, command, mut child) = match target {
        Target::Pid(pid) => {
            if !alive(pid) {
                return Err(input(format!("--pid {pid}: no such running process")));
            }
            (pid, Vec::new(), None)
        }
        Target::Command(cmd) => {
            let prog = resolve_program(&cmd[0])?;
            let child = Command::new(prog)
                .args(&cmd[1..])
                .stdout(stdout)
                .spawn()
                .map_err(|e| input(format!("cannot run {}: {e}", cmd[0])))?;
            (child.id(), cmd.to_vec(), Some(child))
        }
    };
    let res = record_pid(&fs, source, out, pid, command, interval, limit, &mut child);
    if let Some(c) = child.as_mut() {
        if res.is_err() {
            let _ = c.kill();
        }
        let _ = c.wait();
    }
    res
}

#[allow(clippy::too_many_arguments)]
fn record_pid(
    fs: &HostFs,
    source: tiermem_agent::profiler::Source,
    out: &Path,
    pid: u32,
    command: Vec<String>,
    interval: Duration,
    limit: Option<Duration>,
    child: &mut Option<Child>,
) -> Result<Recorded, Failure> {
    let cpu0 = self_cpu_ns();
    let mut prof = Profiler::attach(fs, pid, source).map_err(crate::live_failure)?;
    let (host, kernel) = host_and_kernel();
    let header = ProfileHeader {
        version: VERSION,
        page_size: PAGE_SIZE,
        arch: std::env::consts::ARCH.to_string(),
        interval_ns: interval.as_nanos() as u64,
        source: source.name().into(),
        command,
        pid,
        host,
        kernel,
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        nodes: prof.nodes(),
    };
    let oname = out.display().to_string();
    let (tmp, file) = temp_beside(out)?;
    let result = (|| {
        let mut w = ProfileWriter::new(std::io::BufWriter::new(file), &header, &oname)
            .map_err(crate::capture::trace_failure)?;
        tiermem_agent::signals::install();
        let t0 = Instant::now();
        let mut last_vmas: Vec<Vma> = Vec::new();
        let mut program_cpu = 0u64;
        let mut k = 0u32;
        let mut last_scan = t0;
        loop {
            // The loop's end checks that the program is still there before each scan.
            let (vmas, mut iv) = match prof.scan() {
                Ok(x) => x,
                // The program exited during the scan.
                Err(_) if k > 0 && !alive(pid) => break,
                Err(e) => return Err(crate::live_failure(e)),
            };
            last_scan = Instant::now();
            iv.end_ns = (last_scan - t0).as_nanos() as u64;
            program_cpu += iv.cpu_ns;
            if vmas != last_vmas {
                w.vmas(&vmas).map_err(crate::capture::trace_failure)?;
                last_vmas = vmas;
            }
            w.interval(&iv).map_err(crate::capture::trace_failure)?;
            k += 1;
            let next = t0 + interval * k;
            // Sleep to the next scan in short steps, to notice an exit or a signal.
            loop {
                let now = Instant::now();
                if now >= next
                    || tiermem_agent::signals::stop_requested()
                    || exit_of(child).is_some()
                {
                    break;
                }
                std::thread::sleep((next - now).min(Duration::from_millis(10)));
            }
            let over = limit.is_some_and(|l| t0.elapsed() >= l);
            if tiermem_agent::signals::stop_requested()
                || over
                || exit_of(child).is_some()
                || !alive(pid)
            {
                break;
            }
        }
        let status = child.as_mut().and_then(|c| c.wait().ok());
        use std::os::unix::process::ExitStatusExt;
        let end = ProfileEnd {
            intervals: k as u64,
            wall_ns: (last_scan - t0).as_nanos() as u64,
            program_cpu_ns: program_cpu,
            recorder_cpu_ns: self_cpu_ns().saturating_sub(cpu0),
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
        };
        let mut bw = w.finish(&end).map_err(crate::capture::trace_failure)?;
        std::io::Write::flush(&mut bw).map_err(|e| failure(format!("{}: {e}", tmp.display())))?;
        Ok(Recorded {
            end,
            wall_s: t0.elapsed().as_secs_f64(),
        })
    })();
    rename_into_place(&tmp, out, result)
}

/// The one-line summary `trace profile` prints.
pub fn report(out: &Path, r: &Recorded) {
    let e = &r.end;
    let program = e.program_cpu_ns as f64 / 1e9;
    let recorder = e.recorder_cpu_ns as f64 / 1e9;
    eprintln!(
        "tiermem: profiled {} intervals over {:.2} s into {}: program CPU {program:.2} s, recorder CPU {recorder:.3} s ({:.1} % of the program's){}",
        e.intervals,
        e.wall_ns as f64 / 1e9,
        out.display(),
        100.0 * recorder / program.max(1e-9),
        match (e.exit_code, e.signal) {
            (Some(c), _) if c != 0 => format!("; the program exited with {c}"),
            (_, Some(s)) => format!("; the program was ended by signal {s}"),
            _ => String::new(),
        }
    );
}
