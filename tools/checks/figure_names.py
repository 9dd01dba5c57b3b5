"""One name per quantity: how a figure is named, and the check that no quantity has two names.

A figure's name says the quantity and its case, in this order: the model, its format, the card,
the context when it is not the default 4K, then what the value is and its unit:
``llama7_fp16_rtx4090_bound_tok_s`` is Llama-2-7B's decode bound in FP16 on an RTX 4090, in
tokens/s. Each model and card has one spelling (``SPELLINGS`` lists the others, which a name may
not use), so that two chapters computing one quantity write one name, and
``gpulab.course.figures.all_figures`` fails when they disagree on its value. That is how the
chapter 3 and chapter 4 versions of that bound, 76.28 and 74.80, met: under the spellings of
92e49f3 they were ``llama2_fp16_rtx4090_bound_tok_s`` and ``rtx4090_llama2_7b_fp16_bound_tok_s``.

Two names that give one value are one quantity named twice, unless they only coincide: two
precisions at one rate on one chip, a power of two, the extreme of a set. ``COINCIDENCES`` lists
those pairs, each with why; tests/unit/test_figure_names.py fails on any other.

    python tools/checks/figure_names.py  # the names that break the spelling, and the shared values
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A spelling a name may not use -> the one it uses instead.
SPELLINGS = {
    "llama2_7b": "llama7",
    "llama2": "llama7",
    "llama3_8b": "llama8",
    "llama3_70b": "llama70",
    "deepseek_r1": "r1",
    "m3_ultra": "m3ultra",
    "bandwidth_gbs": "gbs",
    "bw_gbs": "gbs",
    "nvlink_per_direction": "nvlink",
}
# Each model's and card's one spelling -> the name of its row in the catalogue or spec table.
MODELS = {
    "llama7": "Llama-2-7B",
    "llama8": "Llama-3-8B",
    "llama70": "Llama-3-70B",
    "r1": "DeepSeek-R1",
    "qwen72": "Qwen2.5-72B",
    "phi3": "Phi-3-mini",
}
CARDS = {
    "rtx4090": "RTX 4090",
    "rtx3090": "RTX 3090",
    "rtx3060": "RTX 3060 12GB",
    "rtx4060ti": "RTX 4060 Ti 16GB",
    "rtx5090": "RTX 5090",
    "rx7900xtx": "AMD Radeon RX 7900 XTX",
    "m3ultra": "Apple M3 Ultra",
    "m3max": "Apple M3 Max",
    "gtx1650": "GTX 1650 GDDR5",
    "h100": "H100 SXM",
    "h200": "H200",
    "ddr5": "Core i9-13900K",  # the course's desktop: its dual-channel DDR5-5600
}
_SPELLING = re.compile(
    r"(?:^|_)(" + "|".join(sorted(SPELLINGS, key=len, reverse=True)) + r")(?=_|$)"
)
_CARD_FIRST = re.compile(rf"^({'|'.join(CARDS)})_({'|'.join(MODELS)})_(.+)$")


def canonical(name: str) -> str:
    """`name` in the course's spelling: one token per model and card, the model before the card
    ("rtx4090_llama2_7b_fp16_bound_tok_s" -> "llama7_fp16_rtx4090_bound_tok_s")."""
    name = _SPELLING.sub(lambda m: m.group(0).replace(m.group(1), SPELLINGS[m.group(1)]), name)
    card_first = _CARD_FIRST.match(name)
    if card_first:
        card, model, rest = card_first.groups()
        fmt, _, quantity = rest.partition("_")
        name = f"{model}_{fmt}_{card}_{quantity}"
    return name


# Pairs of names whose values coincide though the quantities differ, with why.
COINCIDENCES = {
    frozenset(pair): why
    for *pair, why in [
        ("rtx3090_over_marketed", "a100_80_over_marketed", "both report 24 GiB per 24 GB sold"),
        ("llama7_q4km_rtx4090_claim_share", "article_share_of_q4km_bound_max", "the largest"),
        ("llama7_fp16_m3ultra_claim_share", "article_share_of_fp16_bound_min", "the smallest"),
        ("llama7_fp16_rtx4090_claim_share", "article_share_of_fp16_bound_max", "the largest"),
        ("gib_in_gb", "attn_ctx0_gflop", "2^30 / 10^9"),
        ("scores_128k_tb", "timing_tflop", "2^40 / 10^12"),
        ("act_ckpt_batch_gb", "attn_ctx1_gflop", "2^32 / 10^9"),
        ("act_ckpt_batch_gb", "gtx1650_memory_gb", "2^32 / 10^9"),
        ("act_ckpt_batch_gb", "scores_8k_gb", "2^32 / 10^9"),
        ("attn_ctx1_gflop", "gtx1650_memory_gb", "2^32 / 10^9"),
        ("attn_ctx1_gflop", "scores_8k_gb", "2^32 / 10^9"),
        ("gtx1650_memory_gb", "scores_8k_gb", "2^32 / 10^9"),
        ("linear_w_mb", "pp_boundary_mb", "2^26 bytes each"),
        ("linear_x_mb", "linear_y_mb", "two activations of one shape"),
        ("a100_80_driver_gb", "llama70_kv_users_gb", "2^33 / 10^8"),
        (
            "rtx4060ti_vs_ddr5_ratio",
            "llama3b_rtx4060ti_vs_cpu_x",
            "a bandwidth bound's speed ratio",
        ),
        (
            "llama70_q4km_rtx4090_4k_bound_tok_s",
            "llama70_q4km_two_4090_tok_s",
            "equal cards split by layers have one card's bound",
        ),
        ("timing_least_ms", "timing_bad_vs_peak_x", "the bad timing reads 1 ms"),
        ("llama7_fp16_gb", "llama7_grad_gb", "FP16 gradients, one per weight"),
        ("h100_fit_2048", "batch_full2048", "the batch table's full-card row"),
        ("claim75_ratio", "rtx3090_nvlink_gbs", "56.25 twice"),
        ("rtx3060_tensor_cores", "tier7_mixed_adamw_gb", "112 twice"),
        ("bert_chunk_gflop", "embed_1000000_pflop", "a million chunks: GFLOP to PFLOP"),
        ("a100_40_count_gb", "tp_allreduces_per_token", "160 twice"),
        ("scores_term_8192", "tp_allreduces_per_step", "320 twice"),
        ("cpu_base_p_gflops", "bert_hidden", "768 twice"),
        ("rtx3060_bus_bits", "gtx1650_gddr6_gbs", "192 twice"),
        ("power_cap_w", "article_power_w", "the cap the page tries is the article's draw"),
        ("rtx4090_board_w", "atx3_small_psu_limit_w", "450 W twice"),
        ("rtx4090_board_w", "h100_nvlink_gbs", "450 twice"),
        ("atx3_small_psu_limit_w", "h100_nvlink_gbs", "450 twice"),
        ("default_cpu_power_w", "v100_fp16_tflops", "125 twice"),
        ("psu5090_sustained_w", "psu_recommended_w", "850 W: one build's draw, another's supply"),
        ("rtx4090_gbs", "rtx4090_derived_gbs", "the spec and its derivation agree"),
        ("llama70_vocab", "llama32_1b_vocab", "one tokenizer"),
        ("cpu_allcore_e_gflops", "cpu_maxturbo_e_gflops", "the E-cores' two clocks are one"),
        ("rtx4090_fp32_tflops", "rtx4090_tf32_tflops", "two precisions, one rate"),
        ("rtx4090_bf16_tflops", "rtx4090_fp16_tflops", "two precisions, one rate"),
        ("rtx5090_bf16_tflops", "rtx5090_fp16_tflops", "two precisions, one rate"),
        ("a100_bf16_tflops", "a100_fp16_tflops", "two precisions, one rate"),
        ("rtx4090_fp16_fp16acc_tflops", "rtx4090_fp8_tflops", "two precisions, one rate"),
        ("h100_bf16_tflops", "h100_fp16_tflops", "two precisions, one rate"),
        ("h100_bf16_tflops", "h200_bf16_tflops", "one chip, two memories"),
        ("h100_fp16_tflops", "h200_bf16_tflops", "one chip, two memories"),
        ("h100_fp8_tflops", "h100_int8_tflops", "two precisions, one rate"),
        ("b200_fp16_tflops", "b200_bf16_tflops", "two precisions, one rate"),
    ]
}


def _distinctive(value: object) -> bool:
    """A value two quantities are unlikely to share by chance: a float with three or more
    significant digits, or an int of at least 100 that is neither round nor a power of two."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not value.is_integer():
        return len(f"{abs(value):.10g}".replace(".", "").strip("0")) >= 3
    number = int(value)
    return abs(number) >= 100 and number % 100 != 0 and number & (number - 1) != 0


