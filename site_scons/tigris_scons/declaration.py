"""Model declarations (``models/<name>/model.toml``) and command-line budget overrides.

One small TOML file per model holds every number the build needs: the compile budget handed to
``tigris compile -m``, the arena sizes compiled into the firmware, and the part budgets the
checks enforce. Keeping them in one place gives each number one definition: the compile step,
the firmware and the checks cannot disagree about a budget.
Parsing is strict: an unknown key or a bad unit is an error naming the file and the key, because
a misspelt budget that is silently ignored is a budget that is not enforced.

Example (``models/ds_cnn/model.toml``)::

    name = "ds_cnn"
    builder = "build.py"          # python build.py -o OUT.onnx   (or: source = "x.onnx")

    [compile]
    budget = "20K"                # tigris compile -m 20K

    [arena]
    fast = "auto"                 # plan budget + LZ4 reserve
    slow = "auto"                 # what the plan's run uses (the default); or a size, "4K"

    [part]
    sram = "64K"                  # on-chip SRAM the firmware may use in total
    flash = "128K"                # plan + firmware image
    stack = "auto"                # static worst case + margin (the default); or a size, "2K"

    [regions]                     # optional budgets per ELF region (ITCM, DTCM, ISRAM, ...)
    ITCM = "64K"

A part from the catalog (``parts/<id>.toml``, see ``parts.py``) can stand in for the two part
budgets: with ``[part] name = "STM32H743ZI"`` the part's on-chip SRAM (all blocks) and flash
become ``sram`` and ``flash``. A ``sram``/``flash`` written in the same ``[part]`` table is more
specific and wins. A name that is not in the catalog stays what it always was, a label. On the
command line ``part=nrf52840`` does the same, strictly (an unknown part is an error), and a
``sram=``/``flash=`` given with it wins.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .boards import ALL_REGION_NAMES as REGION_NAMES
from .errors import TigrisError, check_keys, suggestion
from .inputs import DEFAULT_SEED
from .parts import PARTS_DIR, Part, find_part, lookup_part
from .units import parse_size

MODEL_SUFFIXES = (".onnx", ".tflite", ".tgrs")
DECLARATION_NAME = "model.toml"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")  # also a firmware string (<= 64 chars)

# Allowed keys per table; anything else is an error.
_TOP_KEYS = {"name", "description", "builder", "source", "compile", "arena", "part", "regions", "run"}
_TABLE_KEYS = {
    "compile": {"budget", "slow", "compress", "xip"},
    "arena": {"fast", "slow", "slow_in_ddr"},
    "part": {"name", "sram", "flash", "stack"},
    "run": {"seed", "timeout", "runs"},
}

#: Command-line variables that override a declaration (``scons model=x.onnx budget=20K``).
OVERRIDE_KEYS = {
    "budget": "compile budget (tigris compile -m), e.g. 20K",
    "slow_budget": "slow memory for tigris compile -m FAST+SLOW, e.g. 64K",
    "compress": "weight compression for tigris compile: none|lz4",
    "fast_kb": "fast arena in KiB, or 'auto' (plan budget + LZ4 reserve)",
    "slow_kb": "slow arena in KiB, or 'auto' (what the plan's run uses; the default)",
    "slow_ddr": "1 to place the slow arena in DDR instead of on-chip SRAM",
    "part": "part from the catalog in parts/: its on-chip SRAM and flash become the budgets, e.g. part=nrf52840 "
            "(sram=/flash= given too win)",
    "sram": "part budget: total on-chip SRAM, e.g. 64K",
    "flash": "part budget: flash for plan + firmware image, e.g. 128K",
    "stack": "main stack reserved: 'auto' (the static worst case of the linked firmware plus a margin; "
             "the default) or a size, e.g. 2K",
    "seed": "seed of the deterministic input (default 0x9E3779B9)",
    "runs": "inferences in a row, each checked (default: 3 for a plan with state variables, else 1)",
}
REGION_OVERRIDE_PREFIX = "region_"  # region_dtcm=96K


@dataclass
class ModelDecl:
    """Everything the build knows about one model, after overrides."""

    name: str
    origin: str  # the declaration file, or the model file for model=path/to/file
    source: Path | None = None  # .onnx / .tflite / .tgrs used as is
    builder: Path | None = None  # script run as `python builder -o OUT.onnx`
    compile_budget: int | None = None
    compile_slow: int | None = None
    compress: str = "none"
    xip: bool = False
    fast_arena: int | None = None  # None = auto (plan budget + reserve)
    slow_arena: int | None = None  # None = auto (what the plan's run uses, measured by the runtime)
    slow_in_ddr: bool = False
    stack_size: int | None = None  # None = auto: the static worst case plus a margin (stackuse.py)
    part_name: str = ""
    part: Part | None = None  # the catalog part when part_name names one (its budgets are the defaults)
    sram_budget: int | None = None
    flash_budget: int | None = None
    region_budgets: dict[str, int] = field(default_factory=dict)
    seed: int = DEFAULT_SEED
    timeout: float | None = None
    runs: int | None = None  # None: effective_runs decides from the plan

    @property
    def source_kind(self) -> str:
        """``builder``, ``onnx``, ``tflite`` or ``tgrs``: how the plan is obtained."""
        if self.builder is not None:
            return "builder"
        assert self.source is not None
        return self.source.suffix.lstrip(".").lower()

    def compile_args(self) -> list[str]:
        """Arguments for ``tigris compile`` (besides input and output)."""
        if self.compile_budget is None:
            raise TigrisError(
                f"{self.origin}: model {self.name!r} needs a compile budget to build a plan: "
                "set [compile] budget in its model.toml or pass budget=20K"
            )
        mem = str(self.compile_budget)
        if self.compile_slow is not None:
            mem += f"+{self.compile_slow}"
        args = ["-m", mem]
        if self.compress != "none":
            args += ["-c", self.compress]
        if self.xip:
            args.append("--xip")
        return args

    def budgets(self) -> dict[str, Any]:
        """The numbers the checks compare against, as a canonical dict (for SCons ``Value``)."""
        return {
            "compile_budget": self.compile_budget,
            "sram": self.sram_budget,
            "flash": self.flash_budget,
            "regions": dict(sorted(self.region_budgets.items())),
            **({"part": self.part.name} if self.part is not None else {}),
        }


def _bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
        return value.lower() in {"1", "true", "yes", "on"}
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TigrisError(f"{what}: expected true/false (or 1/0), got {value!r}")


#: Inferences a firmware runs in a row for a plan with state variables, unless declared.
STATEFUL_RUNS = 3
MAX_RUNS = 64


def parse_runs(value: Any, what: str) -> int:
    """A count of inferences in a row: an integer in 1..MAX_RUNS."""
    try:
        runs = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value), 0)
    except ValueError:
        raise TigrisError(f"{what}: expected a number of inferences, got {value!r}") from None
    if not 1 <= runs <= MAX_RUNS:
        raise TigrisError(f"{what}: runs must be in 1..{MAX_RUNS}, got {value!r}")
    return runs


def effective_runs(declared: int | None, state_bytes: int) -> int:
    """Inferences in a row: as declared, else STATEFUL_RUNS for a plan whose state variables
    carry from one to the next (each checked against the reference in the same order), else 1."""
    if declared is not None:
        return declared
    return STATEFUL_RUNS if state_bytes > 0 else 1


def parse_seed(value: Any, what: str) -> int:
    try:
        seed = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value), 0)
    except ValueError:
        raise TigrisError(f"{what}: expected an integer seed such as 0x9E3779B9, got {value!r}") from None
    if not 0 < seed <= 0xFFFFFFFF:
        raise TigrisError(f"{what}: seed must be in 1..0xFFFFFFFF, got {value!r}")
    return seed


def _compress(value: Any, what: str) -> str:
    if value not in ("none", "lz4"):
        raise TigrisError(f"{what}: expected 'none' or 'lz4', got {value!r}")
    return str(value)


def _timeout(value: Any, what: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise TigrisError(f"{what}: expected seconds, got {value!r}") from None
    if not seconds > 0:
        raise TigrisError(f"{what}: must be positive, got {value!r}")
    return seconds


def _region_name(key: str, where: str) -> str:
    for name in REGION_NAMES:
        if name.lower() == key.lower():
            return name
    raise TigrisError(
        f"{where}: unknown region {key!r}{suggestion(key.upper(), set(REGION_NAMES))}; "
        f"regions: {', '.join(REGION_NAMES)}"
    )


def check_name(name: str, where: str) -> str:
    """Model names become directory and alias names, so keep them to a safe alphabet."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise TigrisError(
            f"{where}: model name {name!r} must be 1-64 characters, start with a letter, digit or "
            "'_' and use only letters, digits, '_', '.', '-'"
        )
    return name


