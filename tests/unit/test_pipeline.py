"""The pipeline's pure parts: run configuration, discovery, report table, kernel install."""

from __future__ import annotations

import json

import pytest

from tools import install_kernels, pipeline


def test_run_config_rejects_unknown_mode_and_kernel():
    """A mistyped mode or kernel is named with the allowed values."""
    with pytest.raises(ValueError, match="mode='fast'.*'quick' or 'full'"):
        pipeline.RunConfig(mode="fast")
    with pytest.raises(ValueError, match="kernel='python3'"):
        pipeline.RunConfig(kernel="python3")


def test_run_config_from_env(monkeypatch):
    """make test-gpu's variables select the GPU kernel and device; folders do not collide."""
    monkeypatch.setenv("GPULAB_KERNEL", "gpulab")
    monkeypatch.setenv("GPULAB_DEVICE", "cuda")
    run = pipeline.RunConfig.from_env()
    assert run.parameters == {"quick": True, "device": "cuda"}
    assert run.run_dir.name == "quick-gpulab" and run.budget_s == 60.0
    assert pipeline.RunConfig(mode="full").budget_s is None


def test_discover_finds_new_notebooks_without_listing(tmp_path):
    """A notebook dropped into notebooks/ or labs/ is found; learner copies are not."""
    for rel in ["notebooks/09_new.ipynb", "labs/09_new_lab.ipynb", "labs/learner/09_new_lab.ipynb"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in pipeline.discover(tmp_path)]
    assert found == ["notebooks/09_new.ipynb", "labs/09_new_lab.ipynb"]


def test_report_table_marks_failures_and_budget():
    """The table shows each notebook's time and whether it failed or ran over budget."""
    rows = [
        {"notebook": "a.ipynb", "seconds": 1.0, "ok": True, "budget_s": 60, "over_budget": False},
        {"notebook": "b.ipynb", "seconds": 70.0, "ok": True, "budget_s": 60, "over_budget": True},
        {"notebook": "c.ipynb", "seconds": 2.0, "ok": False, "budget_s": 60, "over_budget": False},
    ]
    table = pipeline.format_table(rows)
    assert "OVER BUDGET" in table and "FAILED" in table and "73.0" in table


def test_write_report_merges_results(tmp_path, monkeypatch):
    """Reports of one run accumulate per notebook (a rerun replaces that notebook's row)."""
    monkeypatch.setattr(pipeline, "BUILD", tmp_path)
    run = pipeline.RunConfig()
    pipeline.write_report([pipeline.NotebookResult("a", 1.0, True, budget_s=60)], run)
    path = pipeline.write_report([pipeline.NotebookResult("b", 61.0, True, budget_s=60)], run)
    rows = json.loads(path.read_text())["notebooks"]
    assert [(r["notebook"], r["over_budget"]) for r in rows] == [("a", False), ("b", True)]


def test_failure_description_names_the_cell():
    """A papermill failure is summarised with the cell, its first line and the error."""
    class Fake(Exception):
        cell_index, exec_count, ename, evalue, source = 4, 3, "ValueError", "bad", "x = f()\ny"
    assert pipeline._describe_failure(Fake()) == "cell 4 (execution count 3): `x = f()` raised ValueError: bad"


def test_install_kernels_writes_absolute_python(tmp_path):
    """Installed copies of the kernelspecs name the interpreter by absolute path."""
    installed = install_kernels.install(prefix=tmp_path, python="/opt/py/bin/python3")
    assert {p.name for p in installed} == {"gpulab", "gpulab-cpu"}
    for path in installed:
        assert json.loads((path / "kernel.json").read_text())["argv"][0] == "/opt/py/bin/python3"
