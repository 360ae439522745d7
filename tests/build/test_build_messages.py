"""``messages=0`` keeps no message text: every reason a plan is refused goes, status codes stay.

The texts are read from the sources themselves: every string literal the runtime hands to
``tgr_fail`` (its format, cut at the conversions), ``TGR_TEXT``, ``tgr_bad_op`` and
``tgr_unsupported_op``, and every ``FW_TEXT`` of the firmware template. A DS-CNN firmware built
with ``messages=0`` must hold none of them in ``.rodata``; the default build holds them (which
shows the scan finds what it looks for). What stays by design: the status names
(``TGR_ERR_*``), the harness's line heads the build parses (``ERROR arena too small``, ``OUTPUT``)
and its numbers.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.cross, pytest.mark.slow]  # two DS-CNN firmware builds

#: a call that takes message text, and which of its string literals are text
_CALLS = re.compile(r"\b(tgr_fail|TGR_TEXT|tgr_bad_op|tgr_unsupported_op|FW_TEXT)\s*\(")
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
#: shorter fragments ("op ", " of ") could be anything, and two words can be a line head the
#: harness keeps ("interface dtype"); these are sentences
MIN_FRAGMENT = 12
MIN_WORDS = 3


def _call_text(source: str, start: int) -> str:
    """The argument text of the call whose '(' is at ``start`` (string literals kept whole)."""
    depth, i = 0, start
    while i < len(source):
        c = source[i]
        if c == '"':
            i = _LITERAL.match(source, i).end()
            continue
        depth += c == "("
        depth -= c == ")"
        i += 1
        if depth == 0:
            return source[start:i]
    return source[start:]


def message_fragments(files: list[Path]) -> set[str]:
    """Every run of message text of at least MIN_FRAGMENT characters the given sources hold."""
    fragments: set[str] = set()
    for path in files:
        source = path.read_text()
        for call in _CALLS.finditer(source):
            for literal in _LITERAL.findall(_call_text(source, call.end() - 1)):
                for piece in re.split(r"%[a-z]|\\.", literal):
                    words = re.findall(r"[A-Za-z]+", piece)
                    if len(piece.strip()) >= MIN_FRAGMENT and len(words) >= MIN_WORDS:
                        fragments.add(piece.strip())
    return fragments


def rodata_strings(elf: Path) -> str:
    """The ELF's read-only data as text (NULs as line breaks)."""
    out = Path(str(elf) + ".rodata.bin")
    subprocess.run([require_tool("arm-none-eabi-objcopy"), "-O", "binary", "--only-section=.rodata", str(elf),
                    str(out)], check=True)
    return out.read_bytes().decode("latin-1").replace("\0", "\n")


def _sources() -> list[Path]:
    return sorted((REPO / "runtime" / "src").rglob("*.[ch]")) + [REPO / "firmware_templates" / "main.c.j2"]


def test_the_scan_finds_texts_in_the_sources() -> None:
    fragments = message_fragments(_sources())
    assert "input and output must be rank-4 channels-last tensors" in fragments
    assert any(f.endswith("is not built into this firmware") for f in fragments)
    assert len(fragments) > 300, len(fragments)


@pytest.fixture(scope="module")
def ds_cnn_builds(tmp_path_factory) -> dict[str, Path]:
    require_tool("arm-none-eabi-gcc")
    root = tmp_path_factory.mktemp("messages")
    elves = {}
    for name, flags in (("default", []), ("quiet", ["messages=0"])):
        Scons(REPO)("model=ds_cnn", f"build_dir={root / name}", *flags)
        elves[name] = root / name / "ds_cnn" / "ds_cnn.elf"
    return elves


def test_messages_0_keeps_no_message_text(ds_cnn_builds) -> None:
    fragments = message_fragments(_sources())
    loud = rodata_strings(ds_cnn_builds["default"])
    quiet = rodata_strings(ds_cnn_builds["quiet"])
    in_default = {f for f in fragments if f in loud}
    assert len(in_default) > 20, "the default build should carry the refusal texts the scan looks for"
    left = sorted(f for f in fragments if f in quiet)
    assert not left, f"{len(left)} message texts in the messages=0 image's .rodata: {left[:20]}"
