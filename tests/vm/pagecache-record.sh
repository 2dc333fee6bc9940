#!/usr/bin/env bash
# Check page-cache facts of docs/page-cache-kernel.md on a running kernel: boot Debian's 6.12
# kernel under QEMU (TCG) with a virtio ext4 disk and run tests/vm/pagecache-guest.sh as /init:
#   1. LRU placement of a 64 MiB file read once and twice (1 MiB and 1 KiB reads),
#   2. when the dirty pages of a 64 MiB, then a 16 MiB write (no sync) are written back
#      (sampled each second, with the writeback tracepoints),
#   3. DAMON paddr pageout of idle page cache under a 10 ms / 1000 ms time quota (plus a
#      control run with no page cache to drop, for the kdamond CPU time per dropped page).
# The same CPU loops run in the guest and on the host for TCG's slowdown.
# Results: docs/recordings/page-cache-vm.md. The console log goes to $CACHE/pagecache-console.log,
# the lines the report uses (prefix "PC") to stdout.
#
# Usage: tests/vm/pagecache-record.sh        (about 3 minutes: the guest runs ~175 s on one host CPU)
# Needs qemu-system-x86, busybox-static, cpio, gcc, e2fsprogs (mkfs.ext4 -d), xz.
# Env: TIERMEM_VM_CACHE (default target/vm), PC_SMP (guest CPUs, default 1), PC_MEM (default 1G).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/vm/lib.sh

vm_tools
vm_kernel

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,modules}
gcc -O2 -static -o "$ROOT/bin/pcread" tests/vm/pcread.c
gcc -O2 -o "$WORK/pcread-host" tests/vm/pcread.c
cp tests/vm/pagecache-guest.sh "$ROOT/init"
vm_ext4_modules "$ROOT"
TIERMEM_VM_BIN= vm_initrd "$ROOT" "$WORK/initrd.gz"   # no tiermem in this VM

# The disk: ext4 (mkfs defaults: journal, delalloc, data=ordered) holding two random files.
mkdir -p "$WORK/files"
head -c 64M /dev/urandom > "$WORK/files/f64"
head -c 128M /dev/urandom > "$WORK/files/f128"
vm_ext4_disk "$WORK/files" "$WORK/disk.img"

# Host side of the calibration (same binary, built without -static).
log "host calibration"
{
  echo "PC host-calib $("$WORK/pcread-host" loop 100000000)"
  echo "PC host-calib $("$WORK/pcread-host" touch 64 20)"
  cat "$WORK/files/f64" >/dev/null
  echo "PC host-calib $("$WORK/pcread-host" read "$WORK/files/f64" 1048576) (fs: $(stat -f -c %T "$WORK/files"), $(uname -r))"
} | tee "$WORK/host.txt"

OUT=$CACHE/pagecache-console.log
log "booting (log: $OUT)"
t0=$SECONDS
timeout "${TIERMEM_VM_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
  -smp "${PC_SMP:-1}" -m "${PC_MEM:-1G}" -machine q35 -nographic -no-reboot \
  -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
  -drive file="$WORK/disk.img",if=virtio,format=raw \
  -append "console=ttyS0 quiet panic=-1" </dev/null >"$OUT" 2>&1 || true
log "VM finished in $((SECONDS - t0)) s"
tr -d '\r' <"$OUT" | grep -E '^PC' || true
grep -q '^PC-DONE' "$OUT" || { echo "error: the VM did not finish (see $OUT)" >&2; tail -30 "$OUT" >&2; exit 1; }
