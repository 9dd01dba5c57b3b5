"""Fact-check derivations for chapters 2 and 3: model sizes, memory, tokens per second, FLOPs.

Each function recomputes one claim's correct value with gpulab (the model catalogue,
``gpulab.memory``, ``gpulab.perf``) and registers itself in ``gpulab.derivations``.
"""

from __future__ import annotations

import functools

from gpulab.core.units import GB
from gpulab.course.derivations import (
    BERT_BASE_PARAMS,
    DDR4_3200_DUAL_GBS,
    DDR5_4800_DUAL_GBS,
    GTX1650_GDDR6_GBS,
    Computed,
    cpu_13900k,
    gpu,
    nominal_weight_gb,
    register,
    weight_gb,
)
from gpulab.estimate import memory, perf
from gpulab.reference import models

__all__: list[str] = []  # nothing to import: the functions register themselves


# ---- chapter 2: memory

@register("llama3_70b_4bit_weights")
def _w70_4bit() -> Computed:
    lo, hi = weight_gb("Llama-3-70B", "int4"), weight_gb("Llama-3-70B", "q4_k_m")
    return Computed(lo, "GB", f"{lo:.1f}–{hi:.1f} GB",
                    f"70.55B parameters (catalogue): int4 group 128 (4.125 bits, embeddings in 16 bits) "
                    f"{lo:.1f} GB; Q4_K_M (4.84 bits) {hi:.1f} GB; 24 GB would need "
                    f"{24e9 * 8 / models.get('Llama-3-70B').n_params:.1f} bits per weight")


@register("llama3_70b_fp16_weights")
def _w70_fp16() -> Computed:
    v = weight_gb("Llama-3-70B", "fp16")
    return Computed(v, "GB", f"{v:.1f} GB", "70,553,706,496 parameters x 2 bytes (gpulab.memory)")


@register("llama3_70b_q4km_weights")
def _w70_q4() -> Computed:
    v = weight_gb("Llama-3-70B", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"70.55B x 4.84 bits / 8 (llama.cpp's Q4_K_M); fits 2 x 24 = 48 GB with "
                    f"{48 - v:.1f} GB left for the KV cache")


@register("llama2_7b_weights")
def _w7() -> Computed:
    fp16, int4 = weight_gb("Llama-2-7B", "fp16"), weight_gb("Llama-2-7B", "int4")
    return Computed(fp16, "GB", f"{fp16:.1f} GB",
                    f"6.74B parameters x 2 bytes = {fp16:.1f} GB in FP16; int4 group 128: {int4:.1f} GB")


@register("offload_slowdown_70b_on_4090")
def _offload() -> Computed:
    s, g = models.get("Llama-3-70B"), gpu("RTX 4090")
    ram = cpu_13900k().memory_bandwidth_gbs
    n = memory.gpu_layers_that_fit(s, 24e9, "q4_k_m", seq_len=4096)
    part = perf.offloaded_tokens_per_s(s, n, "q4_k_m", g.bandwidth_gbs, ram)
    full = perf.offloaded_tokens_per_s(s, s.n_layers + 1, "q4_k_m", g.bandwidth_gbs, ram)
    r = full / part
    return Computed(r, "x", f"{r:.1f}x slower",
                    f"Llama-3-70B Q4_K_M, {n} of {s.n_layers} layers in 24 GB: bound {part:.1f} tokens/s "
                    f"vs {full:.1f} if all fitted (1008 GB/s VRAM, {ram:g} GB/s DDR5-5600; gpulab.perf)")


@register("int4_vs_fp16_ratio")
def _int4_ratio() -> Computed:
    lo, hi = 16 / memory.bits_per_weight("q4_k_m"), 16 / memory.bits_per_weight("int4")
    return Computed(hi, "x", f"{lo:.1f}–{hi:.1f}x",
                    f"16 bits / {memory.bits_per_weight('q4_k_m')} (Q4_K_M) to 16 / "
                    f"{memory.bits_per_weight('int4')} (int4 group 128); 8x only against FP32")


@register("deepseek_r1_fp16_vs_fp8")
def _r1_fp() -> Computed:
    fp16, fp8 = weight_gb("DeepSeek-R1", "fp16"), weight_gb("DeepSeek-R1", "fp8")
    return Computed(fp8, "GB", f"{fp16:.0f} GB in 16 bits, {fp8:.0f} GB as released (FP8)",
                    f"671.03B parameters x 2 bytes = {fp16:.1f} GB; FP8 with 128x128 block scales, "
                    f"embeddings in 16 bits = {fp8:.1f} GB (gpulab.memory)")


@register("deepseek_r1_int4_weights")
def _r1_int4() -> Computed:
    v, q = weight_gb("DeepSeek-R1", "int4"), weight_gb("DeepSeek-R1", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"671.03B parameters at 4.125 bits (int4 group 128) = {v:.1f} GB; Q4_K_M {q:.1f} GB; "
                    f"168 GB is 1342 / 8, i.e. 2 bits per weight")


