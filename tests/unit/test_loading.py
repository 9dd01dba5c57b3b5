"""Slow model loading (chapter 5): formats round-trip, and the disk arithmetic is right."""

import os
import time
from pathlib import Path

import pytest
import torch

from gpulab import loading
from gpulab.core.errors import GpulabConfigError


def test_disk_bounds_follow_from_line_rates():
    assert loading.DISKS["SATA SSD"].read_bytes_per_s == pytest.approx(600e6)
    assert loading.DISKS["NVMe PCIe 4.0 x4"].read_bytes_per_s == pytest.approx(
        4 * 16e9 * 128 / 130 / 8
    )
    # a 14 GB checkpoint (7B in bf16) from a SATA SSD: 14e9 / 600e6 = 23.3 s at best
    assert loading.load_seconds(14e9, "SATA SSD") == pytest.approx(23.33, abs=0.01)
    assert loading.load_seconds(140e9, "hard disk (7200 rpm)") == pytest.approx(140e9 / 205e6)
    speeds = [d.read_bytes_per_s for d in loading.DISKS.values()]
    assert speeds == sorted(speeds)


def test_every_load_returns_the_same_tensors(tmp_path):
    state = loading.make_checkpoint(64 * 1024, tensors=4)
    paths = loading.save_both(state, tmp_path)
    results = loading.time_loads(paths)
    assert len(results) == 4
    for r in results:
        assert 0 <= r.open_seconds <= r.ready_seconds
        assert r.nbytes == paths["safetensors"].stat().st_size
    from safetensors.torch import load_file

    loaded = load_file(str(paths["safetensors"]))
    assert all(torch.equal(loaded[k], v) for k, v in state.items())


def _o_direct_works(path) -> bool:
    """An independent probe: can this file system open a file with O_DIRECT at all?"""
    flag = getattr(os, "O_DIRECT", None)
    if flag is None:
        return False
    try:
        os.close(os.open(path, os.O_RDONLY | flag))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("folder", ["tmp", "repo"])
def test_direct_read_measures_where_o_direct_works_and_says_none_where_not(tmp_path, folder):
    """The rate is None exactly where O_DIRECT cannot open the file; elsewhere the bytes read
    at that rate take no longer than the call did, measured by a clock outside it."""
    base = tmp_path if folder == "tmp" else Path(__file__).resolve().parents[2] / "_build"
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"o_direct_probe_{os.getpid()}"
    path.write_bytes(b"\0" * (4 << 20))
    try:
        start = time.perf_counter()
        rate = loading.direct_read_bytes_per_s(path, block=1 << 20)
        outside = time.perf_counter() - start
        if not _o_direct_works(path):
            assert rate is None
        else:
            assert rate is not None and (4 << 20) / rate <= outside
    finally:
        path.unlink()


def test_checkpoint_size_respects_the_budget(monkeypatch):
    monkeypatch.setattr(loading.budget, "allowance", lambda device: 30 * 2**20)
    assert loading.checkpoint_size() == 10 * 2**20
    assert loading.checkpoint_size(quick=True) <= 32 * 2**20


def test_bad_inputs_are_named():
    with pytest.raises(GpulabConfigError, match="disk='floppy'"):
        loading.load_seconds(1e9, "floppy")
    with pytest.raises(GpulabConfigError, match="nbytes"):
        loading.load_seconds(-1, "SATA SSD")
    with pytest.raises(GpulabConfigError, match="tensors"):
        loading.make_checkpoint(1024, tensors=0)
