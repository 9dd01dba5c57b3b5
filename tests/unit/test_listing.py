"""The library's code shown on the page is the code that runs (gpulab.ui.listing), and no
notebook keeps a Markdown copy of a gpulab function."""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from pathlib import Path

import pytest

from gpulab import listing, memory, timing
from gpulab.core.errors import GpulabConfigError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.execution import runs  # noqa: E402

SRC = ROOT / "src" / "gpulab"
FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n(.*?)^\1", re.MULTILINE | re.DOTALL)
MIN_SHARED = 3  # a fence sharing this many statement lines with one function is a copy of it


def _from_file(path: Path, name: str) -> str:
    """A top-level function's text, decorators included, read with ast (the oracle)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return "\n".join(text.splitlines()[first - 1 : node.end_lineno])
    raise LookupError(name)


@pytest.mark.parametrize(
    "fn, path",
    [
        (timing.benchmark, SRC / "bench" / "timing.py"),
        (memory.kv_cache_bytes, SRC / "estimate" / "memory.py"),  # wrapped by @checked
    ],
)
def test_show_displays_the_function_as_its_file_has_it(fn, path):
    shown = listing.show(fn)
    assert shown.code == _from_file(path, fn.__name__)
    assert shown.name == f"{fn.__module__}.{fn.__name__}"
    markdown = shown._repr_markdown_()
    assert f"```python\n{shown.code}\n```" in markdown
    first = int(re.search(r"lines (\d+)-", shown.where)[1])
    assert (
        path.read_text(encoding="utf-8")
        .splitlines()[first - 1]
        .startswith(shown.code.splitlines()[0])
    )


def test_show_refuses_what_has_no_source():
    """A value that is not callable, and a callable that is no function or class, are refused
    in one line naming the parameter."""
    for bad in (42, functools.partial(timing.benchmark)):
        with pytest.raises(GpulabConfigError) as err:
            listing.show(bad)
        assert err.value.field == "obj" and "\n" not in str(err.value)
    with pytest.raises(GpulabConfigError, match="function or a class"):
        listing.show(functools.partial(timing.benchmark))


def _statements(code: str) -> set[str]:
    """The lines of code that carry a statement: stripped, no comments, blank lines or brackets."""
    out = set()
    for line in code.splitlines():
        line = line.split("#", 1)[0].strip()
        if len(line) >= 12 and not line.startswith(('"""', "'''")):
            out.add(line)
    return out


def _library_bodies() -> dict[str, set[str]]:
    bodies = {}
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno])
                bodies[f"{path.relative_to(SRC)}:{node.name}"] = _statements(body)
    return bodies


def copies_of_library_code(markdown: str, bodies: dict[str, set[str]]) -> list[str]:
    """The gpulab functions whose body a Markdown text's fenced code blocks repeat."""
    found = []
    for _, code in FENCE.findall(markdown):
        lines = _statements(code)
        for name, body in bodies.items():
            if len(lines & body) >= MIN_SHARED:
                found.append(name)
    return found


def test_the_copy_detector_finds_a_copy_and_passes_prose():
    bodies = _library_bodies()
    copied = "```python\n" + _from_file(SRC / "bench" / "timing.py", "benchmark") + "\n```"
    assert "bench/timing.py:benchmark" in copies_of_library_code(copied, bodies)
    assert copies_of_library_code("```python\nx = torch.randn(4096, 4096)\n```", bodies) == []


NOTEBOOKS = [*runs.discover(), *runs.learner_copies()]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_notebook_markdown_copies_a_gpulab_function(notebook):
    bodies = _library_bodies()
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    copies = [
        f"cell {i}: {name}"
        for i, c in enumerate(cells)
        if c["cell_type"] == "markdown"
        for name in copies_of_library_code("".join(c["source"]), bodies)
    ]
    assert copies == [], "show it with gpulab.listing.show(fn) instead of copying it"
