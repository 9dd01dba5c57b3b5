"""The course's bounds beside published measurements: measured / bound, or why there is none.

Every published figure in ``gpulab.published`` is set beside the bound the course computes for
it from the device's spec sheet (``gpulab.specs``) and the model's shapes (``gpulab.models``):

- decode (tg, tg128): bandwidth / bytes one token reads (``perf.decode_bytes_per_step``: the
  weights at the row's format, batch 1, plus the KV cache at the row's ``min_context_tokens``);
- prefill (pp, pp512): the peak of the units the measured kernels ran on / FLOPs per token
  (``perf.forward_flops`` at the mean causal context of the prompt);
- matmul: the table's dense peak for the row's dtype.

A bound is an upper limit, so a ratio above 1 is a bug in the bound (a wrong peak, bytes
counted that were not read), not a fast device: ``beaten`` lists such rows and a test fails on
any. Where the right peak is unknown the row is excluded and ``Comparison.excluded`` says why.

The decode rows' ratios also say what to expect below a bound: ``decode_share`` is their
lowest, median and highest share, and ``typical_decode`` applies it to another bound (the
typical range ``gpulab speed`` and the site's memory calculator print beside the bound).
"""

from __future__ import annotations

import functools
import re
import statistics
from dataclasses import dataclass
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, PositiveFloat, checked
from gpulab.estimate.perf import decode_bytes_per_step, forward_flops
from gpulab.reference import models, published
from gpulab.reference.published import KERNELS, Measurement, load
from gpulab.reference.specs import GPUSpec, get_gpu, resolve_gpu

__all__ = [
    "CUBLAS_FP16_SOURCE",
    "KV_FORMAT",
    "Comparison",
    "DecodeShare",
    "Kernel",
    "beaten",
    "compare",
    "compare_all",
    "decode_share",
    "on_gpu",
    "prefill_peak",
    "typical_decode",
]

# llama.cpp stores its KV cache in f16 unless told otherwise (-ctk/-ctv default f16).
KV_FORMAT = "fp16"
# Why a 2023-2024 CUDA prefill ran at the FP16-accumulate tensor rate (kernel "cublas-fp16").
CUBLAS_FP16_SOURCE = (
    "llama.cpp ggml-cuda.cu, ggml_cuda_op_mul_mat_cublas: on compute capability >= 7.0 a "
    "quantized weight is dequantized to FP16 and multiplied by cublasGemmEx(..., "
    "CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT_TENSOR_OP), i.e. FP16 tensor cores accumulating in "
    "FP16 (https://github.com/ggerganov/llama.cpp/blob/005de593ad4aa2c8db115cbb41a37bda2fb20b77/"
    "ggml-cuda.cu)"
)
# A prompt-processing row's matrix-product path (gpulab.published.KERNELS).
Kernel = Annotated[str, OneOf(KERNELS, "prefill kernel path")]
# GeForce boards run FP16 tensor math with FP32 accumulation at half rate, so their table `fp16`
# figure is not the FP16-accumulate peak (gpu_specs.json's _convention); workstation and
# data-centre boards run both at full rate, where the table's `fp16` is that peak.
_GEFORCE = re.compile(r"^(RTX [2-5]0\d0|GTX 1\d\d0)\b")  # not "RTX A6000", "RTX 6000 Ada"


@dataclass(frozen=True)
class Comparison:
    """One measurement beside its bound: the ratio, or the reason there is none."""

    measurement: Measurement
    kind: str  # "decode", "prefill" or "matmul"
    bound: float | None  # in the measurement's unit; None when excluded
    ratio: float | None  # measured / bound
    basis: str  # how the bound was computed, in words and operands
    excluded: str | None = None  # why there is no bound

    @property
    def percent(self) -> float | None:
        """The measurement as a percentage of its bound (None when excluded)."""
        return None if self.ratio is None else 100 * self.ratio


