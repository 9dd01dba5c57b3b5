"""Fact-check derivations for chapters 1 and 4-6: compute, bandwidth, drivers, power and prices.

Each function recomputes one claim's correct value with gpulab (the spec tables, the driver
table, ``gpulab.cost``) and registers itself in ``gpulab.derivations``.
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
from gpulab.estimate import cost
from gpulab.reference import drivers

__all__: list[str] = []  # nothing to import: the functions register themselves


# ---- chapter 1: compute, bandwidth, Tensor Cores

@register("speedup_4090_vs_13900k_fp32")
def _speedup_fp32() -> Computed:
    g, c = gpu("RTX 4090"), cpu_13900k()
    lo, hi = g.peak_tflops["fp32"] * 1e12 / c.peak_fp32_flops("turbo"), \
        g.peak_tflops["fp32"] * 1e12 / c.peak_fp32_flops("base")
    bw = g.bandwidth_gbs / c.memory_bandwidth_gbs
    return Computed(lo, "x", f"{lo:.0f}–{hi:.0f}x",
                    f"FP32 peaks: RTX 4090 {g.peak_tflops['fp32']} TFLOP/s / i9-13900K "
                    f"{c.peak_fp32_flops('turbo') / 1e12:.2f} (all-core max turbo) to "
                    f"{c.peak_fp32_flops('base') / 1e12:.2f} TFLOP/s (base clocks); memory-bound work "
                    f"gets the bandwidth ratio {g.bandwidth_gbs:g} / {c.memory_bandwidth_gbs:g} = {bw:.1f}x "
                    "(gpulab.specs)")


@register("speedup_4090_bf16_vs_13900k_fp32")
def _speedup_bf16() -> Computed:
    g, c = gpu("RTX 4090"), cpu_13900k()
    lo, hi = g.peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("turbo"), \
        g.peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("base")
    h = gpu("H100 SXM").peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("base")
    return Computed(lo, "x", f"{lo:.0f}–{hi:.0f}x",
                    f"BF16 Tensor Core peak {g.peak_tflops['bf16']} TFLOP/s over the i9-13900K's FP32 "
                    f"peak (1.33-2.59 TFLOP/s); an H100 SXM reaches {h:.0f}x the base-clock CPU peak")


@register("linear_benchmark_implied_rate")
def _linear_bench() -> Computed:
    g, c = gpu("RTX 4090"), cpu_13900k()
    gpu_rate = LINEAR_BENCH_FLOP / 0.012
    cpu_rate = LINEAR_BENCH_FLOP / 0.84
    return Computed(gpu_rate / 1e12, "TFLOP/s", f"{gpu_rate / 1e12:.1f} TFLOP/s",
                    f"2 x 10000 x 4096 x 4096 = {LINEAR_BENCH_FLOP / 1e9:.1f} GFLOP; / 0.012 s = "
                    f"{gpu_rate / 1e12:.1f} TFLOP/s ({gpu_rate / (g.peak_tflops['fp32'] * 1e12):.0%} of "
                    f"the 4090's FP32 peak); / 0.84 s = {cpu_rate / 1e9:.0f} GFLOP/s "
                    f"({cpu_rate / c.peak_fp32_flops('base'):.0%} of the CPU's base-clock peak); "
                    f"0.84 / 0.012 = {0.84 / 0.012:.0f}x exceeds the peak ratio of 32-62x")


@register("core_counts_4090_13900k")
def _cores() -> Computed:
    g, c = gpu("RTX 4090"), cpu_13900k()
    return Computed(g.cuda_cores, "cores", f"{g.cuda_cores:,} CUDA cores vs {c.cores} CPU cores",
                    f"{g.cuda_cores} / {c.cores} = {g.cuda_cores / c.cores:.0f}, but a CUDA core is one "
                    "FP32 lane: compare peak FLOP/s instead (32-62x)")


@register("fp4_vs_fp16_rtx5090")
def _fp4() -> Computed:
    g = gpu("RTX 5090")
    r = g.peak_tflops["fp4"] / g.peak_tflops["fp16_fp16acc"]
    return Computed(r, "x", f"{r:.1f}x",
                    f"RTX 5090 dense FP4 {g.peak_tflops['fp4']} / FP16 (FP16 accumulate) "
                    f"{g.peak_tflops['fp16_fp16acc']} TFLOP/s; "
                    f"{g.peak_tflops['fp4'] / g.peak_tflops['bf16']:.0f}x a BF16 PyTorch matmul")


@register("rtx4090_bandwidth")
def _bw4090() -> Computed:
    g = gpu("RTX 4090")
    return Computed(g.bandwidth_gbs, "GB/s", f"{g.bandwidth_gbs:g} GB/s",
                    f"{g.memory_bus_bits}-bit / 8 x {g.memory_data_rate_gbps:g} Gbit/s = "
                    f"{g.derived_bandwidth_gbs():g} GB/s")


@register("ddr5_dual_channel_bandwidth")
def _ddr5() -> Computed:
    c, g = cpu_13900k(), gpu("RTX 4090")
    return Computed(c.memory_bandwidth_gbs, "GB/s", f"{DDR5_4800_DUAL_GBS:g}–{c.memory_bandwidth_gbs:g} GB/s",
                    f"2 channels x 8 bytes x 4800-5600 MT/s; {g.bandwidth_gbs:g} / 80 = "
                    f"{g.bandwidth_gbs / 80:.1f}x, {g.bandwidth_gbs:g} / {c.memory_bandwidth_gbs:g} = "
                    f"{g.bandwidth_gbs / c.memory_bandwidth_gbs:.1f}x")


@register("rtx4090_vs_rtx3060")
def _vs3060() -> Computed:
    a, b = gpu("RTX 4090"), gpu("RTX 3060 12GB")
    bw, fl = a.bandwidth_gbs / b.bandwidth_gbs, a.peak_tflops["bf16"] / b.peak_tflops["bf16"]
    return Computed(bw, "x", f"{bw:.1f}x (bandwidth) to {fl:.1f}x (BF16 compute)",
                    f"bandwidth {a.bandwidth_gbs:g} / {b.bandwidth_gbs:g} GB/s (token generation); BF16 "
                    f"peak {a.peak_tflops['bf16']} / {b.peak_tflops['bf16']} TFLOP/s (large matmuls)")


@register("tensor_vs_fp32_speedup")
def _tc() -> Computed:
    a, h = gpu("RTX 4090"), gpu("H100 SXM")
    ra, rh = a.peak_tflops["bf16"] / a.peak_tflops["fp32"], h.peak_tflops["bf16"] / h.peak_tflops["fp32"]
    return Computed(ra, "x", f"{ra:.1f}x (RTX 4090) to {rh:.1f}x (H100 SXM)",
                    f"BF16 Tensor Core peak / FP32 peak: {a.peak_tflops['bf16']} / {a.peak_tflops['fp32']}, "
                    f"{h.peak_tflops['bf16']} / {h.peak_tflops['fp32']} TFLOP/s")


@register("hbm_vs_gddr_bandwidth")
def _hbm() -> Computed:
    ref = gpu("RTX 4090").bandwidth_gbs
    hbm = {n: gpu(n).bandwidth_gbs for n in ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM", "H200")}
    lo, hi = min(hbm.values()) / ref, max(hbm.values()) / ref
    r5090 = gpu("RTX 5090").bandwidth_gbs
    return Computed(lo, "x", f"{lo:.1f}–{hi:.1f}x",
                    ", ".join(f"{n} {v:g}" for n, v in hbm.items()) + f" GB/s over the RTX 4090's {ref:g}; "
                    f"the RTX 5090 ({r5090:g} GB/s) exceeds the A100 40GB ({hbm['A100 40GB SXM']:g})")


@register("hbm_memory_types")
def _hbm_types() -> Computed:
    names = ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM")
    kinds = [gpu(n).memory_type for n in names]
    return Computed(len(kinds), "cards", ", ".join(kinds),
                    "; ".join(f"{n}: {k}" for n, k in zip(names, kinds, strict=True)) + " (gpulab.specs)")


@register("vram_vs_ddr5_ratio")
def _vram_ratio() -> Computed:
    c = cpu_13900k().memory_bandwidth_gbs
    lo, hi = gpu("RTX 4060 Ti 16GB").bandwidth_gbs / c, gpu("RTX 4090").bandwidth_gbs / c
    return Computed(lo, "x", f"{lo:.1f}–{hi:.1f}x",
                    f"RTX 4060 Ti 16GB 288 GB/s to RTX 4090 1008 GB/s over dual-channel DDR5-5600 ({c:g} GB/s)")


# ---- chapters 4-6: versions, power, prices

@register("cuda_12_6_min_driver")
def _driver() -> Computed:
    _, linux = drivers.required_drivers("12.6", "linux")
    _, windows = drivers.required_drivers("12.6", "windows")
    compat, _ = drivers.required_drivers("12.6", "linux")
    return Computed(float(linux.split(".")[0]), "driver", f"{linux} (Linux) / {windows} (Windows)",
                    f"NVIDIA's CUDA 12.6 GA driver (gpulab/data/cuda_driver_minimums.json, from the CUDA "
                    f"release notes); minor-version compatibility runs CUDA 12.x on >= {compat}")


@register("rtx5090_memory_and_launch")
def _r5090() -> Computed:
    g = gpu("RTX 5090")
    return Computed(g.memory_gb, "GB", f"{g.memory_gb:g} GB, launched {g.launch_date}",
                    f"gpulab.specs: {g.memory_gb:g} GB {g.memory_type}, launch {g.launch_date}, "
                    f"dense FP4 {g.peak_tflops['fp4']} TFLOP/s")


@register("a10_memory")
def _a10() -> Computed:
    g = gpu("A10")
    return Computed(g.memory_gb, "GB", f"{g.memory_gb:g} GB", f"gpulab.specs: A10, {g.memory_gb:g} GB {g.memory_type}")


@register("power_limit_fraction_4090")
def _pl() -> Computed:
    g = gpu("RTX 4090")
    r = 350 / g.board_power_w
    return Computed(r, "fraction", f"{r:.1%}", f"350 W / {g.board_power_w:g} W board power (gpulab.specs)")


@register("rtx4090_board_power")
def _pw() -> Computed:
    g = gpu("RTX 4090")
    return Computed(g.board_power_w, "W", f"{g.board_power_w:g} W", "RTX 4090 total graphics power (gpulab.specs)")


@register("compute_capability_recommended")
def _cc() -> Computed:
    names = ("RTX 3090", "RTX 4090", "RTX 5090", "A10", "A100 80GB SXM")
    ccs = {n: gpu(n).compute_capability for n in names}
    lo = min(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    hi = max(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    return Computed(float(lo), "cc", f"{lo}–{hi}", ", ".join(f"{n} {c}" for n, c in ccs.items()))


def _seed_box(power_w: float) -> cost.LocalSetup:
    """The article's machine: 0.6 CNY/kWh, 10 hours a day at `power_w` (gpulab.cost)."""
    return cost.LocalSetup(hardware_price=0, power_load_w=power_w, electricity_per_kwh=0.6,
                           hours_per_day=10)


