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
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .armcode import (BRANCH_FUTURE, CALL, JUMP, LABELLED, REG_BRANCH, TARGET, Function, StackError,
                      disassemble, read_elf, sp_push, writes_pc)

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

_SU_LINE = re.compile(r"(.*?):(\d+):(\d+):(.+)\t(\d+)\t(static|dynamic|dynamic,bounded)")


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
        self.funcs, words, vectors = read_elf(elf)
        self.starts = sorted(self.funcs)
        for insn in disassemble(objdump, elf):
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

    def _frame(self, addr: int, fn: Function) -> FunctionFrame:
        origins = sorted({f"{e.path}:{e.line}" for e in fn.su})
        if len(origins) > 1:
            raise StackError(f"{fn.name}: .su entries of different functions match it ({', '.join(origins)}); "
                             "cannot tell which one this code is")
        if any(e.kind == "dynamic" for e in fn.su):
            raise StackError(f"{fn.name}: dynamic stack use (VLA or alloca) without a bound ({origins[0]})")
        body, unbounded = 0, None
        for at, op, args in fn.insns:
            pushed = sp_push(op, args)
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

    def _find_callees(self, start: int, fn: Function) -> set[int]:
        out, indirect = set(), False
        for at, op, args in fn.insns:
            target = TARGET.search(args)
            reg_branch = REG_BRANCH.fullmatch(op)
            jump = JUMP.fullmatch(op)
            if CALL.fullmatch(op) or (target and (reg_branch or jump)):
                to = int(target[1], 16) if target else -1
                # A branch inside the function is control flow; a call into its own body (not its
                # entry) is a local subroutine, as in libgcc's soft-float assembly: its pushes are
                # already in the body's sum, and the return address stays in lr.
                if not (start <= to < fn.end and (jump or to != start)):
                    out.add(self._containing(to, f"{fn.name}: '{op} {args}' at 0x{at:x}"))
            elif BRANCH_FUTURE.fullmatch(op):
                # Armv8.1-M branch future: BF and BFCSEL name a branch point in the function and a
                # target, BFL a call, BFX/BFLX a register; a target outside the function is a call
                # or a tail call. (GCC does not emit them; objdump reads Helium's VCTP as BFCSEL
                # unless told the architecture, which armcode.disassemble does for MVE ELFs.)
                if op in ("bfx", "bflx"):
                    indirect = True
                for label in LABELLED.finditer(args):
                    to = int(label[1], 16)
                    if op == "bfl" or not start <= to < fn.end:
                        out.add(self._containing(to, f"{fn.name}: '{op} {args}' at 0x{at:x}"))
            elif reg_branch:
                indirect |= reg_branch[1] == "blx" or args != "lr"
            else:
                indirect |= writes_pc(op, args)
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


def reserve_for(worst_bytes: int) -> int:
    """The ``.stack`` reservation for a static worst case: plus the margin, rounded to 8 bytes
    (the AAPCS stack alignment)."""
    return (worst_bytes + STACK_MARGIN_BYTES + 7) // 8 * 8
