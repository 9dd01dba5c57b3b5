"""The course's editions: what the message catalogues hold, and the links between languages.

- In a ``gettext`` build, executed outputs leave the doctree before messages are extracted:
  text a cell displays (the fact-check's entries, a table's caption, a figure's alt text)
  changes with every computed value, and its translation would go fuzzy on every build.
- Every page of every edition gets a language button in its header for each other language,
  linking the same page there (a translated site lies in its registry folder under the
  English one: ``gpulab.reference.languages``).
- Text that MyST and sphinx-exercise leave without a source (a table inside a dropdown, an
  exercise's title) is given one, so that it is extracted and translated like the rest.
- In a translated edition, display equations take their translated labels from the catalogue,
  the table of contents' captions are translated too,
  and the figures that are words ("fits", "yes") are rendered in its language.
- In a translated edition the launch buttons say that they open the English notebooks (its
  words' ``site.notebook_language``): the code cells are shared, and only the site is translated.
- In a translated edition the themes' own words that their catalogues leave in English ("Collapse
  Sidebar") or give in another variant of the language (sphinx-book-theme's zh_CN "Print to
  PDF" is Taiwanese 列印成 PDF) take the edition's words (``site.theme_words``), ahead of the
  themes' catalogues.
- A language whose registry entry asks for jieba (Chinese) has its search index split by it.
- An exercise's title sits between the edition's brackets (full-width in Chinese).
- A collapsed cell output (myst-nb's ``hide-output``: a prediction's reveal) is named by its
  visible prompt, in the edition's words (``site.hidden_prompts``): myst-nb's own summary
  carries an English ``aria-label`` that differs from the text shown, which axe-core reports as
  a serious violation (label-content-name-mismatch).

Registered as a local extension in ``_config.yml``.
"""

from __future__ import annotations

import logging
import sys
from gettext import NullTranslations
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

# Sphinx loads this file by module path; the editions' language data is tools.editions
if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulab.reference import languages  # noqa: E402

LANGUAGE_LINK_JS = (
    "language-link.js"  # opens the other edition in the same tab (tools/staging/static)
)


def language_of(config) -> str:
    """The edition a build writes: Sphinx's language where it is a registry code, else English."""
    language = str(config.language or "")
    return language if language in languages.codes() else languages.source()


def others(language: str) -> list[str]:
    """The other editions' codes in registry order: each gets a button on `language`'s pages."""
    return [code for code in languages.codes() if code != language]


class DropOutputsForCatalogues(SphinxTransform):
    """Remove the cells' executed outputs from a gettext build's doctrees."""

    default_priority = 10  # before Sphinx's own i18n transforms (Locale is 20)

    def apply(self, **kwargs) -> None:
        if self.app.builder.name != "gettext":
            return
        for node in list(self.document.findall(nodes.container)):
            if "cell_output" in node.get("classes", []):
                node.parent.remove(node)


class TranslateEquations(SphinxTransform):
    """Put a display equation's translation (its \\text{} labels in Chinese) in place.

    Sphinx parses a translated literal-type node as reStructuredText literal-block notation
    ("::" and an indented block); through MyST that renders the equation as "::". The
    equation is looked up in the page's catalogue here instead, and left out of Sphinx's pass.
    """

    default_priority = 15  # before Sphinx's Locale transform (20)

    def apply(self, **kwargs) -> None:
        translate = page_catalogue(self)
        if translate is None:
            return
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False  # never through Sphinx's literal-block route
            msgid = node.rawsource or node.astext()
            msgstr = translate(msgid)
            if msgstr and msgstr != msgid:
                node.children = [nodes.Text(msgstr)]


