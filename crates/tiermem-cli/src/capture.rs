//! `tiermem trace record`: a program's every memory access, recorded under QEMU user-mode
//! emulation with tiermem's TCG plugin (`capture/qemu_mem.c`, `--tool qemu`) or under
//! Valgrind Lackey (`--tool lackey`), and converted as it arrives (`tiermem_trace::qemu`,
//! `tiermem_trace::lackey`) into a trace written beside its destination and renamed over it.
//!
//! The plugin's source is part of the binary; it is compiled with the host's C compiler on
//! first use into `$XDG_CACHE_HOME/tiermem/` (else `~/.cache/tiermem/`), under a name that
//! carries a hash of the source, so a new tiermem builds its own.

use crate::{input, Failure};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tiermem_trace::format::{TimeUnit, TraceWriter};
use tiermem_trace::lackey::{self, LackeyOptions};
use tiermem_trace::{ImportStats, TraceError};

const PLUGIN_SOURCE: &str = include_str!("../capture/qemu_mem.c");

/// FNV-1a of the plugin source: the cache file's name.
fn source_hash() -> u64 {
    PLUGIN_SOURCE
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("tiermem")
}

pub(crate) fn failure(msg: String) -> Failure {
    Failure {
        code: 1,
        err: anyhow::anyhow!(msg),
    }
}

/// The compiled plugin, built now if this version's is not in the cache (`$CC`, else `cc`).
pub fn plugin() -> Result<PathBuf, Failure> {
    let dir = cache_dir();
    let so = dir.join(format!("qemu_mem-{:016x}.so", source_hash()));
    if so.is_file() {
        return Ok(so);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| failure(format!("cannot create {}: {e}", dir.display())))?;
    let pid = std::process::id();
    let src = dir.join(format!(".qemu_mem-{pid}.c"));
    let tmp = dir.join(format!(".qemu_mem-{pid}.so"));
    std::fs::write(&src, PLUGIN_SOURCE)
        .map_err(|e| failure(format!("cannot write {}: {e}", src.display())))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = std::process::Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-lpthread")
        .output();
    let _ = std::fs::remove_file(&src);
    match out {
        Err(e) => Err(failure(format!(
            "cannot run the C compiler {cc:?} to build tiermem's QEMU plugin: {e} (install gcc, or set CC)"
        ))),
        Ok(o) if !o.status.success() => Err(failure(format!(
            "{cc} could not build tiermem's QEMU plugin:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ))),
        Ok(_) => std::fs::rename(&tmp, &so)
            .map(|()| so.clone())
            .map_err(|e| failure(format!("cannot move the plugin to {}: {e}", so.display()))),
    }
}

/// Spawn `cmd` with fd 3 the write end of a pipe (1 MiB where the kernel allows: fewer
/// context switches between recorder and converter) and return the child and the read
/// end; the child holds the only write end, so the reader sees EOF when it exits.
fn spawn_on_fd3(
    mut cmd: std::process::Command,
    cannot_run: impl FnOnce(std::io::Error) -> Failure,
) -> Result<(std::process::Child, std::io::PipeReader), Failure> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (reader, writer) =
        std::io::pipe().map_err(|e| failure(format!("cannot create a pipe: {e}")))?;
    let wfd = writer.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe {
        libc::fcntl(wfd, libc::F_SETPIPE_SZ, 1 << 20);
    }
    // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(wfd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(cannot_run)?;
    drop(writer);
    Ok((child, reader))
}

/// `uname -n` and `-r`: where and on what kernel the capture ran.
pub(crate) fn host_and_kernel() -> (String, String) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease"),
    )
}

/// Record `command` under `qemu` with the plugin writing to fd 3 (a pipe) and convert the
/// stream into `out` as it arrives. The trace's `source` says how it was made: recorder,
/// command, host, kernel and the capture's wall time.
pub fn record_qemu(out: &Path, qemu: &str, command: &[String]) -> Result<(), Failure> {
    record_qemu_with(out, qemu, command, std::process::Stdio::inherit())
}

