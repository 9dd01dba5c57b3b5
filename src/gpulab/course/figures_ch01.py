"""Chapter 01's figures: every number `book/01_why_gpus_are_fast.md` quotes, computed by gpulab.

The page pastes each one by its name with the {fig} role (gpulab.course.figures).
Keys are snake_case and say what the value is and its unit.

Most inputs come from gpulab's tables (``gpulab.specs``: the GPU and CPU spec sheets with their
sources) and from the fact-check's constants (the article's own figures). The few inputs those
tables do not hold are the constants below, each with its source; where one belongs in a table,
its comment says which.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import OneOf, PositiveInt, checked
from gpulab.course.claims_hardware import ARTICLE_CPU_S, ARTICLE_DDR5_GBS, ARTICLE_GPU_S
from gpulab.course.derivations import cpu_13900k, gpu, nominal_weight_gb
from gpulab.estimate import basis, roofline
from gpulab.reference.formats import WeightFormat, bits_per_weight
from gpulab.ui.pictures_ch01 import WARP_THREADS  # threads per warp, a definition of CUDA

__all__ = [
    "ARTICLE_LINEAR",
    "CPU_CLOCKS",
    "DDR5_CONFIGS",
    "FLOPS_PER_FMA",
    "FP32_BITS",
    "HEADLINE_CLOCKS",
    "I13900K_ALL_CORE_GHZ",
    "SIMD_UNITS",
    "cpu_peak_arithmetic",
    "cpu_peak_flops",
    "cpu_peak_gflops_by_group",
    "ddr5_bandwidth_gbs",
    "figures",
    "simd_arithmetic",
    "simd_flops_per_cycle",
    "tensor_fmas_per_clock",
]

# ---- the i9-13900K's clocks

# The all-core turbo in GHz per core group: what every core of the group holds under a sustained
# all-core load at stock settings. It is the CPU table's all_core_ghz (data/cpu_specs.json, with
# its sources); base_ghz and turbo_ghz are only the two ends of the range.
I13900K_ALL_CORE_GHZ = MappingProxyType({g.name: g.all_core_ghz for g in cpu_13900k().core_groups})

# The three clock settings, in the order the page's table lists them, with what each one means.
CPU_CLOCKS: Mapping[str, str] = MappingProxyType(
    {
        "base": "the floor Intel guarantees under its base power",
        "all-core turbo": "every core at its all-core turbo: a sustained all-core load",
        "max turbo": (
            "every core at the one- or two-core maximum: a ceiling no all-core load reaches"
        ),
    }
)
HEADLINE_CLOCKS = "all-core turbo"  # the realistic sustained figure the chapter leads with
# each setting as gpulab.estimate.basis (and specs.CPUSpec) names it
BASIS_CLOCKS = MappingProxyType(
    {"base": "base", "all-core turbo": "all-core", "max turbo": "turbo"}
)
ClockSetting = Annotated[str, OneOf(tuple(CPU_CLOCKS), "clock setting")]


def _clocks(setting: str) -> dict[str, float]:
    """GHz per core group of the i9-13900K at one clock setting."""
    groups = cpu_13900k().core_groups
    if setting == "base":
        return {g.name: g.base_ghz for g in groups}
    if setting == "max turbo":
        return {g.name: g.turbo_ghz for g in groups}
    return {g.name: I13900K_ALL_CORE_GHZ[g.name] for g in groups}


@checked
def cpu_peak_gflops_by_group(setting: ClockSetting) -> dict[str, float]:
    """FP32 GFLOP/s of each core group of the i9-13900K: cores x FLOP per cycle x GHz."""
    clocks = _clocks(setting)
    return {
        g.name: g.count * g.fp32_flops_per_cycle * clocks[g.name] for g in cpu_13900k().core_groups
    }


@checked
def cpu_peak_flops(setting: ClockSetting = HEADLINE_CLOCKS) -> float:
    """The i9-13900K's FP32 peak in FLOP/s at one clock setting (gpulab.estimate.basis); the
    sum of cpu_peak_gflops_by_group, which shows its terms."""
    return basis.cpu_peak_tflops("Core i9-13900K", BASIS_CLOCKS[setting]) * 1e12


@checked
def cpu_peak_arithmetic(setting: ClockSetting = HEADLINE_CLOCKS) -> str:
    """The peak's derivation as one line, like specs.CPUSpec.peak_arithmetic."""
    clocks = _clocks(setting)
    terms = " + ".join(
        f"{g.count} {g.name} x {g.fp32_flops_per_cycle} FLOP/cycle x {clocks[g.name]:g} GHz"
        for g in cpu_13900k().core_groups
    )
    return (
        f"i9-13900K fp32 peak at {setting} clocks: {terms} = "
        f"{cpu_peak_flops(setting) / 1e12:.2f} TFLOP/s"
    )


