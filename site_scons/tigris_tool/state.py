"""The one state object of a build: what the tigris tools declare once and read back later.

Why there is state at all: SCons reads every SConscript before it builds, and some nodes are
shared by every model that needs them (the runtime library of one core and set of options, the
generated units of a folder, the host library, ``tgr_plan_needs`` of a tensor alignment, the guard
target of a missing tool): declaring one twice would give SCons two builders for one file. And
some actions need what happened earlier in the same run: whether a budget table was printed
already, which sweeps were declared and which of their reports written (for the report at exit).

The object lives in the environment as ``$TIGRISBUILD_STATE``, set when a tigris tool is loaded
(``SetDefault``: never replaced). ``env.Clone()``, override environments and the private
environments the tool makes copy construction variables semi-deeply: lists and dictionaries are
copied, any other object is shared. So every environment derived from the one that loaded the tool
uses the same state, and actions reach it through the ``env`` they are given.

The rule for an SConstruct: environments that load the tool with the same build directory must be
clones of one another (or be given the same ``TIGRISBUILD_STATE``). Two unrelated environments
would each declare the shared nodes, and SCons refuses two builders for one target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATE = "TIGRISBUILD_STATE"


@dataclass
class Sweep:
    """One declared ``fit`` sweep, as the report written at exit needs it."""

    model: str
    board: str
    parts_dir: str
    outputs: list[str]  # <m>.fit.json, .fit.txt, .fit.svg (absolute)
    picture: str  # the .fit.svg as the table names it
    points: list[tuple[int, int, str, Any]]  # (budget, stages, folder + separator, row node)
    #: the same budgets on the board of each other core among the catalog parts: (core, board, points)
    other_cores: list[tuple[str, str, list[tuple[int, int, str, Any]]]] = field(default_factory=list)


@dataclass(eq=False)
class BuildState:
    """Nodes declared once per build, keyed by what makes them distinct, and what this run did."""

    printed_tables: set[str] = field(default_factory=set)  # stamps whose budget table was printed
    runtime_libraries: dict[str, tuple[list, list]] = field(default_factory=dict)  # folder|cross -> (lib, objects)
    guards: dict[str, Any] = field(default_factory=dict)  # guard file -> its always-failing node
    host_outputs: dict[str, list] = field(default_factory=dict)  # host output folder -> its library node
    full_units: dict[str, list] = field(default_factory=dict)  # folder -> the full runtime's generated units
    needs_tools: dict[int, Any] = field(default_factory=dict)  # tensor alignment -> tgr_plan_needs
    sweeps: list[Sweep] = field(default_factory=list)
    fit_reports_written: set[str] = field(default_factory=set)  # <m>.fit.json written in this run

    def __repr__(self) -> str:  # scons --debug / env.Dump(): a name, not every node
        return f"<tigris BuildState: {len(self.runtime_libraries)} runtime libraries, {len(self.sweeps)} sweeps>"


def state_of(env) -> BuildState:
    """The build's state, from any environment derived from one that loaded a tigris tool."""
    return env[STATE]
