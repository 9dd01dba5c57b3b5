"""Beyond chat: image generation and embeddings for RAG, on small models (chapter 3).

    from gpulab import workloads

    unet = workloads.small_unet(dev)  # a diffusers UNet2DModel, random weights
    t = workloads.time_per_image(unet, steps=4, batch=1, device=dev)
    t.seconds_per_step, t.seconds_per_image, t.images_per_s

    encoder = workloads.small_encoder(dev)  # a transformers BertModel, random weights
    rate = workloads.docs_per_second(encoder, batch=32, seq_len=128, device=dev)
    workloads.time_to_embed(1_000_000, rate)  # seconds, extrapolated

A diffusion model makes an image by calling its denoising network once per sampling step,
so the time per image grows linearly with the steps; a batch of images shares each call,
which raises the throughput while the device still has idle units. An embedding model
runs one forward pass per document, so its throughput grows with the batch the same way.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.bench import timing
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import (
    PositiveFloat,
    PositiveInt,
    checked,
)

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "MINILM_CONFIG",
    "TINY_ENCODER_CONFIG",
    "TINY_UNET_CONFIG",
    "ImageTiming",
    "docs_per_second",
    "embed",
    "sample",
    "small_encoder",
    "small_unet",
    "time_per_image",
    "time_to_embed",
]

# A small latent-diffusion UNet: 4 latent channels as in Stable Diffusion's VAE latents,
# two resolution levels, attention at the lower one. About 0.7 M parameters.
TINY_UNET_CONFIG = {
    "sample_size": 32,  # latent height and width (256 x 256 pixels after an 8x VAE)
    "in_channels": 4,  # latent channels
    "out_channels": 4,  # the predicted noise has the latent's shape
    "layers_per_block": 1,
    "block_out_channels": (32, 64),  # channels at each resolution level
    "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
    "up_block_types": ("AttnUpBlock2D", "UpBlock2D"),
    "norm_num_groups": 8,
    "attention_head_dim": 16,
}

# A two-layer BERT encoder: small enough for a CPU test.
TINY_ENCODER_CONFIG = {
    "vocab_size": 30522,  # BERT's WordPiece vocabulary
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "max_position_embeddings": 512,
}

# The shapes of sentence-transformers/all-MiniLM-L6-v2, a widely used embedding model for
# RAG (its config.json on the Hugging Face Hub): 6 layers, 384 wide, 22.6 M parameters
# without the pooler, which embeddings do not use.
MINILM_CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
}

# The noise schedule of Stable Diffusion (DDPM "scaled linear" betas over 1000 steps).
TRAIN_TIMESTEPS = 1000
BETA_START, BETA_END = 0.00085, 0.012


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------- image generation


@checked
def small_unet(
    device: torch.device | str = "cpu",
    config: dict | None = None,
    dtype: torch.dtype | None = None,
    seed: int = 0,
):
    """A `diffusers.UNet2DModel` from a config dict (TINY_UNET_CONFIG by default), random
    weights, in eval mode on `device`."""
    torch = _torch()
    try:
        from diffusers import UNet2DModel
    except ImportError:
        raise GpulabConfigError(
            "image generation needs the diffusers package: pip install diffusers"
        ) from None
    torch.manual_seed(seed)
    unet = UNet2DModel.from_config(dict(config or TINY_UNET_CONFIG)).to(device)
    # built in float32; a cast is asked for only when another dtype is wanted (diffusers
    # warns about any cast, even to float32)
    return (unet if dtype in (None, torch.float32) else unet.to(dtype=dtype)).eval()


def _alphas_cumprod():
    """Cumulative products of (1 - beta) of the scaled-linear schedule, one per step."""
    torch = _torch()
    betas = (
        torch.linspace(BETA_START**0.5, BETA_END**0.5, TRAIN_TIMESTEPS, dtype=torch.float64) ** 2
    )
    return torch.cumprod(1.0 - betas, dim=0)


@checked
def sample(
    unet: Callable,
    steps: PositiveInt,
    batch: PositiveInt,
    device: torch.device | str,
    seed: int = 0,
):
    """A DDIM sampling loop written out: `steps` UNet calls from pure noise to a latent.

    At each step the UNet predicts the noise in x_t; from it the clean latent x_0 is
    estimated, and x moves to the next, less noisy timestep (deterministic DDIM, eta 0):

        x0 = (x_t - sqrt(1 - a_t) eps) / sqrt(a_t)
        x_prev = sqrt(a_prev) x0 + sqrt(1 - a_prev) eps
    """
    torch = _torch()
    cfg = unet.config
    dtype = next(unet.parameters()).dtype
    gen = torch.Generator().manual_seed(seed)
    shape = (batch, cfg.in_channels, cfg.sample_size, cfg.sample_size)  # (B, C, H, W)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    alphas = _alphas_cumprod()
    timesteps = torch.linspace(TRAIN_TIMESTEPS - 1, 0, steps).round().long().tolist()
    with torch.inference_mode():
        for i, t in enumerate(timesteps):
            eps = unet(x, t).sample  # the predicted noise, (B, C, H, W)
            a_t = float(alphas[t])
            a_prev = float(alphas[timesteps[i + 1]]) if i + 1 < steps else 1.0
            x0 = (x - math.sqrt(1 - a_t) * eps) / math.sqrt(a_t)
            x = math.sqrt(a_prev) * x0 + math.sqrt(1 - a_prev) * eps
    return x


@dataclass(frozen=True)
class ImageTiming:
    """Time of one sampling run of `steps` UNet calls for a batch of images."""

    steps: int
    batch: int
    seconds: float  # median over the repeats: the whole loop, for the whole batch
    repeats: int

    @property
    def seconds_per_step(self) -> float:
        """Seconds per sampling step (one UNet call for the whole batch)."""
        return self.seconds / self.steps

    @property
    def seconds_per_image(self) -> float:
        """Seconds per image: the loop's time shared by the images of the batch."""
        return self.seconds / self.batch

    @property
    def images_per_s(self) -> float:
        """Images per second: batch / seconds."""
        return self.batch / self.seconds


