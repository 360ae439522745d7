"""``part=`` on a real build: the catalog's SRAM and flash become the budgets the static gate
applies, from the project's catalog or a tree's own (``TIGRISBUILD_PARTS_DIR``)."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from tests.build.build_helpers import Scons, write_model
from tests.support import REPO, require_tool
from tigris_scons.parts import find_part

pytestmark = [pytest.mark.scons, pytest.mark.cross, pytest.mark.slow]


def test_part_from_the_catalog_sets_the_budgets(tmp_path):
    require_tool("arm-none-eabi-gcc")
    part = find_part("stm32l432kc")
    proc = Scons(REPO)("model=ds_cnn", "part=STM32L432KC", f"build_dir={tmp_path / 'build'}")
    check = json.loads((tmp_path / "build/ds_cnn/ds_cnn.size-check.json").read_text())
    assert (check["budgets"]["sram"], check["budgets"]["flash"]) == (part.sram_total, part.flash)
    rows = {r["label"]: r for r in check["verdict"]["rows"]}
    assert rows["SRAM static"]["budget"] == part.sram_total and rows["flash"]["budget"] == part.flash
    assert "SRAM static" in proc.stdout


def test_a_part_too_small_fails_the_static_gate_and_a_misspelt_one_is_refused(tmp_path):
    require_tool("arm-none-eabi-gcc")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "tiny-m4.toml").write_text(textwrap.dedent("""\
        name = "TINY-M4"
        vendor = "Test"
        core = "Cortex-M4"
        description = "too small for DS-CNN"
        flash = "64K"
        [sram]
        SRAM = "16K"
        [source]
        url = "https://example.invalid/tiny"
        document = "a test part"
        """))
    # Another tree with its own catalog, through the tool's construction variable.
    sconstruct = tmp_path / "tree" / "SConstruct"
    write_model(tmp_path / "tree" / "models" / "kws", f"""\
        name = "kws"
        builder = "{REPO / 'models/ds_cnn/build.py'}"
        [compile]
        budget = "20K"
        [part]
        name = "TINY-M4"
        """)
    sconstruct.write_text(textwrap.dedent(f"""\
        env = Environment(tools=["default", "tigris"], toolpath=[{str(REPO / 'site_scons/site_tools')!r}],
                          TIGRISBUILD_PARTS_DIR={str(parts)!r})
        kws = env.TigrisModel("models/kws/model.toml")
        Default(kws.default)
        """))
    failed = Scons(sconstruct.parent)(expect=2)
    assert re.search(r"on-chip SRAM \(static\) [\d,]+ B over budget 16\.0 KiB", failed.stderr)
    assert re.search(r"flash \(plan \+ firmware image\) [\d,]+ B over budget 64\.0 KiB", failed.stderr)
    refused = Scons(REPO)("model=ds_cnn", "part=nrf52481", f"build_dir={tmp_path / 'b'}", expect=2)
    assert "nRF52840" in refused.stderr  # the suggestion
