"""Measure the memory of real transformer models built from config dicts (chapter 2's lab).

Models come from `transformers`' own model classes with random weights (nothing is
downloaded). Memory is counted by category (parameters, gradients, optimizer states,
activations) with PyTorch's `MemTracker`, which follows every live tensor's storage on any
device, the CPU included; on a CUDA GPU the allocator's peak is read as well. Chapter 5's
questions about the allocator (what ``zero_grad(set_to_none=...)`` keeps, what
``empty_cache()`` returns) are measured here too.

What MemTracker counts: the storages of every operator's outputs (through a dispatch mode),
and the modules, optimizers and tensors given to ``track_external``; a tensor made before it
starts (the input ids) is not counted unless given. Its categories follow the phase, not the
tensor: everything made in the forward pass is "Activation" (the KV cache and the logits
too), in the backward "Temp", in the optimizer step "Optstate" (AdamW's temporaries too).
``get_tracker_snapshot("peak")`` is the global peak, every category at that one moment (what a
measured ``Breakdown.peak`` reports); per-module peaks (``display_modulewise_snapshots``) are
each module's own. Kernels' internal buffers are invisible to it: ``allocator_peak_bytes``
is a second instrument that sees them (on the CPU, torch.profiler's allocator count).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from gpulab.core.validate import OneOf, PositiveInt, checked
from gpulab.estimate.memory import Breakdown

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "OPTIMIZERS",
    "CacheStep",
    "allocator_peak_bytes",
    "category_tracker",
    "compare",
    "empty_cache_demo",
    "grads_between_steps",
    "input_grad_hooks",
    "measure_inference",
    "measure_training",
    "peak_bytes",
    "set_activation_checkpointing",
    "tensor_bytes",
]

OPTIMIZERS = ("adamw", "sgd-momentum", "sgd")  # the optimizers a training step is measured with


@checked
def tensor_bytes(tensors: Iterable) -> int:
    """Bytes of distinct storages among tensors (tied weights counted once)."""
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.device)
        if key not in seen:
            seen.add(key)
            total += storage.nbytes()
    return total


def category_tracker():
    """A MemTracker that also keeps each category's own maximum, not only the snapshot at peak."""
    from torch.distributed._tools.mem_tracker import MemTracker

    class CategoryPeaks(MemTracker):
        def __init__(self):
            super().__init__()
            self.category_peaks: dict[str, int] = {}
            self._quiet = warnings.catch_warnings()

        def __enter__(self):
            # ModTracker warns that "the module hierarchy tracking maybe be messed up" when a
            # model's forward hooks fire out of the order it expects (transformers 5's models
            # do): that concerns the per-module breakdown, which nothing here reads; the
            # per-category and global peaks come from the storages, not from the hierarchy.
            self._quiet.__enter__()
            warnings.filterwarnings(
                "ignore", message="The module hierarchy tracking maybe be messed up"
            )
            return super().__enter__()

        def __exit__(self, *exc):
            try:
                return super().__exit__(*exc)
            finally:
                self._quiet.__exit__(*exc)

        def _update_peak_stats(self, peak_state) -> None:
            super()._update_peak_stats(peak_state)
            for snap in self._curr_mem_snap.values():
                for key, value in snap.items():
                    name = str(key).split(".")[-1]
                    self.category_peaks[name] = max(self.category_peaks.get(name, 0), value)

    return CategoryPeaks()


def _device_of(model):
    return next(model.parameters()).device


@checked
def measure_inference(
    model: torch.nn.Module,
    batch: PositiveInt,
    seq_len: PositiveInt,
    logits: Annotated[str, OneOf(("last", "all"), "logits choice")] = "last",
) -> Breakdown:
    """One prefill of batch x seq_len tokens, KV cache on: weights, cache, transient activations."""
    import torch

    device = _device_of(model)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq_len), device=device)
    weights = tensor_bytes([*model.parameters(), *model.buffers()])
    keep = 1 if logits == "last" else 0  # 0: logits for every position
    tracker = category_tracker()
    tracker.track_external(model)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    with tracker, torch.inference_mode():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=keep)
    # transformers 5 names it `cache` (`past_key_values` is deprecated); 4.x has only the latter
    cache = (
        out.cache if "cache" in getattr(out, "__dataclass_fields__", {}) else out.past_key_values
    )
    kv = tensor_bytes(
        t for layer in getattr(cache, "layers", []) for t in (layer.keys, layer.values)
    )
    peak = tracker.get_tracker_snapshot("peak")
    total_peak = max(snap["Total"] for snap in peak.values())
    # The cache is written during the pass and is counted as activations by the tracker.
    acts = max(0, tracker.category_peaks.get("ACT", 0) + tracker.category_peaks.get("TEMP", 0) - kv)
    allocator = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else None
    return Breakdown(
        weights=weights,
        kv_cache=kv,
        activations=acts,
        peak_tensors=total_peak,
        device=str(device),
        allocator_peak=allocator,
    )


