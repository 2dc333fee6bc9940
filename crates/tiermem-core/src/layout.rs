//! Where a process's mappings go in its address space: one rule for the simulator's
//! processes (`Kernel::add_process`) and the live runner's workload process, which maps its
//! regions at these addresses so that a recording and its simulation share one layout.
//!
//! As Linux places a process's mappings (x86-64, 4-level page tables, as the recorded
//! runners' `/proc/PID/maps` show them):
//! * the data mappings (a workload's regions, arrays and buffers: each its own `mmap`)
//!   one after another from [`DATA_BASE`], with one unmapped page between two, so that
//!   the kernel keeps them apart as separate VMAs (`vma_merge` joins only adjacent ones);
//! * the heap at [`HEAP_BASE`], near the PIE binary (`ELF_ET_DYN_BASE`, 0x5555_5555_4000
//!   before `brk` randomisation);
//! * the other mappings of the process image (malloc arenas, thread stacks and their
//!   guard-less signal stacks, the vDSO, the binary's data and bss) packed in the mmap area
//!   from [`MMAP_BASE`];
//! * the main stack at [`STACK_BASE`], below the top of user space.
//!
//! DAMON's vaddr operations start from the three regions of this layout
//! (`__damon_va_three_regions`: the two biggest gaps are left out), which are then data,
//! heap, and mmap area with the stack, as on a host.

use crate::units::PAGE_SIZE;

/// The first data mapping (32 TiB: clear of the binary, its heap and the mmap area).
pub const DATA_BASE: u64 = 0x2000_0000_0000;
/// The heap (`[heap]`).
pub const HEAP_BASE: u64 = 0x5555_5555_0000;
/// The mmap area's other mappings (names in brackets other than `[heap]` and `[stack]`).
pub const MMAP_BASE: u64 = 0x7f00_0000_0000;
/// The main stack (`[stack]`).
pub const STACK_BASE: u64 = 0x7ffc_0000_0000;

/// Where a mapping named `name` goes: data (no brackets), `[heap]`, `[stack]`, or the
/// mmap area (any other bracketed name, as `/proc/PID/maps` names them).
fn base_of(name: &str) -> u64 {
    match name {
        "[heap]" => HEAP_BASE,
        "[stack]" => STACK_BASE,
        n if n.starts_with('[') => MMAP_BASE,
        _ => DATA_BASE,
    }
}

/// The start address of each mapping, in the order given (`name`, size in pages): each at
/// its kind's next free address, and never below the end of the one before it plus one
/// page, so the starts ascend and no two mappings touch.
pub fn lay_out<'a>(mappings: impl IntoIterator<Item = (&'a str, u64)>) -> Vec<u64> {
    let mut next_free: Vec<(u64, u64)> = Vec::new();
    let mut prev_end = 0u64;
    mappings
        .into_iter()
        .map(|(name, pages)| {
            let base = base_of(name);
            let cursor = match next_free.iter_mut().find(|(b, _)| *b == base) {
                Some((_, c)) => c,
                None => {
                    next_free.push((base, base));
                    &mut next_free.last_mut().expect("just pushed").1
                }
            };
            let start = (*cursor).max(if prev_end == 0 {
                0
            } else {
                prev_end + PAGE_SIZE
            });
            let end = start + pages * PAGE_SIZE;
            *cursor = end + PAGE_SIZE;
            prev_end = end;
            start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_packs_with_a_page_between_and_the_image_goes_where_linux_puts_it() {
        let s = lay_out([
            ("hot", 8192),
            ("warm", 32768),
            ("[heap]", 67),
            ("[arena]", 33),
            ("[thread-stack]", 512),
            ("[stack]", 33),
        ]);
        assert_eq!(s[0], DATA_BASE);
        assert_eq!(s[1], DATA_BASE + (8192 + 1) * PAGE_SIZE);
        assert_eq!(s[2], HEAP_BASE);
        assert_eq!(s[3], MMAP_BASE);
        assert_eq!(s[4], MMAP_BASE + 34 * PAGE_SIZE);
        assert_eq!(s[5], STACK_BASE);
    }

    #[test]
    fn starts_ascend_whatever_the_order_of_kinds() {
        // A data mapping after the heap goes after the heap, not back to DATA_BASE.
        let s = lay_out([("[heap]", 10), ("a", 10), ("[stack]", 10), ("b", 4)]);
        assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:x?}");
        assert_eq!(s[1], HEAP_BASE + 11 * PAGE_SIZE);
        assert_eq!(s[3], STACK_BASE + 11 * PAGE_SIZE);
    }
}