def shared_values(figures: dict) -> list[tuple[float, list[str]]]:
    """(value, names) for each distinctive value that two or more names give, less the pairs
    COINCIDENCES lists."""
    by_value: dict[float, list[str]] = defaultdict(list)
    for name, value in figures.items():
        if _distinctive(value):
            by_value[float(value)].append(name)
    out = []
    for value, names in sorted(by_value.items()):
        named_twice = sorted(
            {
                n
                for a in names
                for b in names
                if a < b and frozenset((a, b)) not in COINCIDENCES
                for n in (a, b)
            }
        )
        if named_twice:
            out.append((value, named_twice))
    return out


def misspelt(names) -> dict[str, str]:
    """Each name that breaks the spelling -> the name it should have."""
    return {n: canonical(n) for n in names if canonical(n) != n}


def main() -> int:
    """Print the misspelt names and the values two names share; 1 when there are any."""
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    from gpulab.course.figures import all_figures

    figures = all_figures()
    wrong, shared = misspelt(figures), shared_values(figures)
    for name, right in wrong.items():
        print(f"{name}: spell it {right}")
    for value, names in shared:
        print(f"{value:g}: {', '.join(names)}")
    print(f"{len(wrong)} misspelt, {len(shared)} values with two names")
    return 1 if wrong or shared else 0


if __name__ == "__main__":
    raise SystemExit(main())
