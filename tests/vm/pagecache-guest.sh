#!/bin/busybox sh
# /init of the page-cache VM (tests/vm/pagecache-record.sh). Mounts the ext4 disk /dev/vda
# (files f64, f128 written by the host) and prints, prefixed "PC ", the meminfo/vmstat figures
# of three checks: 1. read-once vs read-twice LRU placement; 2. dirty expiry of a written file;
# 3. DAMON paddr pageout of idle page cache under a 10 ms/s time quota. Classic LRU (lru_gen 0).
. /bin/guest-boot.sh

up() { cut -d' ' -f1 /proc/uptime; }
# snap LABEL: one line of meminfo (kB) and vmstat (pages) figures.
snap() {
  echo "PC snap $1 t=$(up) $(awk '/^(MemFree|Cached|Active\(file\)|Inactive\(file\)|Dirty|Writeback):/ {sub(":","",$1); printf "%s=%s ", $1, $2}' /proc/meminfo)$(awk '/^(pgsteal_|pgscan_|workingset_(refault|activate|restore)_file|nr_dirty |nr_writeback |nr_dirty_threshold|nr_dirty_background_threshold|pgactivate|pgdeactivate|nr_active_file|nr_inactive_file)/ {printf "%s=%s ", $1, $2}' /proc/vmstat)"
}
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

echo "PC kernel $(uname -r)"
echo 0 > /sys/kernel/mm/lru_gen/enabled 2>/dev/null
echo "PC lru_gen $(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)"
mount_vda PC
echo "PC mount $(grep ' /mnt ' /proc/mounts)"
echo "PC sysctl $(for f in dirty_expire_centisecs dirty_writeback_centisecs dirty_background_ratio dirty_ratio; do printf '%s=%s ' $f $(cat /proc/sys/vm/$f); done)"
ls -l /mnt | sed 's/^/PC ls /'

# Calibration: the same loops run on the host by pagecache-record.sh.
echo "PC calib $(pcread loop 100000000)"
echo "PC calib $(pcread touch 64 20)"

# 1. Read once, read twice (1 MiB reads), then the same with 1 KiB reads (4 read(2) per page).
drop; snap drop1
dd if=/mnt/f64 of=/dev/null bs=1M 2>/dev/null; snap read1
dd if=/mnt/f64 of=/dev/null bs=1M 2>/dev/null; snap read2
echo "PC calib $(pcread read /mnt/f64 1048576)"
drop; snap drop1k
pcread read /mnt/f64 1024 >/dev/null; snap read1k-1
pcread read /mnt/f64 1024 >/dev/null; snap read1k-2

# 2. Write 64 MiB (no sync), sample every second for 45 s; then 16 MiB more into a new file
# (the disk now has a writeout history). The writeback tracepoints say who wrote what:
# writeback_start (reason: background / periodic), writeback_single_inode (age = seconds since
# the inode's dirtied_when, wrote = pages).
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null
echo 4096 > $T/buffer_size_kb
for e in writeback_start writeback_single_inode; do echo 1 > $T/events/writeback/$e/enable; done
write_run() { # write_run NAME MIB
  drop; snap "drop-$1"
  echo > $T/trace
  t0=$(up); dd if=/dev/zero of=/mnt/$1 bs=1M count=$2 2>/dev/null; t1=$(up)
  echo "PC write $1 start=$t0 end=$t1 ino=$(ls -i /mnt/$1 | awk '{print $1}')"
  snap "write-$1"
  i=0
  while [ $i -lt 45 ]; do
    sleep 1
    echo "PC dirty $1 t=$(up) $(awk '/^(Dirty|Writeback|Active\(file\)|Inactive\(file\)):/ {sub(":","",$1); printf "%s=%s ", $1, $2}' /proc/meminfo)"
    i=$((i+1))
  done
  snap "after-writeback-$1"
  grep -v '^#' $T/trace | sed 's/^ */PC trace /'
}
write_run w64 64
write_run w16 16
for e in writeback_start writeback_single_inode; do echo 0 > $T/events/writeback/$e/enable; done

