"""The pages' pictures (tools/staging/pictures.py): found by module name, drawn to SVG at build
time without the network, and shown by a {figure} directive in both editions, alt text and
caption translated; and a reveal's output collapsed on the site (myst-nb's `hide-output`).

The pictures are a test double: a package of `pictures_chNN` modules written here, since no
chapter module exists yet. The build is one small page and one executed notebook, staged as
tools/staging/stage.py stages the site (editions.configure, pictures.render) and built with the
pipeline's Jupyter Book command: the message templates, the English site and the Chinese one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gpulab
from tools import editions
from tools.authoring import learner_generator, picture_registry
from tools.checks import page_figures, teaching_pages, typed_figures
from tools.sphinx_ext import site as sphinx_site
from tools.staging import build, pictures, stage

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = "picture_double"  # the test double's package name
ALT = "Bars of two cards' memory, in GB, the larger on the right."
CAPTION = "The memory of two cards: look at the gap."
ALT_ZH = "两张显卡显存的柱状图，单位 GB，较大的在右边。"
CAPTION_ZH = "两张显卡的显存：看它们的差距。"

CHAPTER = '''"""A chapter's pictures (a test double)."""

import matplotlib.pyplot as plt


def memory_bars():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["small", "large"], [{small}, {large}], label="memory")
    ax.set(title="Memory", ylabel="GB")
    ax.legend()
    return fig


