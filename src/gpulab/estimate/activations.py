"""What a pass or a step holds besides the weights: activations, the loss's tensors, the
optimizer's states and the temporaries of its step (chapters 2, 5 and 7).

gpulab.memory assembles these into a workload's breakdown; this module holds the formulas,
each one a count of the tensors live at a moment, checked against memory measured on real
models (benchmarks/memory_accuracy.py, tests/unit/test_memory.py, tests/unit/test_memprobe.py)
and on random models it was never tuned on (benchmarks/memory_sweep.py's held-out sample,
tests/benchmarks/test_memory_sweep.py): a forward pass's widest moment, the tensors a training
step keeps for its backward pass, and what PyTorch's optimizers allocate.
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
    "last_mlp_backward_bytes",
    "norm_kept_bytes",
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
    Held out (benchmarks/memory_sweep.py, seed 2): on 39 random Llama, Qwen2 and Mistral shapes
    it was never tuned on, forward passes and training steps in fp32 and bf16 on a CPU with
    transformers 5.25, the worst peak error against MemTracker was 0.03%
    (gpulab.measured.estimator_validation() has the latest run); within 2% on the 33 cases of
    benchmarks/memory_accuracy.py, Phi-3 and Mixtral included. Not modelled: padded batches (a
    seq x seq mask, sdpa may write the scores out), GPU kernels' scratch, serving engines'
    buffers.
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
    rotated queries (h), keys and values (2 kv) and the attention output (h), which SDPA's
    backward and the output projection share (its transpose back to tokens x h is a view: the
    fused kernels write it in that layout), SDPA's fp32 log-sum-exp per head (no seq x seq
    scores); a gated MLP's gate, activation, up and product (4 ffn; plain 2); MoE: the gathered
    inputs and outputs per chosen expert and the router's logits and probabilities. Once: the
    final RMSNorm's (3h, as a layer's), rotary cos and sin (2 head_dim per position), the
    logits, their fp32 copy (none in fp32) and the fp32 log-softmax. `"eager"` keeps the
    queries, keys and values as the products' operands, per head (3h, keys and values repeated
    when GQA), the output's contiguous copy (h), each layer's softmax (heads x seq x seq per
    sequence, fp32, + a copy below fp32) and a float causal mask once. Checkpointing keeps each
    layer's input (h), rebuilds one layer at a time. Held out: the worst peak error of
    estimate_training on benchmarks/memory_sweep.py's held-out sample is in
    inference_activation_bytes' docstring (0.03% over both); within 2% on the 33 cases of
    benchmarks/memory_accuracy.py, Phi-3's fused qkv the worst (its kept q, k and v are views
    of one tensor). Not modelled: dropout (p > 0), padded batches, autocast's casts, losses
    that never hold the logits (Liger's).
    """
    a, h, tokens = ACTIVATION_BYTES[dtype], spec.hidden_size, batch * seq_len
    ffn = (4 if spec.gated_mlp else 2) * _ffn_width(spec)
    moe = 2 * spec.experts_per_token * h + 2 * spec.n_routed_experts if spec.is_moe else 0
    norm = norm_kept_bytes(spec, 1, dtype) // h  # bytes per h of one RMSNorm
    kv_width = spec.n_kv_heads * spec.head_dim
    per_layer = tokens * (2 * norm * h + (ffn + moe) * a)
    once = (
        tokens * norm * h + 2 * seq_len * spec.head_dim * a + loss_head_bytes(spec, tokens, dtype)
    )
    if attention == "eager":
        per_layer += tokens * 4 * h * a  # q, k and v per head, the output's contiguous copy
        per_layer += batch * spec.n_heads * seq_len * seq_len * (4 if a == 4 else 4 + a)
        once += batch * seq_len * seq_len * a
    else:  # q, k, v, the output (shared with o_proj), the fp32 log-sum-exp per head
        per_layer += tokens * ((2 * h + 2 * kv_width) * a + spec.n_heads * 4)
    if activation_checkpointing:
        return int(spec.n_layers * tokens * h * a + per_layer + once)
    return int(spec.n_layers * per_layer + once)


@checked
def loss_head_bytes(spec: ModelSpec, tokens: PositiveInt, dtype: ActivationDtype = "bf16") -> int:
    """The logits (compute dtype), their fp32 copy for the loss (none in fp32), the log-softmax."""
    a = ACTIVATION_BYTES[dtype]
    return tokens * spec.vocab_size * (8 if a == 4 else a + 8)


