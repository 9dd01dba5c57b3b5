"""The Makefile's targets as a newcomer uses them, and the README's commands against them.

GNU make itself is the oracle: `make -n` in a copy of the Makefile, beside files whose times
say which stamps are fresh, prints what a target would run without running any of it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# what the stamps of `make setup`, `make lab` and the npm install are made from, oldest first
SOURCES = ("pyproject.toml", "constraints.txt", "package.json", "package-lock.json")
STAMPS = (
    ".venv/bin/python",
    ".venv/.installed",
    "node_modules/.package-lock.json",
    ".venv/.installed-lab",
)


@pytest.fixture(autouse=True)
def _make():
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed; `make test` runs under it")


def _tree(tmp_path: Path, stale: tuple[str, ...] = ()) -> Path:
    """A copy of the Makefile whose stamps are newer than their sources, but for `stale`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for n, name in enumerate(SOURCES + STAMPS):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        made = 1_000_000 + 10 * n
        os.utime(path, (made, made))
    for name in stale:
        os.utime(tmp_path / name, (0, 0))
    return tmp_path


def _dry_run(
    tree: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    # the outer `make test`'s flags (MAKEFLAGS carries its command-line variables) stay out
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "BOOTSTRAP_PYTHON")
    }
    return subprocess.run(
        ["make", "-n", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        env=clean | (env or {}),
        timeout=60,
    )


def _commands(tree: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    result = _dry_run(tree, *args, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def test_help_lists_setup_site_and_serve_with_the_readmes_two_commands():
    """`make` alone prints the help, one line per target a reader runs."""
    result = subprocess.run(["make"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("make ")]
    assert {"setup", "book", "site", "serve", "test", "lab"} <= set(listed), listed
    serve = next(line for line in result.stdout.splitlines() if line.startswith("make serve"))
    assert "http://127.0.0.1:8000/" in serve


def test_make_lab_runs_no_pip_when_its_stamp_is_fresh(tmp_path):
    """Fresh stamps: `make lab` only opens JupyterLab; a stale lab stamp installs the lab extra
    (and no other), a stale setup stamp reinstalls both."""
    fresh = _commands(_tree(tmp_path / "fresh"), "lab")
    assert not [c for c in fresh if "-m pip" in c], fresh
    assert any(re.search(r"/jupyter lab ", c) for c in fresh), fresh
    stale_lab = " ".join(_commands(_tree(tmp_path / "lab", (".venv/.installed-lab",)), "lab"))
    assert stale_lab.count("-m pip install") == 1 and '-e ".[dev,lab]"' in stale_lab
    assert "touch .venv/.installed-lab" in stale_lab
    newer = _tree(tmp_path / "newer")
    os.utime(newer / "pyproject.toml", (2_000_000, 2_000_000))
    newer_lab = " ".join(_commands(newer, "lab"))
    assert '-e ".[dev,workshop]"' in newer_lab and '-e ".[dev,lab]"' in newer_lab


def test_make_site_builds_the_site_without_executing_and_book_does_both(tmp_path):
    """`make site` runs the pipeline's site step only, for MODE; `make book` executes first
    and ends with the site step, whose last line names the site and `make serve`."""
    tree = _tree(tmp_path)
    site = _commands(tree, "site")
    assert not [c for c in site if "execute" in c], site
    assert site[-1].endswith("tools/pipeline.py site --mode full")
    assert _commands(tree, "site", "MODE=quick")[-1].endswith("tools/pipeline.py site --mode quick")
    book = _commands(tree, "book")
    assert any("tools/pipeline.py execute --mode full" in c for c in book), book
    assert book[-1].endswith("tools/pipeline.py site --mode full")  # nothing prints after it


def test_make_serve_passes_mode_and_port_to_the_pipeline(tmp_path):
    """`make serve` needs no venv (the bootstrap python3) and takes PORT and MODE from the
    command line, not from an environment that set them for something else."""
    tree = _tree(tmp_path)
    assert _commands(tree, "serve", env={"MODE": "dev", "PORT": "80"}) == [
        "python3 tools/pipeline.py serve --mode full --port 8000"
    ]
    assert _commands(tree, "serve", "PORT=9001", "MODE=quick") == [
        "python3 tools/pipeline.py serve --mode quick --port 9001"
    ]


def _readme_targets() -> set[str]:
    """The X of every `make X` in the README's code: inline spans and fenced blocks."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", README, re.M | re.S)
    code = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", README, flags=re.M | re.S))
    lines = [line for text in blocks + code for line in text.splitlines()]
    return {m.group(1) for line in lines if (m := re.match(r"\s*make ([a-z][\w-]*)", line))}


def test_every_make_target_the_readme_names_exists(tmp_path):
    """Each `make X` in the README is a rule make knows (a typo makes `make -n` fail)."""
    targets = _readme_targets()
    assert {"book", "test", "setup", "site", "serve", "lab"} <= targets, targets
    tree = _tree(tmp_path)
    for target in sorted(targets):
        result = _dry_run(tree, target)
        assert result.returncode == 0, f"make {target}: {result.stderr}"
    assert _dry_run(tree, "no-such-target").returncode != 0  # the check can fail


def test_the_readme_runs_the_doctor_from_the_venv():
    """Outside the venv `python -m gpulab` is "No module named gpulab": every doctor command
    the README gives starts with .venv/bin/, and the `gpulab` entry point it names exists."""
    commands = re.findall(r"`([^`]*gpulab doctor[^`]*)`", README)
    assert commands, "the README names no doctor command"
    for command in commands:
        assert command.startswith(
            (".venv/bin/gpulab doctor", ".venv/bin/python -m gpulab doctor")
        ), command
    assert not re.search(r"(?<!/bin/)python3? -m gpulab", README)
    scripts = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^gpulab = "gpulab\.__main__:main"$', scripts, re.M)
