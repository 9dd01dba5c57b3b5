"""The fact-check's one rubric: a claim's parts give its verdict and clause (issues #14, #27).

Each entry stores, for each part of its claim, whether it holds, whether a reader acts on it and
the conditions it leaves unstated; gpulab.factcheck_rubric.derive gives the verdict and clause
from those, with one precedence. The hand-made cases below are the oracle for derive: each
states, in the test, the verdict the rubric's wording gives a claim of that shape.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from gpulab import factcheck
from gpulab.core.errors import GpulabConfigError
from gpulab.course.factcheck_rubric import Part, derive
from tests.helpers import raw_fact_check

NOTEBOOK = Path(__file__).resolve().parents[2] / "book" / "appendix" / "fact_check.ipynb"


_raw = raw_fact_check


@pytest.fixture(scope="module")
def claims():
    return {c.id: c for c in factcheck.load()}


def _entry(data: dict, cid: int) -> dict:
    return next(e for e in data["claims"] if e["id"] == cid)


def test_the_rubric_has_a_clause_set_for_every_verdict_and_ids_carry_their_verdict():
    assert set(factcheck.RUBRIC) == set(factcheck.VERDICTS)
    for verdict, clauses in factcheck.RUBRIC.items():
        assert clauses, verdict
        for cid, wording in clauses:
            assert cid.split(".")[0] == verdict.replace(" ", "-") and wording.strip()
            assert factcheck.RUBRIC_CLAUSES[cid] == verdict
    # shown in the order derive tries them: wrong first, correct last
    assert list(factcheck.RUBRIC) == ["wrong", "misleading", "not checkable", "correct"]


def test_every_claim_names_a_clause_of_its_own_verdict_and_says_why(claims):
    for c in claims.values():
        assert factcheck.RUBRIC_CLAUSES[c.rubric_clause] == c.verdict, c.id
        assert c.rubric_clause.startswith(c.verdict.replace(" ", "-") + "."), c.id
        assert c.rubric_why.strip() and len(c.rubric_why) <= 300, c.id


# ---------------------------------------------------------------- derive, on hand-made claims

T, F, N = True, False, None


def parts(*spec: tuple) -> tuple[Part, ...]:
    """Parts from (holds, acted_on) or (holds, acted_on, unstated conditions)."""
    return tuple(
        Part(f"part {i}", s[0], s[1], tuple(s[2]) if len(s) > 2 else ()) for i, s in enumerate(spec)
    )


@pytest.mark.parametrize(
    "spec, expected",
    [
        # every part false, acted on or not
        (((F, T),), ("wrong", "wrong.false-any-reading")),
        (((F, F), (F, T)), ("wrong", "wrong.false-any-reading")),
        # claim 11's shape: a true half and a false half, both acted on -> the false one decides
        (((T, T), (F, T)), ("wrong", "wrong.actionable-part-false")),
        # claim 103's shape: a true half nobody acts on, a false half a reader acts on
        (((T, F), (F, T)), ("wrong", "wrong.actionable-part-false")),
        # a false part acted on beats a true part with unstated conditions
        (((T, T, ["one card"]), (F, T)), ("wrong", "wrong.actionable-part-false")),
        # and an unsettled part: one false part acted on is enough
        (((N, T), (F, T)), ("wrong", "wrong.actionable-part-false")),
        # a false part no reader acts on beside a true one
        (((T, T), (F, F)), ("misleading", "misleading.part-false")),
        # part-false comes before unstated conditions, and before an unsettled acted-on part
        (((T, T, ["one card"]), (F, F)), ("misleading", "misleading.part-false")),
        (((T, F), (F, F), (N, T)), ("misleading", "misleading.part-false")),
        # true only under a condition it does not state (a ratio for some cards)
        (((T, T, ["the card"]),), ("misleading", "misleading.unstated-conditions")),
        (((T, T), (T, F, ["the precision"])), ("misleading", "misleading.unstated-conditions")),
        (((T, T, ["the card"]), (N, T)), ("misleading", "misleading.unstated-conditions")),
        # nothing settles the part a reader acts on
        (((N, T),), ("not checkable", "not-checkable.no-source")),
        (((T, T), (N, T)), ("not checkable", "not-checkable.no-source")),
        (((N, F),), ("not checkable", "not-checkable.no-source")),
        (((F, F), (N, T)), ("not checkable", "not-checkable.no-source")),
        # every part holds; an unsettled aside no reader acts on is set aside
        (((T, T),), ("correct", "correct.all-parts-hold")),
        (((T, F), (T, T)), ("correct", "correct.all-parts-hold")),
        (((T, T), (N, F)), ("correct", "correct.all-parts-hold")),
    ],
)
def test_derive_gives_each_clause_with_wrong_before_misleading_before_correct(spec, expected):
    assert derive(parts(*spec)) == expected


def test_every_clause_is_reachable_from_some_parts():
    shapes = [((F, T),), ((T, T), (F, T)), ((T, T), (F, F)), ((T, T, ["x"]),), ((N, T),), ((T, T),)]
    assert {derive(parts(*s))[1] for s in shapes} == set(factcheck.RUBRIC_CLAUSES)


def test_derive_refuses_no_parts_and_a_part_of_the_wrong_kind():
    with pytest.raises(GpulabConfigError, match="parts"):
        derive(())
    with pytest.raises(GpulabConfigError, match="holds"):
        Part("x", "yes", True)  # type: ignore[arg-type]
    with pytest.raises(GpulabConfigError, match="acted_on"):
        Part("x", True, 1)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the stored entries


def test_every_entrys_stored_verdict_and_clause_are_the_ones_its_parts_give():
    """Read from the raw data file, not through the loader that enforces it."""
    for entry in _raw()["claims"]:
        got = derive(
            tuple(
                Part(p["part"], p["holds"], p["acted_on"], tuple(p["unstated"]))
                for p in entry["parts"]
            )
        )
        assert got == (entry["verdict"], entry["rubric_clause"]), entry["id"]


# The cases issue #27 names, and those issue #14 settled that the rubric still settles so.
SETTLED = {
    11: ("wrong", "wrong.actionable-part-false"),  # a true half, a false half a reader acts on
    103: ("wrong", "wrong.actionable-part-false"),  # the same shape, the same verdict
    117: ("misleading", "misleading.unstated-conditions"),  # 5-10x holds for some cards
    104: ("misleading", "misleading.unstated-conditions"),
    109: ("misleading", "misleading.unstated-conditions"),
    45: ("misleading", "misleading.unstated-conditions"),  # Ollama's automatic split
    126: ("misleading", "misleading.unstated-conditions"),  # the Windows driver's spill
    118: ("misleading", "misleading.unstated-conditions"),  # the documents' length unstated
    42: ("misleading", "misleading.unstated-conditions"),
    51: ("wrong", "wrong.false-any-reading"),
    54: ("wrong", "wrong.false-any-reading"),
    79: ("wrong", "wrong.false-any-reading"),
    96: ("misleading", "misleading.unstated-conditions"),
    97: ("misleading", "misleading.unstated-conditions"),
    98: ("misleading", "misleading.unstated-conditions"),
}


@pytest.mark.parametrize("cid, expected", sorted(SETTLED.items()))
def test_the_cases_the_issues_name_have_the_rubrics_verdict(claims, cid, expected):
    assert (claims[cid].verdict, claims[cid].rubric_clause) == expected


def test_claims_11_and_103_share_a_shape_and_a_verdict(claims):
    """Each has a part that holds and a false part a reader acts on."""
    for cid in (11, 103):
        ps = claims[cid].parts
        assert any(p.holds is True for p in ps), cid
        assert any(p.holds is False and p.acted_on for p in ps), cid
    assert claims[11].verdict == claims[103].verdict == "wrong"


def test_a_ratio_for_some_cards_is_misleading_and_states_its_range(claims):
    """117, 104, 109, 102: the entry's computed range spans both sides of what the claim says."""
    for cid in (102, 104, 109, 117):
        c = claims[cid]
        assert c.verdict == "misleading" and any(p.unstated for p in c.parts), cid
        value = factcheck.rendered(c)["correct_value"]
        assert re.search(r"\d[\d.]*x?\s*(?:\(|–|to )", value), (cid, value)  # a range, lo to hi


