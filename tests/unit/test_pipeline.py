"""The pipeline's pure parts: run configuration, discovery, report table, kernel install."""

from __future__ import annotations

import json

import pytest

from tools import install_kernels
from tools.execution import executor, runs
from tools.execution import report as timing_report
from tools.staging import site_copy


def test_run_config_rejects_unknown_mode_and_kernel():
    """A mistyped mode or kernel is named with the allowed values."""
    with pytest.raises(ValueError, match="mode='fast'.*'quick' or 'full'"):
        runs.RunConfig(mode="fast")
    with pytest.raises(ValueError, match="kernel='python3'"):
        runs.RunConfig(kernel="python3")


def test_run_config_from_env(monkeypatch):
    """make test-gpu's variables select the GPU kernel and device; folders do not collide."""
    monkeypatch.setenv("GPULAB_KERNEL", "gpulab")
    monkeypatch.setenv("GPULAB_DEVICE", "cuda")
    run = runs.RunConfig.from_env()
    assert run.parameters == {"quick": True, "device": "cuda"}
    assert run.run_dir.name == "quick-gpulab" and run.budget_s == 60.0
    assert runs.RunConfig(mode="full").budget_s is None


def test_discover_finds_new_notebooks_without_listing(tmp_path):
    """A notebook dropped into notebooks/ or labs/ is found; learner copies are not."""
    for rel in ["notebooks/09_new.ipynb", "labs/09_new_lab.ipynb", "labs/learner/09_new_lab.ipynb"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in runs.discover(tmp_path)]
    assert found == ["notebooks/09_new.ipynb", "labs/09_new_lab.ipynb"]


def test_report_table_marks_failures_and_budget():
    """The table shows each notebook's wall and CPU time; over the CPU budget fails, over the
    wall budget is only reported."""
    rows = [
        {
            "notebook": "a.ipynb",
            "seconds": 1.0,
            "ok": True,
            "budget_s": 60,
            "over_budget": False,
            "cpu_seconds": 1.5,
            "cpu_budget_s": 120,
            "over_cpu_budget": False,
        },
        {
            "notebook": "b.ipynb",
            "seconds": 70.0,
            "ok": True,
            "budget_s": 60,
            "over_budget": True,
            "cpu_seconds": 80.0,
            "cpu_budget_s": 120,
            "over_cpu_budget": False,
        },
        {"notebook": "c.ipynb", "seconds": 2.0, "ok": False, "budget_s": 60, "over_budget": False},
        {
            "notebook": "d.ipynb",
            "seconds": 50.0,
            "ok": True,
            "budget_s": 60,
            "over_budget": False,
            "cpu_seconds": 130.0,
            "cpu_budget_s": 120,
            "over_cpu_budget": True,
        },
    ]
    lines = timing_report.format_table(rows).splitlines()
    status = {line.split()[0]: line for line in lines[2:]}
    assert status["a.ipynb"].endswith("  ok")
    assert status["b.ipynb"].endswith("slow: over 60 s of wall time")
    assert status["c.ipynb"].endswith("FAILED")
    assert status["d.ipynb"].endswith("FAILED: over its CPU budget (120 s)")
    assert lines[-1].split() == ["total", "123.0", "211.5"]


def test_cpu_budget_not_wall_time_decides():
    """A notebook that waited (wall time over budget, CPU time within) is not over budget;
    one whose kernel worked too long is, however fast the machine ran it."""
    waited = runs.NotebookResult("a", 95.0, True, budget_s=60, cpu_seconds=70.0, cpu_budget_s=120)
    worked = runs.NotebookResult("b", 40.0, True, budget_s=60, cpu_seconds=121.0, cpu_budget_s=120)
    assert waited.over_budget and not waited.over_cpu_budget
    assert worked.over_cpu_budget and not worked.over_budget
    assert runs.NotebookResult("c", 1.0, True, cpu_budget_s=120).over_cpu_budget is False


def test_cpu_budget_is_per_usable_core(monkeypatch):
    """Quick runs allow 60 CPU seconds per core the kernel may use; full runs have no budget."""
    monkeypatch.setattr(runs, "usable_cores", lambda: 2)
    assert runs.RunConfig(mode="quick").cpu_budget_s == 120.0
    assert runs.RunConfig(mode="full").cpu_budget_s is None


