"""The fact-check's Chinese edition: every claim's explanation in Chinese, rendered with `lang`.

The Chinese of each claim is in the language's words file (data/words/zh_CN.json, under
factcheck.claims by claim id). The oracles are the English registry as stored (its fields, its
placeholders, its numbers), the English rendering, and expectations written out by hand below;
none is computed by the expressions gpulab.factcheck uses itself.
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources

import pytest

from gpulab import factcheck
from gpulab.core.errors import GpulabConfigError
from gpulab.reference import languages
from tests.helpers import need_seeds, raw_fact_check

CJK = re.compile(r"[\u4e00-\u9fff]")
# Chinese text: Hanzi, or at least Chinese typography (a citation or "A10：24 GB" may have no Hanzi)
CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef“”]")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # digits, with their decimal points and thousands commas
UNFILLED = re.compile(r"\{[A-Za-z_]\w*(?::[^{}]*)?\}")  # a placeholder left in rendered text
# STYLE.md's terms, typed here so that the test does not read them from the code it checks
VERDICTS_ZH = {
    "correct": "正确",
    "wrong": "错误",
    "misleading": "有误导性",
    "not checkable": "无法核实",
}


def _placeholders(template: str) -> list[str]:
    """The {name:fmt} fields of a template as written, the {{ and }} escapes left out."""
    return sorted(re.findall(r"\{[^{}]*\}", template.replace("{{", "").replace("}}", "")))


def _numbers(text: str, template: bool = True) -> set[str]:
    """The numbers in digits of a text; a template's placeholders (and formats) do not count."""
    if template:
        text = re.sub(r"\{[^{}]*\}", " ", text.replace("{{", "").replace("}}", ""))
    return set(NUMBER.findall(text))


def _english(entry: dict) -> dict[str, str]:
    """The English fields an entry's Chinese must translate, read from the stored entry."""
    out = {"rubric_why": entry["rubric_why"], "correct_value": entry["correct_value"]}
    if entry.get("reason"):
        out["reason"] = entry["reason"]
    if entry["derivation"].get("note"):
        out["note"] = entry["derivation"]["note"]
    if entry.get("reading"):
        out["reading"] = entry["reading"]
    return out


def _stored_chinese() -> dict[str, dict]:
    """The claims' Chinese as stored in the words file, by claim id (text)."""
    path = resources.files("gpulab") / "data" / "words" / "zh_CN.json"
    return json.loads(path.read_text(encoding="utf-8"))["factcheck"]["claims"]


@pytest.fixture(scope="module")
def raw():
    """The stored registry, each entry with its stored Chinese beside it under "zh_CN"."""
    data, chinese = raw_fact_check(), _stored_chinese()
    assert set(chinese) == {str(e["id"]) for e in data["claims"]}  # one translation per claim
    for entry in data["claims"]:
        assert "zh_CN" not in entry  # the registry holds no language but English
        entry["zh_CN"] = chinese[str(entry["id"])]
    return data


def _validate(entry: dict) -> list:
    """Validate one entry of `raw` with its own Chinese (broken or not) as the translation."""
    entry = dict(entry)
    chinese = entry.pop("zh_CN", None)
    return factcheck.validate(
        {"claims": [entry]}, {"zh_CN": {} if chinese is None else {str(entry["id"]): chinese}}
    )


@pytest.fixture(scope="module")
def claims():
    return {c.id: c for c in factcheck.load()}


def test_every_claim_has_exactly_the_chinese_of_its_english_fields(raw):
    assert len(raw["claims"]) >= 127
    for entry in raw["claims"]:
        zh = entry["zh_CN"]
        assert set(zh) == set(_english(entry)), entry["id"]
        for key, text in zh.items():
            assert isinstance(text, str) and CHINESE.search(text), (entry["id"], key)
            assert text != _english(entry)[key], (entry["id"], key, "left in English")


def test_the_chinese_templates_keep_the_english_placeholders(raw):
    for entry in raw["claims"]:
        for key, english in _english(entry).items():
            if key != "rubric_why":
                assert set(_placeholders(entry["zh_CN"][key])) == set(_placeholders(english)), (
                    entry["id"],
                    key,
                )
    # claim 17 writes a literal JSON object: its escapes survive in Chinese too
    c17 = next(e for e in raw["claims"] if e["id"] == 17)
    assert '{{"num_gpu": 35}}' in c17["zh_CN"]["correct_value"]


