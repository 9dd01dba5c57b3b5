"""What a failed torchrun job left behind: each failed rank, its error, the one that failed first.

torchrun ends a failed job with a summary on stderr ("Failures:", "Root Cause (first observed
failure):"), and a rank whose entry point is decorated with torch.distributed.elastic's
`@record` writes its traceback to an error file under the job's log folder. This module reads
both into `RankFailure`s, the cause first (``gpulab.bench.launch`` runs the job).
"""

from __future__ import annotations

import json
import re
import signal
from dataclasses import dataclass
from pathlib import Path

from gpulab.core.validate import checked

__all__ = [
    "RankFailure",
    "indent",
    "job_failures",
    "last_line",
    "parse_failure_summary",
    "read_error_files",
]


@dataclass(frozen=True)
class RankFailure:
    """How one rank of a failed job ended."""

    rank: int  # global rank (single machine: the local rank)
    exitcode: int | None  # the process's exit code; negative: killed by that signal
    error: str  # one line: the exception, or the signal that killed it
    traceback: str  # the rank's traceback (from its error file) or its last output
    root_cause: bool = False  # torchrun's "first observed failure"


_FIELD = re.compile(r"^\s{2}(\w+)\s*: ?(.*)$")


@checked
def parse_failure_summary(text: str) -> list[RankFailure]:
    """The failed ranks in torchrun's ChildFailedError summary, root cause first.

    The summary lists "Failures:" and "Root Cause (first observed failure):", each entry a
    block of `key : value` lines (rank, exitcode, error_file, traceback); the traceback runs
    on over indented lines until the next separator.
    """
    start = text.rfind("Root Cause (first observed failure):")
    if start < 0:
        return []
    failures_at = text.rfind("Failures:", 0, start)
    sections = []
    if failures_at >= 0:
        sections.append((text[failures_at:start], False))
    sections.append((text[start:], True))
    found: dict[int, RankFailure] = {}
    for section, is_root in sections:
        for block in _blocks(section):
            failure = _block_failure(block, is_root)
            if failure is not None and (is_root or failure.rank not in found):
                found[failure.rank] = failure
    return sorted(found.values(), key=lambda f: (not f.root_cause, f.rank))


def _blocks(section: str) -> list[list[str]]:
    """Split a summary section into entries, each starting with a `[i]:` line."""
    blocks: list[list[str]] = []
    for line in section.splitlines():
        if re.match(r"^\[\d+\]:\s*$", line):
            blocks.append([])
        elif line.startswith(("-----", "=====")):
            if blocks:
                blocks.append([])  # close the entry; an empty one is dropped below
        elif blocks:
            blocks[-1].append(line)
    return [b for b in blocks if b]


def _block_failure(lines: list[str], root: bool) -> RankFailure | None:
    fields: dict[str, str] = {}
    key = None
    for line in lines:
        m = _FIELD.match(line)
        if m and m.group(1) in ("time", "host", "rank", "exitcode", "error_file", "traceback"):
            key = m.group(1)
            fields[key] = m.group(2)
        elif key == "traceback":
            fields[key] += "\n" + line[2:]
    rank = re.match(r"(\d+)", fields.get("rank", ""))
    if rank is None:
        return None
    code = re.match(r"(-?\d+)", fields.get("exitcode", ""))
    exitcode = int(code.group(1)) if code else None
    tb = fields.get("traceback", "").rstrip()
    return RankFailure(int(rank.group(1)), exitcode, _error_line(tb, exitcode), tb, root)


def _error_line(traceback_text: str, exitcode: int | None) -> str:
    """The exception line of a traceback, or what the exit code says."""
    if traceback_text.lstrip().startswith("Traceback"):
        return last_line(traceback_text)
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    last = last_line(traceback_text)
    return last or (f"exited with status {exitcode}" if exitcode is not None else "failed")


@checked
def read_error_files(log_dir: str | Path) -> dict[int, tuple[str, str, float]]:
    """Each rank's error file under torchrun's log folder: rank -> (message, traceback, time)."""
    out: dict[int, tuple[str, str, float]] = {}
    for path in Path(log_dir).glob("**/attempt_*/*/error.json"):
        try:
            data = json.loads(path.read_text())["message"]
            rank = int(path.parent.name)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(data, str):  # a failure recorded without extra information
            out[rank] = (data, data, 0.0)
            continue
        extra = data.get("extraInfo", {})
        out[rank] = (
            str(data.get("message", "")),
            str(extra.get("py_callstack", "")),
            float(extra.get("timestamp", 0) or 0),
        )
    return out


@checked
def job_failures(stderr_tail: str, log_dir: str | Path) -> list[RankFailure]:
    """Failed ranks from torchrun's summary, with tracebacks from the error files."""
    files = read_error_files(log_dir)
    failures = parse_failure_summary(stderr_tail)
    out = []
    for f in failures:
        if f.rank in files:
            message, tb, _ = files[f.rank]
            f = RankFailure(f.rank, f.exitcode, message or f.error, tb or f.traceback, f.root_cause)
        out.append(f)
    if out:
        return _root_first(out)
    # No summary (torchrun itself was killed, or its output was cut): the error files alone,
    # the earliest first.
    ordered = sorted(files.items(), key=lambda kv: kv[1][2])
    return [
        RankFailure(rank, None, message, tb, i == 0)
        for i, (rank, (message, tb, _)) in enumerate(ordered)
    ]


# What a rank raises when a peer it was talking to went away: the peer's failure is the cause.
# gloo's "Connection closed by peer" / "Connection reset by peer", NCCL's "remote process exited"
# and a communicator aborted after another rank failed.
_PEER_LOST = re.compile(
    r"connection (closed|reset) by peer|remote process exited|"
    r"communicator was aborted|broken pipe",
    re.IGNORECASE,
)


def _how_secondary(failure: RankFailure) -> int:
    """0: a cause; 1: failed because its peer went away; 2: stopped by torchrun (SIGTERM)."""
    if failure.exitcode == -int(signal.SIGTERM):
        return 2
    return 1 if _PEER_LOST.search(failure.error) else 0


def _root_first(failures: list[RankFailure]) -> list[RankFailure]:
    """Put the cause first: a rank stopped by torchrun or left without its peer is not it.

    torchrun orders failures by time stamps with one-second resolution, so when one rank raises
    and the rank it was talking to fails in the same second ("Connection closed by peer"), or
    is stopped by torchrun, it can name the wrong one.
    """
    root = min(failures, key=_how_secondary)  # the first of the most likely causes
    return [
        RankFailure(f.rank, f.exitcode, f.error, f.traceback, f is root)
        for f in [root, *(f for f in failures if f is not root)]
    ]


@checked
def last_line(text: str) -> str:
    """The last line of `text` that is not blank, stripped ("" if none)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@checked
def indent(text: str) -> str:
    """`text` with every line indented by four spaces, for a message."""
    return "\n".join("    " + line for line in text.splitlines())
