"""Worst-case stack depth of a linked Cortex-M firmware ELF, computed statically.

Why: the painted-stack peak the firmware reports covers only the paths one run took; a budget needs
a bound for every path, with an interrupt arriving at the worst moment. The bound combines gcc's
``-fstack-usage`` frames with the call graph of the *linked* code (``objdump -d``), so newlib,
libgcc and hand-written assembly are covered too. It is conservative (never too small) for code
like ours, which forms function addresses only as constants (literal pools, movw/movt pairs,
initialised data), never by arithmetic; anything the rules cannot bound is refused, naming the
function, instead of being guessed.

* Entries: vector 1 (reset) and every other non-null vector from ``__vectors_start`` (vector 0 is
  the initial SP). One exception level: the worst handler interrupts the deepest reset-path point,
  costing its path plus :data:`EXCEPTION_ENTRY_BYTES`. Preemption of a handler by a higher
  priority one (HardFault, NMI) is not modelled.
* Edges: ``bl``/``blx <addr>``, and branches out of the function (tail calls, counted like calls;
  a branch into another function's body, as libgcc's assembly shares tails, counts that whole
  function; a ``bl`` into the function's own body, a local subroutine, is none). ``blx rN``, ``bx rN`` (not lr) and other pc writes may reach every address-taken
  function: one whose address|1 is a word of an allocated section other than the vector table
  (pointer tables, literal pools) or is built by a movw/movt pair. When the ELF keeps its
  relocations (``-Wl,--emit-relocs``) only relocated words count, which removes integers that
  merely equal a function address; otherwise every aligned word does.
* Frames: the ``.su`` figure (``dynamic`` refused, ``dynamic,bounded`` accepted), or the sum of
  every constant sp decrement in the body (push, vpush, ``sub sp, #N``, pre-indexed stores),
  which over- rather than under-counts multi-exit code. Both are computed and the larger wins:
  gcc's figure leaves out what inline asm pushes (naked functions get 0) and the register
  arguments a variadic function pushes. A non-constant sp write is refused except in the reset
  entry (initial SP set-up), a ``dynamic,bounded`` function or a caller-``trusted`` one.
* ``.su`` entries match local symbols by (basename of the preceding STT_FILE symbol, name) and
  globals by name among the entries no local took; clones (``foo.constprop.0``) match gcc's
  unnumbered name. Entries of two different functions matching one symbol (same-named statics in
  same-named files) are refused rather than picked.
* Recursion is refused with its cycle named unless ``recursion_bounds`` gives one of its functions
  a depth: every function of the cycle (strongly connected component) then counts ``depth``
  times, a bound for any path on which none of them is active more than ``depth`` times.
"""

from __future__ import annotations

import re
import struct
import subprocess
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from .errors import TigrisError

#: Armv8-M extended exception frame: r0-r3, r12, lr, pc, xPSR, s0-s15, FPSCR, VPR = 26 words.
#: Lazy FP stacking reserves the FP part even when the FP registers are not saved.
EXCEPTION_FRAME_BYTES = 104
#: The frame is 8-byte aligned: when the interrupted code's sp is only 4-byte aligned (a leaf
#: may push an odd number of registers) the hardware leaves 4 more bytes unused.
EXCEPTION_ALIGN_PAD = 4
#: What one exception level costs on top of its handler's own frames.
EXCEPTION_ENTRY_BYTES = EXCEPTION_FRAME_BYTES + EXCEPTION_ALIGN_PAD

#: Reserved on top of the static worst case: a fault raised inside a handler (a second exception
#: level, which the analysis does not model) costs another entry plus a small fault handler.
STACK_MARGIN_BYTES = 2 * EXCEPTION_ENTRY_BYTES

#: R_ARM_ABS32, R_ARM_TARGET1 (.init_array), R_ARM_ABS32_NOI: an absolute address in place.
_ABSOLUTE_RELOCS = (2, 38, 55)
_COND = r"(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
_CALL = re.compile(rf"bl{_COND}(?:\.[nw])?")
_JUMP = re.compile(rf"(?:b{_COND}|cbn?z|le|letp|wls|wlstp)(?:\.[nw])?")
_REG_BRANCH = re.compile(rf"(bl?x)(?:ns)?{_COND}")
_BRANCH_FUTURE = re.compile(r"bf(?:l|x|lx|csel)?")
_LABELLED = re.compile(r"\b([0-9a-f]+) <[^>]*>")  # "540c <fn+0x518>": an address objdump resolved
_TARGET = re.compile(r"(?:^|[\s,])([0-9a-f]+)(?: <[^>]*>)?$")
_INSN = re.compile(r"\s*([0-9a-f]+):\t(\S+)(?:\t(.*))?")
_SU_LINE = re.compile(r"(.*?):(\d+):(\d+):(.+)\t(\d+)\t(static|dynamic|dynamic,bounded)")
_SP_WRITEBACK = re.compile(r"\[sp(?:, #(-?\d+))?\](!?)(?:, #(-?\d+))?")
_READS_FIRST = re.compile(r"(?:cmp|cmn|tst|teq|str|stm|vstr|vstm|pld|pli)")  # first operand is read


