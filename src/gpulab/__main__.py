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
    # the metavar names every command, so a bare `python -m gpulab` says what there is
    commands = parser.add_subparsers(dest="command", metavar="{doctor}", required=True,
                                     title="commands")
    doctor_parser = commands.add_parser(
        "doctor",
        help="check this machine's CPU/GPU setup and say what to fix",
        description="Check this machine's CPU/GPU setup for the course and say what to fix. "
        "Exits 1 when a finding is an error.",
    )
    doctor.add_arguments(doctor_parser)
    doctor_parser.set_defaults(func=doctor.run, command_parser=doctor_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; argparse exits 2 on a usage error.

    An option the subcommand does not know is reported with that subcommand's usage
    (`doctor --bogus` shows doctor's options), not the top-level one.
    """
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
