"""Chapter 03's figures: every number that `book/03_inference_vs_training.md` quotes.

Each is computed from gpulab, and the page pastes it by its name with the {fig} role
(gpulab.course.figures). Keys are snake_case and say what the value is and its unit.
Bandwidths, peaks, capacities and parameter counts come from gpulab's reference data; what the
page chooses (models, cards, contexts, assumed utilisations) and the articles' own figures
(by claim id) are named constants below. The figures on images and embeddings are computed in
``gpulab.course.figures_ch03_images``.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.units import GB
from gpulab.course.derivations import (
    DDR4_3200_DUAL_GBS,
    DDR5_4800_DUAL_GBS,
    GTX1650_GDDR6_GBS,
    LLAMA_ZH_SAMPLE,
    LLAMACPP_4090_LLAMA2_7B_TOK_S,
)
from gpulab.course.figures_ch03_images import ARTICLE_BATCH_IMAGES, ARTICLE_SD_STEPS
from gpulab.course.figures_ch03_images import figures as _image_figures
from gpulab.estimate import basis, memory, perf
from gpulab.reference import links, models, specs
from gpulab.ui import pictures_ch03

# the notebooks read the articles' image figures here, beside the others
__all__ = ["ARTICLE_BATCH_IMAGES", "ARTICLE_SD_STEPS", "figures"]

# ---- the articles' figures, by claim id (fact_check.json), that the arithmetic takes as inputs
ARTICLE_DECODE_TOK_S = {42: 60, 43: 52, 44: 38, 53: 35, 74: 45, 50: 12, 56: 18, 67: 2, 89: 15}
ARTICLE_LAPTOP = {"minutes": 25, "characters": 3000, "ram_gb": 32}  # claim 67
ARTICLE_TEST_BOX_RAM_GB = 64  # the RTX 4090 machine's RAM (claim 50)
ARTICLE_SPEEDUPS = {68: 3, 89: 5}  # "3x faster than the CPU" (68), "5x" (89)

# ---- what the page chooses
FIT_CONTEXT = 4096  # tokens of KV cache when the page asks "does it fit?"
GTX1650_CONTEXT = 512  # the short context a code completion needs
MFU = 0.40  # the utilisation assumed for training times
PRETRAIN_TOKENS, FINETUNE_TOKENS, PRETRAIN_GPUS = 10**12, 10**8, 8
# Llama 3.1 405B's reported MFU, 38-43% (Meta, The Llama 3 Herd of Models, Table 4;
# summarised with sources at https://www.glennklockwood.com/garden/mfu)
LLAMA31_MFU = (0.38, 0.43)
ATTENTION_CONTEXTS = (2048, 8192, 131072)
PROMPT_TOKENS = 4096
BATCH_CONTEXTS = (2048, 8192)
BATCH_EXAMPLE = 64
KV_EXAMPLE_CONTEXT = 1024  # the context at which the page adds Llama-2-7B's KV cache to its bound


def _gb(nbytes: float) -> float:
    """Bytes in GB (10^9)."""
    return nbytes / GB


def _bound(model: str, fmt: str, device: str | float) -> tuple[float, float]:
    """(GB read per token, decode bound tokens/s) at batch 1 with an empty cache (basis)."""
    return basis.read_gb(model, fmt), basis.bound_tok_s(model, fmt, device)


def _fits(
    model: str, fmt: str, capacity_bytes: float, context: int = FIT_CONTEXT, device: str = "cuda"
) -> tuple[float, str]:
    """(GB of tensors at `context`, "yes"/"no") for a model in a format against a capacity."""
    need = memory.estimate_inference(
        models.get(model), weights=fmt, kv_cache="fp16", seq_len=context, device=device
    ).total
    return _gb(need), "yes" if need <= capacity_bytes else "no"


# ---------------------------------------------------------------- counting FLOPs


def _flops() -> dict[str, Any]:
    """FLOPs per token: 2 per matrix parameter, attention's term for Llama-3-8B."""
    l7, l8 = models.get("Llama-2-7B"), models.get("Llama-3-8B")
    n8 = perf.matmul_params(l8)
    out = {
        "llama7_params": l7.n_params,
        "llama7_matmul_params_b": perf.matmul_params(l7) / 1e9,
        "llama7_forward_gflop_per_token": perf.forward_flops(l7, 1) / 1e9,
        "llama8_matmul_params_b": n8 / 1e9,
        "llama8_layers": l8.n_layers,
        "llama8_heads": l8.n_heads,
        "llama8_head_dim": l8.head_dim,
        "llama8_d_attn": l8.n_heads * l8.head_dim,
        "llama8_2n_gflop": 2 * n8 / 1e9,
    }
    for i, ctx in enumerate(ATTENTION_CONTEXTS):
        att = perf.attention_flops_per_token(l8, ctx)
        out[f"attn_ctx{i}_gflop"] = att / 1e9
        out[f"attn_ctx{i}_vs_2n"] = att / (2 * n8)
    return out


