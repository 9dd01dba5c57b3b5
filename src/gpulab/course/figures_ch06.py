"""Chapter 06's figures: every number `book/06_choosing_hardware.md` quotes, computed by gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit.

The workloads are those of the chapter notebook (the articles' four scenarios, the two 3090s
against one 4090, the power supply, the cost example); the articles' own inputs (0.6 CNY/kWh,
350 W, 10 hours a day, the AutoDL prices) are the named constants of
``gpulab.course.claims_buying``, so the page and the fact-check use the same ones.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpulab.core.units import GB
from gpulab.course import claims_buying as article
from gpulab.estimate import basis, choose, collectives, cost, memory, perf, power, serving
from gpulab.estimate.choose import Workload
from gpulab.reference import links, models, specs
from gpulab.reference.modelspec import ModelSpec

__all__ = ["figures"]

# Page-specific inputs gpulab's data does not hold, each with its source.
ARTICLE_BUILD_CNY = 15_000  # seed 000: "总成本约15000元", the tutorial's whole build (claim 66)
ARTICLE_BUY_HOURS_PER_DAY = 2  # seed 000: "频繁使用（每天>2小时）：本地", its rule for buying
ARTICLE_PSU_SMALL_W, ARTICLE_PSU_BIG_W = (
    650,
    1000,
)  # seed 000: black screens on 650 W, stable on 1000 W
I5_13600KF_TURBO_W = 181  # Intel ARK, Core i5-13600KF: Maximum Turbo Power 181 W
EXCURSION_US = 100  # PCIe CEM 5.0 and ATX 3.0 (Table 3-3): the spike and the PSU's 200% last 100 us
PROMPT_TOKENS = 2000  # the prompt of the "a 3B model needs no GPU" check
# The cards the page's fine-tuning table judges: the article's picks, then the larger ones.
FT_CARDS = (
    ("a100_40", "A100 40GB SXM", 1),
    ("a100_80", "A100 80GB SXM", 1),
    ("h100", "H100 SXM", 1),
    ("h200", "H200", 1),
    ("mi300x", "AMD Instinct MI300X", 1),
    ("two_h100", "H100 SXM", 2),
)
WEEK_DAYS, WEEK_HOURS_PER_DAY = 7, 24  # claim 77's week of renting, around the clock
WORKED_PSU_GPU = "RTX 5090"  # the page's power-supply case (the notebook predicts the 4090's)
CPU = "Core i9-13900K"  # the desktop CPU of the comparison: dual-channel DDR5-5600


def _gb(nbytes: float) -> float:
    """Bytes as decimal GB."""
    return nbytes / GB


def _fits(candidate: choose.Candidate) -> str:
    """The fit decision in words, for a sentence."""
    return "fits" if candidate.fits else "does not fit"


def _gpu(name: str) -> specs.GPUSpec:
    """A row of the spec table."""
    return specs.get_gpu(name)


# ---- what the articles say: the cost claims (93, 94, 77)


def _seed_box(power_w: float, hours: float = article.ARTICLE_HOURS_PER_DAY) -> cost.LocalSetup:
    """The tutorial's build at `power_w`, with its electricity price and hours a day."""
    return cost.LocalSetup(ARTICLE_BUILD_CNY, power_w, article.ARTICLE_KWH_CNY, hours)


def _rent_year(price_per_hour: float, hours_per_day: float) -> float:
    """A year of renting at `price_per_hour` for `hours_per_day` hours a day."""
    return cost.cloud_monthly_cost(cost.CloudRate(price_per_hour), hours_per_day) * 12


