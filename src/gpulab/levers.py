"""Out of memory: the levers that shrink a training step, estimated and measured (chapter 5).

Each lever changes one term of chapter 2's estimate (`gpulab.memory.estimate_training`):
a smaller micro-batch with gradient accumulation shrinks the activations and keeps the
effective batch; mixed precision shrinks weights, gradients and activations; activation
checkpointing keeps one tensor per layer and recomputes the rest; `zero_grad(set_to_none=True)`
frees the gradients between steps, so they do not sit beside the next forward's activations.
`torch.cuda.empty_cache()` is not a lever: it hands cached, already-free blocks back to the
driver (other processes can use them); it never frees a tensor that is still referenced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulab import memory
from gpulab.errors import GpulabConfigError, require_positive_ints
from gpulab.modelspec import ModelSpec


@dataclass(frozen=True)
class Lever:
    """One training configuration: what the step holds at once."""

    name: str
    micro_batch: int  # sequences per forward/backward pass
    accumulation: int  # passes whose gradients add up before one optimizer step
    precision: str = "fp32"  # a key of gpulab.memory.TRAINING_PRECISIONS
    checkpointing: bool = False  # activation checkpointing
    grads_kept: bool = False  # zero_grad(set_to_none=False): gradients live during the forward


@dataclass(frozen=True)
class LeverEstimate:
    """A lever and the estimated peak memory of one of its passes."""

    lever: Lever
    breakdown: memory.Breakdown
    peak_bytes: int

    @property
    def effective_batch(self) -> int:
        """Sequences per optimizer step."""
        return self.lever.micro_batch * self.lever.accumulation


def standard_levers(batch: int, precision: str = "bf16-mixed") -> list[Lever]:
    """The chapter's ladder: the naive step, then one lever at a time, then all together."""
    require_positive_ints(batch=batch)
    micro = max(1, batch // 4)
    acc = batch // micro
    return [
        Lever("fp32, gradients kept between steps", batch, 1, grads_kept=True),
        Lever("fp32, zero_grad(set_to_none=True)", batch, 1),
        Lever(f"micro-batch {micro} x {acc} accumulation", micro, acc),
        Lever(f"{precision}", batch, 1, precision=precision),
        Lever("activation checkpointing", batch, 1, checkpointing=True),
        Lever("all of the above", micro, acc, precision=precision, checkpointing=True),
    ]


def estimate(spec: ModelSpec, lever: Lever, seq_len: int, device: str = "cuda") -> LeverEstimate:
    """The estimated peak of one pass under `lever` (chapter 2's estimator, one term changed)."""
    require_positive_ints(seq_len=seq_len, micro_batch=lever.micro_batch,
                          accumulation=lever.accumulation)
    b = memory.estimate_training(spec, precision=lever.precision, batch=lever.micro_batch,
                                 seq_len=seq_len, activation_checkpointing=lever.checkpointing,
                                 device=device)
    peak = b.peak
    if lever.grads_kept or lever.accumulation > 1:
        # gradients already allocated while a forward builds its activations (the old step's,
        # or those accumulating across micro-batches): everything at once, instead of
        # activations and gradients taking turns
        peak = b.total
    return LeverEstimate(lever, b, int(peak))


def compare(spec: ModelSpec, levers: list[Lever], seq_len: int,
            device: str = "cuda") -> list[LeverEstimate]:
    """Estimate every lever for the same model and sequence length."""
    if not levers:
        raise GpulabConfigError("levers is empty; pass e.g. standard_levers(batch=8)")
    return [estimate(spec, lever, seq_len, device) for lever in levers]


def grads_between_steps(model, batch: int, seq_len: int, set_to_none: bool) -> int:
    """Bytes of gradient tensors still allocated after one step and `zero_grad(set_to_none=...)`."""
    import torch

    from gpulab.memprobe import tensor_bytes

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


def empty_cache_demo(device: Any, nbytes: int) -> list[CacheStep] | None:
    """On a CUDA GPU: what del and empty_cache() change; None on any other device."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    require_positive_ints(nbytes=nbytes)
    steps = []

    def record(name):
        torch.cuda.synchronize(device)
        steps.append(CacheStep(name, torch.cuda.memory_allocated(device),
                               torch.cuda.memory_reserved(device)))

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