class GiveNestedTextASource(SphinxTransform):
    """Give a source and a line to the text Sphinx's gettext skips for lacking them: the cells of
    a table inside a directive (a dropdown's table; MyST parses it without positions) and
    sphinx-exercise's exercise titles (``{exercise} title``). Without a source Sphinx neither
    extracts nor translates a text, so these stayed English on the translated pages."""

    default_priority = 15  # before Sphinx's Locale transform (20), which skips them otherwise

    def apply(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.TextElement)):
            if node.source or isinstance(node, (nodes.Inline, nodes.FixedTextElement)):
                continue
            title = _is_exercise_title(node)
            if not (title or _in_table(node)) or not node.rawsource.strip():
                continue
            node.source = self.document["source"]
            node.line = _nearest_line(node)
            if title:  # a title's rawsource is its text: put its code back
                node.rawsource = _markdown(node)


def _is_exercise_title(node: nodes.Node) -> bool:
    """sphinx-exercise's title text: its subtitle node, the words after ``{exercise}``."""
    return type(node).__name__ == "exercise_subtitle"


def _in_table(node: nodes.Node) -> bool:
    return isinstance(node, nodes.paragraph) and isinstance(node.parent, nodes.entry)


class KeepTranslatedExercises(SphinxTransform):
    """Give sphinx-exercise's registry each exercise's translated title: a solution's title and
    a link to an exercise repeat the title from the registry's copy of the exercise, which
    otherwise keeps the English words."""

    default_priority = 21  # after Sphinx's Locale transform (20)

    def apply(self, **kwargs) -> None:
        registry = getattr(self.env, "sphinx_exercise_registry", None)
        if not registry or page_catalogue(self) is None:
            return
        for node in self.document.findall(nodes.Admonition):
            entry = (
                registry.get(node.get("label"))
                if type(node).__name__.startswith("exercise")
                else None
            )
            if entry is None or entry["node"] is node:
                continue
            translated, kept = _subtitle(node), _subtitle(entry["node"])
            if translated is not None and kept is not None:
                kept.children = []
                kept.extend(child.deepcopy() for child in translated.children)


def _subtitle(exercise: nodes.Element) -> nodes.Element | None:
    """An exercise node's title text (sphinx-exercise's subtitle), None when it has none."""
    title = exercise.children[0] if exercise.children else None
    return next((c for c in getattr(title, "children", ()) if _is_exercise_title(c)), None)


def _extract_exercise_titles(app, doctree) -> None:
    """In a gettext build, put each exercise title in the page's catalogue now: sphinx-exercise's
    post-transform folds the title into "Exercise N (title)" before Sphinx extracts a page's
    messages, and the title's own node is gone by then (the translated build still finds it:
    Sphinx's Locale pass runs before that post-transform)."""
    if app.builder.name != "gettext":
        return
    # MsgOrigin: a position with the uid Sphinx's catalogue needs (a node has none yet)
    from sphinx.builders.gettext import MsgOrigin
    from sphinx.util.i18n import docname_to_domain

    catalog = app.builder.catalogs[docname_to_domain(app.env.docname, app.config.gettext_compact)]
    for node in doctree.findall(nodes.TextElement):
        if _is_exercise_title(node) and node.source and node.rawsource.strip():
            catalog.add(node.rawsource.strip(), MsgOrigin(node.source, node.line))


def _markdown(node: nodes.Element) -> str:
    """A title's Markdown as written: its text, with its inline code in backticks."""
    return "".join(
        f"`{child.astext()}`" if isinstance(child, nodes.literal) else child.astext()
        for child in node.children
    )


def _nearest_line(node: nodes.Node) -> int:
    """The line of the nearest enclosing node that has one (1 where none has)."""
    while node is not None:
        if getattr(node, "line", None):
            return node.line
        node = node.parent
    return 1


class TranslateCaptions(SphinxTransform):
    """Translate the table of contents' part captions ("Chapter 1: why GPUs are fast"):
    sphinx-external-toc inserts its toctrees (priority 100) after Sphinx's Locale pass."""

    default_priority = 101

    def apply(self, **kwargs) -> None:
        translate = page_catalogue(self)
        if translate is None:
            return
        for toctree in self.document.findall(addnodes.toctree):
            if toctree.get("caption"):
                toctree["caption"] = translate(toctree["caption"]) or toctree["caption"]


