"""The Chinese edition's catalogue tool (tools/i18n.py), its editions and its Sphinx extension.

The oracles are hand-written messages with what a translation must keep, and catalogues built
here with babel, whose merge results are worked out by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from gpulab.reference import languages
from tools import editions, i18n
from tools.sphinx_ext import i18n as sphinx_i18n

GLUE = "{glue:text}`../notebooks/02_will_it_fit.ipynb::weights_gb:.1f`"


@pytest.mark.parametrize(
    ("msgid", "msgstr"),
    [
        (f"The weights take {GLUE} GB.", f"权重占 {GLUE} GB。"),
        ("See {doc}`the setup page <setup>` first.", "先看{doc}`环境配置页 <setup>`。"),
        ("The tutorial says {claim}`42`; {verdict}`42`.", "教程说 {claim}`42`；{verdict}`42`。"),
        (
            "Run `make test` on [the site](https://example.org/x).",
            "在[本站](https://example.org/x)上运行 `make test`。",
        ),
        (
            "It is $2 \\times N$ bytes: {{ time_machine }}.",
            "共 $2 \\times N$ 字节：{{ time_machine }}。",
        ),
        ("Two GPUs, four times the memory.", "两块 GPU，显存是四倍。"),
        ("Chapter 3 has 16 GB.", "第 3 章有 16 GB。"),
        (
            "\\text{weight bytes} = N \\times \\frac{b}{8}",
            "\\text{权重字节数} = N \\times \\frac{b}{8}",
        ),
        (
            "t = t_{\\text{fixed}} + n",
            "t = t_{\\text{fixed}} + n \\qquad \\text{（固定开销加上步数）}",
        ),
    ],
)
def test_a_faithful_translation_has_no_problem(msgid, msgstr):
    """Roles, a retitled {doc}, links, code, math, substitutions and the English's numbers kept."""
    assert i18n.problems(msgid, msgstr) == []


def test_a_month_the_english_names_may_be_written_in_digits():
    """A date reads "2024 年 7 月" in Chinese (STYLE.md): the month's digits are the English's
    month name, so they are not a typed number; a month the English does not name still is."""
    msgid = "FlashAttention-3 was published in July 2024 ([arXiv](https://arxiv.org/abs/x))"
    assert (
        i18n.problems(
            msgid, "FlashAttention-3 发表于 2024 年 7 月（[arXiv](https://arxiv.org/abs/x)）"
        )
        == []
    )
    assert i18n.problems("Released in December 2023.", "发布于 2023 年 12 月。") == []
    assert i18n.problems("Released in 2023.", "发布于 2023 年 7 月。") == [
        "numbers the English lacks: 7"
    ]
    found = i18n.problems("Published in July 2024.", "发表于 2024 年 8 月。")
    assert found == ["numbers the English lacks: 8"]
    # only as a month: the digits of a month name elsewhere in the sentence are typed
    assert i18n.problems("In July, 3 GPUs.", "七月，3 张 GPU，7 倍。") == [
        "numbers the English lacks: 7"
    ]


@pytest.mark.parametrize(
    ("msgid", "msgstr", "expected"),
    [
        (f"The weights take {GLUE} GB.", "权重占 14.0 GB。", "roles missing: {glue:text}"),
        ("The tutorial says {claim}`42`.", "教程说 {claim}`43`。", "roles missing: {claim}42"),
        (
            "See [the site](https://example.org/x).",
            "见[本站](https://example.org/y)。",
            "links missing: https://example.org/x",
        ),
        ("It is $2 \\times N$ bytes.", "共 2N 字节。", "math missing: 2\\timesN"),
        ("Run `make test`.", "运行 make test。", "code missing: make test"),
        ("As of {{ time_machine }}.", "截至本机。", "substitutions missing: {{time_machine}}"),
        (
            "Two GPUs, four times the memory.",
            "2 块 GPU，显存是 4 倍。",
            "numbers the English lacks: 2, 4",
        ),
        ("It costs about a quarter.", "成本约为 25%。", "numbers the English lacks: 25"),
        ("Plain words.", "多了 {claim}`7`。", "roles not in the English: {claim}7"),
        ("\\text{bytes} = N \\times \\frac{b}{8}", "\\text{字节数} = N \\times b", "math missing"),
        (
            "\\text{bytes} = N \\times \\frac{b}{8}",
            "\\text{字节数} = N \\times \\frac{b}{16}",
            "math missing",
        ),
        ("\\text{bits} = q + s", "\\text{位数} = q + s + 1", "numbers the English lacks: 1"),
    ],
)
def test_a_translation_that_loses_or_adds_something_is_named(msgid, msgstr, expected):
    """Each kind of loss, and a number typed in translation, is reported in words."""
    found = i18n.problems(msgid, msgstr)
    assert any(p.startswith(expected) for p in found), found


