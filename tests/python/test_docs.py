"""The docs' Python works as written: every ```python block of README.md and docs/*.md runs,
the blocks of one file in order in one namespace (a later block may use what an earlier one
made), in a scratch directory that sees the repository's configs and experiments.

A block is marked as the shell blocks are (crates/tiermem-cli/tests/it/snippets.rs): an HTML
comment on the line before it, ``<!-- not run: why -->`` or ``<!-- slow: why -->`` (run only
with TIERMEM_SLOW=1 or in CI).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\s*$")


def _blocks(text: str):
    """(line, language, marker, code) of every fenced block."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            start = i
            before = [l for l in lines[:i] if l.strip()]
            marker = None
            if before and before[-1].strip().startswith("<!--") and before[-1].strip().endswith("-->"):
                marker = before[-1].strip()[4:-3].strip()
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start + 1, m.group(1), marker, "\n".join(body) + "\n"))
        i += 1
    return out


def _files():
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _slow() -> bool:
    return os.environ.get("TIERMEM_SLOW") == "1" or os.environ.get("CI") == "true"


def _python_docs():
    return [f for f in _files() if any(b[1] == "python" for b in _blocks(f.read_text()))]


@pytest.mark.parametrize("doc", _python_docs(), ids=lambda p: p.name)
def test_every_python_block_runs_as_written(doc: Path, tmp_path: Path, monkeypatch, native):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for sub in ("configs", "experiments", "validation", "examples", "tests"):
        (tmp_path / sub).symlink_to(REPO / sub)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    ran = 0
    for line, lang, marker, code in _blocks(doc.read_text()):
        if lang != "python":
            continue
        where = f"{doc.name}:{line}"
        if marker and marker.startswith("not run:"):
            assert marker[len("not run:"):].strip(), f"{where}: say why the block is not run"
            continue
        if marker and marker.startswith("slow:") and not _slow():
            continue
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as e:  # noqa: BLE001 - the failure names the block
            raise AssertionError(f"{where}: the block fails as written: {e!r}") from e
        ran += 1
    import matplotlib.pyplot as plt

    plt.close("all")
    assert ran > 0


def test_markers_are_read():
    text = "<!-- not run: a cluster -->\n```python\nx = 1\n```\n```python\ny = 2\n```\n"
    b = _blocks(text)
    assert [(m, c) for _, _, m, c in b] == [("not run: a cluster", "x = 1\n"), (None, "y = 2\n")]
