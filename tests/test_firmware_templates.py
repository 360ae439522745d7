"""Tests of firmware_templates/: the template contract, the linker layout and the firmware on QEMU.

Three layers:

* pure Python: rendering, context checks, input generator, output summary, log parser;
* arm-none-eabi-gcc: every source compiles with -Werror, and the linked layout matches the
  AN547 map (no NOLOAD segment with a load address elsewhere, symbols, overflow assertions);
* qemu-system-arm: exit codes and report lines of the paths that never reach the runtime
  (no plan, window mismatch, plan too large, fault self-tests); with runtime/src present, the
  DS-CNN plan end to end, compared byte for byte with the bundled tigris host runtime.

The runtime-free firmware is linked with ``--unresolved-symbols=ignore-all``: those paths exit
before the first runtime call, so the unresolved calls are never executed.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, require_tool

from firmware_templates import contract as c

RUNTIME_INCLUDE = REPO / "runtime" / "include"
RUNTIME_SRC = REPO / "runtime" / "src"
QEMU_TIMEOUT = 60
MIB = 1024 * 1024


def _ctx(**over: object) -> dict:
    base = {
        "model_name": "unit_model",
        "fast_arena_bytes": 20480,
        "slow_arena_bytes": 4096,
        "slow_in_ddr": False,
        "workspace_tensors": 14,
        "plan_window_bytes": 16 * MIB,
        "io_buffer_bytes": 502,
    }
    base.update(over)
    return base


# --------------------------------------------------------------------------- pure Python


def test_render_defines() -> None:
    src = c.render_main_c(_ctx(slow_in_ddr=True, input_seed=0x12345678))
    assert '#define FW_MODEL_NAME "unit_model"' in src
    assert "#define FW_FAST_ARENA_BYTES 20480u" in src
    assert "#define FW_SLOW_ARENA_BYTES 4096u" in src
    assert "#define FW_SLOW_IN_DDR 1" in src
    assert "#define FW_WORKSPACE_TENSORS 14u" in src
    assert "#define FW_PLAN_WINDOW_BYTES 16777216u" in src
    assert "#define FW_IO_BUFFER_BYTES 502u" in src
    assert "#define FW_INPUT_SEED 0x12345678u" in src
    assert "{{" not in src and "{%" not in src


def test_render_default_seed_and_on_chip_slow() -> None:
    src = c.render_main_c(_ctx())
    assert "#define FW_INPUT_SEED 0x9E3779B9u" in src
    assert "#define FW_SLOW_IN_DDR 0" in src


def test_template_is_strict_about_missing_names() -> None:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(c.TEMPLATE_DIR)),
                             undefined=jinja2.StrictUndefined)
    ctx = _ctx()
    del ctx["io_buffer_bytes"]
    with pytest.raises(jinja2.UndefinedError):
        env.get_template(c.MAIN_TEMPLATE).render(**ctx)


@pytest.mark.parametrize("over", [
    {"model_name": 'bad"name'},
    {"model_name": ""},
    {"fast_arena_bytes": -1},
    {"fast_arena_bytes": 1.5},
    {"slow_in_ddr": 1},
    {"workspace_tensors": 70000},
    {"plan_window_bytes": 1000},
    {"input_seed": 0},
    {"input_seed": 2**32},
    {"unexpected": 1},
])
def test_check_context_rejects(over: dict) -> None:
    with pytest.raises(ValueError):
        c.check_context(_ctx(**over))


def test_check_context_requires_all_names() -> None:
    ctx = _ctx()
    del ctx["workspace_tensors"]
    with pytest.raises(ValueError, match="workspace_tensors"):
        c.check_context(ctx)


def test_workspace_bytes_matches_header_macro() -> None:
    text = (RUNTIME_INCLUDE / "tgr.h").read_text()
    assert "sizeof(uint8_t *) + sizeof(uint32_t) + sizeof(uint16_t)" in text
    assert c.workspace_bytes(14) == 14 * 10 + 4


def test_input_stream_reference_values() -> None:
    it = c.input_stream()
    assert [next(it) for _ in range(3)] == [0x510C4619, 0xE02E553E, 0x7BB98F3A]


def test_generate_inputs_one_stream_over_inputs() -> None:
    i8 = c.IoTensor("a", c.DTYPE_INT8, 3, (3,))
    f32 = c.IoTensor("b", c.DTYPE_FLOAT32, 8, (2,))
    a, b = c.generate_inputs([i8, f32])
    assert a == bytes([0x51, 0xE0, 0x7B])
    stream = c.input_stream()
    for _ in range(3):
        next(stream)
    expected = [((v >> 24) - 256 if (v >> 24) >= 128 else (v >> 24)) / 64.0
                for v in (next(stream), next(stream))]
    assert struct.unpack("<2f", b) == tuple(expected)
    with pytest.raises(ValueError):
        c.generate_inputs([c.IoTensor("c", c.DTYPE_INT32, 4, (1,))])


def test_summarize_integer_and_float_domains() -> None:
    s = c.summarize_outputs([(c.DTYPE_INT8, bytes([0x80, 0x7F, 0x80])), (c.DTYPE_UINT8, b"\x05")])
    assert s == {"n": 4, "checksum": c.fnv1a32(b"\x80\x7f\x80\x05"), "min": -128, "max": 127,
                 "nonmin": 2, "float_domain": False}
    raw = struct.pack("<3f", 1.5, float("nan"), -2.0)
    s = c.summarize_outputs([(c.DTYPE_FLOAT32, raw), (c.DTYPE_INT8, b"\x01")])
    assert s["n"] == 4 and s["float_domain"]
    assert s["min"] == struct.unpack("<I", struct.pack("<f", -2.0))[0]
    assert s["max"] == struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert s["nonmin"] == 3  # 1.5, NaN, 1.0
    s = c.summarize_outputs([(c.DTYPE_FLOAT32, struct.pack("<f", float("nan")))])
    assert (s["min"], s["max"], s["nonmin"]) == (0x7FC00000, 0x7FC00000, 1)


GOOD_LOG = """\
BENCH_START ds_cnn @ Cortex-M55 (QEMU mps3-an547)
Ops: 13  Stages: 1  Tensors: 14  Budget: 20480 bytes
OUTPUT n=12 checksum=0xc3279493 min=-128 max=-36 nonmin=9
ARENA fast_peak=16000 slow_used=544 total_sram=16544 bytes (fast_cap=20480 slow_cap=4096) slow_end=32
OUTPUT_BYTES 0 output_QuantizeLinear_Output 99818380dcdc80828484809f
BENCH_END status=ok
"""


def test_parse_log_complete() -> None:
    log = c.parse_log(GOOD_LOG)
    assert log.ok
    assert (log.model, log.ops, log.stages, log.tensors, log.budget) == ("ds_cnn", 13, 1, 14, 20480)
    assert log.output == {"n": 12, "checksum": 0xC3279493, "min": -128, "max": -36, "nonmin": 9}
    assert log.arena == {"fast_peak": 16000, "slow_used": 544, "total_sram": 16544,
                         "fast_cap": 20480, "slow_cap": 4096, "slow_end": 32}
    assert log.output_bytes == [(0, "output_QuantizeLinear_Output",
                                 bytes.fromhex("99818380dcdc80828484809f"))]
    summary = c.summarize_outputs([(c.DTYPE_INT8, log.output_bytes[0][2])])
    assert {k: summary[k] for k in log.output} == log.output


@pytest.mark.parametrize("mutate", [
    lambda t: t.replace("BENCH_END status=ok\n", ""),
    lambda t: t + t,                                   # guest reset: two BENCH_START
    lambda t: t.replace("0xc3279493", "0xc3279494"),   # checksum disagrees with the bytes
    lambda t: t.replace("BENCH_END", "HARDFAULT pc=0x00000000\nBENCH_END"),
    lambda t: t.replace("ARENA", "ERROR x\nARENA"),
])
def test_parse_log_rejects(mutate) -> None:
    assert not c.parse_log(mutate(GOOD_LOG)).ok


# --------------------------------------------------------------------------- cross builds


def _gcc() -> str:
    return require_tool("arm-none-eabi-gcc")


def _compile(src: Path, obj: Path, extra: tuple[str, ...] = ()) -> None:
    cmd = [_gcc(), *c.CFLAGS, f"-I{c.TEMPLATE_DIR}", f"-I{RUNTIME_INCLUDE}", *extra,
           "-c", str(src), "-o", str(obj)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"


def _link(objs: list[Path], elf: Path, extra: tuple[str, ...] = (), check: bool = True
          ) -> subprocess.CompletedProcess:
    cmd = [_gcc(), *c.LINKFLAGS, f"-Wl,-Map={elf.with_suffix('.map')}", *map(str, objs),
           *extra, *(f"-l{lib}" for lib in c.LIBS), "-o", str(elf)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check:
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return res


def build_firmware(work: Path, context: dict, *, runtime: list[Path] | None = None,
                   selftest: int | None = None, link_extra: tuple[str, ...] = ()) -> Path:
    """Render, compile and link one firmware in `work`; runtime=None leaves tgr_* unresolved."""
    work.mkdir(parents=True, exist_ok=True)
    main_c = work / "main.c"
    main_c.write_text(c.render_main_c(context))
    defs = () if selftest is None else (f"-DFW_SELFTEST={selftest}",)
    sources = [*c.SOURCES, main_c] + ([c.SELFTEST_SOURCE] if selftest is not None else [])
    objs = []
    for src in sources:
        obj = work / (src.stem + ".o")
        _compile(src, obj, defs)
        objs.append(obj)
    extra = link_extra
    if runtime is None:
        extra = (*extra, "-Wl,--unresolved-symbols=ignore-all")
    else:
        objs += runtime
    elf = work / "fw.elf"
    _link(objs, elf, extra)
    return elf


def test_all_sources_compile_with_werror(tmp_path: Path) -> None:
    for i, ctx in enumerate((_ctx(), _ctx(slow_in_ddr=True, fast_arena_bytes=0,
                                          slow_arena_bytes=0, io_buffer_bytes=0))):
        main_c = tmp_path / f"main{i}.c"
        main_c.write_text(c.render_main_c(ctx))
        _compile(main_c, tmp_path / f"main{i}.o")
        _compile(main_c, tmp_path / f"main{i}_st.o", ("-DFW_SELFTEST=1",))
    for src in (*c.SOURCES, c.SELFTEST_SOURCE):
        _compile(src, tmp_path / (src.stem + ".o"))


def _elf_layout(elf: Path) -> tuple[dict, dict, list]:
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        ef = ELFFile(f)
        sections = {s.name: (s["sh_addr"], s["sh_size"], s["sh_type"]) for s in ef.iter_sections()
                    if s["sh_flags"] & 0x2}
        symtab = ef.get_section_by_name(".symtab")
        symbols = {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}
        segments = [(p["p_vaddr"], p["p_paddr"], p["p_filesz"], p["p_memsz"])
                    for p in ef.iter_segments() if p["p_type"] == "PT_LOAD"]
    return sections, symbols, segments


def test_linked_layout(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path / "onchip", _ctx())
    sections, symbols, segments = _elf_layout(elf)
    assert sections[".vectors"][0] == 0 and sections[".vectors"][1] == 112 * 4
    assert symbols["__plan_base"] == 0x60000000
    assert symbols["__plan_window_size"] == 16 * MIB
    assert symbols["__stack_top"] == 0x20080000
    assert symbols["__stack_limit"] == 0x20080000 - c.DEFAULT_STACK_BYTES
    assert 0x20000000 <= sections[".arena_fast"][0] < symbols["__stack_limit"]
    assert sections[".arena_fast"][0] % 32 == 0 and sections[".arena_fast"][1] == 20480
    assert sections[".arena_slow"][:2] == (0x21000000, 4096)
    assert sections[".io_buffer"][0] >= 0x61000000
    assert ".arena_slow_ddr" not in sections or sections[".arena_slow_ddr"][1] == 0
    for vaddr, paddr, filesz, memsz in segments:
        if filesz == 0:  # NOLOAD: QEMU zero-fills memsz at paddr
            assert paddr == vaddr, f"NOLOAD segment {vaddr:#x} loads at {paddr:#x}"
            assert not paddr < 0x00080000, f"NOLOAD segment with a load address in ITCM: {paddr:#x}"
        assert not 0x60000000 <= vaddr < 0x61000000, "something is linked in the plan window"
    # no heap, no stdio, no allocator
    for name in ("malloc", "_sbrk", "printf", "_write", "end"):
        assert name not in symbols, name

    ddr = build_firmware(tmp_path / "ddr", _ctx(slow_in_ddr=True))
    sections, _, _ = _elf_layout(ddr)
    assert sections[".arena_slow_ddr"][:2] == (0x61000000, 4096)
    assert ".arena_slow" not in sections or sections[".arena_slow"][1] == 0


def test_plan_window_and_stack_overrides(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path, _ctx(plan_window_bytes=MIB), link_extra=(
        f"-Wl,--defsym=__plan_window_size={MIB}", "-Wl,--defsym=__stack_size=32768"))
    sections, symbols, _ = _elf_layout(elf)
    assert symbols["__plan_window_size"] == MIB
    assert sections[".io_buffer"][0] == 0x60000000 + MIB
    assert symbols["__stack_limit"] == 0x20080000 - 32768


def test_dtcm_overflow_is_a_link_error(tmp_path: Path) -> None:
    main_c = tmp_path / "main.c"
    main_c.write_text(c.render_main_c(_ctx(fast_arena_bytes=500 * 1024)))
    objs = []
    for src in (*c.SOURCES, main_c):
        objs.append(tmp_path / (src.stem + ".o"))
        _compile(src, objs[-1])
    res = _link(objs, tmp_path / "fw.elf", ("-Wl,--unresolved-symbols=ignore-all",), check=False)
    assert res.returncode != 0
    assert "DTCM overflow" in res.stderr


# --------------------------------------------------------------------------- QEMU


def run_qemu(elf: Path, plan: Path | None) -> tuple[int, str, str]:
    qemu = require_tool("qemu-system-arm")
    cmd = [qemu, "-M", "mps3-an547", "-cpu", "cortex-m55", "-nographic", "-monitor", "none",
           "-serial", "none", "-no-reboot",
           "-semihosting-config", "enable=on,target=native,chardev=sh0",
           "-chardev", "stdio,id=sh0", "-kernel", str(elf)]
    if plan is not None:
        cmd += ["-device", f"loader,file={plan},addr=0x60000000"]
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=QEMU_TIMEOUT)
    return res.returncode, res.stdout, res.stderr


@pytest.fixture(scope="module")
def bare_firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Default firmware without a runtime (only the paths that exit before using it)."""
    return build_firmware(tmp_path_factory.mktemp("bare"), _ctx())