def use_part(decl: ModelDecl, part: Part) -> None:
    """Make ``part`` the declaration's part: its total SRAM and flash become the budgets."""
    decl.part, decl.part_name = part, part.name
    decl.sram_budget, decl.flash_budget = part.sram_total, part.flash


def load_declaration(path: Path, *, parts_dir: Path | None = None) -> ModelDecl:
    """Read and validate one ``model.toml``; paths inside it are relative to its folder.

    ``[part] name`` naming a part of the catalog in ``parts_dir`` (default ``parts/``) sets the
    sram and flash budgets from the part; an explicit ``[part] sram``/``flash`` wins over it.
    """
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TigrisError(f"{where}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TigrisError(f"{where}: not valid TOML: {exc}") from None
    check_keys(raw, _TOP_KEYS, where)
    for table, allowed in _TABLE_KEYS.items():
        value = raw.get(table, {})
        if not isinstance(value, dict):
            raise TigrisError(f"{where}: [{table}] must be a table")
        check_keys(value, allowed, f"{where}: [{table}]")
    regions_raw = raw.get("regions", {})
    if not isinstance(regions_raw, dict):
        raise TigrisError(f"{where}: [regions] must be a table")

    folder = path.parent
    name = check_name(raw.get("name", folder.name), f"{where}: name")
    decl = ModelDecl(name=name, origin=where)

    has_builder, has_source = "builder" in raw, "source" in raw
    if has_builder == has_source:
        raise TigrisError(f"{where}: declare exactly one of 'builder' (a script) or 'source' (a model file)")
    if has_builder:
        decl.builder = (folder / str(raw["builder"])).resolve()
        if not decl.builder.is_file():
            raise TigrisError(f"{where}: builder script {decl.builder} does not exist")
    else:
        decl.source = (folder / str(raw["source"])).resolve()
        if decl.source.suffix.lower() not in MODEL_SUFFIXES:
            raise TigrisError(f"{where}: source must be a {', '.join(MODEL_SUFFIXES)} file, got {raw['source']!r}")
        if not decl.source.is_file():
            raise TigrisError(f"{where}: source {decl.source} does not exist")

    comp, arena, part, run = (raw.get(t, {}) for t in ("compile", "arena", "part", "run"))
    if "budget" in comp:
        decl.compile_budget = parse_size(comp["budget"], what=f"{where}: compile.budget")
    if "slow" in comp:
        decl.compile_slow = parse_size(comp["slow"], what=f"{where}: compile.slow")
    if "compress" in comp:
        decl.compress = _compress(comp["compress"], f"{where}: compile.compress")
    if "xip" in comp:
        decl.xip = _bool(comp["xip"], f"{where}: compile.xip")
    if "fast" in arena and arena["fast"] != "auto":
        decl.fast_arena = parse_size(arena["fast"], what=f"{where}: arena.fast")
    if "slow" in arena:
        decl.slow_arena = None if arena["slow"] == "auto" else parse_size(arena["slow"], what=f"{where}: arena.slow")
    if "slow_in_ddr" in arena:
        decl.slow_in_ddr = _bool(arena["slow_in_ddr"], f"{where}: arena.slow_in_ddr")
    decl.part_name = str(part.get("name", ""))
    catalog_part = lookup_part(decl.part_name, PARTS_DIR if parts_dir is None else parts_dir)
    if catalog_part is not None:
        use_part(decl, catalog_part)  # explicit sram/flash below are more specific and win
    if "sram" in part:
        decl.sram_budget = parse_size(part["sram"], what=f"{where}: part.sram")
    if "flash" in part:
        decl.flash_budget = parse_size(part["flash"], what=f"{where}: part.flash")
    if "stack" in part:
        decl.stack_size = None if part["stack"] == "auto" else parse_size(part["stack"], what=f"{where}: part.stack")
    for key, value in regions_raw.items():
        region = _region_name(key, f"{where}: [regions]")
        decl.region_budgets[region] = parse_size(value, what=f"{where}: regions.{key}")
    if "seed" in run:
        decl.seed = parse_seed(run["seed"], f"{where}: run.seed")
    if "timeout" in run:
        decl.timeout = _timeout(run["timeout"], f"{where}: run.timeout")
    if "runs" in run:
        decl.runs = parse_runs(run["runs"], f"{where}: run.runs")
    return decl


def decl_for_file(path: Path) -> ModelDecl:
    """A declaration for ``model=path/to/file.{onnx,tflite,tgrs}``: budgets come from overrides."""
    if path.suffix.lower() not in MODEL_SUFFIXES:
        raise TigrisError(
            f"model={path}: expected a model folder name, a model.toml or a "
            f"{'/'.join(MODEL_SUFFIXES)} file"
        )
    if not path.is_file():
        raise TigrisError(f"model={path}: no such file")
    name = (re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem).lstrip(".-") or "model")[:64]
    return ModelDecl(name=name, origin=str(path), source=path.resolve())


