"""Run one step of the build and say so: a line as it starts, its time as it ends.

`make setup` installs for minutes with pip's output kept quiet (`-q`); these lines show the
build is alive and where its time goes. `run_logged` keeps a chatty tool's output (Sphinx's)
in a log and shows only its warnings and errors. Standard library only: it runs before the
venv exists.

    python tools/execution/step.py "installing the course package" -- pip install -q -e .
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Jupyter Book colours its output even into a pipe


def run_step(label: str, command: list[str]) -> int:
    """Run `command`, printing `label` first and the seconds it took (or its failure) after."""
    print(f"==> {label} ...", flush=True)
    started = time.perf_counter()
    code = subprocess.call(command)
    seconds = time.perf_counter() - started
    print(
        f"    {'done' if code == 0 else f'FAILED (exit status {code})'} in {seconds:.0f} s",
        flush=True,
    )
    return code


def is_box_rule(line: str) -> bool:
    """The ===== line above and below each of Jupyter Book's message boxes."""
    text = line.strip()
    return len(text) > 20 and set(text) == {"="}


def run_logged(command: list[str], log: Path) -> tuple[int, list[str]]:
    """Run `command` with all it prints appended to `log`, its standard error shown on the
    terminal too; return its exit status and the lines shown.

    Sphinx writes its progress to standard output and its warnings and errors (and Python its
    tracebacks) to standard error, so the terminal gets those and the log gets everything.
    Jupyter Book's message boxes on standard output are left out of the log: the one after a
    build names the folder it built into, which the pipeline may move away (it says itself
    where the site is), and the one after a failure says to "look above", which is the log.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    shown: list[str] = []
    colour = sys.stderr.isatty()
    env = os.environ | {"PYTHONUNBUFFERED": "1"}  # each line reaches the log as it is printed
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
        )

        def pump(stream, to_terminal: bool) -> None:
            in_box = False
            for line in stream:
                plain = ANSI.sub("", line)
                if not to_terminal and (in_box or is_box_rule(plain)):
                    in_box ^= is_box_rule(plain)
                    continue
                with lock:
                    out.write(plain)
                    out.flush()
                    if to_terminal:
                        shown.append(plain.rstrip("\n"))
                        sys.stderr.write(line if colour else plain)
                        sys.stderr.flush()

        pumps = [
            threading.Thread(target=pump, args=(proc.stdout, False)),
            threading.Thread(target=pump, args=(proc.stderr, True)),
        ]
        for thread in pumps:
            thread.start()
        for thread in pumps:
            thread.join()
        code = proc.wait()
    return code, shown


def main(argv: list[str]) -> int:
    """Command line: a label, `--`, then the command."""
    if len(argv) < 3 or argv[1] != "--":
        print(
            'usage: python tools/execution/step.py "what this step does" -- command [args...]',
            file=sys.stderr,
        )
        return 2
    return run_step(argv[0], argv[2:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
