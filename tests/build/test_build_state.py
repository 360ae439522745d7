"""Stateful models as firmware on QEMU: SVDF and LSTM layers run several inferences in a row.

The sdist's ``svdf``, ``svdf_batch``, ``lstm`` and ``lstm_time_major_clip`` are built by path (3
inferences, the default for a plan with state variables) and ``svdf`` declared with
``[run] runs = 5``; the firmware keeps the state
in its static buffer, prints RUN lines for every inference but the last, and the build's check
compares each with the reference's run of the same inputs on one session, in order. A plan
without state runs once, and its firmware has no state buffer and links no state copies.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.build.build_helpers import Scons, plan_model_toml
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def test_stateful_models_run_inferences_in_a_row_on_qemu(tmp_path: Path) -> None:
    from tests.ops.models_data import fixture_plan
    from tigris_scons.runlog import parse_run_log

    svdf = fixture_plan("svdf", tmp_path)
    batch = fixture_plan("svdf_batch", tmp_path)
    lstms = [fixture_plan(name, tmp_path) for name in ("lstm", "lstm_time_major_clip")]
    gather = fixture_plan("gather_runtime", tmp_path)  # no state
    plan_model_toml(tmp_path / "models", "svdf_five", svdf, "runs = 5\n")
    build = tmp_path / "build"
    models = [str(svdf), str(batch), str(tmp_path / "models" / "svdf_five"), *map(str, lstms), str(gather)]
    done = Scons(REPO)("-j2", f"model={','.join(models)}", f"build_dir={build}", "run")
    for name, runs in ((svdf.stem, 3), (batch.stem, 3), ("svdf_five", 5), (lstms[0].stem, 3), (lstms[1].stem, 3),
                       (gather.stem, 1)):
        assert f"result: ok ({name})" in done.stdout, name
        log = parse_run_log((build / name / f"{name}.run.log").read_text())
        assert log.complete, log.problems
        assert sorted(log.earlier_runs) == list(range(runs - 1)), name
        main_c = (build / name / "main.c").read_text()
        assert f"#define FW_RUNS {runs}u" in main_c
        assert ("#define FW_STATE_BYTES 0u" in main_c) == (name == gather.stem)
        # the state copies are linked exactly into the firmwares whose plans keep state
        symbols = subprocess.run([require_tool("arm-none-eabi-nm"), str(build / name / f"{name}.elf")],
                                 capture_output=True, text=True, check=True).stdout
        assert (" tgr_full_state_in" in symbols) == (name != gather.stem), name
        assert " tgr_full_bind_graphs" not in symbols, name
