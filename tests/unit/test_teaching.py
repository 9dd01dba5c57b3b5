"""The teaching checks (tools/checks/teaching.py): each one applied to every file TEACH_FIRST
lists, and each shown failing on a small synthetic notebook, lab or page."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from tools.authoring import learner_generator
from tools.checks import (
    answers,
    teaching,
    teaching_cells,
    teaching_labs,
    teaching_pages,
    teaching_report,
)

ROOT = Path(__file__).resolve().parents[2]
_IDS = itertools.count()
IMPORTS = "import torch\nfrom gpulab import budget, memory, models, predict, timing\n"


def md(source: str, tags=(), **gpulab) -> dict:
    meta = ({"tags": list(tags)} if tags else {}) | ({"gpulab": gpulab} if gpulab else {})
    return {"cell_type": "markdown", "id": f"m{next(_IDS)}", "metadata": meta, "source": source}


def code(source: str, tags=(), outputs=(), **gpulab) -> dict:
    cell = md(source, tags, **gpulab) | {"cell_type": "code", "id": f"c{next(_IDS)}"}
    return cell | {"execution_count": None, "outputs": list(outputs)}


def mech(source: str, name: str, library=(), tags=()) -> dict:
    return code(source, ["mechanism", *tags], mechanism=name, library=list(library))


def agree(source: str, name: str) -> dict:
    return code(source, ["agreement"], agrees=name)


def notebook(*cells: dict) -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [md("# Title"), code(IMPORTS), *cells],
    }


def printed(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


# --- every listed file passes every check -------------------------------------------------


def test_the_listed_files_exist_and_are_pages_notebooks_or_labs():
    for path in teaching.TEACH_FIRST:
        assert (ROOT / path).is_file(), path
        assert path.endswith((".md", ".ipynb")) and path.split("/")[0] in (
            "book",
            "notebooks",
            "labs",
        )
    assert len(set(teaching.TEACH_FIRST)) == len(teaching.TEACH_FIRST)


@pytest.mark.parametrize(
    "check", sorted(set(teaching.notebook_checks()) | set(teaching.page_checks()))
)
def test_every_listed_file_passes(check):
    """Each check on every file of TEACH_FIRST (none listed: nothing to fail)."""
    assert [p for path in teaching.TEACH_FIRST for p in teaching.check(path, only=check)] == []


def test_the_command_passes_on_the_listed_files(capsys):
    assert teaching.main([]) == 0
    assert "problem(s)" in capsys.readouterr().out


def test_opting_a_file_in_is_all_it_takes(tmp_path, monkeypatch, capsys):
    """A file listed in TEACH_FIRST gets every check: a notebook without mechanisms fails."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    path = "notebooks/01_x.ipynb"
    (tmp_path / path).write_text(json.dumps(notebook(code("x = 1"), code("y = 2"))))
    monkeypatch.setattr(teaching, "_root", lambda: tmp_path)
    monkeypatch.setattr(teaching, "TEACH_FIRST", (path, "book/missing.md"))
    assert teaching.main([]) == 1
    out = capsys.readouterr().out
    assert "0 verified mechanism cell(s)" in out and "book/missing.md: listed" in out


# --- main body and the 20-line limit ------------------------------------------------------


def test_the_main_body_leaves_out_set_up_parameters_removed_cells_and_exercise_solutions():
    nb = notebook(
        code("setup", ["colab-setup", "remove-cell"]),
        code("quick = False", ["parameters"]),
        code("hidden", ["remove-cell"]),
        code("x = 1"),
        code("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", ["solution"]),
        md("### Exercise 1: a", ["exercise"]),
        code("answer = 2\nassert answer", ["exercise-solution"]),
        code("### BEGIN SOLUTION\na = 3\n### END SOLUTION\nassert a", ["exercise-solution"]),
    )
    assert teaching_cells.main_body(nb) == [1, 5, 6, 9]


def test_a_main_body_cell_over_20_lines_fails():
    ok = notebook(code("\n".join(f"x{i} = {i}" for i in range(20))))
    assert teaching_cells.length_problems(ok, "nb") == []
    long = notebook(code("\n".join(f"x{i} = {i}" for i in range(20)) + "\n# and one more"))
    assert teaching_cells.length_problems(long, "nb") == [
        "nb: cell 2 has 21 lines; a main-body code cell has at most 20"
    ]


