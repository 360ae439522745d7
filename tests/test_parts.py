"""The part catalog (parts/*.toml): shipped files, strict parsing, lookup and the fit rule."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tigris_scons.errors import TigrisError
from tigris_scons.parts import (
    PARTS_DIR,
    Need,
    Part,
    best_fit,
    find_part,
    fit_summary,
    fits,
    load_catalog,
    load_part,
    lookup_part,
)

KIB = 1024
MIB = 1024 * 1024
SHIPPED = sorted(PARTS_DIR.glob("*.toml"))


# ---------------------------------------------------------------- shipped catalog


def test_catalog_ships_enough_parts():
    assert PARTS_DIR == Path(__file__).resolve().parents[1] / "parts"
    assert 7 <= len(SHIPPED) <= 9, [p.name for p in SHIPPED]
    cores = {load_part(p).core for p in SHIPPED}
    assert {"Cortex-M4", "Cortex-M7", "Cortex-M33", "Cortex-M55"} <= cores


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_part_loads_with_a_source(path):
    part = load_part(path)
    assert path.name == f"{part.name.lower()}.toml"
    assert part.source_url.startswith("https://")
    assert len(part.source_document) > 20  # a title and where the figures are, not a placeholder
    assert part.vendor and part.core.startswith("Cortex-M") and part.description
    assert part.flash > 0 and part.sram and all(size > 0 for size in part.sram.values())
    assert part.sram_total == sum(part.sram.values()) >= part.largest_sram_block > 0


def test_shipped_names_are_unique_and_the_catalog_is_keyed_by_lower_case():
    catalog = load_catalog()
    assert len(catalog) == len(SHIPPED)
    assert sorted(catalog) == sorted(p.stem for p in SHIPPED)


def test_an547_matches_the_project_memory_map():
    """The AN547 entry must say what tigris_scons.an547 (and QEMU) say about the on-chip RAM."""
    from tigris_scons.an547 import AN547_REGIONS

    part = find_part("an547")
    on_chip = {r.name: r.length for r in AN547_REGIONS if r.on_chip_ram}
    assert part.sram == on_chip == {"DTCM": 512 * KIB, "ISRAM": 4 * MIB, "SRAM": 2 * MIB}
    assert part.flash == 8 * MIB  # the QSPI flash; ITCM holds code and is not data SRAM
    assert part.core == "Cortex-M55"


def test_a_few_published_figures():
    """Figures checked by hand against the cited documents (see parts/README.md)."""
    h7 = find_part("STM32H743ZI")
    assert h7.sram == {"DTCM": 128 * KIB, "AXI_SRAM": 512 * KIB, "SRAM1-3": 288 * KIB, "SRAM4": 64 * KIB,
                       "BACKUP_SRAM": 4 * KIB}
    assert list(h7.sram) == ["DTCM", "AXI_SRAM", "SRAM1-3", "SRAM4", "BACKUP_SRAM"]  # file order
    assert (h7.flash, h7.largest_sram_block) == (2 * MIB, 512 * KIB)
    nrf = find_part("nrf52840")
    assert (nrf.sram_total, nrf.largest_sram_block, nrf.flash) == (256 * KIB, 256 * KIB, 1 * MIB)
    f4 = find_part("stm32f407vg")
    assert (f4.sram_total, f4.largest_sram_block) == (192 * KIB, 128 * KIB)


# ---------------------------------------------------------------- strict parsing

GOOD = """\
    name = "Demo-M4"
    vendor = "Acme"
    core = "Cortex-M4"
    description = "a test part"
    flash = "512K"
    [sram]
    SRAM1 = "96K"
    SRAM2 = 32768
    [source]
    url = "https://example.com/ds.pdf"
    document = "DS0001 Rev 1, section 3.4"
