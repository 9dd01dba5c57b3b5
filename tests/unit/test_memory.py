"""gpulab.memory: formats, KV cache, inference and training estimates, what fits, bad input."""

from __future__ import annotations

import pytest

from gpulab import measured, memory, models, specs
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.memory import ModelSpec, estimate_inference, estimate_training

LLAMA_70B = models.get("Llama-3-70B")
LLAMA_8B = models.get("Llama-3-8B")
R1 = models.get("DeepSeek-R1")
GB = 1e9


@pytest.mark.parametrize(
    "fmt, bpw",
    [
        ("fp32", 32),
        ("fp16", 16),
        ("bf16", 16),
        ("fp8", 8 + 32 / 16384),
        ("int8", 8 + 16 / 4096),
        ("int4", 4.125),
        ("int4-asym", 4 + 20 / 128),
        ("nf4", 4 + 8 / 64 + 32 / (64 * 256)),
        ("q8_0", 8.5),
        ("q4_0", 4.5),
        ("q4_k_m", 4.84),
    ],
)
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
    assert (
        memory.kv_cache_bytes(R1, 1000, 1, "bf16", mla_expanded=True) == 61 * 128 * 320 * 1000 * 2
    )


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
    for precision, per_param in [
        ("fp32", 16),
        ("bf16-mixed", 16),
        ("bf16", 8),
        ("autocast-bf16", 18),
    ]:
        b = estimate_training(
            LLAMA_8B, precision=precision, optimizer="adamw", batch=1, seq_len=128
        )
        assert (b.weights + b.gradients + b.optimizer) == pytest.approx(n * per_param, rel=1e-9)
    sgd = estimate_training(
        LLAMA_8B, precision="fp32", optimizer="sgd-momentum", batch=1, seq_len=128
    )
    assert sgd.optimizer == n * 4
    eight_bit = estimate_training(
        LLAMA_8B, precision="bf16", optimizer="adamw8bit", batch=1, seq_len=128
    )
    assert eight_bit.optimizer == pytest.approx(n * 2 * (1 + 4 / 2048), rel=1e-6)


def test_checkpointing_cuts_activations_and_the_optimizer_step_can_set_the_peak():
    """Checkpointing keeps layer inputs and one layer's activations (the loss's logits remain).

    bf16 loss, by hand: the bf16 logits (2 bytes), transformers' fp32 copy of them (4) and the
    fp32 log-softmax (4) per token and vocab entry. With so few activations left, the peak is
    the AdamW step on CUDA (PyTorch's foreach default): bf16 weights and gradients (2 + 2),
    fp32 master and states (12) and sqrt(exp_avg_sq) for every parameter at once (4): 20 B/param.
    """
    full = estimate_training(LLAMA_8B, batch=4, seq_len=2048)
    ckpt = estimate_training(LLAMA_8B, batch=4, seq_len=2048, activation_checkpointing=True)
    logits = 4 * 2048 * LLAMA_8B.vocab_size * (2 + 4 + 4)
    assert ckpt.activations - logits < (full.activations - logits) / 10
    assert full.peak <= full.total
    assert ckpt.peak == LLAMA_8B.n_params * 20
    fused = estimate_training(
        LLAMA_8B, batch=4, seq_len=2048, activation_checkpointing=True, optimizer_impl="fused"
    )
    assert fused.peak <= fused.total


def test_optimizer_step_temporaries_by_hand():
    """Llama-3-8B's largest tensor is its embedding (or head): 128,256 x 4,096 = 525,336,576.

    AdamW for-loop (the CPU's default): sqrt(exp_avg_sq) and its quotient for one tensor at a
    time while the previous tensor's quotient is still held; the largest is the untied head,
    the last tensor, after the final norm's 4,096: (2 x 525,336,576 + 4,096) x 4 bytes (an MLP's
    up after its gate would be 3 x 14,336 x 4,096, less); foreach (CUDA's default): one fp32
    copy of every parameter; fused and SGD: nothing. tests/unit/test_memprobe.py measures the
    same on a CPU.
    """
    by_hand = (2 * 525_336_576 + 4096) * 4
    assert memory.optimizer_step_bytes(LLAMA_8B, "adamw", "for-loop") == by_hand
    assert memory.optimizer_step_bytes(LLAMA_8B, "adamw", "auto", device="cpu") == by_hand
    assert (
        memory.optimizer_step_bytes(LLAMA_8B, "adamw", "auto", device="cuda")
        == LLAMA_8B.n_params * 4
    )
    assert memory.optimizer_step_bytes(LLAMA_8B, "adamw", "fused") == 0
    assert memory.optimizer_step_bytes(LLAMA_8B, "sgd-momentum", "foreach") == 0


def test_inference_peak_is_the_widest_moment_not_a_sum_by_hand():
    """Llama-3-8B (h 4,096, MLP 14,336, 8 KV heads of 128, vocab 128,256), 1 x 1,000 tokens, bf16.

    In an MLP (separate gate and up): the embeddings, the layer's input, the mid-layer residual
    and the norm's output (4 x 4,096) with the activated gate, up and product (3 x 14,336):
    59,392 values x 2 bytes x 1,000 tokens = 118,784,000 bytes, plus rotary cos and sin
    (2 x 128 x 1,000 x 2 = 512,000): 119,296,000. At the head with every position's logits:
    the final norm's output (4,096) and 128,256 bf16 logits per token: 264,704,000, which
    is the peak alone, not added to the layers' (they are freed by then).
    """
    last = memory.inference_activation_bytes(LLAMA_8B, 1, 1000, "bf16", "last")
    every = memory.inference_activation_bytes(LLAMA_8B, 1, 1000, "bf16", "all")
    assert last == 119_296_000
    assert every == 1000 * (4096 + 128_256) * 2 == 264_704_000


