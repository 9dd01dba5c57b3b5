"""Chapter 05's figures: every number that `book/05_pitfalls.md` quotes, computed from gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.units import GB
from gpulab.course import claims_buying
from gpulab.course.derivations import nominal_weight_gb
from gpulab.estimate import basis, levers, memory
from gpulab.machine import rules
from gpulab.reference import drivers, links, models, specs
from gpulab.reference.formats import ACTIVATION_BYTES

__all__ = ["figures"]

# ---- inputs gpulab's tables do not hold (page-specific, each with its source)

# The data-loader example of section 2: illustrative times, not measurements.
LOADER_PREPARE_MS = 30  # t_d, preparing one batch on the CPU
LOADER_STEP_MS = 10  # t_s, the device's step
LOADER_WORKERS = 4
# A stock RTX 4090 Founders Edition ran "between 2810MHz and 2850MHz" in NVIDIA's Cyberpunk 2077
# demo (tweaktown.com/news/88568, 2022-09-22): GPU Boost above the rated boost clock.
RTX4090_OBSERVED_CLOCK_GHZ = (2.81, 2.85)
# The matrix product of section 8 and the too-fast reading it is set against.
TIMING_N = 8192
TIMING_BAD_READING_S = 1e-3
# The size of section 4's linear layer and the batch it ends with.
LINEAR_WIDTH = 1024
LINEAR_BIG_BATCH = 4096
# The article's xformers saving (claim 48): "xformers cuts VRAM 30%".
ARTICLE_XFORMERS_SAVING = 0.30


def _gpu(name: str) -> specs.GPUSpec:
    """A spec-table row."""
    return specs.get_gpu(name)


# ---- the claims table and section 1: out of memory


def _out_of_memory() -> dict[str, Any]:
    """PCIe spill rate; Llama-3.2-1B's states, activations and the levers (batch 8 x 2048)."""
    g = _gpu("RTX 4090")
    pcie = links.pcie(4, 16).bytes_per_s / GB
    s = models.get("Llama-3.2-1B")
    seq, batch = 2048, 8
    tokens = seq * batch
    b32 = memory.estimate_training(s, precision="fp32", batch=batch, seq_len=seq)
    b16 = memory.estimate_training(s, precision="bf16-mixed", batch=batch, seq_len=seq)
    head = 2 * s.vocab_size * ACTIVATION_BYTES["fp32"] * tokens  # logits and log-softmax, fp32
    # the loss's tensors in each recipe (bf16 adds the logits' fp32 copy), not the layers'
    head32 = memory.loss_head_bytes(s, tokens, "fp32")
    head16 = memory.loss_head_bytes(s, tokens, "bf16")
    rows = levers.compare(s, levers.standard_levers(batch), seq)
    return {
        "pcie4_x16_lanes": 16,
        "pcie4_gts": links.PCIE_LANE_GBS[4] * 8 * 130 / 128,
        "pcie4_x16_gbs": pcie,
        "rtx4090_gbs": g.bandwidth_gbs,
        "rtx4090_vs_pcie4_x": g.bandwidth_gbs / pcie,
        "llama32_1b_params": s.n_params,
        "llama32_1b_states_gb": (b32.weights + b32.gradients + b32.optimizer) / GB,
        "oom_batch": batch,
        "oom_seq": seq,
        "oom_tokens": tokens,
        "llama32_1b_vocab": s.vocab_size,
        "llama32_1b_layers_act_fp32_gb": (b32.activations - head32) / GB,
        "llama32_1b_layers_act_bf16_gb": (b16.activations - head16) / GB,
        "bf16_layers_act_share": (b16.activations - head16) / (b32.activations - head32),
        "llama32_1b_logits_gb": head / GB,
        "levers_micro_batch": rows[-1].lever.micro_batch,
        "levers_naive_gb": rows[0].peak_bytes / GB,
        "levers_all_gb": rows[-1].peak_bytes / GB,
    }


# ---- section 2: the data loader


