//! Where a process's mappings go in its address space: one rule for the simulator's
//! processes (`Kernel::add_process`) and the live runner's workload process, which maps its
//! regions at these addresses (`MAP_FIXED_NOREPLACE`), so that a recording and its
//! simulation share one layout.
//!
//! The mappings follow one another from [`BASE`] in the order given, each starting on a
//! 1 GiB boundary at least 2 GiB after the end of the one before, so that the kernel never
//! merges two of them into one VMA and none lands in the binary, its heap or the mmap area.
//!
//! This is not where Linux would put a program's own mappings (consecutive `mmap`s lie next
//! to each other below the mmap base, the heap sits by the binary and the stack about a
//! terabyte higher). It matters where an address range spans several mappings: DAMON's
//! vaddr regions start from the three ranges the two biggest gaps leave
//! (`__damon_va_three_regions`), so a simulated process is monitored over about 2–3 GiB per
//! mapping, where a host's process is monitored over its mappings and the gap between its
//! mmap area and its stack. The validation suite's recordings were made with this layout.

use crate::units::PAGE_SIZE;

/// The first mapping.
pub const BASE: u64 = 0x5555_0000_0000;
/// The least gap after each mapping (the next one starts on the following 1 GiB boundary).
pub const GAP: u64 = 2 << 30;
const ALIGN: u64 = 1 << 30;

/// The start address of each mapping of `pages` pages, in the order given.
pub fn lay_out(mappings: impl IntoIterator<Item = u64>) -> Vec<u64> {
    lay_out_from(BASE, mappings)
}

/// [`lay_out`] from another base (tests that must not collide with a real layout).
pub fn lay_out_from(base: u64, mappings: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut addr = base;
    mappings
        .into_iter()
        .map(|pages| {
            let start = addr;
            addr = (start + pages * PAGE_SIZE + GAP) & !(ALIGN - 1);
            start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_start_on_a_gigabyte_two_gigabytes_apart_at_least() {
        let s = lay_out([8192, 1, 1 << 20]);
        assert_eq!(s[0], BASE);
        // 32 MiB + 2 GiB, rounded down to a 1 GiB boundary.
        assert_eq!(s[1], BASE + (2 << 30));
        assert_eq!(s[2], BASE + (4 << 30));
        assert!(s.windows(2).all(|w| w[1] - w[0] >= GAP));
    }
}
