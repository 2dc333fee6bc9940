//! The sampler: reads the kernel's counters every interval into rows with the simulator's
//! timeline columns ([`tiermem_core::timeline`]).
//!
//! Sources: `/proc/vmstat` (cumulative counters, written relative to time 0 as the
//! simulator's start at 0 there), `nodeN/meminfo` (`MemFree`), `/proc/self/numa_maps`
//! (pages per node of each region, `N<n>=`), `/proc/self/sched` (`mm->numa_scan_seq`),
//! `/sys/kernel/mm/ksm/*`, DAMON_RECLAIM's statistics parameters and the DAMOS statistics
//! of each context's schemes (`kdamonds/<K>/contexts/0/schemes/<S>/stats/`, the latest
//! a [`super::damon::StatsPoller`] read). A column the host cannot measure (latencies, bandwidth, the
//! kernel's internal hot threshold, a counter this kernel lacks) is left empty.

use super::memory::MappedRegion;
use crate::damon::SchemeStats;
use crate::fs::{parse_meminfo_kb, HostFs};
use crate::Error;
use std::collections::BTreeMap;
use tiermem_core::config::SimConfig;
use tiermem_core::timeline::{base_columns, extra_columns, ExtraColumn, NODE_COLUMNS};
use tiermem_core::units::PAGE_SIZE;
use tiermem_core::vmstat::Vm;

/// KSM files that count events since boot (written relative to time 0); the others are levels.
const KSM_CUMULATIVE: &[&str] = &["pages_scanned", "full_scans"];

/// One reading of everything.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    pub vmstat: BTreeMap<String, u64>,
    pub node_free_pages: Vec<Option<u64>>,
    /// Per region, pages per node.
    pub regions: Vec<Vec<u64>>,
    pub scan_seq: Option<u64>,
    pub ksm: BTreeMap<String, u64>,
    /// DAMON_RECLAIM's statistics parameters.
    pub damon_reclaim: BTreeMap<String, u64>,
    /// DAMOS statistics by (context, scheme).
    pub damos: BTreeMap<(usize, usize), SchemeStats>,
    /// `/proc/zoneinfo`'s zones (free pages and pagesets per zone).
    pub zones: Vec<tiermem_core::zoneinfo::ZoneInfo>,
}

/// Reads the host for one workload's process.
pub struct Sampler {
    fs: HostFs,
    /// The workload process's `/proc` directory (`/proc/<pid>`).
    proc_dir: String,
    regions: Vec<MappedRegion>,
    nr_nodes: usize,
    header: Vec<String>,
    extra: Vec<ExtraColumn>,
    workload: usize,
    /// The latest DAMOS statistics ([`Sampler::with_damos`]).
    damos: Option<super::damon::LatestStats>,
    baseline: Option<Reading>,
}

impl Sampler {
    pub fn new(
        fs: HostFs,
        cfg: &SimConfig,
        workload: usize,
        proc_dir: String,
        regions: Vec<MappedRegion>,
    ) -> Self {
        let nr_nodes = cfg.machine.nodes.len();
        let mut header = base_columns(nr_nodes);
        let (extra, names): (Vec<_>, Vec<_>) = extra_columns(cfg).into_iter().unzip();
        header.extend(names);
        Sampler {
            fs,
            proc_dir,
            regions,
            nr_nodes,
            header,
            extra,
            workload,
            damos: None,
            baseline: None,
        }
    }