def _cost_claims() -> dict[str, Any]:
    """Claims 93, 94 and 77 redone with gpulab.cost."""
    box, board = _seed_box(article.ARTICLE_POWER_W), _gpu("RTX 4090").board_power_w
    rate = cost.CloudRate(article.ARTICLE_4090_CNY_H)
    week = cost.cloud_monthly_cost(rate, WEEK_HOURS_PER_DAY) * WEEK_DAYS / cost.DAYS_PER_MONTH
    return {
        "article_power_w": article.ARTICLE_POWER_W,
        "article_power_kw": article.ARTICLE_POWER_W / 1000,
        "article_hours_per_day": article.ARTICLE_HOURS_PER_DAY,
        "article_kwh_cny": article.ARTICLE_KWH_CNY,
        "days_per_month": cost.DAYS_PER_MONTH,
        "electricity_day_cny": cost.electricity_per_day(box),
        "electricity_year_cny": cost.electricity_per_year(box),
        "rtx4090_board_w": board,
        "electricity_year_board_power_cny": cost.electricity_per_year(_seed_box(board)),
        "article_a100_cny_h": article.ARTICLE_A100_CNY_H,
        "article_4090_cny_h": article.ARTICLE_4090_CNY_H,
        "a100_year_cny": _rent_year(article.ARTICLE_A100_CNY_H, article.ARTICLE_HOURS_PER_DAY),
        "rent4090_year_cny": _rent_year(article.ARTICLE_4090_CNY_H, article.ARTICLE_HOURS_PER_DAY),
        "week_hours_per_day": WEEK_HOURS_PER_DAY,
        "week_days": WEEK_DAYS,
        "rent4090_week_cny": week,
        "article_week_cny": article.ARTICLE_WEEK_CNY,
        "article_week_hours_h": article.ARTICLE_WEEK_CNY / article.ARTICLE_4090_CNY_H,
    }


# ---- a workload, not a card: what one card offers a model


def _capacity() -> dict[str, Any]:
    """An RTX 3090's memory as marketed, as its driver reports it, and what tensors may use."""
    g = _gpu("RTX 3090")
    return {
        "rtx3090_driver_gb": _gb(g.memory_bytes),
        "cuda_context_gib": specs.CUDA_CONTEXT_BYTES / 2**30,
        "allocator_slack": specs.ALLOCATOR_SLACK,
        "rtx3090_usable_gb": _gb(g.model_memory_bytes),
    }


# ---- the four scenarios


def _scenarios() -> dict[str, Any]:
    """Personal study, a small company, fine-tuning: the figures of recommend and evaluate."""
    personal = Workload("Qwen2.5-7B", "q4_k_m", 8192)
    one_card = [n for n in specs.load_gpus() if choose.evaluate(personal, n).fits]
    p3060, p4060 = (choose.evaluate(personal, n) for n in ("RTX 3060 12GB", "RTX 4060 Ti 16GB"))
    c5 = Workload("Qwen2.5-7B", "int8", 8192, concurrent_users=5, prefill_batch=1)
    c30 = Workload("Qwen2.5-7B", "int8", 8192, concurrent_users=30, prefill_batch=1)
    first5 = choose.recommend(c5)[0]
    on5090 = choose.evaluate(c30, "RTX 5090")
    b30 = on5090.breakdown
    return {
        "q4km_bits": memory.bits_per_weight("q4_k_m"),
        "qwen7_kv_heads": personal.spec.n_kv_heads,
        "llama8_kv_heads": models.get("Llama-3-8B").n_kv_heads,
        "personal_needed_gb": _gb(p3060.memory_needed_bytes),
        "personal_one_card_fits_count": len(one_card),
        "gpu_table_count": len(specs.load_gpus()),
        "rtx3060_gbs": _gpu("RTX 3060 12GB").bandwidth_gbs,
        "rtx4060ti_gbs": _gpu("RTX 4060 Ti 16GB").bandwidth_gbs,
        "rtx3060_price_usd": _gpu("RTX 3060 12GB").launch_price_usd,
        "rtx4060ti_price_usd": _gpu("RTX 4060 Ti 16GB").launch_price_usd,
        "personal_rtx3060_tok_s": p3060.decode_tokens_per_s_per_user,
        "personal_rtx4060ti_tok_s": p4060.decode_tokens_per_s_per_user,
        "company_weights_gb": _gb(b30.weights),
        "company5_kv_gb": _gb(first5.breakdown.kv_cache),
        "company30_kv_gb": _gb(b30.kv_cache),
        "company5_needed_gb": _gb(first5.memory_needed_bytes),
        "company5_first_gpu": first5.gpu,
        "company5_first_gpu_memory_gb": _gpu(first5.gpu).memory_gb,
        "company30_needed_gb": _gb(on5090.memory_needed_bytes),
        "rtx5090_memory_gb": _gpu("RTX 5090").memory_gb,
        "a10_memory_gb": _gpu("A10").memory_gb,
        "company30_rtx5090_fits": _fits(on5090),
        "company30_a10_fits": _fits(choose.evaluate(c30, "A10")),
        "company30_rtx5090_tok_s": on5090.decode_tokens_per_s_per_user,
    } | _fine_tuning()


