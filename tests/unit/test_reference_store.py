"""The nbval references' comparison explains a changed output (tools/execution/references)."""

from __future__ import annotations

import json

from tools.execution import references


def test_a_changed_text_output_is_explained_line_by_line(tmp_path):
    """nbval puts a text diff in its traceback as a list of lines; the explanation is text."""
    source = tmp_path / "nb.ipynb"
    cell = {
        "cell_type": "code",
        "id": "c1",
        "metadata": {"tags": ["nbval-check-output"]},
        "source": ["print('a')"],
        "outputs": [],
        "execution_count": None,
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    source.write_text(json.dumps(notebook), encoding="utf-8")
    store = tmp_path / "refs.json"
    old = {"name": "stdout", "output_type": "stream", "text": "76.3 tok/s\nthe end\n"}
    new = {"name": "stdout", "output_type": "stream", "text": "74.8 tok/s\nthe end\n"}
    store.write_text(json.dumps({"c1": [old]}), encoding="utf-8")
    executed = tmp_path / "ran.ipynb"
    executed.write_text(json.dumps(dict(notebook, cells=[dict(cell, outputs=[new])])), "utf-8")
    (failure,) = references.compare(source, executed, store)
    assert failure.startswith("cell c1 (`print('a')`):")
    assert "76.3 tok/s" in failure and "74.8 tok/s" in failure


def test_the_explanation_flattens_lists():
    assert references.explain(["first", ["- a\n", "+ b\n"]]) == "first\n  - a\n  + b"


def test_a_table_split_over_two_stream_messages_is_the_same_output(tmp_path):
    """A busy kernel may flush stdout in the middle of a print loop: one text, two messages."""
    whole = [{"name": "stdout", "output_type": "stream", "text": "650 W: NOT ok\n  sustained\n"}]
    split = [
        {"name": "stdout", "output_type": "stream", "text": "650 W: NOT ok\n"},
        {"name": "stdout", "output_type": "stream", "text": ["  sustained\n"]},
    ]
    assert references.coalesce_streams(split) == whole
    errors = [{"name": "stderr", "output_type": "stream", "text": "warning\n"}]
    assert references.coalesce_streams(split + errors) == whole + errors