def _kind(m: Measurement) -> str:
    return "matmul" if m.test == "matmul" else ("decode" if m.is_decode else "prefill")


def _excluded(m: Measurement, basis: str, reason: str) -> Comparison:
    return Comparison(m, _kind(m), None, None, basis, reason)


def _bounded(m: Measurement, bound: float, basis: str) -> Comparison:
    return Comparison(m, _kind(m), bound, m.figure / bound, basis)


@checked
def prefill_peak(kernel: Kernel, gpu: GPUSpec | str) -> tuple[float | None, str]:
    """(FLOP/s a prefill on this kernel path can reach, which figure it is) or (None, why not)."""
    gpu = resolve_gpu(gpu)
    table = gpu.peak_tflops
    if kernel == "cublas-fp16":
        if "fp16_fp16acc" in table:
            return table["fp16_fp16acc"] * 1e12, "dense FP16 tensor, FP16 accumulate"
        if _GEFORCE.match(gpu.name):
            return None, (
                "the run used FP16 tensor cores accumulating in FP16; the spec table "
                "has no FP16-accumulate peak for this GeForce card"
            )
        if "fp16" in table:
            return table["fp16"] * 1e12, "dense FP16 tensor, full rate with either accumulator"
        return None, "the spec table has no FP16 tensor peak for this GPU"
    if kernel == "mmq-int8":
        if "int8" in table:
            return table["int8"] * 1e12, "dense INT8 tensor (OPS)"
        return None, "the run used int8 kernels; the spec table has no INT8 peak for this GPU"
    if kernel == "metal":
        return None, "Apple publishes no GPU FLOP/s: the spec table has no compute peak"
    return None, "the kernels the run used are not known, so neither is their peak"


def _decode(m: Measurement, gpu: GPUSpec) -> Comparison:
    spec = models.get(m.model_spec)
    step = decode_bytes_per_step(spec, m.quantization, KV_FORMAT, 1, m.min_context_tokens)
    bound = gpu.bandwidth_bytes_per_s / step
    basis = (
        f"{gpu.bandwidth_gbs:g} GB/s / {step / 1e9:.3f} GB per token ({m.quantization} "
        f"weights + {KV_FORMAT} KV cache of {m.min_context_tokens} "
        f"token{'s' if m.min_context_tokens != 1 else ''})"
    )
    return _bounded(m, bound, basis)


