"""gpulab.slowloop: the planted problems, the fixes, and the checks that the fixes keep the results."""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np
import pytest
import torch

from gpulab import formats, precision, slowloop, slowloop_grading, slowloop_profile
from gpulab.core.errors import GpulabConfigError
from gpulab.course.slowloop import SLOW, LoopConfig, Task
from gpulab.course.slowloop_grading import FIXES

# A task small enough for a unit test: a few milliseconds per step on a CPU.
TINY = Task(batch=16, image_size=8, hidden=32, dataset_size=2000, transform_passes=2)
STEPS = 4


def run(config: LoopConfig, task: Task = TINY, seed: int = 0, steps: int = STEPS):
    """One run of the tiny task on the CPU."""
    return slowloop.run_loop(config, steps, "cpu", seed, task)


@pytest.fixture(scope="module")
def reference():
    """The slow loop's run of the tiny task: every fix is compared with it."""
    return run(SLOW)


# ---------------------------------------------------------------- configuration errors


@pytest.mark.parametrize("kwargs, field", [
    ({"batch": 0}, "batch"), ({"hidden": -1}, "hidden"), ({"classes": 1}, "classes"),
    ({"transform_passes": -1}, "transform_passes"), ({"lr": 0}, "lr"),
    ({"noise": float("inf")}, "noise"), ({"dataset_size": 2.5}, "dataset_size")])
def test_bad_task_names_the_field(kwargs, field):
    """A Task with an unusable value is refused, naming the field."""
    with pytest.raises(GpulabConfigError, match=field):
        Task(**kwargs)


@pytest.mark.parametrize("changes, field", [
    ({"num_workers": -1}, "num_workers"), ({"num_workers": 1.5}, "num_workers"),
    ({"micro_batch": 0}, "micro_batch"), ({"sync_every": 0}, "sync_every"),
    ({"precompute": "yes"}, "precompute"), ({"pin_memory": 1}, "pin_memory"),
    ({"precision": "fp8"}, "precision"),
    ({"precision": "autocast-fp16"}, "precision='autocast-fp16' needs a CUDA")])
def test_bad_loop_config_names_the_field(changes, field):
    """A LoopConfig with an unusable value is refused before anything runs, naming the field."""
    with pytest.raises(GpulabConfigError, match=field):
        slowloop.validate(dataclasses.replace(SLOW, **changes), TINY, "cpu")


def test_micro_batch_must_divide_the_batch_and_the_error_lists_the_choices():
    """Every optimizer step must see the same samples, so the micro-batch divides the batch."""
    with pytest.raises(GpulabConfigError, match=r"micro_batch=3 .* \[1, 2, 4, 8, 16\]"):
        slowloop.validate(dataclasses.replace(SLOW, micro_batch=3), TINY)
    with pytest.raises(GpulabConfigError, match="micro_batch=32"):
        slowloop.validate(dataclasses.replace(SLOW, micro_batch=32), TINY)


def test_run_loop_refuses_bad_steps_and_seed():
    """steps and seed are checked too."""
    with pytest.raises(GpulabConfigError, match="steps"):
        slowloop.run_loop(SLOW, 0, "cpu", task=TINY)
    with pytest.raises(GpulabConfigError, match="seed"):
        slowloop.run_loop(SLOW, 1, "cpu", seed="0", task=TINY)
    with pytest.raises(GpulabConfigError, match="LoopConfig"):
        slowloop.run_loop({"micro_batch": 4}, 1, "cpu", task=TINY)


def test_task_counts_its_parameters_and_memory():
    """The MLP's parameter count is torch's; the bytes cover states and one batch's activations."""
    model = slowloop.build_model(TINY)
    assert TINY.parameters == sum(p.numel() for p in model.parameters())
    assert TINY.bytes_needed() == 12 * TINY.parameters + 8 * 16 * (64 + 64 + 10)


