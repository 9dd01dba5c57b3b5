"""Notebook format check (docs/design.md, "Notebooks"), with a `--fix` mode.

Every notebook and lab must have: a title, the Colab set-up cell generated from
`_config.yml`, a papermill `parameters` cell with `device = "auto"` and `quick = False`,
a hardware summary, a summary and exercises (each with its checked solution, saved
collapsed: tools/authoring/exercises.py), standard metadata, and no outputs: a cell tagged
`nbval-check-output` has its reference recorded in tests/notebooks/references
(tools/execution/references.py). Learner copies must match their solutions, and the README's
notebook table must list every notebook.

    python tools/checks/nbcheck.py        # report problems, exit 1 if any
    python tools/checks/nbcheck.py --fix  # repair what can be repaired mechanically
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.authoring import exercises, learner_generator  # noqa: E402
from tools.authoring.link_tables import (  # noqa: E402
    attendee_problems,
    fix_attendee,
    fix_readme,
    readme_problems,
)
from tools.execution import references  # noqa: E402
from tools.execution.runs import RunConfig, discover, executed_path, learner_copies  # noqa: E402
from tools.notebook_meta import ROOT, cell_source, load_config, title_of  # noqa: E402

COLAB_TAG = "colab-setup"
HIDE_TAG = "remove-cell"  # myst-nb drops the cell from the site
PARAMETERS_TAG = "parameters"
REFERENCE_TAG = references.REFERENCE_TAG
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
PARAMETER_LINES = (
    re.compile(r'^device\s*=\s*"auto"', re.M),
    re.compile(r"^quick\s*=\s*False", re.M),
)


def install_spec(config: dict) -> str:
    """The pip requirement that installs the course package from the configured repository."""
    repo = config["repository"]
    return f"gpulab @ git+{repo['url'].rstrip('/')}.git@{repo.get('branch', 'main')}"


def colab_cell_source(config: dict) -> str:
    """The Colab set-up cell: installs gpulab once, on Colab only; does nothing elsewhere."""
    return (
        "# Colab only: install the course package once. Anywhere else this cell does nothing.\n"
        "import importlib.util, subprocess, sys\n"
        "\n"
        'if "google.colab" in sys.modules and importlib.util.find_spec("gpulab") is None:\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", '
        f'"{install_spec(config)}"], check=True)'
    )


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def problems(path: Path, config: dict, learner: bool = False) -> list[str]:
    """Everything wrong with one notebook's format, as sentences."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    if nb.get("nbformat") != 4:
        found.append("is not nbformat 4")
    meta = nb.get("metadata", {})
    if meta.get("kernelspec", {}).get("name") != KERNELSPEC["name"]:
        found.append(f"kernelspec should be {KERNELSPEC['name']!r} (standard metadata)")
    if "widgets" in meta:
        found.append("carries saved widget state in its metadata")
    cells = nb.get("cells", [])
    if not cells or cells[0]["cell_type"] != "markdown" or not title_of(nb):
        found.append("does not open with a markdown title (`# ...`)")
    colab = [c for c in cells if COLAB_TAG in _tags(c)]
    if len(colab) != 1:
        found.append(f"has {len(colab)} Colab set-up cells (tag {COLAB_TAG!r}); needs exactly 1")
    elif cell_source(colab[0]) != colab_cell_source(config):
        found.append("Colab set-up cell differs from the one generated from _config.yml")
    elif HIDE_TAG not in _tags(colab[0]):
        found.append(f"Colab set-up cell lacks the {HIDE_TAG!r} tag (it is hidden on the site)")
    params = [c for c in cells if PARAMETERS_TAG in _tags(c)]
    if len(params) != 1:
        found.append(f"has {len(params)} cells tagged {PARAMETERS_TAG!r}; needs exactly 1")
    elif not all(p.search(cell_source(params[0])) for p in PARAMETER_LINES):
        found.append('parameters cell must set `device = "auto"` and `quick = False`')
    code = "\n".join(cell_source(c) for c in cells if c["cell_type"] == "code")
    if "detect(" not in code:
        found.append("shows no hardware summary (no call to gpulab.hardware.detect)")
    headings = "\n".join(cell_source(c) for c in cells if c["cell_type"] == "markdown")
    for needed in ("Summary", "Exercises"):
        if not re.search(rf"^##+ .*{needed}", headings, re.M):
            found.append(f"has no '## {needed}' section")
    if learner:
        if exercises.holds_solution(nb):
            found.append("holds an exercise's solution (learner copies carry none)")
    else:
        found += exercises.problems(nb)
        if exercises.normalise(copy.deepcopy(nb)):
            found.append("an exercise's solution is not saved collapsed (run --fix)")
    recorded = {} if learner else references.stored(path)
    tagged = set()
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            found.append(f"cell {i} carries outputs (notebooks are committed without any)")
        if REFERENCE_TAG in _tags(cell) and not learner:
            tagged.add(cell.get("id"))
            if not recorded.get(cell.get("id")):
                found.append(
                    f"cell {i} is tagged {REFERENCE_TAG!r} but has no recorded reference "
                    "(run --record-references after a quick run)"
                )
    found += [
        f"a reference is recorded for cell {cid!r}, which is not a tagged cell"
        for cid in sorted(set(recorded) - tagged)
    ]
    return found


