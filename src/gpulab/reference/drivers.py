"""NVIDIA's CUDA toolkit -> minimum driver table, with its sources (set-up page, chapter 5).

The table lives in ``data/cuda_driver_minimums.json``, transcribed from NVIDIA's CUDA release
notes (Table 2: the driver each toolkit release shipped with; Table 3: the minimum for minor
version compatibility within a major version). The doctor, chapter 5 and the fact-check read
it from here.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Annotated, Any

from gpulab.core.validate import OneOf, checked, lenient

__all__ = ["OS_FAMILIES", "load_driver_table", "required_drivers", "version_tuple"]

OS_FAMILIES = ("linux", "windows")


@lenient("reads any version text a driver reports")
def version_tuple(version: str) -> tuple[int, ...]:
    """Turn "550.54.14" into (550, 54, 14) so that versions compare numerically."""
    return tuple(int(part) for part in re.findall(r"\d+", str(version)))


@functools.lru_cache(maxsize=1)
def load_driver_table() -> dict[str, Any]:
    """Load NVIDIA's CUDA toolkit -> minimum driver table shipped in ``gpulab/data``."""
    path = resources.files("gpulab") / "data" / "cuda_driver_minimums.json"
    return json.loads(path.read_text(encoding="utf-8"))


@checked
def required_drivers(
    cuda_version: str, os_family: Annotated[str, OneOf(OS_FAMILIES, "OS family")]
) -> tuple[str | None, str | None]:
    """Return (minor-version-compatibility minimum of the major, the toolkit's own driver).

    ``os_family`` is "linux" or "windows"; either value is None where NVIDIA publishes none.
    """
    table = load_driver_table()
    parts = version_tuple(cuda_version)
    if not parts:
        return None, None
    major = parts[0]
    compat = next(
        (
            row.get(os_family)
            for row in table["minor_version_compatibility"]
            if row["major"] == major
        ),
        None,
    )
    wanted = parts[:2]
    toolkit = [
        row[os_family]
        for row in table["toolkit_drivers"]
        if version_tuple(row["cuda"])[:2] == wanted and row.get(os_family)
    ]
    # The GA release has the lowest driver of a minor version; updates only raise it.
    return compat, min(toolkit, key=version_tuple) if toolkit else None
