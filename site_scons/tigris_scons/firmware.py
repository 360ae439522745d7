"""The firmware: what it is built from, how, and its ``main.c`` rendered from ``main.c.j2``.

The template context is derived from the plan and the model declaration only (contract in
docs/firmware.md#template-context): arena and buffer sizes are numbers in the generated C, so the
linker places them and the ELF size map sees them; nothing else about the model is compiled in.
A fast arena declared as ``auto`` is sized to exactly what the plan needs (compile budget plus
the LZ4 weight reserve, as the runtime's ``tgr_fast_arena_required`` computes it); a slow arena
declared ``auto`` to exactly what the plan's run uses, as the runtime itself measures it on the
host (``tgr_plan_needs``).

The source list and the compiler/linker flags below are the one definition used by the SCons
tools (``tigris_cm55``, ``tigris``) and by the firmware tests that build without SCons.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .boards import DEFAULT_BOARD, get_board
from .builtin import parse_needs
from .declaration import MAX_RUNS, check_name, effective_runs, parse_seed
from .errors import TigrisError
from .plan import PlanInfo

DEFAULT_PLAN_WINDOW = 16 * 1024 * 1024
DEFAULT_STACK_BYTES = 16 * 1024  # firmware.ld __stack_size
DEFAULT_TENSOR_ALIGN = 16  # TGR_TENSOR_ALIGN of target builds (the host library uses tgr.h's 32)
MAIN_TEMPLATE = "main.c.j2"
#: The default board's script; every board's script INCLUDEs firmware.ld, so links pass
#: ``-L firmware_templates`` (boards.Board.linker_script names the others).
LINKER_SCRIPT = "an547.ld"
SECTIONS_SCRIPT = "firmware.ld"
#: C files of every firmware build, in ``firmware_templates/`` (plus the rendered main.c).
SOURCES = ("startup.c", "semihosting.c", "systick.c", "sha256.c")
#: Test builds only (``-DFW_SELFTEST=<n>``): fault and exit hooks.
SELFTEST_SOURCE = "selftest.c"

#: The default board's core flags (each board's are in boards.py).
CPU_FLAGS = get_board(DEFAULT_BOARD).cpu_flags
SECTION_FLAGS = ("-ffunction-sections", "-fdata-sections")
GC_LINK_FLAGS = ("-Wl,--gc-sections",)
#: Target code is built for size: the loader, executor, checks and firmware run once or once per
#: stage. Kernels are where the MACs are: FAST_LAYERS are built for speed on top (the last -O wins).
#: The firmware never sets a trace sink, so its runtime is built without trace events (TGR_TRACE).
C_FLAGS = ("-Os", "-g", "-std=c99", "-Wall", "-Wextra", "-Werror", "-DTGR_TRACE=0")
FAST_LAYERS = ("kernels",)
FAST_FLAGS = ("-O2",)
#: Frame sizes per function (``<object>.su``) for the static stack bound (stackuse.py), and the
#: relocations kept in the ELF so that only real pointers count as address-taken functions.
STACK_FLAGS = ("-fstack-usage",)
STACK_LINK_FLAGS = ("-Wl,--emit-relocs",)
#: On top of the toolchain's (CPU, --gc-sections): our own start-up code, newlib-nano's libc
#: (memcpy, ...) through the specs, and no syscall stubs (stdio or malloc fail to link).
LINK_FLAGS = ("-nostartfiles", "--specs=nano.specs")
LIBS = ("m",)

#: Names ``main.c.j2`` requires (``input_seed`` is optional there; ``template_context`` sets it).
REQUIRED_CONTEXT = ("model_name", "fast_arena_bytes", "slow_arena_bytes", "slow_in_ddr", "workspace_tensors",
                    "plan_window_bytes", "io_buffer_bytes", "num_inputs", "num_outputs", "float_inputs",
                    "float_outputs")
_U32 = 2**32 - 1


@dataclass(frozen=True)
class FirmwareParams:
    """What the declaration and the command line decide about the firmware."""

    model_name: str
    fast_arena: int | None  # None = auto
    slow_arena: int | None  # None = auto: what the plan's run uses (tgr_plan_needs slow_peak)
    slow_in_ddr: bool
    seed: int
    tensor_align: int
    plan_window: int = DEFAULT_PLAN_WINDOW
    validate: str = "full"  # full: the firmware's loader validates the plan; digest: see template_context
    profile: bool = False  # PROFILE lines: ticks per op and per execution unit (runtime built with TGR_PROFILE)
    runs: int | None = None  # inferences in a row; None: declaration.effective_runs decides from the plan
    board: str = DEFAULT_BOARD  # QEMU machine (boards.py): what BENCH_START names, the WORK clock
    stage_memory: bool = False  # STAGE_MEM lines: fast/slow arena use per stage (runtime built with TGR_STAGE_MEMORY)


def fast_arena_bytes(declared: int | None, plan: PlanInfo, align: int) -> int:
    """The fast arena a firmware gets: the declared size, else (``auto``) what the plan needs."""
    return plan.fast_arena_required(align) if declared is None else declared


def needs_arguments(fast: int | None, slow: int | None, plan: PlanInfo, align: int) -> list[str]:
    """``tgr_plan_needs PLAN FAST SLOW``'s last two arguments: the arenas this firmware will have,
    so the runtime answers for them (``auto`` slow: it reports what the plan's run uses)."""
    return [str(fast_arena_bytes(fast, plan, align)), "auto" if slow is None else str(slow)]


def main_context(params: FirmwareParams, plan: PlanInfo, plan_bytes: bytes, needs_text: str) -> dict[str, Any]:
    """The context ``main.c`` is rendered from, given the plan and ``tgr_plan_needs``' answer.

    Refuses what would build a firmware that cannot work: ``validate=digest`` for a plan the
    runtime refuses on the host (the firmware would bind it without its loader), and a declared
    fast arena below what the plan needs (the run would fail; the message says what to raise).
    """
    needs = parse_needs(needs_text)
    digest = None
    if params.validate == "digest":
        if needs is None:
            raise TigrisError(f"validate=digest: the runtime refuses this plan on the host, so no firmware may bind "
                              f"it unchecked: {needs_text.strip().removeprefix('error ')}")
        digest = hashlib.sha256(plan_bytes).hexdigest()
    context = template_context(params, plan, needs.slow_peak if needs is not None else None, digest)
    if params.fast_arena is not None and params.fast_arena < context["fast_arena_required"]:
        raise TigrisError(
            f"fast arena {params.fast_arena} B is smaller than the plan needs "
            f"({context['fast_arena_required']} B = budget {plan.budget} B + weight reserve); "
            "raise fast_kb= / [arena] fast, or use auto"
        )
    return context


def runtime_variant(cpu_id: str, align: int, *, messages: bool, mve: bool, profile: bool,
                    stage_memory: bool) -> str:
    """Folder of one compiled form of the runtime library, shared by every model built with the
    same core and options: ``cm55/runtime-a16``, ``cm4/runtime-a16``, plus ``-m0`` (messages=0),
    ``-mve`` (mve=1), ``-prof`` (profile=1), ``-smem`` (stage_memory=1) in that order."""
    return (f"{cpu_id}/runtime-a{align}" + ("" if messages else "-m0") + ("-mve" if mve else "")
            + ("-prof" if profile else "") + ("-smem" if stage_memory else ""))


def template_context(params: FirmwareParams, plan: PlanInfo, slow_needed: int | None = None,
                     plan_digest: str | None = None) -> dict[str, Any]:
    """The Jinja2 context for ``main.c.j2`` (checked with :func:`check_context`).

    ``slow_needed`` is the slow arena the plan's run uses with these arenas (``tgr_plan_needs``),
    taken for a slow arena declared ``auto``; unknown (the runtime refused the plan) it is 0,
    and the firmware reports the runtime's refusal itself. With ``validate="digest"``,
    ``plan_digest`` is the SHA-256 (hex) of the plan the build validated: the firmware binds that
    plan without its loader and refuses any other (docs/firmware.md#validation); a checksum
    would let a plan built to collide with it through.
    """
    if params.validate not in ("full", "digest"):
        raise TigrisError(f"validate={params.validate}: expected full or digest")
    if params.validate == "digest" and not (isinstance(plan_digest, str) and re.fullmatch(r"[0-9a-f]{64}", plan_digest)):
        raise TigrisError("validate=digest needs the SHA-256 of a plan the runtime accepted")
    need = plan.fast_arena_required(params.tensor_align)
    fast = fast_arena_bytes(params.fast_arena, plan, params.tensor_align)
    slow = params.slow_arena if params.slow_arena is not None else (slow_needed or 0)
    board = get_board(params.board)
    problems = board.arena_problems(fast, slow, not params.slow_in_ddr)
    if problems:
        raise TigrisError(f"{params.model_name} does not fit {board.machine}: {'; '.join(problems)}")
    if plan.file_size > params.plan_window:
        raise TigrisError(
            f"plan is {plan.file_size} bytes, larger than the {params.plan_window}-byte plan window at "
            f"0x{board.plan_address:08x} on {board.machine}"
        )
    return check_context({
        "model_name": params.model_name,
        "target": board.target,
        "work_clock": board.work_clock,
        "stage_memory": params.stage_memory,
        "fast_arena_bytes": fast,
        "fast_arena_required": need,
        "slow_arena_bytes": slow,
        "slow_arena_auto": params.slow_arena is None,
        "slow_in_ddr": params.slow_in_ddr,
        "workspace_tensors": plan.num_tensors,
        "plan_window_bytes": params.plan_window,
        "input_seed": params.seed,
        "plan_digest": plan_digest if params.validate == "digest" else None,
        "io_buffer_bytes": plan.io_buffer_bytes,
        "num_inputs": len(plan.inputs),
        "num_outputs": len(plan.outputs),
        "float_inputs": any(t.dtype_name == "float32" for t in plan.inputs),
        "float_outputs": any(t.dtype_name == "float32" for t in plan.outputs),
        "index_inputs": any(t.dtype_name in ("int32", "int64") for t in plan.inputs),
        "state_bytes": plan.state_bytes,
        "runs": effective_runs(params.runs, plan.state_bytes),
        "tensor_align": params.tensor_align,
        "profile": params.profile,
        "num_ops": plan.num_ops,
        "num_stages": plan.num_stages,
    })


def check_context(context: dict[str, Any]) -> dict[str, Any]:
    """Refuse a context that would render C that does not compile or does not mean what it says.

    Names and seeds follow the declaration's own rules; sizes must be 32-bit unsigned; the plan
    window must be what the linker script accepts (a multiple of 16, at least one header).
    Returns ``context`` unchanged.
    """
    missing = [k for k in REQUIRED_CONTEXT if k not in context]
    if missing:
        raise TigrisError(f"{MAIN_TEMPLATE} context lacks {', '.join(missing)}")
    check_name(context["model_name"], f"{MAIN_TEMPLATE} context: model_name")
    parse_seed(context.get("input_seed", 0x9E3779B9), f"{MAIN_TEMPLATE} context: input_seed")
    for key, high in (("fast_arena_bytes", _U32), ("slow_arena_bytes", _U32), ("io_buffer_bytes", _U32),
                      ("state_bytes", _U32), ("runs", MAX_RUNS),
                      ("num_inputs", 255), ("num_outputs", 255),
                      ("workspace_tensors", 0xFFFF), ("plan_window_bytes", 2**31)):
        value = context.get(key, 1 if key == "runs" else 0)  # state_bytes and runs are optional
        low = 1 if key == "runs" else 0
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise TigrisError(f"{MAIN_TEMPLATE} context: {key} must be an integer in {low}..{high}, got {value!r}")
    if context["plan_window_bytes"] < 48 or context["plan_window_bytes"] % 16:
        raise TigrisError(f"{MAIN_TEMPLATE} context: plan_window_bytes must be a multiple of 16 and at least 48, "
                          f"got {context['plan_window_bytes']}")
    for key in ("slow_in_ddr", "float_inputs", "float_outputs", "index_inputs"):
        if key in context and not isinstance(context[key], bool):
            raise TigrisError(f"{MAIN_TEMPLATE} context: {key} must be true or false, got {context[key]!r}")
    return context


def render_main(templates_dir: str | Path, context: dict[str, Any]) -> str:
    """Render ``main.c.j2`` with strict undefined handling (a missing key is an error)."""
    try:
        import jinja2
    except ImportError:
        raise TigrisError("Python package jinja2 is missing: pip install -r requirements.txt") from None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    try:
        return env.get_template(MAIN_TEMPLATE).render(**context)
    except jinja2.TemplateNotFound:
        raise TigrisError(f"{Path(templates_dir) / MAIN_TEMPLATE} does not exist") from None
    except jinja2.TemplateError as exc:
        raise TigrisError(f"{Path(templates_dir) / MAIN_TEMPLATE}: {exc}") from None
