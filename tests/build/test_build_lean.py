"""Lean firmware end to end: per-model runtime, messages=0, the static stack, slow = "auto".

Every firmware links only the ops and execution paths its plan takes (docs/firmware.md,
per-model runtime). A plan that needs more than a firmware has is refused when it loads, with the
firmware's exit code and a build error quoting the message; the measured stack stays within the
static bound (the final check enforces that in every QEMU test); a model file given by path needs
nothing but its budget.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons, tigris_compile
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def _linked(elf: Path, prefix: str) -> set[str]:
    """Names after ``prefix`` of the global functions the ELF links (tgr_run_OP_CONV -> OP_CONV)."""
    out = subprocess.run([require_tool("arm-none-eabi-nm"), "--defined-only", str(elf)], check=True,
                         capture_output=True, text=True).stdout
    return {m.group(1) for m in re.finditer(rf"^\S+ T {prefix}(\w+)$", out, re.M)}


def _softmax_methods(elf: Path) -> set[str]:
    """Softmax's methods among the ELF's (its Conv has methods of its own)."""
    return {m for m in _linked(elf, "tgr_run_METHOD_") if m.startswith("SOFTMAX_")}


def _gelu_plan(tmp_path: Path) -> Path:
    from tests.build.test_build_scons import _gelu_onnx

    return tigris_compile(_gelu_onnx(tmp_path / "gelu.onnx", "none"), tmp_path / "gelu.tgrs", "2K")


def _refused(done, log: Path, pattern: str) -> str:
    """The build failed on the firmware's own refusal: exit code 2 and the message quoted."""
    assert re.search(pattern, done.stderr), done.stderr
    run = json.loads(log.with_suffix(".json").read_text())
    assert run["exit_code"] == 2, run
    return done.stderr


def test_a_firmware_refuses_an_op_it_does_not_link(tmp_path, tiny_plan):
    """A Gelu plan on a firmware built for the tiny model's ops: refused at load, naming Gelu."""
    plan = _gelu_plan(tmp_path)
    build = tmp_path / "build"
    done = Scons(REPO)(f"model={plan}", f"build_dir={build}", f"runtime={tiny_plan}", "run", expect=2)
    _refused(done, build / "gelu/gelu.run.log",
             r"firmware said: ERROR TGR_ERR_UNSUPPORTED: op \d+ \(Gelu\) is not built into this firmware")
    assert "OP_GELU" not in _linked(build / "gelu/gelu.elf", "tgr_run_")
    # messages=0: the same refusal by status code alone, from a smaller image
    quiet = Scons(REPO)(f"model={plan}", f"build_dir={tmp_path / 'quiet'}", f"runtime={tiny_plan}", "messages=0",
                        "run", expect=2)
    text = _refused(quiet, tmp_path / "quiet/gelu/gelu.run.log", r"firmware said: ERROR TGR_ERR_UNSUPPORTED: \(log")
    assert "Gelu" not in text
    sizes = [json.loads((tmp_path / d / "gelu/gelu.size.json").read_text())["load_image"] for d in ("build", "quiet")]
    assert sizes[1] < sizes[0] - 2048, sizes


def test_a_firmware_links_only_the_softmax_method_its_plan_takes(tmp_path, ds_cnn_plan):
    """DS-CNN's Softmax takes the float method (output scale 1/255): its firmware links that
    method and libm's expf, not the integer one. A Conv + Softmax plan quantized to 1/256, -128
    takes the integer method: on DS-CNN's firmware it is refused by method name; built for its
    own plan it runs without expf."""
    from tests.ops.models_activation import plan_of
    from tests.ops.test_ops_activation import TILED

    make, quant = TILED["softmax_integer"]
    plan = plan_of(tmp_path, "softmax_integer", make(), quant, budget="256K")
    build = tmp_path / "build"
    done = Scons(REPO)(f"model={plan}", f"build_dir={build}", f"runtime={ds_cnn_plan}", "run", expect=2)
    _refused(done, build / "softmax_integer/softmax_integer.run.log",
             r"firmware said: ERROR TGR_ERR_UNSUPPORTED: op \d+ \(Softmax\) takes the softmax_integer method, "
             r"which is not built into this firmware")
    refused_elf = build / "softmax_integer/softmax_integer.elf"
    assert _softmax_methods(refused_elf) == {"SOFTMAX_FLOAT"}
    assert "expf" in _linked(refused_elf, "")
    Scons(REPO)(f"model={plan}", f"build_dir={tmp_path / 'own'}", "run")
    own_elf = tmp_path / "own/softmax_integer/softmax_integer.elf"
    assert _softmax_methods(own_elf) == {"SOFTMAX_INTEGER"}
    assert "expf" not in _linked(own_elf, "")