def _training() -> dict[str, Any]:
    """Pre-training a 7B model on 10^12 tokens, fine-tuning on 10^8, at an assumed MFU."""
    l7 = models.get("Llama-2-7B")
    h100, r4090 = specs.get_gpu("H100 SXM"), specs.get_gpu("RTX 4090")
    flops = perf.training_flops(l7, PRETRAIN_TOKENS)
    cluster = PRETRAIN_GPUS * h100.peak_flops("bf16")
    seconds = flops / (MFU * cluster)
    per_token = perf.training_flops(l7, 1)
    ft_s = perf.training_flops(l7, FINETUNE_TOKENS) / (MFU * r4090.peak_flops("bf16"))
    return {
        "llama7_train_flops_e22": flops / 1e22,
        "h100_bf16_tflops": h100.peak_tflops["bf16"],
        "h100x8_bf16_tflops": cluster / 1e12,
        "mfu_assumed": MFU,
        "llama31_mfu_lo": LLAMA31_MFU[0],
        "llama31_mfu_hi": LLAMA31_MFU[1],
        "pretrain_seconds_e7": seconds / 1e7,
        "pretrain_days": seconds / 86400,
        "pretrain_cluster_tok_s": MFU * cluster / per_token,
        "rtx4090_bf16_tflops": r4090.peak_tflops["bf16"],
        "finetune_rtx4090_s": ft_s,
        "finetune_rtx4090_h": ft_s / 3600,
        "finetune_lora_rtx4090_h": ft_s * 4 / 6 / 3600,
        "llama7_full_finetune_gb": basis.full_finetune_gb("Llama-2-7B"),
    }


# ---------------------------------------------------------------- prefill and decode


def _prefill_decode() -> dict[str, Any]:
    """Llama-3-8B in BF16 on an RTX 4090: a 4096-token prompt against one decoded token."""
    s, g = models.get("Llama-3-8B"), specs.get_gpu("RTX 4090")
    matmul = perf.forward_flops(s, PROMPT_TOKENS)
    prefill_s = perf.prefill_seconds(s, PROMPT_TOKENS, g.peak_tflops["bf16"], "bf16")
    read, bound = _bound("Llama-3-8B", "bf16", "RTX 4090")
    step_s = 1 / bound
    return {
        "llama8_bf16_gb": basis.weights_gb("Llama-3-8B", "bf16"),
        "prefill_matmul_tflop": matmul / 1e12,
        "prefill_attention_share": perf.attention_flops_per_token(s, PROMPT_TOKENS)
        / (2 * perf.matmul_params(s)),
        "prefill_rtx4090_s": prefill_s,
        "prefill_rtx4090_ms_per_token": prefill_s / PROMPT_TOKENS * 1e3,
        "llama8_bf16_read_gb": read,
        "rtx4090_gbs": g.bandwidth_gbs,
        "decode_rtx4090_ms": step_s * 1e3,
        "llama8_bf16_rtx4090_bound_tok_s": bound,
        "decode_vs_prefill_per_token": step_s / (prefill_s / PROMPT_TOKENS),
        "ridge_4090_bf16": g.peak_flops("bf16") / g.bandwidth_bytes_per_s,
    } | _intensities()