def test_no_chinese_field_holds_a_number_its_english_lacks(raw):
    for entry in raw["claims"]:
        for key, english in _english(entry).items():
            template = key != "rubric_why"
            chinese = entry["zh_CN"][key]
            added = _numbers(chinese, template) - _numbers(english, template)
            # a date's month in digits where the English names it ("2024 年 7 月", STYLE.md)
            added -= set(languages.months_in_digits(english, chinese))
            assert not added, (entry["id"], key, sorted(added))


def test_the_chinese_correct_value_shows_every_computed_figure_of_the_english(claims):
    computed = [c for c in claims.values() if c.computed_name]
    assert len(computed) >= 40
    for c in computed:
        r = factcheck.compute(c.computed_name)
        en = factcheck.rendered(c, r)["correct_value"]
        zh = factcheck.rendered(c, r, lang="zh_CN")["correct_value"]
        missing = _numbers(en, template=False) - _numbers(zh, template=False)
        assert not missing, (c.id, sorted(missing), zh)


def test_every_chinese_template_renders_fully(claims):
    for c in claims.values():
        en = factcheck.rendered(c)
        zh = factcheck.rendered(c, lang="zh_CN")
        assert set(zh) == {"correct_value", "reason", "note"}, c.id
        for key, text in zh.items():
            assert bool(text) == bool(en[key]), (
                c.id,
                key,
            )  # a Chinese text exactly where English has one
            assert not UNFILLED.search(text), (c.id, key, text)


def test_the_chinese_markdown_has_one_anchor_per_claim_and_chinese_verdicts(claims):
    md = factcheck.markdown(claims.values(), lang="zh_CN")
    anchors = re.findall(r'<a id="claim-(\d+)"></a>', md)
    assert sorted(map(int, anchors)) == sorted(claims)
    for c in claims.values():
        assert md.count(f'<a id="claim-{c.id}"></a>') == 1
        wording = factcheck.clause_wording(c.rubric_clause, "zh_CN")
        assert f"- **结论：** {VERDICTS_ZH[c.verdict]}，因为{wording}。" in md, c.id
        assert f"**说法 {c.id}**（" in md
        assert c.quote in md.replace("&lt;", "<").replace("&gt;", ">")
    for english in (
        "**Verdict:**",
        "**Correct value:**",
        "Computed in this page",
        "**Claim ",
        "Why not checkable",
        "discussed in",
    ):
        assert english not in md
    assert len(CJK.findall(md)) > 10_000
    set_up = [c for c in claims.values() if c.chapter == 0]
    if set_up:
        assert "环境配置页讨论" in factcheck.markdown(set_up[:1], lang="zh_CN")


def test_one_chinese_entry_as_written_by_hand(claims):
    assert factcheck.markdown([claims[85]], lang="zh_CN") == (
        '<a id="claim-85"></a>\n'
        "\n"
        "**说法 85**（《GPU 加速教程》；第 4 章讨论）\n"
        "\n"
        "> AMD ROCm生态追上，未来两年可能持平CUDA\n"
        "\n"
        "- **结论：** 无法核实，因为没有任何公开来源或推导能够判定读者会据以行动的某一部分。"
        "这是预测：目前没有任何来源或推导能够判定。\n"
        "- **正确值：** 预测\n"
        "- **来源：** none\n"
        "- **无法核实的原因：** 这是对未来的预测。"
    )


