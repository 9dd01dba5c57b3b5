"""The library's own code, shown on the page where it is the lesson (d2l's way).

``show(timing.benchmark)`` displays the source of the function that runs, read from its
module with ``inspect``, so the page can never drift from the code: there is no copy to keep
in sync. Jupyter and the site highlight it as Python (a Markdown code block); plain text
elsewhere.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import checked

__all__ = ["Listing", "show", "source_of"]


@checked
def source_of(obj: Callable | ModuleType) -> tuple[str, str, int]:
    """(source, file relative to the package's parent, first line) of a function, class or
    module."""
    target = inspect.unwrap(obj) if callable(obj) else obj
    lines, first = inspect.getsourcelines(target)
    path = Path(inspect.getsourcefile(target) or "?")
    parts = path.parts
    # src/gpulab/... in a checkout, site-packages/gpulab/... when installed: from gpulab/ on
    shown = Path(*parts[parts.index("gpulab") :]) if "gpulab" in parts else path
    return "".join(lines).rstrip("\n"), shown.as_posix(), first


@dataclass(frozen=True)
class Listing:
    """Source code to display, with where it comes from."""

    name: str  # qualified name, for example gpulab.bench.timing.benchmark
    code: str
    where: str  # file and lines

    def _repr_markdown_(self) -> str:
        fence = "`" * max(3, 1 + max((len(r) for r in _backtick_runs(self.code)), default=0))
        return f"`{self.name}` ({self.where}):\n\n{fence}python\n{self.code}\n{fence}\n"

    def __repr__(self) -> str:
        return f"# {self.name} ({self.where})\n{self.code}"


def _backtick_runs(text: str) -> list[str]:
    import re

    return re.findall(r"`+", text)


@checked
def show(obj: Callable) -> Listing:
    """The source of a gpulab function or class, as it runs, for display in a notebook."""
    if not (
        inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj) or inspect.ismethod(obj)
    ):
        raise GpulabConfigError(
            f"obj: show() takes a function or a class, not {type(obj).__name__}", "obj"
        )
    code, path, first = source_of(obj)
    target = inspect.unwrap(obj)
    name = f"{target.__module__}.{target.__qualname__}"
    last = first + code.count("\n")
    return Listing(name, code, f"{path}, lines {first}-{last}")