# --- mechanism cells ----------------------------------------------------------------------


def test_mechanism_metadata_must_have_the_spec_shape():
    good = notebook(mech("t = 2 * 3", "timing-loop", ["timing.benchmark"]))
    assert teaching_cells.metadata_problems(good, "nb") == []
    bad = notebook(
        mech("a = 1 + 1", "Timing Loop"),
        code("b = 1 + 1", ["mechanism"], mechanism="kv", library="memory.kv_cache_bytes"),
        mech("c = 1 + 1", "kv", ["kv_cache_bytes"]),
        code("d = 1 + 1", mechanism="no-tag", library=[]),
        md("text", ["mechanism"], mechanism="prose", library=[]),
    )
    found = "\n".join(teaching_cells.metadata_problems(bad, "nb"))
    assert "cell 2: gpulab.mechanism is 'Timing Loop'" in found
    assert "cell 3: gpulab.library is 'memory.kv_cache_bytes'" in found
    assert "cell 4: mechanism 'kv' is also cell 3's" in found
    assert "cell 4: gpulab.library is ['kv_cache_bytes']" in found
    assert "cell 5 declares gpulab.mechanism but lacks the 'mechanism' tag" in found
    assert "cell 6 is tagged 'mechanism' but is not a code cell" in found


@pytest.mark.parametrize(
    "source, why",
    [
        ("print('hello')", "holds no torch operation and no arithmetic"),
        ("kv = memory.kv_cache_bytes(spec, 4096, 1, 'bf16') * 2", "calls memory.kv_cache_bytes"),
        (
            "from gpulab.estimate import memory as m\nx = m.weight_bytes(s, 'q4') / 8",
            "gpulab's memory.weight_bytes",
        ),
        ("from gpulab.ui.tables import Table\nTable([{'a': 1 + 1}])", "gpulab's tables.Table"),
        ("x = 'a' + 'b'", "holds no torch operation and no arithmetic"),
    ],
)
def test_a_mechanism_cell_that_is_not_the_learners_mechanism_fails(source, why):
    nb = notebook(mech(source, "m"))
    found = teaching_cells.code_problems(nb, "nb")
    assert any(why in p for p in found), found
    assert teaching_cells.verified_mechanisms(nb) == []


@pytest.mark.parametrize(
    "source",
    [
        "a = torch.randn(64, 64)\nb = a.T.contiguous()",
        "weights = params * bits / 8",
        "spec = models.get('Llama-3-8B')\nkv = 2 * spec.n_layers * 4096",
        "cap = budget.allowance(dev)\nn = cap // 4",
        "total += step",
        "t = (stop - start) * 1e3\npredict.compare(my_ms, t, 'ms')",
    ],
)
def test_torch_operations_arithmetic_and_the_lookups_make_a_mechanism(source):
    nb = notebook(mech(source, "m"))
    assert teaching_cells.code_problems(nb, "nb") == []
    assert teaching_cells.verified_mechanisms(nb) == [2]


def test_mechanism_counts_half_the_main_body_two_in_notebook_00_one_in_lab_00():
    one = notebook(mech("a = 1 + 1", "a"), code("x = f()"), code("y = g()"))
    assert "it needs at least 2" in teaching_cells.count_problems(one, "notebooks/01_x.ipynb")[0]
    assert "it needs at least 2" in teaching_cells.count_problems(one, "labs/02_x_lab.ipynb")[0]
    assert "it needs at least 2" in teaching_cells.count_problems(one, "notebooks/00_x.ipynb")[0]
    assert teaching_cells.count_problems(one, "labs/00_x_lab.ipynb") == []
    two = notebook(mech("a = 1 + 1", "a"), mech("b = 2 * 2", "b"), code("x = f()"))
    assert teaching_cells.count_problems(two, "notebooks/01_x.ipynb") == []
    # a tagged cell that fails the code rule does not count
    fake = notebook(mech("a = 1 + 1", "a"), mech("print(f())", "b"), code("x = f()"))
    assert teaching_cells.count_problems(fake, "notebooks/03_x.ipynb")


