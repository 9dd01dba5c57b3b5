"""Fact-check derivations for chapter 3: tokens per second, FLOPs, images and embeddings.

Each function recomputes one claim's correct value with gpulab (the model catalogue,
``gpulab.perf``, ``gpulab.memory``) and registers itself in ``gpulab.derivations``; its
``Computed.values`` are the named figures the claim's templates in ``fact_check.json`` fill
in. A decode bound is a card's (or a RAM's) bandwidth over the bytes one token reads.
"""

from __future__ import annotations

from gpulab.course.claims_models import usable_gb
from gpulab.course.derivations import (
    BERT_BASE_PARAMS,
    DDR4_3200_DUAL_GBS,
    DDR5_4800_DUAL_GBS,
    GTX1650_GDDR6_GBS,
    LLAMA_ZH_SAMPLE,
    LLAMACPP_4090_LLAMA2_7B_TOK_S,
    SD35,
    SD35_MEDIUM,
    Computed,
    cpu_13900k,
    gpu,
    register,
    weight_gb,
)
from gpulab.estimate import basis, perf
from gpulab.reference import models

__all__: list[str] = []  # nothing to import: the functions register themselves

# The article's own figures that the derivations below take as inputs.
# claims 42-44 and 67: tokens/s on an RTX 4090, an RX 7900 XTX, an M3 Ultra and a laptop
ARTICLE_DECODE_TOK_S = {"rtx4090": 60, "rx7900xtx": 52, "m3_ultra": 38, "laptop": 2}
EMBED_TFLOPS = {"cpu": 1, "gpu": 100}  # round rates for the embedding estimate (claim 118)
ARTICLE_SD_S = {"cpu": 45, "gpu": 0.8}  # "CPU 45 s -> GPU 0.8 s" (claim 75)
ARTICLE_ZH_CHARACTERS = 3000  # "写一篇3000字的文章" (claim 67): Chinese characters, not tokens


def read_gb(model: str, fmt: str) -> float:
    """GB one decoding step reads with an empty cache (gpulab.estimate.basis.read_gb)."""
    return basis.read_gb(model, fmt)


@register
def cpu_7b_4bit_decode_bound() -> Computed:
    ram = cpu_13900k().memory_bandwidth_gbs
    w = read_gb("Llama-2-7B", "q4_k_m")
    v = basis.bound_tok_s("Llama-2-7B", "q4_k_m", "Core i9-13900K")
    return Computed(
        v,
        "tokens/s",
        f"{v:.1f} tokens/s",
        f"dual-channel DDR5-5600 {ram:g} GB/s / {w:.2f} GB read per token (Q4_K_M "
        "Llama-2-7B, gpulab.perf.decode_bytes_per_step)",
    )


def _decode_bound(device: str, label: str, claimed: float) -> Computed:
    """Llama-2-7B's decode bound on `device` in FP16 and Q4_0, against the article's
    `claimed`."""
    bandwidth = basis.bandwidth_gbs(device)
    w16, w4 = read_gb("Llama-2-7B", "fp16"), read_gb("Llama-2-7B", "q4_0")
    b16 = basis.bound_tok_s("Llama-2-7B", "fp16", device)
    b4 = basis.bound_tok_s("Llama-2-7B", "q4_0", device)
    return Computed(
        b16,
        "tokens/s",
        f"{b16:.1f} tokens/s",
        f"{label} {bandwidth:g} GB/s / {w16:.2f} GB read per token by FP16 Llama-2-7B "
        f"(gpulab.perf.decode_bytes_per_step, a short context); / {w4:.2f} GB at Q4_0 = "
        f"{b4:.1f} tokens/s",
        {
            "bound_f16": b16,
            "bound_q4": b4,
            "share_f16": claimed / b16,
            "share_q4": claimed / b4,
            "bw": bandwidth,
        },
    )


@register
def decode_bound_llama2_7b_rtx4090() -> Computed:
    claimed = ARTICLE_DECODE_TOK_S["rtx4090"]
    r = _decode_bound("RTX 4090", "RTX 4090", claimed)
    f16, q4 = LLAMACPP_4090_LLAMA2_7B_TOK_S["f16"], LLAMACPP_4090_LLAMA2_7B_TOK_S["q4_0"]
    return Computed(
        r.value,
        r.unit,
        r.text,
        r.how + f"; llama.cpp measured {f16} (F16) and {q4} (Q4_0)",
        {
            **r.values,
            "measured_f16": f16,
            "measured_q4": q4,
            "vs_measured_q4": claimed / q4,
            "measured_f16_share": f16 / r.values["bound_f16"],
        },
    )


@register
def decode_bound_llama2_7b_rx7900xtx() -> Computed:
    return _decode_bound("AMD Radeon RX 7900 XTX", "RX 7900 XTX", ARTICLE_DECODE_TOK_S["rx7900xtx"])