#: DS-CNN's convolution-family methods (ops.h) and the kernel variants they run (kernels.h), per
#: build: its first layer is padded with a small window (10x4 x 1 channel = 40 inputs: the gather
#: variants), its 1x1 layers pointwise, its depthwise layers 3x3 with channel multiplier 1 (in the
#: DSP build calls of a few outputs take tgr_depthwise_s8: tgr_depthwise_call_is_small).
DS_CNN_METHODS = {"CONV_GATHER", "CONV_POINTWISE", "DEPTHWISE_3X3", "FULLY_CONNECTED", "SOFTMAX_FLOAT"}
DS_CNN_VARIANTS = {
    "default": {"tgr_conv_gather_s8", "tgr_conv_pointwise_s8", "tgr_depthwise_3x3_s8", "tgr_depthwise_s8",
                "tgr_fully_connected_s8"},
    "mve": {"tgr_conv_gather_mve_s8", "tgr_conv_pointwise_mve_s8", "tgr_depthwise_3x3_mve_s8",
            "tgr_fully_connected_s8"},
}


def conv_family_variants() -> set[str]:
    """Every kernel variant of the convolution family, as kernels.h declares them."""
    text = (REPO / "runtime/src/kernels/kernels.h").read_text()
    return set(re.findall(r"^void (tgr_(?:conv|depthwise|fully_connected)\w*_s8)\(", text, re.M))


def test_conv_family_variants_are_the_ones_kernels_h_declares() -> None:
    assert {v for build in DS_CNN_VARIANTS.values() for v in build} < conv_family_variants()
    assert {"tgr_conv_plain_s8", "tgr_depthwise_plain_s8",
            "tgr_fully_connected_plain_s8", "tgr_conv_transpose_s8"} <= conv_family_variants()


@pytest.mark.parametrize("build_name", list(DS_CNN_VARIANTS))
def test_a_firmware_links_the_kernel_variants_of_its_plan_and_no_other(tmp_path, ds_cnn_plan, build_name):
    """DS-CNN with runtime=plan (the default) links exactly its layers' methods and, through them,
    their kernel variants in this build: a fast path DS-CNN does not take (the
    plain loops, the Helium patch in the DSP build, ...) is not in the image."""
    build = tmp_path / "build"
    Scons(REPO)(f"model={ds_cnn_plan}", f"build_dir={build}", *(("mve=1",) if build_name == "mve" else ()))
    elf = build / "ds_cnn/ds_cnn.elf"
    assert _linked(elf, "tgr_run_METHOD_") == DS_CNN_METHODS
    linked = _linked(elf, "") & conv_family_variants()
    assert DS_CNN_VARIANTS[build_name] <= linked, f"a variant of the plan is missing: {linked}"
    assert linked <= DS_CNN_VARIANTS[build_name], f"a variant DS-CNN does not use is linked: {linked}"


def test_a_firmware_refuses_a_path_or_codec_it_does_not_link(tmp_path, ds_cnn_plan):
    """DS-CNN at 2K (chains, by-input) and DS-CNN with LZ4 weights, on a firmware built for
    DS-CNN at 20K (one normal stage, no LZ4)."""
    onnx_path = ds_cnn_plan.with_suffix(".onnx")
    tight = tigris_compile(onnx_path, tmp_path / "ds_cnn_2k.tgrs", "2K")
    build = tmp_path / "build"
    done = Scons(REPO)(f"model={tight}", f"build_dir={build}", f"runtime={ds_cnn_plan}", "run", expect=2)
    _refused(done, build / "ds_cnn_2k/ds_cnn_2k.run.log",
             r"firmware said: ERROR TGR_ERR_UNSUPPORTED: stage \d+ (takes the \w+ path, which is not built into this "
             r"firmware|cannot be executed by this runtime: its path depends on an execution path that is not built)")
    assert _linked(build / "ds_cnn_2k/ds_cnn_2k.elf", "tgr_path_run_") == {"TGR_PATH_NORMAL"}

    packed = tigris_compile(onnx_path, tmp_path / "ds_cnn_lz4.tgrs", "64K", "-c", "lz4")
    done = Scons(REPO)(f"model={packed}", f"build_dir={build}", f"runtime={ds_cnn_plan}", "run", expect=2)
    _refused(done, build / "ds_cnn_lz4/ds_cnn_lz4.run.log",
             r"the plan's weights are LZ4-compressed and the LZ4 decoder is not built into this firmware")
    # built for its own plan, the same LZ4 plan runs (and links the decoder)
    Scons(REPO)(f"model={packed}", f"build_dir={tmp_path / 'own'}", "run")
    assert "tgr_lz4_decode" in subprocess.run([require_tool("arm-none-eabi-nm"), str(tmp_path / "own/ds_cnn_lz4/ds_cnn_lz4.elf")],
                                              capture_output=True, text=True, check=True).stdout