@pytest.mark.parametrize(
    ("msgid", "words"),
    [
        ("{verdict}`12`", False),
        ("{doc}`Check your setup: is your GPU being used? </notebooks/00_check_your_setup>`", True),
        ("{ref}`hidden GPUs <ch00-hidden-gpus>`, {ref}`the memory <ch00-matrix-memory>`", True),
        ("{doc}`RTX 4090 <../book/02_vram>`", False),
        ("{doc}`../notebooks/00_check_your_setup`", False),
        ("{{ time_nb_00_check_your_setup }}", False),
        ("`fp16`", False),
        ("16 GB", False),
        ("300 W", False),
        ("$2N$", False),
        ("The weights", True),
        ("RTX 4090", False),
        ("FP16 / BF16", False),
        ("ZeRO-3", False),
        ("8-bit AdamW", True),
        ("FP16: 141 GB; 4-bit: 40 GB", True),
        ("CUDA 12.6", False),
        ("Metal", True),
        ("Hardware", True),
        ("CPU vs GPU", True),
        ("I = \\frac{F}{B}", False),
        ("\\text{bytes moved} = 2N", True),
        ("\\text{GB/s} = B", False),
    ],
)
def test_a_message_with_no_words_is_left_out(msgid, words):
    """A lone role, substitution, code span, number or formula has nothing to translate; a
    role's title shown in front of its target has."""
    assert i18n.has_words(msgid) is words


def _catalog(messages: dict[str, str], fuzzy: tuple[str, ...] = ()) -> Catalog:
    catalog = Catalog(locale="zh_CN")
    for msgid, msgstr in messages.items():
        catalog.add(msgid, msgstr, flags=("fuzzy",) if msgid in fuzzy else ())
    return catalog


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog)


