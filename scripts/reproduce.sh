#!/usr/bin/env bash
# The main job: build the tiermem binary and run the main suite of built-in experiments
# (every seed's report and plots; about 8 minutes on 2 cores from a fresh clone, of which
# the build is about 4) into reports/ (or OUT).
#
#   ./scripts/reproduce.sh [OUT]          the main suite (seeds 000/001 at 1/32 scale,
#                                         seed 004 at 1/8 scale with one seed)
#   ./scripts/reproduce.sh --full [OUT]   the published sizes and every seed (about 2 hours)
#
# The binary draws the plots itself; the Python package (`pip install .`, which
# scripts/install.sh runs) is not needed for the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=main
if [[ "${1:-}" == "--full" ]]; then
  SUITE=full
  shift
fi
OUT=${1:-reports}
t0=$(date +%s)
echo "==> building the tiermem binary (release)"
cargo build --release --locked -p tiermem-cli
t1=$(date +%s)
echo "==> built in $((t1 - t0)) s: $(./target/release/tiermem --version)"
echo "==> running the $SUITE suite into $OUT/"
./target/release/tiermem experiment --suite "$SUITE" --out "$OUT"
t2=$(date +%s)
echo "==> done in $((t2 - t0)) s (build $((t1 - t0)) s, experiments $((t2 - t1)) s): open $OUT/README.md"
