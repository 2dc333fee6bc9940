#!/usr/bin/env bash
# Install tiermem on a fresh machine: the `tiermem` binary (cargo, release) and the Python
# package (maturin builds the Rust extension), with the Python test and plot dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
echo "==> building the tiermem binary (release)"
cargo build --release --locked -p tiermem-cli
echo "==> installing the Python package (maturin builds the extension)"
"$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore ".[test]"
echo "==> installed: $(./target/release/tiermem --version), python: $("$PY" -c 'import tiermem; print(tiermem.__version__)')"