"""


def write(folder: Path, text: str, name: str = "demo-m4.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_good_file(tmp_path):
    part = load_part(write(tmp_path, GOOD))
    assert (part.name, part.vendor, part.core, part.flash) == ("Demo-M4", "Acme", "Cortex-M4", 512 * KIB)
    assert part.sram == {"SRAM1": 96 * KIB, "SRAM2": 32 * KIB}
    assert (part.sram_total, part.largest_sram_block) == (128 * KIB, 96 * KIB)
    assert (part.source_url, part.source_document) == ("https://example.com/ds.pdf", "DS0001 Rev 1, section 3.4")
    assert hash(part)  # frozen and usable as a key despite the dict


@pytest.mark.parametrize(
    ("old", "new", "fragments"),
    [
        ('core = "Cortex-M4"\n', 'core = "Cortex-M4"\nfpu = true\n', ["unknown key 'fpu'"]),
        ('SRAM1 = "96K"', 'SRAM1 = "96KB"', ["sram.SRAM1", "ambiguous"]),
        ('flash = "512K"', 'flash = "512Q"', ["flash", "unknown unit 'Q'"]),
        ('flash = "512K"', 'flash = "0"', ["flash", "more than 0"]),
        ('flash = "512K"\n', "", ["missing 'flash'"]),
        ('vendor = "Acme"\n', "", ["missing 'vendor'"]),
        ('description = "a test part"', 'description = ""', ["'description' must be a non-empty string"]),
        ('[sram]\nSRAM1 = "96K"\nSRAM2 = 32768\n', "[sram]\n", ["[sram] must be a table with at least one block"]),
        ('[source]\nurl = "https://example.com/ds.pdf"\ndocument = "DS0001 Rev 1, section 3.4"\n', "",
         ["missing [source]", "no figure without a source"]),
        ('document = "DS0001 Rev 1, section 3.4"\n', "", ["[source]", "missing 'document'"]),
        ('url = "https://example.com/ds.pdf"', 'url = "the datasheet"', ["url must be an http(s) address"]),
        ('url = "https://example.com/ds.pdf"\n', 'url = "https://example.com/ds.pdf"\npage = 3\n',
         ["[source]", "unknown key 'page'"]),
        ('name = "Demo-M4"', 'name = "Demo M4"', ["name 'Demo M4'"]),
        ('name = "Demo-M4"', 'nme = "Demo-M4"', ["unknown key 'nme'", "did you mean 'name'"]),
        ('flash = "512K"', 'flash = "512K', ["not valid TOML"]),
    ],
)
def test_strict_parsing_names_file_and_key(tmp_path, old, new, fragments):
    text = textwrap.dedent(GOOD)
    assert old in text
    path = write(tmp_path, "")
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(TigrisError) as err:
        load_part(path)
    message = str(err.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_file_must_be_named_after_the_part(tmp_path):
    with pytest.raises(TigrisError, match=r"expected demo-m4\.toml"):
        load_part(write(tmp_path, GOOD, name="other.toml"))


def test_a_second_file_cannot_describe_the_same_part(tmp_path):
    write(tmp_path, GOOD)
    write(tmp_path, GOOD, name="demo-m4-copy.toml")
    with pytest.raises(TigrisError, match=r"demo-m4-copy\.toml: a part file is named after its part"):
        load_catalog(tmp_path)


def test_duplicate_part_is_refused(tmp_path, monkeypatch):
    """Two valid files describing one part (case differs in the file name on disk)."""
    folder = tmp_path / "dup"
    write(folder, GOOD)
    import tigris_scons.parts as parts_mod

    real = parts_mod.load_part
    calls = []

    def fake_load(path):
        calls.append(path)
        return real(folder / "demo-m4.toml")

    (folder / "second.toml").write_text("")
    monkeypatch.setattr(parts_mod, "load_part", fake_load)
    with pytest.raises(TigrisError, match="'Demo-M4' is also described by"):
        load_catalog(folder)
    assert len(calls) == 2


def test_missing_catalog(tmp_path):
    with pytest.raises(TigrisError, match="no part catalog"):
        load_catalog(tmp_path / "nowhere")
    assert lookup_part("nrf52840", tmp_path / "nowhere") is None


# ---------------------------------------------------------------- lookup


def test_find_part_ignores_case_and_spaces():
    for spelling in ("nrf52840", "NRF52840", " nRF52840 "):
        assert find_part(spelling).name == "nRF52840"
    assert lookup_part("Stm32h743zi").name == "STM32H743ZI"
    assert lookup_part("M55 demo part") is None and lookup_part("") is None


def test_find_part_unknown_lists_parts_and_suggests():
    with pytest.raises(TigrisError) as err:
        find_part("stm32h734zi")
    message = str(err.value)
    assert "part=stm32h734zi" in message and "did you mean 'STM32H743ZI'?" in message
    assert "known parts:" in message and "nRF52840" in message and "AN547" in message
    with pytest.raises(TigrisError) as err:
        find_part("zzzz")
    assert "did you mean" not in str(err.value) and "known parts:" in str(err.value)


# ---------------------------------------------------------------- fit rule


def part(sram: dict[str, int], flash: int, name: str = "P") -> Part:
    return Part(name=name, vendor="v", core="Cortex-M4", description="d", flash=flash, sram=sram,
                source_url="https://example.com", source_document="doc", path=Path(f"{name.lower()}.toml"))


NRF = part({"RAM": 256 * KIB}, 1 * MIB, "nRF")
SPLIT = part({"DTCM": 128 * KIB, "AXI": 512 * KIB}, 2 * MIB, "Split")


def test_fits_when_all_three_hold():
    assert fits(NRF, Need(sram_total=256 * KIB, largest_block=256 * KIB, flash=1 * MIB)) == (True, "")
    assert fits(SPLIT, Need(sram_total=600 * KIB, largest_block=512 * KIB, flash=10)) == (True, "")


def test_fits_names_every_breach_with_figures():
    ok, why = fits(NRF, Need(sram_total=300_000, largest_block=100, flash=10))
    assert not ok and why == "SRAM 300,000 B > 256 KiB"
    ok, why = fits(NRF, Need(sram_total=1, largest_block=1, flash=1_200_000))
    assert not ok and why == "flash 1,200,000 B > 1 MiB"
    # enough SRAM in total, but not in one block
    ok, why = fits(SPLIT, Need(sram_total=600_000, largest_block=600_000, flash=1))
    assert not ok and why == "fast arena needs a 600,000 B block, largest SRAM block is 512 KiB"
    ok, why = fits(NRF, Need(sram_total=300_000, largest_block=270_000, flash=2_000_000))
    assert not ok
    assert why.split("; ") == ["SRAM 300,000 B > 256 KiB",
                               "fast arena needs a 270,000 B block, largest SRAM block is 256 KiB",
                               "flash 2,000,000 B > 1 MiB"]
    odd = part({"RAM": 1000}, 3000)
    assert fits(odd, Need(1001, 1, 1))[1] == "SRAM 1,001 B > 1,000 B"


def row(budget, sram, fast, flash, instructions, ok=True):
    return {"budget": budget, "sram_static": sram, "fast_arena": fast, "flash": flash,
            "instructions": instructions, "ok": ok}


ROWS = [
    row(8 * KIB, 40 * KIB, 10 * KIB, 200 * KIB, 9_000_000),
    row(32 * KIB, 90 * KIB, 34 * KIB, 210 * KIB, 5_000_000),
    row(128 * KIB, 300 * KIB, 140 * KIB, 220 * KIB, 3_000_000),
    row(256 * KIB, 600 * KIB, 270 * KIB, 230 * KIB, 1_000_000, ok=False),  # fastest, but did not match
]


def test_best_fit_picks_the_fewest_instructions_among_good_fitting_points():
    assert best_fit(NRF, ROWS)["budget"] == 32 * KIB  # 300 KiB does not fit 256 KiB
    assert best_fit(SPLIT, ROWS)["budget"] == 128 * KIB  # the failed 256K point is never chosen
    small = part({"RAM": 16 * KIB}, 1 * MIB)
    assert best_fit(small, ROWS) is None
    assert best_fit(part({"RAM": 1 * MIB}, 100 * KIB), ROWS) is None  # flash too small everywhere
    assert best_fit(NRF, []) is None


def test_best_fit_ties_and_missing_counts():
    tie = [row(1, 50 * KIB, 1, 1, 7), row(2, 40 * KIB, 1, 1, 7), row(3, 30 * KIB, 1, 1, None)]
    assert best_fit(NRF, tie)["budget"] == 2  # same instructions: least SRAM; no count ranks last
    assert best_fit(NRF, [row(3, 30 * KIB, 1, 1, None)])["budget"] == 3
    broken = [{"budget": 4, "sram_static": None, "fast_arena": None, "flash": None, "instructions": None, "ok": True}]
    assert best_fit(NRF, broken) is None
    chosen = best_fit(NRF, tie)
    chosen["budget"] = 99  # a copy: the caller's rows are not changed
    assert tie[1]["budget"] == 2


def _on_m4(rows):
    """fit_summary's arguments when every row was measured on the M4's board."""
    return {"Cortex-M4": ("mps2-an386", rows)}, ("mps3-an547", rows)


def test_fit_summary_per_part():
    tiny = part({"RAM": 32 * KIB}, 1 * MIB, "Tiny")
    lines = fit_summary([NRF, SPLIT, tiny], *_on_m4(ROWS))
    assert [line["name"] for line in lines] == ["nRF", "Split", "Tiny"]
    assert lines[0] == {"name": "nRF", "core": "Cortex-M4", "sram_total": 256 * KIB, "flash": 1 * MIB,
                        "fits": True, "budget": 32 * KIB, "instructions": 5_000_000, "measured_on": "mps2-an386",
                        "sizes_from": "mps2-an386", "reason": ""}
    assert (lines[1]["fits"], lines[1]["budget"], lines[1]["instructions"]) == (True, 128 * KIB, 3_000_000)
    # nothing fits: the reason is from the good row with the least static SRAM (40 KiB)
    assert lines[2]["fits"] is False and lines[2]["budget"] is None and lines[2]["instructions"] is None
    assert lines[2]["reason"] == "SRAM 40,960 B > 32 KiB"
    none_ok = fit_summary([NRF], *_on_m4([row(1, 1, 1, 1, 1, ok=False)]))
    assert none_ok[0]["fits"] is False and "no sweep point" in none_ok[0]["reason"]


def test_shipped_parts_in_a_summary():
    """The whole catalog through the summary: each part gets the fastest sweep point it can hold."""
    catalog = load_catalog()
    every_core = {core: ("board", ROWS) for core in ("Cortex-M4", "Cortex-M7", "Cortex-M33", "Cortex-M55")}
    lines = {line["name"]: line for line in fit_summary(catalog.values(), every_core, ("board", ROWS))}
    assert {name: line["budget"] for name, line in lines.items()} == {
        "AN547": 128 * KIB, "AE1C1F4051920PH0": 128 * KIB, "STM32H743ZI": 128 * KIB, "STM32U585AI": 128 * KIB,
        "nRF52840": 32 * KIB,     # 300 KiB of SRAM does not fit 256 KiB
        "STM32F407VG": 32 * KIB,  # 192 KiB in total
        "STM32L432KC": 8 * KIB,   # 64 KiB: only the smallest point
    }
    assert all(line["fits"] and line["reason"] == "" for line in lines.values())
    heavy = [row(512 * KIB, 1000 * KIB, 300 * KIB, 3 * MIB, 1)]
    lines = {line["name"]: line for line in fit_summary(catalog.values(), {}, ("board", heavy))}
    assert lines["AN547"]["fits"] and not lines["STM32H743ZI"]["fits"]
    assert lines["STM32H743ZI"]["reason"] == "SRAM 1,024,000 B > 996 KiB; flash 3,145,728 B > 2 MiB"


def test_fit_summary_answers_each_part_with_its_own_cores_work():
    """A part's line never shows another core's work: an M4 part is judged on the M4 rows; a
    core no board emulates gets sizes from the sweep's board and no instruction count."""
    m55_rows = [row(8 * KIB, 40 * KIB, 8 * KIB, 100 * KIB, 1_000)]
    m4_rows = [row(8 * KIB, 40 * KIB, 8 * KIB, 100 * KIB, 2_000)]
    m85 = Part(name="M85", vendor="v", core="Cortex-M85", description="d", flash=MIB, sram={"RAM": 256 * KIB},
               source_url="https://example.com", source_document="doc", path=Path("m85.toml"))
    lines = fit_summary([NRF, m85], {"Cortex-M55": ("mps3-an547", m55_rows), "Cortex-M4": ("mps2-an386", m4_rows)},
                        ("mps3-an547", m55_rows))
    assert (lines[0]["instructions"], lines[0]["measured_on"]) == (2_000, "mps2-an386")
    assert lines[1]["fits"] and lines[1]["instructions"] is None and lines[1]["measured_on"] is None
    assert lines[1]["sizes_from"] == "mps3-an547"
