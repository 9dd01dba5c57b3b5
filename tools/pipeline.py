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
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tools.staging.editions` when this file runs as a script
from tools.execution import step  # noqa: E402
from tools.staging import editions  # noqa: E402

BUILD = ROOT / "_build"
NOTEBOOK_DIRS = ("notebooks", "labs", "book/appendix")
LEARNER_DIR = "learner"  # labs/learner/ holds generated learner copies; they are not executed
QUICK_BUDGET_S = 60.0  # wall seconds per notebook, quick mode, on the 2-core CI machine: reported
# CPU seconds per notebook and per core the kernel may use, quick mode: enforced. The kernel's
# user + system time is the work it did, whatever else the machine is doing; a notebook within
# its 60 s on an idle 2-core machine uses at most 120 s of it.
QUICK_CPU_BUDGET_S_PER_CORE = 60.0
# Seconds one cell may run before nbclient stops it. A cell past this has hung: once, on a busy
# 2-core machine, a notebook waited 15 minutes on an idle kernel whose reply never came. Such a
# notebook is run once more in a fresh kernel (execute_all), so that CI ends, and passes when the
# hang was the machine's. A quick-mode cell takes seconds; a full-size one minutes on a CPU.
CELL_TIMEOUT_S = {"quick": 300, "full": 3600}
WIDGET_ASSETS = ROOT / "node_modules" / "@jupyter-widgets" / "html-manager" / "dist"
REQUIRE_JS = ROOT / "node_modules" / "requirejs" / "require.js"
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
# Pyodide runs chapter 6's static calculators (gpulab.calculators); these are the files its
# loader fetches (the .map files are for debuggers only).
PYODIDE = ROOT / "node_modules" / "pyodide"
# pyodide.js, the classic build, serves pages opened from file:// (gpulab.ui.calculators)
PYODIDE_FILES = ("pyodide.mjs", "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm",
                 "python_stdlib.zip", "pyodide-lock.json")
# The Chinese text of both editions renders in Noto Sans SC, which the site carries (OFL-1.1):
# its 100 slices by Unicode range, of which a page loads only those its characters need.
CJK_FONT = ROOT / "node_modules" / "@fontsource-variable" / "noto-sans-sc"
CJK_FONT_DIR = "noto-sans-sc"  # in the site's static folder; tools/sphinx_ext/site.py links its CSS
SITE_STATIC = "_site_static"  # not the root _static/: JB1 would load every .js there
COURSE_ASSETS = ROOT / "tools" / "staging" / "static"  # the course's own stylesheet and scripts
SERVE_PORT = 8000  # `make serve`'s default PORT


@dataclass
class RunConfig:
    """How one pipeline run executes the notebooks."""

    mode: str = "quick"  # "quick" (seconds per notebook) or "full" (the book's sizes)
    kernel: str = "gpulab-cpu"  # "gpulab-cpu" hides GPUs; "gpulab" sees them
    device: str = "auto"  # the notebooks' `device` parameter

    def __post_init__(self) -> None:
        if self.mode not in ("quick", "full"):
            raise ValueError(f"mode={self.mode!r} is not allowed; use 'quick' or 'full'")
        if self.kernel not in ("gpulab", "gpulab-cpu"):
            raise ValueError(f"kernel={self.kernel!r} is not allowed; use 'gpulab' or 'gpulab-cpu'")

    @classmethod
    def from_env(cls, mode: str | None = None) -> RunConfig:
        """The run that `make test` / `make test-gpu` asked for through GPULAB_* variables."""
        return cls(
            mode=mode or ("quick" if os.environ.get("GPULAB_QUICK", "1") == "1" else "full"),
            kernel=os.environ.get("GPULAB_KERNEL", "gpulab-cpu"),
            device=os.environ.get("GPULAB_DEVICE", "auto"),
        )

    @property
    def run_dir(self) -> Path:
        """Build folder of this run: `_build/quick`, `_build/full`, `_build/quick-gpulab`..."""
        suffix = "" if self.kernel == "gpulab-cpu" else f"-{self.kernel}"
        return BUILD / f"{self.mode}{suffix}"

    @property
    def parameters(self) -> dict:
        """The values papermill injects after each notebook's `parameters` cell."""
        return {"quick": self.mode == "quick", "device": self.device}

    @property
    def budget_s(self) -> float | None:
        """Wall-time budget per notebook, reported; only quick runs have one."""
        return QUICK_BUDGET_S if self.mode == "quick" else None

    @property
    def cpu_budget_s(self) -> float | None:
        """CPU-time budget per notebook (its kernel's user + system seconds), enforced; quick only."""
        return QUICK_CPU_BUDGET_S_PER_CORE * usable_cores() if self.mode == "quick" else None


def usable_cores() -> int:
    """The cores this process (and the kernels it starts) may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


@dataclass
class NotebookResult:
    """What executing one notebook gave."""

    notebook: str  # path relative to the repository root
    seconds: float  # wall time
    ok: bool
    error: str = ""  # names the cell and the exception when not ok
    hung: bool = False  # a cell ran past CELL_TIMEOUT_S, or the kernel died
    budget_s: float | None = None  # wall-time budget: reported only
    cpu_seconds: float | None = None  # the kernel's user + system time (None: not measurable)
    cpu_budget_s: float | None = None  # CPU-time budget: a notebook over it fails the tests

    @property
    def over_budget(self) -> bool:
        """True when the notebook ran longer than its wall-time budget (reported, not a failure)."""
        return self.budget_s is not None and self.seconds > self.budget_s

    @property
    def over_cpu_budget(self) -> bool:
        """True when the notebook's kernel used more CPU time than its budget allows."""
        return (self.cpu_budget_s is not None and self.cpu_seconds is not None
                and self.cpu_seconds > self.cpu_budget_s)

    def row(self) -> dict:
        """The result as a report row, with both budget verdicts."""
        return asdict(self) | {"over_budget": self.over_budget,
                               "over_cpu_budget": self.over_cpu_budget}


def discover(root: Path = ROOT) -> list[Path]:
    """Every chapter notebook and lab solution, found without anyone listing it."""
    found = []
    for folder in NOTEBOOK_DIRS:
        found += sorted((root / folder).glob("*.ipynb"))
    return [p for p in found if not p.name.startswith("_")]


def learner_copies(root: Path = ROOT) -> list[Path]:
    """The generated learner copies of the labs."""
    return sorted((root / "labs" / LEARNER_DIR).glob("*.ipynb"))


def executed_path(notebook: Path, run: RunConfig, lang: str = "en") -> Path:
    """Where the executed copy of a notebook goes (an edition's own copy in `executed/<lang>/`)."""
    folder = run.run_dir / "executed"
    return (folder if lang == "en" else folder / lang) / notebook.resolve().relative_to(ROOT)


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
        [str(ROOT / "jupyter"), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    )
    os.environ["PATH"] = _python_shim() + os.pathsep + os.environ.get("PATH", "")
    src = str(ROOT / "src")
    if src not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
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
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / f"kernel-{os.getpid()}")}})


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
    A notebook that hung (CELL_TIMEOUT_S) is run once more, in a fresh kernel."""
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
    rel = str(notebook.resolve().relative_to(ROOT))
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
            execution_timeout=CELL_TIMEOUT_S[run.mode],
        )
    except Exception as exc:  # papermill raises PapermillExecutionError for a cell error
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        seconds = time.perf_counter() - start
        return NotebookResult(rel, seconds, False, _describe_failure(exc),
                              hung=isinstance(exc, (CellTimeoutError, DeadKernelError)),
                              cpu_seconds=_cpu_since(cpu_before), **budgets)
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


def report_path(run: RunConfig) -> Path:
    """The JSON timing report of a run."""
    return run.run_dir / "reports" / "notebook_times.json"


def write_report(results: list[NotebookResult], run: RunConfig) -> Path:
    """Write the timing report (merging with results already there from this run)."""
    path = report_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = {}
    if path.exists():
        rows = {r["notebook"]: r for r in json.loads(path.read_text()).get("notebooks", [])}
    for result in results:
        rows[result.notebook] = result.row()
    report = {"mode": run.mode, "kernel": run.kernel, "device": run.device,
              "budget_s": run.budget_s, "cpu_budget_s": run.cpu_budget_s,
              "machine": machine_description(run),
              # the same machine in each edition's words, for the pages that quote it
              "machine_text": {lang: machine_description(run, lang) for lang in editions.LANGUAGES},
              "notebooks": sorted(rows.values(), key=lambda r: r["notebook"])}
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


def machine_description(run: RunConfig, lang: str = "en") -> str:
    """The machine a run's times were measured on, in words: CPU model and cores, and the GPUs."""
    from gpulab.machine.host import read_cpuinfo

    model = read_cpuinfo()[0] or (platform.processor() or platform.machine())
    gpus = (editions.text(lang, "gpus_hidden") if run.kernel == "gpulab-cpu"
            else editions.text(lang, "device").format(device=run.device))
    return editions.text(lang, "machine").format(model=model, threads=os.cpu_count(), gpus=gpus)


def machine_times(run: RunConfig) -> dict[str, str]:
    """Each notebook's machine time in the run's report, in words, by notebook path."""
    path = report_path(run)
    if not path.exists():
        return {}
    report = json.loads(path.read_text())
    return {r["notebook"]: f"{r['seconds']:.0f} s" for r in report["notebooks"] if r["ok"]}


def time_key(notebook: str) -> str:
    """The MyST substitution that holds a notebook's machine time: notebooks/02_x -> time_nb_02_x."""
    folder, name = notebook.rsplit("/", 1)
    prefix = {"notebooks": "nb", "labs": "lab"}.get(folder, folder.replace("/", "_"))
    return f"time_{prefix}_{name.removesuffix('.ipynb')}"


def add_machine_time(nb: dict, seconds_text: str, machine: str, mode: str, lang: str = "en") -> None:
    """Say under a notebook's title how long the build machine took to run it, apart from the
    reading time its title states (the site only; the figure is the timing report's)."""
    title = nb["cells"][0]
    text = "".join(title["source"]).rstrip("\n")
    line = editions.text(lang, "machine_time").format(
        seconds=seconds_text, machine=machine, mode=editions.text(lang, f"mode_{mode}"))
    title["source"] = f"{text}\n\n{line}"


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
    lines = [f"{'notebook':<{width}}  {'seconds':>8}  {'budget':>7}  {'CPU s':>7}  "
             f"{'budget':>7}  status",
             f"{'-' * width}  {'-' * 8}  {'-' * 7}  {'-' * 7}  {'-' * 7}  ------"]
    for r in rows:
        budget = f"{r['budget_s']:.0f}" if r.get("budget_s") else "-"
        cpu = f"{r['cpu_seconds']:.1f}" if r.get("cpu_seconds") is not None else "-"
        cpu_budget = f"{r['cpu_budget_s']:.0f}" if r.get("cpu_budget_s") else "-"
        lines.append(f"{r['notebook']:<{width}}  {r['seconds']:8.1f}  {budget:>7}  {cpu:>7}  "
                     f"{cpu_budget:>7}  {_status(r)}")
    total = sum(r["seconds"] for r in rows)
    cpu_total = sum(r.get("cpu_seconds") or 0.0 for r in rows)
    lines.append(f"{'total':<{width}}  {total:8.1f}  {'':>7}  {cpu_total:7.1f}")
    return "\n".join(lines)


def progress_line(result: NotebookResult, number: int, total: int, elapsed_s: float) -> str:
    """One line as a notebook finishes: which, how long it took, and the run's time so far."""
    cpu = f"  CPU {result.cpu_seconds:6.1f} s" if result.cpu_seconds is not None else ""
    return (f"[{number:>2}/{total}] {result.notebook:<48} {result.seconds:7.1f} s{cpu}  "
            f"{_status(result.row()):<6}  (elapsed {elapsed_s / 60:.1f} min)")


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


def stage_site(run: RunConfig, edition: str = "en") -> Path:
    """Lay out a book source tree whose notebooks are the executed copies, for one edition:
    "en", "zh_CN", or "gettext" (the English text the message catalogues are made from)."""
    import yaml

    from tools.authoring import exercises

    lang = "en" if edition == "gettext" else edition
    src = run.run_dir / editions.source_folder(edition)
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    shutil.copytree(ROOT / "book", src / "book")
    shutil.copy(ROOT / "_toc.yml", src / "_toc.yml")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"  # executed once, by papermill
    # Local Sphinx extensions live in the repository, not in the staged copy: absolute paths.
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, path in extensions.items():
        extensions[name] = str(ROOT / path)
    # each notebook's machine time from this run's timing report, for the pages that quote it
    times = machine_times(run)
    machine = (json.loads(report_path(run).read_text()).get("machine_text", {}).get(lang)
               or machine_description(run, lang)) if times else editions.text(lang, "unknown_machine")
    subs = config.setdefault("parse", {}).setdefault("myst_substitutions", {})
    subs.update({time_key(nb): t for nb, t in times.items()})
    subs["time_machine"] = machine
    subs.update(backend_statuses(lang))
    editions.configure(config, edition, src)
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    missing = []
    passed = _passed_notebooks(run)
    for notebook in discover():
        executed = executed_path(notebook, run, editions.outputs_language(notebook, lang))
        if not executed.exists() or str(notebook.relative_to(ROOT)) not in passed:
            missing.append(str(notebook.relative_to(ROOT)))
            continue
        target = src / notebook.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        # the notebooks' tagged exercise cells become sphinx-exercise blocks on the site only
        site_copy = exercises.to_sphinx_exercise(json.loads(executed.read_text(encoding="utf-8")))
        show_run_parameters(site_copy)
        add_image_alt_text(site_copy)
        keep_site_representations(site_copy)
        rel = str(notebook.relative_to(ROOT))
        # the texts the pipeline adds are its own, in each language: none goes into a catalogue
        if rel in times and edition != "gettext":
            add_machine_time(site_copy, times[rel], machine, run.mode, lang)
        if notebook.parent.name == "labs":  # the exercise first: a learner starts there
            if edition != "gettext":
                add_exercise_launch(site_copy, notebook, config, lang)
            learner = src / "labs" / LEARNER_DIR / notebook.name
            learner.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "labs" / LEARNER_DIR / notebook.name, learner)
        target.write_text(json.dumps(site_copy, ensure_ascii=False), encoding="utf-8")
    if missing:
        raise SystemExit(f"not executed successfully in {_shown(report_path(run))}: "
                         + ", ".join(missing) + f"; {execute_hint(run)}")
    _copy_site_assets(src / SITE_STATIC)
    return src


def backend_statuses(lang: str = "en") -> dict[str, str]:
    """Whether the course has run on each GPU backend, from the stored measured figures: the
    MyST substitutions `backend_status_cuda`, `_rocm` and `_mps` (gpulab.measured)."""
    from gpulab.reference import measured

    return {f"backend_status_{kind}": measured.backend_status(kind, lang=lang)
            for kind in measured.BACKENDS}


def add_exercise_launch(nb: dict, notebook: Path, config: dict, lang: str = "en") -> None:
    """Put the launch of a lab's exercise copy (Colab and download) under the lab's title, on
    the site only: the page itself is the solution, and a learner starts from the exercise."""
    from tools.notebook_meta import colab_url

    rel = f"labs/{LEARNER_DIR}/{notebook.name}"
    text = editions.text(lang, "do_the_lab").format(
        colab=colab_url(config, rel), download=f"{LEARNER_DIR}/{notebook.name}")
    cell = {"cell_type": "markdown", "id": "open-the-exercise", "metadata": {}, "source": text}
    nb["cells"].insert(1, cell)


def show_run_parameters(nb: dict) -> None:
    """One parameters cell on the site: papermill's injected cell is hidden, and the values it
    set are noted under the notebook's own defaults, so the reader sees both once."""
    def tags(cell):
        return cell.setdefault("metadata", {}).setdefault("tags", [])

    injected = [c for c in nb["cells"] if "injected-parameters" in tags(c)]
    own = [c for c in nb["cells"] if "parameters" in tags(c)]
    if not injected or not own:
        return
    values = [line.strip() for line in "".join(injected[0]["source"]).splitlines()
              if line.strip() and not line.startswith("#")]
    tags(injected[0]).append("remove-cell")
    source = "".join(own[0]["source"]).rstrip("\n")
    own[0]["source"] = source + "\n# this page was built with: " + "; ".join(values)


def add_image_alt_text(nb: dict) -> None:
    """Give each cell's figures the alt text the kernel read off them (gpulab.ui.alt_text).

    myst-nb takes an image's alt attribute from the cell's `mystnb.image` options, so a cell
    with several figures gets one text that describes each in turn.
    """
    for cell in nb["cells"]:
        alts = [out.get("metadata", {}).get("image/png", {}).get("alt")
                for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
        alts = [a for a in alts if a]
        if not alts:
            continue
        text = alts[0] if len(alts) == 1 else " ".join(
            f"Figure {i} of {len(alts)}: {a}" for i, a in enumerate(alts, 1))
        cell.setdefault("metadata", {}).setdefault("mystnb", {}).setdefault("image", {})["alt"] = text


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def keep_site_representations(nb: dict) -> None:
    """Give the site only the representation an output names for it, and drop the widget
    state that no output shows any more.

    An output whose metadata says ``{"gpulab": {"site": MIME}}`` keeps only that MIME type on
    the site: chapter 2's calculator (gpulab.ui.widgets) is an ipywidget that needs a kernel,
    and its text/html runs gpulab in the page. Jupyter and Colab still get the whole bundle.
    The state of widgets left without a view goes too (all of it when none is left), so a page
    loads no widget manager for nothing: myst-nb adds its scripts only where state remains.
    """
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            keep = out.get("metadata", {}).get("gpulab", {}).get("site")
            if keep in out.get("data", {}):
                out["data"] = {keep: out["data"][keep]}
    widgets = nb.get("metadata", {}).get("widgets", {})
    state = widgets.get(WIDGET_STATE, {}).get("state")
    if state is None:
        return
    todo = [out["data"][WIDGET_VIEW]["model_id"] for cell in nb["cells"]
            for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    kept: set[str] = set()
    while todo:  # the shown widgets and every model they refer to (children, layouts, styles)
        model = todo.pop()
        if model in state and model not in kept:
            kept.add(model)
            todo += _model_references(state[model])
    if kept:
        widgets[WIDGET_STATE]["state"] = {k: v for k, v in state.items() if k in kept}
    else:
        nb["metadata"].pop("widgets")


def _model_references(value) -> list[str]:
    """The widget models a model's saved state refers to: "IPY_MODEL_<id>" strings, and the
    views in the outputs an Output widget holds."""
    if isinstance(value, str):
        return [value.removeprefix("IPY_MODEL_")] if value.startswith("IPY_MODEL_") else []
    if isinstance(value, dict):
        view = value.get(WIDGET_VIEW)
        own = [view["model_id"]] if isinstance(view, dict) and "model_id" in view else []
        return own + [ref for v in value.values() for ref in _model_references(v)]
    if isinstance(value, list):
        return [ref for v in value for ref in _model_references(v)]
    return []


def _passed_notebooks(run: RunConfig) -> set[str]:
    """Notebooks that the run's timing report records as executed without error."""
    path = report_path(run)
    if not path.exists():
        return set()
    return {r["notebook"] for r in json.loads(path.read_text())["notebooks"] if r["ok"]}


def _copy_site_assets(static: Path) -> None:
    """Copy the course's stylesheet and scripts, require.js, the widget manager with its fonts,
    MathJax, the CJK font and Pyodide into the site's static folder, and write the archive of
    gpulab that the static calculators run in Pyodide, with the carriers file:// pages load.

    The site carries its own JavaScript so that it renders offline and sends no request to a
    third-party CDN (docs/design.md); the npm packages are pinned in package-lock.json.
    """
    from gpulab.ui import calculators  # the archive is of the gpulab this interpreter imports

    needed = [WIDGET_ASSETS / "embed-amd.js", REQUIRE_JS, MATHJAX / "tex-mml-chtml.js",
              CJK_FONT / "index.css", *(PYODIDE / name for name in PYODIDE_FILES)]
    if not all(p.exists() for p in needed):
        raise SystemExit("site JavaScript missing: run `npm ci` (make does) first")
    static.mkdir(parents=True, exist_ok=True)
    for asset in COURSE_ASSETS.iterdir():
        shutil.copy(asset, static / asset.name)
    shutil.copy(REQUIRE_JS, static / "require.js")
    for asset in WIDGET_ASSETS.iterdir():
        # embed-amd.js loads its chunks and icon fonts from its own folder
        if asset.suffix in (".js", ".woff", ".woff2", ".ttf", ".eot", ".svg") and asset.name not in (
            "embed.js", "libembed-amd.js"):
            shutil.copy(asset, static / asset.name)
    # the CJK font's stylesheet loads its slices from files/ beside it; its licence goes along
    font = static / CJK_FONT_DIR
    font.mkdir()
    for name in ("index.css", "LICENSE"):
        shutil.copy(CJK_FONT / name, font / name)
    shutil.copytree(CJK_FONT / "files", font / "files")
    # MathJax loads its fonts relative to its own script
    mathjax = static / "mathjax"
    mathjax.mkdir()
    shutil.copy(MATHJAX / "tex-mml-chtml.js", mathjax / "tex-mml-chtml.js")
    shutil.copytree(MATHJAX / "output" / "chtml" / "fonts", mathjax / "output" / "chtml" / "fonts")
    # Pyodide and gpulab's pure layers, where the calculators' snippets say they are
    pyodide = static / calculators.PYODIDE_DIR
    pyodide.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy(PYODIDE / name, pyodide / name)
    archive = static / calculators.ARCHIVE
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(calculators.python_archive())
    # the same files again as classic scripts, for pages opened from file://
    for name in calculators.CARRIED_FILES:
        carried = static / name
        carrier = carried.with_name(carried.name + calculators.PAYLOAD_SUFFIX)
        carrier.write_text(calculators.payload_script(carried.name, carried.read_bytes()),
                           encoding="ascii")


def html_dir(run: RunConfig) -> Path:
    """Where the built site's HTML lands."""
    return run.run_dir / "_build" / "html"


def site_log(run: RunConfig) -> Path:
    """The log of a run's site build: everything Sphinx printed, for both editions."""
    return run.run_dir / "reports" / "site_build.log"


def default_kernel(mode: str) -> str:
    """The kernel a mode runs on unless told: quick hides the GPUs, full (the book) sees them."""
    return "gpulab-cpu" if mode == "quick" else "gpulab"


def _shown(path: Path) -> str:
    """A path as the terminal shows it: relative to the current folder when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def execute_hint(run: RunConfig) -> str:
    """What executes a run's notebooks: `make book` for the book, the pipeline's step otherwise."""
    step = f"python tools/pipeline.py execute --mode {run.mode}"
    if run.kernel != default_kernel(run.mode):
        step += f" --kernel {run.kernel}"
    if (run.mode, run.kernel) == ("full", "gpulab"):
        return f"`make book` executes them (or `{step}`), and `make site` then rebuilds the site alone"
    return f"`{step}` executes them (`make book` does it at full size)"


def build_hint(run: RunConfig) -> str:
    """What builds a run's site: `make book`, `make test`, or the pipeline's steps."""
    if run.kernel != default_kernel(run.mode):
        return (f"`python tools/pipeline.py execute --mode {run.mode} --kernel {run.kernel}`, "
                f"then `site` with the same options, build it")
    if run.mode == "full":
        return "`make book` builds it (`make site` when its notebooks are already executed)"
    return ("`make test` builds it (`make site MODE=quick` when its notebooks are already "
            "executed); `make book` builds the full-size one")


def serve_hint(run: RunConfig, port: int = SERVE_PORT) -> str:
    """The command that serves a run's site over http, and the address to open."""
    if run.kernel == default_kernel(run.mode):
        command = "make serve" + ("" if run.mode == "full" else f" MODE={run.mode}")
    else:
        command = f"python tools/pipeline.py serve --mode {run.mode} --kernel {run.kernel}"
    return f"`{command}`, then open http://127.0.0.1:{port}/"


def jupyter_book_command(src: Path, out: Path, *builder: str) -> list[str]:
    """The Jupyter Book build of a staged tree into `out`, warnings as errors."""
    cmd = [sys.executable, "-m", "jupyter_book", "build", str(src), "--path-output", str(out),
           "--builder", *builder, "-W", "-n", "--keep-going"]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    return [jb, *cmd[3:]] if jb else cmd


def _jupyter_book(src: Path, out: Path, *builder: str, log: Path, what: str) -> None:
    """Run Jupyter Book on a staged tree into `out`, warnings as errors, its output into `log`;
    a warning or an error fails the build, and is shown on the terminal."""
    sys.stdout.flush()
    code, shown = step.run_logged(jupyter_book_command(src, out, *builder), log)
    if code:
        why = ("the warnings and errors above fail it (warnings are errors here)" if shown
               else "Sphinx printed no warning")
        raise SystemExit(f"FAILED: {what} (exit status {code}): {why}; Sphinx's whole output "
                         f"is in {_shown(log)}")


def catalogue_dir(run: RunConfig) -> Path:
    """Where a run's message templates (.pot, one per page) land."""
    return run.run_dir / "gettext" / "_build" / "gettext"


def build_catalogues(run: RunConfig) -> Path:
    """Extract the English pages' messages into .pot files, the executed outputs left out."""
    from tools import i18n

    started = time.perf_counter()
    src = stage_site(run, "gettext")
    shutil.rmtree(run.run_dir / "gettext", ignore_errors=True)
    _jupyter_book(src, run.run_dir / "gettext", "custom", "--custom-builder", "gettext",
                  log=site_log(run), what="the message catalogues")
    dropped = i18n.drop_untranslatable(catalogue_dir(run))
    print(f"    the message catalogues: {_shown(catalogue_dir(run))} in "
          f"{time.perf_counter() - started:.0f} s ({dropped} messages with no words left out)",
          flush=True)
    return catalogue_dir(run)


def check_executed(run: RunConfig) -> None:
    """Stop with what to run when the run has no executed notebooks to build a site from."""
    if not _passed_notebooks(run):
        raise SystemExit(f"no executed notebooks in {_shown(run.run_dir / 'executed')} "
                         f"({run.mode} mode, kernel {run.kernel}) to build the site from: "
                         f"{execute_hint(run)}")


def build_site(run: RunConfig) -> Path:
    """Build both editions from the executed copies, warnings as errors, from a clean folder:
    the English site in `_build/html`, the Chinese one in `_build/html/zh_CN`."""
    check_executed(run)
    log = site_log(run)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    print(f"==> building the site from the executed notebooks in {_shown(run.run_dir / 'executed')}"
          f" (Sphinx's output: {_shown(log)}; its warnings and errors show here) ...", flush=True)
    begun = time.perf_counter()
    build_catalogues(run)
    started = time.perf_counter()
    src = stage_site(run)
    shutil.rmtree(run.run_dir / "_build", ignore_errors=True)
    _jupyter_book(src, run.run_dir, "html", log=log, what="the English site")
    print(f"    the English site in {time.perf_counter() - started:.0f} s", flush=True)
    for edition in editions.LANGUAGES[1:]:
        started = time.perf_counter()
        out = run.run_dir / editions.source_folder(edition).replace("site_src", "build")
        shutil.rmtree(out, ignore_errors=True)
        _jupyter_book(stage_site(run, edition), out, "html", log=log, what=f"the {edition} site")
        shutil.move(str(out / "_build" / "html"), str(html_dir(run) / edition))
        shutil.rmtree(out)
        with log.open("a", encoding="utf-8") as f:  # Sphinx's last line named the folder `out`
            f.write(f"\nmoved {out / '_build' / 'html'} to {html_dir(run) / edition}\n")
        print(f"    the {edition} site in {time.perf_counter() - started:.0f} s", flush=True)
    index = html_dir(run) / "index.html"
    print(f"The site is built in {(time.perf_counter() - begun) / 60:.1f} min: {_shown(index)} "
          f"(Chinese in {_shown(html_dir(run) / 'zh_CN')}/); to read it, run {serve_hint(run)}",
          flush=True)
    return index


def _port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` now (http.server would else print a
    traceback for the taken address)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def serve(run: RunConfig, port: int = SERVE_PORT) -> int:
    """Serve a run's built site over http on 127.0.0.1 (the standard library's server)."""
    html = html_dir(run)
    if not (html / "index.html").is_file():
        print(f"no site built in {_shown(html)} yet: {build_hint(run)}", file=sys.stderr)
        quick = RunConfig(mode="quick")
        if run.mode != "quick" and (html_dir(quick) / "index.html").is_file():
            print(f"`make test` built one in quick mode: {serve_hint(quick, port)}", file=sys.stderr)
        return 1
    if not _port_free(port):
        print(f"port {port} on 127.0.0.1 is taken (another server?): choose another, as in "
              f"`make serve PORT={port + 1}`", file=sys.stderr)
        return 1
    print(f"Serving {_shown(html)} on 127.0.0.1: open http://127.0.0.1:{port}/ "
          f"(Chinese: http://127.0.0.1:{port}/zh_CN/); Ctrl-C stops it", flush=True)
    # the server replaces this process, so Ctrl-C stops it without a traceback from here
    os.execv(sys.executable, [sys.executable, "-m", "http.server", str(port),
                              "--bind", "127.0.0.1", "--directory", str(html)])
    return 0  # not reached: execv does not return


def main(argv: list[str] | None = None) -> int:
    """Command line: `execute`, `site` or `serve`, for a mode and kernel."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["execute", "site", "serve"])
    parser.add_argument("--mode", choices=["quick", "full"], default="quick")
    parser.add_argument("--kernel", choices=["gpulab", "gpulab-cpu"], default=None,
                        help="default: gpulab-cpu in quick mode, gpulab (sees GPUs) in full mode")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--port", type=int, default=SERVE_PORT, help="serve: the port on 127.0.0.1")
    args = parser.parse_args(argv)
    kernel = args.kernel or default_kernel(args.mode)
    run = RunConfig(mode=args.mode, kernel=kernel, device=args.device)
    if args.step == "execute":
        results = execute_all(run)
        return 0 if all(r.ok and not r.over_cpu_budget for r in results) else 1
    if args.step == "serve":
        return serve(run, args.port)
    # `make book` builds the full book with the kernel that sees GPUs; its executed copies
    # land in the run folder of that kernel.
    build_site(run)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
