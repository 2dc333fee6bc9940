#!/usr/bin/env bash
# VM integration tests of the tiermem agent against a real multi-node kernel.
#
# Boots Debian's 6.12 kernel under QEMU (TCG software emulation) twice: with 2 NUMA nodes
# (DRAM + a CPU-less slow node) and with 3 (DRAM + two CPU-less nodes), each with HMAT
# latency/bandwidth figures, and runs tests/vm/guest.sh inside a busybox initramfs holding a
# `tiermem` (with the shared libraries it links) and static C test programs. Each scenario prints PASS/FAIL; the script
# fails when any scenario fails or a VM does not finish.
#
# Needs root for apt-get (or the packages already installed): qemu-system-x86,
# busybox-static, cpio, gcc. Cache: $TIERMEM_VM_CACHE (default target/vm).
# Usage: tests/vm/run.sh [2|3]...   (default: both machines)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/vm/lib.sh
TIMEOUT=${TIERMEM_VM_TIMEOUT:-600}

# 1-3. Host tools, Debian's 6.12 kernel (the version the meta-package currently names), the
# release tiermem with the shared libraries it links.
vm_tools
vm_kernel
vm_tiermem

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,cfg}
gcc -O2 -static -o "$ROOT/bin/wicheck" tests/vm/wicheck.c
gcc -O2 -static -o "$ROOT/bin/hotcold" tests/vm/hotcold.c
gcc -O2 -static -o "$ROOT/bin/ksmcheck" tests/vm/ksmcheck.c
cp tests/vm/guest.sh "$ROOT/guest.sh"
# xz (Debian's xz-utils) for the profile-overhead bench (s12), with its libraries.
cp /usr/bin/xz "$ROOT/bin/xz"
vm_libs /usr/bin/xz "$ROOT"
cat > "$ROOT/init" <<'EOF'
#!/bin/busybox sh
. /bin/guest-boot.sh
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
sh /guest.sh
echo "GUEST-EXIT"
poweroff -f
EOF
vm_initrd "$ROOT" "$WORK/initrd.gz"

# 4. Machines. Bandwidth in QEMU's bytes/s with binary suffixes; the kernel reports MB/s.
run_vm() {
  local nodes=$1 out=$CACHE/guest-$1node.log
  local -a args=(-accel tcg,thread=multi -cpu max -smp 2 -machine q35,hmat=on -nographic -no-reboot
    -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz")
  if [[ $nodes == 2 ]]; then
    args+=(-m 1536M
      -object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=512M
      -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,memdev=m1,initiator=0
      -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80
      -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
      -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=240
      -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G)
  else
    args+=(-m 1792M
      -object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=384M
      -object memory-backend-ram,id=m2,size=384M
      -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,memdev=m1,initiator=0
      -numa node,nodeid=2,memdev=m2,initiator=0
      -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80
      -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
      -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=150
      -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=10G
      -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=300
      -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G)
  fi
  args+=(-append "console=ttyS0 quiet panic=-1 tiermem_nodes=$nodes${TIERMEM_VM_ONLY:+ tiermem_only=$TIERMEM_VM_ONLY}${TIERMEM_VM_LOG:+ tiermem_log=$TIERMEM_VM_LOG}")
  log "booting the $nodes-node VM (log: $out)"
  local t0=$SECONDS
  timeout "$TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null >"$out" 2>&1 || true
  log "$nodes-node VM finished in $((SECONDS - t0)) s"
  grep -E '^(PASS|FAIL|INFO)' "$out" >&2 || true
  if ! grep -q '^ALL-DONE' "$out"; then
    echo "error: the $nodes-node VM did not finish (see $out)" >&2
    tail -30 "$out" >&2
    echo "$nodes-node VM: did not finish within $TIMEOUT s (last scenario: $(grep -E '^(PASS|FAIL)' "$out" | tail -1))" >>"$SUMMARY"
    return 1
  fi
  # One line per VM for the test's failure message: CI shows only the end of the output.
  echo "$nodes-node VM: $(grep '^ALL-DONE' "$out" | tail -1)$(grep -E '^FAIL' "$out" | cut -c1-200 | sed 's/^/; /' | tr -d '\n')" >>"$SUMMARY"
  ! grep -q '^FAIL' "$out"
}

SUMMARY="$CACHE/summary.txt"
: >"$SUMMARY"

status=0
for n in "${@:-2 3}"; do
  for m in $n; do run_vm "$m" || status=1; done
done
exit $status
