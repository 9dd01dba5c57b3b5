"""gpulab.slowloop (chapter 5's training problem), the lab's loops in gpulab.training_loops,
their interleaved timing and profile (gpulab.slowloop_profile), and the grader's tolerances."""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np
import pytest
import torch

from gpulab import formats, slowloop, slowloop_grading, slowloop_profile, training_loops
from gpulab.core.errors import GpulabConfigError
from gpulab.course.slowloop import Task

# A task small enough for a unit test: a few milliseconds per step on a CPU.
TINY = Task(batch=16, image_size=8, hidden=32, dataset_size=2000, transform_passes=2)
STEPS = 4
SLOW, FIXED = training_loops.slow_training_loop, training_loops.fixed_training_loop


def run(loop=SLOW, task: Task = TINY, seed: int = 0, steps: int = STEPS, workers=None):
    """One run of a loop on the tiny task on the CPU: (losses, seconds, the LoopRun)."""
    prepared = training_loops.prepare(task, steps, "cpu", seed, workers=workers)
    losses, seconds = training_loops.run_timed(loop, prepared)
    return losses, seconds, prepared


# ---------------------------------------------------------------- configuration errors


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"batch": 0}, "batch"),
        ({"hidden": -1}, "hidden"),
        ({"classes": 1}, "classes"),
        ({"transform_passes": -1}, "transform_passes"),
        ({"lr": 0}, "lr"),
        ({"noise": float("inf")}, "noise"),
        ({"dataset_size": 2.5}, "dataset_size"),
    ],
)
def test_bad_task_names_the_field(kwargs, field):
    """A Task with an unusable value is refused, naming the field."""
    with pytest.raises(GpulabConfigError, match=field):
        Task(**kwargs)


def test_prepare_refuses_bad_steps_seed_and_workers():
    """steps, seed and workers are checked, by name."""
    with pytest.raises(GpulabConfigError, match="steps"):
        training_loops.prepare(TINY, 0)
    with pytest.raises(GpulabConfigError, match="seed"):
        training_loops.prepare(TINY, 1, seed="0")
    with pytest.raises(GpulabConfigError, match="workers"):
        training_loops.prepare(TINY, 1, workers=-1)


def test_task_counts_its_parameters_and_memory():
    """The MLP's parameter count is torch's; the bytes cover states and one batch's activations."""
    model = slowloop.build_model(TINY)
    assert TINY.parameters == sum(p.numel() for p in model.parameters())
    assert TINY.bytes_needed() == 12 * TINY.parameters + 8 * 16 * (64 + 64 + 10)


def test_sizes_give_a_gpu_longer_runs():
    """Quick mode shrinks the task; a GPU gets more steps (worker start-up must not dominate)."""
    (cpu_task, cpu_steps), (gpu_task, gpu_steps) = (
        slowloop.sizes("cpu", True),
        slowloop.sizes("meta", True),
    )
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
    """Workers are forked processes (on Linux) that cannot hang a run forever, and give the
    batches the main process would."""
    dataset = slowloop.SyntheticImages(TINY)
    order = slowloop.sampling_order(TINY, 2)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=4, sampler=order, **slowloop.loader_options(2)
    )
    assert loader.num_workers == 2 and loader.timeout == slowloop.LOADER_TIMEOUT_S
    assert not loader.persistent_workers
    if sys.platform == "linux":
        assert loader.multiprocessing_context.get_start_method() == "fork"
    assert slowloop.loader_options(0) == {"num_workers": 0}
    serial = torch.utils.data.DataLoader(dataset, batch_size=4, sampler=order)
    for (xa, ya), (xb, yb) in zip(loader, serial, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


# ---------------------------------------------------------------- the loops


def _plain_training(task: Task, steps: int, seed: int = 0) -> list[float]:
    """The same training written with nothing from the lab but its data: the oracle."""
    dataset = slowloop.SyntheticImages(task, seed)
    order = slowloop.sampling_order(task, steps, seed)
    model = slowloop.build_model(task, seed)
    opt = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=0.9)
    counts = np.bincount(dataset.labels, minlength=task.classes)
    weights = torch.tensor(len(dataset.labels) / (task.classes * counts), dtype=torch.float32)
    losses = []
    for step in range(steps):
        rows = [dataset[i] for i in order[step * task.batch : (step + 1) * task.batch]]
        x = torch.from_numpy(np.stack([r[0] for r in rows]))
        y = torch.tensor([r[1] for r in rows])
        loss = (
            torch.nn.functional.cross_entropy(model(x), y, weight=weights, reduction="sum")
            / task.batch
        )
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.parametrize("loop", [SLOW, FIXED], ids=["slow", "fixed"])
def test_both_loops_train_as_a_plain_loop_written_from_scratch(loop):
    """The slow loop's micro-batches add up to the batch; the fixed loop is the same training."""
    losses, _, _ = run(loop)
    assert losses == pytest.approx(_plain_training(TINY, STEPS), rel=1e-5)


def test_same_seed_same_losses_other_seed_other_losses():
    """The run is deterministic; the seed changes the data, the order and the weights."""
    first = run()[0]
    assert run()[0] == first and run(seed=1)[0] != first
    assert len(first) == STEPS and all(np.isfinite(first))


def test_the_parts_add_up_within_the_loops_time():
    """run.part times each labelled part on the host; together they fit in the loop's time."""
    start = time.perf_counter()
    _, seconds, prepared = run()
    outside = time.perf_counter() - start
    parts = prepared.part_seconds
    assert {
        "wait for data",
        "class weights",
        "forward + backward",
        "optimizer step",
        "read the loss (.item)",
        "copy to device",
    } == set(parts)
    assert 0 < sum(parts.values()) <= seconds <= outside