@checked
def measure_training(
    model: torch.nn.Module,
    batch: PositiveInt,
    seq_len: PositiveInt,
    optimizer: Annotated[str, OneOf(OPTIMIZERS, "optimizer")] = "adamw",
    activation_checkpointing: bool = False,
) -> Breakdown:
    """The second of two training steps (the first creates the optimizer's states)."""
    import torch

    device = _device_of(model)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq_len), device=device)
    model.train()
    if activation_checkpointing:
        set_activation_checkpointing(model, True)
    opt = _optimizer(model, optimizer)
    sizes = {}

    def step():
        # a training step caches no keys and values: saying so spares transformers' warning
        # that use_cache is incompatible with checkpointing (it would switch it off itself)
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        sizes["gradients"] = tensor_bytes(p.grad for p in model.parameters())
        opt.step()
        sizes["optimizer"] = tensor_bytes(
            t for state in opt.state.values() for t in state.values() if torch.is_tensor(t)
        )
        opt.zero_grad(set_to_none=True)

    step()  # creates the optimizer states
    tracker = category_tracker()
    tracker.track_external(model, opt)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    with tracker:
        step()
    peaks = tracker.category_peaks
    total_peak = max(s["Total"] for s in tracker.get_tracker_snapshot("peak").values())
    allocator = torch.cuda.max_memory_reserved(device) if device.type == "cuda" else None
    model.eval()
    # Weights, gradients and optimizer states are the exact sizes of those tensors; the
    # activations are the most the tracker saw kept for the backward pass at any moment.
    weights = tensor_bytes([*model.parameters(), *model.buffers()])
    return Breakdown(
        weights=weights,
        activations=peaks.get("ACT", 0),
        gradients=sizes["gradients"],
        optimizer=sizes["optimizer"],
        peak_tensors=total_peak,
        device=str(device),
        allocator_peak=allocator,
        notes=(f"temporaries at most {peaks.get('TEMP', 0) / 2**20:.1f} MiB",),
    )


@checked
def input_grad_hooks(model: torch.nn.Module) -> bool:
    """Whether the model already makes its embeddings' output require grad (PEFT)."""
    return bool(
        getattr(model, "_require_grads_hooks", None) or getattr(model, "_require_grads_hook", None)
    )


@checked
def set_activation_checkpointing(
    model: torch.nn.Module, on: bool, remove_input_hooks: bool = False
) -> None:
    """Switch activation checkpointing on or off (transformers 5 names; 4.x's otherwise).

    Switching it on also makes the embeddings' output require grad (transformers does, so
    that gradients flow through checkpointed layers), and switching it off does not undo
    that; `remove_input_hooks` undoes it, or a later forward under `no_grad` would fail.
    """
    kwargs = {"use_reentrant": False}
    if on and hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    elif on:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    elif hasattr(model, "activation_checkpointing_disable"):
        model.activation_checkpointing_disable()
    else:
        model.gradient_checkpointing_disable()
    if not on and remove_input_hooks and hasattr(model, "disable_input_require_grads"):
        model.disable_input_require_grads()


def _optimizer(model, name: str):
    import torch

    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    if name == "sgd-momentum":
        return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=1e-3)
    raise ValueError(
        f"optimizer={name!r} cannot be measured here; use 'adamw', 'sgd-momentum' or 'sgd'"
    )


