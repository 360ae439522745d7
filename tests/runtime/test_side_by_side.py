"""Two plans run side by side in one process, interleaved, with results equal to running each alone.

The runtime keeps no global state (test_warnings.py checks there is no writable static data);
this checks the consequence through the host library: sessions of different plans, opened at the
same time and run in alternation, neither disturb each other's outputs nor their peaks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.runtime.oracle import open_session


def _feeds(session, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i["name"]: rng.integers(-128, 128, i["shape"]).astype(i["dtype"]) for i in session.inputs}


def test_interleaved_sessions_match_separate_runs(our_library: Path, plan_cache) -> None:
    plans = [plan_cache.ds_cnn_plan("4K"), plan_cache.case_plan("inverted_residual", "17K")]
    alone = []
    for seed, plan in enumerate(plans):
        with open_session(plan, our_library) as s:
            alone.append((s.run(_feeds(s, seed)), s.memory["fast_peak_bytes"], s.memory["slow_peak_bytes"]))
    sessions = [open_session(plan, our_library) for plan in plans]
    try:
        for _ in range(3):
            for seed, s in enumerate(sessions):
                out = s.run(_feeds(s, seed))
                want, fast, slow = alone[seed]
                assert all(np.array_equal(out[k], want[k]) for k in want), f"{plans[seed]}: outputs changed"
                assert (s.memory["fast_peak_bytes"], s.memory["slow_peak_bytes"]) == (fast, slow)
    finally:
        for s in sessions:
            s.close()
