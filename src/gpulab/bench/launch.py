"""Run a script under torchrun from Python, with a time limit and each rank's error (chapter 7).

    from gpulab.bench.launch import plan_job, run_torchrun

    plan = plan_job("cpu", gpu_count=0, nccl_available=False)   # gloo, 2 processes
    result = run_torchrun("train.py", ["--backend", plan.backend], plan.nproc, timeout_s=60)

A distributed job fails in ways a single process does not: one rank raises and the others wait
for it in a collective; one rank is killed and the others never hear of it. Three things keep
such a job from hanging a notebook: every script sets a timeout on its process group (a rank
left waiting raises), torchrun stops every worker as soon as one fails, and this launcher
kills the whole job when it outlives `timeout_s`. Scripts decorate their entry point with
torch.distributed.elastic's `@record`, so a failing rank's traceback is written to an error
file, which this module reads back (``gpulab.bench.launch_errors``) and puts into the
`DistributedJobError` it raises.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.bench.launch_errors import (
    RankFailure,
    indent,
    job_failures,
    last_line,
    parse_failure_summary,
    read_error_files,
)
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import (
    PositiveFloat,
    PositiveInt,
    checked,
)

__all__ = [
    "DistributedJobError",
    "JobPlan",
    "LaunchResult",
    "RankFailure",
    "parse_failure_summary",
    "plan_job",
    "read_error_files",
    "run_json",
    "run_torchrun",
    "torchrun_command",
]

TAIL_CHARS = 4000  # how much of the launcher's and each rank's output a result keeps


@dataclass(frozen=True)
class JobPlan:
    """How to run a distributed job on this machine."""

    backend: str  # "gloo" (CPU tensors) or "nccl" (CUDA tensors, one process per GPU)
    nproc: int  # processes (ranks) on this machine
    device: str  # "cpu" or "cuda": where each rank keeps its tensors
    note: str  # why this plan, in a sentence for the reader


@checked
def plan_job(
    device_type: str, gpu_count: int, nccl_available: bool, cpu_procs: PositiveInt = 2
) -> JobPlan:
    """NCCL with one process per GPU when there are two or more CUDA GPUs, else gloo on the CPU."""
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 0:
        raise GpulabConfigError(f"gpu_count={gpu_count!r} must be an integer >= 0")
    if device_type == "cuda" and gpu_count >= 2 and nccl_available:
        return JobPlan(
            "nccl", gpu_count, "cuda", f"{gpu_count} CUDA GPUs: NCCL, one process per GPU"
        )
    if device_type == "cuda" and gpu_count >= 2:
        why = f"{gpu_count} CUDA GPUs but this torch build has no NCCL"
    elif device_type == "cuda":
        # NCCL refuses two ranks on one GPU, and one rank has nothing to all-reduce with.
        why = "one CUDA GPU: an all-reduce needs two, and NCCL will not put two ranks on one GPU"
    elif device_type == "cpu":
        why = "no GPU in use"
    else:
        why = f"torch.distributed has no collective backend for {device_type!r} here"
    return JobPlan("gloo", cpu_procs, "cpu", f"{why}; gloo with {cpu_procs} processes on the CPU")


@dataclass
class LaunchResult:
    """What a torchrun job did: exit status, time, output tails and each failed rank."""

    command: list[str]  # the command line that was run
    returncode: int | None  # torchrun's exit status (None: killed by us after the time limit)
    wall_s: float  # seconds from start to the end of every process
    timed_out: bool  # the job outlived timeout_s and was killed
    timeout_s: float  # the time limit it ran under
    stdout_tail: str  # the end of torchrun's stdout (the ranks' stdout, prefixed [defaultN]:)
    stderr_tail: str  # the end of torchrun's stderr (the ranks' stderr and torchrun's summary)
    failures: list[RankFailure] = field(default_factory=list)  # failed ranks, root cause first
    rank_output: dict[int, str] = field(default_factory=dict)  # end of each rank's stderr log

    @property
    def ok(self) -> bool:
        """Whether every rank exited with status 0 within the time limit."""
        return self.returncode == 0 and not self.timed_out

    @property
    def root_cause(self) -> RankFailure | None:
        """The failure that happened first (torchrun's root cause), if any rank failed."""
        return self.failures[0] if self.failures else None

    def describe(self) -> str:
        """A few lines saying how the job ended and why, for an error message or a notebook."""
        if self.ok:
            return f"job finished in {self.wall_s:.1f} s"
        if self.timed_out:
            lines = [
                f"job did not finish within its {self.timeout_s:g} s limit and was killed "
                f"after {self.wall_s:.1f} s"
            ]
            if not self.rank_output:
                lines.append("  no rank had written any output yet")
            for rank, text in sorted(self.rank_output.items()):
                last = last_line(text) or "(no output)"
                lines.append(f"  rank {rank}'s last output: {last}")
            return "\n".join(lines)
        lines = [f"job failed after {self.wall_s:.1f} s (torchrun exit status {self.returncode})"]
        for f in self.failures:
            what = "failed first" if f.root_cause else "failed"
            code = "" if f.exitcode is None else f" (exit code {f.exitcode})"
            lines.append(f"  rank {f.rank} {what}{code}: {f.error}")
        if any("timed out" in f.error.lower() for f in self.failures):
            lines.append(
                "  (a rank that timed out in a collective was waiting for a rank that "
                "stopped taking part: hung, stuck or much slower)"
            )
        if not self.failures:
            lines.append("  no rank reported an error; the end of torchrun's output:")
            lines.append(indent(self.stderr_tail[-1500:]))
        return "\n".join(lines)


class DistributedJobError(RuntimeError):
    """A torchrun job failed or timed out; `.result` holds the LaunchResult."""

    def __init__(self, result: LaunchResult):
        self.result = result
        message = result.describe()
        root = result.root_cause
        if root is not None and root.traceback:
            message += f"\nrank {root.rank}'s traceback:\n{indent(root.traceback.rstrip())}"
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """Show the failing rank's error in IPython instead of the launcher's own traceback."""
        return [f"{type(self).__name__}: {self}"]


@checked
def torchrun_command(
    script: str | Path, args: Sequence[Any], nproc: PositiveInt, log_dir: str | Path
) -> list[str]:
    """The command line: this Python's torch.distributed.run, standalone, on one machine."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--max-restarts=0",  # a failed job fails; a restart would hide the error
        "--monitor-interval=0.1",  # notice a dead worker within 0.1 s
        f"--log-dir={log_dir}",
        "--tee=3",  # each rank's stdout and stderr go to its log file and to ours
        str(script),
        *map(str, args),
    ]


@checked
def run_torchrun(
    script: str | Path,
    args: Sequence[Any] = (),
    nproc: PositiveInt = 2,
    timeout_s: PositiveFloat = 120.0,
    *,
    check: bool = True,
    echo: bool = False,
    env: dict[str, str] | None = None,
    grace_s: PositiveFloat = 5.0,
    cwd: str | Path | None = None,
) -> LaunchResult:
    """Run `script` on `nproc` ranks under torchrun; kill it after `timeout_s` seconds.

    With check=True a failed or timed-out job raises DistributedJobError naming the failing
    rank and its error. echo=True copies the job's output lines to sys.stderr as they come.
    """
    script = Path(script)
    if not script.is_file():
        raise GpulabConfigError(f"script={str(script)!r} is not a file")
    log_dir = Path(tempfile.mkdtemp(prefix="gpulab-torchrun-"))
    command = torchrun_command(script, args, nproc, log_dir)
    try:
        result = _run(command, nproc, timeout_s, grace_s, echo, _environment(env, nproc), cwd)
        result.failures = job_failures(result.stderr_tail, log_dir) if not result.ok else []
        result.rank_output = _rank_outputs(log_dir)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    if check and not result.ok:
        raise DistributedJobError(result)
    return result


@checked
def run_json(
    script: str | Path,
    args: Sequence[Any] = (),
    nproc: PositiveInt = 2,
    timeout_s: PositiveFloat = 120.0,
    **kwargs: Any,
) -> tuple[dict, LaunchResult]:
    """Run a script that writes its results as JSON to `--json PATH`; return them and the run."""
    with tempfile.TemporaryDirectory(prefix="gpulab-results-") as tmp:
        path = Path(tmp) / "results.json"
        result = run_torchrun(script, [*args, "--json", str(path)], nproc, timeout_s, **kwargs)
        if not result.ok:
            raise DistributedJobError(result)
        if not path.is_file():
            raise FileNotFoundError(f"{script} finished but wrote no results to --json {path}")
        return json.loads(path.read_text()), result


# ---------------------------------------------------------------- running


def _environment(env: dict[str, str] | None, nproc: int) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    # torchrun sets 1 thread per rank and prints a banner about it unless the variable is set;
    # share the cores out instead.
    out.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    out["PYTHONUNBUFFERED"] = "1"  # progress lines arrive as they are printed
    return out


class _Tail:
    """The last TAIL_CHARS characters of a stream, read in a thread."""

    def __init__(self, stream, echo: bool):
        self.chunks: deque[str] = deque()
        self.size = 0
        self.thread = threading.Thread(target=self._read, args=(stream, echo), daemon=True)
        self.thread.start()

    def _read(self, stream, echo: bool) -> None:
        for line in iter(stream.readline, ""):
            if echo:
                sys.stderr.write(line)
            self.chunks.append(line)
            self.size += len(line)
            while self.size > TAIL_CHARS and len(self.chunks) > 1:
                self.size -= len(self.chunks.popleft())
        stream.close()

    def text(self, wait_s: float = 2.0) -> str:
        self.thread.join(wait_s)
        return "".join(self.chunks)[-TAIL_CHARS:]


def _run(
    command: list[str],
    nproc: int,
    timeout_s: float,
    grace_s: float,
    echo: bool,
    env: dict[str, str],
    cwd,
) -> LaunchResult:
    import psutil

    start = time.perf_counter()
    # A session of its own, so that a kill reaches torchrun's whole process group.
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    out, err = _Tail(proc.stdout, echo), _Tail(proc.stderr, echo)
    timed_out = False
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_job(proc, psutil, grace_s)
    wall = time.perf_counter() - start
    return LaunchResult(
        command=command,
        returncode=None if timed_out else proc.returncode,
        wall_s=wall,
        timed_out=timed_out,
        timeout_s=timeout_s,
        stdout_tail=out.text(),
        stderr_tail=err.text(),
    )


def _kill_job(proc: subprocess.Popen, psutil, grace_s: float) -> None:
    """SIGTERM torchrun (it stops its workers), then SIGKILL whatever is left after grace_s."""
    # torchrun starts each worker in a session of its own: list them before killing the parent.
    try:
        workers = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        workers = []
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    for w in workers:
        try:
            w.kill()
        except psutil.Error:
            pass  # already gone
    proc.wait()
    psutil.wait_procs(workers, timeout=grace_s)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group has ended


def _rank_outputs(log_dir: Path) -> dict[int, str]:
    out = {}
    for path in Path(log_dir).glob("**/attempt_*/*/stderr.log"):
        try:
            out[int(path.parent.name)] = path.read_text(errors="replace")[-TAIL_CHARS:]
        except (OSError, ValueError):
            continue
    return out