def test_the_english_markdown_of_a_claim_is_unchanged(claims):
    assert factcheck.markdown([claims[120]]) == (
        '<a id="claim-120"></a>\n'
        "\n"
        "**120.** GPT4All offers a GPU backend with CUDA, Vulkan and Metal (tutorial; discussed "
        "in chapter 4)\n"
        "\n"
        "> GPT4All…选择“GPU”后端，支持CUDA、Vulkan、Metal\n"
        "\n"
        "- **Verdict:** correct, since every part holds as stated, with no condition left "
        "unstated. GPT4All offers all three backends.\n"
        "- **Correct value:** GPT4All (built on llama.cpp) offers CUDA, Metal and Vulkan\n"
        "- **Source:** DeepWiki, nomic-ai/gpt4all 'Hardware acceleration' "
        "(https://deepwiki.com/nomic-ai/gpt4all/3.3-hardware-acceleration)"
    )
    assert factcheck.markdown([claims[85]], lang="en") == factcheck.markdown([claims[85]])
    assert factcheck.rubric_markdown("en") == factcheck.rubric_markdown()
    assert factcheck.rubric_markdown().splitlines()[0] == (
        "- **wrong**: every part of it is false; or a part a reader acts on is false, whatever "
        "else in it holds."
    )


def test_the_rubric_verdicts_sections_and_articles_in_chinese():
    text = factcheck.rubric_markdown("zh_CN")
    assert text.splitlines()[3] == "- **正确**：每一部分都如其所述成立，没有留下未说明的条件。"
    # the rules under the list, each in Chinese
    assert set(factcheck.RULE_WORDS["zh_CN"]) == set(factcheck.RULES)
    assert all(factcheck.RULE_WORDS["zh_CN"][key] in text for key in factcheck.RULES)
    for verdict, clauses in factcheck.RUBRIC.items():
        assert f"- **{VERDICTS_ZH[verdict]}**：" in text
        assert all(
            factcheck.RUBRIC_WORDS["zh_CN"][cid] in text
            and CJK.search(factcheck.RUBRIC_WORDS["zh_CN"][cid])
            for cid, _ in clauses
        )
    assert set(factcheck.RUBRIC_WORDS["zh_CN"]) == set(factcheck.RUBRIC_CLAUSES)
    assert {v: factcheck.verdict_name(v, "zh_CN") for v in factcheck.VERDICTS} == VERDICTS_ZH
    assert [factcheck.verdict_name(v) for v in factcheck.VERDICTS] == list(factcheck.VERDICTS)
    tutorial, guide = factcheck.SEED_FILES
    assert factcheck.SHORT_NAMES["zh_CN"] == {
        tutorial: "《GPU 加速教程》",
        guide: "《硬件选型指南》",
    }
    md = factcheck.markdown([c for c in factcheck.load() if c.seed_file == guide][:1], lang="zh_CN")
    assert "（《硬件选型指南》；" in md
    assert factcheck.section_title("FAQ", "zh_CN") == "常见问题"
    assert factcheck.section_title("7. Common myths", "zh_CN") == "七、新手高频硬件认知误区澄清"
    assert factcheck.section_title("FAQ") == "FAQ"
    with pytest.raises(GpulabConfigError, match="section"):
        factcheck.section_title("Nowhere", "zh_CN")
    with pytest.raises(GpulabConfigError, match="verdict"):
        factcheck.verdict_name("half true", "zh_CN")


def test_each_chinese_section_title_is_the_articles_own_heading():
    """Each section title in Chinese is a heading of its article, verbatim (GPULAB_SEEDS)."""
    seeds = need_seeds()
    for seed_file, sections in factcheck.SECTIONS.items():
        article = (seeds / seed_file).read_text(encoding="utf-8").splitlines()
        for section in sections:
            title = factcheck.section_title(section, "zh_CN")
            assert title in (line.strip() for line in article), (section, title)


def test_the_chinese_attribution_names_title_and_author_in_chinese():
    for seed_file, article in factcheck.ARTICLES.items():
        line = factcheck.attribution(seed_file, "zh_CN")
        assert f"《{article['title']}》" in line
        assert article["title_en"] not in line and "published" not in line
        assert (article["author"] or "未署名") in line
        assert line.endswith("本课程保存的副本未注明发表出处")
    assert factcheck.attribution(factcheck.SEED_FILES[1]) == (
        "“GPU，本地大模型训练 / 推理硬件完整选型指南” "
        "(“GPUs: a complete guide to choosing hardware for training and running large models "
        "locally”), by 接好运鸭; the copy the course keeps does not say where it was published"
    )
    with pytest.raises(GpulabConfigError, match="seed_file"):
        factcheck.attribution("001.txt", "zh_CN")


