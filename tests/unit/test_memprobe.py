"""gpulab.memprobe on a tiny model: exact sizes, and the estimate within 10% of the measurement."""

from __future__ import annotations

import pytest

from gpulab import memprobe, torch_models
from gpulab.estimate.memory import ModelSpec, estimate_inference, estimate_training

TINY = dict(model_type="llama", hidden_size=128, intermediate_size=344, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=False)


def test_inference_measurement_is_exact_for_weights_and_cache():
    """Weights are the parameters' bytes (plus the rotary buffer); the KV cache is exact."""
    spec = ModelSpec.from_hf_config(TINY)
    m = memprobe.measure_inference(torch_models.build_model(TINY), batch=2, seq_len=64)
    assert 0 <= m.weights - spec.n_params * 4 <= 256  # inv_freq: head_dim / 2 floats
    assert m.kv_cache == 2 * 2 * (2 * 32) * 2 * 64 * 4
    rows = memprobe.compare(estimate_inference(spec, "fp32", "fp32", 2, 64, activations="fp32",
                                               device="cpu"), m)
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
