"""The teaching checks of a notebook's cells (CONTRIBUTING.md, "Teaching cells").

- Main body: every code cell but the title, the Colab set-up, the parameters, the removed cells
  and the exercises' solutions (an exercise's solution cell that holds a solution block is the
  learner's work in the learner copy, and counts). A main-body cell has at most 20 lines.
- Mechanism cells: tagged ``mechanism``, with ``"gpulab": {"mechanism": name, "library":
  [...]}``; their code holds torch operations or arithmetic and calls no gpulab function but the
  lookups; enough of them (half the main body; two in notebook 00, one in lab 00); no cell before
  one calls what its ``library`` names; and a later ``agreement`` cell checks each against the
  library with an ``assert``.
- Reveals: the cell that passes a prediction to ``predict.compare`` is tagged ``hide-output``.

Each function returns the problems as sentences naming the file and the cell.
"""

from __future__ import annotations

import math
import re

from tools.checks import notebook_code as code
from tools.notebook_meta import cell_source

MAIN_BODY_LINES = 20
MECHANISM_TAG = "mechanism"
AGREEMENT_TAG = "agreement"
REVEAL_TAG = "hide-output"
# cells outside the main body, by tag (papermill's injected parameters in an executed copy)
OUTSIDE_TAGS = ("colab-setup", "parameters", "injected-parameters", "remove-cell")
EXERCISE_SOLUTION_TAG = "exercise-solution"
BEGIN = "### BEGIN SOLUTION"
KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# the gpulab calls a mechanism cell may make: lookups of specs and models, the device, the
# memory budget, and the reveal of a prediction
LOOKUPS = (
    "models.get",
    "models.names",
    "specs.get_gpu",
    "specs.get_cpu",
    "specs.load_gpus",
    "hardware.pick_device",
    "torch_models.build_model",
    "predict.compare",
)
LOOKUP_MODULES = ("budget",)


def is_main_body(nb: dict, index: int) -> bool:
    """True for a main-body code cell (the counts and the line limit apply to it)."""
    cell = nb["cells"][index]
    if cell.get("cell_type") != "code" or index == 0:
        return False
    tags = code.tags(cell)
    if any(t in tags for t in OUTSIDE_TAGS):
        return False
    return EXERCISE_SOLUTION_TAG not in tags or BEGIN in cell_source(cell)


def main_body(nb: dict) -> list[int]:
    """Positions of the main-body code cells."""
    return [i for i in range(len(nb.get("cells", []))) if is_main_body(nb, i)]


def length_problems(nb: dict, where: str) -> list[str]:
    """Main-body code cells longer than 20 lines (blank lines and comments count)."""
    out = []
    for i in main_body(nb):
        lines = len(cell_source(nb["cells"][i]).splitlines())
        if lines > MAIN_BODY_LINES:
            out.append(
                f"{where}: cell {i} has {lines} lines; a main-body code cell has at most "
                f"{MAIN_BODY_LINES}"
            )
    return out


def _is_mechanism(cell: dict) -> bool:
    return MECHANISM_TAG in code.tags(cell) or "mechanism" in code.gpulab_meta(cell)


def mechanisms(nb: dict) -> list[int]:
    """Positions of the cells tagged `mechanism` or declaring one in their metadata."""
    return [i for i, c in enumerate(nb.get("cells", [])) if _is_mechanism(c)]


def library_of(cell: dict) -> list[str]:
    """The library functions a mechanism cell names (only its well-formed names)."""
    names = code.gpulab_meta(cell).get("library", [])
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def metadata_problems(nb: dict, where: str) -> list[str]:
    """Mechanism cells whose tag or metadata is not the spec's shape."""
    out, seen = [], {}
    for i in mechanisms(nb):
        cell, at = nb["cells"][i], f"{where}: cell {i}"
        meta = code.gpulab_meta(cell)
        if cell.get("cell_type") != "code":
            out.append(f"{at} is tagged {MECHANISM_TAG!r} but is not a code cell")
        if MECHANISM_TAG not in code.tags(cell):
            out.append(f"{at} declares gpulab.mechanism but lacks the {MECHANISM_TAG!r} tag")
        name = meta.get("mechanism")
        if not isinstance(name, str) or not KEBAB.fullmatch(name):
            out.append(
                f"{at}: gpulab.mechanism is {name!r}; give a short kebab-case name ('timing-loop')"
            )
        elif name in seen:
            out.append(f"{at}: mechanism {name!r} is also cell {seen[name]}'s; names are unique")
        else:
            seen[name] = i
        library = meta.get("library")
        if not isinstance(library, list) or not all(
            isinstance(n, str) and DOTTED.fullmatch(n) for n in library
        ):
            out.append(
                f"{at}: gpulab.library is {library!r}; give a list of dotted names as the "
                "notebook calls them (['timing.benchmark']), or [] when there is none"
            )
    return out


def _allowed(call: code.Call) -> bool:
    name = call.gpulab or ""
    return name in LOOKUPS or name.partition(".")[0] in LOOKUP_MODULES


def code_problems_of(source: str, names: code.Bindings) -> list[str]:
    """Why a cell's code is not a mechanism: no torch operation nor arithmetic, or a gpulab
    call other than the lookups (empty when it is one)."""
    found = []
    calls = code.calls(source, names)
    if not (any(c.torch for c in calls) or code.has_arithmetic(source)):
        found.append("holds no torch operation and no arithmetic")
    for call in calls:
        if call.gpulab is not None and not _allowed(call):
            found.append(
                f"calls {call.written} (gpulab's {call.gpulab}); a mechanism cell calls no "
                "gpulab function but the lookups (models.get, specs.get_gpu, budget.*, ...)"
            )
    return list(dict.fromkeys(found))  # a function called twice is one problem


