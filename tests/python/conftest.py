"""Shared fixtures of the Python tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _required() -> bool:
    # CI installs the package and builds the binary, so missing pieces there are failures.
    return os.environ.get("TIERMEM_REQUIRE_NATIVE") == "1"


@pytest.fixture
def native():
    """The native module; skipped when it is not built (a failure in CI)."""
    if _required():
        import importlib

        return importlib.import_module("tiermem._tiermem")
    return pytest.importorskip(
        "tiermem._tiermem", reason="native module not built (run `pip install .` or `maturin develop`)"
    )


@pytest.fixture
def tiermem_binary() -> Path:
    """The `tiermem` command line (target/release, or on PATH)."""
    for candidate in (REPO / "target" / "release" / "tiermem", shutil.which("tiermem")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    if _required():
        pytest.fail("the tiermem binary is not built (cargo build --release -p tiermem-cli)")
    pytest.skip("the tiermem binary is not built")
