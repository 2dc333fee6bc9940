#!/bin/sh
# zram swap of the scenario's kernel.zram capacity (modules copied into the guest by
# validation/record.sh; zsmalloc and lzo-rle are built in).
for m in lz4_compress lz4hc_compress zram; do insmod /modules/$m.ko || exit 1; done
echo lzo-rle > /sys/block/zram0/comp_algorithm
echo $((512 << 20)) > /sys/block/zram0/disksize
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
