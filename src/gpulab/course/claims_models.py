"""Fact-check derivations for chapter 2: model sizes, weights in each format, what fits where.

Each function recomputes one claim's correct value with gpulab (the model catalogue,
``gpulab.memory``) and registers itself in ``gpulab.derivations``; its ``Computed.values`` are
the named figures the claim's templates in ``fact_check.json`` fill in. The speed claims
(tokens per second, FLOPs) are in ``gpulab.claims_speed``.
"""

from __future__ import annotations

import functools

from gpulab.core.units import GB
from gpulab.course.derivations import (
    Computed,
    cpu_13900k,
    gpu,
    nominal_weight_gb,
    register,
    weight_gb,
)
from gpulab.estimate import basis, memory
from gpulab.reference import models

__all__: list[str] = []  # nothing to import: the functions register themselves

# The article's own figures that the derivations below take as inputs.
# "70B ... at least 24 GB" / "only 24 GB after quantization" (claims 2, 73)
ARTICLE_70B_4BIT_GB = 24
ARTICLE_TEST_BOX = {"vram_gb": 24, "ram_gb": 64, "own_ram_gb": 32}  # the RTX 4090 box (claim 72)
ARTICLE_GPU_LAYERS = 35  # "35 layers on the GPU" (claims 17, 72)
GUIDE_MIN_VRAM_GB = {3: 8, 7: 12, 13: 12, 14: 16, 32: 24}  # the guide's 4-bit tiers; 13B: claim 80
SMALL_CARD_GB = 8  # the "8 GB card" the guide compares with (claim 116)
TIER_CARD = {13: "RTX 3060 12GB", 32: "RTX 4090"}  # the card a tier is checked on (claims 80, 99)


def usable_gb(name: str) -> float:
    """What one card can give a model's tensors, in GB: driver-reported capacity less the
    runtime's share."""
    return gpu(name).model_memory_bytes / GB


# ---- chapter 2: memory


@register
def llama3_70b_4bit_weights() -> Computed:
    lo, hi = weight_gb("Llama-3-70B", "int4"), weight_gb("Llama-3-70B", "q4_k_m")
    n = models.get("Llama-3-70B").n_params
    bits = ARTICLE_70B_4BIT_GB * GB * 8 / n
    b4, bk = memory.bits_per_weight("int4"), memory.bits_per_weight("q4_k_m")
    return Computed(
        lo,
        "GB",
        f"{lo:.1f}–{hi:.1f} GB",
        f"{n / 1e9:.2f}B parameters (catalogue): int4 group 128 ({b4:g} bits, embeddings in 16 "
        f"bits) {lo:.1f} GB; Q4_K_M ({bk:g} bits) {hi:.1f} GB; {ARTICLE_70B_4BIT_GB} GB would "
        f"need {bits:.1f} bits per weight",
        {"lo": lo, "hi": hi, "claimed_gb": ARTICLE_70B_4BIT_GB, "bits_needed": bits},
    )


@register
def llama3_70b_fp16_weights() -> Computed:
    v = weight_gb("Llama-3-70B", "fp16")
    n = models.get("Llama-3-70B").n_params
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"{n:,} parameters x 2 bytes (gpulab.memory)",
        {
            "fp16_gb": v,
            "int4_gb": weight_gb("Llama-3-70B", "int4"),
            "q4km_gb": weight_gb("Llama-3-70B", "q4_k_m"),
        },
    )


@register
def llama3_70b_q4km_weights() -> Computed:
    v = weight_gb("Llama-3-70B", "q4_k_m")
    cards = 2 * usable_gb("RTX 3090")  # a layer split: each card holds its share of the layers
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"{models.get('Llama-3-70B').n_params / 1e9:.2f}B x "
        f"{memory.bits_per_weight('q4_k_m'):g} bits / 8 (llama.cpp's Q4_K_M); two RTX 3090s "
        f"give tensors 2 x {cards / 2:.2f} = {cards:.1f} GB, {cards - v:.1f} GB left for the "
        "KV cache",
        {
            "q4km_gb": v,
            "two_cards_gb": cards,
            "left_gb": cards - v,
            "one_card_gb": usable_gb("RTX 4090"),
        },
    )


@register
def llama2_7b_weights() -> Computed:
    fp16, int4 = weight_gb("Llama-2-7B", "fp16"), weight_gb("Llama-2-7B", "int4")
    q4 = weight_gb("Llama-2-7B", "q4_k_m")
    return Computed(
        fp16,
        "GB",
        f"{fp16:.1f} GB",
        f"{models.get('Llama-2-7B').n_params / 1e9:.2f}B parameters x 2 bytes = {fp16:.1f} GB in "
        f"FP16; int4 group 128: {int4:.1f} GB",
        {"fp16_gb": fp16, "int4_gb": int4, "q4km_gb": q4},
    )


