#!/bin/busybox sh
# /init of the physical-layout VM (tests/vm/physmap-record.sh): how the frames of a program's
# anonymous memory, first-touched in address order, lie in physical memory on a fresh kernel
# and after the churn of a benchmark harness (a file read into the page cache, dropped with
# drop_caches, other programs run and exited). Lines prefixed "PM ".
. /bin/guest-boot.sh

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
pm() { echo "PM $1 $(physmap $2)"; }

echo "PM kernel $(uname -r) mem $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
mount_vda PM

pm fresh 256
pm again 256
dd if=/mnt/f384 of=/dev/null bs=1M 2>/dev/null
drop
pm after-file-and-drop 256
# A harness-like sequence, five times: read the input, run a program that takes memory and
# exits, drop the caches, then the measured program.
for r in 1 2 3 4 5; do
  dd if=/mnt/f384 of=/dev/null bs=1M 2>/dev/null
  physmap 192 >/dev/null
  drop
  pm "harness-run-$r" 256
done
echo "PM-DONE"
poweroff -f
