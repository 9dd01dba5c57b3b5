"""Measure a small real decoder: prefill, decoding with and without a KV cache, training.

Chapter 3's lab; the bounds these measurements are compared with are in `gpulab.perf`.

    from gpulab import generation, memprobe, torch_models

    model = torch_models.build_model(config, device=dev)  # random weights, from a dict
    generation.measure_prefill(model, batch=1, prompt_len=512)  # a timing.Measurement
    generation.measure_decode(model, batch=1, prompt_len=512, new_tokens=32)
    generation.measure_decode(model, 1, 512, 32, use_cache=False)
    generation.train_steps(model, batch=4, seq_len=256, steps=5, precision="fp32")
    generation.grad_modes(model, batch=4, seq_len=256)  # inference_mode, no_grad...

The decoding loop is written out (not `model.generate`) so that the reader sees what
happens at each step: with the cache, one new token per sequence goes through the model
together with the keys and values of every earlier position; without it, the whole
sequence is fed again.
"""

from __future__ import annotations

import contextlib
import inspect
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from gpulab.bench import memprobe, timing
from gpulab.bench.precision import autocast, check_runs_on, grad_scaler
from gpulab.core.validate import (
    PositiveFloat,
    PositiveInt,
    checked,
)
from gpulab.reference.formats import AUTOCAST_PRECISIONS, AutocastPrecision

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "PRECISIONS",
    "DecodeResult",
    "GradMode",
    "TrainResult",
    "count_ops",
    "grad_modes",
    "greedy_decode",
    "measure_decode",
    "measure_prefill",
    "ops_per_decode_step",
    "random_ids",
    "train_steps",
]

PRECISIONS = AUTOCAST_PRECISIONS  # gpulab.formats' names: "fp32", "autocast-bf16", "autocast-fp16"


# ---------------------------------------------------------------- helpers


def _torch():
    import torch

    return torch


def _device_of(model) -> Any:
    return next(model.parameters()).device


@checked
def random_ids(model: torch.nn.Module, batch: PositiveInt, seq_len: PositiveInt, seed: int = 0):
    """Token ids (batch, seq_len), uniform over the vocabulary, on the model's device."""
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq_len), generator=gen)
    return ids.to(_device_of(model))