class StackError(TigrisError):
    """The stack cannot be bounded soundly; the message names the function and the cause."""


@dataclass(frozen=True)
class SuEntry:
    """One ``.su`` line; gcc names clones without their number (``foo.constprop`` for ``.0``)."""

    path: str
    line: int
    column: int
    name: str
    bytes: int
    kind: str  # static | dynamic | dynamic,bounded


@dataclass
class FunctionFrame:
    name: str
    bytes: int
    source: str  # "su" | "prologue" (from the instructions)


@dataclass
class StackReport:
    worst_bytes: int  # reset_bytes + handler_bytes
    reset_bytes: int
    handler_bytes: int  # worst handler path + EXCEPTION_ENTRY_BYTES; 0 without handlers
    reset_path: list[FunctionFrame]
    handler_path: list[FunctionFrame]
    functions: int  # reachable from the vector table
    from_prologue: list[str]  # reachable functions whose figure came from their instructions

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"exception_entry_bytes": EXCEPTION_ENTRY_BYTES}


@dataclass
class _Function:
    end: int
    symbols: list[tuple[str, str | None]]  # (name, STT_FILE basename if local), preferred first
    su: list[SuEntry] = field(default_factory=list)
    insns: list[tuple[int, str, str]] = field(default_factory=list)  # (address, mnemonic, operands)

    @property
    def name(self) -> str:
        return self.symbols[0][0]


