"""Chapter 07's figures: every number that `book/07_beyond_one_gpu.md` quotes, computed from gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit. The
instructor guide (`book/workshop/instructor_guide.md`) pastes its few figures from here too,
under keys that start with ``guide_``.

What is chosen here (the models, the GPUs, the batch) is the chapter's setting; every property of
a model, a GPU, a link or a format comes from gpulab's reference data and estimators.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.core.units import GB, GIB, MIB
from gpulab.course.claims_models import ARTICLE_TEST_BOX
from gpulab.estimate import basis, collectives, memory, parallel, serving
from gpulab.machine import rules
from gpulab.reference import links, models, specs
from gpulab.reference.formats import (
    ACTIVATION_BYTES,
    DTYPE_BYTES,
    TRAINING_PRECISIONS,
    bits_per_weight,
)
from gpulab.reference.modelspec import ModelSpec

__all__ = ["figures"]

# ---------------------------------------------------------------- the chapter's setting

BIG, SMALL, MOE = "Llama-3-70B", "Llama-2-7B", "DeepSeek-R1"  # the models the page works with
N_GPUS = 8  # one 8-GPU server
ZERO_PAGE_GPUS = 4  # the page works ZeRO for SMALL on four GPUs (the notebook works BIG on N_GPUS)
TRAIN_BATCH, SEQ_LEN = 8, 4096  # sequences per step and tokens each (the notebook's setting)
CONTEXT = 4096  # decode context of the two-card inference example
LORA_RANK = 16
RECIPE, OPTIMIZER = "bf16-mixed", "adamw"
ENCODING_128B130B = 128 / 130  # PCIe 3.0 to 5.0 line code: 128 payload bits in 130

# A measured all-reduce on consumer cards, from the README of tinygrad's patched driver
# (https://github.com/tinygrad/open-gpu-kernel-modules, "And NCCL (aka torch) compatible!"):
# nccl-tests all_reduce_perf -g 6 on six RTX 4090s, 33,554,432-byte messages, "Avg bus bandwidth
# : 24.5413" GB/s.
TINYGRAD_ALLREDUCE = {"gpus": 6, "message_bytes": 33554432, "busbw_gbs": 24.5413}


def _gb(nbytes: float) -> float:
    """Bytes in decimal GB."""
    return nbytes / GB


# ---------------------------------------------------------------- model states (ZeRO)


def _per_param() -> dict[str, float]:
    """Bytes per parameter of the recipe's weights, gradients and optimizer states (chapter 2)."""
    spec = models.get(SMALL)
    b = memory.estimate_training(spec, RECIPE, OPTIMIZER, batch=1, seq_len=1)
    return {
        part: getattr(b, part) / spec.n_params for part in ("weights", "gradients", "optimizer")
    }


def _zero_states(spec: ModelSpec, stage: int, n: int = N_GPUS) -> float:
    """Bytes of model states a GPU holds under a ZeRO stage (collectives.sharded_bytes_per_rank)."""
    p = _per_param()
    held = collectives.sharded_bytes_per_rank(
        int(spec.n_params * p["weights"]),
        int(spec.n_params * p["gradients"]),
        int(spec.n_params * p["optimizer"]),
        n,
        stage,
    )
    return held["total"]


def zero_figures() -> dict[str, Any]:
    """Bytes per parameter, the 70B full fine-tune's states, and per GPU under each ZeRO stage
    for the 7B model on ZERO_PAGE_GPUS GPUs (the page's worked case)."""
    spec, small, p = models.get(BIG), models.get(SMALL), _per_param()
    states = _zero_states(spec, 0)
    h100 = specs.get_gpu("H100 SXM")
    per_card = h100.model_memory_bytes
    comm = {
        s.zero_stage: sum(
            m.bytes_per_rank
            for m in parallel.communication_per_step(spec, s, N_GPUS, TRAIN_BATCH, SEQ_LEN, RECIPE)
        )
        for s in parallel.standard_strategies(N_GPUS)
        if s.tensor == 1 and s.pipeline == 1
    }
    return {
        "llama70_params_b": spec.n_params / 1e9,
        "train_bytes_per_param": sum(p.values()),
        "zero_page_gpus": ZERO_PAGE_GPUS,
        **{
            f"llama7_zero{stage}_gb": _gb(_zero_states(small, stage, ZERO_PAGE_GPUS))
            for stage in (1, 2, 3)  # stage 0 is llama7_full_finetune_gb
        },
        "llama70_full_ft_states_tb": states / 1e12,
        "h100_usable_gb": _gb(per_card),
        "llama70_full_ft_cards_worth": states / per_card,
        "llama70_full_ft_min_gpus": math.ceil(states / per_card),
        "zero3_vs_dp_traffic_ratio": comm[3] / comm[0],
    }


