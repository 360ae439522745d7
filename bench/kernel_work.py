#!/usr/bin/env python3
"""Guest instructions per multiply-accumulate, per model, per op type and per convolution layer
kind, on every build issue 23 names: the Cortex-M55 with the DSP kernels (``dsp``, the default
``cortex-m55+nomve``) and with Helium (``mve``, ``mve=1``) on mps3-an547, the Cortex-M4
(``m4``, mps2-an386), M7 (``m7``, mps2-an500) and M33 (``m33``, mps2-an505); next to the
CMSIS-NN figures and the targets of issue 23.

For each model and build the checkout's own SConstruct builds and runs the firmware on QEMU
under ``-icount shift=0`` (``icount=1``), where every figure repeats exactly:

* ``model=X icount=1 <build> run``: the WORK line, one inference: the whole-network figure;
* ``model=X icount=1 profile=1 <build> run``: PROFILE lines, ticks and MACs per op, summed per
  op type and, for convolutions, per layer kind from the plan's shapes (``Conv 10x4 s2``,
  ``Conv 1x1`` = pointwise, ``DepthwiseConv 3x3``). The hooks add a little work of their own, so
  the op rows do not sum to the whole-network figure.

One SysTick tick is 1e9 / clock guest instructions at ``-icount shift=0``; the clock is the one
the firmware names in its WORK line (``clock=25MHz-virtual``; 31.25 instructions a tick at
32 MHz on mps3-an547, 40 at 25 MHz on mps2-an386/an500, 50 at 20 MHz on mps2-an505), checked
against the board's in ``tigris_scons.boards``.

MACs are the firmware's own count (``tgr_plan_op_macs``), checked against the plan as tigris-ml's
reader decodes it (:func:`plan_macs`): an op whose two counts disagree, or builds of one model
whose MAC totals differ, are errors (exit status 1, after the tables). A figure is never an error:
the target and CMSIS-NN columns say where we stand. ``--before PATH`` measures a second checkout
(e.g. ``git worktree add --detach /tmp/before <commit>``; any commit since boards exist, 16659c5)
with its own SConstruct, the same way, side by side. Instructions are work, not latency: QEMU
models none of these cores' timing.

Usage:
    .venv/bin/python bench/kernel_work.py [--models ds_cnn,mobilenetv2_035] [--builds dsp,mve,m4,m7,m33]
                                          [--checkout PATH] [--before PATH] [--build-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tigris_scons.boards import BOARDS, DEFAULT_BOARD
from tigris_scons.qemu import clock_hz, work_figure

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Build:
    """One firmware build the bench measures: a board and the SCons options that select it."""

    name: str
    board: str
    options: tuple[str, ...]
    label: str


BUILDS: dict[str, Build] = {b.name: b for b in (
    Build("dsp", DEFAULT_BOARD, (), "Cortex-M55 +nomve, DSP SIMD (default)"),
    Build("mve", DEFAULT_BOARD, ("mve=1",), "Cortex-M55 with Helium (mve=1)"),
    Build("m4", "mps2-an386", ("board=mps2-an386",), "Cortex-M4"),
    Build("m7", "mps2-an500", ("board=mps2-an500",), "Cortex-M7"),
    Build("m33", "mps2-an505", ("board=mps2-an505",), "Cortex-M33"),
)}
BUILD_ALIASES = {"default": "dsp"}  # the name this script gave the DSP build before

WHOLE = "whole network"

#: CMSIS-NN's instructions per MAC (best of its -Ofast and -O2 builds), from issue 23 (measured side
#: by side with CMSIS-NN v7.0.0-43 in one bare-metal harness, same gcc 12.2, QEMU 7.2, -icount
#: shift=0; outputs bit-identical to ours). Keys: our layer labels (:func:`layer_kind`). The
#: MobileNetV2-0.35 figure is its 64 layers at 224x224 input, the model of models/mobilenetv2_035.
CMSIS_NN: dict[str, dict[str, dict[str, float]]] = {
    "ds_cnn": {
        "Conv 10x4 s2": {"dsp": 3.35, "mve": 0.90, "m4": 3.47},  # first conv, 1 -> 64 channels
        "DepthwiseConv 3x3": {"dsp": 7.41, "mve": 2.32, "m4": 7.79},  # 64 channels
        "Conv 1x1": {"dsp": 2.07, "mve": 0.40, "m4": 2.09},  # pointwise 64 -> 64, 77 % of the MACs
        WHOLE: {"dsp": 2.83, "mve": 0.67, "m4": 2.90},
    },
    "mobilenetv2_035": {WHOLE: {"dsp": 4.01, "mve": 1.10, "m4": 4.09}},
}
CMSIS_NN_SOURCE = ("issue 23 (measured side by side with CMSIS-NN v7.0.0-43 in one bare-metal harness, "
                   "same gcc 12.2, QEMU 7.2, -icount shift=0)")

#: Issue 23's targets, instructions per MAC of the whole network (MobileNetV2-0.35 at 128K).
TARGETS: dict[str, dict[str, float]] = {
    "ds_cnn": {"dsp": 2.5, "mve": 0.6, "m4": 2.6},
    "mobilenetv2_035": {"dsp": 3.6, "mve": 1.0, "m4": 3.7},
}
#: ... and "no DS-CNN layer type above CMSIS-NN's figure": for these models a layer's target is
#: CMSIS-NN's figure for it.
LAYER_TARGET_IS_CMSIS_NN = frozenset({"ds_cnn"})

# opcodes (docs/plan-format.md) of the ops that multiply-accumulate
CONV, DEPTHWISE, GEMM, CONV_TRANSPOSE, MATMUL = 1, 2, 9, 24, 25
KERNEL_OPS = (CONV, DEPTHWISE, CONV_TRANSPOSE)

# --------------------------------------------------------------------------------------------
# Pure functions (tested in tests/build/test_bench_kernel_work.py)
# --------------------------------------------------------------------------------------------


def _elements(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def plan_macs(plan: Mapping[str, Any]) -> list[int]:
    """MACs of every op of a plan decoded by ``tigris.emitters.binary.reader.read_binary_plan``
    (tensor shapes are stored NHWC): Conv out x kh x kw x in_c, DepthwiseConv out x kh x kw,
    ConvTranspose in x kh x kw x out_c, Gemm out x in_features, MatMul out x depth; 0 else."""
    tensors = plan["tensors"]
    out = []
    for op in plan["ops"]:
        kind = op["op_type"]
        x = tensors[op["inputs"][0]]["shape"]
        y = tensors[op["outputs"][0]]["shape"]
        sp = op.get("spatial") or {}
        taps = sp.get("kernel_h", 1) * sp.get("kernel_w", 1)
        if kind == CONV:
            out.append(_elements(y) * taps * x[-1])
        elif kind == DEPTHWISE:
            out.append(_elements(y) * taps)
        elif kind == CONV_TRANSPOSE:
            out.append(_elements(x) * taps * y[-1])
        elif kind in (GEMM, MATMUL):
            out.append(_elements(y) * x[-1])
        else:
            out.append(0)
    return out


def layer_kind(op_type_name: str, op: Mapping[str, Any]) -> str | None:
    """The layer kind of a convolution (Conv, DepthwiseConv, ConvTranspose) from the plan's op:
    ``Conv 1x1`` (pointwise), ``Conv 10x4 s2``, ``DepthwiseConv 3x3``; the stride when not 1
    (``s2``, or ``s2x1`` when the two differ), a dilation other than 1 (``d2``), a grouped
    Conv's groups (``g4``). None for any other op."""
    if op.get("op_type") not in KERNEL_OPS:
        return None
    sp = op.get("spatial") or {}
    label = f"{op_type_name} {sp.get('kernel_h', 1)}x{sp.get('kernel_w', 1)}"
    sh, sw = sp.get("stride_h", 1), sp.get("stride_w", 1)
    if (sh, sw) != (1, 1):
        label += f" s{sh}" if sh == sw else f" s{sh}x{sw}"
    dh, dw = sp.get("dilation_h", 1), sp.get("dilation_w", 1)
    if (dh, dw) != (1, 1):
        label += f" d{dh}" if dh == dw else f" d{dh}x{dw}"
    if op["op_type"] == CONV and sp.get("group", 1) > 1:
        label += f" g{sp['group']}"
    return label


