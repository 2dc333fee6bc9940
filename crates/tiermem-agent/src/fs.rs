//! Readers and writers of `/proc` and `/sys` under an injectable root.
//!
//! Every kernel file the agent touches goes through a [`HostFs`], which joins the
//! absolute kernel path (`/sys/kernel/mm/ksm/run`) onto a root directory: `/` on a real
//! host, a temporary directory holding a fake tree in tests (the pattern of
//! facebookincubator/below's `ProcReader::new_with_custom_procfs`).

use crate::Error;
use std::path::{Path, PathBuf};

/// The host's `/proc` and `/sys`, under a root prefix.
#[derive(Clone, Debug)]
pub struct HostFs {
    root: PathBuf,
}

impl Default for HostFs {
    fn default() -> Self {
        HostFs::new("/")
    }
}

impl HostFs {
    /// A view of the tree under `root` (`/` for the running kernel).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        HostFs { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of a kernel path such as `/sys/kernel/mm/ksm/run`.
    pub fn path(&self, kpath: &str) -> PathBuf {
        self.root.join(kpath.trim_start_matches('/'))
    }

    pub fn exists(&self, kpath: &str) -> bool {
        self.path(kpath).exists()
    }

    /// Read a file and trim the trailing newline.
    pub fn read(&self, kpath: &str) -> Result<String, Error> {
        let p = self.path(kpath);
        std::fs::read_to_string(&p)
            .map(|s| s.trim_end_matches('\n').to_string())
            .map_err(|e| Error::io(&p, "read", e))
    }

    /// Read a file if it exists (`None` when absent: a kernel feature that is not there).
    pub fn read_opt(&self, kpath: &str) -> Result<Option<String>, Error> {
        let p = self.path(kpath);
        match std::fs::read_to_string(&p) {
            Ok(s) => Ok(Some(s.trim_end_matches('\n').to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&p, "read", e)),
        }
    }

    /// Read a decimal integer (sysctl and sysfs knobs).
    pub fn read_u64(&self, kpath: &str) -> Result<u64, Error> {
        let s = self.read(kpath)?;
        s.trim().parse().map_err(|_| Error::Parse {
            path: self.path(kpath),
            message: format!("expected an integer, found {s:?}"),
        })
    }

    pub fn read_u64_opt(&self, kpath: &str) -> Result<Option<u64>, Error> {
        match self.read_opt(kpath)? {
            None => Ok(None),
            Some(s) => s.trim().parse().map(Some).map_err(|_| Error::Parse {
                path: self.path(kpath),
                message: format!("expected an integer, found {s:?}"),
            }),
        }
    }

    /// Write a value the way `echo value > file` does (one write, with a newline).
    ///
    /// Only files on the allow-list ([`crate::allow::check_write`]) are written, and only
    /// where the path resolves without a symbolic link below the root: the final file is
    /// opened with `O_NOFOLLOW` and its directory must canonicalise to the root joined with
    /// the kernel path.
    pub fn write(&self, kpath: &str, value: &str) -> Result<(), Error> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.writable_path(kpath)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| Error::io(&p, "open for writing", e))?;
        f.write_all(format!("{value}\n").as_bytes())
            .map_err(|e| Error::io(&p, &format!("write {value:?} to"), e))
    }

    /// Open an allow-listed binary kernel file for reading and writing at offsets (the
    /// idle-page bitmap), with [`Self::write`]'s checks.
    pub fn open_rw(&self, kpath: &str) -> Result<std::fs::File, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.writable_path(kpath)?;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&p)
            .map_err(|e| Error::io(&p, "open for reading and writing", e))
    }

    /// The host path of `kpath` if the allow-list has it and no symbolic link leads to it.
    fn writable_path(&self, kpath: &str) -> Result<PathBuf, Error> {
        let p = self.path(kpath);
        crate::allow::check_write(kpath).map_err(|why| Error::NotAllowed {
            path: p.clone(),
            why,
        })?;
        self.check_no_link(kpath, &p)?;
        Ok(p)
    }

    /// Refuse a path whose directory is reached through a symbolic link (or `..`).
    fn check_no_link(&self, kpath: &str, p: &Path) -> Result<(), Error> {
        let refuse = |why: &str| Error::NotAllowed {
            path: p.to_path_buf(),
            why: why.into(),
        };
        let (Some(dir), Some(kdir)) = (p.parent(), Path::new(kpath).parent()) else {
            return Err(refuse("no parent directory"));
        };
        let root =
            std::fs::canonicalize(&self.root).map_err(|e| Error::io(&self.root, "resolve", e))?;
        let real = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, "resolve", e))?;
        let want = root.join(kdir.strip_prefix("/").unwrap_or(kdir));
        if real == want {
            Ok(())
        } else {
            Err(refuse(&format!(
                "its directory resolves to {} (a symbolic link or `..` on the way)",
                real.display()
            )))
        }
    }

    /// List the entries of a directory whose names start with `prefix` and end in a number,
    /// sorted by that number (`node0`, `node1`, ... or `memory_tier4`, ...).
    pub fn numbered_entries(&self, kdir: &str, prefix: &str) -> Result<Vec<u32>, Error> {
        let p = self.path(kdir);
        let rd = match std::fs::read_dir(&p) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&p, "list", e)),
        };
        let mut out: Vec<u32> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix(prefix))
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// Whether the current process may write the file (`access(2)` with `W_OK`), used to
    /// validate a whole config before anything is written. A fake tree is always writable.
    pub fn writable(&self, kpath: &str) -> bool {
        let p = self.path(kpath);
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: c is a valid NUL-terminated string.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    }
}

