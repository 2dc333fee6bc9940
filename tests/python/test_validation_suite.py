"""The validation suite's scenario files are what validation/tools/generate.py writes, so
that the generator, the one description of the suite's machine, guest costs and check
kinds, can be rerun without undoing a calibration made by hand in the files."""

import filecmp
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "validation"


def test_generator_reproduces_every_committed_scenario(tmp_path):
    subprocess.run(
        [sys.executable, str(VALIDATION / "tools" / "generate.py"), str(tmp_path)],
        check=True,
    )
    written = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.parent.name for p in VALIDATION.glob("*/scenario.toml"))
    assert written == committed
    for name in written:
        for f in ("scenario.toml", "setup.sh"):
            new, old = tmp_path / name / f, VALIDATION / name / f
            assert new.exists() == old.exists(), f"{name}/{f}"
            if new.exists():
                assert filecmp.cmp(new, old, shallow=False), (
                    f"validation/{name}/{f} differs from what generate.py writes: "
                    "change the generator, then rerun it"
                )
