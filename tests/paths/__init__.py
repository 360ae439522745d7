"""Execution-path tests of our C runtime: every tiled path the reference takes, on our library.

A package (module names ``paths.*``, with ``tests/`` on ``sys.path``) for the same reason as
``tests/runtime``: its ``conftest.py`` must not take the plain module name ``conftest``.
"""