    /// Read the DAMOS statistics columns from `latest` (kept fresh by a poller thread).
    pub fn with_damos(mut self, latest: super::damon::LatestStats) -> Self {
        self.damos = Some(latest);
        self
    }

    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Read everything now.
    pub fn read(&self) -> Result<Reading, Error> {
        let damos = self
            .damos
            .as_ref()
            .and_then(|l| l.lock().ok().map(|m| m.clone()))
            .unwrap_or_default();
        let vmstat = parse_vmstat(&self.fs.read("/proc/vmstat")?);
        let node_free_pages = (0..self.nr_nodes)
            .map(|n| {
                self.fs
                    .read_opt(&format!("/sys/devices/system/node/node{n}/meminfo"))
                    .ok()
                    .flatten()
                    .and_then(|t| parse_meminfo_kb(&t, "MemFree"))
                    .map(|b| b / PAGE_SIZE)
            })
            .collect();
        let maps = self.fs.read(&format!("{}/numa_maps", self.proc_dir))?;
        let regions = region_nodes(&maps, &self.regions, self.nr_nodes);
        let scan_seq = self
            .fs
            .read_opt(&format!("{}/sched", self.proc_dir))?
            .and_then(|t| parse_scan_seq(&t));
        let mut ksm = BTreeMap::new();
        for &f in tiermem_core::timeline::KSM_TIMELINE_FILES {
            if let Ok(Some(v)) = self
                .fs
                .read_u64_opt(&format!("{}/{f}", crate::host::KSM_DIR))
            {
                ksm.insert(f.to_string(), v);
            }
        }
        let mut damon_reclaim = BTreeMap::new();
        if self
            .extra
            .iter()
            .any(|c| matches!(c, ExtraColumn::DamonReclaim(_)))
        {
            for &s in tiermem_core::timeline::DAMON_RECLAIM_STATS {
                let path = format!("{}/{s}", super::knobs::DAMON_RECLAIM_DIR);
                if let Ok(Some(v)) = self.fs.read_u64_opt(&path) {
                    damon_reclaim.insert(s.to_string(), v);
                }
            }
        }
        let zones = self
            .fs
            .read_opt("/proc/zoneinfo")?
            .map(|t| tiermem_core::zoneinfo::parse(&t))
            .unwrap_or_default();
        Ok(Reading {
            zones,
            vmstat,
            node_free_pages,
            regions,
            scan_seq,
            ksm,
            damon_reclaim,
            damos,
        })
    }

    /// Remember time 0's reading: cumulative counters are written relative to it.
    pub fn set_baseline(&mut self, r: Reading) {
        self.baseline = Some(r);
    }

    /// One CSV row. `throughput` is accesses per second since the previous row; `accesses`
    /// the workload's cumulative count.
    pub fn row(&self, time_s: f64, throughput: f64, accesses: u64, r: &Reading) -> String {
        let base = self.baseline.as_ref();
        let mut cells: Vec<String> = vec![
            format!("{time_s:.6}"),
            format!("{throughput:.1}"),
            String::new(),
        ];
        for n in 0..self.nr_nodes {
            let used: u64 = r
                .regions
                .iter()
                .map(|h| h.get(n).copied().unwrap_or(0))
                .sum();
            for what in NODE_COLUMNS {
                cells.push(match *what {
                    "used_pages" => used.to_string(),
                    "free_pages" => r.node_free_pages[n].map_or(String::new(), |v| v.to_string()),
                    _ => String::new(),
                });
            }
        }
        for v in Vm::ALL {
            let name = v.name();
            cells.push(match r.vmstat.get(name) {
                Some(&x) => {
                    let b = base.and_then(|b| b.vmstat.get(name)).copied().unwrap_or(0);
                    x.saturating_sub(b).to_string()
                }
                None => String::new(),
            });
        }
        for c in &self.extra {
            cells.push(match *c {
                ExtraColumn::Ksm(f) => match r.ksm.get(f) {
                    Some(&x) if KSM_CUMULATIVE.contains(&f) => {
                        let b = base.and_then(|b| b.ksm.get(f)).copied().unwrap_or(0);
                        x.saturating_sub(b).to_string()
                    }
                    Some(&x) => x.to_string(),
                    None => String::new(),
                },
                ExtraColumn::DamonReclaim(s) => match r.damon_reclaim.get(s) {
                    Some(&x) => {
                        let b = base
                            .and_then(|b| b.damon_reclaim.get(s))
                            .copied()
                            .unwrap_or(0);
                        x.saturating_sub(b).to_string()
                    }
                    None => String::new(),
                },
                ExtraColumn::DamosStat {
                    context,
                    scheme,
                    stat,
                } => damos_cell(r, base, (context, scheme), stat),
                ExtraColumn::RegionNode {
                    workload,
                    region,
                    node,
                } if workload == self.workload => r
                    .regions
                    .get(region)
                    .and_then(|h| h.get(node))
                    .map_or(String::new(), |v| v.to_string()),
                ExtraColumn::ScanSeq { workload } if workload == self.workload => {
                    match (r.scan_seq, base.and_then(|b| b.scan_seq)) {
                        (Some(x), b) => x.saturating_sub(b.unwrap_or(0)).to_string(),
                        _ => String::new(),
                    }
                }
                ExtraColumn::Accesses { workload } if workload == self.workload => {
                    accesses.to_string()
                }
                ExtraColumn::ZoneFree { node, zone } => {
                    let name = tiermem_core::watermarks::ZONE_NAMES.get(zone);
                    r.zones
                        .iter()
                        .find(|z| z.node as usize == node && Some(&z.zone.as_str()) == name)
                        .map_or(String::new(), |z| z.free.to_string())
                }
                ExtraColumn::Pagesets { node } => {
                    let mut zones = r
                        .zones
                        .iter()
                        .filter(|z| z.node as usize == node)
                        .peekable();
                    if zones.peek().is_none() {
                        String::new()
                    } else {
                        zones.map(|z| z.pcp_count).sum::<u64>().to_string()
                    }
                }
                _ => String::new(),
            });
        }
        cells.join(",")
    }
}

