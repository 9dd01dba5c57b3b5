"""tools/checks/article_quotes.py: the Chinese edition quotes the articles in their own words.

The oracle is the articles themselves (GPULAB_SEEDS; skipped with that reason when absent), and
for the rules, sentences of the articles worked by hand below. The back-translations issue #31
listed at 92e49f3 must fail, and every quote the repository holds now must pass.
"""

from __future__ import annotations

import pytest

from tests.helpers import need_seeds
from tools.checks import article_quotes


@pytest.fixture(scope="module")
def articles() -> list[str]:
    seeds = need_seeds()
    return [p.read_text(encoding="utf-8") for p in sorted(seeds.glob("*.txt"))]


# The quotes of 92e49f3's catalogues that were our own paraphrase, each with the article's words.
BACK_TRANSLATIONS = [
    ("堆叠游戏卡就能让算力翻倍", "多张游戏显卡叠加，算力直接翻倍"),
    ("租用八张 A100 做多 GPU 训练", "可按需租用8卡A100"),
    ("内存分配错误", "显存分配错误"),
    ("所以一定是驱动坏了", "说明驱动或库未正确安装"),
    ("同样的算力", "同等算力"),
    ("两块 RTX 3090 代替一块 RTX 4090", "宁可买两张RTX 3090…也不要单张RTX 4090"),
    ("数分钟对数十小时", "GPU 数分钟完成，纯 CPU 需要数十小时"),
    ("每天用超过 N 小时就买", "频繁使用（每天>2小时）：本地"),
    ("数十亿次计算", "数十亿次统一计算"),
    ("Apple：M1–M4……", "Apple：M1/M2/M3/M4系列芯片…"),
    ("先装驱动，再装 PyTorch 和 CUDA，最后验证", None),
]


# The {claim} quotes of 92e49f3's fact_check.json that the check fails: tables the quote ran
# together across cells, spaces or words that are not the article's, a cut not marked "…".
QUOTES_AT_92E49F3 = {
    14: "安装PyTorch 2026版（内置CUDA 12.6）：pip install torch … --index-url https://download.pytorch.org/whl/cu126",
    15: "可选：安装TensorRT 10.7（针对推理优化，可将速度再提升2~3倍）："
    "pip install tensorrt==10.7.0",
    44: "Metal 3.2 Apple M3 Ultra 38 tokens/s",
    51: "每token成本（云端）$0.0012",
    52: "Llama-3 70B INT4 42GB",
    53: "Llama-3 70B INT4 35 tokens/s (单卡)",
    54: "Llama-3 70B 每token成本（云端）$0.0003",
    55: "Qwen2.5-72B FP16 144GB（需2卡）",
    56: "Qwen2.5-72B 18 tokens/s (单卡)",
    122: "Qwen2.5-72B…每token成本（云端）$0.0009",
    123: "以下对比基于同一台机器（RTX 4090 24GB，i9-13900K，64GB RAM…）/ 加上i5-13600KF、32GB DDR5",
}


@pytest.mark.parametrize("claim_id", sorted(QUOTES_AT_92E49F3))
def test_the_claim_quotes_of_92e49f3_that_were_not_the_articles_words_fail(articles, claim_id):
    """The check fails on 92e49f3's fact-check quotes (11 of 127) and passes on today's."""
    from gpulab import factcheck

    assert not article_quotes.quote_holds(QUOTES_AT_92E49F3[claim_id], articles)
    now = next(c.quote for c in factcheck.load() if c.id == claim_id)
    assert article_quotes.quote_holds(now, articles), claim_id


@pytest.mark.parametrize(("paraphrase", "original"), BACK_TRANSLATIONS)
def test_the_listed_back_translations_fail_and_the_articles_words_pass(
    articles, paraphrase, original
):
    assert not article_quotes.holds(paraphrase, articles)
    if original is not None:
        assert article_quotes.holds(original, articles)


@pytest.mark.parametrize(
    ("span", "holds"),
    [
        # full-width and half-width punctuation and white space are one
        ("GPU加速的本质是并行计算: AI模型涉及大量矩阵运算", True),
        # a quote may end its sentence where the article runs on
        ("可同时处理数万个计算任务。", True),
        # "…" cuts text, in order, within one article
        ("多张游戏显卡叠加…直接翻倍", True),
        ("直接翻倍…多张游戏显卡叠加", False),
        ("多张游戏显卡叠加…GPU加速的本质是并行计算", False),
        # an ellipsis alone is no quote; an ellipsis does not excuse changed words
        ("…", False),
        ("多张游戏卡叠加…直接翻倍", False),
        # a role stands for the number the build prints, compared as cut text
        ("频繁使用（每天>{fig}`article_buy_hours_per_day` 小时）：本地", True),
    ],
)
def test_the_normalisation_and_the_ellipsis_rule(articles, span, holds):
    assert article_quotes.holds(span, articles) is holds


def test_only_corner_brackets_mark_the_articles_words():
    text = "原文说「算力直接翻倍」，我们称之为“拐点”。"
    assert article_quotes.spans(text) == ["算力直接翻倍"]


def test_a_fact_check_quote_of_two_places_holds_place_by_place(articles):
    assert article_quotes.quote_holds("多张游戏显卡叠加 / 同等算力", articles)
    assert not article_quotes.quote_holds("多张游戏显卡叠加 / 同样的算力", articles)


def test_every_quote_of_the_chinese_edition_is_the_articles_own_words(articles):
    assert article_quotes.problems(articles) == []
    # the check reads what it should: the fact-check's quotes and the marked spans
    assert len(list(article_quotes.fact_check_quotes())) > 100
    assert any(True for _ in article_quotes.catalogue_spans())
    assert any(True for _ in article_quotes.words_spans())
