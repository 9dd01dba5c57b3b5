"""A notebook parameter that makes no sense stops with one clear sentence."""

from __future__ import annotations

import pytest

from tools.execution import executor, runs


@pytest.mark.parametrize("device", ["tpu", "cuda:banana"])
def test_unknown_device_stops_with_one_sentence(device, run, tmp_path, monkeypatch):
    """device='tpu' fails in the cell that picks the device, naming the value and the choices."""
    monkeypatch.setattr(runs, "BUILD", tmp_path)
    bad = runs.RunConfig(mode="quick", kernel=run.kernel, device=device)
    result = executor.execute(runs.ROOT / "notebooks" / "00_check_your_setup.ipynb", bad)
    assert not result.ok
    assert "GpulabConfigError" in result.error, result.error
    assert repr(device) in result.error and "'auto'" in result.error, result.error


class _QuickAs(runs.RunConfig):
    """A quick run whose `quick` parameter is injected as any value (papermill's -p quick X)."""

    def __init__(self, quick, **kwargs):
        super().__init__(**kwargs)
        self.quick_value = quick

    @property
    def parameters(self) -> dict:
        return {"quick": self.quick_value, "device": self.device}


@pytest.mark.parametrize("quick", ["maybe", 1, None])
def test_a_quick_that_is_not_a_bool_stops_with_one_sentence(quick, run, tmp_path, monkeypatch):
    """quick='maybe' fails in the set-up cell, naming the value and the two choices."""
    monkeypatch.setattr(runs, "BUILD", tmp_path)
    bad = _QuickAs(quick, mode="quick", kernel=run.kernel, device=run.device)
    result = executor.execute(runs.ROOT / "notebooks" / "02_will_it_fit.ipynb", bad)
    assert not result.ok
    assert "GpulabConfigError" in result.error and f"quick={quick!r}" in result.error, result.error
    assert "True" in result.error and "False" in result.error


def test_every_notebook_checks_its_quick_parameter():
    """The check sits in every notebook's set-up cell, before anything reads `quick`."""
    import json

    for notebook in runs.discover():
        code = [
            "".join(c["source"])
            for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"
            and "parameters" not in c.get("metadata", {}).get("tags", [])
            and "colab-setup" not in c.get("metadata", {}).get("tags", [])
        ]
        first_use = next(i for i, src in enumerate(code) if "quick" in src)
        assert "hardware.check_quick(quick)" in code[first_use], notebook.name
        before = code[first_use].split("hardware.check_quick(quick)")[0]
        assert "quick" not in before, notebook.name
