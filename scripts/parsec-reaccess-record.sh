#!/usr/bin/env bash
# Build PARSEC 3.0 programs from source and record their page re-access on this host's kernel
# with scripts/reaccess-probe.py (docs/recordings/parsec-reaccess.md).
#
#   sudo scripts/parsec-reaccess-record.sh PARSEC_DIR OUT_DIR [PROGRAM...]
#
# PARSEC_DIR: a checkout of PARSEC 3.0's source (e.g. github.com/cirosantilli/parsec-benchmark).
# The programs whose native input needs no download, with their native arguments:
#   radiosity      splash2x: -bf 1.5e-4 -batch -largeroom (splash2x run.sh)      ~2 min
#   blackscholes   parsec3: 10M options from its own inputgen (in_10M.txt)        ~2 min
#   swaptions      parsec3: -ns 128 -sm 1000000                                    ~4 min
#   streamcluster  parsec3: 10 20 128 1000000 200000 5000 none output.txt          ~10 min
#   lu_cb, lu_ncb  splash2x: -n8096 -b32 (a 500 MiB matrix)
#   radix          splash2x: -r4096 -n268435456 -m2147483647 (2 GiB of keys)
# Default: radiosity and blackscholes. All run with one thread (damon-tests: parsecmgmt -n 1).
# Ticks of INTERVAL seconds (environment, default 1). Needs root, gcc, g++, m4, python3 with
# numpy, and /dev/zram0 unused (the probe sets it up as swap for each run, removes it after).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PARSEC_DIR OUT_DIR [PROGRAM...]" >&2; exit 2; }
SRC=$(realpath "$1")
OUT=$(realpath -m "$2")
shift 2
if [ $# -ge 1 ]; then PROGRAMS=("$@"); else PROGRAMS=(radiosity blackscholes); fi
INTERVAL=${INTERVAL:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -d "$SRC/pkgs/apps/blackscholes/src" ] ||
  { echo "error: $SRC: not a PARSEC 3.0 source tree (no pkgs/apps/blackscholes/src)" >&2; exit 2; }
for tool in gcc g++ m4 mkswap swapon; do
  command -v $tool >/dev/null || { echo "error: $tool is needed" >&2; exit 2; }
done

BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$OUT"

# A SPLASH-2X program from ext/splash2x/DIR/src, its m4 macros expanded with PARSEC's
# pthreads parmacs.
build_splash2x() {
  cp -r "$SRC/ext/splash2x/$2/src" "$BUILD/$1"
  (cd "$BUILD/$1" &&
    sed -i 's|^MACROS :=.*|MACROS ?= x|' Makefile &&
    CC=gcc M4=m4 version=pthreads CFLAGS="-O2 -std=gnu89 -pthread -fcommon -w" \
    MACROS="$SRC/pkgs/libs/parmacs/src/m4/parmacs.pthreads.c.m4" make -s >/dev/null 2>&1)
}
build_radiosity() { build_splash2x radiosity apps/radiosity; }
args_radiosity=(./radiosity -bf 1.5e-4 -batch -largeroom -p 1)
# The SPLASH-2X kernels' native arguments (their run.sh).
build_lu_cb() { build_splash2x lu_cb kernels/lu_cb; }
args_lu_cb=(./lu_cb -p1 -n8096 -b32)
build_lu_ncb() { build_splash2x lu_ncb kernels/lu_ncb; }
args_lu_ncb=(./lu_ncb -p1 -n8096 -b32)
build_radix() { build_splash2x radix kernels/radix; }
args_radix=(./radix -p1 -r4096 -n268435456 -m2147483647)

build_blackscholes() {
  cp -r "$SRC/pkgs/apps/blackscholes/src" "$BUILD/blackscholes"
  (cd "$BUILD/blackscholes" &&
    gcc -O2 -w -o inputgen inputgen.c && gcc -O2 -w -o blackscholes blackscholes.c -lm &&
    ./inputgen 10000000 in_10M.txt >/dev/null)
}
args_blackscholes=(./blackscholes 1 in_10M.txt prices.txt)

build_swaptions() {
  cp -r "$SRC/pkgs/apps/swaptions/src" "$BUILD/swaptions"
  (cd "$BUILD/swaptions" && g++ -O2 -w -DENABLE_THREADS -pthread -o swaptions ./*.cpp nr_routines.c)
}
args_swaptions=(./swaptions -ns 128 -sm 1000000 -nt 1)

build_streamcluster() {
  cp -r "$SRC/pkgs/kernels/streamcluster/src" "$BUILD/streamcluster"
  (cd "$BUILD/streamcluster" && g++ -O2 -w -pthread -o streamcluster streamcluster.cpp parsec_barrier.cpp)
}
args_streamcluster=(./streamcluster 10 20 128 1000000 200000 5000 none output.txt 1)

recorded=()
for p in "${PROGRAMS[@]}"; do
  declare -F "build_$p" >/dev/null || { echo "error: unknown program $p" >&2; exit 2; }
  echo "==> building $p"
  "build_$p"
  echo "==> recording $p (ticks of $INTERVAL s)"
  declare -n args="args_$p"
  (cd "$BUILD/$p" && "$HERE/reaccess-probe.py" --interval "$INTERVAL" --zram 8G \
    --out "$OUT/$p" -- "${args[@]}" >/dev/null)
  recorded+=("$OUT/$p")
done
"$HERE/reaccess-stats.py" "${recorded[@]}" --min-age 3,5,8
