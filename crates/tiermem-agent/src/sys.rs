//! The system calls the agent and `tiermem exec` use (x86-64 numbers via `libc::SYS_*`):
//! `move_pages` (279), `set_mempolicy` (238), `mbind` (237), `prctl(PR_SET_MEMORY_MERGE)`,
//! `pidfd_open` (434) and `process_madvise` (440), plus the capability check.

use crate::Error;
use std::io;

/// `MPOL_MF_MOVE`: move pages mapped only by the target process.
pub const MPOL_MF_MOVE: i32 = 2;
/// `PR_SET_MEMORY_MERGE` (include/uapi/linux/prctl.h, 6.4+).
pub const PR_SET_MEMORY_MERGE: i32 = 67;
/// `MADV_COLD` / `MADV_PAGEOUT` (include/uapi/asm-generic/mman-common.h).
pub const MADV_COLD: i32 = 20;
pub const MADV_PAGEOUT: i32 = 21;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_DAC_OVERRIDE: u32 = 1;

/// A nodemask as the kernel takes it: an array of unsigned longs and a bit count.
pub fn nodemask(nodes: &[u32]) -> (Vec<libc::c_ulong>, libc::c_ulong) {
    nodemask_up_to(nodes, nodes.iter().copied().max().unwrap_or(0))
}

/// [`nodemask`] wide enough for node `max` (two masks of one call share a width).
fn nodemask_up_to(nodes: &[u32], max: u32) -> (Vec<libc::c_ulong>, libc::c_ulong) {
    let words = (max as usize + 1).div_ceil(64).max(1);
    let mut m = vec![0 as libc::c_ulong; words];
    for &n in nodes {
        m[n as usize / 64] |= 1 << (n % 64);
    }
    // maxnode counts bits; the kernel ignores the last bit in some versions (get_nodes
    // decrements maxnode), so pass one more than needed.
    (m, (words * 64 + 1) as libc::c_ulong)
}

fn check(ret: libc::c_long, call: &'static str, pid: i32) -> Result<libc::c_long, Error> {
    if ret < 0 {
        Err(Error::Syscall {
            call,
            pid,
            source: io::Error::last_os_error(),
        })
    } else {
        Ok(ret)
    }
}

/// `move_pages(pid, count, pages, nodes, status, flags)`. With `nodes = None` it only
/// queries: each status is the page's node or a negative errno (`-ENOENT`: not present,
/// `-EFAULT`: not mapped). Returns the status array.
pub fn move_pages(
    pid: i32,
    pages: &[usize],
    nodes: Option<&[i32]>,
    flags: i32,
) -> Result<Vec<i32>, Error> {
    if let Some(n) = nodes {
        assert_eq!(n.len(), pages.len(), "one target node per page");
    }
    let mut status = vec![0i32; pages.len()];
    if pages.is_empty() {
        return Ok(status);
    }
    // SAFETY: the arrays have `pages.len()` entries and outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.map_or(std::ptr::null(), |n| n.as_ptr()),
            status.as_mut_ptr(),
            flags as libc::c_long,
        )
    };
    check(r, "move_pages", pid)?;
    Ok(status)
}

/// `migrate_pages(pid, maxnode, old_nodes, new_nodes)` (what `migratepages(8)` calls): move
/// the process's pages on `from` to `to`, keeping their relative placement when the sets
/// have the same size. Returns the number of pages that could not be moved.
pub fn migrate_pages(pid: i32, from: &[u32], to: &[u32]) -> Result<u64, Error> {
    let max = from.iter().chain(to).copied().max().unwrap_or(0);
    let ((old, maxnode), (new, _)) = (nodemask_up_to(from, max), nodemask_up_to(to, max));
    // SAFETY: both masks hold `maxnode` bits and outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid as libc::c_long,
            maxnode,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    check(r, "migrate_pages", pid).map(|n| n as u64)
}

/// `set_mempolicy(mode, nodemask, maxnode)` for the calling thread (inherited across exec).
pub fn set_mempolicy(mode: i32, nodes: &[u32]) -> Result<(), Error> {
    let (mask, maxnode) = nodemask(nodes);
    let (ptr, max) = if nodes.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), maxnode)
    };
    // SAFETY: mask outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode as libc::c_long, ptr, max) };
    check(r, "set_mempolicy", 0).map(|_| ())
}

/// `get_mempolicy(&mode, nodemask, maxnode, NULL, 0)`: this thread's policy mode and nodes.
pub fn get_mempolicy() -> Result<(i32, Vec<u32>), Error> {
    const MAX_NODES: usize = 1024;
    let mut mode: libc::c_int = 0;
    let mut mask = vec![0 as libc::c_ulong; MAX_NODES / 64];
    // SAFETY: mode and mask are valid for writes of the sizes passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAX_NODES as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    check(r, "get_mempolicy", 0)?;
    let nodes = (0..MAX_NODES as u32)
        .filter(|&n| mask[n as usize / 64] & (1 << (n % 64)) != 0)
        .collect();
    Ok((mode, nodes))
}

/// `sched_getaffinity(0, …)`: the CPUs this thread may run on.
pub fn get_affinity() -> Result<Vec<u32>, Error> {
    // SAFETY: a zeroed cpu_set_t is valid; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    check(r as libc::c_long, "sched_getaffinity", 0)?;
    Ok((0..libc::CPU_SETSIZE as u32)
        // SAFETY: c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect())
}

/// `sched_setaffinity(0, …)`: run this thread (and what it execs) only on `cpus`.
pub fn set_affinity(cpus: &[u32]) -> Result<(), Error> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it (ids are checked
    // against CPU_SETSIZE first).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(Error::Other(format!(
                "CPU {c} is beyond CPU_SETSIZE ({})",
                libc::CPU_SETSIZE
            )));
        }
        // SAFETY: c < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    check(r as libc::c_long, "sched_setaffinity", 0).map(|_| ())
}

