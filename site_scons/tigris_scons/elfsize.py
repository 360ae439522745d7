"""ELF size map: memory use per region by address range, flash image from PT_LOAD, top symbols.

Why this shape (docs/firmware.md#size-map):

* Runtime use is charged to the region containing each allocated section's VMA, so the vector
  table counts as ITCM (flag-based classifiers call it RAM) and nothing can hide from a budget by
  having an unusual section name.
* The load image (what a part's flash must hold) is the PT_LOAD file bytes placed by ``p_paddr``;
  it includes ``.data`` init values that ld's own usage table misses when ``AT()`` is used.
* NOLOAD reservations (arenas, heap, stack) are a separate ``reserved`` column so static growth
  stays visible next to them.
* Sections outside every region are reported as unattributed instead of being dropped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.common.exceptions import ELFError

from .an547 import AN547_REGIONS, Region, region_of
from .errors import TigrisError

#: NOBITS sections with these name prefixes are reservations (arenas, heap, stack), not data.
RESERVED_PREFIXES: tuple[str, ...] = (".arena", ".heap", ".stack", ".noinit")
STT_KINDS = {"STT_FUNC": "FUNC", "STT_OBJECT": "OBJECT"}


@dataclass
class SectionInfo:
    name: str
    vma: int
    lma: int
    size: int
    type: str  # PROGBITS | NOBITS
    region: str | None  # where it lives at run time
    load_region: str | None  # where its bytes are in the load image (PROGBITS only)
    reserved: bool


@dataclass
class RegionUsage:
    name: str
    origin: int
    length: int
    on_chip_ram: bool
    used: int = 0  # code/data/bss
    reserved: int = 0  # NOLOAD arenas/heap/stack
    load: int = 0  # load-image bytes placed here

    @property
    def total(self) -> int:
        return self.used + self.reserved


@dataclass
class SymbolInfo:
    name: str
    kind: str
    address: int
    size: int
    region: str | None


@dataclass
class SizeMap:
    elf: str
    sections: list[SectionInfo]
    regions: dict[str, RegionUsage]
    load_image: int
    symbols: list[SymbolInfo]
    unattributed: list[str] = field(default_factory=list)

    def on_chip_ram(self) -> int:
        """Static on-chip data RAM (used + reserved in every on-chip RAM region)."""
        return sum(r.total for r in self.regions.values() if r.on_chip_ram)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "elf": self.elf,
            "load_image": self.load_image,
            "on_chip_ram": self.on_chip_ram(),
            "regions": [asdict(r) | {"total": r.total} for r in self.regions.values()],
            "sections": [asdict(s) for s in self.sections],
            "top_symbols": [asdict(s) for s in self.symbols],
            "unattributed": list(self.unattributed),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SizeMap":
        regions = {}
        for r in data["regions"]:
            r = {k: v for k, v in r.items() if k != "total"}
            regions[r["name"]] = RegionUsage(**r)
        if data.get("schema", 1) != 1:
            raise ValueError(f"size map schema {data.get('schema')} is not supported")
        return cls(
            elf=data["elf"],
            sections=[SectionInfo(**s) for s in data["sections"]],
            regions=regions,
            load_image=data["load_image"],
            symbols=[SymbolInfo(**s) for s in data["top_symbols"]],
            unattributed=list(data.get("unattributed", [])),
        )


def size_map(
    elf_path: str | Path,
    regions: tuple[Region, ...] = AN547_REGIONS,
    *,
    top: int = 10,
    reserved_prefixes: tuple[str, ...] = RESERVED_PREFIXES,
) -> SizeMap:
    """Measure an ELF against ``regions``; raises :class:`TigrisError` if it is not an ELF."""
    path = Path(elf_path)
    try:
        with path.open("rb") as handle:
            elf = ELFFile(handle)
            return _measure(elf, str(path), regions, top, reserved_prefixes)
    except OSError as exc:
        raise TigrisError(f"{path}: cannot read ELF ({exc.strerror})") from None
    except ELFError as exc:
        raise TigrisError(f"{path}: not a readable ELF file ({exc})") from None


def _measure(
    elf: ELFFile,
    label: str,
    regions: tuple[Region, ...],
    top: int,
    reserved_prefixes: tuple[str, ...],
) -> SizeMap:
    usage = {r.name: RegionUsage(r.name, r.origin, r.length, r.on_chip_ram) for r in regions}
    segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    sections: list[SectionInfo] = []
    unattributed: list[str] = []

    for sec in elf.iter_sections():
        if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC or sec["sh_size"] == 0:
            continue
        vma, size = sec["sh_addr"], sec["sh_size"]
        nobits = sec["sh_type"] == "SHT_NOBITS"
        lma = vma
        for seg in segments:
            if seg.section_in_segment(sec):
                lma = vma - seg["p_vaddr"] + seg["p_paddr"]
                break
        run_region = region_of(vma, regions)
        load_region = None if nobits else region_of(lma, regions)
        reserved = nobits and sec.name.startswith(reserved_prefixes)
        sections.append(SectionInfo(sec.name, vma, lma, size, "NOBITS" if nobits else "PROGBITS",
                                    run_region.name if run_region else None,
                                    load_region.name if load_region else None, reserved))
        if run_region is None or not run_region.contains_range(vma, size):
            unattributed.append(f"{sec.name} at 0x{vma:08x} ({size} B)")
            if run_region is None:
                continue
        target = usage[run_region.name]
        if reserved:
            target.reserved += size
        else:
            target.used += size

    load_image = 0
    for seg in segments:
        filesz = seg["p_filesz"]
        if filesz == 0:
            continue
        load_image += filesz
        region = region_of(seg["p_paddr"], regions)
        if region is None:
            unattributed.append(f"load segment at 0x{seg['p_paddr']:08x} ({filesz} B)")
        else:
            usage[region.name].load += filesz

    symbols: list[SymbolInfo] = []
    symtab = elf.get_section_by_name(".symtab")
    if symtab is not None:
        for sym in symtab.iter_symbols():
            kind = STT_KINDS.get(sym["st_info"]["type"])
            if kind is None or sym["st_size"] == 0 or not sym.name:
                continue
            address = sym["st_value"] & ~1 if kind == "FUNC" else sym["st_value"]
            region = region_of(address, regions)
            symbols.append(SymbolInfo(sym.name, kind, address, sym["st_size"],
                                      region.name if region else None))
    symbols.sort(key=lambda s: (-s.size, s.name))
    return SizeMap(label, sections, usage, load_image, symbols[:top], unattributed)
