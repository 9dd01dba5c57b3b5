"""A training loop with planted slow-downs, and the same loop fixed (chapter 5's lab).

    from gpulab import slowloop

    task = slowloop.Task()                          # the problem: data, model, batch, lr
    slow = slowloop.run_loop(slowloop.SLOW, steps=20, device=dev, task=task)
    fixed = slowloop.run_loop(slowloop.fixed_config(dev, task), 20, dev, task=task)
    slowloop.profile_loop(slowloop.SLOW, 4, dev, task=task).phases  # where the time goes

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
- on a GPU, fp32 matrix products where autocast's bf16 (or fp16) fits.

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
import dataclasses
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulab import timing
from gpulab.errors import GpulabConfigError, require_positive, require_positive_ints

__all__ = ["AUTOCAST", "FIXES", "GPU_SPEEDUP_GOAL", "SLOW", "Fix", "LoopConfig", "LoopResult",
           "ProfileReport", "SyntheticImages", "Task", "Timed", "augment", "build_model",
           "check_fix", "check_losses", "class_weights", "fast_autocast", "fixed_config",
           "loss_tolerance", "measure", "profile_loop", "recommended_workers", "run_loop",
           "sampling_order", "sizes", "stages", "usable_cpus", "validate"]

AUTOCAST = ("off", "bf16", "fp16")  # precisions of the forward pass's matrix products
GPU_SPEEDUP_GOAL = 2.0  # on a CUDA GPU the fixed loop must be at least this much faster
LOADER_TIMEOUT_S = 120.0  # a worker that sends nothing for this long fails the run, not hangs it
SYNC_EVERY_FIXED = 50  # micro-batches between loss reads in the fixed loop
TEMPLATE_BLUR = 4  # blur rounds that make the class templates smooth


@dataclass(frozen=True)
class Task:
    """The training problem; the same for every LoopConfig, so their losses can be compared."""

    batch: int = 128  # samples per optimizer step (the effective batch, whatever the micro-batch)
    image_size: int = 16  # side of the square one-channel input images
    classes: int = 10  # labels; their frequencies are skewed, hence the class weights
    hidden: int = 512  # width of the MLP's two hidden layers
    dataset_size: int = 50_000  # samples in the dataset; class weights count all their labels
    transform_passes: int = 12  # blur rounds of the augmentation: its cost per sample
    noise: float = 3.0  # standard deviation of the noise around each class's template image
    lr: float = 0.05  # SGD learning rate (momentum 0.9)

    def __post_init__(self) -> None:
        require_positive_ints(batch=self.batch, image_size=self.image_size,
                              classes=self.classes, hidden=self.hidden,
                              dataset_size=self.dataset_size)
        if not isinstance(self.transform_passes, int) or self.transform_passes < 0:
            raise GpulabConfigError(
                f"transform_passes={self.transform_passes!r} must be an integer >= 0")
        require_positive(noise=self.noise, lr=self.lr)
        if self.classes < 2:
            raise GpulabConfigError(f"classes={self.classes!r} must be at least 2")

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


@dataclass(frozen=True)
class LoopConfig:
    """How the loop runs the Task: one field per planted problem; the defaults are the slow loop."""

    num_workers: int = 0  # loader processes for the augmentation; 0: the training process
    micro_batch: int = 4  # samples per forward/backward; Task.batch // micro_batch per step
    precompute: bool = False  # class weights counted once before the loop, not per micro-batch
    sync_every: int = 1  # micro-batches between reads of the loss; 1: .item() every time
    autocast: str = "off"  # "off" (fp32), "bf16", or "fp16" (CUDA only, with a GradScaler)
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


def validate(config: LoopConfig, task: Task, device: Any = "cpu") -> None:
    """Raise GpulabConfigError naming the first field of `config` that cannot run `task` on `device`."""
    import torch

    if not isinstance(config, LoopConfig):
        raise GpulabConfigError(f"config must be a slowloop.LoopConfig, not {type(config).__name__}")
    if not isinstance(config.num_workers, int) or isinstance(config.num_workers, bool) \
            or config.num_workers < 0:
        raise GpulabConfigError(f"num_workers={config.num_workers!r} must be an integer >= 0 "
                                "(0 loads the data in the training process)")
    require_positive_ints(micro_batch=config.micro_batch, sync_every=config.sync_every)
    if config.micro_batch > task.batch or task.batch % config.micro_batch:
        divisors = [d for d in range(1, task.batch + 1) if task.batch % d == 0]
        raise GpulabConfigError(
            f"micro_batch={config.micro_batch} must divide the optimizer's batch "
            f"(Task.batch={task.batch}), so every step sees the same samples: one of {divisors}")
    for name in ("precompute", "pin_memory"):
        if not isinstance(getattr(config, name), bool):
            raise GpulabConfigError(f"{name}={getattr(config, name)!r} must be True or False")
    if config.autocast not in AUTOCAST:
        raise GpulabConfigError(f"autocast={config.autocast!r} must be one of {', '.join(AUTOCAST)}")
    if config.autocast == "fp16" and torch.device(device).type != "cuda":
        raise GpulabConfigError(
            f"autocast='fp16' needs a CUDA GPU (float16 kernels and a GradScaler); the device "
            f"is {device}: use 'bf16' or 'off' there")


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


def _autocast(device, precision: str):
    """The autocast context of a precision ("off" gives a no-op)."""
    import torch

    if precision == "off":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)


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

    kwargs: dict[str, Any] = {"batch_size": config.micro_batch, "sampler": order,
                              "num_workers": config.num_workers,
                              "pin_memory": config.pin_memory and device.type == "cuda"}
    if config.num_workers:
        # fresh workers per run (nothing outlives it), and a timeout so a dead worker fails CI
        kwargs.update(timeout=LOADER_TIMEOUT_S, persistent_workers=False,
                      multiprocessing_context=_mp_context())
    return torch.utils.data.DataLoader(dataset, **kwargs)


def _warm_up(model, task: Task, config: LoopConfig, device) -> None:
    """One forward/backward/step on a copy, so one-off start-up costs are no config's bill."""
    import torch

    spare = copy.deepcopy(model)
    opt = torch.optim.SGD(spare.parameters(), lr=task.lr, momentum=0.9)
    for rows in {config.micro_batch, task.batch}:
        x = torch.zeros(rows, task.image_size**2, device=device)
        y = torch.zeros(rows, dtype=torch.long, device=device)
        with _autocast(device, config.autocast):
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


