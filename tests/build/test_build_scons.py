"""End-to-end: scons in temporary build folders, with the real toolchain, QEMU and runtime.

Each test uses its own build directory (``build_dir=<tmp>``, signatures included), so tests
are independent of each other and of the developer's ``build/``.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.build.build_helpers import TINY_BUILDER, Scons, tiny_model_toml, write_model
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]

DS_CNN_BUILDER = REPO / "models/ds_cnn/build.py"
FOUR_LINES = [
    r"^BENCH_START ds_cnn @ Cortex-M55 \(QEMU mps3-an547\)$",
    r"^Ops: 13  Stages: 1  Tensors: 14  Budget: 20480 bytes$",
    r"^OUTPUT n=12 checksum=\d+ min=-?\d+ max=-?\d+ nonmin=\d+",
    r"^ARENA fast_peak=\d+ slow_used=(\d+) total_sram=\d+ bytes \(fast_cap=20480 slow_cap=\1\)",  # slow = "auto"
]
COMPILE_STEPS = ("MODEL ", "PLAN ", "RENDER ", "CC ", "AR ", "LINK ", "SIZE ", "REFERENCE ")


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def steps(stdout: str) -> list[str]:
    """The progress lines (first word + target) SCons printed for actions it ran."""
    return [line for line in stdout.splitlines()
            if re.match(r"^(MODEL|PLAN|RENDER|CC|AR|RANLIB|LINK|SIZE|CHECK|REFERENCE|QEMU) ", line)]


def ds_cnn_model(folder: Path, **changes: str) -> Path:
    """A copy of models/ds_cnn/model.toml whose builder is the real ds_cnn builder."""
    text = (REPO / "models/ds_cnn/model.toml").read_text()
    text = text.replace('builder = "build.py"', f'builder = "{DS_CNN_BUILDER}"')
    for old, new in changes.items():
        assert old in text, old
        text = text.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.toml").write_text(text)
    return folder / "model.toml"


def test_ds_cnn_lifecycle(tmp_path):
    """Pass, null rebuild, budget edits re-running only the check, over-budget failure."""
    scons = Scons(REPO)
    toml = ds_cnn_model(tmp_path / "ds_cnn")
    build = tmp_path / "build"
    # icount=1 makes the whole transcript repeatable (the WORK line counts SysTick ticks; without
    # -icount they follow host time, the log changes and the final check re-runs every time).
    args = [f"model={toml}", f"build_dir={build}", "icount=1"]
    out = build / "ds_cnn"

    # 1. clean build + run passes; the four lines, the size table, every report file
    first = scons(*args, "run")
    lines = first.stdout.splitlines()
    for pattern in FOUR_LINES:
        assert any(re.match(pattern, line) for line in lines), pattern
    seed_lines = [line for line in lines if line.startswith(("BENCH_START", "OUTPUT ", "ARENA", "BENCH_END"))]
    assert len(seed_lines) == 4 and not any(re.search(r"0x[0-9a-fA-F]", line) for line in seed_lines), seed_lines
    from tigris_scons.inputs import fnv1a32

    output_bytes = next(line.split()[-1] for line in lines if line.startswith("OUTPUT_BYTES 0 "))
    assert f" checksum={fnv1a32(bytes.fromhex(output_bytes))} " in next(line for line in lines
                                                                      if line.startswith("OUTPUT "))
    assert any(re.match(r"^OUTPUT_BYTES 0 output_QuantizeLinear_Output [0-9a-f]{24}$", line) for line in lines)
    assert "BENCH_END status=ok" in lines
    assert "result: ok (ds_cnn)" in lines
    assert any(line.startswith("output") and "equal to host reference (bundled" in line for line in lines)
    for suffix in (".elf", ".map", ".tgrs", ".size.json", ".size.ok", ".run.log", ".run.json", ".ref.json",
                   ".check.ok", ".check.json", ".size-check.json"):
        assert (out / f"ds_cnn{suffix}").is_file(), suffix
    check = json.loads((out / "ds_cnn.check.json").read_text())
    assert check["verdict"]["ok"] and check["reference"]["runtime"]["source"] == "bundled"
    run = json.loads((out / "ds_cnn.run.json").read_text())
    assert run["exit_code"] == 0 and run["marker_seen"] and not run["timed_out"]

    # 2. nothing changed: only the QEMU run happens again (and, without icount, the final check)
    second = scons(*args, "run")
    assert [s.split()[0] for s in steps(second.stdout)] == ["QEMU"], second.stdout
    assert "result: ok, unchanged since the last check" in second.stdout
    host_time = scons(*args[:-1], "icount=0", "run")
    assert [s.split()[0] for s in steps(host_time.stdout)] in (["QEMU"], ["QEMU", "CHECK"]), host_time.stdout
    assert scons("-q", *args, expect=None).returncode == 0  # default targets are up to date

    # 3. a budget edit in model.toml re-runs only the static check (default target)...
    ds_cnn_model(tmp_path / "ds_cnn", **{'sram = "32K"': 'sram = "30K"'})
    edited = scons(*args)
    assert [s.split()[0] for s in steps(edited.stdout)] == ["CHECK"], edited.stdout
    # ... and with `run`: the static check, the run and the final check, nothing compiled
    ds_cnn_model(tmp_path / "ds_cnn", **{'sram = "32K"': 'sram = "31K"'})
    edited_run = scons(*args, "run")
    assert sorted(s.split()[0] for s in steps(edited_run.stdout)) == ["CHECK", "CHECK", "QEMU"], edited_run.stdout
    assert not any(s.startswith(COMPILE_STEPS) for s in steps(edited_run.stdout))

    # 4. over budget: exit 2, one-line reason, table, no stamps, JSON reports present
    ds_cnn_model(tmp_path / "ds_cnn", **{'DTCM = "28K"': 'DTCM = "16K"'})
    over = scons(*args, "run", expect=2)
    assert re.search(r"scons: \*\*\* \[.*ds_cnn\.size\.ok\] ds_cnn: DTCM region [\d,]+ B over budget 16\.0 KiB by [\d,]+ B",
                     over.stderr), over.stderr
    assert "Traceback" not in over.stderr
    assert re.search(r"^DTCM .*OVER \+[\d,]+ B", over.stdout, re.M)
    assert "result: FAILED: ds_cnn: DTCM region" in over.stdout
    assert not (out / "ds_cnn.size.ok").exists() and not (out / "ds_cnn.check.ok").exists()
    report = json.loads((out / "ds_cnn.size-check.json").read_text())
    assert report["verdict"]["ok"] is False and "DTCM" in report["verdict"]["reason"]
    assert "QEMU" not in [s.split()[0] for s in steps(over.stdout)]  # an over-budget image is never booted

    # 5. warn mode reports but passes
    warned = scons(*args, "budget_mode=warn")
    assert "WARNING (budget_mode=warn): DTCM region" in warned.stdout and (out / "ds_cnn.size.ok").is_file()

    # 6. the flash budget covers the plan (plan larger than the declared flash fails)
    small_flash = scons(*args, "flash=16K", expect=2)
    assert "flash (plan + firmware image)" in small_flash.stderr and "over budget 16.0 KiB" in small_flash.stderr


def test_two_models_in_parallel_never_overlap_qemu(tmp_path):
    scons = Scons(REPO)
    build = tmp_path / "build"
    tiny = tiny_model_toml(tmp_path / "tiny")
    ds = ds_cnn_model(tmp_path / "ds_cnn")
    result = scons("-j2", f"model={ds},{tiny}", f"build_dir={build}", "run")
    runs = [json.loads((build / m / f"{m}.run.json").read_text()) for m in ("ds_cnn", "tiny")]
    (a_start, a_end), (b_start, b_end) = sorted((r["started"], r["finished"]) for r in runs)
    assert a_end <= b_start, "QEMU runs overlapped"
    lines = result.stdout.splitlines()
    for model in ("ds_cnn", "tiny"):  # each transcript is one contiguous block
        start = next(i for i, line in enumerate(lines) if line.startswith(f"---- QEMU {model}:"))
        block = lines[start + 1:start + 8]
        assert block[0].startswith(f"BENCH_START {model} ") and block[-1] == "BENCH_END status=ok", block
        assert [line.split()[0] for line in block[1:-1]] == ["Ops:", "OUTPUT", "ARENA", "WORK", "OUTPUT_BYTES"], block
    assert lines.count("result: ok (ds_cnn)") >= 1 and lines.count("result: ok (tiny)") >= 1


def test_icount_work_figure_repeats(tmp_path):
    """icount=1: the firmware's SysTick count of one inference is identical run to run, lands in
    run.json and check.json, and the table says it is work, not latency."""
    scons = Scons(REPO)
    toml = ds_cnn_model(tmp_path / "ds_cnn")
    out = tmp_path / "build" / "ds_cnn"
    figures = []
    for _ in range(2):
        done = scons(f"model={toml}", f"build_dir={tmp_path / 'build'}", "icount=1", "run")
        run = json.loads((out / "ds_cnn.run.json").read_text())
        assert run["command"][-2:] == ["-icount", "shift=0"]
        assert re.search(r"^WORK systick_ticks=\d+ clock=32MHz-virtual$", done.stdout, re.M)
        assert re.search(r"^work: [\d,]+ SysTick ticks @ 32MHz-virtual ~ [\d,]+ guest instructions "
                         r"\(-icount shift=0\); a count of work, not latency", done.stdout, re.M), done.stdout
        figures.append(run["work"])
    assert figures[0] == figures[1], figures
    work = figures[0]
    assert work["deterministic"] and work["icount_shift"] == 0 and work["systick_ticks"] > 0
    assert work["instructions_approx"] == round(work["systick_ticks"] * 31.25)
    assert json.loads((out / "ds_cnn.check.json").read_text())["work"] == work
    plain = scons(f"model={toml}", f"build_dir={tmp_path / 'build'}", "icount=0", "run")  # without icount: no claim
    assert not json.loads((out / "ds_cnn.run.json").read_text())["work"]["deterministic"]
    assert "-icount" not in json.loads((out / "ds_cnn.run.json").read_text())["command"]
    assert "guest instructions" not in plain.stdout


def test_mobilenet_128k_with_the_slow_arena_in_ddr(tmp_path):
    """The declared 128K MobileNetV2 plan with ``slow_ddr=1`` (on-chip: the declared-models test)."""
    build = tmp_path / "build"
    done = Scons(REPO)("model=mobilenetv2_035", "slow_ddr=1", f"build_dir={build}", "run")
    assert "result: ok (mobilenetv2_035)" in done.stdout
    arena = re.search(r"^ARENA fast_peak=(\d+) slow_used=(\d+) total_sram=(\d+) bytes", done.stdout, re.M)
    fast_peak, slow_used, total_sram = map(int, arena.groups())
    assert slow_used > 0 and total_sram == fast_peak  # the slow arena is off-chip
    size = json.loads((build / "mobilenetv2_035/mobilenetv2_035.size.json").read_text())
    regions = {r["name"]: r for r in size["regions"]}
    # slow = "auto": the DDR reservation is the slow arena the run needs, which it used in full
    assert regions["DDR"]["reserved"] >= slow_used > 0 and regions["ISRAM"]["reserved"] == 0


def test_firmware_failures_fail_cleanly(tmp_path):
    """Timeout, HardFault and guest reset: exit 2, a reason, the log and run.json kept, no stamp."""
    scons = Scons(REPO)
    build = tmp_path / "build"
    tiny = tiny_model_toml(tmp_path / "tiny")
    out = build / "tiny"
    cases = [
        ("7", ["qemu_timeout=2"], r"QEMU did not finish within 2 s"),
        ("2", [], r"QEMU exited with status 3 \(HardFault\)"),
        ("5", [], r"never printed 'BENCH_END status=ok' \(guest reset or early exit\)"),
    ]
    scons(f"model={tiny}", f"build_dir={build}", "run")
    assert (out / "tiny.check.ok").is_file()
    for selftest, extra, message in cases:
        failed = scons(f"model={tiny}", f"build_dir={build}", f"fw_selftest={selftest}", *extra, "run", expect=2)
        assert re.search(r"scons: \*\*\* \[.*tiny\.run\.log\] tiny: .*" + message, failed.stderr), failed.stderr
        assert "Traceback" not in failed.stderr
        assert not (out / "tiny.check.ok").exists(), "a failed run must not leave a passing stamp"
        assert (out / "tiny.run.log").read_text().startswith("BENCH_START tiny")
        run = json.loads((out / "tiny.run.json").read_text())
        assert run["ok"] is False
        if selftest == "7":
            assert run["timed_out"] and run["seconds"] < 30

    # QEMU killed from outside: a signal is a failure, never a pass
    scons(f"model={tiny}", f"build_dir={build}", "run")
    killer = tmp_path / "killed-qemu"
    killer.write_text("#!/bin/sh\necho 'BENCH_START tiny @ x'\nkill -9 $$\n")
    killer.chmod(0o755)
    killed = scons(f"model={tiny}", f"build_dir={build}", f"qemu={killer}", "run", expect=2)
    assert "tiny: QEMU exited with status -9 (killed by SIGKILL)" in killed.stderr, killed.stderr
    assert not (out / "tiny.check.ok").exists()


def test_ctrl_c_during_the_run_leaves_no_stamp(tmp_path):
    import os
    import signal
    import subprocess
    import time

    build = tmp_path / "build"
    tiny = tiny_model_toml(tmp_path / "tiny")
    Scons(REPO)(f"model={tiny}", f"build_dir={build}", "run")
    stamp = build / "tiny" / "tiny.check.ok"
    assert stamp.is_file()
    slow = tmp_path / "slow-qemu"
    slow.write_text("#!/bin/sh\necho 'BENCH_START tiny @ x'\nexec sleep 60\n")
    slow.chmod(0o755)
    log = build / "tiny" / "tiny.run.log"
    log.unlink()  # so the wait below sees the new run, not the previous one
    cmd, cwd, env = Scons(REPO).command([f"model={tiny}", f"build_dir={build}", f"qemu={slow}", "run"])
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.is_file() and "BENCH_START" in log.read_text()):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert not stamp.exists(), "an interrupted run must not leave a passing stamp"
    assert "Traceback" not in stderr
    assert "killed by SIGINT" in stderr or "interrupted" in stderr.lower(), stderr


FOREIGN_SCONSTRUCT = """\
# An existing project's SConstruct: it only loads the tool from the tigris-scons checkout.
# Its own host flags must not leak into the Cortex-M55 build. TIGRISBUILD_ICOUNT: repeatable runs.
env = Environment(tools=["default", "tigris"], toolpath=[r"{toolpath}"], TIGRISBUILD_ICOUNT=True,
                  CCFLAGS=["-march=x86-64"], CPPDEFINES=["HOST_ONLY"], LIBS=["pthread"])
