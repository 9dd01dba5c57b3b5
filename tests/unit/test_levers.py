"""Out-of-memory levers (chapter 5): each lever lowers the estimate the way the text says."""

import pytest

from gpulab import levers, memprobe, models, torch_models
from gpulab.core.errors import GpulabConfigError

TINY = dict(
    model_type="llama",
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
)


def test_each_lever_shrinks_the_peak():
    spec = models.get("Llama-3.2-1B")
    rows = {e.lever.name: e for e in levers.compare(spec, levers.standard_levers(8), 2048)}
    naive, base, micro, mixed, ckpt, combined = rows.values()
    assert naive.peak_bytes > base.peak_bytes  # set_to_none frees gradients before the forward
    assert micro.peak_bytes < base.peak_bytes
    assert mixed.peak_bytes < base.peak_bytes
    assert ckpt.peak_bytes < base.peak_bytes
    assert combined.peak_bytes < min(micro.peak_bytes, mixed.peak_bytes, ckpt.peak_bytes)
    assert {e.effective_batch for e in rows.values()} == {8}


def test_accumulation_keeps_gradients_beside_the_activations():
    spec = models.get("Llama-3.2-1B")
    e = levers.estimate(spec, levers.Lever("acc", 2, 4), 2048)
    alone = levers.estimate(spec, levers.Lever("one", 2, 1), 2048)
    # the same micro-batch, with a whole set of gradients alive through its forward and backward
    # the parts do not change, only when they are alive
    assert e.breakdown.as_dict() == alone.breakdown.as_dict()
    # at this size the peak is the loss's backward, before the backward makes gradients: the
    # accumulated ones add a whole fp32 set to it (at 2 x 1024 tokens the foreach AdamW step,
    # the gradients and a copy of every parameter, is as high, and the kept set adds less)
    assert e.peak_bytes - alone.peak_bytes == pytest.approx(spec.n_params * 4, rel=1e-6)


def test_set_to_none_frees_the_gradients():
    model = torch_models.build_model(TINY)
    kept = memprobe.grads_between_steps(model, 2, 16, set_to_none=False)
    freed = memprobe.grads_between_steps(model, 2, 16, set_to_none=True)
    assert freed == 0
    assert kept == 4 * sum(p.numel() for p in model.parameters())


def test_empty_cache_demo_is_cuda_only():
    assert memprobe.empty_cache_demo("cpu", 1024) is None


@pytest.mark.gpu
def test_empty_cache_does_not_free_a_referenced_tensor():
    steps = {s.step: s for s in memprobe.empty_cache_demo("cuda", 64 * 2**20)}
    held = steps["empty_cache() while it is referenced"]
    assert held.allocated_bytes >= 64 * 2**20
    assert steps["del the tensor"].reserved_bytes >= 64 * 2**20  # cached, not returned
    assert steps["empty_cache() after del"].reserved_bytes < steps["del the tensor"].reserved_bytes


def test_bad_levers_are_named():
    spec = models.get("Llama-3.2-1B")
    with pytest.raises(GpulabConfigError, match="micro_batch"):
        levers.estimate(spec, levers.Lever("x", 0, 1), 1024)
    with pytest.raises(GpulabConfigError, match="levers is empty"):
        levers.compare(spec, [], 1024)
    with pytest.raises(GpulabConfigError, match="precision"):
        levers.estimate(spec, levers.Lever("x", 1, 1, precision="fp8"), 1024)