def apply_overrides(decl: ModelDecl, overrides: dict[str, str], *, parts_dir: Path | None = None) -> ModelDecl:
    """Apply command-line settings (``budget=``, ``fast_kb=``, ``region_dtcm=``...) in place.

    ``part=`` is applied first, whatever the order given, so that ``sram=``/``flash=`` on the
    same command line win over the part's figures; its lookup in ``parts_dir`` (default
    ``parts/``) is strict, as a misspelt part would otherwise leave the old budgets in force.
    """
    if overrides.get("part") is not None:
        use_part(decl, find_part(str(overrides["part"]), PARTS_DIR if parts_dir is None else parts_dir))
    for key, value in overrides.items():
        what = f"{key}={value}"
        if key == "part":
            continue
        if key == "budget":
            decl.compile_budget = parse_size(value, what=what)
        elif key == "slow_budget":
            decl.compile_slow = parse_size(value, what=what)
        elif key == "compress":
            decl.compress = _compress(value, what)
        elif key == "fast_kb":
            decl.fast_arena = None if value == "auto" else parse_size(value, what=what, default_unit=1024)
        elif key == "slow_kb":
            decl.slow_arena = None if value == "auto" else parse_size(value, what=what, default_unit=1024)
        elif key == "slow_ddr":
            decl.slow_in_ddr = _bool(value, what)
        elif key == "sram":
            decl.sram_budget = parse_size(value, what=what)
        elif key == "flash":
            decl.flash_budget = parse_size(value, what=what)
        elif key == "stack":
            decl.stack_size = None if value == "auto" else parse_size(value, what=what)
        elif key == "seed":
            decl.seed = parse_seed(value, what)
        elif key == "runs":
            decl.runs = parse_runs(value, what)
        elif key.startswith(REGION_OVERRIDE_PREFIX):
            region = _region_name(key[len(REGION_OVERRIDE_PREFIX):], what)
            decl.region_budgets[region] = parse_size(value, what=what)
        else:
            raise TigrisError(f"{what}: not a model setting{suggestion(key, set(OVERRIDE_KEYS))}")
    return decl


