"""gpulab.factcheck and data/fact_check.json: every listed claim checked, every computation runs."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest

from gpulab import factcheck
from gpulab.core.errors import GpulabConfigError

# Ids 1 to 119 are the claims the team listed in the two articles when the course began
# (docs/design.md); the fact-check adds the ones that list missed from 120 on.
LISTED_IDS = range(1, 120)


def _raw() -> dict:
    text = (resources.files("gpulab") / "data" / "fact_check.json").read_text(encoding="utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def claims():
    return factcheck.load()


@pytest.fixture(scope="module")
def rows(claims):
    return factcheck.check_all(claims)


def test_every_listed_claim_has_a_verdict_and_a_value_or_reason(claims):
    """Each listed id (1-119) is present with a valid verdict and a correct value or a reason."""
    by_id = {c.id: c for c in claims}
    missing = sorted(set(LISTED_IDS) - set(by_id))
    assert not missing, f"claims without a fact-check entry: {missing}"
    for c in claims:
        assert c.verdict in factcheck.VERDICTS
        if c.verdict == "not checkable":
            assert c.reason.strip(), c.id
        else:
            assert c.correct_value.strip(), c.id


def test_new_claims_follow_the_list_and_name_their_article(claims):
    """Claims the list missed take ids from 120 on, with a seed file and a quote."""
    ids = [c.id for c in claims]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    extra = [c for c in claims if c.id >= 120]
    assert extra, "the fact-check should add the claims the list missed"
    assert all(c.seed_file in factcheck.SEED_FILES and c.quote.strip() for c in extra)


def test_every_computed_derivation_is_registered_runs_and_matches_the_data(claims, rows):
    """A computed derivation names a registered function, which runs and matches the data.

    Its headline appears in the rendered correct_value.
    """
    computed = [c for c in claims if c.computed_name]
    assert len(computed) >= 40
    assert all(c.computed_name in factcheck.REGISTRY for c in computed)
    drift = [(r["id"], r["computed"]) for r in rows if r["consistent"] is False]
    assert not drift, f"correct_value no longer contains the computed value: {drift}"
    assert sum(r["consistent"] is True for r in rows) == len(computed)


def test_every_registered_function_is_used(claims):
    """No dead computations: each registered function backs at least one claim."""
    used = {c.computed_name for c in claims if c.computed_name}
    assert set(factcheck.REGISTRY) == used


def test_sourced_claims_cite_something(claims):
    for c in claims:
        if not c.computed_name:
            assert len(c.derivation["source"]) > 3, c.id


@pytest.mark.parametrize(
    "field, value, words",
    [
        (
            "verdict",
            "half true",
            ["claim 2", "verdict", "correct, wrong, misleading, not checkable"],
        ),
        ("chapter", 9, ["claim 2", "chapter", "0"]),
        (
            "derivation",
            {"computed": "no_such_function"},
            ["claim 2", "derivation", "no_such_function"],
        ),
        (
            "derivation",
            {"computed": "rtx4090_bandwidth", "source": "x"},
            ["claim 2", "exactly one"],
        ),
        ("seed_file", "other.txt", ["claim 2", "seed_file"]),
        ("quote", "  ", ["claim 2", "quote", "non-empty"]),
    ],
)
def test_validation_names_the_claim_and_the_field(field, value, words):
    data = copy.deepcopy(_raw())
    entry = next(e for e in data["claims"] if e["id"] == 2)
    entry[field] = value
    with pytest.raises(GpulabConfigError) as err:
        factcheck.validate(data)
    for word in words:
        assert word in str(err.value)


def test_validation_catches_missing_fields_duplicates_and_reasons():
    data = copy.deepcopy(_raw())
    del data["claims"][0]["correct_value"]
    with pytest.raises(GpulabConfigError, match="claim 1, field 'correct_value': is missing"):
        factcheck.validate(data)
    data = copy.deepcopy(_raw())
    data["claims"].append(copy.deepcopy(data["claims"][0]))
    with pytest.raises(GpulabConfigError, match="claim 1, field 'id': appears more than once"):
        factcheck.validate(data)
    data = copy.deepcopy(_raw())
    entry = next(e for e in data["claims"] if e["verdict"] == "not checkable")
    entry["reason"] = ""
    with pytest.raises(GpulabConfigError, match="'reason': is required"):
        factcheck.validate(data)
    with pytest.raises(GpulabConfigError, match='"claims" list'):
        factcheck.validate({"claims": "no"})
    with pytest.raises(GpulabConfigError, match="not a registered function"):
        factcheck.compute("nope")


def test_key_values_against_hand_arithmetic():
    """A few headline numbers, recomputed by hand."""
    assert factcheck.compute("llama3_70b_fp16_weights").value == pytest.approx(
        70_553_706_496 * 2 / 1e9
    )
    assert factcheck.compute("rtx4090_vs_rtx3060").value == pytest.approx(1008 / 360)
    assert factcheck.compute("electricity_cost_4090").value == pytest.approx(0.6 * 0.35 * 10 * 365)
    assert factcheck.compute("cloud_cost_year").value == pytest.approx(2.8 * 10 * 365)
    assert factcheck.compute("autodl_week_cost").value == pytest.approx(2.8 * 24 * 7)
    assert factcheck.compute("power_limit_fraction_4090").value == pytest.approx(350 / 450)
    assert factcheck.compute("comfyui_speedup").text == "2.9x"
    assert factcheck.compute("int4_vs_fp16_ratio").value == pytest.approx(16 / 4.125)
    # every weight a token uses (one of the 32,000 embedding rows) + one token's fp16 KV cache
    read = (6_738_415_616 - 31_999 * 4096) * 2 + 2 * 32 * 32 * 128 * 2
    assert factcheck.compute("decode_bound_llama2_7b_rtx4090").value == pytest.approx(
        1008e9 / read, rel=1e-6
    )
    r1 = factcheck.compute("deepseek_r1_on_4_a100")
    assert r1.value > 320  # int4 weights do not fit on four 80 GB A100s
    assert factcheck.compute("fp4_vs_fp16_rtx5090").value == pytest.approx(4.0)
    assert factcheck.compute("cuda_12_6_min_driver").text.startswith("560.28.03")


def test_counts_chapters_and_markdown(claims, rows):
    n = factcheck.counts(claims)
    assert list(n) == list(factcheck.VERDICTS) and sum(n.values()) == len(claims)
    chapters = factcheck.by_chapter(claims)
    assert set(chapters) <= set(factcheck.CHAPTERS)
    assert sorted(i for ids in chapters.values() for i in ids) == [c.id for c in claims]
    md = factcheck.markdown([c for c in claims if c.id in (2, 5)])
    assert '<a id="claim-2"></a>' in md and '<a id="claim-5"></a>' in md
    assert "Why not checkable" in md and "Computed in this page" in md
    text = str(factcheck.table(rows[:3]))
    assert text.splitlines()[0].split() == ["id", "verdict", "computed", "consistent"]


def test_the_chinese_summary_table_is_in_chinese(claims):
    """The fact-check page's table of computed values, in the Chinese edition: its title,
    columns, verdicts and headlines in Chinese, prices in 元 (the glossary), and the English
    arithmetic still consistent with the English text."""
    chosen = [c for c in claims if c.id in (77, 93)]  # an AutoDL week and a year's electricity
    zh = {r["id"]: r for r in factcheck.check_all(chosen, "zh_CN")}
    en = {r["id"]: r for r in factcheck.check_all(chosen)}
    assert en[77]["computed"].endswith(" CNY") and zh[77]["computed"].endswith(" 元")
    assert en[77]["computed"].split()[0] == zh[77]["computed"].split()[0]  # the same figure
    assert all(r["consistent"] for r in zh.values())
    lines = str(
        factcheck.table(
            list(zh.values()),
            ("id", "verdict", "computed"),
            "Values computed on this page",
            "zh_CN",
        )
    ).splitlines()
    assert lines[0] == "本页计算的数值" and lines[1].split() == ["编号", "结论", "本页计算"]
    assert lines[3].split()[:2] == ["77", "错误"] and "CNY" not in "\n".join(lines)


def test_a_table_word_without_a_translation_names_the_words_file():
    with pytest.raises(GpulabConfigError, match=r"zh_CN\.json, factcheck\.tables has no 'wombats'"):
        factcheck.label("wombats", "zh_CN")
    assert factcheck.label("wombats") == "wombats"


def test_verdicts_by_chapter_adds_up(claims):
    table = factcheck.verdicts_by_chapter(claims)
    assert sum(sum(v.values()) for v in table.values()) == len(claims)
    assert all(list(v) == list(factcheck.VERDICTS) for v in table.values())


def test_sections_follow_the_article_and_are_validated(claims):
    groups = factcheck.by_section(claims, factcheck.SEED_FILES[1])
    assert [name for name, _ in groups][0] == "1. What a GPU is"
    assert sum(len(g) for _, g in groups) == sum(
        c.seed_file == factcheck.SEED_FILES[1] for c in claims
    )
    data = copy.deepcopy(_raw())
    data["claims"][0]["section"] = "Nowhere"
    with pytest.raises(GpulabConfigError, match="claim 1, field 'section'"):
        factcheck.validate(data)
    with pytest.raises(GpulabConfigError, match="seed_file"):
        factcheck.by_section(claims, "x.txt")


def test_the_intro_and_the_appendix_credit_both_articles_as_the_registry_does():
    """The intro names each article by its title, in Chinese and English, and its author where
    the article gives one; the appendix renders the same credit from the registry."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    intro = " ".join((root / "book" / "intro.md").read_text(encoding="utf-8").split())
    for seed_file, article in factcheck.ARTICLES.items():
        assert article["title"] in intro and article["title_en"] in intro
        assert article["author"] is None or article["author"] in intro
        assert article["title"] in factcheck.attribution(seed_file)
    cells = json.loads(
        (root / "book" / "appendix" / "fact_check.ipynb").read_text(encoding="utf-8")
    )
    assert any("factcheck.attribution(" in "".join(c["source"]) for c in cells["cells"])
    with pytest.raises(GpulabConfigError, match="seed_file"):
        factcheck.attribution("001.txt")


def test_no_page_calls_an_article_by_its_file_number():
    """Readers know the articles by title ("the hardware guide"), not as "seed 003"."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    jargon = re.compile(r"\bseed (000|003)\b", re.IGNORECASE)
    texts = {
        p: p.read_text(encoding="utf-8")
        for p in [
            *(root / "book").rglob("*.md"),
            *(root / "notebooks").glob("*.ipynb"),
            *(root / "labs").glob("*.ipynb"),
        ]
    }
    assert [str(p.relative_to(root)) for p, t in texts.items() if jargon.search(t)] == []
