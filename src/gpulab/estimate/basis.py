"""One function per quantity the pages compare (chapters 1 to 7 and the fact-check).

A quantity that several pages state, a model's size in a format, the bytes one decoding step
reads, a decode bound, a full fine-tune's memory, a CPU's peak, is computed here and nowhere
else, on one basis, so that two pages cannot give it two values:

    from gpulab.estimate import basis

    basis.weights_gb("Llama-3-70B", "q4_k_m")             # 42.7 GB: every tensor in the format
    basis.read_gb("Llama-3-70B", "q4_k_m", context=4096)   # what one token reads, weights and KV
    basis.bound_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", context=4096)  # bandwidth / read_gb
    basis.offload_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090")  # the layers that fit, the rest in RAM
    basis.full_finetune_gb("Llama-2-7B")                   # weights, gradients, AdamW states
    basis.cpu_peak_tflops("Core i9-13900K", "all-core")    # the realistic FP32 peak

Each returns a :class:`Quantity`: a float that remembers its kind, the function that made it and
the arguments it was called with (defaults filled in), so that a test can check that every
figure of a kind comes from that kind's one function and that no two figure names compute the
same thing (tests/unit/test_one_basis.py).

The conventions, stated once:
- a bound reads the weights a token uses once (``perf.decode_bytes_per_step``: the embedding is
  a lookup of one row, a mixture of experts reads only its routed experts) plus the KV cache of
  `context` tokens in 16 bits; with no context named it is an empty cache (``EMPTY_CACHE``, one
  token): the fastest any context allows, so a claim above it is above every context's bound;
- a device is a GPU of the spec table (its memory bandwidth), a CPU of the CPU table (its
  memory's peak bandwidth), or a bandwidth in GB/s for a memory system no table row holds;
- sizes are decimal GB (1e9 bytes), rates tokens/s, peaks TFLOP/s.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GB
from gpulab.core.validate import NonNegativeInt, OneOf, PositiveFloat, PositiveInt, checked
from gpulab.estimate import memory, perf
from gpulab.estimate.activations import Optimizer
from gpulab.reference import models, specs
from gpulab.reference.formats import TrainingPrecision, WeightFormatName

__all__ = [
    "CPU_CLOCKS",
    "EMPTY_CACHE",
    "KINDS",
    "KV_CACHE",
    "Quantity",
    "bandwidth_gbs",
    "bound_tok_s",
    "cpu_peak_tflops",
    "full_finetune_gb",
    "layers_that_fit",
    "offload_tok_s",
    "read_gb",
    "weights_gb",
]

EMPTY_CACHE = 1  # the context of a bound or a read whose name states none: one token, no history
KV_CACHE = "fp16"  # the KV cache is kept in 16 bits (fp16 and bf16 are the same bytes)
CPU_CLOCKS = ("base", "all-core", "turbo")  # specs.CPUSpec's clock settings, slowest first
CpuClock = Annotated[str, OneOf(CPU_CLOCKS, "CPU clock setting")]

# kind -> the one function that computes it (its qualified name), filled by @_kind below
KINDS: dict[str, str] = {}


class Quantity(float):
    """A float that remembers what computed it: its kind, function and arguments."""

    kind: str  # one of KINDS
    function: str  # "gpulab.estimate.basis.bound_tok_s"
    args: tuple[tuple[str, Any], ...]  # every argument by name, defaults filled in

    def __new__(cls, value: float, kind: str, function: str, args: tuple) -> Quantity:
        q = super().__new__(cls, value)
        q.kind, q.function, q.args = kind, function, args
        return q

    def __repr__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self):  # a copy or a pickle keeps the provenance
        return (Quantity, (float(self), self.kind, self.function, self.args))

    @property
    def call(self) -> str:
        """The call that computed it, as code: ``bound_tok_s(model='Llama-2-7B', ...)``."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.args)
        return f"{self.function.rsplit('.', 1)[-1]}({shown})"


def _kind(kind: str) -> Callable[[Callable[..., float]], Callable[..., Quantity]]:
    """Decorator: make `fn` the one function of `kind`, returning a Quantity."""

    def wrap(fn: Callable[..., float]) -> Callable[..., Quantity]:
        name = f"{__name__}.{fn.__name__}"
        if kind in KINDS:
            raise ValueError(f"kind {kind!r} has a function already: {KINDS[kind]}")
        KINDS[kind] = name
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def quantity(*args: Any, **kwargs: Any) -> Quantity:
            value = fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return Quantity(value, kind, name, tuple(bound.arguments.items()))

        return quantity

    return wrap


@checked
def bandwidth_gbs(device: str | PositiveFloat) -> float:
    """GB/s of a device: a GPU's memory, a CPU's RAM at its peak, or the bandwidth given."""
    return _bandwidth(device, "device")


