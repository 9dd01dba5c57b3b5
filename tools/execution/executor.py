"""Executing notebooks with papermill, once each, on the course's kernels, under a CPU budget.

Every notebook is executed into its run's folder (``runs.executed_path``); a notebook whose
cell hung is run once more in a fresh kernel, and the timing report is written as they finish.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from tools import editions
from tools.execution import runs
from tools.execution.report import format_table, progress_line, write_report
from tools.execution.runs import NotebookResult, RunConfig, discover, executed_path


def _python_shim() -> str:
    """A folder whose `python` is this interpreter, for kernelspecs whose argv starts with it.

    On a machine without the venv (`make test-gpu PYTHON=python3`) `python` may be missing
    from PATH or be another interpreter; the kernels must run the one that runs the tests.
    """
    shim = Path(tempfile.gettempdir()) / f"gpulab-python-shim-{os.getuid()}"
    shim.mkdir(exist_ok=True)
    link = shim / "python"
    if not link.exists() or os.path.realpath(link) != os.path.realpath(sys.executable):
        link.unlink(missing_ok=True)
        link.symlink_to(sys.executable)
    return str(shim)


def kernel_environment() -> None:
    """Point Jupyter at the committed kernelspecs and `python` at this interpreter."""
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(runs.ROOT / "jupyter"), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    )
    os.environ["PATH"] = _python_shim() + os.pathsep + os.environ.get("PATH", "")
    src = str(runs.ROOT / "src")
    if src not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [src, os.environ.get("PYTHONPATH")])
        )
    # Progress bars would be frozen at 0% in the executed copies the site shows.
    os.environ["GPULAB_PROGRESS"] = "0"
    # ipykernel's debugger warns about frozen modules on every start; it is noise here.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def quick_run_environment() -> None:
    """What a quick (test) run adds for its kernels: OpenMP threads that wait by sleeping.

    By default torch's OpenMP threads spin while they wait for each other. On a machine busy
    with other work a spinning thread burns the time slices its peer needs: lab 2 took 148 s
    and 145 CPU seconds with two busy loops running, against 22 s and 36 CPU seconds idle; with
    passive waiting it took 32 s and 29 CPU seconds loaded, 23 s and 28 idle. The CPU budget
    then counts the notebook's work, not its waiting. (Full runs keep OpenMP's default: the
    book's CPU figures are measured as a reader's kernel would run them.)
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _describe_failure(exc: Exception) -> str:
    """One paragraph naming the failing cell and the error, from papermill's exception."""
    cell = getattr(exc, "exec_count", None)
    index = getattr(exc, "cell_index", None)
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = (getattr(exc, "source", "") or "").strip().splitlines()
    where = f"cell {index}" if index is not None else "a cell"
    if cell is not None:
        where += f" (execution count {cell})"
    first_line = f": `{source[0][:80]}`" if source else ""
    return f"{where}{first_line} raised {ename}: {evalue}"


def kernel_config():
    """nbclient's configuration: the kernel talks over local sockets (IPC), not TCP.

    Over TCP without keys ipykernel warns, once per notebook, that its traffic is unencrypted;
    IPC sockets are files only this user can open. Windows has no IPC transport, so it keeps TCP.
    """
    from traitlets.config import Config

    if sys.platform == "win32":
        return Config()
    folder = Path(tempfile.gettempdir()) / f"gpulab-kernels-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    ipc = str(folder / f"kernel-{os.getpid()}")
    return Config({"KernelManager": {"transport": "ipc", "ip": ipc}})


_KERNEL_MANAGER = None


