//! Accessed bits and faulting touches of pages whose accesses are not simulated one by one:
//! the kernel side of the page-event engine (`crate::engine::events`).
//!
//! A process driven by a stationary pattern touches page i with probability p_i per access,
//! independently of every other access, so the accesses that touch page i form a Bernoulli
//! process on the process's access count. Two things follow without simulating them:
//!
//! * **The accessed bit.** A cleared bit stays clear until the first touch after the clear.
//!   Each page keeps the process's access count at its last clear (`stamps`); a reader
//!   (`folio_referenced`, DAMON's `damon_folio_young` and mkold) asks whether the first
//!   touch since then has come: it has with probability 1 − (1 − p_i)^Δ after Δ accesses.
//!   The draw is one uniform number per (page, stamp), a hash of them, so the answer is the
//!   same whoever asks first and how often, and grows monotonically with Δ, as a real bit
//!   does.
//! * **Touches that fault.** A page made `PROT_NONE` by the NUMA scanner or swapped out
//!   faults at its next touch. The kernel notes such pages here (`note_will_fault`) with a
//!   generation number; the engine draws each one's next touch and runs the same fault
//!   handler then, if the generation still matches (a page swapped out after it was marked,
//!   say, has a newer one).
//!
//! Everything else about such a page (where it is, its LRU list, its flags) is the access
//! engine's state, changed by the same kernel code.

use crate::mm::mem::{prefetch, PTE_ACCESSED};
use crate::mm::Kernel;

/// A page distribution: per page index of a process, the probability that one access
/// touches it (built by `crate::workload::pmf`).
pub type Pmf = std::sync::Arc<[f32]>;

/// Stamps keep the access count divided by 16 in 32 bits: counts up to 6.9 × 10¹⁰ accesses
/// of one process (over three hours at 6 M accesses a second).
const STAMP_SHIFT: u32 = 4;

/// The lazily read pages of every process that has them.
#[derive(Default)]
pub struct LazyAccess {
    procs: Vec<Option<LazyProc>>,
    /// Pages noted since the engine last took them: (process, page, generation).
    will_fault: Vec<(u16, u32, u8)>,
}

struct LazyProc {
    /// Per page of the process, the probability that one access touches it.
    pmf: Pmf,
    /// The process's accesses since the switch to lazy reading.
    count: u64,
    /// `count >> STAMP_SHIFT` at each page's last accessed-bit clear.
    stamps: Vec<u32>,
    /// Incremented each time the page is noted as faulting at its next touch.
    gen: Vec<u8>,
    salt: u64,
}

/// A uniform number in [0, 1) from a 64-bit key (SplitMix64's finaliser).
pub fn unit_hash(z: u64) -> f64 {
    use tiermem_core::synthetic::{splitmix64, unit};
    unit(splitmix64(z))
}

/// How far the bounds of [`touch_bounds`] are kept from the computed probability: far
/// beyond its rounding error (~1e-15), so a decision by the bounds is the exact formula's.
const BOUND_MARGIN: f64 = 1e-9;

/// Bounds on 1 − (1 − p)^Δ without transcendental functions, which decide most reads of an
/// accessed bit (the exact formula's log and exp were a tenth of a full-size profile).
/// With x = Δp and y = Δp / (1 − p): −p/(1 − p) ≤ ln(1 − p) ≤ −p, so the probability lies
/// between 1 − e^−x and 1 − e^−y; and 1 − e^−x ≥ 1 − 1/(1 + x + x²/2 + x³/6) (e^x is at
/// least its cubic Taylor polynomial), 1 − e^−y ≤ y − y²/2 + y³/6 (the alternating series'
/// remainder is positive). `None` for p ≥ 1/2, where the exact formula is used.
fn touch_bounds(p: f64, delta: f64) -> Option<(f64, f64)> {
    if p >= 0.5 {
        return None;
    }
    let x = delta * p;
    let y = x / (1.0 - p);
    let low = 1.0 - 1.0 / (1.0 + x * (1.0 + x * (0.5 + x / 6.0)));
    let high = (y * (1.0 - y * (0.5 - y / 6.0))).min(1.0);
    Some((low, high))
}