/// A DAMOS statistic relative to time 0 (empty when unread).
fn damos_cell(r: &Reading, base: Option<&Reading>, at: (usize, usize), stat: &str) -> String {
    let get = |r: &Reading| r.damos.get(&at).and_then(|s| s.get(stat));
    match get(r) {
        Some(x) => x
            .saturating_sub(base.and_then(get).unwrap_or(0))
            .to_string(),
        None => String::new(),
    }
}

/// `/proc/vmstat`: `name value` lines.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// `/proc/<pid>/sched`'s `mm->numa_scan_seq : N` line.
pub fn parse_scan_seq(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "mm->numa_scan_seq").then(|| v.trim().parse().ok())?
    })
}

/// Pages per node of each region from `numa_maps` (`<start> <policy> ... N0=12 N1=4 ...`):
/// every line whose start address lies in a region counts for it (a region whose VMA was
/// split, by `mbind` for example, has several lines).
pub fn region_nodes(numa_maps: &str, regions: &[MappedRegion], nr_nodes: usize) -> Vec<Vec<u64>> {
    let mut out = vec![vec![0u64; nr_nodes]; regions.len()];
    for line in numa_maps.lines() {
        let mut it = line.split_whitespace();
        let Some(start) = it.next().and_then(|a| usize::from_str_radix(a, 16).ok()) else {
            continue;
        };
        let Some(ri) = regions.iter().position(|r| r.contains(start)) else {
            continue;
        };
        for tok in it {
            if let Some((n, c)) = tok.strip_prefix('N').and_then(|t| t.split_once('=')) {
                if let (Ok(n), Ok(c)) = (n.parse::<usize>(), c.parse::<u64>()) {
                    if n < nr_nodes {
                        out[ri][n] += c;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::memory::MappedRegion;

    #[test]
    fn parses_the_kernel_files() {
        let v = parse_vmstat("nr_free_pages 100\npgpromote_success 7\n");
        assert_eq!(v["pgpromote_success"], 7);
        let sched = "hotcold (123, #threads: 2)\n---\nmm->numa_scan_seq                            :                    5\nnuma_pages_migrated : 0\n";
        assert_eq!(parse_scan_seq(sched), Some(5));
        let m = vec![MappedRegion {
            name: "hot".into(),
            addr: 0x5555_0000_0000,
            len: 1 << 20,
        }];
        let maps =
            "555500000000 default anon=200 dirty=200 active=0 N0=150 N1=50 kernelpagesize_kB=4\n\
                    555500080000 bind:1 anon=56 dirty=56 N1=56 kernelpagesize_kB=4\n\
                    7f0000000000 default file=/usr/lib/x mapped=3 N0=3 kernelpagesize_kB=4\n";
        let h = region_nodes(maps, &m, 2);
        assert_eq!(h, vec![vec![150, 106]]);
    }
}
