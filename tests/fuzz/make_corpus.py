"""Build the seed corpus of the plan fuzzer: real plans of every model and budget we test.

    .venv/bin/python tests/fuzz/make_corpus.py [--out tests/fuzz/corpus] [--work DIR]

Writes one ``<name>.tgrs`` per plan (tigris-ml 0.12.1, deterministic builds, so a rerun gives
the same bytes):

* DS-CNN at every budget tests/runtime/test_differential.py runs (20K .. 1K, LZ4 at 64K/28K);
* every ``tests/opmodels`` case at its budget and multi-stage budget, the tiled single-op
  budgets of test_differential.TILED_CASES, and the network cases at each of their
  path-forcing budgets (``OpCase.paths``);
* the two-block inverted residual and the float32 Conv of test_loader_rejections.py;
* a selection of tests/ops plans: Transpose, Reshape/Flatten, Concat, Split, Pad, Resize,
  MatMul, ReduceMean/Sum/Max, GlobalMaxPool, pool variants;
* the tigris-ml sdist's schema-compatibility fixtures (schema 2..10);
* with ``--conformance``: the int8 sdist TFLite fixtures of tests/conformance at 256K and at
  half (or 3/4 of) their peak, keeping only the plans that reach coverage edges the others do
  not (libFuzzer ``-merge=1 -use_counters=0`` with build/fuzz/fuzz_plan, which
  tests/fuzz/run_fuzz.py builds), named ``conformance_<fixture>_<budget>.tgrs``.

MobileNetV2 is left out: too large to fuzz. Existing files are overwritten, others kept.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
REPO = TESTS.parent

SDIST = "tigris_ml-0.12.1"


def _sdist_root() -> Path | None:
    """The extracted tigris-ml sdist (/tmp/sdist or build/sdist), fetched with pip if missing."""
    import subprocess
    import tarfile

    for root in (Path("/tmp/sdist"), REPO / "build" / "sdist"):
        if (root / SDIST / "tests" / "schema_compat").is_dir():
            return root / SDIST
    dest = REPO / "build" / "sdist"
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / f"{SDIST}.tar.gz"
    if not archive.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                        "tigris-ml==0.12.1", "-d", str(dest)], capture_output=True, text=True)
    if not archive.is_file():
        return None
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"{SDIST}/tests/schema_compat/")]
        tar.extractall(dest, members=members, filter="data")
    return dest / SDIST


def _ops_plans(work: Path) -> dict[str, Callable[[], Path]]:
    import numpy as np

    from tests.ops.models_data import const, graph, node, plan_for

    def unary(op, shape, *consts, **attrs):
        return graph([node(op, ["x"] + [c.name for c in consts], ["y"], **attrs)], {"x": shape}, list(consts))

    plain = {"x": (0.02, 3), "y": (0.03, -5)}
    same = {"x": (0.02, 3), "y": (0.02, 3)}
    jobs: dict[str, Callable[[], Path]] = {}

    def add(name: str, model_fn, quant, **kw) -> None:
        jobs[f"ops_{name}"] = lambda: plan_for(work, name, model_fn(), quant, **kw)

    for case, (shape, perm) in {"nchw_to_nhwc": ([1, 3, 4, 5], [0, 2, 3, 1]),
                                "rank4_reverse": ([2, 3, 4, 5], [3, 2, 1, 0]),
                                "rank3_rotate": ([3, 4, 5], [2, 0, 1]), "rank2": ([6, 11], [1, 0]),
                                "rank5": ([2, 3, 2, 4, 3], [4, 0, 3, 1, 2])}.items():
        add(f"transpose_{case}", lambda s=shape, p=perm: unary("Transpose", s, perm=p), plain)
    add("reshape_layout", lambda: unary("Reshape", [1, 4, 3, 5], const("s", [1, 12, 5])), plain)
    add("flatten_spatial", lambda: unary("Flatten", [1, 4, 3, 5], axis=1), same)
    add("concat_channels_mixed",
        lambda: graph([node("Concat", ["x0", "x1", "x2"], ["y"], axis=1)],
                      {"x0": [1, 2, 4, 5], "x1": [1, 3, 4, 5], "x2": [1, 1, 4, 5]}),
        {"x0": (0.02, 3), "x1": (0.03, -5), "x2": (0.02, 3), "y": (0.025, 1)})
    add("concat_rows", lambda: graph([node("Concat", ["x0", "x1"], ["y"], axis=2)],
                                     {"x0": [1, 3, 2, 5], "x1": [1, 3, 4, 5]}),
        {"x0": (0.02, 3), "x1": (0.02, 3), "y": (0.02, 3)})
    add("split_channels", lambda: graph([node("Split", ["x"], ["y0", "y1"], axis=1)], {"x": [1, 6, 4, 5]},
                                        outputs=["y0", "y1"]),
        {"x": (0.02, 3), "y0": (0.02, 3), "y1": (0.02, 3)})
    add("pad_hw_fill", lambda: unary("Pad", [1, 3, 4, 5], const("p", [0, 0, 1, 2, 0, 0, 3, 1]),
                                     const("v", 0.5, np.float32)), same)
    nearest = {"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_ceil"}
    add("resize_nearest", lambda: unary("Resize", [1, 3, 5, 7], const("roi", [], np.float32),
                                        const("sc", [], np.float32), const("sz", [1, 3, 9, 4]),
                                        mode="nearest", **nearest), same)
    add("resize_bilinear", lambda: unary("Resize", [1, 3, 4, 5], const("roi", [], np.float32),
                                         const("sc", [], np.float32), const("sz", [1, 3, 8, 10]),
                                         mode="linear", coordinate_transformation_mode="half_pixel"), same)
    for name, (sa, sb) in {"rank2": ([4, 16], [16, 6]), "rank3": ([2, 4, 8], [2, 8, 6]),
                           "rank4": ([1, 2, 4, 8], [1, 2, 8, 6])}.items():
        add(f"matmul_{name}", lambda a=sa, b=sb: graph([node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}),
            {"a": (0.02, 3), "b": (0.03, -2), "y": (0.05, -4)})
    add("reduce_mean_axis1", lambda: unary("ReduceMean", [3, 7, 5], axes=[1], keepdims=1), plain)
    add("reduce_sum_axis2", lambda: unary("ReduceSum", [3, 7, 5], const("a", [2]), keepdims=0), plain)
    add("reduce_max_axis0", lambda: unary("ReduceMax", [3, 7, 5], axes=[0], keepdims=1), same)
    add("global_max_pool", lambda: unary("GlobalMaxPool", [1, 5, 6, 7]), plain)
    add("maxpool_ceil", lambda: unary("MaxPool", [1, 4, 7, 7], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        plain)
    add("avgpool_same_upper", lambda: unary("AveragePool", [1, 4, 7, 8], kernel_shape=[3, 3], strides=[2, 2],
                                            auto_pad="SAME_UPPER"), plain)
    return jobs


def plans(work: Path) -> dict[str, Callable[[], Path]]:
    """name -> thunk compiling that plan (in ``work``) and returning its path."""
    from tests.opmodels import CASES
    from tests.runtime.conftest import PlanCache
    from tests.runtime.test_differential import DS_CNN_VARIANTS, TILED_CASES
    from tests.runtime.test_loader_rejections import _build_fp32_conv, _build_ir2

    cache = PlanCache(work / "cache")
    jobs: dict[str, Callable[[], Path]] = {}
    for variant, (budget, extra) in DS_CNN_VARIANTS.items():
        jobs[f"ds_cnn_{variant}"] = lambda b=budget, e=extra: cache.ds_cnn_plan(b, e)
    for name in sorted(CASES):
        case = CASES[name]
        budgets = [case.budget] + ([case.multistage_budget] if case.multistage_budget else [])
        budgets += [b for b, _ in TILED_CASES.get(name, ())] + list((case.paths or {}).keys())
        for budget in dict.fromkeys(budgets):
            jobs[f"case_{name}_{budget}"] = lambda n=name, b=budget: cache.case_plan(n, b)
    jobs["ir2_two_blocks_256K"] = lambda: cache.plan("ir2_two_blocks", _build_ir2, "256K")
    jobs["fp32_conv_256K"] = lambda: cache.plan("fp32_conv", _build_fp32_conv, "256K")
    jobs.update(_ops_plans(work / "ops"))
    return jobs


def conformance_plans(out: Path, work: Path) -> list[str]:
    """Compile the int8 conformance fixtures (256K and tight) into ``work`` and merge the ones
    with new edges into ``out`` under their own names. Returns what was not built."""
    import hashlib
    import subprocess

    from tests.conformance import coverage

    failed = []
    stage = work / "conformance"
    stage.mkdir(parents=True, exist_ok=True)
    names = {}
    for name in coverage.fixture_names():
        plan = coverage.compile_fixture(name)
        if not isinstance(plan, Path) or coverage.is_float_plan(plan):
            continue
        peak = coverage.plan_info(plan)["peak"]
        variants = {"256K": plan}
        for k in (2, 3):
            tight = coverage.compile_fixture(name, str(max(1, peak * k // 4)))
            if isinstance(tight, Path):
                variants[f"{peak * k // 4}"] = tight
                break
        for budget, path in variants.items():
            data = path.read_bytes()
            names[hashlib.sha1(data).hexdigest()] = f"conformance_{name}_{budget}.tgrs"
            (stage / f"{name}_{budget}.tgrs").write_bytes(data)
    target = REPO / "build" / "fuzz" / "fuzz_plan"
    if not target.is_file():
        return ["conformance: build/fuzz/fuzz_plan missing (run tests/fuzz/run_fuzz.py --seconds 0 first)"]
    before = {f.name for f in out.iterdir()}
    subprocess.run([str(target), "-merge=1", "-use_counters=0", "-max_len=1000000", str(out), str(stage)],
                   capture_output=True, text=True)
    for f in out.iterdir():
        if f.name not in before:
            f.rename(out / names.get(f.name, f"conformance_{f.name}.tgrs"))
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "corpus")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--conformance", action="store_true",
                    help="add the conformance fixtures that bring new coverage (needs build/fuzz/fuzz_plan)")
    ap.add_argument("--only-conformance", action="store_true", help="skip the other plans")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        (work / "ops").mkdir(parents=True, exist_ok=True)
        if args.conformance or args.only_conformance:
            failed += conformance_plans(args.out, work)
        for name, build in ({} if args.only_conformance else plans(work)).items():
            try:
                src = build()
            except Exception as exc:  # a case the compiler refuses at a budget: report, go on
                failed.append(f"{name}: {str(exc).splitlines()[0] if str(exc) else exc!r}")
                continue
            shutil.copyfile(src, args.out / f"{name}.tgrs")
        sdist = None if args.only_conformance else _sdist_root()
        if args.only_conformance:
            pass
        elif sdist is None:
            failed.append("schema_compat: tigris-ml sdist unavailable (pip download failed?)")
        else:
            for f in sorted((sdist / "tests" / "schema_compat").glob("*.tgrs")):
                shutil.copyfile(f, args.out / f"schema_compat_{f.name}")
    total = sum(f.stat().st_size for f in args.out.iterdir())
    print(f"{len(list(args.out.iterdir()))} seeds, {total} bytes in {args.out}")
    for line in failed:
        print(f"not built: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
