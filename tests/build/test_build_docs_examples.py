"""The example outputs in README.md and docs/ equal what this checkout prints now.

Each marked block (``<!-- example: NAME -->``, docs/examples.py) is produced again from a fresh
build in a private folder and compared line for line; the fit sweep's and the boards' blocks are
compared in test_build_fit.py and test_build_boards.py, on the runs those modules make anyway. A
failure shows the diff and the command that regenerates the blocks.
"""

from __future__ import annotations

import pytest

from docs import examples
from tests.build.build_helpers import Scons
from tests.support import REPO, require_tool

pytestmark = [pytest.mark.scons, pytest.mark.qemu]

#: Compared where the sweep and the board runs already happen (test_build_fit.py, test_build_boards.py).
ELSEWHERE = {"ds-cnn-fit", "ds-cnn-boards"}


@pytest.fixture(scope="module")
def current(tmp_path_factory) -> examples.Examples:
    require_tool("arm-none-eabi-gcc")
    require_tool("qemu-system-arm")
    return examples.Examples(Scons(REPO), tmp_path_factory.mktemp("examples") / "build")


@pytest.mark.parametrize("block", [b for b in examples.blocks() if b.name not in ELSEWHERE],
                         ids=lambda b: f"{b.document.name}:{b.name}")
def test_the_example_equals_a_fresh_run(current: examples.Examples, block: examples.Block) -> None:
    now = current.produce(block.name)
    assert block.text == now, (f"{block.document.name}: example {block.name} differs from what the code prints; "
                               "regenerate with: .venv/bin/python docs/examples.py --write")
