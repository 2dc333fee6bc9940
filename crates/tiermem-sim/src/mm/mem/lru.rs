//! The LRU lists of a node (`lruvec`'s `LRU_INACTIVE_ANON`, `LRU_ACTIVE_ANON`,
//! `LRU_INACTIVE_FILE`, `LRU_ACTIVE_FILE`), kept as queues of frame numbers rather than lists linked through the frames.
//!
//! The kernel links folios through `folio->lru`. A linked list in the simulator costs two
//! dependent cache misses per unlink (the neighbours) and one per page that reclaim takes
//! off the tail, in frame tables of hundreds of megabytes; at full size that was the largest
//! item of a profile. Here a list is a queue of the frames in the order they were added,
//! oldest first, and each frame remembers its position in the queue (`Frame::lru_pos`):
//!
//! * adding at the head pushes at the back of the queue;
//! * unlinking a frame only clears its list flag: the queue's entry goes stale, and is
//!   dropped when it reaches the front, or when stale entries come to outnumber live ones
//!   (the queue is then compacted, keeping the live entries' order);
//! * the tail is the first live entry from the front, and the frames of the next entries
//!   can be loaded ahead, since the queue says which they are.
//!
//! The live entries are always in the order the linked list would hold, so reclaim sees the
//! same pages in the same order.

use super::{prefetch, Frame, F_LRU_ACTIVE, F_LRU_FILE, F_LRU_INACTIVE, LRU_BITS};
use std::collections::VecDeque;

/// Which LRU list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lru {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
}

impl Lru {
    /// The frame flags of a page on this list: exactly these of [`LRU_BITS`] are set (a
    /// queue entry is live only on an exact match, so a frame moved from an anon list to
    /// the file list of the same activity never looks live on the first).
    pub(super) fn flag(self) -> u8 {
        match self {
            Lru::InactiveAnon => F_LRU_INACTIVE,
            Lru::ActiveAnon => F_LRU_ACTIVE,
            Lru::InactiveFile => F_LRU_INACTIVE | F_LRU_FILE,
            Lru::ActiveFile => F_LRU_ACTIVE | F_LRU_FILE,
        }
    }

    /// The list a frame's flags place it on.
    #[inline]
    pub(super) fn of_flags(flags: u8) -> Option<Lru> {
        match flags & LRU_BITS {
            F_LRU_INACTIVE => Some(Lru::InactiveAnon),
            F_LRU_ACTIVE => Some(Lru::ActiveAnon),
            x if x == F_LRU_INACTIVE | F_LRU_FILE => Some(Lru::InactiveFile),
            x if x == F_LRU_ACTIVE | F_LRU_FILE => Some(Lru::ActiveFile),
            _ => None,
        }
    }

    /// A page-cache list (`is_file_lru`).
    pub fn is_file(self) -> bool {
        matches!(self, Lru::InactiveFile | Lru::ActiveFile)
    }

    /// The active list of this list's type.
    pub fn active(self) -> Lru {
        if self.is_file() {
            Lru::ActiveFile
        } else {
            Lru::ActiveAnon
        }
    }

    /// The inactive list of this list's type.
    pub fn inactive(self) -> Lru {
        if self.is_file() {
            Lru::InactiveFile
        } else {
            Lru::InactiveAnon
        }
    }
}

/// Stale entries a queue may hold beyond half as many as it has live ones before compaction
/// (few in tests, so that they compact often).
const STALE_SLACK: usize = if cfg!(test) { 8 } else { 1024 };

/// How many entries ahead of the front the tail lookup starts loading frames.
const TAIL_PREFETCH: usize = 8;

/// One list: its frames oldest first, stale entries among them.
#[derive(Clone, Debug, Default)]
pub(super) struct LruList {
    queue: VecDeque<u32>,
    /// The position of `queue[0]`. Positions number the additions (wrapping); the queue
    /// never holds 2³² entries, so a position names one entry.
    front: u32,
    /// Frames on the list (live entries).
    len: u64,
}

impl LruList {
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Host bytes held by the queue.
    pub(super) fn host_bytes(&self) -> usize {
        self.queue.capacity() * std::mem::size_of::<u32>()
    }

    /// Whether the entry at `pos` naming `f` is live: the frame is on this list, at `pos`.
    fn live(f: &Frame, flag: u8, pos: u32) -> bool {
        f.flags & LRU_BITS == flag && f.lru_pos == pos
    }

    /// Add `pfn` at the head (most recent end).
    pub(super) fn add(&mut self, frames: &mut [Frame], list: Lru, pfn: u32) {
        let f = &mut frames[pfn as usize];
        debug_assert!(f.flags & LRU_BITS == 0, "pfn {pfn} already on an LRU");
        f.lru_pos = self.front.wrapping_add(self.queue.len() as u32);
        f.flags |= list.flag();
        if self.queue.len() == self.queue.capacity() {
            // Grow by an eighth, not by doubling: the queue stays within a few percent of
            // its entries (lists of millions of frames).
            self.queue
                .reserve_exact((self.queue.len() / 8).max(STALE_SLACK));
        }
        self.queue.push_back(pfn);
        self.len += 1;
    }

    /// Add `pfn` at the tail (the oldest end): `lru_move_tail`.
    pub(super) fn add_tail(&mut self, frames: &mut [Frame], list: Lru, pfn: u32) {
        let f = &mut frames[pfn as usize];
        debug_assert!(f.flags & LRU_BITS == 0, "pfn {pfn} already on an LRU");
        self.front = self.front.wrapping_sub(1);
        f.lru_pos = self.front;
        f.flags |= list.flag();
        self.queue.push_front(pfn);
        self.len += 1;
    }

