"""Running a precision recipe in PyTorch: the one autocast helper (chapters 3 and 5).

The names are ``gpulab.formats.AUTOCAST_PRECISIONS``: "fp32" (no autocast), "autocast-bf16"
(matrix products in bfloat16 under ``torch.autocast``; weights, gradients and optimizer in
fp32) and "autocast-fp16" (float16, with a ``GradScaler`` so that small gradients do not
underflow; CUDA only). The memory estimator counts the same recipes by the same names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Set
from typing import TYPE_CHECKING, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked
from gpulab.reference.formats import AutocastPrecision

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "autocast",
    "check_runs_on",
    "fast_precision",
    "grad_scaler",
    "native_bf16",
    "needs_grad_scaler",
]

# CPU flags (Linux /proc/cpuinfo) of units that compute in bf16 natively: AVX-512 BF16 converts
# and multiplies bf16 pairs, AMX runs bf16 tiles. Without them PyTorch emulates each bf16 product
# in fp32 arithmetic plus conversions, slower than fp32 itself.
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@checked
def check_runs_on(
    precision: AutocastPrecision, device: torch.device | str, field: str = "precision"
) -> None:
    """Raise GpulabConfigError when `precision` cannot run on `device` (fp16 needs CUDA)."""
    import torch

    kind = torch.device(device).type
    if precision == "autocast-fp16" and kind != "cuda":
        raise GpulabConfigError(
            f"{field}='autocast-fp16' needs a CUDA GPU (float16 kernels and a GradScaler); the "
            f"device is {device}: use 'autocast-bf16' or 'fp32' there",
            field,
        )


@checked
def autocast(
    device: torch.device | str, precision: AutocastPrecision
) -> contextlib.AbstractContextManager:
    """The autocast context of a precision on a device ("fp32" gives a no-op)."""
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "autocast-bf16" else torch.float16
    return torch.autocast(torch.device(device).type, dtype=dtype)


@checked
def needs_grad_scaler(precision: AutocastPrecision) -> bool:
    """Whether a recipe needs a GradScaler (float16's narrow exponent range does)."""
    return precision == "autocast-fp16"


@checked
def grad_scaler(precision: AutocastPrecision) -> Any:
    """A CUDA GradScaler for "autocast-fp16", None for every other recipe."""
    import torch

    return torch.amp.GradScaler("cuda") if needs_grad_scaler(precision) else None


@checked
def fast_precision(device: torch.device | str) -> str:
    """The autocast recipe that fits a device: "autocast-bf16" on GPUs with bf16 units,
    "autocast-fp16" on older CUDA GPUs, "fp32" elsewhere (most CPUs have no fast 16-bit units)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return "fp32"
    return (
        "autocast-bf16"
        if torch.cuda.is_bf16_supported(including_emulation=False)
        else "autocast-fp16"
    )


@checked
def native_bf16(device: torch.device | str, cpu_flags: Set | None = None) -> bool:
    """Whether `device` computes bf16 products in hardware (not emulated).

    CUDA: compute capability 8.0 or newer (torch's check without emulation). CPU: the
    AVX-512 BF16 or AMX flags (`cpu_flags`, read from /proc/cpuinfo by default; unknown
    flags count as no). Apple MPS: True (its GPUs run bf16 from macOS 14).
    """
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == "cpu":
        if cpu_flags is None:
            from gpulab.machine.host import read_cpu_flags

            cpu_flags = read_cpu_flags() or set()
        return any(flag in cpu_flags for flag in CPU_BF16_FLAGS)
    return device.type == "mps"
