#!/usr/bin/env bash
# Build PARSEC 3.0 programs from source and record their page re-access on this host's kernel
# with scripts/reaccess-probe.py (docs/recordings/parsec-reaccess.md).
#
#   sudo scripts/parsec-reaccess-record.sh PARSEC_DIR OUT_DIR [INTERVAL_S]
#
# PARSEC_DIR: a checkout of PARSEC 3.0's source (e.g. github.com/cirosantilli/parsec-benchmark).
# Records the programs whose native input needs no download: splash2x/radiosity (-bf 1.5e-4
# -batch -largeroom, the splash2x run.sh's native arguments) and parsec3/blackscholes (10M
# options from its own inputgen, as in_10M.txt). Needs root, gcc, m4, python3 with numpy, and
# /dev/zram0 unused (the probe sets it up as swap for each run and removes it after).
# About 4 minutes and 2 GiB of memory.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PARSEC_DIR OUT_DIR [INTERVAL_S]" >&2; exit 2; }
SRC=$(realpath "$1")
OUT=$(realpath -m "$2")
INTERVAL=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -d "$SRC/ext/splash2x/apps/radiosity/src" ] && [ -d "$SRC/pkgs/apps/blackscholes/src" ] ||
  { echo "error: $SRC: not a PARSEC 3.0 source tree (no radiosity or blackscholes source)" >&2; exit 2; }
for tool in gcc m4 mkswap swapon; do
  command -v $tool >/dev/null || { echo "error: $tool is needed" >&2; exit 2; }
done

BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$OUT"

echo "==> building splash2x/radiosity"
cp -r "$SRC/ext/splash2x/apps/radiosity/src" "$BUILD/radiosity"
(cd "$BUILD/radiosity" &&
  sed -i 's|^MACROS :=.*|MACROS ?= x|' Makefile &&
  CC=gcc M4=m4 version=pthreads CFLAGS="-O2 -std=gnu89 -pthread -fcommon -w" \
  MACROS="$SRC/pkgs/libs/parmacs/src/m4/parmacs.pthreads.c.m4" make -s >/dev/null 2>&1)

echo "==> building parsec3/blackscholes and its native input"
cp -r "$SRC/pkgs/apps/blackscholes/src" "$BUILD/blackscholes"
(cd "$BUILD/blackscholes" &&
  gcc -O2 -w -o inputgen inputgen.c && gcc -O2 -w -o blackscholes blackscholes.c -lm &&
  ./inputgen 10000000 in_10M.txt >/dev/null)

echo "==> recording splash2x/radiosity"
(cd "$BUILD/radiosity" && "$HERE/reaccess-probe.py" --interval "$INTERVAL" --zram 8G \
  --out "$OUT/radiosity" -- ./radiosity -bf 1.5e-4 -batch -largeroom -p 1 >/dev/null)
echo "==> recording parsec3/blackscholes"
(cd "$BUILD/blackscholes" && "$HERE/reaccess-probe.py" --interval "$INTERVAL" --zram 8G \
  --out "$OUT/blackscholes" -- ./blackscholes 1 in_10M.txt prices.txt >/dev/null)
"$HERE/reaccess-stats.py" "$OUT/radiosity" "$OUT/blackscholes" --min-age 3,5,8
