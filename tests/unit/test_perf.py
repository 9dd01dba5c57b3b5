"""gpulab.perf: bounds checked against hand-derived values and against FlopCounterMode."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from gpulab import memory, models, perf, torch_models
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.memory import ModelSpec
from tests.helpers import TINY_LLAMA

LLAMA_70B = models.get("Llama-3-70B")
LLAMA_8B = models.get("Llama-3-8B")
TINY = TINY_LLAMA


def test_llama_3_70b_int4_on_an_rtx_4090_by_hand():
    """Weights at int4 (decoder at 4.125 bits, embedding/head/norms at 16) + a 4096-token bf16
    cache, read once per token at 1008 GB/s; of the input embedding only the token's row is
    read: about 26 tokens/s, far from the article's 35-45."""
    parts = LLAMA_70B.params_by_component()
    kept = parts["embedding"] + parts["lm_head"] + parts["norms"]
    read_16bit = kept - 128256 * 8192 + 8192  # the head and norms whole, one embedding row
    weights = (LLAMA_70B.n_params - kept) * 4.125 / 8 + read_16bit * 2
    kv = 2 * 80 * 8 * 128 * 4096 * 2
    expected = 1008e9 / (weights + kv)
    got = perf.decode_tokens_per_s(
        LLAMA_70B, weights="int4", kv_cache="bf16", batch=1, seq_len=4096, bandwidth_gbs=1008
    )
    assert got == pytest.approx(expected)
    assert 25.5 < got < 26.5


def test_decode_reads_one_embedding_row_per_sequence_and_a_tied_matrix_once():
    """The embedding is a lookup (a row per sequence), the head a product (the whole matrix)."""
    whole = memory.weight_bytes(LLAMA_8B, "bf16")
    table = 128256 * 4096 * 2  # Llama-3-8B's untied input embedding in bf16
    assert perf.decode_bytes_per_step(LLAMA_8B, "bf16", "bf16", 1, 1) == pytest.approx(
        whole - table + 4096 * 2 + memory.kv_cache_bytes(LLAMA_8B, 1, 1, "bf16")
    )
    tied = models.get("Llama-3.2-1B")  # tied: the one matrix is the head, read whole
    assert tied.tie_embeddings
    assert perf.decode_bytes_per_step(tied, "bf16", "bf16", 1, 1) == pytest.approx(
        tied.n_params * 2 + memory.kv_cache_bytes(tied, 1, 1, "bf16")
    )


def test_decode_bound_batches_share_the_weight_read():
    """At batch B the weights are read once for B tokens; each sequence adds its cache and its
    embedding row."""
    one = perf.decode_bytes_per_step(LLAMA_8B, "bf16", "bf16", 1, 1024)
    eight = perf.decode_bytes_per_step(LLAMA_8B, "bf16", "bf16", 8, 1024)
    kv = memory.kv_cache_bytes(LLAMA_8B, 1024, 1, "bf16")
    assert eight - one == pytest.approx(7 * (kv + 4096 * 2))
    assert perf.decode_tokens_per_s(
        LLAMA_8B, "bf16", "bf16", 8, 1024, 1000
    ) > 7 * perf.decode_tokens_per_s(LLAMA_8B, "bf16", "bf16", 1, 1024, 1000)


def test_moe_decode_reads_active_experts_only():
    """Mixtral: bytes per step follow the 12.9B active parameters, not the 46.7B resident."""
    s = models.get("Mixtral-8x7B")
    read = perf.decode_bytes_per_step(s, "bf16", "bf16", 1, 1)
    unread_rows = (32000 - 1) * 4096  # Mixtral's untied 32,000-row embedding, but one row
    assert read == pytest.approx(
        (s.n_active_params - unread_rows) * 2 + memory.kv_cache_bytes(s, 1, 1, "bf16")
    )
    assert read < memory.weight_bytes(s, "bf16") / 3


