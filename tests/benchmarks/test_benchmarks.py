"""Every benchmark script runs at its quick size, and its output feeds the notebooks.

The scripts in benchmarks/ are found without listing them and run once per session on the
CPU with `--quick --out DIR`. Their figures (measured on this CPU, and labelled so) then
stand in for GPU figures: notebook 01 and lab 5 are executed with GPULAB_MEASURED_DIR=DIR,
so the cells that render measured figures have run before a GPU has measured anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import measured
from tests.helpers import provenance_problems
from tools.execution import executor

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
# The section each script writes, and the notebooks that render it.
SECTIONS = {
    "slow_loop": ["labs/05_fix_slow_training_loop_lab.ipynb"],
    "timing_fidelity": ["notebooks/01_why_gpus_are_fast.ipynb"],
    "decode_bound": [],
    "memory_accuracy": [],
    "memory_sweep": [],
    "gpu_rates": [],
    "triton_kernels": [],
}


@pytest.fixture(scope="session")
def bench_runs(tmp_path_factory) -> tuple[Path, dict[str, subprocess.CompletedProcess]]:
    """Run every script once, quick, on the CPU, into one folder; keep each one's output."""
    out = tmp_path_factory.mktemp("measured")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "GPULAB_PROGRESS": "0"}
    env.pop(measured.ENV_VAR, None)
    runs = {}
    for script in SCRIPTS:
        runs[script.stem] = subprocess.run(
            [sys.executable, str(script), "--quick", "--device", "cpu", "--out", str(out)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=600,
        )
    return out, runs


def test_every_script_is_known_and_every_known_script_exists():
    """A new benchmark is run without being listed; the sections table names what it writes."""
    assert {p.stem for p in SCRIPTS} == set(SECTIONS)


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_script_runs_quick_on_the_cpu_and_prints_its_table(bench_runs, name):
    """Exit 0, a table printed, and the figures written to --out (on a CPU only because asked)."""
    _, runs = bench_runs
    result = runs[name]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "figures written to" in result.stdout
    assert "----" in result.stdout  # gpulab.tables' rule under the header row


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_written_figures_carry_a_cpu_provenance(bench_runs, name):
    """Each section names the device it was measured on: here the CPU, never passed off as a GPU."""
    out, _ = bench_runs
    stored = measured.section(name, out)
    assert len(stored) == 1
    entry = next(iter(stored.values()))
    assert provenance_problems(entry["provenance"], require_gpu=False) == []
    assert entry["provenance"]["device"] == "cpu"
    assert provenance_problems(entry["provenance"], require_gpu=True)  # not a GPU's
    assert entry["provenance"]["command"].endswith(f"--out {out}")
    json.dumps(entry["figures"], allow_nan=False)  # strict JSON: no NaN reaches a page


def test_without_out_a_cpu_run_stores_nothing(tmp_path):
    """On a CPU, a script without --out leaves data/measured/ (or GPULAB_MEASURED_DIR) alone."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), measured.ENV_VAR: str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "slow_loop.py"),
            "--quick",
            "--device",
            "cpu",
            "--repeats",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "figures not stored" in result.stdout
    assert list(tmp_path.iterdir()) == []


def _outputs(cell: dict) -> str:
    """Everything a cell displayed, as text (plain text and HTML)."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        for kind in ("text/plain", "text/html"):
            parts.append("".join(out.get("data", {}).get(kind, "")))
    return "\n".join(parts)


@pytest.mark.parametrize(
    "section, notebook", [(s, nb) for s, nbs in SECTIONS.items() for nb in nbs]
)
def test_notebooks_render_the_measured_figures(
    bench_runs, tmp_path, monkeypatch, section, notebook
):
    """With GPULAB_MEASURED_DIR at the scripts' output, the measured-data cell shows those rows."""
    import papermill

    out, _ = bench_runs
    entry = next(iter(measured.section(section, out).values()))
    device_name = entry["provenance"]["gpu"]
    monkeypatch.setenv(measured.ENV_VAR, str(out))  # the kernel inherits this process's env
    executor.kernel_environment()
    path = ROOT / notebook
    executed = tmp_path / path.name
    papermill.execute_notebook(
        str(path),
        str(executed),
        kernel_name="gpulab-cpu",
        parameters={"quick": True, "device": "cpu"},
        cwd=str(path.parent),
        progress_bar=False,
        log_output=False,
    )
    cells = json.loads(executed.read_text())["cells"]
    shown = [
        c
        for c in cells
        if c["cell_type"] == "code" and f'measured.section("{section}")' in "".join(c["source"])
    ]
    assert len(shown) == 1, f"{notebook} has no cell reading the {section!r} section"
    text = _outputs(shown[0])
    assert device_name in text and entry["provenance"]["date"] in text
    assert "No GPU" not in text  # the branch for stored figures ran, not the empty one