def page_catalogue(transform: SphinxTransform):
    """The current page's gettext lookup in a translated build; None in English or gettext."""
    if (
        language_of(transform.config) == languages.source()
        or transform.app.builder.name == "gettext"
    ):
        return None
    from os import path

    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    domain = docname_to_domain(transform.env.docname, transform.config.gettext_compact)
    dirs = [path.join(transform.env.srcdir, d) for d in transform.config.locale_dirs]
    catalog, found = init_locale(dirs, transform.config.language, domain)
    return catalog.gettext if found else (lambda msgid: msgid)


class TranslateGluedWords(SphinxPostTransform):
    """Render the figures that are words ("fits", "yes"), pasted by {fig}, in the edition's
    language (editions.GLUED_WORDS); numbers and names pass through as they are."""

    default_priority = 6

    def apply(self, **kwargs) -> None:
        from tools import editions

        language = language_of(self.config)
        if language == languages.source():
            return
        for node in list(self.document.findall(nodes.inline)):
            if "pasted-text" in node.get("classes", []):
                text = node.astext()
                rendered = editions.glued_text(text, language)
                if rendered != text:
                    node.children = [nodes.Text(rendered)]


class BracketExerciseTitles(SphinxPostTransform):
    """Put an exercise's title between the edition's brackets (``site.title_brackets``,
    Chinese full-width: 练习 4（每百万 token 一元）): sphinx-exercise writes " (" and ")" around
    it in the exercise's heading, its solution's heading and links to it."""

    default_priority = 23  # after sphinx-exercise's title and link resolvers (20 to 22)

    def run(self, **kwargs) -> None:
        language = language_of(self.config)
        if language == languages.source():
            return
        brackets = languages.words(language, "site").get("title_brackets")
        if not brackets:
            return
        opening, closing = brackets
        for admonition in self.document.findall(nodes.Admonition):
            if not type(admonition).__name__.startswith(("exercise", "solution")):
                continue
            title = admonition.next_node(nodes.title)
            for text in list(title.findall(nodes.Text)) if title is not None else ():
                if str(text) in (" (", ")"):
                    shown = opening if str(text) == " (" else closing
                    text.parent.replace(text, nodes.Text(shown))


def hidden_prompt(text: str, language: str) -> str:
    """A collapsed cell's prompt ("Show code cell output") in the edition's words."""
    if language == languages.source():
        return text
    return languages.words(language, "site").get("hidden_prompts", {}).get(text, text)


def visit_hidden_cell(self, node) -> None:
    """myst-nb's <details> around a hidden cell part, its <summary> named by what it shows."""
    from html import escape

    language = language_of(self.builder.config)
    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n')
    self.body.append("<summary>\n")
    for state, key in (("collapsed", "prompt_show"), ("expanded", "prompt_hide")):
        text = escape(hidden_prompt(node[key], language))
        self.body.append(f'<p class="{state} admonition-title">{text}</p>\n')
    self.body.append("</summary>\n")


def other_edition_url(pagename: str, language: str, other: str | None = None) -> str:
    """The relative URL of the same page in the `other` edition (with two editions, the one
    other), from a page of `language`."""
    if other is None:
        (other,) = others(language)
    up = "../" * pagename.count("/")
    here, there = languages.get(language).folder, languages.get(other).folder
    # from <folder>/<page> back to the root is one more level up than the page's own depth
    root = up + ("../" if here else "")
    return f"{root}{there + '/' if there else ''}{pagename}.html"


def _add_language_button(app, pagename, templatename, context, doctree) -> None:
    if "header_buttons" not in context:
        return
    language = language_of(app.config)
    for other in others(language):
        entry = languages.get(other)
        context["header_buttons"].append(
            {
                "type": "link",
                "url": other_edition_url(pagename, language, other),
                "text": entry.button,
                "tooltip": entry.tooltip,
                "icon": "fas fa-language",
                "label": "language-button" + ("" if len(languages.codes()) == 2 else f"-{other}"),
                "classes": "pst-navbar-icon gpulab-language-button",
            }
        )
    if language != languages.source():
        suffix = languages.words(language, "site")["notebook_language"]
        for group in context["header_buttons"]:
            for button in (
                group.get("buttons", []) if group.get("label") == "launch-buttons" else []
            ):
                button["text"] = button.get("text", "") + suffix
                button["tooltip"] = button.get("tooltip", "") + suffix


