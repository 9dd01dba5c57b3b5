"""gpulab.memory: formats, KV cache, inference and training estimates, what fits, bad input."""

from __future__ import annotations

import pytest

from gpulab import memory, models
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.memory import ModelSpec, estimate_inference, estimate_training

LLAMA_70B = models.get("Llama-3-70B")
LLAMA_8B = models.get("Llama-3-8B")
R1 = models.get("DeepSeek-R1")
GB = 1e9


@pytest.mark.parametrize("fmt, bpw", [
    ("fp32", 32), ("fp16", 16), ("bf16", 16), ("fp8", 8 + 32 / 16384), ("int8", 8 + 16 / 4096),
    ("int4", 4.125), ("int4-asym", 4 + 20 / 128), ("nf4", 4 + 8 / 64 + 32 / (64 * 256)),
    ("q8_0", 8.5), ("q4_0", 4.5), ("q4_k_m", 4.84),
])
def test_every_weight_format_has_its_bits_per_weight_and_a_source(fmt, bpw):
    """Bits per weight = value bits + scale bits / group size (or a published mix)."""
    assert memory.bits_per_weight(fmt) == pytest.approx(bpw)
    assert memory.WEIGHT_FORMATS[fmt].source


def test_weight_bytes_full_precision_is_params_times_bytes():
    """bf16 Llama-3-70B: 70,553,706,496 x 2 bytes."""
    assert memory.weight_bytes(LLAMA_70B, "bf16") == 70_553_706_496 * 2
    assert memory.weight_bytes(LLAMA_70B, "q8_0") == int(70_553_706_496 * 8.5 / 8)


def test_int4_keeps_embeddings_and_head_in_16_bits():
    """int4 Llama-3-70B, derived by hand from its config.json (not from the code under test).

    vocab 128,256 x hidden 8,192 = 1,050,673,152 for the embedding, the same for the untied
    head; (2 x 80 layers + 1) norms x 8,192 = 1,318,912: 2,102,665,216 parameters stay in 16
    bits (4,205,330,432 bytes). The other 70,553,706,496 - 2,102,665,216 = 68,451,041,280 are
    4-bit values with an fp16 scale per 128 (4 + 16/128 = 4.125 bits): 35,295,068,160 bytes.
    """
    assert memory.weight_bytes(LLAMA_70B, "int4") == 35_295_068_160 + 4_205_330_432
    assert 39 * GB < memory.weight_bytes(LLAMA_70B, "int4") < 40 * GB  # not 24 GB, as claimed


def test_int4_bits_per_weight_match_a_real_group_quantization():
    """An independent oracle: gpulab.quantize packs a real matrix with int4 codes and one fp16
    scale per 128 weights; its stored bytes per weight are the estimator's 4.125 bits."""
    import torch

    from gpulab import quantize

    w = torch.randn(256, 1024, generator=torch.Generator().manual_seed(0))
    packed = quantize.quantize_per_group(w, bits=4, group_size=128)
    stored = quantize.stored_bytes(packed, scale_bits=16)
    assert stored * 8 / w.numel() == pytest.approx(memory.bits_per_weight("int4"))


def test_4_bit_is_four_times_smaller_than_16_bit_not_eight():
    """The ratio of 16-bit to 4-bit weights is about 4 (scales make it a little less)."""
    ratio = memory.weight_bytes(LLAMA_8B, "bf16") / memory.weight_bytes(LLAMA_8B, "q4_0")
    assert ratio == pytest.approx(16 / 4.5)


def test_kv_cache_formula_by_hand():
    """Llama-3-70B, 8192 tokens, bf16: 2 x 80 x 8 x 128 x 8192 x 2 = 2,684,354,560 bytes."""
    assert memory.kv_cache_bytes(LLAMA_70B, 8192, 1, "bf16") == 2 * 80 * 8 * 128 * 8192 * 2
    assert memory.kv_cache_bytes(LLAMA_70B, 8192, 4, "fp8") == 2 * 80 * 8 * 128 * 8192 * 4


def test_mla_latent_cache_and_its_expansion():
    """DeepSeek-R1: 61 x (512 + 64) values per token; expanded: 61 x 128 x (128 + 64 + 128)."""
    assert memory.kv_cache_bytes(R1, 1000, 1, "bf16") == 61 * 576 * 1000 * 2
    assert memory.kv_cache_bytes(R1, 1000, 1, "bf16", mla_expanded=True) == 61 * 128 * 320 * 1000 * 2


def test_inference_breakdown_parts_and_moe_note():
    """Weights, KV cache, activations and overhead are filled; MoE memory follows total params."""
    b = estimate_inference(R1, weights="int4", kv_cache="bf16", batch=1, seq_len=4096)
    assert b.weights == memory.weight_bytes(R1, "int4") and b.kv_cache > 0 and b.activations > 0
    assert b.gradients == 0 and b.optimizer == 0
    assert b.total == sum(b.as_dict()[p] for p in memory.Breakdown.PARTS)
    assert b.weights > 4 * 80e9  # 4 A100 80 GB hold 320 GB: not even the weights fit
    assert any("resident" in n for n in b.notes)