# ---- FP32 FLOPs per cycle of a CPU core: lanes x FMA units x 2

FP32_BITS = 32
FLOPS_PER_FMA = 2  # a fused multiply-add is a multiply and an add
# (vector register bits, FMA units) per core. The products are data/cpu_specs.json's
# fp32_flops_per_cycle, which tests/unit/test_figures_ch01.py checks them against.
SIMD_UNITS = MappingProxyType(
    {
        "P-cores": (256, 2),  # AVX2: two 256-bit FMA units (AVX-512 is off on hybrid parts)
        "E-cores": (128, 2),  # Gracemont: two 128-bit FMA-capable vector ports
        "AVX-512": (512, 2),  # a server core with AVX-512 enabled and two 512-bit FMA units
    }
)
SimdKind = Annotated[str, OneOf(tuple(SIMD_UNITS), "core kind")]


@checked
def simd_flops_per_cycle(kind: SimdKind) -> int:
    """FP32 FLOPs per cycle of one core: vector bits / 32 lanes x FMA units x 2."""
    bits, units = SIMD_UNITS[kind]
    return bits // FP32_BITS * units * FLOPS_PER_FMA


@checked
def simd_arithmetic(kind: SimdKind) -> str:
    """The FLOPs-per-cycle derivation of one core kind as one line."""
    bits, units = SIMD_UNITS[kind]
    return (
        f"{kind}: {bits}-bit vectors / {FP32_BITS}-bit floats = {bits // FP32_BITS} lanes x "
        f"{units} FMA units x {FLOPS_PER_FMA} FLOPs = {simd_flops_per_cycle(kind)} FP32 FLOP "
        "per cycle"
    )


# ---- memory: DDR5 channels

DDR5_CHANNEL_BITS, DDR5_SUBCHANNEL_BITS = 64, 32  # two 32-bit subchannels (arXiv 2605.08725)
# (channels, MT/s) of the systems the page compares: a desktop at DDR5-4800 and at DDR5-5600
# (the i9-13900K's fastest, gpulab.specs), an 8-channel server socket and AMD's 12-channel
# EPYC 9004 at DDR5-4800 (Tom's Hardware, amd-confirms-12-ddr5-memory-channels-on-genoa).
DDR5_CONFIGS = ((2, 4800), (2, cpu_13900k().memory_max_mts), (8, 4800), (12, 4800))


@checked
def ddr5_bandwidth_gbs(channels: PositiveInt, mts: PositiveInt) -> float:
    """Peak DDR5 bandwidth: channels x 8 bytes x MT/s, in GB/s."""
    return channels * DDR5_CHANNEL_BITS / 8 * mts / 1e3


# ---- inputs gpulab's tables do not hold (each belongs in data/gpu_specs.json or formats)