def instructions_per_tick(clock: str, shift: int = 0) -> float:
    """Guest instructions per SysTick tick under ``-icount shift=N``: 1e9 / clock / 2^N (31.25 at
    32 MHz, 40 at 25 MHz, 50 at 20 MHz)."""
    return 1e9 / clock_hz(clock) / 2**shift


def work_clock(run: Mapping[str, Any], board: str) -> tuple[str, list[str]]:
    """The SysTick clock of a run (run.json): the one its WORK line names, else the board's; and
    what is inconsistent (a clock other than the board's, no ``-icount`` shift)."""
    want = BOARDS[board].work_clock
    work = run.get("work") or {}
    clock = work.get("clock") or want
    problems = []
    if clock != want:
        problems.append(f"the firmware's WORK line names clock {clock}, {board} runs SysTick at {want}")
    if work.get("icount_shift") is None:
        problems.append("run without -icount: its work figure follows host time")
    return clock, problems


@dataclass(frozen=True)
class LayerWork:
    """One op type's, or one convolution layer kind's, share of a profiled inference."""

    layer: str
    parent: str | None  # the op type of a layer kind; None for an op type
    count: int
    macs: int
    instructions: float
    share: float  # of the profiled ops' instructions

    @property
    def per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None


def by_layer(profile_ops: Sequence[Mapping[str, Any]], plan_ops: Sequence[Mapping[str, Any]],
             per_tick: float) -> list[LayerWork]:
    """PROFILE op rows (run.json ``profile.ops``) summed per op type, most MACs (then work)
    first, each convolution type followed by its layer kinds (:func:`layer_kind`, from the plan
    op of the same index)."""
    sums: dict[tuple[str, str | None], list[int]] = {}
    for op in profile_ops:
        kind = layer_kind(op["type"], plan_ops[op["op"]]) if op["op"] < len(plan_ops) else None
        for key in ((op["type"], None), *([(kind, op["type"])] if kind else [])):
            row = sums.setdefault(key, [0, 0, 0])
            row[0] += 1
            row[1] += op["macs"]
            row[2] += op["ticks"]
    total = sum(r[2] for (_, parent), r in sums.items() if parent is None) or 1
    rows = [LayerWork(layer, parent, n, m, ticks * per_tick, ticks / total)
            for (layer, parent), (n, m, ticks) in sums.items()]
    order = lambda r: (-r.macs, -r.instructions, r.layer)  # noqa: E731
    out = []
    for top in sorted((r for r in rows if r.parent is None), key=order):
        out.append(top)
        out += sorted((r for r in rows if r.parent == top.layer), key=order)
    return out


