"""The example outputs in README.md and docs/ come from real runs of this checkout.

An example block is marked in the Markdown with the name of what produces it::

    <!-- example: ds-cnn-run -->
    ```
    ...what the command printed...
    ```
    <!-- /example -->

``.venv/bin/python docs/examples.py`` runs the commands behind every marked block in a private
build folder and fails with a diff where a block differs from what the code prints now;
``--write`` rewrites the blocks instead. ``tests/build/test_build_docs_examples.py`` (and, for the
sweep and the boards, ``tests/build/test_build_fit.py`` and ``test_build_boards.py``) run the same comparison, so a change that moves a
figure the docs show (WORK ticks, image bytes, peaks, a budget table row) fails until the docs
are regenerated.

Why blocks are cut rather than pasted whole: a build prints compile lines and wall-clock seconds
that differ from machine to machine; every block keeps the lines a reader compares with their own
run and marks what it leaves out with ``...``. The QEMU run is repeatable because the build runs
QEMU with ``-icount shift=0`` by default.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
#: The Markdown files that may hold example blocks.
DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))

_BLOCK = re.compile(r"(?P<open><!-- example: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(?P<close><!-- /example -->)",
                    re.S)
#: What a cut block shows in place of the lines it leaves out.
ELLIPSIS = "..."


class ExampleError(Exception):
    """A command behind an example did not print what the example cuts from it."""


@dataclass
class Block:
    """One marked example: where it is and what it shows now."""

    document: Path
    name: str
    body: str

    @property
    def text(self) -> str:
        """The block's content without its code fence."""
        lines = self.body.strip("\n").splitlines()
        if len(lines) < 2 or not lines[0].startswith("```") or lines[-1] != "```":
            raise ExampleError(f"{self.document.name}: example {self.name} is not one fenced code block")
        return "\n".join(lines[1:-1]) + "\n"


def blocks(documents: tuple[Path, ...] | None = None) -> list[Block]:
    """Every marked example block of ``documents`` (default: :data:`DOCUMENTS`), in order."""
    found = []
    for document in DOCUMENTS if documents is None else documents:
        for match in _BLOCK.finditer(document.read_text(encoding="utf-8")):
            found.append(Block(document, match["name"], match["body"]))
    return found


def replace_blocks(markdown: str, texts: dict[str, str]) -> str:
    """``markdown`` with the body of every block named in ``texts`` set to that text, fenced."""

    def render(match: re.Match) -> str:
        if match["name"] not in texts:
            return match[0]
        return f"{match['open']}```\n{texts[match['name']]}```\n{match['close']}"

    return _BLOCK.sub(render, markdown)


# ---- cutting a command's output into a block -------------------------------------------------------


@dataclass
class Output:
    """What one command printed, with the private build folder written as ``build``."""

    command: str
    stdout: str
    stderr: str
    returncode: int

    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def normalise(text: str, build_dir: Path) -> str:
    """The output as a reader running the command in this checkout sees it (build folder ``build``)."""
    return text.replace(str(build_dir), "build")


def _between(lines: list[str], first: Callable[[str], bool], last: Callable[[str], bool], what: str) -> list[str]:
    """Lines from the first that matches ``first`` to the last that matches ``last``, inclusive."""
    start = next((i for i, line in enumerate(lines) if first(line)), None)
    end = next((i for i in range(len(lines) - 1, -1, -1) if last(lines[i])), None)
    if start is None or end is None or end < start:
        raise ExampleError(f"the output has no {what}")
    return lines[start:end + 1]


def run_example(out: Output) -> str:
    """``scons model=X run``: the firmware's transcript and the final budget table.

    Left out: the compile lines and the static table before the run, and the progress lines
    (``CHECK ...``, ``REFERENCE ...``) whose place among the others follows SCons's job order.
    """
    lines = out.lines()
    transcript = _between(lines, lambda s: s.startswith("BENCH_START"), lambda s: s.startswith("BENCH_END"),
                          "firmware transcript")
    last_table = max((i for i, s in enumerate(lines) if s.startswith("tigris budget:")), default=None)
    if last_table is None:
        raise ExampleError("the output has no budget table")
    table = _between(lines[last_table:], lambda s: True, lambda s: s.startswith("result:"), "final budget table")
    return "\n".join([f"$ {out.command}", ELLIPSIS, *transcript, *table]) + "\n"


def work_example(out: Output) -> str:
    """The ``work:`` line of the final table."""
    lines = [s for s in out.lines() if s.startswith("work: ")]
    if not lines:
        raise ExampleError("the output has no work: line (is QEMU run without -icount?)")
    return lines[-1] + "\n"


def over_budget_example(out: Output, region: str) -> str:
    """A run refused by the static gate: the region's row, the verdict and SCons's error line."""
    if out.returncode == 0:
        raise ExampleError(f"{out.command} passed; the example needs a budget that fails")
    rows = [s for s in out.lines() if s.startswith(region + " ")]
    results = [s for s in out.lines() if s.startswith("result: FAILED")]
    errors = [s for s in out.stderr.splitlines() if s.startswith("scons: ***")]
    if not rows or not results or not errors:
        raise ExampleError(f"{out.command}: no {region} row, failed result or scons error line")
    return "\n".join([f"$ {out.command}", ELLIPSIS, rows[0], ELLIPSIS, results[-1], errors[0]]) + "\n"


