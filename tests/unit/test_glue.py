"""The pages' figures come from code: gpulab.glue, the chapter figures, and tools/glued_pages.

Oracles: myst-nb itself (its glue() output, its extraction of glue data and its formatting of
a pasted value), and a scratch copy of the repository whose constant is changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpulab import glue
from gpulab.core.errors import GpulabConfigError
from gpulab.course import figures
from tests.helpers import need_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import glued_pages  # noqa: E402


def _captured(monkeypatch, target, call):
    """The notebook outputs a display call would write, as nbformat nodes."""
    shown = []
    monkeypatch.setattr(target, lambda data, raw, metadata: shown.append((data, metadata)))
    call()
    return [nbformat.v4.new_output("display_data", data=d, metadata=m) for d, m in shown]


@pytest.mark.parametrize("value, spec, expected", [
    (42.345678, ".1f", "42.3"), (70553706496, ",d", "70,553,706,496"), (0.8123, ".0%", "81%"),
    ("does not fit", "s", "does not fit"), (3, ".2f", "3.00"),
])
def test_a_glued_value_round_trips_through_myst_nb(monkeypatch, value, spec, expected):
    """What gpulab.glue writes, myst-nb extracts under its key and formats as the page asks."""
    need_module("myst_nb", "dev")
    import IPython.display
    from myst_nb.core.variables import format_plain_text
    from myst_nb.ext import glue as myst_glue

    ours = _captured(monkeypatch, "IPython.display.display", lambda: glue.glue("k", value))
    theirs = _captured(monkeypatch, "myst_nb.ext.glue.ipy_display",
                       lambda: myst_glue.glue("k", value, display=False))
    assert IPython.display.display is not None
    for outputs in (ours, theirs):
        cell = nbformat.v4.new_code_cell(outputs=outputs)
        ((key, out),) = myst_glue.extract_glue_data_cell(cell)
        assert key == "k" and cell.outputs == []  # hidden in the notebook's own view
        assert format_plain_text(out["data"]["text/plain"], spec) == expected
    # the toolchain's static resolver formats exactly as myst-nb does
    assert glued_pages.format_like_myst_nb(value, spec) == expected


@pytest.mark.parametrize("bad", [True, None, [1, 2], {"a": 1}])
def test_glue_refuses_what_a_page_cannot_format(bad):
    with pytest.raises(GpulabConfigError, match="glued value 'x'"):
        glue.plain_value("x", bad)
    with pytest.raises(GpulabConfigError, match="identifier"):
        glue.glue("not a name", 1)


@pytest.mark.parametrize("notebook", sorted(figures.CHAPTER_NOTEBOOKS))
def test_each_chapter_notebook_glues_its_figures_last(notebook):
    """The last cell glues the chapter's figures(); every value is a plain int, float or str."""
    cells = json.loads((ROOT / notebook).read_text(encoding="utf-8"))["cells"]
    last = cells[-1]
    assert last["cell_type"] == "code" and "remove-cell" in last["metadata"].get("tags", [])
    source = last["source"] if isinstance(last["source"], str) else "".join(last["source"])
    assert source == figures.glue_cell_source(notebook)
    for key, value in figures.chapter_figures(notebook).items():
        assert key.isidentifier(), key
        assert glue.plain_value(key, value) == value


def test_every_glue_reference_of_every_page_resolves():
    """Each {glue:text} names a chapter notebook, a key it glues and a spec that applies."""
    found, problems = glued_pages.check_all()
    assert problems == []
    assert found > 0


@pytest.mark.parametrize("page", sorted((ROOT / "book").glob("0*.md")), ids=lambda p: p.name)
def test_a_chapter_page_pastes_from_its_own_chapter_notebook(page):
    """book/02_*.md glues from notebooks/02_*: a chapter's figures are computed in one place."""
    rel = page.relative_to(ROOT).as_posix()
    refs = glued_pages.parse(page.read_text(encoding="utf-8"), rel)
    assert refs, f"{rel} pastes no figure"
    chapter = page.name[:2]
    assert {Path(r.notebook).name[:2] for r in refs} == {chapter}
    assert {r.notebook for r in refs} <= set(figures.CHAPTER_NOTEBOOKS)


@pytest.mark.parametrize("role, problem", [
    ("{glue:text}`../notebooks/02_will_it_fit.ipynb::x`", "format spec"),
    ("{glue:text}`x:.1f`", "name the notebook"),
    ("{glue}`../notebooks/02_will_it_fit.ipynb::x:s`", "glue:text"),
])
def test_a_malformed_reference_is_named(role, problem):
    with pytest.raises(glued_pages.GlueError, match=problem):
        glued_pages.parse(f"text {role} text", "book/02_vram.md")


def test_an_unknown_key_is_named_with_its_page_and_line():
    (ref,) = glued_pages.parse("a\n{glue:text}`../notebooks/02_will_it_fit.ipynb::nope:.1f`",
                               "book/02_vram.md")
    with pytest.raises(glued_pages.GlueError, match=r"book/02_vram.md:2: .* no key 'nope'"):
        glued_pages.resolve(ref)


def test_changing_one_constant_changes_every_page_that_shows_a_figure_from_it(tmp_path):
    """On a scratch copy, Q4_K_M's bits per weight changes; the pages that glue a figure
    derived from it say something else, and the pages that glue none stay as they were."""
    for part in ("src", "book", "notebooks", "tools"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    formats = tmp_path / "src" / "gpulab" / "reference" / "formats.py"

    def rendered() -> dict[str, str]:
        code = ("import json, sys; sys.path[:0] = ['src', '.']\n"
                "from tools import glued_pages as g\n"
                "print(json.dumps({str(p.relative_to(g.ROOT)): g.render(p) for p in g.pages()}))")
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        return json.loads(out.stdout)

    before = rendered()
    text = formats.read_text(encoding="utf-8")
    constant = 'published_bpw=4.84)'  # Q4_K_M's bits per weight, the one place it is written
    assert text.count(constant) == 1, "formats.py no longer writes Q4_K_M's bits as the test expects"
    formats.write_text(text.replace(constant, "published_bpw=5.5)"), encoding="utf-8")
    after = rendered()
    changed = {page for page in before if before[page] != after[page]}
    assert "book/02_vram.md" in changed  # the VRAM chapter shows Q4_K_M sizes
    for page in before:  # a page without a glued figure cannot change
        if "{glue:text}" not in (ROOT / page).read_text(encoding="utf-8"):
            assert page not in changed, page
