#!/usr/bin/env python3
"""Record which of a program's anonymous pages it touches in each interval, on a real kernel.

    sudo scripts/reaccess-probe.py --interval 1 --out DIR [--zram 8G] -- PROGRAM ARGS...

Why: DAMON's published heatmaps show where a program's accesses are dense, but its region
sampling misses light accesses, and light accesses are what make a paged-out page come back
(a refault). This probe finds every access at page granularity instead: at each tick it reads
the program's page table (/proc/PID/pagemap), notes which anonymous pages are present, and
pages them all out again (process_madvise(MADV_PAGEOUT), the same reclaim_pages() path DAMON's
pageout action takes). A page present at the next tick was touched in between (it was swapped
back in, or first touched). The swap device should be zram, so a swap-in costs microseconds.

It needs root (pagemap's exclusive bit, process_madvise on another process) and an active swap
device; `--zram SIZE` sets up /dev/zram0 as swap for the run and removes it afterwards, and is
refused if zram0 is already in use. The host's state is restored on exit, also on errors.

Pages that are read but never written map the shared zero page (pagemap: present, not
exclusive); they are counted apart and never counted as touched.

Output (DIR):
  ticks.tsv     one row per tick: time, anonymous pages present/swapped/mapping the zero
                page, touched, the program's major faults, the probe's own time and, when
                the swap is /dev/zram0, zram's mm_stat after the tick's pageout: bytes
                stored (orig_data_size), their compressed size, the memory zram uses for
                them (mem_used_total) and its same-filled and incompressible ("huge") pages,
                and /proc/vmstat's pswpout and swpout_zero (zero-filled pages, which the
                swap layer of 6.12+ keeps out of zram): how well the program's data
                compresses
  touched.npz   per tick, the touched pages as runs (start page, length), page numbers
                of the virtual address space
  meta.json     the command, interval, kernel, swap device, runtime, exit status
  program.log   the program's output
Read it with scripts/reaccess-stats.py.
"""

import argparse
import ctypes
import json
import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE")
SYS_PIDFD_OPEN = 434
SYS_PROCESS_MADVISE = 440
MADV_PAGEOUT = 21
PM_PRESENT = np.uint64(1 << 63)
PM_SWAP = np.uint64(1 << 62)
PM_FILE = np.uint64(1 << 61)
PM_EXCLUSIVE = np.uint64(1 << 56)
IOV_MAX = 1024

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class ProbeError(Exception):
    pass


def fail(msg):
    print(f"reaccess-probe: error: {msg}", file=sys.stderr)
    sys.exit(2)