def code_problems(nb: dict, where: str) -> list[str]:
    """Mechanism cells whose code is not the learner's own mechanism."""
    names = code.bindings(nb)
    return [
        f"{where}: cell {i} is tagged {MECHANISM_TAG!r} but {why}"
        for i in mechanisms(nb)
        for why in code_problems_of(cell_source(nb["cells"][i]), names)
    ]


def verified_mechanisms(nb: dict) -> list[int]:
    """Main-body mechanism cells whose code passes the code rule."""
    names = code.bindings(nb)
    body = set(main_body(nb))
    return [
        i
        for i in mechanisms(nb)
        if i in body
        and MECHANISM_TAG in code.tags(nb["cells"][i])
        and not code_problems_of(cell_source(nb["cells"][i]), names)
    ]


def required_mechanisms(path: str, main_body_cells: int) -> int:
    """How many verified mechanism cells a notebook needs: two in notebook 00, one in lab 00,
    and half the main-body code cells elsewhere."""
    if path.startswith("notebooks/00_"):
        return 2
    if path.startswith("labs/00_"):
        return 1
    return math.ceil(main_body_cells / 2)


def count_problems(nb: dict, where: str) -> list[str]:
    """Too few verified mechanism cells for the notebook."""
    body, verified = main_body(nb), verified_mechanisms(nb)
    need = required_mechanisms(where, len(body))
    if len(verified) >= need:
        return []
    return [
        f"{where}: {len(verified)} verified mechanism cell(s) of {len(body)} main-body code "
        f"cells; it needs at least {need}"
    ]


def _calls_any(source: str, names: code.Bindings, wanted: list[str]) -> list[str]:
    return [
        c.written for c in code.calls(source, names) if c.written in wanted or c.gpulab in wanted
    ]


def order_problems(nb: dict, where: str) -> list[str]:
    """Cells that call a library function before the mechanism it is the library's version of."""
    out, names, cells = [], code.bindings(nb), nb.get("cells", [])
    for i in mechanisms(nb):
        wanted = library_of(cells[i])
        name = code.gpulab_meta(cells[i]).get("mechanism")
        for j in range(i):
            if cells[j].get("cell_type") != "code" or not wanted:
                continue
            for call in sorted(set(_calls_any(cell_source(cells[j]), names, wanted))):
                out.append(
                    f"{where}: cell {j} calls {call} before cell {i} shows the mechanism "
                    f"{name!r} it computes"
                )
    return out


def agreement_problems(nb: dict, where: str) -> list[str]:
    """Mechanisms with a library twin but no later agreement cell that calls it and asserts;
    agreement cells that name no mechanism before them."""
    out, names, cells = [], code.bindings(nb), nb.get("cells", [])
    agreements = [
        i
        for i, c in enumerate(cells)
        if AGREEMENT_TAG in code.tags(c) or "agrees" in code.gpulab_meta(c)
    ]
    declared = {code.gpulab_meta(cells[i]).get("mechanism"): i for i in mechanisms(nb)}
    for j in agreements:
        agrees = code.gpulab_meta(cells[j]).get("agrees")
        if AGREEMENT_TAG not in code.tags(cells[j]) or cells[j].get("cell_type") != "code":
            out.append(
                f"{where}: cell {j} declares gpulab.agrees but is not a code cell tagged "
                f"{AGREEMENT_TAG!r}"
            )
        if agrees not in declared or declared[agrees] > j:
            out.append(
                f"{where}: cell {j} is an agreement cell for {agrees!r}, which no mechanism "
                "cell above it names"
            )
    for name, i in declared.items():
        wanted = library_of(cells[i])
        if not wanted:
            continue
        mine = [j for j in agreements if j > i and code.gpulab_meta(cells[j]).get("agrees") == name]
        if not mine:
            out.append(
                f"{where}: mechanism {name!r} (cell {i}) has no later cell tagged "
                f"{AGREEMENT_TAG!r} with gpulab.agrees = {name!r}"
            )
            continue
        sources = [cell_source(cells[j]) for j in mine]
        if not any(_calls_any(s, names, wanted) and code.has_assert(s) for s in sources):
            out.append(
                f"{where}: the agreement cell(s) {mine} of mechanism {name!r} must call one of "
                f"{wanted} and assert that it agrees"
            )
    return out


def reveal_problems(nb: dict, where: str) -> list[str]:
    """Reveal cells of predictions that the site would not collapse."""
    return [
        f"{where}: cell {p.reveal} reveals the prediction {p.name!r} but is not tagged "
        f"{REVEAL_TAG!r}"
        for p in code.prediction_cells(nb)
        if REVEAL_TAG not in code.tags(nb["cells"][p.reveal])
    ]


def all_problems(nb: dict, where: str) -> list[str]:
    """Every cell check of a notebook or lab."""
    return (
        length_problems(nb, where)
        + metadata_problems(nb, where)
        + code_problems(nb, where)
        + count_problems(nb, where)
        + order_problems(nb, where)
        + agreement_problems(nb, where)
        + reveal_problems(nb, where)
    )
