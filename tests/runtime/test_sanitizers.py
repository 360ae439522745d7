"""The differential and loader tests again, against the ASan + UBSan build of our library.

Why a subprocess: a sanitized shared library can only be loaded into a process that has the
sanitizer runtimes first in ``LD_PRELOAD`` (Python itself is not instrumented), and a sanitizer
finding aborts the whole process, so it has to be a separate pytest run. The child sets
``TGR_TEST_SANITIZE=1``, which makes the ``our_library`` fixture build ``scons host sanitize=1``
(``build/host-san/libtigris_host.so``, ``-fsanitize=address,undefined
-fno-sanitize-recover=all``). ``UBSAN_OPTIONS=halt_on_error=1`` turns any undefined behaviour
into a failure; leak detection is off because CPython's own allocations would drown the report.

The child runs with ``--capture=sys`` so an ASan/UBSan report, which is written straight to file
descriptor 2 just before the process dies, reaches us and is shown in the failure message.

Development aid: ``TGR_TEST_SANITIZED_LIBRARY=/path/lib.so`` tests a sanitized library built
elsewhere instead of the SCons one (it becomes the child's ``TGR_TEST_LIBRARY``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TIME_LIMIT_S = 300


def _sanitizer_runtime(gcc: str, name: str) -> str:
    path = subprocess.run([gcc, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.isfile(path):
        pytest.fail(f"{gcc} has no {name} (got {path!r}); install the gcc sanitizer runtimes")
    return path


@pytest.mark.slow
def test_differential_and_loader_tests_pass_under_asan_ubsan(plan_cache) -> None:
    from tests.support import require_tool  # tests/conftest.py: skip outside CI, fail under CI=true

    gcc = require_tool("gcc")
    env = dict(os.environ)
    env.pop("TGR_TEST_LIBRARY", None)
    if os.environ.get("TGR_TEST_SANITIZED_LIBRARY"):
        env["TGR_TEST_LIBRARY"] = os.environ["TGR_TEST_SANITIZED_LIBRARY"]
    env.update({
        "TGR_TEST_SANITIZE": "1",
        "LD_PRELOAD": ":".join([_sanitizer_runtime(gcc, "libasan.so"), _sanitizer_runtime(gcc, "libubsan.so")]),
        "ASAN_OPTIONS": "detect_leaks=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        # memory safety is about code paths, not input count: 3 random inputs per plan
        "TGR_TEST_INPUTS": os.environ.get("TGR_TEST_INPUTS", "3"),
        # reuse the plans this session already compiled (the child compiles what is missing)
        "TGR_TEST_PLAN_CACHE": str(plan_cache.root),
    })
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "--capture=sys", "-p", "no:cacheprovider",
           str(HERE / "test_differential.py"), str(HERE / "test_loader_rejections.py")]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIME_LIMIT_S + 60)
    elapsed = time.monotonic() - start
    output = (r.stdout + "\n" + r.stderr)[-12000:]
    finding = "AddressSanitizer" in output or "runtime error:" in output or "Sanitizer" in r.stderr
    kind = ("a SANITIZER FINDING" if finding else
            "test failures without a sanitizer report (compare with the unsanitized run)")
    assert r.returncode == 0, f"sanitized run failed (exit {r.returncode}, {elapsed:.0f} s) with {kind}:\n{output}"
    assert "passed" in r.stdout and not finding, output
    assert elapsed < TIME_LIMIT_S, f"sanitized rerun took {elapsed:.0f} s (limit {TIME_LIMIT_S} s)"
