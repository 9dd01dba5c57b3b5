"""The training problem of chapter 5's lab: data, model, and what the machine can spare.

    from gpulab import slowloop, training_loops

    task, steps = slowloop.sizes(dev, quick)  # the problem, and optimizer steps per run
    run = training_loops.prepare(task, steps, dev)  # data, order, model, optimizer: seeded
    losses = training_loops.slow_training_loop(run)

The loops themselves, the slow one as first written and the fixed one, are plain code in
``gpulab.training_loops``; how a learner's loop is graded is in ``gpulab.slowloop_grading``,
interleaved timings and the profiler's view in ``gpulab.slowloop_profile``.

The problem (`Task`) is fixed; only the way a loop runs it changes. It has what the slow loop's
problems need: an expensive per-sample augmentation (numpy, in whichever process loads the data),
labels skewed enough that the loss needs class weights (counted by a plain Python loop, cheap
once and costly at every micro-batch), and an MLP small enough that tiny micro-batches are all
launch overhead. Every loop trains on the same samples in the same order, from the same initial
weights, with the loss a sum over samples divided by `Task.batch`, so the gradients of
micro-batches add up to the gradient of the whole batch and the loss of each optimizer step must
match between loops, up to rounding (and autocast's lower precision).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

if TYPE_CHECKING:
    import torch

from gpulab.bench.quiet import quiet_stderr
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import (
    Between,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    checked,
)

__all__ = [
    "SyntheticImages",
    "Task",
    "augment",
    "build_model",
    "class_weights",
    "loader_options",
    "recommended_workers",
    "sampling_order",
    "sizes",
    "usable_cpus",
]

# Samples a run may draw: the order is a Python list of them (about 36 bytes each, so ~36 MB),
# and the lab's longest run draws 60 x 128 = 7,680; 2**63 steps would fill any machine.
MAX_SAMPLES = 1_000_000
LOADER_TIMEOUT_S = 120.0  # a worker that sends nothing for this long fails the run, not hangs it
TEMPLATE_BLUR = 4  # blur rounds that make the class templates smooth


@checked
@dataclass(frozen=True)
class Task:
    """The training problem; the same for every loop, so their losses can be compared."""

    batch: PositiveInt = (
        128  # samples per optimizer step (the effective batch, whatever the micro-batch)
    )
    image_size: Annotated[int, Between(1, 1024)] = 16  # side of the square one-channel input images
    classes: Annotated[int, Between(2, 10_000)] = (
        10  # labels; their frequencies are skewed, hence the class weights
    )
    hidden: PositiveInt = 512  # width of the MLP's two hidden layers
    dataset_size: PositiveInt = (
        50_000  # samples in the dataset; class weights count all their labels
    )
    transform_passes: NonNegativeInt = 12  # blur rounds of the augmentation: its cost per sample
    noise: PositiveFloat = 3.0  # standard deviation of the noise around each class's template image
    lr: PositiveFloat = 0.05  # SGD learning rate (momentum 0.9)

    @property
    def parameters(self) -> int:
        """Weights and biases of the MLP."""
        inputs, h, c = self.image_size**2, self.hidden, self.classes
        return inputs * h + h + h * h + h + h * c + c

    def bytes_needed(self) -> int:
        """Device bytes of a training step at the whole batch, in fp32.

        Weights, gradients and SGD's momentum (3 x 4 bytes per parameter), plus the inputs
        and activations of one batch and their gradients (2 x 4 bytes per value).
        """
        values_per_sample = self.image_size**2 + 2 * self.hidden + self.classes
        return 12 * self.parameters + 8 * self.batch * values_per_sample


@checked
def sizes(device: torch.device | str = "cpu", quick: bool = False) -> tuple[Task, int]:
    """The lab's Task and number of optimizer steps for a device, in quick mode or not.

    A GPU gets more steps: its runs are short, and a fixed loop must run long enough that
    starting the loader's worker processes (tens of ms each) is not most of its time.
    """
    import torch

    on_cpu = torch.device(device).type == "cpu"
    if quick:
        return (Task(batch=32, hidden=256), 8) if on_cpu else (Task(batch=64, hidden=256), 40)
    return (Task(), 20) if on_cpu else (Task(), 60)


# ---------------------------------------------------------------- data


@checked
def augment(image: np.ndarray, rng: np.random.Generator, passes: NonNegativeInt) -> np.ndarray:
    """A deliberately slow per-sample augmentation: shift, flip, `passes` blurs, standardise.

    Many tiny numpy calls on one small image: the time goes to Python and numpy's per-call
    overhead, not arithmetic, as in many hand-written augmentations. It is deterministic for
    a given `rng`, so a worker process computes exactly what the training process would.
    """
    return _augment(image, rng, passes)


def _augment(image: np.ndarray, rng: np.random.Generator, passes: int) -> np.ndarray:
    """`augment` without the check of its arguments, for the dataset's every read."""
    dy, dx = rng.integers(-1, 2, size=2)
    image = np.roll(image, (int(dy), int(dx)), axis=(0, 1))
    if rng.random() < 0.5:
        image = image[:, ::-1]
    image = _blur(image, passes)
    image = (image - image.mean()) / (image.std() + np.float32(1e-6))
    return np.ascontiguousarray(image, dtype=np.float32)


def _blur(image: np.ndarray, passes: int) -> np.ndarray:
    """`passes` rounds of a 3-tap blur (each pixel, its upper and its left neighbour)."""
    for _ in range(passes):
        image = (image + np.roll(image, 1, axis=-2) + np.roll(image, 1, axis=-1)) / np.float32(3)
    return image


