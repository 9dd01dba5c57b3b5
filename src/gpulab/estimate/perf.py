"""Bounds and rates: decode tokens/s, prefill time, training FLOPs, MFU (chapter 3).

    from gpulab import perf

    perf.decode_tokens_per_s(spec, weights="int4", kv_cache="bf16", batch=1, seq_len=4096,
                             bandwidth_gbs=1008)    # upper bound: bytes read per step / bandwidth
    perf.prefill_seconds(spec, tokens=4096, peak_tflops=165, weights="bf16")  # compute-bound time
    perf.training_flops(spec, tokens=1_000_000)    # ~6 x active params x tokens, plus attention
    perf.mfu(achieved_tokens_per_s, spec, peak_tflops, training=True)  # model FLOPs utilisation

FLOPs are counted as in the Chinchilla paper (Hoffmann et al. 2022, appendix F): a
multiply-add is 2 FLOPs; every matrix the token passes through costs 2 x its parameters;
attention adds the score matrix (Q K^T) and its product with the values (2 x 2 x context x
d_attn per layer, counting the full square as kernels compute it); the backward pass costs
twice the forward, so training is 3 x forward (Kaplan et al. 2020: C ~ 6 N D).
"""

from __future__ import annotations

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeInt, PositiveFloat, PositiveInt, checked
from gpulab.estimate.memory import kv_cache_bytes, layer_bytes, weight_bytes
from gpulab.reference.formats import KVFormat, WeightFormatName, bits_per_weight, weight_format
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "BOOST_HEADROOM",
    "attention_flops_per_token",
    "decode_bytes_per_step",
    "decode_tokens_per_s",
    "offloaded_bytes",
    "offloaded_tokens_per_s",
    "forward_flops",
    "matmul_params",
    "mfu",
    "prefill_seconds",
    "training_flops",
]


@checked
def matmul_params(spec: ModelSpec) -> int:
    """Parameters a token multiplies with: the active ones, less the embedding and the norms.

    The embedding table is read, not multiplied (no FLOPs), and a norm's weights scale, they
    do not multiply-add; the output head is a matrix product, also when it shares its
    weights with the embedding.
    """
    parts = spec.params_by_component()
    head = parts["lm_head"] if parts["lm_head"] else parts["embedding"]
    return spec.n_active_params - parts["embedding"] - parts["lm_head"] - parts["norms"] + head


@checked
def attention_flops_per_token(spec: ModelSpec, context: PositiveInt) -> float:
    """Forward attention FLOPs of one token over `context` positions, all layers.

    Q K^T: 2 x context x (heads x query-key width); scores x V: 2 x context x (heads x value
    width). For multi-head latent attention the widths are qk_nope + qk_rope and v_head_dim.
    """
    if spec.attention_type == "mla":
        qk = spec.n_heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim)
        v = spec.n_heads * spec.v_head_dim
    else:
        qk = v = spec.n_heads * spec.head_dim
    return spec.n_layers * 2 * context * (qk + v)


@checked
def forward_flops(
    spec: ModelSpec, tokens: PositiveInt, seq_len: PositiveInt | None = None
) -> float:
    """FLOPs of a forward pass over `tokens` tokens: 2 x matmul params each, plus attention.

    `seq_len` is the context each token attends to (for a full sequence, its length); None
    leaves attention out, which is what "2 FLOPs per parameter per token" means.
    """
    per_token = 2.0 * matmul_params(spec)
    if seq_len is not None:
        per_token += attention_flops_per_token(spec, seq_len)
    return per_token * tokens


@checked
def training_flops(
    spec: ModelSpec, tokens: PositiveInt, seq_len: PositiveInt | None = None
) -> float:
    """FLOPs of training on `tokens` tokens: forward + backward (twice the forward) = 3 x forward.

    Without attention that is 6 x active matmul parameters x tokens (Kaplan et al.'s 6ND).
    """
    return 3.0 * forward_flops(spec, tokens, seq_len)


# A spec-sheet peak assumes the rated boost clock, and GeForce cards' GPU Boost runs above it: a
# stock RTX 4090 Founders Edition ran "between 2810MHz and 2850MHz" against its rated 2.52 GHz
# (tweaktown.com/news/88568, 2022-09-22), 13% more. A rate up to this far above the rated peak is
# a card running fast; beyond it, an error in the inputs or the timing.
BOOST_HEADROOM = 1.15


@checked
def mfu(
    achieved_tokens_per_s: PositiveFloat,
    spec: ModelSpec,
    peak_tflops: PositiveFloat,
    training: bool = True,
    seq_len: PositiveInt | None = None,
) -> float:
    """Model FLOPs utilisation: the model's FLOPs per second achieved / the device's rated peak.

    Training counts 6 x active parameters per token plus the attention term (3 x forward);
    inference counts 2 x active parameters plus attention (1 x forward). A value a little above
    1 (up to BOOST_HEADROOM) means the card ran above the clock its rated peak assumes; a rate
    that would need more is an error in the inputs (tokens/s or TFLOP/s off by a factor, an
    unsynchronised timer), not a utilisation, and says so.
    """
    per_token = forward_flops(spec, 1, seq_len) * (3 if training else 1)
    utilisation = achieved_tokens_per_s * per_token / (peak_tflops * 1e12)
    if utilisation > BOOST_HEADROOM:
        raise GpulabConfigError(
            f"achieved_tokens_per_s={achieved_tokens_per_s:g} needs {utilisation:.0%} of "
            f"peak_tflops={peak_tflops:g} ({per_token / 1e9:.3g} GFLOP per token): more than a "
            f"boosting card's {BOOST_HEADROOM - 1:.0%} above its rated peak; check the units "
            "(tokens per second, dense TFLOP/s of the precision) and that the timer synchronised",
            "achieved_tokens_per_s",
        )
    return utilisation