def test_a_library_call_before_its_mechanism_fails():
    late = notebook(
        code("r = timing.benchmark(f)"),
        mech("t = (b - a) / 5", "timing-loop", ["timing.benchmark"]),
    )
    assert teaching_cells.order_problems(late, "nb") == [
        "nb: cell 2 calls timing.benchmark before cell 3 shows the mechanism 'timing-loop' it "
        "computes"
    ]
    after = notebook(
        mech("t = (b - a) / 5", "timing-loop", ["timing.benchmark"]),
        code("r = timing.benchmark(f)"),
    )
    assert teaching_cells.order_problems(after, "nb") == []


def test_each_mechanism_with_a_library_twin_needs_a_later_agreement_that_asserts():
    kv = mech("kv = 2 * layers * 4096", "kv-cache", ["memory.kv_cache_bytes"])
    good = notebook(
        kv, agree("assert kv == memory.kv_cache_bytes(spec, 4096, 1, 'bf16')", "kv-cache")
    )
    assert teaching_cells.agreement_problems(good, "nb") == []
    missing = notebook(kv)
    assert (
        "has no later cell tagged 'agreement'"
        in teaching_cells.agreement_problems(missing, "nb")[0]
    )
    no_assert = notebook(
        kv, agree("print(kv, memory.kv_cache_bytes(spec, 4096, 1, 'bf16'))", "kv-cache")
    )
    assert "must call one of" in teaching_cells.agreement_problems(no_assert, "nb")[0]
    no_call = notebook(kv, agree("assert kv == 42", "kv-cache"))
    assert "must call one of" in teaching_cells.agreement_problems(no_call, "nb")[0]
    before = notebook(agree("assert kv == memory.kv_cache_bytes(s, 1, 1, 'bf16')", "kv-cache"), kv)
    found = teaching_cells.agreement_problems(before, "nb")
    assert any("which no mechanism cell above it names" in p for p in found)
    # a mechanism with no library twin (a measured copy's bandwidth) needs none
    assert teaching_cells.agreement_problems(notebook(mech("bw = n / t", "copy-bw")), "nb") == []


def test_a_reveal_not_tagged_hide_output_fails():
    ask = code("my_gb = None  # your prediction, in GB")
    shown = notebook(ask, code("gb = 2 * 8"), code("predict.compare(my_gb, gb, 'GB')"))
    assert teaching_cells.reveal_problems(shown, "nb") == [
        "nb: cell 4 reveals the prediction 'my_gb' but is not tagged 'hide-output'"
    ]
    hidden = notebook(ask, code("predict.compare(my_gb, 16, 'GB')", ["hide-output"]))
    assert teaching_cells.reveal_problems(hidden, "nb") == []


# --- stubs and learner copies -------------------------------------------------------------

LEAKY_STUB = '''def bound(params, bytes_per_weight, bandwidth_gbs):
    """Tokens per second: bandwidth_gbs * 1e9 / (params * bytes_per_weight)."""
    ### BEGIN SOLUTION
    # HINT 1: divide the bytes one token reads into the bytes a second moves
    return bandwidth_gbs * 1e9 / (params * bytes_per_weight)
    ### END SOLUTION
'''
LEAKY_HINT = '''def scale_of(w):
    """The int8 scale of each row of w (a tensor), as a column; for [[2, -4]] it is [[4 / 127]]."""
    ### BEGIN SOLUTION
    # HINT 1: w.abs().amax(dim=1, keepdim=True) / 127
    # HINT 2: the largest magnitude of a row maps to 127
    return w.abs().amax(dim=1, keepdim=True) / 127
    ### END SOLUTION
'''
GOOD_STUB = '''def bound(params, bytes_per_weight, bandwidth_gbs):
    """The decode bound in tokens/s of a model of `params` weights, each `bytes_per_weight`
    bytes, read once per token from memory of `bandwidth_gbs` GB/s. For 8e9 weights of 2 bytes
    at 1000 GB/s it is 62.5 tokens/s."""
    ### BEGIN SOLUTION
    # HINT 1: how many bytes does one token read, and how many bytes move in a second?
    # HINT 3: bandwidth_gbs * 1e9 / (params * bytes_per_weight)
    return bandwidth_gbs * 1e9 / (params * bytes_per_weight)
    ### END SOLUTION
'''


