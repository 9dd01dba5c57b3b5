"""Figures measured on GPUs, stored with their provenance in data/measured/ (docs/design.md).

A figure measured on a GPU the build machine does not have is data, not prose: a benchmark
script writes it with the GPU, driver, torch version, date and command (``gpulab.record``),
and pages render it from here. A page never types such a number by hand.

Where the figures are read from: ``GPULAB_MEASURED_DIR`` when it is set (the tests point it
at a benchmark's CPU output, so the notebooks' measured-data branches run before a GPU figure
exists), else the package's ``data/measured/``, which holds only figures measured on a GPU.

One file stands apart, measured on the machine that ran it and labelled so: the memory
estimator's held-out validation (``data/estimator_validation.json``, written by
``benchmarks/memory_sweep.py --write``), which chapter 2 quotes (``estimator_validation``).
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from gpulab.core.validate import OneOf, checked, lenient
from gpulab.reference import languages

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "NOT_VERIFIED",
    "PACKAGED_DIR",
    "REQUIRED_PROVENANCE",
    "backend_status",
    "directory",
    "estimator_validation",
    "load_all",
    "save",
    "section",
    "slug",
]

ENV_VAR = "GPULAB_MEASURED_DIR"
PACKAGED_DIR = Path(str(resources.files("gpulab") / "data" / "measured"))
# What every stored section must say about where its figures come from.
REQUIRED_PROVENANCE = ("gpu", "device", "driver", "torch", "cuda", "date", "command")
VALIDATION_PATH = Path(str(resources.files("gpulab") / "data" / "estimator_validation.json"))
# What the estimator's validation must say: the held-out sample, its worst error, where and when.
VALIDATION_FIELDS = (
    "seed",
    "cases",
    "measured",
    "within_bar",
    "worst_error_percent",
    "worst_abs_error_percent",
    "worst_case",
    "bar",
    "date",
    "torch",
    "transformers",
    "machine",
    "device",
    "command",
)
# What a page says of a backend no stored figure was measured on (CONTRIBUTING.md).
NOT_VERIFIED = "not yet verified on this hardware"
BACKENDS = ("cuda", "rocm", "mps")  # the GPU backends a page can say the course has run on
# backend_status's words in the source language; a translated edition's are in its words file
# (gpulab.reference.languages), under "measured"
STATUS_WORDS = {
    "none": NOT_VERIFIED,
    "run_on": "run on ",
    "sep": "; ",
    "run": "{gpu} ({date}, torch {torch})",
}


def directory() -> Path:
    """The folder measured figures are read from and written to now (see the module's doc)."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else PACKAGED_DIR


@lenient("file names of the library's own data")
def slug(gpu_name: str) -> str:
    """The file name of a GPU's figures: 'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", str(gpu_name).lower()).strip("-") or "unknown"


@lenient("writes the library's own data")
def save(
    gpu_name: str,
    section_name: str,
    figures: dict[str, Any],
    prov: dict[str, Any],
    folder: Path | None = None,
) -> Path:
    """Write (or replace) one section of a GPU's measured figures, with its provenance."""
    folder = directory() if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug(gpu_name)}.json"
    data = json.loads(path.read_text()) if path.exists() else {"gpu": gpu_name, "sections": {}}
    data["sections"][section_name] = {"provenance": prov, "figures": figures}
    path.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return path


@lenient("reads the library's own data")
def load_all(folder: Path | None = None) -> dict[str, dict]:
    """Every GPU's measured figures, keyed by GPU name."""
    folder = directory() if folder is None else Path(folder)
    out = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        out[data["gpu"]] = data
    return out


@lenient("reads the library's own data")
def section(name: str, folder: Path | None = None) -> dict[str, dict]:
    """One section across GPUs: {gpu name: {"provenance": ..., "figures": ...}}."""
    return {
        gpu: data["sections"][name]
        for gpu, data in load_all(folder).items()
        if name in data["sections"]
    }


@checked
def backend_status(
    kind: Annotated[str, OneOf(BACKENDS, "kind")],
    folder: Path | None = None,
    lang: Annotated[str, OneOf(languages.codes(), "lang")] = "en",
) -> str:
    """Whether the course has run on a backend ("cuda", "rocm", "mps"), in words for a page.

    "run on NVIDIA H200 (2026-12-01, torch 2.11.0+cu130)" names the GPUs whose stored figures
    were measured on that backend, with the latest date; otherwise NOT_VERIFIED. `lang` is the
    edition's language, one of gpulab.reference.languages.codes().
    """
    runs = {}
    for gpu, data in load_all(folder).items():
        for sec in data["sections"].values():
            prov = sec.get("provenance", {})
            if prov.get("device") == kind:
                runs[gpu] = max(
                    runs.get(gpu, ("", "")), (prov.get("date", ""), prov.get("torch", ""))
                )
    words = STATUS_WORDS if lang == languages.source() else languages.words(lang, "measured")
    if not runs:
        return words["none"]
    return words["run_on"] + words["sep"].join(
        words["run"].format(gpu=gpu, date=date, torch=torch)
        for gpu, (date, torch) in sorted(runs.items())
    )


def estimator_validation() -> dict[str, Any]:
    """The memory estimator's held-out validation: the sample's seed and size, its worst error
    against MemTracker (in %, signed: + is an over-estimate), the bar, the machine, the date and
    the torch and transformers versions (benchmarks/memory_sweep.py --write)."""
    data = json.loads(VALIDATION_PATH.read_text())
    missing = [f for f in VALIDATION_FIELDS if f not in data]
    if missing:
        raise ValueError(f"{VALIDATION_PATH.name} lacks {', '.join(missing)}")
    return data
