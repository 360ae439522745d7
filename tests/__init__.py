"""The test suite (tests/README.md): a package, so that every helper module has one importable
name from the repository root (``tests.support``, ``tests.build.build_helpers``,
``tests.ops.models_data``, ...) and no folder's ``conftest.py`` shadows another's."""