def available_models(models_dir: Path) -> list[str]:
    """Names of the folders under ``models_dir`` that hold a declaration."""
    if not models_dir.is_dir():
        return []
    return sorted(p.parent.name for p in models_dir.glob(f"*/{DECLARATION_NAME}"))


def resolve_model(spec: str, *, models_dir: Path, base_dir: Path, parts_dir: Path | None = None) -> ModelDecl:
    """Turn one ``model=`` value into a declaration.

    ``spec`` is a model folder name under ``models_dir`` (``ds_cnn``), a folder or ``.toml``
    path, or a model file (``path/to/file.onnx``). Relative paths are taken from ``base_dir``
    (where scons was started). Anything else is an error that lists what exists.
    """
    spec = spec.strip()
    if not spec:
        raise TigrisError("model= is empty; give a model name such as model=ds_cnn or a file")
    candidate = Path(spec)
    if not candidate.is_absolute():
        candidate = base_dir / candidate
    if candidate.is_dir() and (candidate / DECLARATION_NAME).is_file():
        return load_declaration(candidate / DECLARATION_NAME, parts_dir=parts_dir)
    if candidate.suffix == ".toml" and candidate.is_file():
        return load_declaration(candidate, parts_dir=parts_dir)
    if candidate.suffix.lower() in MODEL_SUFFIXES:
        return decl_for_file(candidate)
    declared = models_dir / spec / DECLARATION_NAME
    if "/" not in spec and declared.is_file():
        return load_declaration(declared, parts_dir=parts_dir)
    known = available_models(models_dir)
    hint = f"; declared models: {', '.join(known)}" if known else ""
    raise TigrisError(
        f"model={spec} names nothing: no {models_dir / spec / DECLARATION_NAME} and no such "
        f"file or folder{hint} (a model file must end in {', '.join(MODEL_SUFFIXES)})"
    )