def test_the_loss_goes_down_over_a_longer_run():
    """The task is learnable: after 30 steps the loss is well below the first steps'."""
    task = dataclasses.replace(TINY, batch=32, image_size=12, noise=0.5)
    losses = run(FIXED, task, steps=30)[0]
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])


def test_the_fixed_loop_uses_the_workers_it_is_given():
    """run.workers sets the loader's processes: with two workers the losses are unchanged."""
    assert run(FIXED, workers=2)[0] == pytest.approx(run(FIXED, workers=0)[0], rel=1e-6)
    assert training_loops.prepare(TINY, 1).workers == slowloop.recommended_workers("cpu")


def test_tolerances_grow_with_lower_precision():
    """fp32 is held tightest, bf16 loosest."""
    tol = {a: slowloop_grading.tolerance_for(a)["rtol"] for a in formats.AUTOCAST_PRECISIONS}
    assert tol["fp32"] < tol["autocast-fp16"] < tol["autocast-bf16"] <= 0.05


def test_recommended_workers_leave_the_training_its_cores(monkeypatch):
    """A GPU's loop gets the CPUs less one (1 to 4); a CPU's, only the cores torch leaves free."""
    monkeypatch.setattr(slowloop.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    assert slowloop.recommended_workers() == 4 == slowloop.recommended_workers("cuda")
    assert slowloop.recommended_workers("cpu") == 4
    monkeypatch.setattr(slowloop.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert slowloop.recommended_workers() == 1 and slowloop.recommended_workers("cpu") == 0


# ---------------------------------------------------------------- measuring and profiling


def test_measure_loops_interleaves_repeats_of_every_loop():
    """Each loop runs `repeats` times; medians, losses and the data share are per label."""
    timed = slowloop_profile.measure_loops(
        {"slow": SLOW, "fixed": FIXED},
        TINY,
        2,
        "cpu",
        repeats=2,
        progress=False,
        workers={"fixed": 0},
    )
    assert list(timed) == ["slow", "fixed"]
    for t in timed.values():
        assert len(t.runs_s) == 2 and t.seconds > 0 and len(t.losses) == 2
        assert t.samples_per_s == 2 * TINY.batch / t.seconds and 0 < t.data_share < 1
    assert timed["slow"].losses == pytest.approx(timed["fixed"].losses, rel=1e-5)
    with pytest.raises(GpulabConfigError, match="empty"):
        slowloop_profile.measure_loops({}, TINY, 1, "cpu")
    with pytest.raises(GpulabConfigError, match="repeats"):
        slowloop_profile.measure_loops({"slow": SLOW}, TINY, 1, "cpu", repeats=0)


def test_profile_shows_the_parts_and_the_top_operators():
    """The profile names the loop's parts (data, class weights...) and real torch operators."""
    report = slowloop_profile.profile_training_loop(SLOW, TINY, 2, "cpu", top=5)
    phases = {p["phase"]: p for p in report.phases}
    assert {
        "wait for data",
        "class weights",
        "forward + backward",
        "optimizer step",
        "read the loss (.item)",
    } <= set(phases)
    assert all(0 < p["share"] <= 1.5 for p in report.phases)  # the profiler's own cost adds a bit
    assert sum(p["seconds"] for p in report.phases) <= report.seconds * 1.5
    assert report.data_share == phases["wait for data"]["share"] > 0
    assert 0 < len(report.ops) <= 5 and any(o["op"].startswith("aten::") for o in report.ops)
    assert report.ops == sorted(report.ops, key=lambda o: -o["seconds"])
    assert report.device_busy is None  # kernels' busy share is measured on CUDA only
    fixed = slowloop_profile.profile_training_loop(FIXED, TINY, 2, "cpu")
    fixed_phases = {p["phase"]: p for p in fixed.phases}
    # the weights are counted once, before the loop, and the batch goes through in one pass per
    # step, not at each of the 2 x 16 / 4 = 8 micro-batches (calls, not seconds: no timing is
    # asserted on a CPU CI machine)
    assert "class weights" not in fixed_phases
    assert fixed_phases["forward + backward"]["calls"] == 2
    assert phases["class weights"]["calls"] == phases["forward + backward"]["calls"]
    assert phases["class weights"]["calls"] == 2 * TINY.batch // 4


def test_long_kernel_names_are_cut():
    """CUDA kernel names run to hundreds of characters; the table keeps the first 64."""
    assert slowloop_profile._short("aten::mm") == "aten::mm"
    cut = slowloop_profile._short("void cutlass::Kernel<" + "x" * 200 + ">")
    assert len(cut) == 64 and cut.endswith("...")


# ---------------------------------------------------------------- on a GPU (make test-gpu)


@pytest.mark.gpu
def test_fixed_loop_is_at_least_twice_as_fast_on_cuda():
    """On a CUDA GPU the fixed loop passes the grader and reaches GPU_SPEEDUP_GOAL."""
    task, steps = slowloop.sizes("cuda", quick=True)  # what `make test-gpu` runs in the lab
    slowloop_grading.grade_loop(FIXED, task, steps, "cuda").require()
    timed = slowloop_profile.measure_loops(
        {"slow": SLOW, "fixed": FIXED}, task, steps, "cuda", repeats=3, progress=False
    )
    speedup = timed["fixed"].samples_per_s / timed["slow"].samples_per_s
    assert speedup >= slowloop_grading.GPU_SPEEDUP_GOAL, f"only {speedup:.2f}x faster on the GPU"
