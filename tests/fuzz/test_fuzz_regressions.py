"""Every fuzzer finding stays fixed, and the seed corpus stays clean, under ASan + UBSan.

``tests/fuzz/regressions/`` holds each input the plan fuzzer (fuzz_plan.c, run by run_fuzz.py)
ever crashed on, with a note in its README.md; ``tests/fuzz/corpus/`` holds the seeds (real
plans of every model and budget we test). Both are replayed through the very checks of the
fuzz target (load, host shim runs, caller-arena variants, the invariants listed in
fuzz_plan.c), compiled with ``-DFUZZ_REPLAY_MAIN`` into a plain program with gcc's
``-fsanitize=address,undefined -fno-sanitize-recover=all``: any sanitizer report, invariant
violation or crash fails the test and names the file.

A third test builds the libFuzzer target itself with clang (as run_fuzz.py does) and runs a
fixed-seed batch of mutations of the regressions, so the target keeps compiling and running.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.fuzz import run_fuzz

pytestmark = pytest.mark.slow  # the replay driver and the libFuzzer target are ASan builds of the runtime

HERE = Path(__file__).resolve().parent

REPLAY_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g",
                "-O1", "-DFUZZ_REPLAY_MAIN"]
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
TIME_LIMIT_S = 90


def _inputs(folder: Path) -> list[Path]:
    """Every input file (seeds are named *.tgrs, merged fuzzer inputs by their SHA-1)."""
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix != ".md")


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support import require_tool

    gcc = require_tool("gcc")
    exe = tmp_path_factory.mktemp("fuzz_replay") / "fuzz_replay"
    cmd = run_fuzz.build_command(gcc, exe, REPLAY_FLAGS)
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"replay driver build failed:\n{' '.join(cmd)}\n{r.stdout}{r.stderr}"
    return exe


def _replay(exe: Path, files: list[Path]) -> None:
    """Replay in two parallel halves; fail with the file being replayed and the report."""
    env = dict(os.environ, **SAN_ENV)
    halves = [files[0::2], files[1::2]]
    procs = [subprocess.Popen([str(exe), *map(str, h)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for h in halves if h]
    for p in procs:
        out, err = p.communicate(timeout=TIME_LIMIT_S)
        replayed = [line for line in err.splitlines() if line.startswith("replay ")]
        assert p.returncode == 0 and "runtime error" not in err and "Sanitizer" not in err, (
            f"exit {p.returncode} while {replayed[-1] if replayed else 'starting'}:\n{err[-6000:]}")


def test_regressions_replay_clean(replay: Path) -> None:
    files = _inputs(HERE / "regressions")
    readme = (HERE / "regressions" / "README.md").read_text()
    undocumented = [f.name for f in files if f.name not in readme]
    assert not undocumented, f"regression inputs without a note in regressions/README.md: {undocumented}"
    if files:
        _replay(replay, files)


def test_corpus_replays_clean(replay: Path) -> None:
    files = _inputs(HERE / "corpus")
    assert len(files) >= 100, f"seed corpus has only {len(files)} plans (make_corpus.py builds ~150)"
    start = time.monotonic()
    _replay(replay, files)
    assert time.monotonic() - start < TIME_LIMIT_S


def test_libfuzzer_target_builds_and_fuzzes(tmp_path: Path) -> None:
    """The real target (clang, libFuzzer, ASan + UBSan) builds and runs 2000 mutations of the
    regressions (fixed seed, so the test is deterministic; run_fuzz.py is where fuzzing happens)."""
    from tests.support import require_tool

    clang = require_tool("clang")
    exe = tmp_path / "fuzz_plan"
    cmd = run_fuzz.build_command(clang, exe, run_fuzz.FUZZ_FLAGS)
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"fuzz target build failed (libclang-rt-14-dev installed?):\n{r.stderr[-3000:]}"
    work = tmp_path / "corpus"
    work.mkdir()
    for f in _inputs(HERE / "regressions"):
        (work / f.name).write_bytes(f.read_bytes())
    r = subprocess.run([str(exe), "-seed=1", "-runs=2000", "-timeout=10", "-max_len=65536",
                        f"-artifact_prefix={tmp_path}/", str(work)], capture_output=True, text=True,
                       env=dict(os.environ, **SAN_ENV), timeout=120)
    assert r.returncode == 0, f"the fuzzer found something (artifacts in {tmp_path}):\n{r.stderr[-6000:]}"
    assert run_fuzz.parse_stats(r.stderr), r.stderr[-2000:]
