"""The linked Cortex-M code as the stack analysis (stackuse.py) reads it: Thumb instructions from
``objdump -d`` and, from the ELF, its functions, the words that may be code pointers and the vector
table.

Why a module of its own: what an instruction does to sp, whether it calls, jumps or writes pc, is
knowledge of the Arm instruction set and of objdump's text; the call-graph rules and the bound
built on them (stackuse.py) are the analysis. Each side is read and tested on its own.
"""

from __future__ import annotations

import re
import struct
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from .errors import TigrisError

if TYPE_CHECKING:  # the analysis attaches its .su entries to each function
    from .stackuse import SuEntry

#: R_ARM_ABS32, R_ARM_TARGET1 (.init_array), R_ARM_ABS32_NOI: an absolute address in place.
_ABSOLUTE_RELOCS = (2, 38, 55)
_COND = r"(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
CALL = re.compile(rf"bl{_COND}(?:\.[nw])?")
JUMP = re.compile(rf"(?:b{_COND}|cbn?z|le|letp|wls|wlstp)(?:\.[nw])?")
REG_BRANCH = re.compile(rf"(bl?x)(?:ns)?{_COND}")
BRANCH_FUTURE = re.compile(r"bf(?:l|x|lx|csel)?")
LABELLED = re.compile(r"\b([0-9a-f]+) <[^>]*>")  # "540c <fn+0x518>": an address objdump resolved
TARGET = re.compile(r"(?:^|[\s,])([0-9a-f]+)(?: <[^>]*>)?$")
_INSN = re.compile(r"\s*([0-9a-f]+):\t(\S+)(?:\t(.*))?")
_SP_WRITEBACK = re.compile(r"\[sp(?:, #(-?\d+))?\](!?)(?:, #(-?\d+))?")
_READS_FIRST = re.compile(r"(?:cmp|cmn|tst|teq|str|stm|vstr|vstm|pld|pli)")  # first operand is read


class StackError(TigrisError):
    """The stack cannot be bounded soundly; the message names the function and the cause."""


@dataclass
class Function:
    """One function of the ELF: where it ends, its symbols, and (filled by the analysis) its
    ``.su`` entries and instructions."""

    end: int
    symbols: list[tuple[str, str | None]]  # (name, STT_FILE basename if local), preferred first
    su: list[SuEntry] = field(default_factory=list)
    insns: list[tuple[int, str, str]] = field(default_factory=list)  # (address, mnemonic, operands)

    @property
    def name(self) -> str:
        return self.symbols[0][0]


def sp_push(op: str, args: str) -> int | None:
    """Bytes the instruction moves sp down (0 for releases and reads); None if not a constant."""
    base = re.sub(r"\.(?:n|w|32|64)$", "", op)
    first = args.split(",", 1)[0].strip()
    if base in ("push", "vpush") or (base in ("stmdb", "stmfd", "vstmdb", "vstmfd") and first == "sp!"):
        return _list_bytes(args)
    if first == "sp!":  # ldmia/vldmia sp! (pop) release; any other writeback is unexpected
        return 0 if base.startswith(("ldm", "vldm")) else None
    if base.startswith("msr") and first in ("msp", "psp", "msp_ns", "psp_ns"):
        return None
    writeback = _SP_WRITEBACK.search(args)
    if writeback and (writeback[2] or writeback[3]):
        return max(0, -int(writeback[1] if writeback[2] else writeback[3]))
    if first != "sp" or _READS_FIRST.match(base):
        return 0
    imm = re.fullmatch(r"sp, (?:sp, )?#(-?\d+)", args)
    if imm and re.fullmatch(rf"(?:sub|add)s?w?{_COND}", base):
        return max(0, -int(imm[1]) if base.startswith("add") else int(imm[1]))
    return None


def _list_bytes(args: str) -> int:
    """Size of a register list such as ``{r4, r5, lr}`` or ``{d8-d11}`` (d: 8 bytes, others 4)."""
    total = 0
    for item in args[args.index("{") + 1:args.index("}")].split(","):
        low, _, high = item.strip().partition("-")
        total += (int(high[1:]) - int(low[1:]) + 1 if high else 1) * (8 if low[0] == "d" else 4)
    return total


def writes_pc(op: str, args: str) -> bool:
    """An indirect jump: pc loaded from a register or memory, other than the usual returns."""
    first, _, rest = args.partition(",")
    if "{" in args and re.search(r"\bpc\b", args[args.index("{"):]):
        return not (op.startswith("pop") or first.strip() == "sp!")
    return first.strip() == "pc" and not _READS_FIRST.match(op) and rest.strip() not in ("lr", "[sp], #4")