kws = env.TigrisModel(r"{model}", budget="2K", sram="64K", flash="128K", region_dtcm="48K")
Default(kws.run)
Alias("kws-size", kws.size_ok)
"""


@pytest.mark.slow
def test_existing_tree_loads_the_tool_with_toolpath(tmp_path, tiny_onnx):
    project = tmp_path / "project"
    project.mkdir()
    model = project / "kws.onnx"
    shutil.copy(tiny_onnx, model)
    (project / "SConstruct").write_text(FOREIGN_SCONSTRUCT.format(toolpath=REPO / "site_scons/site_tools",
                                                                  model="kws.onnx"))
    scons = Scons(project)
    first = scons()
    assert "BENCH_START kws @ Cortex-M55 (QEMU mps3-an547)" in first.stdout
    assert "result: ok (kws)" in first.stdout
    assert (project / "build/kws/kws.check.ok").is_file()
    assert (project / ".sconsign.dblite").is_file()  # the project's own signature file, not ours
    again = scons()
    assert [s.split()[0] for s in steps(again.stdout)] == ["QEMU"], again.stdout
    assert scons("-q", "kws-size", expect=None).returncode == 0


def test_command_line_model_file_with_budgets(tmp_path, tiny_plan):
    scons = Scons(REPO)
    build = tmp_path / "build"
    plan = tmp_path / "ready.tgrs"
    shutil.copy(tiny_plan, plan)
    done = scons(f"model={plan}", f"build_dir={build}", "sram=64K", "flash=128K", "fast_kb=4", "slow_kb=1",
                 "slow_ddr=1", "run")
    assert "PLAN " not in done.stdout  # a ready plan is used as is
    assert "ARENA fast_peak=" in done.stdout and "fast_cap=4096 slow_cap=1024" in done.stdout
    assert "total_sram=" in done.stdout and "result: ok (ready)" in done.stdout
    size = json.loads((build / "ready/ready.size.json").read_text())
    ddr = next(r for r in size["regions"] if r["name"] == "DDR")
    assert ddr["used"] + ddr["reserved"] >= 1024  # slow arena moved to DDR


def _arg_max_onnx(path: Path) -> Path:
    """int8 [1, 8, 16, 16] -> ArgMax over channels -> int64 [1, 16, 16]: an int32 tensor inside
    the plan, widened to int64 at the interface."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("ArgMax", ["xf"], ["y"], axis=1, keepdims=0)]
    graph = helper.make_graph(nodes, "arg_max", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [1, 16, 16])],
                              [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
                               numpy_helper.from_array(np.array(3, np.int8), "z")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_int64_indices_run_on_the_m55(tmp_path):
    """An ArgMax model end to end: int32 indices in the arena (row bands at 1K), int64 outputs
    printed by the firmware and equal to the host reference's."""
    from tests.build.build_helpers import tigris_compile

    plan = tigris_compile(_arg_max_onnx(tmp_path / "argmax.onnx"), tmp_path / "argmax.tgrs", "1K")
    done = Scons(REPO)(f"model={plan}", f"build_dir={tmp_path / 'build'}", "sram=64K", "flash=128K", "fast_kb=1",
                       "slow_kb=4", "run")
    assert re.search(r"^OUTPUT n=256 checksum=\d+ min=\d+ max=\d+", done.stdout, re.M), done.stdout
    assert "result: ok (argmax)" in done.stdout


def _gelu_onnx(path: Path, approximate: str) -> Path:
    """int8 [1, 8, 16, 16] -> Gelu -> int8 (the firmware feeds 2048 pseudo-random codes): the
    table is built with the target's libm (newlib erff/tanhf), the reference with the host's."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("Gelu", ["xf"], ["g"], approximate=approximate),
             helper.make_node("QuantizeLinear", ["g", "so", "zo"], ["y"])]
    graph = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 8, 16, 16])],
                              [numpy_helper.from_array(np.array(0.0471, np.float32), "s"),
                               numpy_helper.from_array(np.array(-5, np.int8), "z"),
                               numpy_helper.from_array(np.array(0.0213, np.float32), "so"),
                               numpy_helper.from_array(np.array(-100, np.int8), "zo")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)
    return path


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_on_the_m55_matches_the_host_reference(tmp_path, approximate):
    from tests.build.build_helpers import tigris_compile

    plan = tigris_compile(_gelu_onnx(tmp_path / "gelu.onnx", approximate), tmp_path / "gelu.tgrs", "2K")
    done = Scons(REPO)(f"model={plan}", f"build_dir={tmp_path / 'build'}", "sram=64K", "flash=128K", "run")
    assert re.search(r"^output .* ok  equal to host reference", done.stdout, re.M), done.stdout
    assert "result: ok (gelu)" in done.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["model=no_such_model"], "model=no_such_model names nothing"),
        (["model=ds_cnn", "sram=64KB"], "sram=64KB: unit 'KB' in '64KB' is ambiguous"),
        (["model=ds_cnn", "sramm=64K"], "unknown variable(s): sramm= (did you mean sram=?)"),
        (["model=ds_cnn", "qemu_timeout=soon"], "qemu_timeout=soon: expected positive seconds"),
    ],
)
def test_configuration_errors_are_one_line(tmp_path, args, fragment):
    failed = Scons(REPO)(*args, f"build_dir={tmp_path / 'build'}", expect=2)
    assert fragment in failed.stderr
    assert "Traceback" not in failed.stderr and "File \"" not in failed.stderr


def test_bad_declaration_is_one_line(tmp_path):
    toml = write_model(tmp_path / "m", f"""\
        builder = "{TINY_BUILDER}"
        [part]
        sramm = "64K"
        """)
    failed = Scons(REPO)(f"model={toml}", f"build_dir={tmp_path / 'build'}", expect=2)
    assert f"{toml}: [part]: unknown key 'sramm' (did you mean 'sram'?)" in failed.stderr


def test_help_lists_variables_even_with_a_bad_model(tmp_path):
    shown = Scons(REPO)("-h", "model=nothing", f"build_dir={tmp_path / 'build'}")
    for name in ("model=", "budget=", "fast_kb=", "slow_kb=", "slow_ddr=", "sram=", "flash=", "qemu_timeout=",
                 "tensor_align=", "budget_mode=", "sanitize="):
        assert f"\n  {name}" in shown.stdout, name
    for target in ("run", "size", "host"):
        assert re.search(rf"^  {target}\s", shown.stdout, re.M), target


def test_missing_tools_say_what_to_install(tmp_path):
    scons = Scons(REPO)
    tiny = tiny_model_toml(tmp_path / "tiny")
    no_gcc = scons(f"model={tiny}", f"build_dir={tmp_path / 'b1'}", "cross=/nonexistent/arm-none-eabi-", expect=2)
    assert "/nonexistent/arm-none-eabi-gcc not found; install it with: apt-get install" in no_gcc.stderr
    assert "gcc-arm-none-eabi" in no_gcc.stderr and "Traceback" not in no_gcc.stderr
    no_qemu = scons(f"model={tiny}", f"build_dir={tmp_path / 'b2'}", "qemu=/nonexistent/qemu-system-arm", "run",
                    expect=2)
    assert "/nonexistent/qemu-system-arm not found; install it with: apt-get install" in no_qemu.stderr
    assert "Traceback" not in no_qemu.stderr


def test_model_files_that_do_not_parse(tmp_path):
    scons = Scons(REPO)
    broken_onnx = tmp_path / "broken.onnx"
    broken_onnx.write_bytes(b"this is not protobuf")
    failed = scons(f"model={broken_onnx}", "budget=8K", f"build_dir={tmp_path / 'build'}", expect=2)
    assert re.search(r"scons: \*\*\* \[.*broken\.tgrs\] tigris compile refused .*broken\.onnx: ", failed.stderr), failed.stderr
    broken_plan = tmp_path / "broken.tgrs"
    broken_plan.write_bytes(b"TGRS" + bytes(100))
    failed = scons(f"model={broken_plan}", f"build_dir={tmp_path / 'build2'}", expect=2)
    assert "not a usable .tgrs plan" in failed.stderr and "Traceback" not in failed.stderr
    no_budget = scons(f"model={tmp_path / 'broken.onnx'}", f"build_dir={tmp_path / 'build3'}", expect=2)
    assert "needs a compile budget" in no_budget.stderr


def test_fast_arena_smaller_than_the_plan_needs(tmp_path):
    tiny = tiny_model_toml(tmp_path / "tiny", extra="""\
        [regions]
        DTCM = "48K"
        """)
    failed = Scons(REPO)(f"model={tiny}", f"build_dir={tmp_path / 'build'}", "fast_kb=1", expect=2)
    assert "fast arena 1024 B is smaller than the plan needs (2048 B" in failed.stderr
    assert textwrap  # (module used for fixtures)


def test_every_declared_model_fits_and_matches_the_reference(tmp_path):
    """`scons model=<each models/*/model.toml> run` passes: the declarations are honest."""
    names = sorted(p.parent.name for p in (REPO / "models").glob("*/model.toml"))
    assert "ds_cnn" in names
    build = tmp_path / "build"
    done = Scons(REPO)(f"model={','.join(names)}", f"build_dir={build}", "run")
    for name in names:
        assert f"result: ok ({name})" in done.stdout, name
        _links_what_its_plan_uses(build / name, name)


def _links_what_its_plan_uses(out: Path, name: str) -> None:
    """The firmware links exactly the plan's ops (as the compiler's own reader lists them) and
    the paths the runtime reported for it, which include every path the reference's trace takes."""
    import subprocess

    from tigris.emitters.binary.reader import read_binary_plan

    from tigris_scons import builtin

    catalog = builtin.scan(REPO / "runtime")
    symbols = subprocess.run([require_tool("arm-none-eabi-nm"), "--defined-only", str(out / f"{name}.elf")],
                             check=True, capture_output=True, text=True).stdout
    linked_methods = set(re.findall(r" T tgr_run_(METHOD_\w+)$", symbols, re.M))
    by_name = {m.name: m for m in catalog.methods.values()}
    linked_ops = set(re.findall(r" T tgr_run_(OP_\w+)$", symbols, re.M)) | {
        catalog.ops[by_name[m].op].name for m in linked_methods}
    plan_ops = {op["op_type"] for op in read_binary_plan((out / f"{name}.tgrs").read_bytes())["ops"]}
    assert linked_ops == {catalog.ops[c].name for c in plan_ops}, name
    linked_paths = {p.removeprefix("TGR_PATH_").lower() for p in re.findall(r" T tgr_path_run_(TGR_PATH_\w+)$", symbols, re.M)}
    needs = builtin.parse_needs((out / f"{name}.needs.txt").read_text())
    assert linked_paths == set(needs.paths.values()), name
    assert {by_name[m].label for m in linked_methods} == set(needs.methods.values()), name
    from tigris.runtime import Session

    with Session(str(out / f"{name}.tgrs")) as session:
        feeds = {i["name"]: np.zeros(i["shape"], i["dtype"]) for i in session.inputs}
        _, events, _ = session.trace(feeds)
    taken = {e["path"] for e in events if e.get("kind") == "stage_begin"}
    assert taken and taken <= linked_paths, (name, taken, linked_paths)
    assert ("tgr_lz4_decode" in symbols) == bool(needs.lz4)