def _fine_tuning() -> dict[str, Any]:
    """Full fine-tuning of Llama-3-8B and -70B, bf16 mixed precision with AdamW."""
    ft8 = Workload("Llama-3-8B", "bf16", 2048, 4, task="fine-tuning", activation_checkpointing=True)
    ft70 = Workload(
        "Llama-3-70B", "bf16", 2048, 4, task="fine-tuning", activation_checkpointing=True
    )
    one = choose.evaluate(ft8, "H200")
    picks = [name for _, name, _ in FT_CARDS[:3]]  # seed 003's fine-tuning cards
    eight = choose.evaluate(ft70, "H100 SXM", 8)
    out = {
        "peak_usable_gb": _gb(one.memory_needed_bytes),
        "ft8_article_picks_count": len(picks),
        "ft8_article_picks_fitting_count": sum(choose.evaluate(ft8, g).fits for g in picks),
        "ft70_peak_gb": _gb(eight.memory_needed_bytes),
        "ft70_8x_h100_gb": _gb(eight.memory_available_bytes),
        "ft70_8x_h100_fits": _fits(eight),
        "ft70_scale": "a cluster of several machines" if not eight.fits else "one eight-GPU server",
    }
    for key, name, count in FT_CARDS:  # the rows of the page's fine-tuning table
        c = choose.evaluate(ft8, name, count)
        out[f"{key}_usable_gb"] = _gb(c.memory_available_bytes)
        out[f"ft8_{key}_fits"] = _fits(c)
    return out


# ---- misconceptions, checked


@lru_cache(maxsize=1)
def _s70() -> ModelSpec:
    """Llama-3-70B's architecture."""
    return models.get("Llama-3-70B")


def _offload_4090(fmt: str, ctx: int) -> tuple[int, float]:
    """Layers of Llama-3-70B that fit one RTX 4090, and the decode bound with the rest in RAM."""
    ngl = basis.layers_that_fit("Llama-3-70B", fmt, "RTX 4090", ctx)
    return ngl, basis.offload_tok_s("Llama-3-70B", fmt, "RTX 4090", ctx, CPU)


