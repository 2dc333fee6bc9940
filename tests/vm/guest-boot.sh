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