# V100 (Volta, 2017): 640 Tensor Cores, each a 4x4x4 FP16 product per clock (Cornell Virtual
# Workshop, "Tensor Cores"), 125 TFLOPS as NVIDIA quotes it (NVIDIA, "Programming Tensor Cores
# in CUDA 9"). The V100 is not in gpulab's GPU table.
V100_TENSOR_CORES, V100_TILE, V100_QUOTED_TFLOPS = 640, 4, 125
# HGX B200 at 1,000 W, dense TFLOP/s (Glenn Klockwood's B200 notes, from NVIDIA's figures);
# the B200 is not in gpulab's GPU table.
B200_POWER_W = 1000
B200_DENSE_TFLOPS = MappingProxyType({"fp16": 2250, "fp8": 4500, "fp4": 9000})
# Block-scaled FP4 weight formats (spheron.network, nvfp4-vs-mxfp4 guide); they belong in
# gpulab.formats.WEIGHT_FORMATS beside the GGUF ones.
NVFP4 = WeightFormat(
    "nvfp4", 4, 16, 8, "NVFP4: blocks of 16 FP4 (E2M1) values + one FP8 E4M3 scale"
)
MXFP4 = WeightFormat(
    "mxfp4", 4, 32, 8, "OCP MXFP4: blocks of 32 FP4 values + one 8-bit power-of-two scale"
)
FP4_DISTINCT_VALUES = 2**4 - 1  # 16 codes, +0 and -0 the same value
# NVIDIA's RTX 5090 "AI TOPS": FP4 with 2:4 sparsity (spheron.network, nvidia-rtx-5090-specs);
# gpulab's table holds the dense figure, which the tests check is half of this.
RTX5090_SPARSE_FP4_TOPS = 3352

# The article's benchmark: nn.Linear(4096, 4096) on 10,000 rows, in FP32.
ARTICLE_LINEAR = MappingProxyType({"rows": 10_000, "features": 4096, "dtype": "fp32"})
LLM_PARAMS = 7e9  # "a 7-billion-parameter model" decoded at batch 1
_SETTING_KEYS = {"base": "base", "all-core turbo": "allcore", "max turbo": "maxturbo"}


def _cpu(v: dict[str, Any]) -> None:
    c = cpu_13900k()
    p, e = c.core_groups
    clocks = {key: _clocks(setting) for setting, key in _SETTING_KEYS.items()}
    for key, ghz in clocks.items():
        v[f"pcore_{key}_ghz"], v[f"ecore_{key}_ghz"] = ghz[p.name], ghz[e.name]
    (p_bits, p_units), (e_bits, e_units) = SIMD_UNITS["P-cores"], SIMD_UNITS["E-cores"]
    v.update(
        cpu_cores=c.cores,
        pcores=p.count,
        ecores=e.count,
        pcore_flops_per_cycle=p.fp32_flops_per_cycle,
        ecore_flops_per_cycle=e.fp32_flops_per_cycle,
        avx2_bits=p_bits,
        pcore_fma_units=p_units,
        avx512_flops_per_cycle=simd_flops_per_cycle("AVX-512"),
        ecore_vector_bits=e_bits,
        ecore_fp32_lanes=e_bits // FP32_BITS,
        ecore_fma_units=e_units,
        pcore_allcore_gflops=p.fp32_flops_per_cycle * clocks["allcore"][p.name],
    )


def _gpu_cores(v: dict[str, Any]) -> None:
    g = gpu("RTX 4090")
    v.update(
        rtx4090_cuda_cores=g.cuda_cores,
        rtx4090_sms=g.sms,
        warp_threads=WARP_THREADS,
        rtx4090_lanes_per_sm=g.cuda_cores // g.sms,
        rtx4090_warps_per_sm=g.cuda_cores // g.sms // WARP_THREADS,
        core_count_ratio=g.cuda_cores / v["cpu_cores"],
        rtx4090_boost_ghz=g.boost_clock_ghz,
        rtx4090_fp32_derived_tflops=g.derived_fp32_tflops(),
        rtx4090_fp32_tflops=g.peak_tflops["fp32"],
        rtx4090_bf16_tflops=g.peak_tflops["bf16"],
        rtx4090_tf32_tflops=g.peak_tflops["tf32"],
        lane_gflops=g.boost_clock_ghz * FLOPS_PER_FMA,
    )
    v["lanes_per_pcore"] = v["pcore_allcore_gflops"] / v["lane_gflops"]