# ---------------------------------------------------------------- tensor and pipeline parallelism


def model_parallel_figures() -> dict[str, Any]:
    """Message sizes of tensor parallelism's all-reduces and of a pipeline stage boundary."""
    spec = models.get(BIG)
    tp = parallel.communication_per_step(
        spec, parallel.Strategy("TP", tensor=N_GPUS), N_GPUS, TRAIN_BATCH, SEQ_LEN, RECIPE
    )
    pp = parallel.communication_per_step(
        spec, parallel.Strategy("PP", pipeline=N_GPUS), N_GPUS, TRAIN_BATCH, SEQ_LEN, RECIPE
    )
    (allreduce,) = [m for m in tp if m.collective == "all-reduce"]
    (boundary,) = [m for m in pp if m.collective == "send/recv"]
    return {
        "tp_batch": TRAIN_BATCH,
        "llama70_hidden": spec.hidden_size,
        "tp_allreduce_mb": allreduce.nbytes / 1e6,
        "tp_allreduces_per_layer": allreduce.calls // spec.n_layers,
        "llama70_layers": spec.n_layers,
        "tp_allreduces_per_step": allreduce.calls,
        "pp_boundary_mb": boundary.nbytes / 1e6,
    }


# ---------------------------------------------------------------- the all-reduce, two cards


def _allreduce_s(nbytes: float, link: links.Link) -> float:
    """Ring all-reduce over two GPUs at the link's peak, seconds."""
    return collectives.allreduce_seconds(nbytes, 2, link.bytes_per_s)


def allreduce_figures() -> dict[str, Any]:
    """The ring's factor, and a 7B model's gradients summed over two consumer cards."""
    spec = models.get(SMALL)
    pcie4, nvlink = links.gpu_link("RTX 3090", "pcie"), links.gpu_link("RTX 3090", "nvlink")
    grad_bytes = TRAINING_PRECISIONS[RECIPE]["gradients"]
    lora_bytes = 4  # PEFT keeps adapter weights, hence their gradients, in fp32 (page's source)
    full, lora = spec.n_params * grad_bytes, parallel.lora_params(spec, LORA_RANK) * lora_bytes
    q = spec.n_heads * spec.head_dim
    states = _zero_states(spec, 0, 2)
    pair = 2 * specs.get_gpu("RTX 3090").model_memory_bytes
    return {
        "allreduce_factor_2": collectives.allreduce_bus_factor(2),
        "allreduce_factor_8": collectives.allreduce_bus_factor(8),
        "llama7_params_b": spec.n_params / 1e9,
        "grad_bytes_per_param": grad_bytes,
        "llama7_grad_gb": _gb(full),
        "llama7_grad_pcie4_s": _allreduce_s(full, pcie4),
        "llama7_grad_nvlink_s": _allreduce_s(full, nvlink),
        "lora_params_m": parallel.lora_params(spec, LORA_RANK) / 1e6,
        "lora_bytes_per_param": lora_bytes,
        "lora_grad_mb": lora / 1e6,
        "lora_pcie4_ms": _allreduce_s(lora, pcie4) * 1e3,
        "lora_nvlink_ms": _allreduce_s(lora, nvlink) * 1e3,
        "llama7_layers": spec.n_layers,
        "lora_attention_io": spec.hidden_size + q,  # inputs + outputs of q (and of k, v, o: MHA)
        "lora_mlp_io": spec.hidden_size + spec.intermediate_size,  # of gate, up and down
        "llama7_full_finetune_gb": basis.full_finetune_gb(SMALL, RECIPE, OPTIMIZER),
        "two_3090_usable_gb": _gb(pair),
        "llama7_full_ft_two_3090_fit": "fits" if states <= pair / 2 else "fits in no split",
        "tinygrad_gpus": TINYGRAD_ALLREDUCE["gpus"],
        "tinygrad_message_mib": TINYGRAD_ALLREDUCE["message_bytes"] / MIB,
        "tinygrad_busbw_gbs": TINYGRAD_ALLREDUCE["busbw_gbs"],
        "tinygrad_share_of_pcie4": TINYGRAD_ALLREDUCE["busbw_gbs"]
        * 1e9
        / links.pcie(4, 16).bytes_per_s,
    }


# ---------------------------------------------------------------- links


