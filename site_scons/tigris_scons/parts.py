"""The part catalog: one small TOML per real microcontroller (``parts/<id>.toml``).

A budget such as ``sram = "256K"`` is only as good as the figure behind it. The catalog keeps the
figures of real parts in one place, each with the document it came from, so that a model can say
``[part] name = "nRF52840"`` (or the command line ``part=nrf52840``) instead of copying numbers
that nobody can check later, and so that a fit sweep can answer "which parts does this model fit"
with the same rule everywhere.

What a part records is what decides whether a firmware fits:

* ``sram``: the on-chip *data* SRAM, one entry per contiguous block, in the vendor's names. The
  blocks matter, not only their sum: the fast arena is one array, so it needs one block at least
  as large as itself, however much SRAM the part has in total. Code-only memories (an ITCM) are
  left out, as the firmware's code lives in flash.
* ``flash``: the non-volatile memory that holds the plan and the firmware image.

Parsing is strict, like the model declarations: an unknown key, a missing source or a size in
``KB`` is an error naming the file and the key, because a figure that is silently misread is a
budget that is silently wrong. This module is pure Python (no SCons) so the tests and the fit
sweep can use it directly.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .errors import TigrisError, check_keys, suggestion
from .units import fmt_bytes, parse_size

#: The catalog shipped with the project (``<repo>/parts``).
PARTS_DIR = Path(__file__).resolve().parents[2] / "parts"

_KEYS = {"name", "vendor", "core", "description", "flash", "sram", "source"}
_SOURCE_KEYS = {"url", "document"}
# A part id is typed on the command line (part=STM32H743ZI) and is a file name: keep it plain.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_URL_RE = re.compile(r"^https?://\S+$")


@dataclass(frozen=True)
class Part:
    """One microcontroller part as the catalog describes it (sizes in bytes).

    ``sram`` keeps the file's order so reports list the blocks as the vendor's document does.
    """

    name: str
    vendor: str
    core: str
    description: str
    flash: int
    sram: dict[str, int] = field(hash=False)
    source_url: str
    source_document: str
    path: Path

    @property
    def sram_total(self) -> int:
        """All on-chip data SRAM: what ``.data``/``.bss``, the arenas and the stack share."""
        return sum(self.sram.values())

    @property
    def largest_sram_block(self) -> int:
        """The largest contiguous block: the upper bound for one array such as the fast arena."""
        return max(self.sram.values())


@dataclass(frozen=True)
class Need:
    """What one built firmware asks of a part (bytes).

    ``sram_total`` is its static on-chip SRAM (``.data``/``.bss``, arenas, stack);
    ``largest_block`` the largest contiguous block it needs (the fast arena, plus whatever the
    caller decides must sit next to it); ``flash`` the plan plus the firmware image.
    """

    sram_total: int
    largest_block: int
    flash: int


def _size_text(n: int) -> str:
    """A part's size as a datasheet would print it: ``256 KiB``, ``2 MiB``, else exact bytes."""
    if n and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return fmt_bytes(n)


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    """A required, non-empty string."""
    if key not in raw:
        raise TigrisError(f"{where}: missing {key!r}")
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise TigrisError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _positive_size(value: Any, what: str) -> int:
    size = parse_size(value, what=what)
    if size <= 0:
        raise TigrisError(f"{what}: must be more than 0 bytes, got {value!r}")
    return size


