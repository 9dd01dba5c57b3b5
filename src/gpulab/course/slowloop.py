"""A training loop with planted slow-downs, and the same loop fixed (chapter 5's lab).

    from gpulab import slowloop, slowloop_profile

    task = slowloop.Task()                          # the problem: data, model, batch, lr
    slow = slowloop.run_loop(slowloop.SLOW, steps=20, device=dev, task=task)
    fixed = slowloop.run_loop(slowloop.fixed_config(dev, task), 20, dev, task=task)
    slowloop_profile.profile_loop(slowloop.SLOW, 4, dev, task=task).phases  # where time goes

The lab's fixes and their grading are in ``gpulab.slowloop_grading``; interleaved timings and
the profiler's view in ``gpulab.slowloop_profile``.

The problem (`Task`) is fixed; only the way the loop runs it (`LoopConfig`) changes. The slow
loop has the problems of many first training scripts:

- a starved data loader: an expensive per-sample augmentation, done in the training process
  between steps (`num_workers=0`), so the device waits for the CPU;
- a batch too small for the device: the optimizer's batch is reached by accumulating the
  gradients of tiny micro-batches, each a full round of kernel launches;
- per-step Python work that belongs outside the loop: the loss's class weights are counted in
  a Python loop over the whole dataset's labels at every micro-batch;
- on a GPU, `loss.item()` at every micro-batch, which makes the CPU wait for the GPU to finish
  before it may queue more work;
- on a GPU, fp32 matrix products where autocast's bf16 (or fp16) fits (the field
  ``precision``, in the library's one vocabulary: "fp32", "autocast-bf16", "autocast-fp16").

Every configuration trains on the same samples in the same order, from the same initial
weights, with the same effective batch (the gradients of the micro-batches of one step add up
to the gradient of the whole batch: the loss is a sum over samples divided by `Task.batch`),
so the loss of each optimizer step must match between the slow and the fixed loop, up to
rounding (and autocast's lower precision). That is what makes "the fix kept the results" a
real check: a fix that changes the data order, the effective batch or the gradient scaling
shows up in the losses.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from gpulab.bench import timing
from gpulab.bench.precision import autocast, check_runs_on, fast_precision, grad_scaler
from gpulab.bench.quiet import quiet_stderr
from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import (
    Between,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    checked,
)
from gpulab.reference.formats import AutocastPrecision

__all__ = ["SLOW", "LoopConfig", "LoopResult", "SyntheticImages", "Task", "augment",
           "build_model", "class_weights", "fixed_config", "loader_options", "recommended_workers", "run_loop",
           "sampling_order", "sizes", "usable_cpus", "validate"]

LOADER_TIMEOUT_S = 120.0  # a worker that sends nothing for this long fails the run, not hangs it
SYNC_EVERY_FIXED = 50  # micro-batches between loss reads in the fixed loop
TEMPLATE_BLUR = 4  # blur rounds that make the class templates smooth


@checked
@dataclass(frozen=True)
class Task:
    """The training problem; the same for every LoopConfig, so their losses can be compared."""

    batch: PositiveInt = 128  # samples per optimizer step (the effective batch, whatever the micro-batch)
    image_size: Annotated[int, Between(1, 1024)] = 16  # side of the square one-channel input images
    classes: Annotated[int, Between(2, 10_000)] = 10  # labels; their frequencies are skewed, hence the class weights
    hidden: PositiveInt = 512  # width of the MLP's two hidden layers
    dataset_size: PositiveInt = 50_000  # samples in the dataset; class weights count all their labels
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
@dataclass(frozen=True)
class LoopConfig:
    """How the loop runs the Task: one field per planted problem; the defaults are the slow loop."""

    num_workers: Annotated[int, Between(0, 64)] = 0  # loader processes for the augmentation; 0: the training process
    micro_batch: PositiveInt = 4  # samples per forward/backward; Task.batch // micro_batch per step
    precompute: bool = False  # class weights counted once before the loop, not per micro-batch
    sync_every: PositiveInt = 1  # micro-batches between reads of the loss; 1: .item() every time
    # gpulab.formats.AUTOCAST_PRECISIONS: "fp32", "autocast-bf16", or "autocast-fp16" (CUDA
    # only, with a GradScaler), the same names the memory estimator counts
    precision: AutocastPrecision = "fp32"
    pin_memory: bool = False  # page-locked batches, copied with non_blocking=True (CUDA only)


SLOW = LoopConfig()  # the loop as first written: every planted problem present


def sizes(device: Any = "cpu", quick: bool = False) -> tuple[Task, int]:
    """The lab's Task and number of optimizer steps for a device, in quick mode or not.

    A GPU gets more steps: its runs are short, and a fixed loop must run long enough that
    starting the loader's worker processes (tens of ms each) is not most of its time.
    """
    import torch

    on_cpu = torch.device(device).type == "cpu"
    if quick:
        return (Task(batch=32, hidden=256), 8) if on_cpu else (Task(batch=64, hidden=256), 40)
    return (Task(), 20) if on_cpu else (Task(), 60)


@checked
def validate(config: LoopConfig, task: Task, device: Any = "cpu") -> None:
    """Raise GpulabConfigError naming the field of `config` that cannot run `task` on `device`.

    The field types are checked when a LoopConfig is made; this checks the combinations.
    """
    if config.micro_batch > task.batch or task.batch % config.micro_batch:
        divisors = [d for d in range(1, task.batch + 1) if task.batch % d == 0]
        raise GpulabConfigError(
            f"micro_batch={config.micro_batch} must divide the optimizer's batch "
            f"(Task.batch={task.batch}), so every step sees the same samples: one of {divisors}")
    check_runs_on(config.precision, device)


# ---------------------------------------------------------------- data


def augment(image: np.ndarray, rng: np.random.Generator, passes: int) -> np.ndarray:
    """A deliberately slow per-sample augmentation: shift, flip, `passes` blurs, standardise.

    Many tiny numpy calls on one small image: the time goes to Python and numpy's per-call
    overhead, not arithmetic, as in many hand-written augmentations. It is deterministic for
    a given `rng`, so a worker process computes exactly what the training process would.
    """
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
        image = augment(self.templates[label] + noise, rng, self.task.transform_passes)
        return image.reshape(-1), label  # (image_size**2,) float32, and the label


def sampling_order(task: Task, steps: int, seed: int = 0) -> list[int]:
    """The dataset indices of `steps` optimizer steps, in order: shuffled epochs, seeded."""
    rng = np.random.default_rng((seed, 1))
    needed = steps * task.batch
    epochs = -(-needed // task.dataset_size)  # a long run goes over the data more than once
    order = np.concatenate([rng.permutation(task.dataset_size) for _ in range(epochs)])
    return order[:needed].tolist()


def class_weights(labels: np.ndarray, classes: int) -> list[float]:
    """Balanced class weights, n / (classes x count), counted in a plain Python loop.

    This is the slow loop's per-step Python work: fine once, costly at every micro-batch.
    """
    counts = [0] * classes
    for label in labels.tolist():
        counts[label] += 1
    total = sum(counts)
    return [total / (classes * c) if c else 0.0 for c in counts]


# ---------------------------------------------------------------- model and loop


def build_model(task: Task, seed: int = 0):
    """The MLP being trained (input -> hidden -> hidden -> classes), seeded, on the CPU."""
    import torch

    with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(task.image_size**2, task.hidden), torch.nn.ReLU(),
            torch.nn.Linear(task.hidden, task.hidden), torch.nn.ReLU(),
            torch.nn.Linear(task.hidden, task.classes))


@dataclass
class LoopResult:
    """One run of the loop: each optimizer step's loss, and how long the run took."""

    config: LoopConfig
    losses: tuple[float, ...]  # per optimizer step: sum of weighted sample losses / Task.batch
    seconds: float  # wall time from the loader's start to the last step finished on the device
    data_wait_s: float  # part of `seconds` spent waiting for the next micro-batch
    samples: int  # samples trained on: steps x Task.batch
    device: str

    @property
    def samples_per_s(self) -> float:
        """Training samples per second over the whole run."""
        return self.samples / self.seconds

    @property
    def data_share(self) -> float:
        """Share of the run spent waiting for data."""
        return self.data_wait_s / self.seconds


