"""The doctor's list of rules, and the decorator that adds one to it.

A rule is a function from a HardwareReport to a list of Findings. ``@rule`` appends it to
``RULES``; the doctor runs them in that order, which is the order their modules are imported
in (gpulab.machine.rules) and, within a module, the order they are written in.
"""

from __future__ import annotations

from collections.abc import Callable

from gpulab.core.validate import checked
from gpulab.machine.report import Finding, HardwareReport

__all__ = ["RULES", "Rule", "rule"]

Rule = Callable[[HardwareReport], list[Finding]]
RULES: list[Rule] = []


@checked
def rule(fn: Rule) -> Rule:
    """Decorator: add a doctor rule to RULES, after those registered before it."""
    if fn in RULES:
        raise ValueError(f"the doctor rule {fn.__name__} is registered twice")
    RULES.append(fn)
    return fn
