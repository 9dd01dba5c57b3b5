"""The teaching checks of a lab: stubs that specify without giving the code, and learner copies
that keep every exercise's cell and check.

- A stub's docstring (or, at the top level, the comment above its solution block) and its first
  hint share no run of 4 or more code tokens (Python's names, operators and numbers; strings and
  comments ignored) with the block's code.
- Every exercise of the lab has, in its learner copy, a code cell to fill in (it raises
  NotImplementedError) and its check (an ``assert``, ``check(...)`` or a grade's
  ``.require()``), in its statement's section (up to the next exercise).
- A cell tagged ``grader`` (lab 5: it runs the grader on the learner's loop and shows its
  verdict) is a code cell that calls something, holds no solution block and is no mechanism, in
  a lab whose rule has graded cells (``teaching_cells.RULES``).
- A ``%%writefile`` cell (lab 7's scripts) leaves the checkout as it was when it runs: what it
  writes is the repository's file with the cell's code, or a file git ignores.

Each function returns the problems as sentences naming the file and the cell.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tokenize
from pathlib import Path

from tools.authoring import exercises, learner_generator, solution_blocks
from tools.checks import notebook_code as nbcode
from tools.checks import teaching_cells as cells
from tools.notebook_meta import ROOT, cell_source

RUN = 4  # tokens in a row that a stub's docstring or first hint may not share with the code
_CODE_TOKENS = (tokenize.NAME, tokenize.OP, tokenize.NUMBER)
# Python's tokens for text that is not Python (a docstring's prose): names, numbers, operators
_PROSE_TOKEN = re.compile(
    r"[A-Za-z_]\w*"
    r"|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    r"|\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%@&|^<>=!]=|[-+*/%@&|^~<>=()\[\]{},:.;]"
)
_STRING_OR_COMMENT = re.compile(r"#[^\n]*|'''.*?'''|\"\"\".*?\"\"\"|'[^'\n]*'|\"[^\"\n]*\"", re.S)


def code_tokens(code: str) -> list[str]:
    """The names, operators and numbers of Python code, strings and comments left out."""
    try:
        return [
            t.string
            for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type in _CODE_TOKENS
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return prose_tokens(_STRING_OR_COMMENT.sub(" ", code))  # a fragment: tokens by pattern


def prose_tokens(text: str) -> list[str]:
    """The same kinds of tokens read off prose, which need not be valid Python."""
    return _PROSE_TOKEN.findall(text)


def shared_run(text: str, code: str, run: int = RUN) -> list[str]:
    """The first run of `run` tokens of `text` that the code also has in a row ([] if none)."""
    grams = set()
    tokens = code_tokens(code)
    for i in range(len(tokens) - run + 1):
        grams.add(tuple(tokens[i : i + run]))
    words = prose_tokens(text)
    for i in range(len(words) - run + 1):
        if tuple(words[i : i + run]) in grams:
            return words[i : i + run]
    return []


def stub_problems(nb: dict, where: str) -> list[str]:
    """Stubs whose docstring or first hint shares a run of 4 code tokens with the solution."""
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        source = cell_source(cell)
        if cell.get("cell_type") != "code" or not solution_blocks.has_blocks(source):
            continue
        try:
            found = solution_blocks.blocks(source)
        except ValueError as exc:
            out.append(f"{where}: cell {i}: {exc}")
            continue
        cell_hint = cell.get("metadata", {}).get("hint")
        for block in found:
            what = f"the stub of {block.function}" if block.function else "the stub"
            hint1 = block.hints.get(1) or cell_hint or ""
            for kind, text in (("docstring", block.docstring), ("HINT 1", hint1)):
                run = shared_run(text, block.code)
                if run:
                    out.append(
                        f"{where}: cell {i}: {what}: its {kind} shares the code "
                        f"`{' '.join(run)}` with the solution (a stub says what, not how)"
                    )
    return out


def learner_copy_problems(nb: dict, where: str, root: Path = ROOT) -> list[str]:
    """Exercises of a lab whose learner copy lacks a cell to fill in or its check."""
    copy_path = learner_generator.learner_path(root / where)
    if not copy_path.exists():
        return [f"{where}: no learner copy at {copy_path.relative_to(root).as_posix()}"]
    learner = json.loads(copy_path.read_text(encoding="utf-8"))
    cells = learner.get("cells", [])
    starts = {
        exercises.label_of(c): i
        for i, c in enumerate(cells)
        if exercises.EXERCISE_TAG in c.get("metadata", {}).get("tags", [])
    }
    ends = sorted(starts.values()) + [len(cells)]
    out = []
    for group in exercises.exercises(nb):
        at = f"{where}: exercise {group.number} ({group.label})"
        if group.label not in starts:
            out.append(f"{at} is missing from the learner copy")
            continue
        begin = starts[group.label]
        end = next(e for e in ends if e > begin)
        code = [cell_source(c) for c in cells[begin + 1 : end] if c.get("cell_type") == "code"]
        if not any("raise NotImplementedError" in s for s in code):
            out.append(
                f"{at} has no cell to fill in in the learner copy: write its solution code "
                "between '### BEGIN SOLUTION' and '### END SOLUTION', its check after them"
            )
        if not any(exercises.CHECK.search(s) for s in code):
            out.append(f"{at} has no check (an assert or check(...)) in the learner copy")
    return out


def learner_texts(where: str, root: Path = ROOT) -> dict[str, str]:
    """What a learner reads in a lab's learner copy beyond the solution's Markdown: its stubs and
    hints, by cell ("cell N" -> text)."""
    copy_path = learner_generator.learner_path(root / where)
    if not copy_path.exists():
        return {}
    cells = json.loads(copy_path.read_text(encoding="utf-8")).get("cells", [])
    wanted = (learner_generator.STUB_TAG, learner_generator.HINTS_TAG)
    return {
        f"cell {i}": cell_source(c)
        for i, c in enumerate(cells)
        if any(t in c.get("metadata", {}).get("tags", []) for t in wanted)
    }


def grader_problems(nb: dict, where: str) -> list[str]:
    """Cells tagged `grader` that are more than a call to a lab's grader: in a file whose rule
    has no graded cells, not a code cell, a mechanism, holding a solution block, or calling
    nothing."""
    out, graded = [], cells.rule_for(where).graded
    for i, cell in enumerate(nb.get("cells", [])):
        if cells.GRADER_TAG not in nbcode.tags(cell):
            continue
        at, source = f"{where}: cell {i} is tagged {cells.GRADER_TAG!r}", cell_source(cell)
        if not graded:
            out.append(f"{at}, but only a graded lab's cells may be (the rules of teaching_cells)")
        if cell.get("cell_type") != "code":
            out.append(f"{at} but is not a code cell")
            continue
        if cells.MECHANISM_TAG in nbcode.tags(cell) or "mechanism" in nbcode.gpulab_meta(cell):
            out.append(f"{at} and is a mechanism: a grader cell only runs the grader")
        if solution_blocks.has_blocks(source) or cells.BEGIN in source:
            out.append(f"{at} and holds a solution block: the learner's work is not graded code")
        if not nbcode.calls(source, nbcode.bindings(nb)):
            out.append(f"{at} but calls nothing: a grader cell runs the lab's grader")
    return out


def _ignored(path: Path, root: Path) -> bool:
    """True when git ignores `path` in the checkout at `root` (False without git)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", str(path)], capture_output=True
        )
    except OSError:
        return False
    return done.returncode == 0


