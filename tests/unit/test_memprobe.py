"""gpulab.memprobe on a tiny model: exact sizes, estimate against measurement, two instruments."""

from __future__ import annotations

import pytest
import torch

from gpulab import memprobe, torch_models
from gpulab.estimate.memory import (
    ModelSpec,
    estimate_inference,
    estimate_training,
    optimizer_step_bytes,
)
from tests.helpers import TINY_LLAMA

TINY = TINY_LLAMA


def test_inference_measurement_is_exact_for_weights_and_cache():
    """Weights are the parameters' bytes (plus the rotary buffer); the KV cache is exact."""
    spec = ModelSpec.from_hf_config(TINY)
    m = memprobe.measure_inference(torch_models.build_model(TINY), batch=2, seq_len=64)
    assert 0 <= m.weights - spec.n_params * 4 <= 256  # inv_freq: head_dim / 2 floats
    assert m.kv_cache == 2 * 2 * (2 * 32) * 2 * 64 * 4
    rows = memprobe.compare(
        estimate_inference(spec, "fp32", "fp32", 2, 64, activations="fp32", device="cpu"), m
    )
    assert all(abs(r["error %"]) <= 10 for r in rows), rows


def test_training_measurement_matches_the_estimate():
    """Gradients and AdamW states are exact; activations and the peak within 10%."""
    spec = ModelSpec.from_hf_config(TINY)
    m = memprobe.measure_training(torch_models.build_model(TINY), batch=2, seq_len=64)
    assert m.gradients == spec.n_params * 4
    n_tensors = len(list(torch_models.build_model(TINY).parameters()))
    assert m.optimizer == spec.n_params * 8 + 4 * n_tensors  # exp_avg, exp_avg_sq + a step each
    rows = memprobe.compare(estimate_training(spec, "fp32", "adamw", 2, 64, device="cpu"), m)
    assert all(abs(r["error %"]) <= 10 for r in rows), rows


def test_unknown_optimizer_is_refused():
    """Only optimizers that can be built here are measured."""
    with pytest.raises(ValueError, match="optimizer='lion'"):
        memprobe.measure_training(torch_models.build_model(TINY), 1, 8, optimizer="lion")


def _step(model, opt, ids):
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


@pytest.mark.parametrize(
    "impl, make",
    [
        ("for-loop", lambda p: torch.optim.AdamW(p, foreach=False)),
        ("foreach", lambda p: torch.optim.AdamW(p, foreach=True)),
        ("fused", lambda p: torch.optim.AdamW(p, fused=True)),
    ],
)
def test_the_optimizer_steps_temporaries_are_measured(impl, make):
    """MemTracker over one AdamW step alone, less the weights, gradients and states before it:
    the estimator's optimizer_step_bytes (for-loop: twice the untied 1000 x 128 head, the last
    tensor, and the final norm's 128-wide quotient still held from the step before) to 1 KiB."""
    spec = ModelSpec.from_hf_config(TINY)
    model = torch_models.build_model(TINY).train()
    opt = make(model.parameters())
    ids = torch.randint(0, 1000, (1, 16))
    _step(model, opt, ids)
    model(input_ids=ids, labels=ids).loss.backward()
    held = memprobe.tensor_bytes(
        [
            *model.parameters(),
            *(p.grad for p in model.parameters()),
            *(t for s in opt.state.values() for t in s.values()),
        ]
    )
    temporaries = memprobe.peak_bytes(opt.step, "cpu", model, opt) - held
    by_hand = {
        "for-loop": (2 * 1000 * 128 + 128) * 4,
        "foreach": spec.n_params * 4,
        "fused": 0,
    }[impl]
    assert optimizer_step_bytes(spec, "adamw", impl, "cpu") == by_hand
    assert by_hand <= temporaries <= by_hand + 1024  # + a few scalars (step counts, lr)


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("setting", ["prefill", "forward", "train"])
def test_each_setting_is_predicted_within_2_percent_of_memtracker(setting, attention):
    """Peak tensors of a prefill (last logits), a forward (all logits) and a steady AdamW step,
    measured with MemTracker on transformers' Llama: 256 tokens, more than h = 128, so the loss's
    backward (three vocab-wide fp32 tensors) sets the training peak."""
    spec = ModelSpec.from_hf_config(TINY)
    model = torch_models.build_model(TINY, attn_implementation=attention)
    if setting == "train":
        m = memprobe.measure_training(model, 2, 128)
        predicted = estimate_training(
            spec, "fp32", "adamw", 2, 128, attention=attention, device="cpu"
        ).peak
    else:
        logits = "last" if setting == "prefill" else "all"
        m = memprobe.measure_inference(model, 2, 128, logits=logits)
        predicted = estimate_inference(
            spec,
            "fp32",
            "fp32",
            2,
            128,
            activations="fp32",
            logits=logits,
            attention=attention,
            device="cpu",
        ).total
    assert predicted == pytest.approx(m.peak, rel=0.02)


def test_the_allocator_is_a_second_instrument():
    """The profiler's allocator count sees memory that bypasses MemTracker's dispatch mode, and
    agrees with MemTracker on an ordinary forward pass."""
    from torch.utils._python_dispatch import _disable_current_modes

    def hidden():
        with _disable_current_modes():
            x = torch.empty(1 << 20, dtype=torch.uint8)
        return x.sum()

    assert (
        memprobe.peak_bytes(hidden, "cpu") < 1 << 20 <= memprobe.allocator_peak_bytes(hidden, "cpu")
    )
    model = torch_models.build_model(TINY)
    ids = torch.randint(0, 1000, (2, 64))

    def forward():
        with torch.inference_mode():
            model(input_ids=ids)

    by_tracker = memprobe.peak_bytes(forward, "cpu", model)
    assert memprobe.allocator_peak_bytes(forward, "cpu", model) == pytest.approx(
        by_tracker, rel=0.01
    )


def test_a_checkpointed_training_step_prints_no_transformers_warning(capfd):
    """The step asks for no KV cache, so transformers has nothing to warn about (chapter 5's
    page used to show its use_cache warning)."""
    memprobe.measure_training(
        torch_models.build_model(TINY), batch=1, seq_len=16, activation_checkpointing=True
    )
    out, err = capfd.readouterr()
    assert "use_cache" not in out + err