def _loader() -> dict[str, Any]:
    """A step with the loader in the main process, and with workers preparing ahead."""
    ahead = LOADER_PREPARE_MS / LOADER_WORKERS
    return {
        "loader_prepare_ms": LOADER_PREPARE_MS,
        "loader_step_ms": LOADER_STEP_MS,
        "loader_serial_ms": LOADER_PREPARE_MS + LOADER_STEP_MS,
        "loader_workers": LOADER_WORKERS,
        "loader_per_worker_ms": ahead,
        "loader_overlapped_ms": max(LOADER_STEP_MS, ahead),
    }


# ---- section 4: too little work per launch


def _launch() -> dict[str, Any]:
    """One linear layer's arithmetic per sample on an RTX 4090 and an i9-13900K."""
    g = _gpu("RTX 4090")
    flop = 2 * LINEAR_WIDTH**2
    gpu_flops = g.peak_flops("fp32")
    cpu_flops = basis.cpu_peak_tflops() * 1e12  # every core busy: chapter 1's realistic peak
    gpu_s, cpu_s = flop / gpu_flops, flop / cpu_flops
    return {
        "linear_mflop_per_sample": flop / 1e6,
        "rtx4090_fp32_tflops": gpu_flops / 1e12,
        "cpu_allcore_tflops": basis.cpu_peak_tflops(),
        "linear_gpu_ns_per_sample": gpu_s * 1e9,
        "linear_cpu_us_per_sample": cpu_s * 1e6,
        "linear_samples_per_us": 1e-6 / gpu_s,
        "linear_big_batch": LINEAR_BIG_BATCH,
        "linear_big_gpu_us": LINEAR_BIG_BATCH * gpu_s * 1e6,
        "linear_big_cpu_ms": LINEAR_BIG_BATCH * cpu_s * 1e3,
        "fp32_ratio_allcore": g.peak_tflops["fp32"] / basis.cpu_peak_tflops(),  # as chapter 1
    }


# ---- section 5: versions


def _versions() -> dict[str, Any]:
    """NVIDIA's driver table for CUDA 12.6, 12.8 and 11.8 (gpulab.drivers)."""
    compat, linux = drivers.required_drivers("12.6", "linux")
    _, windows = drivers.required_drivers("12.6", "windows")
    return {
        "cuda126_linux_driver": linux,
        "cuda126_windows_driver": windows,
        "cuda12_min_driver": compat,
        "cuda128_linux_driver": drivers.required_drivers("12.8", "linux")[1],
        "cuda118_linux_driver": drivers.required_drivers("11.8", "linux")[1],
    }


# ---- section 6: unfused attention


def _attention() -> dict[str, Any]:
    """Scores of attention written out (Llama-2-7B's shape), and their share of the activations."""
    s = models.get("Llama-2-7B")
    h, a, layers, fp16 = s.hidden_size, s.n_heads, s.n_layers, ACTIVATION_BYTES["fp16"]
    seq = 8192
    # Korthikanti et al. 2022: per layer s b h (34 + 5 a s / h) bytes in 16 bits, of which the
    # scores, softmax and dropout mask are 5 a s^2 b
    share = {n: (5 * a * n / h) / (34 + 5 * a * n / h) for n in (512, 2048, 8192)}
    x = ARTICLE_XFORMERS_SAVING * 34 / (1 - ARTICLE_XFORMERS_SAVING)  # 5as/h at that share
    out = {
        "attn_heads": a,
        "attn_hidden": h,
        "attn_layers": layers,
        "attn_seq": seq,
        "attn_fp16_bytes": fp16,
        "scores_8k_gb": a * seq**2 * fp16 / GB,
        "train_scores_8k_layer_gb": 5 * a * seq**2 / GB,
        "train_scores_8k_model_gb": layers * 5 * a * seq**2 / GB,
        "article_xformers_saving": ARTICLE_XFORMERS_SAVING,
        "scores_share_matches_article_seq": round(x * h / (5 * a)),
    }
    for n, v in share.items():
        out[f"scores_term_{n}"] = 5 * a * n / h
        out[f"scores_total_{n}"] = 34 + 5 * a * n / h
        out[f"scores_share_{n}"] = v
    return out