def _intensities() -> dict[str, float]:
    """FLOP per byte of the prefill and of the decode steps the page's roofline picture places
    (gpulab.ui.pictures_ch03, which draws them): the text quotes the picture's own points."""
    prefill, decode, batched = pictures_ch03.roofline_points()  # batches 1 and 64
    return {
        "llama8_bf16_prefill_flop_per_byte": prefill.intensity,
        "llama8_bf16_decode_flop_per_byte": decode.intensity,
        "llama8_bf16_b64_decode_flop_per_byte": batched.intensity,
    }


def _decode_claims() -> dict[str, Any]:
    """Each tokens/s claim: bytes read per token, fit on the card, and the bandwidth bound."""
    r4090 = specs.get_gpu("RTX 4090")
    cap = r4090.model_memory_bytes
    out: dict[str, Any] = {
        "rtx4090_usable_gb": _gb(cap),
        "rx7900xtx_gbs": specs.get_gpu("AMD Radeon RX 7900 XTX").bandwidth_gbs,
        "m3ultra_gbs": specs.get_gpu("Apple M3 Ultra").bandwidth_gbs,
    }
    for cid, tok_s in ARTICLE_DECODE_TOK_S.items():
        out[f"claim{cid}_tok_s"] = tok_s
    l7 = models.get("Llama-2-7B")
    # (model and format, card) -> the case; what a token reads and what the model needs do not
    # depend on the card, so those two figures are named without it
    rows = {
        ("llama7_fp16", "rtx4090"): ("Llama-2-7B", "fp16", "RTX 4090", 42),
        ("llama7_fp16", "rx7900xtx"): ("Llama-2-7B", "fp16", "AMD Radeon RX 7900 XTX", 43),
        ("llama7_fp16", "m3ultra"): ("Llama-2-7B", "fp16", "Apple M3 Ultra", 44),
        ("llama7_q4km", "rtx4090"): ("Llama-2-7B", "q4_k_m", "RTX 4090", 42),
        ("llama70_int4", "rtx4090"): ("Llama-3-70B", "int4", "RTX 4090", 53),
        ("llama70_q4km", "rtx4090"): ("Llama-3-70B", "q4_k_m", "RTX 4090", 53),
        ("r1_int4", "rtx4090"): ("DeepSeek-R1", "int4", "RTX 4090", 50),
        ("qwen72_fp16", "rtx4090"): ("Qwen2.5-72B", "fp16", "RTX 4090", 56),
    }
    for (case, card), (model, fmt, gpu, cid) in rows.items():
        read, bound = _bound(model, fmt, gpu)
        need, fits = _fits(model, fmt, specs.get_gpu(gpu).model_memory_bytes)
        out |= {
            f"{case}_read_gb": read,
            f"{case}_need_gb": need,
            f"{case}_{card}_bound_tok_s": bound,
            f"{case}_{card}_fits": fits,
            f"{case}_{card}_claim_share": ARTICLE_DECODE_TOK_S[cid] / bound,
        }
    out["llama7_fp16_gb"] = basis.weights_gb("Llama-2-7B", "fp16")
    out |= {
        "llama7_layers": l7.n_layers,
        "llama7_hidden": l7.hidden_size,
        "llama7_ffn": l7.intermediate_size,
        "llama7_vocab": l7.vocab_size,
        "llama7_kv_heads": l7.n_kv_heads,
        "llamacpp_f16_tok_s": LLAMACPP_4090_LLAMA2_7B_TOK_S["f16"],
        "llamacpp_q4_0_tok_s": LLAMACPP_4090_LLAMA2_7B_TOK_S["q4_0"],
        "claim74_share": ARTICLE_DECODE_TOK_S[74] / out["llama70_int4_rtx4090_bound_tok_s"],
    }
    out["llama7_kv_bytes_per_token"] = memory.kv_cache_bytes(l7, 1, 1, "fp16")
    ctx = KV_EXAMPLE_CONTEXT
    out["llama7_kv_ctx"] = ctx
    out["llama7_fp16_1k_read_gb"] = basis.read_gb("Llama-2-7B", "fp16", context=ctx)
    out["llama7_fp16_rtx4090_1k_bound_tok_s"] = basis.bound_tok_s(
        "Llama-2-7B", "fp16", "RTX 4090", context=ctx
    )
    return out | _llama70() | _r1() | _laptop_and_small_gpus()


