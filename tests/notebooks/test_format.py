"""The notebook format check, the Colab cell and the README table (tools/checks/nbcheck.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types

import pytest

from tools import notebook_meta
from tools.authoring import link_tables
from tools.checks import nbcheck
from tools.execution import runs

CONFIG = notebook_meta.load_config()


def test_every_notebook_passes_the_format_check():
    """No notebook in the repository has a format problem."""
    problems = {str(p): nbcheck.problems(p, CONFIG) for p in runs.discover()}
    problems |= {str(p): nbcheck.problems(p, CONFIG, learner=True) for p in runs.learner_copies()}
    assert not {k: v for k, v in problems.items() if v}
    assert link_tables.readme_problems(CONFIG) == []


@pytest.mark.parametrize("notebook", runs.discover(), ids=lambda p: p.name)
def test_papermill_sees_both_parameters(notebook):
    """papermill reads `device` and `quick` from the parameters cell (else warns, injects blind)."""
    import papermill

    assert {"device", "quick"} <= set(papermill.inspect_notebook(str(notebook)))


def _run_colab_cell(monkeypatch, on_colab: bool, installed: bool) -> list:
    """Execute the generated Colab cell with a fake Colab and a fake pip; return the pip calls."""
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: real_find_spec(name, *a) if installed or name != "gpulab" else None,
    )
    exec(nbcheck.colab_cell_source(CONFIG), {})
    return calls


def test_colab_cell_installs_on_colab_once(monkeypatch):
    """On Colab without gpulab the cell pip-installs it from the configured URL and ref."""
    calls = _run_colab_cell(monkeypatch, on_colab=True, installed=False)
    assert len(calls) == 1
    repo = CONFIG["repository"]
    assert calls[0][1:4] == ["-m", "pip", "install"]
    assert f"git+{repo['url']}.git@{repo['branch']}" in calls[0][-1]


def test_colab_cell_does_nothing_once_installed(monkeypatch):
    """Run a second time on Colab (gpulab now importable), the cell installs nothing."""
    assert _run_colab_cell(monkeypatch, on_colab=True, installed=True) == []


def test_colab_cell_does_nothing_elsewhere(monkeypatch):
    """Outside Colab the cell installs nothing, even where gpulab is missing."""
    assert _run_colab_cell(monkeypatch, on_colab=False, installed=False) == []


def _write(path, cells, **meta):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells}
    path.write_text(json.dumps(nb))
    return path


# One exercise with its checked solution, as every notebook ends (tools/authoring/exercises.py).
EXERCISE = [
    {
        "cell_type": "markdown",
        "id": "e",
        "metadata": {"tags": ["exercise"], "gpulab": {"exercise": "ch99-sum"}},
        "source": "### Exercise 1: a sum\n\nAdd two and two.",
    },
    {
        "cell_type": "markdown",
        "id": "es",
        "metadata": {"tags": ["exercise-solution"]},
        "source": "#### Solution",
    },
    {
        "cell_type": "code",
        "id": "ec",
        "metadata": {"tags": ["exercise-solution"]},
        "outputs": [],
        "execution_count": None,
        "source": "assert 2 + 2 == 4",
    },
]


def test_format_check_finds_and_fix_repairs(tmp_path):
    """A notebook with outputs and no Colab cell is reported, and --fix repairs both."""
    cells = [
        {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# Title"},
        {
            "cell_type": "code",
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "execution_count": None,
            "source": 'device = "auto"\nquick = False',
        },
        {
            "cell_type": "code",
            "id": "h",
            "metadata": {},
            "execution_count": 3,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}],
            "source": "from gpulab import hardware\nhardware.detect()",
        },
        {
            "cell_type": "markdown",
            "id": "s",
            "metadata": {},
            "source": "## Summary\n\n## Exercises",
        },
        *EXERCISE,
    ]
    path = _write(tmp_path / "n.ipynb", cells, widgets={"x": 1})
    found = nbcheck.problems(path, CONFIG)
    assert any("Colab set-up cells" in p for p in found)
    assert any("carries outputs" in p for p in found)
    assert any("kernelspec" in p for p in found)
    assert any("widget state" in p for p in found)
    assert nbcheck.fix(path, CONFIG)
    assert nbcheck.problems(path, CONFIG) == []


@pytest.mark.parametrize("missing", ["parameters", "summary", "title"])
def test_format_check_requires_conventions(tmp_path, missing):
    """Missing parameters, summary or title cells are each reported by name."""
    cells = [
        {"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# Title"},
        {
            "cell_type": "code",
            "id": "p",
            "metadata": {"tags": ["parameters"]},
            "outputs": [],
            "execution_count": None,
            "source": 'device = "auto"\nquick = False',
        },
        {
            "cell_type": "code",
            "id": "h",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "hardware.detect()",
        },
        {
            "cell_type": "markdown",
            "id": "s",
            "metadata": {},
            "source": "## Summary\n\n## Exercises",
        },
    ]
    if missing == "parameters":
        cells[1]["metadata"]["tags"] = []
    elif missing == "summary":
        cells[3]["source"] = "## Exercises"
    else:
        cells[0]["source"] = "Some text"
    path = _write(tmp_path / "n.ipynb", cells)
    nbcheck.fix(path, CONFIG)
    found = " ".join(nbcheck.problems(path, CONFIG))
    expected = {"parameters": "'parameters'", "summary": "Summary", "title": "title"}[missing]
    assert expected in found