def read_su(path: str | Path) -> list[SuEntry]:
    """Parse a ``.su`` file; a malformed line is an error, not a silently missing frame."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise StackError(f"{path}: cannot read ({exc.strerror})") from None
    entries = []
    for number, line in enumerate(lines, 1):
        m = _SU_LINE.fullmatch(line)
        if not m:
            raise StackError(f"{path}:{number}: not a gcc -fstack-usage line: {line!r}")
        entries.append(SuEntry(m[1], int(m[2]), int(m[3]), m[4], int(m[5]), m[6]))
    return entries


def analyse_stack(elf: str | Path, su_files: Iterable[str | Path], objdump: str = "arm-none-eabi-objdump",
                  recursion_bounds: Mapping[str, int] | None = None, trusted: Iterable[str] = ()) -> StackReport:
    """Worst-case stack of ``elf`` by the rules of the module docstring; raises :class:`StackError`."""
    graph = _Graph(Path(elf), objdump, dict(recursion_bounds or {}), set(trusted))
    graph.attach_su([e for path in su_files for e in read_su(path)])
    best = graph.worst_paths()
    reset_bytes, reset_path = best[graph.reset]
    handler_bytes, handler_path = max((best[h] for h in graph.handlers), key=lambda b: b[0], default=(0, []))
    handler_bytes += EXCEPTION_ENTRY_BYTES if graph.handlers else 0
    return StackReport(reset_bytes + handler_bytes, reset_bytes, handler_bytes, reset_path, handler_path, len(best),
                       sorted(f.name for f in map(graph.frame, best) if f.source == "prologue"))


class _Graph:
    """Functions by start address, their frames and callees, computed only once reached."""

    def __init__(self, elf: Path, objdump: str, bounds: dict[str, int], trusted: set[str]) -> None:
        self.bounds, self.trusted = bounds, trusted
        self.funcs, words, vectors = _read_elf(elf)
        self.starts = sorted(self.funcs)
        for insn in _disassemble(objdump, elf):
            i = bisect_right(self.starts, insn[0]) - 1
            if i >= 0 and insn[0] < self.funcs[self.starts[i]].end:
                self.funcs[self.starts[i]].insns.append(insn)
        pointers = words | self._movw_movt()
        self.taken = {a for a in self.funcs if a | 1 in pointers}
        if len(vectors) < 2 or not vectors[1]:
            raise StackError(f"{elf}: the vector table at __vectors_start has no reset entry")
        for number, value in enumerate(vectors[1:], 1):
            if value and (not value & 1 or value & ~1 not in self.funcs):
                raise StackError(f"{elf}: vector {number} (0x{value:08x}) is not a Thumb function address")
        self.reset = vectors[1] & ~1
        if not self.funcs[self.reset].insns:
            raise StackError(f"{objdump} gave no instructions for {self.funcs[self.reset].name} (not an Arm objdump?)")
        self.handlers = sorted({v & ~1 for v in vectors[2:] if v})
        self._frames: dict[int, FunctionFrame] = {}
        self._callees: dict[int, list[int]] = {}

    def _movw_movt(self) -> set[int]:
        """Values built by ``movw rN`` followed, in the same function, by ``movt rN``."""
        values = set()
        for fn in self.funcs.values():
            low: dict[str, int] = {}
            for _, op, args in fn.insns:
                m = re.fullmatch(r"(\w+), #(\d+)", args)
                if m and op.startswith("movw"):
                    low[m[1]] = int(m[2])
                elif m and op.startswith("movt") and m[1] in low:
                    values.add(int(m[2]) << 16 | low[m[1]])
        return values

    def attach_su(self, entries: list[SuEntry]) -> None:
        """Locals match (STT_FILE basename, name); globals the name among entries no local took,
        so a global never borrows the figure of a same-named static function."""
        by_file, by_name = defaultdict(list), defaultdict(list)
        for e in dict.fromkeys(entries):
            by_file[(Path(e.path).name, e.name)].append(e)
            by_name[e.name].append(e)
        claimed: set[SuEntry] = set()
        for fn in self.funcs.values():
            for name, file in fn.symbols:
                if file is not None:
                    fn.su += [e for n in _su_names(name) for e in by_file.get((file, n), [])]
            claimed.update(fn.su)
        for fn in self.funcs.values():
            fn.su += [e for name, file in fn.symbols if file is None
                      for n in _su_names(name) for e in by_name.get(n, []) if e not in claimed]

    def frame(self, addr: int) -> FunctionFrame:
        if addr not in self._frames:
            self._frames[addr] = self._frame(addr, self.funcs[addr])
        return self._frames[addr]

    def _frame(self, addr: int, fn: _Function) -> FunctionFrame:
        origins = sorted({f"{e.path}:{e.line}" for e in fn.su})
        if len(origins) > 1:
            raise StackError(f"{fn.name}: .su entries of different functions match it ({', '.join(origins)}); "
                             "cannot tell which one this code is")
        if any(e.kind == "dynamic" for e in fn.su):
            raise StackError(f"{fn.name}: dynamic stack use (VLA or alloca) without a bound ({origins[0]})")
        body, unbounded = 0, None
        for at, op, args in fn.insns:
            pushed = _sp_push(op, args)
            body += pushed or 0
            unbounded = unbounded or (f"'{op} {args}' at 0x{at:x}" if pushed is None else None)
        exempt = addr == self.reset or any(e.kind == "dynamic,bounded" for e in fn.su) or \
            any(name in self.trusted for name, _ in fn.symbols)
        if unbounded and not exempt:
            raise StackError(f"{fn.name}: {unbounded} sets sp to a value the analysis cannot bound "
                             "(name the function in trusted if its figure is right anyway)")
        su = max((e.bytes for e in fn.su), default=-1)
        return FunctionFrame(fn.name, su, "su") if su >= body else FunctionFrame(fn.name, body, "prologue")

    def callees(self, addr: int) -> list[int]:
        if addr not in self._callees:
            self._callees[addr] = sorted(self._find_callees(addr, self.funcs[addr]))
        return self._callees[addr]

    def _find_callees(self, start: int, fn: _Function) -> set[int]:
        out, indirect = set(), False
        for at, op, args in fn.insns:
            target = _TARGET.search(args)
            reg_branch = _REG_BRANCH.fullmatch(op)
            jump = _JUMP.fullmatch(op)
            if _CALL.fullmatch(op) or (target and (reg_branch or jump)):
                to = int(target[1], 16) if target else -1
                # A branch inside the function is control flow; a call into its own body (not its
                # entry) is a local subroutine, as in libgcc's soft-float assembly: its pushes are
                # already in the body's sum, and the return address stays in lr.
                if not (start <= to < fn.end and (jump or to != start)):
                    out.add(self._containing(to, f"{fn.name}: '{op} {args}' at 0x{at:x}"))
            elif _BRANCH_FUTURE.fullmatch(op):
                # Armv8.1-M branch future (GCC emits BFCSEL for the cortex-m55 with MVE): BF and
                # BFCSEL name a branch point in the function and a target, BFL a call, BFX/BFLX a
                # register; a target outside the function is a call or a tail call.
                if op in ("bfx", "bflx"):
                    indirect = True
                for label in _LABELLED.finditer(args):
                    to = int(label[1], 16)
                    if op == "bfl" or not start <= to < fn.end:
                        out.add(self._containing(to, f"{fn.name}: '{op} {args}' at 0x{at:x}"))
            elif reg_branch:
                indirect |= reg_branch[1] == "blx" or args != "lr"
            else:
                indirect |= _writes_pc(op, args)
        return out | self.taken if indirect else out

    def _containing(self, addr: int, what: str) -> int:
        i = bisect_right(self.starts, addr) - 1
        if i < 0 or addr >= self.funcs[self.starts[i]].end:
            raise StackError(f"{what} goes to 0x{addr:x}, outside every function")
        return self.starts[i]

    def worst_paths(self) -> dict[int, tuple[int, list[FunctionFrame]]]:
        """Deepest (bytes, path) from each reachable function; components come callees first."""
        best: dict[int, tuple[int, list[FunctionFrame]]] = {}
        for comp in self._components([self.reset, *self.handlers]):
            segment = [self.frame(f) for f in comp]
            if len(comp) > 1 or comp[0] in self.callees(comp[0]):
                depths = [self.bounds[n] for f in comp for n, _ in self.funcs[f].symbols if n in self.bounds]
                if not depths:
                    raise StackError(f"recursion {self._cycle(comp)} has no bound (recursion_bounds)")
                if min(depths) < 1:
                    raise StackError(f"recursion {self._cycle(comp)}: a depth bound must be at least 1")
                segment *= max(depths)
            below = max((best[c] for f in comp for c in self.callees(f) if c not in comp),
                        key=lambda b: b[0], default=(0, []))
            for f in comp:
                best[f] = (sum(s.bytes for s in segment) + below[0], segment + below[1])
        return best

    def _components(self, roots: list[int]) -> list[list[int]]:
        """Tarjan's strongly connected components (iterative), each led by its first-visited node."""
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        stack: list[int] = []
        out: list[list[int]] = []
        work: list[tuple[int, Any]] = []

        def visit(node: int) -> None:
            index[node] = low[node] = len(index)
            stack.append(node)
            work.append((node, iter(self.callees(node))))

        for root in roots:
            if root not in index:
                visit(root)
            while work:
                node, pending = work[-1]
                nxt = next(pending, None)
                if nxt is None:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        out.append(stack[stack.index(node):])
                        del stack[stack.index(node):]
                elif nxt not in index:
                    visit(nxt)
                elif nxt in stack:
                    low[node] = min(low[node], index[nxt])
        return out

    def _cycle(self, comp: list[int]) -> str:
        """A shortest cycle through the component's first node, as ``a -> b -> a``."""
        start, parent = comp[0], {}
        queue = deque([start])
        while True:  # the component has a cycle through every member, so this returns
            node = queue.popleft()
            if start in self.callees(node):
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return " -> ".join(self.funcs[a].name for a in [*reversed(path), start])
            for nxt in self.callees(node):
                if nxt in comp and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)