def test_slow_auto_runs_vww_by_path(tmp_path):
    """The sdist's VWW model given by path with only its budget: the slow arena is what its run
    uses (27,664 B at 96K), where a fixed default of 4 KiB failed."""
    from tests.ops.models_data import require_sdist_model

    model = require_sdist_model("vww_96_int8")
    build = tmp_path / "build"
    done = Scons(REPO)(f"model={model}", "budget=96K", f"build_dir={build}", "run")
    assert "result: ok (vww_96_int8)" in done.stdout
    needs = (build / "vww_96_int8/vww_96_int8.needs.txt").read_text()
    slow_peak = int(re.search(r"^slow_peak (\d+)$", needs, re.M).group(1))
    firmware = json.loads((build / "vww_96_int8/firmware.json").read_text())
    assert firmware["slow_arena_auto"] and firmware["slow_arena_bytes"] == slow_peak > 4096
    arena = re.search(r"^ARENA .* slow_used=(\d+) .*slow_cap=(\d+)\)", done.stdout, re.M)
    assert int(arena.group(1)) == int(arena.group(2)) == slow_peak


def test_declared_stack_below_the_static_bound_fails_the_gate(tmp_path, tiny_plan):
    build = tmp_path / "build"
    failed = Scons(REPO)(f"model={tiny_plan}", f"build_dir={build}", "stack=512", expect=2)
    assert re.search(r"main stack \(static worst case\) [\d,]+ B over size 0\.5 KiB by", failed.stderr), failed.stderr
    stack = json.loads((build / "tiny/tiny.stack.json").read_text())
    assert stack["reserved_bytes"] == 512 and not stack["auto"] and stack["worst_bytes"] > 512
    # auto: the reservation covers the bound with the stated margin
    Scons(REPO)(f"model={tiny_plan}", f"build_dir={build}")
    stack = json.loads((build / "tiny/tiny.stack.json").read_text())
    from tigris_scons.stackuse import reserve_for

    assert stack["auto"] and stack["reserved_bytes"] == reserve_for(stack["worst_bytes"]) >= stack["worst_bytes"]
    size = json.loads((build / "tiny/tiny.size.json").read_text())
    assert [s["size"] for s in size["sections"] if s["name"] == ".stack"] == [stack["reserved_bytes"]]


def test_validate_digest_binds_the_validated_plan_and_refuses_any_other(tmp_path, ds_cnn_plan, tiny_plan):
    """validate=digest: the build validates the plan with the runtime's loader on the host, the
    firmware links no loader, runs that plan and refuses a different one by its digest."""
    from tigris_scons.qemu import qemu_command, run_qemu

    full, digest = tmp_path / "full", tmp_path / "digest"
    Scons(REPO)(f"model={ds_cnn_plan}", f"build_dir={full}")
    done = Scons(REPO)(f"model={ds_cnn_plan}", f"build_dir={digest}", "validate=digest", "run")
    assert "result: ok (ds_cnn)" in done.stdout
    elf = digest / "ds_cnn/ds_cnn.elf"
    nm = subprocess.run([require_tool("arm-none-eabi-nm"), str(elf)], capture_output=True, text=True, check=True).stdout
    assert " T tgr_plan_bind" in nm and "tgr_plan_load" not in nm and "tgr_check_kernels" not in nm
    sha = hashlib.sha256(ds_cnn_plan.read_bytes()).hexdigest()
    assert "fw_plan_digest[32] = { " + ", ".join(f"0x{sha[i:i + 2]}u" for i in range(0, 64, 2)) + " };" in \
        (digest / "ds_cnn/main.c").read_text()
    assert " T fw_sha256" in nm
    sizes = [json.loads((d / "ds_cnn/ds_cnn.size.json").read_text())["load_image"] for d in (full, digest)]
    assert sizes[1] < sizes[0] - 8192, sizes
    # one changed byte of the plan (a weight), or another plan: refused before anything is bound
    changed = bytearray(ds_cnn_plan.read_bytes())
    changed[-1] ^= 1
    (tmp_path / "changed.tgrs").write_bytes(changed)
    for plan in (tmp_path / "changed.tgrs", tiny_plan):
        result = run_qemu(qemu_command(require_tool("qemu-system-arm"), str(elf), str(plan)), tmp_path / "run.log",
                          timeout=30)
        assert result.exit_code == 2, result.transcript
        assert re.search(rf"^ERROR plan digest 0x[0-9a-f]{{8}}\.\.\. is not the SHA-256 of the plan this firmware was "
                         rf"built and validated for, 0x{sha[:8]}\.\.\.$", result.transcript, re.M), result.transcript


def test_validate_digest_refuses_a_plan_the_runtime_refuses(tmp_path):
    """No firmware may bind unchecked a plan the loader refuses: the build stops."""
    plan = _gelu_plan(tmp_path)
    data = bytearray(plan.read_bytes())
    data[44] |= 0x02  # an unknown header flag bit: the loader refuses the plan
    (tmp_path / "bad.tgrs").write_bytes(data)
    failed = Scons(REPO)(f"model={tmp_path / 'bad.tgrs'}", f"build_dir={tmp_path / 'build'}", "validate=digest", expect=2)
    assert "validate=digest: the runtime refuses this plan on the host" in failed.stderr
    assert "TGR_ERR_UNSUPPORTED unknown header flag bits 0x2" in failed.stderr, failed.stderr