def kernel_manager_class():
    """nbclient's kernel manager, less the interrupt it sends before shutting a kernel down.

    jupyter_client interrupts a kernel (SIGINT) before asking it to shut down, in case a cell
    is still running. The pipeline shuts a kernel down only after the notebook's last cell has
    finished, so there is nothing to interrupt; the signal can still land while the kernel
    handles a message (a widget's comm, the shutdown request), which ipykernel logs as
    "KeyboardInterrupt caught in kernel" into the build log. An interrupt asked for at any
    other time (nbclient's cell timeout) goes through.
    """
    global _KERNEL_MANAGER
    if _KERNEL_MANAGER is None:
        from jupyter_client.manager import AsyncKernelManager

        class FinishedNotebookKernelManager(AsyncKernelManager):
            async def _async_interrupt_kernel(self) -> None:
                if self.shutting_down:
                    return
                await super()._async_interrupt_kernel()

        _KERNEL_MANAGER = FinishedNotebookKernelManager
    return _KERNEL_MANAGER


def execute(notebook: Path, run: RunConfig, lang: str = "en") -> NotebookResult:
    """Execute one notebook with papermill into the run's folder and time it; `lang` is the
    edition whose text the notebook's outputs are written in (editions.PER_LANGUAGE only).
    A notebook that hung (runs.CELL_TIMEOUT_S) is run once more, in a fresh kernel."""
    result = _execute_once(notebook, run, lang)
    if result.hung:
        print(f"    {result.notebook} hung ({result.error}); running it once more", flush=True)
        result = _execute_once(notebook, run, lang)
    return result


def _execute_once(notebook: Path, run: RunConfig, lang: str) -> NotebookResult:
    import papermill  # a dev dependency: imported here so the module loads without it

    kernel_environment()
    if run.mode == "quick":
        quick_run_environment()
    out = executed_path(notebook, run, lang)
    out.parent.mkdir(parents=True, exist_ok=True)
    rel = str(notebook.resolve().relative_to(runs.ROOT))
    budgets = {"budget_s": run.budget_s, "cpu_budget_s": run.cpu_budget_s}
    cpu_before = _children_cpu_seconds()
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(notebook),
            str(out),
            parameters=run.parameters | ({} if lang == "en" else {"lang": lang}),
            kernel_name=run.kernel,
            cwd=str(notebook.parent),
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            config=kernel_config(),
            kernel_manager_class=kernel_manager_class(),
            execution_timeout=runs.CELL_TIMEOUT_S[run.mode],
        )
    except Exception as exc:  # papermill raises PapermillExecutionError for a cell error
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        seconds = time.perf_counter() - start
        return NotebookResult(
            rel,
            seconds,
            False,
            _describe_failure(exc),
            hung=isinstance(exc, (CellTimeoutError, DeadKernelError)),
            cpu_seconds=_cpu_since(cpu_before),
            **budgets,
        )
    seconds = time.perf_counter() - start
    return NotebookResult(rel, seconds, True, "", cpu_seconds=_cpu_since(cpu_before), **budgets)


def _children_cpu_seconds() -> float | None:
    """User + system seconds of this process's children that have ended (None on Windows).

    A kernel is a child that has ended, and been waited for, once papermill returns; what the
    kernel's own children used (a torchrun job, DataLoader workers) is counted in it.
    """
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_since(before: float | None) -> float | None:
    """CPU seconds the children that ended since `before` used."""
    after = _children_cpu_seconds()
    return None if before is None or after is None else after - before


def execute_all(run: RunConfig) -> list[NotebookResult]:
    """Execute every discovered notebook, write the report, print the table."""
    results = []
    # every notebook, then those whose outputs are words in the edition's language once more
    # per other edition (tools/editions.PER_LANGUAGE)
    runs = [(notebook, "en") for notebook in discover()] + editions.per_language_runs()
    started = time.perf_counter()
    for number, (notebook, lang) in enumerate(runs, 1):
        result = execute(notebook, run, lang)
        if lang != "en":
            result = replace(result, notebook=f"{result.notebook} [{lang}]")
        results.append(result)
        print(progress_line(result, number, len(runs), time.perf_counter() - started), flush=True)
    write_report([r for r in results if "[" not in r.notebook], run)
    print(format_table([r.row() for r in results]))
    for r in results:
        if not r.ok:
            print(f"FAILED {r.notebook}: {r.error}")
    return results
