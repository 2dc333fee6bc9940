//! The state file: every setting's original value, recorded before it is changed.
//!
//! The file is rewritten (write to a temporary file, `fsync`, `rename`) before each change,
//! so after any crash it lists at least every change that may have happened. Restore walks
//! it newest first; it is removed only when every entry was restored. `tiermem agent
//! --restore` runs the same restore from the file alone (the config is not needed).

use crate::damon::DamonSysfs;
use crate::fs::HostFs;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the KSM unmerge (`run = 2`) may take before the agent gives up.
pub const KSM_UNMERGE_TIMEOUT: Duration = Duration::from_secs(60);

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
}

impl StateRecorder {
    /// Start a new state file. Refuses when one exists: a previous agent did not restore.
    pub fn create(path: &Path, fs: &HostFs) -> Result<Self, Error> {
        if path.exists() {
            return Err(Error::State {
                path: path.to_path_buf(),
                message: "exists: a previous agent did not finish restoring; run `tiermem agent --restore` first".into(),
            });
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        }
        let r = StateRecorder {
            path: path.to_path_buf(),
            state: StateFile {
                version: 1,
                pid: std::process::id(),
                root: fs.root().to_path_buf(),
                entries: Vec::new(),
            },
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

    fn persist(&self) -> Result<(), Error> {
        use std::io::Write;
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string_pretty(&self.state).expect("state serialises");
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, "create", e))?;
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
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, "read", e))?;
    let state: StateFile = serde_json::from_str(&text).map_err(|e| Error::State {
        path: path.to_path_buf(),
        message: format!("not a tiermem state file: {e}"),
    })?;
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
        std::mem::forget(rec); // the agent dies here (kill -9)
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
