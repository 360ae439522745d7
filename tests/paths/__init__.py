"""Execution-path tests of our C runtime: every tiled path the reference takes, on our library."""