def run_loop(config: LoopConfig, steps: int, device: Any = "cpu", seed: int = 0,
             task: Task | None = None, *, _profiler: Any = None) -> LoopResult:
    """Train a fresh model for `steps` optimizer steps as `config` says; time it, keep the losses.

    `_profiler` (used by profile_loop) is a torch.profiler.profile, started when the clock
    starts and stopped when it stops, so that set-up and warm-up stay out of the profile.
    """
    import torch
    import torch.nn.functional as F

    task = task or Task()
    require_positive_ints(steps=steps)
    if not isinstance(seed, int):
        raise GpulabConfigError(f"seed={seed!r} must be an integer")
    device = torch.device(device)
    validate(config, task, device)
    dataset = SyntheticImages(task, seed)
    order = sampling_order(task, steps, seed)
    model = build_model(task, seed).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=task.lr, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda") if config.autocast == "fp16" else None
    accumulate = task.batch // config.micro_batch
    _warm_up(model, task, config, device)
    loader = _loader(dataset, order, config, device)
    phase = lambda name: _phase(name, _profiler is not None)  # noqa: E731
    micro_losses: list[float] = []  # on the host, one per micro-batch
    pending: list = []  # losses still on the device, not read yet
    data_wait = 0.0
    timing.synchronize(device)
    if _profiler is not None:
        _start_quietly(_profiler)
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
                with _autocast(device, config.autocast):
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
        _stop_quietly(_profiler)
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