def test_no_plan_exits_2(bare_firmware: Path) -> None:
    rc, out, err = run_qemu(bare_firmware, None)
    assert rc == c.EXIT_BAD_PLAN
    assert out.splitlines() == ["BENCH_START unit_model @ Cortex-M55 (QEMU mps3-an547)",
                                "ERROR no plan at 0x60000000"]
    assert err == ""
    assert not c.parse_log(out).ok


def test_plan_larger_than_window_exits_2(bare_firmware: Path, tmp_path: Path) -> None:
    header = struct.pack("<4sIII", b"TGRS", 9, 32 * MIB, 48) + bytes(32)
    plan = tmp_path / "huge.tgrs"
    plan.write_bytes(header)
    rc, out, _ = run_qemu(bare_firmware, plan)
    assert rc == c.EXIT_BAD_PLAN
    assert "ERROR plan too large: file_size=33554432 bytes, window=16777216 bytes" in out


def test_window_mismatch_exits_2(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path, _ctx(plan_window_bytes=MIB))  # linked with the default 16 MiB
    rc, out, _ = run_qemu(elf, None)
    assert rc == c.EXIT_BAD_PLAN
    assert "ERROR plan window mismatch" in out


@pytest.mark.parametrize("which, code, pattern", [
    (1, 3, r"HARDFAULT pc=0x[0-9a-f]{8} lr=0x[0-9a-f]{8} xpsr=0x[0-9a-f]{8} cfsr=0x00008200 "
           r"hfsr=0x40000000 bfar=0xf0000000 mmfar=0x[0-9a-f]{8}"),
    (2, 3, r"HARDFAULT .*cfsr=0x00010000"),
    (3, 3, r"HARDFAULT .*cfsr=0x00100000"),
    (4, 4, r"UNEXPECTED_EXCEPTION ipsr=21 irq=5"),
    (5, 0, r"SELFTEST 5$"),
    (6, 42, r"SELFTEST 6$"),
])
def test_selftest_exit_paths(tmp_path: Path, which: int, code: int, pattern: str) -> None:
    elf = build_firmware(tmp_path, _ctx(), selftest=which)
    rc, out, _ = run_qemu(elf, None)
    assert rc == code, out
    assert re.search(pattern, out, re.M), out
    assert "BENCH_END" not in out
    assert not c.parse_log(out).ok


