"""Run one step of the build and say so: a line as it starts, its time as it ends.

`make setup` installs for minutes with pip's output kept quiet (`-q`); these lines show the
build is alive and where its time goes. Standard library only: it runs before the venv exists.

    python tools/step.py "installing the course package" -- pip install -q -e .
"""

from __future__ import annotations

import subprocess
import sys
import time


def run_step(label: str, command: list[str]) -> int:
    """Run `command`, printing `label` first and the seconds it took (or its failure) after."""
    print(f"==> {label} ...", flush=True)
    started = time.perf_counter()
    code = subprocess.call(command)
    seconds = time.perf_counter() - started
    print(f"    {'done' if code == 0 else f'FAILED (exit status {code})'} in {seconds:.0f} s",
          flush=True)
    return code


def main(argv: list[str]) -> int:
    """Command line: a label, `--`, then the command."""
    if len(argv) < 3 or argv[1] != "--":
        print('usage: python tools/step.py "what this step does" -- command [args...]',
              file=sys.stderr)
        return 2
    return run_step(argv[0], argv[2:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
