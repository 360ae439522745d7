"""The QEMU boards a firmware can be built for (``board=``, the QEMU machine name).

A board is everything that differs between targets: the core and its compiler flags, the memory
map (for the linker script and for the size map, which accounts memory by address range), where
QEMU puts the plan, and the SysTick clock that turns the firmware's work count into instructions.
The linker script of each board (``firmware_templates/<machine>.ld``) holds the same map as
``regions`` here; ``tests/build/test_build_boards.py`` checks that the two agree.

Memory maps as QEMU 7.2 models them (``info mtree -f`` on each machine; docs/firmware.md#boards).
On the MPS2 boards every memory is FPGA RAM; the roles (code, data, off-chip) follow the board's
application note: ZBT SSRAM1 holds code like a flash, SSRAM2/3 are the data RAMs, PSRAM the large
external memory that takes the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from .an547 import AN547_REGIONS, KIB, MIB, PLAN_LOAD_ADDRESS, Region
from .errors import TigrisError

DEFAULT_BOARD = "mps3-an547"


@dataclass(frozen=True)
class Board:
    """One QEMU machine and the firmware built for it.

    ``cpu_id`` names the compiled form of the runtime (one library per core and flags).
    ``mve_cpu_flags`` (``mve=1``): the core with its
    Helium extension, where the kernels take their MVE forms (kernels/simd32.h); only the
    AN547's Cortex-M55 has one, and QEMU executes both forms.
    """

    machine: str
    core: str
    qemu_cpu: str
    cpu_id: str
    cpu_flags: tuple[str, ...]
    regions: tuple[Region, ...]
    plan_address: int
    plan_window: int
    systick_hz: int
    data_region: str
    slow_region: str
    mve_cpu_flags: tuple[str, ...] | None = None

    def region(self, name: str) -> Region:
        return next(r for r in self.regions if r.name == name)

    def arena_problems(self, fast: int, slow: int, slow_on_chip: bool) -> list[str]:
        """Why arenas of these sizes cannot be linked for this board (empty: they can).

        The linker would refuse them too, with an assertion; saying it before the link names the
        arena, the region and both sizes, which is what a user deciding on a board needs.
        """
        problems = []
        data = self.region(self.data_region)
        if fast > data.length:
            problems.append(f"the fast arena ({fast:,} B) is larger than {data.name} ({data.length // KIB:,} KiB), "
                            f"where {self.machine} links it")
        slow_region = self.region(self.slow_region)
        if slow_on_chip and slow > slow_region.length:
            problems.append(f"the on-chip slow arena ({slow:,} B) is larger than {slow_region.name} "
                            f"({slow_region.length // KIB:,} KiB); slow_ddr=1 puts it off-chip")
        return problems

    @property
    def linker_script(self) -> str:
        """File name in ``firmware_templates/``."""
        return "an547.ld" if self.machine == DEFAULT_BOARD else f"{self.machine}.ld"

    @property
    def target(self) -> str:
        """What the firmware prints after ``BENCH_START <model> @``."""
        return f"{self.core} (QEMU {self.machine})"

    @property
    def work_clock(self) -> str:
        """The clock the firmware names in its WORK line, e.g. ``25MHz-virtual``."""
        return f"{self.systick_hz // 1_000_000}MHz-virtual"

    @property
    def region_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.regions)


def _mps2_regions(psram: int) -> tuple[Region, ...]:
    """AN386 / AN500: SSRAM1 (code) at 0, SSRAM2 and SSRAM3 (data) at 0x20000000, PSRAM."""
    return (
        Region("SSRAM1", 0x00000000, 4 * MIB, (0x00400000,), False, "ZBT SSRAM1: vectors, code, .data image"),
        Region("SSRAM2", 0x20000000, 2 * MIB, (0x20400000,), True, "ZBT SSRAM2: .data/.bss, fast arena, stack"),
        Region("SSRAM3", 0x20200000, 2 * MIB, (0x20600000,), True, "ZBT SSRAM3: slow arena (on-chip)"),
        Region("PSRAM", psram, 16 * MIB, (), False, "external PSRAM: the plan at its base, then off-chip buffers"),
    )


#: AN505 (Cortex-M33, SSE-200 "IoTKit"): the core boots Secure with VTOR at 0x10000000, so the
#: firmware is linked at the Secure aliases (bit 28 set); the SSE-200's own SRAM is 32 KiB.
_AN505_REGIONS: tuple[Region, ...] = (
    Region("SSRAM1", 0x10000000, 4 * MIB, (0x00000000,), False, "ZBT SSRAM1: vectors, code, .data image"),
    Region("SRAM", 0x30000000, 32 * KIB, (0x20000000,), True, "SSE-200 internal SRAM (unused)"),
    Region("SSRAM2", 0x38000000, 2 * MIB, (0x28000000,), True, "ZBT SSRAM2: .data/.bss, fast arena, stack"),
    Region("SSRAM3", 0x38200000, 2 * MIB, (0x28200000,), True, "ZBT SSRAM3: slow arena (on-chip)"),
    Region("PSRAM", 0x80000000, 16 * MIB, (), False, "external PSRAM: the plan at its base, then off-chip buffers"),
)

_FP_HARD = ("-mthumb", "-mfloat-abi=hard")

BOARDS: dict[str, Board] = {
    b.machine: b
    for b in (
        Board("mps3-an547", "Cortex-M55", "cortex-m55", "cm55", ("-mcpu=cortex-m55+nomve", *_FP_HARD),
              AN547_REGIONS, PLAN_LOAD_ADDRESS, 16 * MIB, 32_000_000, "DTCM", "ISRAM",
              mve_cpu_flags=("-mcpu=cortex-m55", *_FP_HARD)),
        Board("mps2-an386", "Cortex-M4", "cortex-m4", "cm4", ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", *_FP_HARD),
              _mps2_regions(0x21000000), 0x21000000, 8 * MIB, 25_000_000, "SSRAM2", "SSRAM3"),
        Board("mps2-an500", "Cortex-M7", "cortex-m7", "cm7", ("-mcpu=cortex-m7", "-mfpu=fpv5-d16", *_FP_HARD),
              _mps2_regions(0x60000000), 0x60000000, 8 * MIB, 25_000_000, "SSRAM2", "SSRAM3"),
        Board("mps2-an505", "Cortex-M33", "cortex-m33", "cm33", ("-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", *_FP_HARD),
              _AN505_REGIONS, 0x80000000, 8 * MIB, 20_000_000, "SSRAM2", "SSRAM3"),
    )
}

#: Every region name some board has: a declaration's ``[regions]`` may name any of them, and a
#: budget for a region the selected board lacks is reported, not silently dropped.
ALL_REGION_NAMES: tuple[str, ...] = tuple(dict.fromkeys(r.name for b in BOARDS.values() for r in b.regions))


def board_for_core(core: str) -> Board | None:
    """The QEMU board that emulates ``core`` (the default board first), or None: the board a
    ``fit`` point runs on to measure a part of that core."""
    ordered = [BOARDS[DEFAULT_BOARD], *(b for b in BOARDS.values() if b.machine != DEFAULT_BOARD)]
    return next((b for b in ordered if b.core == core), None)


def get_board(machine: str | None) -> Board:
    """The board for ``board=`` (None or empty: the default, ``mps3-an547``)."""
    name = (machine or DEFAULT_BOARD).strip().lower()
    try:
        return BOARDS[name]
    except KeyError:
        raise TigrisError(f"board={machine}: not a supported QEMU board; boards: {', '.join(BOARDS)}") from None

