"""The timing report of a run: written as the notebooks finish, read by the site's pages.

Each notebook's wall time beside its budget (reported) and its kernel's CPU time beside its
budget (enforced), with the machine they were measured on in each edition's words.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from tools import editions
from tools.execution.runs import NotebookResult, RunConfig, report_path


def write_report(results: list[NotebookResult], run: RunConfig) -> Path:
    """Write the timing report (merging with results already there from this run)."""
    path = report_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = {}
    if path.exists():
        rows = {r["notebook"]: r for r in json.loads(path.read_text()).get("notebooks", [])}
    for result in results:
        rows[result.notebook] = result.row()
    report = {
        "mode": run.mode,
        "kernel": run.kernel,
        "device": run.device,
        "budget_s": run.budget_s,
        "cpu_budget_s": run.cpu_budget_s,
        "machine": machine_description(run),
        # the same machine in each edition's words, for the pages that quote it
        "machine_text": {lang: machine_description(run, lang) for lang in editions.LANGUAGES},
        "notebooks": sorted(rows.values(), key=lambda r: r["notebook"]),
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


def machine_description(run: RunConfig, lang: str = "en") -> str:
    """The machine a run's times were measured on, in words: CPU model and cores, and the GPUs."""
    from gpulab.machine.host import read_cpuinfo

    model = read_cpuinfo()[0] or (platform.processor() or platform.machine())
    gpus = (
        editions.text(lang, "gpus_hidden")
        if run.kernel == "gpulab-cpu"
        else editions.text(lang, "device").format(device=run.device)
    )
    return editions.text(lang, "machine").format(model=model, threads=os.cpu_count(), gpus=gpus)


def machine_times(run: RunConfig) -> dict[str, str]:
    """Each notebook's machine time in the run's report, in words, by notebook path."""
    path = report_path(run)
    if not path.exists():
        return {}
    report = json.loads(path.read_text())
    return {r["notebook"]: f"{r['seconds']:.0f} s" for r in report["notebooks"] if r["ok"]}


def time_key(notebook: str) -> str:
    """The MyST substitution holding a notebook's machine time: notebooks/02_x -> time_nb_02_x."""
    folder, name = notebook.rsplit("/", 1)
    prefix = {"notebooks": "nb", "labs": "lab"}.get(folder, folder.replace("/", "_"))
    return f"time_{prefix}_{name.removesuffix('.ipynb')}"


def _status(row: dict) -> str:
    """FAILED (an error or over the CPU budget), slow (over the wall budget, reported) or ok."""
    if not row["ok"]:
        return "FAILED"
    if row.get("over_cpu_budget"):
        return f"FAILED: over its CPU budget ({row['cpu_budget_s']:.0f} s)"
    if row.get("over_budget"):
        return f"slow: over {row['budget_s']:.0f} s of wall time"
    return "ok"


def format_table(rows: list[dict]) -> str:
    """The timing report as a plain-text table: wall and CPU seconds, and their budgets."""
    width = max([len("notebook")] + [len(r["notebook"]) for r in rows])
    lines = [
        f"{'notebook':<{width}}  {'seconds':>8}  {'budget':>7}  {'CPU s':>7}  "
        f"{'budget':>7}  status",
        f"{'-' * width}  {'-' * 8}  {'-' * 7}  {'-' * 7}  {'-' * 7}  ------",
    ]
    for r in rows:
        budget = f"{r['budget_s']:.0f}" if r.get("budget_s") else "-"
        cpu = f"{r['cpu_seconds']:.1f}" if r.get("cpu_seconds") is not None else "-"
        cpu_budget = f"{r['cpu_budget_s']:.0f}" if r.get("cpu_budget_s") else "-"
        lines.append(
            f"{r['notebook']:<{width}}  {r['seconds']:8.1f}  {budget:>7}  {cpu:>7}  "
            f"{cpu_budget:>7}  {_status(r)}"
        )
    total = sum(r["seconds"] for r in rows)
    cpu_total = sum(r.get("cpu_seconds") or 0.0 for r in rows)
    lines.append(f"{'total':<{width}}  {total:8.1f}  {'':>7}  {cpu_total:7.1f}")
    return "\n".join(lines)


def progress_line(result: NotebookResult, number: int, total: int, elapsed_s: float) -> str:
    """One line as a notebook finishes: which, how long it took, and the run's time so far."""
    cpu = f"  CPU {result.cpu_seconds:6.1f} s" if result.cpu_seconds is not None else ""
    return (
        f"[{number:>2}/{total}] {result.notebook:<48} {result.seconds:7.1f} s{cpu}  "
        f"{_status(result.row()):<6}  (elapsed {elapsed_s / 60:.1f} min)"
    )