@pytest.mark.parametrize(
    "call",
    [
        lambda c: factcheck.rendered(c, lang="zh"),
        lambda c: factcheck.markdown([c], lang="fr"),
        lambda c: factcheck.rubric_markdown("zh-CN"),
        lambda c: factcheck.attribution(c.seed_file, "cn"),
        lambda c: factcheck.verdict_name(c.verdict, "EN"),
        lambda c: factcheck.section_title(c.section, "zh"),
        lambda c: factcheck.rendered(c, lang="zh_cn"),
    ],
)
def test_a_bad_lang_names_lang_and_the_allowed_values(claims, call):
    with pytest.raises(GpulabConfigError) as err:
        call(claims[2])
    assert "lang=" in str(err.value) and "en, zh_CN" in str(err.value)
    assert err.value.field == "lang"


def test_a_lang_that_is_not_text_names_lang(claims):
    with pytest.raises(GpulabConfigError) as err:
        factcheck.markdown([claims[2]], lang=None)
    assert err.value.field == "lang" and "lang=None" in str(err.value)


def _one(raw: dict, cid: int) -> dict:
    """A copy of one stored entry, to break in memory."""
    return copy.deepcopy(next(e for e in raw["claims"] if e["id"] == cid))


def test_a_claim_without_zh_cn_is_rejected_naming_the_field(raw):
    entry = _one(raw, 2)
    del entry["zh_CN"]
    with pytest.raises(GpulabConfigError, match="claim 2, field 'zh_CN': is missing"):
        _validate(entry)
    entry["zh_CN"] = "运行 70B 模型"
    with pytest.raises(GpulabConfigError, match="claim 2, field 'zh_CN': must be an object"):
        _validate(entry)
    entry["zh_CN"] = _one(raw, 2)["zh_CN"]  # the Chinese back in the registry itself: not a field
    with pytest.raises(GpulabConfigError, match="claim 2, field 'zh_CN': is not a known field"):
        factcheck.validate({"claims": [entry]})


@pytest.mark.parametrize(
    "cid, change, words",
    [
        (2, lambda zh: zh.pop("correct_value"), ["claim 2", "'zh_CN.correct_value'", "is missing"]),
        (2, lambda zh: zh.pop("rubric_why"), ["claim 2", "'zh_CN.rubric_why'", "is missing"]),
        (5, lambda zh: zh.pop("reason"), ["claim 5", "'zh_CN.reason'", "is missing"]),
        (4, lambda zh: zh.pop("note"), ["claim 4", "'zh_CN.note'", "is missing"]),
        (
            2,
            lambda zh: zh.update(reason="无法核实"),
            ["claim 2", "'zh_CN.reason'", "no English to translate"],
        ),
        (2, lambda zh: zh.update(title="标题"), ["claim 2", "'zh_CN.title'"]),
        (
            2,
            lambda zh: zh.update(correct_value="  "),
            ["claim 2", "'zh_CN.correct_value'", "non-empty"],
        ),
        (
            2,
            lambda zh: zh.update(correct_value="4 位权重为 {lo:.1f}–{hi:.1f} GB"),
            ["claim 2", "'zh_CN.correct_value'", "placeholders", "{claimed_gb:g}"],
        ),
        (
            2,
            lambda zh: zh.update(correct_value=zh["correct_value"].replace("{lo:.1f}", "{lo:.2f}")),
            ["claim 2", "'zh_CN.correct_value'", "placeholders", "{lo:.1f}"],
        ),
        (
            2,
            lambda zh: zh.update(correct_value=zh["correct_value"] + "，约 2 倍"),
            ["claim 2", "'zh_CN.correct_value'", "number 2", "Chinese numerals"],
        ),
        (
            2,
            lambda zh: zh.update(rubric_why="仅权重就超出 40 GB。"),
            ["claim 2", "'zh_CN.rubric_why'", "number 40"],
        ),
        (
            2,
            lambda zh: zh.update(rubric_why="长" * 301),
            ["claim 2", "'zh_CN.rubric_why'", "at most 300"],
        ),
        (
            2,
            lambda zh: zh.update(correct_value="{lo:.1f} 到 {hi"),
            ["claim 2", "'zh_CN.correct_value'", "not a valid template"],
        ),
    ],
)
def test_a_bad_chinese_field_names_the_claim_and_the_field(raw, cid, change, words):
    entry = _one(raw, cid)
    change(entry["zh_CN"])
    with pytest.raises(GpulabConfigError) as err:
        _validate(entry)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_an_untouched_copy_validates_and_number_words_are_allowed(raw):
    entry = _one(raw, 37)  # "four times" is 四倍 in Chinese: a numeral, not a digit
    assert "四倍" in entry["zh_CN"]["correct_value"]
    (claim,) = _validate(entry)
    assert claim.translations["zh_CN"] == entry["zh_CN"]
    with pytest.raises(TypeError):
        claim.translations["zh_CN"]["correct_value"] = "x"  # type: ignore[index]
    del entry["zh_CN"]  # without translations given, the words file's
    assert factcheck.validate({"claims": [entry]}) == [claim]


