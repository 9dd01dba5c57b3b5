"""The fact-check's one rubric: each claim names the clause that decided its verdict (issue #14)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from gpulab import factcheck
from gpulab.core.errors import GpulabConfigError
from tests.helpers import raw_fact_check

NOTEBOOK = Path(__file__).resolve().parents[2] / "book" / "appendix" / "fact_check.ipynb"


_raw = raw_fact_check


@pytest.fixture(scope="module")
def claims():
    return {c.id: c for c in factcheck.load()}


def test_the_rubric_has_a_clause_set_for_every_verdict_and_ids_carry_their_verdict():
    assert set(factcheck.RUBRIC) == set(factcheck.VERDICTS)
    for verdict, clauses in factcheck.RUBRIC.items():
        assert clauses, verdict
        for cid, wording in clauses:
            assert cid.split(".")[0] == verdict.replace(" ", "-") and wording.strip()
            assert factcheck.RUBRIC_CLAUSES[cid] == verdict


def test_every_claim_names_a_clause_of_its_own_verdict_and_says_why(claims):
    for c in claims.values():
        assert factcheck.RUBRIC_CLAUSES[c.rubric_clause] == c.verdict, c.id
        assert c.rubric_clause.startswith(c.verdict.replace(" ", "-") + "."), c.id
        assert c.rubric_why.strip() and len(c.rubric_why) <= 300, c.id


# The cases the issue says the rubric settles differently from the first grading.
SETTLED = {
    10: "misleading",
    42: "misleading",
    51: "wrong",
    54: "wrong",
    68: "wrong",
    79: "wrong",
    86: "wrong",
    96: "misleading",
    97: "misleading",
    98: "misleading",
    103: "misleading",
}


@pytest.mark.parametrize("cid, verdict", sorted(SETTLED.items()))
def test_the_cases_the_issue_names_have_the_rubrics_verdict(claims, cid, verdict):
    assert claims[cid].verdict == verdict


def test_claims_made_checkable_carry_a_derivation_not_a_reason(claims):
    """42, 51, 54, 68, 79 were "not checkable": now arithmetic or a cited source settles each."""
    for cid in (42, 51, 54, 68, 79):
        c = claims[cid]
        assert c.verdict != "not checkable" and not c.reason, cid
        assert c.computed_name or "http" in c.derivation["source"], cid
    for cid in (42, 51, 54, 79):
        assert "http" in factcheck.rendered(claims[cid])["correct_value"], cid  # the source's link


def test_split_claims_are_graded_by_their_false_part(claims):
    """One part true and one false is misleading (10, 103), never correct."""
    assert claims[10].rubric_clause == claims[103].rubric_clause == "misleading.part-false"
    assert all(
        c.verdict != "correct" or c.rubric_clause == "correct.all-parts-hold"
        for c in claims.values()
    )


def _entry(data: dict, cid: int) -> dict:
    return next(e for e in data["claims"] if e["id"] == cid)


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"rubric_clause": "correct.all-parts-hold"},
            [
                "claim 2",
                "'rubric_clause'",
                "decides the verdict 'correct'",
                "wrong.false-any-reading",
            ],
        ),
        ({"rubric_clause": "wrong.because"}, ["claim 2", "'rubric_clause'", "not a rubric clause"]),
        ({"rubric_clause": ["wrong.false-any-reading"]}, ["claim 2", "'rubric_clause'"]),
        ({"rubric_why": "  "}, ["claim 2", "'rubric_why'", "one sentence"]),
        ({"rubric_why": "x" * 301}, ["claim 2", "'rubric_why'", "at most 300"]),
    ],
)
def test_a_bad_rubric_field_names_the_claim_and_the_field(change, words):
    data = copy.deepcopy(_raw())
    _entry(data, 2).update(change)
    with pytest.raises(GpulabConfigError) as err:
        factcheck.validate(data)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("field", ["rubric_clause", "rubric_why"])
def test_the_rubric_fields_are_required(field):
    data = copy.deepcopy(_raw())
    del _entry(data, 7)[field]
    with pytest.raises(GpulabConfigError, match=f"claim 7, field '{field}': is missing"):
        factcheck.validate(data)


def _cell(nb: dict, cell_id: str) -> str:
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    return "".join(cell["source"])


def test_the_appendix_opens_with_the_rubric_in_plain_commonmark():
    """Right after the title, the rubric as code has it, with no MyST role or directive in it."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert nb["cells"][1].get("id") == "rubric"
    text = _cell(nb, "rubric")
    assert factcheck.rubric_markdown() in text
    for verdict, clauses in factcheck.RUBRIC.items():
        assert f"**{verdict}**" in text
        assert all(wording in text and cid in text for cid, wording in clauses)
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert not re.search(r"\{[\w:-]+\}`", markdown), "a MyST role in a notebook's Markdown"
    assert not re.search(r"^(```|:::)\s*\{", markdown, re.M), (
        "a MyST directive in a notebook's Markdown"
    )


def test_every_claim_keeps_its_anchor_and_shows_its_clause(claims):
    md = factcheck.markdown(claims.values())
    for c in claims.values():
        assert f'<a id="{c.anchor}"></a>' in md and c.anchor == f"claim-{c.id}"
    assert md.count("`misleading.part-false`") == sum(
        c.rubric_clause == "misleading.part-false" for c in claims.values()
    )
