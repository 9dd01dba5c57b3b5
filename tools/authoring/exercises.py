"""Exercises and their executed solutions in notebooks (every notebook's last section).

A notebook stays plain CommonMark, because JupyterLab and Colab show MyST directives as raw
text. An exercise is a Markdown cell tagged ``exercise`` whose first line is
``### Exercise N: title`` and whose metadata names a label
(``"gpulab": {"exercise": "ch02-kv-by-hand"}``).
Its solution is the cells right after it tagged ``exercise-solution``: a Markdown cell opening
with ``#### Solution``, then code cells that compute the answer and check it (an ``assert`` or
``labs.check``). The pipeline executes the solutions like every other cell.

- In JupyterLab the solution's heading is saved collapsed, and its code cells hidden (Colab
  hides them through ``cellView: form``): ``normalise`` writes that metadata.
- On the site, ``to_sphinx_exercise`` turns each group into sphinx-exercise's ``{exercise}``
  and gated ``{solution-start}``/``{solution-end}`` blocks, collapsed (the pipeline does this to
  the executed copies it builds the site from).
- A lab's learner copy holds the exercises and none of their solutions (``strip_solutions``).
- ``problems`` lists what breaks these rules; ``tools/checks/nbcheck.py`` and the tests report it.

It is authoring code (the checks, the site's conversion, the learner copies), so it lives in
the repository's tools: a learner's install of gpulab does not carry it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from tools.notebook_meta import cell_source

EXERCISE_TAG = "exercise"
SOLUTION_TAG = "exercise-solution"
HEADING = re.compile(r"^### Exercise (\d+): (\S.*)$")
SOLUTION_HEADING = "#### Solution"
# unique in the book: ch02-... for a chapter notebook, lab05-... for a lab, app-... for the appendix
LABEL = re.compile(r"^(ch\d\d|lab\d\d|app)-[a-z0-9]+(-[a-z0-9]+)*$")
# a check that can fail: an assert, gpulab's labs.check / a grader's check_* function, or a
# grade's require() (lab 5's grader: it raises naming each failed check)
CHECK = re.compile(r"^\s*assert\b|\bcheck(_\w+)?\(|\.require\(\)", re.M)
# gated solutions of sphinx-exercise; a learner copy drops everything between them
GATE_START = "solution-start"
GATE_END = "solution-end"


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@dataclass
class Exercise:
    """One exercise of a notebook: its cell, its solution's cells, and where they are."""

    index: int  # position of the exercise cell in the notebook
    number: int  # N of "### Exercise N: title"
    title: str
    label: str  # sphinx-exercise label, unique in the book (the instructor guide points to it)
    solution: list[int] = field(default_factory=list)  # positions of its solution cells

    @property
    def end(self) -> int:
        """Position just after its last cell."""
        return (self.solution[-1] if self.solution else self.index) + 1


def label_of(cell: dict) -> str:
    """The label an exercise cell declares in its metadata ('' when it has none)."""
    return str(cell.get("metadata", {}).get("gpulab", {}).get("exercise", ""))


def exercises(nb: dict) -> list[Exercise]:
    """The exercises of a notebook, in order, each with the solution cells that follow it."""
    found: list[Exercise] = []
    current: Exercise | None = None
    for i, cell in enumerate(nb.get("cells", [])):
        tags = _tags(cell)
        if EXERCISE_TAG in tags:
            match = HEADING.match(cell_source(cell).splitlines()[0] if cell_source(cell) else "")
            number, title = (int(match[1]), match[2].strip()) if match else (0, "")
            current = Exercise(i, number, title, label_of(cell))
            found.append(current)
        elif SOLUTION_TAG in tags and current is not None and current.end == i:
            current.solution.append(i)
        else:
            current = None
    return found