def fast_autocast(device: Any) -> str:
    """The autocast precision that fits a device: bf16 on GPUs with bf16 units, fp16 on older
    CUDA GPUs, off on a CPU (most CPUs have no fast 16-bit matrix units)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return "off"
    return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"


def fixed_config(device: Any = "cpu", task: Task | None = None) -> LoopConfig:
    """The loop with every problem fixed, for this device and machine."""
    import torch

    task = task or Task()
    device = torch.device(device)
    return LoopConfig(num_workers=recommended_workers(device), micro_batch=task.batch,
                      precompute=True, sync_every=SYNC_EVERY_FIXED,
                      autocast=fast_autocast(device), pin_memory=device.type == "cuda")


@dataclass(frozen=True)
class Fix:
    """One planted problem's fix: the LoopConfig fields it changes, and why that is faster."""

    label: str  # short name, for tables and charts
    fields: tuple[str, ...]  # the LoopConfig fields it changes; every other field stays
    why: str  # one line: what changes, and why it saves time

    def problems(self, before: LoopConfig, after: LoopConfig, device: Any,
                 task: Task) -> list[str]:
        """What keeps `after` from being this fix applied to `before` (empty when it is)."""
        import torch

        out = [f"{f} changed from {getattr(before, f)!r} to {getattr(after, f)!r}, but this "
               f"fix is about {', '.join(self.fields)} only: fix one problem at a time"
               for f in _FIELDS if f not in self.fields and getattr(after, f) != getattr(before, f)]
        cuda = torch.device(device).type == "cuda"
        if "precompute" in self.fields and not after.precompute:
            out.append("precompute is still False: the class weights are still counted at "
                       "every micro-batch")
        if "micro_batch" in self.fields and after.micro_batch != task.batch:
            out.append(f"micro_batch={after.micro_batch}: use the whole batch, "
                       f"Task.batch={task.batch}; it fits the memory many times over")
        if "pin_memory" in self.fields and cuda and not after.pin_memory:
            out.append("pin_memory is False: on a CUDA GPU page-locked batches copy faster "
                       "and without blocking")
        if "sync_every" in self.fields and after.sync_every < 10:
            out.append(f"sync_every={after.sync_every}: the loop still waits for the device "
                       "every few micro-batches; read the loss every few dozen")
        if "autocast" in self.fields and cuda and after.autocast == "off":
            out.append("autocast is 'off' on a CUDA GPU, whose 16-bit Tensor Cores are many "
                       "times faster than its fp32 units")
        return out


_FIELDS = tuple(f.name for f in dataclasses.fields(LoopConfig))

# The fixes in the lab's order, each on top of the ones before.
FIXES: tuple[Fix, ...] = (
    Fix("class weights once", ("precompute",),
        "the Python loop over every label runs once, before training, not at every micro-batch"),
    Fix("whole batch", ("micro_batch",),
        "one forward/backward of the whole batch instead of many tiny ones (same gradient)"),
    Fix("loader workers", ("num_workers", "pin_memory"),
        "worker processes augment the next batches while the model trains on this one"),
    Fix("no per-step .item()", ("sync_every",),
        "the losses stay on the device and are read in one copy every few dozen micro-batches"),
    Fix("autocast", ("autocast",),
        "the matrix products run in 16 bits where the device has fast units for them"),
)


def stages(device: Any = "cpu", task: Task | None = None) -> list[tuple[str, LoopConfig]]:
    """The slow loop, then each fix of FIXES added to the previous one, ending at fixed_config."""
    target = fixed_config(device, task)
    config = SLOW
    out = [("original", config)]
    for fix in FIXES:
        config = dataclasses.replace(config, **{f: getattr(target, f) for f in fix.fields})
        out.append((fix.label, config))
    return out


