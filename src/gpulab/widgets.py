"""ipywidgets front ends over the library; no logic of their own (DESIGN.md)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from gpulab.doctor import findings_html

if TYPE_CHECKING:
    import ipywidgets

    from gpulab.doctor import Finding
    from gpulab.hardware import HardwareReport


def _list_html(items: list[str]) -> str:
    """An HTML bullet list of plain-text items."""
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def report_tabs(report: HardwareReport, findings: list[Finding], steps: list[str]) -> ipywidgets.Tab:
    """Tabs with the hardware report, the doctor's findings and the next steps (notebook 00)."""
    import ipywidgets as w

    pages = {
        "Machine": report._repr_html_(),
        "Doctor": findings_html(findings),
        "What next": _list_html(steps),
    }
    tab = w.Tab(children=[w.HTML(value=v) for v in pages.values()])
    for i, title in enumerate(pages):
        tab.set_title(i, title)
    return tab