def test_the_claims_read_under_a_default_name_their_reading_on_the_page(claims):
    for cid in (45, 126):
        assert "Ollama" in claims[cid].reading and "Windows driver" in claims[cid].reading
    for cid in (89, 109, 117):
        assert "two memory channels" in claims[cid].reading, cid
    md = factcheck.markdown([claims[45]])
    assert f"- **Reading:** {claims[45].reading}" in md
    assert "- **解读：** " in factcheck.markdown([claims[45]], lang="zh_CN")
    assert "Reading" not in factcheck.markdown([claims[4]])  # only where a default decides


def test_claims_made_checkable_carry_a_derivation_not_a_reason(claims):
    """42, 51, 54, 68, 79 were "not checkable": now arithmetic or a cited source settles each."""
    for cid in (42, 51, 54, 68, 79):
        c = claims[cid]
        assert c.verdict != "not checkable" and not c.reason, cid
        assert c.computed_name or "http" in c.derivation["source"], cid
    for cid in (42, 51, 54, 79):
        assert "http" in factcheck.rendered(claims[cid])["correct_value"], cid  # the source's link


def test_no_verdict_is_correct_with_a_false_part_or_an_unstated_condition(claims):
    for c in claims.values():
        if c.verdict == "correct":
            assert all(p.holds is not False and not p.unstated for p in c.parts), c.id
            assert all(p.holds is True for p in c.parts if p.acted_on), c.id