def anon_vmas(pid):
    """Private anonymous writable mappings (heap, mmap'd arenas, stack) as (start, end)."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            start, end = (int(x, 16) for x in parts[0].split("-"))
            perms, inode = parts[1], parts[4]
            name = parts[5] if len(parts) > 5 else ""
            if "w" not in perms or perms[3] != "p" or inode != "0":
                continue
            if name.startswith("[") and name not in ("[heap]", "[stack]"):
                continue  # [vvar], [vdso], ...
            out.append((start, end))
    return out


def read_pagemap(fd, start, end):
    n = (end - start) // PAGE
    buf = os.pread(fd, n * 8, (start // PAGE) * 8)
    return np.frombuffer(buf, dtype=np.uint64)


def runs_of(pages):
    """Sorted page numbers -> (starts, lengths) of consecutive runs."""
    if pages.size == 0:
        return np.empty(0, np.uint64), np.empty(0, np.uint32)
    breaks = np.flatnonzero(np.diff(pages) != 1) + 1
    starts = pages[np.r_[0, breaks]]
    ends = np.r_[breaks, pages.size]
    lens = np.diff(np.r_[0, ends]).astype(np.uint32)
    return starts.astype(np.uint64), lens


def pageout(pidfd, ranges):
    for i in range(0, len(ranges), IOV_MAX):
        chunk = ranges[i:i + IOV_MAX]
        iov = (Iovec * len(chunk))(*[Iovec(s, e - s) for s, e in chunk])
        r = libc.syscall(SYS_PROCESS_MADVISE, pidfd, iov, len(chunk), MADV_PAGEOUT, 0)
        if r < 0:
            err = ctypes.get_errno()
            if err == 3:  # ESRCH: the program exited
                return
            raise ProbeError(f"process_madvise(MADV_PAGEOUT): {os.strerror(err)}")


def major_faults(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[9])


class Zram:
    """/dev/zram0 as a swap device for the run; removed again on exit."""

    def __init__(self, size):
        self.size = size
        self.active = False

    def __enter__(self):
        blk = "/sys/block/zram0"
        if not os.path.exists(blk):
            fail("--zram: /sys/block/zram0 does not exist (modprobe zram)")
        if open(f"{blk}/disksize").read().strip() != "0":
            fail("--zram: /dev/zram0 is already set up; refusing to touch it")
        try:
            with open(f"{blk}/disksize", "w") as f:
                f.write(self.size)
        except OSError as e:
            fail(f"--zram {self.size}: /sys/block/zram0/disksize refused it ({e.strerror}); "
                 "give a size such as 8G")
        self.active = True
        try:
            subprocess.run(["mkswap", "/dev/zram0"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["swapon", "-p", "100", "/dev/zram0"], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            self.__exit__()
            fail(f"--zram: setting up /dev/zram0 as swap failed ({e}); it is reset again")
        return self

    def __exit__(self, *exc):
        if self.active:
            subprocess.run(["swapoff", "/dev/zram0"], check=False, stderr=subprocess.DEVNULL)
            with open("/sys/block/zram0/reset", "w") as f:
                f.write("1")
            self.active = False


ZRAM_MM_STAT = "/sys/block/zram0/mm_stat"
# Columns of mm_stat kept (Documentation/admin-guide/blockdev/zram.rst, field order).
ZRAM_FIELDS = {"zram_orig_bytes": 0, "zram_compr_bytes": 1, "zram_used_bytes": 2,
               "zram_same_pages": 5, "zram_huge_pages": 7}


SWAP_COUNTERS = ("pswpout", "swpout_zero")


def swap_counters():
    """/proc/vmstat's pages written to swap and zero-filled pages swapped out without a
    write (the swap zeromap, Linux 6.12+; 0 before), system-wide."""
    got = dict.fromkeys(SWAP_COUNTERS, 0)
    with open("/proc/vmstat") as f:
        for line in f:
            k, _, v = line.partition(" ")
            if k in got:
                got[k] = int(v)
    return tuple(got[k] for k in SWAP_COUNTERS)


def zram_stat():
    """zram0's mm_stat fields kept in ticks.tsv, or None when zram0 is not the swap."""
    try:
        with open(ZRAM_MM_STAT) as f:
            v = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return None
    if len(v) <= max(ZRAM_FIELDS.values()):
        return None
    return tuple(v[i] for i in ZRAM_FIELDS.values())


def swap_devices():
    with open("/proc/swaps") as f:
        return [line.split()[0] for line in f.readlines()[1:]]


