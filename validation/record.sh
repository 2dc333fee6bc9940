#!/usr/bin/env bash
# Record the kernel side of validation scenarios: boot Debian's 6.12 kernel under QEMU (TCG)
# on each scenario's machine (`tiermem validate --qemu-args`: its nodes, CPUs, distances and
# HMAT figures), run `tiermem workload run scenario.toml` inside, and store the recording in
# the scenario's kernel/ directory (timeline.csv, meta.json, zoneinfo.txt, command.txt).
#
# Usage: validation/record.sh [--trace] [SCENARIO_DIR...]   (default: every validation/*/)
#   --trace: also trace task_numa_work calls and VMA skips into kernel/trace.txt (slower guest).
#   --trace-damon: trace DAMOS applications, every region at every aggregation, reclaim's page
#     writes and where kdamonds wait.
#   --trace-reclaim: trace kswapd's and direct reclaim's batches, watermark-boosting
#     fallbacks and context switches (where the workload's CPU time goes under pressure).
# TIERMEM_RECORD_AS=NAME stores the recording in SCENARIO/NAME instead of SCENARIO/kernel.
# Needs what tests/vm/run.sh needs (qemu-system-x86, busybox-static, cpio; installed with
# apt-get when missing). Record on an otherwise idle machine: TCG's speed is the guest's.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/vm/lib.sh

vm_tools
vm_kernel
vm_tiermem
cargo build --release --locked -q -p tiermem-cli
HOST_BIN=$REPO/target/release/tiermem

trace=""
if [[ ${1:-} == --trace ]]; then trace=" tiermem_trace"; shift; fi
if [[ ${1:-} == --trace-damon ]]; then trace=" tiermem_trace_damon"; shift; fi
if [[ ${1:-} == --trace-reclaim ]]; then trace=" tiermem_trace_reclaim"; shift; fi
if (($#)); then dirs=("$@"); else dirs=(validation/*/); fi
status=0
for d in "${dirs[@]}"; do
  d=${d%/}
  [[ -f $d/scenario.toml ]] || { echo "skip $d: no scenario.toml" >&2; continue; }
  name=$(basename "$d")
  mapfile -t qargs < <("$HOST_BIN" validate --qemu-args "$d")
  work=$(mktemp -d)
  mkdir -p "$work/root/scenario"
  cp "$d/scenario.toml" "$work/root/scenario/"
  [[ -f $d/setup.sh ]] && install -m 755 "$d/setup.sh" "$work/root/scenario/setup.sh"
  cp validation/guest-init.sh "$work/root/init"
  # Modules a scenario's setup.sh may load (zram and the compressors it depends on; the
  # guest has no modules.dep, so setup.sh loads them in order), decompressed for insmod.
  mkdir -p "$work/root/modules"
  for m in drivers/block/zram/zram lib/lz4/lz4_compress lib/lz4/lz4hc_compress; do
    xz -dc "$CACHE"/kernel/lib/modules/*/kernel/$m.ko.xz > "$work/root/modules/$(basename $m).ko"
  done
  vm_initrd "$work/root" "$work/initrd.gz"
  append="console=ttyS0 quiet panic=-1 numa_balancing=disable$trace"
  log "recording $name"
  t0=$SECONDS
  timeout "${TIERMEM_VM_TIMEOUT:-1800}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
    -machine q35,hmat=on -nographic -no-reboot -kernel "$VMLINUZ" -initrd "$work/initrd.gz" \
    "${qargs[@]}" -append "$append" </dev/null >"$work/console.log" 2>&1 || true
  log "$name: VM finished in $((SECONDS - t0)) s"
  if ! grep -q '^TIERMEM-OUT-END' "$work/console.log"; then
    echo "error: $name: no recording (console: $work/console.log)" >&2
    grep -E 'TIERMEM|error|panic' "$work/console.log" | tail -20 >&2 || true
    status=1
    continue
  fi
  as=${TIERMEM_RECORD_AS:-kernel}
  rm -rf "$d/kernel.new" && mkdir -p "$d/kernel.new"
  sed -n '/^TIERMEM-OUT-BEGIN/,/^TIERMEM-OUT-END/p' "$work/console.log" | sed '1d;$d' | tr -d '\r' \
    | base64 -d | tar xzf - -C "$d/kernel.new"
  {
    echo "# Recorded by validation/record.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "tiermem workload run /scenario/scenario.toml --out /tmp/out --progress 10"
    echo "# kernel: $(sed -n "s/.*\"kernel_release\": \"\([^\"]*\)\".*/\1/p" "$d/kernel.new/meta.json")"
    echo "# lru_gen: $(grep -m1 '^TIERMEM-LRU-GEN' "$work/console.log" | cut -d' ' -f2- || echo absent)"
    echo "# VM: qemu-system-x86_64 -accel tcg,thread=multi -cpu max -machine q35,hmat=on -kernel $(basename "$VMLINUZ") -append \"$append\" ${qargs[*]}"
  } > "$d/kernel.new/command.txt"
  [[ -f $d/kernel.new/trace.txt ]] && gzip -9 "$d/kernel.new/trace.txt"
  rm -rf "${d:?}/$as" && mv "$d/kernel.new" "$d/$as"
  rm -rf "$work"
  log "$name: recorded into $d/$as"
done
exit $status
