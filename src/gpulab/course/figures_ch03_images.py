"""Chapter 03's figures on images and embeddings: Stable Diffusion's steps and FLOPs, BERT's chunks.

``gpulab.course.figures_ch03`` merges them into the chapter's figures; the page pastes each one
by its name with the {fig} role (gpulab.course.figures). The articles' own figures (by claim
id) and what the page assumes (embedding rates, chunk sizes) are named constants below; the
models' shapes come from their papers, SD 3.5's from ``gpulab.course.derivations.SD35``.
"""

from __future__ import annotations

from typing import Any

from gpulab.course.derivations import BERT_BASE_PARAMS, SD35, SD35_MEDIUM
from gpulab.estimate import basis
from gpulab.reference import specs

__all__ = ["figures"]

# ---- the articles' figures, by claim id (fact_check.json), that the arithmetic takes as inputs
ARTICLE_SD_STEPS = ((4, 0.8), (50, 8.0))  # claim 59: (steps, seconds) on an RTX 4090
ARTICLE_SD_XFORMERS_S = 0.5  # claim 59: "0.5 s with xformers and FP16"
ARTICLE_BATCH_IMAGES = (4, 3)  # claim 83: 4 images per batch, 3x the throughput
ARTICLE_COMFYUI_S = (3.2, 1.1, 4)  # claim 61: seconds per image before, after, and the "x4"
ARTICLE_SD35_S = {"cpu": 45, "gpu": 0.8}  # claim 75

# ---- what the page chooses
EMBED_TFLOPS = {"laptop": 0.25, "desktop": 1, "gpu": 100, "slow_gpu": 30}  # assumed rates
EMBED_CHUNKS = (10_000, 50_000, 1_000_000)
CHUNK_TOKENS = 512
# BERT-base: "L=12, H=768, A=12" with a 4H feed-forward (Devlin et al. 2018,
# https://arxiv.org/abs/1810.04805); the parameter count is derivations.BERT_BASE_PARAMS
BERT_LAYERS, BERT_HIDDEN = 12, 768
# SDXL's UNet: 2.6B parameters, at latent resolutions 128, 64 and 32 for a 1024x1024 image
# (Podell et al. 2023, https://arxiv.org/abs/2307.01952)
SDXL_UNET_PARAMS, SDXL_COARSEST_SIDE = 2.6e9, 32
# SD 3.5 Large's MMDiT shapes and FLOP count live in gpulab.course.derivations.SD35 (cited
# there). Each block has one set of weights per modality (text, image): q, k, v and out (4 w^2)
# and a 4x MLP (8 w^2), plus an adaLN modulation of 6 w^2 per modality applied to the
# conditioning vector (once per image, not per token).
# a 1024 x 1024 image: the VAE divides each side by 8, the MMDiT cuts 2 x 2 patches
# (SD35.image_tokens)
SD35_IMAGE_SIDE, SD35_VAE_FACTOR, SD35_PATCH = 1024, 8, 2


def _duration(seconds: float) -> str:
    """A time as s, min or h, rounded as the embedding table shows it."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 100 * 3600 else f"{seconds / 3600:.0f} h"


def _images() -> dict[str, Any]:
    """Claim 59's two timings fitted as fixed + steps x step, batching at 1024x1024, and
    ComfyUI's ratio."""
    (n1, t1), (n2, t2) = ARTICLE_SD_STEPS
    step = (t2 - t1) / (n2 - n1)
    fixed = t1 - n1 * step
    before, after, said = ARTICLE_COMFYUI_S
    return {
        "sd_steps_a": n1,
        "sd_time_a_s": t1,
        "sd_steps_b": n2,
        "sd_time_b_s": t2,
        "sd_naive_a_s": t1 / n1,
        "sd_naive_b_s": t2 / n2,
        "claim59_xformers_s": ARTICLE_SD_XFORMERS_S,
        "sd_step_s": step,
        "sd_fixed_s": fixed,
        "sd_half_step_s": step / 2,
        "sd_turbo_lo_s": fixed + n1 * step / 2,
        "sd_turbo_hi_s": fixed + n1 * step,
        "sdxl_unet_params_b": SDXL_UNET_PARAMS / 1e9,
        "sdxl_coarsest_side": SDXL_COARSEST_SIDE,
        "sdxl_min_positions": SDXL_COARSEST_SIDE**2,
        "batch_images": ARTICLE_BATCH_IMAGES[0],
        "batch_images_gain": ARTICLE_BATCH_IMAGES[1],
        "comfyui_before_s": before,
        "comfyui_after_s": after,
        "comfyui_said_x": said,
        "comfyui_ratio": before / after,
    } | _sd35()


