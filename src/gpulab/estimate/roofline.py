"""Arithmetic intensity and the roofline model (chapter 1).

An operation that does F floating-point operations while moving B bytes to and from memory has
arithmetic intensity I = F / B (FLOP per byte). On a device with peak compute P (FLOP/s) and
memory bandwidth W (bytes/s) it can run no faster than min(P, I * W): below the ridge point
I* = P / W it is memory-bound, above it compute-bound.

The byte counts here are the least an implementation must move (each input read once, each
output written once, intermediate results kept on chip), which is what a fused kernel achieves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, runtime_checkable

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, PositiveFloat, PositiveInt, check_value, checked, lenient
from gpulab.reference.formats import DTYPE_BYTES
from gpulab.reference.specs import GPUSpec, PeakDtype, resolve_gpu

__all__ = [
    "DTYPE_BYTES",
    "OpCost",
    "Share",
    "add_cost",
    "attainable",
    "bound",
    "copy_bytes",
    "elementwise_bytes",
    "gpu_ridge_point",
    "itemsize",
    "layernorm_cost",
    "matmul_bytes",
    "matmul_cost",
    "matmul_flops",
    "percent_of_peak",
    "ridge_point",
    "TorchDtype",
    "softmax_cost",
    "triad_bytes",
]


@runtime_checkable
class TorchDtype(Protocol):
    """A torch dtype, as this layer sees it without importing torch: its size in bytes
    (``torch.bfloat16.itemsize == 2``)."""

    itemsize: int


@dataclass(frozen=True)
class OpCost:
    """The work of one operation: FLOPs and the least bytes it must move."""

    name: str
    flops: int
    bytes: int

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP per byte."""
        return self.flops / self.bytes


@checked
def ridge_point(peak_flops: PositiveFloat, bandwidth: PositiveFloat) -> float:
    """Intensity (FLOP/byte) where a device's compute and memory bounds meet: P / W."""
    return peak_flops / bandwidth


@checked
def attainable(
    intensity: PositiveFloat, peak_flops: PositiveFloat, bandwidth: PositiveFloat
) -> float:
    """Roofline bound on FLOP/s for an op of this intensity: min(P, I * W)."""
    return min(peak_flops, intensity * bandwidth)


@checked
def bound(intensity: PositiveFloat, peak_flops: PositiveFloat, bandwidth: PositiveFloat) -> str:
    """'memory' when the op's intensity is below the ridge point, else 'compute'."""
    return "memory" if intensity < ridge_point(peak_flops, bandwidth) else "compute"


# ---------------------------------------------------------------- common operations


@checked
def matmul_cost(
    m: PositiveInt, n: PositiveInt, k: PositiveInt, dtype: int | str | TorchDtype
) -> OpCost:
    """(m x k) @ (k x n): 2mnk FLOPs over reading A and B and writing C once."""
    return OpCost(f"matmul {m}x{k} @ {k}x{n}", matmul_flops(m, n, k), matmul_bytes(m, n, k, dtype))


@checked
def add_cost(numel: PositiveInt, dtype: int | str | TorchDtype) -> OpCost:
    """Element-wise x + y: one FLOP per element, two reads and one write."""
    return OpCost(f"add of {numel:,} elements", numel, elementwise_bytes(numel, dtype))


@checked
def softmax_cost(rows: PositiveInt, cols: PositiveInt, dtype: int | str | TorchDtype) -> OpCost:
    """Row softmax: per element a max compare, a subtract, an exp, a sum add and a divide.

    That is 5 FLOPs per element counting the exponential as one (it is several instructions
    on real hardware, so this underestimates the work, not the bytes); one read, one write.
    """
    numel = rows * cols
    return OpCost(f"softmax {rows}x{cols}", 5 * numel, 2 * numel * itemsize(dtype))


@checked
def layernorm_cost(rows: PositiveInt, cols: PositiveInt, dtype: int | str | TorchDtype) -> OpCost:
    """Layer norm with scale and shift: about 8 FLOPs per element, one read and one write.

    Mean (1 add), variance (subtract, square, add: 3), normalise (subtract, multiply by the
    reciprocal std: 2), scale and shift (2); the per-row square root is negligible. The weight
    and bias vectors (2 x cols) are read once.
    """
    numel = rows * cols
    return OpCost(f"layer norm {rows}x{cols}", 8 * numel, (2 * numel + 2 * cols) * itemsize(dtype))


