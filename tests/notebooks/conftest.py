"""Execute each notebook once per test session and report its wall and CPU times.

The run (mode, kernel, device) comes from GPULAB_QUICK, GPULAB_KERNEL and GPULAB_DEVICE:
`make test` runs quick on the `gpulab-cpu` kernel, `make test-gpu` on `gpulab` with cuda.
"""

from __future__ import annotations

import pytest

from tools.execution import executor, runs
from tools.execution import report as timing_report

RUN = runs.RunConfig.from_env()
_RESULTS: dict[str, runs.NotebookResult] = {}


def execute_once(notebook, lang: str = "en") -> runs.NotebookResult:
    """Execute a notebook the first time a test asks for it (in the edition language `lang`:
    tools/editions.PER_LANGUAGE); later tests reuse the result."""
    key = str(notebook) if lang == "en" else f"{notebook} [{lang}]"
    if key not in _RESULTS:
        _RESULTS[key] = executor.execute(notebook, RUN, lang)
    return _RESULTS[key]


@pytest.fixture(scope="session")
def run() -> runs.RunConfig:
    """The pipeline run this session tests."""
    return RUN


def pytest_terminal_summary(terminalreporter):
    """Write the timing report and print it as a table at the end of the session."""
    # the report times each notebook once, in English; another edition's run is not a notebook
    results = [r for k, r in _RESULTS.items() if "/learner/" not in k and not k.endswith("]")]
    if not results:
        return
    path = timing_report.write_report(results, RUN)
    rows = [r.row() for r in results]
    terminalreporter.section(
        f"notebook wall times ({RUN.mode}, kernel {RUN.kernel}, device {RUN.device})"
    )
    terminalreporter.write_line(timing_report.format_table(rows))
    terminalreporter.write_line(f"report: {path}")
