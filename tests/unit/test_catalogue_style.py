"""tools/checks/catalogue_style.py: bold as rendered, English left in Chinese, the glossary's terms.

The oracles are CommonMark's rules worked by hand on each example, and sentences written out
below; every catalogue the repository holds must pass, and a catalogue with each fault must not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import i18n
from tools.checks import catalogue_style

STYLE = i18n.LOCALES / i18n.LANG / "STYLE.md"
CATALOGUES = sorted((i18n.LOCALES / i18n.LANG / "LC_MESSAGES").rglob("*.po"))


@pytest.mark.parametrize(
    ("text", "strong", "em"),
    [
        ("**Time:** 20 minutes.", 1, 0),
        # a closing ** after full-width punctuation and before a letter is not right-flanking
        ("**用时：**20 分钟。", 0, 0),
        ("**用时：** 20 分钟。", 1, 0),
        ("*exercise* and **solution**", 1, 1),
        ("`**not bold**` in code", 0, 0),
        ("每个实验的*练习*链接", 0, 1),
    ],
)
def test_emphasis_is_counted_as_commonmark_renders_it(text, strong, em):
    assert catalogue_style.emphasis_counts(text) == (strong, em)


def test_a_translation_that_loses_its_bold_is_named():
    found = catalogue_style.emphasis_problems("**Time:** 20 minutes.", "**用时：**20 分钟。")
    assert len(found) == 1 and "1 strong" in found[0] and "0 and 0" in found[0]
    assert catalogue_style.emphasis_problems("**Time:** 20 minutes.", "**用时：** 20 分钟。") == []


@pytest.mark.parametrize(
    ("msgstr", "runs"),
    [
        # a number ends a run: "about" alone is one word
        ("本页计算：about 33x faster at its all-core clocks", ["faster at its all-core clocks"]),
        ("峰值之比 bytes per token 决定上限", ["bytes per token"]),
        # names, a gloss at first use, a gloss after the label, quotes, code, links and math stay
        ("原文所用的 CPU 是 Intel Core i9-13900K。", []),
        ("论文 Scaling Laws for Neural Language Models 给出", []),
        ("内存高效注意力（memory-efficient attention）", []),
        ("蒸馏（对抗扩散蒸馏，adversarial diffusion distillation）", []),
        ("**wait for data**（等待数据）是等待的时间", []),
        ("**read the loss (.item)**（读取损失）：", []),
        ("它说“uses the builder to optimize a model”", []),
        ("运行 `pip install torch --index-url x` 即可", []),
        ("见 [clock event reasons](https://docs.nvidia.com/x)", []),
        ("两个词 peer-to-peer 互联", []),
    ],
)
def test_english_runs_left_in_a_chinese_message(msgstr, runs):
    assert catalogue_style.latin_runs(msgstr) == runs


def test_the_glossary_is_read_from_style_md_and_flags_only_variants():
    terms = {t.accepted.split("（")[0]: t for t in catalogue_style.glossary(STYLE)}
    assert set(terms) == {"拐点", "张", "元", "批大小", "性能分析器"}
    flagged = {
        "拐点": "低于脊点时",
        "张": "两块 RTX 3090",
        "元": "一元人民币",
        "批大小": "批次大小为 4",
        "性能分析器": "性能剖析器会显示它",
    }
    for accepted, sentence in flagged.items():
        found = catalogue_style.glossary_problems(sentence, (terms[accepted],))
        assert found and accepted in found[0], sentence
    accepted_uses = [
        "低于拐点时",
        "两张 RTX 3090，每张 GPU 一个进程",
        "15,000 元",
        "批大小为 4",
        "性能分析器会显示它",
        "每个元素、每个单元格",
        "切成 n 块，每块 32 个字节",
        "发送一块、接收一块",
        "`CNY` 写在代码里",
    ]
    for sentence in accepted_uses:
        assert catalogue_style.glossary_problems(sentence, tuple(terms.values())) == [], sentence


def test_a_glossary_row_without_three_cells_is_refused(tmp_path):
    style = tmp_path / "STYLE.md"
    style.write_text(
        "## Glossary\n\n| concept | accepted | variants |\n|---|---|---|\n| a | b |\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="3 cells"):
        catalogue_style.glossary(style)


def test_every_catalogue_passes_the_style_checks():
    """Every .po file the repository holds, read on its own (no site build needed)."""
    assert CATALOGUES, "no catalogues found"
    assert i18n.check_files(CATALOGUES) == []


def test_a_catalogue_with_each_fault_fails(tmp_path):
    po = tmp_path / "page.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "**Time:** 20 minutes."\nmsgstr "**用时：**20 分钟。"\n\n'
        'msgid "The bound is bandwidth over bytes per token."\n'
        'msgstr "上限是 bandwidth over bytes per token。"\n\n'
        'msgid "Below the ridge point."\nmsgstr "低于脊点。"\n',
        encoding="utf-8",
    )
    found = i18n.check_files([Path(po)])
    assert len(found) == 3, found
    assert any("emphasis" in f for f in found)
    assert any("English left untranslated" in f for f in found)
    assert any("glossary: '脊点'" in f for f in found)