def test_a_kernels_cpu_time_is_measured(tmp_path, monkeypatch):
    """The CPU time of a notebook is its kernel's: a cell that spins 1.5 s of CPU shows it,
    and a cell that sleeps 1.5 s does not."""
    import nbformat

    monkeypatch.setattr(runs, "BUILD", tmp_path / "build")
    monkeypatch.setattr(runs, "ROOT", tmp_path)
    times = {}
    for name, code in [
        (
            "spin",
            "import time\nend = time.process_time() + 1.5\nwhile time.process_time() < end: pass",
        ),
        ("sleep", "import time\ntime.sleep(1.5)"),
    ]:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nb.metadata["kernelspec"] = {
            "name": "gpulab-cpu",
            "display_name": "x",
            "language": "python",
        }
        path = tmp_path / f"{name}.ipynb"
        nbformat.write(nb, path)
        result = executor.execute(path, runs.RunConfig())
        assert result.ok, result.error
        times[name] = result
    assert times["spin"].cpu_seconds >= 1.5  # the spin alone, plus the kernel's start
    assert times["sleep"].cpu_seconds < times["spin"].cpu_seconds - 1.0
    assert times["sleep"].seconds >= 1.5


def test_a_hung_cell_is_stopped_and_its_notebook_run_once_more(tmp_path, monkeypatch, capsys):
    """A cell past CELL_TIMEOUT_S fails its notebook as hung; execute then runs it once more,
    and a second run that passes is the notebook's result."""
    import nbformat

    monkeypatch.setattr(runs, "BUILD", tmp_path / "build")
    monkeypatch.setattr(runs, "ROOT", tmp_path)
    monkeypatch.setattr(runs, "CELL_TIMEOUT_S", {"quick": 2, "full": 2})
    # the first run sleeps past the timeout and leaves a mark; the second finds it and ends
    code = (
        "import pathlib, time\nmark = pathlib.Path('ran-once')\n"
        "if not mark.exists():\n    mark.touch()\n    time.sleep(30)"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "gpulab-cpu", "display_name": "x", "language": "python"}
    path = tmp_path / "hangs_once.ipynb"
    nbformat.write(nb, path)
    first = executor._execute_once(path, runs.RunConfig(), "en")
    assert (first.ok, first.hung) == (False, True) and first.seconds < 25, first
    (tmp_path / "ran-once").unlink()
    result = executor.execute(path, runs.RunConfig())
    assert result.ok and not result.hung, result
    assert "hangs_once.ipynb hung" in capsys.readouterr().out


def test_write_report_merges_results(tmp_path, monkeypatch):
    """Reports of one run accumulate per notebook (a rerun replaces that notebook's row)."""
    monkeypatch.setattr(runs, "BUILD", tmp_path)
    run = runs.RunConfig()
    timing_report.write_report([runs.NotebookResult("a", 1.0, True, budget_s=60)], run)
    path = timing_report.write_report([runs.NotebookResult("b", 61.0, True, budget_s=60)], run)
    rows = json.loads(path.read_text())["notebooks"]
    assert [(r["notebook"], r["over_budget"]) for r in rows] == [("a", False), ("b", True)]
    assert json.loads(path.read_text())["cpu_budget_s"] == runs.RunConfig().cpu_budget_s


def test_failure_description_names_the_cell():
    """A papermill failure is summarised with the cell, its first line and the error."""

    class Fake(Exception):
        cell_index, exec_count, ename, evalue, source = 4, 3, "ValueError", "bad", "x = f()\ny"

    assert (
        executor._describe_failure(Fake())
        == "cell 4 (execution count 3): `x = f()` raised ValueError: bad"
    )


def test_install_kernels_writes_absolute_python(tmp_path):
    """Installed copies of the kernelspecs name the interpreter by absolute path."""
    installed = install_kernels.install(prefix=tmp_path, python="/opt/py/bin/python3")
    assert {p.name for p in installed} == {"gpulab", "gpulab-cpu"}
    for path in installed:
        assert json.loads((path / "kernel.json").read_text())["argv"][0] == "/opt/py/bin/python3"