def test_sizes_give_a_gpu_longer_runs():
    """Quick mode shrinks the task; a GPU gets more steps (worker start-up must not dominate)."""
    (cpu_task, cpu_steps), (gpu_task, gpu_steps) = (slowloop.sizes("cpu", True),
                                                    slowloop.sizes("meta", True))
    full_task, full_steps = slowloop.sizes("cpu", False)
    assert cpu_task.bytes_needed() < full_task.bytes_needed() and cpu_steps < full_steps
    assert gpu_steps * gpu_task.batch > 4 * cpu_steps * cpu_task.batch


# ---------------------------------------------------------------- data


def test_samples_depend_only_on_seed_and_index():
    """Any process, in any order, reads the same sample: what makes workers safe to add."""
    a, b = slowloop.SyntheticImages(TINY, seed=3), slowloop.SyntheticImages(TINY, seed=3)
    for i in (5, 0, 1999, 5):
        xa, ya = a[i]
        xb, yb = b[i]
        assert np.array_equal(xa, xb) and ya == yb
        assert xa.shape == (TINY.image_size**2,) and xa.dtype == np.float32
    assert not np.array_equal(a[0][0], slowloop.SyntheticImages(TINY, seed=4)[0][0])


def test_labels_are_skewed_and_class_weights_balance_them():
    """Class k is drawn with weight 1/(k+1); the weights are n / (classes x count)."""
    labels = slowloop.SyntheticImages(TINY).labels
    counts = np.bincount(labels, minlength=TINY.classes)
    assert counts[0] > 3 * counts[-1] > 0
    weights = slowloop.class_weights(labels, TINY.classes)
    assert np.allclose(weights, len(labels) / (TINY.classes * counts))
    assert slowloop.class_weights(np.array([0, 0, 1]), 3) == [0.5, 1.0, 0.0]


def test_sampling_order_covers_epochs_as_permutations():
    """The order is seeded, long enough for every step, and each epoch is a permutation."""
    task = dataclasses.replace(TINY, dataset_size=40)
    order = slowloop.sampling_order(task, steps=5, seed=1)  # 80 samples: two epochs
    assert len(order) == 5 * task.batch
    assert sorted(order[:40]) == list(range(40)) == sorted(order[40:])
    assert order == slowloop.sampling_order(task, 5, 1) != slowloop.sampling_order(task, 5, 2)


def test_augmentation_is_deterministic_and_standardised():
    """The slow transform gives the same image for the same generator state, mean 0, std 1."""
    image = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    one = slowloop.augment(image, np.random.default_rng(1), passes=3)
    two = slowloop.augment(image, np.random.default_rng(1), passes=3)
    assert np.array_equal(one, two) and one.dtype == np.float32
    assert abs(one.mean()) < 1e-5 and abs(one.std() - 1) < 1e-3


def test_loader_workers_are_real_processes_with_a_timeout():
    """Workers are forked processes (on Linux) that cannot hang a run forever."""
    dataset = slowloop.SyntheticImages(TINY)
    order = slowloop.sampling_order(TINY, 2)
    loader = slowloop._loader(dataset, order, dataclasses.replace(SLOW, num_workers=2),
                              torch.device("cpu"))
    assert loader.num_workers == 2 and loader.timeout == slowloop.LOADER_TIMEOUT_S
    assert not loader.persistent_workers and not loader.pin_memory
    if sys.platform == "linux":
        assert loader.multiprocessing_context.get_start_method() == "fork"
    serial = slowloop._loader(dataset, order, SLOW, torch.device("cpu"))
    for (xa, ya), (xb, yb) in zip(loader, serial, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


# ---------------------------------------------------------------- the loop


def test_same_seed_same_losses_other_seed_other_losses(reference):
    """The run is deterministic; the seed changes the data, the order and the weights."""
    assert run(SLOW).losses == reference.losses
    assert run(SLOW, seed=1).losses != reference.losses
    assert len(reference.losses) == STEPS and all(np.isfinite(reference.losses))


def test_result_reports_time_samples_and_data_wait():
    """Samples are steps x batch; the loop's clock agrees with a clock around the whole call."""
    start = time.perf_counter()
    result = run(SLOW)
    outside = time.perf_counter() - start
    assert result.samples == STEPS * TINY.batch
    # the run's own time excludes set-up and warm-up, so it is within the wall time of the call
    assert 0 < result.data_wait_s < result.seconds <= outside
    assert result.samples_per_s >= result.samples / outside
    assert 0 < result.data_share < 1 and result.device == "cpu"


def test_the_loss_goes_down_over_a_longer_run():
    """The task is learnable: after 30 steps the loss is well below the first steps'."""
    task = dataclasses.replace(TINY, batch=32, image_size=12, noise=0.5)
    losses = run(slowloop.fixed_config("cpu", task), task, steps=30).losses
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])


