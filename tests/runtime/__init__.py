"""Tests of our C runtime (``runtime/``) against the bundled tigris-ml reference host runtime."""
