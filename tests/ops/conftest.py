"""Fixtures every tests/ops module shares: our host library, built once per session, and a
scratch folder per module for the models and plans it compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ops.models_data import our_library


@pytest.fixture(scope="session")
def lib() -> Path:
    return our_library()


@pytest.fixture(scope="module")
def work(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_"))
