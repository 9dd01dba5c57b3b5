"""gpulab.finetune: a fine-tuning step's memory, against a hand count and the CPU's allocator.

The hand counts use Llama 3.1 8B's published shapes (meta-llama/Llama-3.1-8B config.json),
written out here, not read from the library; the measurements build a toy Llama with
transformers, put LoRA adapters on it in a few lines of torch, and read the peak off the
allocator (torch.profiler's count on the CPU, gpulab.memprobe.allocator_peak_bytes).
"""

from __future__ import annotations

import dataclasses

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB
from gpulab.estimate import finetune, memory
from gpulab.estimate.finetune import FinetuneRecipe, estimate_finetune
from gpulab.reference import models, published_memory
from gpulab.reference.modelspec import ModelSpec
from tests.helpers import TINY_LLAMA

# Llama 3.1 8B: vocabulary, width, layers, MLP width, KV width (8 heads x 128)
V, H, L, F, KV = 128_256, 4096, 32, 14_336, 1024
PARAMS = 2 * V * H + L * (2 * H * H + 2 * H * KV + 3 * H * F + 2 * H) + H
TOKENS = 2 * 2048  # batch 2, rows packed to 2,048 tokens
# LoRA on q, v, o and the three MLP projections, rank 8: r x (inputs + outputs) per matrix
LORA = L * 8 * ((H + H) + (H + KV) + (H + H) + 3 * (H + F))
# bitsandbytes' 8-bit AdamW: two one-byte states and an fp32 absmax per block of 2048
ADAMW8BIT = 2 * (1 + 4 / 2048)
# NF4 with double quantization: 4 bits, an 8-bit scale per 64 weights, an fp32 one per 256 scales
NF4_BITS = 4 + (8 + 32 / 256) / 64
ROTARY = 2 * 2048 * 128 * 2  # cos and sin per position, bf16
# the final RMSNorm keeps its input's fp32 copy and its bf16 normalised values and output
FINAL_NORM = TOKENS * H * (4 + 2 + 2)
ROWS = {m.id: m for m in published_memory.load()}


def _recipe(row_id: str) -> FinetuneRecipe:
    return FinetuneRecipe(**ROWS[row_id].settings)


def _moment(est: finetune.FinetuneMemory, name: str) -> int:
    return dict(est.moments)[name]


def test_the_hand_counts_are_llama_3_1_8b():
    assert PARAMS == 8_030_261_248  # the safetensors index's total, in the catalogue
    assert LORA == 19_660_800
    spec = models.get("Llama-3.1-8B")
    assert (spec.vocab_size, spec.hidden_size, spec.n_layers, spec.intermediate_size) == (
        V,
        H,
        L,
        F,
    )


def test_torchtunes_full_fine_tune_by_hand():
    """bf16 weights; paged 8-bit states outside the allocator but the norms' (under 1e5
    elements); the loss's widest moment: each layer's checkpointed input, the rotary tables,
    every chunk's logit gradient in bf16 and the output head's weight gradient."""
    est = estimate_finetune(
        models.get("Llama-3.1-8B"), _recipe("torchtune-llama3.1-8b-full-rtx4090")
    )
    norms = (2 * L + 1) * H
    assert est.base_weights == PARAMS * 2
    assert est.paged == int((PARAMS - norms) * ADAMW8BIT)
    assert est.optimizer == int(PARAMS * ADAMW8BIT) - est.paged
    checkpoints = L * TOKENS * H * 2
    loss = TOKENS * V * 2 + V * H * 2
    hand = PARAMS * 2 + est.optimizer + checkpoints + ROTARY + FINAL_NORM + loss
    assert _moment(est, "loss") == pytest.approx(hand, rel=1e-3)
    assert est.allocator_peak == max(b for _, b in est.moments)
    assert est.device_peak == est.allocator_peak + est.paged


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_torchtunes_lora_and_qlora_by_hand(method):
    """Frozen base (bf16, or NF4 with the embedding, head and norms in 16 bits), bf16 adapters
    with two bf16 AdamW states each; the loss's widest moment: every chunk's logits in bf16
    (the compiled loss keeps no fp32 copy), the checkpointed inputs and the rotary tables."""
    est = estimate_finetune(
        models.get("Llama-3.1-8B"), _recipe(f"torchtune-llama3.1-8b-{method}-rtx4090")
    )
    kept_16bit = 2 * V * H + (2 * L + 1) * H
    base = (
        PARAMS * 2
        if method == "lora"
        else int((PARAMS - kept_16bit) * NF4_BITS / 8 + kept_16bit * 2)
    )
    assert est.base_weights == base
    assert (est.adapters, est.optimizer, est.paged) == (LORA * 2, LORA * 4, 0)
    hand = base + LORA * 6 + L * TOKENS * H * 2 + ROTARY + FINAL_NORM + TOKENS * V * 2
    assert _moment(est, "loss") == pytest.approx(hand, rel=1e-3)


