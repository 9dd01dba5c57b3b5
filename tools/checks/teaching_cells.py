"""The teaching checks of a notebook's cells (CONTRIBUTING.md, "Teaching cells").

- Main body: every code cell but the title, the Colab set-up, the parameters, the removed cells,
  the exercises' solutions (an exercise's solution cell that holds a solution block is the
  learner's work in the learner copy, and counts) and, where the file's rule allows them, the
  ``grader`` cells. A main-body cell has at most 20 lines (a ``%%writefile`` mechanism cell up to
  its rule's ``script_lines``).
- Mechanism cells: tagged ``mechanism``, with ``"gpulab": {"mechanism": name, "library":
  [...]}``; their code holds torch operations or arithmetic and calls no gpulab function but the
  lookups (a ``%%writefile`` cell: the script after its magic line, read with its own imports);
  enough of them (``RULES``: half the main body, a fixed number, or mechanisms named exactly);
  no cell before one calls what its ``library`` names; and a later ``agreement`` cell checks each
  against the library with an ``assert`` (a script's: runs it and asserts).
- Reveals: the cell that passes a prediction to ``predict.compare`` is tagged ``hide-output``.

Each function returns the problems as sentences naming the file and the cell.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass

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
GRADER_TAG = "grader"  # a cell that only runs a lab's grader on the learner's work
SOLUTION_TAG = "solution"  # a lab's cell that the learner copy turns into a stub
WRITEFILE = re.compile(r"^%%writefile(?:\s+-a)?\s+(?P<target>\S.*?)\s*$")


@dataclass(frozen=True)
class Rule:
    """What the teaching checks ask of the files whose path matches `glob` (fnmatch), beyond
    what they ask of every file: how many mechanisms, which by name, graded cells, scripts."""

    glob: str
    share: float = 0.5  # of the main-body code cells, as verified mechanism cells
    at_least: int = 0  # verified mechanism cells needed whatever the share
    named: tuple[str, ...] = ()  # mechanisms that must be there, verified, by these names
    named_agreed: bool = False  # each named mechanism has its agreement cell, with an assert
    named_tag: str = ""  # a tag each named mechanism's cell carries ("solution": the learner's)
    graded: bool = False  # cells tagged `grader` leave the main body
    script_lines: int = MAIN_BODY_LINES  # lines of a `%%writefile` mechanism cell, magic included
    claims_by_number: bool = False  # its text may name a claim by its number (the fact-check's)


# The per-file requirements, the first rule whose glob matches a path applies (issues 28, 29).
RULES: tuple[Rule, ...] = (
    Rule("notebooks/00_*", share=0, at_least=2),
    Rule("labs/00_*", share=0, at_least=1),
    Rule(
        "notebooks/06_*",
        share=0,
        named=("memory-sum", "break-even-months", "psu-sum"),
        named_agreed=True,
    ),
    Rule("labs/05_*", named=("training-loop",), named_tag=SOLUTION_TAG, graded=True),
    Rule("labs/07_*", script_lines=40),
    # the appendices: exempt from the count; the fact-check's entries are the claims, by number
    Rule("book/appendix/fact_check.ipynb", share=0, claims_by_number=True),
    Rule("book/appendix/*", share=0),
    Rule("*"),
)


def rule_for(path: str) -> Rule:
    """The rule of RULES that applies to a repository-relative path (the first that matches)."""
    return next(r for r in RULES if fnmatch.fnmatchcase(path, r.glob))


def writefile_target(source: str) -> str | None:
    """The path a `%%writefile <path>` cell writes (None for any other cell)."""
    first = source.lstrip("\n").partition("\n")[0]
    match = WRITEFILE.match(first.strip())
    return match["target"] if match else None


def script_of(source: str) -> str:
    """A cell's Python: a `%%writefile` cell's script after its magic line, else the cell."""
    if writefile_target(source) is None:
        return source
    return source.lstrip("\n").partition("\n")[2]


def is_main_body(nb: dict, index: int, where: str = "") -> bool:
    """True for a main-body code cell of the file at `where` (the counts and the line limit
    apply to it)."""
    cell = nb["cells"][index]
    if cell.get("cell_type") != "code" or index == 0:
        return False
    tags = code.tags(cell)
    if any(t in tags for t in OUTSIDE_TAGS):
        return False
    if GRADER_TAG in tags and rule_for(where).graded:
        return False
    return EXERCISE_SOLUTION_TAG not in tags or BEGIN in cell_source(cell)


def main_body(nb: dict, where: str = "") -> list[int]:
    """Positions of the main-body code cells of the file at `where`."""
    return [i for i in range(len(nb.get("cells", []))) if is_main_body(nb, i, where)]


def line_limit(cell: dict, where: str) -> int:
    """The most lines a main-body cell may have: 20, or a `%%writefile` mechanism cell's."""
    source = cell_source(cell)
    if MECHANISM_TAG in code.tags(cell) and writefile_target(source) is not None:
        return max(MAIN_BODY_LINES, rule_for(where).script_lines)
    return MAIN_BODY_LINES


