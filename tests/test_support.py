"""The test suite's own rules (tests/support.py, tests/build/build_helpers.py): which marker a tool
or an SCons command needs, and that a test without it fails instead of running unmarked."""

from __future__ import annotations

import pytest

from tests.build.build_helpers import markers_for
from tests.support import marker_for_tool, require_marker, require_tool


@pytest.mark.parametrize(("tool", "marker"), [("qemu-system-arm", "qemu"), ("arm-none-eabi-gcc", "cross"),
                                              ("arm-none-eabi-nm", "cross"), ("gcc", None), ("clang", None)])
def test_each_tool_names_its_marker(tool: str, marker: str | None) -> None:
    assert marker_for_tool(tool) == marker


@pytest.mark.parametrize(("args", "markers"), [
    (("model=ds_cnn", "build_dir=/b", "run"), ("scons", "cross", "qemu")),
    (("model=ds_cnn", "fit"), ("scons", "cross", "qemu")),
    (("run-ds_cnn",), ("scons", "cross", "qemu")),
    (("model=ds_cnn", "build_dir=/b"), ("scons", "cross")),
    (("model=ds_cnn", "size"), ("scons", "cross")),
    (("-h", "model=nothing"), ("scons",)),
    (("-c",), ("scons",)),
    (("host",), ("scons",)),
])
def test_an_scons_command_names_the_markers_it_needs(args: tuple[str, ...], markers: tuple[str, ...]) -> None:
    assert markers_for(args) == markers


def test_a_test_without_the_marker_fails_whether_or_not_the_tool_is_installed() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"uses qemu-system-arm: it needs the `qemu` marker"):
        require_tool("qemu-system-arm")
    with pytest.raises(pytest.fail.Exception, match=r"runs scons: it needs the `scons` marker"):
        require_marker("scons", "runs scons")


@pytest.mark.cross
def test_a_marked_test_passes_the_check() -> None:
    require_marker("cross", "compiles for Cortex-M")  # no failure: the marker is there
