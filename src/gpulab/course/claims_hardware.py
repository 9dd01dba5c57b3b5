"""Fact-check derivations for chapter 1: compute, bandwidth and Tensor Cores, GPU against CPU.

Each function recomputes one claim's correct value with gpulab (the spec tables) and registers
itself in ``gpulab.derivations``. Its ``Computed.values`` are the named figures that the
claim's text templates in ``fact_check.json`` fill in, so no figure of an explanation is typed
by hand; the article's own inputs (its benchmark's timings, its DDR5 figure) are named
constants here, quoted as the article's. Chapters 4-6's claims are in ``gpulab.claims_buying``.
"""

from __future__ import annotations

from gpulab.course.derivations import (
    DDR5_4800_DUAL_GBS,
    LINEAR_BENCH_FLOP,
    Computed,
    cpu_13900k,
    gpu,
    register,
)
from gpulab.estimate import basis

__all__: list[str] = []  # nothing to import: the functions register themselves

# The article's own figures that the derivations below take as inputs.
ARTICLE_GPU_S, ARTICLE_CPU_S = 0.012, 0.84  # the nn.Linear benchmark, seconds (claim 20)
ARTICLE_DDR5_GBS = 80  # "DDR5 ... about 80 GB/s" (claim 32)


def _cpu_peaks() -> tuple[float, float, float]:
    """The i9-13900K's FP32 peak at base, all-core and (few-core) turbo clocks, in TFLOP/s."""
    return tuple(basis.cpu_peak_tflops(clocks=clock) for clock in ("base", "all-core", "turbo"))


def _peak_ratios(dtype: str) -> tuple[float, float, float]:
    """RTX 4090 peak in `dtype` over the CPU's FP32 peak: (turbo, all-core, base clocks)."""
    base, all_core, turbo = _cpu_peaks()
    g = gpu("RTX 4090").peak_tflops[dtype]
    return g / turbo, g / all_core, g / base


def _compute_vs_cpu() -> dict[str, float]:
    """The ratios the chapter-1 claims are checked against, named for the templates.

    The headline is the all-core ratio (`fp32`, `bf16`): a parallel kernel keeps every core
    busy, at the all-core clocks; `_lo` and `_hi` are only the range's ends (every core at the
    few-core turbo, which none sustains, and every core at base).
    """
    base, all_core, turbo = _cpu_peaks()
    g, c = gpu("RTX 4090"), cpu_13900k()
    fp32_lo, fp32, fp32_hi = _peak_ratios("fp32")
    bf16_lo, bf16, bf16_hi = _peak_ratios("bf16")
    return {
        "fp32": fp32,
        "fp32_lo": fp32_lo,
        "fp32_hi": fp32_hi,
        "bf16": bf16,
        "bf16_lo": bf16_lo,
        "bf16_hi": bf16_hi,
        "bw_ratio": g.bandwidth_gbs / c.memory_bandwidth_gbs,
        "cpu_base_tflops": base,
        "cpu_all_core_tflops": all_core,
        "cpu_turbo_tflops": turbo,
        "gpu_fp32_tflops": g.peak_tflops["fp32"],
        "gpu_bf16_tflops": g.peak_tflops["bf16"],
        "gpu_bw": g.bandwidth_gbs,
        "cpu_bw": c.memory_bandwidth_gbs,
    }


# ---- chapter 1: compute, bandwidth, Tensor Cores


@register
def speedup_4090_vs_13900k_fp32() -> Computed:
    v = _compute_vs_cpu()
    return Computed(
        v["fp32"],
        "x",
        f"about {v['fp32']:.0f}x",
        f"FP32 peaks: RTX 4090 {v['gpu_fp32_tflops']:g} TFLOP/s / i9-13900K "
        f"{v['cpu_all_core_tflops']:.2f} TFLOP/s at its all-core clocks (the range's ends: "
        f"{v['cpu_turbo_tflops']:.2f} with every core at the few-core turbo, "
        f"{v['cpu_base_tflops']:.2f} at base); memory-bound work gets the bandwidth ratio "
        f"{v['gpu_bw']:g} / {v['cpu_bw']:g} = {v['bw_ratio']:.1f}x (gpulab.specs)",
        v,
    )


@register
def speedup_4090_bf16_vs_13900k_fp32() -> Computed:
    v = _compute_vs_cpu()
    v["h100_vs_cpu_base"] = gpu("H100 SXM").peak_tflops["bf16"] / v["cpu_base_tflops"]
    v["h100_vs_cpu_all_core"] = gpu("H100 SXM").peak_tflops["bf16"] / v["cpu_all_core_tflops"]
    return Computed(
        v["bf16"],
        "x",
        f"about {v['bf16']:.0f}x",
        f"BF16 Tensor Core peak {v['gpu_bf16_tflops']:g} TFLOP/s over the i9-13900K's FP32 "
        f"peak at its all-core clocks, {v['cpu_all_core_tflops']:.2f} TFLOP/s (the range: "
        f"{v['cpu_base_tflops']:.2f}-{v['cpu_turbo_tflops']:.2f}); an H100 SXM reaches "
        f"{v['h100_vs_cpu_all_core']:.0f}x the same CPU peak",
        v,
    )


