"""The pages' pictures that exist, found by name (tools/staging/pictures.py draws them).

Each chapter's drawing functions live in gpulab's ``ui`` layer, one module per chapter
(``gpulab.ui.pictures_ch01``, ``_ch02``...), and the introduction's in ``pictures_intro``: each
has ``PICTURES``, a dict from a picture's name (``"ch01-threads"``) to a function that takes no
argument and returns a matplotlib Figure. A
page shows one with a ``{figure}`` directive whose target is ``/_pictures/<name>.svg``; the
teaching checks (tools/checks/teaching_pages.py) accept only a registered name.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable

PACKAGE = "gpulab.ui"
MODULE = re.compile(r"pictures_(?:ch\d+|intro)")  # a chapter's, or the introduction's

NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # "ch01-threads"


def modules(package: str = PACKAGE) -> list[str]:
    """The picture modules of a package, by name (`pictures_chNN`), sorted."""
    pkg = importlib.import_module(package)
    return sorted(
        f"{package}.{info.name}"
        for info in pkgutil.iter_modules(pkg.__path__)
        if MODULE.fullmatch(info.name)
    )


def registered(package: str = PACKAGE) -> dict[str, Callable]:
    """Every registered picture: name -> the function that draws it. ValueError on a name
    given twice or not in kebab case, or a PICTURES that is not a dict of functions."""
    found: dict[str, Callable] = {}
    for name in modules(package):
        pictures = getattr(importlib.import_module(name), "PICTURES", None)
        if not isinstance(pictures, dict):
            raise ValueError(f"{name} has no PICTURES dict (name -> function)")
        for key, draw in pictures.items():
            if not isinstance(key, str) or not NAME.fullmatch(key) or not callable(draw):
                raise ValueError(f"{name}.PICTURES[{key!r}]: a kebab-case name and a function")
            if key in found:
                raise ValueError(f"picture {key!r} is registered twice (again in {name})")
            found[key] = draw
    return found