def probe(args):
    os.makedirs(args.out, exist_ok=True)
    swaps = swap_devices()
    if not swaps:
        fail("no active swap device: pages cannot be paged out (give --zram SIZE)")
    if not any("zram" in d for d in swaps):
        print(f"reaccess-probe: warning: swap is {', '.join(swaps)}, not zram: every swap-in "
              "goes to a device and slows the program far more", file=sys.stderr)
    with_zram = "/dev/zram0" in swaps and zram_stat() is not None
    counters_at_start = swap_counters()
    t0 = time.monotonic()
    log = open(os.path.join(args.out, "program.log"), "w")
    proc = subprocess.Popen(args.command, stdout=log, stderr=subprocess.STDOUT)
    pidfd = libc.syscall(SYS_PIDFD_OPEN, proc.pid, 0)
    if pidfd < 0:
        proc.kill()
        fail(f"pidfd_open: {os.strerror(ctypes.get_errno())}")
    pm = os.open(f"/proc/{proc.pid}/pagemap", os.O_RDONLY)
    rows, starts, lens, offsets = [], [], [], [0]
    next_tick = t0 + args.interval
    try:
        while proc.poll() is None:
            time.sleep(max(0.0, next_tick - time.monotonic()))
            next_tick += args.interval
            if proc.poll() is not None:
                break
            w0 = time.monotonic()
            try:
                vmas = anon_vmas(proc.pid)
                touched, present, swapped, zero = [], 0, 0, 0
                for s, e in vmas:
                    pm_e = read_pagemap(pm, s, e)
                    pres = (pm_e & PM_PRESENT) != 0
                    excl = (pm_e & PM_EXCLUSIVE) != 0
                    anon = (pm_e & PM_FILE) == 0
                    own = pres & excl & anon
                    zero += int(np.count_nonzero(pres & ~excl))
                    present += int(np.count_nonzero(own))
                    swapped += int(np.count_nonzero((pm_e & PM_SWAP) != 0))
                    touched.append(np.flatnonzero(own).astype(np.uint64) + np.uint64(s // PAGE))
                faults = major_faults(proc.pid)
                pageout(pidfd, vmas)
            except (FileNotFoundError, ProcessLookupError):
                break  # the program exited during the tick
            pages = np.concatenate(touched) if touched else np.empty(0, np.uint64)
            st, ln = runs_of(pages)
            starts.append(st)
            lens.append(ln)
            offsets.append(offsets[-1] + st.size)
            row = (w0 - t0, present, swapped, zero, int(pages.size), faults,
                   time.monotonic() - w0)
            if with_zram:
                row += (zram_stat() or (0,) * len(ZRAM_FIELDS)) + swap_counters()
            rows.append(row)
    finally:
        if proc.poll() is None:
            proc.kill()
        status = proc.wait()
        os.close(pm)
        os.close(pidfd)
        log.close()
    runtime = time.monotonic() - t0
    with open(os.path.join(args.out, "ticks.tsv"), "w") as f:
        cols = ["t_s", "present", "swapped", "zero", "touched", "major_faults", "probe_s"]
        fmt = "%.3f\t%d\t%d\t%d\t%d\t%d\t%.4f"
        if with_zram:
            cols += list(ZRAM_FIELDS) + list(SWAP_COUNTERS)
            fmt += "\t%d" * (len(ZRAM_FIELDS) + len(SWAP_COUNTERS))
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write(fmt % r + "\n")
    np.savez_compressed(os.path.join(args.out, "touched.npz"),
                        starts=np.concatenate(starts) if starts else np.empty(0, np.uint64),
                        lens=np.concatenate(lens) if lens else np.empty(0, np.uint32),
                        offsets=np.array(offsets, np.uint64),
                        t=np.array([r[0] for r in rows]))
    meta = {"command": args.command, "interval_s": args.interval, "kernel": platform.release(),
            "swap": swap_devices(), "runtime_s": runtime, "exit_status": status,
            "ticks": len(rows), "page_size": PAGE,
            "swap_counters_at_start": dict(zip(SWAP_COUNTERS, counters_at_start))}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"reaccess-probe: {len(rows)} ticks over {runtime:.1f} s, exit {status}; "
          f"results in {args.out}", file=sys.stderr)
    return status


def on_sigterm(signum, frame):
    # Unwind as for Ctrl-C, so that the program is killed and zram0 reset on the way out.
    raise SystemExit(f"reaccess-probe: stopped by signal {signum}")


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between ticks")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--zram", help="set up /dev/zram0 of this size as swap for the run (e.g. 8G)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        fail("no program given (after --)")
    if args.interval <= 0:
        fail(f"--interval: {args.interval} is not a positive number of seconds")
    if os.geteuid() != 0:
        fail("needs root (pagemap flags and process_madvise on another process)")
    try:
        if args.zram:
            with Zram(args.zram):
                return probe(args)
        return probe(args)
    except ProbeError as e:
        fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
