"""The solution blocks of a lab's cells: the answer between ``### BEGIN SOLUTION`` and
``### END SOLUTION``, its hints, and the function it completes.

A block's hints are comment lines ``# HINT 1: ...`` to ``# HINT 3: ...``, each more specific:
a nudge, the idea, the line. The old single ``# HINT: ...`` counts as level 1. The learner-copy
generator turns them into collapsed levels under the stub (``learner_generator``), and the
teaching checks compare a stub's docstring and first hint with the block's code
(``tools/checks/teaching_labs.py``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HINT = re.compile(r"^#\s*HINT(?:\s+(?P<level>[1-3]))?\s*:\s*(?P<text>.*)$")
LEVELS = (1, 2, 3)


@dataclass
class Block:
    """One solution block of a cell."""

    begin: int  # 0-based line of the BEGIN marker in the cell
    end: int  # 0-based line of the END marker
    indent: str  # the markers' indentation, which the stub keeps
    lines: list[str] = field(default_factory=list)  # the lines between the markers
    function: str = ""  # the function the block completes ("" at the top level)
    docstring: str = ""  # that function's docstring, or the comment above a top-level block

    @property
    def hints(self) -> dict[int, str]:
        """The block's hints by level (1 to 3); `# HINT:` is level 1."""
        return hints(self.lines)

    @property
    def code(self) -> str:
        """The block's code without its comment lines, dedented."""
        kept = [ln for ln in self.lines if not ln.strip().startswith("#")]
        return textwrap.dedent("\n".join(kept))


def hints(lines: list[str]) -> dict[int, str]:
    """The hints in a block's lines, by level: `# HINT N: text` (or `# HINT: text`, level 1),
    each continued by the comment lines right under it, up to the next hint or code line."""
    found: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        match = HINT.match(stripped)
        if match:
            level = int(match["level"] or 1)
            # a level given twice: the first one counts, and the second's lines go nowhere
            current = None if level in found else found.setdefault(level, [match["text"].strip()])
        elif current is not None and stripped.startswith("#") and stripped.strip("#").strip():
            current.append(stripped.lstrip("#").strip())
        else:
            current = None
    return {level: " ".join(parts) for level, parts in sorted(found.items()) if any(parts)}


def has_blocks(source: str) -> bool:
    """True when a cell holds a solution marker."""
    return any(line.strip() in (BEGIN, END) for line in source.splitlines())


def blocks(source: str) -> list[Block]:
    """The solution blocks of a cell, in order; ValueError (with the line) on broken markers."""
    found: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(source.splitlines()):
        stripped = line.strip()
        if stripped == BEGIN:
            if current is not None:
                raise ValueError(f"line {number + 1}: {BEGIN!r} inside another solution block")
            current = Block(number, -1, line[: len(line) - len(line.lstrip())])
        elif stripped == END:
            if current is None:
                raise ValueError(f"line {number + 1}: {END!r} without {BEGIN!r}")
            current.end = number
            found.append(current)
            current = None
        elif current is not None:
            current.lines.append(line)
    if current is not None:
        raise ValueError(f"{BEGIN!r} is never closed by {END!r}")
    _describe(source, found)
    return found


def _describe(source: str, found: list[Block]) -> None:
    """Fill each block's function and docstring from the cell's code."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    lines = source.splitlines()
    for block in found:
        fn = None
        if tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    # the block's code lies inside the function's lines (0-based begin)
                    if node.lineno - 1 < block.begin < (node.end_lineno or node.lineno):
                        if fn is None or node.lineno > fn.lineno:
                            fn = node  # the innermost function around the block
        if fn is not None:
            block.function, block.docstring = fn.name, ast.get_docstring(fn) or ""
            continue
        above = []
        for line in reversed(lines[: block.begin]):
            stripped = line.strip()
            if not stripped.startswith("#") or stripped in (BEGIN, END):
                break
            above.append(stripped.lstrip("#").strip())
        block.docstring = "\n".join(reversed(above))