def _llama70() -> dict[str, Any]:
    """Llama-3-70B at 4 bits: the bandwidth 45 tokens/s needs, an H200, and offloading."""
    s = models.get("Llama-3-70B")
    read = basis.read_gb("Llama-3-70B", "int4")
    h200 = specs.get_gpu("H200")
    ram = specs.get_cpu("Core i9-13900K").memory_bandwidth_gbs
    layers = basis.layers_that_fit("Llama-3-70B", "q4_k_m", "RTX 4090", FIT_CONTEXT)
    return {
        "llama70_45_needs_tbs": ARTICLE_DECODE_TOK_S[74] * read * GB / 1e12,
        "llama70_int4_h200_bound_tok_s": basis.bound_tok_s("Llama-3-70B", "int4", "H200"),
        "h200_gbs": h200.bandwidth_gbs,
        "ddr5_5600_gbs": ram,
        "llama70_offload_gpu_layers": layers,
        "llama70_layers": s.n_layers,
        "llama70_q4km_offload_tok_s": basis.offload_tok_s(
            "Llama-3-70B", "q4_k_m", "RTX 4090", FIT_CONTEXT
        ),
        "claim74_ratio": ARTICLE_DECODE_TOK_S[74] / ARTICLE_DECODE_TOK_S[67],
    }


def _r1() -> dict[str, Any]:
    """DeepSeek-R1: active bytes per token, resident bytes, the cards that hold it, and a layer
    split's traffic."""
    s, h200, a80 = models.get("DeepSeek-R1"), specs.get_gpu("H200"), specs.get_gpu("A100 80GB SXM")
    resident = basis.weights_gb("DeepSeek-R1", "int4") * GB
    n_h200 = math.ceil(resident / h200.model_memory_bytes)
    hop = s.hidden_size * 2  # one bf16 hidden state
    pcie = links.pcie(4, 16)
    return {
        "r1_params_b": s.n_params / 1e9,
        "r1_active_b": s.n_active_params / 1e9,
        "r1_int4_gb": basis.weights_gb("DeepSeek-R1", "int4"),
        "h200_usable_gb": _gb(h200.model_memory_bytes),
        "r1_h200_count": n_h200,
        "r1_h200_left_gb": _gb(n_h200 * h200.model_memory_bytes - resident),
        "r1_80gb_count": math.ceil(resident / a80.model_memory_bytes),
        "r1_int4_h200_bound_tok_s": basis.bound_tok_s("DeepSeek-R1", "int4", "H200"),
        "r1_hidden": s.hidden_size,
        "r1_hop_bytes": hop,
        "pcie4_x16_gbs": pcie.bytes_per_s / 1e9,
        "r1_hop_us": hop / pcie.bytes_per_s * 1e6,
        "ram_test_box_gb": ARTICLE_TEST_BOX_RAM_GB,
    }


