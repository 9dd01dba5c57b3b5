"""The teaching checks' rules of part 2 (issue 29): each file's requirement from one table
(tools/checks/teaching_cells.RULES), shown failing and passing on small synthetic notebooks; the
grader cells of lab 5, the %%writefile scripts of lab 7, the exempt appendices, the pages beyond
the chapters, the report over every file of the course, and the list of what is not yet listed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_teaching import GOOD_STUB, agree, code, md, mech, notebook
from tools.authoring import learner_generator
from tools.checks import teaching, teaching_cells, teaching_labs, teaching_report

ROOT = Path(__file__).resolve().parents[2]


def _counts(nb: dict, where: str) -> list[str]:
    return teaching_cells.count_problems(nb, where)


# --- the table of rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, share, at_least, named",
    [
        ("notebooks/00_check_your_setup.ipynb", 0, 2, ()),
        ("labs/00_first_kernel_lab.ipynb", 0, 1, ()),
        ("notebooks/04_backends.ipynb", 0.5, 0, ()),
        ("notebooks/05_pitfalls.ipynb", 0.5, 0, ()),
        ("notebooks/07_beyond_one_gpu.ipynb", 0.5, 0, ()),
        ("labs/04_triton_kernels_lab.ipynb", 0.5, 0, ()),
        (
            "notebooks/06_choosing_hardware.ipynb",
            0,
            0,
            ("memory-sum", "break-even-months", "psu-sum"),
        ),
        ("labs/05_fix_slow_training_loop_lab.ipynb", 0.5, 0, ("training-loop",)),
        ("labs/07_torch_distributed_lab.ipynb", 0.5, 0, ()),
        ("book/appendix/fact_check.ipynb", 0, 0, ()),
    ],
)
def test_each_file_gets_its_rule_from_the_table(path, share, at_least, named):
    rule = teaching_cells.rule_for(path)
    assert (rule.share, rule.at_least, rule.named) == (share, at_least, named)


HALF = [
    "notebooks/04_backends.ipynb",
    "notebooks/05_pitfalls.ipynb",
    "notebooks/07_beyond_one_gpu.ipynb",
    "labs/04_triton_kernels_lab.ipynb",
]


@pytest.mark.parametrize("path", HALF)
def test_notebooks_04_05_07_and_lab_04_need_half_their_main_body_as_mechanisms(path):
    # four main-body cells (the imports, three more): one mechanism is too few, two are enough
    one = notebook(mech("a = 1 + 1", "a"), code("x = f()"), code("y = g()"))
    assert _counts(one, path) == [
        f"{path}: 1 verified mechanism cell(s) of 4 main-body code cells; it needs at least 2"
    ]
    two = notebook(mech("a = 1 + 1", "a"), mech("b = torch.ones(2)", "b"), code("y = g()"))
    assert _counts(two, path) == []


SUMS = {
    "memory-sum": "need = weights + users * seq * kv_per_token + activations",
    "break-even-months": "months = price / (rent - electricity)",
    "psu-sum": "watts = gpu_w + cpu_w + rest_w",
}
LIBRARY = {
    "memory-sum": "choose.fits",
    "break-even-months": "cost.break_even_months",
    "psu-sum": "power.psu_watts",
}
IMPORTS_06 = "from gpulab import choose, cost, power\n"


def _notebook_06(drop: str = "", no_assert: str = "", not_verified: str = "") -> dict:
    cells = [code(IMPORTS_06)]
    for name, source in SUMS.items():
        if name == drop:
            continue
        body = f"print({LIBRARY[name]}())" if name == not_verified else source
        cells.append(mech(body, name, [LIBRARY[name]]))
        check = f"{LIBRARY[name]}(x)" if name == no_assert else f"assert x == {LIBRARY[name]}(x)"
        cells.append(agree(check, name))
    cells += [code(f"show({i})") for i in range(6)]  # many cells that are not mechanisms
    return notebook(*cells)


def test_notebook_06_needs_its_three_sums_each_with_an_agreement_not_half():
    path = "notebooks/06_choosing_hardware.ipynb"
    good = _notebook_06()
    assert _counts(good, path) == []  # 3 mechanisms of 14 main-body cells: the sums are enough
    assert _counts(good, "notebooks/04_backends.ipynb")  # where half is asked, it is too few
    assert _counts(_notebook_06(drop="psu-sum"), path) == [
        f"{path}: no verified mechanism cell named 'psu-sum' (tagged 'mechanism', "
        "gpulab.mechanism = 'psu-sum', in the main body, passing the code rule)"
    ]
    # a cell named so whose code is not the mechanism does not count
    found = _counts(_notebook_06(not_verified="memory-sum"), path)
    assert found and "named 'memory-sum'" in found[0]
    found = _counts(_notebook_06(no_assert="break-even-months"), path)
    assert found == [
        f"{path}: the mechanism 'break-even-months' (cell 5) has no later cell tagged "
        "'agreement' with gpulab.agrees = 'break-even-months' that asserts"
    ]
    # a name must be exactly the rule's
    renamed = _notebook_06()
    renamed["cells"][3]["metadata"]["gpulab"]["mechanism"] = "memory"
    assert "named 'memory-sum'" in _counts(renamed, path)[0]


# --- lab 5: graded cells and the learner's loop -------------------------------------------

LAB5 = "labs/05_fix_slow_training_loop_lab.ipynb"
LOOP = (
    "def fixed_training_loop(run):\n"
    "    ### BEGIN SOLUTION\n"
    "    losses = torch.zeros(run.steps)\n"
    "    ### END SOLUTION\n"
    "    return losses"
)
GRADE = (
    "grade = slowloop_grading.grade_loop(fixed_training_loop, task, steps, dev)\ngrade.require()"
)


def _lab5(*extra: dict, loop_tags=("solution",)) -> dict:
    return notebook(
        mech(LOOP, "training-loop", tags=loop_tags),
        code(GRADE, ["grader"]),
        code("display(grade)", ["grader"]),
        *extra,
    )


def test_lab_5_leaves_its_grader_cells_out_and_needs_the_training_loop_in_a_solution_cell():
    lab = _lab5(mech("t = stop - start", "timing"), code("profile(fixed_training_loop)"))
    # the imports, the loop, the timing, the profile: the two grader cells are not counted
    assert teaching_cells.main_body(lab, LAB5) == [1, 2, 5, 6]
    assert _counts(lab, LAB5) == []
    assert teaching_labs.grader_problems(lab, LAB5) == []
    # elsewhere a grader tag is not a way out of the main body, and is a problem
    assert teaching_cells.main_body(lab, "labs/04_triton_kernels_lab.ipynb") == [1, 2, 3, 4, 5, 6]
    assert len(teaching_labs.grader_problems(lab, "labs/04_triton_kernels_lab.ipynb")) == 2
    # without the loop as a mechanism, or with it outside a solution cell, lab 5 fails
    missing = notebook(code(GRADE, ["grader"]), mech("t = stop - start", "timing"))
    assert "no verified mechanism cell named 'training-loop'" in _counts(missing, LAB5)[0]
    untagged = _lab5(mech("t = stop - start", "timing"), loop_tags=())
    assert _counts(untagged, LAB5) == [
        f"{LAB5}: cell 2, the mechanism 'training-loop', is not tagged 'solution'"
    ]
    # half of the rest still applies
    few = _lab5(code("a()"), code("b()"), code("c()"))
    assert "it needs at least 3" in _counts(few, LAB5)[0]


def test_a_grader_cell_only_runs_the_grader():
    bad = notebook(
        mech("x = grade(1 + 1)", "sum", tags=["grader"]),
        code("### BEGIN SOLUTION\nf = g\n### END SOLUTION\ngrade(f)", ["grader"]),
        code("verdict = grade", ["grader"]),
        md("the verdict", ["grader"]),
    )
    found = teaching_labs.grader_problems(bad, LAB5)
    assert [p.split("'grader' ")[1].split(":")[0] for p in found] == [
        "and is a mechanism",
        "and holds a solution block",
        "but calls nothing",
        "but is not a code cell",
    ]


# --- lab 7: scripts written by %%writefile ------------------------------------------------

LAB7 = "labs/07_torch_distributed_lab.ipynb"
SCRIPT = """%%writefile ring_allreduce.py
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def main(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    t = torch.full((4,), float(rank))
    dist.all_reduce(t)
    model = DDP(torch.nn.Linear(4, 4))
    print(t.tolist(), model)


if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""
RUN_IT = (
    'out = launch.run_json(scripts / "ring_allreduce.py", common, 2, 60)\nassert out["sum"] == 1'
)


@pytest.mark.parametrize(
    "call", ["dist.all_reduce(t)", "mp.spawn(main, nprocs=2)", "model = DDP(net)"]
)
def test_a_writefile_script_is_a_mechanism_through_its_own_imports(call):
    imports = (
        "import torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    )
    script = f"%%writefile demo.py\n{imports}{call}\n"
    nb = {"cells": [md("# T"), mech(script, "demo")]}  # the notebook imports nothing
    assert teaching_cells.code_problems(nb, LAB7) == []
    assert teaching_cells.verified_mechanisms(nb, LAB7) == [1]
    # the notebook's imports do not make the script's calls torch's
    bare = {"cells": [md("# T"), code(imports), mech(f"%%writefile demo.py\n{call}\n", "demo")]}
    assert "holds no torch operation" in teaching_cells.code_problems(bare, LAB7)[0]
    # and a script that calls gpulab's library is not the mechanism
    lib = mech(
        f"%%writefile demo.py\n{imports}from gpulab import collectives\n"
        f"{call}\ncollectives.ring_allreduce(t)\n",
        "demo",
    )
    assert (
        "gpulab's collectives.ring_allreduce"
        in teaching_cells.code_problems({"cells": [md("# T"), lib]}, LAB7)[0]
    )


def test_a_writefile_mechanism_may_have_40_lines_in_lab_7_and_runs_in_an_agreement():
    assert teaching_cells.writefile_target(SCRIPT) == "ring_allreduce.py"
    assert teaching_cells.writefile_target("x = 1\n%%writefile a.py") is None
    long = mech(SCRIPT + "\n" * (40 - len(SCRIPT.splitlines())), "ring")
    assert len(long["source"].splitlines()) == 40
    lab = notebook(long, agree(RUN_IT, "ring"))
    assert teaching_cells.length_problems(lab, LAB7) == []
    assert teaching_cells.agreement_problems(lab, LAB7) == []
    assert teaching_cells.length_problems(lab, "notebooks/04_backends.ipynb") == [
        "notebooks/04_backends.ipynb: cell 2 has 40 lines; a main-body code cell has at most 20"
    ]
    longer = notebook(mech(long["source"] + "# one more", "ring"), agree(RUN_IT, "ring"))
    assert teaching_cells.length_problems(longer, LAB7) == [
        f"{LAB7}: cell 2 has 41 lines; a %%writefile mechanism cell has at most 40"
    ]
    # a plain cell of lab 7 keeps the 20 lines
    plain = notebook(code("\n".join(f"x{i} = {i}" for i in range(21))))
    assert "at most 20" in teaching_cells.length_problems(plain, LAB7)[0]
    # the agreement runs the script (names it) and asserts on what comes back
    for source in ('out = launch.run_json(scripts / "ring_allreduce.py")', "assert out == 1"):
        found = teaching_cells.agreement_problems(notebook(long, agree(source, "ring")), LAB7)
        assert found and "that runs it" in found[0], found
    assert "that runs it" in teaching_cells.agreement_problems(notebook(long), LAB7)[0]


# --- appendices and pages beyond the chapters ---------------------------------------------


def test_the_appendices_are_exempt_from_the_count_but_not_from_the_other_checks():
    nb = notebook(code("x = f()"), code("\n".join(f"y{i} = {i}" for i in range(21))))
    where = "book/appendix/fact_check.ipynb"
    assert _counts(nb, where) == []
    assert _counts(nb, "notebooks/05_pitfalls.ipynb")
    assert teaching_cells.length_problems(nb, where)
    assert teaching.notebook_machinery(notebook(md("The seed_claims file.")), where)


def _site(tmp_path: Path) -> Path:
    (tmp_path / "book" / "workshop").mkdir(parents=True)
    (tmp_path / "book" / "appendix").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "root: book/intro\nparts:\n"
        "  - chapters:\n      - file: book/01_x\n      - file: notebooks/01_x\n"
        "  - chapters:\n      - file: book/workshop/guide\n"
        "  - chapters:\n      - file: book/appendix/facts\n"
    )
    return tmp_path


def test_intro_and_workshop_pages_get_the_page_checks_only(tmp_path, monkeypatch):
    root = _site(tmp_path)
    (root / "book" / "intro.md").write_text("# Intro\n\nAs {claim}`3` says.\n")
    (root / "book" / "workshop" / "guide.md").write_text("# Guide\n\nThe registry, no picture.\n")
    monkeypatch.setattr(teaching, "_root", lambda: root)
    assert [p.split(": ")[0] for p in teaching.check("book/intro.md")] == ["book/intro.md:3"]
    found = teaching.check("book/workshop/guide.md")
    assert len(found) == 1 and "'registry' names the course's machinery" in found[0]


# --- the report and the list of what is not yet listed ------------------------------------


def test_unlisted_names_every_page_and_notebook_of_the_toc_not_in_teach_first(
    tmp_path, monkeypatch
):
    root = _site(tmp_path)
    for path in ("book/intro.md", "book/01_x.md", "book/workshop/guide.md"):
        (root / path).write_text("# Page\n")
    (root / "notebooks").mkdir()
    for path in ("notebooks/01_x.ipynb", "book/appendix/facts.ipynb"):
        (root / path).write_text(json.dumps(notebook()))
    every = [
        "book/intro.md",
        "book/01_x.md",
        "notebooks/01_x.ipynb",
        "book/workshop/guide.md",
        "book/appendix/facts.ipynb",
    ]
    assert teaching_report.toc_files(root) == every
    monkeypatch.setattr(teaching, "TEACH_FIRST", ("book/01_x.md", "notebooks/01_x.ipynb"))
    assert teaching.unlisted(root) == [every[0], every[3], every[4]]
    monkeypatch.setattr(teaching, "TEACH_FIRST", tuple(every))
    assert teaching.unlisted(root) == []


def test_every_page_and_notebook_is_listed():
    assert teaching.unlisted() == []


def test_an_appendix_notebook_is_its_own_page_in_the_report():
    assert teaching_report.paired_page("book/appendix/fact_check.ipynb") is None
    assert teaching_report.paired_page("labs/07_torch_distributed_lab.ipynb") == (
        "book/07_beyond_one_gpu.md"
    )
    row = teaching_report.row("book/appendix/fact_check.ipynb")
    assert row["words (page + notebook)"].startswith("0 + ")


def test_the_report_covers_every_notebook_and_with_pages_every_page(capsys):
    assert teaching.main(["--report", "--pages"]) == 0
    out = capsys.readouterr().out
    every = teaching_report.toc_files()
    for path in every:
        assert f"| {path} |" in out, path
    notebooks = [p for p in every if p.endswith(".ipynb")]
    assert len(notebooks) >= 17 and "book/appendix/fact_check.ipynb" in notebooks
    assert teaching.main(["--summary", "book/appendix/fact_check.ipynb"]) == 0
    assert capsys.readouterr().out.startswith("book/appendix/fact_check.ipynb: ")


def test_the_part_one_files_stay_at_zero_problems_in_the_summary():
    lines = teaching.summary([p for p in teaching.TEACH_FIRST]).splitlines()
    assert all(line.endswith(": 0 problem(s)") for line in lines), lines


# --- learner copies: the exercise shapes of labs 4, 5 and 7 -------------------------------


def _lab_with(exercise_cells: list[dict], after: list[dict] = ()) -> dict:
    return notebook(
        code(GOOD_STUB, ["solution"]),
        md("## Exercises"),
        md("### Exercise 1: one", ["exercise"], exercise="lab05-one"),
        md("#### Solution\n\nWhy.", ["exercise-solution"]),
        *exercise_cells,
        *after,
    )


@pytest.mark.parametrize(
    "cells, after, problems",
    [
        # lab 5: the check is the grader's verdict, after the markers
        (
            [
                code(
                    "def loop(run):\n    ### BEGIN SOLUTION\n    return run.go()\n"
                    "    ### END SOLUTION\n\ngrade_loop(loop, task).require()",
                    ["exercise-solution"],
                )
            ],
            [],
            0,
        ),
        # lab 4: labs.check after the markers
        (
            [
                code(
                    "### BEGIN SOLUTION\nk = 2\n### END SOLUTION\ncheck(k, 2)",
                    ["exercise-solution"],
                )
            ],
            [],
            0,
        ),
        # lab 7: a script to edit, written by %%writefile, and the cell that runs it after it
        (
            [
                code(
                    "%%writefile changed.py\nimport torch\n### BEGIN SOLUTION\nseed = 1 + 1\n"
                    "### END SOLUTION\n",
                    ["exercise-solution"],
                )
            ],
            [code('out = launch.run_json("changed.py")\nassert out["same"]')],
            0,
        ),
        # a check in a solution cell without the markers is dropped with it: no check left
        (
            [
                code("### BEGIN SOLUTION\nk = 2\n### END SOLUTION", ["exercise-solution"]),
                code("assert k == 2", ["exercise-solution"]),
            ],
            [],
            1,
        ),
        # Markdown only: neither a cell nor a check
        ([md("The answer is two.", ["exercise-solution"])], [], 2),
    ],
)
def test_the_exercise_shapes_of_labs_4_5_and_7_keep_their_cell_and_check(
    tmp_path, cells, after, problems
):
    lab = _lab_with(cells, after)
    (tmp_path / "labs" / "learner").mkdir(parents=True)
    copy = learner_generator.make_learner_copy(lab, "labs/05_x_lab.ipynb")
    (tmp_path / "labs" / "learner" / "05_x_lab.ipynb").write_text(json.dumps(copy))
    found = teaching_labs.learner_copy_problems(lab, "labs/05_x_lab.ipynb", tmp_path)
    assert len(found) == problems, found


def test_the_outputs_and_site_tests_read_the_appendices_and_labs_without_a_page():
    # what tests/notebooks and tests/site ask of each listed notebook: its page, when it has one
    for path in teaching_report.toc_files():
        if path.endswith(".ipynb"):
            page = teaching_report.paired_page(path)
            assert page is None or (ROOT / page).is_file(), path


def test_a_writefile_cell_leaves_the_checkout_as_it_was(tmp_path):
    (tmp_path / "labs" / "07_distributed").mkdir(parents=True)
    script = "import torch\nprint(torch.ones(2))\n"
    (tmp_path / "labs" / "07_distributed" / "ring.py").write_text(script)
    same = notebook(code(f"%%writefile 07_distributed/ring.py\n{script}"))
    assert teaching_labs.writefile_problems(same, LAB7, tmp_path) == []
    # the file a run writes ends with one newline, whether or not the cell does
    assert (
        teaching_labs.writefile_problems(
            notebook(code(f"%%writefile 07_distributed/ring.py\n{script.rstrip()}")), LAB7, tmp_path
        )
        == []
    )
    (tmp_path / "labs" / "07_distributed" / "bare.py").write_text(script.rstrip())
    bare = notebook(code(f"%%writefile 07_distributed/bare.py\n{script.rstrip()}"))
    assert teaching_labs.writefile_problems(bare, LAB7, tmp_path)
    changed = notebook(code("%%writefile 07_distributed/ring.py\nimport torch\n"))
    assert (
        "whose code differs from the cell's"
        in (teaching_labs.writefile_problems(changed, LAB7, tmp_path)[0])
    )
    new = notebook(code("%%writefile scratch.py\nx = 1\n"))
    assert teaching_labs.writefile_problems(new, LAB7, tmp_path) == [
        f"{LAB7}: cell 2 writes labs/scratch.py, a file the repository neither holds nor "
        "ignores: commit the script as the cell writes it, or write it where git ignores"
    ]
    # a path of the run's own: built from a variable, or outside the checkout
    for target in ("{workdir}/scratch.py", "/tmp/scratch.py", "../../scratch.py"):
        elsewhere = notebook(code(f"%%writefile {target}\nx = 1\n"))
        assert teaching_labs.writefile_problems(elsewhere, LAB7, tmp_path) == [], target
    # a file git ignores
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("labs/scratch.py\n")
    assert teaching_labs.writefile_problems(new, LAB7, tmp_path) == []


def test_the_fact_check_names_its_claims_by_number_and_no_other_file_does():
    nb = notebook(md("Claim 12 is a speed-up; the seed_claims file holds it."))
    fact = teaching.notebook_machinery(nb, "book/appendix/fact_check.ipynb")
    assert [p.split("'")[1] for p in fact] == ["seed_claims"]
    other = teaching.notebook_machinery(nb, "book/appendix/published_measurements.ipynb")
    assert [p.split("'")[1] for p in other] == ["seed_claims", "Claim 12"]
    assert teaching.claim_numbers_checked("notebooks/04_backends.ipynb")
    assert not teaching.claim_numbers_checked("book/appendix/fact_check.ipynb")
