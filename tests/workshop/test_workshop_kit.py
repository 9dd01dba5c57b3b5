"""The rest of the workshop kit: an attendee's copy of the course, the install script, the pages."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import rules
from tests.helpers import need_module
from tools.authoring import link_tables
from workshop import attendee_links, singleuser

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "workshop" / "install_server.sh"
CONFIG = ROOT / "workshop" / "jupyterhub_config.py"
GUIDE = ROOT / "book" / "workshop" / "instructor_guide.md"


def _notebook(path: Path, kernel: str = "python3") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "cells": [],
                "metadata": {"kernelspec": {"name": kernel}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A small course tree: a chapter notebook, a lab with its learner copy, a lab's scripts."""
    root = tmp_path / "course"
    _notebook(root / "notebooks" / "00_setup.ipynb")
    _notebook(root / "labs" / "01_lab.ipynb")
    _notebook(root / "labs" / "learner" / "01_lab.ipynb")
    (root / "labs" / "07_scripts").mkdir(parents=True)
    (root / "labs" / "07_scripts" / "train.py").write_text("print('hi')\n")
    return root


# --------------------------------------------------------------------------- attendee's copy


def test_copy_course_gives_learner_copies_on_the_gpu_kernel(course, tmp_path):
    """Notebooks and learner copies are copied, solutions are not, all open on `gpulab`."""
    home = tmp_path / "home"
    added = singleuser.copy_course(course, home)
    dest = home / singleuser.COURSE_FOLDER
    assert sorted(p.relative_to(dest).as_posix() for p in added) == [
        "labs/01_lab.ipynb",
        "labs/07_scripts/train.py",
        "notebooks/00_setup.ipynb",
    ]
    assert not (dest / "solutions").exists()
    nb = json.loads((dest / "labs" / "01_lab.ipynb").read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "gpulab"


def test_copy_course_never_overwrites_and_adds_what_is_new(course, tmp_path):
    """A second start keeps the attendee's edits and copies only notebooks added since."""
    home = tmp_path / "home"
    singleuser.copy_course(course, home)
    mine = home / singleuser.COURSE_FOLDER / "notebooks" / "00_setup.ipynb"
    mine.write_text("my edits")
    _notebook(course / "notebooks" / "05_new.ipynb")
    added = singleuser.copy_course(course, home)
    assert [p.name for p in added] == ["05_new.ipynb"]
    assert mine.read_text() == "my edits"


def test_copy_course_shares_solutions_when_asked(course, tmp_path):
    """GPULAB_HUB_SHARE_SOLUTIONS=1 puts the lab solutions in a folder of their own."""
    home = tmp_path / "home"
    singleuser.copy_course(course, home, share_solutions=True)
    assert (home / singleuser.COURSE_FOLDER / "solutions" / "01_lab.ipynb").exists()


# --------------------------------------------------------------------------- the install script


def _settings(text: str) -> dict[str, str]:
    """The uncommented NAME=value lines of an environment file."""
    pairs = (
        line.split("=", 1)
        for line in text.splitlines()
        if line and not line.startswith("#") and "=" in line
    )
    return {k: v for k, v in pairs}


def test_install_script_is_valid_bash_and_lints_clean():
    """bash parses it; shellcheck (where installed) finds nothing."""
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    if shutil.which("shellcheck"):
        result = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout


def test_install_script_writes_settings_the_config_reads(monkeypatch, tmp_path):
    """Every variable in the settings template is one the config knows, and they load."""
    need_module("jupyterhub", "workshop")
    need_module("systemdspawner", "workshop")
    out = subprocess.run(
        ["bash", str(SCRIPT), "--print-config"], capture_output=True, text=True, check=True
    ).stdout
    unit, settings = out.split("# /etc/gpulab-hub/hub.env")
    assert f"ExecStart={sys.prefix}/bin/jupyterhub -f {CONFIG}" in unit
    known = set(re.findall(r"GPULAB_HUB_[A-Z_]+", CONFIG.read_text()))
    mentioned = set(re.findall(r"GPULAB_HUB_[A-Z_]+", settings))
    assert mentioned <= known, mentioned - known
    values = _settings(settings)
    assert len(values["GPULAB_HUB_PASSWORD"]) >= 8 and len(values["GPULAB_HUB_API_TOKEN"]) == 64
    values["GPULAB_HUB_STATE_DIR"] = str(tmp_path)  # not /srv in a test
    from traitlets.config.loader import PyFileConfigLoader

    for key in [k for k in os.environ if k.startswith("GPULAB_HUB_")]:
        monkeypatch.delenv(key)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    cfg = PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()
    assert cfg.JupyterHub.spawner_class == "systemdspawner.SystemdSpawner"
    assert cfg.JupyterHub.bind_url == "http://0.0.0.0:8000/"
    assert [s["name"] for s in cfg.JupyterHub.services] == ["workshop-admin", "idle-culler"]


def test_install_script_refuses_unknown_arguments():
    """A typo in the option does not start an installation."""
    result = subprocess.run(["bash", str(SCRIPT), "--print-confg"], capture_output=True)
    assert result.returncode == 2


# --------------------------------------------------------------------------- the pages


def test_attendee_page_links_every_notebook_to_colab():
    """The generated table lists every discovered notebook; `--fix` regenerates it."""
    assert link_tables.attendee_problems() == []
    assert attendee_links.main([]) == 0  # the workshop's own command agrees


def test_attendee_table_has_a_colab_link_per_notebook():
    """One row per notebook, and a lab row links its learner copy as the exercise."""
    from tools.execution.runs import discover
    from tools.notebook_meta import load_config

    table = link_tables.attendee_table(load_config())
    for path in discover():
        rel = path.relative_to(ROOT).as_posix()
        row = next(line for line in table.splitlines() if line.startswith(f"| `{rel}` |"))
        assert "colab.research.google.com/github/" in row
        if rel.startswith("labs/"):
            assert f"/labs/learner/{path.name})" in row


def test_instructor_guide_gives_a_fix_for_every_doctor_finding():
    """Each finding code the doctor can emit has its row in the guide."""
    pattern = r'Finding\(\s*"(?:error|warning|info)",\s*"([a-z0-9-]+)"'
    sources = {inspect.getsourcefile(fn) for fn in rules.RULES}  # the modules holding the rules
    codes = {code for path in sources for code in re.findall(pattern, Path(path).read_text())}
    # one code per rule, two for rule_torch_missing (torch-missing, torch-broken): the regex
    # found them all
    assert len(codes) == len(rules.RULES) + 1
    assert {"torch-missing", "torch-broken"} <= codes
    guide = GUIDE.read_text()
    missing = sorted(code for code in codes if f"`{code}`" not in guide)
    assert not missing, f"instructor_guide.md lacks the finding(s) {missing}"


def _stated_minutes(notebook: Path) -> int:
    """The "**Time:** N minutes" the notebook's title cell promises."""
    first = "".join(json.loads(notebook.read_text())["cells"][0]["source"])
    match = re.search(r"\*\*Time:\*\*\s*(\d+) minutes", first)
    assert match, f"{notebook.name} states no time"
    return int(match.group(1))


def test_agenda_timings_match_what_each_notebook_states():
    """An agenda row that names a notebook gives the minutes its title cell states."""
    rows = [
        line for line in GUIDE.read_text().splitlines() if line.startswith("|") and ".ipynb" in line
    ]
    assert rows, "the guide has no agenda rows"
    for row in rows:
        path = re.search(r"`((?:notebooks|labs)/[\w/]+\.ipynb)`", row)
        minutes = re.search(r"\|\s*(\d+) min\s*\|", row)
        if not path or not minutes:
            continue
        notebook = ROOT / path.group(1)
        if not notebook.exists():
            assert "coming" in row, f"{path.group(1)} does not exist and is not marked coming"
            continue
        assert int(minutes.group(1)) == _stated_minutes(notebook), row


def test_the_guide_sets_exercises_by_label_for_every_notebook_of_its_agendas():
    """Each notebook or lab an agenda names has exercises set by label in the checkpoints
    table, and every label the guide points to is an exercise of the book."""
    from tools.authoring import exercises
    from tools.execution import runs

    text = GUIDE.read_text()
    by_label = {}
    for path in runs.discover():
        for group in exercises.exercises(json.loads(path.read_text(encoding="utf-8"))):
            by_label[group.label] = str(path.relative_to(ROOT))
    # exercise labels: ch00-..., lab05-..., app-... (the guide's own section labels are not)
    referenced = re.findall(r"\{ref\}`[^`<]*<((?:ch\d\d|lab\d\d|app)-[\w-]+)>`", text)
    assert referenced and set(referenced) <= set(by_label), set(referenced) - set(by_label)
    in_agendas = set(re.findall(r"`((?:notebooks|labs)/\w+\.ipynb)`", text))
    covered = {by_label[label] for label in referenced}
    assert in_agendas <= covered, in_agendas - covered