PICTURES = {{"{name}": memory_bars}}
'''


@pytest.fixture
def double(tmp_path, monkeypatch) -> str:
    """A package with two picture modules and one that is not one, importable by name."""
    package = tmp_path / "double" / DOUBLE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "pictures_ch01.py").write_text(CHAPTER.format(name="ch01-bars", small=8, large=24))
    (package / "pictures_ch02.py").write_text(CHAPTER.format(name="ch02-bars", small=12, large=80))
    (package / "plots.py").write_text("PICTURES = {'not-a-picture': print}\n")
    (package / "pictures_chapter.py").write_text("PICTURES = {'not-a-picture-either': print}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "double"))
    for name in [m for m in sys.modules if m.startswith(DOUBLE)]:
        monkeypatch.delitem(sys.modules, name)
    return DOUBLE


def test_picture_modules_are_found_by_name(double):
    assert picture_registry.modules(double) == [
        f"{double}.pictures_ch01",
        f"{double}.pictures_ch02",
    ]
    assert sorted(picture_registry.registered(double)) == ["ch01-bars", "ch02-bars"]
    # gpulab's own: the chapters' modules and the introduction's, each registered in
    # gpulab.LAYERS
    assert picture_registry.modules("gpulab.ui") == sorted(
        p for p in gpulab.MODULES.values() if re.fullmatch(r"gpulab\.ui\.pictures_(ch\d+|intro)", p)
    )
    assert "gpulab.ui.pictures_intro" in picture_registry.modules("gpulab.ui")


def test_the_introductions_picture_module_is_found_too(double, tmp_path):
    """The registry finds `pictures_chNN` and `pictures_intro`, the one page that is no
    chapter's; a module of another name is not a picture module."""
    folder = tmp_path / "double" / double
    (folder / "pictures_intro.py").write_text(CHAPTER.format(name="intro-bars", small=1, large=2))
    assert picture_registry.modules(double) == [
        f"{double}.pictures_ch01",
        f"{double}.pictures_ch02",
        f"{double}.pictures_intro",
    ]
    assert sorted(picture_registry.registered(double)) == ["ch01-bars", "ch02-bars", "intro-bars"]


def test_a_name_given_twice_or_not_in_kebab_case_is_refused(double, tmp_path):
    folder = tmp_path / "double" / double
    (folder / "pictures_ch03.py").write_text(CHAPTER.format(name="ch01-bars", small=1, large=2))
    with pytest.raises(ValueError, match="'ch01-bars' is registered twice"):
        picture_registry.registered(double)
    (folder / "pictures_ch03.py").write_text(CHAPTER.format(name="Ch03 Bars", small=1, large=2))
    sys.modules.pop(f"{double}.pictures_ch03", None)
    with pytest.raises(ValueError, match="a kebab-case name and a function"):
        picture_registry.registered(double)


def test_render_draws_every_picture_to_svg_the_same_each_time(double, tmp_path):
    written = pictures.render(tmp_path / "out", double)
    assert [p.name for p in written] == ["ch01-bars.svg", "ch02-bars.svg"]
    first = written[0].read_text()
    assert first.startswith("<?xml") and "<svg" in first and "dc:date" not in first
    assert pictures.render(tmp_path / "again", double)[0].read_text() == first


def test_a_picture_may_not_use_the_network_or_return_something_else(double, tmp_path):
    folder = tmp_path / "double" / double
    (folder / "pictures_ch02.py").write_text(
        "import socket\n\ndef fetch():\n    socket.create_connection(('example.com', 80))\n\n"
        "PICTURES = {'ch02-fetch': fetch}\n"
    )
    with pytest.raises(OSError, match="must not use the network"):
        pictures.render(tmp_path / "out", double)
    (folder / "pictures_ch02.py").write_text("PICTURES = {'ch02-none': lambda: None}\n")
    sys.modules.pop(f"{double}.pictures_ch02", None)
    with pytest.raises(ValueError, match="returned NoneType, not a Figure"):
        pictures.render(tmp_path / "out", double)


PAGE = f"""# Pictures

The page's idea.

```{{figure}} /_pictures/ch01-bars.svg
:alt: {ALT}
:name: fig-ch01-bars

{CAPTION}
```
"""


def test_the_page_checks_accept_a_figure_directive(tmp_path):
    """typed_figures and page_figures read a {figure} as prose around no typed figure."""
    assert typed_figures.figures_in_text(PAGE, "book/01_x.md") == []
    assert page_figures.parse(PAGE, "book/01_x.md") == []
    assert teaching_pages.picture_problems(PAGE, "book/01_x.md", {"ch01-bars"}) == []


def _notebook() -> dict:
    """An executed notebook whose second cell reveals a value, its output tagged hide-output."""

    def cell(source, tags, text):
        return {
            "cell_type": "code",
            "execution_count": 1,
            "id": f"c{len(tags)}",
            "metadata": {"tags": tags},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": text}],
            "source": source,
        }

    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "cells": [
            {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# A notebook"},
            cell("print('shown')", [], "always shown\n"),
            cell("print('revealed')", ["hide-output"], "the reveal: computed: 42.4 GB.\n"),
        ],
    }


PO = f"""msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "{ALT}"
msgstr "{ALT_ZH}"

msgid "{CAPTION}"
msgstr "{CAPTION_ZH}"
"""


def _stage(tmp_path: Path, edition: str, package: str) -> Path:
    """A staged tree of one edition: the page, the notebook, the pictures, the config."""
    src = tmp_path / edition
    (src / "book").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_templates", src / "book" / "_templates")
    shutil.copy(ROOT / "book" / "favicon.svg", src / "book")
    static = src / stage.SITE_STATIC
    shutil.copytree(stage.COURSE_ASSETS, static)
    (static / sphinx_site.LANGUAGE_STYLESHEET).write_text(editions.language_css(), encoding="utf-8")
    (src / "index.md").write_text(PAGE, encoding="utf-8")
    (src / "reveal.ipynb").write_text(json.dumps(_notebook()), encoding="utf-8")
    (src / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nchapters:\n  - file: reveal\n", encoding="utf-8"
    )
    pictures.render(src / pictures.FOLDER, package)  # as stage_site does, before Sphinx runs
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = config["sphinx"]["local_extensions"]
    extensions.update({name: str(ROOT / path) for name, path in extensions.items()})
    config["sphinx"]["config"].pop("nb_ipywidgets_js", None)  # no widget on these pages
    editions.configure(config, "en" if edition == "gettext" else edition, src)
    if edition == "zh_CN":
        (src / "locales" / "zh_CN" / "LC_MESSAGES" / "index.po").write_text(PO, encoding="utf-8")
    (src / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return src


def _build(src: Path, *builder: str) -> Path:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        build.jupyter_book_command(src, src, *builder),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return src / "_build"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The scratch page and notebook built: message templates, English and Chinese sites."""
    tmp = tmp_path_factory.mktemp("pictures")
    package = tmp / "double" / DOUBLE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "pictures_ch01.py").write_text(CHAPTER.format(name="ch01-bars", small=8, large=24))
    sys.path.insert(0, str(tmp / "double"))
    try:
        out = {
            "gettext": _build(
                _stage(tmp, "gettext", DOUBLE), "custom", "--custom-builder", "gettext"
            )
        }
        out["en"] = _build(_stage(tmp, "en", DOUBLE), "html") / "html"
        out["zh_CN"] = _build(_stage(tmp, "zh_CN", DOUBLE), "html") / "html"
    finally:
        sys.path.remove(str(tmp / "double"))
        for name in [m for m in sys.modules if m.startswith(DOUBLE)]:
            del sys.modules[name]
    return out


def _figure(html: str) -> tuple[str, str, str]:
    """(the image's src, its alt, the caption's text) of a page's one figure."""
    figure = re.search(r"<figure[^>]*>(.*?)</figure>", html, re.S)
    assert figure, "no <figure> on the page"
    img = re.search(r'<img[^>]*\balt="([^"]*)"[^>]*\bsrc="([^"]*)"', figure.group(1))
    if img is None:  # attribute order is Sphinx's
        img = re.search(r'<img[^>]*\bsrc="([^"]*)"[^>]*\balt="([^"]*)"', figure.group(1))
        src, alt = img.groups()
    else:
        alt, src = img.groups()
    caption = re.sub(
        r"<[^>]+>", "", re.search(r"<figcaption>(.*?)</figcaption>", figure.group(1), re.S).group(1)
    )
    return src, alt, " ".join(caption.split())


def test_the_figures_alt_text_and_caption_go_into_the_catalogue(built):
    pot = (built["gettext"] / "gettext" / "index.pot").read_text(encoding="utf-8")
    assert f'msgid "{ALT}"' in pot
    assert f'msgid "{CAPTION}"' in pot
    assert "_pictures" not in pot  # the image itself is not a message (no "image" target)


@pytest.mark.parametrize(
    "edition, alt, caption", [("en", ALT, CAPTION), ("zh_CN", ALT_ZH, CAPTION_ZH)]
)
def test_a_page_with_a_picture_builds_in_both_editions_with_its_svg_and_alt(
    built, edition, alt, caption
):
    html = (built[edition] / "index.html").read_text(encoding="utf-8")
    src, shown_alt, shown_caption = _figure(html)
    assert src.endswith(".svg") and (built[edition] / src).is_file()
    assert "<svg" in (built[edition] / src).read_text(encoding="utf-8")
    assert shown_alt.replace("&#39;", "'") == alt
    assert caption in shown_caption


@pytest.mark.parametrize(
    "edition, prompt", [("en", "Show code cell output"), ("zh_CN", "显示代码单元的输出")]
)
def test_a_reveal_tagged_hide_output_is_collapsed_on_the_site(built, edition, prompt):
    """myst-nb puts a `hide-output` cell's output in a <details> without `open`: collapsed until
    the reader opens it; the cell's code and the other cells' outputs stay shown. Its summary is
    named by its visible prompt, in the edition's words, with no aria-label that says otherwise
    (axe-core's label-content-name-mismatch)."""
    html = (built[edition] / "reveal.html").read_text(encoding="utf-8")
    hidden = re.findall(r"<details[^>]*>(.*?)</details>", html, re.S)
    assert len(hidden) == 1 and "computed: 42.4 GB" in hidden[0]
    assert re.search(r"<details(?![^>]*\bopen\b)[^>]*\bhide\b", html)
    assert "always shown" not in hidden[0] and "always shown" in html
    assert "print" in html.split("<details", 1)[0]  # the reveal's code is above, not hidden
    summary = re.search(r"<summary([^>]*)>(.*?)</summary>", html, re.S)
    assert "aria-label" not in summary.group(1)
    assert prompt in summary.group(2)


def test_no_step_of_the_pipeline_drops_the_hide_output_tag(tmp_path):
    """The tag travels from the notebook to the page: the format fix, the learner copy and the
    site's copy (its exercise blocks, parameters, alt text and representations) keep it."""
    from tools.authoring import exercises
    from tools.checks import nbcheck
    from tools.notebook_meta import load_config
    from tools.staging import site_copy

    nb = _notebook()
    nb["cells"].insert(
        1,
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "source": 'device = "auto"\nquick = False',
        },
    )
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    nbcheck.fix(path, load_config())
    fixed = json.loads(path.read_text())
    assert ["hide-output"] in [c["metadata"].get("tags") for c in fixed["cells"]]
    shown = exercises.to_sphinx_exercise(nb)
    site_copy.show_run_parameters(shown)
    site_copy.add_image_alt_text(shown)
    site_copy.keep_site_representations(shown)
    assert shown["cells"][-1]["metadata"]["tags"] == ["hide-output"]
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "s",
            "outputs": [],
            "metadata": {"tags": ["solution"]},
            "source": "x = 1",
        }
    )
    learner = learner_generator.make_learner_copy(nb, "labs/x.ipynb")
    assert any(c["metadata"].get("tags") == ["hide-output"] for c in learner["cells"])
