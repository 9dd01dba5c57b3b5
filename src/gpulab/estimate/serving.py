"""Inference on several GPUs: each card's memory, decode bounds when a model is split (chapter 7).

    from gpulab import serving
    from gpulab import links, models

    spec = models.get("Llama-3-70B")
    serving.split_inference(spec, n_gpus=2, weights="int4")          # a memory.Breakdown per card
    serving.layer_split_tokens_per_s(spec, [936, 936], weights="int4")  # two RTX 3090s in turn
    serving.tensor_parallel_tokens_per_s(spec, 936, 2, links.pcie(4).bytes_per_s)

Chapter 2's memory estimate and chapter 3's decode bound, with the layers (llama.cpp's layer
split, pipeline inference) or every layer's matrices (tensor parallelism) divided over cards.
"""

from __future__ import annotations

import math

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeFloat, PositiveFloat, PositiveInt, checked
from gpulab.estimate import collectives, memory, parallel, perf
from gpulab.estimate.memory import Breakdown
from gpulab.reference.formats import KVFormat, WeightFormatName
from gpulab.reference.modelspec import ModelSpec

__all__ = ["layer_split_tokens_per_s", "split_inference", "tensor_parallel_tokens_per_s"]


def _check_split(
    spec: ModelSpec, label: str, field: str, tensor: int = 1, pipeline: int = 1
) -> None:
    """parallel.check_split, its refusal worded with the caller's parameter (`label`)."""
    try:
        parallel.check_split(spec, tensor, pipeline)
    except GpulabConfigError as err:
        value = tensor if err.field == "tensor" else pipeline
        raise GpulabConfigError(str(err).replace(f"{err.field}={value}", label, 1), field) from None


@checked
def split_inference(
    spec: ModelSpec,
    n_gpus: PositiveInt,
    weights: WeightFormatName = "int4",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
    prefill_chunk: PositiveInt | None = None,
) -> Breakdown:
    """Memory of each of `n_gpus` cards holding 1/n of the layers (weights and KV cache).

    Chapter 2's estimate with the weights and the cache divided evenly; each card runs its own
    layers on the whole batch, so the transient activations are not divided, and each card has
    its own runtime context and slack, which its capacity has off already
    (GPUSpec.model_memory_bytes). `prefill_chunk` tokens of the prompt are
    processed at a time (llama.cpp's default physical batch, -ub, is 512); None: the whole
    prompt in one pass, as chapter 2 assumes. An even split: the card that also holds the
    output head holds a little more.
    """
    _check_split(spec, f"n_gpus={n_gpus}", "n_gpus", pipeline=n_gpus)
    whole = memory.estimate_inference(
        spec, weights=weights, kv_cache=kv_cache, batch=batch, seq_len=seq_len
    )
    act = whole.activations
    if prefill_chunk is not None:
        act = memory.inference_activation_bytes(spec, batch, min(prefill_chunk, seq_len))
    w, kv = math.ceil(whole.weights / n_gpus), math.ceil(whole.kv_cache / n_gpus)
    return Breakdown(
        weights=w,
        kv_cache=kv,
        activations=act,
        notes=(f"1/{n_gpus} of the layers of {spec.name} in {weights}",),
    )


@checked
def layer_split_tokens_per_s(
    spec: ModelSpec,
    bandwidths_gbs: list[PositiveFloat],
    weights: WeightFormatName = "int4",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
) -> float:
    """Decode bound with the layers split evenly over cards that run one after the other.

    llama.cpp's layer split and pipeline inference: a token passes card 1's layers, then card
    2's; each card reads its share of the bytes at its own bandwidth while the others wait, so
    the time per token is the sum of share / bandwidth. Equal cards give one card's bound on
    the whole model: the capacity adds up, the bandwidth does not. The activations handed
    from card to card (batch x hidden x 2 bytes per boundary) are left out.
    """
    if not bandwidths_gbs:
        raise GpulabConfigError("bandwidths_gbs=[] must list at least one card's bandwidth in GB/s")
    cards = len(bandwidths_gbs)
    _check_split(spec, f"bandwidths_gbs ({cards} cards)", "bandwidths_gbs", pipeline=cards)
    step = perf.decode_bytes_per_step(spec, weights, kv_cache, batch, seq_len)
    seconds = sum(step / len(bandwidths_gbs) / (bw * 1e9) for bw in bandwidths_gbs)
    return batch / seconds


@checked
def tensor_parallel_tokens_per_s(
    spec: ModelSpec,
    bandwidth_gbs: PositiveFloat,
    degree: PositiveInt,
    link_bytes_per_s: PositiveFloat,
    weights: WeightFormatName = "int4",
    kv_cache: KVFormat = "bf16",
    batch: PositiveInt = 1,
    seq_len: PositiveInt = 4096,
    latency_s: NonNegativeFloat = 0.0,
) -> float:
    """Decode bound with every layer split over `degree` cards that read at the same time.

    Each card reads 1/degree of the bytes, so the reads take bytes / (degree x bandwidth); each
    layer then needs two all-reduces of (batch x hidden) 16-bit activations (Megatron-LM), each
    costing collectives.allreduce_seconds on the link plus `latency_s`, which is what limits
    tensor parallelism over PCIe at batch 1 (the lab measures a latency).
    """
    _check_split(spec, f"degree={degree}", "degree", tensor=degree)
    read = perf.decode_bytes_per_step(spec, weights, kv_cache, batch, seq_len) / (
        degree * bandwidth_gbs * 1e9
    )
    message = batch * spec.hidden_size * 2  # (batch, hidden) in bf16
    talk = (
        2
        * spec.n_layers
        * collectives.allreduce_seconds(message, degree, link_bytes_per_s, latency_s)
    )
    return batch / (read + talk)
