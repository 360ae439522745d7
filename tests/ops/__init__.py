"""Single-op tests of our C runtime against the reference host runtime, byte for byte."""
