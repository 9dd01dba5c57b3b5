"""Tables for notebooks: plain text and HTML from the same rows (no pandas needed).

A computed table is what nbval checks in a reference cell, so both renderings are
deterministic: the same rows always give the same text.

A column's format is a string, so that a notebook reads ``formats={"share": ".0%"}``:

- a Python format spec, optionally followed by a unit: ``".1f"``, ``",.0f"``, ``"+.1%"``,
  ``".2f GiB"``. A unit of bytes, seconds or rates scales the value from the base unit
  (bytes, seconds, per second): ``".1f GiB"`` shows 3 x 2**30 as "3.0 GiB", ``".2f ms"``
  shows 0.0042 as "4.20 ms". Any other unit is appended as it is (``".2f x"`` gives "1.50x").
- after a ``|``, the text shown for a missing value (None): ``".2f x|skipped"``, ``".1f|"`` for
  an empty cell; "-" otherwise.
- a name: ``"seconds"`` (a readable duration, units.format_seconds), ``"size"`` (binary bytes,
  units.size_label), ``"yes/no"`` (a truth value).

A figure that needs a word gets a numbered note under the table: a value that carries a
``note`` (a share above 100 % of a peak, from ``roofline.percent_of_peak``) is marked in its
cell, and ``notes=`` gives each row its own (a timing taken while the machine was busy), marked
in the row's first cell. The same text is one note, however many cells it marks.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GB", "GIB", "KIB", "MIB", "NAMED_FORMATS", "SCALED_UNITS", "Table"]

from gpulab.core.units import GB, GIB, KIB, MIB, format_seconds, keep_with_unit, size_label

# Units whose values the rows hold in a base unit (bytes, seconds, per second), and the scale.
SCALED_UNITS: dict[str, float] = {
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": 1024**4,
    "kB": 1e3,
    "MB": 1e6,
    "GB": GB,
    "TB": 1e12,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "GB/s": 1e9,
    "TB/s": 1e12,
    "GFLOP/s": 1e9,
    "TFLOP/s": 1e12,
    "PFLOP/s": 1e15,
}
NAMED_FORMATS: dict[str, Callable[[Any], str]] = {
    "seconds": format_seconds,
    "size": size_label,
    "yes/no": lambda v: "yes" if v else "no",
}


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
    # key -> format string (see the module's docstring); a callable is accepted from library code
    formats: dict[str, str | Callable[[Any], str]] = field(default_factory=dict)
    title: str = ""
    # The leading columns that name a row (a GPU, a setting): they come first, and on the site
    # the first stays in view while a table wider than the page scrolls in its own box.
    key_columns: int = 1
    # One entry per row (or fewer): a note, a list of notes or None, marked in the row's first
    # cell and written under the table; a note a cell of the row already carries is not repeated.
    notes: Sequence[str | Sequence[str] | None] = ()

    def __post_init__(self) -> None:
        if not self.columns and self.rows:
            self.columns = list(self.rows[0])
        # parsed once, so a bad format string fails here, naming its column
        self._formatters = {
            c: f if callable(f) else formatter(f, column=c) for c, f in self.formats.items()
        }

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        heads, body, _, _ = self._layout()
        return heads, body

    def _layout(self) -> tuple[list[str], list[list[str]], list[list[list[int]]], list[str]]:
        """Titles, cell texts, each cell's note numbers, and the notes in the order marked."""
        # a field name the table has no title for is shown in words: "needed_gb" as "needed gb"
        # (a column named in words, "Q4_K_M (4.84 bit)", stays as written)
        heads = [
            self.headers.get(c, c.replace("_", " ") if _FIELD_NAME.match(str(c)) else str(c))
            for c in self.columns
        ]
        body = [
            [self._formatters.get(c, _default_format)(row.get(c)) for c in self.columns]
            for row in self.rows
        ]
        notes: list[str] = []
        marks: list[list[list[int]]] = []
        for i, row in enumerate(self.rows):
            per_cell = [_note_texts(getattr(row.get(c), "note", None)) for c in self.columns]
            carried = {text for texts in per_cell for text in texts}
            own = _note_texts(self.notes[i] if i < len(self.notes) else None)
            if per_cell:
                per_cell[0] = per_cell[0] + [t for t in own if t not in carried]
            numbers = []
            for texts in per_cell:  # numbered in reading order, one number per distinct text
                for text in texts:
                    if text not in notes:
                        notes.append(text)
                numbers.append([notes.index(text) + 1 for text in texts])
            marks.append(numbers)
        return heads, body, marks, notes

    def __str__(self) -> str:
        heads, body, marks, notes = self._layout()
        body = [
            [c + _superscript(m) for c, m in zip(r, ms, strict=True)]
            for r, ms in zip(body, marks, strict=True)
        ]
        widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(heads)]
        lines = [self.title] if self.title else []
        lines.append("  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        for r in body:
            # numbers read best right-aligned, words left-aligned
            cells = [
                c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths, strict=True)
            ]
            lines.append("  ".join(cells).rstrip())
        lines += [f"{_superscript([n])} {text}" for n, text in enumerate(notes, start=1)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        heads, body, marks, notes = self._layout()
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        pad = "padding:0.15em 0.8em"
        head = "".join(f'<th style="{pad}">{html.escape(keep_with_unit(h))}</th>' for h in heads)
        # a figure stays on one line with its unit: a value on one line, and in words (a
        # column's title too) a no-break space between number and unit ("needs 48 GB")
        rows = "".join(
            "<tr>"
            + "".join(
                f'<td style="{pad};{_align(c)}">{html.escape(keep_with_unit(c))}{_sup_html(m)}</td>'
                for c, m in zip(r, ms, strict=True)
            )
            + "</tr>"
            for r, ms in zip(body, marks, strict=True)
        )
        # its own scroll container, so a table wider than the page scrolls instead of spilling
        table = (
            f'<table class="gpulab-table" data-key-columns="{self.key_columns}">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        )
        # a region a keyboard can focus and scroll, named by the table's title (WCAG: a scrollable
        # region must be reachable without a mouse)
        name = html.escape(self.title or "table", quote=True)
        # the notes sit outside the scroll box, so they wrap to the page's width
        below = "".join(
            f'<p class="gpulab-table-note" style="margin:0.2em 0;font-size:0.9em">'
            f"<sup>{n}</sup> {html.escape(text)}</p>"
            for n, text in enumerate(notes, start=1)
        )
        return (
            f'<div class="gpulab-table-wrap" role="region" aria-label="{name}" tabindex="0" '
            f'style="max-width:100%;overflow-x:auto">{table}</div>{below}'
        )


def _align(cell: str) -> str:
    """A cell's style: a value right-aligned on one line, words left-aligned and wrapping."""
    return "text-align:right;white-space:nowrap" if _numeric(cell) else "text-align:left"


def _note_texts(note: Any) -> list[str]:
    """A row's or a cell's notes as a list of non-empty strings."""
    if not note:
        return []
    return [note] if isinstance(note, str) else [n for n in note if n]


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _superscript(numbers: list[int]) -> str:
    """Note markers for plain text: [1, 3] -> '¹˒³'."""
    return "˒".join(str(n).translate(_SUPERSCRIPT) for n in numbers)


def _sup_html(numbers: list[int]) -> str:
    """Note markers for HTML: <sup>1,3</sup>."""
    return f"<sup>{','.join(map(str, numbers))}</sup>" if numbers else ""


def formatter(spec: str, column: str = "") -> Callable[[Any], str]:
    """The function that shows one value as the format string `spec` says (module docstring)."""
    if not isinstance(spec, str):
        raise TypeError(
            f"formats[{column!r}] is {type(spec).__name__}; give a format string "
            "such as '.1f', '.0%' or '.2f GiB'"
        )
    spec, bar, missing = spec.partition("|")
    missing = missing if bar else "-"  # ".1f|" leaves a missing value's cell empty
    if spec in NAMED_FORMATS:
        named = NAMED_FORMATS[spec]
        return lambda v: missing if v is None else named(v)
    number, _, unit = spec.partition(" ")
    scale = SCALED_UNITS.get(unit, 1.0)
    suffix = "" if not unit else (unit if unit in ("x", "%") else f" {unit}")
    try:
        format(1.5, number)
    except ValueError:
        raise ValueError(
            f"formats[{column!r}]={spec!r}: {number!r} is not a Python format spec; "
            f"use one such as '.1f', ',.0f' or '.0%', optionally with a unit "
            f"({', '.join(SCALED_UNITS)} scale the value) or one of "
            f"{', '.join(NAMED_FORMATS)}"
        ) from None

    def show(value: Any) -> str:
        if value is None:
            return missing
        if isinstance(value, str):  # a row may put words where the column has numbers
            return value
        return format(value / scale, number) + suffix

    return show


_FIELD_NAME = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")  # snake_case, as a dataclass field
_NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(e[-+]?\d+)?(%|x)?( [A-Za-z/%]+)?$")


def _numeric(text: str) -> bool:
    """A number, optionally with % or x, and at most one unit word ('66.9 GFLOP/s'), and markers."""
    return bool(_NUMBER.match(text.strip().rstrip("⁰¹²³⁴⁵⁶⁷⁸⁹˒")))