class SyntheticImages:
    """A map-style dataset of noisy class templates, augmented on every read (numpy, no torch).

    Sample `i` depends only on the seed and `i`, so any worker process, in any order, gives
    the same sample. The labels are skewed (class k has weight 1/(k+1)).
    """

    def __init__(self, task: Task, seed: int = 0):
        rng = np.random.default_rng(seed)
        probs = 1.0 / np.arange(1, task.classes + 1)
        self.task = task
        self.seed = seed
        self.labels = rng.choice(task.classes, size=task.dataset_size, p=probs / probs.sum())
        side = task.image_size
        # smooth patterns (blurred noise), so a shift of a pixel keeps most of the class's look
        noise = rng.standard_normal((task.classes, side, side)).astype(np.float32)
        smooth = _blur(noise, TEMPLATE_BLUR)
        self.templates = smooth / smooth.std(axis=(1, 2), keepdims=True)

    def __len__(self) -> int:
        return self.task.dataset_size

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        rng = np.random.default_rng((self.seed, int(index)))
        label = int(self.labels[index])
        side = self.task.image_size
        noise = rng.standard_normal((side, side), dtype=np.float32) * np.float32(self.task.noise)
        image = _augment(self.templates[label] + noise, rng, self.task.transform_passes)
        return image.reshape(-1), label  # (image_size**2,) float32, and the label


@checked
def sampling_order(task: Task, steps: PositiveInt, seed: NonNegativeInt = 0) -> list[int]:
    """The dataset indices of `steps` optimizer steps, in order: shuffled epochs, seeded."""
    needed = steps * task.batch
    if needed > MAX_SAMPLES:  # the order is built in memory: refuse before building it
        raise GpulabConfigError(
            f"steps={steps} x batch={task.batch} is {needed:.3g} samples; at most "
            f"{MAX_SAMPLES:,} (steps <= {MAX_SAMPLES // task.batch:,} at this batch)",
            "steps",
        )
    rng = np.random.default_rng((seed, 1))
    epochs = -(-needed // task.dataset_size)  # a long run goes over the data more than once
    order = np.concatenate([rng.permutation(task.dataset_size) for _ in range(epochs)])
    return order[:needed].tolist()


@checked
def class_weights(labels: np.ndarray, classes: PositiveInt) -> list[float]:
    """Balanced class weights, n / (classes x count), counted in a plain Python loop.

    This is the slow loop's per-step Python work: fine once, costly at every micro-batch.
    `labels` are integers from 0 to classes - 1.
    """
    if labels.dtype.kind not in "iu":
        raise GpulabConfigError(
            f"labels must hold integer class ids, not {labels.dtype} values", "labels"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise GpulabConfigError(
            f"labels run from {labels.min()} to {labels.max()}: each must be a class id from 0 "
            f"to classes - 1 = {classes - 1}",
            "classes" if labels.min() >= 0 else "labels",
        )
    counts = [0] * classes
    for label in labels.tolist():
        counts[label] += 1
    total = sum(counts)
    return [total / (classes * c) if c else 0.0 for c in counts]


# ---------------------------------------------------------------- model and loop


@checked
def build_model(task: Task, seed: int = 0) -> torch.nn.Module:
    """The MLP being trained (input -> hidden -> hidden -> classes), seeded, on the CPU."""
    import torch

    with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(task.image_size**2, task.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(task.hidden, task.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(task.hidden, task.classes),
        )


def _mp_context() -> str | None:
    """Start method for DataLoader workers: fork on Linux (fast, no re-import), else the default.

    Forked workers inherit the dataset without pickling it and start in milliseconds; they
    never touch the GPU (they return numpy arrays), so a CUDA context in the parent is safe.
    macOS and Windows use spawn, where the dataset must be importable: it is, from gpulab.
    """
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return None


@checked
def loader_options(workers: NonNegativeInt) -> dict[str, Any]:
    """DataLoader arguments for `workers` loader processes (0: load in this process).

    Fresh workers per run (nothing outlives it), started by fork where the OS has it, and a
    timeout, so that a dead worker fails the run instead of hanging it.
    """
    if not workers:
        return {"num_workers": 0}
    return {
        "num_workers": workers,
        "timeout": LOADER_TIMEOUT_S,
        "persistent_workers": False,
        "multiprocessing_context": _mp_context(),
    }


# ---------------------------------------------------------------- the machine


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows
        return os.cpu_count() or 1


@checked
def recommended_workers(device: torch.device | str | None = None) -> int:
    """DataLoader workers for this machine: the CPUs this process may use less one, 1 to 4.

    With `device` the CPU, the training itself runs on torch's threads, so only the CPUs
    beyond them are spare (0 to 4): a worker on a busy core slows the training down. At most
    4 because the lab's runs last seconds and each worker takes tens of milliseconds to
    start; a long training run can use more.
    """
    import torch

    cpus = usable_cpus()
    if device is not None and torch.device(device).type == "cpu":
        return max(0, min(4, cpus - torch.get_num_threads()))
    return max(1, min(4, cpus - 1))


def start_quietly(prof) -> None:
    """Start a profiler without the line its C++ side writes to file descriptor 2."""
    with quiet_stderr():
        prof.start()


def stop_quietly(prof) -> None:
    """Stop a profiler without the line its C++ side writes to file descriptor 2."""
    with quiet_stderr():
        prof.stop()