def problems(nb: dict) -> list[str]:
    """Every way the notebook's exercises break the rules above, as sentences."""
    cells = nb.get("cells", [])
    found: list[str] = []
    groups = exercises(nb)
    if not groups:
        found.append(f"has no exercise (a Markdown cell tagged {EXERCISE_TAG!r})")
    owned = {i for g in groups for i in g.solution}
    for i, cell in enumerate(cells):
        if SOLUTION_TAG in _tags(cell) and i not in owned:
            found.append(f"cell {i} is tagged {SOLUTION_TAG!r} but does not follow an exercise")
        if cell["cell_type"] == "markdown" and EXERCISE_TAG not in _tags(cell):
            text = cell_source(cell)
            if re.search(r"^##+ .*Exercises", text, re.M) and re.search(
                r"^\s*\d+\.\s", text.split("Exercises", 1)[1], re.M
            ):
                found.append(
                    f"cell {i} lists exercises as plain text; give each its own "
                    f"cell tagged {EXERCISE_TAG!r} with a solution"
                )
    labels = [g.label for g in groups]
    for n, g in enumerate(groups, start=1):
        where = f"exercise at cell {g.index}"
        if cells[g.index]["cell_type"] != "markdown":
            found.append(f"{where} is not a Markdown cell")
        if not g.number:
            found.append(f"{where} does not open with '### Exercise N: title'")
        elif g.number != n:
            found.append(f"{where} is numbered {g.number}; it is exercise {n} of the notebook")
        if not LABEL.match(g.label):
            found.append(
                f"{where} has label {g.label!r}; metadata gpulab.exercise must match "
                f"{LABEL.pattern} (for example 'ch02-kv-by-hand')"
            )
        elif labels.count(g.label) > 1:
            found.append(f"{where}: label {g.label!r} is used twice")
        if not g.solution:
            found.append(
                f"{where} ({g.label}) has no solution (cells tagged {SOLUTION_TAG!r} "
                "right after it)"
            )
            continue
        first = cells[g.solution[0]]
        if first["cell_type"] != "markdown" or not cell_source(first).startswith(SOLUTION_HEADING):
            found.append(
                f"{where} ({g.label}): its solution must open with a Markdown cell "
                f"'{SOLUTION_HEADING}'"
            )
        code = [cell_source(cells[i]) for i in g.solution if cells[i]["cell_type"] == "code"]
        if not any(CHECK.search(src) for src in code):
            found.append(
                f"{where} ({g.label}): no solution code cell checks its answer "
                "(an assert, or labs.check)"
            )
    return found


def normalise(nb: dict) -> bool:
    """Save every solution collapsed in JupyterLab and Colab; return True when anything changed."""
    changed = False
    for g in exercises(nb):
        for i in g.solution:
            cell = nb["cells"][i]
            meta = cell.setdefault("metadata", {})
            want: dict = (
                {"jp-MarkdownHeadingCollapsed": True}
                if cell["cell_type"] == "markdown"
                else {"jupyter": {"source_hidden": True}, "cellView": "form"}
            )
            for key, value in want.items():
                if meta.get(key) != value:
                    meta[key] = value
                    changed = True
    return changed


def strip_solutions(nb: dict) -> dict:
    """A copy of the notebook with every solution removed: solution cells, and any Markdown
    between a gated solution's start and end."""
    out = copy.deepcopy(nb)
    cells, inside = [], False
    for cell in out["cells"]:
        text = cell_source(cell)
        if SOLUTION_TAG in _tags(cell):
            continue
        if cell["cell_type"] == "markdown" and "{" + GATE_START + "}" in text:
            inside = True
        if not inside:
            cells.append(cell)
        if cell["cell_type"] == "markdown" and "{" + GATE_END + "}" in text:
            inside = False
    out["cells"] = cells
    return out


def holds_solution(nb: dict) -> bool:
    """True when any cell of the notebook is, or is part of, an exercise's solution."""
    return any(
        SOLUTION_TAG in _tags(c)
        or GATE_START in cell_source(c)
        or GATE_END in cell_source(c)
        or cell_source(c).startswith(SOLUTION_HEADING)
        for c in nb.get("cells", [])
    )


def _markdown(source: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def to_sphinx_exercise(nb: dict) -> dict:
    """A copy of the notebook for the site: each exercise in an ``{exercise}`` block, each
    solution gated by ``{solution-start}`` (collapsed) and ``{solution-end}``."""
    out = copy.deepcopy(nb)
    cells = out["cells"]
    for g in reversed(exercises(nb)):  # from the end, so earlier positions stay valid
        body = cell_source(cells[g.index]).split("\n", 1)
        text = body[1].strip("\n") if len(body) > 1 else ""
        cells[g.index]["source"] = f"::::{{exercise}} {g.title}\n:label: {g.label}\n\n{text}\n::::"
        if not g.solution:
            continue
        first = cells[g.solution[0]]
        rest = cell_source(first)[len(SOLUTION_HEADING) :].strip("\n")
        first["source"] = (
            f":::{{{GATE_START}}} {g.label}\n:class: dropdown\n:::\n\n{rest}"
        ).rstrip("\n")
        first["metadata"].pop("jp-MarkdownHeadingCollapsed", None)
        cells.insert(g.end, _markdown(f":::{{{GATE_END}}}\n:::", f"{g.label}-end"))
    return out