def _misconceptions() -> dict[str, Any]:
    """The five misconceptions of seed 003, each with the number that settles it."""
    s70, s3 = _s70(), models.get("Llama-3.2-3B")
    g4090, g4060, cpu = _gpu("RTX 4090"), _gpu("RTX 4060 Ti 16GB"), specs.get_cpu(CPU)
    two = choose.evaluate(Workload("Llama-3-70B", "int4", 2048), "RTX 4090", 2)
    pcie = links.gpu_link("RTX 4090", "pcie")

    def decode(device: str) -> float:
        return basis.bound_tok_s("Llama-3.2-3B", "q4_k_m", device, context=4096)

    cpu_tps, gpu_tps, big_tps = (decode(d) for d in (CPU, "RTX 4060 Ti 16GB", "RTX 4090"))
    flops = perf.forward_flops(s3, PROMPT_TOKENS, PROMPT_TOKENS)
    prompt_cpu = flops / (basis.cpu_peak_tflops(CPU) * 1e12)  # the realistic all-core peak
    prompt_gpu = flops / g4060.peak_flops("bf16")
    team = choose.evaluate(Workload("Qwen2.5-7B", "int4", 4096, 10, prefill_batch=1), "RTX 4090")
    ngl, offloaded = _offload_4090("q4_k_m", 4096)
    bws = [g4090.bandwidth_gbs] * 2
    return {
        "llama70_int4_2k_need_gb": _gb(two.memory_needed_bytes),
        "two_4090_available_gb": _gb(two.memory_available_bytes),
        "llama70_int4_2k_two_4090_fits": _fits(two),
        "llama70_int4_2k_two_4090_layer_tok_s": serving.layer_split_tokens_per_s(
            s70, bws, "int4", seq_len=2048
        ),
        "llama70_int4_2k_two_4090_tensor_tok_s": serving.tensor_parallel_tokens_per_s(
            s70, g4090.bandwidth_gbs, 2, pcie.bytes_per_s, "int4", seq_len=2048
        ),
        "ddr5_5600_gbs": cpu.memory_bandwidth_gbs,
        "llama3b_cpu_tok_s": cpu_tps,
        "llama3b_rtx4060ti_tok_s": gpu_tps,
        "llama3b_rtx4090_tok_s": big_tps,
        "llama3b_rtx4060ti_vs_cpu_x": gpu_tps / cpu_tps,
        "llama3b_rtx4090_vs_cpu_x": big_tps / cpu_tps,
        "cpu_check_prompt_tokens": PROMPT_TOKENS,
        "llama3b_prompt_cpu_s": prompt_cpu,
        "llama3b_prompt_rtx4060ti_ms": prompt_gpu * 1000,
        "llama3b_prompt_rtx4060ti_vs_cpu_x": prompt_cpu / prompt_gpu,
        "team_needed_gb": _gb(team.memory_needed_bytes),
        "team_fits": _fits(team),
        "team_tok_s_per_user": team.decode_tokens_per_s_per_user,
        "llama70_q4km_4090_layers": ngl,
        "llama70_layers": s70.n_layers,
        "llama70_q4km_offload_tok_s": offloaded,
        "llama70_q4km_two_4090_tok_s": serving.layer_split_tokens_per_s(
            s70, bws, "q4_k_m", "fp16", seq_len=4096
        ),
    }


# ---- the buying advice: two 3090s or one 4090, NVLink or PCIe, consumer or datacenter


def _rtx3090() -> dict[str, Any]:
    """The RTX 3090's marketed memory (two of them against one RTX 4090 is chapter 7's case)."""
    return {"rtx3090_memory_gb": _gpu("RTX 3090").memory_gb}


def _links() -> dict[str, Any]:
    """The 3090 pair's NVLink bridge against PCIe: tensor-parallel decode, a gradient all-reduce."""
    s8 = models.get("Llama-3-8B")
    grads = s8.n_params * 2  # bf16 gradients, all-reduced every step by data parallelism
    out = {}
    for kind in ("nvlink", "pcie"):
        link = links.gpu_link("RTX 3090", kind)
        # the card's PCIe link is PCIe 4.0 x16, whose figure has that name in every chapter
        out["rtx3090_nvlink_gbs" if kind == "nvlink" else "pcie4_x16_gbs"] = link.bytes_per_s / GB
        out[f"llama70_tp2_{kind}_tok_s"] = serving.tensor_parallel_tokens_per_s(
            _s70(), _gpu("RTX 3090").bandwidth_gbs, 2, link.bytes_per_s, "int4", seq_len=2048
        )
        out[f"llama8_allreduce_{kind}_s"] = collectives.allreduce_seconds(
            grads, 2, link.bytes_per_s
        )
    out["llama70_tp_message_kib"] = _s70().hidden_size * 2 / 2**10  # (1, hidden) in bf16
    out["tp2_nvlink_gain_pct"] = 100 * (
        out["llama70_tp2_nvlink_tok_s"] / out["llama70_tp2_pcie_tok_s"] - 1
    )
    return out


def _datacenter() -> dict[str, Any]:
    """HBM cards' bandwidth against the RTX 4090's and the RTX 5090's."""
    g4090, g5090 = _gpu("RTX 4090"), _gpu("RTX 5090")
    out = {
        "rtx5090_gbs": g5090.bandwidth_gbs,
        "a100_80gb_memory_gb": _gpu("A100 80GB SXM").memory_gb,
        "h200_memory_gb": _gpu("H200").memory_gb,
    }
    for name, key in (("A100 80GB SXM", "a100"), ("H100 SXM", "h100"), ("H200", "h200")):
        out[f"{key}_vs_4090_bandwidth_x"] = _gpu(name).bandwidth_gbs / g4090.bandwidth_gbs
    out["h100_vs_5090_bandwidth_x"] = _gpu("H100 SXM").bandwidth_gbs / g5090.bandwidth_gbs
    return out


