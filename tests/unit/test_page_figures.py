"""The pages' figures come from code: the {fig} role's resolver, the chapters' one namespace,
and the script that renames figures in the pages and their translations together.

Oracles: myst-nb's own formatting of a pasted value (what the pages showed through its glue
before), hand-written expected roles, and a scratch copy of the repository whose constant is
changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.course import figures
from tests.helpers import need_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.authoring import rename_figures  # noqa: E402
from tools.checks import page_figures  # noqa: E402


@pytest.mark.parametrize(
    "value, spec, expected",
    [
        (42.345678, ".1f", "42.3"),
        (70553706496, ",d", "70,553,706,496"),
        (0.8123, ".0%", "81%"),
        ("does not fit", "s", "does not fit"),
        (3, ".2f", "3.00"),
        (7.9, "d", "7"),
        (8192, "", "8192"),
    ],
)
def test_a_figure_is_formatted_as_myst_nb_formatted_it(value, spec, expected):
    """The pages read as they did when myst-nb's glue pasted them: same text for the same spec."""
    need_module("myst_nb", "dev")
    from myst_nb.core.variables import format_plain_text

    assert format_plain_text(repr(value), spec) == expected
    assert figures.format_figure(value, spec) == expected


@pytest.mark.parametrize("bad", [True, None, [1, 2], {"a": 1}, float("nan")])
def test_a_figure_is_an_int_a_float_or_a_str(bad):
    """Anything else is refused in one line naming the value, before it is formatted."""
    with pytest.raises(GpulabConfigError, match="an integer or a number or a string|finite") as err:
        figures.format_figure(bad, "")
    assert err.value.field == "value" and "\n" not in str(err.value)


def test_every_chapter_figure_has_a_name_a_page_can_say_and_a_plain_value():
    merged = figures.all_figures()
    for notebook in figures.CHAPTER_NOTEBOOKS:  # every chapter's figures are in the merge
        assert figures.chapter_figures(notebook).keys() <= merged.keys(), notebook
    assert len(merged) > 900
    for name, value in merged.items():
        assert page_figures.NAME.fullmatch(name), name
        assert isinstance(value, (int, float, str)) and not isinstance(value, bool), (name, value)


def test_two_chapters_cannot_give_one_name_two_values(monkeypatch):
    values = {
        "notebooks/02_will_it_fit.ipynb": {"a": 1, "b": 2},
        "notebooks/03_inference_vs_training.ipynb": {"b": 2, "c": 3},
        "notebooks/04_backends.ipynb": {"c": 4},
    }
    monkeypatch.setattr(figures, "CHAPTER_NOTEBOOKS", {k: f"m{k[10:12]}" for k in values})
    monkeypatch.setattr(figures, "chapter_figures", values.__getitem__)
    with pytest.raises(GpulabConfigError, match=r"figure 'c' is 3 in m03 and 4 in m04"):
        figures.all_figures()
    del values["notebooks/04_backends.ipynb"]
    monkeypatch.setattr(figures, "CHAPTER_NOTEBOOKS", {k: f"m{k[10:12]}" for k in values})
    assert figures.all_figures() == {"a": 1, "b": 2, "c": 3}  # the same value twice is one figure


def test_every_figure_reference_of_every_page_resolves():
    found, problems = page_figures.check_all()
    assert problems == []
    assert found > 1500  # it read every page (1,910 references in 2026-12)


@pytest.mark.parametrize(
    "role, problem",
    [
        (
            "{fig}`llama3_70b_q4km_gbb:.1f`",
            r"no figure 'llama3_70b_q4km_gbb'; did you mean 'llama70_q4km_gb'",
        ),
        ("{fig}`llama70_q4km_gb:d%`", r"spec 'd%' does not apply to"),
        ("{fig}`Llama70:.1f`", r"'Llama70' is not a figure name"),
    ],
)
def test_a_reference_that_does_not_resolve_is_named_with_its_page_and_line(role, problem):
    (ref,) = page_figures.parse(f"a\nb {role} c", "book/02_vram.md")
    with pytest.raises(page_figures.FigureError, match=rf"book/02_vram.md:2: .*{problem}"):
        page_figures.resolve_ref(ref)


def test_a_rename_rewrites_the_roles_of_a_page_and_of_its_translation_alike():
    renames = {"tier70_fp16_gb": "llama3_70b_fp16_gb"}
    msgid = 'msgid "At FP16 {fig}`tier70_fp16_gb:.0f` GB, not {fig}`tier70_fp16_gbx`."'
    msgstr = 'msgstr "FP16 下 {fig}`tier70_fp16_gb:.0f` GB。"'
    assert rename_figures.rename_roles(f"{msgid}\n{msgstr}", renames) == (
        'msgid "At FP16 {fig}`llama3_70b_fp16_gb:.0f` GB, not {fig}`tier70_fp16_gbx`."\n'
        'msgstr "FP16 下 {fig}`llama3_70b_fp16_gb:.0f` GB。"'
    )


def test_changing_one_constant_changes_every_page_that_shows_a_figure_from_it(tmp_path):
    """On a scratch copy, Q4_K_M's bits per weight changes; the pages that paste a figure
    derived from it say something else, and the pages that paste none stay as they were."""
    # the notebooks and the table of contents too: the introduction's map reads their times
    for part in ("src", "book", "tools", "notebooks", "labs"):
        shutil.copytree(
            ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    formats = tmp_path / "src" / "gpulab" / "reference" / "formats.py"

    def rendered() -> dict[str, str]:
        code = (
            "import json, sys; sys.path[:0] = ['src', '.']\n"
            "from tools.checks import page_figures as p\n"
            "print(json.dumps({str(f.relative_to(p.ROOT)): p.render(f) for f in p.pages()}))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        return json.loads(out.stdout)

    before = rendered()
    text = formats.read_text(encoding="utf-8")
    constant = "published_bpw=4.84,"  # Q4_K_M's bits per weight, the one place it is written
    assert text.count(constant) == 1, (
        "formats.py no longer writes Q4_K_M's bits as the test expects"
    )
    formats.write_text(text.replace(constant, "published_bpw=5.5,"), encoding="utf-8")
    after = rendered()
    changed = {page for page in before if before[page] != after[page]}
    assert "book/02_vram.md" in changed  # the VRAM chapter shows Q4_K_M sizes
    for page in before:  # a page without a pasted figure cannot change
        if "{fig}" not in (ROOT / page).read_text(encoding="utf-8"):
            assert page not in changed, page