# ---------------------------------------------------------------- work of common operations


@lenient("accepts ints, names and torch dtypes, checked by hand")
def itemsize(dtype: Any) -> int | float:
    """Bytes per element: of an int given directly, a dtype name ("bf16"), or a torch dtype.

    A torch dtype carries its size (``torch.bfloat16.itemsize == 2``), so no torch import is
    needed here.
    """
    if isinstance(dtype, bool):
        raise GpulabConfigError(f"dtype={dtype!r} is not a dtype", "dtype")
    if isinstance(dtype, int):
        if dtype < 1:
            raise GpulabConfigError(f"dtype={dtype!r}: bytes per element must be positive", "dtype")
        return dtype
    if isinstance(dtype, str):
        if dtype not in DTYPE_BYTES:
            check_value("dtype", dtype, Annotated[str, OneOf(DTYPE_BYTES, "dtype")])
        return DTYPE_BYTES[dtype]
    size = getattr(dtype, "itemsize", None)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise GpulabConfigError(
            f"dtype={dtype!r} is not a dtype (an int, a name such as 'bf16', or a torch dtype)",
            "dtype",
        )
    return size


@checked
def matmul_flops(m: PositiveInt, n: PositiveInt, k: PositiveInt, batch: PositiveInt = 1) -> int:
    """FLOPs of (m x k) @ (k x n): m*n*k multiply-adds, 2 FLOPs each."""
    return 2 * batch * m * n * k


@checked
def matmul_bytes(
    m: PositiveInt,
    n: PositiveInt,
    k: PositiveInt,
    dtype: int | str | TorchDtype,
    batch: PositiveInt = 1,
) -> int:
    """Least bytes a matrix product moves: read A and B once, write C once."""
    return batch * (m * k + k * n + m * n) * itemsize(dtype)


@checked
def copy_bytes(numel: PositiveInt, dtype: int | str | TorchDtype) -> int:
    """Bytes a copy moves: every element read once and written once."""
    return 2 * numel * itemsize(dtype)


@checked
def elementwise_bytes(
    numel: PositiveInt,
    dtype: int | str | TorchDtype,
    inputs: PositiveInt = 2,
    outputs: PositiveInt = 1,
) -> int:
    """Bytes an element-wise op moves: each input read once, each output written once."""
    return (inputs + outputs) * numel * itemsize(dtype)


@checked
def triad_bytes(numel: PositiveInt, dtype: int | str | TorchDtype) -> int:
    """Bytes of the STREAM triad a = b + s*c: two reads and one write per element."""
    return elementwise_bytes(numel, dtype, inputs=2, outputs=1)


class Share(float):
    """A percentage of a peak; over 100 % it has a note on why it can be (else ``note`` is None).

    A table shows the note under itself (``gpulab.tables``); a printed line adds it.
    """

    note: str | None

    def __new__(cls, percent: float, note: str | None = None) -> Share:
        share = super().__new__(cls, percent)
        share.note = note
        return share

    def __getnewargs__(self) -> tuple[float, str | None]:
        return float(self), self.note


@lenient("None for an unknown peak, as a report shows it")
def percent_of_peak(achieved: float, peak: float | None) -> Share | None:
    """Achieved rate as a percentage of a peak; None when the peak is unknown.

    A measured rate cannot exceed a true peak, so a share above 100 % says the peak figure is
    wrong for this run: a peak that knows its source (``gpulab.peaks.Peak``, whose ``above``
    says what such a rate means) gives the share a note saying so.
    """
    if peak is None or peak <= 0 or not math.isfinite(peak):
        return None
    percent = 100.0 * achieved / peak
    above = getattr(peak, "above", None)
    note = None
    if percent > 100.0 and above:
        # no percentage in the text: every share above the same peak shares one note
        note = f"above 100% of the peak, which no measurement can truly beat: {above}."
    return Share(percent, note)


# ---------------------------------------------------------------- GPUs of the spec table


@checked
def gpu_ridge_point(gpu: GPUSpec | str, dtype: PeakDtype = "bf16") -> float | None:
    """A spec-table GPU's ridge point in FLOP/byte: its peak / its bandwidth; None with no peak."""
    spec = resolve_gpu(gpu)
    peak = spec.peak_flops(dtype)
    return None if peak is None else ridge_point(peak, spec.bandwidth_bytes_per_s)
