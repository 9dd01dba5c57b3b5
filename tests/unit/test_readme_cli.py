"""The README's command-line examples show what the commands print today.

The README pastes the output of `gpulab fit` and `gpulab speed`; a change to the estimates or the
spec table that changes those lines fails here, so the README cannot drift from the library.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def _examples() -> list[tuple[list[str], str]]:
    """(the command's arguments after `gpulab`, its printed output) for each example."""
    examples = []
    for block in BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            words = shlex.split(command)
            if words[:1] == [".venv/bin/gpulab"]:
                examples.append((words[1:], output.rstrip("\n")))
    return examples


def test_the_readme_has_both_questions():
    assert [args[0] for args, _ in _examples()] == ["fit", "speed"]


def test_each_readme_example_prints_what_the_readme_shows():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for args, shown in _examples():
        done = subprocess.run(
            [sys.executable, "-m", "gpulab", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip("\n") == shown, f"README's `gpulab {' '.join(args)}` is stale"
