//! The host's CPU caches from `/sys/devices/system/cpu/cpu<N>/cache/index<M>/`
//! (`drivers/base/cacheinfo.c`: `level`, `type`, `size`, `ways_of_associativity`,
//! `coherency_line_size`, `shared_cpu_list`), for `topology --sim-config`.
//!
//! The kernel reports geometry, not latency: the hit latencies written for a host are the
//! simulator's generic ones (`tiermem_core::caches::Hierarchy::generic`), marked as such.

use crate::fs::HostFs;
use crate::Error;
use tiermem_core::caches::LINE;

/// One cache level as the kernel describes it for one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostCache {
    pub size: u64,
    pub ways: u32,
    /// CPUs sharing this cache (`shared_cpu_list`, counted).
    pub shared_cpus: u32,
}

/// The data caches of the host's first CPU: L1d, L2 and the last level (L3, or L2 when
/// there is no L3). None when the kernel exposes no cache information (some VMs, ARM
/// systems without firmware tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostCaches {
    pub l1d: HostCache,
    pub l2: HostCache,
    pub llc: HostCache,
}

const CPU0_CACHE: &str = "/sys/devices/system/cpu/cpu0/cache";

/// Read cpu0's caches. A cache directory whose files do not parse is an error naming the
/// file; an absent directory or a missing level is `None`.
pub fn read_caches(fs: &HostFs) -> Result<Option<HostCaches>, Error> {
    if !fs.exists(CPU0_CACHE) {
        return Ok(None);
    }
    let mut by_level: [Option<HostCache>; 4] = [None; 4];
    for i in fs.numbered_entries(CPU0_CACHE, "index")? {
        let d = format!("{CPU0_CACHE}/index{i}");
        let kind = fs.read_opt(&format!("{d}/type"))?.unwrap_or_default();
        if kind.trim() == "Instruction" {
            continue;
        }
        let level = fs.read_u64(&format!("{d}/level"))? as usize;
        let line = fs.read_u64_opt(&format!("{d}/coherency_line_size"))?;
        let bad = |file: &str, message: String| Error::Parse {
            path: fs.path(&format!("{d}/{file}")),
            message,
        };
        if line.is_some_and(|l| l != LINE) {
            return Err(bad(
                "coherency_line_size",
                format!(
                    "{} -byte lines: the simulator models 64-byte lines",
                    line.unwrap_or(0)
                ),
            ));
        }
        let size_text = fs.read_opt(&format!("{d}/size"))?.unwrap_or_default();
        let size = parse_size(&size_text).map_err(|m| bad("size", m))?;
        let ways = fs.read_u64(&format!("{d}/ways_of_associativity"))? as u32;
        let shared = fs
            .read_opt(&format!("{d}/shared_cpu_list"))?
            .map(|s| crate::fs::parse_list(&s).map_err(|m| bad("shared_cpu_list", m)))
            .transpose()?
            .map_or(1, |cpus| cpus.len() as u32);
        if (1..=3).contains(&level) && ways > 0 && size > 0 {
            by_level[level] = Some(HostCache {
                size,
                ways,
                shared_cpus: shared.max(1),
            });
        }
    }
    let (Some(l1d), Some(l2)) = (by_level[1], by_level[2]) else {
        return Ok(None);
    };
    Ok(Some(HostCaches {
        l1d,
        l2,
        llc: by_level[3].unwrap_or(l2),
    }))
}

/// `size` as cacheinfo prints it: `48K`, `2048K`, `105M` (binary units).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| format!("bad cache size {t:?} (expected e.g. 48K)"))
}

impl HostCache {
    /// The size rounded down to whole sets (a `size` the simulator accepts): some parts
    /// report sizes that are not ways × 64 × 2^k (a 1.875 MiB slice per core × cores).
    pub fn whole_sets(&self) -> u64 {
        let set = LINE * self.ways.max(1) as u64;
        (self.size / set).max(1) * set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(files: &[(&str, &str)]) -> (tempfile::TempDir, HostFs) {
        let d = tempfile::tempdir().unwrap();
        for (p, v) in files {
            let path = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, v).unwrap();
        }
        let fs = HostFs::new(d.path());
        (d, fs)
    }

    fn index(
        i: u32,
        level: &str,
        kind: &str,
        size: &str,
        ways: &str,
        shared: &str,
    ) -> Vec<(String, String)> {
        let d = format!("{CPU0_CACHE}/index{i}");
        vec![
            (format!("{d}/level"), level.into()),
            (format!("{d}/type"), kind.into()),
            (format!("{d}/size"), size.into()),
            (format!("{d}/ways_of_associativity"), ways.into()),
            (format!("{d}/coherency_line_size"), "64".into()),
            (format!("{d}/shared_cpu_list"), shared.into()),
        ]
    }

    fn files(v: &[Vec<(String, String)>]) -> Vec<(String, String)> {
        v.concat()
    }

    #[test]
    fn a_sapphire_rapids_host_reads_as_its_three_data_caches() {
        let f = files(&[
            index(0, "1", "Data", "48K", "12", "0,56"),
            index(1, "1", "Instruction", "32K", "8", "0,56"),
            index(2, "2", "Unified", "2048K", "16", "0,56"),
            index(3, "3", "Unified", "107520K", "15", "0-55,112-167"),
        ]);
        let refs: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (_d, fs) = host(&refs);
        let c = read_caches(&fs).unwrap().unwrap();
        assert_eq!(
            c.l1d,
            HostCache {
                size: 48 << 10,
                ways: 12,
                shared_cpus: 2
            }
        );
        assert_eq!(c.l2.size, 2 << 20);
        assert_eq!(c.llc.size, 105 << 20);
        assert_eq!(c.llc.shared_cpus, 112);
    }

    #[test]
    fn no_cache_directory_is_none_and_a_bad_size_names_the_file() {
        let (_d, fs) = host(&[("/proc/version", "x")]);
        assert_eq!(read_caches(&fs).unwrap(), None);
        let f = files(&[
            index(0, "1", "Data", "lots", "12", "0"),
            index(2, "2", "Unified", "2048K", "16", "0"),
        ]);
        let refs: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (_d, fs) = host(&refs);
        let e = read_caches(&fs).unwrap_err().to_string();
        assert!(e.contains("index0/size") && e.contains("lots"), "{e}");
    }
}
