"""The set-up page's picture: drawn without arguments, titled, and stating NVIDIA's figure."""

from __future__ import annotations

import json
from importlib import resources

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpulab.ui import pictures_ch00  # noqa: E402


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_the_page_has_one_picture_and_it_draws():
    assert set(pictures_ch00.PICTURES) == {"ch00-stack"}
    fig = pictures_ch00.PICTURES["ch00-stack"]()
    try:
        assert fig.axes[0].get_title().startswith("What runs when PyTorch uses a GPU")
        texts = _texts(fig)
        for backend in ("NVIDIA", "AMD", "Apple"):
            assert backend in texts
        assert "CUDA toolkit" in texts and "never loads it" in texts
    finally:
        plt.close(fig)


def test_the_driver_minimum_is_nvidias_not_typed():
    """The CUDA 12 minimum in the NVIDIA column is the release notes' row, read here directly."""
    table = json.loads(
        (resources.files("gpulab") / "data" / "cuda_driver_minimums.json").read_text("utf-8")
    )
    (row,) = [r for r in table["minor_version_compatibility"] if r["major"] == 12]
    fig = pictures_ch00.software_stack()
    try:
        assert f"a CUDA 12 build needs\n{row['linux']} or newer" in _texts(fig)
    finally:
        plt.close(fig)
