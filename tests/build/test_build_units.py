"""Sizes as people write them: strict parsing (powers of 1024), exact printing."""

from __future__ import annotations

import pytest

from tigris_scons.errors import TigrisError
from tigris_scons.units import fmt_bytes, fmt_kib, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20480", 20480), (20480, 20480), ("20K", 20480), ("20k", 20480), ("20KiB", 20480), ("20 KiB", 20480),
        ("1M", 1 << 20), ("1MiB", 1 << 20), ("2G", 2 << 30), ("512B", 512), ("0.5K", 512), (" 64K ", 65536),
    ],
)
def test_parse_size_accepts_bytes_and_binary_units(text, expected):
    assert parse_size(text) == expected


def test_bare_numbers_use_the_default_unit():
    assert parse_size("24", default_unit=1024) == 24 * 1024
    assert parse_size(24, default_unit=1024) == 24 * 1024
    assert parse_size("24K", default_unit=1024) == 24 * 1024  # an explicit unit wins


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("20KB", "ambiguous"), ("1MB", "ambiguous"), ("20X", "unknown unit 'X'"), ("twenty", "cannot read"),
        ("-5", "cannot read"), ("0.3K", "whole number"), (True, "expected a size"), (1.5, "expected a size"),
        (-1, "negative"),
    ],
)
def test_parse_size_rejects_with_a_message_naming_the_setting(text, fragment):
    with pytest.raises(TigrisError) as err:
        parse_size(text, what="model.toml: part.sram")
    assert "model.toml: part.sram" in str(err.value)
    assert fragment in str(err.value)


def test_formatting_is_exact_bytes_plus_a_kib_aid():
    assert fmt_bytes(19384) == "19,384 B"
    assert fmt_kib(20480) == "20.0 KiB"
    assert fmt_kib(2 << 20) == "2.0 MiB"
    assert fmt_kib(2 << 30) == "2.0 GiB"
