"""Command line of the course library: ``python -m gpulab doctor [--json]``."""

from __future__ import annotations

import argparse
import sys

from gpulab import __version__
from gpulab.machine import doctor


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m gpulab`` parser, one subcommand per tool."""
    parser = argparse.ArgumentParser(
        prog="python -m gpulab",
        description="Tools of the course 'GPU Acceleration for AI, hands-on'.",
    )
    parser.add_argument("--version", action="version", version=f"gpulab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command", required=True)
    doctor_parser = commands.add_parser(
        "doctor",
        help="check this machine's CPU/GPU setup and say what to fix",
        description="Check this machine's CPU/GPU setup for the course and say what to fix. "
        "Exits 1 when a finding is an error.",
    )
    doctor.add_arguments(doctor_parser)
    doctor_parser.set_defaults(func=doctor.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; argparse exits 2 on a usage error."""
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
