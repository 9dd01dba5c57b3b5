"""The doctor's rules: each a small function from a HardwareReport to a list of Findings.

``RULES`` lists them in the order they are checked; ``gpulab.doctor`` runs them and renders the
result. A rule reads only the report, so it can be tested with a report built by hand, and a
report's fields are already sane (``gpulab.report``: an odd driver value is None). The rules
live by what they look at: the software (``rules_setup``) and the machine's resources
(``rules_resources``); each registers itself with ``@rule`` (``rule_registry``).
"""

from __future__ import annotations

from gpulab.machine import rules_resources, rules_setup
from gpulab.machine.report import SEVERITIES, Finding, findings_html
from gpulab.machine.rule_registry import RULES, Rule
from gpulab.machine.rules_resources import (
    BUSY_UTILIZATION_PERCENT,
    LOW_FREE_RAM_BYTES,
    LOW_FREE_VRAM_BYTES,
    OTHER_PROCESSES_MEMORY_SHARE,
)

# Finding and its HTML live with the report (gpulab.report), so that these modules hold the rules.
__all__ = [
    "BUSY_UTILIZATION_PERCENT",
    "LOW_FREE_RAM_BYTES",
    "LOW_FREE_VRAM_BYTES",
    "OTHER_PROCESSES_MEMORY_SHARE",
    "RULES",
    "SEVERITIES",
    "Finding",
    "Rule",
    "findings_html",
    "rules_resources",
    "rules_setup",
]