def test_the_published_peaks_lie_within_the_pages_tolerance():
    """The appendix explains a gap above 15%; today none is (torchtune 0.6.1's README)."""
    peaks = finetune.compare_published()
    assert [p.row.figure for p in peaks] == [18.9, 16.2, 7.4]
    for p in peaks:
        assert abs(p.gap) <= 0.15, (p.row.id, p.gap)
        assert p.published_bytes == p.row.figure * GIB


def test_releasing_a_lever_never_lowers_the_peak():
    spec = models.get("Llama-3.1-8B")
    for p in finetune.compare_published():
        effects = dict(finetune.lever_effects(spec, p.recipe))
        assert effects, p.row.id
        assert all(b >= p.estimate.allocator_peak for b in effects.values()), effects
        if p.recipe.optimizer_paged:  # paged states become ordinary tensors: the device's view
            assert effects["paged states as ordinary tensors"] == p.estimate.device_peak


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Llama-3.2-1B", "Qwen2.5-7B", "Mistral-7B"])
@pytest.mark.parametrize("impl", ["fused", "foreach", "for-loop"])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_without_the_recipes_levers_a_full_fine_tune_is_memory_estimate_training(
    name, impl, checkpointing
):
    """No chunked loss, no optimizer in the backward, no paging: the step that
    memory.estimate_training counts (checked against MemTracker on transformers' models)."""
    spec = models.get(name)
    recipe = FinetuneRecipe(
        "full", "bf16", "adamw", impl, activation_checkpointing=checkpointing, seq_len=1024
    )
    training = memory.estimate_training(
        spec, "bf16", "adamw", 2, 1024, checkpointing, optimizer_impl=impl
    )
    assert estimate_finetune(spec, recipe).allocator_peak == pytest.approx(training.peak, rel=0.025)


# --------------------------------------------------------------------------- the checks


def test_a_recipe_refuses_what_contradicts_itself():
    with pytest.raises(GpulabConfigError, match="lora_rank and lora_targets") as err:
        FinetuneRecipe("lora")
    assert err.value.field == "lora_rank"
    with pytest.raises(GpulabConfigError, match="trains every weight"):
        FinetuneRecipe("full", lora_rank=8)
    with pytest.raises(GpulabConfigError, match="cannot accumulate") as err:
        FinetuneRecipe("full", optimizer_in_backward=True, gradient_accumulation_steps=8)
    assert err.value.field == "gradient_accumulation_steps"
    with pytest.raises(GpulabConfigError, match="needs activation_checkpointing"):
        FinetuneRecipe("full", activation_checkpointing=False, activation_offloading=True)
    with pytest.raises(GpulabConfigError, match="did you mean 'qlora'"):
        FinetuneRecipe("qloar")
    with pytest.raises(GpulabConfigError, match="lora_targets"):
        FinetuneRecipe("lora", lora_rank=8, lora_targets=("q", "lm_head"))


def test_a_mixture_of_experts_and_an_oversized_rank_are_refused():
    recipe = FinetuneRecipe("lora", lora_rank=8, lora_targets=("q", "v"))
    with pytest.raises(GpulabConfigError, match="dense decoders") as err:
        estimate_finetune(models.get("Mixtral-8x7B"), recipe)
    assert err.value.field == "spec"
    wide = dataclasses.replace(recipe, lora_rank=2048)
    with pytest.raises(GpulabConfigError, match="narrower side") as err:
        estimate_finetune(models.get("Llama-3.2-1B"), wide)
    assert err.value.field == "lora_rank"


# --------------------------------------------------------------------------- measured on the CPU

TINY = TINY_LLAMA
TARGETS = {"q": "q_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj"}
TARGETS |= {"down": "down_proj"}


