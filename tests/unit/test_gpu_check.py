"""The GPU check's dry run, and the pieces it is made of (tools/gpu_check)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import replace

from packaging.requirements import Requirement

from tools.gpu_check import deps, plan

ROOT = deps.ROOT
DEVICE = {"python": "3.12.3", "packages": {"torch": "2.11.0", "numpy": None, "pytest": None}}


def lock(**wheels):
    """A lock of wheels given as name=(version, [requires])."""
    return {
        "wheels": {
            n.replace("_", "-"): {
                "version": v,
                "file": f"{n}-{v}.whl",
                "bytes": 1000,
                "requires": r,
            }
            for n, (v, r) in wheels.items()
        }
    }


def test_the_dry_run_passes_here_and_in_a_fresh_clone():
    """The committed device list, wheel lock, plan and commands agree (fresh clones lack .whl/)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_check"), "--dry-run"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("dry run: ok")
    assert "test-gpu" in result.stdout and "nccl_smoke" in result.stdout


def test_every_need_is_met_and_the_jupyter_stack_travels_as_wheels():
    """The course's needs resolve; what the device lacks (no Jupyter package) comes as wheels."""
    found = deps.resolve(
        deps.course_requirements(), deps.load(deps.DEVICE_PACKAGES), deps.load(deps.LOCK)
    )
    assert found.problems == []
    assert {
        "papermill",
        "nbclient",
        "nbformat",
        "ipykernel",
        "jupyter-client",
        "nbval",
        "pyzmq",
        "tornado",
        "debugpy",
        "rpds-py",
        "diffusers",
        "ipywidgets",
    } <= set(found.met_by_wheels)
    assert {"torch", "triton", "transformers", "pytest", "matplotlib"} <= set(found.met_by_device)


def test_a_missing_dependency_of_a_wheel_is_named():
    found = deps.resolve(
        [Requirement("papermill>=2.6")],
        DEVICE,
        lock(papermill=("2.7.0", ["nbclient>=0.2.0", "numpy"])),
    )
    assert found.problems == [
        "nbclient>=0.2.0: needed by papermill 2.7.0, neither on the device nor "
        "among the wheels (add it to tools/gpu_check/wheels.txt)"
    ]


def test_version_conflicts_duplicates_and_unused_wheels_are_named():
    found = deps.resolve(
        [Requirement("torch>=2.12"), Requirement("nbval==0.12")],
        DEVICE,
        lock(nbval=("0.11.0", []), numpy=("2.0.0", []), tqdm=("4.0", [])),
    )
    assert "torch: the course needs >=2.12, the device has 2.11.0" in found.problems
    assert "nbval: the course needs ==0.12, the wheel is 0.11.0" in found.problems
    assert any(
        p.startswith("numpy: carried as a wheel (2.0.0) although the device has it")
        for p in found.problems
    )
    assert "tqdm: carried as a wheel but nothing needs it" in found.problems


def test_markers_are_evaluated_for_the_devices_python():
    """A requirement for another Python (tomli before 3.11) is not needed on 3.12."""
    found = deps.resolve([Requirement("tomli>=2; python_version < '3.11'")], DEVICE, lock())
    assert found.problems == [] and not found.met_by_wheels


def test_the_lock_records_a_wheels_name_version_and_requirements(tmp_path):
    """A wheel's METADATA gives the lock its entry; extras' requirements are left out."""
    wheel = tmp_path / "Demo_Pkg-1.2.3-py3-none-any.whl"
    meta = (
        "Metadata-Version: 2.1\nName: Demo_Pkg\nVersion: 1.2.3\nRequires-Dist: traitlets>=5\n"
        'Requires-Dist: pytest; extra == "test"\nRequires-Dist: tomli; python_version < "3.11"\n'
    )
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("Demo_Pkg-1.2.3.dist-info/METADATA", meta)
    written = deps.write_lock(tmp_path, tmp_path / "lock.json")
    assert written["wheels"] == {
        "demo-pkg": {
            "version": "1.2.3",
            "file": wheel.name,
            "bytes": wheel.stat().st_size,
            "requires": ["traitlets>=5", 'tomli; python_version < "3.11"'],
        }
    }
    assert deps.carry_problems(written, tmp_path) == []
    (tmp_path / "extra-0.1-py3-none-any.whl").write_bytes(b"")
    assert deps.carry_problems(written, tmp_path) == [
        f"{tmp_path.name}/ holds extra-0.1-py3-none-any.whl, which the lock does not list"
    ]


