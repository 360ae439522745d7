"""SCons tool ``tigris``: TiGrIS model -> Cortex-M firmware -> QEMU run -> budget checks.

Use it from any SConstruct::

    env = Environment(tools=["default", "tigris"], toolpath=["<tigris-scons>/site_scons/site_tools"])
    kws = env.TigrisModel("models/kws/model.toml")          # or "kws.onnx", budget="20K", sram="64K"
    Default(kws.default)                                     # firmware + size check; kws.run runs QEMU

This module is the tool's entry point only: construction-variable defaults, the command-line
variables for ``scons -h`` (``env.TigrisAddVariables``), the methods it adds (``TigrisModel``,
``TigrisModels``, ``TigrisFit``) and the tools it loads (``tigris_host``; ``tigris_cm55`` in
the private cross environments). What the methods declare lives in the ``tigris_tool`` package
next to ``site_tools/`` (model graph, fit sweep, shared nodes, actions, state); every decision a
check makes lives in the pure ``tigris_scons`` package.

Rules this tool keeps for living inside other people's trees: it only sets construction
variables prefixed ``TIGRISBUILD_`` (with ``SetDefault``, so values set before loading win), it
never calls ``Default``/``Decider``/``SetOption``/``DefaultEnvironment``, target code is built
in private environments (only ``ENV`` and ``TIGRISBUILD_*`` are inherited, never the user's
compiler flags), and ``firmware_templates/`` and ``runtime/`` are located relative to this file
(override with ``TIGRISBUILD_TEMPLATES_DIR`` / ``TIGRISBUILD_RUNTIME_DIR``). The build's state
(``TIGRISBUILD_STATE``) is shared by every clone of the environment that loaded the tool: load
it once and clone, rather than loading it into two unrelated environments with one build folder.

Note: SCons registers tool modules in ``sys.modules`` under their plain name, so inside an
SCons process ``tigris`` is this module, not the tigris-ml package. Everything that needs
tigris-ml (compile, fit ladder, host reference) therefore runs in a child Python process.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT / "site_scons") not in sys.path:  # loaded from another SConstruct's toolpath
    sys.path.insert(0, str(_ROOT / "site_scons"))

from tigris_scons import declaration as decl_mod  # noqa: E402
from tigris_scons import firmware as firmware_recipe  # noqa: E402
from tigris_scons.boards import ALL_REGION_NAMES, BOARDS, DEFAULT_BOARD  # noqa: E402
from tigris_tool.fit import tigris_fit  # noqa: E402
from tigris_tool.model import DEFAULT_QEMU_TIMEOUT, tigris_model, tigris_models  # noqa: E402
from tigris_tool.state import BuildState  # noqa: E402


def add_variables(env, opts) -> None:
    """Add the tool's command-line variables to a ``Variables`` object (for ``scons -h``).

    Deliberately not the tool-protocol ``options()`` hook: SCons would then read these names
    from ``ARGUMENTS`` into every environment that loads the tool, and a host tree may already
    use ``model=`` or ``verbose=`` for something else. Call ``env.TigrisAddVariables(vars)``
    explicitly instead.
    """
    from SCons.Variables import BoolVariable, EnumVariable

    opts.Add("model", "model(s) to build: a name under models/, a model.toml, or a .onnx/.tflite/.tgrs file; "
             "comma-separated for several", "ds_cnn")
    for key, text in decl_mod.OVERRIDE_KEYS.items():
        opts.Add(key, text, None)
    for region in ALL_REGION_NAMES:
        opts.Add(f"{decl_mod.REGION_OVERRIDE_PREFIX}{region.lower()}", f"budget for ELF region {region}, e.g. 64K", None)
    opts.Add("qemu_timeout", f"seconds before a QEMU run is killed (default: model's [run] timeout, else {DEFAULT_QEMU_TIMEOUT:g})", None)
    opts.Add(EnumVariable("board", "QEMU board (machine): mps3-an547 (Cortex-M55), mps2-an386 (Cortex-M4), "
                          "mps2-an500 (Cortex-M7), mps2-an505 (Cortex-M33)", DEFAULT_BOARD, allowed_values=tuple(BOARDS)))
    opts.Add(BoolVariable("stage_memory", "1: the firmware prints fast and slow arena use per stage (STAGE_MEM lines) "
                          "and the check draws <model>.stages.svg next to the host reference", False))
    opts.Add("qemu", "QEMU binary", "qemu-system-arm")
    opts.Add("qemu_flags", "extra QEMU arguments, e.g. '-d guest_errors'", "")
    opts.Add(BoolVariable("icount", "1 (default): run QEMU with -icount shift=0, so the firmware's WORK line (SysTick "
                          "ticks of one inference; x31.25 = instructions on mps3-an547, x40 on mps2-an386/an500, x50 on mps2-an505) repeats exactly and goes to <model>.run.json; "
                          "0: QEMU's clock follows host time and the figure varies; a count of work, not latency", True))
    opts.Add("fit_cores", "fit: the cores whose work the part lines show, each measured on its own board: all "
             "(default: every core among the catalog parts) or a comma list such as Cortex-M4,Cortex-M55", "all")
    opts.Add("cross", "cross toolchain prefix", "arm-none-eabi-")
    opts.Add(BoolVariable("messages", "0: the firmware keeps status codes but drops every message text "
                          "(smallest image); 1 (default): messages say why a plan was refused", True))
    opts.Add(EnumVariable("validate", "full: the firmware validates the plan with the runtime's loader (plans can "
                          "change after the build); digest: the build validates it, the firmware checks its "
                          "FNV-1a digest and links no loader (the plan is fixed with the firmware)", "full",
                          allowed_values=("full", "digest")))
    opts.Add(BoolVariable("mve", "1: build for the Cortex-M55 with Helium (-mcpu=cortex-m55; kernels in MVE); "
                          "0 (default): cortex-m55+nomve, kernels on the DSP extension", False))
    opts.Add(BoolVariable("profile", "1: the firmware prints SysTick ticks and multiply-accumulates per op and "
                          "ticks per execution unit (PROFILE lines; with icount=1, ticks x31.25 = instructions on mps3-an547)", False))
    opts.Add("runtime", "what the firmware's runtime links: plan (the ops and paths the model's plan takes), "
             "full (everything), or a .tgrs file (what that plan takes)", "plan")
    opts.Add(EnumVariable("tensor_align", "TGR_TENSOR_ALIGN for the runtime (target default 16, host default 32)", "",
                          allowed_values=("", "16", "32")))
    opts.Add(EnumVariable("budget_mode", "error: over-budget fails the build; warn: report only", "error",
                          allowed_values=("error", "warn")))
    opts.Add(BoolVariable("sanitize", "host build with ASan+UBSan under build/host-san/", False))
    opts.Add(BoolVariable("verbose", "print full command lines", False))
    opts.Add("build_dir", "output directory", "build")
    opts.Add("fw_selftest", "firmware self-test hook N (tests only, see firmware_templates/selftest.c)", None)


def generate(env, **kw) -> None:
    """Defaults for every ``TIGRISBUILD_*`` variable (values set before loading win; keyword
    arguments of ``env.Tool('tigris', name=value)`` set ``TIGRISBUILD_NAME``), the build's state,
    the methods, and the host tool."""
    env.SetDefault(
        TIGRISBUILD_ROOT=str(_ROOT),
        TIGRISBUILD_RUNTIME_DIR=str(_ROOT / "runtime"),
        TIGRISBUILD_TEMPLATES_DIR=str(_ROOT / "firmware_templates"),
        TIGRISBUILD_MODELS_DIR=str(_ROOT / "models"),
        TIGRISBUILD_BUILD_DIR="#build",
        TIGRISBUILD_PYTHON=sys.executable,
        TIGRISBUILD_QEMU="qemu-system-arm",
        TIGRISBUILD_QEMU_FLAGS="",
        TIGRISBUILD_ICOUNT=True,
        TIGRISBUILD_QEMU_TIMEOUT=None,
        TIGRISBUILD_BUDGET_MODE="error",
        TIGRISBUILD_TENSOR_ALIGN=firmware_recipe.DEFAULT_TENSOR_ALIGN,
        TIGRISBUILD_HOST_TENSOR_ALIGN=32,
        TIGRISBUILD_PLAN_WINDOW=None,  # None: the board's (boards.Board.plan_window)
        TIGRISBUILD_BOARD=DEFAULT_BOARD,
        TIGRISBUILD_STAGE_MEMORY=False,
        TIGRISBUILD_QUIET=False,
        TIGRISBUILD_RUN_ALIAS="run",
        TIGRISBUILD_SIZE_ALIAS="size",
        TIGRISBUILD_FIT_ALIAS="fit",
        TIGRISBUILD_PARTS_DIR=str(_ROOT / "parts"),
        TIGRISBUILD_FIT_CORES="all",
        TIGRISBUILD_HOST_ALIAS="host",
        TIGRISBUILD_VERBOSE=False,
        TIGRISBUILD_FW_SELFTEST=None,
        TIGRISBUILD_RUNTIME_SET="plan",
        TIGRISBUILD_MESSAGES=True,
        TIGRISBUILD_VALIDATE="full",
        TIGRISBUILD_MVE=False,
        TIGRISBUILD_PROFILE=False,
        TIGRISBUILD_HOST_CC="gcc",
        TIGRISBUILD_STATE=BuildState(),
    )
    for key, value in kw.items():
        env["TIGRISBUILD_" + key.upper()] = value
    env.AddMethod(tigris_model, "TigrisModel")
    env.AddMethod(tigris_models, "TigrisModels")
    env.AddMethod(tigris_fit, "TigrisFit")
    env.AddMethod(add_variables, "TigrisAddVariables")
    env.Tool("tigris_host", toolpath=[str(Path(__file__).resolve().parent)])


def exists(env) -> bool:
    """Always loadable: a missing cross compiler or QEMU fails only the targets that need it."""
    return True
