//! The state file: every setting's original value, recorded before it is changed.
//!
//! The file is rewritten (write to a temporary file created exclusively with mode 0600 and
//! `O_NOFOLLOW`, `fsync`, `rename`) before each change, so after any crash it lists at
//! least every change that may have happened. Restore walks it newest first; it is removed
//! only when every entry was restored. `tiermem agent --restore` runs the same restore from
//! the file alone (the config is not needed).
//!
//! One agent per state file: [`StateLock`] holds an exclusive `flock` on `<state>.lock`
//! for the agent's life; a second agent (or a `--restore` while an agent runs) is refused
//! with the holder's PID. A state file that another user could have written (not owned by
//! us, or group/world-writable, or a symbolic link) is refused before anything is read from
//! it: its paths would be written as root.

use crate::damon::DamonSysfs;
use crate::fs::HostFs;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the KSM unmerge (`run = 2`) may take before the agent gives up.
pub const KSM_UNMERGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest state file `--restore` reads (a real one is a few KiB).
const MAX_STATE_BYTES: u64 = 4 << 20;

fn state_err(path: &Path, message: impl Into<String>) -> Error {
    Error::State {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The exclusive lock of one state file, held for an agent's (or a restore's) life.
pub struct StateLock {
    path: PathBuf,
    file: File,
}

impl StateLock {
    /// Take the lock on `<state>.lock` (created 0600, never through a symbolic link) and
    /// write our PID into it. Refused, naming the holder's PID, when another process holds it.
    pub fn acquire(state: &Path) -> Result<Self, Error> {
        let path = PathBuf::from(format!("{}.lock", state.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        }
        loop {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .map_err(|e| Error::io(&path, "open the lock file", e))?;
            // SAFETY: a valid open descriptor.
            if unsafe {
                libc::flock(
                    std::os::fd::AsRawFd::as_raw_fd(&file),
                    libc::LOCK_EX | libc::LOCK_NB,
                )
            } != 0
            {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::InUse {
                    path: state.to_path_buf(),
                    holder: if holder.is_empty() {
                        "unknown".into()
                    } else {
                        holder.into()
                    },
                });
            }
            // The file we locked must still be the one at the path (a holder that exited
            // removes it after we opened it; then lock the new one).
            let same = match (file.metadata(), std::fs::symlink_metadata(&path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            file.set_len(0)
                .map_err(|e| Error::io(&path, "truncate", e))?;
            file.write_all(format!("{}\n", std::process::id()).as_bytes())
                .map_err(|e| Error::io(&path, "write", e))?;
            return Ok(StateLock { path, file });
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        // Remove the path while still holding the lock; the next agent re-checks the inode.
        let _ = std::fs::remove_file(&self.path);
        let _ = &self.file;
    }
}

/// Refuse a state file that someone other than us could have written.
fn check_trusted(path: &Path, meta: &std::fs::Metadata) -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if !meta.file_type().is_file() {
        return Err(state_err(path, "not a regular file"));
    }
    if meta.uid() != euid {
        return Err(state_err(
            path,
            format!(
                "owned by uid {}, not by this user ({euid}): refusing to act on it",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(state_err(
            path,
            format!(
                "writable by group or others (mode {:o}): refusing to act on it",
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Read a state file: never through a symbolic link, only a trusted regular file of
/// bounded size.
pub fn read_state_file(path: &Path) -> Result<StateFile, Error> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io(path, "open", e))?;
    let meta = f.metadata().map_err(|e| Error::io(path, "stat", e))?;
    check_trusted(path, &meta)?;
    if meta.len() > MAX_STATE_BYTES {
        return Err(state_err(
            path,
            format!("{} bytes: too large for a state file", meta.len()),
        ));
    }
    let mut text = String::new();
    f.take(MAX_STATE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(path, "read", e))?;
    let state: StateFile = serde_json::from_str(&text)
        .map_err(|e| state_err(path, format!("not a tiermem state file: {e}")))?;
    if state.version != 1 {
        return Err(state_err(
            path,
            format!(
                "state file version {} (this tiermem reads 1)",
                state.version
            ),
        ));
    }
    Ok(state)
}

/// One change to undo.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Saved {
    /// A plain file: write `original` back.
    File { path: String, original: String },
    /// `merge_across_nodes`, restored with the unmerge sequence when KSM pages exist.
    KsmMergeAcrossNodes { original: String, run: String },
    /// The agent's kdamonds: turn them off and set `nr_kdamonds` back.
    Damon { nr_kdamonds: u64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    pub version: u32,
    /// The agent that wrote it.
    pub pid: u32,
    /// The root the kernel paths are relative to (`/` on a host).
    pub root: PathBuf,
    /// Oldest first.
    pub entries: Vec<Saved>,
}

/// Records originals into the state file as changes are made.
pub struct StateRecorder {
    path: PathBuf,
    state: StateFile,
    _lock: StateLock,
}

impl StateRecorder {
    /// Start a new state file. Refuses when another agent holds it, or when one exists: a
    /// previous agent did not restore.
    pub fn create(path: &Path, fs: &HostFs) -> Result<Self, Error> {
        let lock = StateLock::acquire(path)?;
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(state_err(
                path,
                "exists: a previous agent did not finish restoring; run `tiermem agent --restore` first",
            ));
        }
        let r = StateRecorder {
            path: path.to_path_buf(),
            state: StateFile {
                version: 1,
                pid: std::process::id(),
                root: fs.root().to_path_buf(),
                entries: Vec::new(),
            },
            _lock: lock,
        };
        r.persist()?;
        Ok(r)
    }

    pub fn entries(&self) -> &[Saved] {
        &self.state.entries
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record one original (the first value of a file wins: later changes of the same
    /// file do not overwrite what must be restored).
    pub fn record(&mut self, entry: Saved) -> Result<(), Error> {
        let dup = self.state.entries.iter().any(|e| match (e, &entry) {
            (Saved::File { path: a, .. }, Saved::File { path: b, .. }) => a == b,
            (Saved::KsmMergeAcrossNodes { .. }, Saved::KsmMergeAcrossNodes { .. }) => true,
            (Saved::Damon { .. }, Saved::Damon { .. }) => true,
            _ => false,
        });
        if !dup {
            self.state.entries.push(entry);
            self.persist()?;
        }
        Ok(())
    }

    /// Write the whole state to `<state>.tmp` (created exclusively, 0600, not through a
    /// link; a leftover from a crash is removed first: we hold the lock), `fsync`, rename.
    fn persist(&self) -> Result<(), Error> {
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string_pretty(&self.state)
            .map_err(|e| state_err(&self.path, format!("cannot serialise: {e}")))?;
        match std::fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&tmp, "remove the stale", e)),
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, "create", e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&tmp, "write", e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(&self.path, "rename into", e))
    }

    /// Restore everything recorded, newest first; remove the file when all succeeded.
    pub fn restore(self, fs: &HostFs) -> Result<RestoreReport, Error> {
        restore_entries(&self.path, &self.state, fs)
    }
}

/// What a restore did.
#[derive(Debug, Default)]
pub struct RestoreReport {
    pub restored: Vec<String>,
    pub failed: Vec<String>,
}

/// `tiermem agent --restore`: read the state file and restore it.
pub fn restore_from_file(
    path: &Path,
    root_override: Option<&Path>,
) -> Result<RestoreReport, Error> {
    let _lock = StateLock::acquire(path)?;
    let state = read_state_file(path)?;
    let fs = HostFs::new(root_override.unwrap_or(&state.root));
    restore_entries(path, &state, &fs)
}

fn restore_entries(path: &Path, state: &StateFile, fs: &HostFs) -> Result<RestoreReport, Error> {
    let mut rep = RestoreReport::default();
    for e in state.entries.iter().rev() {
        let (what, r) = match e {
            Saved::File { path, original } => (
                format!("{path} = {original}"),
                restore_file(fs, path, original),
            ),
            Saved::KsmMergeAcrossNodes { original, run } => (
                format!("ksm merge_across_nodes = {original}, run = {run}"),
                ksm_set_merge_across_nodes(fs, original, run, true),
            ),
            Saved::Damon { nr_kdamonds } => (
                format!("damon kdamonds off, nr_kdamonds = {nr_kdamonds}"),
                DamonSysfs::new(fs.clone()).stop_all(*nr_kdamonds),
            ),
        };
        match r {
            Ok(()) => {
                tracing::info!(setting = %what, "restored");
                rep.restored.push(what);
            }
            Err(err) => {
                tracing::error!(setting = %what, error = %err, "restore failed");
                rep.failed.push(format!("{what}: {err}"));
            }
        }
    }
    if rep.failed.is_empty() {
        std::fs::remove_file(path).map_err(|e| Error::io(path, "remove", e))?;
        Ok(rep)
    } else {
        Err(Error::State {
            path: path.to_path_buf(),
            message: format!(
                "{} setting(s) not restored (the file is kept): {}",
                rep.failed.len(),
                rep.failed.join("; ")
            ),
        })
    }
}

fn restore_file(fs: &HostFs, path: &str, original: &str) -> Result<(), Error> {
    // Skip when already at the original (a knob the kernel reset itself, or a re-run).
    if fs.read_opt(path)?.as_deref().map(str::trim) == Some(original.trim()) {
        return Ok(());
    }
    fs.write(path, original)
}

/// Change `merge_across_nodes` safely (kernel-mechanisms §3.4; `merge_across_nodes_store`
/// refuses with EBUSY while KSM pages exist): when pages are shared and `unmerge` is
/// allowed, write `run = 2` (unmerge everything, breaking COW), wait until `pages_shared`
/// is 0, write the new value, then set `run` to `final_run`.
pub fn ksm_set_merge_across_nodes(
    fs: &HostFs,
    value: &str,
    final_run: &str,
    unmerge: bool,
) -> Result<(), Error> {
    let dir = crate::host::KSM_DIR;
    let mac = format!("{dir}/merge_across_nodes");
    let run = format!("{dir}/run");
    let shared = format!("{dir}/pages_shared");
    if fs.read(&mac)?.trim() == value.trim() {
        if fs.read(&run)?.trim() != final_run.trim() {
            fs.write(&run, final_run)?;
        }
        return Ok(());
    }
    let nr_shared = fs.read_u64_opt(&shared)?.unwrap_or(0);
    if nr_shared > 0 {
        if !unmerge {
            return Err(Error::Other(format!(
                "KSM has {nr_shared} shared pages: changing merge_across_nodes needs an unmerge (set ksm.allow_unmerge = true)"
            )));
        }
        fs.write(&run, "2")?;
        let t0 = Instant::now();
        while fs.read_u64_opt(&shared)?.unwrap_or(0) > 0 {
            if t0.elapsed() > KSM_UNMERGE_TIMEOUT {
                return Err(Error::Other("KSM unmerge did not finish within 60s".into()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fs.write(&mac, value)?;
    fs.write(&run, final_run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::fake::FakeTree;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn records_before_change_and_restores_newest_first() {
        let t = FakeTree::new()
            .file("/proc/sys/kernel/numa_balancing", "0")
            .file("/sys/kernel/mm/numa/demotion_enabled", "false");
        let fs = t.fs();
        let sp = t.dir.path().join("run/agent.state");
        let mut rec = StateRecorder::create(&sp, &fs).unwrap();
        rec.record(Saved::File {
            path: "/proc/sys/kernel/numa_balancing".into(),
            original: "0".into(),
        })
        .unwrap();
        fs.write("/proc/sys/kernel/numa_balancing", "2").unwrap();
        // A second change of the same file keeps the first original.
        rec.record(Saved::File {
            path: "/proc/sys/kernel/numa_balancing".into(),
            original: "2".into(),
        })
        .unwrap();
        fs.write("/proc/sys/kernel/numa_balancing", "1").unwrap();
        rec.record(Saved::File {
            path: "/sys/kernel/mm/numa/demotion_enabled".into(),
            original: "false".into(),
        })
        .unwrap();
        fs.write("/sys/kernel/mm/numa/demotion_enabled", "true")
            .unwrap();
        let on_disk: StateFile =
            serde_json::from_str(&std::fs::read_to_string(&sp).unwrap()).unwrap();
        assert_eq!(on_disk.entries.len(), 2);
        let rep = rec.restore(&fs).unwrap();
        assert_eq!(rep.restored.len(), 2);
        assert!(rep.restored[0].contains("demotion_enabled"), "newest first");
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "0");
        assert_eq!(t.get("/sys/kernel/mm/numa/demotion_enabled"), "false");
        assert!(!sp.exists(), "state file removed after a full restore");
    }

    #[test]
    fn restore_from_file_after_crash() {
        let t = FakeTree::new().file("/proc/sys/vm/watermark_scale_factor", "10");
        let fs = t.fs();
        let sp = t.dir.path().join("agent.state");
        let mut rec = StateRecorder::create(&sp, &fs).unwrap();
        rec.record(Saved::File {
            path: "/proc/sys/vm/watermark_scale_factor".into(),
            original: "10".into(),
        })
        .unwrap();
        fs.write("/proc/sys/vm/watermark_scale_factor", "200")
            .unwrap();
        drop(rec); // the agent dies here (kill -9: the lock goes, the state file stays)
        assert!(
            StateRecorder::create(&sp, &fs).is_err(),
            "a leftover state file blocks a new run"
        );
        let rep = restore_from_file(&sp, None).unwrap();
        assert_eq!(rep.restored.len(), 1);
        assert_eq!(t.get("/proc/sys/vm/watermark_scale_factor"), "10");
        assert!(!sp.exists());
    }

    #[test]
    fn a_second_agent_on_the_same_state_file_is_refused_with_the_holders_pid() {
        let t = FakeTree::new();
        let sp = t.dir.path().join("agent.state");
        let first = StateRecorder::create(&sp, &t.fs()).unwrap();
        let e = StateRecorder::create(&sp, &t.fs())
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        let e = restore_from_file(&sp, None).unwrap_err().to_string();
        assert!(
            e.contains("in use"),
            "a restore while the agent runs is refused too: {e}"
        );
        first.restore(&t.fs()).unwrap();
        // Released: the next agent may start.
        StateRecorder::create(&sp, &t.fs())
            .unwrap()
            .restore(&t.fs())
            .unwrap();
    }

    #[test]
    fn the_state_file_is_private_and_never_written_through_a_link() {
        let t = FakeTree::new().file("/victim", "keep\n");
        let sp = t.dir.path().join("agent.state");
        // SAFETY: umask has no preconditions; restored below.
        let old = unsafe { libc::umask(0) };
        let rec = StateRecorder::create(&sp, &t.fs());
        unsafe { libc::umask(old) };
        let rec = rec.unwrap();
        let mode = std::fs::metadata(&sp).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "mode {mode:o} under umask 0");
        // A link planted where the temporary file goes is removed, not followed.
        let tmp = sp.with_extension("tmp");
        std::os::unix::fs::symlink(t.dir.path().join("victim"), &tmp).unwrap();
        let mut rec = rec;
        rec.record(Saved::Damon { nr_kdamonds: 0 }).unwrap();
        assert_eq!(t.get("/victim"), "keep");
        rec.restore(&t.fs()).ok();
    }

    #[test]
    fn restore_refuses_untrusted_or_hostile_state_files() {
        let t = FakeTree::new().file("/etc/passwd", "root\n");
        let sp = t.dir.path().join("agent.state");
        let hostile = StateFile {
            version: 1,
            pid: 1,
            root: t.dir.path().to_path_buf(),
            entries: vec![Saved::File {
                path: "/etc/passwd".into(),
                original: "owned".into(),
            }],
        };
        std::fs::write(&sp, serde_json::to_string(&hostile).unwrap()).unwrap();
        std::fs::set_permissions(&sp, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = restore_from_file(&sp, None).unwrap_err().to_string();
        assert!(e.contains("writable by group or others"), "{e}");
        std::fs::set_permissions(&sp, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = restore_from_file(&sp, None).unwrap_err().to_string();
        assert!(e.contains("refusing to write"), "{e}");
        assert_eq!(t.get("/etc/passwd"), "root");
        // Through a link: refused.
        let link = t.dir.path().join("link.state");
        std::os::unix::fs::symlink(&sp, &link).unwrap();
        assert!(restore_from_file(&link, None).is_err());
    }

    #[test]
    fn failed_restore_keeps_the_file() {
        let t = FakeTree::new();
        let fs = t.fs();
        let sp = t.dir.path().join("agent.state");
        let mut rec = StateRecorder::create(&sp, &fs).unwrap();
        rec.record(Saved::File {
            path: "/sys/gone/knob".into(),
            original: "1".into(),
        })
        .unwrap();
        let e = rec.restore(&fs).unwrap_err().to_string();
        assert!(e.contains("not restored"), "{e}");
        assert!(sp.exists());
    }

    #[test]
    fn ksm_merge_across_nodes_unmerges_first_when_pages_are_shared() {
        let t = FakeTree::new()
            .file("/sys/kernel/mm/ksm/run", "1")
            .file("/sys/kernel/mm/ksm/merge_across_nodes", "1")
            .file("/sys/kernel/mm/ksm/pages_shared", "5");
        let fs = t.fs();
        let e = ksm_set_merge_across_nodes(&fs, "0", "1", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("allow_unmerge"), "{e}");
        assert_eq!(t.get("/sys/kernel/mm/ksm/merge_across_nodes"), "1");
        // Simulate ksmd finishing the unmerge while we wait.
        let p = fs.path("/sys/kernel/mm/ksm/pages_shared");
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(120));
            std::fs::write(p, "0").unwrap();
        });
        ksm_set_merge_across_nodes(&fs, "0", "1", true).unwrap();
        h.join().unwrap();
        assert_eq!(t.get("/sys/kernel/mm/ksm/merge_across_nodes"), "0");
        assert_eq!(t.get("/sys/kernel/mm/ksm/run"), "1");
    }
}