# ---------------------------------------------------------------- validation


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
        # a verdict, or a clause, that the parts do not give
        (
            {"verdict": "misleading", "rubric_clause": "misleading.part-false"},
            ["claim 2", "'verdict'", "parts give 'wrong'", "wrong.false-any-reading"],
        ),
        (
            {"rubric_clause": "wrong.actionable-part-false"},
            ["claim 2", "'rubric_clause'", "parts give 'wrong' by 'wrong.false-any-reading'"],
        ),
        ({"parts": []}, ["claim 2", "'parts'", "non-empty list"]),
        ({"parts": "all false"}, ["claim 2", "'parts'"]),
        ({"parts": ["x"]}, ["claim 2", "'parts[0]'", "must be an object"]),
        ({"reading": " "}, ["claim 2", "'reading'", "non-empty"]),
    ],
)
def test_a_bad_rubric_field_names_the_claim_and_the_field(change, words):
    data = copy.deepcopy(_raw())
    _entry(data, 2).update(change)
    with pytest.raises(GpulabConfigError) as err:
        factcheck.validate(data)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"holds": "no"}, "parts[0].holds", ["true, false or null"]),
        ({"holds": 0}, "parts[0].holds", ["true, false or null"]),
        ({"acted_on": "yes"}, "parts[0].acted_on", ["true or false"]),
        ({"unstated": "the card"}, "parts[0].unstated", ["list"]),
        ({"unstated": [""]}, "parts[0].unstated[0]", ["non-empty"]),
        ({"unstated": ["the card"]}, "parts[0].unstated", ["only a part that holds"]),
        ({"part": ""}, "parts[0].part", ["non-empty"]),
        ({"why": "x"}, "parts[0].why", ["not a field of a part"]),
    ],
)
def test_a_bad_part_names_the_claim_and_the_part_field(change, field, words):
    data = copy.deepcopy(_raw())
    _entry(data, 2)["parts"][0].update(change)  # claim 2's one part: false, acted on
    with pytest.raises(GpulabConfigError) as err:
        factcheck.validate(data)
    assert f"claim 2, field '{field}'" in str(err.value)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("key", ["part", "holds", "acted_on", "unstated"])
def test_every_field_of_a_part_is_required(key):
    data = copy.deepcopy(_raw())
    del _entry(data, 2)["parts"][0][key]
    with pytest.raises(GpulabConfigError, match=rf"claim 2, field 'parts\[0\]\.{key}': is missing"):
        factcheck.validate(data)


@pytest.mark.parametrize("field", ["rubric_clause", "rubric_why", "parts"])
def test_the_rubric_fields_are_required(field):
    data = copy.deepcopy(_raw())
    del _entry(data, 7)[field]
    with pytest.raises(GpulabConfigError, match=f"claim 7, field '{field}': is missing"):
        factcheck.validate(data)


# ---------------------------------------------------------------- the page


def _cell(nb: dict, cell_id: str) -> str:
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    return "".join(cell["source"])


def test_the_appendix_renders_the_rubric_from_the_library_in_its_edition():
    """A heading, then a cell that prints factcheck.rubric_markdown(lang): both editions'
    rubric comes from the library, with no copy typed into the page."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    ids = [c.get("id") for c in nb["cells"]]
    assert ids.index("rubric") + 1 == ids.index("rubric-list")
    assert _cell(nb, "rubric").startswith("## The rubric")
    assert "factcheck.rubric_markdown(lang)" in _cell(nb, "rubric-list")
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for _, clauses in factcheck.RUBRIC.items():
        assert not any(wording in markdown for _, wording in clauses)  # not typed a second time
    assert not re.search(r"\{[\w:-]+\}`", markdown), "a MyST role in a notebook's Markdown"
    assert not re.search(r"^(```|:::)\s*\{", markdown, re.M), (
        "a MyST directive in a notebook's Markdown"
    )


def test_the_rubric_states_its_clauses_precedence_and_reading_in_both_editions():
    for lang in ("en", "zh_CN"):
        text = factcheck.rubric_markdown(lang)
        for cid in factcheck.RUBRIC_CLAUSES:
            # each clause in words, never by its id, which names nothing a reader knows
            assert factcheck.clause_wording(cid, lang) in text and cid not in text, (lang, cid)
        lines = text.splitlines()
        order = [
            next(i for i, line in enumerate(lines) if factcheck.clause_wording(cid, lang) in line)
            for cid in (
                "wrong.false-any-reading",
                "misleading.part-false",
                "not-checkable.no-source",
                "correct.all-parts-hold",
            )
        ]
        assert order == sorted(order), lang
    english = factcheck.rubric_markdown()
    for rule in factcheck.RULES.values():
        assert rule in english
    assert "wrong before misleading" in english and "Ollama" in english


def test_every_claim_keeps_its_anchor_and_shows_its_clause(claims):
    md = factcheck.markdown(claims.values())
    for c in claims.values():
        assert f'<a id="{c.anchor}"></a>' in md and c.anchor == f"claim-{c.id}"
    wording = factcheck.clause_wording("misleading.part-false")
    assert md.count(f"misleading, since {wording}.") == sum(
        c.rubric_clause == "misleading.part-false" for c in claims.values()
    )
    assert not any(cid in md for cid in factcheck.RUBRIC_CLAUSES)  # no id a reader cannot use
