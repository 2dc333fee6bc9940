"""Config helpers: a small TOML writer and duration parsing.

The simulator reads TOML. :func:`to_toml` turns a Python dict into TOML text so that
``tiermem.simulate({...})`` needs no third-party TOML library, and :func:`parse_duration`
reads the duration strings of the config language (``"10s"``, ``"1.5ms"``) into seconds.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from typing import Any, Dict, List, Mapping, Sequence, Union

__all__ = ["to_toml", "parse_duration", "read_toml"]

# ---------------------------------------------------------------------------------------
# TOML writer
# ---------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def to_toml(data: Mapping[str, Any]) -> str:
    """Serialize a dict to a TOML document.

    Supported values: ``str``, ``int``, ``float`` (including ``nan``/``inf``), ``bool``,
    ``os.PathLike`` (written as a string), lists and tuples, nested dicts, numpy
    scalars and arrays, and the config objects (:class:`tiermem.Config`, ``Machine``,
    ``Pmbench``, ...), written as their ``to_dict()``. Nested dicts become ``[a.b]`` tables; a non-empty list whose
    items are all dicts becomes an array of tables (``[[workloads]]``); dicts inside
    other lists become inline tables. TOML has no null, so keys whose value is ``None``
    are left out (the simulator then uses its default).

    Raises:
        TypeError: a key is not a string or a value has an unsupported type.
        ValueError: an integer does not fit TOML's 64-bit range, or ``None`` appears
            inside a list.
    """
    data = _normalize(data)
    if not isinstance(data, Mapping):
        raise TypeError(f"a TOML document must be a dict, not {type(data).__name__}")
    lines: List[str] = []
    _write_table(lines, [], data, header=None)
    text = "\n".join(lines).strip("\n")
    return text + "\n" if text else ""


def _normalize(value: Any) -> Any:
    """Map numpy and path objects onto the plain Python types handled below."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        np = None
    if np is not None:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if getattr(value, "_TIERMEM_TABLE", False):  # tiermem.Config, Machine, Pmbench, ...
        return value.to_dict()
    return value


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_array_of_tables(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) > 0
        and all(_is_table(_normalize(v)) for v in value)
    )


def _format_key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"TOML keys must be strings, got {key!r} ({type(key).__name__})")
    return key if _BARE_KEY.match(key) else _format_string(key)


def _format_path(path: Sequence[str]) -> str:
    return ".".join(_format_key(k) for k in path)


def _format_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _format_value(value: Any, where: str) -> str:
    """Format a value that goes on the right of ``key =`` (or inside an array)."""
    value = _normalize(value)
    if value is None:
        raise ValueError(f"{where}: TOML has no null value (None inside a list)")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not _I64_MIN <= v <= _I64_MAX:
            raise ValueError(f"{where}: integer {v} does not fit in 64 bits")
        return str(v)
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        # repr() always marks a float as one ("1.0", "1e+20", "2.5e-07"), as TOML needs.
        return repr(v)
    if isinstance(value, str):
        return _format_string(value)
    if isinstance(value, Mapping):
        items = [
            f"{_format_key(k)} = {_format_value(v, f'{where}.{k}')}"
            for k, v in value.items()
            if _normalize(v) is not None
        ]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        items = [_format_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return "[" + ", ".join(items) + "]"
    raise TypeError(f"{where}: cannot write a {type(value).__name__} value to TOML")


def _write_table(
    lines: List[str], path: List[str], table: Mapping[str, Any], header: Union[str, None]
) -> None:
    """Write one table: its plain keys first, then sub-tables, then arrays of tables.

    ``header`` is the ``[a.b]``/``[[a.b]]`` line to emit; ``None`` for the root table.
    A plain table whose only content is sub-tables gets no header of its own (TOML
    defines it implicitly), except when it is empty.
    """
    plain, subtables, arrays = [], [], []
    for key, raw in table.items():
        _format_key(key)  # validates the key type early
        value = _normalize(raw)
        if value is None:
            continue
        if _is_table(value):
            subtables.append((key, value))
        elif _is_array_of_tables(value):
            arrays.append((key, value))
        else:
            plain.append((key, value))

    where = _format_path(path) if path else "<root>"
    if header is not None and (plain or header.startswith("[[") or not (subtables or arrays)):
        if lines:
            lines.append("")
        lines.append(header)
    for key, value in plain:
        lines.append(f"{_format_key(key)} = {_format_value(value, f'{where}.{key}')}")
    for key, value in subtables:
        sub = path + [key]
        _write_table(lines, sub, value, header=f"[{_format_path(sub)}]")
    for key, items in arrays:
        sub = path + [key]
        for item in items:
            _write_table(lines, sub, _normalize(item), header=f"[[{_format_path(sub)}]]")


def read_toml(text: str, origin: str) -> Dict[str, Any]:
    """Parse TOML text (with ``tomllib``, or ``tomli`` before Python 3.11).

    Raises:
        ConfigError: a syntax error, reported as ``ORIGIN: TOML syntax error ...``.
    """
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        from . import ConfigError

        raise ConfigError(f"{origin}: TOML syntax error: {e}") from None


# ---------------------------------------------------------------------------------------
# Durations
# ---------------------------------------------------------------------------------------

_DURATION = re.compile(
    r"^\s*(?P<num>[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)\s*(?P<unit>\S*)\s*$"
)

#: Seconds per unit, matching the units accepted by the simulator's config parser.
_SECONDS_PER_UNIT = {
    "ps": 1e-12,
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
}


def parse_duration(value: Union[str, float, int]) -> float:
    """Convert a duration to seconds.

    Numbers are taken as seconds. Strings need a unit, as in the config language:
    ``"80ns"``, ``"1.5us"``, ``"10ms"``, ``"2s"``, ``"5min"`` (also ``ps``, ``µs`` and
    ``h``); underscores may group digits (``"1_000ms"``).

    Raises:
        ValueError: the string is malformed, has no or an unknown unit, or the duration
            is negative or not finite.
        TypeError: ``value`` is neither a number nor a string.
    """
    if isinstance(value, bool):
        raise TypeError("a duration must be a number of seconds or a string such as '10s'")
    value = _normalize(value)
    if isinstance(value, numbers.Real):
        seconds = float(value)
    elif isinstance(value, str):
        m = _DURATION.match(value)
        if m is None:
            raise ValueError(f"invalid duration {value!r}: expected e.g. '80ns', '10ms' or '2s'")
        unit = m.group("unit")
        if not unit:
            raise ValueError(
                f"duration {value!r} needs a unit (ns, us, ms, s, min); "
                "pass a number to mean seconds"
            )
        if unit not in _SECONDS_PER_UNIT:
            raise ValueError(
                f"invalid duration unit {unit!r} in {value!r}: use ns, us, ms, s or min"
            )
        seconds = float(m.group("num").replace("_", "")) * _SECONDS_PER_UNIT[unit]
    else:
        raise TypeError(
            f"a duration must be a number of seconds or a string such as '10s', "
            f"not {type(value).__name__}"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration {value!r} must be a finite, non-negative time")
    return seconds
