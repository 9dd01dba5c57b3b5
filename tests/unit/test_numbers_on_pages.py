"""A number kept with its unit (gpulab.core.units.keep_with_unit) and exercises counted per page
(tools/sphinx_ext/numbers.py), each against examples written out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from docutils import nodes

from gpulab.core.units import keep_with_unit
from tools.sphinx_ext import numbers as sphinx_numbers

NBSP = "\u00a0"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("needs 24 GB at INT4", f"needs 24{NBSP}GB at INT4"),
        ("1,008 GB/s and 82.6 TFLOP/s", f"1,008{NBSP}GB/s and 82.6{NBSP}TFLOP/s"),
        (
            "35 tokens/s, 450 W, 4.2 ms, 12 s, 80 %",
            f"35{NBSP}tokens/s, 450{NBSP}W, 4.2{NBSP}ms, 12{NBSP}s, 80{NBSP}%",
        ),
        ("671.03 B parameters", f"671.03{NBSP}B parameters"),
        # not units: a count of things, a multiplication, a word that starts like a unit
        ("3 steps on 2 x RTX 4090, 8 Bytes, 5 GBps", "3 steps on 2 x RTX 4090, 8 Bytes, 5 GBps"),
    ],
)
def test_a_unit_is_joined_to_its_number(text, kept):
    assert keep_with_unit(text) == kept


def test_the_pages_keep_units_across_a_glued_number_but_not_in_code():
    """A glued number's unit in the next text node is joined too; code keeps its spaces."""
    doc = nodes.paragraph(
        "",
        "",
        nodes.inline("", "74.8", classes=["pasted-text"]),
        nodes.Text(" GB fit, "),
        nodes.literal("", "x = 2 GB"),
        nodes.Text(" 5 ms"),
    )
    sphinx_numbers.KeepNumbersWithUnits.run(SimpleNamespace(document=doc))
    assert doc.astext() == f"74.8{NBSP}GB fit, x = 2 GB 5{NBSP}ms"


def test_exercises_are_renumbered_per_page_in_their_order():
    """Book-wide numbers 8..11 on one page and 15, 16 on another become 1..4 and 1, 2."""
    env = SimpleNamespace(
        toc_fignumbers={
            "notebooks/01": {
                "exercise": {"b": (9,), "a": (8,), "d": (11,), "c": (10,)},
                "figure": {"f": (3,)},
            },
            "notebooks/02": {"exercise": {"y": (16,), "x": (15,)}},
            "book/intro": {},
        }
    )
    assert sphinx_numbers.number_exercises_per_page(None, env) == []
    assert env.toc_fignumbers["notebooks/01"]["exercise"] == {
        "a": (1,),
        "b": (2,),
        "c": (3,),
        "d": (4,),
    }
    assert env.toc_fignumbers["notebooks/01"]["figure"] == {"f": (3,)}  # other figure types stay
    assert env.toc_fignumbers["notebooks/02"]["exercise"] == {"x": (1,), "y": (2,)}