def test_training_is_six_flops_per_parameter_per_token_without_attention():
    """6 x matmul parameters x tokens; Llama-3-8B's matmul params exclude embedding and norms."""
    parts = LLAMA_8B.params_by_component()
    matmul = LLAMA_8B.n_params - parts["embedding"] - parts["norms"]
    assert perf.matmul_params(LLAMA_8B) == matmul
    assert perf.training_flops(LLAMA_8B, 1000) == pytest.approx(6 * matmul * 1000)


def test_attention_term_by_hand():
    """Per token: layers x 2 x context x (heads x head_dim) for Q K^T, and the same for x V."""
    assert perf.attention_flops_per_token(LLAMA_8B, 4096) == 32 * 2 * 4096 * (4096 + 4096)
    r1 = models.get("DeepSeek-R1")
    assert perf.attention_flops_per_token(r1, 10) == 61 * 2 * 10 * 128 * (192 + 128)


@pytest.mark.parametrize("attention", [False, True])
def test_forward_flops_match_flop_counter_mode(attention):
    """FlopCounterMode on a real (eager-attention) Llama counts what the formula says (0.1%)."""
    spec = ModelSpec.from_hf_config(TINY)
    model = torch_models.build_model(TINY, attn_implementation="eager")
    ids = torch.randint(0, 1000, (2, 64))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids, use_cache=False)
    counts = counter.get_flop_counts()["Global"]
    matmuls = sum(v for k, v in counts.items() if "bmm" not in str(k))
    if attention:
        assert counter.get_total_flops() == pytest.approx(
            perf.forward_flops(spec, 128, 64), rel=1e-3
        )
    else:
        assert matmuls == pytest.approx(perf.forward_flops(spec, 128), rel=1e-3)


def test_training_flops_match_flop_counter_mode():
    """Forward + backward counted by FlopCounterMode is 3 x the forward, within 0.5%."""
    spec = ModelSpec.from_hf_config(TINY)
    model = torch_models.build_model(TINY, attn_implementation="eager").train()
    ids = torch.randint(0, 1000, (2, 64))
    with FlopCounterMode(display=False) as counter:
        model(input_ids=ids, labels=ids).loss.backward()
    assert counter.get_total_flops() == pytest.approx(perf.training_flops(spec, 128, 64), rel=5e-3)


def test_prefill_and_mfu_by_hand():
    """Prefill: forward FLOPs / peak; MFU: achieved model FLOP/s / peak."""
    flops = perf.forward_flops(LLAMA_8B, 4096, 4096)
    assert perf.prefill_seconds(LLAMA_8B, 4096, 165) == pytest.approx(flops / 165e12)
    per_token = perf.training_flops(LLAMA_8B, 1, 2048)
    assert perf.mfu(1000, LLAMA_8B, 989, training=True, seq_len=2048) == pytest.approx(
        1000 * per_token / 989e12
    )
    assert perf.mfu(1000, LLAMA_8B, 989, training=False) == pytest.approx(
        1000 * 2 * perf.matmul_params(LLAMA_8B) / 989e12
    )


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: perf.decode_tokens_per_s(LLAMA_8B, bandwidth_gbs=0), "bandwidth_gbs"),
        (lambda: perf.decode_tokens_per_s(LLAMA_8B, weights="int3"), "weights='int3'"),
        (lambda: perf.decode_tokens_per_s(LLAMA_8B, batch=0), "batch=0"),
        (lambda: perf.prefill_seconds(LLAMA_8B, tokens=-1), "tokens=-1"),
        (lambda: perf.prefill_seconds(LLAMA_8B, peak_tflops=-5), "peak_tflops"),
        (lambda: perf.prefill_seconds(LLAMA_8B, weights="fp64"), "weights='fp64'"),
        (lambda: perf.mfu(0, LLAMA_8B, 100), "achieved_tokens_per_s"),
        (lambda: perf.training_flops("llama", 10), "ModelSpec"),
    ],
)
def test_bad_input_names_the_field(call, field):
    """Every bad argument raises GpulabConfigError (a ValueError) naming the field."""
    with pytest.raises(GpulabConfigError, match=field.replace("(", r"\(")):
        call()


