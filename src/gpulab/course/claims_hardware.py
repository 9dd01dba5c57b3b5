"""Fact-check derivations for chapters 1 and 4-6: compute, bandwidth, drivers, power and prices.

Each function recomputes one claim's correct value with gpulab (the spec tables, the driver
table, ``gpulab.cost``) and registers itself in ``gpulab.derivations``. Its ``Computed.values``
are the named figures that the claim's text templates in ``fact_check.json`` fill in, so no
figure of an explanation is typed by hand; the article's own inputs (0.6 CNY/kWh, 350 W, 2.8
CNY/h) are named constants here, quoted as the article's.
"""

from __future__ import annotations

from gpulab.course.derivations import (
    DDR5_4800_DUAL_GBS,
    LINEAR_BENCH_FLOP,
    PRICES,
    RTX4090_MIN_PSU_W,
    Computed,
    cpu_13900k,
    gpu,
    register,
)
from gpulab.estimate import cost
from gpulab.reference import drivers

__all__: list[str] = []  # nothing to import: the functions register themselves

# The article's own figures that the derivations below take as inputs.
ARTICLE_GPU_S, ARTICLE_CPU_S = 0.012, 0.84  # the nn.Linear benchmark, seconds (claim 20)
ARTICLE_DDR5_GBS = 80  # "DDR5 ... about 80 GB/s" (claim 32)
ARTICLE_POWER_W = 350  # nvidia-smi -pl 350 and the electricity sum (claims 49, 93)
ARTICLE_KWH_CNY, ARTICLE_HOURS_PER_DAY = 0.6, 10  # claim 93
ARTICLE_A100_CNY_H, ARTICLE_4090_CNY_H = 12, 2.8  # AutoDL rental prices (claims 26, 94, 77)
ARTICLE_WEEK_CNY = 60  # "rent an RTX 4090 for a week (about 60 CNY)" (claim 77)
ARTICLE_H100_CNY = 70_000  # "H100 单卡7万" (claim 79)
ARTICLE_USD_PER_TOKEN = {"deepseek_r1": 0.0012, "llama3_70b": 0.0003, "qwen25_72b": 0.0009}


def _cpu_peaks() -> tuple[float, float, float]:
    """The i9-13900K's FP32 peak at base, all-core and (few-core) turbo clocks, in TFLOP/s."""
    c = cpu_13900k()
    return tuple(c.peak_fp32_flops(clock) / 1e12 for clock in ("base", "all-core", "turbo"))


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
        f"BF16 Tensor Core peak / FP32 peak: {a.peak_tflops['bf16']:g} / {a.peak_tflops['fp32']:g}, "
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


# ---- chapters 4-6: versions, power, prices


@register
def cuda_12_6_min_driver() -> Computed:
    compat, linux = drivers.required_drivers("12.6", "linux")
    _, windows = drivers.required_drivers("12.6", "windows")
    return Computed(
        float(linux.split(".")[0]),
        "driver",
        f"{linux} (Linux) / {windows} (Windows)",
        f"NVIDIA's CUDA 12.6 GA driver (gpulab/data/cuda_driver_minimums.json, from the CUDA "
        f"release notes); minor-version compatibility runs CUDA 12.x on >= {compat}",
        {"linux": linux, "windows": windows, "compat": compat},
    )


@register
def rtx5090_memory_and_launch() -> Computed:
    g = gpu("RTX 5090")
    return Computed(
        g.memory_gb,
        "GB",
        f"{g.memory_gb:g} GB, launched {g.launch_date}",
        f"gpulab.specs: {g.memory_gb:g} GB {g.memory_type}, launch {g.launch_date}, "
        f"dense FP4 {g.peak_tflops['fp4']:g} TFLOP/s",
        {"memory_gb": g.memory_gb, "launch": g.launch_date},
    )


@register
def a10_memory() -> Computed:
    g = gpu("A10")
    return Computed(
        g.memory_gb,
        "GB",
        f"{g.memory_gb:g} GB",
        f"gpulab.specs: A10, {g.memory_gb:g} GB {g.memory_type}",
        {"memory_gb": g.memory_gb},
    )


