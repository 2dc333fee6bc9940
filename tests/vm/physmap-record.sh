#!/usr/bin/env bash
# How a program's memory lies in physical memory on Debian's 6.12 kernel (QEMU/TCG, 1 GiB):
# boot with tests/vm/physmap-guest.sh as /init and a virtio ext4 disk holding a 384 MiB file,
# and run tests/vm/physmap.c (first-touch 256 MiB in address order, read /proc/self/pagemap)
# on the fresh kernel and after harness-like churn (file read, other programs, drop_caches).
# Also runs physmap once on the host, for comparison with a long-running machine.
# Results: docs/recordings/physmap-vm.md. Prints the "PM" lines.
#
# Usage: tests/vm/physmap-record.sh        (about a minute)
# Needs qemu-system-x86, busybox-static, cpio, gcc, e2fsprogs (mkfs.ext4 -d), xz.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/vm/lib.sh

vm_tools
vm_kernel

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,modules}
gcc -O2 -static -o "$ROOT/bin/physmap" tests/vm/physmap.c
gcc -O2 -o "$WORK/physmap-host" tests/vm/physmap.c
cp tests/vm/physmap-guest.sh "$ROOT/init"
vm_ext4_modules "$ROOT"
TIERMEM_VM_BIN= vm_initrd "$ROOT" "$WORK/initrd.gz"

mkdir -p "$WORK/files"
head -c 384M /dev/urandom > "$WORK/files/f384"
vm_ext4_disk "$WORK/files" "$WORK/disk.img"

echo "PM host $(uname -r) $("$WORK/physmap-host" 256 || echo '(not root: no frame numbers)')"
OUT=$CACHE/physmap-console.log
log "booting (log: $OUT)"
t0=$SECONDS
timeout "${TIERMEM_VM_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
  -smp 1 -m 1G -machine q35 -nographic -no-reboot \
  -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
  -drive file="$WORK/disk.img",if=virtio,format=raw \
  -append "console=ttyS0 quiet panic=-1" </dev/null >"$OUT" 2>&1 || true
log "VM finished in $((SECONDS - t0)) s"
tr -d '\r' <"$OUT" | grep -E '^PM' || true
grep -q '^PM-DONE' "$OUT" || { echo "error: the VM did not finish (see $OUT)" >&2; tail -30 "$OUT" >&2; exit 1; }