def test_a_stub_whose_docstring_or_first_hint_gives_the_code_fails():
    found = teaching_labs.stub_problems(notebook(code(LEAKY_STUB, ["solution"])), "lab")
    assert found == [
        "lab: cell 2: the stub of bound: its docstring shares the code `bandwidth_gbs * 1e9 /` "
        "with the solution (a stub says what, not how)"
    ]
    found = teaching_labs.stub_problems(notebook(code(LEAKY_HINT, ["solution"])), "lab")
    assert len(found) == 1 and "its HINT 1 shares the code `w . abs (`" in found[0]
    # HINT 3, the line, may be specific; a worked case is not code
    assert teaching_labs.stub_problems(notebook(code(GOOD_STUB, ["solution"])), "lab") == []


def test_a_top_level_stub_is_specified_by_the_comment_above_it():
    leaky = (
        "# ratio = measured / peak\n### BEGIN SOLUTION\nratio = measured / peak\n### END SOLUTION"
    )
    found = teaching_labs.stub_problems(notebook(code(leaky, ["solution"])), "lab")
    assert found and "its docstring shares the code `ratio = measured /`" in found[0]
    fine = leaky.replace(
        "ratio = measured / peak\n#", "the share of the peak reached, 0 to 1\n#", 1
    )
    assert teaching_labs.stub_problems(notebook(code(fine, ["solution"])), "lab") == []


def test_the_token_runs_read_code_and_prose_alike():
    assert teaching_labs.code_tokens("x = a.b(1)  # c\ns = 'text'") == [
        "x",
        "=",
        "a",
        ".",
        "b",
        "(",
        "1",
        ")",
        "s",
        "=",
    ]
    assert teaching_labs.prose_tokens("it's a.b(1) here") == [
        "it",
        "s",
        "a",
        ".",
        "b",
        "(",
        "1",
        ")",
        "here",
    ]
    assert teaching_labs.shared_run("then a.b(1) done", "y = a.b(1)") == ["a", ".", "b", "("]
    assert teaching_labs.shared_run("a . b", "y = a.b(1)") == []  # three tokens are allowed


def _exercise_lab(with_markers: bool) -> dict:
    answer = (
        "### BEGIN SOLUTION\nshare = 3 / 4\n### END SOLUTION\nassert share == 0.75"
        if with_markers
        else "share = 3 / 4\nassert share == 0.75"
    )
    return notebook(
        code(GOOD_STUB, ["solution"]),
        md("## Exercises"),
        md("### Exercise 1: a share", ["exercise"], exercise="lab01-share"),
        md("#### Solution\n\nThree of four.", ["exercise-solution"]),
        code(answer, ["exercise-solution"]),
    )


@pytest.mark.parametrize("with_markers", [True, False])
def test_every_exercise_keeps_a_cell_to_fill_in_and_its_check_in_the_learner_copy(
    tmp_path, with_markers
):
    lab = _exercise_lab(with_markers)
    (tmp_path / "labs" / "learner").mkdir(parents=True)
    copy = learner_generator.make_learner_copy(lab, "labs/01_x_lab.ipynb")
    (tmp_path / "labs" / "learner" / "01_x_lab.ipynb").write_text(json.dumps(copy))
    found = teaching_labs.learner_copy_problems(lab, "labs/01_x_lab.ipynb", tmp_path)
    if with_markers:
        assert found == []
    else:
        assert [p.split(" has ")[1].split(" ")[1:3] for p in found] == [
            ["cell", "to"],
            ["check", "(an"],
        ]
    missing = teaching_labs.learner_copy_problems(lab, "labs/02_y_lab.ipynb", tmp_path)
    assert missing == ["labs/02_y_lab.ipynb: no learner copy at labs/learner/02_y_lab.ipynb"]


# --- machinery words ----------------------------------------------------------------------


