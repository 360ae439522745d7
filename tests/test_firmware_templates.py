"""Tests of firmware_templates/: the template contract, the linker layout and the firmware on QEMU.

The host side of the contract is ``site_scons/tigris_scons`` (rendering and its context checks,
the build recipe, plan reader, input generator, output summary, run-log parser, QEMU command
line, host reference); these tests hold the C firmware to it:

* rendering: the ``#define``s, the template's strictness, refused contexts;
* arm-none-eabi-gcc: every source compiles with -Werror, and the linked layout matches the
  AN547 map (no NOLOAD segment with a load address elsewhere, symbols, overflow assertions),
  the workspace is what ``tgr.h`` says for the target;
* qemu-system-arm: exit codes and report lines of the paths that never reach the runtime
  (no plan, window mismatch, plan too large, fault self-tests, the SysTick work counter); linked
  with the runtime, the DS-CNN plan end to end, compared byte for byte with the bundled tigris
  host runtime.

The runtime-free firmware is linked with ``--unresolved-symbols=ignore-all``: those paths exit
before the first runtime call, so the unresolved calls are never executed.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, require_tool, skip_or_fail
from tigris_scons import builtin, runtime_tree
from tigris_scons import firmware as fw
from tigris_scons.checks import firmware_name, summarize_outputs
from tigris_scons.errors import TigrisError
from tigris_scons.inputs import DEFAULT_SEED, fnv1a32, xorshift32
from tigris_scons.plan import read_plan
from tigris_scons.qemu import exit_meaning, qemu_command
from tigris_scons.reference import bundled_runtime_available, compute_reference
from tigris_scons.runlog import parse_run_log

TEMPLATES = REPO / "firmware_templates"
RUNTIME_INCLUDE = REPO / "runtime" / "include"
RUNTIME_SRC = REPO / "runtime" / "src"
QEMU_TIMEOUT = 60
MIB = 1024 * 1024
# Firmware and runtime are built with tgr.h's default TGR_TENSOR_ALIGN (32), the alignment of the
# bundled host runtime, so arena peaks compare exactly with the host reference (`scons` builds
# use 16 unless tensor_align=32).
TENSOR_ALIGN = 32


def _ctx(**over: object) -> dict:
    base = {
        "model_name": "unit_model",
        "fast_arena_bytes": 20480,
        "slow_arena_bytes": 4096,
        "slow_in_ddr": False,
        "workspace_tensors": 14,
        "plan_window_bytes": 16 * MIB,
        "io_buffer_bytes": 502,
        "num_inputs": 1,
        "num_outputs": 1,
        "float_inputs": False,
        "float_outputs": False,
    }
    base.update(over)
    return base


def render(context: dict) -> str:
    return fw.render_main(TEMPLATES, fw.check_context(context))


# --------------------------------------------------------------------------- rendering


def test_render_defines() -> None:
    src = render(_ctx(slow_in_ddr=True, input_seed=0x12345678))
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
    src = render(_ctx())
    assert f"#define FW_INPUT_SEED 0x{DEFAULT_SEED:08X}u" in src
    assert "#define FW_SLOW_IN_DDR 0" in src


def test_template_is_strict_about_missing_names() -> None:
    ctx = _ctx()
    del ctx["io_buffer_bytes"]
    with pytest.raises(TigrisError, match="io_buffer_bytes"):
        fw.render_main(TEMPLATES, ctx)


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
])
def test_check_context_rejects(over: dict) -> None:
    with pytest.raises(TigrisError):
        fw.check_context(_ctx(**over))


def test_check_context_requires_all_names() -> None:
    ctx = _ctx()
    del ctx["workspace_tensors"]
    with pytest.raises(TigrisError, match="workspace_tensors"):
        fw.check_context(ctx)


def test_input_stream_reference_values() -> None:
    """The first values docs/firmware.md#input-generator documents for the default seed."""
    stream = xorshift32(DEFAULT_SEED)
    assert [next(stream) for _ in range(3)] == [0x510C4619, 0xE02E553E, 0x7BB98F3A]


