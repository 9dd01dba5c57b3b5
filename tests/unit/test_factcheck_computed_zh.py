"""The Chinese fact-check page in Chinese: its computed lines translated, their figures computed.

The page is the Markdown gpulab.factcheck builds for the appendix (book/appendix/fact_check.ipynb
displays it). tools/catalogue_style.py's check for English left on a Chinese page runs on every
line of it but the article's own words (its quotations) and the sources it cites, which are
English titles. The oracles for the figures are the English lines as the derivations print them,
read with a plain digit pattern, and expectations written out by hand.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import Counter

import pytest

from gpulab import factcheck
from gpulab.core.errors import GpulabConfigError
from gpulab.course import factcheck_words
from tools.checks import catalogue_style

ZH = "zh_CN"
DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")  # Hanzi or Chinese punctuation
QUOTATION, SOURCE = "> ", "- **来源：**"  # the article's words; the sources' English titles


@pytest.fixture(scope="module")
def claims():
    return {c.id: c for c in factcheck.load()}


@pytest.fixture(scope="module")
def page(claims):
    return factcheck.markdown(claims.values(), lang=ZH)


def test_no_english_is_left_on_the_chinese_fact_check_page(page):
    lines = [line for line in page.splitlines() if not line.startswith((QUOTATION, SOURCE))]
    assert len(lines) > 500
    left = [(line[:60], runs) for line in lines if (runs := catalogue_style.latin_runs(line))]
    assert left == []


def test_the_english_page_still_has_its_english_lines(claims):
    """The check would find English: the English edition's computed lines are all runs of it."""
    english = factcheck.markdown(claims.values())
    computed = [
        line for line in english.splitlines() if line.startswith("- **Computed in this page:**")
    ]
    assert len(computed) >= 60
    assert sum(bool(catalogue_style.latin_runs(line)) for line in computed) > 40


def test_every_computed_line_shows_the_english_lines_figures(claims):
    """The Chinese headline and arithmetic hold the same digits as the English ones, each as
    often: the figures are the computed ones, and none is typed in or dropped."""
    computed = [c for c in claims.values() if c.computed_name]
    assert len(computed) >= 70
    for c in computed:
        result = factcheck.compute(c.computed_name)
        text, how = factcheck.computed_lines(c, result, ZH)
        for english, chinese in ((result.text, text), (result.how, how)):
            assert Counter(DIGITS.findall(chinese)) == Counter(DIGITS.findall(english)), (
                c.id,
                chinese,
            )
        # the arithmetic is in Chinese (a headline may be a figure and its unit, "76.3 tokens/s")
        assert CHINESE.search(how) and how != result.how, (c.id, how)


def test_one_computed_line_in_chinese_as_written_by_hand(claims):
    c = claims[93]  # the article's electricity sum: 0.6 CNY/kWh, 350 W, 10 h a day
    result = factcheck.compute(c.computed_name)
    text, how = factcheck.computed_lines(c, result, ZH)
    assert (result.text, result.how) == (
        "766.5 CNY/year",
        "0.6 CNY/kWh x 0.35 kW x 10 h = 2.10 CNY/day; x 365 = 766.5; at the 450 W board power "
        "985.5 CNY/year (gpulab.cost)",
    )
    assert (text, how) == (
        "每年 766.5 元",
        "每千瓦时 0.6 元 x 0.35 kW x 10 小时 = 每天 2.10 元；x 365 = 766.5；"
        "按 450 W 的整卡功耗为每年 985.5 元（`gpulab.cost`）",
    )
    assert factcheck.computed_lines(c, result) == (result.text, result.how)


def test_a_changed_english_line_makes_its_translation_out_of_date(claims):
    c = claims[93]
    result = factcheck.compute(c.computed_name)
    changed = dataclasses.replace(result, how=result.how.replace("board power", "rated power"))
    with pytest.raises(
        GpulabConfigError, match=r"factcheck\.computed\.electricity_cost_4090\.how is out of date"
    ):
        factcheck.computed_lines(c, changed, ZH)
    # a new figure in the same words is no change: it is filled in
    moved = dataclasses.replace(result, how=result.how.replace("0.6 CNY/kWh", "0.7 CNY/kWh"))
    assert factcheck.computed_lines(c, moved, ZH)[1].startswith("每千瓦时 0.7 元")


def test_a_translation_missing_a_figure_or_a_line_is_refused(claims, monkeypatch):
    c = claims[93]
    result = factcheck.compute(c.computed_name)
    words = copy.deepcopy(dict(factcheck_words.WORDS))
    stored = words[ZH]["computed"][c.computed_name]["how"]
    stored["line"] = stored["line"].replace("{0}", "")
    monkeypatch.setattr(factcheck_words, "WORDS", words)
    with pytest.raises(GpulabConfigError, match=r"must show each of the figures \{0\} to"):
        factcheck.computed_lines(c, result, ZH)
    del words[ZH]["computed"][c.computed_name]
    with pytest.raises(GpulabConfigError, match="electricity_cost_4090.text is missing"):
        factcheck.computed_lines(c, result, ZH)


@pytest.mark.parametrize(
    ("english", "template", "figures"),
    [
        ("FP32 peaks: RTX 4090 82.6 TFLOP/s", "FP32 peaks: RTX {0} {1} TFLOP/s", ["4090", "82.6"]),
        (
            "i9-13900K 0.15-2.59; DDR5-5600 89.6 GB/s",
            "i9-13900K {0}-{1}; DDR5-5600 {2} GB/s",
            ["0.15", "2.59", "89.6"],
        ),
        (
            "$25,000-40,000 x 7.2 is 17%-39%",
            "${0}-{1} x {2} is {3}%-{4}%",
            ["25,000", "40,000", "7.2", "17", "39"],
        ),
        ("Q4_0 at 3x128 {{x}} Llama-2-7B", "Q4_0 at {0}x128 {{{{x}}}} Llama-2-7B", ["3"]),
    ],
)
def test_a_line_template_keeps_names_and_numbers_its_figures(english, template, figures):
    assert factcheck_words.line_template(english) == (template, figures)