@pytest.mark.parametrize("fix", FIXES, ids=lambda f: f.label)
def test_each_fix_alone_keeps_the_loss_curve(fix, reference):
    """Each fix applied to the slow loop on its own gives the same losses, within tolerance."""
    # workers and bf16 even where fixed_config would not use them (2 cores; a CPU)
    target = dataclasses.replace(slowloop.fixed_config("cpu", TINY), num_workers=2,
                                 precision="autocast-bf16")
    config = dataclasses.replace(SLOW, **{f: getattr(target, f) for f in fix.fields})
    result = run(config)
    slowloop_grading.check_losses(result, reference, fix.label)


def test_fixes_that_keep_the_micro_batch_give_bitwise_equal_losses(reference):
    """Workers, class weights once and fewer syncs change where and when, not what, is computed."""
    for changes in ({"num_workers": 2}, {"precompute": True}, {"sync_every": 3},
                    {"sync_every": 1000}):
        assert run(dataclasses.replace(SLOW, **changes)).losses == reference.losses, changes


def test_fixed_loop_matches_the_slow_loop_on_cpu(reference):
    """All fixes together: the losses match the slow loop's within the fp32 tolerance."""
    fixed = run(slowloop.fixed_config("cpu", TINY))
    check = slowloop_grading.check_losses(fixed, reference, "the fixed loop")
    assert check.max_abs_error < 1e-5


def test_bf16_autocast_on_cpu_stays_within_its_tolerance(reference):
    """Autocast's bf16 products change the losses a little: within loss_tolerance, not equal."""
    config = dataclasses.replace(slowloop.fixed_config("cpu", TINY), precision="autocast-bf16")
    result = run(config)
    assert result.losses != reference.losses
    slowloop_grading.check_losses(result, reference, "bf16 autocast")


def test_the_loss_check_fails_on_a_changed_training():
    """A different data order or learning rate is caught: the check is not a formality."""
    base = run(slowloop.fixed_config("cpu", TINY), steps=8)
    other_order = run(slowloop.fixed_config("cpu", TINY), seed=1, steps=8)
    with pytest.raises(AssertionError, match="losses"):
        slowloop_grading.check_losses(other_order, base)
    faster_lr = run(slowloop.fixed_config("cpu", TINY), dataclasses.replace(TINY, lr=0.06),
                    steps=8)
    with pytest.raises(AssertionError, match="disagrees"):
        slowloop_grading.check_losses(faster_lr, base)
    with pytest.raises(AssertionError, match="same steps"):
        slowloop_grading.check_losses(run(SLOW, steps=2), base)


def test_tolerances_grow_with_lower_precision():
    """fp32 is held tightest, bf16 loosest."""
    tol = {a: slowloop_grading.loss_tolerance(dataclasses.replace(SLOW, precision=a))["rtol"]
           for a in formats.AUTOCAST_PRECISIONS}
    assert tol["fp32"] < tol["autocast-fp16"] < tol["autocast-bf16"] <= 0.05


