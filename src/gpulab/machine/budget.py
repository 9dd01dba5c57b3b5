"""How much memory an experiment may take (every lab; DESIGN.md: never harm the reader's machine).

No experiment allocates more than a quarter of the memory that is free on its device, unless
running out is its point. Free memory is read when the question is asked, not at start-up.
"""

from __future__ import annotations

from typing import Annotated, Any

from gpulab.core.validate import Between, NonNegativeFloat, PositiveInt, checked

DEFAULT_FRACTION = 0.25
Share = Annotated[float, Between(0, 1, low_open=True)]  # more than none, at most all
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


@checked
def allowance(device: Any, fraction: Share = DEFAULT_FRACTION) -> int:
    """Bytes an experiment may allocate on the device: `fraction` of what is free now."""
    free = free_bytes(device)
    return int((free if free is not None else UNKNOWN_FREE_BYTES) * fraction)


@checked
def max_elements(device: Any, bytes_per_element: PositiveInt, buffers: PositiveInt = 1,
                 fraction: Share = DEFAULT_FRACTION) -> int:
    """Largest element count per buffer such that `buffers` buffers fit the allowance."""
    return allowance(device, fraction) // (bytes_per_element * buffers)


@checked
def fits(device: Any, nbytes: NonNegativeFloat, fraction: Share = DEFAULT_FRACTION) -> bool:
    """Whether allocating `nbytes` stays within the allowance."""
    return nbytes <= allowance(device, fraction)
