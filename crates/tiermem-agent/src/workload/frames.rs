//! Where the workload's regions lie in physical memory at time 0: runs of consecutive
//! page frames per region, read from `/proc/PID/pagemap` (`Documentation/admin-guide/mm/
//! pagemap.rst`: one little-endian u64 per virtual page; bit 63 = present, bits 0-54 = the
//! PFN, zero without CAP_SYS_ADMIN). DAMON's physical-address monitoring and the buddy
//! allocator's layout decide which pages share a region, so recordings keep it for the
//! model's frame allocator to be checked against (`frames.txt`).

use super::memory::MappedRegion;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use tiermem_core::units::PAGE_SIZE;

const PRESENT: u64 = 1 << 63;
const PFN_MASK: u64 = (1 << 55) - 1;

/// Runs `(first pfn, pages)` of consecutive present frames, in virtual order; pages not
/// present (or PFNs hidden, read as 0) end a run and are left out.
pub fn runs(entries: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut prev: Option<u64> = None;
    for &e in entries {
        let pfn = e & PFN_MASK;
        if e & PRESENT == 0 || pfn == 0 {
            prev = None;
            continue;
        }
        match (prev, out.last_mut()) {
            (Some(p), Some(last)) if pfn == p + 1 => last.1 += 1,
            _ => out.push((pfn, 1)),
        }
        prev = Some(pfn);
    }
    out
}

/// The `frames.txt` text for `regions` of the process whose pagemap is `pagemap`, or
/// `None` when it cannot be read or shows no PFNs (not root).
pub fn describe(pagemap: &Path, regions: &[MappedRegion]) -> Option<String> {
    let mut f = std::fs::File::open(pagemap).ok()?;
    let mut text = String::from(
        "# region first_pfn pages: runs of consecutive page frames at time 0, in virtual order (/proc/PID/pagemap)\n",
    );
    let mut any = false;
    for r in regions {
        let pages = r.len / PAGE_SIZE as usize;
        let mut buf = vec![0u8; pages * 8];
        f.seek(SeekFrom::Start((r.addr / PAGE_SIZE as usize * 8) as u64))
            .ok()?;
        f.read_exact(&mut buf).ok()?;
        let entries: Vec<u64> = buf
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        for (pfn, n) in runs(&entries) {
            any = true;
            text.push_str(&format!("{} {pfn:#x} {n}\n", r.name));
        }
    }
    any.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_present_frames_form_runs() {
        let p = |pfn: u64| PRESENT | pfn;
        let e = [p(10), p(11), p(12), 0, p(13), p(20), p(19), PRESENT, p(21)];
        assert_eq!(runs(&e), vec![(10, 3), (13, 1), (20, 1), (19, 1), (21, 1)]);
        assert!(
            runs(&[PRESENT, PRESENT]).is_empty(),
            "hidden PFNs give nothing"
        );
    }
}