/// [`record_qemu`] with the program's standard output sent to `stdout`.
pub fn record_qemu_with(
    out: &Path,
    qemu: &str,
    command: &[String],
    stdout: std::process::Stdio,
) -> Result<(), Failure> {
    // QEMU does not search PATH: it gets the program's path, and `-0` keeps its argv[0].
    let (program, argv) = qemu_command(&resolve_program(&command[0])?, command, qemu, 0)?;
    let plugin = plugin()?;
    let mut cmd = std::process::Command::new(qemu);
    cmd.arg("-plugin")
        .arg(&plugin)
        .arg("-0")
        .arg(&argv[0])
        .arg(&program)
        .args(&argv[1..])
        .stdout(stdout);
    let t0 = Instant::now();
    let (mut child, reader) = spawn_on_fd3(cmd, |e| {
        input(format!(
            "cannot run {qemu}: {e} (install Debian's qemu-user, or give --qemu)"
        ))
    })?;
    let (host, kernel) = host_and_kernel();
    let what = format!("qemu: {qemu} {}", command.join(" "));
    let res = import_to(out, tiermem_trace::qemu::TIME_UNIT, &what, |w| {
        // Unbuffered: the importer reads whole blocks (512 KiB) straight from the pipe.
        let st = tiermem_trace::qemu::import(reader, "<qemu plugin>", w)?;
        w.set_source(&format!(
            "{what}; host {host}; kernel {kernel}; capture {:.3} s",
            t0.elapsed().as_secs_f64()
        ));
        Ok(st)
    });
    if res.is_err() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| failure(format!("waiting for {qemu}: {e}")))?;
    let (st, footer) = res?;
    if st.accesses == 0 {
        let _ = std::fs::remove_file(out);
        return Err(input(format!(
            "{qemu} recorded no access of {} ({status}); nothing written to {}",
            command[0],
            out.display()
        )));
    }
    if !status.success() {
        eprintln!("tiermem: warning: the recorded program (under {qemu}) exited with {status}");
    }
    report_import(out, &st, &footer, t0.elapsed().as_secs_f64());
    Ok(())
}

pub(crate) fn trace_failure(e: TraceError) -> Failure {
    crate::classified(e.is_input_error(), e)
}

/// A new temporary file beside `output`, created exclusively (so never through a link), to
/// be renamed over it once written.
pub(crate) fn temp_beside(output: &Path) -> Result<(PathBuf, std::fs::File), Failure> {
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
    Ok((tmp, file))
}

/// Write the trace to a new temporary file beside `output` (created exclusively, so never
/// through a link), run `f` with a writer on it, finish the trace, then rename it over
/// `output`: a failed import leaves `output` as it was, and a link at `output` is replaced,
/// not followed.
pub(crate) fn import_to(
    output: &Path,
    unit: TimeUnit,
    source: &str,
    f: impl FnOnce(
        &mut TraceWriter<std::io::BufWriter<std::fs::File>>,
    ) -> Result<ImportStats, TraceError>,
) -> Result<(ImportStats, tiermem_trace::Footer), Failure> {
    let oname = output.display().to_string();
    let (tmp, file) = temp_beside(output)?;
    let mut w = TraceWriter::with_name(
        std::io::BufWriter::with_capacity(1 << 20, file),
        unit,
        source,
        &oname,
    )
    .map_err(trace_failure)?;
    let r = f(&mut w).and_then(|st| w.finish().map(|footer| (st, footer)));
    rename_into_place(&tmp, output, r.map_err(trace_failure))
}

/// Rename the [`temp_beside`] file `tmp` over `output` when `r` succeeded; remove it when
/// `r` or the rename failed.
pub(crate) fn rename_into_place<T>(
    tmp: &Path,
    output: &Path,
    r: Result<T, Failure>,
) -> Result<T, Failure> {
    let r = r.and_then(|ok| {
        std::fs::rename(tmp, output).map(|()| ok).map_err(|e| {
            failure(format!(
                "cannot rename {} to {}: {e}",
                tmp.display(),
                output.display()
            ))
        })
    });
    if r.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    r
}

