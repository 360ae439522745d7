"""What every test folder shares: the repository root, the CI policy and the tool markers.

Import it by name (``from tests.support import require_tool``): pytest.ini puts the repository
root on ``sys.path``, and ``tests`` is a package, so this module has one name wherever it is used
(``from conftest import ...`` was ambiguous once several folders had a ``conftest.py``).

* Policy: a test that needs an external tool (arm-none-eabi-gcc, qemu-system-arm, clang, git)
  calls ``require_tool``. Outside CI a missing tool skips the test; with CI=true it fails,
  because CI must run everything.
* Markers: a tool that only some machines have is tied to a marker (``TOOL_MARKERS``), so that
  ``-m "not qemu"`` really leaves out every test that runs QEMU. ``require_tool`` (and the SCons
  runner in tests/build/build_helpers.py) fails the running test when it lacks the marker: a
  missing marker cannot go unnoticed until someone's quick loop starts QEMU.
* Locks: session fixtures run once per pytest-xdist worker; a build every worker needs
  (``scons host``) runs under ``locked`` so one worker builds and the others find it up to date.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: The marker a test must carry to use a tool (pytest.ini registers them, tests/README.md lists them).
#: ``qemu`` implies ``cross`` (tests/conftest.py adds it): a firmware is cross-compiled before it runs.
TOOL_MARKERS = {"qemu-system-arm": "qemu", "arm-none-eabi-": "cross"}

_RUNNING: list[pytest.Item] = []


def in_ci() -> bool:
    """CI=true (or 1, yes): every test must run, nothing may be skipped for a missing tool."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def skip_or_fail(message: str) -> None:
    """Skip the test for something missing on this machine; under CI nothing may be skipped."""
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def marker_for_tool(name: str) -> str | None:
    """The marker a test needs to use executable ``name`` (None: any machine has it)."""
    return next((marker for prefix, marker in TOOL_MARKERS.items() if name.startswith(prefix)), None)


def require_tool(name: str) -> str:
    """Return the path of executable `name`, skipping (or failing under CI) when absent.

    Fails the running test when ``name`` needs a marker (``TOOL_MARKERS``) that the test lacks,
    whether or not the tool is installed, so the marking is checked on every machine.
    """
    marker = marker_for_tool(name)
    if marker is not None:
        require_marker(marker, f"uses {name}")
    path = shutil.which(name)
    if path is None:
        skip_or_fail(f"{name} is not installed (see README.md set-up)")
    return path


def require_marker(marker: str, why: str) -> None:
    """Fail the running test unless it carries ``marker``; ``why`` says what needed it.

    Outside a test (collection, a script importing a helper) there is nothing to check.
    """
    if not _RUNNING:
        return
    item = _RUNNING[-1]
    if item.get_closest_marker(marker) is None:
        pytest.fail(f"{item.nodeid} {why}: it needs the `{marker}` marker (@pytest.mark.{marker}, or "
                    f"`pytestmark = pytest.mark.{marker}` for the module; tests/README.md#markers)", pytrace=False)


@contextmanager
def running(item: pytest.Item) -> Iterator[None]:
    """Make ``item`` the test whose markers ``require_marker`` checks (tests/conftest.py wraps
    each test's run protocol in this, fixtures included)."""
    _RUNNING.append(item)
    try:
        yield
    finally:
        _RUNNING.pop()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing): one process at a time,
    across the pytest-xdist workers of a run and any other run on the same checkout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this run that every pytest-xdist worker shares: the parent of the
    workers' own ones (the run's own one without xdist). pytest removes it with the run's others."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_dir(path: Path, make: Callable[[Path], object]) -> Path:
    """Folder ``path``, filled once per run by ``make(folder)`` in whichever worker asks first.

    Session fixtures run once per pytest-xdist worker; what they build (models, plans) can be
    built once for all of them: under a lock, into a scratch folder renamed into place, so the
    other workers wait and then reuse it, and a failed ``make`` leaves nothing half-made behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        if not path.is_dir():
            scratch = path.with_name(path.name + ".part")
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            make(scratch)
            scratch.rename(path)
    return path


_HOST_FAILURES: dict[bool, str] = {}  # pytest does not cache a failing fixture: build once, fail fast after


def host_library(sanitize: bool = False) -> Path:
    """``build/host[-san]/libtigris_host.so``, (re)built by ``scons host [sanitize=1]``.

    Every test that loads our runtime on the host goes through here: under a lock, because
    pytest-xdist workers would otherwise run ``scons host`` into the same folder at once (one
    builds, the others then find it up to date), and at most once per process.

    Development aid: ``TGR_TEST_LIBRARY=/path/libtigris_host.so`` skips the build and tests that
    library instead (e.g. one built from a snapshot while ``runtime/`` is mid-edit). The default,
    and what CI runs, is the ``scons host`` build.
    """
    override = os.environ.get("TGR_TEST_LIBRARY")
    if override:
        return Path(override).resolve(strict=True)
    require_tool("gcc")
    name = "host-san" if sanitize else "host"
    lib = REPO / "build" / name / "libtigris_host.so"
    if sanitize not in _HOST_FAILURES:
        cmd = [sys.executable, "-m", "SCons", "-Q", "-C", str(REPO), "host"] + (["sanitize=1"] if sanitize else [])
        with locked(REPO / "build" / f".{name}.lock"):
            r = subprocess.run(cmd, capture_output=True, text=True)
        ok = r.returncode == 0 and lib.is_file()
        _HOST_FAILURES[sanitize] = "" if ok else (f"{' '.join(cmd)} failed ({r.returncode}), {lib} missing or "
                                                  f"stale:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    if _HOST_FAILURES[sanitize]:
        pytest.fail(_HOST_FAILURES[sanitize], pytrace=False)
    return lib
