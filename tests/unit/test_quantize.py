"""gpulab.quantize: round-trip error bounds, stored bytes, and agreement with gpulab.memory."""

from __future__ import annotations

import pytest
import torch

from gpulab import quantize, torch_models
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.memory import bits_per_weight


def _weight(out=64, inp=256, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(out, inp, generator=gen)


@pytest.mark.parametrize("bits", [8, 4, 3, 2])
def test_per_channel_round_trip_within_half_a_step(bits):
    """Every element comes back within scale/2 of its row's scale; codes stay in range."""
    w = _weight()
    qt = quantize.quantize_per_channel(w, bits)
    assert qt.q.dtype == torch.int8 and qt.scale.shape == (64, 1) and qt.group_size is None
    assert int(qt.q.abs().max()) <= 2 ** (bits - 1) - 1
    err = (quantize.dequantize(qt) - w).abs()
    assert torch.all(err <= qt.scale / 2 * (1 + 1e-6))


@pytest.mark.parametrize("group_size", [32, 128, 256])
def test_per_group_round_trip_within_half_a_step(group_size):
    """One scale per group along the input dimension; error within that group's scale/2."""
    w = _weight()
    qt = quantize.quantize_per_group(w, 4, group_size)
    assert qt.scale.shape == (64, 256 // group_size)
    err = (quantize.dequantize(qt) - w).abs().view(64, -1, group_size)
    assert torch.all(err <= qt.scale.unsqueeze(2) / 2 * (1 + 1e-6))


def test_the_largest_weight_of_a_row_is_exact():
    """absmax maps to the largest code, so it comes back exactly (up to float rounding)."""
    w = _weight()
    back = quantize.dequantize(quantize.quantize_per_channel(w, 8))
    idx = w.abs().argmax(dim=1)
    rows = torch.arange(64)
    torch.testing.assert_close(back[rows, idx], w[rows, idx])


def test_int8_per_channel_beats_int4_per_group():
    """More bits win over finer scales: int8's error is far below int4 group 128's."""
    w = _weight()
    e8 = (quantize.dequantize(quantize.quantize_per_channel(w, 8)) - w).abs().mean()
    e4 = (quantize.dequantize(quantize.quantize_per_group(w, 4, 128)) - w).abs().mean()
    e4c = (quantize.dequantize(quantize.quantize_per_channel(w, 4)) - w).abs().mean()
    assert e8 * 5 < e4 < e4c  # and smaller groups beat one scale per row


def test_zero_rows_quantize_to_zero():
    """An all-zero row has scale 0; its codes are 0 and it dequantizes to zeros, not NaN."""
    w = _weight()
    w[3] = 0
    back = quantize.dequantize(quantize.quantize_per_group(w, 4, 32))
    assert torch.all(back[3] == 0) and not torch.isnan(back).any()


def test_stored_bytes_formula():
    """Codes packed at `bits` bits plus one scale per row or group at scale_bits."""
    w = _weight(64, 256)
    assert quantize.stored_bytes(quantize.quantize_per_channel(w, 8)) == 64 * 256 + 64 * 2
    assert (
        quantize.stored_bytes(quantize.quantize_per_group(w, 4, 32)) == 64 * 256 // 2 + 64 * 8 * 2
    )
    assert (
        quantize.stored_bytes(quantize.quantize_per_group(w, 4, 32), scale_bits=32)
        == 64 * 128 + 64 * 8 * 4
    )


@pytest.mark.parametrize("fmt, bits, group, inp", [("int4", 4, 128, 256), ("int8", 8, None, 4096)])
def test_bits_per_weight_agree_with_gpulab_memory(fmt, bits, group, inp):
    """int4 group 128 with fp16 scales is 4.125 bits/weight; int8 over 4096-wide rows 8.0039."""
    w = _weight(8, inp)
    qt = (
        quantize.quantize_per_channel(w, bits)
        if group is None
        else quantize.quantize_per_group(w, bits, group)
    )
    assert quantize.stored_bytes(qt) * 8 / w.numel() == pytest.approx(bits_per_weight(fmt))
    if fmt == "int4":
        assert bits_per_weight(fmt) == 4.125


@pytest.mark.parametrize("bits", [1, 9, 0, 4.0, True])
def test_bad_bits_are_refused(bits):
    """bits outside 2..8 (or not an int) name the field."""
    with pytest.raises(GpulabConfigError, match="bits="):
        quantize.quantize_per_channel(_weight(), bits)


@pytest.mark.parametrize("group_size", [0, -32, 100, 48.0])
def test_bad_group_size_is_refused(group_size):
    """A group size that is not a positive divisor of the input dimension names the field."""
    with pytest.raises(GpulabConfigError, match="group_size="):
        quantize.quantize_per_group(_weight(64, 256), 4, group_size)


def test_non_matrix_is_refused():
    """Only 2-D floating-point weights are quantized."""
    with pytest.raises(GpulabConfigError, match="w must be a 2-D"):
        quantize.quantize_per_channel(torch.ones(4))
    with pytest.raises(GpulabConfigError, match="w must be a 2-D"):
        quantize.quantize_per_channel(torch.ones(4, 4, dtype=torch.int64))


TINY = dict(
    model_type="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=100,
    tie_word_embeddings=False,
)


def test_quantize_linear_weights_skips_embeddings_and_head():
    """Decoder matrices change; embedding, head and norms do not; bytes follow the formula."""
    model = torch_models.build_model(TINY)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    report = quantize.quantize_linear_weights_(model, 4, 32)
    after = dict(model.named_parameters())
    for name, p in after.items():
        unchanged = torch.equal(before[name], p.detach())
        assert unchanged == (p.ndim < 2 or "embed_tokens" in name or "lm_head" in name), name
    per_layer = 64 * 64 * 2 + 32 * 64 * 2 + 128 * 64 * 3  # q, o; k, v; gate, up, down
    assert report["matrices"] == 14 and report["params"] == 2 * per_layer
    assert report["bytes_before"] == 2 * per_layer * 2
    assert report["bytes_after"] == pytest.approx(2 * per_layer * (4 + 16 / 32) / 8)
    assert 0 < report["max_abs_error"] < 0.05


def test_quantize_linear_weights_handles_fused_experts():
    """transformers' fused expert tensors (experts, out, in) are quantized row by row."""
    cfg = dict(
        model_type="mixtral",
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        vocab_size=100,
    )
    model = torch_models.build_model(cfg)
    expert = next(p for n, p in model.named_parameters() if p.ndim == 3)
    old = expert.detach().clone()
    quantize.quantize_linear_weights_(model, 8)
    assert not torch.equal(old, expert.detach())
    assert (old - expert.detach()).abs().max() < old.abs().max() / 127