# --------------------------------------------------------------------------- with the runtime


def _runtime_sources() -> list[Path]:
    sources = sorted(RUNTIME_SRC.glob("*.c"))
    if not any(re.search(r"\btgr_status\s+tgr_run\s*\(", p.read_text()) for p in sources):
        pytest.skip("runtime/src does not define tgr_run yet")
    return sources


@pytest.fixture(scope="module")
def runtime_objects(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    sources = _runtime_sources()
    out = tmp_path_factory.mktemp("runtime")
    objs = []
    for src in sources:
        obj = out / (src.stem + ".o")
        # The runtime's own warning policy is enforced by its own tests, not here.
        cmd = [_gcc(), *(f for f in c.CFLAGS if f != "-Werror"), f"-I{RUNTIME_INCLUDE}",
               f"-I{RUNTIME_SRC}", "-c", str(src), "-o", str(obj)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
        objs.append(obj)
    return objs


def _tigris() -> str:
    exe = Path(sys.executable).with_name("tigris")
    return str(exe) if exe.exists() else require_tool("tigris")


@pytest.fixture(scope="module")
def ds_cnn_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """DS-CNN at 20K: the int8-interface plan and the float-interface (boundary Q/DQ kept) plan."""
    pytest.importorskip("onnxruntime")
    from models.ds_cnn import build as ds_cnn
    from models.qdq import quantize_qdq, save_model

    out = tmp_path_factory.mktemp("ds_cnn")
    onnx_paths = {
        "int8": ds_cnn.build(out / "ds_cnn.onnx"),
        "float": save_model(quantize_qdq(ds_cnn.make_fp32(), ds_cnn.calibration_batches()),
                            out / "ds_cnn_f32io.onnx"),
    }
    plans = {}
    for key, onnx_path in onnx_paths.items():
        plan = onnx_path.with_suffix(".tgrs")
        subprocess.run([_tigris(), "compile", str(onnx_path), "-m", "20K", "-o", str(plan)],
                       check=True, capture_output=True)
        plans[key] = plan
    return plans


def _host_reference(plan: Path, inputs: list[bytes], work: Path) -> tuple[bytes, dict]:
    assert len(inputs) == 1
    x, y = work / "x.bin", work / "y.bin"
    x.write_bytes(inputs[0])
    res = subprocess.run([_tigris(), "run", str(plan), "--input", str(x), "--output", str(y),
                          "--json"], check=True, capture_output=True, text=True)
    return y.read_bytes(), json.loads(res.stdout)


@pytest.mark.parametrize("kind, slow_in_ddr", [("int8", False), ("float", True)])
def test_ds_cnn_matches_host_runtime(tmp_path: Path, runtime_objects: list[Path],
                                     ds_cnn_plans: dict[str, Path], kind: str,
                                     slow_in_ddr: bool) -> None:
    plan = ds_cnn_plans[kind]
    data = plan.read_bytes()
    ctx = c.make_context("ds_cnn", data, 20480, 4096, slow_in_ddr)
    elf = build_firmware(tmp_path / "fw", ctx, runtime=runtime_objects)
    rc, out, err = run_qemu(elf, plan)
    assert rc == 0, out + err
    log = c.parse_log(out)
    assert log.ok, out

    iface = c.read_plan_interface(data)
    assert (log.ops, log.stages, log.tensors, log.budget) == (
        iface.num_ops, iface.num_stages, iface.num_tensors, iface.budget)
    expected, meta = _host_reference(plan, c.generate_inputs(iface.inputs), tmp_path)
    assert log.output_bytes[0][2] == expected
    assert log.output_bytes[0][1] == iface.outputs[0].name
    summary = c.summarize_outputs([(iface.outputs[0].dtype, expected)])
    assert {k: summary[k] for k in ("n", "checksum", "min", "max", "nonmin")} == log.output
    arena = log.arena
    assert arena["fast_cap"] == 20480 and arena["slow_cap"] == 4096
    assert arena["fast_peak"] == meta["memory"]["fast_peak_bytes"]
    assert arena["slow_used"] == meta["memory"]["slow_peak_bytes"]
    assert arena["total_sram"] == arena["fast_peak"] + (0 if slow_in_ddr else arena["slow_used"])
    assert 0 < arena["stack_peak"] < c.DEFAULT_STACK_BYTES


def test_small_arenas_fail_cleanly(tmp_path: Path, runtime_objects: list[Path],
                                   ds_cnn_plans: dict[str, Path]) -> None:
    plan = ds_cnn_plans["int8"]
    data = plan.read_bytes()
    budget = c.read_plan_interface(data).budget

    elf = build_firmware(tmp_path / "fast", c.make_context("ds_cnn", data, budget - 32, 4096, False),
                         runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == c.EXIT_BAD_PLAN
    assert f"ERROR arena too small: fast needs {budget} bytes, given {budget - 32}" in out

    ctx = c.make_context("ds_cnn", data, budget, 4096, False)
    ctx["io_buffer_bytes"] -= 1
    elf = build_firmware(tmp_path / "io", ctx, runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == c.EXIT_BAD_PLAN
    assert "ERROR io buffer too small" in out

    # DS-CNN needs 544 bytes of slow memory (host runtime): no slow arena is a runtime error.
    elf = build_firmware(tmp_path / "slow", c.make_context("ds_cnn", data, budget, 0, True),
                         runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == c.EXIT_RUNTIME_ERROR, out
    assert re.search(r"^ERROR TGR_ERR_\w+: .+", out, re.M), out
    assert "BENCH_END" not in out
