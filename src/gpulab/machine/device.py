"""The torch device a notebook's ``device`` parameter names, or a clear error saying why not.

Unlike detection, which reports instead of raising, picking a device is a request: asking
for ``"cuda"`` on a machine without a usable CUDA GPU raises ``GpulabConfigError`` with one
sentence on what to do.
"""

from __future__ import annotations

import os
import re
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.machine.torch_probe import call
from gpulab.machine.visible import VISIBILITY_VARS, parse_visible_devices

__all__ = ["check_quick", "pick_device"]

_DEVICE_CHOICES = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu'"


@checked
def pick_device(device: str = "auto") -> Any:
    """Return the ``torch.device`` for a notebook's ``device`` parameter.

    "auto" picks cuda (ROCm included) > mps > xpu > cpu. A name that is unknown, or a device
    this machine cannot use, raises GpulabConfigError with one sentence saying what to do.
    """
    import torch

    key = device.strip()
    if key == "auto":
        return torch.device(_auto_device(torch))
    if key == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", key)
    if match:
        _require_cuda(torch, key, int(match.group(1)) if match.group(1) else None)
        return torch.device(key)
    if key == "mps":
        _require_mps(torch)
        return torch.device("mps")
    if key == "xpu":
        _require_xpu(torch)
        return torch.device("xpu")
    raise GpulabConfigError(
        f"device={device!r} is not a known device; use one of {_DEVICE_CHOICES}.", "device"
    )


def _auto_device(torch: Any) -> str:
    """The best available device name."""
    if call(torch.cuda.is_available, False):
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and call(mps.is_available, False):
        return "mps"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and call(xpu.is_available, False):
        return "xpu"
    return "cpu"


def _require_cuda(torch: Any, key: str, ordinal: int | None) -> None:
    """Raise GpulabConfigError unless CUDA (or ROCm) device ``key`` can be used."""
    asked = f"device={key!r} was asked for, but"
    if not (torch.version.cuda or getattr(torch.version, "hip", None)):
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and call(mps.is_built, False):
            raise GpulabConfigError(
                f"{asked} this torch build has no CUDA support (torch {torch.__version__} is a "
                "macOS build); use device='mps' or device='auto'."
            )
        raise GpulabConfigError(
            f"{asked} this torch build is CPU-only (torch {torch.__version__}); "
            "install a CUDA build of torch or use device='auto'."
        )
    if not call(torch.cuda.is_available, False):
        raise GpulabConfigError(f"{asked} {_why_no_cuda_gpu()}")
    count = int(call(torch.cuda.device_count, 0))
    if ordinal is not None and ordinal >= count:
        raise GpulabConfigError(
            f"{asked} torch sees only {count} GPU(s) (cuda:0 to cuda:{count - 1}); "
            "pick one of those or use device='cuda'."
        )


def _why_no_cuda_gpu() -> str:
    """Say why a CUDA build of torch sees no GPU, and what to do."""
    for var in VISIBILITY_VARS:
        value = os.environ.get(var)
        if value is not None and parse_visible_devices(value, var).hides_all:
            return (
                f"no CUDA GPU is visible ({var}={value!r}); unset {var} "
                "(or pick the gpulab kernel instead of gpulab-cpu) or use device='auto'."
            )
    return (
        "torch.cuda.is_available() is False (no GPU or no working NVIDIA driver found); "
        "run `python -m gpulab doctor` to see why, or use device='auto'."
    )


def _require_mps(torch: Any) -> None:
    """Raise GpulabConfigError unless Apple's MPS backend can be used."""
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not call(mps.is_built, False):
        raise GpulabConfigError(
            f"device='mps' was asked for, but this torch build has no MPS support "
            f"(torch {torch.__version__}; MPS needs macOS on Apple silicon); use device='auto'."
        )
    if not call(mps.is_available, False):
        raise GpulabConfigError(
            "device='mps' was asked for, but MPS is not available on this Mac "
            "(it needs Apple silicon and macOS 12.3 or later); use device='auto'."
        )


def _require_xpu(torch: Any) -> None:
    """Raise GpulabConfigError unless an Intel XPU can be used."""
    xpu = getattr(torch, "xpu", None)
    if xpu is None or not call(xpu.is_available, False):
        raise GpulabConfigError(
            f"device='xpu' was asked for, but this torch build sees no Intel XPU "
            f"(torch {torch.__version__}); install the XPU build of torch or use device='auto'."
        )


@checked
def check_quick(quick: bool) -> None:
    """Raise GpulabConfigError unless a notebook's `quick` parameter is True or False.

    papermill passes what it is given: `-p quick maybe` would otherwise run, with "maybe"
    read as true in one place and compared with True in another. The check is the
    annotation: ``quick='maybe' must be True or False``.
    """