    /// Take `pfn` (on this list) off it.
    pub(super) fn del(&mut self, frames: &mut [Frame], list: Lru, pfn: u32) {
        let f = &mut frames[pfn as usize];
        f.flags &= !LRU_BITS;
        self.len -= 1;
        if self.queue.front() == Some(&pfn) && f.lru_pos == self.front {
            self.pop_front();
        } else if self.queue.len() > 3 * self.len as usize / 2 + STALE_SLACK {
            self.compact(frames, list);
        }
    }

    /// The oldest frame on the list; stale entries before it are dropped.
    pub(super) fn tail(&mut self, frames: &[Frame], list: Lru) -> Option<u32> {
        let flag = list.flag();
        loop {
            let &pfn = self.queue.front()?;
            if let Some(&ahead) = self.queue.get(TAIL_PREFETCH) {
                prefetch(frames, ahead as usize);
            }
            if Self::live(&frames[pfn as usize], flag, self.front) {
                return Some(pfn);
            }
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        self.queue.pop_front();
        self.front = self.front.wrapping_add(1);
    }

    /// Drop the stale entries, keeping the live ones in order and renumbering them from
    /// the front. The queue's memory shrinks back when it is mostly empty.
    fn compact(&mut self, frames: &mut [Frame], list: Lru) {
        let flag = list.flag();
        let front = self.front;
        let queue = self.queue.make_contiguous();
        let mut kept = 0;
        for read in 0..queue.len() {
            if let Some(&ahead) = queue.get(read + TAIL_PREFETCH) {
                prefetch(frames, ahead as usize);
            }
            let pfn = queue[read];
            let f = &mut frames[pfn as usize];
            if Self::live(f, flag, front.wrapping_add(read as u32)) {
                f.lru_pos = front.wrapping_add(kept as u32);
                queue[kept] = pfn;
                kept += 1;
            }
        }
        self.queue.truncate(kept);
        if self.queue.capacity() > 4 * (kept + STALE_SLACK) {
            self.queue.shrink_to(2 * (kept + STALE_SLACK));
        }
        debug_assert_eq!(kept as u64, self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::super::NodeMem;
    use super::*;
    use proptest::prelude::*;
    use tiermem_core::units::Pages;

    #[test]
    fn stale_entries_are_compacted_away_keeping_the_order() {
        let mut n = NodeMem::new(Pages(4096));
        let pfns: Vec<u32> = (0..4096).map(|i| n.take_frame(0, i)).collect();
        for &p in &pfns {
            n.lru_add(Lru::InactiveAnon, p);
        }
        // Unlink all but every 100th, never the tail: only compaction drops the entries.
        for (i, &p) in pfns.iter().enumerate() {
            if i % 100 != 0 {
                n.lru_del(p);
            }
        }
        let q = &n.lru[Lru::InactiveAnon as usize];
        assert_eq!(q.len(), 41);
        assert!(q.queue.len() <= 2 * 41 + STALE_SLACK, "{}", q.queue.len());
        let mut order = Vec::new();
        while let Some(t) = n.lru_tail(Lru::InactiveAnon) {
            n.lru_del(t);
            order.push(t);
        }
        let expected: Vec<u32> = pfns.iter().copied().step_by(100).collect();
        assert_eq!(order, expected);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
        /// Against doubly linked lists held as plain vectors: every tail, length and list
        /// membership agrees after any sequence of additions at either end, unlinks and tail
        /// isolations on the four lists, through compactions (the slack is small in tests).
        #[test]
        fn queues_behave_as_linked_lists(ops in proptest::collection::vec((0u8..12, 0u32..200), 1..4000)) {
            const FRAMES: u32 = 200;
            let mut n = NodeMem::new(Pages(FRAMES as u64));
            let pfns: Vec<u32> = (0..FRAMES).map(|i| n.take_frame(0, i)).collect();
            // Reference lists, oldest first.
            let mut reference: [Vec<u32>; 4] = Default::default();
            let lists = [Lru::InactiveAnon, Lru::ActiveAnon, Lru::InactiveFile, Lru::ActiveFile];
            for (op, x) in ops {
                let pfn = pfns[x as usize];
                let l = (x % 4) as usize;
                // Additions and unlinks outnumber tail isolations, so stale entries pile up
                // behind the front and compactions happen.
                match op {
                    0..=3 => {
                        if n.lru_of(pfn).is_none() {
                            n.lru_add(lists[op as usize], pfn);
                            reference[op as usize].push(pfn);
                        }
                    }
                    4 => {
                        if n.lru_of(pfn).is_none() {
                            n.lru_add_tail(lists[l], pfn);
                            reference[l].insert(0, pfn);
                        }
                    }
                    5..=9 => {
                        n.lru_del(pfn);
                        for r in &mut reference {
                            r.retain(|&p| p != pfn);
                        }
                    }
                    _ => {
                        let tail = n.lru_tail(lists[l]);
                        prop_assert_eq!(tail, reference[l].first().copied());
                        if let Some(t) = tail {
                            n.lru_del(t);
                            reference[l].remove(0);
                        }
                    }
                }
                for l in 0..4 {
                    prop_assert_eq!(n.lru_len(lists[l]), reference[l].len() as u64);
                }
            }
            // Draining each list from its tail gives the reference order.
            for l in 0..4 {
                let mut drained = Vec::new();
                while let Some(t) = n.lru_tail(lists[l]) {
                    n.lru_del(t);
                    drained.push(t);
                }
                prop_assert_eq!(&drained, &reference[l]);
            }
        }
    }
}