def _sd35() -> dict[str, Any]:
    """SD 3.5 Large at 1024x1024: FLOPs per image, and the least time at the GPU's and the
    CPU's peaks."""
    width = SD35.width
    per_stream = 12 * width**2 * SD35.depth  # per-token weights of one modality's stream
    modulation = 2 * 6 * width**2 * SD35.depth  # adaLN, once per image per pass
    tokens = SD35.image_tokens + SD35.text_tokens
    matmul, attention = SD35.pass_flops()  # the one count, shared with the fact-check
    per_pass = matmul + attention
    guided = per_pass * 2 * SD35.steps  # classifier-free guidance: a batch of 2 per step
    turbo = per_pass * SD35.turbo_steps  # Large Turbo: no guidance
    r4090 = specs.get_gpu("RTX 4090")
    cpu_tflops = basis.cpu_peak_tflops()  # every core at its all-core turbo (chapter 1)
    gpu_peak, cpu_peak = r4090.peak_flops("bf16"), cpu_tflops * 1e12
    medium = sum(SD35_MEDIUM.pass_flops()) * 2 * SD35_MEDIUM.steps  # guided, diffusers' steps
    return {
        "sd35_params_b": SD35.params / 1e9,
        "sd35_depth": SD35.depth,
        "sd35_heads": SD35.heads,
        "sd35_head_dim": SD35.head_dim,
        "sd35_width": width,
        "sd35_params_from_shapes_b": (2 * per_stream + modulation) / 1e9,
        "sd35_stream_params_b": per_stream / 1e9,
        "sd35_image_tokens": SD35.image_tokens,
        "sd35_text_tokens": SD35.text_tokens,
        "sd35_tokens": tokens,
        "sd35_latent_side": SD35_IMAGE_SIDE // SD35_VAE_FACTOR,
        "sd35_patch_side": SD35_IMAGE_SIDE // SD35_VAE_FACTOR // SD35_PATCH,
        "sd35_matmul_tflop": matmul / 1e12,
        "sd35_attention_tflop": attention / 1e12,
        "sd35_pass_tflop": per_pass / 1e12,
        "sd35_steps": SD35.steps,
        "sd35_turbo_steps": SD35.turbo_steps,
        "sd35_image_tflop": guided / 1e12,
        "sd35_turbo_image_tflop": turbo / 1e12,
        "rtx4090_fp16_fp16acc_tflops": r4090.peak_tflops["fp16_fp16acc"],
        "cpu_allcore_tflops": cpu_tflops,
        "sd35_rtx4090_min_s": guided / gpu_peak,
        "sd35_rtx4090_fp16acc_min_s": guided / (r4090.peak_tflops["fp16_fp16acc"] * 1e12),
        "sd35_cpu_min_s": guided / cpu_peak,
        "sd35_cpu_min_min": guided / cpu_peak / 60,
        "claim75_gpu_s": ARTICLE_SD35_S["gpu"],
        "claim75_cpu_s": ARTICLE_SD35_S["cpu"],
        "claim75_gpu_needs_x_peak": guided / ARTICLE_SD35_S["gpu"] / gpu_peak,
        "claim75_cpu_needs_x_peak": guided / ARTICLE_SD35_S["cpu"] / cpu_peak,
        "claim75_turbo_gpu_share": turbo / ARTICLE_SD35_S["gpu"] / gpu_peak,
        "claim75_turbo_cpu_share": turbo / ARTICLE_SD35_S["cpu"] / cpu_peak,
        "claim75_ratio": ARTICLE_SD35_S["cpu"] / ARTICLE_SD35_S["gpu"],
        "bf16_ratio_allcore": r4090.peak_tflops["bf16"] / cpu_tflops,  # as chapter 1 has it
        "sd35m_params_b": SD35_MEDIUM.params / 1e9,
        "sd35m_depth": SD35_MEDIUM.depth,
        "sd35m_width": SD35_MEDIUM.width,
        "sd35m_dual_layers": SD35_MEDIUM.dual_attention_layers,
        "sd35m_pass_tflop": sum(SD35_MEDIUM.pass_flops()) / 1e12,
        "sd35m_image_tflop": medium / 1e12,
        "sd35m_rtx4090_min_s": medium / gpu_peak,
        "sd35m_cpu_min_s": medium / cpu_peak,
        "claim75_medium_gpu_needs_x_peak": medium / ARTICLE_SD35_S["gpu"] / gpu_peak,
        "claim75_medium_cpu_needs_x_peak": medium / ARTICLE_SD35_S["cpu"] / cpu_peak,
    }


