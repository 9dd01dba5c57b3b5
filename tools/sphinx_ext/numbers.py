"""Numbers on the site's pages: exercises counted per page, and a figure kept with its unit.

- sphinx-exercise numbers its ``{exercise}`` blocks through Sphinx's figure numbering, which
  counts across the whole book when no toctree is numbered ("Exercise 47" on chapter 7's
  page). Each page's exercises are renumbered 1, 2, 3 ... in their order on the page, which is
  the number the notebook's own heading gives (``### Exercise 2: ...``, checked by
  ``tools.authoring.exercises``). The numbers are changed where Sphinx keeps them, once all pages
  are read, so an exercise's title, its solution's title and every reference to it agree.
- In the pages' prose and tables a number and its unit ("48 GB", "35 tokens/s") are joined by a
  no-break space, so a narrow column never puts the unit on the next line. Code, math and raw
  HTML are left as they are (a gpulab table's HTML does the same itself, gpulab.ui.tables).
  The catalogues are untouched: the space is changed after translation, in both editions.

Registered as a local extension in ``_config.yml``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from gpulab.core.units import keep_with_unit  # the rule gpulab's tables follow too

EXERCISE = "exercise"  # sphinx-exercise's figure type
# text a reader copies or a renderer parses keeps its ordinary spaces
VERBATIM = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.comment)


def number_exercises_per_page(app, env) -> list[str]:
    """Renumber each page's exercises 1, 2, 3 ... in their order on the page (Sphinx gave them
    book-wide numbers in reading order, so the order within a page is kept)."""
    for numbers in env.toc_fignumbers.values():
        exercises = numbers.get(EXERCISE, {})
        for n, ident in enumerate(sorted(exercises, key=exercises.get), start=1):
            exercises[ident] = (n,)
    return []  # no page needs to be read again


class KeepNumbersWithUnits(SphinxPostTransform):
    """Join each number and its unit with a no-break space, in a text node or across two (a
    glued number, then " GB")."""

    default_priority = 200  # after myst-nb pastes the glued numbers (5) and their words (6)

    def run(self, **kwargs) -> None:
        _keep_units(self.document, "")


def _keep_units(element: nodes.Element, previous: str) -> str:
    """Join numbers to units in `element`'s text, in reading order; `previous` is the text read
    before it (so "74.8" + " GB" is seen whole). Returns the last text read."""
    for i, child in enumerate(element.children):
        if isinstance(child, VERBATIM):
            previous = ""
        elif isinstance(child, nodes.Text):
            before = previous[-1:]
            kept = keep_with_unit(before + child)[len(before) :]
            if kept != child:
                # through children, not Text.parent: a transform that sets .children leaves
                # its Text nodes without a parent
                element.children[i] = nodes.Text(kept)
                element.children[i].parent = element
            previous = kept
        elif isinstance(child, nodes.Element):
            previous = _keep_units(child, previous)
    return previous


def setup(app):
    """Register the per-page exercise numbers and the no-break space before units."""
    # after Sphinx's toctree collector has numbered the figures (priority 500)
    app.connect("env-get-updated", number_exercises_per_page, priority=900)
    app.add_post_transform(KeepNumbersWithUnits)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
