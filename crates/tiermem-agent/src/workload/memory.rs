//! The synthetic workload's regions in this process: `mmap` at the simulator's layout,
//! placement with `mbind`, population with each region's content, the run-time VMA
//! policies and `MADV_MERGEABLE`.

use crate::sys;
use crate::Error;
use tiermem_core::mempolicy::{MemPolicy, PolicyMode};
use tiermem_core::synthetic::{KsmContent, SyntheticConfig};
use tiermem_core::units::PAGE_SIZE;

/// Where the first region goes; the others follow as `tiermem_core::layout` lays out a
/// simulated process's mappings (1 GiB-aligned, 2 GiB apart at least, so that the kernel
/// never merges two regions' VMAs). 32 TiB: clear of PIE executables and their heap
/// (`ELF_ET_DYN_BASE`, about 0x5555_5555_0000) and of the mmap area below the stack.
const LAYOUT_BASE: usize = 0x2000_0000_0000;
/// `MADV_MERGEABLE` (include/uapi/asm-generic/mman-common.h).
const MADV_MERGEABLE: i32 = 12;

/// One region's address range.
#[derive(Clone, Debug)]
pub struct MappedRegion {
    pub name: String,
    pub addr: usize,
    pub len: usize,
}

impl MappedRegion {
    pub fn pages(&self) -> u64 {
        (self.len / PAGE_SIZE as usize) as u64
    }
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.addr && addr < self.addr + self.len
    }
}

/// Where each region goes (a pure function: the sampling process computes the same
/// addresses the workload process maps).
pub fn layout(s: &SyntheticConfig) -> Vec<MappedRegion> {
    layout_at(s, LAYOUT_BASE)
}

fn layout_at(s: &SyntheticConfig, base: usize) -> Vec<MappedRegion> {
    let starts =
        tiermem_core::layout::lay_out_from(base as u64, s.regions.iter().map(|r| r.pages()));
    s.regions
        .iter()
        .zip(starts)
        .map(|(r, start)| MappedRegion {
            name: r.name.clone(),
            addr: start as usize,
            len: r.pages() as usize * PAGE_SIZE as usize,
        })
        .collect()
}

/// The regions of one workload, mapped; unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    pub regions: Vec<MappedRegion>,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        for r in &self.regions {
            // SAFETY: each region was mapped by `map_regions` and is unmapped once.
            unsafe {
                libc::munmap(r.addr as *mut libc::c_void, r.len);
            }
        }
    }
}

/// Map every region (not yet populated) at its [`layout`] address.
pub fn map_regions(s: &SyntheticConfig) -> Result<Mapping, Error> {
    map_at(s, LAYOUT_BASE)
}

