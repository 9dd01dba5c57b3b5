"""How much memory an experiment may take (every lab; DESIGN.md: never harm the reader's machine).

No experiment allocates more than a quarter of the memory that is free on its device, unless
running out is its point. Free memory is read when the question is asked, not at start-up.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.errors import GpulabConfigError

DEFAULT_FRACTION = 0.25
# When free memory cannot be read (an MPS build without the query), assume this much is free:
# small enough for any machine that runs a browser and Python.
UNKNOWN_FREE_BYTES = 2 * 1024**3


def free_bytes(device: Any) -> int | None:
    """Bytes free on the device now: VRAM for cuda/xpu, available RAM for cpu and mps."""
    import torch

    device = torch.device(device)
    try:
        if device.type == "cuda":
            return int(torch.cuda.mem_get_info(device)[0])
        if device.type == "xpu":
            props = torch.xpu.get_device_properties(device)
            return int(props.total_memory - torch.xpu.memory_reserved(device))
        # cpu, and mps (unified memory: the GPU allocates from the same RAM)
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def allowance(device: Any, fraction: float = DEFAULT_FRACTION) -> int:
    """Bytes an experiment may allocate on the device: `fraction` of what is free now."""
    if not 0 < fraction <= 1:
        raise GpulabConfigError(f"fraction={fraction!r} must be in (0, 1]")
    free = free_bytes(device)
    return int((free if free is not None else UNKNOWN_FREE_BYTES) * fraction)


def max_elements(device: Any, bytes_per_element: int, buffers: int = 1,
                 fraction: float = DEFAULT_FRACTION) -> int:
    """Largest element count per buffer such that `buffers` buffers fit the allowance."""
    if bytes_per_element < 1 or buffers < 1:
        raise GpulabConfigError("bytes_per_element and buffers must be positive integers")
    return allowance(device, fraction) // (bytes_per_element * buffers)


def fits(device: Any, nbytes: int, fraction: float = DEFAULT_FRACTION) -> bool:
    """Whether allocating `nbytes` stays within the allowance."""
    return nbytes <= allowance(device, fraction)