def fit_example(out: Output) -> str:
    """``scons model=X fit``: the first progress line and the sweep's table."""
    lines = out.lines()
    progress = [s for s in lines if re.match(r"FIT \S+ \[1/", s)]  # the sweep's own board, not "on <board>"
    table = _between(lines, lambda s: s.startswith("tigris fit:"), lambda s: s.startswith("result:"), "fit table")
    if not progress:
        raise ExampleError("the fit output has no first progress line")
    return "\n".join([f"$ {out.command}", progress[0], ELLIPSIS, *table]) + "\n"


def boards_example(outputs: dict[str, Output]) -> str:
    """The same model on each board (``{machine: output}``): the ``work:`` line of each run."""
    lines = ["$ scons model=ds_cnn board=<board> run      # one board after another: the work: line of each"]
    lines += [f"{machine}: {work_example(out).rstrip()}" for machine, out in sorted(outputs.items())]
    return "\n".join(lines) + "\n"


# ---- what produces each block ----------------------------------------------------------------------

#: A function that runs ``scons ARGS...`` in the repository with the build folder added.
SconsRunner = Callable[..., subprocess.CompletedProcess]


@dataclass
class Examples:
    """Runs each command once and cuts every block from it.

    ``scons(*args, expect=...)`` runs SCons in this checkout; ``build_dir`` is the private build
    folder passed as ``build_dir=`` (fresh, so the run example shows a first build's figures).
    """

    scons: SconsRunner
    build_dir: Path
    _outputs: dict[str, Output] = field(default_factory=dict)

    def output(self, shown: str, expect: int | None = 0) -> Output:
        """The output of ``scons <shown>`` (as the docs show the command), run once."""
        if shown not in self._outputs:
            proc = self.scons(*shown.split(), f"build_dir={self.build_dir}", expect=expect)
            self._outputs[shown] = Output(f"scons {shown}", normalise(proc.stdout, self.build_dir),
                                          normalise(proc.stderr, self.build_dir), proc.returncode)
        return self._outputs[shown]

    def produce(self, name: str) -> str:
        """The current text of example ``name``."""
        if name not in PRODUCERS:
            raise ExampleError(f"no producer for example {name!r}: add it to docs/examples.py PRODUCERS")
        return PRODUCERS[name](self)


def _over_budget(examples: Examples) -> str:
    """After the plain run in the same folder, as a reader would: only the static gate re-runs."""
    examples.output("model=ds_cnn run")
    return over_budget_example(examples.output("model=ds_cnn region_dtcm=20K run", expect=2), "DTCM")


def _boards(examples: Examples) -> str:
    from tigris_scons.boards import BOARDS

    return boards_example({m: examples.output(f"model=ds_cnn board={m} run") for m in BOARDS})


#: Example name -> how it is made.
PRODUCERS: dict[str, Callable[[Examples], str]] = {
    "ds-cnn-run": lambda ex: run_example(ex.output("model=ds_cnn run")),
    "ds-cnn-work": lambda ex: work_example(ex.output("model=ds_cnn run")),
    "ds-cnn-over-budget": _over_budget,
    "ds-cnn-fit": lambda ex: fit_example(ex.output("-k model=ds_cnn fit")),
    "ds-cnn-boards": _boards,
}


def differences(examples: Examples, names: set[str] | None = None) -> Iterator[str]:
    """A unified diff for every block (or every block in ``names``) that differs from its producer."""
    for block in blocks():
        if names is not None and block.name not in names:
            continue
        now = examples.produce(block.name)
        if block.text != now:
            where = block.document.relative_to(REPO)
            yield "".join(difflib.unified_diff(block.text.splitlines(True), now.splitlines(True),
                                               f"{where} ({block.name})", "what the code prints now"))


def write(examples: Examples, only: set[str] | None = None) -> list[Path]:
    """Rewrite every block (or those in ``only``) from its producer; returns the documents that changed."""
    changed = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        names = {m["name"] for m in _BLOCK.finditer(text)}
        if only is not None:
            names &= only
        if not names:
            continue
        new = replace_blocks(text, {name: examples.produce(name) for name in sorted(names)})
        if new != text:
            document.write_text(new, encoding="utf-8")
            changed.append(document)
    return changed


def _scons(*args: str, expect: int | None = 0) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TIGRIS_HOST_LIBRARY", None)
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, check=False)
    if expect is not None and proc.returncode != expect:
        raise ExampleError(f"scons {' '.join(args)} exited {proc.returncode}, expected {expect}:\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the blocks instead of comparing them")
    parser.add_argument("names", nargs="*", help="only these examples (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tigris-examples-") as tmp:
        examples = Examples(_scons, Path(tmp) / "build")
        if args.write:
            for document in write(examples, set(args.names) or None):
                print(f"examples: rewrote {document.relative_to(REPO)}")
            return 0
        diffs = list(differences(examples, set(args.names) or None))
    for diff in diffs:
        sys.stdout.write(diff)
    if diffs:
        print(f"examples: {len(diffs)} block(s) differ; regenerate with: .venv/bin/python docs/examples.py --write")
        return 1
    print("examples: every block equals what the code prints now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