def _bandwidth(device: str | float, field: str) -> float:
    """bandwidth_gbs, with an error that names the caller's `field`."""
    if not isinstance(device, str):
        return float(device)
    if device in specs.load_gpus():
        return specs.get_gpu(device).bandwidth_gbs
    try:
        return specs.get_cpu(device).memory_bandwidth_gbs
    except GpulabConfigError as err:
        raise GpulabConfigError(
            f"{field}={device!r} is neither a GPU of the spec table "
            f"({', '.join(specs.sorted_gpu_names())}) nor a CPU ({_known_cpus(err)}), nor a "
            "bandwidth in GB/s",
            field,
        ) from None


def _known_cpus(err: GpulabConfigError) -> str:
    """The CPU names a specs.get_cpu error lists."""
    return str(err).rsplit("known: ", 1)[-1]


def _gpu(name: str, field: str = "gpu") -> specs.GPUSpec:
    """A GPU of the spec table, with an error that names the caller's `field`."""
    if name not in specs.load_gpus():
        raise GpulabConfigError(
            f"{field}={name!r} is not a GPU of the spec table; choose one of: "
            f"{', '.join(specs.sorted_gpu_names())}",
            field,
        )
    return specs.get_gpu(name)


@_kind("model size")
@checked
def weights_gb(model: str, fmt: WeightFormatName) -> float:
    """GB of a catalogue model's weights in a format (gpulab.memory.weight_bytes)."""
    return memory.weight_bytes(models.get(model), fmt) / GB


@_kind("bytes read per token")
@checked
def read_gb(
    model: str, fmt: WeightFormatName, context: PositiveInt = EMPTY_CACHE, batch: PositiveInt = 1
) -> float:
    """GB one decoding step reads: the weights a token uses once, plus `batch` KV caches of
    `context` tokens in 16 bits (gpulab.perf.decode_bytes_per_step)."""
    return perf.decode_bytes_per_step(models.get(model), fmt, KV_CACHE, batch, context) / GB


@_kind("decode bound")
@checked
def bound_tok_s(
    model: str,
    fmt: WeightFormatName,
    device: str | PositiveFloat,
    context: PositiveInt = EMPTY_CACHE,
    batch: PositiveInt = 1,
) -> float:
    """Upper bound on tokens/s (all sequences together): batch x bandwidth / read_gb."""
    return batch * _bandwidth(device, "device") / read_gb(model, fmt, context, batch)


@checked
def layers_that_fit(
    model: str, fmt: WeightFormatName, gpu: str, context: PositiveInt = 4096
) -> int:
    """Decoder layers (+1 for the head) that fit on `gpu` with a KV cache of `context` tokens,
    as llama.cpp's -ngl and Ollama's automatic split count them (memory.gpu_layers_that_fit)."""
    card = _gpu(gpu)
    return memory.gpu_layers_that_fit(models.get(model), card.model_memory_bytes, fmt, context)


@_kind("offloaded decode bound")
@checked
def offload_tok_s(
    model: str,
    fmt: WeightFormatName,
    gpu: str = "RTX 4090",
    context: PositiveInt = 4096,
    ram: str | PositiveFloat = "Core i9-13900K",
    gpu_layers: NonNegativeInt | None = None,
) -> float:
    """Decode bound with the first layers on `gpu` and the rest computed by the CPU from `ram`
    (perf.offloaded_tokens_per_s): as many as fit (layers_that_fit) unless `gpu_layers` says."""
    n = layers_that_fit(model, fmt, gpu, context) if gpu_layers is None else gpu_layers
    gpu_gbs, ram_gbs = _gpu(gpu).bandwidth_gbs, _bandwidth(ram, "ram")
    spec = models.get(model)
    return perf.offloaded_tokens_per_s(spec, n, fmt, gpu_gbs, ram_gbs, context, KV_CACHE)


@_kind("full fine-tune memory")
@checked
def full_finetune_gb(
    model: str, precision: TrainingPrecision = "bf16-mixed", optimizer: Optimizer = "adamw"
) -> float:
    """GB a full fine-tune holds before activations: weights, gradients, optimizer states
    (gpulab.memory.estimate_training's parts)."""
    b = memory.estimate_training(models.get(model), precision, optimizer, batch=1, seq_len=1)
    return (b.weights + b.gradients + b.optimizer) / GB


@_kind("CPU peak")
@checked
def cpu_peak_tflops(cpu: str = "Core i9-13900K", clocks: CpuClock = "all-core") -> float:
    """A CPU's FP32 peak in TFLOP/s at a clock setting (specs.CPUSpec.peak_fp32_flops); the
    all-core turbo is the realistic peak of a parallel kernel."""
    try:
        spec = specs.get_cpu(cpu)
    except GpulabConfigError as err:
        raise GpulabConfigError(
            f"cpu={cpu!r} is not a CPU of the spec table; known: {_known_cpus(err)}", "cpu"
        ) from None
    return spec.peak_fp32_flops(clocks) / 1e12