/// The cgroup v2 mount the agent's cgroup paths live under.
pub const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// The kernel path of a cgroup directory named in a config: an absolute path under
/// [`CGROUP_MOUNT`], or a path relative to it (`system.slice/db.service`). The result is
/// joined onto the agent's root like every other kernel path, so `--root` covers cgroups.
pub fn cgroup_kpath(p: &Path) -> Result<String, String> {
    use std::path::Component;
    let rel = match p.strip_prefix(CGROUP_MOUNT) {
        Ok(r) => r,
        Err(_) if p.is_absolute() => {
            return Err(format!(
                "{} is not under the cgroup v2 mount {CGROUP_MOUNT}",
                p.display()
            ))
        }
        Err(_) => p,
    };
    let mut out = String::from(CGROUP_MOUNT);
    for c in rel.components() {
        match c {
            Component::Normal(n) => {
                let n = n
                    .to_str()
                    .ok_or_else(|| format!("{} is not UTF-8", p.display()))?;
                out.push('/');
                out.push_str(n);
            }
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "{}: `..` is not allowed in a cgroup path",
                    p.display()
                ))
            }
        }
    }
    Ok(out)
}

/// The largest node or CPU id a list may name: Linux's `MAX_NUMNODES` is at most 1024 and
/// `NR_CPUS` at most 8192, so anything larger is a typo or an attack on the expansion
/// (`0-4000000000` would be 16 GB of ids).
pub const MAX_LIST_ID: u32 = 65_535;

/// Parse a kernel node list (`0-1,4`, as in `nodelist`, `cpulist`, `has_cpu`).
pub fn parse_list(s: &str) -> Result<Vec<u32>, String> {
    let id = |t: &str| -> Result<u32, String> {
        let v: u32 = t.trim().parse().map_err(|_| format!("bad list {s:?}"))?;
        if v > MAX_LIST_ID {
            return Err(format!(
                "id {v} in list {s:?} is out of range (at most {MAX_LIST_ID})"
            ));
        }
        Ok(v)
    };
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (id(a)?, id(b)?);
                if b < a {
                    return Err(format!("bad range in list {s:?}"));
                }
                out.extend(a..=b);
            }
            None => out.push(id(part)?),
        }
        if out.len() > MAX_LIST_ID as usize + 1 {
            return Err(format!(
                "list {s:?} names more than {} ids",
                MAX_LIST_ID as usize + 1
            ));
        }
    }
    Ok(out)
}

/// Format ids as a kernel list (`0-2,5`).
pub fn format_list(ids: &[u32]) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Parse a `meminfo`-style `Key:   value kB` line set into (key, bytes).
pub fn parse_meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        // Per-node files prefix lines with `Node N `.
        let l = l.trim();
        let l = if let Some(rest) = l.strip_prefix("Node ") {
            rest.split_once(' ').map(|(_, r)| r.trim()).unwrap_or(rest)
        } else {
            l
        };
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        let mut it = v.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        Some(match it.next() {
            Some("kB") => n * 1024,
            _ => n,
        })
    })
}

/// A fake tree for tests: `FakeTree::new().file("/sys/...", "1")`.
#[cfg(test)]
pub mod fake {
    use super::HostFs;

    pub struct FakeTree {
        pub dir: tempfile::TempDir,
    }

    impl Default for FakeTree {
        fn default() -> Self {
            Self::new()
        }
    }