/// `mbind(addr, len, mode, nodemask, maxnode, flags)`.
///
/// # Safety
/// `addr..addr+len` must be a mapping owned by the caller.
pub unsafe fn mbind(
    addr: *mut libc::c_void,
    len: usize,
    mode: i32,
    nodes: &[u32],
    flags: u32,
) -> Result<(), Error> {
    let (mask, maxnode) = nodemask(nodes);
    let r = libc::syscall(
        libc::SYS_mbind,
        addr,
        len as libc::c_ulong,
        mode as libc::c_long,
        mask.as_ptr(),
        maxnode,
        flags as libc::c_ulong,
    );
    check(r, "mbind", 0).map(|_| ())
}

/// `prctl(PR_SET_MEMORY_MERGE, 1)`: every current and future anonymous VMA of this process
/// becomes mergeable by KSM (inherited across fork and exec).
pub fn set_memory_merge() -> Result<(), Error> {
    // SAFETY: plain prctl with integer arguments.
    let r = unsafe { libc::prctl(PR_SET_MEMORY_MERGE, 1 as libc::c_ulong, 0, 0, 0) };
    check(r as libc::c_long, "prctl(PR_SET_MEMORY_MERGE)", 0).map(|_| ())
}

/// `process_madvise(pidfd, iov, n, advice, 0)` over the given ranges; returns bytes advised.
pub fn process_madvise(pid: i32, ranges: &[(usize, usize)], advice: i32) -> Result<usize, Error> {
    // SAFETY: pidfd_open takes a pid and flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) };
    let fd = check(fd, "pidfd_open", pid)? as i32;
    let iov: Vec<libc::iovec> = ranges
        .iter()
        .map(|&(start, len)| libc::iovec {
            iov_base: start as *mut libc::c_void,
            iov_len: len,
        })
        .collect();
    let mut done = 0usize;
    // UIO_MAXIOV is 1024 per call.
    for chunk in iov.chunks(1024) {
        // SAFETY: iov entries describe the target's address space; the kernel validates them.
        let r = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                fd as libc::c_long,
                chunk.as_ptr(),
                chunk.len() as libc::c_ulong,
                advice as libc::c_long,
                0 as libc::c_ulong,
            )
        };
        match check(r, "process_madvise", pid) {
            Ok(n) => done += n as usize,
            Err(e) => {
                // SAFETY: fd is ours.
                unsafe { libc::close(fd) };
                return Err(e);
            }
        }
    }
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    Ok(done)
}

/// The effective capability set of this process (`CapEff` in `/proc/self/status`).
pub fn effective_caps(fs: &crate::fs::HostFs) -> Option<u64> {
    let s = fs.read_opt("/proc/self/status").ok()??;
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// Refuse with the capability's name when it is missing.
pub fn require_cap(fs: &crate::fs::HostFs, cap: u32, name: &str, what: &str) -> Result<(), Error> {
    match effective_caps(fs) {
        Some(c) if c & (1 << cap) != 0 => Ok(()),
        Some(_) => Err(Error::Capability {
            what: what.to_string(),
            capability: name.to_string(),
        }),
        None => Ok(()),
    }
}

/// An anonymous mapping whose pages are bound to one node (for the bandwidth probe).
pub struct NodeBuffer {
    ptr: *mut libc::c_void,
    len: usize,
}

impl NodeBuffer {
    pub fn new_on_node(len: usize, node: u32) -> Result<Self, Error> {
        // SAFETY: anonymous private mapping; checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Syscall {
                call: "mmap",
                pid: 0,
                source: io::Error::last_os_error(),
            });
        }
        let buf = NodeBuffer { ptr, len };
        // MPOL_BIND = 2; MPOL_MF_STRICT | MPOL_MF_MOVE so nothing lands elsewhere.
        // SAFETY: the mapping is ours.
        unsafe { mbind(ptr, len, 2, &[node], 1 | 2)? };
        Ok(buf)
    }
    pub fn as_f64_ptr(&self) -> *mut f64 {
        self.ptr as *mut f64
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for NodeBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodemask_bits() {
        let (m, max) = nodemask(&[0, 2]);
        assert_eq!(m, vec![0b101]);
        assert_eq!(max, 65);
        let (m, _) = nodemask(&[65]);
        assert_eq!(m, vec![0, 2]);
    }

    #[test]
    fn move_pages_query_on_self() {
        // Query-only move_pages on our own page: node 0 or an errno, never a failure of the call
        // (containers may forbid it with EPERM; then skip).
        let v = vec![1u8; 4096 * 2];
        let page = (v.as_ptr() as usize) & !4095;
        match move_pages(0, &[page], None, 0) {
            Ok(st) => assert!(st[0] >= 0 || st[0] == -libc::ENOENT, "{st:?}"),
            Err(e) => eprintln!("move_pages not permitted here: {e}"),
        }
    }

    #[test]
    fn caps_parse_and_missing_cap_is_named() {
        let t = crate::fs::fake::FakeTree::new()
            .file("/proc/self/status", "CapEff:\t0000000000000000\n");
        let e = require_cap(
            &t.fs(),
            CAP_SYS_NICE,
            "CAP_SYS_NICE",
            "moving pages of other processes",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("CAP_SYS_NICE"), "{e}");
        let t2 = crate::fs::fake::FakeTree::new()
            .file("/proc/self/status", "CapEff:\t000001ffffffffff\n");
        assert!(require_cap(&t2.fs(), CAP_SYS_NICE, "CAP_SYS_NICE", "x").is_ok());
    }
}