# ---------------------------------------------------------------- fixes and stages


def test_fixed_config_on_cpu():
    """On a CPU: whole batch, class weights once, spare cores' workers, no autocast or pinning."""
    config = slowloop.fixed_config("cpu", TINY)
    assert config.micro_batch == TINY.batch and config.precompute
    assert config.num_workers == slowloop.recommended_workers("cpu")
    assert config.precision == "fp32" and not config.pin_memory and config.sync_every >= 10
    assert precision.fast_precision("cpu") == "fp32"


def test_recommended_workers_leave_the_training_its_cores(monkeypatch):
    """A GPU's loop gets the CPUs less one (1 to 4); a CPU's, only the cores torch leaves free."""
    monkeypatch.setattr(slowloop.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    assert slowloop.recommended_workers() == 4 == slowloop.recommended_workers("cuda")
    assert slowloop.recommended_workers("cpu") == 4
    monkeypatch.setattr(slowloop.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert slowloop.recommended_workers() == 1 and slowloop.recommended_workers("cpu") == 0


def test_stages_add_one_fix_at_a_time_and_end_fixed():
    """Each stage changes only its fix's fields; the last is fixed_config."""
    stages = slowloop_grading.stages("cpu", TINY)
    assert [label for label, _ in stages] == ["original"] + [f.label for f in FIXES]
    assert stages[0][1] == SLOW and stages[-1][1] == slowloop.fixed_config("cpu", TINY)
    for (_, before), (_, after), fix in zip(stages[:-1], stages[1:], FIXES, strict=True):
        assert fix.problems(before, after, "cpu", TINY) == []


def test_check_fix_accepts_a_right_fix_and_returns_its_run(reference):
    """A right answer passes: it is validated, run, and its losses checked."""
    def fix_precompute(config):
        return dataclasses.replace(config, precompute=True)

    result = slowloop_grading.check_fix(fix_precompute, FIXES[0], SLOW, reference, STEPS, "cpu", TINY)
    assert result.config.precompute and result.losses == reference.losses


def test_check_fix_says_not_written_yet_for_a_stub(reference):
    """A stub's NotImplementedError becomes the labs' 'is not written yet' with its hint."""
    def fix_precompute(config):
        raise NotImplementedError("count them once")

    with pytest.raises(AssertionError, match="`fix_precompute` is not written yet: count them"):
        slowloop_grading.check_fix(fix_precompute, FIXES[0], SLOW, reference, STEPS, "cpu", TINY)


@pytest.mark.parametrize("answer, message", [
    (lambda c: dataclasses.replace(c, precompute=True, micro_batch=16), "one problem at a time"),
    (lambda c: c, "precompute is still False"),
    (lambda c: {"precompute": True}, "return a LoopConfig"),
    (lambda c: dataclasses.replace(c, precompute=True, micro_batch=5), "cannot run")])
def test_check_fix_explains_a_wrong_fix(answer, message, reference):
    """A wrong answer fails with what is wrong, before any training."""
    with pytest.raises(AssertionError, match=message):
        slowloop_grading.check_fix(answer, FIXES[0], SLOW, reference, STEPS, "cpu", TINY)


@pytest.mark.parametrize("fix, wrong, message", [
    (FIXES[1], {"micro_batch": 8}, "use the whole batch"),
    (FIXES[3], {"sync_every": 2}, "every few dozen")])
def test_each_fix_has_a_goal(fix, wrong, message, reference):
    """A half-done fix is named: a bigger but not whole batch, a sync every other micro-batch."""
    with pytest.raises(AssertionError, match=message):
        slowloop_grading.check_fix(lambda c: dataclasses.replace(c, **wrong), fix, SLOW, reference,
                           STEPS, "cpu", TINY)


# ---------------------------------------------------------------- measuring and profiling


def test_measure_runs_a_repeated_config_once():
    """Two labels for the same config (a fix that changes nothing here) share their runs."""
    timed = slowloop_profile.measure([("a", SLOW), ("b", SLOW)], 1, "cpu", repeats=2, task=TINY,
                             progress=False)
    assert timed["a"].runs is timed["b"].runs and len(timed["a"].runs) == 2


def test_measure_interleaves_repeats_of_every_config():
    """Each config runs `repeats` times; the medians and losses are reported per label."""
    timed = slowloop_profile.measure({"slow": SLOW, "fixed": slowloop.fixed_config("cpu", TINY)},
                             2, "cpu", repeats=2, task=TINY, progress=False)
    assert list(timed) == ["slow", "fixed"]
    for t in timed.values():
        assert len(t.runs) == 2 and t.seconds > 0 and len(t.losses) == 2
        assert t.samples_per_s == 2 * TINY.batch / t.seconds and 0 < t.data_share < 1
    with pytest.raises(GpulabConfigError, match="empty"):
        slowloop_profile.measure({}, 1, "cpu", task=TINY)
    with pytest.raises(GpulabConfigError, match="repeats"):
        slowloop_profile.measure({"slow": SLOW}, 1, "cpu", repeats=0, task=TINY)


def test_profile_shows_the_phases_and_the_top_operators():
    """The profile names the loop's phases (data, class weights...) and real torch operators."""
    report = slowloop_profile.profile_loop(SLOW, 2, "cpu", task=TINY, top=5)
    phases = {p["phase"]: p for p in report.phases}
    assert {"wait for data", "class weights", "forward + backward", "optimizer step",
            "read the loss (.item)"} <= set(phases)
    assert all(0 < p["share"] <= 1.5 for p in report.phases)  # the profiler's own cost adds a bit
    assert sum(p["seconds"] for p in report.phases) <= report.seconds * 1.5
    assert report.data_share == phases["wait for data"]["share"] > 0
    assert 0 < len(report.ops) <= 5 and any(o["op"].startswith("aten::") for o in report.ops)
    assert report.ops == sorted(report.ops, key=lambda o: -o["seconds"])
    assert report.device_busy is None  # kernels' busy share is measured on CUDA only
    fixed = slowloop_profile.profile_loop(slowloop.fixed_config("cpu", TINY), 2, "cpu", task=TINY)
    counted = {p["phase"]: p for p in fixed.phases}["class weights"]
    # counted once before the loop, not at each of the 2 x 16 / 4 = 8 micro-batches (calls, not
    # seconds: no timing is asserted on a CPU CI machine)
    assert counted["calls"] == 1
    assert phases["class weights"]["calls"] == 2 * TINY.batch // SLOW.micro_batch


def test_long_kernel_names_are_cut():
    """CUDA kernel names run to hundreds of characters; the table keeps the first 64."""
    assert slowloop_profile._short("aten::mm") == "aten::mm"
    cut = slowloop_profile._short("void cutlass::Kernel<" + "x" * 200 + ">")
    assert len(cut) == 64 and cut.endswith("...")


# ---------------------------------------------------------------- on a GPU (make test-gpu)


@pytest.mark.gpu
def test_fixed_loop_is_at_least_twice_as_fast_on_cuda():
    """On a CUDA GPU the fixed loop reaches GPU_SPEEDUP_GOAL, with the same loss curve."""
    task, steps = slowloop.sizes("cuda", quick=True)  # what `make test-gpu` runs in the lab
    configs = {"slow": SLOW, "fixed": slowloop.fixed_config("cuda", task)}
    timed = slowloop_profile.measure(configs, steps, "cuda", repeats=3, task=task, progress=False)
    slowloop_grading.check_losses(timed["fixed"].runs[0], timed["slow"].runs[0], "the fixed loop")
    speedup = timed["fixed"].samples_per_s / timed["slow"].samples_per_s
    assert speedup >= slowloop_grading.GPU_SPEEDUP_GOAL, f"only {speedup:.2f}x faster on the GPU"
