"""The GPU check: everything the course has not run on a GPU, in one prepared device call.

On the device machine, from the repository root (the device README's form):

    python3 tools/gpu_check --out $OUT        # installs .whl/, runs every step, ~5 minutes

Here, on any CPU:

    python tools/gpu_check --dry-run          # the plan, the packages and the commands, checked
    python tools/gpu_check --lock             # record .whl/ in wheels.lock.json (make gpu-wheels)

The run writes to the output folder, as each step ends: `gpu_check.log` (every step's output),
`summary.json` (each step's result and seconds), `<gpu>.json` (the measured figures with their
provenance, written by the benchmark scripts through GPULAB_MEASURED_DIR) and the notebooks'
`notebook_times.json`. The session copies `<gpu>.json` into src/gpulab/data/measured/ and
commits it (CONTRIBUTING.md, "When a GPU machine is lent").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as `python tools/gpu_check`

from tools.gpu_check import deps, plan  # noqa: E402

ROOT = deps.ROOT
SITE = Path("/tmp/gpulab-site")  # where the carried wheels are installed on the device


def dry_run() -> list[str]:
    """Every problem the check would meet, found on this machine without a GPU."""
    problems = list(plan.plan_problems())
    device = deps.load(deps.DEVICE_PACKAGES)
    if not deps.LOCK.exists():
        return problems + [f"{deps.LOCK.name} is missing: run make gpu-wheels"]
    lock = deps.load(deps.LOCK)
    pinned = {}
    for line in deps.WHEELS_TXT.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pinned[deps.normalise(name)] = version
    locked = {name: w["version"] for name, w in lock["wheels"].items()}
    if pinned != locked:
        problems.append(
            f"wheels.txt and {deps.LOCK.name} disagree on "
            f"{sorted(set(pinned.items()) ^ set(locked.items()))}: run make gpu-wheels"
        )
    problems += deps.resolve(deps.course_requirements(), device, lock).problems
    problems += deps.carry_problems(lock)
    problems += command_problems()
    return problems


def command_problems() -> list[str]:
    """Each step's program, script and make target exists."""
    problems = []
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for step in plan.STEPS:
        argv = step.argv(sys.executable)
        if argv[0] == "make":
            if shutil.which("make") is None:
                problems.append(f"{step.name}: make is not installed")
            targets = [a for a in argv[1:] if "=" not in a]
            problems += [
                f"{step.name}: the Makefile has no target {t!r}"
                for t in targets
                if f"\n{t}:" not in makefile
            ]
        for arg in argv[1:]:
            if arg.endswith(".py") and not (ROOT / arg).is_file():
                problems.append(f"{step.name}: {arg} does not exist")
        if "-m" in argv:
            module = argv[argv.index("-m") + 1]
            if module == "gpulab" and not (ROOT / "src" / "gpulab" / "__main__.py").is_file():
                problems.append(f"{step.name}: gpulab has no __main__")
    return problems


def install_wheels(wheel_dir: Path, log) -> bool:
    """Install the carried wheels into SITE, without an index or their dependencies."""
    wheels = sorted(str(p) for p in wheel_dir.glob("*.whl"))
    if not wheels:
        log.write(f"no wheels in {wheel_dir}: nothing to install\n")
        return True
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--no-cache-dir",
        "--upgrade",
        "--target",
        str(SITE),
        *wheels,
    ]
    return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode == 0


def run(out: Path, wheel_dir: Path) -> int:
    """Run every step, writing the log and the summary as each ends; 0 when all passed."""
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / "summary.json"
    summary = {
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "planned_s": plan.planned_total_s(),
        "steps": [],
    }
    started = time.perf_counter()
    with open(out / "gpu_check.log", "a", encoding="utf-8") as log:

        def record(name, ok, seconds, **extra):
            summary["steps"].append({"name": name, "ok": ok, "seconds": round(seconds, 1), **extra})
            summary_path.write_text(json.dumps(summary, indent=1) + "\n")
            print(f"{'ok    ' if ok else 'FAILED'} {name:<16} {seconds:6.1f} s", flush=True)

        t0 = time.perf_counter()
        record("install wheels", install_wheels(wheel_dir, log), time.perf_counter() - t0)
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "GPULAB_PROGRESS": "0",
            "GPULAB_MEASURED_DIR": str(out),
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT / "src"), str(SITE), os.environ.get("PYTHONPATH")])
            ),
        }
        for step in plan.STEPS:
            if time.perf_counter() - started > plan.PLAN_S + 60:
                record(
                    step.name, False, 0.0, skipped="the check ran past its plan", proves=step.proves
                )
                continue
            log.write(f"\n===== {step.name}: {' '.join(step.argv(sys.executable))}\n")
            log.flush()
            t0 = time.perf_counter()
            try:
                code = subprocess.run(
                    step.argv(sys.executable),
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=step.limit_s,
                ).returncode
                record(
                    step.name,
                    code == 0,
                    time.perf_counter() - t0,
                    returncode=code,
                    proves=step.proves,
                )
            except subprocess.TimeoutExpired:
                record(
                    step.name,
                    False,
                    time.perf_counter() - t0,
                    timed_out=step.limit_s,
                    proves=step.proves,
                )
            if step.name == "test-gpu":
                times = ROOT / "_build" / "quick-gpulab" / "reports" / "notebook_times.json"
                if times.exists():
                    shutil.copy(times, out / "notebook_times.json")
    passed = sum(s["ok"] for s in summary["steps"])
    summary["passed"] = f"{passed} of {len(summary['steps'])}"
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"{summary['passed']} steps passed in {summary['seconds']} s; results in {out}")
    return 0 if passed == len(summary["steps"]) else 1


def main(argv: list[str] | None = None) -> int:
    """Command line: --dry-run, --lock, or the check itself."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="check the plan here, without a GPU")
    parser.add_argument("--lock", action="store_true", help="record .whl/ in wheels.lock.json")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: $OUT)")
    parser.add_argument("--wheels", type=Path, default=deps.WHEEL_DIR, help="the carried wheels")
    args = parser.parse_args(argv)
    if args.lock:
        lock = deps.write_lock(args.wheels)
        size = sum(w["bytes"] for w in lock["wheels"].values())
        print(f"{len(lock['wheels'])} wheels, {size / 2**20:.1f} MiB, recorded in {deps.LOCK.name}")
        return 0
    if args.dry_run:
        problems = dry_run()
        for step in plan.STEPS:
            print(f"  {step.name:<16} {step.planned_s:4d} s  {step.proves}")
        print(
            f"  {'total':<16} {plan.planned_total_s():4d} s planned (install included), "
            f"of {plan.PLAN_S} s"
        )
        for problem in problems:
            print(f"PROBLEM: {problem}")
        print("dry run: ok" if not problems else f"dry run: {len(problems)} problem(s)")
        return 0 if not problems else 1
    out = args.out or (
        Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "_build" / "gpu_check"
    )
    return run(out, args.wheels)


if __name__ == "__main__":
    raise SystemExit(main())
