"""What the build decides about a firmware before it renders ``main.c`` (tigris_scons/firmware.py):
the fast arena, ``tgr_plan_needs``' arguments, the refusals of ``main_context`` and the runtime
library's variant folder."""

from __future__ import annotations

import hashlib

import pytest

from tigris_scons.errors import TigrisError
from tigris_scons.firmware import FirmwareParams, fast_arena_bytes, main_context, needs_arguments, runtime_variant
from tigris_scons.plan import IoTensor, PlanInfo

PLAN = PlanInfo(version=10, file_size=4_096, num_tensors=3, num_ops=1, num_stages=1, num_tile_plans=0, budget=16_000,
                peak=16_000, model_name="m", flags=0, inputs=(IoTensor("x", 0, 3, (1, 8), 8),),
                outputs=(IoTensor("y", 2, 3, (1, 4), 4),), weight_block_sizes=((0, 100),))
NEEDS = "op 1 Conv\npath 0 normal\nlz4 1\nslow_peak 512\n"
PLAN_BYTES = b"TGRS" + bytes(60)


def params(**changes) -> FirmwareParams:
    return FirmwareParams(**({"model_name": "m", "fast_arena": None, "slow_arena": None, "slow_in_ddr": False,
                              "seed": 1, "tensor_align": 16} | changes))


def test_the_fast_arena_is_the_declared_size_else_what_the_plan_needs():
    assert fast_arena_bytes(None, PLAN, 16) == 16_000 + 112  # budget + the LZ4 block rounded to 16
    assert fast_arena_bytes(None, PLAN, 32) == 16_000 + 128
    assert fast_arena_bytes(20_480, PLAN, 16) == 20_480


def test_plan_needs_is_asked_about_the_arenas_the_firmware_will_have():
    assert needs_arguments(None, None, PLAN, 16) == ["16112", "auto"]
    assert needs_arguments(24_576, 4_096, PLAN, 16) == ["24576", "4096"]


def test_the_context_takes_the_slow_arena_the_run_uses_and_no_digest_by_default():
    context = main_context(params(), PLAN, PLAN_BYTES, NEEDS)
    assert (context["fast_arena_bytes"], context["slow_arena_bytes"], context["plan_digest"]) == (16_112, 512, None)


def test_validate_digest_binds_the_plans_digest():
    context = main_context(params(validate="digest"), PLAN, PLAN_BYTES, NEEDS)
    assert context["plan_digest"] == hashlib.sha256(PLAN_BYTES).hexdigest()


def test_validate_digest_refuses_a_plan_the_runtime_refuses():
    with pytest.raises(TigrisError, match=r"^validate=digest: the runtime refuses this plan on the host, so no "
                                          r"firmware may bind it unchecked: op 9 \(Div\) unsupported$"):
        main_context(params(validate="digest"), PLAN, PLAN_BYTES, "error op 9 (Div) unsupported\n")
    refused = main_context(params(), PLAN, PLAN_BYTES, "error op 9 (Div) unsupported\n")  # the firmware says it
    assert refused["slow_arena_bytes"] == 0


def test_a_fast_arena_below_the_plans_need_is_refused_with_what_to_raise():
    with pytest.raises(TigrisError, match=r"fast arena 16000 B is smaller than the plan needs \(16112 B = budget "
                                          r"16000 B \+ weight reserve\); raise fast_kb="):
        main_context(params(fast_arena=16_000), PLAN, PLAN_BYTES, NEEDS)
    assert main_context(params(fast_arena=16_112), PLAN, PLAN_BYTES, NEEDS)["fast_arena_bytes"] == 16_112


def test_the_runtime_variant_names_every_option_that_changes_its_objects():
    plain = dict(messages=True, mve=False, profile=False, stage_memory=False)
    assert runtime_variant("cm55", 16, **plain) == "cm55/runtime-a16"
    assert runtime_variant("cm4", 32, **plain) == "cm4/runtime-a32"
    assert runtime_variant("cm55", 16, messages=False, mve=True, profile=True, stage_memory=True) == \
        "cm55/runtime-a16-m0-mve-prof-smem"
