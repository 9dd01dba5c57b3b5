"""Sphinx roles that cite the fact-check's claims by id, so a page never retypes one.

    {claim}`42`      the article's claim, in English (in a translated edition, the article's
                     own Chinese words, labelled in its language), linked to its entry in the
                     appendix
    {verdict}`42`    the claim's verdict, linked the same way; {verdict}`39,50` for claims
                     that share one (a build error if they do not)

Both read ``gpulab/data/fact_check.json`` through ``gpulab.course.factcheck``, the one registry
of verdicts, so a page cannot say another verdict than the appendix. Registered as a local
extension in ``_config.yml``.
"""

from __future__ import annotations

from functools import lru_cache

from docutils import nodes

APPENDIX = "book/appendix/fact_check"  # the docname whose entries carry id="claim-<id>"


@lru_cache(maxsize=1)
def _claims() -> dict:
    from gpulab.course import factcheck

    return {c.id: c for c in factcheck.load()}


def _ids(text: str) -> list[int]:
    """The claim ids of a role's text, "42" or "39,50"; ValueError names what is wrong."""
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) not in _claims():
            raise ValueError(f"{part!r} is not a claim id of fact_check.json")
        ids.append(int(part))
    return ids


def _link(claim_id: int, children: list[nodes.Node], classes: list[str]) -> nodes.reference:
    """A reference to the claim's appendix entry; its URI is set once the page's place is known."""
    ref = nodes.reference("", "", *children, internal=True, classes=classes)
    ref["gpulab_claim"] = claim_id
    return ref


def _error(inliner, lineno: int, rawtext: str, message: str):
    msg = inliner.reporter.error(f"{rawtext}: {message}", line=lineno)
    return [inliner.problematic(rawtext, rawtext, msg)], [msg]


def _language(inliner) -> str | None:
    """The translated edition being built (a registry code), or None in the source language's."""
    from gpulab.reference import languages

    language = str(inliner.document.settings.env.config.language or "")
    return language if language in languages.translated() else None


def claim_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """{claim}`N`: "the claim, in English" linked to its appendix entry; in a translated
    edition, the article's own Chinese words."""
    try:
        (claim_id,) = _ids(text)
    except ValueError as exc:
        return _error(inliner, lineno, rawtext, f"{exc} (one id per {{claim}})")
    claim, language = _claims()[claim_id], _language(inliner)
    if language:
        from gpulab.reference import languages

        label = languages.words(language, "site")["claim"].format(id=claim_id)
        quoted = nodes.inline("", f"\u201c{claim.quote}\u201d")
    else:
        quoted, label = nodes.inline("", f"\u201c{claim.claim_en}\u201d"), f" (claim {claim_id})"
    return [_link(claim_id, [quoted, nodes.inline("", label, classes=["claim-id"])], ["claim"])], []


def _verdict_name(verdict: str, inliner) -> str:
    """The verdict as the page's edition words it."""
    from gpulab.course import factcheck

    language = _language(inliner)
    return factcheck.verdict_name(verdict, language) if language else verdict


def verdict_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """{verdict}`N` or `N,M`: the registry's verdict, linked to the (first) claim's entry."""
    try:
        ids = _ids(text)
    except ValueError as exc:
        return _error(inliner, lineno, rawtext, str(exc))
    verdicts = {_claims()[i].verdict for i in ids}
    if len(verdicts) != 1:
        listed = ", ".join(f"{i}: {_claims()[i].verdict}" for i in ids)
        return _error(
            inliner,
            lineno,
            rawtext,
            f"these claims have different verdicts ({listed}); give each its own {{verdict}}",
        )
    (verdict,) = verdicts
    label = nodes.strong("", _verdict_name(verdict, inliner))
    return [_link(ids[0], [label], ["verdict", "verdict-" + verdict.replace(" ", "-")])], []


def _set_uris(app, doctree, docname) -> None:
    """Point each claim link at the appendix entry, relative to the page it is on."""
    for ref in doctree.findall(nodes.reference):
        if "gpulab_claim" in ref.attributes:
            uri = app.builder.get_relative_uri(docname, APPENDIX)
            ref["refuri"] = f"{uri}#claim-{ref['gpulab_claim']}"


def setup(app):
    """Register the two roles and the link resolver."""
    app.add_role("claim", claim_role)
    app.add_role("verdict", verdict_role)
    app.connect("doctree-resolved", _set_uris)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
