# Sourced first by every VM's /init (busybox sh): busybox's applets on PATH and the
# kernel's file systems mounted. tests/vm/lib.sh's vm_root puts it at /bin/guest-boot.sh.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t debugfs none /sys/kernel/debug
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run

# mount_vda PREFIX: load the modules vm_ext4_modules put in /modules (no modules.dep in the
# guest, so in dependency order) and mount the ext4 disk /dev/vda on /mnt; on failure print
# "PREFIX mount-failed" and power off.
mount_vda() {
  for m in crc16 mbcache jbd2 crc32c_generic libcrc32c ext4 virtio_blk; do
    insmod /modules/$m.ko || echo "$1 insmod-failed $m"
  done
  i=0; while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i+1)); done
  mkdir -p /mnt
  mount -t ext4 /dev/vda /mnt || { echo "$1 mount-failed"; dmesg | tail -20; poweroff -f; }
}