def _embeddings() -> dict[str, Any]:
    """Embedding 512-token chunks with BERT-base: FLOPs per chunk and the time at assumed rates."""
    per_chunk = 2 * BERT_BASE_PARAMS * CHUNK_TOKENS
    matrices = BERT_LAYERS * (4 * BERT_HIDDEN**2 + 2 * BERT_HIDDEN * 4 * BERT_HIDDEN)
    attention = BERT_LAYERS * 4 * CHUNK_TOKENS * BERT_HIDDEN  # per token, full square
    exact = (2 * matrices + attention) * CHUNK_TOKENS
    out = {
        "bert_params_m": BERT_BASE_PARAMS / 1e6,
        "bert_layers": BERT_LAYERS,
        "bert_hidden": BERT_HIDDEN,
        "bert_ffn": 4 * BERT_HIDDEN,
        "bert_chunk_gflop": per_chunk / 1e9,
        "bert_matrix_params_m": matrices / 1e6,
        "bert_chunk_exact_gflop": exact / 1e9,
        "embed_desktop_share_lo": EMBED_TFLOPS["desktop"] / basis.cpu_peak_tflops(clocks="turbo"),
        "embed_desktop_share_hi": EMBED_TFLOPS["desktop"] / basis.cpu_peak_tflops(clocks="base"),
        "embed_gpu_share": EMBED_TFLOPS["gpu"] / specs.get_gpu("RTX 4090").peak_tflops["bf16"],
        "embed_ratio_lo": EMBED_TFLOPS["gpu"] / EMBED_TFLOPS["desktop"],
        "embed_ratio_hi": EMBED_TFLOPS["gpu"] / EMBED_TFLOPS["laptop"],
        "embed_slow_gpu_50k": _duration(50_000 * per_chunk / (EMBED_TFLOPS["slow_gpu"] * 1e12)),
    }
    out |= {f"embed_{k}_tflops": v for k, v in EMBED_TFLOPS.items()}
    for n in EMBED_CHUNKS:
        out[f"embed_{n}_pflop"] = n * per_chunk / 1e15
        for k in ("laptop", "desktop", "gpu"):
            out[f"embed_{n}_{k}"] = _duration(n * per_chunk / (EMBED_TFLOPS[k] * 1e12))
    return out


def figures() -> dict[str, Any]:
    """The chapter's figures on images and embeddings, by name."""
    return _images() | _embeddings()
