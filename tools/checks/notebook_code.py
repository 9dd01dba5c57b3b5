"""What the teaching checks read in a notebook's code: its cells parsed, the gpulab and torch
names its imports bind, the calls a cell makes, and its predictions.

A notebook's code is Python with IPython magics and shell lines, which are blanked before
parsing. A call's name is given as the notebook writes it (``timing.benchmark``) and in its
canonical short form, whatever the import: ``from gpulab.estimate import memory as m`` makes
``m.kv_cache_bytes(...)`` the call ``memory.kv_cache_bytes``, the form a mechanism cell's
``library`` list and the spec's lookups use.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tools.notebook_meta import cell_source

# gpulab's layers: a dotted path under gpulab loses them, "gpulab.estimate.memory.x" -> "memory.x"
LAYER_NAMES = ("core", "reference", "estimate", "machine", "bench", "ui", "course")


def code_tree(source: str) -> ast.Module:
    """A code cell's syntax tree, IPython magics and shell lines blanked (they are not Python)."""
    return ast.parse(
        "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
        )
    )


def tags(cell: dict) -> list[str]:
    """A cell's tags (none: [])."""
    return cell.get("metadata", {}).get("tags", []) or []


def gpulab_meta(cell: dict) -> dict:
    """A cell's ``gpulab`` metadata (none: {})."""
    meta = cell.get("metadata", {}).get("gpulab", {})
    return meta if isinstance(meta, dict) else {}


def code_cells(nb: dict) -> list[str]:
    """The sources of a notebook's code cells, in order."""
    return [cell_source(c) for c in nb.get("cells", []) if c.get("cell_type") == "code"]


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name; None for anything else (a call's result)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _trees(nb: dict) -> list[ast.Module]:
    out = []
    for source in code_cells(nb):
        try:
            out.append(code_tree(source))
        except SyntaxError:
            continue  # the format check and the execution report a broken cell
    return out


@dataclass(frozen=True)
class Bindings:
    """What the notebook's imports bind: name -> dotted path, for gpulab and for torch."""

    gpulab: dict[str, str]
    torch: dict[str, str]

    def canonical(self, name: str) -> str | None:
        """The short form of a gpulab name ("memory.kv_cache_bytes"), or None if not gpulab's."""
        root, _, rest = name.partition(".")
        if root not in self.gpulab:
            return None
        parts = [p for p in f"{self.gpulab[root]}.{rest}".strip(".").split(".") if p]
        parts = parts[1:]  # "gpulab"
        while parts and parts[0] in LAYER_NAMES and len(parts) > 1:
            parts = parts[1:]
        return ".".join(parts)

    def is_torch(self, name: str) -> bool:
        """True when a dotted name starts at something imported from torch."""
        return name.partition(".")[0] in self.torch


def bindings(nb: dict) -> Bindings:
    """The names a notebook's imports bind to gpulab and to torch, over all its code cells."""
    found: dict[str, dict[str, str]] = {"gpulab": {}, "torch": {}}
    for tree in _trees(nb):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.partition(".")[0]
                    if top in found:
                        bound = alias.asname or top
                        found[top][bound] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.partition(".")[0]
                if top in found:
                    for alias in node.names:
                        found[top][alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return Bindings(found["gpulab"], found["torch"])


@dataclass(frozen=True)
class Call:
    """One call in a cell: as written, and its gpulab short form (None: not gpulab's)."""

    written: str
    gpulab: str | None
    torch: bool


def calls(source: str, names: Bindings) -> list[Call]:
    """Every call of a cell whose function is a dotted name, in the order of the tree's walk."""
    try:
        tree = code_tree(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            written = dotted(node.func)
            if written is not None:
                out.append(Call(written, names.canonical(written), names.is_torch(written)))
    return out


def _stringy(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def has_arithmetic(source: str) -> bool:
    """True when a cell holds a binary operation on numbers or tensors (not on strings)."""
    try:
        tree = code_tree(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and not (_stringy(node.left) or _stringy(node.right)):
            return True
        if isinstance(node, ast.AugAssign) and not _stringy(node.value):
            return True
    return False


def has_assert(source: str) -> bool:
    """True when a cell holds an `assert` statement."""
    try:
        return any(isinstance(n, ast.Assert) for n in ast.walk(code_tree(source)))
    except SyntaxError:
        return False


def _none_assignment(source: str | None) -> str | None:
    """The name a cell that is only `my_x = None` assigns; None for any other cell."""
    if source is None:
        return None
    try:
        body = list(code_tree(source).body)
    except SyntaxError:
        return None
    if (
        len(body) == 1
        and isinstance(body[0], ast.Assign)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is None
        and len(body[0].targets) == 1
        and isinstance(body[0].targets[0], ast.Name)
    ):
        return body[0].targets[0].id
    return None


def _compares(source: str | None, name: str) -> bool:
    """True when a cell passes `name` first to predict.compare."""
    if source is None:
        return False
    try:
        tree = code_tree(source)
    except SyntaxError:
        return False
    return any(
        isinstance(node, ast.Call)
        and (dotted(node.func) or "").endswith("predict.compare")
        and node.args
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == name
        for node in ast.walk(tree)
    )


@dataclass(frozen=True)
class Prediction:
    """A predict-then-measure moment: the variable, the cell that asks, the cell that reveals."""

    name: str
    ask: int  # position of the `my_x = None` cell
    reveal: int  # position of the later cell that passes my_x to predict.compare


def _pairs(sources: list[str | None]) -> list[Prediction]:
    found = []
    for i, source in enumerate(sources):
        name = _none_assignment(source)
        if name is None:
            continue
        reveal = next((j for j in range(i + 1, len(sources)) if _compares(sources[j], name)), None)
        if reveal is not None:
            found.append(Prediction(name, i, reveal))
    return found


def predictions(code_sources: list[str]) -> list[str]:
    """The variables of predict-then-measure moments: a cell that only sets `my_x = None`, and a
    later cell that passes `my_x` to predict.compare."""
    return [p.name for p in _pairs(list(code_sources))]


def prediction_cells(nb: dict) -> list[Prediction]:
    """The predictions of a notebook, with the positions of their cells in it."""
    return _pairs(
        [cell_source(c) if c.get("cell_type") == "code" else None for c in nb.get("cells", [])]
    )
