"""A newcomer's first two questions: will this model fit, and how fast will it generate?

    from gpulab.estimate import answers
    from gpulab.reference import models

    spec = models.get("Llama-3-8B")
    a = answers.fit(spec, gpu="RTX 4060", weights="q4_k_m", context=8192)
    a.fits, a.breakdown, a.capacity_bytes, a.largest_context, a.largest_users
    answers.fit(spec, memory_bytes=8 * 2**30)               # a card the table does not have
    s = answers.speed(models.get("Qwen2.5-7B"), "RTX 4090", weights="q4_k_m")
    s.bound_per_user, s.typical_per_user, s.published      # None where it does not fit

Both are compositions of what chapters 2 and 3 teach: the memory estimate and the largest
context or batch that fits (gpulab.memory), the decode bound (gpulab.perf), and what published
runs reached of their bounds (gpulab.published_bounds). ``gpulab fit`` and ``gpulab speed``
(gpulab.ui.cli) print them; the site's memory calculator applies the same rule: no speed for a
model that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import PositiveFloat, PositiveInt, checked
from gpulab.estimate import memory, perf, published_bounds
from gpulab.estimate.memory import Breakdown
from gpulab.estimate.published_bounds import Comparison, DecodeShare
from gpulab.reference import specs
from gpulab.reference.formats import KVFormat, WeightFormatName
from gpulab.reference.modelspec import ModelSpec
from gpulab.reference.specs import GPUSpec

__all__ = ["NO_SPEED", "FitAnswer", "SpeedAnswer", "fit", "speed"]

# What is shown instead of a speed for a model that does not fit: a bound for memory that is
# not there means nothing.
NO_SPEED = "does not fit: no speed"
# The longest context searched when the model's config states none.
_CONTEXT_LIMIT = 1 << 24


@dataclass(frozen=True)
class FitAnswer:
    """Whether a model's inference fits a memory, and the largest context and batch that do."""

    model: str  # the ModelSpec's name
    weights: str  # weight format (gpulab.formats.WEIGHT_FORMATS)
    kv_cache: str  # KV-cache format
    context: int  # tokens per user
    users: int  # sequences served at once, each with a full context of KV cache
    gpu: str | None  # the spec table's row, or None for a memory size given as a number
    memory_bytes: int  # the memory as its driver reports it (GPUSpec.memory_bytes)
    capacity_bytes: int  # what is left of it for tensors (gpulab.specs.tensor_capacity)
    breakdown: Breakdown = field(repr=False)  # gpulab.memory.estimate_inference's parts
    largest_context: int  # tokens per user that fit with `users` users; 0: not even one
    largest_users: int  # users that fit at `context` tokens each; 0: not even one
    max_position_embeddings: int | None  # the longest context the model is configured for

    @property
    def fits(self) -> bool:
        """True when the estimate's tensors fit the capacity."""
        return self.breakdown.total <= self.capacity_bytes

    @property
    def headroom_bytes(self) -> int:
        """Capacity minus the estimate: negative when it does not fit."""
        return self.capacity_bytes - self.breakdown.total

    @property
    def context_beyond_model(self) -> bool:
        """True when `context` is longer than the model is configured for."""
        return bool(self.max_position_embeddings) and self.context > self.max_position_embeddings

    def as_dict(self) -> dict[str, Any]:
        """The answer as plain data (bytes and tokens), for JSON."""
        return {
            "model": self.model,
            "weights": self.weights,
            "kv_cache": self.kv_cache,
            "context": self.context,
            "users": self.users,
            "gpu": self.gpu,
            "memory_bytes": self.memory_bytes,
            "capacity_bytes": self.capacity_bytes,
            "breakdown_bytes": self.breakdown.as_dict(),
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "largest_context": self.largest_context,
            "largest_users": self.largest_users,
            "max_position_embeddings": self.max_position_embeddings,
            "context_beyond_model": self.context_beyond_model,
        }


@dataclass(frozen=True)
class SpeedAnswer:
    """The decode bound on a GPU, what published runs make of such a bound, and their runs there."""

    fit: FitAnswer  # the same workload against the GPU's memory
    bandwidth_gbs: float  # the GPU's memory bandwidth, GB/s
    bytes_per_step: float  # what one decoding step reads (gpulab.perf.decode_bytes_per_step)
    # Upper bounds in tokens/s; None when the model does not fit (then there is no speed).
    bound_total: float | None
    bound_per_user: float | None
    # (low, median, high) tokens/s per user: the published runs' shares of their bounds applied
    # to this one. None without a fit, and for more than one user (the runs decode one sequence).
    typical_per_user: tuple[float, float, float] | None
    share: DecodeShare  # those shares, and how many runs and devices they come from
    published: tuple[Comparison, ...]  # the published measurements on this GPU
    no_typical: str  # why typical_per_user is None ("" when it is not)

    def as_dict(self) -> dict[str, Any]:
        """The answer as plain data (tokens/s, bytes, GB/s), for JSON."""
        typical = self.typical_per_user
        return {
            "fit": self.fit.as_dict(),
            "bandwidth_gbs": self.bandwidth_gbs,
            "bytes_per_step": self.bytes_per_step,
            "bound_tokens_per_s_total": self.bound_total,
            "bound_tokens_per_s_per_user": self.bound_per_user,
            "typical_tokens_per_s_per_user": None
            if typical is None
            else dict(zip(("low", "median", "high"), typical, strict=True)),
            "no_speed": "" if self.fit.fits else NO_SPEED,
            "no_typical": self.no_typical,
            "published_share_of_bound": {
                "low": self.share.low,
                "median": self.share.median,
                "high": self.share.high,
                "runs": self.share.runs,
                "devices": self.share.devices,
                "tool": self.share.tool,
            },
            "published_on_this_gpu": [
                {
                    "id": c.measurement.id,
                    "test": c.measurement.test,
                    "kind": c.kind,
                    "model": c.measurement.model,
                    "quantization": c.measurement.quantization,
                    "tokens_per_s": c.measurement.figure,
                    "bound": c.bound,
                    "share": c.ratio,
                    "excluded": c.excluded,
                    "tool": c.measurement.tool,
                    "source": c.measurement.source_url,
                }
                for c in self.published
            ],
        }


