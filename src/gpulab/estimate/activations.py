"""What a pass or a step holds besides the weights: activations, the loss's tensors, the
optimizer's states and the temporaries of its step (chapters 2, 5 and 7).

gpulab.memory assembles these into a workload's breakdown; this module holds the formulas,
each one checked against memory measured on real models (benchmarks/memory_accuracy.py and
tests/unit/test_memory.py, tests/unit/test_memprobe.py): a forward pass's widest moment, the
tensors a training step keeps for its backward pass, and what PyTorch's optimizers allocate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from gpulab.core.validate import OneOf, PositiveInt, checked
from gpulab.reference.formats import ACTIVATION_BYTES, ActivationDtype
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "OPTIMIZERS",
    "inference_activation_bytes",
    "loss_head_bytes",
    "optimizer_step_bytes",
    "training_activation_bytes",
]

Logits = Annotated[str, OneOf(("last", "all"), "logits choice")]

Attention = Annotated[str, OneOf(("sdpa", "eager"), "attention implementation")]
OptimizerImpl = Annotated[
    str, OneOf(("auto", "for-loop", "foreach", "fused"), "optimizer implementation")
]


# Optimizer state bytes per parameter from the state precision (a formula: not in gpulab.formats).
OPTIMIZERS: dict[str, Callable[[int], float]] = {
    "adamw": lambda state_bytes: 2 * state_bytes,  # exp_avg and exp_avg_sq
    "sgd-momentum": lambda state_bytes: state_bytes,  # momentum buffer
    "sgd": lambda state_bytes: 0,
    # bitsandbytes 8-bit AdamW: two uint8 states + one fp32 absmax per block of 2048 values
    # (Dettmers et al., 8-bit Optimizers via Block-wise Quantization, 2022)
    "adamw8bit": lambda state_bytes: 2 * (1 + 4 / 2048),
}
Optimizer = Annotated[str, OneOf(OPTIMIZERS, "optimizer")]


def _ffn_width(spec: ModelSpec) -> int:
    """Width of the widest MLP a token passes through (dense, or its experts together)."""
    if not spec.is_moe:
        return spec.intermediate_size
    experts = (spec.experts_per_token + spec.n_shared_experts) * spec.moe_intermediate_size
    return max(spec.intermediate_size if spec.first_dense_layers else 0, experts)


@checked
def inference_activation_bytes(
    spec: ModelSpec,
    batch: PositiveInt,
    seq_len: PositiveInt,
    dtype: ActivationDtype = "bf16",
    logits: Logits = "last",
    attention: Attention = "sdpa",
    fused_mlp: bool = False,
) -> int:
    """Transient activations of one forward pass over batch x seq_len tokens (the prefill).

    The widest of three moments, per token in `dtype` (h hidden, f MLP width, kv = kv_heads x
    head_dim; the KV cache is apart; rotary cos and sin, 2 head_dim per position, throughout):
    an MLP: embeddings (kept to the end), layer input, mid-layer residual, norm output (4h) and
    the activated gate, up and product (3f; fused gate_up, Phi-3's `fused_mlp=True`: 4f; plain
    2f; MoE: per chosen expert the gathered input and gate_up, activation, product); attention:
    3h of those, the query and its rotary terms (4h), new keys and values (2kv) with `"sdpa"`
    (no padding mask); `"eager"` also writes the heads x seq x seq scores (masked and fp32
    softmax at once, + a copy below fp32), repeats keys and values per head (2h, GQA), keeps a
    float causal mask (seq) and the softmax (the attention weights) through the MLP; the head:
    final norm output (h) and the logits of the last position (`"last"`) or all (`"all"`), in
    `dtype` (transformers upcasts only in the loss); a max, not a sum: layers are freed by then.
    Within 1% of MemTracker and the CPU allocator on transformers 5's Llama, Qwen2, Phi-3,
    Mixtral (benchmarks/memory_accuracy.py). Not modelled: padded batches (a seq x seq mask,
    sdpa may write the scores out), GPU kernels' scratch, serving engines' buffers.
    """
    a, h, tokens = ACTIVATION_BYTES[dtype], spec.hidden_size, batch * seq_len
    kv_width = spec.n_kv_heads * spec.head_dim
    mlp = (
        4 * _ffn_width(spec) + spec.experts_per_token * h
        if spec.is_moe
        else ((4 if fused_mlp else 3) if spec.gated_mlp else 2) * spec.intermediate_size
    )
    residual = 4 * h if spec.n_layers > 1 else 3 * h  # layer 0's input is the embeddings
    mlp_phase = tokens * (residual + mlp) * a
    attn_phase = tokens * (7 * h + 2 * kv_width) * a
    if attention == "eager":
        scores, mask = batch * spec.n_heads * seq_len * seq_len, batch * seq_len * seq_len * a
        repeated = 2 * h if spec.n_kv_heads < spec.n_heads else 0
        held = 8 if a == 4 else 2 * a + 4  # masked scores, fp32 softmax, its copy
        attn_phase = tokens * (4 * h + repeated + 2 * kv_width) * a + scores * held + mask
        mlp_phase += scores * a + mask
    rotary = 2 * seq_len * spec.head_dim * a
    head_phase = tokens * h * a + (batch if logits == "last" else tokens) * spec.vocab_size * a
    return int(max(mlp_phase + rotary, attn_phase + rotary, head_phase))


@checked
def training_activation_bytes(
    spec: ModelSpec,
    batch: PositiveInt,
    seq_len: PositiveInt,
    dtype: ActivationDtype = "bf16",
    activation_checkpointing: bool = False,
    attention: Attention = "sdpa",
) -> int:
    """Activations kept for the backward pass of a decoder (Llama-style layer).

    Per layer and token, in the compute dtype: two RMSNorms' inputs, normalised values and
    outputs (6h; below fp32 transformers keeps the input's fp32 copy instead of the input); the
    rotated queries (h), keys and values (2 kv), the attention output and its contiguous copy
    (2h), SDPA's fp32 log-sum-exp per head (no seq x seq scores); a gated MLP's gate, activation,
    up and product (4 ffn; plain 2); MoE: the gathered inputs and outputs per chosen expert and
    the router's logits and probabilities. Once: rotary cos and sin (2 head_dim per position),
    the logits, their fp32 copy (none in fp32) and the fp32 log-softmax. `"eager"` keeps each
    layer's softmax (heads x seq x seq per sequence, fp32, + a copy below fp32) and keys and
    values repeated per head (2h, GQA), and a float causal mask once. Checkpointing keeps each
    layer's input (h), rebuilds one layer at a time. Within 2% (fp32, bf16) of MemTracker and the
    CPU allocator on transformers 5 (benchmarks/memory_accuracy.py). Not modelled: dropout (p >
    0), padded batches, autocast's casts, losses that never hold the logits (Liger's).
    """
    a, h, tokens = ACTIVATION_BYTES[dtype], spec.hidden_size, batch * seq_len
    ffn = (4 if spec.gated_mlp else 2) * _ffn_width(spec)
    moe = 2 * spec.experts_per_token * h + 2 * spec.n_routed_experts if spec.is_moe else 0
    norm = 3 * a if a == 4 else 4 + 2 * a  # bytes per h of one RMSNorm
    per_layer = tokens * (
        2 * norm * h + (3 * h + 2 * spec.n_kv_heads * spec.head_dim + ffn + moe) * a
    )
    once = 2 * seq_len * spec.head_dim * a + loss_head_bytes(spec, tokens, dtype)
    if attention == "eager":
        per_layer += batch * spec.n_heads * seq_len * seq_len * (4 if a == 4 else 4 + a)
        per_layer += tokens * 2 * h * a if spec.n_kv_heads < spec.n_heads else 0
        once += batch * seq_len * seq_len * a
    else:
        per_layer += tokens * spec.n_heads * 4  # SDPA's log-sum-exp
    if activation_checkpointing:
        return int(spec.n_layers * tokens * h * a + per_layer + once)
    return int(spec.n_layers * per_layer + once)


@checked
def loss_head_bytes(spec: ModelSpec, tokens: PositiveInt, dtype: ActivationDtype = "bf16") -> int:
    """The logits (compute dtype), their fp32 copy for the loss (none in fp32), the log-softmax."""
    a = ACTIVATION_BYTES[dtype]
    return tokens * spec.vocab_size * (8 if a == 4 else a + 8)


@checked
def optimizer_step_bytes(
    spec: ModelSpec,
    optimizer: Optimizer = "adamw",
    optimizer_impl: OptimizerImpl = "auto",
    device: str = "cuda",
    state_bytes: PositiveInt = 4,
) -> int:
    """Temporaries of one optimizer step, beyond the weights, gradients and states.

    PyTorch's AdamW makes sqrt(exp_avg_sq) / bias_correction anew: "foreach" (default on CUDA,
    ROCm, XPU) for all parameters at once, a copy in the state dtype (pytorch/pytorch#132336:
    "O(n) more memory"); "for-loop" (CPU, MPS) a tensor at a time, root and quotient (twice the
    largest tensor); "fused" (the Trainer's default, torch >= 2.8) none; SGD works in place;
    bitsandbytes' 8-bit AdamW is one kernel (none). Measured: tests/unit/test_memprobe.py.
    """
    if optimizer != "adamw" or optimizer_impl == "fused":
        return 0
    if optimizer_impl == "foreach" or (optimizer_impl == "auto" and device in ("cuda", "xpu")):
        return spec.n_params * state_bytes
    h = spec.hidden_size
    experts = spec.n_routed_experts * 2 * spec.moe_intermediate_size * h
    return 2 * max(spec.vocab_size * h, 2 * spec.intermediate_size * h, experts) * state_bytes
