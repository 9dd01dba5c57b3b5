"""Errors that gpulab raises for the reader to act on.

A notebook reader who passes a bad parameter should see one sentence that says
what was wrong and what to use instead, not forty lines of traceback.
"""

from __future__ import annotations

__all__ = ["GpulabConfigError"]


class GpulabConfigError(ValueError):
    """Bad user input: a notebook parameter or a function argument with an unusable value."""

    def _render_traceback_(self) -> list[str]:
        """Show one line in IPython/Jupyter instead of a traceback (IPython calls this hook)."""
        return [f"{type(self).__name__}: {self}"]