def _mp_context() -> str | None:
    """Start method for DataLoader workers: fork on Linux (fast, no re-import), else the default.

    Forked workers inherit the dataset without pickling it and start in milliseconds; they
    never touch the GPU (they return numpy arrays), so a CUDA context in the parent is safe.
    macOS and Windows use spawn, where the dataset must be importable: it is, from gpulab.
    """
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return None


def _loader(dataset: SyntheticImages, order: list[int], config: LoopConfig, device):
    """The DataLoader of a config: micro-batches in the given order, workers if asked."""
    import torch

    return torch.utils.data.DataLoader(
        dataset, batch_size=config.micro_batch, sampler=order,
        pin_memory=config.pin_memory and device.type == "cuda",
        **loader_options(config.num_workers))


def loader_options(workers: int) -> dict[str, Any]:
    """DataLoader arguments for `workers` loader processes (0: load in this process).

    Fresh workers per run (nothing outlives it), started by fork where the OS has it, and a
    timeout, so that a dead worker fails the run instead of hanging it.
    """
    if not workers:
        return {"num_workers": 0}
    return {"num_workers": workers, "timeout": LOADER_TIMEOUT_S, "persistent_workers": False,
            "multiprocessing_context": _mp_context()}


def _warm_up(model, task: Task, config: LoopConfig, device) -> None:
    """One forward/backward/step on a copy, so one-off start-up costs are no config's bill."""
    import torch

    spare = copy.deepcopy(model)
    opt = torch.optim.SGD(spare.parameters(), lr=task.lr, momentum=0.9)
    for rows in {config.micro_batch, task.batch}:
        x = torch.zeros(rows, task.image_size**2, device=device)
        y = torch.zeros(rows, dtype=torch.long, device=device)
        with autocast(device, config.precision):
            logits = spare(x)
        torch.nn.functional.cross_entropy(logits.float(), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    timing.synchronize(device)


def _phase(name: str, profiling: bool):
    """A labelled range for the profiler while profiling; nothing otherwise (it costs a little)."""
    if not profiling:
        return contextlib.nullcontext()
    import torch

    return torch.profiler.record_function(f"loop: {name}")


@checked
def run_loop(config: LoopConfig, steps: PositiveInt, device: Any = "cpu", seed: NonNegativeInt = 0,
             task: Task | None = None, *, _profiler: Any = None) -> LoopResult:
    """Train a fresh model for `steps` optimizer steps as `config` says; time it, keep the losses.

    `_profiler` (used by profile_loop) is a torch.profiler.profile, started when the clock
    starts and stopped when it stops, so that set-up and warm-up stay out of the profile.
    """
    import torch
    import torch.nn.functional as F

    task = task or Task()
    device = torch.device(device)
    validate(config, task, device)
    dataset = SyntheticImages(task, seed)
    order = sampling_order(task, steps, seed)
    model = build_model(task, seed).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=0.9)
    scaler = grad_scaler(config.precision)
    accumulate = task.batch // config.micro_batch
    _warm_up(model, task, config, device)
    loader = _loader(dataset, order, config, device)
    phase = lambda name: _phase(name, _profiler is not None)  # noqa: E731
    micro_losses: list[float] = []  # on the host, one per micro-batch
    pending: list = []  # losses still on the device, not read yet
    data_wait = 0.0
    timing.synchronize(device)
    if _profiler is not None:
        start_quietly(_profiler)
    start = time.perf_counter()
    weights = None  # the loss's class weights, counted below
    if config.precompute:  # the fix for the per-step work: counted once, before the loop
        with phase("class weights"):
            weights = torch.tensor(class_weights(dataset.labels, task.classes), device=device)
    batches = iter(loader)
    for _ in range(steps):
        for _ in range(accumulate):
            with phase("wait for data"):
                t0 = time.perf_counter()
                x, y = next(batches)
                data_wait += time.perf_counter() - t0
            with phase("copy to device"):
                x = x.to(device, non_blocking=config.pin_memory)  # (micro_batch, image_size**2)
                y = y.to(device, non_blocking=config.pin_memory)  # (micro_batch,)
            if not config.precompute:
                with phase("class weights"):  # the planted per-step Python work
                    weights = torch.tensor(class_weights(dataset.labels, task.classes),
                                           device=device)
            with phase("forward + backward"):
                with autocast(device, config.precision):
                    logits = model(x)  # (micro_batch, classes)
                # a sum over samples / the step's batch: micro-batches add up to the batch's loss
                loss = F.cross_entropy(logits.float(), y, weight=weights,
                                       reduction="sum") / task.batch
                (scaler.scale(loss) if scaler else loss).backward()
            with phase("read the loss (.item)"):
                pending.append(loss.detach())
                if len(pending) >= config.sync_every:
                    if len(pending) == 1:
                        micro_losses.append(pending[0].item())  # waits for the device
                    else:  # one copy, one wait, for N micro-batches
                        micro_losses.extend(torch.stack(pending).tolist())
                    pending.clear()
        with phase("optimizer step"):
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            opt.zero_grad(set_to_none=True)
    if pending:
        micro_losses.extend(torch.stack(pending).tolist())
    timing.synchronize(device)
    seconds = time.perf_counter() - start
    if _profiler is not None:
        stop_quietly(_profiler)
    del batches  # shuts the workers down
    losses = tuple(sum(micro_losses[i:i + accumulate])
                   for i in range(0, len(micro_losses), accumulate))
    return LoopResult(config, losses, seconds, data_wait, steps * task.batch, str(device))


# ---------------------------------------------------------------- the fixes


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows
        return os.cpu_count() or 1


def recommended_workers(device: Any = None) -> int:
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


def fixed_config(device: Any = "cpu", task: Task | None = None) -> LoopConfig:
    """The loop with every problem fixed, for this device and machine."""
    import torch

    task = task or Task()
    device = torch.device(device)
    return LoopConfig(num_workers=recommended_workers(device), micro_batch=task.batch,
                      precompute=True, sync_every=SYNC_EVERY_FIXED,
                      precision=fast_precision(device),
                      pin_memory=device.type == "cuda")


def start_quietly(prof) -> None:
    """Start a profiler without the line its C++ side writes to file descriptor 2."""
    with quiet_stderr():
        prof.start()


def stop_quietly(prof) -> None:
    """Stop a profiler without the line its C++ side writes to file descriptor 2."""
    with quiet_stderr():
        prof.stop()