def test_machinery_words_are_found_as_words_in_prose_only():
    words = teaching.MACHINERY_WORDS
    page = (
        "The Registry grades it.\nA figure from figures_ch01 and data/measured.\n"
        "```python\nregistry = load()\n```\nClock drifting is physics.\nSee claim 12 and "
        "{claim}`12`.\nThe CSV file.\n"
    )
    found = teaching_pages.machinery_problems(
        {"page": teaching_pages.page_prose(page)}, "p.md", words
    )
    hits = [p.split(": ")[1] for p in found]
    assert (
        hits == ["'Registry' names the course's machinery, not what a learner needs"][:1] + hits[1:]
    )
    assert [p.split("'")[1] for p in found] == [
        "Registry",
        "figures_ch",
        "data/measured",
        "claim 12",
        "CSV",
    ]
    assert [p.split(":")[1] for p in found] == ["1", "2", "2", "7", "8"]


def test_machinery_in_a_notebooks_markdown_and_a_learner_copys_stubs_fails(tmp_path, monkeypatch):
    lab = notebook(
        md("Pasted in, so it cannot drift."),
        code(GOOD_STUB.replace("GB/s", "GB/s (see the registry)", 1), ["solution"]),
    )
    (tmp_path / "labs" / "learner").mkdir(parents=True)
    copy = learner_generator.make_learner_copy(lab, "labs/01_x_lab.ipynb")
    (tmp_path / "labs" / "learner" / "01_x_lab.ipynb").write_text(json.dumps(copy))
    monkeypatch.setattr(teaching, "_root", lambda: tmp_path)
    found = teaching.notebook_machinery(lab, "labs/01_x_lab.ipynb")
    assert [p.split("'")[1] for p in found] == ["Pasted", "drift", "registry"]
    assert found[2].startswith("labs/learner/01_x_lab.ipynb: cell 4, line 3")


def test_comments_no_reader_sees_are_not_checked_for_machinery():
    text = "Shown.\n<!-- the registry\n     and the CSV -->\nThe registry.\n"
    assert teaching_pages.machinery_in(text, teaching.MACHINERY_WORDS) == [(4, "registry")]
    page = "% a MyST comment: the registry\nText.\n"
    assert teaching_pages.machinery_in(teaching_pages.page_prose(page), ("registry",)) == []


def test_a_chapter_notebook_opens_with_the_cpu_or_gpu_box():
    box = md("> **On a CPU** you will see a few GFLOP/s.\n>\n> **On a GPU** the same cell shows...")
    assert teaching_pages.box_problems(notebook(box), "notebooks/01_x.ipynb") == []
    plain = md("## What this machine has")
    assert (
        "is not the CPU or GPU box"
        in teaching_pages.box_problems(notebook(plain, box), "notebooks/01_x.ipynb")[0]
    )
    assert teaching_pages.box_problems(notebook(plain), "labs/01_x_lab.ipynb") == []


# --- pages --------------------------------------------------------------------------------

PAGE = """# Chapter 1

The idea {fig}`x`.

## What the articles said

{claim}`1` says so: {verdict}`1`.

### A detail

{claim}`2`.

## Exercises

{verdict}`3`
"""


def test_claims_and_verdicts_stay_in_what_the_articles_said():
    found = teaching_pages.role_problems(PAGE, "book/01_x.md")
    assert found == [
        "book/01_x.md:15: {verdict}`3` outside '## What the articles said' (in '## Exercises')"
    ]
    top = "# T\n\nAs {claim}`4` says.\n\n```text\n{claim}`5`\n```\n"
    assert teaching_pages.role_problems(top, "p.md") == [
        "p.md:3: {claim}`4` outside '## What the articles said' (in 'the top of the page')"
    ]


FIGURE = """# Chapter 1

```{{figure}} /_pictures/{name}.svg
:alt: {alt}
:name: fig-ch01

What to look at.
```
"""


def test_a_picture_must_be_registered_have_alt_text_and_a_chapter_page_must_show_one():
    good = FIGURE.format(name="ch01-threads", alt="Threads in warps, warps on SMs.")
    assert teaching_pages.picture_problems(good, "book/01_x.md", {"ch01-threads"}) == []
    unknown = FIGURE.format(name="ch01-nothing", alt="Something.")
    assert (
        "is not a registered picture"
        in teaching_pages.picture_problems(unknown, "book/01_x.md", {"ch01-threads"})[0]
    )
    no_alt = FIGURE.format(name="ch01-threads", alt="").replace(":alt: \n", "")
    assert teaching_pages.picture_problems(no_alt, "book/01_x.md", {"ch01-threads"}) == [
        "book/01_x.md:3: the figure /_pictures/ch01-threads.svg has no :alt: text"
    ]
    bare = "# Chapter 1\n\nNo picture.\n"
    assert teaching_pages.picture_problems(bare, "book/01_x.md", set()) == [
        "book/01_x.md: a chapter page shows at least one picture (/_pictures/<name>.svg)"
    ]
    assert teaching_pages.picture_problems(bare, "book/setup.md", set()) == []