def link_figures() -> dict[str, Any]:
    """PCIe per generation, NVLink per direction, and the network ports between machines."""
    out: dict[str, Any] = {}
    for gen in (3, 4, 5):
        lane = links.PCIE_LANE_GBS[gen]
        out[f"pcie{gen}_gt_s"] = lane * 8 / ENCODING_128B130B  # transfer rate, GT/s
        out[f"pcie{gen}_lane_gbs"] = lane
        out[f"pcie{gen}_x16_gbs"] = links.pcie(gen, 16).bytes_per_s / GB
    for key, name in (("rtx3090", "RTX 3090"), ("a100", "A100 80GB SXM"), ("h100", "H100 SXM")):
        out[f"{key}_nvlink_both_gbs"] = specs.get_gpu(name).interconnect["nvlink_gbs"]
        out[f"{key}_nvlink_gbs"] = links.nvlink(name).bytes_per_s / GB
    for key, name in (
        ("ib_hdr", "InfiniBand HDR"),
        ("ib_ndr", "InfiniBand NDR"),
        ("eth100", "100 Gb Ethernet"),
        ("eth400", "400 Gb Ethernet"),
    ):
        rate = links.NETWORKS[name].bytes_per_s
        out[f"{key}_gbit_s"] = rate * 8 / 1e9
        out[f"{key}_gbs"] = rate / GB
    out["h100_nvlink_vs_ndr"] = (
        links.nvlink("H100 SXM").bytes_per_s / links.NETWORKS["InfiniBand NDR"].bytes_per_s
    )
    geforce = [
        g.name
        for g in specs.load_gpus().values()
        if g.name.startswith(("RTX ", "GTX ")) and " A" not in g.name and "Ada" not in g.name
    ]
    out["geforce_with_nvlink"] = ", ".join(
        n for n in geforce if specs.get_gpu(n).interconnect.get("nvlink_gbs")
    )
    return out


# ---------------------------------------------------------------- two consumer cards, a 70B model


def _decode_parts(spec: ModelSpec, fmt: str, context: int) -> dict[str, float]:
    """What one decoding step reads, in parts whose sum is perf.decode_bytes_per_step.

    The decoder's matrices (quantized), the output head and norms (kept in 16 bits by int4) and
    the KV cache are counted here; what perf counts for the input embedding is the rest.
    """
    parts = spec.params_by_component()
    kept = parts["lm_head"] + parts["norms"]
    quantized = spec.n_params - parts["embedding"] - kept
    total = basis.read_gb(spec.name, fmt, context=context) * GB
    matrices = quantized * bits_per_weight(fmt) / 8
    head = kept * DTYPE_BYTES["bf16"]
    kv = memory.kv_cache_bytes(spec, context, 1, "bf16")
    return {
        "quantized": quantized,
        "kept": kept,
        "matrices": matrices,
        "head": head,
        "kv": kv,
        "embedding": total - matrices - head - kv,
        "total": total,
    }


def _embedding_words(nbytes: float, row_bytes: int) -> str:
    """How the page describes the input embedding's share of a token's reads."""
    if nbytes <= 2 * row_bytes:
        return f"one row per token, {nbytes / 1e3:.0f} KB"
    return f"{nbytes / GB:.1f} GB, the whole table as gpulab.perf counts it"


