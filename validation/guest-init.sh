#!/bin/busybox sh
# /init of a recording VM (validation/record.sh): run the scenario's workload with
# `tiermem workload run`, then print the recording as base64 between markers.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs none /sys/kernel/debug
mount -t tmpfs tmp /tmp
echo "TIERMEM-KERNEL $(uname -r)"
cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null | sed 's/^/TIERMEM-LRU-GEN /'
[ -x /scenario/setup.sh ] && /scenario/setup.sh
mkdir -p /tmp/out
if tiermem workload run /scenario/scenario.toml --out /tmp/out --progress 10; then
  cat /proc/zoneinfo > /tmp/out/zoneinfo.txt
  echo "TIERMEM-OUT-BEGIN"
  tar czf - -C /tmp/out . | base64
  echo "TIERMEM-OUT-END"
else
  echo "TIERMEM-RUN-FAILED $?"
fi
poweroff -f
