"""docs/examples.py finds, cuts and rewrites the example blocks (no build: canned outputs).

The comparison against real runs is tests/build/test_build_docs_examples.py; these tests show the
machinery can fail: a block that differs from its producer is reported, an unknown name is an
error, a cut that finds nothing is an error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from docs import examples

RUN_OUTPUT = """CC (cm55) build/x.o
tigris budget: ds_cnn  (static)
result: ok (ds_cnn)
QEMU build/ds_cnn/ds_cnn.elf
---- QEMU ds_cnn: build/ds_cnn/ds_cnn.run.log (0.16 s) ----
BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)
WORK systick_ticks=330337 clock=32MHz-virtual
BENCH_END status=ok
REFERENCE build/ds_cnn/ds_cnn.ref.json
CHECK build/ds_cnn/ds_cnn.check.ok
tigris budget: ds_cnn  (run)
DTCM           1,336 B  22,136 B  28.0 KiB   512.0 KiB   81.9%  [========  ]  ok
work: 330,337 SysTick ticks @ 32MHz-virtual ~ 10,323,031 guest instructions (-icount shift=0)
result: ok (ds_cnn)
"""


def _canned(build: Path, stdout: str, returncode: int = 0, stderr: str = ""):
    """A scons runner that prints ``stdout`` with the private build folder in its paths."""

    def scons(*args: str, expect: int | None = 0) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(args, returncode, stdout.replace("build/", f"{build}/"),
                                           stderr.replace("build/", f"{build}/"))

    return scons


def test_every_marked_block_has_a_producer_and_one_fence() -> None:
    found = examples.blocks()
    assert {b.name for b in found} >= {"ds-cnn-run", "ds-cnn-work", "ds-cnn-fit", "ds-cnn-over-budget", "ds-cnn-boards"}
    for block in found:
        assert block.name in examples.PRODUCERS, block.name
        assert block.text.strip(), block.name


def test_every_opening_marker_is_closed() -> None:
    for document in examples.DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        assert text.count("<!-- example: ") == text.count("<!-- /example -->") == \
            sum(1 for b in examples.blocks((document,))), document.name


def test_the_run_example_starts_at_the_firmware_and_names_the_build_folder_build(tmp_path: Path) -> None:
    ex = examples.Examples(_canned(tmp_path / "b", RUN_OUTPUT), tmp_path / "b")
    text = ex.produce("ds-cnn-run")
    assert text.splitlines()[:3] == ["$ scons model=ds_cnn run", "...", "BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)"]
    assert text.splitlines()[-1] == "result: ok (ds_cnn)"
    assert "(0.16 s)" not in text and str(tmp_path) not in text
    assert "REFERENCE" not in text and "CHECK" not in text  # their place follows the job order
    assert ex.produce("ds-cnn-work").startswith("work: 330,337 SysTick ticks")


def test_a_block_that_differs_is_reported(tmp_path: Path, monkeypatch) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("text\n<!-- example: ds-cnn-work -->\n```\nwork: 1 SysTick ticks\n```\n<!-- /example -->\n")
    monkeypatch.setattr(examples, "DOCUMENTS", (doc,))
    monkeypatch.setattr(examples, "REPO", tmp_path)
    ex = examples.Examples(_canned(tmp_path / "b", RUN_OUTPUT), tmp_path / "b")
    diffs = list(examples.differences(ex))
    assert len(diffs) == 1 and "-work: 1 SysTick ticks" in diffs[0] and "+work: 330,337" in diffs[0]
    assert examples.write(ex) == [doc]
    assert list(examples.differences(ex)) == []
    assert doc.read_text().startswith("text\n<!-- example: ds-cnn-work -->\n```\nwork: 330,337")


def test_an_unknown_example_and_an_empty_cut_are_errors(tmp_path: Path) -> None:
    ex = examples.Examples(_canned(tmp_path / "b", "nothing\n"), tmp_path / "b")
    with pytest.raises(examples.ExampleError, match="no producer"):
        ex.produce("no-such-example")
    with pytest.raises(examples.ExampleError, match="no firmware transcript"):
        ex.produce("ds-cnn-run")
    with pytest.raises(examples.ExampleError, match="passed"):
        examples.over_budget_example(examples.Output("scons x", "", "", 0), "DTCM")
