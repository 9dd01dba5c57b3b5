"""gpulab.generation on a tiny decoder: the KV cache, training steps, autograd modes."""

from __future__ import annotations

import pytest
import torch

from gpulab import generation, torch_models
from gpulab.core.errors import GpulabConfigError

TINY = dict(
    model_type="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    max_position_embeddings=1024,
    tie_word_embeddings=False,
)


@pytest.fixture(scope="module")
def model64():
    """float64, so cached and uncached logits cannot differ by rounding at a near tie."""
    return torch_models.build_model(TINY, dtype=torch.float64)


def test_cached_and_uncached_greedy_decoding_give_the_same_tokens(model64):
    """The cache is an optimisation only: the same prompt gives the same continuation."""
    with_cache = generation.measure_decode(model64, batch=2, prompt_len=48, new_tokens=12)
    without = generation.measure_decode(
        model64, batch=2, prompt_len=48, new_tokens=12, use_cache=False
    )
    assert with_cache.tokens.shape == (2, 13)
    assert torch.equal(with_cache.tokens, without.tokens)
    assert len(set(with_cache.tokens[0].tolist())) > 1  # not a degenerate repetition


def test_the_cache_processes_fewer_positions_at_a_long_prompt():
    """With the cache a step sees one position per sequence; without it, all of them.

    No time is compared: on this tiny model both loops are launch-bound, and a CPU CI machine
    under load reorders them (docs/design.md: no pass/fail on a wall-clock time). The speed-up is
    measured, not asserted, in chapter 3's notebook and lab.
    """
    model = torch_models.build_model(TINY)
    prompt, new, batch = 256, 8, 2
    cached = generation.measure_decode(model, batch, prompt, new, use_cache=True)
    uncached = generation.measure_decode(model, batch, prompt, new, use_cache=False)
    assert cached.positions == batch * new
    # the uncached steps see prompt + 1, prompt + 2, ..., prompt + new positions
    assert uncached.positions == batch * sum(prompt + 1 + i for i in range(new))
    assert uncached.positions > 200 * cached.positions
    assert cached.seconds > 0 and uncached.seconds > 0
    assert cached.tokens_per_s == pytest.approx(batch * new / cached.seconds)
    assert cached.seconds_per_token == pytest.approx(cached.seconds / new)
    assert (cached.batch, cached.new_tokens, cached.use_cache) == (batch, new, True)


def test_prefill_is_a_measurement():
    """measure_prefill times a forward pass with timing.benchmark."""
    model = torch_models.build_model(TINY)
    m = generation.measure_prefill(model, batch=1, prompt_len=32, min_run_time=0.02)
    assert m.median > 0 and m.device == "cpu" and "prefill" in m.label


@pytest.mark.parametrize("precision", ["fp32", "autocast-bf16"])
def test_training_steps_lower_the_loss(precision):
    """Training on one batch memorises it: the loss falls over a few steps."""
    model = torch_models.build_model(TINY)
    r = generation.train_steps(model, batch=2, seq_len=32, steps=5, precision=precision, lr=3e-3)
    assert len(r.losses) == 5 and r.losses[-1] < r.losses[0]
    assert r.seconds_per_step > 0
    assert r.tokens_per_s == pytest.approx(64 / r.seconds_per_step)
    n_params = sum(p.numel() for p in model.parameters())
    # weights, gradients and two AdamW states are live together at the peak
    assert r.peak_bytes >= 3 * n_params * 4
    assert not model.training


def test_activation_checkpointing_lowers_the_peak_and_is_undone():
    """Checkpointing keeps fewer activations; afterwards no_grad forwards work again."""
    model = torch_models.build_model(TINY)
    plain = generation.train_steps(model, batch=4, seq_len=64, steps=2)
    ckpt = generation.train_steps(
        model, batch=4, seq_len=64, steps=2, activation_checkpointing=True
    )
    assert ckpt.peak_bytes < plain.peak_bytes and ckpt.activation_checkpointing
    assert not any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    with torch.no_grad():
        model(input_ids=torch.zeros(1, 4, dtype=torch.long))


def test_fp16_autocast_is_refused_on_the_cpu():
    """fp16 autocast with a GradScaler needs CUDA; on the CPU the error says what to use
    instead."""
    model = torch_models.build_model(TINY)
    with pytest.raises(GpulabConfigError, match="autocast-fp16.*CUDA.*autocast-bf16"):
        generation.train_steps(model, batch=1, seq_len=8, steps=1, precision="autocast-fp16")
    with pytest.raises(GpulabConfigError, match="precision='fp8'"):
        generation.train_steps(model, batch=1, seq_len=8, steps=1, precision="fp8")


def test_grad_modes_compare_three_modes():
    """inference_mode and no_grad keep no graph: their peak is at most autograd's."""
    model = torch_models.build_model(TINY)
    modes = generation.grad_modes(model, batch=2, seq_len=64, min_run_time=0.02)
    assert list(modes) == ["inference_mode", "no_grad", "autograd"]
    assert all(seconds > 0 and peak > 0 for seconds, peak in modes.values())
    assert modes["inference_mode"].peak_bytes <= modes["autograd"].peak_bytes
    assert modes["no_grad"].peak_bytes < modes["autograd"].peak_bytes


def test_operators_per_decode_step_grow_with_the_layers():
    """Each layer adds the same operators to a step; an expression counts its own ops."""
    assert generation.count_ops(lambda: torch.ones(3) + 1) == 2
    two = generation.ops_per_decode_step(torch_models.build_model(TINY), 1, prompt_len=8)
    deeper = torch_models.build_model(dict(TINY, num_hidden_layers=4))
    four = generation.ops_per_decode_step(deeper, 1, prompt_len=8)
    per_layer = (four - two) / 2
    assert per_layer > 10 and per_layer == int(per_layer)
    assert two - 2 * per_layer > 0  # embedding, final norm, head and argmax run once


@pytest.mark.parametrize(
    "flags, native",
    [(set(), False), ({"avx2", "avx512f"}, False), ({"avx512_bf16"}, True), ({"amx_bf16"}, True)],
)
def test_bf16_is_native_on_a_cpu_only_with_avx512_bf16_or_amx(flags, native):
    """A CPU without those units emulates bf16, so the labs do not train in it there."""
    from gpulab.bench import precision

    assert precision.native_bf16("cpu", flags) is native
