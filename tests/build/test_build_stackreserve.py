"""The main stack a firmware reserves and what ``<m>.stack.json`` records (tigris_scons/stackreserve.py)."""

from __future__ import annotations

from tigris_scons import stackreserve
from tigris_scons.firmware import DEFAULT_STACK_BYTES
from tigris_scons.stackuse import reserve_for

ANALYSIS = {"worst_bytes": 1_440, "handler_bytes": 108, "path": ["main"]}


def test_auto_reserves_the_worst_case_plus_the_margin():
    document = stackreserve.analysed(ANALYSIS, None, "b/m.stack-probe.elf")
    assert document["reserved_bytes"] == reserve_for(1_440) > 1_440 and document["reserved_bytes"] % 8 == 0
    assert document["auto"] and document["elf"] == "b/m.stack-probe.elf" and document["path"] == ["main"]


def test_a_declared_stack_is_kept_even_below_the_worst_case():
    document = stackreserve.analysed(ANALYSIS, 1_024, "b/m.stack-probe.elf")
    assert (document["reserved_bytes"], document["auto"], document["worst_bytes"]) == (1_024, False, 1_440)


def test_a_selftest_build_has_no_bound_and_a_fixed_reservation():
    assert stackreserve.selftest(None, "e") == {"worst_bytes": None, "reserved_bytes": DEFAULT_STACK_BYTES,
                                                "auto": False, "skipped": stackreserve.SELFTEST_SKIP, "elf": "e"}
    assert stackreserve.selftest(4_096, "e")["reserved_bytes"] == 4_096


def test_the_final_link_reads_the_reservation():
    assert stackreserve.link_response({"reserved_bytes": 1_656}) == "-Wl,--defsym=__stack_size=1656\n"