def test_summarize_integer_and_float_domains() -> None:
    int8, uint8, float32 = 3, 2, 1
    s = summarize_outputs([(int8, bytes([0x80, 0x7F, 0x80])), (uint8, b"\x05")])
    assert s == {"n": 4, "checksum": fnv1a32(b"\x80\x7f\x80\x05"), "min": -128, "max": 127, "nonmin": 2,
                 "float_domain": False}
    raw = struct.pack("<3f", 1.5, float("nan"), -2.0)
    s = summarize_outputs([(float32, raw), (int8, b"\x01")])
    assert s["n"] == 4 and s["float_domain"]
    assert s["min"] == struct.unpack("<I", struct.pack("<f", -2.0))[0]
    assert s["max"] == struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert s["nonmin"] == 3  # 1.5, NaN, 1.0
    s = summarize_outputs([(float32, struct.pack("<f", float("nan")))])
    assert (s["min"], s["max"], s["nonmin"]) == (0x7FC00000, 0x7FC00000, 1)
    s = summarize_outputs([(float32, struct.pack("<2f", 0.0, -0.0))])  # the first of equal values wins
    assert (s["min"], s["max"], s["nonmin"]) == (0, 0, 0)


# --------------------------------------------------------------------------- cross builds


def _gcc() -> str:
    return require_tool("arm-none-eabi-gcc")


C_FLAGS = (*fw.CPU_FLAGS, *fw.SECTION_FLAGS, *fw.C_FLAGS)