def _su_names(name: str) -> set[str]:
    """``.su`` spellings of an ELF function name (gcc drops a clone's number: foo.constprop.0)."""
    return {name, re.sub(r"\.\d+$", "", name)}


def _sp_push(op: str, args: str) -> int | None:
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


def _writes_pc(op: str, args: str) -> bool:
    """An indirect jump: pc loaded from a register or memory, other than the usual returns."""
    first, _, rest = args.partition(",")
    if "{" in args and re.search(r"\bpc\b", args[args.index("{"):]):
        return not (op.startswith("pop") or first.strip() == "sp!")
    return first.strip() == "pc" and not _READS_FIRST.match(op) and rest.strip() not in ("lr", "[sp], #4")


def _disassemble(objdump: str, elf: Path) -> list[tuple[int, str, str]]:
    """(address, mnemonic, operands) of every instruction, lower case, comments dropped."""
    try:
        proc = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True,
                              check=True)
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


def _read_elf(path: Path) -> tuple[dict[int, _Function], set[int], list[int]]:
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
        funcs[addr] = _Function(addr + size, [(s[2], s[3]) for s in sorted(ranked[addr])])
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


def reserve_for(worst_bytes: int) -> int:
    """The ``.stack`` reservation for a static worst case: plus the margin, rounded to 8 bytes
    (the AAPCS stack alignment)."""
    return (worst_bytes + STACK_MARGIN_BYTES + 7) // 8 * 8