def _ratios(v: dict[str, Any]) -> None:
    """The CPU's peak at each clock setting and the GPU/CPU ratios the page compares."""
    for setting, key in _SETTING_KEYS.items():
        peak = basis.cpu_peak_tflops("Core i9-13900K", BASIS_CLOCKS[setting])
        v[f"cpu_{key}_tflops"] = peak
        v[f"fp32_ratio_{key}"] = v["rtx4090_fp32_tflops"] / peak
        v[f"bf16_ratio_{key}"] = v["rtx4090_bf16_tflops"] / peak
        for group, gflops in cpu_peak_gflops_by_group(setting).items():
            v[f"cpu_{key}_{group[0].lower()}_gflops"] = gflops
    for key in ("base", "allcore"):
        v[f"cpu_{key}_ridge"] = v[f"cpu_{key}_tflops"] * 1e3 / v["ddr5_5600_gbs"]


@checked
def tensor_fmas_per_clock(name: str) -> float:
    """FP16 FMAs per Tensor Core per clock, from the dense FP16-accumulate peak (specs)."""
    g = gpu(name)
    if not (g.tensor_cores and g.boost_clock_ghz and g.peak_tflops.get("fp16_fp16acc")):
        raise GpulabConfigError(
            f"name={name!r}: the spec table gives this GPU no Tensor Core count, boost clock "
            "or dense FP16-accumulate peak to divide",
            "name",
        )
    per_second = g.peak_tflops["fp16_fp16acc"] * 1e12 / FLOPS_PER_FMA
    return per_second / (g.tensor_cores * g.boost_clock_ghz * 1e9)


def _tensor_cores(v: dict[str, Any]) -> None:
    g, h = gpu("RTX 4090"), gpu("H100 SXM")
    fmas = round(tensor_fmas_per_clock("RTX 4090"))
    per_sm = g.tensor_cores // g.sms
    v.update(
        v100_tensor_cores=V100_TENSOR_CORES,
        v100_tile=V100_TILE,
        v100_fmas_per_clock=V100_TILE**3,
        v100_fp16_tflops=V100_QUOTED_TFLOPS,
        rtx4090_tensor_cores=g.tensor_cores,
        rtx4090_tc_per_sm=per_sm,
        rtx4090_tc_fmas=fmas,
        rtx4090_fp16acc_derived_tflops=(
            g.tensor_cores * g.boost_clock_ghz * fmas * FLOPS_PER_FMA / 1e3
        ),
        rtx4090_sm_tc_fmas=per_sm * fmas,
        rtx4090_sm_cuda_fmas=g.cuda_cores // g.sms,
        rtx4090_bf16_over_fp32=g.peak_tflops["bf16"] / g.peak_tflops["fp32"],
        h100_bf16_tflops=h.peak_tflops["bf16"],
        h100_fp32_tflops=h.peak_tflops["fp32"],
        h100_bf16_over_fp32=h.peak_tflops["bf16"] / h.peak_tflops["fp32"],
    )


