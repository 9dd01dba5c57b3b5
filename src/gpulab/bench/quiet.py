"""Silence what C++ libraries write straight to file descriptor 2 (the profiler's start/stop lines).

Python's ``contextlib.redirect_stderr`` only swaps ``sys.stderr``; a line written by C++ to
the process's file descriptor 2 goes around it and lands in the executed page.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["quiet_stderr"]


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for the duration of the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
