"""Model declarations: strict TOML, overrides from the command line, model= resolution."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support import REPO
from tigris_scons.declaration import apply_overrides, load_declaration, resolve_model
from tigris_scons.errors import TigrisError


def write(folder: Path, text: str, builder: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if builder:
        (folder / "build.py").write_text("print('builder')\n")
    path = folder / "model.toml"
    path.write_text(textwrap.dedent(text))
    return path


FULL = """\
    name = "kws"
    builder = "build.py"
    [compile]
    budget = "20K"
    slow = "64K"
    compress = "lz4"
    [arena]
    fast = "24KiB"
    slow = "4K"
    slow_in_ddr = true
    [part]
    name = "M55 demo part"
    sram = "64K"
    flash = "1M"
    [regions]
    itcm = "64K"
    DTCM = 57344
    [run]
    seed = 0x1234
    timeout = 5
"""


def test_full_declaration(tmp_path):
    decl = load_declaration(write(tmp_path / "kws", FULL))
    assert decl.name == "kws"
    assert decl.builder == (tmp_path / "kws" / "build.py").resolve()
    assert decl.source_kind == "builder"
    assert decl.compile_args() == ["-m", "20480+65536", "-c", "lz4"]
    assert (decl.fast_arena, decl.slow_arena, decl.slow_in_ddr) == (24576, 4096, True)
    assert (decl.sram_budget, decl.flash_budget) == (65536, 1 << 20)
    assert decl.region_budgets == {"ITCM": 65536, "DTCM": 57344}
    assert (decl.seed, decl.timeout) == (0x1234, 5.0)
    assert decl.budgets() == {"compile_budget": 20480, "sram": 65536, "flash": 1 << 20,
                              "regions": {"DTCM": 57344, "ITCM": 65536}}


def test_defaults_and_auto_fast_arena(tmp_path):
    decl = load_declaration(write(tmp_path / "m", 'builder = "build.py"\n[arena]\nfast = "auto"\n'))
    assert decl.name == "m"  # folder name
    # slow arena and stack default to auto: sized from the plan's run and the linked code
    assert decl.fast_arena is None and decl.slow_arena is None and not decl.slow_in_ddr and decl.stack_size is None
    assert decl.seed == 0x9E3779B9 and decl.timeout is None
    with pytest.raises(TigrisError, match="needs a compile budget"):
        decl.compile_args()


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('buildr = "build.py"\n', ["unknown key 'buildr'", "did you mean 'builder'"]),
        ('builder = "build.py"\n[compile]\nbudgett = "20K"\n', ["[compile]", "unknown key 'budgett'", "did you mean 'budget'"]),
        ('builder = "build.py"\n[part]\nsram = "64KB"\n', ["part.sram", "ambiguous"]),
        ('builder = "build.py"\n[part]\nflash = "1Q"\n', ["part.flash", "unknown unit 'Q'"]),
        ('builder = "build.py"\n[regions]\nDTCMM = "1K"\n', ["unknown region 'DTCMM'", "did you mean 'DTCM'"]),
        ('builder = "build.py"\n[arena]\nslow_in_ddr = "maybe"\n', ["arena.slow_in_ddr", "true/false"]),
        ('builder = "build.py"\n[compile]\ncompress = "zip"\n', ["compile.compress", "'none' or 'lz4'"]),
        ('builder = "build.py"\n[run]\nseed = 0\n', ["run.seed", "1..0xFFFFFFFF"]),
        ('builder = "build.py"\n[run]\ntimeout = -1\n', ["run.timeout", "positive"]),
        ('builder = "build.py"\nsource = "x.onnx"\n', ["exactly one of"]),
        ('builder = "nope.py"\n', ["builder script", "does not exist"]),
        ('source = "model.bin"\n', ["source must be"]),
        ('name = "bad name"\nbuilder = "build.py"\n', ["model name 'bad name'"]),
        ('builder = "build.py"\n[part\n', ["not valid TOML"]),
        ('builder = "build.py"\npart = 3\n', ["[part] must be a table"]),
    ],
)
def test_bad_declarations_name_the_file_and_key(tmp_path, text, fragments):
    path = write(tmp_path / "m", text)
    with pytest.raises(TigrisError) as err:
        load_declaration(path)
    message = str(err.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_overrides(tmp_path):
    decl = load_declaration(write(tmp_path / "m", FULL))
    apply_overrides(decl, {"budget": "10K", "fast_kb": "12", "slow_kb": "8", "slow_ddr": "0", "sram": "32K",
                           "flash": "256K", "region_dtcm": "40K", "region_isram": "1K", "seed": "0x99",
                           "compress": "none", "slow_budget": "32K"})
    assert decl.compile_args() == ["-m", "10240+32768"]
    assert (decl.fast_arena, decl.slow_arena, decl.slow_in_ddr) == (12288, 8192, False)
    assert decl.region_budgets == {"ITCM": 65536, "DTCM": 40960, "ISRAM": 1024}
    assert decl.seed == 0x99
    apply_overrides(decl, {"fast_kb": "auto"})
    assert decl.fast_arena is None


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("budgett", "1K", "did you mean 'budget'"), ("sram", "lots", "cannot read"), ("region_foo", "1K", "unknown region"),
])
def test_bad_overrides(tmp_path, key, value, fragment):
    decl = load_declaration(write(tmp_path / "m", FULL))
    with pytest.raises(TigrisError, match=fragment):
        apply_overrides(decl, {key: value})


def test_resolve_names_folders_tomls_and_model_files(tmp_path):
    models = tmp_path / "models"
    write(models / "kws", FULL)
    assert resolve_model("kws", models_dir=models, base_dir=tmp_path).name == "kws"
    assert resolve_model("models/kws", models_dir=tmp_path, base_dir=tmp_path).name == "kws"
    assert resolve_model(str(models / "kws" / "model.toml"), models_dir=tmp_path, base_dir=tmp_path).name == "kws"
    plan = tmp_path / "my model.tgrs"
    plan.write_bytes(b"TGRS")
    decl = resolve_model("my model.tgrs", models_dir=models, base_dir=tmp_path)
    assert decl.name == "my_model" and decl.source_kind == "tgrs" and decl.compile_budget is None
    assert decl.compile_args if decl.source_kind == "tgrs" else True


def test_resolve_errors_say_what_exists(tmp_path):
    models = tmp_path / "models"
    write(models / "kws", FULL)
    with pytest.raises(TigrisError) as err:
        resolve_model("kvs", models_dir=models, base_dir=tmp_path)
    assert "model=kvs names nothing" in str(err.value) and "declared models: kws" in str(err.value)
    with pytest.raises(TigrisError, match="no such file"):
        resolve_model("missing.onnx", models_dir=models, base_dir=tmp_path)
    with pytest.raises(TigrisError, match="is empty"):
        resolve_model(" ", models_dir=models, base_dir=tmp_path)


def test_repository_declarations_load(repo_root):
    for toml in sorted((repo_root / "models").glob("*/model.toml")):
        decl = load_declaration(toml)
        assert decl.compile_budget, toml
        assert decl.sram_budget and decl.flash_budget, toml
    ds = load_declaration(REPO / "models/ds_cnn/model.toml")
    assert ds.compile_budget == 20 * 1024 and ds.fast_arena is None and ds.slow_arena is None


def test_auto_and_sized_slow_arena_and_stack(tmp_path):
    toml = write(tmp_path / "m", 'builder = "build.py"\n[arena]\nslow = "auto"\n[part]\nstack = "2K"\n')
    decl = load_declaration(toml)
    assert decl.slow_arena is None and decl.stack_size == 2048
    apply_overrides(decl, {"slow_kb": "12", "stack": "auto"})
    assert decl.slow_arena == 12 * 1024 and decl.stack_size is None
    apply_overrides(decl, {"slow_kb": "auto", "stack": "1536"})
    assert decl.slow_arena is None and decl.stack_size == 1536
    with pytest.raises(TigrisError, match="part.stack"):
        load_declaration(write(tmp_path / "bad", 'builder = "build.py"\n[part]\nstack = "lots"\n'))
