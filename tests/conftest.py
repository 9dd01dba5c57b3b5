"""Shared test set-up: the repository's tools and src are importable, and the `gpu` gate.

Tests marked `gpu` need a CUDA device. Without one they are skipped with that reason, so a
bare `pytest` passes on a CPU machine; `make test-gpu` sets GPULAB_REQUIRE_GPU=1, under which
a missing or broken CUDA device fails them instead, so a GPU run cannot pass with nothing run.
"""

import functools
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "src"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@functools.lru_cache(maxsize=1)
def _cuda_device() -> str | None:
    """The CUDA device's name, or None when torch sees none (why is in the doctor's report)."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or under GPULAB_REQUIRE_GPU=1, fail) a `gpu` test when no CUDA device exists."""
    if item.get_closest_marker("gpu") is None or _cuda_device() is not None:
        return
    if os.environ.get("GPULAB_REQUIRE_GPU") == "1":
        pytest.fail(
            "GPULAB_REQUIRE_GPU=1 but torch sees no CUDA device: `python -m gpulab "
            "doctor` says why (driver, CPU-only torch, CUDA_VISIBLE_DEVICES)",
            pytrace=False,
        )
    pytest.skip("needs a CUDA GPU (run by `make test-gpu`)")