@register("electricity_cost_4090")
def _power_cost() -> Computed:
    box = _seed_box(350)
    day, year = cost.electricity_per_day(box), cost.electricity_per_year(box)
    full = cost.electricity_per_year(_seed_box(gpu("RTX 4090").board_power_w))
    return Computed(year, "CNY", f"{year:.1f} CNY/year",
                    f"0.6 CNY/kWh x 0.35 kW x 10 h = {day:.2f} CNY/day; x 365 = {year:.1f}; at the 450 W "
                    f"board power {full:.1f} CNY/year (gpulab.cost)")


def _rent_per_year(price_per_hour: float, hours_per_day: float) -> float:
    """A year of renting at `price_per_hour` for `hours_per_day` hours a day (gpulab.cost)."""
    monthly = cost.cloud_monthly_cost(cost.CloudRate(price_per_hour), hours_per_day)
    return monthly * cost.DAYS_PER_YEAR / cost.DAYS_PER_MONTH


@register("cloud_cost_year")
def _cloud() -> Computed:
    a100, r4090 = _rent_per_year(12, 10), _rent_per_year(2.8, 10)
    return Computed(r4090, "CNY", f"{r4090:,.0f} CNY/year",
                    f"A100 at 12 CNY/h x 10 h x 365 = {a100:,.0f} CNY; the like-for-like rental, the article's "
                    f"own RTX 4090 at 2.8 CNY/h x 10 h x 365 = {r4090:,.0f} CNY")


@register("autodl_week_cost")
def _week() -> Computed:
    week = _rent_per_year(2.8, 24) * 7 / cost.DAYS_PER_YEAR
    return Computed(week, "CNY", f"{week:.1f} CNY",
                    f"2.8 CNY/h x 24 h x 7 days = {week:.1f} CNY; 60 CNY buys {60 / 2.8:.1f} hours")
