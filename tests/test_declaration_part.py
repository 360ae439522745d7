"""A declared model names its part: [part] name in model.toml and part= on the command line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tigris_scons.declaration import OVERRIDE_KEYS, apply_overrides, decl_for_file, load_declaration, resolve_model
from tigris_scons.errors import TigrisError

KIB = 1024
MIB = 1024 * 1024


def model(folder: Path, part_table: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.py").write_text("print('builder')\n")
    path = folder / "model.toml"
    path.write_text(textwrap.dedent(f"""\
        builder = "build.py"
        [compile]
        budget = "20K"
        [part]
        """) + textwrap.dedent(part_table))
    return path


def test_catalog_part_gives_the_budgets(tmp_path):
    decl = load_declaration(model(tmp_path / "m", 'name = "stm32h743zi"\nstack = "2K"\n'))
    assert decl.part is not None and decl.part_name == "STM32H743ZI"  # the catalog's spelling
    assert (decl.sram_budget, decl.flash_budget) == (996 * KIB, 2 * MIB)
    assert decl.stack_size == 2 * KIB
    assert decl.budgets() == {"compile_budget": 20 * KIB, "sram": 996 * KIB, "flash": 2 * MIB, "regions": {},
                              "part": "STM32H743ZI"}


def test_explicit_sram_or_flash_wins_over_the_part(tmp_path):
    decl = load_declaration(model(tmp_path / "a", 'name = "nRF52840"\nsram = "64K"\n'))
    assert (decl.sram_budget, decl.flash_budget) == (64 * KIB, 1 * MIB)
    decl = load_declaration(model(tmp_path / "b", 'flash = "128K"\nname = "nRF52840"\n'))
    assert (decl.sram_budget, decl.flash_budget) == (256 * KIB, 128 * KIB)
    assert decl.budgets()["part"] == "nRF52840"


def test_a_name_outside_the_catalog_stays_a_label(tmp_path):
    decl = load_declaration(model(tmp_path / "m", 'name = "M55 demo part"\nsram = "64K"\n'))
    assert decl.part is None and decl.part_name == "M55 demo part"
    assert (decl.sram_budget, decl.flash_budget) == (64 * KIB, None)
    assert "part" not in decl.budgets()
    decl = load_declaration(model(tmp_path / "n", ""))
    assert decl.part is None and decl.part_name == "" and decl.sram_budget is None


def test_part_override(tmp_path):
    assert "part" in OVERRIDE_KEYS and "parts/" in OVERRIDE_KEYS["part"]
    decl = load_declaration(model(tmp_path / "m", 'name = "M55 demo part"\nsram = "64K"\nflash = "128K"\n'))
    apply_overrides(decl, {"part": "NRF52840"})
    # the command line wins over the file's figures
    assert (decl.part_name, decl.sram_budget, decl.flash_budget) == ("nRF52840", 256 * KIB, 1 * MIB)
    assert decl.budgets()["part"] == "nRF52840"


def test_command_line_sram_and_flash_win_over_part_in_any_order(tmp_path):
    onnx = tmp_path / "x.onnx"
    onnx.write_bytes(b"")
    for overrides in ({"sram": "32K", "part": "stm32f407vg"}, {"part": "stm32f407vg", "sram": "32K"}):
        decl = apply_overrides(decl_for_file(onnx), dict(overrides))
        assert (decl.sram_budget, decl.flash_budget) == (32 * KIB, 1 * MIB)
    decl = apply_overrides(decl_for_file(onnx), {"flash": "2M", "part": "stm32l432kc"})
    assert (decl.sram_budget, decl.flash_budget) == (64 * KIB, 2 * MIB)


def test_unknown_part_is_refused_with_suggestions(tmp_path):
    onnx = tmp_path / "x.onnx"
    onnx.write_bytes(b"")
    decl = decl_for_file(onnx)
    with pytest.raises(TigrisError) as err:
        apply_overrides(decl, {"part": "nrf52480"})
    message = str(err.value)
    assert message.startswith("part=nrf52480:") and "did you mean 'nRF52840'?" in message
    assert "known parts:" in message and "STM32H743ZI" in message
    assert decl.sram_budget is None and decl.part is None  # nothing half-applied


def test_parts_dir_is_a_parameter(tmp_path):
    """A catalog elsewhere (tests, a user's own parts) is used by every entry point."""
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "tiny-m0.toml").write_text(textwrap.dedent("""\
        name = "Tiny-M0"
        vendor = "Acme"
        core = "Cortex-M0+"
        description = "test part"
        flash = "32K"
        [sram]
        RAM = "8K"
        [source]
        url = "https://example.com/tiny.pdf"
        document = "Tiny datasheet Rev 1, table 2"
        """))
    path = model(tmp_path / "models" / "m", 'name = "tiny-m0"\n')
    decl = load_declaration(path, parts_dir=catalog)
    assert (decl.part_name, decl.sram_budget, decl.flash_budget) == ("Tiny-M0", 8 * KIB, 32 * KIB)
    # the shipped catalog does not know it: a label there
    assert load_declaration(path).part is None
    decl = resolve_model("m", models_dir=tmp_path / "models", base_dir=tmp_path, parts_dir=catalog)
    assert decl.flash_budget == 32 * KIB
    apply_overrides(decl, {"part": "TINY-M0"}, parts_dir=catalog)
    assert decl.sram_budget == 8 * KIB
    with pytest.raises(TigrisError, match="known parts: Tiny-M0"):
        apply_overrides(decl, {"part": "nrf52840"}, parts_dir=catalog)
