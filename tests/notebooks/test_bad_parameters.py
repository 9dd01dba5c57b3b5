"""A notebook parameter that makes no sense stops with one clear sentence."""

from __future__ import annotations

import pytest

from tools import pipeline


@pytest.mark.parametrize("device", ["tpu", "cuda:banana"])
def test_unknown_device_stops_with_one_sentence(device, run, tmp_path, monkeypatch):
    """device='tpu' fails in the cell that picks the device, naming the value and the choices."""
    monkeypatch.setattr(pipeline, "BUILD", tmp_path)
    bad = pipeline.RunConfig(mode="quick", kernel=run.kernel, device=device)
    result = pipeline.execute(pipeline.ROOT / "notebooks" / "00_check_your_setup.ipynb", bad)
    assert not result.ok
    assert "GpulabConfigError" in result.error, result.error
    assert repr(device) in result.error and "'auto'" in result.error, result.error
