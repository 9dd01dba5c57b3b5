"""Units and their display: byte multiples, and readable durations, rates and sizes.

The course uses decimal units where vendors do (a "24 GB" card, "1008 GB/s") and binary ones
where software reports memory (PyTorch's and NVML's byte counts, shown in GiB). Every module
takes its constants and its number formatting from here, so a GiB is the same everywhere.
"""

from __future__ import annotations

import re

from gpulab.core.validate import NonNegativeInt, checked

__all__ = [
    "GB",
    "GIB",
    "KIB",
    "MIB",
    "format_rate",
    "format_seconds",
    "keep_with_unit",
    "size_label",
]

KIB = 1024
MIB = 1024**2
GIB = 1024**3
GB = 1e9  # decimal gigabyte, as GPUs and disks are marketed


@checked
def format_seconds(seconds: float) -> str:
    """A duration with a readable unit: '1.23 ms', '45.6 us'."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


@checked
def format_rate(value: float | None, unit: str = "FLOP/s") -> str:
    """A rate with an SI prefix: '82.6 TFLOP/s', '1.01 TB/s'; 'unknown' for None."""
    if value is None:
        return "unknown"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


@checked
def size_label(nbytes: NonNegativeInt) -> str:
    """A buffer size in binary units: '64 MiB', '1.5 GiB', '512 B'."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


# A number, a space, and a unit the course prints: the space that a line may not break at.
_NUMBER_SPACE_UNIT = re.compile(
    r"(?<=\d) (?=(?:[kKMGTP]i?B|B|[kMGTP]?B/s|[GTP]FLOP/s|tokens/s|tok/s|k?W|[mµun]?s|%|bits?"
    r"|[GM]Hz|h|min)(?![\w/]))"
)
NO_BREAK_SPACE = "\u00a0"


@checked
def keep_with_unit(text: str) -> str:
    """`text` with a no-break space between each number and its unit ("24 GB" stays on a line)."""
    return _NUMBER_SPACE_UNIT.sub(NO_BREAK_SPACE, text)