@register
def linear_benchmark_implied_rate() -> Computed:
    v = _compute_vs_cpu()
    gpu_rate, cpu_rate = LINEAR_BENCH_FLOP / ARTICLE_GPU_S, LINEAR_BENCH_FLOP / ARTICLE_CPU_S
    v.update(
        gpu_tflops=gpu_rate / 1e12,
        gpu_share=gpu_rate / (v["gpu_fp32_tflops"] * 1e12),
        cpu_gflops=cpu_rate / 1e9,
        cpu_share=cpu_rate / (v["cpu_all_core_tflops"] * 1e12),
        claimed_ratio=ARTICLE_CPU_S / ARTICLE_GPU_S,
    )
    return Computed(
        v["gpu_tflops"],
        "TFLOP/s",
        f"{v['gpu_tflops']:.1f} TFLOP/s",
        f"2 x 10000 x 4096 x 4096 = {LINEAR_BENCH_FLOP / 1e9:.1f} GFLOP; / {ARTICLE_GPU_S} s = "
        f"{v['gpu_tflops']:.1f} TFLOP/s ({v['gpu_share']:.0%} of the 4090's FP32 peak); "
        f"/ {ARTICLE_CPU_S} s = {v['cpu_gflops']:.0f} GFLOP/s ({v['cpu_share']:.0%} of the "
        f"CPU's all-core peak); {ARTICLE_CPU_S} / {ARTICLE_GPU_S} = {v['claimed_ratio']:.0f}x "
        f"exceeds the peak ratio of about {v['fp32']:.0f}x",
        v,
    )


@register
def core_counts_4090_13900k() -> Computed:
    g, c = gpu("RTX 4090"), cpu_13900k()
    v = {
        **_compute_vs_cpu(),
        "cuda_cores": g.cuda_cores,
        "cpu_cores": c.cores,
        "core_ratio": g.cuda_cores / c.cores,
    }
    return Computed(
        g.cuda_cores,
        "cores",
        f"{g.cuda_cores:,} CUDA cores vs {c.cores} CPU cores",
        f"{g.cuda_cores} / {c.cores} = {v['core_ratio']:.0f}, but a CUDA core is one FP32 "
        f"lane: compare peak FLOP/s instead (about {v['fp32']:.0f}x)",
        v,
    )


@register
def fp4_vs_fp16_rtx5090() -> Computed:
    t = gpu("RTX 5090").peak_tflops
    v = {
        "fp4_tflops": t["fp4"],
        "fp16_tflops": t["fp16_fp16acc"],
        "ratio": t["fp4"] / t["fp16_fp16acc"],
        "vs_bf16": t["fp4"] / t["bf16"],
    }
    return Computed(
        v["ratio"],
        "x",
        f"{v['ratio']:.1f}x",
        f"RTX 5090 dense FP4 {t['fp4']:g} / FP16 (FP16 accumulate) {t['fp16_fp16acc']:g} "
        f"TFLOP/s; {v['vs_bf16']:.0f}x a BF16 PyTorch matmul",
        v,
    )


@register
def rtx4090_bandwidth() -> Computed:
    g = gpu("RTX 4090")
    v = {"bw": g.bandwidth_gbs, "bus_bits": g.memory_bus_bits, "rate_gbps": g.memory_data_rate_gbps}
    return Computed(
        g.bandwidth_gbs,
        "GB/s",
        f"{g.bandwidth_gbs:g} GB/s",
        f"{g.memory_bus_bits}-bit / 8 x {g.memory_data_rate_gbps:g} Gbit/s = "
        f"{g.derived_bandwidth_gbs():g} GB/s",
        v,
    )


@register
def ddr5_dual_channel_bandwidth() -> Computed:
    c, g = cpu_13900k(), gpu("RTX 4090")
    v = {
        "lo": DDR5_4800_DUAL_GBS,
        "hi": c.memory_bandwidth_gbs,
        "claimed_gbs": ARTICLE_DDR5_GBS,
        "vs_claimed": g.bandwidth_gbs / ARTICLE_DDR5_GBS,
        "vs_hi": g.bandwidth_gbs / c.memory_bandwidth_gbs,
    }
    return Computed(
        c.memory_bandwidth_gbs,
        "GB/s",
        f"{DDR5_4800_DUAL_GBS:g}–{c.memory_bandwidth_gbs:g} GB/s",
        f"2 channels x 8 bytes x 4800-5600 MT/s; {g.bandwidth_gbs:g} / {ARTICLE_DDR5_GBS} = "
        f"{v['vs_claimed']:.1f}x, {g.bandwidth_gbs:g} / {c.memory_bandwidth_gbs:g} = "
        f"{v['vs_hi']:.1f}x",
        v,
    )


