"""Single-op tests of our C runtime against the reference host runtime, byte for byte.

A package (module names ``ops.*``, with ``tests/`` on ``sys.path``) for the same reason as
``tests/runtime``: its ``conftest.py`` must not take the plain module name ``conftest``.
"""