@register
def decode_bound_llama2_7b_m3_ultra() -> Computed:
    return _decode_bound("Apple M3 Ultra", "M3 Ultra", ARTICLE_DECODE_TOK_S["m3_ultra"])


def _too_big_bound(model: str, fmt: str) -> tuple[float, float]:
    """(tokens/s bound, GB read per token) on an RTX 4090 for a model that would not fit in its
    memory."""
    return basis.bound_tok_s(model, fmt, "RTX 4090"), read_gb(model, fmt)


@register
def decode_bound_llama3_70b_rtx4090() -> Computed:
    v, w = _too_big_bound("Llama-3-70B", "int4")
    bw = gpu("RTX 4090").bandwidth_gbs
    return Computed(
        v,
        "tokens/s",
        f"{v:.1f} tokens/s",
        f"even if the int4 weights fitted in the card's {usable_gb('RTX 4090'):.1f} GB: "
        f"{bw:g} GB/s / {w:.1f} GB read per token",
        {
            "bound": v,
            "int4_read_gb": w,
            "int4_gb": weight_gb("Llama-3-70B", "int4"),
            "q4km_gb": weight_gb("Llama-3-70B", "q4_k_m"),
            "card_gb": usable_gb("RTX 4090"),
            "bw": bw,
            "offloaded": _offload_bound(),
        },
    )


def _offload_bound() -> float:
    """Llama-3-70B Q4_K_M decode bound on one RTX 4090 with the rest in DDR5-5600 RAM, as
    Ollama splits it with a 4K context."""
    return basis.offload_tok_s("Llama-3-70B", "q4_k_m", "RTX 4090", 4096, "Core i9-13900K")


@register
def decode_bound_qwen72b_fp16_rtx4090() -> Computed:
    v, w = _too_big_bound("Qwen2.5-72B", "fp16")
    return Computed(
        v,
        "tokens/s",
        f"{v:.1f} tokens/s",
        f"if it fitted: {gpu('RTX 4090').bandwidth_gbs:g} GB/s / {w:.1f} GB",
        {
            "bound": v,
            "fp16_gb": weight_gb("Qwen2.5-72B", "fp16"),
            "read_gb": w,
            "card_gb": usable_gb("RTX 4090"),
        },
    )


@register
def r1_vs_70b_bytes_per_token() -> Computed:
    r1, d70 = basis.read_gb("DeepSeek-R1", "int4"), basis.read_gb("Llama-3-70B", "int4")
    hop = models.get("DeepSeek-R1").hidden_size * 2
    return Computed(
        r1,
        "GB",
        f"{r1:.1f} GB vs {d70:.1f} GB",
        f"bytes read per token at int4 (gpulab.perf.decode_bytes_per_step): R1's active experts "
        f"{r1:.1f} GB, dense Llama-3-70B {d70:.1f} GB; a layer split sends {hop:,} bytes per token",
    )


@register
def laptop_cpu_decode_bound() -> Computed:
    w = read_gb("Llama-2-7B", "fp16")
    lo, hi = (
        basis.bound_tok_s("Llama-2-7B", "fp16", bw)
        for bw in (DDR4_3200_DUAL_GBS, DDR5_4800_DUAL_GBS)
    )
    q4_lo, q4_hi = (
        basis.bound_tok_s("Llama-2-7B", "q4_k_m", bw)
        for bw in (DDR4_3200_DUAL_GBS, DDR5_4800_DUAL_GBS)
    )
    claimed = ARTICLE_DECODE_TOK_S["laptop"]
    per_char = LLAMA_ZH_SAMPLE["llama_tokens"] / LLAMA_ZH_SAMPLE["characters"]
    tokens = ARTICLE_ZH_CHARACTERS * per_char
    return Computed(
        lo,
        "tokens/s",
        f"{lo:.1f}–{hi:.1f} tokens/s",
        f"i7-12700H memory {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s (DDR4-3200 to "
        f"DDR5-4800, two channels) / {w:.2f} GB read per token in FP16",
        {
            "lo": lo,
            "hi": hi,
            "q4_lo": q4_lo,
            "q4_hi": q4_hi,
            "share_f16": claimed / lo,
            "share_q4": claimed / q4_lo,
            "claimed_tok_s": claimed,
            "characters": ARTICLE_ZH_CHARACTERS,
            "minutes_one_per_char": ARTICLE_ZH_CHARACTERS / claimed / 60,  # the article's 25
            "sample_characters": LLAMA_ZH_SAMPLE["characters"],
            "sample_tokens": LLAMA_ZH_SAMPLE["llama_tokens"],
            "tokens_per_char": per_char,
            "tokens": tokens,
            "minutes": tokens / claimed / 60,
        },
    )