@checked
def fit(
    spec: ModelSpec,
    gpu: GPUSpec | str | None = None,
    memory_bytes: PositiveFloat | None = None,
    weights: WeightFormatName = "q4_k_m",
    kv_cache: KVFormat = "bf16",
    context: PositiveInt = 8192,
    users: PositiveInt = 1,
) -> FitAnswer:
    """Will `spec` serve `users` x `context` tokens in `weights` on `gpu` (or `memory_bytes`)?

    Give a spec-table GPU or a memory size as its driver reports it (bytes), not both. The
    capacity is what that memory leaves for tensors (GPUSpec.model_memory_bytes,
    gpulab.specs.tensor_capacity); the largest context and batch come from
    gpulab.memory.largest_context and largest_batch, the context searched up to the model's
    configured maximum.
    """
    if (gpu is None) == (memory_bytes is None):
        raise GpulabConfigError(
            "gpu: give a GPU of the spec table or memory_bytes, not "
            f"{'both' if gpu is not None else 'neither'}",
            "gpu",
        )
    if gpu is not None:
        card = specs.resolve_gpu(gpu)
        name, total, capacity = card.name, card.memory_bytes, card.model_memory_bytes
    else:
        name, total = None, int(memory_bytes)
        capacity = specs.tensor_capacity(total)
    weights = weights.lower()
    b = memory.estimate_inference(spec, weights, kv_cache, users, context)
    longest = spec.max_position_embeddings
    largest_context = largest_users = 0
    if capacity > 0:
        largest_context = memory.largest_context(
            spec,
            capacity,
            batch=users,
            limit=longest or _CONTEXT_LIMIT,
            weights=weights,
            kv_cache=kv_cache,
        )
        largest_users = memory.largest_batch(
            spec, capacity, seq_len=context, weights=weights, kv_cache=kv_cache
        )
    return FitAnswer(
        model=spec.name,
        weights=weights,
        kv_cache=kv_cache,
        context=context,
        users=users,
        gpu=name,
        memory_bytes=int(total),
        capacity_bytes=capacity,
        breakdown=b,
        largest_context=largest_context,
        largest_users=largest_users,
        max_position_embeddings=longest,
    )


@checked
def speed(
    spec: ModelSpec,
    gpu: GPUSpec | str,
    weights: WeightFormatName = "q4_k_m",
    kv_cache: KVFormat = "bf16",
    context: PositiveInt = 8192,
    users: PositiveInt = 1,
) -> SpeedAnswer:
    """The decode bound of `spec` on `gpu`, the typical range below it, and the card's runs.

    The bound is bandwidth / bytes one step reads (gpulab.perf); the typical range is the
    lowest, median and highest share of their bound that the published runs reached
    (gpulab.published_bounds.typical_decode), for one user. Neither is given for a model
    that does not fit the card: there is no speed then.
    """
    card = specs.resolve_gpu(gpu)
    answer = fit(spec, gpu=card, weights=weights, kv_cache=kv_cache, context=context, users=users)
    step = perf.decode_bytes_per_step(spec, answer.weights, kv_cache, users, context)
    total = per_user = typical = None
    if not answer.fits:
        why = NO_SPEED
    else:
        total = perf.decode_tokens_per_s(
            spec,
            answer.weights,
            kv_cache,
            batch=users,
            seq_len=context,
            bandwidth_gbs=card.bandwidth_gbs,
        )
        per_user = total / users
        why = ""
        if users == 1:
            typical = published_bounds.typical_decode(per_user)
        else:
            why = (
                f"the published runs decode one sequence; none says what share of the "
                f"bound {users} users reach"
            )
    return SpeedAnswer(
        fit=answer,
        bandwidth_gbs=card.bandwidth_gbs,
        bytes_per_step=step,
        bound_total=total,
        bound_per_user=per_user,
        typical_per_user=typical,
        share=published_bounds.decode_share(),
        published=tuple(published_bounds.on_gpu(card)),
        no_typical=why,
    )