def _fp4(v: dict[str, Any]) -> None:
    t, b16, b200 = gpu("RTX 5090").peak_tflops, bits_per_weight("bf16"), B200_DENSE_TFLOPS
    v.update({f"b200_{k}_tflops": x for k, x in b200.items()})
    v.update({f"b200_{k}_over_fp16": x / b200["fp16"] for k, x in b200.items()})
    v.update(
        b200_power_w=B200_POWER_W,
        b200_fp4_over_fp8=b200["fp4"] / b200["fp8"],
        fp4_distinct_values=FP4_DISTINCT_VALUES,
        fp4_bits=NVFP4.bits,
        nvfp4_block=NVFP4.group_size,
        nvfp4_bpw=NVFP4.bits_per_weight,
        mxfp4_block=MXFP4.group_size,
        mxfp4_bpw=MXFP4.bits_per_weight,
        fp4_naive_shrink=b16 / NVFP4.bits,
        nvfp4_shrink=b16 / NVFP4.bits_per_weight,
        mxfp4_shrink=b16 / MXFP4.bits_per_weight,
        rtx5090_sparse_fp4_tops=RTX5090_SPARSE_FP4_TOPS,
        rtx5090_fp4_tflops=t["fp4"],
        rtx5090_fp16_fp16acc_tflops=t["fp16_fp16acc"],
        rtx5090_bf16_tflops=t["bf16"],
        rtx5090_fp4_over_fp16=t["fp4"] / t["fp16_fp16acc"],
        rtx5090_fp4_over_bf16=t["fp4"] / t["bf16"],
    )


def _bandwidth(v: dict[str, Any]) -> None:
    g, h = gpu("RTX 4090"), gpu("H200")
    (channels, lo_mts), (_, hi_mts), (server, _), (epyc, _) = DDR5_CONFIGS
    lo, hi, server_gbs, epyc_gbs = (ddr5_bandwidth_gbs(*c) for c in DDR5_CONFIGS)
    v.update(
        rtx4090_bus_bits=g.memory_bus_bits,
        rtx4090_data_rate_gbps=g.memory_data_rate_gbps,
        rtx4090_gbs=g.bandwidth_gbs,
        rtx4090_derived_gbs=g.derived_bandwidth_gbs(),
        ddr5_channel_bits=DDR5_CHANNEL_BITS,
        ddr5_subchannel_bits=DDR5_SUBCHANNEL_BITS,
        ddr5_low_mts=lo_mts,
        ddr5_high_mts=hi_mts,
        ddr5_channel_low_gbs=ddr5_bandwidth_gbs(1, lo_mts),
        ddr5_4800_gbs=lo,
        ddr5_5600_gbs=hi,
        article_ddr5_gbs=ARTICLE_DDR5_GBS,
        article_bw_ratio=g.bandwidth_gbs / ARTICLE_DDR5_GBS,
        rtx4090_vs_ddr5_ratio=g.bandwidth_gbs / hi,
        bw_ratio_4800=g.bandwidth_gbs / lo,
        server_channels=server,
        epyc_channels=epyc,
        server_gbs=server_gbs,
        epyc_gbs=epyc_gbs,
        server_over_desktop_lo=server_gbs / lo,
        server_over_desktop_hi=epyc_gbs / lo,
        h200_gbs=h.bandwidth_gbs,
        h200_bandwidth_tbs=h.bandwidth_gbs / 1e3,
        h200_vs_4090_bandwidth_x=h.bandwidth_gbs / g.bandwidth_gbs,
    )


def _roofline(v: dict[str, Any]) -> None:
    g, h = gpu("RTX 4090"), gpu("H200")
    add = roofline.add_cost(1, "fp32")
    weights_gb = nominal_weight_gb(LLM_PARAMS, "bf16")
    bf16_bytes = roofline.itemsize("bf16")
    v.update(
        ridge_4090_fp32=roofline.gpu_ridge_point(g, "fp32"),
        ridge_4090_bf16=roofline.gpu_ridge_point(g, "bf16"),
        ridge_h200_bf16=roofline.gpu_ridge_point(h, "bf16"),
        h200_bf16_tflops=h.peak_tflops["bf16"],
        # I = n/3 for an fp16 n x n product: the n at which it meets the ridge point
        matmul_n_fp16=3 * roofline.gpu_ridge_point(g, "bf16"),
        add_flops=add.flops,
        add_bytes=add.bytes,
        add_intensity=add.intensity,
        add_4090_gflops=add.intensity * g.bandwidth_gbs,
        add_share_of_peak=add.intensity * g.bandwidth_gbs / (g.peak_tflops["fp32"] * 1e3),
        # decoding at batch 1: each weight read (2 bytes in bf16) serves one multiply-add
        decode_intensity=FLOPS_PER_FMA / bf16_bytes,
        llm_params_b=LLM_PARAMS / 1e9,
        llm_bf16_gb=weights_gb,
        decode_4090_tok_s=g.bandwidth_gbs / weights_gb,
        decode_ddr5_tok_s=v["ddr5_5600_gbs"] / weights_gb,
    )