def check_losses(result: LoopResult, reference: LoopResult, name: str = "the loop"):
    """Raise AssertionError unless `result`'s losses match `reference`'s within tolerance.

    Returns gpulab.labs.check's CheckResult (the largest difference seen) when they match.
    """
    from gpulab import labs

    if len(result.losses) != len(reference.losses):
        raise AssertionError(f"{name} ran {len(result.losses)} steps, the reference "
                             f"{len(reference.losses)}: run both for the same steps")
    # as arrays, so that a mismatch is reported as "k of n values differ, worst at step i"
    return labs.check(lambda: np.asarray(result.losses), lambda: np.asarray(reference.losses),
                      [()], name=f"{name}'s losses", **loss_tolerance(result.config))


def check_fix(fix_fn, fix: Fix, before: LoopConfig, reference: LoopResult, steps: int,
              device: Any = "cpu", task: Task | None = None, seed: int = 0) -> LoopResult:
    """Apply a learner's fix to `before`, check it, run it, check its losses; return the run.

    `fix_fn(config) -> LoopConfig` is the learner's function, `fix` the FIXES entry it
    implements, `reference` the slow loop's run. Raises AssertionError saying what is wrong,
    or "is not written yet" while the function is a stub.
    """
    from gpulab import labs

    task = task or Task()
    name = getattr(fix_fn, "__name__", "your fix")
    try:
        after = fix_fn(before)
    except NotImplementedError as exc:
        raise AssertionError(f"`{name}` is not written yet: {exc or labs.DEFAULT_HINT}") from None
    if not isinstance(after, LoopConfig):
        raise AssertionError(f"`{name}` returned {type(after).__name__}; return a LoopConfig "
                             "(dataclasses.replace(config, field=value))")
    try:
        validate(after, task, device)
    except GpulabConfigError as err:
        raise AssertionError(f"`{name}` returned a config that cannot run: {err}") from None
    problems = fix.problems(before, after, device, task)
    if problems:
        raise AssertionError(f"`{name}`: " + "; ".join(problems))
    result = run_loop(after, steps, device, seed, task)
    check_losses(result, reference, name)
    return result


def loss_tolerance(config: LoopConfig) -> dict[str, float]:
    """rtol and atol within which a config's losses must match the fp32 slow loop's.

    In fp32 the configs differ only in the order of additions (micro-batches, matrix
    blocking): measured on a CPU, at most 3e-7 relative over 100 steps. Autocast rounds every
    product's inputs to 8 (bf16) or 11 (fp16) bits of mantissa, and training carries the
    difference forward: bf16 autocast on a CPU differed by up to 1.1e-2 relative over the
    lab's 40 quick GPU steps and 7e-3 over its 60 full ones, 5 to 10 times inside the bf16
    tolerance. That tolerance still catches another data order or a learning rate 20% off.
    """
    if config.autocast == "bf16":
        return {"rtol": 5e-2, "atol": 1e-2}
    if config.autocast == "fp16":
        return {"rtol": 2e-2, "atol": 5e-3}
    return {"rtol": 1e-4, "atol": 1e-6}


# ---------------------------------------------------------------- measuring and profiling


@dataclass
class Timed:
    """Several interleaved runs of one config: the losses of the first, every run's time."""

    label: str
    config: LoopConfig
    runs: list[LoopResult]

    @property
    def losses(self) -> tuple[float, ...]:
        """Each optimizer step's loss (from the first run; every run trains the same way)."""
        return self.runs[0].losses

    @property
    def seconds(self) -> float:
        """Median wall time of a run."""
        return statistics.median(r.seconds for r in self.runs)

    @property
    def samples_per_s(self) -> float:
        """Samples per second at the median time."""
        return self.runs[0].samples / self.seconds

    @property
    def data_share(self) -> float:
        """Median share of a run spent waiting for data."""
        return statistics.median(r.data_share for r in self.runs)