def has_mve(elf: Path) -> bool:
    """Whether the ELF's build attributes say it holds Helium (M-profile vector) code."""
    try:
        with open(elf, "rb") as f:
            attributes = ELFFile(f).get_section_by_name(".ARM.attributes")
            if attributes is None:
                return False
            return any(a.tag == "TAG_MVE_ARCH" and a.value for sub in attributes.iter_subsections()
                       for subsub in sub.iter_subsubsections() for a in subsub.iter_attributes())
    except (OSError, ELFError):
        return False


def disassemble(objdump: str, elf: Path) -> list[tuple[int, str, str]]:
    """(address, mnemonic, operands) of every instruction, lower case, comments dropped.

    objdump 2.40 decodes Helium instructions only when told the architecture: without it, VCTP
    reads as a branch-future BFCSEL to a nonsense target (an edge into whatever function is there)
    and the vector loads as coprocessor ones, so an ELF with MVE code is disassembled as Armv8.1-M
    mainline."""
    machine = ["-m", "armv8.1-m.main"] if has_mve(elf) else []
    try:
        proc = subprocess.run([objdump, "-d", *machine, "--no-show-raw-insn", str(elf)], capture_output=True,
                              text=True, check=True)
    except FileNotFoundError:
        raise StackError(f"{objdump} not found (needed to disassemble {elf})") from None
    except subprocess.CalledProcessError as err:
        raise StackError(f"{objdump} failed on {elf}: {err.stderr.strip()}") from None
    insns = []
    for line in proc.stdout.splitlines():
        m = _INSN.fullmatch(line)
        if m and not m[2].startswith("."):  # .word/.short: data in code
            insns.append((int(m[1], 16), m[2].lower(), re.sub(r"\s*@.*", "", m[3] or "").strip().lower()))
    return insns


def read_elf(path: Path) -> tuple[dict[int, Function], set[int], list[int]]:
    """Functions by address, the data words that may be code pointers, and the vector table."""
    try:
        with path.open("rb") as handle:
            elf = ELFFile(handle)
            if elf["e_machine"] != "EM_ARM":
                raise StackError(f"{path}: not an Arm ELF ({elf['e_machine']})")
            symtab = elf.get_section_by_name(".symtab")
            if symtab is None:
                raise StackError(f"{path}: no symbol table (stripped?)")
            sections = [(s["sh_addr"], s.data()) for s in elf.iter_sections()
                        if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_type"] == "SHT_PROGBITS"]
            kept = [s for s in elf.iter_sections() if isinstance(s, RelocationSection)
                    and elf.get_section(s["sh_info"])["sh_flags"] & SH_FLAGS.SHF_ALLOC]
            relocated = {r["r_offset"] for s in kept for r in s.iter_relocations()
                         if r["r_info_type"] in _ABSOLUTE_RELOCS} if kept else None
            symbols, ranked, file = {}, defaultdict(list), None
            for number, sym in enumerate(symtab.iter_symbols()):
                kind, bind = sym["st_info"]["type"], sym["st_info"]["bind"]
                file = Path(sym.name).name if kind == "STT_FILE" else file
                symbols.setdefault(sym.name, sym["st_value"])
                if kind == "STT_FUNC" and isinstance(sym["st_shndx"], int):
                    rank = {"STB_GLOBAL": 0, "STB_WEAK": 1}.get(bind, 2)
                    ranked[sym["st_value"] & ~1].append((rank, number, sym.name, file if rank == 2 else None,
                                                         sym["st_size"]))
    except OSError as exc:
        raise StackError(f"{path}: cannot read ELF ({exc.strerror})") from None
    except ELFError as exc:
        raise StackError(f"{path}: not a readable ELF file ({exc})") from None
    if "__vectors_start" not in symbols:
        raise StackError(f"{path}: no __vectors_start symbol (the vector table)")
    starts = sorted(ranked)
    funcs = {}
    for i, addr in enumerate(starts):  # an assembly function without .size runs to the next one
        size = max(s[4] for s in ranked[addr]) or (starts[i + 1] - addr if i + 1 < len(starts) else 0)
        funcs[addr] = Function(addr + size, [(s[2], s[3]) for s in sorted(ranked[addr])])
    vec_start = symbols["__vectors_start"]
    vec_base, vec_data = next(((b, d) for b, d in sections if b <= vec_start < b + len(d)), (vec_start, b""))
    vec_stop = symbols.get("__vectors_end", vec_base + len(vec_data))
    table = vec_data[vec_start - vec_base:vec_stop - vec_base]
    vectors = [w for (w,) in struct.iter_unpack("<I", table[:len(table) // 4 * 4])]
    words = set()
    for base, data in sections:
        if relocated is None:  # without relocations every aligned word may be a pointer
            spots = range(base + -base % 4, base + len(data) - 3, 4)
        else:
            spots = sorted(a for a in relocated if base <= a <= base + len(data) - 4)
        words.update(struct.unpack_from("<I", data, a - base)[0] for a in spots if not vec_start <= a < vec_stop)
    return funcs, words, vectors
