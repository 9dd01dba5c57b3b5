"""What the tests share: the strict mode of `make test`, and the one way to need an extra.

`make test` sets GPULAB_STRICT=1: it installs every extra and tool the tests use (the
workshop extra, the kernels extra, Chromium through .ci/run, the npm packages), so a missing
one is a broken install and fails. A bare `pytest` elsewhere skips those tests with the
reason instead. Declared dependencies (torch, transformers, playwright, ...) are imported
plainly: a missing one fails everywhere.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

STRICT = os.environ.get("GPULAB_STRICT") == "1"


# The tiny Llama (2 layers of width 128, grouped-query attention, untied) that the library's
# tests build with transformers from its config, random weights, nothing downloaded.
TINY_LLAMA = dict(
    model_type="llama",
    hidden_size=128,
    intermediate_size=344,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=1000,
    tie_word_embeddings=False,
)
# The extras `make setup` installs, by platform (Triton has no macOS wheels).
INSTALLED_BY_MAKE = {"workshop", "dev"} | ({"kernels"} if sys.platform != "darwin" else set())


def missing(what: str, extra_or_tool: str, how: str) -> None:
    """Fail under `make test` (where `extra_or_tool` is installed), skip elsewhere, with `how`."""
    message = f"{what} is missing ({how})"
    if STRICT and (extra_or_tool in INSTALLED_BY_MAKE or extra_or_tool.startswith("tool:")):
        # an extra is installed by `make setup`; a tool (Chromium) is a prerequisite the README
        # names, which CI's .ci/run installs
        source = (
            "`make setup` installs it, so this is a broken install"
            if extra_or_tool in INSTALLED_BY_MAKE
            else "`make test` needs it (README, prerequisites)"
        )
        pytest.fail(f"{message}; {source}")
    pytest.skip(message)


def need_module(name: str, extra: str) -> ModuleType:
    """Import an optional extra's module: fail under `make test`, else skip, when it is absent."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(name, extra, f"the {extra!r} extra: pip install -e '.[{extra}]'")
        raise  # unreachable: missing() always raises


def has_module(name: str) -> bool:
    """Whether a module can be found without importing it."""
    return importlib.util.find_spec(name) is not None


def raw_data(name: str) -> dict:
    """A packaged data file (gpulab/data/<name>) as stored, before any validation."""
    import json
    from importlib import resources

    return json.loads((resources.files("gpulab") / "data" / name).read_text(encoding="utf-8"))


def raw_fact_check() -> dict:
    """The fact-check registry as stored (data/fact_check.json), before any validation."""
    return raw_data("fact_check.json")


def provenance_problems(prov: object, require_gpu: bool = True) -> list[str]:
    """What is wrong with a measured section's provenance (empty when nothing is).

    The check that guards src/gpulab/data/measured/: every field of
    gpulab.measured.REQUIRED_PROVENANCE, and a GPU device unless `require_gpu` is False.
    """
    from gpulab.reference.measured import REQUIRED_PROVENANCE

    if not isinstance(prov, dict):
        return ["provenance is not an object"]
    # a CPU run has no driver or CUDA version: those keys must be there, possibly None
    problems = [
        f"provenance lacks {key!r}"
        for key in REQUIRED_PROVENANCE
        if not prov.get(key) and key not in ("driver", "cuda")
    ]
    problems += [f"provenance lacks {key!r}" for key in ("driver", "cuda") if key not in prov]
    if require_gpu and prov.get("device") not in ("cuda", "rocm"):
        problems.append(
            f"device={prov.get('device')!r}: only figures measured on a GPU "
            "(cuda or rocm) belong in the package's data/measured/"
        )
    return problems


# The team's folder of the articles beside the checkout: the one path outside the repository
# that a file of it may name (tests/unit/test_stands_alone.py).
SEEDS_DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"


def seeds_dir() -> Path:
    """The folder of the two source articles: GPULAB_SEEDS, else the team's folder beside the
    checkout. The one optional input of the tests (docs/design.md): a clone has no articles,
    and the tests that read them skip with that reason."""
    return Path(os.environ.get("GPULAB_SEEDS") or SEEDS_DEFAULT)  # set but empty: the default


def need_seeds() -> Path:
    """The articles' folder, or a skip naming GPULAB_SEEDS when it is absent (never a failure:
    the articles are not part of the repository)."""
    seeds = seeds_dir()
    if not seeds.is_dir():
        pytest.skip(f"the source articles are not at {seeds}: set GPULAB_SEEDS to their folder")
    return seeds


def cpu_report(cpu=None, **overrides):
    """A CPU-only HardwareReport built by hand around ``cpu`` (a test CPU by default): no
    detection, nothing read from this machine; ``overrides`` replace any field."""
    from gpulab.machine.report import CPUInfo, HardwareReport, TorchInfo

    values = dict(
        os="Linux",
        python="3.11",
        torch=TorchInfo(installed=True, version="2.13.0+cpu"),
        cpu=cpu
        or CPUInfo(model="Test CPU", physical_cores=4, logical_cores=8, vector_extensions=[]),
        ram_total_bytes=32 * 1024**3,
        ram_available_bytes=16 * 1024**3,
        gpus=[],
        backend="cpu",
        in_colab=False,
        visible_devices={},
        nvidia_device_files=False,
        notes=[],
    )
    values.update(overrides)
    return HardwareReport(**values)
