"""DetectionPostProcess against the reference host runtime: float32 detections of an int8 plan.

The sdist's ``detection_fast`` and ``detection_regular`` are the plans tigris-ml writes; these
tests also edit them in place (anchors, score and IoU thresholds, decoding scales, classes with
and without a background column, detections per class of the fast form) and compare every output
byte over many random inputs, whose int8 scores tie often, so the order of equal scores is
exercised. Each attribute edit the reference refuses is refused by ours.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from tests.ops.models_data import fixture_plan, refused_by_both

pytest.importorskip("tigris.runtime")

DETECTION_ATTR = 18
FIXTURES = ("detection_fast", "detection_regular")


def _layout(plan: Path) -> tuple[bytes, int, tuple[int, int], float]:
    """(plan bytes, offset of the DETECTION payload, (offset, size) of the anchors, score scale)."""
    from tigris.emitters.binary.reader import read_binary_plan

    data = plan.read_bytes()
    parsed = read_binary_plan(data)
    (attr,) = [a["data"] for a in parsed["op_attributes"] if a["type"] == DETECTION_ATTR]
    assert data.count(attr) == 1
    (weight,) = parsed["weights"]
    return data, data.find(attr), (weight["blob_base"] + weight["offset"], weight["size_bytes"]), \
        parsed["quant_params"][1]["scale"]


def _compare(plan: Path, lib: Path, runs: int, seed: int) -> set[bytes]:
    from tests.runtime.oracle import open_session

    rng = np.random.default_rng(seed)
    counts = set()
    with open_session(plan, None) as reference, open_session(plan, lib) as ours:
        for run in range(runs):
            feeds = {spec["name"]: rng.integers(-128, 128, size=spec["shape"]).astype(np.int8)
                     for spec in reference.inputs}
            expected, got = reference.run(feeds), ours.run(feeds)
            for key in expected:
                assert expected[key].dtype == np.float32
                assert got[key].tobytes() == expected[key].tobytes(), f"{plan.name} run {run}: {key} differs"
            counts.add(expected[list(expected)[-1]].tobytes())
    return counts


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_the_reference(name: str, work: Path, lib: Path) -> None:
    counts = _compare(fixture_plan(name, work), lib, runs=200, seed=3)
    assert len(counts) > 1  # some inputs keep fewer detections than the maximum


@pytest.mark.parametrize("name", FIXTURES)
def test_edited_variants_match_the_reference(name: str, work: Path, lib: Path) -> None:
    data, attr, (anchors_at, anchors_size), score_scale = _layout(fixture_plan(name, work))
    regular = name.endswith("regular")
    rng = np.random.default_rng(41)
    counts = set()
    for trial in range(40):
        buf = bytearray(data)
        # the working memory the plan holds fixes the regular form's detections per class
        per_class = 3 if regular else int(rng.integers(1, 20))
        threshold = (float(np.float32(score_scale) * np.float32(int(rng.integers(-10, 250))))
                     if trial % 2 else float(rng.uniform(0, 1)))  # half exactly on a score value
        struct.pack_into("<HH2B6f", buf, attr + 2, per_class, int(rng.choice([3, 4])), int(regular), 0, threshold,
                         float(rng.choice([0.1, 0.3, 0.45, 0.7, 1.0])),
                         *(float(rng.choice([1.0, 5.0, 10.0, 0.3, 7.7, -2.0])) for _ in range(4)))
        if trial % 3:
            buf[anchors_at:anchors_at + anchors_size] = rng.uniform(0, 1, anchors_size // 4).astype(np.float32).tobytes()
        plan = work / f"{name}_variant.tgrs"
        plan.write_bytes(bytes(buf))
        counts |= _compare(plan, lib, runs=25, seed=trial)
    assert len(counts) > 3


@pytest.mark.parametrize("field, value, fmt", [
    (0, 7, "<H"),                       # max detections against the outputs
    (4, 2, "<H"),                       # classes against the score columns
    (4, 0, "<H"),
    (6, 1, "<B"),                       # regular NMS: the working memory no longer matches
    (6, 2, "<B"),
    (7, 1, "<B"),                       # the padding byte
    (8, float("nan"), "<f"),            # score threshold
    (12, 0.0, "<f"),                    # IoU threshold outside (0, 1]
    (12, 1.01, "<f"),
    (16, 0.0, "<f"),                    # a decoding scale
    (28, float("inf"), "<f"),
])
def test_attribute_edits_are_refused_like_the_reference(field: int, value, fmt: str, work: Path, lib: Path) -> None:
    data, attr, _, _ = _layout(fixture_plan("detection_fast", work))
    buf = bytearray(data)
    struct.pack_into(fmt, buf, attr + field, value)
    message = refused_by_both(lib, bytes(buf), work / f"detection_attr_{field}.tgrs")
    assert "(DetectionPostProcess)" in message, message