def load_part(path: Path) -> Part:
    """Read and validate one ``parts/<id>.toml``.

    Every key is required and no other is allowed; the file must be named after the part
    (lower case) so that a part can be found from its name without reading the whole catalog
    by hand, and so that two files cannot quietly describe the same part.
    """
    path = Path(path)
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TigrisError(f"{where}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TigrisError(f"{where}: not valid TOML: {exc}") from None
    check_keys(raw, _KEYS, where)

    name = _text(raw, "name", where)
    if not _NAME_RE.match(name):
        raise TigrisError(
            f"{where}: name {name!r} must be 1-64 letters, digits, '_', '.' or '-' (it is typed as part={name})"
        )
    if path.name != f"{name.lower()}.toml":
        raise TigrisError(f"{where}: a part file is named after its part: expected {name.lower()}.toml")
    vendor, core, description = (_text(raw, key, where) for key in ("vendor", "core", "description"))
    if "flash" not in raw:
        raise TigrisError(f"{where}: missing 'flash'")
    flash = _positive_size(raw["flash"], f"{where}: flash")

    if "sram" not in raw:
        raise TigrisError(f"{where}: missing [sram]")
    sram_raw = raw["sram"]
    if not isinstance(sram_raw, dict) or not sram_raw:
        raise TigrisError(f"{where}: [sram] must be a table with at least one block, e.g. RAM = \"256K\"")
    sram = {str(block): _positive_size(value, f"{where}: sram.{block}") for block, value in sram_raw.items()}

    if "source" not in raw:
        raise TigrisError(f"{where}: missing [source]: no figure without a source (url and document)")
    source = raw["source"]
    if not isinstance(source, dict):
        raise TigrisError(f"{where}: [source] must be a table with url and document")
    check_keys(source, _SOURCE_KEYS, f"{where}: [source]")
    url = _text(source, "url", f"{where}: [source]")
    if not _URL_RE.match(url):
        raise TigrisError(f"{where}: [source] url must be an http(s) address, got {url!r}")
    document = _text(source, "document", f"{where}: [source]")
    return Part(name=name, vendor=vendor, core=core, description=description, flash=flash, sram=sram,
                source_url=url, source_document=document, path=path)


def load_catalog(parts_dir: Path = PARTS_DIR) -> dict[str, Part]:
    """Every part under ``parts_dir``, keyed by lower-case name (the lookup is case-insensitive)."""
    parts_dir = Path(parts_dir)
    if not parts_dir.is_dir():
        raise TigrisError(f"no part catalog at {parts_dir}")
    catalog: dict[str, Part] = {}
    for path in sorted(parts_dir.glob("*.toml")):
        part = load_part(path)
        key = part.name.lower()
        if key in catalog:
            raise TigrisError(f"{path}: part {part.name!r} is also described by {catalog[key].path}")
        catalog[key] = part
    return catalog


def lookup_part(name: str, parts_dir: Path = PARTS_DIR) -> Part | None:
    """The catalog part called ``name`` (any case), or None when there is no such part or catalog.

    For ``[part] name`` in a model.toml, which was a free label before the catalog existed: a
    name that is not a part keeps meaning just that label.
    """
    key = name.strip().lower()
    if not key or not Path(parts_dir).is_dir():
        return None
    return load_catalog(parts_dir).get(key)


def find_part(name: str, parts_dir: Path = PARTS_DIR) -> Part:
    """The catalog part called ``name`` (any case); an unknown name lists the parts there are."""
    catalog = load_catalog(parts_dir)
    key = name.strip().lower()
    if key in catalog:
        return catalog[key]
    close = difflib.get_close_matches(key, sorted(catalog), n=1)
    hint = f" (did you mean {catalog[close[0]].name!r}?)" if close else ""
    known = ", ".join(p.name for p in sorted(catalog.values(), key=lambda p: p.name.lower()))
    raise TigrisError(
        f"part={name}: not in the part catalog {parts_dir}{hint}; known parts: {known or 'none'}"
    )


def fits(part: Part, need: Need) -> tuple[bool, str]:
    """Whether a firmware that needs ``need`` fits ``part``, and every breach with its figures.

    Three rules, all required: the static SRAM within the part's total, the fast arena within
    one block (an array cannot straddle two memories), the plan and image within the flash.
    """
    breaches = []
    if need.sram_total > part.sram_total:
        breaches.append(f"SRAM {fmt_bytes(need.sram_total)} > {_size_text(part.sram_total)}")
    if need.largest_block > part.largest_sram_block:
        breaches.append(f"fast arena needs a {fmt_bytes(need.largest_block)} block, largest SRAM block is "
                        f"{_size_text(part.largest_sram_block)}")
    if need.flash > part.flash:
        breaches.append(f"flash {fmt_bytes(need.flash)} > {_size_text(part.flash)}")
    return (not breaches, "; ".join(breaches))


def _need(row: Mapping[str, Any]) -> Need | None:
    """A sweep row's demand, or None when the row lacks a figure (a point that did not build)."""
    figures = [row.get(key) for key in ("sram_static", "fast_arena", "flash")]
    if any(not isinstance(v, int) or isinstance(v, bool) for v in figures):
        return None
    return Need(sram_total=figures[0], largest_block=figures[1], flash=figures[2])


def _ok_rows(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Need]]:
    result = []
    for row in rows:
        need = _need(row)
        if row.get("ok") is True and need is not None:
            result.append((row, need))
    return result


def best_fit(part: Part, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Among the sweep points that built, ran and matched and fit ``part``, the fastest one.

    Fastest is fewest instructions (a point without a count ranks last); ties go to the point
    that leaves the most SRAM free. None when no point fits.
    """
    candidates = [row for row, need in _ok_rows(rows) if fits(part, need)[0]]
    if not candidates:
        return None

    def rank(row: Mapping[str, Any]) -> tuple[int, float, int]:
        instructions = row.get("instructions")
        counted = isinstance(instructions, int) and not isinstance(instructions, bool)
        return (0 if counted else 1, instructions if counted else 0, row["sram_static"])

    return dict(min(candidates, key=rank))


def fit_summary(parts: Iterable[Part], rows_by_core: Mapping[str, tuple[str, Sequence[Mapping[str, Any]]]],
                fallback: tuple[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One line per part for a fit report: does any good point fit it, and which one is best.

    ``rows_by_core`` maps a core to the board its points ran on and their rows: a part is judged
    on the rows of its own core, so its work is that core's. A part whose core no board emulates
    is judged on ``fallback`` (the sweep's board and rows) for SRAM and flash only: its line
    carries no instruction count and ``measured_on`` says so.

    When nothing fits, ``reason`` comes from the good point with the least static SRAM, the one
    closest to fitting, so the line says by how much the model misses the part.
    """
    summary = []
    for part in parts:
        own = part.core in rows_by_core
        board, rows = rows_by_core[part.core] if own else fallback
        rows = list(rows)
        good = _ok_rows(rows)
        best = best_fit(part, rows)
        line: dict[str, Any] = {
            "name": part.name,
            "core": part.core,
            "sram_total": part.sram_total,
            "flash": part.flash,
            "fits": best is not None,
            "budget": best["budget"] if best else None,
            "instructions": best.get("instructions") if best and own else None,
            "measured_on": board if own else None,
            "sizes_from": board,
            "reason": "",
        }
        if best is None:
            if good:
                _, need = min(good, key=lambda item: item[1].sram_total)
                line["reason"] = fits(part, need)[1]
            else:
                line["reason"] = "no sweep point built, ran and matched"
        summary.append(line)
    return summary
