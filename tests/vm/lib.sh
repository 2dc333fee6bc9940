# Shared pieces of the VM scripts (sourced): host tools, Debian's 6.12 kernel, the tiermem
# binary with the shared libraries it needs, and an initramfs holding them. Sets REPO (the
# checkout) and CACHE ($TIERMEM_VM_CACHE, default target/vm).
# Functions: vm_tools, vm_kernel (sets VMLINUZ), vm_tiermem (sets TIERMEM_VM_BIN),
# vm_root ROOT (directories, busybox, the boot prologue), vm_initrd ROOT OUT (packs a root
# directory that has /init).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${TIERMEM_VM_CACHE:-$REPO/target/vm}

log() { echo "==> $*" >&2; }

vm_tools() {
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  [[ -x /bin/busybox ]] || need+=(busybox-static)
  command -v cpio >/dev/null || need+=(cpio)
  if ((${#need[@]})); then
    log "installing ${need[*]}"
    local sudo_=""; [[ $(id -u) == 0 ]] || sudo_=sudo
    $sudo_ apt-get install -y -q "${need[@]}" >&2 || { $sudo_ apt-get update -q >&2 && $sudo_ apt-get install -y -q "${need[@]}" >&2; }
  fi
  file /bin/busybox 2>/dev/null | grep -q 'statically linked' || ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' || {
    echo "error: /bin/busybox is not static (install busybox-static)" >&2; return 1; }
}

vm_kernel() {
  mkdir -p "$CACHE"
  VMLINUZ=$(ls "$CACHE"/kernel/boot/vmlinuz-6.12.* 2>/dev/null | head -1 || true)
  if [[ -z "$VMLINUZ" ]]; then
    local pkg
    pkg=$(apt-cache depends linux-image-6.12-amd64 2>/dev/null | awk '/Depends: linux-image-6.12/ {print $2; exit}')
    [[ -n "$pkg" ]] || pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1)
    [[ -n "$pkg" ]] || { echo "error: no linux-image-6.12 package found by apt-cache" >&2; return 1; }
    log "downloading $pkg"
    (cd "$CACHE" && apt-get download "$pkg" >&2)
    dpkg-deb -x "$CACHE"/"$pkg"_*.deb "$CACHE/kernel"
    VMLINUZ=$(ls "$CACHE"/kernel/boot/vmlinuz-6.12.* | head -1)
  fi
  log "kernel $VMLINUZ"
}

vm_tiermem() {
  if [[ -z "${TIERMEM_VM_BIN:-}" ]]; then
    # The release build every other step uses (no second build): the initramfs gets the
    # shared libraries it links (vm_initrd).
    log "building tiermem (release)"
    cargo build --release --locked -p tiermem-cli >&2
    TIERMEM_VM_BIN=$REPO/target/release/tiermem
  fi
  [[ -x "$TIERMEM_VM_BIN" ]] || { echo "error: no tiermem binary at $TIERMEM_VM_BIN" >&2; return 1; }
}

# vm_libs BIN ROOT: the shared libraries BIN loads (its ELF interpreter included), copied to
# the same paths under ROOT; nothing for a static binary.
vm_libs() {
  local lib
  for lib in $(ldd "$1" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' | sort -u); do
    mkdir -p "$2$(dirname "$lib")"
    cp -L "$lib" "$2$lib"
  done
}

# vm_root ROOT: the directories every guest mounts on, busybox, and tests/vm/guest-boot.sh
# (which each /init sources first) at /bin/guest-boot.sh.
vm_root() {
  mkdir -p "$1"/{bin,proc,sys,dev,tmp,run}
  cp /bin/busybox "$1/bin/busybox"
  cp "$REPO/tests/vm/guest-boot.sh" "$1/bin/guest-boot.sh"
}

# vm_initrd ROOT OUT: vm_root, the tiermem of vm_tiermem (when it set one) with its shared
# libraries, then pack ROOT into OUT.
vm_initrd() {
  local root=$1 out=$2
  vm_root "$root"
  if [[ -n "${TIERMEM_VM_BIN:-}" ]]; then
    strip -o "$root/bin/tiermem" "$TIERMEM_VM_BIN"
    vm_libs "$TIERMEM_VM_BIN" "$root"
  fi
  chmod +x "$root/init"
  (cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$out"
}

# vm_ext4_modules ROOT: the modules a guest needs to mount an ext4 virtio disk (ext4 and
# virtio_blk are modules in Debian's kernel, with crc16, mbcache, jbd2 and the crc32c shash),
# unpacked into ROOT/modules for the guest's mount_vda (tests/vm/guest-boot.sh).
vm_ext4_modules() {
  mkdir -p "$1/modules"
  local m
  for m in lib/crc16 fs/mbcache fs/jbd2/jbd2 crypto/crc32c_generic lib/libcrc32c fs/ext4/ext4 drivers/block/virtio_blk; do
    xz -dc "$CACHE"/kernel/lib/modules/*/kernel/$m.ko.xz > "$1/modules/$(basename $m).ko"
  done
}

# vm_ext4_disk DIR IMG: a 512 MiB ext4 image IMG holding the files of DIR (mkfs defaults:
# journal, delalloc, data=ordered).
vm_ext4_disk() {
  command -v mkfs.ext4 >/dev/null || { log "installing e2fsprogs"; apt-get install -y -q e2fsprogs >&2; }
  truncate -s 512M "$2"
  mkfs.ext4 -q -F -d "$1" "$2"
}
