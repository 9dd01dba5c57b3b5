"""Fact-check derivations for chapters 4-6: what running and buying a card takes.

Its driver, its memory, its power and its price: each function recomputes one claim's correct
value with gpulab (the spec tables, the driver table, ``gpulab.cost``) and registers itself in
``gpulab.derivations``. Its ``Computed.values`` are the named figures that the claim's text
templates in ``fact_check.json`` fill in, so no figure of an explanation is typed by hand; the
article's own inputs (0.6 CNY/kWh, 350 W, 2.8 CNY/h) are named constants here, quoted as the
article's.
"""

from __future__ import annotations

from gpulab.course.derivations import PRICES, RTX4090_MIN_PSU_W, Computed, gpu, register
from gpulab.estimate import cost
from gpulab.reference import drivers

__all__: list[str] = []  # nothing to import: the functions register themselves

# The article's own figures that the derivations below take as inputs.
ARTICLE_POWER_W = 350  # nvidia-smi -pl 350 and the electricity sum (claims 49, 93)
ARTICLE_KWH_CNY, ARTICLE_HOURS_PER_DAY = 0.6, 10  # claim 93
ARTICLE_A100_CNY_H, ARTICLE_4090_CNY_H = 12, 2.8  # AutoDL rental prices (claims 26, 94, 77)
ARTICLE_WEEK_CNY = 60  # "rent an RTX 4090 for a week (about 60 CNY)" (claim 77)
ARTICLE_H100_CNY = 70_000  # "H100 单卡7万" (claim 79)
ARTICLE_USD_PER_TOKEN = {"deepseek_r1": 0.0012, "llama3_70b": 0.0003, "qwen25_72b": 0.0009}


@register
def cuda_12_6_min_driver() -> Computed:
    compat, linux = drivers.required_drivers("12.6", "linux")
    _, windows = drivers.required_drivers("12.6", "windows")
    return Computed(
        float(linux.split(".")[0]),
        "driver",
        f"{linux} (Linux) / {windows} (Windows)",
        f"NVIDIA's CUDA 12.6 GA driver (the minimum-driver table of the CUDA release notes); "
        f"minor-version compatibility runs CUDA 12.x on >= {compat}",
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
        f"{day:.2f} CNY/day; x 365 = {year:.1f}; at the {board:g} W board power "
        f"{full:.1f} CNY/year (gpulab.cost)",
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
        f"${PRICES.h100_usd[0]:,.0f}-{PRICES.h100_usd[1]:,.0f} per card x "
        f"{PRICES.usd_cny} CNY/USD; "
        f"the claimed {ARTICLE_H100_CNY:,} CNY is {share_lo:.0%}-{share_hi:.0%} of that",
        {
            "lo_cny": lo,
            "hi_cny": hi,
            "share_lo": share_lo,
            "share_hi": share_hi,
            "usd_cny": PRICES.usd_cny,
        },
    )


def _per_million(usd_per_token: float, published: tuple[float, ...]) -> Computed:
    """The article's price per token as USD per 1M tokens, against the published prices' range."""
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
    published = (*PRICES.llama3_70b_usd_per_m, PRICES.llama3_70b_bedrock_output_usd_per_m)
    return _per_million(ARTICLE_USD_PER_TOKEN["llama3_70b"], published)


@register
def qwen_72b_price_per_million() -> Computed:
    qwen = PRICES.qwen2_72b_output_cny_per_k * 1e3 / PRICES.usd_cny  # USD per 1M output tokens
    return _per_million(ARTICLE_USD_PER_TOKEN["qwen25_72b"], (PRICES.llama3_70b_usd_per_m[0], qwen))