def _vs_3060(v: dict[str, Any]) -> None:
    a, b = gpu("RTX 4090"), gpu("RTX 3060 12GB")
    fmas = round(tensor_fmas_per_clock("RTX 3060 12GB"))
    # FP32 accumulation runs at half the FP16-accumulate rate on GeForce cards
    derived = b.tensor_cores * b.boost_clock_ghz * fmas * FLOPS_PER_FMA / 2 / 1e3
    v.update(
        rtx3060_tensor_cores=b.tensor_cores,
        rtx3060_boost_ghz=b.boost_clock_ghz,
        rtx3060_tc_fmas=fmas,
        rtx3060_bf16_derived_tflops=derived,
        rtx3060_bf16_tflops=b.peak_tflops["bf16"],
        rtx3060_bus_bits=b.memory_bus_bits,
        rtx3060_data_rate_gbps=b.memory_data_rate_gbps,
        rtx3060_gbs=b.bandwidth_gbs,
        rtx4090_over_3060_bf16=a.peak_tflops["bf16"] / b.peak_tflops["bf16"],
        rtx4090_over_3060_bw=a.bandwidth_gbs / b.bandwidth_gbs,
        rtx3060_over_ddr5_bw=b.bandwidth_gbs / v["ddr5_5600_gbs"],
    )


def _benchmark(v: dict[str, Any]) -> None:
    rows, f = ARTICLE_LINEAR["rows"], ARTICLE_LINEAR["features"]
    flop = roofline.matmul_flops(rows, f, f)
    size = roofline.itemsize(ARTICLE_LINEAR["dtype"])
    x_mb, w_mb, y_mb = rows * f * size / 1e6, f * f * size / 1e6, rows * f * size / 1e6
    gpu_rate, cpu_rate = flop / ARTICLE_GPU_S, flop / ARTICLE_CPU_S
    v.update(
        linear_rows=rows,
        linear_gflop=flop / 1e9,
        linear_bias_mflop=rows * f / 1e6,
        linear_x_mb=x_mb,
        linear_w_mb=w_mb,
        linear_y_mb=y_mb,
        linear_total_mb=x_mb + w_mb + y_mb,
        linear_intensity=flop / ((x_mb + w_mb + y_mb) * 1e6),
        article_gpu_s=ARTICLE_GPU_S,
        article_cpu_s=ARTICLE_CPU_S,
        article_ratio=ARTICLE_CPU_S / ARTICLE_GPU_S,
        article_gpu_tflops=gpu_rate / 1e12,
        article_gpu_share=gpu_rate / (v["rtx4090_fp32_tflops"] * 1e12),
        article_cpu_gflops=cpu_rate / 1e9,
    )
    for key in _SETTING_KEYS.values():
        v[f"article_cpu_share_{key}"] = cpu_rate / (v[f"cpu_{key}_tflops"] * 1e12)


def figures() -> dict[str, Any]:
    """Every figure the chapter page pastes, by name."""
    v: dict[str, Any] = {}
    # in this order: each part reads what the ones before it added
    for part in (
        _cpu,
        _gpu_cores,
        _tensor_cores,
        _fp4,
        _bandwidth,
        _ratios,
        _roofline,
        _vs_3060,
        _benchmark,
    ):
        part(v)
    return v
