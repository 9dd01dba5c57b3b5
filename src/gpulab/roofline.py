"""Arithmetic intensity and the roofline model (chapter 1).

An operation that does F floating-point operations while moving B bytes to and from memory has
arithmetic intensity I = F / B (FLOP per byte). On a device with peak compute P (FLOP/s) and
memory bandwidth W (bytes/s) it can run no faster than min(P, I * W): below the ridge point
I* = P / W it is memory-bound, above it compute-bound.

The byte counts here are the least an implementation must move (each input read once, each
output written once, intermediate results kept on chip), which is what a fused kernel achieves.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab.errors import require_positive, require_positive_ints
from gpulab.timing import elementwise_bytes, itemsize, matmul_bytes, matmul_flops


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


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where a device's compute and memory bounds meet: P / W."""
    require_positive(peak_flops=peak_flops, bandwidth=bandwidth)
    return peak_flops / bandwidth


def attainable(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """Roofline bound on FLOP/s for an op of this intensity: min(P, I * W)."""
    require_positive(intensity=intensity, peak_flops=peak_flops, bandwidth=bandwidth)
    return min(peak_flops, intensity * bandwidth)


def bound(intensity: float, peak_flops: float, bandwidth: float) -> str:
    """'memory' when the op's intensity is below the ridge point, else 'compute'."""
    return "memory" if intensity < ridge_point(peak_flops, bandwidth) else "compute"


# ---------------------------------------------------------------- common operations


def matmul_cost(m: int, n: int, k: int, dtype) -> OpCost:
    """(m x k) @ (k x n): 2mnk FLOPs over reading A and B and writing C once."""
    return OpCost(f"matmul {m}x{k} @ {k}x{n}", matmul_flops(m, n, k), matmul_bytes(m, n, k, dtype))


def add_cost(numel: int, dtype) -> OpCost:
    """Element-wise x + y: one FLOP per element, two reads and one write."""
    return OpCost(f"add of {numel:,} elements", numel, elementwise_bytes(numel, dtype))


def softmax_cost(rows: int, cols: int, dtype) -> OpCost:
    """Row softmax: per element a max compare, a subtract, an exp, a sum add and a divide.

    That is 5 FLOPs per element counting the exponential as one (it is several instructions
    on real hardware, so this underestimates the work, not the bytes); one read, one write.
    """
    require_positive_ints(rows=rows, cols=cols)
    numel = rows * cols
    return OpCost(f"softmax {rows}x{cols}", 5 * numel, 2 * numel * itemsize(dtype))


def layernorm_cost(rows: int, cols: int, dtype) -> OpCost:
    """Layer norm with scale and shift: about 8 FLOPs per element, one read and one write.

    Mean (1 add), variance (subtract, square, add: 3), normalise (subtract, multiply by the
    reciprocal std: 2), scale and shift (2); the per-row square root is negligible. The weight
    and bias vectors (2 x cols) are read once.
    """
    require_positive_ints(rows=rows, cols=cols)
    numel = rows * cols
    return OpCost(f"layer norm {rows}x{cols}", 8 * numel, (2 * numel + 2 * cols) * itemsize(dtype))