@register
def rtx5070ti_memory() -> Computed:
    g = gpu("RTX 5070 Ti")
    return Computed(
        g.memory_gb,
        "GB",
        f"{g.memory_gb:g} GB",
        f"gpulab.specs: RTX 5070 Ti, {g.memory_gb:g} GB {g.memory_type}",
        {"memory_gb": g.memory_gb, "memory_type": g.memory_type},
    )


@register
def m3_ultra_memory() -> Computed:
    m3, m2 = gpu("Apple M3 Ultra"), gpu("Apple M2 Ultra")
    return Computed(
        m3.memory_gb,
        "GB",
        f"{m3.memory_gb:g} GB",
        f"gpulab.specs: M3 Ultra up to {m3.memory_gb:g} GB at {m3.bandwidth_gbs:g} GB/s; "
        f"M2 Ultra up to {m2.memory_gb:g} GB",
        {"memory_gb": m3.memory_gb, "bw": m3.bandwidth_gbs, "m2_memory_gb": m2.memory_gb},
    )


@register
def power_limit_fraction_4090() -> Computed:
    g = gpu("RTX 4090")
    r = ARTICLE_POWER_W / g.board_power_w
    return Computed(
        r,
        "fraction",
        f"{r:.1%}",
        f"{ARTICLE_POWER_W} W / {g.board_power_w:g} W board power (gpulab.specs)",
        {"share": r, "board_w": g.board_power_w, "limit_w": ARTICLE_POWER_W},
    )


@register
def rtx4090_board_power() -> Computed:
    g = gpu("RTX 4090")
    return Computed(
        g.board_power_w,
        "W",
        f"{g.board_power_w:g} W",
        "RTX 4090 total graphics power (gpulab.specs)",
        {"board_w": g.board_power_w, "psu_w": RTX4090_MIN_PSU_W},
    )