# ---- section 7: power; section 8: timing and the clock the peak assumes


def _power_and_timing() -> dict[str, Any]:
    """The article's power cap; a matrix product's least time; the boost clock behind the peak."""
    g = _gpu("RTX 4090")
    cap = claims_buying.ARTICLE_POWER_W
    flop = 2 * TIMING_N**3
    peak = g.peak_flops("fp32")
    clock_peak = g.cuda_cores * g.boost_clock_ghz * 1e9 * 2  # units x clock x 2 FLOPs per FMA
    bad_rate = flop / TIMING_BAD_READING_S
    lo, hi = RTX4090_OBSERVED_CLOCK_GHZ
    return {
        "power_cap_w": cap,
        "rtx4090_board_w": g.board_power_w,
        "power_cap_share": cap / g.board_power_w,
        "timing_tflop": flop / 1e12,
        "timing_least_ms": flop / peak * 1e3,
        "timing_bad_ms": TIMING_BAD_READING_S * 1e3,
        "timing_bad_tflops": bad_rate / 1e12,
        "timing_bad_vs_peak_x": bad_rate / peak,
        "rtx4090_cuda_cores": g.cuda_cores,
        "rtx4090_boost_ghz": g.boost_clock_ghz,
        "rtx4090_fp32_derived_tflops": clock_peak / 1e12,
        "rtx4090_observed_clock_low_mhz": lo * 1e3,
        "rtx4090_observed_clock_high_mhz": hi * 1e3,
        "rtx4090_observed_over_boost": hi / g.boost_clock_ghz - 1,
        "rtx4090_observed_peak_tflops": g.cuda_cores * hi * 1e9 * 2 / 1e12,
    }


# ---- section 9: loading


def _loading() -> dict[str, Any]:
    """Least cold-load times of 7B and 70B checkpoints in bf16 from each disk (gpulab.links)."""
    small, big = nominal_weight_gb(7e9, "bf16"), nominal_weight_gb(70e9, "bf16")
    sata = links.DISKS["SATA SSD"].read_bytes_per_s / GB
    hdd = links.DISKS["hard disk (7200 rpm)"].read_bytes_per_s / GB
    nvme = links.DISKS["NVMe PCIe 4.0 x4"].read_bytes_per_s / GB
    return {
        "tier7_fp16_gb": small,
        "tier70_fp16_gb": big,
        # SATA III: the payload rate in Gbit/s and its 8b/10b line rate
        "sata_line_gbit_s": sata * 8 * 10 / 8,
        "sata_payload_gbit_s": sata * 8,
        "sata_gbs": sata,
        "sata_7b_s": small / sata,
        "hdd_mbs": hdd * 1e3,
        "hdd_7b_s": small / hdd,
        "hdd_70b_s": big / hdd,
        "nvme4_lanes": 4,
        "pcie4_gts": links.PCIE_LANE_GBS[4] * 8 * 130 / 128,
        "nvme4_gbs": nvme,
        "nvme4_7b_s": small / nvme,
        "nvme4_70b_s": big / nvme,
    }


# ---- the doctor's thresholds


def _doctor() -> dict[str, Any]:
    """The thresholds the doctor's load rules fire at (gpulab.machine.rules)."""
    return {
        "doctor_low_vram_gib": rules.LOW_FREE_VRAM_BYTES / 2**30,
        "doctor_low_ram_gib": rules.LOW_FREE_RAM_BYTES / 2**30,
        "doctor_other_share": rules.OTHER_PROCESSES_MEMORY_SHARE,
        "doctor_busy_share": rules.BUSY_UTILIZATION_PERCENT / 100,
    }


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    return {
        **_out_of_memory(),
        **_loader(),
        **_launch(),
        **_versions(),
        **_attention(),
        **_power_and_timing(),
        **_loading(),
        **_doctor(),
    }
