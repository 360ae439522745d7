"""One exception type for every user-facing failure.

The SCons layer turns :class:`TigrisError` into ``SCons.Errors.BuildError`` (inside actions) or
``SCons.Errors.UserError`` (while reading the SConstruct), so users see one clear line such as
``scons: *** [build/ds_cnn/ds_cnn.check.ok] DTCM over budget by 3,000 B`` instead of a traceback.
Keeping the type here (not in SCons) lets the pure modules raise it and the tests catch it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any


class TigrisError(Exception):
    """A failure the user can act on; ``str(err)`` is the complete, one-line explanation."""


def suggestion(key: str, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest allowed name, or nothing: strict files (model and
    part declarations) and command-line names refuse a misspelling and point at the fix."""
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    """Refuse a key outside ``allowed``: a misspelt setting silently ignored is one not applied."""
    for key in table:
        if key not in allowed:
            raise TigrisError(
                f"{where}: unknown key {key!r}{suggestion(key, allowed)}; allowed: {', '.join(sorted(allowed))}"
            )
