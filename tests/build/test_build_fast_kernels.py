"""The fast kernels on QEMU, in the default build (cortex-m55+nomve: DSP instructions through
ACLE) and in the Helium build (mve=1), and the work profile (profile=1).

Models from tests/ops/test_ops_conv_fast.py (and two MatMuls of tests/ops/test_ops_matmul.py)
that land on each fast path and its edges run as
firmware; the build's own check compares every output with the bundled reference runtime, so a
fast path that is wrong on the target fails here even where the host's portable form is right.
Each build's kernels must be the variant it names (chosen at compile time): SMLAD and no MVE in
the default build, the MVE attribute in the Helium one; a Helium variant's file compiles to nothing
in the default build and a DSP-only one to nothing in the Helium build.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]

#: cases of tests/ops/test_ops_conv_fast.py, one or more per path and edge
CASES = ("pw_narrow_8_to_24", "pw_narrow_12_to_3", "pw_narrow_16_to_17", "pw_narrow_4_to_5", "pw_wide_20_to_7",
         "pw_64_to_64_ds_cnn", "pw_28_to_1", "pw_3_to_6", "k3_one_sided_s2", "k10x4_first_layer", "k3_dilated",
         "k10x4_ds_cnn", "k3_s2_all_pads_c3", "k3_gather_c14_s1", "k2x3_gather_one_channel", "k3_c15_past_gather",
         "k3_same_c32", "dw3_s1_c16", "dw3_s2_c13", "dw3_ds_cnn_c64", "dw3_s1_c7_odd",
         "dw3_pads_top_left", "dw3_pads_bottom_right", "dw3_narrow_2x1", "dw3_s2_c24_even", "dw3_unpadded_c4",
         "dw5_dilated_c8", "dw3_multiplier2", "gemm_33_to_5",
         "add_same_shape_105", "sub_scalar")
BUILDS = {"default": (), "mve": ("mve=1",)}


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


@pytest.fixture(scope="module")
def fast_plans(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from tests.ops.models_data import plan_for
    from tests.ops.test_ops_conv_fast import CASES as OPS_CASES
    from tests.ops.test_ops_conv_fast import ZERO_POINTS, _chain, _first_layer, narrow_clamp_plan, pointwise_2d_model

    work = tmp_path_factory.mktemp("fast_plans")
    plans = [plan_for(work, name, OPS_CASES[name][0](), budget="256K") for name in CASES]
    plans.append(plan_for(work, "k3_same_zp_high", OPS_CASES["k3_same"][0](), {"x": ZERO_POINTS["zp_high"]},
                          budget="256K"))
    plans.append(plan_for(work, "dw3_s1_c7_odd_zp_low", OPS_CASES["dw3_s1_c7_odd"][0](), {"x": ZERO_POINTS["zp_low"]},
                          budget="256K"))
    plans.append(narrow_clamp_plan(work, "dw3_s1_c7_odd"))
    plans.append(plan_for(work, "block_s2_2k", _chain(2), budget="2K"))
    plans.append(plan_for(work, "block_s1_2k", _chain(1), budget="2K"))
    plans.append(plan_for(work, "pw_64_zp_low", OPS_CASES["pw_64_to_64_ds_cnn"][0](), {"x": ZERO_POINTS["zp_low"]},
                          budget="256K"))
    plans.append(plan_for(work, "pw_2d_2k", pointwise_2d_model(), budget="2K"))
    plans.append(plan_for(work, "k10x4_first_layer_zp_low", OPS_CASES["k10x4_first_layer"][0](),
                          {"x": ZERO_POINTS["zp_low"]}, budget="256K"))
    plans.append(plan_for(work, "gather_k10x4_1500", _first_layer(1, (49, 10), (10, 4), [4, 1, 5, 1]), budget="1500"))
    plans.append(plan_for(work, "gather_k3_c3_3k", _first_layer(3, (40, 40), (3, 3), [0, 0, 1, 1]), budget="3K"))
    from tests.ops.models_data import graph, node
    from tests.ops.test_ops_matmul import QUANT, SHAPES

    for case, qset in (("rank2", "offsets"), ("rank4_batch", "saturating")):  # 4 + 2 columns; 2 columns
        (sa, sb), (qa, qb, qy) = SHAPES[case], QUANT[qset]
        plans.append(plan_for(work, f"matmul_{case}_{qset}", graph([node("MatMul", ["a", "b"], ["y"])], {"a": sa, "b": sb}),
                              {"a": qa, "b": qb, "y": qy}))
    return plans


def _kernels_object(build: Path, variant: str, name: str) -> Path:
    return build / "cm55" / f"runtime-a16{variant}" / "kernels" / f"{name}.o"


#: kernels/ files of the convolution family's variants -> the builds that compile a body for them
#: (kernels/README.md): a Helium file is empty outside mve=1, a DSP one empty in it, so each build
#: has exactly one implementation of every variant it can link.
VARIANT_FILES = {"conv_general": ("default", "mve"), "conv_gather": ("default",), "fully_connected": ("default", "mve"),
                 "conv_plain": ("default", "mve"), "conv_pointwise": ("default",), "conv_pointwise_mve": ("mve",),
                 "depthwise": ("default",), "depthwise_3x3": ("default",), "depthwise_3x3_mve": ("mve",),
                 "conv_inside_mve": ("mve",), "conv_patch_mve": ("mve",), "conv_gather_mve": ("mve",), "depthwise_mve": ("mve",)}


def _functions(obj: Path) -> set[str]:
    out = subprocess.run([require_tool("arm-none-eabi-nm"), "--defined-only", str(obj)], check=True,
                         capture_output=True, text=True).stdout
    return set(re.findall(r"^\S+ [Tt] (\w+)$", out, re.M))


@pytest.mark.slow
@pytest.mark.parametrize("build_name", list(BUILDS))
def test_fast_kernels_match_the_reference_on_qemu(build_name: str, fast_plans: list[Path], tmp_path: Path) -> None:
    build = tmp_path / "build"
    done = Scons(REPO)("-j2", f"model={','.join(map(str, fast_plans))}", f"build_dir={build}", *BUILDS[build_name],
                       "run")
    for plan in fast_plans:
        assert f"result: ok ({plan.stem})" in done.stdout, plan.stem
    variant = "-mve" if build_name == "mve" else ""
    for name, builds in VARIANT_FILES.items():
        functions = _functions(_kernels_object(build, variant, name))
        assert bool(functions) == (build_name in builds), (name, functions)
    kernels = _kernels_object(build, variant, "conv_inside_mve" if build_name == "mve" else "conv_general")
    attributes = subprocess.run([require_tool("arm-none-eabi-readelf"), "-A", str(kernels)], check=True,
                                capture_output=True, text=True).stdout
    code = subprocess.run([require_tool("arm-none-eabi-objdump"), "-d", str(kernels)], check=True,
                          capture_output=True, text=True).stdout
    if build_name == "mve":  # (binutils 2.40 does not disassemble MVE; short runs still take SMLAD)
        assert "Tag_MVE_arch: MVE" in attributes
    else:
        assert "Tag_MVE_arch" not in attributes and re.search(r"\tsmlad\t", code)


def test_declared_models_run_in_the_helium_build(tmp_path: Path) -> None:
    names = sorted(p.parent.name for p in (REPO / "models").glob("*/model.toml"))
    done = Scons(REPO)(f"model={','.join(names)}", f"build_dir={tmp_path / 'build'}", "mve=1", "run")
    for name in names:
        assert f"result: ok ({name})" in done.stdout, name


def test_profile_counts_work_and_macs_per_op(tmp_path: Path) -> None:
    """profile=1 icount=1 on DS-CNN: a PROFILE row per op with the plan's MACs, the ops' ticks
    within the execution unit's, the unit's within the inference's (WORK), and the same outputs."""
    import importlib.util

    from tigris.emitters.binary.reader import read_binary_plan

    spec = importlib.util.spec_from_file_location("bench_kernel_work", REPO / "bench" / "kernel_work.py")
    kw = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = kw
    spec.loader.exec_module(kw)

    build = tmp_path / "build"
    Scons(REPO)("model=ds_cnn", f"build_dir={build}", "profile=1", "icount=1", "run")
    run = json.loads((build / "ds_cnn/ds_cnn.run.json").read_text())
    ops = run["profile"]["ops"]
    plan = read_binary_plan((build / "ds_cnn/ds_cnn.tgrs").read_bytes())
    assert [op["op"] for op in ops] == list(range(len(plan["ops"])))
    assert kw.check_macs(ops, kw.plan_macs(plan)) == []
    assert sum(op["macs"] for op in ops) == 2_656_768
    units = run["profile"]["units"]
    assert list(units) == ["0"]  # DS-CNN at its declared budget: one stage
    assert 0 < sum(op["ticks"] for op in ops) <= units["0"] <= int(run["work"]["systick_ticks"])
    # the profile hooks are not in a firmware built without profile=1
    Scons(REPO)("model=ds_cnn", f"build_dir={tmp_path / 'plain'}", "run")
    symbols = subprocess.run([require_tool("arm-none-eabi-nm"), str(tmp_path / "plain/ds_cnn/ds_cnn.elf")],
                             check=True, capture_output=True, text=True).stdout
    assert "tgr_profile_op" not in symbols and "tgr_profile_op" in subprocess.run(
        [require_tool("arm-none-eabi-nm"), str(build / "ds_cnn/ds_cnn.elf")], check=True, capture_output=True,
        text=True).stdout