def two_card_figures() -> dict[str, Any]:
    """Llama-3-70B at int4 on two RTX 3090s, split by layers or by tensors, against one RTX 4090."""
    spec = models.get(BIG)
    s3090, s4090 = specs.get_gpu("RTX 3090"), specs.get_gpu("RTX 4090")
    pcie = links.gpu_link(s3090, "pcie")
    d = _decode_parts(spec, "int4", CONTEXT)
    handover = spec.hidden_size * ACTIVATION_BYTES["bf16"]  # one hidden state per token
    hop_s = collectives.allreduce_seconds(handover, 2, pcie.bytes_per_s)
    per_card = serving.split_inference(spec, 2, "int4", seq_len=CONTEXT).total
    alone = memory.estimate_inference(spec, weights="int4", kv_cache="bf16", seq_len=CONTEXT).total
    split = serving.layer_split_tokens_per_s(
        spec, [s3090.bandwidth_gbs] * 2, "int4", seq_len=CONTEXT
    )
    ram = specs.get_cpu("Core i9-13900K").memory_bandwidth_gbs
    on_gpu = basis.layers_that_fit(BIG, "int4", "RTX 4090", CONTEXT)
    offloaded = basis.offload_tok_s(BIG, "int4", "RTX 4090", CONTEXT)
    calls = 2 * spec.n_layers
    read_per_card = d["total"] / 2 / (s3090.bandwidth_gbs * 1e9)
    return {
        "llama70_first_card_last_layer": spec.n_layers // 2 - 1,
        "llama70_second_card_first_layer": spec.n_layers // 2,
        "llama70_last_layer": spec.n_layers - 1,
        "llama70_handover_bytes": handover,
        "llama70_handover_pcie4_us": handover / pcie.bytes_per_s * 1e6,
        "llama70_quantized_params_b": d["quantized"] / 1e9,
        "int4_bits": bits_per_weight("int4"),
        "llama70_int4_matrices_gb": _gb(d["matrices"]),
        "llama70_head_norm_params_b": d["kept"] / 1e9,
        "llama70_head_norm_gb": _gb(d["head"]),
        "llama70_embedding_read_words": _embedding_words(d["embedding"], handover),
        "llama70_kv_4k_gb": _gb(d["kv"]),
        "llama70_int4_4k_read_gb": basis.read_gb(BIG, "int4", context=CONTEXT),
        "llama70_int4_gb": basis.weights_gb(BIG, "int4"),
        "llama70_q4km_gb": basis.weights_gb(BIG, "q4_k_m"),
        "rtx3090_gbs": s3090.bandwidth_gbs,
        "llama70_int4_two_3090_tok_s": split,
        "llama70_int4_per_card_gb": _gb(per_card),
        "rtx3090_usable_gb": _gb(s3090.model_memory_bytes),
        "llama70_int4_two_3090_fit": "hold it"
        if per_card <= s3090.model_memory_bytes
        else "do not hold it either",
        "llama70_int4_need_gb": _gb(alone),
        "rtx4090_usable_gb": _gb(s4090.model_memory_bytes),
        "llama70_int4_one_4090_fit": "does not hold it"
        if alone > s4090.model_memory_bytes
        else "holds it too",
        "llama70_int4_4090_gpu_layers": min(on_gpu, spec.n_layers),
        "ddr5_5600_gbs": ram,
        "llama70_int4_offload_tok_s": offloaded,
        "llama70_split_vs_offload": split / offloaded,
        "tp_allreduces_per_token": calls,
        "tp_allreduce_pcie4_us": hop_s * 1e6,
        "tp_talk_pcie4_us": calls * hop_s * 1e6,
        "tp_read_per_card_ms": read_per_card * 1e3,
    }


def moe_figures() -> dict[str, Any]:
    """DeepSeek-R1 against the dense 70B: bytes read per token, and its weights at int4."""
    r1 = models.get(MOE)
    # an empty cache, as chapter 3 and the fact-check compare the two (claim 58)
    r1_read, dense_read = basis.read_gb(MOE, "int4"), basis.read_gb(BIG, "int4")
    a100 = specs.get_gpu("A100 80GB SXM")
    return {
        "r1_active_b": r1.n_active_params / 1e9,
        "r1_params_b": r1.n_params / 1e9,
        "r1_int4_read_gb": r1_read,
        "llama70_int4_read_gb": dense_read,
        "r1_vs_dense_read": r1_read / dense_read,
        "r1_int4_gb": basis.weights_gb(MOE, "int4"),
        "article_vram_gb": ARTICLE_TEST_BOX["vram_gb"],
        "article_ram_gb": ARTICLE_TEST_BOX["ram_gb"],
        "four_a100_usable_gb": _gb(4 * a100.model_memory_bytes),
    }


# ---------------------------------------------------------------- the instructor guide


def guide_figures() -> dict[str, Any]:
    """The pre-flight check's thresholds that the instructor guide quotes (gpulab.rules)."""
    return {
        "guide_low_free_vram_gib": rules.LOW_FREE_VRAM_BYTES / GIB,
        "guide_low_free_ram_gib": rules.LOW_FREE_RAM_BYTES / GIB,
        "guide_other_processes_share": rules.OTHER_PROCESSES_MEMORY_SHARE,
    }


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    out: dict[str, Any] = {}
    for part in (
        zero_figures,
        model_parallel_figures,
        allreduce_figures,
        link_figures,
        two_card_figures,
        moe_figures,
        guide_figures,
    ):
        values = part()
        clash = out.keys() & values.keys()
        if clash:  # one key, one value: a second section may not redefine a figure
            raise ValueError(f"figures_ch07: {part.__name__} repeats {sorted(clash)}")
        out.update(values)
    return out
