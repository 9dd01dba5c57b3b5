"""The editions' languages (gpulab.reference.languages): the registry, each one's words, and a
scratch third language that needs nothing but its registry entry, its words file and its
catalogues.

The scratch language is added to a temporary copy of the repository's code and catalogues
(data/languages.json gains an entry "fr", data/words/fr.json is a copy of an existing words
file, locales/fr/ has no catalogue yet); one small page is then built with the course's Sphinx
extensions in English and in it. The oracles are the entry's own strings, written out here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.reference import languages

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "gpulab" / "data"
SCRATCH = {
    "code": "fr",
    "folder": "fr",
    "html_lang": "fr",
    "button": "Français",
    "tooltip": "Lire cette page en français",
    "title": "Accélération GPU pour l'IA, en pratique",
    "search_tokenizer": None,
    "fonts": None,
}


def test_the_registry_lists_the_source_language_first_and_each_one_has_its_words():
    registry = json.loads((DATA / "languages.json").read_text(encoding="utf-8"))["languages"]
    assert [entry["code"] for entry in registry] == list(languages.codes())
    assert languages.source() == "en" == registry[0]["code"] and registry[0]["folder"] == ""
    assert languages.translated() == languages.codes()[1:]
    for code in languages.translated():
        entry = languages.get(code)
        assert entry.folder and entry.button and entry.tooltip and entry.title, code
        assert (DATA / "words" / f"{code}.json").is_file(), code
        assert (ROOT / "locales" / code / "LC_MESSAGES").is_dir(), code
        assert set(languages.words(code, "measured")) == {"none", "run_on", "sep", "run"}
    # every words file is a language of the registry
    assert {p.stem for p in (DATA / "words").glob("*.json")} == set(languages.translated())


def test_the_chinese_entry_as_written_by_hand():
    zh = languages.get("zh_CN")
    assert (zh.folder, zh.html_lang, zh.button, zh.search_tokenizer) == (
        "zh_CN",
        "zh-CN",
        "中文",
        "jieba",
    )
    assert zh.fonts[0] == "Noto Sans SC Variable"


def test_an_unknown_language_or_part_names_what_there_is():
    with pytest.raises(GpulabConfigError, match=r"lang='fr' is not one of en, zh_CN") as err:
        languages.get("fr")
    assert err.value.field == "lang"
    with pytest.raises(GpulabConfigError, match="source language"):
        languages.words("en", "measured")
    with pytest.raises(GpulabConfigError, match=r"no 'nowhere' part; it has: factcheck, measured"):
        languages.words("zh_CN", "nowhere")


# Run in the copy: the registry's view of the scratch language, then one page built in English
# and in it, with the course's extensions and configure() as tools/staging/stage.py stages a site.
BUILD = r"""
import json, shutil, subprocess, sys
from pathlib import Path
import yaml
from gpulab.course import factcheck
from gpulab.reference import measured
from tools import editions
from tools.sphinx_ext import site as sphinx_site
from tools.staging import build, stage

root = editions.ROOT
seen = {"languages": list(editions.LANGUAGES), "factcheck": list(factcheck.LANGS),
        "titles": editions.TITLES, "status": measured.backend_status("rocm", lang="fr"),
        "claim": factcheck.markdown(factcheck.load()[:1], lang="fr").splitlines()[2]}
for edition in ("en", "fr"):
    src = root / "scratch" / edition
    (src / "book").mkdir(parents=True)
    shutil.copytree(root / "book" / "_templates", src / "book" / "_templates")
    shutil.copy(root / "book" / "favicon.svg", src / "book")
    static = src / stage.SITE_STATIC
    shutil.copytree(stage.COURSE_ASSETS, static)
    (static / sphinx_site.LANGUAGE_STYLESHEET).write_text(editions.language_css(), encoding="utf-8")
    (src / "index.md").write_text("# A page\n\nOne sentence.\n", encoding="utf-8")
    (src / "_toc.yml").write_text("format: jb-book\nroot: index\n", encoding="utf-8")
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    extensions = config["sphinx"]["local_extensions"]
    extensions.update({name: str(root / path) for name, path in extensions.items()})
    editions.configure(config, edition, src)
    (src / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    done = subprocess.run(
        build.jupyter_book_command(src, src, "html"), capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(done.stdout[-3000:] + done.stderr[-3000:])
print(json.dumps(seen, ensure_ascii=False))
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the code and catalogues with a scratch language "fr", built; what it saw."""
    copy = tmp_path_factory.mktemp("with-fr")
    ignore = shutil.ignore_patterns("__pycache__", "*.mo")
    for part in ("src", "tools", "locales"):
        shutil.copytree(ROOT / part, copy / part, ignore=ignore)
    (copy / "book").mkdir()
    shutil.copytree(ROOT / "book" / "_templates", copy / "book" / "_templates")
    shutil.copy(ROOT / "book" / "favicon.svg", copy / "book")
    shutil.copy(ROOT / "_config.yml", copy)
    # the three things a language is: its entry, its words, its catalogues
    registry_path = copy / "src" / "gpulab" / "data" / "languages.json"
    registry = json.loads(registry_path.read_text(encoding="utf-8"))
    registry["languages"].append(SCRATCH)
    registry_path.write_text(json.dumps(registry, ensure_ascii=False), encoding="utf-8")
    words = copy / "src" / "gpulab" / "data" / "words"
    shutil.copy(words / "zh_CN.json", words / "fr.json")
    (copy / "locales" / "fr" / "LC_MESSAGES").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": f"{copy / 'src'}{os.pathsep}{copy}"}
    done = subprocess.run(
        [sys.executable, "-c", BUILD],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return copy / "scratch", json.loads(done.stdout.splitlines()[-1])


def test_a_scratch_language_is_an_edition_of_the_library_and_the_pipeline(scratch):
    _, seen = scratch
    assert seen["languages"] == seen["factcheck"] == ["en", "zh_CN", "fr"]
    assert seen["titles"]["fr"] == SCRATCH["title"]
    assert seen["status"] and seen["claim"].startswith("**")  # its words, from its file


def test_a_scratch_language_builds_with_its_title_and_button(scratch):
    built, _ = scratch
    page = (built / "fr" / "_build" / "html" / "index.html").read_text(encoding="utf-8")
    assert '<html lang="fr"' in page
    assert f"<title>A page &#8212; {SCRATCH['title']}</title>".replace("'", "&#39;") in page
    # its page links the English one and the Chinese one, each from its registry entry
    assert 'href="../index.html"' in page and "Read this page in English" in page
    assert 'href="../zh_CN/index.html"' in page and "阅读本页的中文版" in page
    english = (built / "en" / "_build" / "html" / "index.html").read_text(encoding="utf-8")
    assert 'href="fr/index.html"' in english
    assert SCRATCH["button"] in english and SCRATCH["tooltip"] in english
