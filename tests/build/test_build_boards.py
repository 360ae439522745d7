"""``board=``: DS-CNN built, run on QEMU and matched on every board; the memory map in boards.py
is the linker script's; the static gate names the board, region and sizes when a model does not fit."""

from __future__ import annotations

import json
import re

import pytest

from docs import examples
from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool
from tigris_scons.boards import BOARDS, DEFAULT_BOARD, get_board
from tigris_scons.errors import TigrisError
from tigris_scons.units import parse_size

TEMPLATES = REPO / "firmware_templates"
_MEMORY = re.compile(r"^\s*(\w+)\s*\(\w+\)\s*:\s*ORIGIN\s*=\s*(0x[0-9A-Fa-f]+),\s*LENGTH\s*=\s*(\d+[KM]?)\s*$", re.M)


@pytest.mark.parametrize("machine", sorted(BOARDS))
def test_linker_script_memory_is_the_board_map(machine):
    board = BOARDS[machine]
    script = (TEMPLATES / board.linker_script).read_text()
    memory = {name: (int(origin, 16), parse_size(length)) for name, origin, length in _MEMORY.findall(script)}
    for region in board.regions:
        if region.name in memory:
            assert memory[region.name] == (region.origin, region.length), region.name
    aliases = dict(re.findall(r'REGION_ALIAS\("(\w+)", (\w+)\)', script))
    assert aliases["DATA"] == board.data_region and aliases["SLOW"] == board.slow_region
    code = board.region(aliases["CODE"])
    assert not code.on_chip_ram and memory[aliases["CODE"]][0] == code.origin
    assert re.search(rf"BLOB\s*\(r\)\s*:\s*ORIGIN\s*=\s*0x{board.plan_address:08x}", script, re.I)
    assert "INCLUDE firmware.ld" in script


def test_unknown_board_is_refused_with_the_list():
    with pytest.raises(TigrisError, match="mps2-an386"):
        get_board("mps2-an999")
    assert get_board(None).machine == DEFAULT_BOARD


@pytest.fixture(scope="module")
def scons():
    require_tool("arm-none-eabi-gcc")
    return Scons(REPO)


@pytest.fixture(scope="module")
def board_runs(scons, tmp_path_factory):
    """DS-CNN built and run with icount=1 on every board, in one private build folder."""
    require_tool("qemu-system-arm")
    build = tmp_path_factory.mktemp("boards") / "build"
    runs = {}
    for machine in sorted(BOARDS):
        proc = scons("model=ds_cnn", f"board={machine}", f"build_dir={build}", "run", timeout=900)  # icount=1 by default
        folder = build / "ds_cnn" if machine == DEFAULT_BOARD else build / machine / "ds_cnn"
        runs[machine] = (proc, json.loads((folder / "ds_cnn.check.json").read_text()),
                         json.loads((folder / "ds_cnn.run.json").read_text()), build)
    return runs


@pytest.mark.slow
@pytest.mark.scons
@pytest.mark.qemu
@pytest.mark.parametrize("machine", sorted(BOARDS))
def test_ds_cnn_runs_and_matches_on_every_board(board_runs, machine):
    proc, check, run, _ = board_runs[machine]
    board = BOARDS[machine]
    assert f"BENCH_START ds_cnn @ {board.target}" in proc.stdout
    command = " ".join(run["command"])
    assert f"-M {machine} -cpu {board.qemu_cpu}" in command
    assert f"addr=0x{board.plan_address:08x}" in command
    assert check["verdict"]["ok"] and check["board"] == machine
    assert check["run"]["target"] == board.target
    output = next(r for r in check["verdict"]["rows"] if r["label"] == "output")
    assert output["status"] == "ok"
    assert check["work"]["clock"] == board.work_clock
    regions = {r["label"] for r in check["verdict"]["rows"] if r["group"] == "static"}
    assert {board.data_region, board.slow_region} <= regions  # the size map uses the board's own map
    assert regions - {"flash", "SRAM static", "stack static"} <= set(board.region_names)


@pytest.mark.slow
@pytest.mark.scons
@pytest.mark.qemu
def test_work_per_board_is_the_same_code_counted_with_each_clock(board_runs):
    """Each board's SysTick clock turns ticks into instructions; the same C code on four cores must
    then come out close (within 25 %): a wrong clock would be off by its ratio (32/25, 25/20)."""
    counts = {m: check["work"]["instructions_approx"] for m, (_, check, _, _) in board_runs.items()}
    reference = counts[DEFAULT_BOARD]
    for machine, count in counts.items():
        assert 0.8 < count / reference < 1.25, (machine, counts)


@pytest.mark.scons
@pytest.mark.qemu
@pytest.mark.slow
def test_the_docs_show_these_runs(board_runs):
    """docs/firmware.md's work per board (docs/examples.py) is these runs' work lines."""
    shown = {m: examples.Output(f"scons model=ds_cnn board={m} run", examples.normalise(proc.stdout, build), "", 0)
             for m, (proc, _, _, build) in board_runs.items()}
    block = next(b for b in examples.blocks() if b.name == "ds-cnn-boards")
    assert block.text == examples.boards_example(shown), \
        "docs/firmware.md's board example differs; regenerate with: .venv/bin/python docs/examples.py --write ds-cnn-boards"


@pytest.mark.slow
@pytest.mark.scons
@pytest.mark.qemu
def test_region_budgets_of_another_board_are_named_not_dropped(board_runs):
    proc, check, _, _ = board_runs["mps2-an386"]
    assert "region budgets not checked: DTCM, ISRAM, ITCM are not a region of mps2-an386" in proc.stdout
    assert check["verdict"]["notes"]


@pytest.mark.slow
@pytest.mark.scons
@pytest.mark.cross
def test_static_gate_names_board_region_and_sizes(scons, tmp_path):
    build = tmp_path / "build"
    refused = scons("model=ds_cnn", "fast_kb=600", "sram=4M", f"build_dir={build}", expect=2)
    assert "ds_cnn does not fit mps3-an547: the fast arena (614,400 B) is larger than DTCM (512 KiB)" \
        in refused.stdout + refused.stderr
    # The same arena fits the 2 MiB data SSRAM of an MPS2 board.
    scons("model=ds_cnn", "fast_kb=600", "sram=4M", "board=mps2-an386", f"build_dir={build}")


@pytest.mark.scons
@pytest.mark.cross
def test_mve_needs_the_cortex_m55(scons, tmp_path):
    refused = scons("model=ds_cnn", "mve=1", "board=mps2-an505", f"build_dir={tmp_path / 'b'}", expect=2)
    assert "Cortex-M33 on mps2-an505 has no Helium" in refused.stderr
