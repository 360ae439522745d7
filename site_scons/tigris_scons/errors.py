"""One exception type for every user-facing failure.

The SCons layer turns :class:`TigrisError` into ``SCons.Errors.BuildError`` (inside actions) or
``SCons.Errors.UserError`` (while reading the SConstruct), so users see one clear line such as
``scons: *** [build/ds_cnn/ds_cnn.check.ok] DTCM over budget by 3,000 B`` instead of a traceback.
Keeping the type here (not in SCons) lets the pure modules raise it and the tests catch it.
"""

from __future__ import annotations


class TigrisError(Exception):
    """A failure the user can act on; ``str(err)`` is the complete, one-line explanation."""
