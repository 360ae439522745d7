"""Control flow as firmware on QEMU: the sdist's If and While models end to end.

``if_conv`` (an If on the sign of the input's sum) is declared twice with input seeds that take
each branch (found on the host: the seed's generated input run through the reference with a
trace), ``while_conv`` (a counted While around a Conv) once; the build's check compares every
output with the reference on the same input. The firmware's static stack bound covers the one
re-entry of the unit runner through the control path (stack.json's worst path enters it twice).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.build.build_helpers import Scons, plan_model_toml
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]


@pytest.fixture(autouse=True)
def _tools():
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")


def _branch_stage(plan: Path, seed: int) -> int:
    """The first subgraph stage the reference runs on the firmware's input for `seed`."""
    from tests.runtime.oracle import _traced_run, open_session
    from tigris_scons.inputs import generate_inputs
    from tigris_scons.plan import read_plan

    info = read_plan(plan)
    raw = generate_inputs(info.inputs, seed)
    with open_session(plan, None) as reference:
        feeds = {s["name"]: np.frombuffer(b, np.dtype(s["dtype"])).reshape(s["shape"])
                 for s, b in zip(reference.inputs, raw)}
        stages = [e["stage"] for e in _traced_run(reference, feeds).events if e["kind"] == "stage_begin"]
    return next(s for s in stages if s >= 3)  # graph 0 is stages 0..2 in both fixtures


def test_if_and_while_models_match_the_reference_on_qemu(tmp_path: Path) -> None:
    from tests.ops.models_data import fixture_plan

    if_plan = fixture_plan("if_conv", tmp_path)
    while_plan = fixture_plan("while_conv", tmp_path)
    seeds: dict[int, int] = {}
    for seed in range(1, 200):
        seeds.setdefault(_branch_stage(if_plan, seed), seed)
        if len(seeds) == 2:
            break
    assert len(seeds) == 2, f"no seed takes the other branch: {seeds}"
    names = []
    for stage, seed in sorted(seeds.items()):
        name = f"if_branch_stage{stage}"
        plan_model_toml(tmp_path / "models", name, if_plan, f"seed = {seed}\n")
        names.append(str(tmp_path / "models" / name))
    build = tmp_path / "build"
    done = Scons(REPO)("-j2", f"model={','.join(names + [str(while_plan)])}", f"build_dir={build}", "run")
    for name in [Path(n).name for n in names] + [while_plan.stem]:
        assert f"result: ok ({name})" in done.stdout, name
    stack = json.loads((build / while_plan.stem / f"{while_plan.stem}.stack.json").read_text())
    path = [frame["name"] for frame in stack["reset_path"]]
    assert stack["reserved_bytes"] >= stack["worst_bytes"] > 0
    assert path.count("tgr_run_unit") == 2, f"the worst path does not re-enter the unit runner once: {path}"
