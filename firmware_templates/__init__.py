"""Bare-metal Cortex-M55 (QEMU mps3-an547) firmware templates; see README.md and contract.py."""
