#!/usr/bin/env bash
# The main job: install tiermem, run every built-in experiment (the seeds' headline results
# in simulation) and write the reports to reports/ (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-reports}
./scripts/install.sh
echo "==> running all experiments into $OUT/"
./target/release/tiermem experiment --all --out "$OUT"
echo "==> done: open $OUT/README.md"
