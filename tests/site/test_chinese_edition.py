"""The Chinese edition (tools/editions.py): built beside the English site in zh_CN/, from the
same executed notebooks, with every page's messages translated and checked.

The oracles are the English site (its pages, its figures), the catalogues' own msgstr for a
title, the registry's Chinese fields and jieba's segmentation of a translated sentence.
"""

from __future__ import annotations

import html as html_module
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from tests.site.test_site import _pages, _parse
from tools import i18n
from tools.execution import report as timing_report
from tools.execution import runs
from tools.staging import build as site_build

ZH = "zh_CN"
CHAPTERS = sorted(p.with_suffix(".html").as_posix() for p in Path("book").glob("0*.md"))


def _text(page: Path, claims: bool = True) -> str:
    """A page's article as plain text, straight quotes for curly ones; without the {claim}
    links when `claims` is False (they quote the article in English or in Chinese)."""
    html = page.read_text(encoding="utf-8")
    body = html[html.find('<article class="bd-article"') : html.find("</article>")]
    if not claims:
        body = re.sub(r'<a class="claim reference[^"]*"[^>]*>.*?</a>', " ", body, flags=re.S)
    return _plain(html_module.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))))


def _plain(text: str) -> str:
    """Straight quotes for curly ones (the site's smart quotes), for comparing with the data."""
    return text.translate(str.maketrans("\u2018\u2019\u201c\u201d", "''\"\""))


def _english_pages(site: Path) -> list[str]:
    return [
        p.relative_to(site).as_posix() for p in _pages(site) if p.relative_to(site).parts[0] != ZH
    ]


def test_every_english_page_has_its_chinese_counterpart(site):
    """The same pages, by path, in both editions (the theme's search and index pages too)."""
    english = _english_pages(site)
    chinese = [p.relative_to(site / ZH).as_posix() for p in _pages(site / ZH)]
    assert len(english) > 30
    assert sorted(english) == sorted(chinese)


@pytest.mark.parametrize("edition", ["en", ZH])
def test_every_page_links_the_same_page_in_the_other_edition(site, edition):
    """The language button of each page points at that page in the other edition, and the
    file is there (tests/site/test_site.py checks every link on both editions resolves)."""
    root = site if edition == "en" else site / ZH
    other = site / ZH if edition == "en" else site
    wrong = []
    for rel in _english_pages(site):
        html = (root / rel).read_text(encoding="utf-8")
        if html.startswith('<meta http-equiv="Refresh"'):  # index.html: a redirect to the intro
            continue
        match = re.search(r'<a href="([^"]+)"[^>]*class="[^"]*gpulab-language-button', html)
        if not match:
            wrong.append(f"{rel}: no language button")
            continue
        target = ((root / rel).parent / match.group(1)).resolve()
        if target != (other / rel).resolve() or not target.exists():
            wrong.append(f"{rel} -> {match.group(1)}")
    assert not wrong, "\n".join(wrong)


def test_the_catalogues_translate_the_pages(site):
    """At least 98% of the messages translated, none fuzzy, none losing a role, a link, math,
    code or a substitution, none with a typed number (tools/i18n.py)."""
    pot_dir = site_build.catalogue_dir(runs.RunConfig.from_env(mode="quick"))
    pages = {p.relative_to(pot_dir).with_suffix(".html").as_posix() for p in pot_dir.rglob("*.pot")}
    # one template per page, and sphinx.pot for the theme's own words
    assert pages == set(_english_pages(site)) - {"genindex.html", "search.html", "index.html"} | {
        "sphinx.html"
    }
    failures = i18n.check(pot_dir)
    assert not failures, i18n.summary(pot_dir) + "\n" + "\n".join(failures[:40])


