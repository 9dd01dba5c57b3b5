"""Which GPU, and how many, for a workload (chapter 6).

    from gpulab import choose

    w = choose.Workload("Llama-3-70B", weight_format="int4", context_tokens=8192)
    choose.evaluate(w, "RTX 4090", count=2)  # one Candidate, fitting or not, with the arithmetic
    choose.recommend(w)                      # fitting candidates only, fewest cards, then cheapest

The memory a workload needs comes from `gpulab.memory` (chapter 2) and the decode speed bound
from `gpulab.perf` (chapter 3); the cards from `gpulab.specs`. What this module adds is how
a total is shared across cards, and what that assumes:

- several cards of one model share the memory evenly, as tensor parallel (vLLM, TensorRT-LLM)
  or pipeline parallel (llama.cpp's layer split) does; each card also holds its own runtime
  context. The even split is an assumption: a layer split has whole-layer granularity.
- the decode bound over n cards is n x one card's bandwidth: tensor parallel with perfect
  scaling and no communication, an upper bound. A pipeline-parallel split serves one stream at
  about one card's rate, which the reasons also give.
- fine-tuning means full fine-tuning in bf16 mixed precision with AdamW (16 bytes per parameter
  before activations, as `gpulab.memory.estimate_training` counts it); across cards it assumes
  fully sharded data parallel (FSDP / ZeRO-3). LoRA/QLoRA are not offered: `gpulab.memory` has
  no estimate for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GB
from gpulab.core.validate import Between, OneOf, PositiveInt, checked
from gpulab.estimate import memory, perf
from gpulab.estimate.memory import Breakdown
from gpulab.reference import models, specs
from gpulab.reference.formats import KVFormat, WeightFormatName
from gpulab.reference.modelspec import ModelSpec

__all__ = ["APPLE_GPU_SHARE", "TASKS", "Candidate", "Workload", "evaluate", "recommend"]

TASKS = ("inference", "fine-tuning")
# Full fine-tuning recipes gpulab.memory knows, by the weight format a reader would name.
_TRAINING_RECIPES = {"bf16": "bf16-mixed", "fp32": "fp32"}
APPLE_GPU_SHARE = specs.APPLE_GPU_SHARE  # the GPU's share of a Mac's unified memory
Task = Annotated[str, OneOf(TASKS, "task")]
# Cards of one model in one machine or pod: beyond 64 the even-split model means nothing.
CardCount = Annotated[int, Between(1, 64)]


@checked
@dataclass(frozen=True)
class Workload:
    """What has to run: a model, its format, the context, how many users, inference or training."""

    model: str | ModelSpec  # a gpulab.models catalogue name ("Llama-3-70B") or a ModelSpec
    weight_format: WeightFormatName = (
        "bf16"  # a key of gpulab.memory.WEIGHT_FORMATS ("bf16", "int4", "q4_k_m")
    )
    context_tokens: PositiveInt = (
        4096  # tokens per user: prompt + answer (fine-tuning: sequence length)
    )
    # Users served at once, each with a full context of KV cache (fine-tuning: sequences per step).
    concurrent_users: PositiveInt = 1
    task: Task = "inference"  # "inference" or "fine-tuning" (full fine-tuning, AdamW, see above)
    kv_cache: KVFormat = "bf16"  # KV-cache format, a key of gpulab.memory.KV_FORMATS
    # Users whose prompts are prefilled in one forward pass: activation memory scales with it.
    # None: all users at once (gpulab.memory.estimate_inference's assumption, an upper bound);
    # servers that prefill a bounded number of tokens per step need less.
    prefill_batch: PositiveInt | None = None
    activation_checkpointing: bool = False  # fine-tuning only: keep one activation per layer

    def __post_init__(self) -> None:
        """Check the model name and the combinations the field types cannot check alone."""
        if not isinstance(self.model, ModelSpec):
            models.get(self.model)  # raises GpulabConfigError naming model= and the catalogue
        if self.task == "fine-tuning" and self.weight_format not in _TRAINING_RECIPES:
            raise GpulabConfigError(
                f"weight_format={self.weight_format!r} with task='fine-tuning': gpulab.memory "
                f"estimates full fine-tuning only (no LoRA/QLoRA on quantized weights); use "
                f"{' or '.join(repr(k) for k in _TRAINING_RECIPES)}"
            )

    @property
    def spec(self) -> ModelSpec:
        """The model's architecture (the catalogue entry's, or the ModelSpec given)."""
        return self.model if isinstance(self.model, ModelSpec) else models.get(self.model)

    def describe(self) -> str:
        """One line: '1 user x 8192 tokens of Llama-3-70B in int4 (inference)'."""
        users = f"{self.concurrent_users} user{'s' if self.concurrent_users > 1 else ''}"
        if self.task == "fine-tuning":
            users = f"{self.concurrent_users} sequence{'s' if self.concurrent_users > 1 else ''}"
        return (
            f"{users} x {self.context_tokens} tokens of {self.spec.name} in "
            f"{self.weight_format} ({self.task})"
        )


@dataclass(frozen=True)
class Candidate:
    """One GPU model at one card count, judged against a workload (fitting or not)."""

    gpu: str  # the spec table's name
    count: int  # cards of that model
    fits: bool  # memory_needed_bytes <= memory_available_bytes
    breakdown: Breakdown = field(repr=False)  # gpulab.memory's parts, for all cards together
    memory_needed_bytes: int  # the breakdown's peak, runtime contexts of every card included
    memory_available_bytes: int  # count x what one card offers (Apple: the GPU's share)
    # Decode upper bounds (bandwidth / bytes read per step), None for fine-tuning.
    decode_tokens_per_s_per_user: float | None
    decode_tokens_per_s_total: float | None
    # Fine-tuning only: count x bf16 (or fp32) peak / training FLOPs per token; None otherwise
    # or when the table has no such peak.
    training_tokens_per_s_bound: float | None
    power_w: float | None  # board power x count; None when the table has none (Apple)
    price_usd: float | None  # launch price x count; None when unknown
    price_date: str | None  # "YYYY-MM" of that price (the launch date)
    reasons: tuple[str, ...]  # why it fits or not, the arithmetic in words

    @property
    def memory_per_card_bytes(self) -> int:
        """Needed memory per card under an even split."""
        return self.memory_needed_bytes // self.count

    @property
    def headroom_bytes(self) -> int:
        """Available minus needed memory: negative when it does not fit."""
        return self.memory_available_bytes - self.memory_needed_bytes


# --------------------------------------------------------------------------- helpers


def _capacity_bytes(gpu: specs.GPUSpec) -> int:
    """The tensors one card can hold: its driver-reported memory less the runtime's share.

    Each card holds its own CUDA context and allocator slack, so `count` cards offer `count`
    times this (gpulab.specs.GPUSpec.model_memory_bytes; Apple counts the GPU's share).
    """
    return gpu.model_memory_bytes


def _breakdown(workload: Workload) -> Breakdown:
    """gpulab.memory's estimate of the workload's tensors (the cards' capacity has the rest)."""
    spec = workload.spec
    if workload.task == "fine-tuning":
        return memory.estimate_training(
            spec,
            precision=_TRAINING_RECIPES[workload.weight_format],
            optimizer="adamw",
            batch=workload.concurrent_users,
            seq_len=workload.context_tokens,
            activation_checkpointing=workload.activation_checkpointing,
        )
    full = memory.estimate_inference(
        spec,
        weights=workload.weight_format,
        kv_cache=workload.kv_cache,
        batch=workload.concurrent_users,
        seq_len=workload.context_tokens,
    )
    prefill = workload.prefill_batch
    if prefill is None or prefill >= workload.concurrent_users:
        return full
    # Prompts prefilled `prefill` at a time: the KV cache still holds every user's context,
    # and the activations are those of one smaller prefill.
    act = memory.inference_activation_bytes(spec, prefill, workload.context_tokens)
    notes = (*full.notes, f"activations of prefilling {prefill} prompt(s) at a time")
    return Breakdown(weights=full.weights, kv_cache=full.kv_cache, activations=act, notes=notes)


def _gb(nbytes: float) -> str:
    """Bytes as decimal GB with one decimal: '47.1 GB'."""
    return f"{nbytes / GB:.1f} GB"


def _parts(b: Breakdown) -> str:
    """'weights 37.1 GB + KV cache 2.7 GB + ...' for the non-zero parts."""
    names = {"kv_cache": "KV cache"}
    return " + ".join(f"{names.get(p, p)} {_gb(getattr(b, p))}" for p in b.PARTS if getattr(b, p))


def _money(usd: float) -> str:
    """Dollars with thousands separators: '$1,599'."""
    return f"${usd:,.0f}"


# --------------------------------------------------------------------------- evaluate


@checked
def evaluate(workload: Workload, gpu: str, count: CardCount = 1) -> Candidate:
    """Judge `count` cards of `gpu` against `workload`: fit, memory, speed bound, power, price."""
    card = specs.resolve_gpu(gpu)
    if card.vendor == "Apple" and count > 1:
        raise GpulabConfigError(
            f"count={count}: an {card.name} is one chip per Mac; several Macs "
            f"over a network are not modelled, use count=1"
        )
    spec = workload.spec
    b = _breakdown(workload)
    needed = b.peak
    available = _capacity_bytes(card) * count
    fits = needed <= available
    if b.peak == b.total:
        first = f"{workload.describe()} needs {_gb(needed)}: {_parts(b)}"
    else:  # training: activations are freed while gradients are made, so not all are live
        first = (
            f"{workload.describe()} needs {_gb(needed)} at the peak of a training step "
            f"({_parts(b)} = {_gb(b.total)} if all were live at once)"
        )
    reasons = [first]
    share = (
        f", {APPLE_GPU_SHARE:.0%} of {card.memory_gb:g} GB unified memory that macOS lets "
        f"the GPU use by default"
        if card.vendor == "Apple"
        else ""
    )
    cards = f"{count} x {card.name}" if count > 1 else card.name
    verdict = (
        f"fits with {_gb(available - needed)} to spare"
        if fits
        else f"does not fit: {_gb(needed - available)} short"
    )
    reasons.append(f"{cards} offers {_gb(available)}{share}: {verdict}")
    if count > 1:
        how = (
            "fully sharded data parallel (FSDP / ZeRO-3): weights, gradients and optimizer "
            "states split"
            if workload.task == "fine-tuning"
            else "tensor or pipeline parallel: layers or their matrices split"
        )
        link = (
            f"NVLink {card.interconnect['nvlink_gbs']:g} GB/s"
            if card.interconnect.get("nvlink_gbs")
            else "PCIe only (no NVLink)"
        )
        reasons.append(
            f"memory split across {count} cards by {how}, about "
            f"{_gb(needed / count)} per card assuming an even split (each card holds "
            f"its own runtime context); cards talk over {link}"
        )

    per_user = total = train = None
    if workload.task == "inference":
        bandwidth = card.bandwidth_gbs * count
        total = perf.decode_tokens_per_s(
            spec,
            workload.weight_format,
            workload.kv_cache,
            batch=workload.concurrent_users,
            seq_len=workload.context_tokens,
            bandwidth_gbs=bandwidth,
        )
        per_user = total / workload.concurrent_users
        step = perf.decode_bytes_per_step(
            spec,
            workload.weight_format,
            workload.kv_cache,
            workload.concurrent_users,
            workload.context_tokens,
        )
        text = (
            f"decode bound: {count} x {card.bandwidth_gbs:g} GB/s"
            if count > 1
            else f"decode bound: {card.bandwidth_gbs:g} GB/s"
        )
        text += (
            f" / {_gb(step)} read per step (active weights once + every user's KV cache at "
            f"full context) x {workload.concurrent_users} token(s) per step = "
            f"{total:.1f} tokens/s in total, {per_user:.1f} per user; an upper bound"
        )
        if count > 1:
            one = perf.decode_tokens_per_s(
                spec,
                workload.weight_format,
                workload.kv_cache,
                batch=workload.concurrent_users,
                seq_len=workload.context_tokens,
                bandwidth_gbs=card.bandwidth_gbs,
            )
            text += (
                f" that assumes tensor parallel with perfect scaling and no communication; "
                f"with a pipeline (layer) split one stream runs at about one card's rate, "
                f"{one / workload.concurrent_users:.1f} tokens/s per user"
            )
        reasons.append(text)
    else:
        dtype = "bf16" if workload.weight_format == "bf16" else "fp32"
        peak = card.peak_flops(dtype)
        per_token = perf.training_flops(spec, 1, seq_len=workload.context_tokens)
        if peak is None:
            reasons.append(
                f"training speed bound unknown: the spec table has no {dtype} peak for {card.name}"
            )
        else:
            train = count * peak / per_token
            reasons.append(
                f"training bound: {count} x {peak / 1e12:g} TFLOP/s {dtype} / "
                f"{per_token / 1e9:.1f} GFLOP per token = {train:,.0f} tokens/s; an "
                f"upper bound (100% of peak, perfect scaling)"
            )

    power = None if card.board_power_w is None else card.board_power_w * count
    if power is None:
        reasons.append(f"power: the spec table has no board power for {card.name}")
    else:
        reasons.append(
            f"power: {count} x {card.board_power_w:g} W = {power:g} W board power"
            " (see gpulab.power for the PSU)"
        )
    price = None if card.launch_price_usd is None else card.launch_price_usd * count
    if price is None:
        reasons.append(f"price: no launch price for {card.name} in the spec table")
    else:
        reasons.append(
            f"price: {count} x {_money(card.launch_price_usd)} = {_money(price)} at "
            f"launch ({card.launch_date}); street and used prices differ"
        )
    return Candidate(
        gpu=card.name,
        count=count,
        fits=fits,
        breakdown=b,
        memory_needed_bytes=needed,
        memory_available_bytes=available,
        decode_tokens_per_s_per_user=per_user,
        decode_tokens_per_s_total=total,
        training_tokens_per_s_bound=train,
        power_w=power,
        price_usd=price,
        price_date=card.launch_date if price is not None else None,
        reasons=tuple(reasons),
    )


# --------------------------------------------------------------------------- recommend


@checked
def recommend(
    workload: Workload, gpus: list[str] | None = None, max_count: CardCount = 8
) -> list[Candidate]:
    """Only fitting candidates, each GPU model at its smallest fitting count, fewest cards first.

    Ties go to the cheapest known launch price (unknown prices after known ones), then the name.
    `gpus` limits the search to those rows (table keys or reported names); None tries them all.
    An Apple chip is tried once: a Mac holds one.
    """
    names = (
        list(specs.load_gpus())
        if gpus is None
        else [specs.resolve_gpu(g, f"gpus[{i}]").name for i, g in enumerate(gpus)]
    )
    found = []
    for name in dict.fromkeys(names):  # keep order, drop repeats
        card = specs.get_gpu(name)
        limit = 1 if card.vendor == "Apple" else max_count
        # Needed memory grows with the card count (one context each), so search upwards.
        for count in range(1, limit + 1):
            candidate = evaluate(workload, name, count)
            if candidate.fits:
                found.append(candidate)
                break
    unknown = float("inf")
    return sorted(
        found, key=lambda c: (c.count, c.price_usd if c.price_usd is not None else unknown, c.gpu)
    )