def fix(path: Path, config: dict) -> bool:
    """Repair a notebook's format in place; return True when it changed."""
    before = path.read_text(encoding="utf-8")
    nb = json.loads(before)
    nb["nbformat"], nb["nbformat_minor"] = 4, max(nb.get("nbformat_minor", 5), 5)
    meta = nb.setdefault("metadata", {})
    meta.pop("widgets", None)
    meta.pop("papermill", None)
    meta["kernelspec"] = dict(KERNELSPEC)
    meta["language_info"] = {"name": "python"}
    cells = nb["cells"]
    colab = [c for c in cells if COLAB_TAG in _tags(c)]
    if not colab:
        colab = [
            {
                "cell_type": "code",
                "id": "colab-setup",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "",
            }
        ]
        cells.insert(1 if cells and cells[0]["cell_type"] == "markdown" else 0, colab[0])
    colab[0]["source"] = colab_cell_source(config)
    colab[0]["metadata"]["tags"] = [COLAB_TAG, HIDE_TAG]
    exercises.normalise(nb)  # solutions saved collapsed in JupyterLab and Colab
    for cell in cells:
        cell.get("metadata", {}).pop("papermill", None)
        cell.get("metadata", {}).pop("execution", None)
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    after = json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(argv: list[str] | None = None) -> int:
    """Check (or with --fix, repair) every notebook, learner copy and the README table."""
    parser = argparse.ArgumentParser(description="Check the notebooks' format.")
    parser.add_argument("--fix", action="store_true", help="repair what can be repaired")
    parser.add_argument(
        "--record-references",
        action="store_true",
        help="take the reference cells' outputs from the last quick CPU run",
    )
    args = parser.parse_args(argv)
    config = load_config()
    if args.record_references:
        run = RunConfig(mode="quick", kernel="gpulab-cpu")
        for path in discover():
            executed = executed_path(path, run)
            if executed.exists():
                n = references.record(path, executed)
                print(f"{path.relative_to(ROOT)}: {n} reference cell(s) recorded")
    if args.fix:
        for path in discover():
            if fix(path, config):
                print(f"fixed {path.relative_to(ROOT)}")
        for path in learner_generator.write_learner_copies(ROOT / "labs"):
            print(f"regenerated {path.relative_to(ROOT)}")
        fix_readme(config)
        fix_attendee()
    report = []
    for path in discover():
        report += [f"{path.relative_to(ROOT)}: {p}" for p in problems(path, config)]
    for path in learner_copies():
        report += [f"{path.relative_to(ROOT)}: {p}" for p in problems(path, config, learner=True)]
    report += [
        f"{p.relative_to(ROOT)}: out of date with its solution (run --fix)"
        for p in learner_generator.out_of_date(ROOT / "labs")
    ]
    report += readme_problems(config)
    report += attendee_problems()
    for line in report:
        print(line)
    if report:
        print(
            f"{len(report)} problem(s); `python tools/checks/nbcheck.py --fix` repairs the "
            "mechanical ones"
        )
        return 1
    print(f"notebook format: {len(discover()) + len(learner_copies())} notebooks ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