@checked
def time_per_image(
    unet: Callable,
    steps: PositiveInt,
    batch: PositiveInt = 1,
    device: torch.device | str = "cpu",
    repeats: PositiveInt = 3,
) -> ImageTiming:
    """Time `sample` (steps UNet calls on a batch of latents): one UNet call to warm up,
    then `repeats` timed runs, the device synchronised around each; the median is kept.

    `unet` is anything called as `unet(x, t)` that returns an object with `.sample` and
    has the `config` and `parameters()` of a UNet2DModel.
    """
    sample(unet, 1, batch, device)  # warm-up: one UNet call
    times = []
    for _ in range(repeats):
        timing.synchronize(device)
        start = time.perf_counter()
        sample(unet, steps, batch, device)
        timing.synchronize(device)
        times.append(time.perf_counter() - start)
    return ImageTiming(steps=steps, batch=batch, seconds=statistics.median(times), repeats=repeats)


# ---------------------------------------------------------------- embeddings for RAG


@checked
def small_encoder(
    device: torch.device | str = "cpu",
    config: dict | None = None,
    dtype: torch.dtype | None = None,
    seed: int = 0,
):
    """A `transformers` BertModel from a config dict (TINY_ENCODER_CONFIG by default;
    MINILM_CONFIG for a real embedding model's shapes), random weights, eval mode."""
    torch = _torch()
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    bert_config = BertConfig(**dict(config or TINY_ENCODER_CONFIG))
    model = BertModel(bert_config, add_pooling_layer=False)
    return model.to(device=device, dtype=dtype or torch.float32).eval()


@checked
def embed(encoder: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor):
    """Sentence embeddings as sentence-transformers makes them: the mean of the last
    hidden states over the real tokens, L2-normalised.

    ids, mask: (docs, seq_len) -> (docs, hidden)
    """
    torch = _torch()
    hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state  # (D, S, H)
    weights = mask.unsqueeze(-1).to(hidden.dtype)  # (D, S, 1)
    mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)
    return torch.nn.functional.normalize(mean, dim=-1)


@checked
def docs_per_second(
    encoder: torch.nn.Module,
    batch: PositiveInt,
    seq_len: PositiveInt,
    device: torch.device | str = "cpu",
    min_run_time: PositiveFloat = 0.2,
    seed: int = 0,
) -> float:
    """Documents embedded per second: batches of `batch` random documents of `seq_len`
    tokens, timed with `timing.benchmark` under `torch.inference_mode`."""
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, encoder.config.vocab_size, (batch, seq_len), generator=gen)
    ids = ids.to(device)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        t = timing.benchmark(
            embed,
            encoder,
            ids,
            mask,
            device=device,
            min_run_time=min_run_time,
            label=f"embed {batch} x {seq_len}",
        )
    return batch / t.median


@checked
def time_to_embed(n_docs: PositiveInt, docs_per_s: PositiveFloat) -> float:
    """Seconds to embed `n_docs` documents at `docs_per_s` (a linear extrapolation)."""
    return n_docs / docs_per_s
