#!/usr/bin/env python3
"""Firmware image size per model, budget and build variant, split by what the bytes are for.

For every declared model (``models/*/model.toml``) and for three real models of the tigris-ml
0.12.1 sdist (``kws_ref_model``, ``pretrainedResnet_quant``, ``vww_96_int8``, each compiled at a
one-stage budget = its unscheduled peak and at a tiled budget = half of it, or 3/4 when tigris
refuses half), the project's SCons builds and runs the firmware (the ``run`` target: ELF, static
size check, QEMU and the output check, with ``budget_mode=warn``) and this script reports

* the firmware image: PT_LOAD file bytes (flash without the plan) from ``<m>.size.json``;
* that image split by input object from the linker map ``<m>.map``: runtime core (layers base,
  plan, memory, load and the exec units not named ``path_*``: executor, path_select, path_common,
  state_copies; plus objects the build generates under the model's folder), execution paths
  (exec/path_normal, path_tiles, path_rows, path_by_input, path_control), op families (layer
  ops), kernels (layer kernels), firmware (main, startup, semihosting, systick, selftest),
  libc+libm+libgcc, and other (linker stubs, fill, alignment: the image minus everything
  attributed);
* static on-chip SRAM (used + reserved in the on-chip RAM regions, as the size map reports it);

for the variants ``default``, ``messages=0`` (status codes kept, message strings dropped),
``digest`` (``validate=digest``: the plan's digest checked and the plan bound without the
loader's checks) and ``digest+m0`` (both), each only when the measured checkout's ``scons -h``
offers its options.

Why a script and not a test: sizes are figures to watch and compare between commits, not
pass/fail properties, and a full sweep builds a dozen firmwares (minutes). The pure parsing and
categorising functions at the top are tested in tests/build/test_bench_firmware_size.py.

Usage:
    .venv/bin/python bench/firmware_size.py [--repo PATH] [--models a,b] [--json FILE]
                                            [--build-dir DIR] [-j N] [-v]

    --repo PATH      checkout to measure (default: this one); its .venv/bin/scons if present,
                     else this checkout's; scons always runs with -C PATH (PATH's SConstruct)
    --models a,b     only these models (declared names or sdist stems)
    --build-dir DIR  default PATH/build/bench-size; one sub-folder per variant
    --json FILE      write every figure (and the per-object breakdown) as JSON
    -j N             passed to scons
    -v               per-object bytes of each category, objects classified as core/other by rule
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------
# Pure parsing and categorising (no I/O): tested on synthetic map text.
# --------------------------------------------------------------------------------------------

CATEGORIES: tuple[str, ...] = ("core", "paths", "ops", "kernels", "firmware", "libs", "other")
#: Runtime layers whose units all count as core.
CORE_LAYERS = frozenset({"base", "plan", "memory", "load"})
#: exec units that are the executor's own machinery (core); other ``exec/path_*`` are paths.
EXEC_CORE_UNITS = frozenset({"executor", "path_select", "path_common"})
FIRMWARE_OBJECTS = frozenset({"main.o", "startup.o", "semihosting.o", "systick.o", "selftest.o"})
#: Stems of the runtime units the build generates per model (``ops_built_in``...): core.
GENERATED_SUFFIX = "_built_in"
#: Toolchain archives: libc, libc_nano, libm, libgcc, libnosys, librdimon, libg, libstdc++...
LIB_ARCHIVE = re.compile(r"^lib(c|c_nano|m|g|g_nano|gcc|nosys|rdimon|rdimon_nano|stdc\+\+|supc\+\+)"
                         r"(_[a-z0-9]+)?\.a$")
#: Objects that come with the toolchain (crt0.o, crti.o, crtbegin.o, ...).
TOOLCHAIN_OBJECT = re.compile(r"^crt[a-z0-9_]*\.o$")

_HEX = r"0x[0-9a-fA-F]+"
_OUT_FULL = re.compile(rf"^(\S+)\s+({_HEX})\s+({_HEX})(?:\s+load address\s+({_HEX}))?\s*$")
_OUT_NAME = re.compile(r"^([.A-Za-z_][^\s()]*)\s*$")
_OUT_CONT = re.compile(rf"^\s+({_HEX})\s+({_HEX})(?:\s+load address\s+({_HEX}))?\s*$")
_IN_FULL = re.compile(rf"^ (\S+)\s+({_HEX})\s+({_HEX})\s+(\S.*?)\s*$")
_IN_NAME = re.compile(r"^ ([^\s*][^\s]*)\s*$")
_IN_CONT = re.compile(rf"^\s+({_HEX})\s+({_HEX})\s+(\S.*?)\s*$")
_FILL = re.compile(rf"^ \*fill\*\s+({_HEX})\s+({_HEX})")
_ARCHIVE_MEMBER = re.compile(r"^(.*\.a)\(([^()]+)\)$")
MAP_START = "Linker script and memory map"


@dataclass(frozen=True)
class InputSection:
    """One input section placed in an output section (``obj`` is the map's object field).

    ``size`` is the bytes it occupies in the output; ``listed`` is the size the map prints,
    larger for a merged-string section whose strings were folded into another's (below).
    """

    output: str
    name: str
    address: int
    size: int
    obj: str
    listed: int = -1


@dataclass
class LinkerMap:
    input_sections: list[InputSection] = field(default_factory=list)
    #: ``*fill*`` bytes per output section (padding the linker inserted between input sections).
    fill: dict[str, int] = field(default_factory=dict)
    #: output section -> (address, size)
    outputs: dict[str, tuple[int, int]] = field(default_factory=dict)


def _placed(items: list[tuple[int, int, InputSection | None]], end: int | None) -> Iterator[InputSection]:
    """Clamp each input section to the address of the next placed item (input or fill).

    GNU ld prints a merged-string section (``.rodata.x.str1.4``) with its size before merging
    even when all its strings went into an earlier section: the next item then starts at the
    same address, and the section really occupies nothing. Without the clamp such sections
    are counted twice.
    """
    for i, (address, size, sec) in enumerate(items):
        if sec is None:
            continue
        limit = next((a for a, s, _ in items[i + 1:] if s > 0 or a > address), end)
        placed = size if limit is None or limit < address else min(size, limit - address)
        yield InputSection(sec.output, sec.name, sec.address, placed, sec.obj, size)


def parse_map(text: str) -> LinkerMap:
    """Parse the placement part of a GNU ld ``-Map`` file.

    Only what follows ``Linker script and memory map`` is read (the discarded-sections list
    before it is not placement). Output section headers start in column 0; input sections are
    indented by one space. Either may wrap when its name is long: the name alone on one line,
    address/size (and the object) on the next. Symbol and assignment lines (one number),
    ``(size before relaxing)`` notes and input patterns (``*(.text .text.*)``) are skipped.
    """
    result = LinkerMap()
    items: dict[str, list[tuple[int, int, InputSection | None]]] = {}
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith(MAP_START)), 0)
    output: str | None = None
    pending_out: str | None = None
    pending_in: str | None = None

    def add_input(name: str, address: str, size: str, obj: str) -> None:
        assert output is not None
        sec = InputSection(output, name, int(address, 16), int(size, 16), obj)
        items.setdefault(output, []).append((sec.address, sec.size, sec))

    for line in lines[start:]:
        if pending_out is not None:
            name, pending_out = pending_out, None
            match = _OUT_CONT.match(line)
            if match:
                output = name
                result.outputs[name] = (int(match.group(1), 16), int(match.group(2), 16))
                continue
        if pending_in is not None:
            name, pending_in = pending_in, None
            match = _IN_CONT.match(line)
            if match and output is not None:
                add_input(name, *match.groups())
                continue
        if not line.strip():
            continue
        if not line[0].isspace():
            match = _OUT_FULL.match(line)
            if match:
                output = match.group(1)
                result.outputs[output] = (int(match.group(2), 16), int(match.group(3), 16))
            elif _OUT_NAME.match(line) and not line.startswith(("LOAD", "OUTPUT(")):
                pending_out, output = line.strip(), None
            else:
                output = None  # LOAD, OUTPUT(...), START GROUP...: not inside a section
            continue
        if output is None:
            continue
        match = _FILL.match(line)
        if match:
            address, size = int(match.group(1), 16), int(match.group(2), 16)
            result.fill[output] = result.fill.get(output, 0) + size
            items.setdefault(output, []).append((address, size, None))
            continue
        match = _IN_FULL.match(line)
        if match and not match.group(1).startswith("*"):
            add_input(*match.groups())
            continue
        match = _IN_NAME.match(line)
        if match:
            pending_in = match.group(1)
    for name, entries in items.items():
        address, size = result.outputs.get(name, (0, 0))
        end = address + size if name in result.outputs else None
        result.input_sections.extend(_placed(entries, end))
    return result


def split_object(obj: str) -> tuple[str | None, str]:
    """``('/x/libtgr.a', 'ops_conv.o')`` for ``/x/libtgr.a(ops_conv.o)``; ``(None, path)`` else."""
    match = _ARCHIVE_MEMBER.match(obj)
    if match:
        return match.group(1), match.group(2)
    return None, obj


def unit_category(layer: str, stem: str) -> str:
    """Category of a runtime unit ``<layer>/<stem>``."""
    if layer == "ops":
        return "ops"
    if layer == "kernels":
        return "kernels"
    if layer == "exec":
        return "core" if stem in EXEC_CORE_UNITS or not stem.startswith("path_") else "paths"
    return "core"  # base, plan, memory, load (and any new layer: still runtime machinery)


def _is_under(path: str, folders: Sequence[str]) -> bool:
    norm = PurePosixPath(os.path.normpath(path))
    return any(norm == PurePosixPath(f) or PurePosixPath(f) in norm.parents for f in folders)


def classify(obj: str, unit_layers: Mapping[str, str], generated_dirs: Sequence[str] = ()) -> tuple[str, str]:
    """(category, label) of one map object.

    ``unit_layers`` maps a runtime unit's stem to its layer folder (``ops_conv`` -> ``ops``);
    ``generated_dirs`` are the model's build folders (absolute, normalised): an unknown object
    under one of them, other than the firmware files, is a generated runtime object (core).
    The label names the object the way the verbose listing shows it.
    """
    archive, member = split_object(obj)
    base = PurePosixPath(member).name
    stem = PurePosixPath(member).stem
    if archive is not None:
        archive_name = PurePosixPath(archive).name
        if LIB_ARCHIVE.match(archive_name):
            return "libs", f"{archive_name}({base})"
        if stem in unit_layers:
            return unit_category(unit_layers[stem], stem), f"{unit_layers[stem]}/{stem}"
        if _is_under(archive, generated_dirs) or stem.endswith(GENERATED_SUFFIX):
            return "core", f"generated {archive_name}({base})"
        return "other", f"{archive_name}({base})"
    if not obj or " " in obj:  # "linker stubs" and other linker-made sections
        return "other", obj or "(none)"
    if TOOLCHAIN_OBJECT.match(base) or "/arm-none-eabi/" in obj or "/lib/gcc/" in obj:
        return "libs", base
    if base in FIRMWARE_OBJECTS:
        return "firmware", base
    if stem in unit_layers:
        return unit_category(unit_layers[stem], stem), f"{unit_layers[stem]}/{stem}"
    if _is_under(obj, generated_dirs) or stem.endswith(GENERATED_SUFFIX):
        return "core", f"generated {base}"
    return "other", base


@dataclass
class Breakdown:
    """Image bytes per category; ``objects`` holds the per-label bytes behind each figure."""

    image: int
    totals: dict[str, int]
    objects: dict[str, dict[str, int]]
    padding: int  # image bytes not in any input section (fill, alignment, headers)

    def attributed(self) -> int:
        return sum(self.objects_total(c) for c in CATEGORIES)

    def objects_total(self, category: str) -> int:
        return sum(self.objects.get(category, {}).values())


def categorise(sections: Iterable[InputSection], loadable: Collection[str], image: int,
               unit_layers: Mapping[str, str], generated_dirs: Sequence[str] = ()) -> Breakdown:
    """Sum input sections placed in ``loadable`` output sections by category.

    ``other`` gets the objects no rule claims plus ``image`` minus everything attributed (fill,
    alignment between output sections). Raises ValueError when the input sections add up to
    more than the image (the loadable set or the map does not belong to this image).
    """
    objects: dict[str, dict[str, int]] = {c: {} for c in CATEGORIES}
    for sec in sections:
        if sec.output not in loadable or sec.size == 0:
            continue
        category, label = classify(sec.obj, unit_layers, generated_dirs)
        objects[category][label] = objects[category].get(label, 0) + sec.size
    attributed = sum(sum(v.values()) for v in objects.values())
    padding = image - attributed
    if padding < 0:
        raise ValueError(f"input sections add up to {attributed} B, more than the image ({image} B)")
    totals = {c: sum(objects[c].values()) for c in CATEGORIES}
    totals["other"] += padding
    return Breakdown(image, totals, objects, padding)


def loadable_sections(size_json: Mapping[str, Any]) -> set[str]:
    """Output sections whose bytes are in the load image (PROGBITS with a load region)."""
    return {s["name"] for s in size_json["sections"]
            if s["type"] == "PROGBITS" and s.get("load_region") is not None and s["size"] > 0}


def parse_size_arg(text: str) -> int:
    """``20K`` -> 20480 (powers of 1024, like the build's ``budget=``)."""
    match = re.fullmatch(r"\s*(\d+)\s*([KkMm]?)(?:i?B)?\s*", text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    return int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]


# --------------------------------------------------------------------------------------------
# Builds (I/O): sdist models, tigris analyze/inspect, scons.
# --------------------------------------------------------------------------------------------

SDIST = "tigris_ml-0.12.1"
SDIST_TFLITE = "tests/fixtures/tflite"
SDIST_MODELS: tuple[str, ...] = ("kws_ref_model", "pretrainedResnet_quant", "vww_96_int8")
VARIANTS: dict[str, list[str]] = {"default": [], "messages=0": ["messages=0"], "digest": ["validate=digest"],
                                  "digest+m0": ["validate=digest", "messages=0"]}
ANALYZE_BUDGET = "2M"


DEFAULT_SLOW_KIB = 4  # the declaration default for a model=file.tflite (declaration.ModelDecl)


@dataclass(frozen=True)
class Budget:
    compile: int | None  # budget= (tigris compile -m); None: the declaration's
    slow_kib: int | None = None  # slow_kb=; None: the declaration's


@dataclass
class Job:
    model: str  # display name = the build's model name (folder under build_dir)
    spec: str  # model= argument
    kind: str  # declared | 1-stage | tiled
    variant: str
    budgets: list[Budget]  # the first, then the ones to try when tigris refuses it


def slow_arena_kib(slow_peak: int) -> int:
    """slow_kb= for a plan whose host slow peak is ``slow_peak`` bytes: the peak rounded up to
    KiB, at least the 4 KiB default (the firmware build refuses a plan its slow arena cannot
    hold once it sizes the runtime to the plan)."""
    return max(DEFAULT_SLOW_KIB, -(-slow_peak // 1024))


@dataclass
class Result:
    model: str
    budget: int | None
    budget_kind: str
    variant: str
    ok: bool
    slow_kib: int | None = None
    error: str = ""
    image: int = 0
    on_chip_ram: int = 0
    categories: dict[str, int] = field(default_factory=dict)
    objects: dict[str, dict[str, int]] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    artifacts: str = ""


def run(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, **kw)


def find_tools(repo: Path) -> tuple[Path, Path]:
    """(scons, tigris) of ``repo``'s venv, else of this checkout's."""
    for venv in (repo / ".venv", REPO / ".venv"):
        if (venv / "bin" / "scons").is_file():
            return venv / "bin" / "scons", venv / "bin" / "tigris"
    raise SystemExit(f"no .venv/bin/scons in {repo} or {REPO} (run ./setup.sh)")


def sdist_models_dir(repo: Path) -> Path | None:
    """Folder holding the sdist's kws/resnet/vww .tflite files, extracted on first use.

    Same places and download as tests/ops/models_data.sdist_ops_dir (/tmp/sdist, build/sdist,
    else ``pip download --no-binary :all: --no-deps tigris-ml==0.12.1 -d build/sdist``); only
    the three model files are extracted, next to the tarball.
    """
    roots = [Path("/tmp/sdist"), repo / "build" / "sdist", REPO / "build" / "sdist"]
    for root in roots:
        folder = root / SDIST / SDIST_TFLITE
        if all((folder / f"{m}.tflite").is_file() for m in SDIST_MODELS):
            return folder
    archive = next((r / f"{SDIST}.tar.gz" for r in roots if (r / f"{SDIST}.tar.gz").is_file()), None)
    if archive is None:
        dest = REPO / "build" / "sdist"
        dest.mkdir(parents=True, exist_ok=True)
        pip = run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                   "tigris-ml==0.12.1", "-d", str(dest)])
        archive = dest / f"{SDIST}.tar.gz"
        if pip.returncode != 0 or not archive.is_file():
            print(f"note: tigris-ml sdist unavailable (pip download failed): {pip.stderr.strip()[-300:]}",
                  file=sys.stderr)
            return None
    wanted = {f"{SDIST}/{SDIST_TFLITE}/{m}.tflite" for m in SDIST_MODELS}
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name in wanted]
        tar.extractall(archive.parent, members=members, filter="data")
    folder = archive.parent / SDIST / SDIST_TFLITE
    return folder if all((folder / f"{m}.tflite").is_file() for m in SDIST_MODELS) else None


def analyze(tigris: Path, model: Path, budget: int | str) -> dict[str, Any]:
    out = run([str(tigris), "analyze", str(model), "-m", str(budget), "--json"])
    if out.returncode != 0:
        raise RuntimeError(f"tigris analyze {model.name} -m {budget}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def sdist_budgets(tigris: Path, model: Path) -> tuple[Budget, list[Budget]]:
    """(one-stage budget, tiled budgets to try in order) from ``tigris analyze --json``.

    One stage: the unscheduled peak (checked to compile to one stage). Tiled: half the peak,
    then 3/4, keeping those analyze finds feasible with more than one stage. Each comes with a
    slow arena that holds the plan's slow peak at that budget.
    """
    peak = analyze(tigris, model, ANALYZE_BUDGET)["model"]["unscheduled_peak_bytes"]
    at_peak = analyze(tigris, model, peak)
    if at_peak["fast"]["stages"] != 1:
        peak, at_peak = parse_size_arg(ANALYZE_BUDGET), analyze(tigris, model, ANALYZE_BUDGET)
    one = Budget(peak, slow_arena_kib(at_peak["slow"]["peak_bytes"]))
    tiled = []
    for budget in (peak // 2, peak * 3 // 4):
        report = analyze(tigris, model, budget)
        if report["fast"]["verdict"] in ("ok", "tiled") and report["fast"]["stages"] > 1:
            tiled.append(Budget(budget, slow_arena_kib(report["slow"]["peak_bytes"])))
    return one, tiled


def declared_models(repo: Path) -> list[str]:
    return sorted(p.parent.name for p in (repo / "models").glob("*/model.toml"))


def scons_help(scons: Path, repo: Path) -> str:
    return run([str(scons), "-C", str(repo), "-h"]).stdout


def unit_layers(repo: Path) -> dict[str, str]:
    """Runtime unit stem -> layer of ``repo``'s runtime (its runtime_tree, else a glob)."""
    sys.path.insert(0, str(repo / "site_scons"))
    try:
        from tigris_scons import runtime_tree  # type: ignore[import-not-found]

        return {p.stem: p.parent.name for p in runtime_tree.sources(repo / "runtime")}
    except Exception:  # older or broken checkout: the layer is the parent folder anyway
        return {p.stem: p.parent.name for p in (repo / "runtime" / "src").glob("*/*.c")}
    finally:
        sys.path.pop(0)


def plan_info(tigris: Path, plan: Path) -> dict[str, Any]:
    out = run([str(tigris), "inspect", str(plan), "--json"])
    if out.returncode != 0:
        return {}
    data = json.loads(out.stdout)
    p = data["plan"]
    return {"budget": p["budget"], "unscheduled_peak": p["peak"], "stages": p["num_stages"],
            "tile_plans": p["num_tile_plans"], "ops": p["num_ops"],
            "chained_stages": sum(1 for s in p.get("stages", []) if s.get("chain_len")),
            "plan_bytes": data["file_size_bytes"], "operator_counts": data.get("operator_counts", {})}


def scons_build(scons: Path, repo: Path, job: Job, budget: Budget, build_dir: Path, jobs: int,
                log: Path) -> subprocess.CompletedProcess[str]:
    """Build and run the firmware (``run``: QEMU and the full check), over-budget only warned."""
    cmd = [str(scons), "-C", str(repo), f"-j{jobs}", f"model={job.spec}", "budget_mode=warn",
           f"build_dir={build_dir}", *VARIANTS[job.variant], "run"]
    if budget.compile is not None:
        cmd.append(f"budget={budget.compile}")
    if budget.slow_kib is not None:
        cmd.append(f"slow_kb={budget.slow_kib}")
    proc = run(cmd)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(" ".join(cmd) + "\n\n" + proc.stdout + proc.stderr)
    return proc


def measure(job: Job, budget: Budget, repo: Path, model_dir: Path, layers: Mapping[str, str],
            tigris: Path) -> Result:
    size = json.loads((model_dir / f"{job.model}.size.json").read_text())
    lmap = parse_map((model_dir / f"{job.model}.map").read_text())
    generated = [os.path.normpath(str(model_dir)), os.path.relpath(model_dir, repo)]
    br = categorise(lmap.input_sections, loadable_sections(size), size["load_image"], layers, generated)
    plan = plan_info(tigris, model_dir / f"{job.model}.tgrs")
    return Result(job.model, plan.get("budget", budget.compile), job.kind, job.variant, True, budget.slow_kib,
                  image=size["load_image"], on_chip_ram=size["on_chip_ram"], categories=br.totals,
                  objects=br.objects, plan=plan)


def keep_artifacts(model_dir: Path, model: str, dest: Path) -> None:
    """Copy what the figures come from, since the next budget of the model overwrites it."""
    dest.mkdir(parents=True, exist_ok=True)
    for suffix in (".size.json", ".map", ".compile.txt", ".size.txt"):
        src = model_dir / f"{model}{suffix}"
        if src.is_file():
            shutil.copy2(src, dest / src.name)


def error_tail(proc: subprocess.CompletedProcess[str]) -> str:
    """The build's own error line (``scons: *** [target] message``), else its last lines."""
    lines = [l.strip() for l in (proc.stdout + proc.stderr).splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("scons: ***")] or lines[-2:]
    return " | ".join(errors)[:400]


def run_job(job: Job, scons: Path, tigris: Path, repo: Path, root: Path, jobs: int,
            layers: Mapping[str, str]) -> Result:
    build_dir = root / job.variant.replace("=", "")
    model_dir = build_dir / job.model
    proc = None
    for budget in job.budgets:
        label = f"{job.model}@{budget.compile if budget.compile is not None else 'declared'}"
        proc = scons_build(scons, repo, job, budget, build_dir, jobs, root / "logs" / job.variant / f"{label}.log")
        if proc.returncode == 0:
            result = measure(job, budget, repo, model_dir, layers, tigris)
            keep = root / "artifacts" / job.variant / label
            keep_artifacts(model_dir, job.model, keep)
            result.artifacts = str(keep)
            if budget != job.budgets[0]:
                result.error = f"budget {job.budgets[0].compile} refused by tigris; built at {budget.compile}"
            return result
        if "refused" not in proc.stdout + proc.stderr:
            break
    assert proc is not None
    first = job.budgets[0]
    return Result(job.model, first.compile, job.kind, job.variant, False, first.slow_kib, error=error_tail(proc))


def plan_jobs(repo: Path, tigris: Path, wanted: set[str] | None, variants: Sequence[str],
              slow_auto: bool) -> tuple[list[Job], list[str]]:
    """The builds to measure. With ``slow_auto`` (the checkout sizes the slow arena from the plan)
    the sdist models get ``budget=`` only; otherwise also a ``slow_kb=`` holding their slow peak."""
    notes: list[str] = []
    base: list[Job] = []
    for name in declared_models(repo):
        if wanted is None or name in wanted:
            base.append(Job(name, name, "declared", "", [Budget(None)]))
    sdist = [m for m in SDIST_MODELS if wanted is None or m in wanted]
    folder = sdist_models_dir(repo) if sdist else None
    if sdist and folder is None:
        notes.append("sdist models skipped: tigris-ml 0.12.1 sdist unavailable")
    for name in sdist if folder else []:
        path = folder / f"{name}.tflite"
        one, tiled = sdist_budgets(tigris, path)
        if slow_auto:
            one, tiled = Budget(one.compile), [Budget(b.compile) for b in tiled]
        base.append(Job(name, str(path), "1-stage", "", [one]))
        if tiled:
            base.append(Job(name, str(path), "tiled", "", tiled))
        else:
            notes.append(f"{name}: tigris analyze finds no tiled plan at 1/2 or 3/4 of {one.compile} B")
    jobs = [Job(j.model, j.spec, j.kind, v, list(j.budgets)) for j in base for v in variants]
    return jobs, notes


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

COLUMNS = ("model", "budget", "variant", "image B", "core", "paths", "ops", "kernels", "firmware",
           "libs", "other", "SRAM static", "slow KiB", "stages")


def table_rows(results: Sequence[Result]) -> Iterator[list[str]]:
    for r in results:
        budget = f"{r.budget:,} {r.budget_kind}" if r.budget is not None else r.budget_kind
        if not r.ok:
            yield [r.model, budget, r.variant, "FAILED (see note)"]
            continue
        extra = [f"{label} {r.plan[k]}" for k, label in (("tile_plans", "tile plans"),
                                                           ("chained_stages", "chained")) if r.plan.get(k)]
        stages = f"{r.plan.get('stages', '?')}" + (f" ({', '.join(extra)})" if extra else "")
        yield [r.model, budget, r.variant, f"{r.image:,}",
               *(f"{r.categories[c]:,}" for c in CATEGORIES), f"{r.on_chip_ram:,}",
               str(r.slow_kib) if r.slow_kib is not None else ("decl" if r.budget_kind == "declared" else "auto"),
               stages]


def format_table(results: Sequence[Result]) -> str:
    rows = list(table_rows(results))
    full = [r for r in rows if len(r) == len(COLUMNS)]
    widths = [max([len(h)] + [len(r[i]) for r in full]) for i, h in enumerate(COLUMNS)]
    left = {0, 1, 2, len(COLUMNS) - 1}

    def fmt(cells: Sequence[str]) -> str:
        if len(cells) != len(COLUMNS):
            return "  ".join(cells[:3] + ["  ".join(cells[3:])])
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join(line.rstrip() for line in [fmt(COLUMNS), *(fmt(r) for r in rows)])


def format_ops(results: Sequence[Result]) -> list[str]:
    seen: dict[str, str] = {}
    for r in results:
        counts = r.plan.get("operator_counts")
        if r.ok and counts and r.model not in seen:
            seen[r.model] = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return [f"  {m}: {ops}" for m, ops in seen.items()]


def format_verbose(r: Result) -> list[str]:
    lines = [f"{r.model} @ {r.budget} {r.variant}:"]
    for c in CATEGORIES:
        items = sorted(r.objects.get(c, {}).items(), key=lambda kv: -kv[1])
        if items:
            lines.append(f"  {c:8s} " + ", ".join(f"{k} {v:,}" for k, v in items))
    flagged = [k for c in ("core", "other") for k in r.objects.get(c, {}) if k.startswith("generated")
               or c == "other"]
    if flagged:
        lines.append("  by rule (generated -> core, unknown -> other): " + ", ".join(flagged))
    lines.append(f"  padding/fill (in other) {r.categories['other'] - sum(r.objects.get('other', {}).values()):,}")
    return lines


def git_describe(repo: Path) -> str:
    out = run(["git", "-C", str(repo), "log", "-1", "--format=%h %s"])
    dirty = run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
    return out.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout to measure (default: this one)")
    parser.add_argument("--models", help="comma-separated model names (declared or sdist stems)")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--build-dir", type=Path, help="default: REPO/build/bench-size")
    parser.add_argument("-j", type=int, default=1, dest="jobs", help="scons -j (default 1)")
    parser.add_argument("-v", "--verbose", action="store_true", help="bytes per object in each category")
    args = parser.parse_args(argv)

    repo = args.repo.resolve()
    if not (repo / "SConstruct").is_file():
        raise SystemExit(f"{repo}: no SConstruct")
    root = (args.build_dir or repo / "build" / "bench-size").resolve()
    scons, tigris = find_tools(repo)
    wanted = set(args.models.split(",")) if args.models else None

    notes: list[str] = []
    variants = list(VARIANTS)
    help_text = scons_help(scons, repo)
    for variant, options in VARIANTS.items():
        missing = [o.split("=")[0] for o in options if f"{o.split('=')[0]}=" not in help_text]
        if missing:
            variants.remove(variant)
            notes.append(f"{variant} skipped: this checkout's scons -h has no {', '.join(m + '=' for m in missing)}")
    slow_auto = "slow arena in KiB, or 'auto'" in scons_help(scons, repo)
    if not slow_auto:
        notes.append("slow_kb= passed: this checkout has no slow = \"auto\" (its default is 4 KiB)")
    jobs, plan_notes = plan_jobs(repo, tigris, wanted, variants, slow_auto)
    notes += plan_notes
    layers = unit_layers(repo)

    print(f"firmware size: {repo} @ {git_describe(repo)}")
    print(f"scons: {scons} -C {repo} (SConstruct {repo / 'SConstruct'}), build dir {root}", flush=True)
    results = []
    for job in jobs:
        first = job.budgets[0]
        what = (f"{job.model} {job.kind} budget={first.compile or 'declared'}"
                f"{f' slow_kb={first.slow_kib}' if first.slow_kib else ''} {job.variant}")
        print(f"  building {what} ...", file=sys.stderr, flush=True)
        results.append(run_job(job, scons, tigris, repo, root, args.jobs, layers))
    print()
    print(format_table(results))
    print()
    print("image = PT_LOAD file bytes (flash without the plan); categories from the linker map, "
          "other = unclaimed objects + fill/alignment; SRAM static = used + reserved in on-chip RAM "
          "(.data/.bss, fast arena = budget (+ LZ4 reserve), slow arena, stack); slow KiB = "
          "slow_kb= passed (the plan's slow peak, at least 4), decl = the model.toml's, auto = sized "
          "by the build; every build also ran on QEMU and passed its check unless a note says FAILED")
    print("plan operators:")
    print("\n".join(format_ops(results)))
    for r in results:
        if r.error:
            status = "" if r.ok else "FAILED: "
            notes.append(f"{r.model} {r.budget} {r.variant}: {status}{r.error}")
    for note in notes:
        print(f"note: {note}")
    if args.verbose:
        for r in results:
            if r.ok:
                print("\n".join(format_verbose(r)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "repo": str(repo), "commit": git_describe(repo), "scons": str(scons), "build_dir": str(root),
            "categories": list(CATEGORIES), "notes": notes, "results": [asdict(r) for r in results],
        }, indent=1) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
