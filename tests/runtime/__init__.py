"""Tests of our C runtime (``runtime/``) against the bundled tigris-ml reference host runtime.

A package (module names ``runtime.*``, with ``tests/`` on ``sys.path``) so that this folder's
``conftest.py`` does not take the plain module name ``conftest``, which ``tests/conftest.py``
owns and other test modules import from (``from conftest import require_tool``).
"""
