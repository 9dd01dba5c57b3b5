"""Memory estimates for inference and training (chapter 2; chapters 3, 5, 6 and 7 use them).

    from gpulab import memory
    from gpulab import models

    spec = models.get("Llama-3-8B")            # or ModelSpec.from_hf_config(cfg)

    b = memory.estimate_inference(spec, weights="int4", kv_cache="bf16", batch=1, seq_len=4096)
    b = memory.estimate_training(spec, precision="bf16-mixed", optimizer="adamw", batch=8, seq_len=2048)
    b.weights, b.kv_cache, b.activations, b.gradients, b.optimizer, b.overhead, b.total  # bytes

Every figure is arithmetic on the architecture: bytes per parameter for each format and
recipe, the KV-cache formula, and a count of the activation tensors a decoder layer keeps. The
lab (labs/02) and benchmarks/memory_accuracy.py check the arithmetic against memory measured
on real models built from config dicts.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated

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
    "largest_batch",
    "gpu_layers_that_fit",
    "largest_context",
    "layer_bytes",
    "runtime_overhead",
    "weight_bytes",
]

MODES = ("inference", "training")
Mode = Annotated[str, OneOf(MODES, "mode")]
Logits = Annotated[str, OneOf(("last", "all"), "logits choice")]


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
    """Bytes of each part of a workload's memory, and their total."""

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

    PARTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead")

    @property
    def total(self) -> int:
        """Sum of every part, in bytes: every part held at once.

        An upper bound of the steady state. A training step's peak can exceed it by a
        transient the parts do not hold: with tied embeddings, the embedding's gradient is
        made as a copy and added to the head's at the end of the backward pass, when almost no
        activation is left (property-based tests found it at tiny sequence lengths).
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
        rows = [f"{p:12s} {getattr(self, p) / GIB:10.2f} GiB" for p in self.PARTS if getattr(self, p)]
        return "\n".join(rows + [f"{'total':12s} {self.total / GIB:10.2f} GiB"])

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{p}</td><td style='text-align:right'>{getattr(self, p) / GIB:.2f} GiB</td></tr>"
                       for p in self.PARTS if getattr(self, p))
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (f"<table>{rows}<tr><th>total</th><th style='text-align:right'>"
                f"{self.total / GIB:.2f} GiB</th></tr></table>" + (f"<ul>{notes}</ul>" if notes else ""))


# ---------------------------------------------------------------- overhead

# The CUDA context (driver state and the kernels loaded into it) takes memory that no PyTorch
# counter shows: "from 200+ MB to 700+ MB" depending on the machine (pytorch/pytorch#28113),
# about 300 MB since CUDA 11.7's lazy module loading (pytorch/pytorch#107667, a maintainer's
# reply). 0.5 GiB is taken here; the lab measures yours (nvidia-smi's figure minus PyTorch's).
CUDA_CONTEXT_BYTES = GIB // 2
# PyTorch's caching allocator keeps freed blocks and rounds sizes up; the gap between reserved
# and allocated memory is workload-dependent. 5% of the tensors is an assumption, stated as
# such; the lab measures it as torch.cuda.memory_reserved() - memory_allocated().
ALLOCATOR_SLACK = 0.05


@checked
def runtime_overhead(tensor_bytes: NonNegativeFloat, device: str = "cuda",
                     context_bytes: NonNegativeInt | None = None,
                     slack: Fraction | None = None) -> int:
    """Memory beyond the tensors: the runtime context plus the allocator's slack.

    On the CPU there is no device context: only the slack applies.
    """
    context = (CUDA_CONTEXT_BYTES if device != "cpu" else 0) if context_bytes is None else context_bytes
    slack = ALLOCATOR_SLACK if slack is None else slack
    return int(context + slack * tensor_bytes)


# ---------------------------------------------------------------- inference


@checked
def kv_cache_bytes(spec: ModelSpec, seq_len: PositiveInt, batch: PositiveInt = 1,
                   kv_cache: KVFormat = "bf16", mla_expanded: bool = False) -> int:
    """KV cache: 2 x layers x kv_heads x head_dim x seq_len x batch x bytes (MHA/GQA/MQA).

    For multi-head latent attention (DeepSeek-V2/V3) the compressed latent cache,
    layers x (kv_lora_rank + qk_rope_head_dim) x seq_len x batch x bytes, as vLLM and SGLang
    store it; `mla_expanded=True` gives the larger cache of implementations that expand it to
    full keys and values per head.
    """
    per_token = spec.kv_elements_per_token_expanded() if (mla_expanded and spec.attention_type == "mla") \
        else spec.kv_elements_per_token()
    return int(per_token * seq_len * batch * KV_FORMATS[kv_cache])


def _ffn_width(spec: ModelSpec) -> int:
    """Width of the widest MLP a token passes through (dense, or its experts together)."""
    if not spec.is_moe:
        return spec.intermediate_size
    experts = spec.experts_per_token * spec.moe_intermediate_size
    shared = spec.n_shared_experts * spec.moe_intermediate_size
    return max(spec.intermediate_size if spec.first_dense_layers else 0, experts + shared)


@checked
def inference_activation_bytes(spec: ModelSpec, batch: PositiveInt, seq_len: PositiveInt,
                               dtype: ActivationDtype = "bf16", logits: Logits = "last") -> int:
    """Transient activations of one forward pass over batch x seq_len tokens (the prefill).

    Nothing is kept for a backward pass, so the peak is the widest point of one layer: the
    residual stream and a norm's output (2 x hidden), and in the MLP the gate, the up
    projection, the activated gate and their product (4 x ffn width for a gated MLP; 2 x for
    a plain one) per token. The output head's logits are added: for the last position only
    (`logits="last"`, what generation computes) or for every position (`"all"`, a plain forward
    pass), in fp32 as the library upcasts them.
    """
    a = ACTIVATION_BYTES[dtype]
    tokens = batch * seq_len
    ffn = (4 if spec.gated_mlp else 2) * _ffn_width(spec)
    # A mixture-of-experts layer also holds its dispatch buffers: the tokens gathered for an
    # expert, the expert's output, its weighted copy and the output accumulator (4 x hidden).
    dispatch = 4 * spec.hidden_size if spec.is_moe else 0
    layer_peak = tokens * (2 * spec.hidden_size + ffn + dispatch) * a
    logit_rows = batch if logits == "last" else tokens
    return int(layer_peak + logit_rows * spec.vocab_size * 4)


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
    device: str = "cuda",
    mla_expanded: bool = False,
    context_bytes: NonNegativeInt | None = None,
    allocator_slack: Fraction | None = None,
) -> Breakdown:
    """Memory to serve `batch` sequences of `seq_len` tokens: weights, KV cache, activations, overhead."""
    w = weight_bytes(spec, weights)
    kv = kv_cache_bytes(spec, seq_len, batch, kv_cache, mla_expanded)
    act = inference_activation_bytes(spec, batch, seq_len, activations, logits)
    over = runtime_overhead(w + kv + act, device, context_bytes, allocator_slack)
    notes = [f"weights in {weights}: {bits_per_weight(weights):.3f} bits per weight"]
    if spec.is_moe:
        notes.append(f"mixture of experts: all {spec.n_params / 1e9:.1f}B parameters are resident; "
                     f"{spec.n_active_params / 1e9:.1f}B are used per token")
    if spec.attention_type == "mla":
        notes.append("KV cache: MLA's compressed latent cache" + (" expanded per head" if mla_expanded else ""))
    return Breakdown(weights=w, kv_cache=kv, activations=act, overhead=over, notes=tuple(notes))


# ---------------------------------------------------------------- training

# Optimizer state bytes per parameter, as a function of the recipe's state precision.
# (A formula per optimizer, so it lives with the estimator rather than in gpulab.formats.)
OPTIMIZERS: dict[str, Callable[[int], float]] = {
    "adamw": lambda state_bytes: 2 * state_bytes,      # exp_avg and exp_avg_sq
    "sgd-momentum": lambda state_bytes: state_bytes,   # momentum buffer
    "sgd": lambda state_bytes: 0,
    # bitsandbytes 8-bit AdamW: two uint8 states + one fp32 absmax per block of 2048 values
    # (Dettmers et al., 8-bit Optimizers via Block-wise Quantization, 2022)
    "adamw8bit": lambda state_bytes: 2 * (1 + 4 / 2048),
}
Optimizer = Annotated[str, OneOf(OPTIMIZERS, "optimizer")]


@checked
def training_activation_bytes(spec: ModelSpec, batch: PositiveInt, seq_len: PositiveInt,
                              dtype: ActivationDtype = "bf16",
                              activation_checkpointing: bool = False) -> int:
    """Activations kept for the backward pass of a decoder (Llama-style layer, SDPA attention).

    Per layer and token, in elements of the compute dtype:
    - each of the two RMSNorms keeps its input, the normalised values and its output: 2 x 3h;
    - attention keeps the rotated queries (h), keys and values (2 x kv width), the rotary
      cos and sin (2 x head_dim), the attention output and its contiguous copy for the
      output projection (2h); fused attention keeps a log-sum-exp per head (fp32), not the
      seq x seq score matrix;
    - a gated MLP keeps the gate, its activation, the up projection and their product
      (4 x ffn width; 2 x for a plain MLP).
    A mixture-of-experts layer adds its gathered inputs and unweighted outputs per chosen expert
    and its router's logits and probabilities (2 x experts_per_token x h + 2 x experts).
    That is 9h + 2 kv + 2 head_dim + 4 ffn (+ the MoE terms), which the lab and benchmarks/memory_accuracy.py
    check against PyTorch's MemTracker on real models. The loss keeps the logits and their
    log-softmax in fp32 (2 x vocab x 4 bytes per token). With checkpointing a layer keeps only
    its input (h) and one layer's activations are rebuilt at a time in the backward pass.
    """
    a = ACTIVATION_BYTES[dtype]
    tokens = batch * seq_len
    kv_width = spec.n_kv_heads * spec.head_dim
    ffn = (4 if spec.gated_mlp else 2) * _ffn_width(spec)
    # A mixture-of-experts layer also keeps, per token, the inputs gathered for each chosen
    # expert and each expert's output before weighting (2 x experts_per_token x h), and the
    # router's logits and probabilities (2 x experts).
    moe = 2 * spec.experts_per_token * spec.hidden_size + 2 * spec.n_routed_experts if spec.is_moe else 0
    per_layer = tokens * (9 * spec.hidden_size + 2 * kv_width + 2 * spec.head_dim + ffn + moe) * a
    per_layer += tokens * spec.n_heads * 4  # log-sum-exp, fp32
    head = tokens * spec.vocab_size * 4 * 2
    if activation_checkpointing:
        return int(spec.n_layers * tokens * spec.hidden_size * a + per_layer + head)
    return int(spec.n_layers * per_layer + head)


@checked
def estimate_training(
    spec: ModelSpec,
    precision: TrainingPrecision = "bf16-mixed",
    optimizer: Optimizer = "adamw",
    batch: PositiveInt = 8,
    seq_len: PositiveInt = 2048,
    activation_checkpointing: bool = False,
    *,
    device: str = "cuda",
    context_bytes: NonNegativeInt | None = None,
    allocator_slack: Fraction | None = None,
) -> Breakdown:
    """Memory of one training step: weights, gradients, optimizer states, activations, overhead."""
    recipe = TRAINING_PRECISIONS[precision]
    n = spec.n_params
    state_bytes = 4 if recipe["master"] else recipe["gradients"]
    w = int(n * recipe["weights"])
    g = int(n * recipe["gradients"])
    opt = int(n * (recipe["master"] + OPTIMIZERS[optimizer](state_bytes)))
    act = training_activation_bytes(spec, batch, seq_len, recipe["activations"], activation_checkpointing)
    over = runtime_overhead(w + g + opt + act, device, context_bytes, allocator_slack)
    per_param = (w + g + opt) / n
    notes = (f"{precision} with {optimizer}: {per_param:.1f} bytes per parameter before activations",)
    # The backward pass frees each layer's activations as it creates that layer's gradients,
    # so memory peaks either at its start (every activation, plus the output head's gradient,
    # the first one created) or at its end (every gradient; with tied embeddings the
    # embedding's gradient is built separately and added to the head's, one more copy).
    parts = spec.params_by_component()
    head_grad = (parts["lm_head"] or parts["embedding"]) * recipe["gradients"]
    tied_copy = head_grad if spec.tie_embeddings else 0
    peak = w + opt + max(act + head_grad, g + tied_copy)
    return Breakdown(weights=w, gradients=g, optimizer=opt, activations=act, overhead=over,
                     notes=notes, peak_tensors=int(peak))


# ---------------------------------------------------------------- what fits


@checked
def largest_batch(spec: ModelSpec, budget_bytes: PositiveFloat, mode: Mode = "inference", *,
                  seq_len: PositiveInt = 4096, limit: PositiveInt = 1 << 20, **kwargs) -> int:
    """The largest batch whose estimated total fits `budget_bytes` (0 when not even 1 fits).

    `mode` is "inference" or "training"; other keyword arguments go to the estimator.
    The estimate grows with the batch, so a binary search finds the answer.
    """
    estimate = _estimator(mode)
    with boundary():  # **kwargs are the caller's, checked by the estimator as such
        return _largest(lambda b: estimate(spec, batch=b, seq_len=seq_len, **kwargs).total,
                        budget_bytes, limit)


@checked
def largest_context(spec: ModelSpec, budget_bytes: PositiveFloat, mode: Mode = "inference", *,
                    batch: PositiveInt = 1, limit: PositiveInt = 1 << 24, **kwargs) -> int:
    """The longest sequence whose estimated total fits `budget_bytes` (0 when none fits)."""
    estimate = _estimator(mode)
    with boundary():  # **kwargs are the caller's, checked by the estimator as such
        return _largest(lambda s: estimate(spec, batch=batch, seq_len=s, **kwargs).total,
                        budget_bytes, limit)


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
def gpus_that_fit(total_bytes: NonNegativeFloat, gpus: Mapping | None = None,
                  count: PositiveInt = 1) -> list[dict]:
    """Each GPU of the spec table with its memory, whether `total_bytes` fits on `count` of them.

    A card's capacity is `GPUSpec.model_memory_bytes`: its marketed memory (decimal GB; for an
    Apple chip the share macOS lets the GPU use); the estimate's overhead already counts what
    the runtime takes. Sorted by memory, smallest first.
    """
    table = specs.load_gpus() if gpus is None else gpus
    rows = []
    for name, gpu in table.items():
        capacity = gpu.model_memory_bytes * count
        rows.append({"gpu": name, "memory_gb": gpu.memory_gb * count, "fits": total_bytes <= capacity,
                     "headroom_gb": (capacity - total_bytes) / 1e9})
    return sorted(rows, key=lambda r: r["memory_gb"])


@checked
def layer_bytes(spec: ModelSpec, fmt: WeightFormatName = "q4_k_m", seq_len: PositiveInt = 4096,
                kv_cache: KVFormat = "fp16", batch: PositiveInt = 1) -> list[int]:
    """Bytes each decoder layer needs on its device: its weights in `fmt` and its KV cache."""
    bits = bits_per_weight(fmt) / 8
    kv_per_layer = kv_cache_bytes(spec, seq_len, batch, kv_cache) / spec.n_layers
    return [int(spec.layer_params(i) * bits + kv_per_layer) for i in range(spec.n_layers)]


@checked
def gpu_layers_that_fit(spec: ModelSpec, vram_bytes: PositiveFloat, fmt: WeightFormatName = "q4_k_m",
                        seq_len: PositiveInt = 4096, kv_cache: KVFormat = "fp16",
                        context_bytes: NonNegativeInt = CUDA_CONTEXT_BYTES) -> int:
    """How many decoder layers fit in `vram_bytes` (llama.cpp's -ngl, ollama's num_gpu).

    The GPU also holds the output head once every layer is there (llama.cpp offloads it as
    the last "layer"); the runtime context is taken first. Returns 0..n_layers (+1 with the head).
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
