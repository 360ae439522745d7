"""Shared test policy.

Tests that need an external tool (arm-none-eabi-gcc, qemu-system-arm, clang, the bundled
tigris host runtime) call `require_tool`. Outside CI a missing tool skips the test; with
CI=true it fails, because CI must run everything.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "site_scons"))
sys.path.insert(0, str(REPO))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def skip_or_fail(message: str) -> None:
    """Skip the test for something missing on this machine; under CI nothing may be skipped."""
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def require_tool(name: str) -> str:
    """Return the path of executable `name`, skipping (or failing under CI) when absent."""
    path = shutil.which(name)
    if path is None:
        skip_or_fail(f"{name} is not installed (see README.md set-up)")
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
