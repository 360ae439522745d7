"""Conformance of our runtime with the reference on tigris-ml's own per-op fixtures, and the
generated operator coverage table (docs/coverage.md)."""