def test_layers_that_fit_a_24_gb_card():
    """Llama-3-70B at Q4_K_M: each layer's weights + fp16 cache; the count fills but fits 24 GB."""
    from gpulab.estimate.memory import CUDA_CONTEXT_BYTES, gpu_layers_that_fit, layer_bytes

    n = gpu_layers_that_fit(LLAMA_70B, 24e9, "q4_k_m", 4096)
    sizes = layer_bytes(LLAMA_70B, "q4_k_m", 4096)
    assert sum(sizes[:n]) <= 24e9 < sum(sizes[: n + 1])
    # a raw capacity: the context comes off first, when the caller says so
    raw = gpu_layers_that_fit(LLAMA_70B, 24e9, "q4_k_m", 4096, context_bytes=CUDA_CONTEXT_BYTES)
    assert (
        sum(sizes[:raw]) + CUDA_CONTEXT_BYTES <= 24e9 < sum(sizes[: raw + 1]) + CUDA_CONTEXT_BYTES
    )
    assert 0 < n < 80
    assert gpu_layers_that_fit(models.get("Llama-3.2-1B"), 80e9) == 17  # 16 layers + the head


def test_offloading_bound_by_hand():
    """Half the layers in RAM: time = GPU bytes / GPU bandwidth + RAM bytes / RAM bandwidth."""
    from gpulab.estimate.memory import layer_bytes

    sizes = layer_bytes(LLAMA_70B, "q4_k_m", 4096)
    parts = LLAMA_70B.params_by_component()
    head = parts["lm_head"] * 4.84 / 8
    # the GPU keeps the 40 layers, one embedding row (a lookup) and the final norm
    gpu = sum(sizes[:40]) + (LLAMA_70B.hidden_size + parts["norms"] - 2 * 80 * 8192) * 4.84 / 8
    expected = 1 / (gpu / 1008e9 + (sum(sizes[40:]) + head) / 89.6e9)
    assert perf.offloaded_tokens_per_s(LLAMA_70B, 40) == pytest.approx(expected)
    assert perf.offloaded_tokens_per_s(LLAMA_70B, 81) > 5 * perf.offloaded_tokens_per_s(
        LLAMA_70B, 40
    )
    with pytest.raises(GpulabConfigError, match="gpu_layers=90"):
        perf.offloaded_tokens_per_s(LLAMA_70B, 90)


def test_offloaded_moe_reads_only_routed_experts():
    """All of Mixtral on the GPU: the bound equals decode_tokens_per_s (active experts only)."""
    s = models.get("Mixtral-8x7B")
    all_on_gpu = perf.offloaded_tokens_per_s(s, s.n_layers + 1, "q4_k_m", 1008, 89.6, 4096, "fp16")
    bound = perf.decode_tokens_per_s(s, "q4_k_m", "fp16", 1, 4096, 1008)
    assert all_on_gpu == pytest.approx(bound, rel=1e-12)  # one basis: the same bytes read


def test_offloaded_with_everything_on_the_gpu_is_the_decode_bound():
    """Every layer and the head on the GPU: exactly the decode bound, for 16-bit and 4-bit."""
    for fmt in ("fp16", "int4", "q4_k_m"):
        all_on_gpu = perf.offloaded_tokens_per_s(LLAMA_70B, 81, fmt, 1008, 89.6, 4096, "fp16")
        bound = perf.decode_tokens_per_s(LLAMA_70B, fmt, "fp16", 1, 4096, 1008)
        assert all_on_gpu == pytest.approx(bound, rel=1e-12)


def test_mfu_allows_a_boosting_cards_headroom_and_no_more():
    """A rate a little above the rated peak is a card above its rated clock; far above, an error."""
    per_token = perf.forward_flops(LLAMA_8B, 1) * 3

    def at(share):  # the tokens/s that need `share` of 100 TFLOP/s
        return share * 100e12 / per_token

    assert perf.mfu(at(1.10), LLAMA_8B, 100) == pytest.approx(1.10)
    with pytest.raises(GpulabConfigError, match="above its rated peak"):
        perf.mfu(at(1.20), LLAMA_8B, 100)
