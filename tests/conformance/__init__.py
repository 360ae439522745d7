"""Conformance of our runtime with the reference on tigris-ml's own per-op fixtures, and the
generated operator coverage table (docs/coverage.md).

A package (module names ``conformance.*``, with ``tests/`` on ``sys.path``) for the same reason as
``tests/runtime``: its ``conftest.py`` must not take the plain module name ``conftest``.
"""
