"""The project's documentation is its own and its links hold.

* Every ``docs/<name>.md#<anchor>`` a comment, test or README cites names an existing file and
  heading, so a renamed section breaks this test instead of leaving readers at a dead link.
* Every relative Markdown link in a tracked ``.md`` file resolves from that file.
* Nothing tracked points at notes outside the repository (a clone does not have them).
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

#: Names of notes that lived outside the repository; spelled in pieces so this file does not
#: match itself.
OUTSIDE = ["shared" + "/docs", "tgrs-" + "executor.md", "tgrs-" + "format.md", "m55-" + "qemu", "model-" + "recipes",
           "build-design-" + "notes", "architecture" + ".md", "int8-logsoftmax-" + "rsqrt"]

_DOC_REF = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_-]+))?")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _tracked_text_files() -> list[tuple[Path, str]]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout
    files = []
    for name in out.decode().split("\0"):
        path = REPO / name
        if not name or not path.is_file() or "/corpus/" in name or "/regressions/" in name:
            continue
        try:
            files.append((path, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return files


@cache
def _tracked() -> tuple[tuple[Path, str], ...]:
    return tuple(_tracked_text_files())


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for _, title in _HEADING.findall(_FENCE.sub("", markdown)):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_anchor_rules() -> None:
    text = "# Tile-plan records\n## `tgr_run` and §2.1: paths\n```\n# not a heading\n```\n## Paths\n## Paths\n"
    assert anchors(text) == {"tile-plan-records", "tgr_run-and-21-paths", "paths", "paths-1"}


def test_docs_exist() -> None:
    for name in ("plan-format.md", "execution.md", "firmware.md", "models.md", "coverage.md"):
        assert (DOCS / name).is_file(), f"docs/{name} is missing"


def test_cited_doc_sections_exist() -> None:
    problems = []
    for path, text in _tracked():
        for name, anchor in _DOC_REF.findall(text):
            target = DOCS / name
            where = f"{path.relative_to(REPO)}: docs/{name}{'#' + anchor if anchor else ''}"
            if not target.is_file():
                problems.append(f"{where}: no such file")
            elif anchor and anchor not in anchors(target.read_text(encoding="utf-8")):
                problems.append(f"{where}: no such heading")
    assert not problems, "\n".join(problems)


def test_relative_markdown_links_resolve() -> None:
    problems = []
    for path, text in _tracked():
        if path.suffix != ".md":
            continue
        for link in _MD_LINK.findall(_FENCE.sub("", text)):
            if re.match(r"[a-z]+:", link) or link.startswith("#") and not link[1:]:
                continue
            file_part, _, anchor = link.partition("#")
            target = (path.parent / file_part).resolve() if file_part else path
            if not target.exists():
                problems.append(f"{path.relative_to(REPO)}: {link}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text(encoding="utf-8")):
                problems.append(f"{path.relative_to(REPO)}: {link}: no such heading")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("needle", OUTSIDE)
def test_nothing_points_outside_the_repository(needle: str) -> None:
    hits = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
            for path, text in _tracked() for m in re.finditer(re.escape(needle), text)]
    assert not hits, f"{needle!r} is cited by: {', '.join(hits)}"