def _laptop_and_small_gpus() -> dict[str, Any]:
    """The i7-12700H laptop, the GTX 1650, Phi-3-mini, and the GPU-over-CPU decode ratio."""
    w16 = _bound("Llama-2-7B", "fp16", DDR4_3200_DUAL_GBS)[0]
    w4 = _bound("Llama-2-7B", "q4_k_m", DDR4_3200_DUAL_GBS)[0]
    lo, hi = DDR4_3200_DUAL_GBS, DDR5_4800_DUAL_GBS
    gtx = specs.get_gpu("GTX 1650 GDDR5")
    g5 = gtx.bandwidth_gbs
    need_i4, fits_i4 = _fits("Llama-2-7B", "int4", gtx.model_memory_bytes, GTX1650_CONTEXT)
    need_k, fits_k = _fits("Llama-2-7B", "q4_k_m", gtx.model_memory_bytes, GTX1650_CONTEXT)
    phi_read, phi_bound = _bound("Phi-3-mini", "q4_k_m", "GTX 1650 GDDR5")
    ram = specs.get_cpu("Core i9-13900K").memory_bandwidth_gbs
    cards = {"rtx4060ti": "RTX 4060 Ti 16GB", "rtx4090": "RTX 4090"}
    need_cpu, fits_cpu = _fits("Llama-2-7B", "fp16", ARTICLE_LAPTOP["ram_gb"] * GB, device="cpu")
    per_char = LLAMA_ZH_SAMPLE["llama_tokens"] / LLAMA_ZH_SAMPLE["characters"]
    out = {
        "ddr4_3200_gbs": lo,
        "ddr5_4800_gbs": hi,
        "laptop_fp16_bound_lo": basis.bound_tok_s("Llama-2-7B", "fp16", lo),
        "laptop_fp16_bound_hi": basis.bound_tok_s("Llama-2-7B", "fp16", hi),
        "laptop_q4km_bound_lo": basis.bound_tok_s("Llama-2-7B", "q4_k_m", lo),
        "laptop_q4km_bound_hi": basis.bound_tok_s("Llama-2-7B", "q4_k_m", hi),
        "llama7_q4km_read_gb": w4,
        "llama7_fp16_need_gb": need_cpu,
        "laptop_fits": fits_cpu,
        "laptop_claim_share": ARTICLE_DECODE_TOK_S[67] * w16 / lo,
        "laptop_claim_share_q4km": ARTICLE_DECODE_TOK_S[67] * w4 / lo,
        "llama7_int4_gb": basis.weights_gb("Llama-2-7B", "int4"),
        "llama7_q4km_gb": basis.weights_gb("Llama-2-7B", "q4_k_m"),
        "gtx1650_gddr6_gbps": GTX1650_GDDR6_GBS / (gtx.memory_bus_bits / 8),
        "gtx1650_memory_gib": gtx.memory_bytes / 2**30,
        "gtx1650_fit_context": GTX1650_CONTEXT,
        "phi3_claim_share": ARTICLE_DECODE_TOK_S[89] / phi_bound,
        "laptop_ram_gb": ARTICLE_LAPTOP["ram_gb"],
        "laptop_minutes": ARTICLE_LAPTOP["minutes"],
        "laptop_characters": ARTICLE_LAPTOP["characters"],
        "laptop_tokens": ARTICLE_LAPTOP["minutes"] * 60 * ARTICLE_DECODE_TOK_S[67],
        # the article's characters as Llama-2's tokenizer counts them (Cui, Yang and Yao 2023)
        "zh_sample_characters": LLAMA_ZH_SAMPLE["characters"],
        "zh_sample_tokens": LLAMA_ZH_SAMPLE["llama_tokens"],
        "zh_tokens_per_char": per_char,
        "laptop_llama_tokens": ARTICLE_LAPTOP["characters"] * per_char,
        "laptop_llama_minutes": ARTICLE_LAPTOP["characters"]
        * per_char
        / ARTICLE_DECODE_TOK_S[67]
        / 60,
        "gtx1650_gddr5_gbs": g5,
        "gtx1650_gddr6_gbs": GTX1650_GDDR6_GBS,
        "gtx1650_bus_bits": gtx.memory_bus_bits,
        "gtx1650_data_rate_gbps": gtx.memory_data_rate_gbps,
        "gtx1650_gddr5_ratio_lo": g5 / hi,
        "gtx1650_gddr5_ratio_hi": g5 / lo,
        "gtx1650_gddr6_ratio_lo": GTX1650_GDDR6_GBS / hi,
        "gtx1650_gddr6_ratio_hi": GTX1650_GDDR6_GBS / lo,
        "claim68_ratio": ARTICLE_SPEEDUPS[68],
        "claim89_ratio": ARTICLE_SPEEDUPS[89],
        "gtx1650_memory_gb": _gb(gtx.memory_bytes),
        "gtx1650_usable_gb": _gb(gtx.model_memory_bytes),
        "llama7_int4_512_need_gb": need_i4,
        "llama7_int4_gtx1650_fits": fits_i4,
        "llama7_q4km_512_need_gb": need_k,
        "llama7_q4km_gtx1650_fits": fits_k,
        "phi3_params_b": models.get("Phi-3-mini").n_params / 1e9,
        "q4km_bits": memory.bits_per_weight("q4_k_m"),
        "phi3_q4km_read_gb": phi_read,
        "phi3_gtx1650_bound_tok_s": phi_bound,
        "ddr5_5600_gbs": ram,
    }
    for key, name in cards.items():
        g = specs.get_gpu(name)
        out[f"{key}_gbs"] = g.bandwidth_gbs
        out[f"{key}_vs_ddr5_ratio"] = g.bandwidth_gbs / ram
    return out


