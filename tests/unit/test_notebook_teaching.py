"""The notebooks teach by letting the reader predict, read the real code, and read plain
tables: at least two predict-then-measure moments per chapter notebook, the library's code
shown where it is the lesson, and no callable formatter in notebook code."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.checks.notebook_code import code_cells, predictions  # noqa: E402
from tools.checks.notebook_code import code_tree as _tree  # noqa: E402
from tools.execution import runs  # noqa: E402

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ALL = runs.discover()
# Where a page explains a piece of library code, it shows that code: notebook -> the functions
# (as written in the `listing.show(...)` call) it must show.
SHOWN = {
    "notebooks/01_why_gpus_are_fast.ipynb": {"timing.benchmark", "roofline.attainable"},
    "notebooks/02_will_it_fit.ipynb": {"memory.weight_bytes", "memory.kv_cache_bytes"},
    "notebooks/03_inference_vs_training.ipynb": {
        "perf.decode_tokens_per_s",
        "perf.decode_bytes_per_step",
    },
    "notebooks/04_backends.ipynb": {"memory.gpu_layers_that_fit"},
}
PREDICTIONS_PER_CHAPTER = 2


def _code_cells(path: Path) -> list[str]:
    return code_cells(json.loads(path.read_text(encoding="utf-8")))


def test_the_prediction_detector_needs_the_none_cell_and_the_compare():
    assert predictions(["my_x = None  # in ms", "t = 3\npredict.compare(my_x, t, 'ms')"]) == [
        "my_x"
    ]
    assert predictions(["my_x = 4", "predict.compare(my_x, 3, 'ms')"]) == []
    assert predictions(["my_x = None", "print(my_x)"]) == []
    # the reveal may come a few cells later, after the measurement
    assert predictions(["my_x = None", "t = 3", "predict.compare(my_x, t, 'ms')"]) == ["my_x"]


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.name)
def test_each_chapter_asks_for_predictions_before_it_measures(notebook):
    assert len(predictions(_code_cells(notebook))) >= PREDICTIONS_PER_CHAPTER


def shown_functions(code_cells: list[str]) -> set[str]:
    """What the notebook's `listing.show(...)` calls display."""
    out = set()
    for source in code_cells:
        for node in ast.walk(_tree(source)):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("listing.show"):
                out |= {ast.unparse(a) for a in node.args}
    return out


@pytest.mark.parametrize("notebook, functions", sorted(SHOWN.items()))
def test_the_library_code_that_is_the_lesson_is_shown_from_its_source(notebook, functions):
    assert functions <= shown_functions(_code_cells(ROOT / notebook))


def formatter_problems(source: str) -> list[str]:
    """Callable formatters in notebook code: a lambda bound to a name, or a non-string format."""
    found = []
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
            found.append(f"a lambda bound to a name: {ast.unparse(node)[:60]}")
        if (
            isinstance(node, ast.keyword)
            and node.arg == "formats"
            and isinstance(node.value, ast.Dict)
        ):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    found.append(
                        f"formats[{ast.unparse(key)}] is {ast.unparse(value)[:40]}, "
                        "not a format string"
                    )
    return found


def test_the_formatter_check_can_fail():
    assert formatter_problems("mib = lambda v: f'{v}'")
    assert formatter_problems("Table(rows, formats={'a': units.format_seconds})")
    assert formatter_problems("Table(rows, formats={'a': '.1f', 'b': '.0%'})") == []


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_tables_use_format_strings(notebook):
    assert [p for src in _code_cells(notebook) for p in formatter_problems(src)] == []


def prose_from_code(source: str) -> list[str]:
    """Calls that print a notebook's prose from code: glue.show_markdown, or Markdown(f"...")."""
    found = []
    for node in ast.walk(_tree(source)):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name.endswith("show_markdown") or (
            name.endswith("Markdown") and node.args and isinstance(node.args[0], ast.JoinedStr)
        ):
            found.append(ast.unparse(node)[:60])
    return found


def test_the_prose_from_code_check_can_fail():
    assert prose_from_code('glue.show_markdown(f"The bound is {b:.1f} tokens/s.")')
    assert prose_from_code('display(Markdown(f"It needs {gb:.1f} GB."))')
    assert prose_from_code('print(f"needs {gb:.1f} GB")') == []


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_notebooks_prose_is_markdown_and_its_figures_are_output(notebook):
    """A reader in JupyterLab or Colab sees prose and outputs, never an f-string for text."""
    assert [p for src in _code_cells(notebook) for p in prose_from_code(src)] == []


def test_no_two_pages_of_the_book_share_a_title():
    """The sidebar lists pages by title: two with the same title read as one page twice."""
    import yaml

    from tools.notebook_meta import title_of

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    titles = {}
    for name in files:
        md, nb = ROOT / f"{name}.md", ROOT / f"{name}.ipynb"
        if md.exists():
            title = next(
                line
                for line in md.read_text(encoding="utf-8").splitlines()
                if line.startswith("# ")
            )[2:]
        else:
            title = title_of(json.loads(nb.read_text(encoding="utf-8")))
        titles.setdefault(title.strip(), []).append(name)
    assert {t: n for t, n in titles.items() if len(n) > 1} == {}


# Words that make a title's **Time:** a machine time: the machine's time is the timing report's
# (the site adds it under the title), and a typed one drifts from it.
MACHINE_TIME_WORDS = ("comput", "measur", "quick mode", "full size", "2-core", "cpu", "gpu", "(")


def machine_time_claims(title_source: str) -> list[str]:
    """Machine-time words in a title cell's **Time:** field (none if it gives reading time only)."""
    field = title_source.split("**Time:**", 1)[-1].split("**Hardware:**", 1)[0].lower()
    return [w for w in MACHINE_TIME_WORDS if w in field]


def test_the_machine_time_check_can_fail():
    assert machine_time_claims(
        "# Lab\n\n**Time:** 30 minutes (about 2 minutes of measuring at "
        "full size). **Hardware:** a CPU"
    ) == ["measur", "full size", "("]
    assert machine_time_claims("# Lab\n\n**Time:** 30 minutes. **Hardware:** a CPU") == []


@pytest.mark.parametrize("notebook", ALL, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_title_states_the_reading_time_only(notebook):
    """How long the cells take is measured by the pipeline and shown on the site; a title that
    types it ("about 2 minutes of measuring") was off by minutes on a 2-core CPU (#16)."""
    title = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert "**Time:**" in title
    assert machine_time_claims(title) == []