impl LazyProc {
    /// Whether the first touch after the page's last clear has happened by now.
    fn touched_since_clear(&self, idx: u32) -> bool {
        let p = self.pmf.get(idx as usize).copied().unwrap_or(0.0) as f64;
        if p <= 0.0 {
            return false;
        }
        let stamp = self.stamps[idx as usize];
        let delta = self.count.saturating_sub((stamp as u64) << STAMP_SHIFT) as f64;
        let u = unit_hash(self.salt ^ ((idx as u64) << 32) ^ stamp as u64);
        // P(touched within Δ accesses) = 1 − (1 − p)^Δ.
        match touch_bounds(p, delta) {
            Some((low, _)) if u < low - BOUND_MARGIN => true,
            Some((_, high)) if u > high + BOUND_MARGIN => false,
            _ => u < -(delta * (-p).ln_1p()).exp_m1(),
        }
    }

    fn clear(&mut self, idx: u32) {
        self.stamps[idx as usize] = (self.count >> STAMP_SHIFT) as u32;
    }
}

impl Kernel {
    /// Read process `proc`'s accessed bits lazily from now on, with its page distribution.
    /// Every bit clear now counts as cleared now.
    pub fn lazy_enable(&mut self, proc: u16, pmf: Pmf, salt: u64) {
        let pages = self.procs[proc as usize].ptes.len();
        let lazy = self.lazy.get_or_insert_with(Default::default);
        if lazy.procs.len() <= proc as usize {
            lazy.procs.resize_with(proc as usize + 1, || None);
        }
        if lazy.procs[proc as usize].is_none() {
            lazy.procs[proc as usize] = Some(LazyProc {
                pmf,
                count: 0,
                stamps: vec![0; pages],
                gen: vec![0; pages],
                salt,
            });
        }
    }

    fn lazy_proc(&self, proc: usize) -> Option<&LazyProc> {
        self.lazy.as_ref()?.procs.get(proc)?.as_ref()
    }

    fn lazy_proc_mut(&mut self, proc: usize) -> Option<&mut LazyProc> {
        self.lazy.as_mut()?.procs.get_mut(proc)?.as_mut()
    }

    /// `n` more accesses of process `proc` (the engine's aggregate steps).
    pub fn lazy_add_accesses(&mut self, proc: u16, n: u64) {
        if let Some(lp) = self.lazy_proc_mut(proc as usize) {
            lp.count += n;
        }
    }

    /// The pages noted as faulting at their next touch since the last call.
    pub fn lazy_take_will_fault(&mut self) -> Vec<(u16, u32, u8)> {
        self.lazy
            .as_mut()
            .map(|l| std::mem::take(&mut l.will_fault))
            .unwrap_or_default()
    }

    /// The page's current generation (`None` when the process is not lazy).
    pub fn lazy_gen(&self, proc: u16, idx: u32) -> Option<u8> {
        self.lazy_proc(proc as usize).map(|lp| lp.gen[idx as usize])
    }

    /// Every page's generation of a lazy process (for prefetching).
    pub fn lazy_gens(&self, proc: u16) -> Option<&[u8]> {
        self.lazy_proc(proc as usize).map(|lp| &lp.gen[..])
    }

    /// A page of a lazy process now faults at its next touch (made `PROT_NONE`, swapped
    /// out): note it for the engine, under a new generation.
    pub(super) fn note_will_fault(&mut self, proc: usize, idx: u32) {
        let Some(lazy) = self.lazy.as_mut() else {
            return;
        };
        let Some(Some(lp)) = lazy.procs.get_mut(proc) else {
            return;
        };
        let g = &mut lp.gen[idx as usize];
        *g = g.wrapping_add(1);
        lazy.will_fault.push((proc as u16, idx, *g));
    }