def chinese_search_language():
    """Sphinx's Chinese search language, its Latin terms kept in a set.

    Sphinx 7's SearchChinese appends every Latin word of every page to a list and tests each
    word it stems for membership in that list: on this site that scan took 42 of the Chinese
    build's 87 seconds. A set answers the same question; the words are split as Sphinx does.
    """
    from sphinx.search import zh

    class SearchChineseWithASet(zh.SearchChinese):
        def init(self, options) -> None:
            super().init(options)
            self.latin_terms = set()  # this index's own, not the class's shared list

        def split(self, input: str) -> list[str]:
            chinese = list(zh.jieba.cut_for_search(input)) if zh.JIEBA else []
            latin = [term.strip() for term in self.latin1_letters.findall(input)]
            self.latin_terms.update(latin)
            return chinese + latin

    return SearchChineseWithASet


# the message catalogues the themes' words come from: Sphinx's and pydata-sphinx-theme's
# ("sphinx"), sphinx-book-theme's ("booktheme")
THEME_CATALOGUES = ("sphinx", "booktheme")


def prefer_words(translator, words: dict[str, str]) -> None:
    """Make a gettext `translator` answer `words` (English to the edition's) before its own
    catalogue, and fall back to it for the rest."""
    catalogue = getattr(translator, "_catalog", None)
    if catalogue is not None:  # a catalogue found (GNUTranslations): ours go in first
        catalogue.update(words)
    else:  # none found: ours answer, else the English
        translator.add_fallback(_Words(words))


class _Words(NullTranslations):
    """A gettext catalogue of a few words, the rest left in English."""

    def __init__(self, words: dict[str, str]) -> None:
        super().__init__()
        self.words = dict(words)

    def gettext(self, message: str) -> str:
        return self.words.get(message, message)


def _theme_words(app) -> None:
    """Put the edition's theme words ahead of the themes' catalogues; the themes register their
    catalogues while the builder starts, before this runs."""
    language = language_of(app.config)
    if language == languages.source() or app.builder.name == "gettext":
        return
    from sphinx.locale import get_translator

    words = languages.words(language, "site").get("theme_words", {})
    for catalogue in THEME_CATALOGUES:
        prefer_words(get_translator(catalogue), words)


def _quiet_jieba(app, config) -> None:
    """jieba, Sphinx's Chinese search splitter, logs its dictionary loading into the build log;
    it sets its own logger's level when imported, so it is imported here and told to be quiet."""
    if languages.get(language_of(config)).search_tokenizer == "jieba":
        import jieba

        jieba.setLogLevel(logging.WARNING)


def setup(app):
    """Register the catalogue transform and the language button."""
    app.connect("config-inited", _quiet_jieba)
    app.connect("builder-inited", _theme_words)
    app.connect("doctree-read", _extract_exercise_titles)
    if any(lang.search_tokenizer == "jieba" for lang in languages.registry()):
        app.add_search_language(chinese_search_language())
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    # after myst-nb's own registration (local extensions load last): ours replaces its visitor
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_HideCellInput))
    app.add_transform(DropOutputsForCatalogues)
    app.add_transform(GiveNestedTextASource)
    app.add_transform(TranslateEquations)
    app.add_transform(KeepTranslatedExercises)
    app.add_transform(TranslateCaptions)
    app.add_post_transform(TranslateGluedWords)
    app.add_post_transform(BracketExerciseTitles)
    app.add_js_file(LANGUAGE_LINK_JS)
    # after sphinx-book-theme has filled header_buttons (priority 501)
    app.connect("html-page-context", _add_language_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
