"""The AN547 (Corstone-300, Cortex-M55) memory map as QEMU ``mps3-an547`` models it.

Memory is accounted by *address range* against this table, never by section names or flags:
flag-based classifiers call the vector table RAM and miss ``.data`` init values
(docs/firmware.md#size-map). Secure aliases map to the same physical region, so a section linked
at 0x30000000 is still charged to DTCM (docs/firmware.md#memory-map).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Region:
    """One physical memory of the part.

    ``on_chip_ram`` marks the memories that count towards the part's SRAM budget (data RAM on the
    die); ITCM holds code and is accounted as its own region, DDR and QSPI are off-chip.
    """

    name: str
    origin: int
    length: int
    aliases: tuple[int, ...] = ()
    on_chip_ram: bool = False
    description: str = ""

    def contains(self, address: int) -> bool:
        """True if ``address`` is in the region or one of its aliases."""
        for base in (self.origin, *self.aliases):
            if base <= address < base + self.length:
                return True
        return False

    def contains_range(self, address: int, size: int) -> bool:
        """True if ``[address, address+size)`` lies wholly in one window of the region."""
        for base in (self.origin, *self.aliases):
            if base <= address and address + size <= base + self.length:
                return True
        return False


KIB = 1024
MIB = 1024 * 1024

AN547_REGIONS: tuple[Region, ...] = (
    Region("ITCM", 0x00000000, 512 * KIB, (0x10000000,), False, "code, vectors, .data image"),
    Region("SRAM", 0x01000000, 2 * MIB, (0x11000000,), True, "FPGA SRAM"),
    Region("DTCM", 0x20000000, 512 * KIB, (0x30000000,), True, "data TCM"),
    Region("ISRAM", 0x21000000, 4 * MIB, (0x31000000,), True, "SSE-300 internal SRAM"),
    Region("QSPI", 0x28000000, 8 * MIB, (0x38000000,), False, "QSPI flash (ROM in QEMU)"),
    Region("DDR", 0x60000000, 2048 * MIB, (), False, "external DDR; the plan is loaded at its base"),
)

#: Where QEMU's ``-device loader`` puts the plan; the firmware reads it in place.
PLAN_LOAD_ADDRESS = 0x60000000

REGION_NAMES: tuple[str, ...] = tuple(r.name for r in AN547_REGIONS)


def region_of(address: int, regions: tuple[Region, ...] = AN547_REGIONS) -> Region | None:
    """The region containing ``address``, or None when the address is outside the map."""
    for region in regions:
        if region.contains(address):
            return region
    return None


def region_by_name(name: str, regions: tuple[Region, ...] = AN547_REGIONS) -> Region:
    """Look a region up by (case-insensitive) name; KeyError if unknown."""
    for region in regions:
        if region.name.lower() == name.lower():
            return region
    raise KeyError(name)
