"""The one execution pipeline of the course (docs/design.md, "One execution, then checks").

1. Every notebook under ``notebooks/`` and every lab solution under ``labs/`` is found
   automatically and executed once with papermill into ``_build/<run>/executed/``.
2. The wall time of each is written to a JSON report beside its budget in quick mode, and the
   CPU time its kernel used is held to a CPU budget (a wall time never fails a test: a busy
   machine would turn a correct course red; CPU time hardly moves with load).
3. The site is built from those executed copies with execution off, warnings as errors:
   Sphinx's output goes to ``_build/<run>/reports/site_build.log``, its warnings and errors
   to the terminal too, and the step's last line names the site and ``make serve``.

Used by ``make book`` (full size, course kernel), by ``make test`` through
``tests/notebooks`` (quick, GPUs hidden) and by ``make test-gpu`` (quick, GPU kernel);
``make site`` runs step 3 alone and ``make serve`` serves what it built.

    python tools/pipeline.py execute --mode quick
    python tools/pipeline.py site --mode quick
    python tools/pipeline.py serve --mode quick --port 8000

This file is the command line; the steps are in ``tools/execution`` (the run, executing the
notebooks, the timing report) and ``tools/staging`` (staging, building and serving the site).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tools.execution` when this file runs as a script
from tools.execution.runs import SERVE_PORT, RunConfig, default_kernel  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Command line: `execute`, `site` or `serve`, for a mode and kernel."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["execute", "site", "serve"])
    parser.add_argument("--mode", choices=["quick", "full"], default="quick")
    parser.add_argument(
        "--kernel",
        choices=["gpulab", "gpulab-cpu"],
        default=None,
        help="default: gpulab-cpu in quick mode, gpulab (sees GPUs) in full mode",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--port", type=int, default=SERVE_PORT, help="serve: the port on 127.0.0.1")
    args = parser.parse_args(argv)
    kernel = args.kernel or default_kernel(args.mode)
    run = RunConfig(mode=args.mode, kernel=kernel, device=args.device)
    # each step imports only what it runs: `make serve` has no venv, so no yaml or papermill
    if args.step == "execute":
        from tools.execution.executor import execute_all

        results = execute_all(run)
        return 0 if all(r.ok and not r.over_cpu_budget for r in results) else 1
    if args.step == "serve":
        from tools.staging.serve import serve

        return serve(run, args.port)
    # `make book` builds the full book with the kernel that sees GPUs; its executed copies
    # land in the run folder of that kernel.
    from tools.staging.build import build_site

    build_site(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
