"""Training and inference on several GPUs: memory per GPU and bytes moved per step (chapter 7).

    from gpulab import parallel
    from gpulab import models

    spec = models.get("Llama-3-70B")
    zero3 = parallel.Strategy("ZeRO-3", zero_stage=3)
    b = parallel.memory_per_gpu(spec, zero3, n_gpus=8, global_batch=8, seq_len=4096,
                                activation_checkpointing=True)      # a memory.Breakdown, bytes
    moves = parallel.communication_per_step(spec, zero3, n_gpus=8, global_batch=8, seq_len=4096)
    parallel.step_communication_seconds(moves, links.nvlink("H100 SXM").bytes_per_s)

The memory side reuses chapter 2's estimator (gpulab.memory): its bytes per parameter for the
weights, gradients and optimizer states of a recipe, and its activation count, split the way
each strategy splits them. The communication side counts the collectives each strategy runs
per step (ZeRO paper, Megatron-LM) and prices them with the ring model of gpulab.collectives.
Every figure is a model: no overlap of communication with compute, no framework buffers.
Inference split over several GPUs is in ``gpulab.serving``; link rates in ``gpulab.links``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import NonNegativeFloat, PositiveFloat, PositiveInt, checked
from gpulab.estimate import collectives, memory
from gpulab.estimate.memory import Breakdown, Optimizer
from gpulab.reference.formats import ACTIVATION_BYTES, TRAINING_PRECISIONS, TrainingPrecision
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "LORA_TARGETS",
    "Strategy",
    "Transfer",
    "bubble_fraction",
    "check_split",
    "communication_per_step",
    "lora_params",
    "memory_per_gpu",
    "standard_strategies",
    "step_communication_seconds",
    "transfer_seconds",
]

# ---------------------------------------------------------------- strategies


@checked
@dataclass(frozen=True)
class Strategy:
    """How a training job splits a model over GPUs (combinations allowed: t x p x d = GPUs)."""

    name: str  # a label for tables: "DP", "ZeRO-3", "TP=8", ...
    # ZeRO stage over the data-parallel ranks (collectives.ZERO_STAGES): 0 = plain data parallel
    # (PyTorch DDP), 1 = optimizer states sharded, 2 = + gradients, 3 = + parameters (FSDP).
    zero_stage: int = 0
    tensor: PositiveInt = (
        1  # tensor-parallel degree t: every layer's matrices split t ways (Megatron-LM)
    )
    pipeline: PositiveInt = (
        1  # pipeline-parallel degree p: the layers cut into p consecutive stages
    )
    micro_batch: PositiveInt = 1  # sequences per micro-batch when pipeline > 1 (1F1B schedule)

    def __post_init__(self) -> None:
        """Validate the degrees and the ZeRO stage."""
        if self.zero_stage not in collectives.ZERO_STAGES:
            raise GpulabConfigError(
                f"zero_stage={self.zero_stage!r} must be one of {sorted(collectives.ZERO_STAGES)}"
            )

    @checked
    def data_degree(self, n_gpus: PositiveInt) -> int:
        """Data-parallel replicas d = n_gpus / (tensor x pipeline); raises if it does not divide."""
        model_parallel = self.tensor * self.pipeline
        if n_gpus % model_parallel:
            raise GpulabConfigError(
                f"n_gpus={n_gpus} must be a multiple of tensor x pipeline = "
                f"{self.tensor} x {self.pipeline} for strategy {self.name!r}"
            )
        return n_gpus // model_parallel


@checked
def standard_strategies(n_gpus: PositiveInt) -> list[Strategy]:
    """The six ways chapter 7 compares: DP, ZeRO-1, ZeRO-2, ZeRO-3/FSDP, TP=n, PP=n."""
    return [
        Strategy("DP"),
        Strategy("ZeRO-1", zero_stage=1),
        Strategy("ZeRO-2", zero_stage=2),
        Strategy("ZeRO-3 / FSDP", zero_stage=3),
        Strategy(f"TP={n_gpus}", tensor=n_gpus),
        Strategy(f"PP={n_gpus}", pipeline=n_gpus),
    ]


@checked
def bubble_fraction(pipeline: PositiveInt, micro_batches: PositiveInt) -> float:
    """Idle time of a 1F1B pipeline over its useful time: (p - 1) / m (Narayanan et al. 2021)."""
    # arXiv:2104.04473, section 2.2.1: bubble time fraction = (p - 1) / m.
    return (pipeline - 1) / micro_batches


# ---------------------------------------------------------------- what each GPU holds


@checked
def check_split(spec: ModelSpec, tensor: PositiveInt = 1, pipeline: PositiveInt = 1) -> None:
    """Raise GpulabConfigError unless `spec` splits `tensor` ways per layer and in `pipeline` parts.

    Tensor parallelism gives each card whole attention heads (Megatron-LM splits by head); a
    split by layers gives each card at least one whole layer. Training (memory_per_gpu) and
    inference (gpulab.serving) refuse the same shapes with this check.
    """
    if spec.n_heads % tensor:
        raise GpulabConfigError(
            f"tensor={tensor} must divide the model's "
            f"{spec.n_heads} attention heads (Megatron-LM splits by head)",
            "tensor",
        )
    if pipeline > spec.n_layers:
        raise GpulabConfigError(
            f"pipeline={pipeline} must be at most the model's {spec.n_layers} layers", "pipeline"
        )


def _check_setup(spec: ModelSpec, strategy: Strategy, n_gpus: int, global_batch: int) -> int:
    """Validate a (model, strategy, GPUs, batch) combination; return the data-parallel degree."""
    d = strategy.data_degree(n_gpus)
    if global_batch % d:
        raise GpulabConfigError(
            f"global_batch={global_batch} must be a multiple of the "
            f"{d} data-parallel replicas of {strategy.name!r}"
        )
    check_split(spec, strategy.tensor, strategy.pipeline)
    if strategy.pipeline > 1 and (global_batch // d) % strategy.micro_batch:
        raise GpulabConfigError(
            f"micro_batch={strategy.micro_batch} must divide the "
            f"{global_batch // d} sequences of each replica"
        )
    return d


def _stages(spec: ModelSpec, pipeline: int) -> list[range]:
    """Consecutive layer ranges of each pipeline stage, as even as possible."""
    base, extra = divmod(spec.n_layers, pipeline)
    bounds, start = [], 0
    for i in range(pipeline):
        size = base + (1 if i < extra else 0)
        bounds.append(range(start, start + size))
        start += size
    return bounds


def _stage_params(spec: ModelSpec, layers: range, first: bool, last: bool) -> tuple[int, int]:
    """(parameters, of which norm parameters) a pipeline stage holds.

    The first stage holds the embedding, the last the final norm and the output head (a copy
    of the embedding when they are tied, as Megatron-LM keeps one on the last stage).
    """
    parts = spec.params_by_component()
    per_norm = parts["norms"] // (2 * spec.n_layers + 1)  # every norm has the same width
    params = sum(spec.layer_params(i) for i in layers)
    norms = 2 * len(layers) * per_norm
    if first:
        params += parts["embedding"]
    if last:
        params += per_norm + parts["lm_head"]
        norms += per_norm
        if spec.tie_embeddings and not first:
            params += parts["embedding"]  # the tied head's copy on the last stage
    return params, norms


def _held(spec: ModelSpec, strategy: Strategy, stage: int, layers: range) -> float:
    """Parameters one GPU of a pipeline stage holds: a 1/t share of all but the norms."""
    params, norms = _stage_params(spec, layers, stage == 0, stage == strategy.pipeline - 1)
    return (params - norms) / strategy.tensor + norms  # tensor parallelism replicates the norms


def _activation_terms(spec: ModelSpec, batch: int, seq_len: int, dtype: str) -> dict[str, int]:
    """Chapter 2's activation count split into its per-layer and once-per-model terms.

    memory.training_activation_bytes is linear in the layer count, so the same model with one
    layer less gives the per-layer term, and the rest is the loss's logits (or, with
    checkpointing, the logits and the one layer rebuilt at a time): no formula is copied here.
    """

    def act(n_layers: int, ckpt: bool) -> int:
        s = dataclasses.replace(spec, n_layers=n_layers)
        return memory.training_activation_bytes(s, batch, seq_len, dtype, ckpt)

    n = spec.n_layers
    layer = act(n, False) - act(n - 1, False)  # everything one layer keeps for its backward
    kept = act(n, True) - act(n - 1, True)  # with checkpointing: the layer's input only
    head = act(n, False) - n * layer
    return {"layer": layer, "checkpoint": kept, "head": head}


def _stage_activations(
    terms: dict[str, int], n_layers: int, in_flight: int, last: bool, ckpt: bool
) -> int:
    """Activations a pipeline stage keeps: its layers for each micro-batch in flight."""
    if ckpt:  # inputs of its layers per micro-batch in flight, plus one layer being rebuilt
        kept = in_flight * n_layers * terms["checkpoint"] + terms["layer"]
    else:
        kept = in_flight * n_layers * terms["layer"]
    return kept + (terms["head"] if last else 0)  # the loss: one micro-batch at a time


@checked
def memory_per_gpu(
    spec: ModelSpec,
    strategy: Strategy,
    n_gpus: PositiveInt,
    global_batch: PositiveInt = 8,
    seq_len: PositiveInt = 4096,
    precision: TrainingPrecision = "bf16-mixed",
    optimizer: Optimizer = "adamw",
    activation_checkpointing: bool = False,
) -> Breakdown:
    """Memory of the fullest GPU in a training step under `strategy` (a memory.Breakdown).

    `global_batch` sequences of `seq_len` tokens per step, over all GPUs. The parts follow
    what each strategy splits:
    - model states: chapter 2's bytes per parameter for the recipe, times the parameters the
      GPU holds (a 1/t share of every matrix under tensor parallelism, norms replicated; its
      stage's layers under pipeline parallelism), then sharded over the d data-parallel ranks
      by ZeRO stage (collectives.sharded_bytes_per_rank);
    - ZeRO-3 also gathers whole units for a moment: the unit computed and the one prefetched
      (weights) and one unit's full gradient before its reduce-scatter;
    - activations: chapter 2's count for the replica's global_batch / d sequences, divided by
      t (tensor parallelism with sequence parallelism, Korthikanti et al., arXiv:2205.05198);
      a pipeline stage keeps them for every micro-batch in flight: p - s on stage s with the
      1F1B schedule (Narayanan et al., arXiv:2104.04473), so stage 0 keeps the most.
    The total is every part at once, an upper bound, in tensors: each card's runtime share is
    off its capacity (GPUSpec.model_memory_bytes).
    """
    d = _check_setup(spec, strategy, n_gpus, global_batch)
    full = memory.estimate_training(spec, precision, optimizer, batch=1, seq_len=1)
    per_param = {
        part: getattr(full, part) / spec.n_params for part in ("weights", "gradients", "optimizer")
    }
    dtype = TRAINING_PRECISIONS[precision]["activations"]
    t, p = strategy.tensor, strategy.pipeline
    replica_batch = global_batch // d

    micro = replica_batch // strategy.micro_batch  # micro-batches per step (pipeline only)
    terms = _activation_terms(spec, strategy.micro_batch, seq_len, dtype) if p > 1 else {}
    worst = None
    for s, layers in enumerate(_stages(spec, p)):
        held = _held(spec, strategy, s, layers)
        states = collectives.sharded_bytes_per_rank(
            int(held * per_param["weights"]),
            int(held * per_param["gradients"]),
            int(held * per_param["optimizer"]),
            world_size=d,
            stage=strategy.zero_stage,
        )
        weights, grads = states["params"], states["grads"]
        notes = [
            f"{strategy.name} on {n_gpus} GPUs: t={t}, p={p}, d={d}; "
            f"{collectives.ZERO_STAGES[strategy.zero_stage]}"
        ]
        if strategy.zero_stage == 3 and d > 1:
            # FSDP's units: one per decoder layer, and the embedding and head where this stage has
            # them.
            embedding = spec.params_by_component()["embedding"]
            ends = [embedding] if s == 0 or s == p - 1 else []
            unit = max([spec.layer_params(i) for i in layers] + ends) / t
            weights += int(2 * unit * per_param["weights"])  # FSDP: current + prefetched unit
            grads += int(unit * per_param["gradients"])  # one unit's gradient before reduce-scatter
            notes.append(
                "ZeRO-3 working set: two gathered units (current, prefetched) and one "
                "unit's full gradient"
            )
        if p > 1:
            act = _stage_activations(
                terms, len(layers), min(p - s, micro), s == p - 1, activation_checkpointing
            )
            notes.append(
                f"pipeline stage {s} of {p}: layers {layers.start}-{layers.stop - 1}, "
                f"{min(p - s, micro)} of {micro} micro-batches in flight"
            )
        else:
            act = memory.training_activation_bytes(
                spec, replica_batch, seq_len, dtype, activation_checkpointing
            )
        act = int(act / t)
        optimizer_bytes = states["optimizer"]
        b = Breakdown(
            weights=weights,
            gradients=grads,
            optimizer=optimizer_bytes,
            activations=act,
            notes=tuple(notes),
        )
        if worst is None or b.total > worst.total:
            worst = b
    return worst


# ---------------------------------------------------------------- communication per step

_FACTORS = {"all-reduce": 2.0, "reduce-scatter": 1.0, "all-gather": 1.0}


@dataclass(frozen=True)
class Transfer:
    """One kind of collective a training step runs: what, how large, how often, among whom."""

    collective: str  # "all-reduce", "reduce-scatter", "all-gather" or "send/recv"
    what: str  # the tensors moved: "gradients", "parameters", "activations", ...
    nbytes: int  # one call's buffer: the full array S (nccl-tests' S), or one message
    calls: int  # calls per step
    group: int  # ranks taking part in each call
    source: str  # where the count comes from

    @property
    def bytes_per_rank(self) -> float:
        """Bytes each rank sends per step: calls x factor x S.

        nccl-tests doc/PERFORMANCE.md: a rank sends 2(n-1)/n x S in an all-reduce and
        (n-1)/n x S in a reduce-scatter or an all-gather; a send/recv moves S once.
        """
        if self.collective == "send/recv":
            return float(self.calls * self.nbytes)
        half = collectives.allreduce_bus_factor(self.group) / 2  # (n - 1) / n
        return self.calls * _FACTORS[self.collective] * half * self.nbytes


@checked
def communication_per_step(
    spec: ModelSpec,
    strategy: Strategy,
    n_gpus: PositiveInt,
    global_batch: PositiveInt = 8,
    seq_len: PositiveInt = 4096,
    precision: TrainingPrecision = "bf16-mixed",
    activation_checkpointing: bool = False,
) -> list[Transfer]:
    """The collectives one training step runs under `strategy`, on the busiest GPU.

    - Data parallel (ZeRO-0): one all-reduce of the gradients, 2(d-1)/d x gradient bytes per
      rank. ZeRO-1/2: a reduce-scatter of the gradients and an all-gather of the updated
      parameters, the same volume. ZeRO-3: parameters all-gathered in the forward and again in
      the backward pass, gradients reduce-scattered: 1.5 x (ZeRO, arXiv:1910.02054, 7.2).
    - Tensor parallel: two all-reduces of the layer's activations (tokens x hidden) per layer
      in the forward pass and two in the backward pass (Megatron-LM, arXiv:1909.08053, 3);
      two more per layer when checkpointing recomputes the forward pass.
    - Pipeline parallel: each micro-batch's activations sent to the next stage and their
      gradient sent back; a middle stage sends both, m times per step.
    Small collectives (embedding, loss, norms' gradients under tensor parallelism) are left out.
    """
    d = _check_setup(spec, strategy, n_gpus, global_batch)
    recipe = TRAINING_PRECISIONS[precision]
    act_bytes = ACTIVATION_BYTES[recipe["activations"]]
    t, p = strategy.tensor, strategy.pipeline
    stages = _stages(spec, p)
    # The busiest GPU: the stage with the most parameters (gradient traffic) and the most layers.
    held = max(_held(spec, strategy, i, r) for i, r in enumerate(stages))
    layers = max(len(r) for r in stages)
    grad_bytes = int(held * recipe["gradients"])
    # Parameters are gathered in their stored precision, which is the gradients' (autocast's
    # extra bf16 copies are made on each GPU, not sent).
    param_bytes = int(held * min(recipe["weights"], recipe["gradients"]))
    replica_batch = global_batch // d
    moves: list[Transfer] = []
    zero = "ZeRO, arXiv:1910.02054, section 7.2"
    if d > 1:
        if strategy.zero_stage == 0:
            moves.append(
                Transfer(
                    "all-reduce",
                    "gradients",
                    grad_bytes,
                    1,
                    d,
                    "data parallel: gradients summed over replicas",
                )
            )
        elif strategy.zero_stage in (1, 2):
            moves += [
                Transfer("reduce-scatter", "gradients", grad_bytes, 1, d, zero),
                Transfer("all-gather", "updated parameters", param_bytes, 1, d, zero),
            ]
        else:
            moves += [
                Transfer("all-gather", "parameters (forward)", param_bytes, 1, d, zero),
                Transfer("all-gather", "parameters (backward)", param_bytes, 1, d, zero),
                Transfer("reduce-scatter", "gradients", grad_bytes, 1, d, zero),
            ]
    micro = strategy.micro_batch if p > 1 else replica_batch
    n_micro = replica_batch // micro
    boundary = micro * seq_len * spec.hidden_size * act_bytes  # (micro, seq, hidden)
    if t > 1:
        per_layer = 6 if activation_checkpointing else 4
        moves.append(
            Transfer(
                "all-reduce",
                "layer activations",
                boundary,
                per_layer * layers * n_micro,
                t,
                "Megatron-LM, arXiv:1909.08053, section 3: 2 forward + 2 backward "
                "per layer" + (", +2 recomputed" if activation_checkpointing else ""),
            )
        )
    if p > 1:
        # With tensor parallelism each of the t GPUs sends its 1/t slice (Megatron-LM's
        # scatter/gather across stages, Narayanan et al., arXiv:2104.04473, section 4.1).
        moves.append(
            Transfer(
                "send/recv",
                "stage-boundary activations and their gradients",
                boundary // t,
                2 * n_micro,
                2,
                "pipeline: forward to the next stage, gradient back, per micro-batch",
            )
        )
    return moves


@checked
def transfer_seconds(
    transfer: Transfer, bus_bytes_per_s: PositiveFloat, latency_s: NonNegativeFloat = 0.0
) -> float:
    """Ring-model time of one step's transfer (collectives.allreduce_seconds for an all-reduce)."""
    if transfer.collective == "all-reduce":
        one = collectives.allreduce_seconds(
            transfer.nbytes, transfer.group, bus_bytes_per_s, latency_s
        )
        return transfer.calls * one
    return transfer.calls * latency_s + transfer.bytes_per_rank / bus_bytes_per_s


@checked
def step_communication_seconds(
    transfers: list[Transfer], bus_bytes_per_s: PositiveFloat, latency_s: NonNegativeFloat = 0.0
) -> float:
    """Seconds a step spends communicating if nothing overlaps with compute (an upper bound)."""
    return sum(transfer_seconds(x, bus_bytes_per_s, latency_s) for x in transfers)


# ---------------------------------------------------------------- fine-tuning with adapters

LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")  # every linear layer of a decoder block


@checked
def lora_params(
    spec: ModelSpec, rank: PositiveInt = 16, targets: tuple[str, ...] = LORA_TARGETS
) -> int:
    """LoRA adapters' trainable parameters: rank x (inputs + outputs) per adapted matrix and layer.

    LoRA (Hu et al., arXiv:2106.09685) adds B (out x r) and A (r x in) beside a frozen matrix;
    only these are trained, so only their gradients are exchanged between GPUs. Dense models
    with ordinary attention only.
    """
    if spec.is_moe or spec.attention_type == "mla":
        raise GpulabConfigError(
            f"spec={spec.name!r}: lora_params counts dense models with "
            "ordinary attention, and this is a mixture of experts or uses MLA",
            "spec",
        )
    if not spec.gated_mlp and any(x == "gate" for x in targets):
        raise GpulabConfigError(f"{spec.name} has no gate projection; drop 'gate' from targets")
    h, f = spec.hidden_size, spec.intermediate_size
    q, kv = spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    shapes = {
        "q": (h, q),
        "k": (h, kv),
        "v": (h, kv),
        "o": (q, h),
        "gate": (h, f),
        "up": (h, f),
        "down": (f, h),
    }  # (inputs, outputs)
    unknown = [x for x in targets if x not in shapes]
    if unknown or not targets:
        raise GpulabConfigError(f"targets={targets!r} must be a non-empty subset of {LORA_TARGETS}")
    # B @ A has rank at most min(inputs, outputs): a larger rank adds parameters, not capacity
    narrowest = min(targets, key=lambda x: min(shapes[x]))
    if rank > min(shapes[narrowest]):
        rows, cols = shapes[narrowest]
        raise GpulabConfigError(
            f"rank={rank} must be at most {min(rows, cols)}, the narrower side of the model's "
            f"{narrowest} projection ({rows} x {cols}): a LoRA update has no higher rank",
            "rank",
        )
    return spec.n_layers * sum(rank * sum(shapes[x]) for x in targets)
