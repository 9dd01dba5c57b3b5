"""Chapter 04's figures: every number that `book/04_backends.md` quotes, computed from gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.units import GB
from gpulab.course import claims_hardware, derivations  # noqa: F401 (registers its derivations)
from gpulab.course.claims_models import ARTICLE_GPU_LAYERS
from gpulab.course.claims_speed import ARTICLE_DECODE_TOK_S
from gpulab.estimate import basis, memory
from gpulab.reference import models, specs
from gpulab.reference.formats import ACTIVATION_BYTES, KV_FORMATS, bits_per_weight

__all__ = ["figures"]

# ---- inputs gpulab's tables do not hold (page-specific, each with its source)

# FlashAttention-3 (Shah et al., arXiv 2407.08608, abstract): "1.5-2.0x" over FlashAttention-2,
# "FP16 reaching up to 740 TFLOPs/s (75% utilization)", "FP8 reaching close to 1.2 PFLOPs/s",
# against FlashAttention-2's "35%" utilisation on H100.
FA3_SPEEDUP_RANGE = (1.5, 2.0)
FA3_FP16_TFLOPS = 740
FA2_H100_UTILISATION = 0.35
# HGX B200 dense Tensor Core peaks per GPU, TFLOP/s (glennklockwood.com/garden/processors/B200);
# the course's spec table has no B200 row.
B200_DENSE_TFLOPS = {"fp16": 2250, "bf16": 2250, "fp8": 4500, "fp4": 9000}
# V100 SXM2 FP16 Tensor Core peak, TFLOP/s (developer.nvidia.com/programming-tensor-cores-cuda-9-0);
# no V100 row in the spec table.
V100_FP16_TFLOPS = 125
CONTEXT = 4096  # tokens of KV cache the -ngl section budgets


def _gpu(name: str) -> specs.GPUSpec:
    """A spec-table row."""
    return specs.get_gpu(name)


# ---- the articles' backend table, redone


def _backend_table() -> dict[str, Any]:
    """Llama-2-7B's weight bytes and its decode bound on the article's three cards, against the
    article's rates (the page's picture draws the same bounds, gpulab.ui.pictures_ch04)."""
    s = models.get("Llama-2-7B")
    out: dict[str, Any] = {
        "llama7_params": s.n_params,
        "llama7_params_b": s.n_params / 1e9,
        "q4km_bits": bits_per_weight("q4_k_m"),
        "q8_bits": bits_per_weight("q8_0"),
        "llama7_fp16_gb": basis.weights_gb("Llama-2-7B", "fp16"),
        "llama7_q4km_gb": basis.weights_gb("Llama-2-7B", "q4_k_m"),
    }
    names = {
        "rtx4090": "RTX 4090",
        "rx7900xtx": "AMD Radeon RX 7900 XTX",
        "m3ultra": "Apple M3 Ultra",
    }
    article = {
        "rtx4090": ARTICLE_DECODE_TOK_S["rtx4090"],
        "rx7900xtx": ARTICLE_DECODE_TOK_S["rx7900xtx"],
        "m3ultra": ARTICLE_DECODE_TOK_S["m3_ultra"],
    }
    bandwidth = {key: basis.bandwidth_gbs(name) for key, name in names.items()}
    out["m3ultra_gbs"] = bandwidth["m3ultra"]
    shares16, shares4 = [], []
    for key, said in article.items():
        fp16 = basis.bound_tok_s("Llama-2-7B", "fp16", names[key])
        q4 = basis.bound_tok_s("Llama-2-7B", "q4_k_m", names[key])
        out[f"llama7_fp16_{key}_bound_tok_s"] = fp16
        if key == "rtx4090":
            out["llama7_q4km_rtx4090_bound_tok_s"] = q4
        shares16.append(said / fp16)
        shares4.append(said / q4)
        out[f"llama7_fp16_{key}_claim_share"] = shares16[-1]
        # rank against the RTX 4090: bandwidths and the article's rates
        out[f"{key}_bw_vs_rtx4090"] = bandwidth[key] / bandwidth["rtx4090"]
        out[f"{key}_article_vs_rtx4090"] = said / article["rtx4090"]
    out["article_share_of_fp16_bound_min"] = min(shares16)
    out["article_share_of_fp16_bound_max"] = max(shares16)
    out["article_share_of_q4km_bound_min"] = min(shares4)
    out["article_share_of_q4km_bound_max"] = max(shares4)
    return out


# ---- fused kernels and torch.compile


def _attention() -> dict[str, Any]:
    """Bytes of the attention score matrix written out; FlashAttention-3 against the H100 peak."""
    s = models.get("Llama-2-7B")
    fp16 = ACTIVATION_BYTES["fp16"]
    h100 = _gpu("H100 SXM").peak_tflops["fp16"]
    fa3 = derivations.compute("fa3_claim_vs_h100_peak").values
    return {
        "scores_heads": s.n_heads,
        "scores_8k_gb": s.n_heads * 8192**2 * fp16 / GB,
        "scores_128k_tb": s.n_heads * 131_072**2 * fp16 / 1e12,
        "h100_fp16_tflops": h100,
        "fa3_fp16_tflops": FA3_FP16_TFLOPS,
        "fa3_share_of_h100_peak": FA3_FP16_TFLOPS / h100,
        "fa2_h100_utilisation": FA2_H100_UTILISATION,
        "fa2_h100_tflops": FA2_H100_UTILISATION * h100,
        "fa3_speedup_low_x": FA3_SPEEDUP_RANGE[0],
        "fa3_speedup_high_x": FA3_SPEEDUP_RANGE[1],
        "article_fa3_share_of_h100_peak": fa3["claimed_share"],
        "article_fa3_vs_fa2": fa3["claimed_share"] / FA2_H100_UTILISATION,
        "llama70_kv_128k_gb": memory.kv_cache_bytes(models.get("Llama-3-70B"), 131_072, 1, "bf16")
        / GB,
    }


def _fusion() -> dict[str, Any]:
    """Bytes per element of relu(x * 2 + 1) in fp32: three kernels eager, one fused."""
    elem, ops = ACTIVATION_BYTES["fp32"], 3
    eager, fused = ops * 2 * elem, 2 * elem
    return {
        "fp32_bytes_per_value": elem,
        "chain_eager_bytes_per_value": eager,
        "chain_fused_bytes_per_value": fused,
        "chain_fusion_speedup_x": eager / fused,
        "add_bytes_per_flop": 3 * elem,
    }


# ---- low precision


def _precision() -> dict[str, Any]:
    """Dense Tensor Core peaks per generation, and FP4 over FP16."""
    out: dict[str, Any] = {"v100_fp16_tflops": V100_FP16_TFLOPS}
    for key, name in (
        ("t4", "T4"),
        ("a100", "A100 80GB SXM"),
        ("rtx3090", "RTX 3090"),
        ("rtx4090", "RTX 4090"),
        ("h100", "H100 SXM"),
        ("rtx5090", "RTX 5090"),
    ):
        for dtype, tflops in _gpu(name).peak_tflops.items():
            out[f"{key}_{dtype}_tflops"] = tflops
    for dtype, tflops in B200_DENSE_TFLOPS.items():
        out[f"b200_{dtype}_tflops"] = tflops
    out["b200_fp4_vs_fp16_x"] = B200_DENSE_TFLOPS["fp4"] / B200_DENSE_TFLOPS["fp16"]
    out["rtx5090_fp4_vs_fp16acc_x"] = out["rtx5090_fp4_tflops"] / out["rtx5090_fp16_fp16acc_tflops"]
    out["rtx5090_fp4_vs_bf16_x"] = out["rtx5090_fp4_tflops"] / out["rtx5090_bf16_tflops"]
    out["rtx5090_launch"] = _gpu("RTX 5090").launch_date
    return out


# ---- llama.cpp: how many layers fit


def _layers() -> dict[str, Any]:
    """Llama-3-70B Q4_K_M on an RTX 4090: a layer's parameters and bytes, and -ngl worked out on
    the basis's terms (basis.layers_that_fit): the room for tensors over one layer's bytes."""
    s, g = models.get("Llama-3-70B"), _gpu("RTX 4090")
    h, kv_w, ffn = s.hidden_size, s.n_kv_heads * s.head_dim, s.intermediate_size
    bits = bits_per_weight("q4_k_m")
    layer = s.layer_params(0)
    layer_bytes = layer * bits / 8
    kv_tok = 2 * s.n_layers * s.n_kv_heads * s.head_dim * KV_FORMATS["fp16"]
    per_layer = memory.layer_bytes(s, "q4_k_m", CONTEXT, "fp16")[0]  # weights and KV share
    room = g.model_memory_bytes  # the driver's total less the CUDA context and the reserve
    n_float = room / per_layer
    n = basis.layers_that_fit("Llama-3-70B", "q4_k_m", "RTX 4090", CONTEXT)
    if n != math.floor(n_float):  # the page's arithmetic is the basis's, or the page is wrong
        raise AssertionError(f"-ngl: {math.floor(n_float)} by hand, {n} from the basis")
    return {
        "llama70_hidden": h,
        "llama70_heads": s.n_heads,
        "llama70_kv_heads": s.n_kv_heads,
        "llama70_head_dim": s.head_dim,
        "llama70_kv_width": kv_w,
        "llama70_ffn": ffn,
        "llama70_layers": s.n_layers,
        "llama70_vocab": s.vocab_size,
        "llama70_layer_qo_params": 2 * h * h,
        "llama70_layer_kv_params": 2 * h * kv_w,
        "llama70_layer_mlp_params": 3 * h * ffn,
        "llama70_layer_norm_params": 2 * h,
        "llama70_layer_params": layer,
        "llama70_params": s.n_params,
        "llama70_q4km_layer_mb": layer_bytes / 1e6,
        "llama70_q4km_gb": basis.weights_gb("Llama-3-70B", "q4_k_m"),
        "llama70_kv_bytes_per_token": kv_tok,
        "ngl_context_tokens": CONTEXT,
        "llama70_kv_4k_layer_mb": kv_tok * CONTEXT / s.n_layers / 1e6,
        "llama70_q4km_layer_read_mb": per_layer / 1e6,
        "rtx4090_driver_mib": g.memory_bytes / 2**20,
        "rtx4090_driver_gb": g.memory_bytes / GB,
        "cuda_context_gib": specs.CUDA_CONTEXT_BYTES / 2**30,
        "allocator_slack": specs.ALLOCATOR_SLACK,
        "rtx4090_usable_gb": room / GB,
        "ngl_fit_float": n_float,
    }


def _deepseek() -> dict[str, Any]:
    """DeepSeek-R1 at Q4_K_M, and the 35 layers the article put on the GPU (claims 16, 72)."""
    s = models.get("DeepSeek-R1")
    bits = bits_per_weight("q4_k_m")
    on_gpu = ARTICLE_GPU_LAYERS  # the article's OLLAMA_GPU_LAYERS=35 (claims 17, 72)
    return {
        "r1_q4km_gb": basis.weights_gb("DeepSeek-R1", "q4_k_m"),
        "r1_layers": s.n_layers,
        "article_gpu_layers": on_gpu,
        "r1_q4km_35_layers_gb": sum(s.layer_params(i) for i in range(on_gpu)) * bits / 8 / GB,
    }


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    return {
        **_backend_table(),
        **_attention(),
        **_fusion(),
        **_precision(),
        **_layers(),
        **_deepseek(),
    }