def test_progress_line_names_notebook_time_and_status():
    """Each finished notebook prints a line: its place, seconds, status, and the total so far."""
    ok = runs.NotebookResult("notebooks/00_x.ipynb", 12.34, True, budget_s=None)
    late = runs.NotebookResult("labs/01_y.ipynb", 75.0, True, budget_s=60)
    line = timing_report.progress_line(ok, 3, 17, 150.0)
    assert line.startswith("[ 3/17] notebooks/00_x.ipynb") and "12.3 s" in line
    assert line.rstrip().endswith("ok      (elapsed 2.5 min)")
    assert "slow: over 60 s of wall time" in timing_report.progress_line(late, 4, 17, 200.0)
    heavy = runs.NotebookResult(
        "labs/01_y.ipynb", 30.0, True, budget_s=60, cpu_seconds=150.0, cpu_budget_s=120
    )
    assert "CPU  150.0 s  FAILED: over its CPU budget (120 s)" in timing_report.progress_line(
        heavy, 4, 17, 200.0
    )
    failed = runs.NotebookResult("a.ipynb", 1.0, False, "cell 2 raised X")
    assert "FAILED" in timing_report.progress_line(failed, 1, 1, 1.0)


def test_kernel_started_as_the_pipeline_starts_it_prints_no_warning(capfd):
    """The pipeline's kernels talk over IPC, so ipykernel's TCP-without-encryption warning,
    printed on the kernel's stderr once per notebook, never reaches the build log."""
    from jupyter_client.manager import KernelManager

    executor.kernel_environment()
    km = KernelManager(kernel_name="gpulab-cpu", config=executor.kernel_config())
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        assert km.transport == "ipc"
        reply = kc.execute_interactive("21 * 2", timeout=60)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    err = capfd.readouterr().err
    assert "WARNING" not in err and "without encryption" not in err, err


def test_step_prints_its_label_then_its_time(capfd):
    """tools/execution/step.py: a line as a step starts, its time as it ends.

    A step that fails ends with its exit status.
    """
    import sys

    from tools.execution import step

    assert step.run_step("saying hello", [sys.executable, "-c", "print('hello')"]) == 0
    assert step.run_step("failing", [sys.executable, "-c", "raise SystemExit(3)"]) == 3
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "==> saying hello ..." and out[1] == "hello"
    assert out[2].startswith("    done in ") and out[2].endswith(" s")
    assert out[3] == "==> failing ..." and out[4].startswith("    FAILED (exit status 3) in ")
    assert step.main(["no separator"]) == 2


def test_figures_alt_text_moves_from_the_outputs_to_the_cell_options():
    """myst-nb reads an image's alt from the cell's `mystnb.image` options; two figures in one
    cell are described in turn, and a cell without a figure is left alone."""

    def image(alt):
        return {
            "output_type": "display_data",
            "data": {"image/png": "iVBOR"},
            "metadata": {"image/png": {"alt": alt}},
        }

    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [image("line chart: A.")]},
            {"cell_type": "code", "metadata": {}, "outputs": [image("a."), image("b.")]},
            {"cell_type": "code", "metadata": {}, "outputs": []},
        ]
    }
    site_copy.add_image_alt_text(nb)
    assert nb["cells"][0]["metadata"]["mystnb"]["image"]["alt"] == "line chart: A."
    assert (
        nb["cells"][1]["metadata"]["mystnb"]["image"]["alt"]
        == "Figure 1 of 2: a. Figure 2 of 2: b."
    )
    assert nb["cells"][2]["metadata"] == {}


def test_a_finished_notebooks_kernel_is_shut_down_without_an_interrupt(monkeypatch):
    """jupyter_client sends SIGINT before a shutdown; the pipeline's kernels skip it (ipykernel
    logged it as 'KeyboardInterrupt caught in kernel'), while an interrupt asked for at any
    other time, as nbclient's cell timeout does, still reaches the kernel."""
    import asyncio

    from jupyter_client.manager import AsyncKernelManager, KernelManager

    signals = []

    async def record_signal(self, signum):
        signals.append(signum)

    monkeypatch.setattr(KernelManager, "_async_signal_kernel", record_signal)
    manager = executor.kernel_manager_class()
    assert issubclass(manager, AsyncKernelManager)

    async def scenario():
        executor.kernel_environment()
        km = manager(kernel_name="gpulab-cpu", config=executor.kernel_config())
        await km.start_kernel()
        try:
            await km.interrupt_kernel()  # a timeout's interrupt: sent
            sent_while_running = len(signals)
            km.shutting_down = True
            await km._async_interrupt_kernel()  # the interrupt before a shutdown: skipped
            km.shutting_down = False
            return sent_while_running, len(signals)
        finally:
            await km.shutdown_kernel(now=True)

    while_running, after_shutdown_interrupt = asyncio.run(scenario())
    assert while_running == 1 and after_shutdown_interrupt == 1


