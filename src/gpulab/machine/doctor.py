"""Turn a hardware report into findings: what is wrong with this GPU setup and how to fix it.

Run it as ``python -m gpulab doctor [--json]`` (the pre-flight check of the workshop) or call
``diagnose(detect())`` in a notebook. Each rule is a small function of a ``HardwareReport``
that returns a list of ``Finding`` (``gpulab.rules``); this module runs them and renders the
report and the findings as text, strict JSON or HTML.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Protocol, runtime_checkable

from gpulab.core.validate import checked
from gpulab.machine.hardware import detect
from gpulab.machine.report import HardwareReport, json_safe
from gpulab.machine.rules import RULES, SEVERITIES, Finding, findings_html

__all__ = [
    "Finding",
    "TextStream",
    "add_arguments",
    "diagnose",
    "encodable",
    "exit_code",
    "findings_html",
    "main",
    "render_json",
    "render_text",
    "run",
]

# --------------------------------------------------------------------------- diagnose and render


@checked
def diagnose(report: HardwareReport) -> list[Finding]:
    """Run every rule on ``report``; errors first, then warnings, then info."""
    findings = [finding for rule in RULES for finding in rule(report)]
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


@checked
def exit_code(findings: list[Finding]) -> int:
    """1 when any finding is an error, else 0."""
    return 1 if any(f.severity == "error" for f in findings) else 0


@checked
def render_text(report: HardwareReport, findings: list[Finding]) -> str:
    """The report, then the findings with their fixes, as plain text."""
    lines = [str(report), "", "Findings:"]
    for f in findings:
        lines.append(f"[{f.severity.upper()}] {f.code}: {f.message}")
        lines.append(f"        fix: {f.fix}")
    if not any(f.severity in ("error", "warning") for f in findings):
        lines.append("No problems found.")
    return "\n".join(lines)


@checked
def render_json(report: HardwareReport, findings: list[Finding]) -> str:
    """The report and the findings as one JSON document."""
    # strict JSON: a NaN from an odd driver value is null, never a bare NaN
    return json.dumps(
        json_safe(
            {
                "report": report.to_dict(),
                "findings": [dataclasses.asdict(f) for f in findings],
                "exit_code": exit_code(findings),
            }
        ),
        indent=2,
        allow_nan=False,
    )


# --------------------------------------------------------------------------- command line


@runtime_checkable
class TextStream(Protocol):
    """Where the doctor writes: sys.stdout, a notebook's stream, a file opened for text."""

    def write(self, text: str, /) -> Any:
        """Write ``text``."""


@checked
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the doctor's options to ``parser`` (shared with ``python -m gpulab``)."""
    parser.add_argument("--json", action="store_true", help="print the report and findings as JSON")


@checked
def run(args: argparse.Namespace) -> int:
    """Detect, diagnose, print; return 1 when any finding is an error."""
    report = detect()
    findings = diagnose(report)
    render = render_json if args.json else render_text
    print(encodable(render(report, findings), sys.stdout))
    return exit_code(findings)


@checked
def encodable(text: str, stream: TextStream) -> str:
    """``text`` with what ``stream``'s encoding cannot write replaced by "?".

    A GPU name NVML gave in bytes that are not UTF-8 holds U+FFFD; an ASCII stdout
    (PYTHONIOENCODING=ascii) or a cp1252 redirect on Windows would raise UnicodeEncodeError.
    """
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, errors="replace").decode(encoding, errors="replace")
    except LookupError:  # an encoding Python does not know: write what every stream can
        return text.encode("ascii", errors="replace").decode("ascii")


@checked
def main(argv: list[str] | None = None) -> int:
    """``python -m gpulab doctor [--json]``; a leading "doctor" in ``argv`` is accepted."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["doctor"]:
        args = args[1:]
    parser = argparse.ArgumentParser(
        prog="python -m gpulab doctor",
        description="Check this machine's CPU/GPU setup for the course and say what to fix.",
    )
    add_arguments(parser)
    return run(parser.parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