def _compile(src: Path, obj: Path, extra: tuple[str, ...] = ()) -> None:
    cmd = [_gcc(), *C_FLAGS, f"-I{TEMPLATES}", f"-I{RUNTIME_INCLUDE}", *extra, "-c", str(src), "-o", str(obj)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"


def _link(objs: list[Path], elf: Path, extra: tuple[str, ...] = (), check: bool = True
          ) -> subprocess.CompletedProcess:
    cmd = [_gcc(), *fw.CPU_FLAGS, *fw.GC_LINK_FLAGS, *fw.LINK_FLAGS, "-L", str(TEMPLATES), "-T", str(TEMPLATES / fw.LINKER_SCRIPT),
           f"-Wl,-Map={elf.with_suffix('.map')}", *map(str, objs), *extra, *(f"-l{lib}" for lib in fw.LIBS),
           "-o", str(elf)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check:
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return res


def build_firmware(work: Path, context: dict, *, runtime: list[Path] | None = None,
                   selftest: int | None = None, link_extra: tuple[str, ...] = ()) -> Path:
    """Render, compile and link one firmware in `work`; runtime=None leaves tgr_* unresolved."""
    work.mkdir(parents=True, exist_ok=True)
    main_c = work / "main.c"
    main_c.write_text(render(context))
    defs = () if selftest is None else (f"-DFW_SELFTEST={selftest}",)
    sources = [*(TEMPLATES / s for s in fw.SOURCES), main_c]
    if selftest is not None:
        sources.append(TEMPLATES / fw.SELFTEST_SOURCE)
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


#: Besides the build's own flags, the sources hold to strict ISO C at both optimisation levels
#: (docs/firmware.md#build), so a team can drop them into a stricter build.
STRICT_VARIANTS = ((), ("-Os", "-std=c11", "-pedantic"), ("-O2", "-std=c99", "-pedantic"))


@pytest.mark.cross
@pytest.mark.parametrize("strict", STRICT_VARIANTS, ids=["build", "Os-c11-pedantic", "O2-c99-pedantic"])
def test_all_sources_compile_with_werror(tmp_path: Path, strict: tuple[str, ...]) -> None:
    for i, ctx in enumerate((_ctx(), _ctx(slow_in_ddr=True, fast_arena_bytes=0,
                                          slow_arena_bytes=0, io_buffer_bytes=0))):
        main_c = tmp_path / f"main{i}.c"
        main_c.write_text(render(ctx))
        _compile(main_c, tmp_path / f"main{i}.o", strict)
        _compile(main_c, tmp_path / f"main{i}_st.o", (*strict, "-DFW_SELFTEST=1"))
    for name in (*fw.SOURCES, fw.SELFTEST_SOURCE):
        _compile(TEMPLATES / name, tmp_path / (Path(name).stem + ".o"), (*strict, "-DFW_SELFTEST=1"))


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


def _symbol(elf: Path, name: str) -> tuple[int, bytes | None]:
    """Size of symbol `name` and, if it lives in a section with contents, its bytes."""
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        ef = ELFFile(f)
        sym = next(s for s in ef.get_section_by_name(".symtab").iter_symbols() if s.name == name)
        section = ef.get_section(sym["st_shndx"])
        if section["sh_type"] == "SHT_NOBITS":
            return sym["st_size"], None
        base = sym["st_value"] - (section["sh_addr"] if ef["e_type"] == "ET_EXEC" else 0)
        return sym["st_size"], section.data()[base:base + sym["st_size"]]


@pytest.mark.cross
def test_linked_layout(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path / "onchip", _ctx())
    sections, symbols, segments = _elf_layout(elf)
    # the 16 system vectors; a self-test build adds the 96 external interrupts it can report
    assert sections[".vectors"][0] == 0 and sections[".vectors"][1] == 16 * 4
    assert _elf_layout(build_firmware(tmp_path / "selftest", _ctx(), selftest=5))[0][".vectors"][1] == 112 * 4
    assert symbols["__plan_base"] == 0x60000000
    assert symbols["__plan_window_size"] == 16 * MIB
    assert symbols["__stack_top"] == 0x20080000
    assert symbols["__stack_limit"] == 0x20080000 - fw.DEFAULT_STACK_BYTES
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


@pytest.mark.cross
def test_workspace_bytes_matches_header_macro(tmp_path: Path) -> None:
    """The firmware's workspace is TGR_WORKSPACE_BYTES(workspace_tensors) as tgr.h computes it for
    the target (4-byte pointers), whatever the formula in tgr.h is today."""
    probe = tmp_path / "probe.c"
    probe.write_text('#include <stdint.h>\n#include "tgr.h"\n'
                     "const uint32_t probe_14 = TGR_WORKSPACE_BYTES(14);\n"
                     "const uint32_t probe_300 = TGR_WORKSPACE_BYTES(300);\n")
    _compile(probe, tmp_path / "probe.o")
    expected = {n: struct.unpack("<I", _symbol(tmp_path / "probe.o", f"probe_{n}")[1])[0] for n in (14, 300)}
    assert 0 < expected[14] < expected[300]
    for n in (14, 300):
        elf = build_firmware(tmp_path / f"fw{n}", _ctx(workspace_tensors=n))
        size, _ = _symbol(elf, "fw_workspace")
        assert size == (expected[n] + 3) // 4 * 4, (n, size, expected[n])


@pytest.mark.cross
def test_plan_window_and_stack_overrides(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path, _ctx(plan_window_bytes=MIB), link_extra=(
        f"-Wl,--defsym=__plan_window_size={MIB}", "-Wl,--defsym=__stack_size=32768"))
    sections, symbols, _ = _elf_layout(elf)
    assert symbols["__plan_window_size"] == MIB
    assert sections[".io_buffer"][0] == 0x60000000 + MIB
    assert symbols["__stack_limit"] == 0x20080000 - 32768


@pytest.mark.cross
def test_dtcm_overflow_is_a_link_error(tmp_path: Path) -> None:
    main_c = tmp_path / "main.c"
    main_c.write_text(render(_ctx(fast_arena_bytes=500 * 1024)))
    objs = []
    for src in (*(TEMPLATES / s for s in fw.SOURCES), main_c):
        objs.append(tmp_path / (src.stem + ".o"))
        _compile(src, objs[-1])
    res = _link(objs, tmp_path / "fw.elf", ("-Wl,--unresolved-symbols=ignore-all",), check=False)
    assert res.returncode != 0
    assert "DATA region overflow (DTCM on mps3-an547" in res.stderr


# --------------------------------------------------------------------------- QEMU


def run_qemu(elf: Path, plan: Path | None, extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    cmd = qemu_command(require_tool("qemu-system-arm"), elf, plan, extra=list(extra))
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=QEMU_TIMEOUT)
    return res.returncode, res.stdout, res.stderr


@pytest.fixture(scope="module")
def bare_firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Default firmware without a runtime (only the paths that exit before using it)."""
    return build_firmware(tmp_path_factory.mktemp("bare"), _ctx())


@pytest.mark.qemu
def test_no_plan_exits_2(bare_firmware: Path) -> None:
    rc, out, err = run_qemu(bare_firmware, None)
    assert rc == 2 and exit_meaning(rc).startswith("bad plan")
    assert out.splitlines() == ["BENCH_START unit_model @ Cortex-M55 (QEMU mps3-an547)",
                                "ERROR no plan at 0x60000000"]
    assert err == ""
    assert not parse_run_log(out).complete


@pytest.mark.qemu
def test_plan_larger_than_window_exits_2(bare_firmware: Path, tmp_path: Path) -> None:
    header = struct.pack("<4sIII", b"TGRS", 9, 32 * MIB, 48) + bytes(32)
    plan = tmp_path / "huge.tgrs"
    plan.write_bytes(header)
    rc, out, _ = run_qemu(bare_firmware, plan)
    assert rc == 2
    assert "ERROR plan too large: file_size=33554432 bytes, window=16777216 bytes" in out


@pytest.mark.qemu
def test_window_mismatch_exits_2(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path, _ctx(plan_window_bytes=MIB))  # linked with the default 16 MiB
    rc, out, _ = run_qemu(elf, None)
    assert rc == 2
    assert "ERROR plan window mismatch" in out


@pytest.mark.qemu
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
    assert not parse_run_log(out).complete


@pytest.mark.qemu
def test_systick_work_counter_across_wraps(tmp_path: Path) -> None:
    """The 24-bit SysTick counter extended by counted wraps never goes backwards or jumps.

    ``-icount shift=5`` makes a tick about one instruction, so three wraps (3 x 2^24 ticks) take
    about 50 M instructions; the readings are also identical from run to run."""
    elf = build_firmware(tmp_path, _ctx(), selftest=8)
    results = []
    for _ in range(2):
        rc, out, _ = run_qemu(elf, None, ("-icount", "shift=5"))
        assert rc == 0, out
        m = re.search(r"^SYSTICK wraps=(\d+) readings=(\d+) max_step=(\d+) backwards=(\d+) after_stop=(\d+)$",
                      out, re.M)
        assert m, out
        wraps, readings, max_step, backwards, after_stop = map(int, m.groups())
        assert wraps == 3 and backwards == 0 and after_stop == 0, out
        assert readings > 1000 and 0 < max_step < 4096, out  # a missed or doubled wrap is 2^24
        results.append(m.group(0))
    assert results[0] == results[1]


@pytest.mark.qemu
def test_sha256_of_the_plan_on_the_target_and_its_boot_cost(tmp_path: Path) -> None:
    """validate=digest's check on the target: the firmware's SHA-256 of a plan equals hashlib's
    (a plan long enough for the two-block padding tail too), and its cost in work is printed."""
    import hashlib

    elf = build_firmware(tmp_path, _ctx(), selftest=9)
    plan = tmp_path / "plan.tgrs"
    body = bytes(range(256)) * 40 + b"tail"
    data = struct.pack("<4sIII", b"TGRS", 9, 16 + len(body), 48) + body
    plan.write_bytes(data)
    rc, out, _ = run_qemu(elf, plan, ("-icount", "shift=0"))
    assert rc == 0, out
    m = re.search(r"^SHA256 bytes=(\d+) ticks=(\d+) first_word=(\d+)$", out, re.M)
    assert m, out
    assert int(m.group(1)) == len(data) and int(m.group(2)) > 0, out
    assert int(m.group(3)) == int.from_bytes(hashlib.sha256(data).digest()[:4], "big"), out


# --------------------------------------------------------------------------- with the runtime


@pytest.fixture(scope="module")
def runtime_objects(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("runtime")
    # The full runtime: its generated *_built_in.c units list every op and path.
    sources = runtime_tree.sources(REPO / "runtime") + builtin.write(out / "gen", builtin.scan(REPO / "runtime"))
    assert sources, f"no runtime sources under {RUNTIME_SRC}"
    objs = []
    for src in sources:
        obj = out / (src.stem + ".o")
        # The runtime's own warning policy is enforced by its own tests, not here.
        cmd = [_gcc(), *(f for f in C_FLAGS if f != "-Werror"), f"-I{RUNTIME_INCLUDE}",
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


def _reference(plan: Path) -> dict:
    if not bundled_runtime_available():
        skip_or_fail("tigris-ml has no bundled host runtime on this platform")
    return compute_reference(plan, DEFAULT_SEED)


def _context(plan: Path, fast: int | None, slow: int, slow_in_ddr: bool) -> dict:
    params = fw.FirmwareParams("ds_cnn", fast, slow, slow_in_ddr, DEFAULT_SEED, TENSOR_ALIGN)
    return fw.template_context(params, read_plan(plan))


@pytest.mark.qemu
@pytest.mark.parametrize("kind, slow_in_ddr", [("int8", False), ("float", True)])
def test_ds_cnn_matches_host_runtime(tmp_path: Path, runtime_objects: list[Path],
                                     ds_cnn_plans: dict[str, Path], kind: str,
                                     slow_in_ddr: bool) -> None:
    plan = ds_cnn_plans[kind]
    elf = build_firmware(tmp_path / "fw", _context(plan, 20480, 4096, slow_in_ddr), runtime=runtime_objects)
    rc, out, err = run_qemu(elf, plan)
    assert rc == 0, out + err
    log = parse_run_log(out)
    assert log.complete, log.problems

    info = read_plan(plan)
    assert (log.ops, log.stages, log.tensors, log.plan_budget) == (
        info.num_ops, info.num_stages, info.num_tensors, info.budget)
    reference = _reference(plan)
    (expected_out,) = reference["outputs"]
    expected = bytes.fromhex(expected_out["hex"])
    assert log.output_bytes[0] == (firmware_name(info.outputs[0].name), expected)
    summary = summarize_outputs([(info.outputs[0].dtype, expected)])
    assert {k: int(v, 0) for k, v in log.output.items()} == {
        k: summary[k] for k in ("n", "checksum", "min", "max", "nonmin")}
    # the seed's grammar: decimal numbers (float-domain min/max are their IEEE-754 bits in decimal)
    assert all(re.fullmatch(r"-?\d+", v) for v in log.output.values()), log.output
    arena = log.arena
    assert arena["fast_cap"] == 20480 and arena["slow_cap"] == 4096
    assert arena["fast_peak"] == reference["host_memory"]["fast_peak_bytes"]
    assert arena["slow_used"] == reference["host_memory"]["slow_peak_bytes"]
    assert arena["total_sram"] == arena["fast_peak"] + (0 if slow_in_ddr else arena["slow_used"])
    assert 0 < arena["stack_peak"] < fw.DEFAULT_STACK_BYTES
    assert log.work["clock"] == "32MHz-virtual" and log.work_ticks() > 0


@pytest.mark.qemu
def test_small_arenas_fail_cleanly(tmp_path: Path, runtime_objects: list[Path],
                                   ds_cnn_plans: dict[str, Path]) -> None:
    plan = ds_cnn_plans["int8"]
    budget = read_plan(plan).budget

    elf = build_firmware(tmp_path / "fast", _context(plan, budget - 32, 4096, False), runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == 2
    assert f"ERROR arena too small: fast needs {budget} bytes, given {budget - 32}" in out

    ctx = _context(plan, budget, 4096, False)
    ctx["io_buffer_bytes"] -= 1
    elf = build_firmware(tmp_path / "io", ctx, runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == 2
    assert "ERROR io buffer too small" in out

    # a firmware rendered for the int8 interface refuses the float-interface plan instead of
    # running it without its float code
    elf = build_firmware(tmp_path / "float", _context(plan, budget, 4096, False), runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, ds_cnn_plans["float"])
    assert rc == 2 and "ERROR unsupported interface dtype 1 for input 0" in out, out

    # DS-CNN needs slow memory (host runtime): no slow arena is a runtime error.
    elf = build_firmware(tmp_path / "slow", _context(plan, budget, 0, True), runtime=runtime_objects)
    rc, out, _ = run_qemu(elf, plan)
    assert rc == 7 and exit_meaning(rc).startswith("runtime error"), out
    assert re.search(r"^ERROR TGR_ERR_\w+: .+", out, re.M), out
    assert "BENCH_END" not in out
