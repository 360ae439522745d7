"""DetectionPostProcess as firmware on QEMU: float32 detections of an int8 plan.

The sdist's ``detection_fast`` and ``detection_regular`` are built by path; the firmware hands
the four float32 outputs (boxes, classes, scores, count) over as stored, and the build's check
compares their bytes with the reference's run of the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def test_detection_models_match_the_reference_on_qemu(tmp_path: Path) -> None:
    from tests.ops.models_data import fixture_plan
    from tigris_scons.runlog import parse_run_log

    plans = [fixture_plan(name, tmp_path) for name in ("detection_fast", "detection_regular")]
    build = tmp_path / "build"
    done = Scons(REPO)("-j2", f"model={','.join(map(str, plans))}", f"build_dir={build}", "run")
    for plan in plans:
        name = plan.stem
        assert f"result: ok ({name})" in done.stdout, name
        log = parse_run_log((build / name / f"{name}.run.log").read_text())
        assert log.complete, log.problems
        # boxes [1, 8, 4], classes, scores [1, 8] and the count [1], 4 bytes each
        assert [len(data) for _, data in (log.output_bytes[i] for i in sorted(log.output_bytes))] == [128, 32, 32, 4]