def test_eager_attention_adds_the_score_matrix_by_hand():
    """The same prefill with eager attention: 32 heads x 1,000 x 1,000 = 32,000,000 scores.

    In attention: the embeddings, the input, the norm's output, the rotated queries, the keys
    and values repeated to 32 heads and the new 8-head keys and values (6 x 4,096 + 2 x 1,024
    = 26,624 values x 2 bytes x 1,000 = 53,248,000), the masked scores (2 bytes), their fp32
    softmax (4) and its bf16 copy (2): 256,000,000, the causal mask (1,000 x 1,000 x 2 =
    2,000,000) and the rotary cos and sin (512,000): 311,760,000, 2.6 x the SDPA figure.
    """
    eager = memory.inference_activation_bytes(LLAMA_8B, 1, 1000, "bf16", "last", attention="eager")
    assert eager == 53_248_000 + 256_000_000 + 2_000_000 + 512_000


def test_activations_grow_linearly_with_tokens():
    """Twice the batch, twice the activations (no seq x seq term with fused attention), but for
    the rotary cos and sin, made once per position: 2 x 128 x 1,024 x 2 bytes = 524,288."""
    a1 = memory.training_activation_bytes(LLAMA_8B, 1, 1024, "bf16")
    a2 = memory.training_activation_bytes(LLAMA_8B, 2, 1024, "bf16")
    assert a2 == 2 * a1 - 524_288


def test_overhead_is_context_plus_slack():
    """CUDA: half a GiB of context plus 5% of the tensors; the CPU has no context."""
    assert memory.runtime_overhead(100 * 2**20, "cuda") == 2**29 + 5 * 2**20
    assert memory.runtime_overhead(100 * 2**20, "cpu") == 5 * 2**20


def test_the_runtime_share_is_counted_once_on_the_capacity_side():
    """Estimates are tensors only; the context and slack come off the card, not added again."""
    spec = models.get("Llama-3-8B")
    b = memory.estimate_inference(spec, "int4", batch=2, seq_len=1024)
    assert b.overhead == 0 and b.total == b.weights + b.kv_cache + b.activations
    t = memory.estimate_training(spec, batch=1, seq_len=256)
    assert t.overhead == 0
    assert t.total == t.weights + t.gradients + t.optimizer + t.activations
    # asked for, the share is there (a total as nvidia-smi shows it), and only then
    asked = memory.estimate_inference(
        spec, "int4", batch=2, seq_len=1024, context_bytes=2**29, allocator_slack=0.05
    )
    assert asked.overhead == 2**29 + int(0.05 * b.total)
    # the card's side: one context and the slack, each once
    card = specs.get_gpu("RTX 4090")
    assert card.model_memory_bytes * 1.05 + 2**29 == pytest.approx(card.memory_bytes, abs=2)
    fits = {r["gpu"]: r["fits"] for r in memory.gpus_that_fit(b.total)}
    assert fits["RTX 4090"] == (b.total <= card.model_memory_bytes)


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


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: estimate_inference(LLAMA_8B, weights="int3"), "weights='int3'"),
        (lambda: estimate_inference(LLAMA_8B, kv_cache="fp64"), "kv_cache='fp64'"),
        (lambda: estimate_inference(LLAMA_8B, batch=0), "batch=0"),
        (lambda: estimate_inference(LLAMA_8B, seq_len=-5), "seq_len=-5"),
        (lambda: estimate_training(LLAMA_8B, precision="fp8"), "precision='fp8'"),
        (lambda: estimate_training(LLAMA_8B, optimizer="lion"), "optimizer='lion'"),
        (lambda: estimate_inference({"hidden_size": 4096}), "ModelSpec"),
        (lambda: memory.largest_batch(LLAMA_8B, -1), "budget_bytes"),
        (lambda: memory.largest_batch(LLAMA_8B, 2**30, mode="serve"), "mode='serve'"),
    ],
)
def test_invalid_input_names_the_field(call, field):
    """Every bad argument raises a ValueError that names it and the allowed values."""
    with pytest.raises(ValueError, match=field.replace("(", r"\(")):
        call()
    with pytest.raises(GpulabConfigError):
        call()


def test_modelspec_is_reexported():
    """The fixed interface: `from gpulab.memory import ModelSpec`."""
    assert memory.ModelSpec is ModelSpec


def test_the_docstrings_state_what_the_held_out_sweep_found():
    """The accuracy the estimator's docstring claims is the stored held-out result, not a
    number typed once and left behind (benchmarks/memory_sweep.py --write stores it)."""
    v = measured.estimator_validation()
    doc = " ".join(memory.inference_activation_bytes.__doc__.split())
    assert f"seed {v['seed']}): on {v['measured']} random" in doc
    assert f"was {v['worst_abs_error_percent']:.2f}%" in doc
    assert f"transformers {'.'.join(v['transformers'].split('.')[:2])}" in doc


def test_without_a_cache_a_forward_pass_keeps_none():
    """use_cache=False: the same weights and activations, no KV cache."""
    spec = models.get("Llama-3-8B")
    cached = memory.estimate_inference(spec, batch=2, seq_len=512)
    uncached = memory.estimate_inference(spec, batch=2, seq_len=512, use_cache=False)
    assert uncached.kv_cache == 0 < cached.kv_cache == 2 * 32 * 8 * 128 * 512 * 2 * 2
    assert uncached.total == cached.total - cached.kv_cache
