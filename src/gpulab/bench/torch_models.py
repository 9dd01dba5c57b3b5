"""Models built from config dicts with random weights: nothing is downloaded (every chapter).

A causal LM comes from ``transformers``' own model class for the config's ``model_type``,
so its shapes are the real model's; its weights are random, which is all that memory and
speed measurements need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.core.validate import checked

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = ["build_model"]


@checked
def build_model(
    config: dict,
    dtype: torch.dtype | None = None,
    device: torch.device | str = "cpu",
    seed: int = 0,
    attn_implementation: str = "sdpa",
):
    """A causal LM from a config.json dict, random weights, in eval mode.

    `attn_implementation` is transformers' choice: "sdpa" (fused kernels, the default) or
    "eager" (attention written out as matrix products, which FLOP counters can see).
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(config)
    model_type = cfg.pop("model_type")
    cfg.pop("architectures", None)
    hf_config = AutoConfig.for_model(model_type, **cfg)
    torch.manual_seed(seed)
    dtype = dtype or torch.float32
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(
            hf_config, dtype=dtype, attn_implementation=attn_implementation
        )
    return model.eval()