@pytest.mark.parametrize(
    "page", ["book/02_vram", "notebooks/05_pitfalls", "labs/03_tokens_per_second_lab"]
)
def test_a_chinese_page_shows_its_translated_title_and_language(site, page):
    """The page's <html lang> is zh-CN and its heading is its catalogue's msgstr."""
    html = (site / ZH / f"{page}.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in html
    english_title = re.search(
        r"<h1>(.*?)<a class=\"headerlink\"", (site / f"{page}.html").read_text(encoding="utf-8")
    ).group(1)
    with (i18n.LOCALES / ZH / "LC_MESSAGES" / f"{page}.po").open("rb") as f:
        catalog = read_po(f)
    expected = catalog.get(re.sub(r"<[^>]+>", "", english_title)).string
    assert re.search(r"<h1>(.*?)<a class=\"headerlink\"", html).group(1) == expected


@pytest.mark.parametrize("page", CHAPTERS)
def test_a_chinese_chapter_shows_the_english_chapters_figures(site, page):
    """Every decimal figure of an English chapter is on its Chinese page: both paste the same
    glued values from the same executed notebooks."""
    number = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")
    english = set(number.findall(_text(site / page, claims=False)))
    chinese = set(number.findall(_text(site / ZH / page, claims=False)))
    assert english, page
    assert english <= chinese, (
        f"{page}: figures missing in Chinese: {sorted(english - chinese)[:20]}"
    )


def test_claims_quote_the_articles_own_words_and_verdicts_are_in_chinese(site):
    """Chapter 1's claims read as the English claim on the English page and as the article's
    Chinese quote on the Chinese one; its verdicts read 错误 / 有误导性 / 正确 there."""
    from gpulab.course import factcheck

    claims = {c.id: c for c in factcheck.load()}
    english, chinese = (
        _text(site / "book/01_why_gpus_are_fast.html"),
        _text(site / ZH / "book/01_why_gpus_are_fast.html"),
    )
    cited = {
        int(i)
        for i in re.findall(r"\{claim\}`(\d+)`", Path("book/01_why_gpus_are_fast.md").read_text())
    }
    assert cited
    for cid in cited:
        claim_en = _plain(claims[cid].claim_en)
        assert claim_en in english, cid
        assert _plain(claims[cid].quote) in chinese, cid
        assert claim_en not in chinese, cid
    assert {factcheck.verdict_name(v, ZH) for v in ("wrong", "misleading")} <= set(
        re.findall(r"[\u4e00-\u9fff]+", chinese)
    )


def test_the_chinese_fact_check_renders_the_registrys_chinese_text(site):
    """Every claim's anchor is on the Chinese appendix, with its Chinese explanation."""
    from gpulab.course import factcheck

    html = (site / ZH / "book" / "appendix" / "fact_check.html").read_text(encoding="utf-8")
    text = _text(site / ZH / "book" / "appendix" / "fact_check.html")
    data = json.loads((runs.ROOT / "src/gpulab/data/fact_check.json").read_text(encoding="utf-8"))
    words = json.loads((runs.ROOT / f"src/gpulab/data/words/{ZH}.json").read_text(encoding="utf-8"))
    chinese = words["factcheck"]["claims"]  # each claim's Chinese, by id
    for entry in data["claims"]:
        assert f'id="claim-{entry["id"]}"' in html, entry["id"]
    missing = [
        e["id"]
        for e in data["claims"]
        if _plain(chinese[str(e["id"])]["rubric_why"])[:30] not in text
    ]
    assert missing == []
    assert factcheck.verdict_name("misleading", ZH) in text


def test_chinese_search_indexes_chinese_words(site):
    """The Chinese search index holds the words jieba cuts from a translated sentence, so a
    reader can search for 显存 or 量化 (Sphinx needs jieba for that)."""
    import jieba

    index = (site / ZH / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(index.removeprefix("Search.setIndex(").removesuffix(")"))
    with (i18n.LOCALES / ZH / "LC_MESSAGES" / "book" / "02_vram.po").open("rb") as f:
        sentence = next(m.string for m in read_po(f) if m.id and "quantiz" in m.id and m.string)
    words = [w for w in jieba.cut_for_search(sentence) if re.fullmatch(r"[\u4e00-\u9fff]{2,}", w)]
    assert words
    missing = [w for w in words if w not in terms["terms"]]
    assert not missing, f"not in the Chinese search index: {missing}"
    assert "显存" in terms["terms"] and "量化" in terms["terms"]


def test_the_chinese_launch_buttons_open_the_english_notebooks(site):
    """A Chinese notebook page's Colab button opens the same notebook as the English page,
    and says it is the English notebook."""
    page = "notebooks/02_will_it_fit.html"
    colab = [link for link in _parse(site / page).links if "colab.research.google.com" in link]
    chinese = (site / ZH / page).read_text(encoding="utf-8")
    assert colab and all(link in chinese for link in colab)
    assert "Colab（英文笔记本）" in chinese  # the words file's site.notebook_language


def test_the_pipelines_own_sentences_are_in_the_editions_language(site):
    """The machine time under a notebook's title, from the timing report, in each language;
    the backend statuses of chapter 4 in Chinese words."""
    from gpulab.reference import measured

    run = runs.RunConfig.from_env(mode="quick")
    times = timing_report.machine_times(run)
    for notebook, shown in times.items():
        if notebook.startswith("notebooks/"):
            page = (
                (site / ZH / notebook)
                .with_suffix(".html")
                .read_text(encoding="utf-8")
                .replace("\u00a0", " ")
            )
            assert re.search(
                r"机器耗时：</strong> 在构建本站的机器上运行全部单元格用了 " + re.escape(shown),
                page,
            )
    text = _text(site / ZH / "book" / "04_backends.html")
    for kind in measured.BACKENDS:
        assert measured.backend_status(kind, lang=ZH) in text, kind


def test_the_chinese_table_of_contents_names_the_parts_in_chinese(site):
    """The sidebar's part captions come from _toc.yml through the root page's catalogue."""
    import yaml

    captions = [
        part["caption"] for part in yaml.safe_load((runs.ROOT / "_toc.yml").read_text())["parts"]
    ]
    with (i18n.LOCALES / ZH / "LC_MESSAGES" / "book" / "intro.po").open("rb") as f:
        catalog = read_po(f)
    html = (site / ZH / "notebooks" / "03_inference_vs_training.html").read_text(encoding="utf-8")
    start = html.find("bd-docs-nav")
    nav = html[start : html.find("</nav>", start)]
    for caption in captions:
        chinese = catalog.get(caption).string
        assert chinese and chinese in nav and caption not in nav, caption


def test_the_themes_words_are_in_the_editions_chinese(site):
    """The theme's own words on a Chinese page are the edition's (site.theme_words): none left
    in English ("Collapse Sidebar", "System Settings"), and no Taiwanese 列印成 PDF."""
    from gpulab.reference import languages

    words = languages.words(ZH, "site")["theme_words"]
    page = site / ZH / "book" / "02_vram.html"
    html = page.read_text(encoding="utf-8")
    assert words["Print to PDF"] in html
    found = [w for w in (*words, "列印") if w in html]
    assert not found, (page, found)


# What a Chinese page says in its own words. The code cells and what they print are shared with
# the English notebooks (the launch buttons open those), so they are left out: the source, text
# printed by a cell and HTML it displays (gpulab's tables, widgets). Markdown a cell displays is
# prose, and so is every output of a page the pipeline executes in the edition's language (the
# fact-check), its exercises' solutions apart.
SHARED_CODE = ("cell_input", "stream", "text_plain", "text_html", "highlight", "math")
EDITION_EXECUTED = {"book/appendix/fact_check.html"}  # executed again with lang="zh_CN"


class _Prose(HTMLParser):
    """The text of a page's <article>, without the elements whose classes `skip` names (and
    without <pre>, <code>, <script>, <style>, <math>)."""

    VOID = {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "wbr",
    }
    ALWAYS = {"pre", "code", "script", "style", "math"}

    def __init__(self, skip: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.skip, self.depth, self.skipping, self.inside = skip, 0, 0, False
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self.VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        if tag == "article" and "bd-article" in classes:
            self.inside = True
        self.depth += 1
        if self.skipping or tag in self.ALWAYS or any(c in self.skip for c in classes):
            self.skipping += 1

    def handle_endtag(self, tag) -> None:
        if tag in self.VOID:
            return
        self.depth -= 1
        if self.skipping:
            self.skipping -= 1
        if tag == "article":
            self.inside = False

    def handle_data(self, data) -> None:
        if self.inside and not self.skipping:
            self.parts.append(data)


def _prose(page: Path, rel: str) -> str:
    skip = ("solution",) if rel in EDITION_EXECUTED else SHARED_CODE
    parser = _Prose(skip)
    parser.feed(page.read_text(encoding="utf-8"))
    return re.sub(r"\s+", " ", "".join(parser.parts))


def _chinese_pages(site: Path) -> dict[str, Path]:
    pages = {p.relative_to(site / ZH).as_posix(): p for p in _pages(site / ZH)}
    return {
        rel: p
        for rel, p in pages.items()
        if rel not in ("genindex.html", "search.html", "index.html")
    }


def test_the_chinese_pages_show_no_markup_and_no_glossary_variant(site):
    """Every Chinese page, as built, read the way the issue's editor read it: no literal `**`
    (emphasis the Markdown did not parse), no variant that STYLE.md's glossary replaced (元 for
    CNY, 两张, 拐点, 位 ...) outside quotation marks, and no English word of the themes."""
    from gpulab.reference import languages
    from tools.checks import catalogue_style

    terms = catalogue_style.glossary(i18n.LOCALES / ZH / "STYLE.md")
    theme = [*languages.words(ZH, "site")["theme_words"], "列印"]
    found = []
    pages = _chinese_pages(site)
    assert len(pages) > 25
    for rel, page in pages.items():
        text = _prose(page, rel)
        assert len(re.findall(r"[\u4e00-\u9fff]", text)) > 100, rel  # the parser read the page
        unquoted = catalogue_style.QUOTED.sub(" ", text)
        found += [
            f"{rel}: ** in ...{text[max(0, m.start() - 40) : m.end() + 40]}..."
            for m in re.finditer(r"\*\*", text)
        ]
        found += [
            f"{rel}: {m.group(0)!r} ({term.concept}): {unquoted[m.start() - 40 : m.end() + 20]}"
            for term in terms
            for m in term.variants.finditer(unquoted)
        ]
        html = page.read_text(encoding="utf-8")
        found += [f"{rel}: the theme's {w!r}" for w in theme if w in html]
    assert not found, "\n".join(found[:30])


def test_every_exercise_title_is_its_catalogues_translation(site):
    """An exercise's title, its solution's title and the instructor guide's links to it show
    the catalogue's msgstr of the English title (sphinx-exercise's titles had no source, so
    Sphinx neither extracted nor translated them: 62 of them stayed English)."""
    from tools.authoring.exercises import HEADING

    checked = 0
    for rel, page in _chinese_pages(site).items():
        source = runs.ROOT / Path(rel).with_suffix(".ipynb")
        if not source.exists():
            continue
        cells = json.loads(source.read_text(encoding="utf-8"))["cells"]
        lines = [line for c in cells for line in "".join(c["source"]).splitlines()]
        titles = [m.groups() for m in map(HEADING.match, lines) if m]
        with (i18n.LOCALES / ZH / "LC_MESSAGES" / Path(rel).with_suffix(".po")).open("rb") as f:
            catalog = read_po(f)
        # a code span ends in a space, the exercise's number in one
        text = re.sub(r" ([)）])", r"\1", " ".join(_text(page).split())).replace(" （", "（")
        for number, english in titles:
            message = catalog.get(english)
            assert message is not None, (rel, english)
            chinese = message.string.replace("`", "")  # inline code shows without its backticks
            assert chinese and chinese != english, (rel, english)
            # the exercise's heading and its solution's link, each "练习 N（title）": the title
            # between the edition's full-width brackets (site.title_brackets)
            assert text.count(f"练习 {number}（{chinese}）") == 2, (rel, number, chinese)
            assert f"({english.replace('`', '')})" not in text, (rel, english)
            checked += 1
    assert checked >= 60


def test_a_table_inside_a_dropdown_is_translated(site):
    """The header cells of every table on the Chinese chapters are their catalogue's msgstr
    where the English is a message: MyST parses a table inside a directive (a dropdown's)
    without positions, and Sphinx skipped its cells until tools/sphinx_ext/i18n.py gave them
    one (chapter 1's "format | dense peak | relative to FP16")."""
    header = re.compile(r"<th[^>]*>(?:<p>)?(.*?)(?:</p>)?</th>", re.S)
    checked = 0
    for rel in CHAPTERS:
        with (i18n.LOCALES / ZH / "LC_MESSAGES" / Path(rel).with_suffix(".po")).open("rb") as f:
            catalog = read_po(f)
        english = header.findall((site / rel).read_text(encoding="utf-8"))
        chinese = header.findall((site / ZH / rel).read_text(encoding="utf-8"))
        assert len(english) == len(chinese), rel
        for en, zh in zip(english, chinese, strict=True):
            message = catalog.get(html_module.unescape(en).strip())
            if message is not None and message.string:
                assert html_module.unescape(zh).strip() == message.string, (rel, en, zh)
                checked += 1
    assert checked > 40
    assert "稠密峰值" in (site / ZH / "book/01_why_gpus_are_fast.html").read_text(encoding="utf-8")
