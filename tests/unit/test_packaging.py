"""The project's files agree with each other: pyproject, environment.yml, constraints, kernels."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()


def _pip_section() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return [r for r in pip if not r.startswith("-")]


def test_environment_yml_carries_the_same_dependencies():
    """Runtime, dev, lab and workshop dependencies appear in environment.yml, same specifiers."""
    project = PYPROJECT["project"]
    optional = project["optional-dependencies"]
    wanted = project["dependencies"] + optional["dev"] + optional["lab"] + optional["workshop"]
    # jupyterlab is in both the lab and the workshop extra; environment.yml lists it once
    assert sorted(set(wanted)) == sorted(_pip_section())


def test_environment_yml_uses_the_constraints_and_installs_the_package():
    """The conda route goes through the same constraints file and installs gpulab itself."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-c constraints.txt" in pip and "-e ." in pip


def test_constraints_pin_torch_and_pyproject_allows_it():
    """constraints.txt pins torch to one version that the package's range admits."""
    pins = [
        line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert pins == ["torch==2.13.0"]
    assert "torch>=2.4" in PYPROJECT["project"]["dependencies"]


def test_kernels_extra_leaves_triton_unpinned():
    """Triton follows whatever the installed torch needs (docs/design.md)."""
    assert PYPROJECT["project"]["optional-dependencies"]["kernels"] == ["triton"]


def test_two_kernelspecs_one_hides_the_gpus():
    """gpulab sees the GPUs; gpulab-cpu hides them through all three variables."""
    specs = {
        p.parent.name: json.loads(p.read_text())
        for p in (ROOT / "jupyter" / "kernels").glob("*/kernel.json")
    }
    assert set(specs) == {"gpulab", "gpulab-cpu"}
    for spec in specs.values():
        assert spec["argv"][0] == "python"
    assert "env" not in specs["gpulab"]
    assert specs["gpulab-cpu"]["env"] == {
        "CUDA_VISIBLE_DEVICES": "",
        "HIP_VISIBLE_DEVICES": "",
        "ROCR_VISIBLE_DEVICES": "",
    }
