"""The course's editions, English and its translations, built from one source (docs/design.md).

The languages are the registry's (``gpulab.reference.languages``: ``data/languages.json``).
A translated edition is the English pages with their messages translated through Sphinx's
gettext catalogues (``locales/<code>/LC_MESSAGES/<page>.po``, kept by ``tools/i18n.py``). All
editions show the same executed notebooks, so every figure is the same number in each; the
one exception is a notebook whose outputs are text generated in the page's language
(PER_LANGUAGE), which runs once more per edition. The few sentences the pipeline itself adds
to a page (a notebook's machine time, a lab's launch line) are written here in English and in
each language's words file ("pipeline"), so that no computed figure passes through a catalogue.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from gpulab.reference import languages

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = languages.codes()  # the first is the source language, whose site is the root
LOCALES = ROOT / "locales"  # <lang>/LC_MESSAGES/<page>.po
# Notebooks whose outputs are prose generated in the edition's language: the fact-check's
# entries come from the registry and the words files, which hold each explanation in every language.
PER_LANGUAGE = ("book/appendix/fact_check.ipynb",)
TITLES = {lang.code: lang.title for lang in languages.registry() if lang.title}

# The pipeline's own sentences, by language; {fields} are filled by tools/pipeline.py.
TEXTS = {
    "en": {
        "machine_time": "**Machine time:** {seconds} to run every cell on the machine that built "
        "this site ({machine}; {mode}).",
        "mode_quick": "quick mode",
        "mode_full": "full mode",
        "machine": "{model}, {threads} CPU threads, {gpus}",
        "gpus_hidden": "GPUs hidden",
        "device": "device {device}",
        "unknown_machine": "the build machine",
        "do_the_lab": "**Do the lab:** open the exercise, with the parts to write left empty, "
        "[in Colab]({colab}) or as a {{download}}`notebook to download <{download}>`. "
        "This page is the lab's solution, run top to bottom.",
    },
    **{lang: languages.words(lang, "pipeline") for lang in languages.translated()},
}


# The words the chapters' figures glue into pages (gpulab.course.figures_ch0*), as each
# edition says them: (the whole English value as a pattern, its rendering). A value no
# pattern matches (a number, a GPU's name) is pasted as it is.
# In English the value is its own rendering; each translated language's pairs are its words
# file's "glued_words".
GLUED_WORDS = {
    lang: tuple((pattern, rendering) for pattern, rendering in languages.words(lang, "glued_words"))
    for lang in languages.translated()
}


def glued_text(value: str, lang: str) -> str:
    """A glued value as the `lang` edition pastes it: its words translated, else unchanged."""
    for pattern, rendering in GLUED_WORDS.get(lang, ()):
        match = re.fullmatch(pattern, value)
        if match:
            return match.expand(rendering)
    return value


def text(lang: str, key: str) -> str:
    """One of the pipeline's sentences in `lang` (a KeyError names a missing translation)."""
    if lang not in TEXTS:
        raise ValueError(f"lang={lang!r} is not one of {', '.join(LANGUAGES)}")
    return TEXTS[lang][key]


def source_folder(edition: str) -> str:
    """The staged source tree's folder in a run: site_src, site_src_<code>, site_src_gettext."""
    return "site_src" if edition == "en" else f"site_src_{edition}"


def outputs_language(notebook: Path, lang: str) -> str:
    """Which edition's executed copy of `notebook` a `lang` site shows."""
    rel = notebook.resolve().relative_to(ROOT).as_posix()
    return lang if rel in PER_LANGUAGE else "en"


def per_language_runs() -> list[tuple[Path, str]]:
    """The extra executions the other editions need: (notebook, lang)."""
    return [(ROOT / rel, lang) for lang in LANGUAGES[1:] for rel in PER_LANGUAGE]


def configure(config: dict, edition: str, src: Path) -> None:
    """Set a staged `_config.yml` (as a dict) for an edition, copying its catalogues into `src`.

    Every edition extracts and looks up one catalogue per page (gettext_compact off), without
    file locations or ids that would change the catalogues on every build.
    """
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx.update({"gettext_compact": False, "gettext_location": False, "gettext_uuid": False})
    if edition in ("en", "gettext"):
        return
    sphinx["language"] = edition
    if languages.get(edition).fonts:
        # an equation's \text{} labels in, say, Chinese: MathJax's own fonts have no CJK glyphs,
        # so the labels take the page's font (whose stack names the language's fonts first)
        sphinx["mathjax3_config"] = {"chtml": {"mtextInheritFont": True}}
    locales = src / "locales"
    # the catalogues only (STYLE.md would be a page); Sphinx compiles each .mo beside its .po
    shutil.copytree(LOCALES, locales, ignore=shutil.ignore_patterns("*.md"))
    sphinx["locale_dirs"] = [str(locales)]
    config["title"] = TITLES.get(edition, config.get("title"))


def language_css() -> str:
    """The site's per-language CSS: each language with fonts of its own names them first on
    its pages (a rule keyed by ``:lang()``), before the system font the theme starts with."""
    rules = []
    for lang in languages.registry():
        if lang.fonts:
            families = ", ".join(f'"{family}"' for family in lang.fonts)
            rules.append(
                f"html:lang({lang.html_lang}) {{\n  --pst-font-family-base: {families},\n"
                "    var(--pst-font-family-base-system), sans-serif;\n}\n"
            )
    return (
        '/* Written by tools/editions.py from gpulab\'s data/languages.json (its "fonts"). A font\n'
        "   the language needs first (Noto Sans SC has Latin letters too): after a system font,\n"
        "   Chromium drew the sidebar's semibold current-page link as empty boxes. */\n"
        + "".join(rules)
    )


def other_editions(where) -> str:
    """The translated editions and where each lies: "中文: <where(folder)>", joined by "; "."""
    return "; ".join(
        f"{languages.get(code).button}: {where(languages.get(code).folder)}"
        for code in LANGUAGES[1:]
    )