def test_the_plan_fits_five_minutes_and_an_overrun_is_named(monkeypatch):
    assert plan.plan_problems() == [] and plan.planned_total_s() <= plan.PLAN_S
    slow = replace(plan.STEPS[1], planned_s=400)
    monkeypatch.setattr(plan, "STEPS", (plan.STEPS[0], slow))
    assert any("over the check's 300 s" in p for p in plan.plan_problems())


def test_every_step_names_an_existing_command():
    from tools.gpu_check.__main__ import command_problems

    assert command_problems() == []
    for step in plan.STEPS:
        scripts = [a for a in step.command if a.endswith(".py")]
        assert all((ROOT / s).is_file() for s in scripts), step.name


def test_the_makefile_keeps_an_inherited_pythonpath():
    """The wheels' folder on PYTHONPATH must survive make's `export PYTHONPATH` (test-gpu)."""
    env = {**os.environ, "PYTHONPATH": "/tmp/gpulab-site"}
    out = subprocess.run(
        [
            "make",
            "-s",
            "--no-print-directory",
            "--eval",
            "show-pythonpath: ; @echo $$PYTHONPATH",
            "show-pythonpath",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    ).stdout.strip()
    assert out == f"{ROOT}/src:/tmp/gpulab-site"
    env.pop("PYTHONPATH")
    out = subprocess.run(
        [
            "make",
            "-s",
            "--no-print-directory",
            "--eval",
            "show-pythonpath: ; @echo $$PYTHONPATH",
            "show-pythonpath",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    ).stdout.strip()
    assert out == f"{ROOT}/src"


def test_the_run_records_each_step_as_it_ends_and_goes_on_after_a_failure(monkeypatch, tmp_path):
    """The device run itself, on trivial steps: a pass, a failure, a timeout, all in the summary
    and the log; a run past its plan skips what is left instead of overrunning the call."""
    import importlib
    import json

    runner = importlib.import_module("tools.gpu_check.__main__")
    steps = (
        plan.Step("says hello", ("{python}", "-c", "print('hello from a step')"), 10, "a pass"),
        plan.Step("fails", ("{python}", "-c", "raise SystemExit(3)"), 10, "a failure"),
        plan.Step("hangs", ("{python}", "-c", "import time; time.sleep(60)"), 2, "a timeout"),
    )
    monkeypatch.setattr(plan, "STEPS", steps)
    assert runner.run(tmp_path / "out", tmp_path / "no-wheels") == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_name = {s["name"]: s for s in summary["steps"]}
    assert by_name["install wheels"]["ok"] and by_name["says hello"]["ok"]
    assert by_name["fails"]["returncode"] == 3 and not by_name["fails"]["ok"]
    assert by_name["hangs"]["timed_out"] == 3 and by_name["hangs"]["seconds"] < 10
    assert summary["passed"] == "2 of 4"
    log = (tmp_path / "out" / "gpu_check.log").read_text()
    assert "hello from a step" in log and "===== fails:" in log
    monkeypatch.setattr(plan, "PLAN_S", -61)  # already past the plan when the steps start
    assert runner.run(tmp_path / "late", tmp_path / "no-wheels") == 1
    late = json.loads((tmp_path / "late" / "summary.json").read_text())["steps"]
    assert [s.get("skipped") for s in late[1:]] == ["the check ran past its plan"] * 3