def _read(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def test_update_keeps_translations_marks_changes_fuzzy_and_drops_the_gone(tmp_path):
    """A kept message keeps its msgstr; an edited one turns fuzzy; a removed one disappears,
    and so does the catalogue of a page that is gone."""
    pots, locales = tmp_path / "gettext", tmp_path / "locales"
    _write(
        pots / "book" / "page.pot",
        _catalog(
            {"Why GPUs are fast": "", "The weights take some memory.": "", "A new paragraph.": ""}
        ),
    )
    po = locales / "zh_CN" / "LC_MESSAGES" / "book" / "page.po"
    _write(
        po,
        _catalog(
            {
                "Why GPUs are fast": "GPU 为什么快",
                "The weights take memory.": "权重占用显存。",
                "A removed sentence.": "删掉的句子。",
            }
        ),
    )
    gone = locales / "zh_CN" / "LC_MESSAGES" / "book" / "gone.po"
    _write(gone, _catalog({"Old": "旧"}))
    i18n.update(pots, locales)
    merged = _read(po)
    assert merged.get("Why GPUs are fast").string == "GPU 为什么快"
    edited = merged.get("The weights take some memory.")
    assert edited.fuzzy and edited.string == "权重占用显存。"
    assert merged.get("A new paragraph.").string == ""
    assert merged.get("A removed sentence.") is None and not merged.obsolete
    assert not gone.exists()


def test_update_from_an_empty_extraction_deletes_nothing(tmp_path):
    """A gettext build that failed leaves no templates: update refuses, every catalogue stays."""
    locales = tmp_path / "locales"
    po = locales / "zh_CN" / "LC_MESSAGES" / "book" / "page.po"
    _write(po, _catalog({"Why GPUs are fast": "GPU 为什么快"}))
    (tmp_path / "gettext").mkdir()
    with pytest.raises(ValueError, match="no message templates"):
        i18n.update(tmp_path / "gettext", locales)
    assert _read(po).get("Why GPUs are fast").string == "GPU 为什么快"


def test_check_counts_fuzzy_untranslated_and_copied_messages(tmp_path):
    """Coverage is translated over total, a msgstr equal to its msgid is untranslated, a
    fuzzy message fails, and a typed number is named."""
    pots, locales = tmp_path / "gettext", tmp_path / "locales"
    english = {f"Sentence number {word}.": "" for word in ("one", "two", "three", "four")}
    _write(pots / "p.pot", _catalog(english))
    po = locales / "zh_CN" / "LC_MESSAGES" / "p.po"
    _write(
        po,
        _catalog(
            {
                "Sentence number one.": "第一句。",
                "Sentence number two.": "Sentence number two.",
                "Sentence number three.": "第三句。",
                "Sentence number four.": "第 4 句。",
            },
            fuzzy=("Sentence number three.",),
        ),
    )
    stats = i18n.page_stats(pots / "p.pot", pots, locales)
    assert (stats.total, stats.translated, stats.fuzzy) == (4, 2, 1)
    assert set(stats.untranslated) == {"Sentence number two.", "Sentence number three."}
    failures = i18n.check(pots, locales, min_translated=0.5)
    assert any("numbers the English lacks: 4" in f for f in failures)
    assert any("1 fuzzy" in f for f in failures)
    assert not any("translated (" in f for f in failures)  # 2 of 4 meets one half
    assert any("2 of 4 messages translated (50.0%)" in f for f in i18n.check(pots, locales, 0.98))


def test_drop_untranslatable_keeps_only_messages_with_words(tmp_path):
    """The templates lose their lone roles and numbers, and keep the prose."""
    pots = tmp_path / "gettext"
    _write(pots / "p.pot", _catalog({"{verdict}`3`": "", "24 GB": "", "The card has 24 GB.": ""}))
    assert i18n.drop_untranslatable(pots) == 2
    assert [m.id for m in _read(pots / "p.pot") if m.id] == ["The card has 24 GB."]


@pytest.mark.parametrize(
    ("pagename", "language", "url"),
    [
        ("book/intro", "en", "../zh_CN/book/intro.html"),
        ("book/intro", "zh_CN", "../../book/intro.html"),
        ("book/appendix/fact_check", "en", "../../zh_CN/book/appendix/fact_check.html"),
        ("book/appendix/fact_check", "zh_CN", "../../../book/appendix/fact_check.html"),
        ("search", "en", "zh_CN/search.html"),
        ("genindex", "zh_CN", "../genindex.html"),
    ],
)
def test_the_language_button_links_the_same_page_in_the_other_edition(pagename, language, url):
    """The English site is the root and the Chinese one is its zh_CN/ folder (worked by hand)."""
    assert sphinx_i18n.other_edition_url(pagename, language) == url


def test_the_pipeline_sentences_exist_in_every_language_with_the_same_fields():
    """Each sentence the pipeline adds to a page has every edition's wording, with the same
    {fields}, and a Chinese one is in Chinese."""
    import string

    fields = {
        key: {f for _, f, _, _ in string.Formatter().parse(value) if f}
        for key, value in editions.TEXTS["en"].items()
    }
    for lang in editions.LANGUAGES:
        assert set(editions.TEXTS[lang]) == set(fields), lang
        for key, value in editions.TEXTS[lang].items():
            assert {f for _, f, _, _ in string.Formatter().parse(value) if f} == fields[key], (
                lang,
                key,
            )
    assert all(
        any("\u4e00" <= ch <= "\u9fff" for ch in v) for v in editions.TEXTS["zh_CN"].values()
    )
    with pytest.raises(ValueError, match="lang='fr'"):
        editions.text("fr", "machine_time")


def test_only_the_fact_check_runs_once_more_and_in_chinese():
    """The Chinese site shows the English executed copies, but the fact-check's own."""
    runs = editions.per_language_runs()
    assert [(p.relative_to(editions.ROOT).as_posix(), lang) for p, lang in runs] == [
        ("book/appendix/fact_check.ipynb", "zh_CN")
    ]
    assert (
        editions.outputs_language(editions.ROOT / "notebooks/02_will_it_fit.ipynb", "zh_CN") == "en"
    )
    assert editions.outputs_language(runs[0][0], "zh_CN") == "zh_CN"


def test_every_word_a_chapter_pastes_reads_in_chinese():
    """Each pasted figure of the book's pages that is words, as tools/checks/page_figures.py
    resolves it from the chapters' figures, has a Chinese rendering; numbers, GPU names and the
    name of the machine that validated the memory estimator (as its CPU reports it) pass
    through."""
    import re

    from gpulab.reference import measured, specs
    from tools.checks import page_figures

    names = set(specs.load_gpus()) | {measured.estimator_validation()["machine"]}
    english = set()
    for page in page_figures.pages():
        rel = page.relative_to(page_figures.ROOT).as_posix()
        for ref in page_figures.parse(page.read_text(encoding="utf-8"), rel):
            value = page_figures.resolve_ref(ref)
            if ref.spec in ("s", "") and re.search(r"[a-z]{2,}", value):
                english.add(value)
    assert {"fits", "does not fit", "yes", "no"} <= english
    untranslated = [
        v
        for v in english
        if v not in names
        and i18n.has_words(v)
        and not re.search(r"[\u4e00-\u9fff]", editions.glued_text(v, "zh_CN"))
    ]
    assert untranslated == []


@pytest.mark.parametrize(
    ("english", "chinese"),
    [
        ("does not fit", "放不下"),
        ("fits in no split", "怎么切分都放不下"),
        ("on the peak load", "峰值功率"),
        ("does not carry both", "扛不住两项"),
        ("one row per token, 16 KB", "每个 token 一行，16 KB"),
        ("0.1 GB, the whole table as gpulab.perf counts it", "0.1 GB（gpulab.perf 按整张表计）"),
        ("RTX 3090", "RTX 3090"),
        ("12.3", "12.3"),
    ],
)
def test_a_glued_value_is_rendered_whole_or_left_alone(english, chinese):
    """Every branch the figure functions can glue (figures_ch02/03/06/07), worked by hand."""
    assert editions.glued_text(english, "zh_CN") == chinese
    assert editions.glued_text(english, "en") == english


def test_the_chinese_search_splits_and_stems_as_sphinxs_own():
    """The set-based Chinese search language gives Sphinx's SearchChinese's words and stems."""
    from sphinx.search.zh import SearchChinese

    text = (
        "显存不够时，量化（quantization）能省多少？Offloading the KV cache to RAM is slow; GPU、CPU"
    )
    ours, theirs = sphinx_i18n.chinese_search_language()({}), SearchChinese({})
    assert ours.split(text) == theirs.split(text)
    assert [ours.stem(w) for w in ours.split(text)] == [theirs.stem(w) for w in theirs.split(text)]
    assert isinstance(ours.latin_terms, set) and "Offloading" in ours.latin_terms


def test_the_chinese_theme_words_come_before_the_themes_catalogues():
    """sphinx-book-theme's zh_CN catalogue says Taiwanese 列印成 PDF, and pydata-sphinx-theme's
    leaves "Collapse Sidebar" in English: the edition's words (site.theme_words) answer first,
    and the theme's catalogue still answers the rest."""
    import gettext

    import sphinx_book_theme

    words = languages.words("zh_CN", "site")["theme_words"]
    english = {"System Settings", "Collapse Sidebar", "Expand Sidebar", "Print to PDF"}
    assert english <= set(words)
    assert not any(re.search(r"[A-Za-z]{3,}", words[w].replace("PDF", "")) for w in english)
    book = Path(sphinx_book_theme.get_html_theme_path()) / "static" / "locales"
    theme = gettext.translation("booktheme", localedir=str(book), languages=["zh_CN"])
    assert theme.gettext("Print to PDF") == "列印成 PDF"  # what the site showed
    others = {m: theme.gettext(m) for m in ("Download source file", "Fullscreen mode")}
    sphinx_i18n.prefer_words(theme, words)
    assert theme.gettext("Print to PDF") == "打印为 PDF"
    assert {m: theme.gettext(m) for m in others} == others
    # a catalogue that found no file answers our words and leaves the rest in English
    empty = gettext.NullTranslations()
    sphinx_i18n.prefer_words(empty, words)
    assert empty.gettext("Collapse Sidebar") == "收起侧边栏"
    assert empty.gettext("Light") == "Light"