@checked
def norm_kept_bytes(spec: ModelSpec, tokens: PositiveInt, dtype: ActivationDtype = "bf16") -> int:
    """What one RMSNorm keeps for the backward pass: its input, normalised values and output
    (3h per token in fp32; below fp32 transformers keeps the input's fp32 copy, 4 + 2a bytes)."""
    a = ACTIVATION_BYTES[dtype]
    return tokens * spec.hidden_size * (3 * a if a == 4 else 4 + 2 * a)


@checked
def last_mlp_backward_bytes(
    spec: ModelSpec, tokens: PositiveInt, dtype: ActivationDtype = "bf16"
) -> int:
    """Activations the backward pass adds, against the kept ones, in the last layer's MLP.

    Once the down projection's backward has run: the product's gradient and the two made from
    it (the activation's and up's), less the product, freed (2 ffn per token); the gradient
    arriving from above (h); less the final RMSNorm's kept tensors, freed by then. Dense gated
    MLPs (a MoE layer's backward is not modelled: 0).
    """
    if spec.is_moe:
        return 0
    a, h = ACTIVATION_BYTES[dtype], spec.hidden_size
    return tokens * (2 * spec.intermediate_size + h) * a - norm_kept_bytes(spec, tokens, dtype)


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
    "O(n) more memory"); "for-loop" (CPU, MPS) a tensor at a time, the root and the quotient,
    while the previous tensor's quotient (the loop's `denom`) is still referenced: the largest
    previous + 2 x current over the parameters in their order (_tensors_in_order; a gated MLP's
    up after its gate: 3 ffn x h); "fused" (the Trainer's default, torch >= 2.8) none; SGD works
    in place; bitsandbytes' 8-bit AdamW is one kernel (none). Measured:
    tests/unit/test_memprobe.py and benchmarks/memory_sweep.py.
    """
    if optimizer != "adamw" or optimizer_impl == "fused":
        return 0
    if optimizer_impl == "foreach" or (optimizer_impl == "auto" and device in ("cuda", "xpu")):
        return spec.n_params * state_bytes
    sizes = _tensors_in_order(spec)
    held = [0, *sizes[:-1]]  # the quotient of the tensor before
    return max(prev + 2 * cur for prev, cur in zip(held, sizes, strict=True)) * state_bytes


def _tensors_in_order(spec: ModelSpec) -> list[int]:
    """Elements of each parameter tensor in the order transformers' decoders register them.

    The embedding; per layer q, k, v and o (each bias after its matrix; MLA's attention as one
    block, an upper bound), the MLP's gate, up and down (a MoE layer: the router, the experts'
    gate_up and down, each one tensor over the experts as transformers 5 stores them, then the
    shared experts), two norms; the final norm; the head when untied.
    """
    h, norm = spec.hidden_size, spec.params_by_component()["norms"] // (2 * spec.n_layers + 1)

    def mlp(width: int) -> list[int]:
        into = [width * h, width] if spec.mlp_bias else [width * h]  # gate or up (and bias)
        return (into * 2 if spec.gated_mlp else into) + [width * h, h * spec.mlp_bias]

    def experts(width: int) -> list[int]:
        e = spec.n_routed_experts  # one gate_up and one down tensor for all of a layer's experts
        return [e * (2 if spec.gated_mlp else 1) * width * h, e * width * h]

    if spec.kv_lora_rank is None:
        q, kv = spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
        bias = spec.attention_bias
        attention = [q * h, q * bias, kv * h, kv * bias, kv * h, kv * bias, q * h, h * spec.o_bias]
    else:
        attention = [spec.attention_params]
    sizes = [spec.vocab_size * h]
    for i in range(spec.n_layers):
        layer = list(attention)
        if spec.is_moe_layer(i):
            layer += [spec.router_params, *experts(spec.moe_intermediate_size)]
            shared = spec.n_shared_experts * spec.moe_intermediate_size
            layer += mlp(shared) if shared else []
        else:
            layer += mlp(spec.intermediate_size)
        sizes += [n for n in layer if n] + [norm, norm]
    sizes += [norm] + ([] if spec.tie_embeddings else [spec.vocab_size * h])
    return sizes