def check_macs(profile_ops: Sequence[Mapping[str, Any]], expected: Sequence[int]) -> list[str]:
    """Ops whose firmware MAC count differs from the plan's (an empty list when all agree)."""
    if len(profile_ops) != len(expected):
        return [f"{len(profile_ops)} PROFILE op rows for {len(expected)} ops"]
    return [f"op {op['op']} ({op['type']}): firmware {op['macs']}, plan {want}"
            for op, want in zip(profile_ops, expected) if op["macs"] != want]


def reference(model: str, layer: str, build: str) -> float | None:
    """CMSIS-NN's figure for this layer (or :data:`WHOLE`) on this build, when issue 23 has one."""
    return CMSIS_NN.get(model, {}).get(layer, {}).get(build)


def target(model: str, layer: str, build: str) -> float | None:
    """Issue 23's target: the whole network's, or for a DS-CNN layer CMSIS-NN's figure."""
    if layer == WHOLE:
        return TARGETS.get(model, {}).get(build)
    return reference(model, layer, build) if model in LAYER_TARGET_IS_CMSIS_NN else None


def _fig(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def model_rows(model: str, after: Mapping[str, Mapping[str, Any]], before: Mapping[str, Mapping[str, Any]] | None,
               builds: Sequence[str]) -> list[list[str]]:
    """One model's table: the whole network, then each op type and layer kind, one row per build.

    ``after``/``before``: build -> measurement as :func:`measure` returns it (``instructions``
    and ``macs`` of the WORK run, ``layers`` = :class:`LayerWork` dicts of the profiled run, or
    None). Layers in the order of the first build; a layer's ops and MACs on its first row.
    """
    head = ["layer", "ops", "MACs", "build", "share %"]
    head += ["before", "after"] if before is not None else ["ours"]
    head += ["CMSIS-NN", "ours/CMSIS", "target", "met"]
    rows = [head]

    def layers_of(m: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
        return {row["layer"]: row for row in (m or {}).get("layers") or []}

    def per_mac(m: Mapping[str, Any] | None, layer: str) -> float | None:
        if not m:
            return None
        if layer == WHOLE:
            return m["instructions"] / m["macs"] if m.get("macs") else None
        row = layers_of(m).get(layer)
        return row["instructions"] / row["macs"] if row and row["macs"] else None

    first = after[builds[0]]
    labels = [(WHOLE, None, first.get("ops"), first.get("macs"))]
    labels += [(r["layer"], r["parent"], r["count"], r["macs"]) for r in first.get("layers") or []]
    for layer, parent, count, macs in labels:
        for i, build in enumerate(builds):
            ours = per_mac(after[build], layer)
            row_of = layers_of(after[build]).get(layer)
            share = 1.0 if layer == WHOLE else (row_of["share"] if row_of else None)
            cmsis, goal = reference(model, layer, build), target(model, layer, build)
            name = layer if parent is None else f"  {layer}"
            cells = [name if i == 0 else "", (str(count) if count is not None else "-") if i == 0 else "",
                     (f"{macs:,}" if macs else "-") if i == 0 else "", build, _fig(share and 100 * share, ".1f")]
            if before is not None:
                cells.append(_fig(per_mac(before.get(build), layer)))
            ratio = ours / cmsis if ours is not None and cmsis else None
            cells += [_fig(ours), _fig(cmsis), f"{ratio:.2f}x" if ratio is not None else "-",
                      f"<= {goal:.2f}" if goal is not None else "",
                      ("yes" if ours <= goal else "no") if goal is not None and ours is not None else ""]
            rows.append(cells)
    return rows


def format_rows(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in rows)


# --------------------------------------------------------------------------------------------
# Builds and runs
# --------------------------------------------------------------------------------------------


class NotBuilt(Exception):
    """A checkout that cannot make a build (an older SConstruct without ``mve=`` or whose
    ``board=`` reaches no firmware): a "before" side shows no figure for it."""


def run_machine(run: Mapping[str, Any]) -> str | None:
    """The QEMU machine a run.json's command line ran (``-M <machine>``)."""
    command = list(run.get("command") or [])
    return command[command.index("-M") + 1] if "-M" in command[:-1] else None


def scons_run(checkout: Path, build_dir: Path, model: str, build: Build, *options: str) -> tuple[dict[str, Any], Path]:
    """``scons model=M icount=1 <build's options> <options> run`` with ``checkout``'s own
    SConstruct (and its own Python first on the path); the model's run.json and output folder."""
    scons = checkout / ".venv/bin/scons" if (checkout / ".venv/bin/scons").exists() else REPO / ".venv/bin/scons"
    cmd = [str(scons), "-Q", "-C", str(checkout), f"model={model}", f"build_dir={build_dir}", "icount=1",
           "budget_mode=warn", *build.options, *options, "run"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(checkout / "site_scons"),
                                         *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0 and "unknown variable" in proc.stderr:
        raise NotBuilt(f"{checkout}'s SConstruct: {proc.stderr.strip().splitlines()[-1]}")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    folder = build_dir / model if build.board == DEFAULT_BOARD else build_dir / build.board / model
    path = folder / f"{model}.run.json"
    run = json.loads(path.read_text()) if path.exists() else {}
    if run_machine(run) != build.board:
        raise NotBuilt(f"{checkout}'s SConstruct ran no {build.board} firmware for {' '.join(build.options)} "
                       "(board= reaches the build from commit 11e8a2b)")
    return run, folder


def measure(checkout: Path, build_dir: Path, model: str, build: Build) -> tuple[dict[str, Any], list[str]]:
    """One model on one build in one checkout: the WORK run and the profiled run."""
    from tigris.emitters.binary.reader import read_binary_plan

    problems = []
    whole, folder = scons_run(checkout, build_dir / build.name, model, build)
    clock, bad = work_clock(whole, build.board)
    problems += bad
    shift = whole["work"].get("icount_shift") or 0
    plan = read_binary_plan((folder / f"{model}.tgrs").read_bytes(), decompress_weights=False)
    macs = sum(plan_macs(plan))
    instructions = work_figure(whole["work"]["systick_ticks"], clock, shift)["instructions_approx"]
    result: dict[str, Any] = {"board": build.board, "core": BOARDS[build.board].core, "options": list(build.options),
                              "clock": clock, "instructions_per_tick": instructions_per_tick(clock, shift),
                              "systick_ticks": whole["work"]["systick_ticks"], "instructions": instructions,
                              "ops": len(plan["ops"]), "macs": macs, "per_mac": instructions / macs if macs else None,
                              "layers": None}
    profiled, folder = scons_run(checkout, build_dir / f"{build.name}-profile", model, build, "profile=1")
    ops = (profiled.get("profile") or {}).get("ops")
    if ops:
        pclock, bad = work_clock(profiled, build.board)
        problems += bad
        pplan = read_binary_plan((folder / f"{model}.tgrs").read_bytes(), decompress_weights=False)
        problems += check_macs(ops, plan_macs(pplan))
        if sum(op["macs"] for op in ops) != macs:
            problems.append(f"profiled run: {sum(op['macs'] for op in ops):,} MACs, WORK run's plan {macs:,}")
        per_tick = instructions_per_tick(pclock, profiled["work"].get("icount_shift") or 0)
        result["layers"] = [asdict(r) | {"per_mac": r.per_mac} for r in by_layer(ops, pplan["ops"], per_tick)]
    else:
        problems.append("the profile=1 firmware printed no PROFILE op lines: whole-network figure only")
    return result, problems


def checkout_id(checkout: Path) -> str:
    """``<commit>`` of a git checkout, ``+ uncommitted changes`` when its tree differs."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                              check=False).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "?"
    return commit + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def declared_models(repo: Path) -> list[str]:
    return sorted(p.parent.name for p in (repo / "models").glob("*/model.toml"))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated declared models (default: all)")
    ap.add_argument("--builds", default=",".join(BUILDS), help=f"comma-separated: {', '.join(BUILDS)}")
    ap.add_argument("--checkout", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    ap.add_argument("--before", type=Path, help="another checkout, measured the same way, shown as 'before'")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench-work")
    ap.add_argument("--json", type=Path, help="write every figure to this file")
    args = ap.parse_args(argv)
    checkout = args.checkout.resolve()
    models = args.models.split(",") if args.models else declared_models(checkout)
    builds = [BUILD_ALIASES.get(b, b) for b in args.builds.split(",")]
    unknown = [b for b in builds if b not in BUILDS]
    if unknown:
        ap.error(f"--builds: unknown {', '.join(unknown)}; builds: {', '.join(BUILDS)}")
    sides = {"after": checkout} | ({"before": args.before.resolve()} if args.before else {})
    results: dict[str, Any] = {
        "checkouts": {side: {"path": str(path), "commit": checkout_id(path)} for side, path in sides.items()},
        "builds": {b: asdict(BUILDS[b]) for b in builds},
        "cmsis_nn": {"source": CMSIS_NN_SOURCE, "instructions_per_mac": CMSIS_NN},
        "targets": {"source": "issue 23; and no DS-CNN layer type above CMSIS-NN's figure", "whole_network": TARGETS},
        "models": {}}
    problems = []
    tables = []
    for model in models:
        measured: dict[str, dict[str, Any]] = {}
        for side, path in sides.items():
            measured[side] = {}
            for b in builds:
                try:
                    figures, bad = measure(path, args.build_dir / side, model, BUILDS[b])
                except NotBuilt as exc:
                    if side != "before":
                        raise SystemExit(f"{model} {b}: {exc}") from None
                    print(f"NOTE {model} {b} before: not measured: {exc}", file=sys.stderr)
                    continue
                measured[side][b] = figures
                problems += [f"{model} {b} ({side}): {p}" for p in bad]
            totals = {b: m["macs"] for b, m in measured[side].items()}
            if len(set(totals.values())) > 1:
                problems.append(f"{model} ({side}): builds disagree on the MACs: {totals}")
        for b, m in (measured.get("before") or {}).items():
            if m["macs"] != measured["after"][b]["macs"]:
                print(f"NOTE {model} {b}: {m['macs']:,} MACs before, {measured['after'][b]['macs']:,} after "
                      "(another plan)", file=sys.stderr)
        results["models"][model] = measured
        first = measured["after"][builds[0]]
        tables.append(f"{model}: {first['ops']} ops, {first['macs']:,} MACs\n"
                      + format_rows(model_rows(model, measured["after"], measured.get("before"), builds)))
    print("instructions per MAC, qemu -icount shift=0 (1 SysTick tick = 1e9/clock instructions: "
          + ", ".join(f"{b} {BOARDS[BUILDS[b].board].work_clock} -> {instructions_per_tick(BOARDS[BUILDS[b].board].work_clock):g}"
                      for b in builds) + ")")
    for side, path in sides.items():
        print(f"{side if args.before else 'ours'}: {path} at {results['checkouts'][side]['commit']}")
    print(f"whole network: WORK line, one inference; op types and layer kinds (indented): profile=1 PROFILE "
          f"lines (share = of the profiled ops' work)\nCMSIS-NN: {CMSIS_NN_SOURCE}; MobileNetV2-0.35: its 64 "
          f"layers at 224x224\ntarget: issue 23 (whole network; a DS-CNN layer: CMSIS-NN's figure)\n")
    print("\n\n".join(tables))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    for p in problems:
        print(f"ERROR {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
