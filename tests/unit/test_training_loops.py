"""Lab 5's loops as plain code (gpulab.training_loops), the lab cells generated from them, and
the grader that runs a learner's loop (slowloop_grading.grade_loop)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from gpulab import slowloop, slowloop_grading, training_loops
from gpulab.course.slowloop import class_weights
from tools.authoring import learner_generator

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "labs" / "05_fix_slow_training_loop_lab.ipynb"
TASK, STEPS = slowloop.Task(batch=16, hidden=64, dataset_size=2000, transform_passes=2), 6


def _fixed_but(step_body):
    """A correct whole-batch loop whose step is `step_body(run, loss, losses)`."""

    def loop(run):
        weights = torch.tensor(class_weights(run.dataset.labels, run.task.classes))
        losses = []
        for x, y in DataLoader(run.dataset, batch_size=run.task.batch, sampler=run.order):
            loss = (
                F.cross_entropy(run.model(x), y, weight=weights, reduction="sum") / run.task.batch
            )
            loss.backward()
            run.optimizer.step()
            run.optimizer.zero_grad()
            step_body(run, loss, losses)
        return (
            losses if not losses or not isinstance(losses[0], torch.Tensor) else torch.stack(losses)
        )

    return loop


def test_the_fixed_loop_passes_every_check():
    grade = slowloop_grading.grade_loop(training_loops.fixed_training_loop, TASK, STEPS)
    assert grade.passed and grade.failed() == []
    assert grade.host_syncs == {"tolist": 1}
    assert grade.seconds > 0 and grade.reference_seconds > 0
    grade.require()


def test_a_per_step_item_is_rejected_although_the_losses_match():
    grade = slowloop_grading.grade_loop(
        _fixed_but(lambda run, loss, out: out.append(loss.item())), TASK, STEPS
    )
    assert grade.failed() == ["no host sync per step"]
    assert grade.host_syncs == {"item": STEPS}
    with pytest.raises(AssertionError, match=r"no host sync per step: 6 host synchronisation"):
        grade.require()


@pytest.mark.parametrize("read", [lambda t: float(t), lambda t: t.cpu(), lambda t: t.tolist()])
def test_every_kind_of_host_read_is_counted(read):
    def body(run, loss, out):
        read(loss.detach())
        out.append(loss.detach())

    assert (
        "no host sync per step"
        in slowloop_grading.grade_loop(_fixed_but(body), TASK, STEPS).failed()
    )


def test_a_changed_learning_rate_is_rejected_as_another_training():
    def faster(run):
        for group in run.optimizer.param_groups:
            group["lr"] *= 1.2
        return training_loops.fixed_training_loop(run)

    grade = slowloop_grading.grade_loop(faster, TASK, STEPS)
    assert grade.failed() == ["same training"]
    assert "changed the training" in next(c["detail"] for c in grade.checks if not c["passed"])


def test_fewer_steps_are_rejected_by_the_count_of_steps_and_of_samples():
    def shorter(run):
        run.steps -= 2
        run.order = run.order[: run.steps * run.task.batch]
        return training_loops.fixed_training_loop(run)

    grade = slowloop_grading.grade_loop(shorter, TASK, STEPS)
    assert {"one loss per step", "optimizer steps", "work per step"} <= set(grade.failed())


def test_a_stub_is_not_written_yet_and_a_wrong_return_is_explained():
    def stub(run):
        raise NotImplementedError("edit the copy of the slow loop")

    with pytest.raises(AssertionError, match="not written yet: edit the copy"):
        slowloop_grading.grade_loop(stub, TASK, STEPS)
    grade = slowloop_grading.grade_loop(lambda run: None, TASK, STEPS)
    assert "one loss per step" in grade.failed()


def test_the_sync_limit_is_about_one_per_ten_steps():
    assert [slowloop_grading.allowed_syncs(n) for n in (1, 8, 10, 60)] == [1, 1, 1, 6]


def _cell(nb: dict, cell_id: str) -> dict:
    return next(c for c in nb["cells"] if c["id"] == cell_id)


def test_the_lab_shows_the_library_loops_as_they_are():
    nb = json.loads(LAB.read_text(encoding="utf-8"))
    # the slow loop is printed from its source, then run: no copy to go stale
    shown = "".join(_cell(nb, "slow-loop-source")["source"])
    assert "print(inspect.getsource(slow_training_loop))" in shown
    assert "slow_training_loop = training_loops.slow_training_loop" in shown
    solution = "".join(_cell(nb, "fixed-loop")["source"])
    assert solution == inspect.getsource(training_loops.fixed_training_loop).rstrip("\n")
    assert learner_generator.refresh_generated(json.loads(LAB.read_text(encoding="utf-8"))) is False


def test_the_learner_starts_from_a_copy_of_the_slow_loop_to_edit():
    learner = json.loads(learner_generator.learner_path(LAB).read_text(encoding="utf-8"))
    start = "".join(_cell(learner, "fixed-loop")["source"])
    body = (
        inspect.getsource(training_loops.slow_training_loop)
        .replace("def slow_training_loop(", "def fixed_training_loop(", 1)
        .rstrip("\n")
    )
    assert start.startswith("# HINT:") and start.endswith(body)
    assert "LoopConfig" not in json.dumps(learner)  # the configuration flags left the lab


def test_a_stale_library_cell_is_refreshed_and_reported():
    nb = json.loads(LAB.read_text(encoding="utf-8"))
    _cell(nb, "fixed-loop")["source"] = "def fixed_training_loop(run):\n    return []"
    assert learner_generator.refresh_generated(nb) is True
    assert "".join(_cell(nb, "fixed-loop")["source"]).startswith(
        "def fixed_training_loop(run: LoopRun)"
    )
    with pytest.raises(ValueError, match="no function 'nope'"):
        learner_generator.library_source("gpulab.course.training_loops:nope")


def test_the_fixed_loops_workers_fail_the_run_when_they_die_instead_of_hanging_it(monkeypatch):
    """With workers, the fixed loop's DataLoader waits at most LOADER_TIMEOUT_S for a batch;
    without, no timeout applies (DataLoader's own default)."""
    seen = []
    real = training_loops.DataLoader

    def recording(*args, **kwargs):
        seen.append(kwargs.get("timeout", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(training_loops, "DataLoader", recording)
    for workers, timeout in ((0, 0.0), (1, slowloop.LOADER_TIMEOUT_S)):
        run = training_loops.prepare(TASK, 2, "cpu", seed=0)
        run.workers = workers
        assert run.loader_timeout == timeout
        training_loops.fixed_training_loop(run)
        assert seen[-1] == timeout