fn map_at(s: &SyntheticConfig, base: usize) -> Result<Mapping, Error> {
    let mut m = Mapping {
        regions: Vec::new(),
    };
    for r in layout_at(s, base) {
        // SAFETY: an anonymous private mapping at an address that must not replace anything.
        let p = unsafe {
            libc::mmap(
                r.addr as *mut libc::c_void,
                r.len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED || p as usize != r.addr {
            return Err(Error::Other(format!(
                "cannot map region {:?} ({} bytes) at {:#x}: {}",
                r.name,
                r.len,
                r.addr,
                std::io::Error::last_os_error()
            )));
        }
        m.regions.push(r);
    }
    Ok(m)
}

/// The `mbind` mode word and nodes of a policy.
fn mode_and_nodes(p: &MemPolicy) -> (i32, Vec<u32>) {
    let flags: i32 = p.flags.iter().map(|f| f.kernel_value()).sum();
    (
        p.mode.kernel_value() | flags,
        p.nodes.iter().map(|n| n.0 as u32).collect(),
    )
}

fn mbind(r: &MappedRegion, p: Option<&MemPolicy>) -> Result<(), Error> {
    let default = MemPolicy::new(PolicyMode::Default, Vec::new());
    let (mode, nodes) = mode_and_nodes(p.unwrap_or(&default));
    // SAFETY: the region is our own mapping.
    unsafe { sys::mbind(r.addr as *mut libc::c_void, r.len, mode, &nodes, 0) }
        .map_err(|e| Error::Other(format!("region {:?}: {e}", r.name)))
}

/// The 64-bit word a KSM region's pages are filled with (identical contents), or `None`
/// for pages whose first word makes them unique.
fn fill_word(k: Option<KsmContent>, workload: usize, region: usize) -> Option<u64> {
    match k {
        Some(KsmContent::Identical) => Some(0x5a5a_5a5a_5a5a_5a5a),
        Some(KsmContent::IdenticalWithinRegion) => {
            Some(0x1d00_0000_0000_0000 | ((workload as u64) << 16) | region as u64)
        }
        Some(KsmContent::Unique) | None => None,
    }
}

/// Placement: `place` as each region's VMA policy, every region populated in order (one
/// page at a time, with its content), then the run-time VMA policies and KSM advice.
/// Returns the seconds population took.
pub fn place_and_populate(s: &SyntheticConfig, workload: usize, m: &Mapping) -> Result<f64, Error> {
    for (r, mr) in s.regions.iter().zip(&m.regions) {
        if let Some(p) = &r.place {
            mbind(mr, Some(p))?;
        }
    }
    let t0 = std::time::Instant::now();
    for (j, (r, mr)) in s.regions.iter().zip(&m.regions).enumerate() {
        if r.populate {
            populate(mr, fill_word(r.ksm, workload, j), j);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    for (r, mr) in s.regions.iter().zip(&m.regions) {
        if r.place.is_some() || r.mbind.is_some() {
            mbind(mr, r.mbind.as_ref())?;
        }
        if r.ksm.is_some() {
            // SAFETY: our own mapping.
            let rc = unsafe { libc::madvise(mr.addr as *mut libc::c_void, mr.len, MADV_MERGEABLE) };
            if rc != 0 {
                return Err(Error::Other(format!(
                    "region {:?}: madvise(MADV_MERGEABLE): {} (is CONFIG_KSM on?)",
                    mr.name,
                    std::io::Error::last_os_error()
                )));
            }
        }
    }
    Ok(secs)
}

/// Write every page of a region: the whole page with `fill` (KSM-identical contents), else
/// a word unique to the page (region, page) at its start.
fn populate(mr: &MappedRegion, fill: Option<u64>, region: usize) {
    let words = PAGE_SIZE as usize / 8;
    for page in 0..mr.pages() as usize {
        let base = (mr.addr + page * PAGE_SIZE as usize) as *mut u64;
        // SAFETY: `base .. base + words` lies inside the mapping.
        unsafe {
            match fill {
                Some(w) => {
                    for i in 0..words {
                        std::ptr::write_volatile(base.add(i), w);
                    }
                }
                None => {
                    std::ptr::write_volatile(base, ((region as u64) << 40) | page as u64 | 1 << 63)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_map_apart_and_populate() {
        let s: SyntheticConfig = toml::from_str(
            "[[regions]]\nname = \"a\"\nsize = \"64KiB\"\nksm = \"identical\"\n[[regions]]\nname = \"b\"\nsize = \"8KiB\"\n",
        )
        .unwrap();
        // Away from the layout base, which the runner's own test maps concurrently.
        let m = map_at(&s, LAYOUT_BASE + (64 << 30)).unwrap();
        assert_eq!(m.regions.len(), 2);
        assert!(m.regions[1].addr >= m.regions[0].addr + m.regions[0].len + (1 << 30));
        assert_eq!(m.regions[0].pages(), 16);
        populate(&m.regions[0], fill_word(s.regions[0].ksm, 0, 0), 0);
        populate(&m.regions[1], None, 1);
        // SAFETY: reading our own populated mapping.
        unsafe {
            let a = m.regions[0].addr as *const u64;
            assert_eq!(*a.add(700), 0x5a5a_5a5a_5a5a_5a5a);
            let b = m.regions[1].addr as *const u64;
            assert_ne!(*b, *b.add(512), "pages of a plain region differ");
        }
    }
}
