"""Naive attention vs PyTorch's fused scaled_dot_product_attention (chapter 4; chapter 5 reuses it).

Naive attention writes out softmax(Q K^T / sqrt(d)) V: it materialises the
(batch, heads, seq, seq) score matrix, so its memory grows with the square of the sequence.
`torch.nn.functional.scaled_dot_product_attention` (SDPA) dispatches to a fused kernel
(FlashAttention, memory-efficient, cuDNN, or a CPU flash kernel) that never stores that matrix.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.bench import timing
from gpulab.bench.memprobe import peak_bytes
from gpulab.bench.quiet import quiet_stderr
from gpulab.core.validate import NonNegativeFloat, PositiveFloat, PositiveInt, checked
from gpulab.machine import budget

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "SDPA_KERNELS",
    "AttentionComparison",
    "check_agreement",
    "compare",
    "naive_attention",
    "random_qkv",
    "score_matrix_bytes",
    "sdpa",
    "sdpa_kernel",
]

# Kernel names as they appear in the profiler, and what each is.
SDPA_KERNELS = {
    "aten::_scaled_dot_product_flash_attention": "flash (FlashAttention-2, CUDA)",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient (CUDA)",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN (CUDA)",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (CPU kernel)",
    "aten::_efficient_attention_forward": "memory-efficient (CUDA)",
    "aten::_flash_attention_forward": "flash (FlashAttention-2, CUDA)",
    "aten::_scaled_dot_product_fused_attention_overrideable": "fused (XPU/other)",
}


@checked
def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True):
    """softmax(Q K^T / sqrt(d) + causal mask) V, written out; q, k, v: (batch, heads, seq, dim)."""
    import torch

    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-2, -1)) * scale  # (batch, heads, seq, seq): the memory cost
    if causal:
        seq = q.shape[-2]
        mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@checked
def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True):
    """PyTorch's fused attention on the same inputs."""
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


@checked
def random_qkv(
    batch: PositiveInt,
    heads: PositiveInt,
    seq: PositiveInt,
    head_dim: PositiveInt,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
):
    """Random queries, keys and values of shape (batch, heads, seq, head_dim)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    dtype = dtype or torch.float32
    return tuple(
        torch.randn(batch, heads, seq, head_dim, generator=gen).to(device, dtype) for _ in range(3)
    )


@checked
def sdpa_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True) -> str:
    """Which kernel SDPA runs for these inputs on this machine, read from the profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof, torch.inference_mode():
        sdpa(q, k, v, causal)
    names = {e.key for e in prof.key_averages()}
    for name, what in SDPA_KERNELS.items():
        if name in names:
            return what
    if "aten::_scaled_dot_product_attention_math" in names or "aten::bmm" in names:
        return "math (the unfused reference: matrix products and a softmax)"
    return "unknown (" + ", ".join(sorted(n for n in names if "attention" in n)) + ")"


@checked
def score_matrix_bytes(
    batch: PositiveInt, heads: PositiveInt, seq: PositiveInt, dtype_bytes: PositiveInt
) -> int:
    """Bytes of one (batch, heads, seq, seq) score matrix, which naive attention stores."""
    return batch * heads * seq * seq * dtype_bytes


@dataclass(frozen=True)
class AttentionComparison:
    """Naive vs SDPA at one sequence length (None where naive was skipped for memory)."""

    seq: int
    kernel: str
    sdpa_seconds: float
    sdpa_peak_bytes: int
    naive_seconds: float | None
    naive_peak_bytes: int | None
    max_abs_difference: float | None
    note: str = ""

    @property
    def speedup(self) -> float | None:
        """How many times faster SDPA ran than naive attention."""
        return None if self.naive_seconds is None else self.naive_seconds / self.sdpa_seconds


@checked
def compare(
    device: torch.device | str,
    seq_lens: Sequence[PositiveInt],
    batch: PositiveInt = 1,
    heads: PositiveInt = 8,
    head_dim: PositiveInt = 64,
    dtype: torch.dtype | None = None,
    causal: bool = True,
    min_run_time: PositiveFloat = 0.1,
) -> list[AttentionComparison]:
    """Time and peak memory of naive attention and SDPA for each sequence length.

    Naive attention is skipped, with a note, where its score matrices (two of them: scores and
    probabilities) would exceed a quarter of the free memory.
    """
    import torch

    # timed without the boundary's checks, which cost microseconds per call
    fused_attention, written_out = inspect.unwrap(sdpa), inspect.unwrap(naive_attention)
    dtype = dtype or torch.float32
    item = torch.empty((), dtype=dtype).element_size()
    out = []
    for seq in seq_lens:
        q, k, v = random_qkv(batch, heads, seq, head_dim, device, dtype)
        with torch.inference_mode():
            fused = timing.benchmark(
                fused_attention, q, k, v, causal, device=device, min_run_time=min_run_time
            )
            fused_peak = peak_bytes(lambda q=q, k=k, v=v: sdpa(q, k, v, causal), device)
            kernel = sdpa_kernel(q, k, v, causal)
            need = 2 * score_matrix_bytes(batch, heads, seq, item)
            if not budget.fits(device, need):
                out.append(
                    AttentionComparison(
                        seq,
                        kernel,
                        fused.median,
                        fused_peak,
                        None,
                        None,
                        None,
                        f"naive skipped: its score matrices need {need / 2**30:.1f} GiB",
                    )
                )
                continue
            slow = timing.benchmark(
                written_out, q, k, v, causal, device=device, min_run_time=min_run_time
            )
            slow_peak = peak_bytes(lambda q=q, k=k, v=v: naive_attention(q, k, v, causal), device)
            diff = (naive_attention(q, k, v, causal) - sdpa(q, k, v, causal)).abs().max().item()
        out.append(
            AttentionComparison(seq, kernel, fused.median, fused_peak, slow.median, slow_peak, diff)
        )
    return out


@checked
def check_agreement(results: list[AttentionComparison], tolerance: NonNegativeFloat = 1e-3) -> None:
    """Raise when naive attention and SDPA disagree beyond the tolerance (a wrong fast answer)."""
    for r in results:
        if r.max_abs_difference is not None and r.max_abs_difference > tolerance:
            raise AssertionError(
                f"seq={r.seq}: naive and fused attention differ by "
                f"{r.max_abs_difference:.2e} > tolerance {tolerance:.0e}"
            )