@checked
def decode_bytes_per_step(
    spec: ModelSpec,
    weights: WeightFormatName = "bf16",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
) -> float:
    """Bytes one decoding step must read: the weights a token uses, once, plus every KV cache.

    The input embedding is a lookup: each sequence reads one row of it, not the table; the
    output head is a matrix product and is read whole (when the two are tied, that one matrix
    is read once, as the head). For a mixture of experts only the experts a token is routed
    to are read (the active parameters): a lower bound on the bytes, so the tokens/s that
    follows is an upper bound. At batch > 1 different sequences pick different experts and
    more of them are read.
    """
    resident = weight_bytes(spec, weights)
    inactive = (spec.n_params - spec.n_active_params) * bits_per_weight(weights) / 8
    unread_embedding = 0.0
    if not spec.tie_embeddings:
        fmt = weight_format(weights)
        per_param = 2 if fmt.keeps_embeddings_16bit else fmt.bits_per_weight / 8
        rows_read = min(batch, spec.vocab_size)
        unread_embedding = (spec.vocab_size - rows_read) * spec.hidden_size * per_param
    return resident - inactive - unread_embedding + kv_cache_bytes(spec, seq_len, batch, kv_cache)


@checked
def decode_tokens_per_s(
    spec: ModelSpec,
    weights: WeightFormatName = "int4",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
    bandwidth_gbs: PositiveFloat = 1008,
) -> float:
    """Upper bound on generated tokens/s (all sequences of the batch together).

    Each step reads the active weights once and every sequence's KV cache, and produces one
    token per sequence: batch x bandwidth / bytes per step. Compute is assumed not to bind,
    true for decoding at small batch (chapter 1's roofline).
    """
    return (
        batch * bandwidth_gbs * 1e9 / decode_bytes_per_step(spec, weights, kv_cache, batch, seq_len)
    )


@checked
def prefill_seconds(
    spec: ModelSpec,
    tokens: PositiveInt = 4096,
    peak_tflops: PositiveFloat = 165,
    weights: WeightFormatName = "bf16",
    batch: PositiveInt = 1,
) -> float:
    """Compute-bound estimate of processing a prompt: forward FLOPs / peak FLOP/s.

    `weights` does not change the FLOPs; pass the peak of the precision the kernels run in
    (a 4-bit model's matrix products usually run in 16-bit after dequantizing). A lower
    bound: no kernel reaches the peak.
    """
    return forward_flops(spec, tokens * batch, seq_len=tokens) / (peak_tflops * 1e12)


@checked
def offloaded_bytes(
    spec: ModelSpec,
    gpu_layers: NonNegativeInt,
    weights: WeightFormatName = "q4_k_m",
    seq_len: PositiveInt = 4096,
    kv_cache: KVFormat = "fp16",
) -> tuple[float, float]:
    """(bytes a token reads on the GPU, bytes it reads from RAM) with the first `gpu_layers`
    layers on the GPU: together what `decode_bytes_per_step` counts.

    The layers left in RAM (their weights and KV cache) are read there; the output head too,
    unless every layer is on the GPU (gpu_layers > n_layers); the embedding row and the final
    norm stay on the GPU. In a mixture-of-experts layer a token reads only the experts it is
    routed to.
    """
    if gpu_layers > spec.n_layers + 1:
        raise GpulabConfigError(
            f"gpu_layers={gpu_layers!r} must be an integer from 0 to "
            f"{spec.n_layers + 1} (the layers, then the output head)"
        )
    unread = (
        (spec.n_routed_experts - spec.experts_per_token)
        * spec.expert_params
        * bits_per_weight(weights)
        / 8
        if spec.is_moe
        else 0
    )
    layers = [
        size - (unread if spec.is_moe and spec.is_moe_layer(i) else 0)
        for i, size in enumerate(layer_bytes(spec, weights, seq_len, kv_cache))
    ]
    fmt = weight_format(weights)
    per_head_param = 2 if fmt.keeps_embeddings_16bit else fmt.bits_per_weight / 8
    parts = spec.params_by_component()
    head = (parts["lm_head"] or parts["embedding"]) * per_head_param
    on_cpu = sum(layers[gpu_layers:]) + (head if gpu_layers <= spec.n_layers else 0)
    return decode_bytes_per_step(spec, weights, kv_cache, 1, seq_len) - on_cpu, on_cpu


@checked
def offloaded_tokens_per_s(
    spec: ModelSpec,
    gpu_layers: NonNegativeInt,
    weights: WeightFormatName = "q4_k_m",
    gpu_bandwidth_gbs: PositiveFloat = 1008,
    cpu_bandwidth_gbs: PositiveFloat = 89.6,
    seq_len: PositiveInt = 4096,
    kv_cache: KVFormat = "fp16",
) -> float:
    """Decode bound with the first `gpu_layers` layers on the GPU and the rest read from RAM.

    A token reads the two parts of `offloaded_bytes` one after the other, each at its device's
    bandwidth. With every layer and the head on the GPU this is `decode_tokens_per_s` exactly:
    one basis for a decode bound.
    """
    on_gpu, on_cpu = offloaded_bytes(spec, gpu_layers, weights, seq_len, kv_cache)
    return 1.0 / (on_gpu / (gpu_bandwidth_gbs * 1e9) + on_cpu / (cpu_bandwidth_gbs * 1e9))