@register
def offload_slowdown_70b_on_4090() -> Computed:
    s, g = models.get("Llama-3-70B"), gpu("RTX 4090")
    ram = cpu_13900k().memory_bandwidth_gbs
    n = basis.layers_that_fit("Llama-3-70B", "q4_k_m", "RTX 4090", 4096)
    part = basis.offload_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", 4096, "Core i9-13900K")
    full = basis.bound_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", context=4096)
    r = full / part
    return Computed(
        r,
        "x",
        f"{r:.1f}x slower",
        f"Llama-3-70B Q4_K_M, {n} of {s.n_layers} layers in {g.model_memory_bytes / GB:.1f} "
        f"GB: bound {part:.1f} tokens/s vs {full:.1f} if all fitted ({g.bandwidth_gbs:g} GB/s "
        f"VRAM, {ram:g} GB/s DDR5-5600; gpulab.perf)",
        {
            "slowdown": r,
            "drop": 1 - 1 / r,
            "gpu_layers": n,
            "layers": s.n_layers,
            "part_tok_s": part,
            "full_tok_s": full,
        },
    )


@register
def int4_vs_fp16_ratio() -> Computed:
    bk, b4 = memory.bits_per_weight("q4_k_m"), memory.bits_per_weight("int4")
    lo, hi = 16 / bk, 16 / b4
    return Computed(
        hi,
        "x",
        f"{lo:.1f}–{hi:.1f}x",
        f"16 bits / {bk:g} (Q4_K_M) to 16 / {b4:g} (int4 group 128); 8x only against FP32",
        {"lo": lo, "hi": hi, "vs_fp32": 32 / 4},
    )


@register
def deepseek_r1_fp16_vs_fp8() -> Computed:
    fp16, fp8 = weight_gb("DeepSeek-R1", "fp16"), weight_gb("DeepSeek-R1", "fp8")
    n = models.get("DeepSeek-R1").n_params
    return Computed(
        fp8,
        "GB",
        f"{fp16:.0f} GB in 16 bits, {fp8:.0f} GB as released (FP8)",
        f"{n / 1e9:.2f}B parameters x 2 bytes = {fp16:.1f} GB; FP8 with 128x128 block scales, "
        f"embeddings in 16 bits = {fp8:.1f} GB (gpulab.memory)",
        {"fp16_gb": fp16, "fp8_gb": fp8},
    )


@register
def deepseek_r1_int4_weights() -> Computed:
    v, q = weight_gb("DeepSeek-R1", "int4"), weight_gb("DeepSeek-R1", "q4_k_m")
    fp16 = weight_gb("DeepSeek-R1", "fp16")
    claimed = 168  # the article's "INT4量化后仅需168GB"
    bits = claimed * GB * 8 / models.get("DeepSeek-R1").n_params
    box = ARTICLE_TEST_BOX["vram_gb"] + ARTICLE_TEST_BOX["ram_gb"]
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"{models.get('DeepSeek-R1').n_params / 1e9:.2f}B parameters at "
        f"{memory.bits_per_weight('int4'):g} bits (int4 group 128) = {v:.1f} GB; Q4_K_M "
        f"{q:.1f} GB; {claimed} GB is {fp16:.0f} / {fp16 / claimed:.0f}, i.e. {bits:.1f} bits "
        "per weight",
        {
            "int4_gb": v,
            "q4km_gb": q,
            "claimed_bits": bits,
            "int4_bits": memory.bits_per_weight("int4"),
            "box_gb": box,
            "vram_gb": ARTICLE_TEST_BOX["vram_gb"],
            "ram_gb": ARTICLE_TEST_BOX["ram_gb"],
        },
    )


@register
def deepseek_r1_on_4_a100() -> Computed:
    v = weight_gb("DeepSeek-R1", "int4")
    cap80, cap40 = 4 * usable_gb("A100 80GB SXM"), 4 * usable_gb("A100 40GB SXM")
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB > {cap80:.1f} GB",
        f"int4 weights alone {v:.1f} GB against what four A100 80GB give tensors, "
        f"4 x {cap80 / 4:.1f} = {cap80:.1f} GB (four A100 40GB: {cap40:.1f} GB)",
        {"int4_gb": v, "four_80_gb": cap80, "four_40_gb": cap40},
    )


@register
def deepseek_r1_active_params() -> Computed:
    s = models.get("DeepSeek-R1")
    return Computed(
        s.n_active_params / 1e9,
        "B",
        f"{s.n_active_params / 1e9:.1f}B of {s.n_params / 1e9:.1f}B",
        "active parameters per token (8 of 256 routed experts + shared) counted from the config "
        "in gpulab.models; DeepSeek publishes 37B of 671B",
    )


