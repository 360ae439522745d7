"""Byte sizes: parse what people write in budgets, print what they can paste in issues.

Budgets are written by humans (``20K``, ``64KiB``, ``1M``) and compared by machines, so parsing is
strict: every unit is a power of 1024, and spellings whose meaning is disputed (``KB``/``MB``,
which some tools read as 1000) are refused with a hint instead of being guessed. Output always
shows exact bytes, with KiB/MiB only as an aid.
"""

from __future__ import annotations

import re

from .errors import TigrisError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
}
_AMBIGUOUS = {"kb", "mb", "gb"}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value: object, *, what: str = "size", default_unit: int = 1) -> int:
    """Return ``value`` as a whole number of bytes.

    ``value`` is an int (bytes, or units of ``default_unit``) or a string such as ``"20K"``,
    ``"20KiB"``, ``"1M"``, ``"512"`` or ``"512B"``. ``what`` names the setting in error messages
    (e.g. ``"models/ds_cnn/model.toml: part.sram"``) so the user knows which line to fix.
    A bare number is multiplied by ``default_unit`` (1024 for ``fast_kb=``-style options).
    """
    if isinstance(value, bool):
        raise TigrisError(f"{what}: expected a size such as 20K or 20480, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise TigrisError(f"{what}: size must not be negative, got {value}")
        return value * default_unit
    if not isinstance(value, str):
        raise TigrisError(f"{what}: expected a size such as 20K or 20480, got {value!r}")
    match = _SIZE_RE.match(value)
    if not match:
        raise TigrisError(f"{what}: cannot read {value!r} as a size (examples: 20480, 20K, 20KiB, 1M)")
    number, unit = match.group(1), match.group(2).lower()
    if unit in _AMBIGUOUS:
        raise TigrisError(
            f"{what}: unit {match.group(2)!r} in {value!r} is ambiguous (1000 or 1024?); "
            f"write {number}{unit[0].upper()} or {number}{unit[0].upper()}iB (powers of 1024)"
        )
    if unit not in _UNITS:
        raise TigrisError(
            f"{what}: unknown unit {match.group(2)!r} in {value!r} (use B, K/KiB, M/MiB or G/GiB)"
        )
    scale = _UNITS[unit] if unit else default_unit
    if "." in number:
        exact = float(number) * scale
        if exact != int(exact):
            raise TigrisError(f"{what}: {value!r} is not a whole number of bytes")
        return int(exact)
    return int(number) * scale


def fmt_bytes(n: int) -> str:
    """Exact byte count with thousands separators: ``19,384 B``."""
    return f"{n:,} B"


def fmt_kib(n: int) -> str:
    """Human aid next to exact bytes: ``20.0 KiB``, ``2.0 MiB``."""
    if n >= 1024**3 and n % (1024**2) == 0:
        return f"{n / 1024**3:.1f} GiB"
    if n >= 1024**2:
        return f"{n / 1024**2:.1f} MiB"
    return f"{n / 1024:.1f} KiB"