    /// `ptep_test_and_clear_young`: whether the page was accessed since its bit was last
    /// cleared; clears it.
    pub(super) fn test_and_clear_young(&mut self, proc: usize, idx: u32) -> bool {
        let young = self.pte_young(proc, idx);
        self.clear_young(proc, idx);
        young
    }

    /// `pte_young`: the accessed bit, set first if a lazy page's first touch since its
    /// last clear has come.
    pub(super) fn pte_young(&mut self, proc: usize, idx: u32) -> bool {
        let pte = &mut self.procs[proc].ptes[idx as usize];
        if *pte & PTE_ACCESSED != 0 {
            return true;
        }
        let touched = self
            .lazy_proc(proc)
            .is_some_and(|lp| lp.touched_since_clear(idx));
        if touched {
            self.procs[proc].ptes[idx as usize] |= PTE_ACCESSED;
        }
        touched
    }

    /// Start loading what `pte_young` and `clear_young` will read of a page: its PTE and,
    /// for a lazily read page, its probability and stamp.
    pub(super) fn prefetch_young(&self, proc: usize, idx: u32) {
        let Some(p) = self.procs.get(proc) else {
            return;
        };
        prefetch(&p.ptes, idx as usize);
        if let Some(lp) = self.lazy_proc(proc) {
            prefetch(&lp.pmf, idx as usize);
            prefetch(&lp.stamps, idx as usize);
        }
    }

    /// `pte_mkold`: clear the accessed bit (a lazy page's next touch is drawn from now).
    pub(super) fn clear_young(&mut self, proc: usize, idx: u32) {
        self.procs[proc].ptes[idx as usize] &= !PTE_ACCESSED;
        if let Some(lp) = self.lazy_proc_mut(proc) {
            lp.clear(idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc_with(p: f32, pages: usize) -> LazyProc {
        LazyProc {
            pmf: vec![p; pages].into(),
            count: 0,
            stamps: vec![0; pages],
            gen: vec![0; pages],
            salt: 42,
        }
    }

    #[test]
    fn the_bit_sets_with_the_probability_of_a_touch_and_stays_set() {
        // p = 1/1000 per access; after 1000 accesses a page was touched with
        // probability 1 − (1 − 1/1000)^1000 ≈ 0.632.
        let mut lp = proc_with(1e-3, 20_000);
        lp.count = 1000;
        let young = (0..20_000).filter(|&i| lp.touched_since_clear(i)).count();
        let frac = young as f64 / 20_000.0;
        assert!((frac - 0.632).abs() < 0.015, "{frac}");
        // Monotone: a page touched by 1000 accesses is touched by 2000.
        let before: Vec<bool> = (0..1000).map(|i| lp.touched_since_clear(i)).collect();
        lp.count = 2000;
        for (i, &b) in before.iter().enumerate() {
            assert!(!b || lp.touched_since_clear(i as u32));
        }
        // A clear starts over: nothing is touched zero accesses after it.
        for i in 0..1000 {
            lp.clear(i);
            assert!(!lp.touched_since_clear(i));
        }
    }

    #[test]
    fn the_bounds_enclose_the_exact_probability() {
        for &p in &[1e-9_f64, 1e-6, 1e-4, 1e-2, 0.1, 0.3, 0.49] {
            for &delta in &[0.0, 1.0, 3.0, 10.0, 1e2, 1e3, 1e4, 1e6, 1e8, 1e10] {
                let exact = -(delta * (-p).ln_1p()).exp_m1();
                let (low, high) = touch_bounds(p, delta).unwrap();
                assert!(
                    low <= exact + 1e-15 && exact <= high + 1e-15,
                    "{p} {delta}: {low} {exact} {high}"
                );
            }
        }
    }

    #[test]
    fn pages_outside_the_distribution_are_never_touched() {
        let mut lp = proc_with(0.0, 10);
        lp.count = u64::MAX >> 8;
        assert!((0..10).all(|i| !lp.touched_since_clear(i)));
        // An index beyond the distribution (another VMA) has probability 0.
        assert!(!lp.touched_since_clear(11));
    }
}