def measure(configs: dict[str, LoopConfig] | list[tuple[str, LoopConfig]], steps: int,
            device: Any = "cpu", repeats: int = 3, seed: int = 0, task: Task | None = None,
            progress: bool = True) -> dict[str, Timed]:
    """Run every config `repeats` times, interleaved (a, b, a, b...), so drift hits all alike."""
    from gpulab.measure import progress_bar

    require_positive_ints(repeats=repeats)
    items = list(configs.items()) if isinstance(configs, dict) else list(configs)
    if not items:
        raise GpulabConfigError("configs is empty; give at least one LoopConfig to measure")
    for _, config in items:
        validate(config, task or Task(), device)
    # a config listed twice (a fix that changes nothing on this device) is run once
    shared: dict[LoopConfig, list[LoopResult]] = {config: [] for _, config in items}
    for config in shared:  # one untimed step each: first-run costs are no config's bill
        run_loop(config, 1, device, seed, task)
    runs = [config for _ in range(repeats) for config in shared]
    for config in progress_bar(runs, "training loops", progress):
        shared[config].append(run_loop(config, steps, device, seed, task))
    return {label: Timed(label, config, shared[config]) for label, config in items}


@dataclass
class ProfileReport:
    """Where a run's time went: the loop's phases, and the torch operators that cost most."""

    phases: list[dict]  # {"phase", "calls", "seconds", "share"} over the loop's wall time
    ops: list[dict]  # {"op", "calls", "seconds", "share"}: self time, largest first
    seconds: float  # wall time of the profiled run (the profiler's own overhead included)
    device: str
    device_busy: float | None = None  # on a CUDA GPU: share of the run its kernels ran

    @property
    def data_share(self) -> float:
        """Share of the run spent waiting for data."""
        return next((p["share"] for p in self.phases if p["phase"] == "wait for data"), 0.0)


def profile_loop(config: LoopConfig, steps: int, device: Any = "cpu", seed: int = 0,
                 task: Task | None = None, top: int = 8) -> ProfileReport:
    """Run the loop under torch.profiler; return its phases' shares and its top operators."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    require_positive_ints(top=top)
    activities = [ProfilerActivity.CPU]
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        activities.append(ProfilerActivity.CUDA)
    prof = profile(activities=activities)
    try:
        result = run_loop(config, steps, device, seed, task, _profiler=prof)
    except BaseException:
        with contextlib.suppress(Exception):  # stopped already if the error came after the loop
            _stop_quietly(prof)
        raise
    events = prof.key_averages()
    wall_us = result.seconds * 1e6
    phases = [{"phase": e.key.removeprefix("loop: "), "calls": e.count,
               "seconds": e.cpu_time_total / 1e6, "share": e.cpu_time_total / wall_us}
              for e in events if e.key.startswith("loop: ")]
    phases.sort(key=lambda p: -p["seconds"])

    def self_time(e) -> float:
        # on a GPU the kernels' own time; on a CPU the time inside the op minus its children
        return e.self_device_time_total if on_cuda else e.self_cpu_time_total

    ops = [e for e in events if not e.key.startswith(("loop: ", "ProfilerStep"))
           and self_time(e) > 0]
    ops.sort(key=lambda e: -self_time(e))
    op_rows = [{"op": _short(e.key), "calls": e.count, "seconds": self_time(e) / 1e6,
                "share": self_time(e) / wall_us} for e in ops[:top]]
    busy = sum(self_time(e) for e in ops) / wall_us if on_cuda else None
    return ProfileReport(phases, op_rows, result.seconds, result.device, busy)


def _start_quietly(prof) -> None:
    """Start a profiler without the line its C++ side writes to file descriptor 2."""
    from gpulab.attention import quiet_stderr

    with quiet_stderr():
        prof.start()


def _stop_quietly(prof) -> None:
    """Stop a profiler without the line its C++ side writes to file descriptor 2."""
    from gpulab.attention import quiet_stderr

    with quiet_stderr():
        prof.stop()


def _short(name: str, width: int = 64) -> str:
    """An operator or kernel name cut to `width` characters (CUDA kernels' names are long)."""
    return name if len(name) <= width else name[:width - 3] + "..."