def writefile_problems(nb: dict, where: str, root: Path = ROOT) -> list[str]:
    """`%%writefile` cells whose run would change the checkout: a script written out (relative
    to the notebook's folder, where it runs) must be a file of the repository with the cell's
    own code, or one git ignores. A path built from variables, or outside the checkout, is the
    run's own."""
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        source = cell_source(cell)
        target = cells.writefile_target(source) if cell.get("cell_type") == "code" else None
        if target is None or re.search(r"[{}$~]", target) or Path(target).is_absolute():
            continue
        path = ((root / where).parent / target.strip("\"'")).resolve()
        if not path.is_relative_to(root.resolve()):
            continue
        rel = path.relative_to(root.resolve()).as_posix()
        if path.is_file():
            script = cells.script_of(source)
            # IPython writes the cell's lines, the last one ended by a newline
            if path.read_text(encoding="utf-8") != script + ("" if script.endswith("\n") else "\n"):
                out.append(
                    f"{where}: cell {i} writes {rel}, whose code differs from the cell's: the "
                    "script a run writes is the repository's file, so the two are the same"
                )
        elif not _ignored(path, root):
            out.append(
                f"{where}: cell {i} writes {rel}, a file the repository neither holds nor "
                "ignores: commit the script as the cell writes it, or write it where git ignores"
            )
    return out
