"""Site plumbing the themes leave out: no Thebe scripts, and the course's stylesheet.

Jupyter Book 1 always loads sphinx-thebe, whose configuration script lands twice on every
page ("Identifier 'THEBE_JS_URL' has already been declared") and points at unpkg.com. The
course launches notebooks in Colab or Jupyter, never in Thebe, and sends no request to a
third-party CDN (docs/design.md), so its scripts and stylesheet are dropped from every page.
Registered as a local extension in ``_config.yml``.
"""

from __future__ import annotations

STYLESHEET = "gpulab.css"  # copied into the site's static folder by tools/staging/stage.py
# the languages' font rules (tools/editions.language_css), written there by tools/staging/stage.py
LANGUAGE_STYLESHEET = "gpulab-languages.css"
# Noto Sans SC's @font-face rules, one per Unicode slice (tools/staging/stage.py copies it from npm)
CJK_FONT_STYLESHEET = "noto-sans-sc/index.css"


def is_thebe(asset) -> bool:
    """True for sphinx-thebe's script, stylesheet and inline configuration."""
    name = str(getattr(asset, "filename", "") or "")
    body = getattr(asset, "attributes", {}).get("body", "")
    return "thebe" in name.rsplit("/", 1)[-1] or "THEBE_JS_URL" in body


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not is_thebe(asset)]


def setup(app):
    """Add the course's stylesheets (own, languages', CJK font's) and drop Thebe from every page."""
    app.add_css_file(CJK_FONT_STYLESHEET)
    app.add_css_file(STYLESHEET)
    app.add_css_file(LANGUAGE_STYLESHEET)
    # after sphinx-thebe and the themes have added theirs
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