@register
def gtx1650_vs_laptop_ratio() -> Computed:
    gddr5 = gpu("GTX 1650 GDDR5").bandwidth_gbs
    lo, hi = gddr5 / DDR5_4800_DUAL_GBS, GTX1650_GDDR6_GBS / DDR4_3200_DUAL_GBS
    return Computed(
        hi,
        "x",
        f"{lo:.1f}–{hi:.2f}x",
        f"GTX 1650 {gddr5:g} (GDDR5) to {GTX1650_GDDR6_GBS:g} GB/s (GDDR6) over a "
        f"dual-channel laptop's {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s",
        {
            "lo": lo,
            "hi": hi,
            "phi3_bound": basis.bound_tok_s("Phi-3-mini", "q4_k_m", "GTX 1650 GDDR5"),
        },
    )


@register
def forward_flops_per_token_7b() -> Computed:
    v = perf.forward_flops(models.get("Llama-2-7B"), 1)
    return Computed(
        v,
        "FLOPs",
        f"{v:.2e} FLOPs",
        "2 FLOPs per multiplied parameter per token, Llama-2-7B (gpulab.perf.forward_flops)",
    )


@register
def sd_steps_fit() -> Computed:
    step = (8 - 0.8) / (50 - 4)  # the article's 0.8 s at 4 steps and 8 s at 50 steps
    fixed = 0.8 - 4 * step
    return Computed(
        step,
        "s",
        f"{step:.3f} s per step",
        f"(8 - 0.8) s / (50 - 4) steps = {step:.3f} s; fixed part 0.8 - 4 x {step:.3f} = "
        f"{fixed:.2f} s",
        {"step_s": step, "fixed_s": fixed},
    )


@register
def sd35_flops_vs_claimed_times() -> Computed:
    matmul, attention = SD35.pass_flops()
    per_pass = matmul + attention
    large = per_pass * 2 * SD35.steps  # classifier-free guidance doubles each step
    turbo = per_pass * SD35.turbo_steps
    medium = sum(SD35_MEDIUM.pass_flops()) * 2 * SD35_MEDIUM.steps
    g = gpu("RTX 4090").peak_flops("bf16")  # diffusers runs SD 3.5 in bf16 (FP32 accumulate)
    c = basis.cpu_peak_tflops() * 1e12  # the i9-13900K at its all-core turbo: its real peak
    v = {
        "large_tflop": large / 1e12,
        "medium_tflop": medium / 1e12,
        "gpu_large_s": large / g,
        "gpu_medium_s": medium / g,
        "gpu_turbo_s": turbo / g,
        "cpu_large_s": large / c,
        "cpu_medium_s": medium / c,
        "cpu_turbo_s": turbo / c,
        "steps": SD35.steps,
    }
    return Computed(
        v["gpu_turbo_s"],
        "s",
        f"{v['gpu_turbo_s']:.2f} s",
        f"MMDiT, {SD35.depth} blocks of width {SD35.width}: {matmul / 1e12:.1f} TFLOP of "
        f"matrices + {attention / 1e12:.1f} of attention over "
        f"{SD35.image_tokens} + {SD35.text_tokens} tokens per pass; Large: x 2 (guidance) x "
        f"{SD35.steps} steps, Turbo: x {SD35.turbo_steps}; Medium ({SD35_MEDIUM.depth} blocks "
        f"of width {SD35_MEDIUM.width}, {SD35_MEDIUM.dual_attention_layers} with a second "
        f"attention): {medium / 1e12:.0f} TFLOP for the same steps; at the RTX 4090's "
        f"{g / 1e12:g} TFLOP/s (bf16) and the i9-13900K's {c / 1e12:.2f} TFLOP/s (all-core)",
        v,
    )


@register
def comfyui_speedup() -> Computed:
    before, after = 3.2, 1.1  # the article's seconds per image without and with TensorRT
    r = before / after
    return Computed(r, "x", f"{r:.1f}x", f"{before} s / {after} s per image")


@register
def rag_embedding_time() -> Computed:
    flops = 50_000 * 2 * BERT_BASE_PARAMS * 512
    cpu_h, gpu_s = flops / (EMBED_TFLOPS["cpu"] * 1e12) / 3600, flops / (EMBED_TFLOPS["gpu"] * 1e12)
    return Computed(
        cpu_h,
        "h",
        f"{cpu_h:.1f} h",
        f"50,000 chunks x 2 x {BERT_BASE_PARAMS / 1e6:.0f}M parameters (BERT-base) x 512 "
        f"tokens = {flops:.2e} FLOPs: {cpu_h:.1f} h at {EMBED_TFLOPS['cpu']} TFLOP/s (CPU), "
        f"{gpu_s:.0f} s at {EMBED_TFLOPS['gpu']} TFLOP/s (GPU)",
        {
            "cpu_h": cpu_h,
            "gpu_s": gpu_s,
            "ratio": EMBED_TFLOPS["gpu"] / EMBED_TFLOPS["cpu"],
            "cpu_tflops": EMBED_TFLOPS["cpu"],
            "gpu_tflops": EMBED_TFLOPS["gpu"],
        },
    )