def _lora_model(dtype, rank: int):
    """transformers' toy Llama, frozen, with rank-`rank` adapters on six projections a layer."""
    import torch
    from torch import nn

    from gpulab.bench import torch_models

    class LoRA(nn.Module):
        def __init__(self, base: nn.Linear):
            super().__init__()
            self.base = base
            self.a = nn.Linear(base.in_features, rank, bias=False)
            self.b = nn.Linear(rank, base.out_features, bias=False)

        def forward(self, x):
            return self.base(x) + 2.0 * self.b(self.a(x))

    torch.manual_seed(0)
    model = torch_models.build_model(TINY)
    model.requires_grad_(False)
    for layer in model.model.layers:
        for name in TARGETS.values():
            parent = layer.mlp if name in ("gate_proj", "up_proj", "down_proj") else layer.self_attn
            setattr(parent, name, LoRA(getattr(parent, name)))
    return model.to(dtype)


def _measured_step(model, opts, batch, seq, chunks, checkpointing, step_after=True):
    """The allocator's peak over a second training step (the first makes the states); with
    `step_after` False the optimizers step in the backward pass, through hooks."""
    import torch
    import torch.nn.functional as F

    from gpulab.bench import memprobe

    if checkpointing:
        memprobe.set_activation_checkpointing(model, True)
    ids = torch.randint(0, TINY["vocab_size"], (batch, seq))
    model.train()

    def loss():
        if chunks == 1:
            return model(input_ids=ids, labels=ids, use_cache=False).loss
        hidden = model.model(input_ids=ids, use_cache=False).last_hidden_state
        logits = [model.lm_head(h) for h in hidden.chunk(chunks, dim=1)]
        del hidden
        total = sum(
            F.cross_entropy(
                x.reshape(-1, TINY["vocab_size"]).float(), t.reshape(-1), reduction="sum"
            )
            for x, t in zip(logits, ids.chunk(chunks, dim=1), strict=True)
        )
        del logits  # as torchtune's recipes do
        return total / ids.numel()

    def step():
        loss().backward()
        for opt in opts if step_after else ():
            opt.step()
            opt.zero_grad(set_to_none=True)

    step()
    return memprobe.allocator_peak_bytes(step, "cpu", model, *opts)


@pytest.mark.parametrize(
    "dtype, chunks, checkpointing",
    [("fp32", 1, False), ("fp32", 1, True), ("bf16", 4, True), ("fp32", 4, True)],
)
def test_lora_is_predicted_within_5_percent_of_the_allocator(dtype, chunks, checkpointing):
    """Adapters, their fused AdamW states, the frozen norms' savings, the chunked loss."""
    import torch

    model = _lora_model(torch.float32 if dtype == "fp32" else torch.bfloat16, rank=4)
    adapters = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(adapters, fused=True)
    measured = _measured_step(model, [opt], 2, 128, chunks, checkpointing)
    recipe = FinetuneRecipe(
        "lora",
        dtype,
        lora_rank=4,
        lora_targets=tuple(TARGETS),
        activation_checkpointing=checkpointing,
        batch=2,
        seq_len=128,
        loss_chunks=chunks,
    )
    spec = ModelSpec.from_hf_config(TINY)
    assert sum(p.numel() for p in adapters) == sum(finetune.trainable_tensors(spec, recipe))
    assert estimate_finetune(spec, recipe).allocator_peak == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_the_optimizer_in_the_backward_is_predicted_within_5_percent(checkpointing):
    """A full fine-tune whose every parameter is stepped by a post-accumulate-grad hook and its
    gradient freed, as torchtune's optimizer_in_bwd does."""
    import torch

    from gpulab.bench import torch_models

    torch.manual_seed(0)
    model = torch_models.build_model(TINY)
    opts = {p: torch.optim.AdamW([p], fused=True) for p in model.parameters()}

    def hook(p):
        opts[p].step()
        opts[p].zero_grad(set_to_none=True)

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(hook)
    measured = _measured_step(model, list(opts.values()), 2, 128, 1, checkpointing, False)
    recipe = FinetuneRecipe(
        "full",
        "fp32",
        optimizer_in_backward=True,
        activation_checkpointing=checkpointing,
        batch=2,
        seq_len=128,
    )
    predicted = estimate_finetune(ModelSpec.from_hf_config(TINY), recipe).allocator_peak
    assert predicted == pytest.approx(measured, rel=0.05)