@register
def rtx4090_vs_rtx3060() -> Computed:
    a, b = gpu("RTX 4090"), gpu("RTX 3060 12GB")
    bw, fl = a.bandwidth_gbs / b.bandwidth_gbs, a.peak_tflops["bf16"] / b.peak_tflops["bf16"]
    return Computed(
        bw,
        "x",
        f"{bw:.1f}x (bandwidth) to {fl:.1f}x (BF16 compute)",
        f"bandwidth {a.bandwidth_gbs:g} / {b.bandwidth_gbs:g} GB/s (token generation); BF16 "
        f"peak {a.peak_tflops['bf16']:g} / {b.peak_tflops['bf16']:g} TFLOP/s (large matmuls)",
        {"bw_ratio": bw, "bf16_ratio": fl},
    )


@register
def tensor_vs_fp32_speedup() -> Computed:
    a, h = gpu("RTX 4090"), gpu("H100 SXM")
    ra, rh = (
        a.peak_tflops["bf16"] / a.peak_tflops["fp32"],
        h.peak_tflops["bf16"] / h.peak_tflops["fp32"],
    )
    return Computed(
        ra,
        "x",
        f"{ra:.1f}x (RTX 4090) to {rh:.1f}x (H100 SXM)",
        f"BF16 Tensor Core peak / FP32 peak: {a.peak_tflops['bf16']:g} / "
        f"{a.peak_tflops['fp32']:g}, "
        f"{h.peak_tflops['bf16']:g} / {h.peak_tflops['fp32']:g} TFLOP/s",
        {"geforce": ra, "datacenter": rh},
    )


@register
def hbm_vs_gddr_bandwidth() -> Computed:
    ref = gpu("RTX 4090").bandwidth_gbs
    hbm = {n: gpu(n).bandwidth_gbs for n in ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM", "H200")}
    lo, hi = min(hbm.values()) / ref, max(hbm.values()) / ref
    r5090 = gpu("RTX 5090").bandwidth_gbs
    v = {
        "lo": lo,
        "hi": hi,
        "rtx5090_bw": r5090,
        "a100_40_bw": hbm["A100 40GB SXM"],
        "rtx4090_bw": ref,
    }
    return Computed(
        lo,
        "x",
        f"{lo:.1f}–{hi:.1f}x",
        ", ".join(f"{n} {b:g}" for n, b in hbm.items()) + f" GB/s over the RTX 4090's {ref:g}; "
        f"the RTX 5090 ({r5090:g} GB/s) exceeds the A100 40GB ({hbm['A100 40GB SXM']:g})",
        v,
    )


@register
def hbm_memory_types() -> Computed:
    names = ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM")
    kinds = [gpu(n).memory_type for n in names]
    return Computed(
        len(kinds),
        "cards",
        ", ".join(kinds),
        "; ".join(f"{n}: {k}" for n, k in zip(names, kinds, strict=True)) + " (gpulab.specs)",
    )


@register
def vram_vs_ddr5_ratio() -> Computed:
    c = cpu_13900k().memory_bandwidth_gbs
    low, high = gpu("RTX 4060 Ti 16GB").bandwidth_gbs, gpu("RTX 4090").bandwidth_gbs
    lo, hi = low / c, high / c
    return Computed(
        lo,
        "x",
        f"{lo:.1f}–{hi:.1f}x",
        f"RTX 4060 Ti 16GB {low:g} GB/s to RTX 4090 {high:g} GB/s over dual-channel DDR5-5600 "
        f"({c:g} GB/s)",
        {"lo": lo, "hi": hi},
    )


@register
def nvlink_a100_h100() -> Computed:
    a, h = (gpu(n).interconnect["nvlink_gbs"] for n in ("A100 80GB SXM", "H100 SXM"))
    return Computed(
        h,
        "GB/s",
        f"A100 {a:g} GB/s, H100 {h:g} GB/s",
        "NVLink bandwidth per GPU, gpulab.specs (A100 80GB SXM, H100 SXM)",
        {"a100_nvlink": a, "h100_nvlink": h},
    )


@register
def fa3_claim_vs_h100_peak() -> Computed:
    peak = gpu("H100 SXM").peak_tflops["fp16"]
    claimed = 120  # the article's "在H100上实现120 TFLOPs"
    share = claimed / peak
    return Computed(
        share,
        "fraction",
        f"{share:.0%}",
        f"the claimed {claimed} TFLOP/s over the H100 SXM's dense FP16 peak {peak:g} TFLOP/s",
        {"claimed_share": share, "peak_tflops": peak},
    )