def test_figure_directives_read_colon_fences_and_yaml_options():
    text = ':::{figure} /_pictures/a.svg\n---\nalt: "Bars."\nname: fig-a\n---\nCaption.\n:::\n'
    (d,) = teaching_pages.figure_directives(text)
    assert (d.line, d.picture, d.options["alt"]) == (1, "a", "Bars.")


# --- predictions answered in advance ------------------------------------------------------


def _executed(
    earlier: str, answer: str = "42.4", basis: str = "computed", printed_before: str = "done"
) -> dict:
    return notebook(
        md(f"The page's case: {earlier}."),
        code("x = 1 + 1", outputs=[printed(f"{printed_before}\n")]),
        code("my_gb = None  # your prediction, in GB"),
        code(
            "predict.compare(my_gb, gb, 'GB')",
            ["hide-output"],
            outputs=[printed(f"the weights: {basis}: {answer} GB.\n")],
        ),
    )


@pytest.mark.parametrize(
    "earlier, given",
    [("42.4 GB", True), ("42.5 GB", True), ("42.3", True), ("42 GB", False), ("42.6 GB", False)],
)
def test_an_answer_shown_above_its_prediction_fails(earlier, given):
    found = answers.problems(_executed(earlier), "nb", articles=())
    assert bool(found) is given, found
    if given:
        assert found == [
            "nb: the prediction 'my_gb' (cell 4) is answered in advance: its reveal prints "
            f"42.4, and cell 2 shows {earlier.split()[0]}"
        ]


def test_the_paired_pages_count_and_short_or_article_numbers_are_skipped():
    clean = _executed("nothing")
    assert answers.problems(clean, "nb", {"book/01.md": "It is 42.4 GB."}, articles=())
    assert answers.problems(clean, "nb", {"zh_CN/book/01": "约42.5 GB。"}, articles=())
    assert answers.problems(clean, "nb", {"book/01.md": "It is 1,424 GB."}, articles=()) == []
    article = tuple(answers.numbers_in("the article says 42.4 GB and 42.5 GB"))
    assert answers.problems(_executed("42.4"), "nb", articles=article) == []  # the answer's own
    assert answers.problems(_executed("42.5"), "nb", articles=article[1:]) == []  # quoted there
    # an article's number near the answer does not exempt the answer itself
    assert answers.problems(_executed("42.3"), "nb", articles=tuple(answers.numbers_in("42")))
    assert answers.problems(_executed("7", answer="7"), "nb", articles=()) == []  # one digit