def test_rendering_a_claim_that_lost_its_chinese_names_the_field(claims):
    broken = copy.copy(claims[42])
    object.__setattr__(broken, "translations", {"zh_CN": {}})
    with pytest.raises(GpulabConfigError, match=r"claim 42, field 'zh_CN\.correct_value'"):
        factcheck.rendered(broken, lang="zh_CN")
    assert factcheck.rendered(broken) == factcheck.rendered(claims[42])  # English needs none of it
    object.__setattr__(
        broken,
        "translations",
        {
            "zh_CN": {
                **claims[42].translations["zh_CN"],
                "correct_value": "上限 {no_such_value:.1f}",
            }
        },
    )
    with pytest.raises(
        GpulabConfigError, match=r"claim 42, field 'zh_CN\.correct_value': placeholder"
    ):
        factcheck.rendered(broken, lang="zh_CN")


def test_a_month_the_english_names_may_be_written_in_digits_and_no_other_number():
    """A date reads "2024 年 7 月" in Chinese (STYLE.md): the month the English names is not a
    typed number; a month it does not name, or the same digits not as a month, still is."""
    from gpulab.course import factcheck_words as words

    fields = words.TRANSLATED_FIELDS
    english = ("Published in July 2024",) + ("",) * (len(fields) - 1)

    def check(text: str) -> None:
        words.check_translation(1, "zh_CN", {fields[0]: text}, english)

    check("发表于 2024 年 7 月")
    check("发表于 2024年7月")
    for typed in ("发表于 2024 年 8 月", "发表于 2024 年，7 倍"):
        with pytest.raises(GpulabConfigError, match="holds the number"):
            check(typed)


@pytest.mark.parametrize("cid", [23, 46, 62, 68])
def test_an_english_source_quoted_in_chinese_has_a_chinese_gloss(raw, cid):
    """The English words a Chinese entry quotes from a source (Google's FAQ, PyTorch's docs,
    Cursor's forum) are followed by what they say in Chinese: （…） or “，即…”."""
    text = next(e for e in raw["claims"] if e["id"] == cid)["zh_CN"]["correct_value"]
    quotes = list(re.finditer(r"“([^”]*)”", text))
    english = [m for m in quotes if not CJK.search(m.group(1))]
    assert english, (cid, text)
    for m in english:
        after = text[m.end() :]
        gloss = re.match(r"(?:（|，即)([^）]*?)(?:[，）]|$)", after)
        assert gloss and len(CJK.findall(gloss.group(1))) >= 6, (cid, m.group(1), after[:30])


@pytest.mark.parametrize("cid", [44, 51, 52, 53, 54, 55, 56, 122])
def test_a_quote_from_a_table_marks_the_cells_it_drops(raw, cid):
    """A claim quoting a table row (the backends' and the models' tables of the hardware
    guide) is its cells in the article's order: adjacent cells as they read, with a space for
    the tab between them, and "…" where it leaves cells out (GPULAB_SEEDS)."""
    seeds = need_seeds()
    entry = next(e for e in raw["claims"] if e["id"] == cid)
    article = (seeds / entry["seed_file"]).read_text(encoding="utf-8")
    flat = re.sub(r"[ \t]+", " ", article)
    start = 0
    for piece in entry["quote"].split("…"):
        found = flat.find(piece, start)
        assert found >= 0, (cid, piece, "not in the article after what precedes it")
        start = found + len(piece)
