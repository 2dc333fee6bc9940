"""Type stubs of the native extension ``tiermem._tiermem`` (crates/tiermem-py)."""

from typing import List, Optional, Tuple

__version__: str

class ConfigError(ValueError):
    """An invalid simulation config; the message names the file and the dotted key."""

def simulate_text(
    text: str,
    origin: str = "<string>",
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
) -> Tuple[str, str, str]:
    """Run the simulation described by TOML ``text``.

    ``origin`` names the config in error messages (a file path, or ``"<string>"``);
    ``seed`` and ``duration_s`` (seconds) override the config's values. The GIL is
    released while the simulation runs.

    Returns ``(summary_json, timeline_csv, resolved_config_json)``.

    Raises :class:`ConfigError` for an invalid config and :class:`RuntimeError` for any
    other failure.
    """

def version() -> str:
    """The version of the tiermem crates this module was built from."""

def machine_presets() -> List[str]:
    """Names of the built-in machines (``machine = "NAME"`` in a config)."""
