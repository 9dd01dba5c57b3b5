"""Memory estimates for inference and training (chapter 2; chapters 3, 5, 6 and 7 use them).

    from gpulab import memory
    from gpulab import models

    spec = models.get("Llama-3-8B")            # or ModelSpec.from_hf_config(cfg)

    b = memory.estimate_inference(spec, weights="int4", kv_cache="bf16", batch=1, seq_len=4096)
    b = memory.estimate_training(spec, precision="bf16-mixed", optimizer="adamw",
                                 batch=8, seq_len=2048)
    b.weights, b.kv_cache, b.activations, b.gradients, b.optimizer, b.overhead, b.total  # bytes

Every figure is arithmetic on the architecture: bytes per parameter for each format and
recipe, the KV-cache formula, and a count of the activation tensors a decoder layer keeps. The
lab (labs/02), benchmarks/memory_accuracy.py and benchmarks/memory_sweep.py (on random models it
was never tuned on) check the arithmetic against memory measured on models built from configs.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

from gpulab.core.constraints import show
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB
from gpulab.core.validate import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    boundary,
    checked,
)
from gpulab.estimate.activations import (
    OPTIMIZERS,
    Attention,
    Logits,
    Optimizer,
    OptimizerImpl,
    inference_activation_bytes,
    last_mlp_backward_bytes,
    loss_head_bytes,
    optimizer_step_bytes,
    training_activation_bytes,
)
from gpulab.reference import specs
from gpulab.reference.formats import (
    ACTIVATION_BYTES,
    KV_FORMATS,
    TRAINING_PRECISIONS,
    WEIGHT_FORMATS,
    ActivationDtype,
    KVFormat,
    TrainingPrecision,
    WeightFormat,
    WeightFormatName,
    bits_per_weight,
    weight_format,
)
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "ACTIVATION_BYTES",
    "KV_FORMATS",
    "OPTIMIZERS",
    "TRAINING_PRECISIONS",
    "WEIGHT_FORMATS",
    "Breakdown",
    "ModelSpec",
    "WeightFormat",
    "bits_per_weight",
    "estimate_inference",
    "estimate_training",
    "inference_activation_bytes",
    "largest_batch",
    "gpu_layers_that_fit",
    "largest_context",
    "layer_bytes",
    "optimizer_step_bytes",
    "runtime_overhead",
    "training_activation_bytes",
    "weight_bytes",
]

MODES = ("inference", "training")
Mode = Annotated[str, OneOf(MODES, "mode")]


@checked
def weight_bytes(spec: ModelSpec, fmt: WeightFormatName = "bf16") -> int:
    """Bytes of all weights in a format.

    Hugging Face style quantized formats (int8, int4, nf4, fp8) quantize the decoder's
    matrices and keep the embedding, the output head and the norms in 16 bits, as bitsandbytes
    and GPTQ/AWQ loaders do; GGUF formats and full-precision formats store every tensor in the
    format (a GGUF mix's published bits per weight already covers the whole file).
    """
    f = weight_format(fmt)
    if not f.keeps_embeddings_16bit:
        return int(spec.n_params * f.bits_per_weight / 8)
    parts = spec.params_by_component()
    kept = parts["embedding"] + parts["lm_head"] + parts["norms"]
    return int((spec.n_params - kept) * f.bits_per_weight / 8 + kept * 2)


# ---------------------------------------------------------------- breakdown


@checked
@dataclass(frozen=True)
class Breakdown:
    """Bytes of each part of a workload's memory, and their total: estimated here, or measured
    by ``gpulab.memprobe`` (which fills `device`, and `allocator_peak` on a CUDA GPU)."""

    weights: int = 0
    kv_cache: int = 0
    activations: int = 0
    gradients: int = 0
    optimizer: int = 0
    overhead: int = 0
    notes: tuple[str, ...] = field(default=(), compare=False)
    # Tensors live at the worst moment, when parts do not all peak together (training:
    # activations shrink as gradients grow during the backward pass); None: all together.
    peak_tensors: int | None = None
    device: str | None = None  # where it was measured; None for an estimate
    allocator_peak: int | None = None  # measured on a CUDA GPU: torch.cuda.max_memory_reserved

    PARTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead")

    @property
    def total(self) -> int:
        """Sum of every part, in bytes: every part held at once.

        An upper bound of the steady state. A training step's peak can exceed it by
        transients the parts do not hold: the optimizer step's temporaries (PyTorch's foreach
        AdamW makes a copy of every parameter in the state dtype), the loss's backward (the
        vocab-wide fp32 gradients of the log-softmax and the logits), and with tied embeddings
        the embedding's gradient, made as a copy and added to the head's at the end of the
        backward pass. `peak` counts them.
        """
        return sum(getattr(self, p) for p in self.PARTS)

    @property
    def peak(self) -> int:
        """Estimated peak: the tensors live at the worst moment, plus the overhead."""
        tensors = self.total - self.overhead if self.peak_tensors is None else self.peak_tensors
        return tensors + self.overhead

    def as_dict(self) -> dict[str, int]:
        """Each part in bytes, and the total."""
        return {p: getattr(self, p) for p in self.PARTS} | {"total": self.total}

    def gib(self) -> dict[str, float]:
        """Each part in GiB."""
        return {k: v / GIB for k, v in self.as_dict().items()}

    def __str__(self) -> str:
        rows = [
            f"{p:12s} {getattr(self, p) / GIB:10.2f} GiB" for p in self.PARTS if getattr(self, p)
        ]
        return "\n".join(rows + [f"{'total':12s} {self.total / GIB:10.2f} GiB"])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{p}</td>"
            f"<td style='text-align:right'>{getattr(self, p) / GIB:.2f} GiB</td></tr>"
            for p in self.PARTS
            if getattr(self, p)
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<table>{rows}<tr><th>total</th><th style='text-align:right'>"
            f"{self.total / GIB:.2f} GiB</th></tr></table>" + (f"<ul>{notes}</ul>" if notes else "")
        )


# ---------------------------------------------------------------- overhead

# The runtime's share of a card (the CUDA context, the allocator's slack) is counted once, on the
# capacity side: GPUSpec.model_memory_bytes takes it off the card, so the estimates below count
# tensors only. runtime_overhead() gives the same terms for a caller who wants the total as the
# device sees it (nvidia-smi's figure), and only such a caller passes context_bytes or slack.
CUDA_CONTEXT_BYTES = specs.CUDA_CONTEXT_BYTES
ALLOCATOR_SLACK = specs.ALLOCATOR_SLACK


@checked
def runtime_overhead(
    tensor_bytes: NonNegativeFloat,
    device: str = "cuda",
    context_bytes: NonNegativeInt | None = None,
    slack: Fraction | None = None,
) -> int:
    """Memory beyond the tensors: the runtime context plus the allocator's slack.

    The same terms that GPUSpec.model_memory_bytes takes off a card; on the CPU there is no
    device context, only the slack applies.
    """
    context = (
        (CUDA_CONTEXT_BYTES if device != "cpu" else 0) if context_bytes is None else context_bytes
    )
    slack = ALLOCATOR_SLACK if slack is None else slack
    return int(context + slack * tensor_bytes)


def _asked_overhead(
    tensor_bytes: float, device: str, context_bytes: int | None, slack: float | None
) -> int:
    """The runtime's share, when the caller asked for it (else 0: the card's capacity has it)."""
    if context_bytes is None and slack is None:
        return 0
    return runtime_overhead(tensor_bytes, device, context_bytes or 0, slack or 0.0)


# ---------------------------------------------------------------- inference


@checked
def kv_cache_bytes(
    spec: ModelSpec,
    seq_len: PositiveInt,
    batch: PositiveInt = 1,
    kv_cache: KVFormat = "bf16",
    mla_expanded: bool = False,
) -> int:
    """KV cache: 2 x layers x kv_heads x head_dim x seq_len x batch x bytes (MHA/GQA/MQA).

    For multi-head latent attention (DeepSeek-V2/V3) the compressed latent cache, layers x
    (kv_lora_rank + qk_rope_head_dim) x seq_len x batch x bytes, as vLLM and SGLang store it;
    `mla_expanded=True`: implementations that expand it to full keys and values per head.
    """
    per_token = (
        spec.kv_elements_per_token_expanded()
        if (mla_expanded and spec.attention_type == "mla")
        else spec.kv_elements_per_token()
    )
    return int(per_token * seq_len * batch * KV_FORMATS[kv_cache])


@checked
def estimate_inference(
    spec: ModelSpec,
    weights: WeightFormatName = "bf16",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
    *,
    activations: ActivationDtype = "bf16",
    logits: Logits = "last",
    attention: Attention = "sdpa",
    fused_mlp: bool = False,
    use_cache: bool = True,
    device: str = "cuda",
    mla_expanded: bool = False,
    context_bytes: NonNegativeInt | None = None,
    allocator_slack: Fraction | None = None,
) -> Breakdown:
    """Memory to serve `batch` sequences of `seq_len` tokens: weights, KV cache, activations.

    The total is the tensors, to compare with GPUSpec.model_memory_bytes (the activations, and
    where they apply: inference_activation_bytes; `use_cache=False`: no KV cache is kept, the
    keys and values live within their layer). Passing `context_bytes` and/or
    `allocator_slack` adds that runtime share as `overhead`, for a total as the device reports
    it (then compare with GPUSpec.memory_bytes).
    """
    w = weight_bytes(spec, weights)
    kv = kv_cache_bytes(spec, seq_len, batch, kv_cache, mla_expanded) if use_cache else 0
    act = inference_activation_bytes(
        spec, batch, seq_len, activations, logits, attention, fused_mlp
    )
    over = _asked_overhead(w + kv + act, device, context_bytes, allocator_slack)
    notes = [f"weights in {weights}: {bits_per_weight(weights):.3f} bits per weight"]
    if spec.is_moe:
        notes.append(
            f"mixture of experts: all {spec.n_params / 1e9:.1f}B parameters are resident; "
            f"{spec.n_active_params / 1e9:.1f}B are used per token"
        )
    if spec.attention_type == "mla":
        notes.append(
            "KV cache: MLA's compressed latent cache"
            + (" expanded per head" if mla_expanded else "")
        )
    return Breakdown(
        weights=w, kv_cache=kv, activations=act, overhead=over, notes=(*notes, *spec.notes)
    )


# ---------------------------------------------------------------- training


@checked
def estimate_training(
    spec: ModelSpec,
    precision: TrainingPrecision = "bf16-mixed",
    optimizer: Optimizer = "adamw",
    batch: PositiveInt = 8,
    seq_len: PositiveInt = 2048,
    activation_checkpointing: bool = False,
    *,
    attention: Attention = "sdpa",
    device: str = "cuda",
    optimizer_impl: OptimizerImpl = "auto",
    gradients_kept: bool = False,
    context_bytes: NonNegativeInt | None = None,
    allocator_slack: Fraction | None = None,
) -> Breakdown:
    """Memory of one training step: weights, gradients, optimizer states, activations.

    Tensors only, like estimate_inference (whose docstring says how to add the runtime share).
    `peak` is the worst moment of the step (below); `optimizer_impl`: optimizer_step_bytes.
    `gradients_kept`: gradients already exist while the forward and backward run (the last
    step's, under zero_grad(set_to_none=False), or those of accumulating micro-batches).
    """
    recipe = TRAINING_PRECISIONS[precision]
    n = spec.n_params
    state_bytes = 4 if recipe["master"] else recipe["gradients"]
    w = int(n * recipe["weights"])
    g = int(n * recipe["gradients"])
    opt = int(n * (recipe["master"] + OPTIMIZERS[optimizer](state_bytes)))
    act = training_activation_bytes(
        spec, batch, seq_len, recipe["activations"], activation_checkpointing, attention
    )
    over = _asked_overhead(w + g + opt + act, device, context_bytes, allocator_slack)
    per_param = (w + g + opt) / n
    notes = (
        f"{precision} with {optimizer}: {per_param:.1f} bytes per parameter before activations",
        *spec.notes,
    )
    # The worst of five moments (measured with MemTracker): the loss's backward (log-softmax,
    # its gradient and the logits', 3 fp32 vocab-wide tensors per token), the head's (the
    # logits' gradient, the head's weight gradient), the last layer's MLP backward (+ the down
    # projection's gradient, ffn x h), the end (every gradient; tied embeddings add a copy), the
    # step. Each layer's backward frees and makes as much as the next: the ends are the extremes.
    parts = spec.params_by_component()
    head_grad = (parts["lm_head"] or parts["embedding"]) * recipe["gradients"]
    tied_copy = head_grad if spec.tie_embeddings else 0
    tokens = batch * seq_len
    kept = act - loss_head_bytes(spec, tokens, recipe["activations"])
    loss_backward = kept + tokens * spec.vocab_size * 12
    head_backward = kept + tokens * spec.vocab_size * 4 + head_grad
    down_grad = 0 if spec.is_moe else spec.intermediate_size * spec.hidden_size
    last_mlp = kept + last_mlp_backward_bytes(spec, tokens, recipe["activations"]) + head_grad
    last_mlp += down_grad * recipe["gradients"]
    step = optimizer_step_bytes(spec, optimizer, optimizer_impl, device, state_bytes)
    early = g if gradients_kept else 0  # gradients alive before the backward makes them
    backward = max(loss_backward, head_backward, last_mlp) + early
    peak = w + opt + max(backward, g + tied_copy, g + step)
    return Breakdown(
        weights=w,
        gradients=g,
        optimizer=opt,
        activations=act,
        overhead=over,
        notes=notes,
        peak_tensors=int(peak),
    )


# ---------------------------------------------------------------- what fits


@checked
def largest_batch(
    spec: ModelSpec,
    budget_bytes: PositiveFloat,
    mode: Mode = "inference",
    *,
    seq_len: PositiveInt = 4096,
    limit: PositiveInt = 1 << 20,
    **kwargs,
) -> int:
    """The largest batch whose estimated total fits `budget_bytes` (0 when not even 1 fits).

    `mode` is "inference" or "training"; other keyword arguments go to the estimator.
    The estimate grows with the batch, so a binary search finds the answer.
    """
    estimate = _estimator(mode)
    with boundary():  # **kwargs are the caller's, checked by the estimator as such
        return _largest(
            lambda b: estimate(spec, batch=b, seq_len=seq_len, **kwargs).total, budget_bytes, limit
        )


@checked
def largest_context(
    spec: ModelSpec,
    budget_bytes: PositiveFloat,
    mode: Mode = "inference",
    *,
    batch: PositiveInt = 1,
    limit: PositiveInt = 1 << 24,
    **kwargs,
) -> int:
    """The longest sequence whose estimated total fits `budget_bytes` (0 when none fits)."""
    estimate = _estimator(mode)
    with boundary():  # **kwargs are the caller's, checked by the estimator as such
        return _largest(
            lambda s: estimate(spec, batch=batch, seq_len=s, **kwargs).total, budget_bytes, limit
        )


def _estimator(mode: str):
    return estimate_inference if mode == "inference" else estimate_training


def _largest(total_for: Callable[[int], int], budget_bytes: float, limit: int) -> int:
    """Largest n in [1, limit] with total_for(n) <= budget, for a non-decreasing total_for."""
    if total_for(1) > budget_bytes:
        return 0
    lo, hi = 1, 1
    while hi < limit and total_for(min(hi * 2, limit)) <= budget_bytes:
        hi = min(hi * 2, limit)
        lo = hi
    hi = min(hi * 2, limit)
    while lo < hi:  # invariant: total_for(lo) fits
        mid = (lo + hi + 1) // 2
        if total_for(mid) <= budget_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


@checked
def gpus_that_fit(
    total_bytes: NonNegativeFloat, gpus: Mapping | None = None, count: PositiveInt = 1
) -> list[dict]:
    """Each GPU of the spec table with its memory, whether `total_bytes` fits on `count` of them.

    A card's capacity is `GPUSpec.model_memory_bytes`: the memory its driver reports less the
    runtime's context and slack (for an Apple chip, the share macOS lets the GPU use), so
    `total_bytes` is the tensors of an estimate. Sorted by memory, smallest first.
    """
    table = specs.load_gpus() if gpus is None else gpus
    rows = []
    for name, gpu in table.items():
        if not isinstance(gpu, specs.GPUSpec):  # the validation layer checks the mapping only
            raise GpulabConfigError(
                f"gpus[{show(name, 30)}] must be a GPUSpec, not {type(gpu).__name__} "
                f"{show(gpu)}; {specs.GPUSpec.__validation_hint__}",
                "gpus",
            )
        capacity = gpu.model_memory_bytes * count
        rows.append(
            {
                "gpu": name,
                "memory_gb": gpu.memory_gb * count,
                "usable_gb": capacity / 1e9,
                "fits": total_bytes <= capacity,
                "headroom_gb": (capacity - total_bytes) / 1e9,
            }
        )
    return sorted(rows, key=lambda r: r["memory_gb"])


@checked
def layer_bytes(
    spec: ModelSpec,
    fmt: WeightFormatName = "q4_k_m",
    seq_len: PositiveInt = 4096,
    kv_cache: KVFormat = "fp16",
    batch: PositiveInt = 1,
) -> list[int]:
    """Bytes each decoder layer needs on its device: its weights in `fmt` and its KV cache."""
    bits = bits_per_weight(fmt) / 8
    kv_per_layer = kv_cache_bytes(spec, seq_len, batch, kv_cache) / spec.n_layers
    return [int(spec.layer_params(i) * bits + kv_per_layer) for i in range(spec.n_layers)]


@checked
def gpu_layers_that_fit(
    spec: ModelSpec,
    vram_bytes: PositiveFloat,
    fmt: WeightFormatName = "q4_k_m",
    seq_len: PositiveInt = 4096,
    kv_cache: KVFormat = "fp16",
    context_bytes: NonNegativeInt = 0,
) -> int:
    """How many decoder layers fit in `vram_bytes` (llama.cpp's -ngl, ollama's num_gpu).

    `vram_bytes` is what the tensors may use, a card's GPUSpec.model_memory_bytes (which has
    the runtime context off already; pass `context_bytes` only for a raw capacity). The GPU
    also holds the output head once every layer is there (llama.cpp offloads it as the last
    "layer"). Returns 0..n_layers (+1 with the head).
    """
    free = vram_bytes - context_bytes
    count = 0
    for size in layer_bytes(spec, fmt, seq_len, kv_cache):
        if size > free:
            return count
        free -= size
        count += 1
    parts = spec.params_by_component()
    head = (parts["lm_head"] or parts["embedding"]) * bits_per_weight(fmt) / 8
    return count + 1 if head <= free else count