def _prefill(m: Measurement, gpu: GPUSpec) -> Comparison:
    spec = models.get(m.model_spec)
    # A causal prompt's tokens attend to half the prompt on average; with no prompt length,
    # attention is left out, which lowers the FLOPs and so can only raise the bound.
    context = None if m.prompt_tokens is None else max(1, m.prompt_tokens // 2)
    per_token = forward_flops(spec, 1, context)
    peak, label = prefill_peak(m.kernel, gpu)
    flops = f"{per_token / 1e9:.2f} GFLOP per token"
    flops += (
        " (attention not counted)" if context is None else f" (attention over {context} tokens)"
    )
    if peak is None:
        return _excluded(m, flops, label)
    return _bounded(m, peak / per_token, f"{peak / 1e12:g} TFLOP/s ({label}) / {flops}")


def _matmul(m: Measurement, gpu: GPUSpec) -> Comparison:
    peak = gpu.peak_flops(m.dtype)
    if peak is None:
        return _excluded(m, f"dense {m.dtype} peak", f"the spec table has no {m.dtype} peak")
    return _bounded(
        m, peak / 1e12, f"dense {m.dtype} peak of the spec table, {peak / 1e12:g} TFLOP/s"
    )


@checked
def compare(row: Measurement | str) -> Comparison:
    """A measurement (or a packaged row's id) beside the course's bound, or excluded with why."""
    try:
        m = row if isinstance(row, Measurement) else published.get(row)
    except GpulabConfigError as err:  # name this function's argument, not get's
        raise GpulabConfigError(str(err).replace("row_id=", "row=", 1), "row") from None
    if m.gpu is None:
        return _excluded(m, "-", f"{m.device!r} has no row in the course's GPU spec table")
    gpu = get_gpu(m.gpu)
    if m.test == "matmul":
        return _matmul(m, gpu)
    return _decode(m, gpu) if m.is_decode else _prefill(m, gpu)


@checked
def compare_all(rows: tuple[Measurement, ...] | None = None) -> list[Comparison]:
    """Every published measurement (default: the packaged ones) beside its bound."""
    return [compare(m) for m in (load() if rows is None else rows)]


@checked
def beaten(comparisons: list[Comparison] | None = None) -> list[Comparison]:
    """The comparisons (default: every packaged one) whose measurement exceeds its bound."""
    # Each one is a bug in a bound: a peak the kernels do not use, or bytes never read.
    rows = compare_all() if comparisons is None else comparisons
    return [c for c in rows if c.ratio is not None and c.ratio > 1]


@dataclass(frozen=True)
class DecodeShare:
    """The share of its decode bound that published runs reached: lowest, median, highest."""

    low: float  # the lowest measured / bound among the runs
    median: float
    high: float
    runs: int  # decode runs with a bound
    devices: int  # distinct spec-table GPUs among them
    lowest: str  # the device of the lowest share, as its source names it
    highest: str  # the device of the highest share
    tool: str  # the runtimes the runs used ("llama.cpp")

    def applied(self, bound: float) -> tuple[float, float, float]:
        """(low, median, high) of a decode bound in tokens/s: what these shares of it are."""
        return bound * self.low, bound * self.median, bound * self.high


@checked
def decode_share(comparisons: list[Comparison] | None = None) -> DecodeShare:
    """The lowest, median and highest measured / bound over the decode comparisons.

    Default: every packaged published decode run that has a bound (batch 1, llama.cpp). The
    shares are of bounds at a short context; applied to a longer one they assume the same
    share of the (smaller) bound.
    """
    if comparisons is None:
        return _packaged_share()
    return _share(comparisons)


# The packaged rows never change while gpulab runs, and a calculator asks on every edit.
@functools.lru_cache(maxsize=1)
def _packaged() -> tuple[Comparison, ...]:
    return tuple(compare_all())


@functools.lru_cache(maxsize=1)
def _packaged_share() -> DecodeShare:
    return _share(list(_packaged()))


def _share(rows: list[Comparison]) -> DecodeShare:
    decode = sorted(
        (c for c in rows if c.kind == "decode" and c.ratio is not None), key=lambda c: c.ratio
    )
    if not decode:
        raise GpulabConfigError(
            "comparisons holds no decode run with a bound: no share to take", "comparisons"
        )
    ratios = [c.ratio for c in decode]
    return DecodeShare(
        low=ratios[0],
        median=statistics.median(ratios),
        high=ratios[-1],
        runs=len(decode),
        devices=len({c.measurement.gpu for c in decode}),
        lowest=decode[0].measurement.device,
        highest=decode[-1].measurement.device,
        # "llama.cpp (main)" and "llama.cpp (llama-bench)" are one runtime
        tool=", ".join(sorted({c.measurement.tool.split(" (")[0] for c in decode})),
    )


@checked
def typical_decode(bound_tokens_per_s: PositiveFloat) -> tuple[float, float, float]:
    """What the published runs' lowest, median and highest share of a bound make of this one.

    A decode bound in tokens/s (gpulab.perf.decode_tokens_per_s, one sequence) times the
    shares of `decode_share()`: (low, median, high) tokens/s a runtime like theirs reaches.
    """
    return decode_share().applied(bound_tokens_per_s)


@checked
def on_gpu(gpu: GPUSpec | str) -> list[Comparison]:
    """The packaged published measurements on this spec-table GPU, each beside its bound."""
    card = resolve_gpu(gpu)
    return [c for c in _packaged() if c.measurement.gpu == card.name]
