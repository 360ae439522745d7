"""Pure-Python core of the tigris SCons tools.

Nothing in this package imports SCons: every check the build performs is a function of files
(plan, ELF, run log, model declaration) so it can be unit-tested with pytest and reused outside
SCons. The thin tool modules in ``site_scons/site_tools/`` only wire these functions into targets.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"


def toolpath() -> str:
    """Directory holding the SCons tool modules, for ``env.Tool('tigris', toolpath=[...])``."""
    return str(Path(__file__).resolve().parent.parent / "site_tools")
