"""Who uses whom in the C runtime, read from built objects and from ``#include`` lines.

The layer rule (``runtime/src/README.md``): a unit may use units of its own layer folder or
of a lower layer, and no units may form a cycle. Symbols are what the linker sees, so a call
through a header's prototype counts and a comment does not; includes catch what symbols
cannot: types, macros and ``static inline`` functions taken from a higher layer's header.

Pure functions over ``nm`` output and file text, so ``test_layers.py`` can feed them both the
real objects and deliberately wrong ones.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tigris_scons import runtime_tree

#: nm symbol types that define a symbol other objects can link against.
_DEFINED = set("TDBRVWC")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


@dataclass(frozen=True)
class Edge:
    """``source`` references symbols defined in ``target``."""

    source: str
    target: str
    symbols: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({', '.join(self.symbols)})"


def read_symbols(nm: str, obj: Path) -> tuple[set[str], set[str]]:
    """(defined global symbols, undefined symbols) of one object file."""
    out = subprocess.run([nm, "--format=posix", str(obj)], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in _DEFINED:
            defined.add(name)
    return defined, undefined


def symbol_edges(symbols: dict[str, tuple[set[str], set[str]]]) -> list[Edge]:
    """Unit-to-unit references, from each unit's (defined, undefined) symbols.

    Symbols nobody in the set defines (libc, libm) are not edges. A symbol defined twice is an
    error: the edge would depend on link order.
    """
    owner: dict[str, str] = {}
    for unit, (defined, _) in symbols.items():
        for name in defined:
            if name in owner:
                raise ValueError(f"{name} is defined by both {owner[name]} and {unit}")
            owner[name] = unit
    by_pair: dict[tuple[str, str], list[str]] = defaultdict(list)
    for unit, (_, undefined) in symbols.items():
        for name in undefined:
            target = owner.get(name)
            if target is not None and target != unit:
                by_pair[(unit, target)].append(name)
    return [Edge(s, t, tuple(sorted(names))) for (s, t), names in sorted(by_pair.items())]


def include_edges(runtime: Path, files: list[Path]) -> list[Edge]:
    """File-to-header edges from quoted ``#include`` lines, named as units (``plan/plan.h`` ->
    ``plan/plan``); the public ``runtime/include`` headers are every layer's and not edges.

    An include that resolves nowhere is an error, so a stale path cannot hide an edge.
    """
    root = runtime_tree.source_root(runtime)
    public = Path(runtime) / "include"
    edges = []
    for path in files:
        unit = runtime_tree.unit_name(runtime, path)
        for name in _INCLUDE.findall(path.read_text()):
            local, layered, api = path.parent / name, root / name, public / name
            if api.is_file() and not (root / name).is_file():
                continue
            header = layered if layered.is_file() else local
            if not header.is_file():
                raise ValueError(f"{path}: #include \"{name}\" is not under {root}, {public} or next to the file")
            if header.parent == path.parent and path.parent.name == runtime_tree.HOST_LAYER:
                continue  # the host shim's own header
            target = runtime_tree.unit_name(runtime, header.with_suffix(".c"))
            if target != unit:
                edges.append(Edge(unit, target, (name,)))
    return edges


def allow(edges: list[Edge], allowed: Edge) -> list[Edge]:
    """``edges`` without the ``allowed`` one: an edge between the same two units that uses no
    symbol beyond ``allowed.symbols``. An edge between them that uses any other symbol stays, so
    the exception covers exactly the named calls and nothing that grows next to them."""
    return [e for e in edges
            if not (e.source == allowed.source and e.target == allowed.target and set(e.symbols) <= set(allowed.symbols))]


def upward(edges: list[Edge]) -> list[Edge]:
    """Edges from a lower layer to a higher one: the layer rule broken."""
    return [e for e in edges if runtime_tree.layer_rank(e.source) < runtime_tree.layer_rank(e.target)]


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected groups of more than one unit (Tarjan), each as a closed path
    ``a -> b -> ... -> a`` through its edges, so the message shows where to cut."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_closed_path(graph, group) for group in groups]


def _closed_path(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first member, staying inside the group."""
    start = min(group)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{sorted(group)} is not strongly connected")