@register("deepseek_r1_on_4_a100")
def _r1_a100() -> Computed:
    v = weight_gb("DeepSeek-R1", "int4")
    cap = 4 * gpu("A100 80GB SXM").memory_gb
    return Computed(v, "GB", f"{v:.1f} GB > {cap:g} GB",
                    f"int4 weights alone {v:.1f} GB against 4 x 80 GB = {cap:g} GB (4 x 40 GB = 160 GB)")


@register("deepseek_r1_active_params")
def _r1_active() -> Computed:
    s = models.get("DeepSeek-R1")
    return Computed(s.n_active_params / 1e9, "B", f"{s.n_active_params / 1e9:.1f}B of {s.n_params / 1e9:.1f}B",
                    "active parameters per token (8 of 256 routed experts + shared) counted from the config "
                    "in gpulab.models; DeepSeek publishes 37B of 671B")


@register("deepseek_r1_q4km_vs_4090_and_ram")
def _r1_q4() -> Computed:
    v = weight_gb("DeepSeek-R1", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"Q4_K_M weights {v:.1f} GB against 24 GB VRAM + 64 GB RAM = 88 GB; 35 of 61 layers are "
                    f"about {v * 35 / 61:.0f} GB")


@register("qwen25_72b_fp16_weights")
def _qwen() -> Computed:
    v = weight_gb("Qwen2.5-72B", "fp16")
    return Computed(v, "GB", f"{v:.1f} GB", f"72.71B parameters x 2 bytes; two 80 GB cards leave {160 - v:.1f} GB")


@register("phi3_mini_params")
def _phi3() -> Computed:
    s = models.get("Phi-3-mini")
    w = weight_gb("Phi-3-mini", "q4_k_m")
    return Computed(s.n_params / 1e9, "B", f"{s.n_params / 1e9:.2f}B",
                    f"counted from the config (gpulab.models); at Q4_K_M {w:.2f} GB, which fits in 4 GB")


def _tier(params: float, label: str) -> Computed:
    v = nominal_weight_gb(params, "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"{label}: {params / 1e9:g}B x {memory.bits_per_weight('q4_k_m')} bits / 8 (Q4_K_M weights)")


# the article's VRAM tiers: one registered derivation per model size
for _billions in (3, 7, 13, 14, 32):
    register(f"tier_{_billions}b_4bit")(functools.partial(_tier, _billions * 1e9, f"{_billions}B"))


@register("kv_cache_llama3_70b_128k")
def _kv() -> Computed:
    v = memory.kv_cache_bytes(models.get("Llama-3-70B"), 131072, 1, "bf16") / GB
    return Computed(v, "GB", f"{v:.1f} GB",
                    "2 x 80 layers x 8 KV heads x 128 x 2 bytes x 131,072 tokens (gpulab.memory.kv_cache_bytes)")


@register("full_finetune_7b_states")
def _ft() -> Computed:
    s = models.get("Llama-2-7B")
    b = memory.estimate_training(s, precision="bf16-mixed", optimizer="adamw", batch=1, seq_len=1)
    states = (b.weights + b.gradients + b.optimizer) / GB
    return Computed(states, "GB", f"{states:.1f} GB",
                    f"Llama-2-7B, bf16 mixed precision with AdamW: weights + gradients + FP32 master and "
                    f"moments = {(b.weights + b.gradients + b.optimizer) / s.n_params:.0f} bytes per "
                    "parameter, before activations (gpulab.memory.estimate_training)")


@register("layer_split_bytes_per_token")
def _split() -> Computed:
    s = models.get("Llama-3-70B")
    nv = gpu("RTX 3090").interconnect["nvlink_gbs"]
    b = s.hidden_size * 2
    return Computed(b, "bytes", f"{b:,} bytes per token",
                    f"a layer split passes one bf16 hidden state ({s.hidden_size} x 2 bytes) per token between "
                    f"GPUs; the RTX 3090 has NVLink ({nv:g} GB/s, gpulab.specs)")


@register("cpu_7b_4bit_decode_bound")
def _cpu7() -> Computed:
    ram = cpu_13900k().memory_bandwidth_gbs
    w = weight_gb("Llama-2-7B", "q4_k_m")
    v = ram / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"dual-channel DDR5-5600 {ram:g} GB/s / {w:.2f} GB of Q4_K_M Llama-2-7B weights")


# ---- chapter 3: tokens per second, FLOPs

def _decode_bound(bandwidth: float, label: str) -> Computed:
    w = weight_gb("Llama-2-7B", "fp16")
    v = bandwidth / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"{label} {bandwidth:g} GB/s / {w:.2f} GB of FP16 Llama-2-7B weights (KV cache left out)")


