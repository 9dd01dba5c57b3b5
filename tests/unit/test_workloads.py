"""gpulab.workloads: a diffusion sampling loop and an embedding encoder, on the CPU."""

from __future__ import annotations

import sys

import pytest
import torch

from gpulab import workloads
from gpulab.core.errors import GpulabConfigError


class CountingUNet:
    """Wraps a UNet and counts its calls, so the work is counted rather than timed."""

    def __init__(self, unet):
        self.unet, self.calls = unet, 0

    def __getattr__(self, name):
        return getattr(self.unet, name)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.unet(*args, **kwargs)


TINY_UNET = dict(
    workloads.TINY_UNET_CONFIG, sample_size=8, block_out_channels=(8, 16), attention_head_dim=8
)


@pytest.fixture(scope="module")
def unet():
    return workloads.small_unet("cpu", TINY_UNET)


@pytest.mark.parametrize("steps", [1, 3, 6])
def test_time_per_image_makes_one_unet_call_per_step(unet, steps):
    """One warm-up call, then `steps` calls per timed repeat: linear in the steps."""
    counting = CountingUNet(unet)
    t = workloads.time_per_image(counting, steps=steps, batch=2, device="cpu", repeats=2)
    assert counting.calls == 1 + 2 * steps
    assert (t.steps, t.batch, t.repeats) == (steps, 2, 2)
    assert t.seconds_per_step == pytest.approx(t.seconds / steps)
    assert t.seconds_per_image == pytest.approx(t.seconds / 2)
    assert t.images_per_s == pytest.approx(2 / t.seconds)


def test_sampling_returns_a_finite_latent_of_the_batch(unet):
    """The DDIM loop ends on a latent of the UNet's shape."""
    x = workloads.sample(unet, steps=4, batch=3, device="cpu")
    assert x.shape == (3, 4, 8, 8) and torch.isfinite(x).all()


def test_small_unet_without_diffusers_says_what_to_install(monkeypatch):
    """With diffusers missing, the error names the package to install."""
    monkeypatch.setitem(sys.modules, "diffusers", None)  # makes `import diffusers` fail
    with pytest.raises(GpulabConfigError, match="pip install diffusers"):
        workloads.small_unet("cpu")


def test_embeddings_are_normalised_and_counted_per_document():
    """One unit vector per document; docs_per_second is a positive rate."""
    encoder = workloads.small_encoder(
        "cpu", dict(workloads.TINY_ENCODER_CONFIG, num_hidden_layers=1)
    )
    ids = torch.randint(0, 1000, (3, 16))
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # a shorter document, padded
    with torch.inference_mode():
        e = workloads.embed(encoder, ids, mask)
    assert e.shape == (3, 128)
    assert torch.allclose(e.norm(dim=-1), torch.ones(3))
    assert workloads.docs_per_second(encoder, batch=4, seq_len=16, min_run_time=0.02) > 0


def test_time_to_embed_is_documents_over_rate():
    """10,000 documents at 200 per second take 50 s; bad inputs are refused."""
    assert workloads.time_to_embed(10_000, 200.0) == pytest.approx(50.0)
    assert workloads.time_to_embed(1_000_000, 1e3) == pytest.approx(1000.0)
    with pytest.raises(GpulabConfigError, match="docs_per_s"):
        workloads.time_to_embed(10, 0)
    with pytest.raises(GpulabConfigError, match="n_docs"):
        workloads.time_to_embed(0, 1.0)
