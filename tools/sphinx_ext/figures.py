"""The ``{fig}`` role: a page pastes a figure that gpulab computes, by its name.

    {fig}`llama70_q4km_gb:.1f`    the figure, formatted by the spec after the ":"
    {fig}`gpu_count`              an int or a str needs no spec

The value comes from ``gpulab.course.figures.all_figures()`` when the site is built, through
``tools/page_figures.resolve``, the resolver the tests use too; a name or a spec that does not
resolve fails the build (-W). The pasted text is a ``<span class="pasted-text" data-fig=...>``,
so that a test can read back every figure of both editions by name, and so that the Chinese
edition renders the few words figures carry ("fits") in Chinese (tools/sphinx_ext/i18n.py).
Registered as a local extension in ``_config.yml``.
"""

from __future__ import annotations

from docutils import nodes


class figure_value(nodes.inline):  # noqa: N801 (docutils names node classes in lowercase)
    """A pasted figure; its "fig" attribute holds the role's text."""


def fig_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """{fig}`name:spec`: the figure's value, formatted as the spec says."""
    from tools.checks import page_figures

    figure, spec = page_figures.split(text)
    try:
        pasted = page_figures.resolve(figure, spec)
    except page_figures.FigureError as exc:
        msg = inliner.reporter.error(f"{rawtext}: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    node = figure_value(rawtext, pasted, classes=["pasted-text"])
    node["fig"] = text
    return [node], []


def _visit_html(self, node: figure_value) -> None:
    self.body.append(self.starttag(node, "span", "", **{"data-fig": node["fig"]}))


def _depart_html(self, node: figure_value) -> None:
    self.body.append("</span>")


def setup(app):
    """Register the role and how HTML writes its node."""
    app.add_node(figure_value, html=(_visit_html, _depart_html))
    app.add_role("fig", fig_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
