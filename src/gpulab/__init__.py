"""gpulab: the library behind the course "GPU Acceleration for AI, hands-on".

The package is cut into layers, each a subpackage that owns one kind of concern and imports
only the layers below it (CONTRIBUTING.md has the map; an import-linter contract in
``make test`` enforces it):

    course     teaching support: exercise checks, the slow loop and its grading, the fact-check
    ui         tables, plots, widgets, static calculators: presentation only
    bench      code that runs kernels and times them
    estimate   pure formulas (no torch): memory, speed bounds, parallelism, choice, cost
    machine    what this machine is and what is wrong with it (estimate's sibling)
    reference  data with sources: GPU and CPU specs, models, formats, drivers, links
    core       errors, the validation layer, units

Notebooks import modules by their short names, ``from gpulab import memory, timing, specs``:
every module of every layer is importable that way, loaded the first time it is used.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__version__ = "0.1.0"

# The layers, bottom to top, and the modules each owns. A module's short name is unique
# across layers, so `from gpulab import memory` means gpulab.estimate.memory.
LAYERS: dict[str, tuple[str, ...]] = {
    "core": ("errors", "constraints", "checkers", "validate", "units"),
    "reference": (
        "specs",
        "modelspec",
        "hf_config",
        "models",
        "formats",
        "drivers",
        "links",
        "measured",
        "published",
        "published_memory",
        "languages",
        "course_map",
    ),
    "machine": (
        "hardware",
        "report",
        "visible",
        "nvml",
        "torch_probe",
        "host",
        "device",
        "peaks",
        "doctor",
        "rules",
        "rule_registry",
        "rules_setup",
        "rules_resources",
        "versions",
        "monitor",
        "budget",
        "next_steps",
    ),
    "estimate": (
        "memory",
        "activations",
        "perf",
        "basis",
        "roofline",
        "parallel",
        "serving",
        "collectives",
        "choose",
        "cost",
        "power",
        "levers",
        "calculator",
        "published_bounds",
        "finetune",
        "answers",
    ),
    "bench": (
        "timing",
        "measure",
        "memprobe",
        "torch_models",
        "generation",
        "attention",
        "syncs",
        "batching",
        "oom",
        "quantize",
        "workloads",
        "loading",
        "compiled",
        "triton_support",
        "launch",
        "launch_errors",
        "precision",
        "progress",
        "quiet",
        "record",
    ),
    "ui": (
        "pictures_intro",
        "pictures_ch00",
        "tables",
        "plots",
        "widgets",
        "calculators",
        "listing",
        "predict",
        "candidates",
        "alt_text",
        "cli",
        "pictures_ch03",
        "pictures_ch01",
        "pictures_ch02",
        "pictures_ch06",
        "pictures_ch04",
        "pictures_ch05",
        "pictures_ch07",
    ),
    "course": (
        "labs",
        "figures_intro",
        "slowloop",
        "training_loops",
        "slowloop_grading",
        "slowloop_profile",
        "textdata",
        "derivations",
        "claims_hardware",
        "claims_buying",
        "claims_models",
        "claims_speed",
        "factcheck_claims",
        "factcheck_rubric",
        "factcheck",
        "factcheck_words",
        "figures",
        "figures_ch01",
        "figures_ch02",
        "figures_ch03",
        "figures_ch03_images",
        "figures_ch04",
        "figures_ch05",
        "figures_ch06",
        "figures_ch07",
        "figure_formats",
    ),
}
MODULES: dict[str, str] = {
    name: f"gpulab.{layer}.{name}" for layer, names in LAYERS.items() for name in names
}

__all__ = ["LAYERS", "MODULES", "__version__"]  # `import *` should not load every layer


def __getattr__(name: str) -> ModuleType:
    """Import ``gpulab.<name>`` from its layer the first time it is asked for (PEP 562)."""
    path = MODULES.get(name)
    if path is None:
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    module = importlib.import_module(path)
    globals()[name] = module  # later lookups skip this function
    return module


def __dir__() -> list[str]:
    """The short names, for tab completion."""
    return sorted([*__all__, *MODULES])