@register
def compute_capability_recommended() -> Computed:
    names = ("RTX 3090", "RTX 4090", "RTX 5090", "A10", "A100 80GB SXM")
    ccs = {n: gpu(n).compute_capability for n in names}
    lo = min(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    hi = max(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    return Computed(float(lo), "cc", f"{lo}–{hi}", ", ".join(f"{n} {c}" for n, c in ccs.items()))


def _seed_box(power_w: float) -> cost.LocalSetup:
    """The article's machine: its electricity price and hours a day, at `power_w` (gpulab.cost)."""
    return cost.LocalSetup(
        hardware_price=0,
        power_load_w=power_w,
        electricity_per_kwh=ARTICLE_KWH_CNY,
        hours_per_day=ARTICLE_HOURS_PER_DAY,
    )


@register
def electricity_cost_4090() -> Computed:
    box = _seed_box(ARTICLE_POWER_W)
    day, year = cost.electricity_per_day(box), cost.electricity_per_year(box)
    board = gpu("RTX 4090").board_power_w
    full = cost.electricity_per_year(_seed_box(board))
    return Computed(
        year,
        "CNY",
        f"{year:.1f} CNY/year",
        f"{ARTICLE_KWH_CNY} CNY/kWh x {ARTICLE_POWER_W / 1e3} kW x {ARTICLE_HOURS_PER_DAY} h = "
        f"{day:.2f} CNY/day; x 365 = {year:.1f}; at the {board:g} W board power {full:.1f} CNY/year "
        "(gpulab.cost)",
        {"day": day, "year": year, "board_w": board, "board_year": full},
    )


def _rent_per_year(price_per_hour: float, hours_per_day: float) -> float:
    """A year of renting at `price_per_hour` for `hours_per_day` hours a day (gpulab.cost)."""
    monthly = cost.cloud_monthly_cost(cost.CloudRate(price_per_hour), hours_per_day)
    return monthly * cost.DAYS_PER_YEAR / cost.DAYS_PER_MONTH


@register
def cloud_cost_year() -> Computed:
    a100 = _rent_per_year(ARTICLE_A100_CNY_H, ARTICLE_HOURS_PER_DAY)
    r4090 = _rent_per_year(ARTICLE_4090_CNY_H, ARTICLE_HOURS_PER_DAY)
    return Computed(
        r4090,
        "CNY",
        f"{r4090:,.0f} CNY/year",
        f"A100 at {ARTICLE_A100_CNY_H} CNY/h x {ARTICLE_HOURS_PER_DAY} h x 365 = {a100:,.0f} CNY; "
        f"the like-for-like rental, the article's own RTX 4090 at {ARTICLE_4090_CNY_H} CNY/h x "
        f"{ARTICLE_HOURS_PER_DAY} h x 365 = {r4090:,.0f} CNY",
        {"a100_year": a100, "rtx4090_year": r4090},
    )


@register
def autodl_week_cost() -> Computed:
    week = _rent_per_year(ARTICLE_4090_CNY_H, 24) * 7 / cost.DAYS_PER_YEAR
    hours = ARTICLE_WEEK_CNY / ARTICLE_4090_CNY_H
    return Computed(
        week,
        "CNY",
        f"{week:.1f} CNY",
        f"{ARTICLE_4090_CNY_H} CNY/h x 24 h x 7 days = {week:.1f} CNY; {ARTICLE_WEEK_CNY} CNY buys "
        f"{hours:.1f} hours",
        {"week": week, "hours_for_claimed": hours},
    )


@register
def h100_price_vs_claim() -> Computed:
    lo, hi = (usd * PRICES.usd_cny for usd in PRICES.h100_usd)
    share_lo, share_hi = ARTICLE_H100_CNY / hi, ARTICLE_H100_CNY / lo
    return Computed(
        share_hi,
        "fraction",
        f"{lo:,.0f}–{hi:,.0f} CNY",
        f"${PRICES.h100_usd[0]:,.0f}-{PRICES.h100_usd[1]:,.0f} per card x {PRICES.usd_cny} CNY/USD; "
        f"the claimed {ARTICLE_H100_CNY:,} CNY is {share_lo:.0%}-{share_hi:.0%} of that",
        {
            "lo_cny": lo,
            "hi_cny": hi,
            "share_lo": share_lo,
            "share_hi": share_hi,
            "usd_cny": PRICES.usd_cny,
        },
    )


def _per_million(usd_per_token: float, published: tuple[float, float]) -> Computed:
    """The article's price per token as USD per 1M tokens, against a published (low, high) range."""
    claimed = usd_per_token * 1e6
    p_lo, p_hi = min(published), max(published)
    lo, hi = claimed / p_hi, claimed / p_lo
    return Computed(
        lo,
        "x",
        f"{claimed:,.0f} USD per million tokens",
        f"{usd_per_token} USD/token x 1,000,000 = {claimed:,.0f} USD per 1M tokens; published "
        f"{p_lo:.2f}-{p_hi:.2f} USD per 1M: {lo:,.0f}-{hi:,.0f} times too high",
        {
            "claimed_per_m": claimed,
            "over_lo": lo,
            "over_hi": hi,
            "published_lo": p_lo,
            "published_hi": p_hi,
        },
    )


@register
def deepseek_r1_price_per_million() -> Computed:
    p = PRICES.deepseek_r1_output_usd_per_m
    return _per_million(ARTICLE_USD_PER_TOKEN["deepseek_r1"], (p, p))


@register
def llama3_70b_price_per_million() -> Computed:
    return _per_million(ARTICLE_USD_PER_TOKEN["llama3_70b"], PRICES.llama3_70b_usd_per_m)


@register
def qwen_72b_price_per_million() -> Computed:
    qwen = PRICES.qwen2_72b_output_cny_per_k * 1e3 / PRICES.usd_cny  # USD per 1M output tokens
    return _per_million(ARTICLE_USD_PER_TOKEN["qwen25_72b"], (PRICES.llama3_70b_usd_per_m[0], qwen))
