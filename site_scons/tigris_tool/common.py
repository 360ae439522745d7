"""What every part of the tigris tool shares: settings as signed Value nodes, progress lines,
one-write console output, and the wrapper that turns a function into an action with clean errors."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import SCons.Errors
import SCons.Node

from tigris_scons.errors import TigrisError

#: The tool only ever sets construction variables with this prefix.
PREFIX = "TIGRISBUILD_"
#: ``site_scons/``: the folder holding the pure package and this one.
SITE = Path(__file__).resolve().parents[1]


def _package_digest() -> str:
    """Hash of the pure-Python package: editing a check rule re-runs the checks.

    SCons signs a function action by its own bytecode only; the rules live in ``tigris_scons``,
    so its sources are folded into the targets' signatures explicitly.
    """
    digest = hashlib.sha256()
    for path in sorted((SITE / "tigris_scons").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


PACKAGE_DIGEST = _package_digest()


def fail(target: list, message: str) -> NoReturn:
    """Raise the error SCons prints as ``scons: *** [target] message`` (exit status 2)."""
    raise SCons.Errors.BuildError(node=target[0] if target else None, errstr=message)


def action(fn: Callable) -> Callable:
    """Wrap a function action so a :class:`TigrisError` becomes a clean ``BuildError``."""

    def run(target, source, env):
        try:
            return fn(target, source, env)
        except TigrisError as exc:
            fail(target, str(exc))
        except ImportError as exc:  # scons started from a Python without our requirements
            fail(target, f"Python package {exc.name or exc} is not installed for {sys.executable}: "
                         "run ./setup.sh (or pip install -r requirements.txt) and use that environment's scons")

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def value(env, obj: Any, code: bool = True) -> SCons.Node.Node:
    """A canonical Value node (sorted-key JSON) so equal settings give equal signatures.

    With ``code`` the Value also carries the package digest, so a change to the code that
    produces a target (rendering, size map, checks) counts as a change of that target's inputs.
    """
    return env.Value(json.dumps({"params": obj, "code": PACKAGE_DIGEST if code else None}, sort_keys=True))


def params(node) -> dict[str, Any]:
    """The settings a :func:`value` node carries."""
    return json.loads(node.read())["params"]


def read_json(node) -> Any:
    """The JSON document a file node holds."""
    return json.loads(Path(node.get_abspath()).read_text(encoding="utf-8"))


def write(text: str) -> None:
    """Print ``text`` with one write so parallel jobs never interleave it."""
    sys.stdout.write(text)
    sys.stdout.flush()


def quiet(env, label: str, what: str = "$TARGET") -> str:
    """Short progress line; with ``verbose`` every target and source is named."""
    return f"{label} $TARGETS <- $SOURCES" if env.get(PREFIX + "VERBOSE") else f"{label} {what}"


def tail(text: str, lines: int = 3) -> str:
    """The last non-empty lines of a child's output, joined: the part of an error worth a line."""
    rows = [r for r in text.strip().splitlines() if r.strip()]
    return " | ".join(rows[-lines:])