    impl FakeTree {
        pub fn new() -> Self {
            FakeTree {
                dir: tempfile::tempdir().unwrap(),
            }
        }
        pub fn file(self, kpath: &str, content: &str) -> Self {
            self.set(kpath, content);
            self
        }
        pub fn set(&self, kpath: &str, content: &str) {
            let p = self.dir.path().join(kpath.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        pub fn get(&self, kpath: &str) -> String {
            std::fs::read_to_string(self.dir.path().join(kpath.trim_start_matches('/')))
                .unwrap()
                .trim_end()
                .to_string()
        }
        pub fn fs(&self) -> HostFs {
            HostFs::new(self.dir.path())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip() {
        assert_eq!(parse_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(format_list(&[5, 0, 1, 2]), "0-2,5");
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("x").is_err());
        // A huge id or range is refused, not expanded.
        assert!(parse_list("0-4000000000")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_list("4294967295").is_err());
        assert!(parse_list(&"0-65535,".repeat(3))
            .unwrap_err()
            .contains("more than"));
    }

    #[test]
    fn meminfo_per_node_and_global() {
        let node = "Node 1 MemTotal:        1048576 kB\nNode 1 MemFree:          900000 kB\n";
        assert_eq!(parse_meminfo_kb(node, "MemFree"), Some(900000 * 1024));
        assert_eq!(
            parse_meminfo_kb("MemTotal: 10 kB\n", "MemTotal"),
            Some(10240)
        );
        assert_eq!(parse_meminfo_kb(node, "Nope"), None);
    }

    #[test]
    fn read_write_under_root() {
        let t = fake::FakeTree::new().file("/proc/sys/kernel/numa_balancing", "0\n");
        let fs = t.fs();
        assert_eq!(fs.read_u64("/proc/sys/kernel/numa_balancing").unwrap(), 0);
        fs.write("/proc/sys/kernel/numa_balancing", "2").unwrap();
        assert_eq!(t.get("/proc/sys/kernel/numa_balancing"), "2");
        assert!(fs.read_opt("/sys/absent").unwrap().is_none());
        let e = fs.read("/sys/absent").unwrap_err().to_string();
        assert!(e.contains("absent"), "{e}");
    }

    #[test]
    fn cgroup_paths_are_kernel_paths() {
        assert_eq!(
            cgroup_kpath(Path::new("/sys/fs/cgroup/a.slice/b")).unwrap(),
            "/sys/fs/cgroup/a.slice/b"
        );
        assert_eq!(
            cgroup_kpath(Path::new("a.slice/./b")).unwrap(),
            "/sys/fs/cgroup/a.slice/b"
        );
        assert_eq!(
            cgroup_kpath(Path::new("/sys/fs/cgroup")).unwrap(),
            "/sys/fs/cgroup"
        );
        assert!(cgroup_kpath(Path::new("/etc")).is_err());
        assert!(cgroup_kpath(Path::new("/sys/fs/cgroup/../../etc")).is_err());
        assert!(cgroup_kpath(Path::new("a/../../b")).is_err());
    }

    #[test]
    fn writes_outside_the_allow_list_are_refused() {
        let t = fake::FakeTree::new()
            .file("/etc/passwd", "root:x:0:0\n")
            .file("/sys/module/damon_reclaim/parameters/enabled", "N\n");
        let fs = t.fs();
        for k in [
            "/etc/passwd",
            "/sys/module/damon_reclaim/parameters/../../../../etc/passwd",
        ] {
            let e = fs.write(k, "owned").unwrap_err();
            assert!(matches!(e, Error::NotAllowed { .. }), "{k}: {e}");
        }
        assert_eq!(t.get("/etc/passwd"), "root:x:0:0");
    }

    #[test]
    fn a_symbolic_link_on_the_way_is_refused() {
        let t = fake::FakeTree::new().file("/etc/victim/run", "0\n");
        std::fs::create_dir_all(t.dir.path().join("sys/kernel/mm")).unwrap();
        std::os::unix::fs::symlink(
            t.dir.path().join("etc/victim"),
            t.dir.path().join("sys/kernel/mm/ksm"),
        )
        .unwrap();
        let e = t.fs().write("/sys/kernel/mm/ksm/run", "1").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // The final component too (O_NOFOLLOW).
        let t = fake::FakeTree::new().file("/etc/victim", "0\n");
        std::fs::create_dir_all(t.dir.path().join("sys/kernel/mm/ksm")).unwrap();
        std::os::unix::fs::symlink(
            t.dir.path().join("etc/victim"),
            t.dir.path().join("sys/kernel/mm/ksm/run"),
        )
        .unwrap();
        assert!(t.fs().write("/sys/kernel/mm/ksm/run", "1").is_err());
        assert_eq!(t.get("/etc/victim"), "0");
    }
}
