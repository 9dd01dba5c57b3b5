"""Chapter 02's figures: every number that `book/02_vram.md` quotes, computed from gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit:
``_gb`` is decimal GB (1e9 bytes), ``_gib`` binary GiB, ``_mib`` MiB, ``_bits`` bits per weight.
Sizes are computed here in bytes and divided once, at the end of each helper.

The page's choices (which model, card, context) are made here; the data (parameter counts,
bits per weight, bandwidths, capacities) come from gpulab's reference tables. The few inputs
that gpulab does not hold are the articles' own figures (cited on the page by claim id) and
published layouts, each a named constant below with its source.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.units import GB, GIB, MIB
from gpulab.core.validate import checked
from gpulab.estimate import basis, memory
from gpulab.reference import formats, links, measured, models, specs

__all__ = ["capacity_bytes", "figures"]

# ---- inputs gpulab does not hold

# The articles' figures, each cited on the page by its claim id (fact_check.json).
ARTICLE_7B_INT4_GB = 6  # claim 11: a 7B model needs ">=6 GB VRAM at INT4"
ARTICLE_R1_INT4_GB = 168  # claim 39: DeepSeek-R1 "only 168 GB after INT4 quantization"
ARTICLE_R1_A100S = 4  # claim 40: "4 A100s can deploy it"
ARTICLE_OFFLOAD_DROP = (0.30, 0.50)  # claim 13: offloading costs "30-50%" of the speed
ARTICLE_BOX_GB = {"vram": 24, "ram": 64}  # claim 72: the RTX 4090 machine with 64 GB of RAM
ARTICLE_GPU_LAYERS = 35  # claim 72: "35 layers on the GPU"
ARTICLE_TINY_CARD_GB = 4  # claim 87: "with 4 GB VRAM only tiny models run"
ARTICLE_SMALL_CARD_GB = 8  # claim 116: the "8 GB cards" a 16 GB card is compared with
TIERS_B = (3, 7, 14, 32)  # the hardware guide's 4-bit size classes, in billions (claims 96-99)
# GGUF k-quant layouts (ggml-common.h; llama.cpp PR 1684): bytes per 256-weight super-block.
Q4_K_BLOCK_BYTES = (
    256 * 4 // 8 + 12 + 2 + 2
)  # 4-bit codes, 12 bytes of 6-bit scales/mins, fp16 d, dmin
Q6_K_BLOCK_BYTES = 128 + 64 + 16 + 2  # low 4 bits, high 2 bits, 16 int8 scales, fp16 d
NF4_ABSMAX_BITS, NF4_GROUP = 32, 64  # QLoRA without double quantization: an fp32 absmax per 64
# Korthikanti et al. 2022 (arXiv 2205.05198), section 4.1: activation bytes per layer of a GPT
# layer in 16 bits are s*b*h*34 with fused attention (no s*s scores kept), 2*s*b*h with full
# checkpointing; the example below has about the shape of a 7B model.
ACT_EXAMPLE = {"hidden": 4096, "layers": 32, "seq": 2048, "batch": 8}
KV_EXAMPLE_TOKENS, KV_USERS = 8192, 32  # one long conversation; a server's concurrent ones
PROMPT_TOKENS = 8192  # the prompt whose logits the "why memory decides" section counts
OFFLOAD_CONTEXT = 4096  # tokens of KV cache the offload example keeps on the GPU

# The cards of the page's capacity table, and the prefix of their keys.
_KEY = {
    "RTX 4090": "rtx4090",
    "RTX 3090": "rtx3090",
    "A100 80GB SXM": "a100_80",
    "H100 SXM": "h100",
    "L4": "l4",
    "T4": "t4",
}


@checked
def capacity_bytes(name: str) -> tuple[int, int]:
    """(bytes the driver reports, bytes a model's tensors can use) for a GPU of the spec table."""
    gpu = specs.get_gpu(name)
    return gpu.memory_bytes, gpu.model_memory_bytes


def _usable_gb(name: str, count: int = 1) -> float:
    """GB that `count` of a card leave for a model's tensors."""
    return count * capacity_bytes(name)[1] / GB


def _fits(need_gb: float, have_gb: float) -> str:
    """The fit decision as words, so that prose follows the numbers."""
    return "fits" if need_gb <= have_gb else "does not fit"


# ---- the one formula, and the tiers


def _nominal_gb(billions: float, fmt: str | float) -> float:
    """GB of `billions` x 1e9 weights, every weight at a format's (or a given) bits per weight."""
    bits = fmt if isinstance(fmt, float) else formats.bits_per_weight(fmt)
    return billions * 1e9 * bits / 8 / GB


def _formula() -> dict[str, Any]:
    """The bits of each 4-bit format, and the nominal sizes the page and its claims quote."""
    int4 = formats.weight_format("int4")
    out: dict[str, Any] = {
        "int4_bits": formats.bits_per_weight("int4"),
        "q4km_bits": formats.bits_per_weight("q4_k_m"),
    }
    for b in (*TIERS_B, 13):  # the claims' size classes at Q4_K_M
        out[f"tier{b}_q4km_gb"] = _nominal_gb(b, "q4_k_m")
    out["tier7_fp16_gb"] = _nominal_gb(7, "fp16")
    out["tier70_fp16_gb"] = _nominal_gb(70, "fp16")
    out["tier671_fp16_gb"] = _nominal_gb(671, "fp16")
    out["tier32_int4_gb"] = _nominal_gb(32, "int4")
    out["tier70_plain4_gb"] = _nominal_gb(70, float(int4.bits))
    usable = _usable_gb("RTX 4090")
    out["rtx4090_usable_gb"] = usable
    out["bits_for_70b_in_rtx4090"] = usable * GB * 8 / 70e9
    out["tier70_plain4_in_rtx4090"] = _fits(out["tier70_plain4_gb"], usable)
    out["r1_fp16_over_eight_gb"] = out["tier671_fp16_gb"] / 8
    out["article_r1_int4_gb"] = ARTICLE_R1_INT4_GB
    out["r1_article_int4_bits"] = ARTICLE_R1_INT4_GB * GB * 8 / 671e9
    return out


def _llama70() -> dict[str, Any]:
    """Llama-3-70B counted from its config, and its weights in each format."""
    s = models.get("Llama-3-70B")
    parts = s.params_by_component()
    kept = parts["embedding"] + parts["lm_head"] + parts["norms"]
    kv_width = s.n_kv_heads * s.head_dim
    return {
        "llama70_hidden": s.hidden_size,
        "llama70_layers": s.n_layers,
        "llama70_kv_heads": s.n_kv_heads,
        "llama70_heads": s.n_heads,
        "llama70_head_dim": s.head_dim,
        "llama70_kv_width": kv_width,
        "llama70_ffn": s.intermediate_size,
        "llama70_vocab": s.vocab_size,
        "llama70_attention_params_per_layer": s.attention_params,
        "llama70_layer_mlp_params": s.dense_mlp_params,
        "llama70_norm_vectors": 2 * s.n_layers + 1,
        "llama70_params": s.n_params,
        "llama70_params_b": s.n_params / 1e9,
        "llama70_kept16_params_b": kept / 1e9,
        "llama70_quantized_params_b": (s.n_params - kept) / 1e9,
        "llama70_kept16_gb": kept * 2 / GB,
        "llama70_kept16_at_int4_gb": kept * formats.bits_per_weight("int4") / 8 / GB,
        "llama70_fp16_gb": basis.weights_gb("Llama-3-70B", "fp16"),
        "llama70_int4_gb": basis.weights_gb("Llama-3-70B", "int4"),
        "llama70_q4km_gb": basis.weights_gb("Llama-3-70B", "q4_k_m"),
    }


# ---- the verdicts' correct values


def _verdicts(f: dict[str, Any]) -> dict[str, Any]:
    """What the verdict table's last column states, claim by claim."""
    r1, q72, phi = models.get("DeepSeek-R1"), models.get("Qwen2.5-72B"), models.get("Phi-3-mini")
    bw = specs.get_gpu("RTX 4090").bandwidth_gbs
    r1_int4 = basis.weights_gb("DeepSeek-R1", "int4")
    q72_fp16 = basis.weights_gb("Qwen2.5-72B", "fp16")
    phi_q4km = basis.weights_gb("Phi-3-mini", "q4_k_m")
    two_3090 = _usable_gb("RTX 3090", 2)
    a100s = _usable_gb("A100 80GB SXM", ARTICLE_R1_A100S)
    out = {
        "article_7b_int4_gb": ARTICLE_7B_INT4_GB,
        "llama7_params_b": models.get("Llama-2-7B").n_params / 1e9,
        "llama7_fp16_gb": basis.weights_gb("Llama-2-7B", "fp16"),
        "llama7_int4_gb": basis.weights_gb("Llama-2-7B", "int4"),
        "llama7_q4km_gb": basis.weights_gb("Llama-2-7B", "q4_k_m"),
        "llama7_int4_left_gb": ARTICLE_7B_INT4_GB - basis.weights_gb("Llama-2-7B", "q4_k_m"),
        "llama7_full_finetune_gb": basis.full_finetune_gb("Llama-2-7B"),
        "llama70_int4_read_gb": basis.read_gb("Llama-3-70B", "int4"),
        "rtx4090_gbs": bw,
        "llama70_int4_rtx4090_bound_tok_s": basis.bound_tok_s("Llama-3-70B", "int4", "RTX 4090"),
        "ratio_fp16_int4": formats.bits_per_weight("fp16") / f["int4_bits"],
        "ratio_fp16_q4km": formats.bits_per_weight("fp16") / f["q4km_bits"],
        "r1_params_b": r1.n_params / 1e9,
        "r1_active_b": r1.n_active_params / 1e9,
        "r1_fp16_gb": basis.weights_gb("DeepSeek-R1", "fp16"),
        "r1_fp8_gb": basis.weights_gb("DeepSeek-R1", "fp8"),
        "r1_int4_gb": r1_int4,
        "r1_q4km_gb": basis.weights_gb("DeepSeek-R1", "q4_k_m"),
        "a100_count": ARTICLE_R1_A100S,
        "four_a100_usable_gb": a100s,
        "r1_int4_in_a100s": _fits(r1_int4, a100s),
        "a100_40_count_gb": ARTICLE_R1_A100S * specs.get_gpu("A100 40GB SXM").memory_gb,
        "box_vram_gb": ARTICLE_BOX_GB["vram"],
        "box_ram_gb": ARTICLE_BOX_GB["ram"],
        "box_total_gb": ARTICLE_BOX_GB["vram"] + ARTICLE_BOX_GB["ram"],
        "box_gpu_layers": ARTICLE_GPU_LAYERS,
        "r1_layers": r1.n_layers,
        "qwen72_params_b": q72.n_params / 1e9,
        "qwen72_fp16_gb": q72_fp16,
        "two_a100_usable_gb": _usable_gb("A100 80GB SXM", 2),
        "phi3_params_b": phi.n_params / 1e9,
        "phi3_q4km_gb": phi_q4km,
        "two_3090_usable_gb": two_3090,
        "llama70_q4km_on_two_3090": _fits(f["llama70_q4km_gb"], two_3090),
        "llama70_q4km_left_two_3090_gb": two_3090 - f["llama70_q4km_gb"],
        "tier32_left_lo_gb": f["rtx4090_usable_gb"] - f["tier32_q4km_gb"],
        "tier32_left_hi_gb": f["rtx4090_usable_gb"] - f["tier32_int4_gb"],
        "llama70_int4_in_rtx4090": _fits(f["llama70_int4_gb"], f["rtx4090_usable_gb"]),
        "article_tiny_card_gb": ARTICLE_TINY_CARD_GB,
        "article_small_card_gb": ARTICLE_SMALL_CARD_GB,
        "phi3_in_tiny_card": _fits(phi_q4km, ARTICLE_TINY_CARD_GB),
        "tier14_in_small_card": _fits(f["tier14_q4km_gb"], ARTICLE_SMALL_CARD_GB),
        "qwen72_on_two_a100": _fits(q72_fp16, _usable_gb("A100 80GB SXM", 2)),
    }
    return out


# ---- mixture of experts


def _moe() -> dict[str, Any]:
    """DeepSeek-R1's experts and its released FP8 format."""
    r1, fp8 = models.get("DeepSeek-R1"), formats.weight_format("fp8")
    return {
        "r1_routed_experts": r1.n_routed_experts,
        "r1_shared_experts": r1.n_shared_experts,
        "r1_experts_per_token": r1.experts_per_token,
        "fp8_bits": fp8.bits_per_weight,
    }


# ---- why memory decides: logits, capacities


def _runtime() -> dict[str, Any]:
    """Logits of a long prompt, and each card's capacity as the driver reports it."""
    s = models.get("Llama-3-70B")
    out: dict[str, Any] = {
        "llama70_all_logits_gb": s.vocab_size * PROMPT_TOKENS * 4 / GB,
        "cuda_context_gib": specs.CUDA_CONTEXT_BYTES / GIB,
        "allocator_slack": specs.ALLOCATOR_SLACK,
    }
    for name, key in _KEY.items():
        gpu = specs.get_gpu(name)
        driver, usable = capacity_bytes(name)
        out[f"{key}_marketed_gb"] = gpu.memory_gb
        out[f"{key}_driver_mib"] = driver / MIB
        out[f"{key}_driver_gb"] = driver / GB
        out[f"{key}_over_marketed"] = driver / (gpu.memory_gb * GB) - 1
        out[f"{key}_usable_gb"] = usable / GB
        out[f"{key}_runtime_gb"] = (driver - usable) / GB
    out["gib_in_gb"] = GIB / GB
    return out


# ---- the KV cache


def _kv() -> dict[str, Any]:
    """Llama-3-70B's GQA cache and DeepSeek-R1's latent cache, per token and per context."""
    s, r1 = models.get("Llama-3-70B"), models.get("DeepSeek-R1")
    per_token = memory.kv_cache_bytes(s, 1, 1, "bf16")
    long_ctx = models.get("Llama-3.1-8B").max_position_embeddings  # Llama 3.1's context
    mla = memory.kv_cache_bytes(r1, 1, 1, "bf16")
    one = memory.kv_cache_bytes(s, KV_EXAMPLE_TOKENS, 1, "bf16")
    return {
        "llama70_kv_bytes_per_token": per_token,
        "llama70_kv_8k_gb": one / GB,
        "gqa_group": s.n_heads // s.n_kv_heads,
        "llama70_kv_8k_mha_gb": one * s.n_heads / s.n_kv_heads / GB,
        "llama31_context": long_ctx,
        "llama70_kv_128k_gb": memory.kv_cache_bytes(s, long_ctx, 1, "bf16") / GB,
        "kv_users": KV_USERS,
        "llama70_kv_users_gb": KV_USERS * one / GB,
        "llama70_kv_users_over_q4km": KV_USERS
        * one
        / GB
        / basis.weights_gb("Llama-3-70B", "q4_k_m"),
        "r1_kv_lora_rank": r1.kv_lora_rank,
        "r1_rope_dim": r1.qk_rope_head_dim,
        "r1_kv_bytes_per_token": mla,
        "r1_kv_128k_gb": mla * long_ctx / GB,
        "llama70_over_r1_kv": per_token / mla,
    }


# ---- quantization formats


def _quant() -> dict[str, Any]:
    """Bits per weight of each format in the page's table, from its layout."""
    asym = formats.weight_format("int4-asym")
    nf4 = formats.weight_format("nf4")
    return {
        "fp32_bits": formats.bits_per_weight("fp32"),
        "q8_bits": formats.bits_per_weight("q8_0"),
        "asym_extra_bits": asym.scale_bits,
        "asym_bits": formats.bits_per_weight("int4-asym"),
        "q4k_bits": Q4_K_BLOCK_BYTES * 8 / 256,
        "q6k_bits": Q6_K_BLOCK_BYTES * 8 / 256,
        "nf4_plain_bits": nf4.bits + NF4_ABSMAX_BITS / NF4_GROUP,
        "nf4_dq_bits": formats.bits_per_weight("nf4"),
        "q8_over_q4km": formats.bits_per_weight("q4_k_m") / formats.bits_per_weight("q8_0"),
    }


# ---- when it does not fit


def _offload() -> dict[str, Any]:
    """Llama-3-70B Q4_K_M on one RTX 4090 with the rest in RAM, computed on the CPU or over PCIe."""
    s, g = models.get("Llama-3-70B"), specs.get_gpu("RTX 4090")
    cpu = specs.get_cpu("Core i9-13900K")
    ram, pcie = cpu.memory_bandwidth_gbs, links.pcie(4, 16).bytes_per_s / 1e9
    case = ("Llama-3-70B", "q4_k_m")
    n = basis.layers_that_fit(*case, "RTX 4090", OFFLOAD_CONTEXT)
    sizes = memory.layer_bytes(s, "q4_k_m", OFFLOAD_CONTEXT)
    parts = s.params_by_component()
    head = (parts["lm_head"] or parts["embedding"]) * formats.bits_per_weight("q4_k_m") / 8
    read = basis.read_gb(*case, context=OFFLOAD_CONTEXT)  # what a token reads, wherever it is
    w_c = (sum(sizes[n:]) + head) / GB  # the layers left in RAM and the output head
    w_g = read - w_c  # the GPU's layers, the embedding row and the final norm
    full = basis.bound_tok_s(*case, "RTX 4090", context=OFFLOAD_CONTEXT)
    on_cpu = basis.offload_tok_s(*case, "RTX 4090", OFFLOAD_CONTEXT)
    on_pcie = basis.offload_tok_s(*case, "RTX 4090", OFFLOAD_CONTEXT, ram=pcie)
    r = g.bandwidth_gbs / ram
    lo, hi = (1 / (1 - d) for d in ARTICLE_OFFLOAD_DROP)
    return {
        # GT/s per lane: the usable GB/s per lane undone by the 128b/130b encoding and 8 bits
        "pcie4_lane_gts": round(links.PCIE_LANE_GBS[4] * 8 * 130 / 128),
        "pcie4_lanes": 16,
        "pcie4_x16_gbs": pcie,
        "ram_channels": cpu.memory_channels,
        "ram_mts": cpu.memory_max_mts,
        "ddr5_5600_gbs": ram,
        "offload_context": OFFLOAD_CONTEXT,
        "offload_gpu_layers": n,
        "offload_total_layers": s.n_layers,
        "llama70_q4km_4k_read_gb": read,
        "offload_wg_gb": w_g,
        "offload_wc_gb": w_c,
        "offload_full_ms": 1e3 / full,
        "llama70_q4km_rtx4090_4k_bound_tok_s": full,
        "offload_gpu_ms": w_g / g.bandwidth_gbs * 1e3,
        "offload_ram_ms": w_c / ram * 1e3,
        "offload_cpu_total_ms": 1e3 / on_cpu,
        "llama70_q4km_offload_tok_s": on_cpu,
        "offload_pcie_ms": w_c / pcie * 1e3,
        "offload_pcie_total_ms": 1e3 / on_pcie,
        "offload_pcie_tok_s": on_pcie,
        "offload_fraction": w_c / (w_g + w_c),
        "offload_slowdown": full / on_cpu,
        "offload_drop": 1 - on_cpu / full,
        "rtx4090_vs_ddr5_ratio": r,
        "article_drop_lo": ARTICLE_OFFLOAD_DROP[0],
        "article_drop_hi": ARTICLE_OFFLOAD_DROP[1],
        "article_factor_lo": lo,
        "article_factor_hi": hi,
        "article_fraction_lo": (lo - 1) / (r - 1),
        "article_fraction_hi": (hi - 1) / (r - 1),
        "split_bytes_per_token": s.hidden_size * formats.DTYPE_BYTES["bf16"],
        "split_us_on_pcie": s.hidden_size * formats.DTYPE_BYTES["bf16"] / (pcie * 1e9) * 1e6,
    }


# ---- training memory


def _training() -> dict[str, Any]:
    """Bytes per parameter of each recipe, and activations by Korthikanti et al.'s count."""

    def per_param(precision: str, optimizer: str) -> float:
        r = formats.TRAINING_PRECISIONS[precision]
        state = 4 if r["master"] else r["gradients"]
        return r["weights"] + r["gradients"] + r["master"] + memory.OPTIMIZERS[optimizer](state)

    h, L, s, b = (ACT_EXAMPLE[k] for k in ("hidden", "layers", "seq", "batch"))
    fused, ckpt = s * h * 34 * L, 2 * s * h * L  # fused attention keeps no scores
    out = {
        "mixed_adamw_bytes": per_param("bf16-mixed", "adamw"),
        "fp32_adamw_bytes": per_param("fp32", "adamw"),
        "bf16_adamw_bytes": per_param("bf16", "adamw"),
        "mixed_adam8_bytes": per_param("bf16-mixed", "adamw8bit"),
        "act_hidden": h,
        "act_layers": L,
        "act_batch": b,
        "act_fused_batch_gb": b * fused / GB,
        "act_ckpt_batch_gb": b * ckpt / GB,
    }
    for key, recipe in (
        ("mixed_adamw", ("bf16-mixed", "adamw")),
        ("bf16_adamw", ("bf16", "adamw")),
        ("mixed_adam8", ("bf16-mixed", "adamw8bit")),
    ):
        out[f"tier7_{key}_gb"] = 7e9 * per_param(*recipe) / GB
    out["a100_80_usable_gb"] = _usable_gb("A100 80GB SXM")
    out["tier7_full_finetune_on_a100"] = _fits(
        out["tier7_mixed_adamw_gb"], out["a100_80_usable_gb"]
    )
    return out


# ---- how far the estimator holds


def _estimator() -> dict[str, Any]:
    """The estimator's held-out validation, as measured on the machine that ran it: the worst
    error (in %, either sign) over random models it was never tuned on, and where and when."""
    v = measured.estimator_validation()
    return {
        "estimator_heldout_worst_pct": v["worst_abs_error_percent"],
        "estimator_heldout_cases": v["measured"],
        "estimator_heldout_machine": v["machine"],
        "estimator_heldout_date": v["date"],
        "estimator_heldout_torch": v["torch"],
        "estimator_heldout_transformers": v["transformers"],
    }


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    out = _formula()
    out |= _llama70()
    out |= _verdicts(out)
    out |= _moe() | _runtime() | _kv() | _quant() | _offload() | _training() | _estimator()
    return out
