"""Command line of the course library: ``gpulab doctor | fit | speed`` (or ``python -m gpulab``).

The ``gpulab`` script that pip installs (pyproject's [project.scripts]) calls ``main`` here, as
``python -m gpulab`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpulab import __version__
from gpulab.machine import doctor
from gpulab.ui import cli

COMMANDS = ("doctor", "fit", "speed")


def _prog() -> str:
    """How the user called us: 'gpulab' for the installed script, else 'python -m gpulab'."""
    return "gpulab" if Path(sys.argv[0]).stem == "gpulab" else "python -m gpulab"


def build_parser() -> argparse.ArgumentParser:
    """The ``gpulab`` parser, one subcommand per tool."""
    prog = _prog()
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Tools of the course 'GPU Acceleration for AI, hands-on': check this "
        "machine (doctor), ask whether a model fits a GPU (fit) and how fast it generates "
        "(speed).",
    )
    parser.add_argument("--version", action="version", version=f"gpulab {__version__}")
    # the metavar names every command, so a bare `gpulab` says what there is
    commands = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(COMMANDS) + "}", required=True, title="commands"
    )
    doctor_parser = commands.add_parser(
        "doctor",
        help="check this machine's CPU/GPU setup and say what to fix",
        description="Check this machine's CPU/GPU setup for the course and say what to fix. "
        "Exits 1 when a finding is an error.",
        prog=f"{prog} doctor",
    )
    doctor.add_arguments(doctor_parser)
    doctor_parser.set_defaults(func=doctor.run, command_parser=doctor_parser)
    cli.add_commands(commands, prog)
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