@checked
def compare(
    predicted: Breakdown,
    measured: Breakdown,
    parts: Sequence[str] = ("weights", "kv_cache", "activations", "gradients", "optimizer"),
) -> list[dict]:
    """Rows of predicted vs measured bytes per part, with the error in % of the measurement."""
    rows = []
    for part in parts:
        p, m = getattr(predicted, part), getattr(measured, part)
        if p == 0 and m == 0:
            continue
        rows.append(
            {
                "part": part,
                "predicted": p,
                "measured": m,
                "error %": None if m == 0 else 100.0 * (p - m) / m,
            }
        )
    tensors = predicted.peak - predicted.overhead
    rows.append(
        {
            "part": "peak (tensors)",
            "predicted": tensors,
            "measured": measured.peak,
            "error %": 100.0 * (tensors - measured.peak) / measured.peak,
        }
    )
    return rows


@checked
def peak_bytes(fn: Callable[[], Any], device: torch.device | str, *track: Any) -> int:
    """Peak bytes of live tensors while `fn()` runs once on `device`.

    On a CUDA GPU: the allocator's `torch.cuda.max_memory_allocated` over the call.
    Elsewhere (CPU, MPS): PyTorch's `MemTracker`, as `gpulab.memprobe` uses it, which
    follows every tensor's storage; pass in `track` the modules and optimizers whose
    tensors exist before the call, so that they are counted too.
    """
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))

    tracker = category_tracker()
    if track:
        tracker.track_external(*track)
    with tracker:
        fn()
    snapshots = tracker.get_tracker_snapshot("peak").values()
    return int(max(snap["Total"] for snap in snapshots))


# ------------------------------------------------------------- what the allocator keeps (chapter 5)


@checked
def grads_between_steps(
    model: torch.nn.Module, batch: PositiveInt, seq_len: PositiveInt, set_to_none: bool
) -> int:
    """Bytes of gradient tensors still allocated after one step and `zero_grad(set_to_none=...)`."""
    import torch

    device = next(model.parameters()).device
    ids = torch.randint(0, model.config.vocab_size, (batch, seq_len), device=device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=set_to_none)
    held = tensor_bytes(p.grad for p in model.parameters())
    opt.zero_grad(set_to_none=True)
    model.eval()
    return held


@dataclass(frozen=True)
class CacheStep:
    """The CUDA allocator's counters after one step of the empty_cache demonstration."""

    step: str
    allocated_bytes: int  # memory in live tensors
    reserved_bytes: int  # memory the caching allocator holds from the driver


@checked
def empty_cache_demo(device: torch.device | str, nbytes: PositiveInt) -> list[CacheStep] | None:
    """On a CUDA GPU: what del and empty_cache() change; None on any other device."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    steps = []

    def record(name):
        torch.cuda.synchronize(device)
        steps.append(
            CacheStep(name, torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device))
        )

    torch.cuda.empty_cache()
    record("start")
    kept = torch.empty(nbytes, dtype=torch.uint8, device=device)
    record("allocate a tensor")
    torch.cuda.empty_cache()
    record("empty_cache() while it is referenced")
    del kept
    record("del the tensor")
    torch.cuda.empty_cache()
    record("empty_cache() after del")
    return steps


# ------------------------------------------------------------- a second instrument


@checked
def allocator_peak_bytes(fn: Callable[[], Any], device: torch.device | str, *track: Any) -> int:
    """Peak bytes the allocator handed out while `fn()` ran, plus the tensors of `track`.

    An instrument independent of MemTracker: MemTracker sees the outputs of operators through
    a dispatch mode; the allocator sees every allocation, a kernel's internal scratch included.
    On a CUDA GPU: `torch.cuda.max_memory_allocated` over the call (then `track` is not needed:
    the allocator already holds the tensors made before). Elsewhere: torch.profiler's memory
    events, whose "Total Allocated" counts what was allocated (and not yet freed) since the
    profiler started; the modules' parameters and buffers and the optimizers' states in
    `track`, made before the call, are added. A tensor made before the call and freed during it
    would be counted to the end (none is, in the steps this module measures).
    """
    import json
    import os
    import tempfile

    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return peak_bytes(fn, device)
    from torch.profiler import ProfilerActivity, profile

    before = []
    for obj in track:
        if isinstance(obj, torch.nn.Module):
            before += [*obj.parameters(), *obj.buffers()]
        elif isinstance(obj, torch.optim.Optimizer):
            before += [
                t for state in obj.state.values() for t in state.values() if torch.is_tensor(t)
            ]
            before += [p.grad for group in obj.param_groups for p in group["params"]]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    allocated = [
        e["args"]["Total Allocated"]
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0
    ]
    return tensor_bytes(before) + max(allocated, default=0)