# ---- the power supply


def _power() -> dict[str, Any]:
    """The tutorial's RTX 4090 build against its 650 W and 1000 W supplies (gpulab.power)."""
    build = power.build_for_gpu("RTX 4090", cpu_power_w=I5_13600KF_TURBO_W)
    small = power.check_psu(build, ARTICLE_PSU_SMALL_W)
    short = [
        what for what, ok in (("sustained", small.sustained_ok), ("peak", small.peak_ok)) if not ok
    ]
    sizing = power.size_psu(build)
    # the largest common rating that ATX 3.0 holds to the smaller excursion (150%)
    small_limit = max(
        w
        for w in power.COMMON_PSU_W
        if power.psu_excursion_factor(w) == power.ATX3_SMALL_PSU_EXCURSION
    )
    return {
        "rest_of_system_w": build.rest_w,
        "psu_sustained_w": build.sustained_w,
        "gpu_excursion_x": power.PCIE_CEM5_GPU_EXCURSION,
        "psu_excursion_x": power.ATX3_PSU_EXCURSION,
        "excursion_us": EXCURSION_US,
        "atx3_small_psu_limit_w": small_limit,
        "psu_recommended_w": sizing.recommended_w,
        "article_psu_small_w": ARTICLE_PSU_SMALL_W,
        "article_psu_big_w": ARTICLE_PSU_BIG_W,
        "article_psu_small_short": {
            2: "on both counts",
            1: f"on the {''.join(short)} load",
            0: "on neither count",
        }[len(short)],
        "article_psu_big_ok": "carries both"
        if power.check_psu(build, ARTICLE_PSU_BIG_W).ok
        else "does not carry both",
    }


def _power_worked() -> dict[str, Any]:
    """The page's worked case, another build than the notebook's: one RTX 5090 with the default
    desktop CPU of gpulab.power (the notebook asks for the tutorial's RTX 4090 build)."""
    build = power.build_for_gpu(WORKED_PSU_GPU)
    sizing = power.size_psu(build)
    return {
        "rtx5090_board_w": build.gpu_power_w,
        "default_cpu_power_w": build.cpu_power_w,
        "psu5090_sustained_w": build.sustained_w,
        "psu5090_peak_w": build.peak_w,
        "psu5090_min_for_peak_w": sizing.min_for_peak_w,
        "psu5090_recommended_w": sizing.recommended_w,
    }


# ---- what it costs


def _break_even() -> dict[str, Any]:
    """The tutorial's build against renting an A100 or the same RTX 4090."""
    box = _seed_box(article.ARTICLE_POWER_W)
    a100, r4090 = (
        cost.CloudRate(article.ARTICLE_A100_CNY_H),
        cost.CloudRate(article.ARTICLE_4090_CNY_H),
    )
    at_rule = cost.break_even_months(
        _seed_box(article.ARTICLE_POWER_W, ARTICLE_BUY_HOURS_PER_DAY), r4090
    )
    # The course's own reading of the same figures: the saving per month (rent less electricity)
    # grows in proportion to the hours a day, so the months to break even fall as 1 / hours, and
    # the hours that pay the build off within its years of use are the one-hour-a-day months
    # over the months of those years.
    one_hour = cost.break_even_months(_seed_box(article.ARTICLE_POWER_W, 1), r4090)
    return {
        "article_build_cny": ARTICLE_BUILD_CNY,
        "break_even_a100_months": cost.break_even_months(box, a100),
        "article_buy_hours_per_day": ARTICLE_BUY_HOURS_PER_DAY,
        "break_even_rule_years": at_rule / 12,
        "years_of_use": box.years,
        "buy_pays_off_hours_per_day": one_hour / (12 * box.years),
    }


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    return (
        _cost_claims()
        | _capacity()
        | _scenarios()
        | _misconceptions()
        | _rtx3090()
        | _links()
        | _datacenter()
        | _power()
        | _power_worked()
        | _break_even()
    )
