//! The user-space tiering controller on a host: [`tiermem_policy::tiering`]'s controller
//! over real pages (`move_pages(2)`, node meminfo and `/proc/zoneinfo`).

use crate::Error;
use std::collections::BTreeMap;
pub use tiermem_policy::tiering::{
    Controller, ControllerParams, ControllerStats, MemoryOps, OpsError, PAGE_SIZE,
};

/// Real pages: `move_pages` and node meminfo/zoneinfo.
pub struct HostMemoryOps {
    pub fs: crate::fs::HostFs,
    wmarks: BTreeMap<u32, u64>,
}

impl HostMemoryOps {
    pub fn new(fs: crate::fs::HostFs) -> Self {
        let wmarks = fs
            .read_opt("/proc/zoneinfo")
            .ok()
            .flatten()
            .map(|z| parse_zoneinfo_high(&z))
            .unwrap_or_default();
        HostMemoryOps { fs, wmarks }
    }
}

/// Sum of `high` (and `promo`, when the kernel has it, which is higher) watermark pages per
/// node from `/proc/zoneinfo`, in bytes. In tiering mode kswapd balances fast nodes to the
/// promo watermark (`WMARK_PROMO`), so that is the headroom the kernel keeps.
pub fn parse_zoneinfo_high(text: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for z in tiermem_core::zoneinfo::parse(text) {
        *out.entry(z.node).or_insert(0) += z.high.max(z.promo.unwrap_or(0)) * PAGE_SIZE;
    }
    out
}

fn ops_error(e: Error) -> OpsError {
    OpsError(e.to_string())
}

/// The address ranges of `/proc/PID/maps` (ascending; the kernel lists them so), without
/// `[vsyscall]`, which lies above user space and is no VMA of the process.
pub fn parse_maps(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| !l.ends_with("[vsyscall]"))
        .filter_map(|l| {
            let (range, _) = l.split_once(' ')?;
            let (a, b) = range.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .filter(|(a, b)| a < b)
        .collect()
}

impl MemoryOps for HostMemoryOps {
    fn mappings(&mut self, pid: i32) -> Result<Vec<(u64, u64)>, OpsError> {
        match self.fs.read_opt(&format!("/proc/{pid}/maps")) {
            Ok(Some(t)) => Ok(parse_maps(&t)),
            Ok(None) => Err(OpsError(format!("no process {pid}"))),
            Err(e) => Err(ops_error(e)),
        }
    }
    fn query(&mut self, pid: i32, pages: &[usize]) -> Result<Vec<i32>, OpsError> {
        crate::sys::move_pages(pid, pages, None, 0).map_err(ops_error)
    }
    fn move_to(&mut self, pid: i32, pages: &[usize], node: u32) -> Result<Vec<i32>, OpsError> {
        let nodes = vec![node as i32; pages.len()];
        crate::sys::move_pages(pid, pages, Some(&nodes), crate::sys::MPOL_MF_MOVE)
            .map_err(ops_error)
    }
    fn free_bytes(&mut self, node: u32) -> u64 {
        self.fs
            .read_opt(&format!("{}/node{node}/meminfo", crate::host::NODE_DIR))
            .ok()
            .flatten()
            .and_then(|m| crate::fs::parse_meminfo_kb(&m, "MemFree"))
            .unwrap_or(0)
    }
    fn high_wmark_bytes(&mut self, node: u32) -> u64 {
        self.wmarks.get(&node).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_give_ascending_ranges_without_vsyscall() {
        let m = "200000000000-200004000000 rw-p 00000000 00:00 0 \n\
                 55556f348000-55556f38b000 rw-p 00000000 00:00 0                          [heap]\n\
                 7ffefb6a1000-7ffefb6c2000 rw-p 00000000 00:00 0                          [stack]\n\
                 ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
        assert_eq!(
            parse_maps(m),
            vec![
                (0x2000_0000_0000, 0x2000_0400_0000),
                (0x5555_6f34_8000, 0x5555_6f38_b000),
                (0x7ffe_fb6a_1000, 0x7ffe_fb6c_2000),
            ]
        );
    }

    #[test]
    fn zoneinfo_watermarks_per_node() {
        let z = "Node 0, zone      DMA\n  pages free 100\n        min      10\n        low      12\n        high     14\nNode 0, zone   Normal\n        high     1000\n        promo    1200\nNode 1, zone  Movable\n        high     300\n";
        let w = parse_zoneinfo_high(z);
        assert_eq!(w[&0], (14 + 1200) * PAGE_SIZE);
        assert_eq!(w[&1], 300 * PAGE_SIZE);
    }
}
