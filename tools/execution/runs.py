"""One pipeline run: its configuration, its notebooks, where its files go, and its commands.

A run is a mode ("quick" for the tests, "full" for the book) and a kernel ("gpulab-cpu" hides
the GPUs, "gpulab" sees them); its files live in ``_build/<run>/``. The hints name the command
that executes, builds or serves a run, for the messages that stop the pipeline.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
        """CPU-time budget per notebook (its kernel's user + system seconds), enforced; quick
        runs only."""
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
        return (
            self.cpu_budget_s is not None
            and self.cpu_seconds is not None
            and self.cpu_seconds > self.cpu_budget_s
        )

    def row(self) -> dict:
        """The result as a report row, with both budget verdicts."""
        return asdict(self) | {
            "over_budget": self.over_budget,
            "over_cpu_budget": self.over_cpu_budget,
        }


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


def report_path(run: RunConfig) -> Path:
    """The JSON timing report of a run."""
    return run.run_dir / "reports" / "notebook_times.json"


def passed_notebooks(run: RunConfig) -> set[str]:
    """Notebooks that the run's timing report records as executed without error."""
    path = report_path(run)
    if not path.exists():
        return set()
    return {r["notebook"] for r in json.loads(path.read_text())["notebooks"] if r["ok"]}


def html_dir(run: RunConfig) -> Path:
    """Where the built site's HTML lands."""
    return run.run_dir / "_build" / "html"


def site_log(run: RunConfig) -> Path:
    """The log of a run's site build: everything Sphinx printed, for both editions."""
    return run.run_dir / "reports" / "site_build.log"


def default_kernel(mode: str) -> str:
    """The kernel a mode runs on unless told: quick hides the GPUs, full (the book) sees them."""
    return "gpulab-cpu" if mode == "quick" else "gpulab"


def shown_path(path: Path) -> str:
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
        return (
            f"`make book` executes them (or `{step}`), and `make site` then rebuilds the site alone"
        )
    return f"`{step}` executes them (`make book` does it at full size)"


def build_hint(run: RunConfig) -> str:
    """What builds a run's site: `make book`, `make test`, or the pipeline's steps."""
    if run.kernel != default_kernel(run.mode):
        return (
            f"`python tools/pipeline.py execute --mode {run.mode} --kernel {run.kernel}`, "
            f"then `site` with the same options, build it"
        )
    if run.mode == "full":
        return "`make book` builds it (`make site` when its notebooks are already executed)"
    return (
        "`make test` builds it (`make site MODE=quick` when its notebooks are already "
        "executed); `make book` builds the full-size one"
    )


def serve_hint(run: RunConfig, port: int = SERVE_PORT) -> str:
    """The command that serves a run's site over http, and the address to open."""
    if run.kernel == default_kernel(run.mode):
        command = "make serve" + ("" if run.mode == "full" else f" MODE={run.mode}")
    else:
        command = f"python tools/pipeline.py serve --mode {run.mode} --kernel {run.kernel}"
    return f"`{command}`, then open http://127.0.0.1:{port}/"