pub(crate) fn report_import(
    output: &Path,
    st: &ImportStats,
    footer: &tiermem_trace::Footer,
    secs: f64,
) {
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

/// `e_machine` of x86-64 ELF files (the ELF specification's EM_X86_64).
const EM_X86_64: u16 = 62;
/// Interpreters of interpreters followed, as fs/exec.c's BINPRM_MAX_RECURSION allows.
const MAX_INTERPRETERS: usize = 4;

/// What QEMU runs for `command` (whose program is at `program`): an ELF executable as it
/// is; a `#!` script as its interpreter with the script's path, as execve(2) does (QEMU
/// user mode loads ELF files only, and it records the interpreter: a Python script's
/// accesses are the interpreter's; `#!/usr/bin/env NAME` runs NAME from PATH, since the
/// program env would exec runs outside QEMU, as does any program the recorded one execs:
/// an interpreter that is itself a script, a pyenv shim for instance, is recorded as its
/// own interpreter). Refused, naming the program: a file that is neither,
/// and an ELF for another machine than x86-64 under the default `qemu-x86_64` (another
/// emulator, `--qemu qemu-aarch64`, takes its own architecture's programs).
fn qemu_command(
    program: &Path,
    command: &[String],
    qemu: &str,
    depth: usize,
) -> Result<(PathBuf, Vec<String>), Failure> {
    use std::io::Read;
    let name = &command[0];
    let mut head = Vec::with_capacity(256);
    std::fs::File::open(program)
        .and_then(|f| f.take(256).read_to_end(&mut head))
        .map_err(|e| input(format!("cannot record {name}: {e}")))?;
    if head.starts_with(b"\x7fELF") {
        let machine = head.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]));
        let class64 = head.get(4) == Some(&2);
        let default_qemu = Path::new(qemu).file_name() == Some("qemu-x86_64".as_ref());
        if default_qemu && (machine != Some(EM_X86_64) || !class64) {
            return Err(input(format!(
                "cannot record {name}: an ELF file for machine {} ({}-bit), not x86-64; \
                 give the emulator of its architecture with --qemu (for example qemu-aarch64)",
                machine.map_or("?".into(), |m| m.to_string()),
                if class64 { 64 } else { 32 }
            )));
        }
        return Ok((program.to_path_buf(), command.to_vec()));
    }
    let Some(line) = head.strip_prefix(b"#!") else {
        return Err(input(format!(
            "cannot record {name}: neither an ELF executable nor a #! script"
        )));
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.trim().splitn(2, [' ', '\t']);
    let interp = words.next().filter(|w| !w.is_empty()).ok_or_else(|| {
        input(format!(
            "cannot record {name}: its #! line names no interpreter"
        ))
    })?;
    let mut arg = words
        .next()
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty());
    // `#!/usr/bin/env NAME`: QEMU user mode would record env and not the NAME it execs,
    // so NAME found on PATH is the interpreter, as env would find it.
    let interp = match arg.as_deref() {
        Some(a)
            if Path::new(interp).file_name() == Some("env".as_ref())
                && !a.starts_with('-')
                && !a.contains(' ') =>
        {
            arg.take().unwrap_or_default()
        }
        _ => interp.to_string(),
    };
    let interp = interp.as_str();
    let interp_path = resolve_program(interp)?;
    let mut argv = vec![interp.to_string()];
    argv.extend(arg);
    argv.push(program.display().to_string());
    argv.extend(command[1..].iter().cloned());
    if depth == MAX_INTERPRETERS {
        return Err(input(format!(
            "cannot record {name}: more than {MAX_INTERPRETERS} levels of #! interpreters"
        )));
    }
    qemu_command(&interp_path, &argv, qemu, depth + 1)
}

/// The program `command` names, as `execvp` would find it (a name with a `/` as a path,
/// else the first match on `PATH`), refused when it does not exist or is not executable:
/// Valgrind would only say so in its log and exit, leaving an empty trace behind.
pub(crate) fn resolve_program(prog: &str) -> Result<PathBuf, Failure> {
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

/// Run `command` under Valgrind Lackey with its log on a pipe (fd 3 of valgrind) and import
/// the text as it arrives; the program's own stdout and stderr stay the terminal's.
pub(crate) fn record_lackey(
    out: &Path,
    ifetch: bool,
    valgrind: &str,
    command: &[String],
) -> Result<(), Failure> {
    resolve_program(&command[0])?;
    let mut cmd = std::process::Command::new(valgrind);
    cmd.args(["--tool=lackey", "--trace-mem=yes", "--log-fd=3"])
        .args(command);
    let t0 = Instant::now();
    let (mut child, reader) = spawn_on_fd3(cmd, |e| {
        input(format!(
            "cannot run {valgrind}: {e} (is Valgrind installed?)"
        ))
    })?;
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
