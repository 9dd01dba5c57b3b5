"""tools/checks/catalogue_style.py: bold as rendered, English left in Chinese, the glossary's terms.

The oracles are CommonMark's rules worked by hand on each example, and sentences written out
below; every catalogue the repository holds must pass, and a catalogue with each fault must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import i18n
from tools.checks import catalogue_style

STYLE = i18n.LOCALES / i18n.LANG / "STYLE.md"
WORDS = Path(__file__).resolve().parents[2] / "src" / "gpulab" / "data" / "words" / "zh_CN.json"
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
    assert set(terms) == {
        "拐点",
        "张",
        "元",
        "批大小",
        "性能分析器 / 性能分析",
        "微批次",
        "工作进程",
        "选择硬件，算清成本",
        "不止一张 GPU",
        "现象 / 解决方法",
        "FLOP/byte",
        "位",
        "计算受限 / 访存受限",
        "课前检查",
    }
    # each variant in use before it was settled, in a sentence of the kind the pages had
    flagged = [
        ("拐点", "低于脊点时"),
        ("张", "两块 RTX 3090"),
        ("张", "换一块更快的 GPU，训练也不会更快"),
        ("张", "取决于拿哪块游戏卡来比"),
        ("张", "其他进程占用了某块 GPU"),
        ("张", "一块未超频的 RTX 4090"),
        ("张", "管理员需要逐块 GPU 启用它"),
        ("元", "一元人民币"),
        ("批大小", "批次大小为 4"),
        ("性能分析器 / 性能分析", "性能剖析器会显示它"),
        ("性能分析器 / 性能分析", "先剖析，再修复"),
        ("性能分析器 / 性能分析", "## 2\\. 性能剖析"),
        ("微批次", "每个微批都重复一次"),
        ("工作进程", "如果 worker 跟不上"),
        ("工作进程", "torchrun 看不到失败的 workers"),
        ("选择硬件，算清成本", "第 6 章：硬件选型与成本"),
        ("选择硬件，算清成本", "第 6 章“选择硬件及其费用”"),
        ("不止一张 GPU", "第 7 章：单卡之外"),
        ("不止一张 GPU", "见本章页面 [超越单卡](../book/07_beyond_one_gpu.md)"),
        ("现象 / 解决方法", "**症状。** GPU 只比 CPU 快一点"),
        ("现象 / 解决方法", "每条结果都附有修复方法"),
        ("FLOP/byte", "拐点为 {fig}`ridge_4090_bf16` FLOP/字节"),
        ("FLOP/byte", "算术强度只有 {fig}`add_ai` FLOPs / 字节"),
        ("位", "每个权重 {fig}`q4km_bits` 比特"),
        ("位", "每个权重 {fig}`q4km_bits` bit，"),
        ("位", "并把 4-bit 的 70B 模型放在多张 GPU 上"),
        ("位", "它的 {fig}`avx2_bits`-bit 寄存器"),
        ("计算受限 / 访存受限", "只在计算密集型任务中成立"),
        ("计算受限 / 访存受限", "访存密集型任务约为四倍"),
        ("课前检查", "每位学员在课前运行课前自检"),
    ]
    for accepted, sentence in flagged:
        found = catalogue_style.glossary_problems(sentence, tuple(terms.values()))
        assert found and any(f"write {terms[accepted].accepted}" in f for f in found), sentence
    accepted_uses = [
        "低于拐点时",
        "两张 RTX 3090，每张 GPU 一个进程",
        "15,000 元",
        "批大小为 4",
        "性能分析器会显示它",
        "先做性能分析，再修复",
        "每个微批次都重复一次",
        "工作进程（worker）是用于数据加载的子进程，`num_workers=0` 时没有",
        "每个元素、每个单元格",
        "切成 n 块，每块 32 个字节",
        "发送一块、接收一块",
        "每张 GPU 都持有一块已在全部 $n$ 张 GPU 上求和的结果",
        "四个分块，每块是一排 FP32 通道",
        "`CNY` 写在代码里",
        "第 6 章：选择硬件，算清成本",
        "第 7 章：不止一张 GPU",
        "**现象。** GPU 只比 CPU 快一点；**解决方法。** 加大批次，修复后的循环更快",
        "拐点为 {fig}`ridge_4090_bf16` FLOP/byte",
        "每个权重 {fig}`q4km_bits` 位，8 位 AdamW，64 位总线，7 位有效数字",
        "bitsandbytes 的 `adamw8bit`，速率以 Gb/s 和 Gbit/s 计",
        "大矩阵乘法受限于算力，解码是访存受限的",
        "课前检查应在开课十分钟内结束",
    ]
    for sentence in accepted_uses:
        assert catalogue_style.glossary_problems(sentence, tuple(terms.values())) == [], sentence


def _chinese_words(node, key=""):
    """Every Chinese string of a words file, with its path; an "en" field is the English."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "en":
                yield from _chinese_words(v, f"{key}/{k}")
    elif isinstance(node, list):
        for v in node:
            yield from _chinese_words(v, key)
    elif isinstance(node, str):
        yield key, node


def test_the_fact_checks_chinese_words_use_the_glossarys_terms():
    """The fact-check's Chinese (data/words/zh_CN.json) is held to the same glossary."""
    words = json.loads(WORDS.read_text(encoding="utf-8"))
    texts = dict(_chinese_words(words))
    assert "/factcheck/claims/1/rubric_why" in texts, "the words file's layout changed"
    found = {
        where: problems
        for where, text in texts.items()
        if (problems := catalogue_style.glossary_problems(text, catalogue_style.glossary(STYLE)))
    }
    assert found == {}


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


def test_a_numbered_headings_translation_escapes_its_period():
    """A heading such as "1. The script" must be translated "1\\. 脚本": Sphinx parses a
    translation again, reads an unescaped "1. 脚本" as a list, finds a list where a title was,
    and keeps the English title (the Chinese notebooks' numbered sections were all English)."""
    import re

    from babel.messages.pofile import read_po

    numbered, unescaped = 0, []
    for path in sorted(Path(i18n.LOCALES).rglob("*.po")):
        with path.open("rb") as f:
            for message in read_po(f):
                if message.id and re.match(r"\d+\. ", str(message.id)) and message.string:
                    numbered += 1
                    if not re.match(r"\d+\\\. ", message.string):
                        unescaped.append(f"{path.name}: {message.string[:40]!r}")
    assert numbered > 50  # the labs' and notebooks' numbered sections, and chapter 5's pitfalls
    assert unescaped == []
