"""Fixtures for the path tests: the ones of ``tests/runtime/conftest.py``, imported, not copied.

``our_library`` (``scons host``, or ``$TGR_TEST_LIBRARY``), ``plan_cache`` (each model built and
each plan compiled once per session) and ``n_inputs`` behave exactly as documented there.
``path_inputs`` is the number of random inputs per (case, budget): ``n_inputs`` but at least 5.
"""

from __future__ import annotations

import pytest

from tests.runtime.conftest import n_inputs, our_library, plan_cache  # noqa: F401

MIN_INPUTS = 5


@pytest.fixture(scope="session")
def path_inputs(n_inputs: int) -> int:  # noqa: F811
    return max(MIN_INPUTS, n_inputs)
