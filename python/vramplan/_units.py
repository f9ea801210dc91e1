"""Byte units and their display, once for the package: sizes are int bytes everywhere, GiB only
in text."""

from __future__ import annotations

MIB = 1 << 20
GIB = 1 << 30


def gib_text(value_bytes: float, width: int = 0) -> str:
    """Bytes as GiB for display, "12.50 GiB" (the number right-aligned in `width` characters)."""
    return f"{value_bytes / GIB:>{width}.2f} GiB"
