"""Errors that gpulab raises for the reader to act on.

A notebook reader who passes a bad parameter should see one sentence that says
what was wrong and what to use instead, not forty lines of traceback.
"""

from __future__ import annotations

__all__ = ["GpulabConfigError", "require_positive", "require_positive_ints"]


class GpulabConfigError(ValueError):
    """Bad user input: a notebook parameter or a function argument with an unusable value."""

    def _render_traceback_(self) -> list[str]:
        """Show one line in IPython/Jupyter instead of a traceback (IPython calls this hook)."""
        return [f"{type(self).__name__}: {self}"]


def require_positive_ints(**values: object) -> None:
    """Raise GpulabConfigError naming the first value that is not a positive integer."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise GpulabConfigError(f"{name}={value!r} must be a positive integer")


def require_positive(**values: object) -> None:
    """Raise GpulabConfigError naming the first value that is not a positive finite number."""
    for name, value in values.items():
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not (0 < value < float("inf")):
            raise GpulabConfigError(f"{name}={value!r} must be a positive number")
