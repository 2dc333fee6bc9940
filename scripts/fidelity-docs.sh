#!/bin/sh
# Re-run the validation suite and refresh docs/fidelity.md's Results and docs/fidelity/*.svg.
# Usage: scripts/fidelity-docs.sh [OUT_DIR]   (default target/fidelity-docs)
set -eu
cd "$(dirname "$0")/.."
out=${1:-target/fidelity-docs}
cargo build --release -q -p tiermem-cli
# validate exits 1 when a check fails: the docs then show which.
./target/release/tiermem validate validation/ --seeds 8 --out "$out" || [ $? -eq 1 ]
python3 scripts/fidelity_docs.py "$out"
