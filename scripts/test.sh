#!/usr/bin/env bash
# Install, then run every test: Rust unit, behaviour, property and CLI tests (the `ci` profile:
# release optimisation, so the simulations in them are fast, without LTO and with 16 codegen
# units, which halves the tests' build time), then the Python API tests.
# Slow tests are `#[ignore]`d locally; CI (CI=true) or TIERMEM_SLOW=1 runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Build and install first: the Python tests use the installed package and its native module.
./scripts/install.sh
extra=()
if [[ "${CI:-}" == "true" || "${TIERMEM_SLOW:-}" == "1" ]]; then
  extra=(-- --include-ignored)
  # promtool checks the agent's metrics exposition (Debian's prometheus package); without
  # it that test applies only its built-in rules.
  # The exact capture's tests record programs under qemu-user (Debian's qemu-user).
  if ! command -v qemu-x86_64 >/dev/null && command -v apt-get >/dev/null; then
    echo "==> installing qemu-user (the exact capture's recorder)"
    apt-get install -y --no-install-recommends qemu-user >/dev/null 2>&1 \
      || echo "warning: qemu-user not installed; the capture tests will fail"
  fi
  if ! command -v promtool >/dev/null && command -v apt-get >/dev/null; then
    echo "==> installing promtool (Debian package prometheus)"
    apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
      || echo "warning: promtool not installed; the metrics test uses its built-in rules only"
  fi
fi
if [[ ${#extra[@]} -gt 0 ]] && cargo clippy --version >/dev/null 2>&1; then
  # unwrap/expect outside tests are denied in Cargo.toml ([workspace.lints]).
  echo "==> cargo clippy (no unwrap/expect on input outside tests)"
  cargo clippy --locked --workspace --lib --bins
fi
t0=$SECONDS
echo "==> cargo test"
cargo test --profile ci --locked "${extra[@]}"
t1=$SECONDS
echo "==> pytest"
TIERMEM_REQUIRE_NATIVE=1 "$PY" -m pytest -q tests/python
echo "==> tests done: cargo test $((t1 - t0)) s, pytest $((SECONDS - t1)) s"