# 3. DAMON paddr pageout, min age 1 s, 10 ms per 1000 ms. Variant "file": the monitoring
# region is the physical span of the file-LRU pages after the read; "ram": the largest
# System RAM range (mostly free pages).
A=/sys/kernel/mm/damon/admin
ramrange() {
  best=0; bs=0; be=0
  for l in $(grep 'System RAM' /proc/iomem | sed 's/^ *//; s/ .*//'); do
    s=$((0x${l%-*})); e=$((0x${l#*-} + 1))
    [ $((e - s)) -gt $best ] && { best=$((e - s)); bs=$s; be=$e; }
  done
  echo "$bs $be"
}
damon_run() { # damon_run file|ram|ram-nofile (the control: no file read, nothing to drop)
  drop
  [ $1 = ram-nofile ] || dd if=/mnt/f128 of=/dev/null bs=1M 2>/dev/null
  snap "damon-$1-before"
  if [ $1 = file ]; then
    r=$(pcread filerange); echo "PC $1 $r"
    set -- file $(echo "$r" | sed -n 's/.*start=\([0-9]*\).*/\1/p') $(echo "$r" | sed -n 's/.*end=\([0-9]*\).*/\1/p')
  else
    set -- $1 $(ramrange)
  fi
  echo 1 > $A/kdamonds/nr_kdamonds
  K=$A/kdamonds/0
  echo 1 > $K/contexts/nr_contexts
  C=$K/contexts/0
  echo paddr > $C/operations
  echo 5000 > $C/monitoring_attrs/intervals/sample_us
  echo 100000 > $C/monitoring_attrs/intervals/aggr_us
  echo 1000000 > $C/monitoring_attrs/intervals/update_us
  echo 10 > $C/monitoring_attrs/nr_regions/min
  echo 1000 > $C/monitoring_attrs/nr_regions/max
  echo 1 > $C/targets/nr_targets
  echo 1 > $C/targets/0/regions/nr_regions
  echo $3 > $C/targets/0/regions/0/end
  echo $2 > $C/targets/0/regions/0/start
  echo 1 > $C/schemes/nr_schemes
  S=$C/schemes/0
  echo pageout > $S/action
  echo 0 > $S/access_pattern/sz/min; echo 18446744073709551615 > $S/access_pattern/sz/max
  echo 0 > $S/access_pattern/nr_accesses/min; echo 0 > $S/access_pattern/nr_accesses/max
  echo 10 > $S/access_pattern/age/min; echo 4294967295 > $S/access_pattern/age/max
  echo 10 > $S/quotas/ms; echo 0 > $S/quotas/bytes; echo 1000 > $S/quotas/reset_interval_ms
  echo "PC damon $1 region=$2-$3 ($((($3 - $2) >> 20)) MiB)"
  echo on > $K/state || { echo "PC damon-on-failed"; return; }
  pid=$(cat $K/pid)
  echo "PC damon $1 on t=$(up) pid=$pid"
  i=0
  while [ $i -lt 20 ]; do
    sleep 1
    echo update_schemes_stats > $K/state
    echo "PC damon-$1 t=$(up) $(awk '/^Cached:/ {printf "Cached=%s ", $2}' /proc/meminfo)$(for f in nr_tried sz_tried nr_applied sz_applied qt_exceeds; do printf '%s=%s ' $f $(cat $S/stats/$f); done)run_ns=$(cut -d' ' -f1 /proc/$pid/schedstat) stat_utime_stime=$(cut -d' ' -f14,15 /proc/$pid/stat | tr ' ' ,)"
    i=$((i+1))
  done
  echo off > $K/state
  snap "damon-$1-after"
}
damon_run file
damon_run ram
damon_run ram-nofile
echo "PC-DONE"
poweroff -f
