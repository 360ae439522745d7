"""The firmware: what it is built from, how, and its ``main.c`` rendered from ``main.c.j2``.

The template context is derived from the plan and the model declaration only (contract in
docs/firmware.md#template-context): arena and buffer sizes are numbers in the generated C, so the
linker places them and the ELF size map sees them; nothing else about the model is compiled in.
A fast arena declared as ``auto`` is sized to exactly what the plan needs (compile budget plus
the LZ4 weight reserve, as the runtime's ``tgr_fast_arena_required`` computes it).

The source list and the compiler/linker flags below are the one definition used by the SCons
tools (``tigris_cm55``, ``tigris``) and by the firmware tests that build without SCons.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .declaration import check_name, parse_seed
from .errors import TigrisError
from .plan import PlanInfo

DEFAULT_PLAN_WINDOW = 16 * 1024 * 1024
DEFAULT_STACK_BYTES = 16 * 1024  # an547.ld __stack_size
DEFAULT_TENSOR_ALIGN = 16  # TGR_TENSOR_ALIGN of target builds (the host library uses tgr.h's 32)
MAIN_TEMPLATE = "main.c.j2"
LINKER_SCRIPT = "an547.ld"
#: C files of every firmware build, in ``firmware_templates/`` (plus the rendered main.c).
SOURCES = ("startup.c", "semihosting.c", "systick.c")
#: Test builds only (``-DFW_SELFTEST=<n>``): fault and exit hooks.
SELFTEST_SOURCE = "selftest.c"

CPU_FLAGS = ("-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard")
SECTION_FLAGS = ("-ffunction-sections", "-fdata-sections")
GC_LINK_FLAGS = ("-Wl,--gc-sections",)
C_FLAGS = ("-O2", "-g", "-std=c99", "-Wall", "-Wextra", "-Werror")
#: On top of the toolchain's (CPU, --gc-sections): our own start-up code, newlib-nano's libc
#: (memcpy, ...) through the specs, and no syscall stubs (stdio or malloc fail to link).
LINK_FLAGS = ("-nostartfiles", "--specs=nano.specs")
LIBS = ("m",)

#: Names ``main.c.j2`` requires (``input_seed`` is optional there; ``template_context`` sets it).
REQUIRED_CONTEXT = ("model_name", "fast_arena_bytes", "slow_arena_bytes", "slow_in_ddr", "workspace_tensors",
                    "plan_window_bytes", "io_buffer_bytes")
_U32 = 2**32 - 1


@dataclass(frozen=True)
class FirmwareParams:
    """What the declaration and the command line decide about the firmware."""

    model_name: str
    fast_arena: int | None  # None = auto
    slow_arena: int
    slow_in_ddr: bool
    seed: int
    tensor_align: int
    plan_window: int = DEFAULT_PLAN_WINDOW


def template_context(params: FirmwareParams, plan: PlanInfo) -> dict[str, Any]:
    """The Jinja2 context for ``main.c.j2`` (checked with :func:`check_context`)."""
    need = plan.fast_arena_required(params.tensor_align)
    fast = need if params.fast_arena is None else params.fast_arena
    if plan.file_size > params.plan_window:
        raise TigrisError(
            f"plan is {plan.file_size} bytes, larger than the {params.plan_window}-byte plan window at 0x60000000"
        )
    return check_context({
        "model_name": params.model_name,
        "fast_arena_bytes": fast,
        "fast_arena_required": need,
        "slow_arena_bytes": params.slow_arena,
        "slow_in_ddr": params.slow_in_ddr,
        "workspace_tensors": plan.num_tensors,
        "plan_window_bytes": params.plan_window,
        "input_seed": params.seed,
        "io_buffer_bytes": plan.io_buffer_bytes,
        "tensor_align": params.tensor_align,
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
                      ("workspace_tensors", 0xFFFF), ("plan_window_bytes", 2**31)):
        value = context[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise TigrisError(f"{MAIN_TEMPLATE} context: {key} must be an integer in 0..{high}, got {value!r}")
    if context["plan_window_bytes"] < 48 or context["plan_window_bytes"] % 16:
        raise TigrisError(f"{MAIN_TEMPLATE} context: plan_window_bytes must be a multiple of 16 and at least 48, "
                          f"got {context['plan_window_bytes']}")
    if not isinstance(context["slow_in_ddr"], bool):
        raise TigrisError(f"{MAIN_TEMPLATE} context: slow_in_ddr must be true or false, got {context['slow_in_ddr']!r}")
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