@register
def deepseek_r1_q4km_vs_4090_and_ram() -> Computed:
    v, s = weight_gb("DeepSeek-R1", "q4_k_m"), models.get("DeepSeek-R1")
    box = ARTICLE_TEST_BOX["vram_gb"] + ARTICLE_TEST_BOX["ram_gb"]
    on_gpu = v * ARTICLE_GPU_LAYERS / s.n_layers
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"Q4_K_M weights {v:.1f} GB against {ARTICLE_TEST_BOX['vram_gb']} GB VRAM + "
        f"{ARTICLE_TEST_BOX['ram_gb']} GB RAM = {box} GB; {ARTICLE_GPU_LAYERS} of {s.n_layers} "
        f"layers are about {on_gpu:.0f} GB",
        {
            "q4km_gb": v,
            "box_gb": box,
            "on_gpu_gb": on_gpu,
            "layers": s.n_layers,
            **ARTICLE_TEST_BOX,
        },
    )


@register
def qwen25_72b_fp16_weights() -> Computed:
    v = weight_gb("Qwen2.5-72B", "fp16")
    two = 2 * usable_gb("A100 80GB SXM")
    n = models.get("Qwen2.5-72B").n_params
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"{n / 1e9:.2f}B parameters x 2 bytes; two A100 80GB give tensors "
        f"{two:.1f} GB, {two - v:.1f} GB left",
        {
            "fp16_gb": v,
            "two_cards_gb": two,
            "card_gb": two / 2,
            "box_vram_gb": ARTICLE_TEST_BOX["vram_gb"],
        },
    )


@register
def phi3_mini_params() -> Computed:
    s = models.get("Phi-3-mini")
    w = weight_gb("Phi-3-mini", "q4_k_m")
    card = 4  # the article's "4 GB of VRAM"
    return Computed(
        s.n_params / 1e9,
        "B",
        f"{s.n_params / 1e9:.2f}B",
        f"counted from the config (gpulab.models); at Q4_K_M {w:.2f} GB, which fits in {card} GB",
        {"q4km_gb": w, "card_gb": card},
    )


def _tier(billions: int) -> Computed:
    """The guide's 4-bit VRAM tier for a `billions`-parameter model against its Q4_K_M weights."""
    params = billions * 1e9
    v = nominal_weight_gb(params, "q4_k_m")
    floor = GUIDE_MIN_VRAM_GB[billions]
    # on a named card, what is left is what its tensors may use; otherwise the guide's nominal size
    card = usable_gb(TIER_CARD[billions]) if billions in TIER_CARD else floor
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        f"{billions}B: {params / 1e9:g}B x {memory.bits_per_weight('q4_k_m'):g} bits / 8 (Q4_K_M "
        f"weights); the guide's minimum {floor} GB is {floor / v:.1f}x that",
        {
            "weights_gb": v,
            "guide_min_gb": floor,
            "over": floor / v,
            "card_usable_gb": card,
            "left_gb": card - v,
            "small_card_gb": SMALL_CARD_GB,
        },
    )


# the article's VRAM tiers: one registered derivation per model size
for _billions in (3, 7, 13, 14, 32):
    register(functools.partial(_tier, _billions), f"tier_{_billions}b_4bit")


@register
def kv_cache_llama3_70b_128k() -> Computed:
    v = memory.kv_cache_bytes(models.get("Llama-3-70B"), 131072, 1, "bf16") / GB
    return Computed(
        v,
        "GB",
        f"{v:.1f} GB",
        "2 x 80 layers x 8 KV heads x 128 x 2 bytes x 131,072 tokens "
        "(gpulab.memory.kv_cache_bytes)",
        {"kv_gb": v},
    )


@register
def full_finetune_7b_states() -> Computed:
    s = models.get("Llama-2-7B")
    states = basis.full_finetune_gb("Llama-2-7B", "bf16-mixed", "adamw")
    per_param = states * GB / s.n_params
    return Computed(
        states,
        "GB",
        f"{states:.1f} GB",
        f"Llama-2-7B, bf16 mixed precision with AdamW: weights + gradients + FP32 master and "
        f"moments = {per_param:.0f} bytes per parameter, before activations "
        "(gpulab.memory.estimate_training)",
        {"states_gb": states, "card_gb": usable_gb("A100 80GB SXM")},
    )


@register
def layer_split_bytes_per_token() -> Computed:
    s = models.get("Llama-3-70B")
    nv = gpu("RTX 3090").interconnect["nvlink_gbs"]
    b = s.hidden_size * 2
    return Computed(
        b,
        "bytes",
        f"{b:,} bytes per token",
        f"a layer split passes one bf16 hidden state ({s.hidden_size} x 2 bytes) per token between "
        f"GPUs; the RTX 3090 has NVLink ({nv:g} GB/s, gpulab.specs)",
        {"nvlink_gbs": nv},
    )
