"""Errors that gpulab raises for the reader to act on.

A notebook reader who passes a bad parameter should see one sentence that says what was
wrong and what to use instead, not forty lines of traceback. Every such error is a
``GpulabConfigError`` (a ``ValueError``) whose ``field`` names the argument or the
configuration field that was wrong.
"""

from __future__ import annotations

import re

__all__ = ["GpulabConfigError"]

# "batch=0 must ..." or "bandwidths_gbs[1]=-3 ..." or "Task.batch=..." -> the name before "="
_LEADING_FIELD = re.compile(r"^([A-Za-z_][\w.]*(?:\[\d+\])?)\s*=")


class GpulabConfigError(ValueError):
    """Bad user input: a notebook parameter or a function argument with an unusable value.

    ``field`` is the name of the argument (or dataclass field, or config key) at fault; when
    it is not given, it is read from a message that starts with ``name=value``.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        if field is None:
            match = _LEADING_FIELD.match(str(message))
            field = match.group(1).split(".")[-1] if match else None
        self.field = field

    def _render_traceback_(self) -> list[str]:
        """Show one line in IPython/Jupyter instead of a traceback (IPython calls this hook)."""
        return [f"{type(self).__name__}: {self}"]

    def __reduce__(self):
        """Keep ``field`` when the error crosses a process boundary (pickling)."""
        return (type(self), (str(self), self.field))
