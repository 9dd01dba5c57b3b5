"""Tables for notebooks: plain text and HTML from the same rows (no pandas needed).

A computed table is what nbval checks in a reference cell, so both renderings are
deterministic: the same rows always give the same text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def _default_format(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


@dataclass
class Table:
    """Rows of dicts shown as an aligned text table or an HTML table (introduced in chapter 1)."""

    rows: Sequence[dict]
    columns: Sequence[str] = ()  # keys of the rows, in display order; default: the first row's
    headers: dict[str, str] = field(default_factory=dict)  # key -> column title
    formats: dict[str, Callable[[Any], str]] = field(default_factory=dict)  # key -> formatter
    title: str = ""

    def __post_init__(self) -> None:
        if not self.columns and self.rows:
            self.columns = list(self.rows[0])

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        heads = [self.headers.get(c, c) for c in self.columns]
        body = [[self.formats.get(c, _default_format)(row.get(c)) for c in self.columns]
                for row in self.rows]
        return heads, body

    def __str__(self) -> str:
        heads, body = self._cells()
        widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(heads)]
        lines = [self.title] if self.title else []
        lines.append("  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        for r in body:
            # numbers read best right-aligned, words left-aligned
            cells = [c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths, strict=True)]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        heads, body = self._cells()
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        pad = "padding:0.15em 0.8em"
        head = "".join(f'<th style="{pad}">{html.escape(h)}</th>' for h in heads)
        rows = "".join("<tr>" + "".join(
            f'<td style="{pad};text-align:{"right" if _numeric(c) else "left"}">{html.escape(c)}</td>'
            for c in r) + "</tr>" for r in body)
        return f'<table class="gpulab-table">{caption}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


_NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(e[-+]?\d+)?(%|x)?( [A-Za-z/%]+)?$")


def _numeric(text: str) -> bool:
    """A number, optionally with % or x, and at most one unit word ('66.9 GFLOP/s')."""
    return bool(_NUMBER.match(text.strip()))
