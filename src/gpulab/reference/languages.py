"""The languages of the course's editions: one registry entry each, and each one's words.

``data/languages.json`` lists the languages, the source language (English) first: each
entry's code (Sphinx's language and the catalogues' folder), the folder of its site, its
language button, its site title and its build options (search tokenizer, fonts). The words
the library and the pipeline say in a language other than the source are in
``data/words/<code>.json`` (the English words are the code's). Adding a language is an entry
here, a words file and its catalogues (CONTRIBUTING.md, "A language"); nothing else names it.

    from gpulab.reference import languages

    languages.codes()                       # every code, the source language ("en") first
    lang = languages.get(languages.translated()[0])
    lang.button, lang.folder                # its button's text, its site's folder
    languages.words(lang.code, "measured")  # backend_status's words in that language

The words files are read only when asked for, so the browser's copy of this layer (which
carries ``data/*.json`` but no words) can still import the modules that use them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked

__all__ = [
    "Language",
    "codes",
    "get",
    "months_in_digits",
    "registry",
    "source",
    "translated",
    "words",
]

# a date's month: named in English ("July 2024"), in digits in Chinese ("2024 年 7 月", "7月")
MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTH_NAME = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
_MONTH_IN_DIGITS = re.compile(r"(?<![\d.,])(\d{1,2})\s*月")


@dataclass(frozen=True)
class Language:
    """One edition's language, as data/languages.json describes it."""

    code: str  # Sphinx's language and the catalogues' folder: locales/<code>/LC_MESSAGES/
    folder: str  # where its site lies under the English root ("" for the root itself)
    html_lang: str  # the lang attribute of its pages ("zh-CN"), which its CSS rule is keyed by
    button: str  # the language button's text on the other editions' pages
    tooltip: str  # the button's tooltip
    title: str | None  # its site's title; None keeps _config.yml's
    search_tokenizer: str | None  # the word splitter its search needs ("jieba"), or None
    fonts: tuple[str, ...] | None  # font families its pages name first, or None for the theme's


def _read(*parts: str) -> Any:
    path = resources.files("gpulab").joinpath("data", *parts)
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def registry() -> tuple[Language, ...]:
    """Every language of data/languages.json, the source language first."""
    entries = []
    for entry in _read("languages.json")["languages"]:
        fonts = entry.get("fonts")
        entries.append(Language(**{**entry, "fonts": tuple(fonts) if fonts else None}))
    return tuple(entries)


def codes() -> tuple[str, ...]:
    """The languages' codes, the source language ("en") first."""
    return tuple(lang.code for lang in registry())


def source() -> str:
    """The source language's code, whose words are the code's and whose site is the root."""
    return registry()[0].code


def translated() -> tuple[str, ...]:
    """The codes of the languages translated from the source (every one but the first)."""
    return codes()[1:]


@checked
def get(lang: str) -> Language:
    """One language's entry; GpulabConfigError names the known codes."""
    for entry in registry():
        if entry.code == lang:
            return entry
    raise GpulabConfigError(f"lang={lang!r} is not one of {', '.join(codes())}", "lang")


@cache
def _words(lang: str) -> dict[str, Any]:
    if lang not in translated():
        get(lang)  # an unknown code names the known ones
        raise GpulabConfigError(
            f"lang={lang!r} is the source language: its words are the code's", "lang"
        )
    return _read("words", f"{lang}.json")


@checked
def words(lang: str, part: str) -> Any:
    """One part of a translated language's words ("factcheck", "measured", ...), from its file."""
    data = _words(lang)
    if part not in data:
        raise GpulabConfigError(
            f"data/words/{lang}.json has no {part!r} part; it has: "
            f"{', '.join(k for k in data if k != 'description')}",
            "part",
        )
    return data[part]


@checked
def months_in_digits(english: str, translated: str) -> list[str]:
    """The months a translation writes in digits ("2024 年 7 月") that its English names ("July
    2024"): a date's month, not a typed number (STYLE.md)."""
    named = {str(MONTHS.index(name) + 1) for name in _MONTH_NAME.findall(english)}
    return [n for n in _MONTH_IN_DIGITS.findall(translated) if n in named]