def _widget_output(model_id: str, **extra) -> dict:
    """A display_data output showing a widget's view, with any other representation."""
    return {
        "output_type": "display_data",
        "metadata": extra.pop("metadata", {}),
        "data": {
            site_copy.WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": model_id},
            "text/plain": "VBox(...)",
            **extra,
        },
    }


def _model(name: str, **state) -> dict:
    return {
        "model_name": name,
        "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "state": state,
    }


def _notebook(*outputs: dict, state: dict) -> dict:
    return {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [o]} for o in outputs],
        "metadata": {
            "widgets": {
                site_copy.WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": state}
            }
        },
    }


def test_the_site_keeps_the_marked_representation_and_the_state_still_shown():
    """A marked output keeps only the representation it names; an unmarked widget keeps its
    view, with the models it refers to (through children, layouts and an Output widget's
    outputs); the models only the marked widget used are dropped."""
    site = {"gpulab": {"site": "text/html"}}
    marked = _widget_output("calc", metadata=site, **{"text/html": "<div>in-page</div>"})
    tabs = _widget_output("tab")
    state = {
        "tab": _model("TabModel", children=["IPY_MODEL_html"], layout="IPY_MODEL_tab-layout"),
        "html": _model("HTMLModel", value="<b>Machine</b>", layout="IPY_MODEL_html-layout"),
        "tab-layout": _model("LayoutModel"),
        "html-layout": _model("LayoutModel"),
        "calc": _model("VBoxModel", children=["IPY_MODEL_out"], layout="IPY_MODEL_calc-layout"),
        "calc-layout": _model("LayoutModel"),
        "out": _model("OutputModel", outputs=[_widget_output("inner")]),
        "inner": _model("HTMLModel", value="x"),
        "unshown": _model("HTMLModel", value="never displayed"),
    }
    nb = _notebook(marked, tabs, state=state)
    unmarked = json.loads(json.dumps(nb["cells"][1]))
    site_copy.keep_site_representations(nb)
    assert nb["cells"][0]["outputs"][0]["data"] == {"text/html": "<div>in-page</div>"}
    assert nb["cells"][1] == unmarked
    kept = nb["metadata"]["widgets"][site_copy.WIDGET_STATE]["state"]
    assert set(kept) == {"tab", "html", "tab-layout", "html-layout"}
    # the Output widget's own view keeps what it shows
    nb = _notebook(_widget_output("out"), state=state)
    site_copy.keep_site_representations(nb)
    assert set(nb["metadata"]["widgets"][site_copy.WIDGET_STATE]["state"]) == {"out", "inner"}


def test_a_notebook_left_without_a_widget_view_loses_its_widget_state():
    """No view left: no state, so myst-nb loads no widget manager on the page; an output
    whose marked representation is missing is left whole, and a notebook without widgets
    is left alone."""
    site = {"gpulab": {"site": "text/html"}}
    nb = _notebook(
        _widget_output("calc", metadata=site, **{"text/html": "<p>x</p>"}),
        state={"calc": _model("VBoxModel")},
    )
    site_copy.keep_site_representations(nb)
    assert "widgets" not in nb["metadata"]
    odd = _widget_output("calc", metadata={"gpulab": {"site": "image/png"}})
    nb = _notebook(odd, state={"calc": _model("VBoxModel")})
    site_copy.keep_site_representations(nb)
    assert site_copy.WIDGET_VIEW in nb["cells"][0]["outputs"][0]["data"]
    assert set(nb["metadata"]["widgets"][site_copy.WIDGET_STATE]["state"]) == {"calc"}
    plain = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"}], "metadata": {}}
    site_copy.keep_site_representations(plain)
    assert plain == {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"}],
        "metadata": {},
    }