def length_problems(nb: dict, where: str) -> list[str]:
    """Main-body code cells longer than their limit (blank lines and comments count)."""
    out = []
    for i in main_body(nb, where):
        cell = nb["cells"][i]
        lines, limit = len(cell_source(cell).splitlines()), line_limit(cell, where)
        if lines > limit:
            kind = (
                "a %%writefile mechanism cell"
                if limit > MAIN_BODY_LINES
                else "a main-body code cell"
            )
            out.append(f"{where}: cell {i} has {lines} lines; {kind} has at most {limit}")
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


def cell_code_problems(nb: dict, index: int, names: code.Bindings) -> list[str]:
    """Why a cell's code is not a mechanism; a `%%writefile` cell's script is read alone, with
    the names its own imports bind (it runs as its own program)."""
    source = cell_source(nb["cells"][index])
    if writefile_target(source) is None:
        return code_problems_of(source, names)
    script = script_of(source)
    return code_problems_of(
        script, code.bindings({"cells": [{"cell_type": "code", "source": script}]})
    )


def code_problems(nb: dict, where: str) -> list[str]:
    """Mechanism cells whose code is not the learner's own mechanism."""
    names = code.bindings(nb)
    return [
        f"{where}: cell {i} is tagged {MECHANISM_TAG!r} but {why}"
        for i in mechanisms(nb)
        for why in cell_code_problems(nb, i, names)
    ]


def verified_mechanisms(nb: dict, where: str = "") -> list[int]:
    """Main-body mechanism cells whose code passes the code rule."""
    names = code.bindings(nb)
    body = set(main_body(nb, where))
    return [
        i
        for i in mechanisms(nb)
        if i in body
        and MECHANISM_TAG in code.tags(nb["cells"][i])
        and not cell_code_problems(nb, i, names)
    ]


def required_mechanisms(path: str, main_body_cells: int) -> int:
    """How many verified mechanism cells a notebook needs (its rule: a share of the main-body
    code cells, at least a fixed number)."""
    rule = rule_for(path)
    return max(rule.at_least, math.ceil(main_body_cells * rule.share))


def _agreement_cells(nb: dict, name: str, after: int) -> list[int]:
    cells = nb.get("cells", [])
    return [
        j
        for j in range(after + 1, len(cells))
        if AGREEMENT_TAG in code.tags(cells[j]) and code.gpulab_meta(cells[j]).get("agrees") == name
    ]


def named_problems(nb: dict, where: str, verified: list[int]) -> list[str]:
    """The mechanisms the file's rule names that are missing, unverified, outside their tag or
    without an agreement cell that asserts."""
    rule, cells, out = rule_for(where), nb.get("cells", []), []
    by_name = {code.gpulab_meta(cells[i]).get("mechanism"): i for i in verified}
    for name in rule.named:
        if name not in by_name:
            out.append(
                f"{where}: no verified mechanism cell named {name!r} (tagged {MECHANISM_TAG!r}, "
                f"gpulab.mechanism = {name!r}, in the main body, passing the code rule)"
            )
            continue
        i = by_name[name]
        if rule.named_tag and rule.named_tag not in code.tags(cells[i]):
            out.append(
                f"{where}: cell {i}, the mechanism {name!r}, is not tagged {rule.named_tag!r}"
            )
        agreed = [
            j for j in _agreement_cells(nb, name, i) if code.has_assert(cell_source(cells[j]))
        ]
        if rule.named_agreed and not agreed:
            out.append(
                f"{where}: the mechanism {name!r} (cell {i}) has no later cell tagged "
                f"{AGREEMENT_TAG!r} with gpulab.agrees = {name!r} that asserts"
            )
    return out


def count_problems(nb: dict, where: str) -> list[str]:
    """Too few verified mechanism cells for the notebook, or a named one missing."""
    body, verified = main_body(nb, where), verified_mechanisms(nb, where)
    need = required_mechanisms(where, len(body))
    out = named_problems(nb, where, verified)
    if len(verified) < need:
        out.insert(
            0,
            f"{where}: {len(verified)} verified mechanism cell(s) of {len(body)} main-body code "
            f"cells; it needs at least {need}",
        )
    return out


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
        out += _script_agreement_problems(nb, where, name, i)
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


def _script_agreement_problems(nb: dict, where: str, name: str, i: int) -> list[str]:
    """A `%%writefile` mechanism needs a later agreement cell that runs its script (names its
    file, when the path is written out) and asserts on what it returns."""
    cells = nb.get("cells", [])
    target = writefile_target(cell_source(cells[i]))
    if target is None:
        return []
    stem = re.split(r"[\\/]", target)[-1].rsplit(".", 1)[0]
    literal = not re.search(r"[{}$]", target)
    for j in _agreement_cells(nb, name, i):
        source = cell_source(cells[j])
        if code.has_assert(source) and (not literal or stem in source):
            return []
    runs = f"names {stem!r}, " if literal else ""
    return [
        f"{where}: the script of mechanism {name!r} (cell {i}, %%writefile {target}) has no later "
        f"cell tagged {AGREEMENT_TAG!r} with gpulab.agrees = {name!r} that runs it ({runs}"
        "through the lab's launcher) and asserts on what it returns"
    ]


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
