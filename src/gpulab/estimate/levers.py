"""Out of memory: the levers that shrink a training step, estimated and measured (chapter 5).

Each lever changes one term of chapter 2's estimate (`gpulab.memory.estimate_training`):
a smaller micro-batch with gradient accumulation shrinks the activations and keeps the
effective batch; mixed precision shrinks weights, gradients and activations; activation
checkpointing keeps one tensor per layer and recomputes the rest; `zero_grad(set_to_none=True)`
frees the gradients between steps, so they do not sit beside the next forward's activations.
`torch.cuda.empty_cache()` is not a lever: it hands cached, already-free blocks back to the
driver (other processes can use them); it never frees a tensor that is still referenced.
What each lever does to a real model is measured by ``gpulab.memprobe`` (``grads_between_steps``,
``empty_cache_demo``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveInt, checked
from gpulab.estimate import memory
from gpulab.reference.formats import TrainingPrecision
from gpulab.reference.modelspec import ModelSpec

__all__ = ["Lever", "LeverEstimate", "compare", "estimate", "standard_levers"]


@checked
@dataclass(frozen=True)
class Lever:
    """One training configuration: what the step holds at once."""

    name: str
    micro_batch: PositiveInt  # sequences per forward/backward pass
    accumulation: PositiveInt  # passes whose gradients add up before one optimizer step
    precision: TrainingPrecision = "fp32"  # a key of gpulab.formats.TRAINING_PRECISIONS
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


@checked
def standard_levers(batch: PositiveInt, precision: TrainingPrecision = "bf16-mixed") -> list[Lever]:
    """The chapter's ladder: the naive step, then one lever at a time, then all together."""
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


@checked
def estimate(
    spec: ModelSpec, lever: Lever, seq_len: PositiveInt, device: str = "cuda"
) -> LeverEstimate:
    """The estimated peak of one pass under `lever` (chapter 2's estimator, one term changed)."""
    # Gradients already allocated while a forward builds its activations (the old step's, or
    # those accumulating across micro-batches): they add to every moment before the backward
    # makes its own, instead of activations and gradients taking turns.
    b = memory.estimate_training(
        spec,
        precision=lever.precision,
        batch=lever.micro_batch,
        seq_len=seq_len,
        activation_checkpointing=lever.checkpointing,
        device=device,
        gradients_kept=lever.grads_kept or lever.accumulation > 1,
    )
    return LeverEstimate(lever, b, int(b.peak))


@checked
def compare(
    spec: ModelSpec, levers: list[Lever], seq_len: PositiveInt, device: str = "cuda"
) -> list[LeverEstimate]:
    """Estimate every lever for the same model and sequence length."""
    if not levers:
        raise GpulabConfigError("levers is empty; pass e.g. standard_levers(batch=8)")
    return [estimate(spec, lever, seq_len, device) for lever in levers]