@register("decode_bound_llama2_7b_rtx4090")
def _d4090() -> Computed:
    return _decode_bound(gpu("RTX 4090").bandwidth_gbs, "RTX 4090")


@register("decode_bound_llama2_7b_rx7900xtx")
def _d7900() -> Computed:
    return _decode_bound(gpu("AMD Radeon RX 7900 XTX").bandwidth_gbs, "RX 7900 XTX")


@register("decode_bound_llama2_7b_m3_ultra")
def _dm3() -> Computed:
    return _decode_bound(gpu("Apple M3 Ultra").bandwidth_gbs, "M3 Ultra")


@register("decode_bound_llama3_70b_rtx4090")
def _d70() -> Computed:
    bw, w = gpu("RTX 4090").bandwidth_gbs, weight_gb("Llama-3-70B", "int4")
    v = bw / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"even if the {w:.1f} GB of int4 weights fitted in 24 GB: {bw:g} GB/s / {w:.1f} GB")


@register("decode_bound_qwen72b_fp16_rtx4090")
def _dq() -> Computed:
    bw, w = gpu("RTX 4090").bandwidth_gbs, weight_gb("Qwen2.5-72B", "fp16")
    v = bw / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s", f"if it fitted: {bw:g} GB/s / {w:.1f} GB")


@register("r1_vs_70b_bytes_per_token")
def _r1_vs_70() -> Computed:
    r1 = perf.decode_bytes_per_step(models.get("DeepSeek-R1"), "int4", "bf16", 1, 1) / GB
    d70 = perf.decode_bytes_per_step(models.get("Llama-3-70B"), "int4", "bf16", 1, 1) / GB
    hop = models.get("DeepSeek-R1").hidden_size * 2
    return Computed(r1, "GB", f"{r1:.1f} GB vs {d70:.1f} GB",
                    f"bytes read per token at int4 (gpulab.perf.decode_bytes_per_step): R1's active experts "
                    f"{r1:.1f} GB, dense Llama-3-70B {d70:.1f} GB; a layer split sends {hop:,} bytes per token")


@register("laptop_cpu_decode_bound")
def _laptop() -> Computed:
    w = weight_gb("Llama-2-7B", "fp16")
    lo, hi = DDR4_3200_DUAL_GBS / w, DDR5_4800_DUAL_GBS / w
    return Computed(lo, "tokens/s", f"{lo:.1f}–{hi:.1f} tokens/s",
                    f"i7-12700H memory {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s (DDR4-3200 to "
                    f"DDR5-4800, two channels) / {w:.2f} GB of FP16 weights")


@register("gtx1650_vs_laptop_ratio")
def _gtx() -> Computed:
    gddr5 = gpu("GTX 1650 GDDR5").bandwidth_gbs
    lo, hi = gddr5 / DDR5_4800_DUAL_GBS, GTX1650_GDDR6_GBS / DDR4_3200_DUAL_GBS
    return Computed(hi, "x", f"{lo:.1f}–{hi:.2f}x",
                    f"GTX 1650 {gddr5:g} (GDDR5) to {GTX1650_GDDR6_GBS:g} GB/s (GDDR6) over a "
                    f"dual-channel laptop's {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s")


@register("forward_flops_per_token_7b")
def _flops7() -> Computed:
    v = perf.forward_flops(models.get("Llama-2-7B"), 1)
    return Computed(v, "FLOPs", f"{v:.2e} FLOPs",
                    "2 FLOPs per multiplied parameter per token, Llama-2-7B (gpulab.perf.forward_flops)")


@register("sd_steps_fit")
def _sd() -> Computed:
    step = (8 - 0.8) / (50 - 4)
    fixed = 0.8 - 4 * step
    return Computed(step, "s", f"{step:.3f} s per step",
                    f"(8 - 0.8) s / (50 - 4) steps = {step:.3f} s; fixed part 0.8 - 4 x {step:.3f} = {fixed:.2f} s")


@register("comfyui_speedup")
def _comfy() -> Computed:
    r = 3.2 / 1.1
    return Computed(r, "x", f"{r:.1f}x", "3.2 s / 1.1 s per image")


@register("rag_embedding_time")
def _rag() -> Computed:
    flops = 50_000 * 2 * BERT_BASE_PARAMS * 512
    cpu_h, gpu_s = flops / 1e12 / 3600, flops / 100e12
    return Computed(cpu_h, "h", f"{cpu_h:.1f} h",
                    f"50,000 chunks x 2 x 110M parameters (BERT-base) x 512 tokens = {flops:.2e} FLOPs: "
                    f"{cpu_h:.1f} h at 1 TFLOP/s (CPU), {gpu_s:.0f} s at 100 TFLOP/s (GPU)")
