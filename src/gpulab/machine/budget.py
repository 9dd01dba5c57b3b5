"""What memory an experiment may take (every lab; docs/design.md: never harm the reader's machine).

No experiment allocates more than a quarter of the memory that is free on its device, unless
running out is its point. Free memory is read when the question is asked, not at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from gpulab.core.constraints import did_you_mean, show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import Between, NonNegativeFloat, PositiveInt, checked
from gpulab.machine.nvml import MAX_GPUS
from gpulab.machine.torch_probe import TorchModule, call

if TYPE_CHECKING:  # imported where a device is used
    import torch

__all__ = [
    "DEFAULT_FRACTION",
    "UNKNOWN_FREE_BYTES",
    "Share",
    "allowance",
    "devices_here",
    "existing_device",
    "fits",
    "free_bytes",
    "max_elements",
]

DEFAULT_FRACTION = 0.25
Share = Annotated[float, Between(0, 1, low_open=True)]  # more than none, at most all
# When free memory cannot be read (an MPS build without the query), assume this much is free:
# small enough for any machine that runs a browser and Python.
UNKNOWN_FREE_BYTES = 2 * 1024**3


@checked
def free_bytes(device: torch.device | str) -> int | None:
    """Bytes free on the device now: VRAM for cuda/xpu, available RAM for cpu and mps."""
    import torch

    try:
        device = torch.device(device)
    except (RuntimeError, ValueError) as exc:  # "banana": torch's message lists its backends
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise GpulabConfigError(
            f"device={show(device)} is not a device torch knows ({first})", "device"
        ) from None
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
def devices_here(torch: TorchModule) -> list[str]:
    """The device names this machine has: "cpu", then "cuda" and "cuda:N", "mps", "xpu" ..."""
    names = ["cpu"]
    for kind, module in (("cuda", torch.cuda), ("xpu", getattr(torch, "xpu", None))):
        count = (
            call(module.device_count, 0)
            if module is not None and call(module.is_available, False)
            else 0
        )
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            names += [kind, *(f"{kind}:{i}" for i in range(min(count, MAX_GPUS)))]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and call(mps.is_available, False):
        names.append("mps")
    return names


@checked
def existing_device(device: torch.device | str) -> Any:
    """``device`` (a name or a torch.device) as a torch.device of this machine, else an error."""
    import torch

    here = devices_here(torch)
    parsed = None
    if isinstance(device, torch.device):
        parsed = device
    elif isinstance(device, str):
        try:
            parsed = torch.device(device.strip())
        except Exception:  # torch's own message lists every backend it was built to know
            parsed = None
    # torch.device("cuda") has no index and means the current GPU: it exists if any does;
    # "cpu:0" and "mps:0" are the one CPU and the one Apple GPU
    name = None if parsed is None else parsed.type if parsed.type in ("cpu", "mps") else str(parsed)
    if name is None or name not in here:
        guess = did_you_mean(str(device).strip(), here) if isinstance(device, str) else None
        hint = f" (did you mean {guess!r}?)" if guess else ""
        raise GpulabConfigError(
            f"device={show(device)} is not allowed: no such device on this machine{hint}; it "
            f"has {', '.join(repr(n) for n in here)} (use one of these names, or a torch.device).",
            "device",
        )
    return parsed


@checked
def allowance(device: torch.device | str, fraction: Share = DEFAULT_FRACTION) -> int:
    """Bytes an experiment may allocate on the device: `fraction` of what is free now."""
    # A device this machine does not have is the caller's mistake: an allowance for it would
    # be a made-up figure (a CPU machine answered 512 MiB for "cuda:7").
    free = free_bytes(existing_device(device))
    return int((free if free is not None else UNKNOWN_FREE_BYTES) * fraction)


@checked
def max_elements(
    device: torch.device | str,
    bytes_per_element: PositiveInt,
    buffers: PositiveInt = 1,
    fraction: Share = DEFAULT_FRACTION,
) -> int:
    """Largest element count per buffer such that `buffers` buffers fit the allowance."""
    return allowance(device, fraction) // (bytes_per_element * buffers)


@checked
def fits(
    device: torch.device | str, nbytes: NonNegativeFloat, fraction: Share = DEFAULT_FRACTION
) -> bool:
    """Whether allocating `nbytes` stays within the allowance."""
    return nbytes <= allowance(device, fraction)
