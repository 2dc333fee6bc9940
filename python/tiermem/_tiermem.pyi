"""Type stubs of the native extension ``tiermem._tiermem`` (crates/tiermem-py).

Kept in step with the bindings by ``tests/python/test_stubs.py``, which compares the
names and signatures here with those the built module exports.
"""

from typing import List, Optional, Sequence, Tuple

__version__: str

class ConfigError(ValueError):
    """An invalid simulation config; the message names the file and the dotted key."""

def simulate_text(
    text: str,
    origin: str = "<string>",
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
    overrides: Optional[Sequence[Tuple[str, str]]] = None,
) -> Tuple[str, str, str]:
    """Run the simulation described by TOML ``text``.

    ``origin`` names the config in error messages (a file path, or ``"<string>"``);
    ``seed`` and ``duration_s`` (seconds) override the config's values; ``overrides``
    are ``(dotted path, TOML value text)`` pairs set after preset expansion, as an
    experiment variant's ``set`` table is. The GIL is released while the simulation
    runs.

    Returns ``(summary_json, timeline_csv, resolved_config_json)``.

    Raises :class:`ConfigError` for an invalid config and :class:`RuntimeError` for any
    other failure.
    """

def check_config(
    text: str,
    origin: str = "<string>",
    overrides: Optional[Sequence[Tuple[str, str]]] = None,
) -> str:
    """Parse, expand presets, apply ``overrides`` and validate, without running.

    Returns the effective config (every default filled in) as JSON text; raises
    :class:`ConfigError` as :func:`simulate_text` would.
    """

def version() -> str:
    """The version of the tiermem crates this module was built from."""

def machine_presets() -> List[str]:
    """Names of the built-in machines (``machine = "NAME"`` in a config)."""