def test_training_bytes_per_parameter_by_recipe():
    """AdamW: fp32 16 B/param; bf16 mixed (ZeRO) 2 + 2 + 12 = 16; pure bf16 2 + 2 + 4 = 8."""
    n = LLAMA_8B.n_params
    for precision, per_param in [("fp32", 16), ("bf16-mixed", 16), ("bf16", 8), ("autocast-bf16", 18)]:
        b = estimate_training(LLAMA_8B, precision=precision, optimizer="adamw", batch=1, seq_len=128)
        assert (b.weights + b.gradients + b.optimizer) == pytest.approx(n * per_param, rel=1e-9)
    sgd = estimate_training(LLAMA_8B, precision="fp32", optimizer="sgd-momentum", batch=1, seq_len=128)
    assert sgd.optimizer == n * 4
    eight_bit = estimate_training(LLAMA_8B, precision="bf16", optimizer="adamw8bit", batch=1, seq_len=128)
    assert eight_bit.optimizer == pytest.approx(n * 2 * (1 + 4 / 2048), rel=1e-6)


def test_checkpointing_cuts_activations_and_peak_is_at_most_total():
    """Checkpointing keeps layer inputs and one layer's activations (the loss's logits remain)."""
    full = estimate_training(LLAMA_8B, batch=4, seq_len=2048)
    ckpt = estimate_training(LLAMA_8B, batch=4, seq_len=2048, activation_checkpointing=True)
    logits = 4 * 2048 * LLAMA_8B.vocab_size * 4 * 2
    assert ckpt.activations - logits < (full.activations - logits) / 10
    assert full.peak <= full.total and ckpt.peak <= ckpt.total


def test_activations_grow_linearly_with_tokens():
    """Twice the batch, twice the activations (no seq x seq term with fused attention)."""
    a1 = memory.training_activation_bytes(LLAMA_8B, 1, 1024, "bf16")
    a2 = memory.training_activation_bytes(LLAMA_8B, 2, 1024, "bf16")
    assert a2 == 2 * a1


def test_overhead_is_context_plus_slack():
    """CUDA: half a GiB of context plus 5% of the tensors; the CPU has no context."""
    assert memory.runtime_overhead(100 * 2**20, "cuda") == 2**29 + 5 * 2**20
    assert memory.runtime_overhead(100 * 2**20, "cpu") == 5 * 2**20


def test_largest_batch_and_context_fit_the_budget():
    """The answer fits and one more does not; a budget below the weights gives 0."""
    budget = 24 * 2**30
    b = memory.largest_batch(LLAMA_8B, budget, seq_len=4096, weights="bf16")
    assert estimate_inference(LLAMA_8B, batch=b, seq_len=4096).total <= budget
    assert estimate_inference(LLAMA_8B, batch=b + 1, seq_len=4096).total > budget
    s = memory.largest_context(LLAMA_8B, budget, batch=1, weights="int4")
    assert estimate_inference(LLAMA_8B, weights="int4", seq_len=s).total <= budget
    assert estimate_inference(LLAMA_8B, weights="int4", seq_len=s + 1).total > budget
    assert memory.largest_batch(LLAMA_70B, budget, weights="bf16") == 0
    assert memory.largest_batch(LLAMA_8B, 200 * 2**30, mode="training", seq_len=2048) >= 1


@pytest.mark.parametrize("call, field", [
    (lambda: estimate_inference(LLAMA_8B, weights="int3"), "weights='int3'"),
    (lambda: estimate_inference(LLAMA_8B, kv_cache="fp64"), "kv_cache='fp64'"),
    (lambda: estimate_inference(LLAMA_8B, batch=0), "batch=0"),
    (lambda: estimate_inference(LLAMA_8B, seq_len=-5), "seq_len=-5"),
    (lambda: estimate_training(LLAMA_8B, precision="fp8"), "precision='fp8'"),
    (lambda: estimate_training(LLAMA_8B, optimizer="lion"), "optimizer='lion'"),
    (lambda: estimate_inference({"hidden_size": 4096}), "ModelSpec"),
    (lambda: memory.largest_batch(LLAMA_8B, -1), "budget_bytes"),
    (lambda: memory.largest_batch(LLAMA_8B, 2**30, mode="serve"), "mode='serve'"),
])
def test_invalid_input_names_the_field(call, field):
    """Every bad argument raises a ValueError that names it and the allowed values."""
    with pytest.raises(ValueError, match=field.replace("(", r"\(")):
        call()
    with pytest.raises(GpulabConfigError):
        call()


def test_modelspec_is_reexported():
    """The fixed interface: `from gpulab.memory import ModelSpec`."""
    assert memory.ModelSpec is ModelSpec
