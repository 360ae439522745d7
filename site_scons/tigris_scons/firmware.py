"""Render the firmware's ``main.c`` from ``firmware_templates/main.c.j2``.

The template context is derived from the plan and the model declaration only (contract in
firmware_templates/README.md): arena and buffer sizes are numbers in the generated C, so the
linker places them and the ELF size map sees them; nothing else about the model is compiled in.
A fast arena declared as ``auto`` is sized to exactly what the plan needs (compile budget plus
the LZ4 weight reserve, as the runtime's ``tgr_fast_arena_required`` computes it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import TigrisError
from .plan import PlanInfo

DEFAULT_PLAN_WINDOW = 16 * 1024 * 1024
MAIN_TEMPLATE = "main.c.j2"


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
    """The Jinja2 context for ``main.c.j2``."""
    need = plan.fast_arena_required(params.tensor_align)
    fast = need if params.fast_arena is None else params.fast_arena
    if plan.file_size > params.plan_window:
        raise TigrisError(
            f"plan is {plan.file_size} bytes, larger than the {params.plan_window}-byte plan window at 0x60000000"
        )
    return {
        "model_name": params.model_name,
        "fast_arena_bytes": fast,
        "fast_arena_required": need,
        "slow_arena_bytes": params.slow_arena,
        "slow_in_ddr": params.slow_in_ddr,
        "workspace_tensors": plan.num_tensors,
        "plan_window_bytes": params.plan_window,
        "input_seed": params.seed,
        "io_buffer_bytes": io_buffer_bytes(plan),
        "tensor_align": params.tensor_align,
    }


def io_buffer_bytes(plan: PlanInfo) -> int:
    """Plain sum of the interface byte sizes (the template adds its own alignment slack)."""
    return sum(t.size_bytes for t in (*plan.inputs, *plan.outputs))


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


def params_dict(params: FirmwareParams) -> dict[str, Any]:
    return asdict(params)
