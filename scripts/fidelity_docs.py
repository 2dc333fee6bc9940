#!/usr/bin/env python3
"""Refresh docs/fidelity.md's Results from a `tiermem validate validation/ --out DIR` run.

Replaces the section's summary (from the "N of M checks" line to the scenario table's end)
and every scenario's table with DIR/summary.md's, and copies each scenario's overlay plot to
docs/fidelity/<scenario>.svg, linked under its table. Usage: fidelity_docs.py DIR
(scripts/fidelity-docs.sh runs validate first).
"""
import re
import shutil
import sys
from pathlib import Path

DOC = Path("docs/fidelity.md")
PLOTS = Path("docs/fidelity")
TABLES_LINE = "The tables of every scenario"
NEXT_SECTION = "\n## What the kernel does that the documents did not say"


def fail(msg: str) -> None:
    print(f"fidelity_docs: {msg}", file=sys.stderr)
    sys.exit(2)


def with_plots(tables: str, run: Path) -> str:
    """Each scenario's table followed by its overlay plot (copied into docs/fidelity/)."""
    PLOTS.mkdir(exist_ok=True)
    out = []
    for block in tables.split("\n### "):
        name = block.split("\n", 1)[0].strip()
        svg = run / name / "overlay.svg"
        block = block.rstrip("\n")
        if svg.is_file():
            shutil.copyfile(svg, PLOTS / f"{name}.svg")
            block += f"\n\n![{name}: kernel (solid) against simulator (dashed)](fidelity/{name}.svg)"
        out.append(block)
    return "\n\n### ".join(out) + "\n"


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: fidelity_docs.py VALIDATE_OUT_DIR")
    run = Path(sys.argv[1])
    summary_path = run / "summary.md"
    if not summary_path.is_file():
        fail(f"{summary_path}: not found (run `tiermem validate validation/ --out {run}` first)")
    summary = summary_path.read_text()
    if "\n### " not in summary:
        fail(f"{summary_path}: no scenario tables")
    head, tables = summary.split("\n### ", 1)
    doc = DOC.read_text()
    m = re.search(r"^\d+ of \d+ checks within tolerance; .*$", doc, re.M)
    if not m or TABLES_LINE not in doc or NEXT_SECTION not in doc:
        fail(f"{DOC}: the Results section's markers are missing")
    b = doc.index(TABLES_LINE)
    e = doc.index("\n", b) + 1
    c = doc.index(NEXT_SECTION)
    doc = doc[: m.start()] + head.rstrip("\n") + "\n\n" + doc[b:e] + "\n### " + with_plots(tables, run) + doc[c:]
    DOC.write_text(doc)
    print(f"{DOC}: results from {summary_path}; plots in {PLOTS}/")


if __name__ == "__main__":
    main()