CM55_SCONSTRUCT = """\
env = Environment(tools=[], toolpath=[r"{toolpath}"])
env.Tool("tigris_cm55")
env.Program("fw", "fw.c", LINKFLAGS=env["LINKFLAGS"] + ["-nostdlib", "-T", "fw.ld"])
"""


def test_cross_toolchain_tool_on_its_own(tmp_path):
    from tests.build.build_helpers import ELF_C, ELF_LD

    (tmp_path / "SConstruct").write_text(CM55_SCONSTRUCT.format(toolpath=REPO / "site_scons/site_tools"))
    (tmp_path / "fw.c").write_text(ELF_C)
    (tmp_path / "fw.ld").write_text(ELF_LD)
    scons = Scons(tmp_path)
    built = scons()
    assert "-mcpu=cortex-m55+nomve -mthumb -mfloat-abi=hard" in built.stdout
    assert "-ffunction-sections -fdata-sections" in built.stdout and "-Wl,--gc-sections" in built.stdout
    assert (tmp_path / "fw.elf").is_file() and (tmp_path / "fw.map").is_file()
    import subprocess

    attrs = subprocess.run(["arm-none-eabi-readelf", "-A", str(tmp_path / "fw.elf")], capture_output=True,
                           text=True, check=True).stdout
    assert "v8.1-M.mainline" in attrs and "VFP registers" in attrs and "MVE" not in attrs
    scons("-c")
    assert not (tmp_path / "fw.map").exists(), "the map is a declared target, so -c removes it"
