"""ELF size map on a real Cortex-M55 ELF: address-range classification, PT_LOAD image, symbols."""

from __future__ import annotations

import subprocess

import pytest

from tigris_scons.an547 import AN547_REGIONS, region_by_name, region_of
from tigris_scons.elfsize import SizeMap, size_map
from tigris_scons.errors import TigrisError


def test_regions_by_address_including_secure_aliases():
    assert region_of(0x0).name == "ITCM"
    assert region_of(0x1000_0000 + 0x100).name == "ITCM"  # secure alias
    assert region_of(0x2000_0000).name == "DTCM"
    assert region_of(0x3007_FFFF).name == "DTCM"
    assert region_of(0x2100_0000).name == "ISRAM"
    assert region_of(0x6100_0000).name == "DDR"
    assert region_of(0xF000_0000) is None
    assert region_by_name("dtcm").length == 512 * 1024
    assert {r.name for r in AN547_REGIONS if r.on_chip_ram} == {"SRAM", "DTCM", "ISRAM"}


@pytest.mark.cross
def test_sections_are_charged_by_address(cm55_elf):
    sm = size_map(cm55_elf)
    by_name = {s.name: s for s in sm.sections}
    assert by_name[".vectors"].region == "ITCM"  # 'WA'-flagged in some builds, still ITCM
    assert by_name[".rodata"].region == "ITCM"
    data = by_name[".data"]
    assert (data.region, data.load_region) == ("DTCM", "ITCM")
    assert data.lma != data.vma
    assert by_name[".bss"].region == "DTCM" and not by_name[".bss"].reserved
    assert by_name[".arena_fast"].reserved and by_name[".arena_fast"].size == 4096
    assert by_name[".stack"].reserved and by_name[".stack"].size == 2048
    assert by_name[".arena_slow"].region == "ISRAM" and by_name[".arena_slow"].reserved
    assert by_name[".ddr_buf"].region == "DDR" and not by_name[".ddr_buf"].reserved

    dtcm, isram, itcm = sm.regions["DTCM"], sm.regions["ISRAM"], sm.regions["ITCM"]
    assert dtcm.reserved == 4096 + 2048
    assert dtcm.used == by_name[".data"].size + by_name[".bss"].size
    assert isram.reserved == 8192 and isram.used == 0
    assert itcm.used == sum(s.size for s in sm.sections if s.region == "ITCM")
    assert sm.on_chip_ram() == dtcm.total + isram.total
    assert sm.unattributed == []


@pytest.mark.cross
def test_load_image_comes_from_pt_load_and_includes_data(cm55_elf):
    sm = size_map(cm55_elf)
    readelf = subprocess.run(["arm-none-eabi-readelf", "-lW", str(cm55_elf)], capture_output=True, text=True)
    if readelf.returncode == 0:
        filesz = sum(int(line.split()[4], 16) for line in readelf.stdout.splitlines()
                     if line.strip().startswith("LOAD"))
        assert sm.load_image == filesz
    data = next(s for s in sm.sections if s.name == ".data")
    itcm_progbits = sum(s.size for s in sm.sections if s.region == "ITCM" and s.type == "PROGBITS")
    assert sm.regions["ITCM"].load >= itcm_progbits + data.size  # .data init values live in ITCM
    assert sm.regions["DTCM"].load == 0


@pytest.mark.cross
def test_top_symbols_have_regions_and_thumb_bit_cleared(cm55_elf):
    sm = size_map(cm55_elf, top=5)
    names = [s.name for s in sm.symbols]
    assert names[:2] == ["slow_arena", "fast_arena"]
    handler = next((s for s in size_map(cm55_elf, top=50).symbols if s.name == "Reset_Handler"), None)
    assert handler is not None and handler.kind == "FUNC" and handler.address % 2 == 0 and handler.region == "ITCM"


@pytest.mark.cross
def test_json_round_trip(cm55_elf):
    sm = size_map(cm55_elf)
    again = SizeMap.from_dict(sm.to_dict())
    assert again.to_dict() == sm.to_dict()


@pytest.mark.cross
def test_unattributed_sections_are_reported(cm55_elf):
    narrow = tuple(r for r in AN547_REGIONS if r.name != "DDR")
    sm = size_map(cm55_elf, narrow)
    assert any(item.startswith(".ddr_buf") for item in sm.unattributed)


def test_not_an_elf(tmp_path):
    bogus = tmp_path / "x.elf"
    bogus.write_bytes(b"not an elf at all")
    with pytest.raises(TigrisError, match="not a readable ELF"):
        size_map(bogus)
    with pytest.raises(TigrisError, match="cannot read ELF"):
        size_map(tmp_path / "missing.elf")