def _cache_kwarg(model) -> str:
    """The forward argument that takes the KV cache: `cache` (transformers 5) or
    `past_key_values` (4.x)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(out):
    """The KV cache a forward pass returned (`cache` in transformers 5, else
    `past_key_values`)."""
    if "cache" in getattr(out, "__dataclass_fields__", {}):
        return out.cache
    return out.past_key_values


# ---------------------------------------------------------------- prefill and decode


@checked
def measure_prefill(
    model: torch.nn.Module,
    batch: PositiveInt,
    prompt_len: PositiveInt,
    min_run_time: PositiveFloat = 0.2,
    seed: int = 0,
) -> timing.Measurement:
    """Time one prefill: a forward pass over batch x prompt_len tokens, filling a cache.

    Only the last position's logits are computed, as generation does. Each call starts
    from an empty cache; `timing.benchmark` warms up and synchronises the device.
    """
    torch = _torch()
    ids = random_ids(model, batch, prompt_len, seed)

    def prefill():
        return model(input_ids=ids, use_cache=True, logits_to_keep=1)

    with torch.inference_mode():
        return timing.benchmark(
            prefill,
            device=ids.device,
            min_run_time=min_run_time,
            label=f"prefill {batch} x {prompt_len}",
        )


@dataclass(frozen=True)
class DecodeResult:
    """One timed greedy decoding run of `new_tokens` steps."""

    tokens_per_s: float  # new tokens per second, all sequences of the batch together
    seconds_per_token: float  # seconds per step (one new token for each sequence)
    new_tokens: int  # decoding steps timed (each adds one token to every sequence)
    batch: int
    use_cache: bool
    prompt_len: int = 0
    seconds: float = 0.0  # the whole timed loop
    positions: int = 0  # token positions that went through the model in the timed loop
    # the generated ids, (batch, new_tokens + 1): the prefill's token, then the loop's
    tokens: Any = field(default=None, repr=False, compare=False)


@checked
def greedy_decode(
    model: torch.nn.Module, prompt: torch.Tensor, new_tokens: PositiveInt, use_cache: bool = True
) -> tuple[Any, float, int]:
    """Greedy decoding written out: (generated ids, seconds of the loop, positions).

    The prompt's prefill is not timed (`measure_prefill` times it); it gives the first
    new token. Then each of the `new_tokens` timed steps adds one token per sequence:
    with the cache, the model sees only the last token and the cache of the earlier
    ones; without it, the whole sequence so far goes through the model again. The ids
    are (batch, new_tokens + 1); `positions` counts the token positions that the timed
    steps put through the model.
    """
    torch = _torch()
    device = prompt.device
    cache_arg = _cache_kwarg(model)
    with torch.inference_mode():
        out = model(input_ids=prompt, use_cache=use_cache, logits_to_keep=1)  # prefill
        cache = _cache_of(out) if use_cache else None
        token = out.logits[:, -1:].argmax(dim=-1)  # (batch, 1)
        generated = [token]
        sequence = torch.cat([prompt, token], dim=1)  # (batch, prompt + 1)
        positions = 0
        timing.synchronize(device)
        start = time.perf_counter()
        for _ in range(new_tokens):
            if use_cache:
                # one position per sequence; the cache holds the keys and values of the
                # earlier ones
                out = model(input_ids=token, use_cache=True, logits_to_keep=1, **{cache_arg: cache})
                cache = _cache_of(out)
                positions += token.numel()
            else:
                # every position again: keys and values are recomputed from scratch
                out = model(input_ids=sequence, use_cache=False, logits_to_keep=1)
                positions += sequence.numel()
            token = out.logits[:, -1:].argmax(dim=-1)  # (batch, 1), stays on the device
            generated.append(token)
            if not use_cache:
                sequence = torch.cat([sequence, token], dim=1)
        timing.synchronize(device)
        seconds = time.perf_counter() - start
    return torch.cat(generated, dim=1), seconds, positions


@checked
def measure_decode(
    model: torch.nn.Module,
    batch: PositiveInt,
    prompt_len: PositiveInt,
    new_tokens: PositiveInt,
    use_cache: bool = True,
    seed: int = 0,
) -> DecodeResult:
    """Decode tokens/s of greedy generation after a random prompt, cache or no cache.

    A short run first pays the one-off costs (the warm-up); then `new_tokens` steps are
    timed, the device synchronised before and after (see `greedy_decode`).
    """
    prompt = random_ids(model, batch, prompt_len, seed)
    greedy_decode(model, prompt, min(2, new_tokens), use_cache)  # warm-up
    tokens, seconds, positions = greedy_decode(model, prompt, new_tokens, use_cache)
    return DecodeResult(
        tokens_per_s=batch * new_tokens / seconds,
        seconds_per_token=seconds / new_tokens,
        new_tokens=new_tokens,
        batch=batch,
        use_cache=use_cache,
        prompt_len=prompt_len,
        seconds=seconds,
        positions=positions,
        tokens=tokens,
    )


@checked
def count_ops(fn: Callable[[], Any]) -> int:
    """ATen operators that `fn()` runs: each is a kernel launch (or more) on a GPU, and
    on any device a round of Python and dispatcher work before the arithmetic starts."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count += 1
            return func(*args, **(kwargs or {}))

    counter = Counter()
    with counter:
        fn()
    return counter.count


@checked
def ops_per_decode_step(
    model: torch.nn.Module, batch: PositiveInt, prompt_len: PositiveInt, seed: int = 0
) -> int:
    """ATen operators in one cached decoding step after a `prompt_len`-token prompt."""
    torch = _torch()
    prompt = random_ids(model, batch, prompt_len, seed)
    with torch.inference_mode():
        out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        token = out.logits[:, -1:].argmax(dim=-1)
        kwargs = {_cache_kwarg(model): _cache_of(out)}
        return count_ops(lambda: model(input_ids=token, use_cache=True, logits_to_keep=1, **kwargs))