# ---------------------------------------------------------------- batching


def _batching() -> dict[str, Any]:
    """Llama-3-8B in BF16 on an H100 SXM: how many sequences fit, and the step time of each
    batch."""
    s, g = models.get("Llama-3-8B"), specs.get_gpu("H100 SXM")
    weights = basis.weights_gb("Llama-3-8B", "bf16") * GB
    kv = memory.kv_cache_bytes(s, 1, 1, "bf16")
    free = g.model_memory_bytes - weights
    ridge = g.peak_flops("bf16") / g.bandwidth_bytes_per_s
    fit = {ctx: int(free // (kv * ctx)) for ctx in BATCH_CONTEXTS}
    out = {
        "h100_bandwidth_tbs": g.bandwidth_gbs / 1e3,
        "h100_ridge_flop_per_byte": ridge,
        "h100_usable_gb": _gb(g.model_memory_bytes),
        "llama8_kv_layers": s.n_layers,
        "llama8_kv_heads": s.n_kv_heads,
        "llama8_kv_bytes_per_token": kv,
        "llama8_kv_kib_per_token": kv / 1024,
        "h100_cache_room_gb": _gb(free),
        "h100_fit_2048": fit[2048],
        "h100_fit_8192": fit[8192],
        "batch_limit_order": "before" if fit[2048] < ridge else "after",
    }
    cases = {
        "b1": (1, basis.EMPTY_CACHE),
        "b64": (BATCH_EXAMPLE, 2048),
        "full2048": (fit[2048], 2048),
        "full8192": (fit[8192], 8192),
    }
    for key, (batch, ctx) in cases.items():
        read = basis.read_gb("Llama-3-8B", "bf16", context=ctx, batch=batch)
        mem_s = read * GB / g.bandwidth_bytes_per_s
        comp_s = perf.forward_flops(s, batch, ctx) / g.peak_flops("bf16")
        out |= {
            f"batch_{key}": batch,
            f"batch_{key}_ctx": ctx,
            f"batch_{key}_kv_gb": _gb(memory.kv_cache_bytes(s, ctx, batch, "bf16")),
            f"batch_{key}_read_gb": read,
            f"batch_{key}_mem_ms": mem_s * 1e3,
            f"batch_{key}_compute_ms": comp_s * 1e3,
            f"batch_{key}_tok_s": batch / max(mem_s, comp_s),
        }
    del out["batch_b1_read_gb"]  # one token, one sequence: the page pastes llama8_bf16_read_gb
    out["batch_gain"] = out["batch_full2048_tok_s"] / out["batch_b1_tok_s"]
    out["batch_full2048_user_tok_s"] = out["batch_full2048_tok_s"] / fit[2048]
    return out


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    return (
        _flops()
        | _training()
        | _prefill_decode()
        | _decode_claims()
        | _batching()
        | _image_figures()
    )
