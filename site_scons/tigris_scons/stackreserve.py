"""How much main stack a firmware reserves, and what the stack step records in ``<m>.stack.json``.

The firmware is linked twice: a probe link is analysed (:mod:`stackuse`: the static worst case of
the linked code), the final link reserves what that needs. The reservation is the worst case plus
the margin (``stack=auto``, the default) or the size the declaration gives; the final link reads
it from a response file, so the figure moves no code. A self-test build (``fw_selftest=``)
recurses on purpose: no bound exists, so it keeps a fixed reservation and records no static figure.
"""

from __future__ import annotations

from typing import Any

from .firmware import DEFAULT_STACK_BYTES
from .stackuse import reserve_for

#: The runtime's one recursion: a control stage's unit (If/While) runs the units of its graphs
#: through the same unit runner, one level deep (the loader refuses control flow inside them).
RECURSION_BOUNDS = {"tgr_run_unit": 2}

SELFTEST_SKIP = "self-test build (recursion on purpose)"


def analysed(analysis: dict[str, Any], declared: int | None, elf: str) -> dict[str, Any]:
    """The stack document of an analysed probe (``analysis`` is ``StackReport.to_dict()``): the
    declared reservation if there is one, else the worst case plus the margin."""
    reserved = declared if declared is not None else reserve_for(analysis["worst_bytes"])
    return analysis | {"reserved_bytes": reserved, "auto": declared is None, "elf": elf}


def selftest(declared: int | None, elf: str) -> dict[str, Any]:
    """The stack document of a self-test build: the declared reservation, else the linker
    script's default, and no static worst case."""
    return {"worst_bytes": None, "reserved_bytes": declared or DEFAULT_STACK_BYTES, "auto": False,
            "skipped": SELFTEST_SKIP, "elf": elf}


def link_response(document: dict[str, Any]) -> str:
    """The response file of the final link: the reservation as ``__stack_size`` (firmware.ld)."""
    return f"-Wl,--defsym=__stack_size={document['reserved_bytes']}\n"