# ---------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainResult:
    """Training steps on one batch: time, throughput, peak memory, each step's loss."""

    seconds_per_step: float  # median over the steps after the first
    tokens_per_s: float  # batch x seq_len / seconds_per_step
    peak_bytes: int  # peak of live tensors during one more (untimed) step
    losses: tuple[float, ...]  # one per timed step
    precision: str = "fp32"
    activation_checkpointing: bool = False
    batch: int = 0
    seq_len: int = 0


@checked
def train_steps(
    model: torch.nn.Module,
    batch: PositiveInt,
    seq_len: PositiveInt,
    steps: PositiveInt,
    precision: AutocastPrecision = "fp32",
    activation_checkpointing: bool = False,
    lr: PositiveFloat = 1e-3,
    seed: int = 0,
) -> TrainResult:
    """Train on one random batch for `steps` AdamW steps; time each, measure the peak.

    The same batch is used at every step, so the loss falls as the model memorises it: a
    check that the steps really train. `precision`: "fp32"; "autocast-bf16" (matrix
    products in bfloat16 under `torch.autocast`, weights and optimizer in fp32; CPU and
    GPU); "autocast-fp16" (float16, with a `GradScaler` that keeps small gradients from
    underflowing to zero; CUDA GPUs only): `gpulab.precision` runs them. The first step
    creates the optimizer's states and is left out of the median. The peak is measured over
    one extra step after the timed ones (see `peak_bytes`). The model is left in eval mode,
    checkpointing off.
    """
    torch = _torch()
    device = _device_of(model)
    check_runs_on(precision, device)
    ids = random_ids(model, batch, seq_len, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    scaler = grad_scaler(precision)
    model.train()
    hooks_before = memprobe.input_grad_hooks(model)
    if activation_checkpointing:
        memprobe.set_activation_checkpointing(model, True)

    def step() -> Any:
        with autocast(device, precision):
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    losses, times = [], []
    try:
        for _ in range(steps):
            timing.synchronize(device)
            start = time.perf_counter()
            loss = step()
            timing.synchronize(device)
            times.append(time.perf_counter() - start)
            losses.append(float(loss))
        peak = memprobe.peak_bytes(step, device, model, opt)
    finally:
        if activation_checkpointing:
            memprobe.set_activation_checkpointing(model, False, remove_input_hooks=not hooks_before)
        model.eval()
    seconds = statistics.median(times[1:] if len(times) > 1 else times)
    return TrainResult(
        seconds_per_step=seconds,
        tokens_per_s=batch * seq_len / seconds,
        peak_bytes=peak,
        losses=tuple(losses),
        precision=precision,
        activation_checkpointing=activation_checkpointing,
        batch=batch,
        seq_len=seq_len,
    )


# ---------------------------------------------------------------- gradient modes


class GradMode(NamedTuple):
    """Time and peak memory of a forward pass in one autograd mode."""

    seconds: float  # median per forward pass
    peak_bytes: int  # peak of live tensors during one forward pass (weights included)


@checked
def grad_modes(
    model: torch.nn.Module,
    batch: PositiveInt,
    seq_len: PositiveInt,
    min_run_time: PositiveFloat = 0.2,
    seed: int = 0,
) -> dict[str, GradMode]:
    """A forward pass (logits for every position) under each autograd mode.

    "inference_mode": no graph and no version counters; "no_grad": no graph; "autograd":
    the graph is recorded and every tensor the backward pass would need is kept until
    the output is dropped, which is why its peak is the highest.
    """
    torch = _torch()
    ids = random_ids(model, batch, seq_len, seed)
    device = ids.device
    modes = {
        "inference_mode": torch.inference_mode,
        "no_grad": torch.no_grad,
        "autograd": contextlib.nullcontext,
    }
    results = {}
    for name, mode in modes.items():

        def forward(mode=mode):
            with mode():
                return model(input_ids=ids, use_cache=False).logits

        t = timing.benchmark(forward, device=device, min_run_time=min_run_time, label=name)
        results[name] = GradMode(t.median, memprobe.peak_bytes(forward, device, model))
    return results