def test_a_measured_answer_is_given_away_only_by_what_the_run_printed_before_it():
    # the same measurement printed by an earlier cell gives it away, at its precision or ±1
    for shown in ("peak 42.4 GB", "peak 42.5 GB"):
        found = answers.problems(
            _executed("nothing", basis="measured", printed_before=shown), "nb", articles=()
        )
        assert found == [
            "nb: the prediction 'my_gb' (cell 4) is answered in advance: its reveal prints "
            f"42.4, and cell 3 output shows {shown.split()[1]}"
        ]
    # typed text cannot know this run's measurement: Markdown, source and pages do not count
    measured = _executed("42.4 GB", basis="measured")
    assert answers.problems(measured, "nb", {"book/01.md": "It is 42.4 GB."}, articles=()) == []
    # nor does a number printed with fewer digits than the measurement (a rounded bound)
    bound = _executed("nothing", basis="measured", printed_before="peak 42 GB", answer="42.1")
    assert answers.problems(bound, "nb", articles=()) == []
    assert answers.problems(
        _executed("nothing", printed_before="peak 42 GB", answer="42.1"), "nb", articles=()
    )  # a computed 42.1 next to 42 is found
    # nor does a percentage, a different quantity, unless the answer itself is in percent
    error = _executed("nothing", basis="measured", printed_before="error -42.4 %")
    assert answers.problems(error, "nb", articles=()) == []
    in_percent = _executed("nothing", basis="measured", printed_before="error -42.4 %")
    in_percent["cells"][-1]["outputs"] = [printed("the error: measured: 42.4 %.\n")]
    assert answers.problems(in_percent, "nb", articles=()) == [
        "nb: the prediction 'my_gb' (cell 4) is answered in advance: its reveal prints 42.4, "
        "and cell 3 output shows -42.4"
    ]
    # nor does a number in another unit: a step's 42.3 ms is not a speed-up of 42.4 x
    for shown, given in (
        ("42.3 ms", False),
        ("42.3x", True),
        ("42.3 times", True),
        ("42.3", True),
        ("42.3 × faster", True),
        ("42.3 GB/s", False),
        ("42.3 %", False),
    ):
        ratio = _executed("nothing", basis="measured", printed_before=f"step: {shown}")
        ratio["cells"][-1]["outputs"] = [printed("the speed-up: measured: 42.4 x.\n")]
        assert bool(answers.problems(ratio, "nb", articles=())) is given, shown
    # the same cases as computed answers are all found
    assert answers.problems(_executed("nothing", printed_before="error -42.4 %"), "nb", articles=())
    assert answers.problems(_executed("nothing", printed_before="step 42.3 ms"), "nb", articles=())
    assert answers.problems(_executed("42.4 GB"), "nb", {"book/01.md": "42.4 GB"}, articles=())


def test_printed_numbers_keep_their_precision():
    big = answers.parse("1.37e+03")
    assert (big.value, big.last_digit, big.significant) == (1370.0, 10.0, 3)
    assert big.near(1380) and not big.near(1390)
    assert answers.parse("1,372").value == 1372 and answers.parse("70").significant == 1
    units = "80GB, 3.9\u00a0ms, 7.1 times, 1.9x, 2 TB/s, 439 tokens/s, 16 passes, −3.2%, 5 元"
    found = [n.unit for n in answers.numbers_in(units)]
    assert found == ["GB", "ms", "x", "x", "TB/s", "tokens/s", "", "%", "元"]
    assert [
        n.text for n in answers.numbers_in("A100, 80GB, RTX 4090 at 1.5x, −3.2%, torch 2.13.0")
    ] == [
        "80",
        "4090",
        "1.5",
        "−3.2",
    ]
    cell = code(
        "",
        outputs=[
            {"output_type": "display_data", "data": {"text/markdown": "q: computed: 16.1 GB."}}
        ],
    )
    assert (answers.revealed(cell).text, answers.revealed(cell).unit) == ("16.1", "GB")


# --- the report ---------------------------------------------------------------------------


def test_the_report_counts_cells_predictions_pictures_and_words(tmp_path):
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    page = FIGURE.format(name="ch01-threads", alt="Threads.") + "\nFive more words to read.\n"
    (tmp_path / "book" / "01_why_gpus_are_fast.md").write_text(page)
    nb = notebook(
        md("Two words."),
        mech("a = 1 + 1", "a"),
        code("fig = plots.roofline(p)"),
        code("my_x = None"),
        code("predict.compare(my_x, 3, 'x')"),
    )
    (tmp_path / "notebooks" / "01_why_gpus_are_fast.ipynb").write_text(json.dumps(nb))
    row = teaching_report.row("notebooks/01_why_gpus_are_fast.ipynb", tmp_path)
    assert row == {
        "file": "notebooks/01_why_gpus_are_fast.ipynb",
        "main-body code cells": 5,
        "mechanism cells": 1,
        "predictions": 1,
        "pictures (page + plots)": "1 + 1",
        "words (page + notebook)": "11 + 3",
        "reading (min)": 0,
    }
    assert (
        teaching_report.paired_page("labs/02_predict_then_measure_lab.ipynb") == "book/02_vram.md"
    )


def test_the_report_command_prints_a_row_per_notebook_and_lab(capsys):
    assert teaching.main(["--report", "notebooks/00_check_your_setup.ipynb", "book/setup.md"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| notebooks/00_check_your_setup.ipynb |")
