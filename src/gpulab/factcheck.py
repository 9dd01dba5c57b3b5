"""The fact-check of the two source articles: every claim, its verdict and its correct value (appendix).

The claims live in ``data/fact_check.json``, one entry per claim id of the course's claim list
(``seed_claims.csv``: ids 1-119) plus the claims that list missed (ids 120 and up). Each entry
says what the article states (``quote``, in Chinese, and ``claim_en``), a ``verdict`` (one of
VERDICTS), the ``correct_value`` with units, how that value is derived, and the course
``chapter`` that discusses it (0 is the set-up page), so that chapters can link to
``fact_check.html#claim-<id>``.

A derivation is either ``{"computed": "<name>"}``, a function registered here that recomputes
the value with gpulab (the catalogue, the spec table, the memory and perf estimators), or
``{"source": "<URL or publication>", "note": ...}``. Each computed function returns a
:class:`Computed` whose ``text`` must appear verbatim in the entry's ``correct_value``:
``check_all()`` reports any entry where the data and the arithmetic have drifted apart.

    from gpulab import cost, factcheck
    claims = factcheck.load()             # validated, sorted by id
    rows = factcheck.check_all(claims)    # every computed derivation, run now
    factcheck.table(rows)                 # a gpulab.tables.Table for the notebook

Figures that are not in gpulab's tables (a GTX 1650's bandwidth, an M3 Ultra's, BERT-base's
size) are constants below, each with the source it comes from.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gpulab import cost, doctor, memory, models, perf, specs
from gpulab.errors import GpulabConfigError
from gpulab.tables import Table

__all__ = ["CHAPTERS", "REGISTRY", "SECTIONS", "SEED_FILES", "VERDICTS", "Claim", "Computed",
           "by_chapter", "by_section",
           "check_all", "compute", "counts", "load", "markdown", "register", "table", "validate",
           "verdicts_by_chapter"]

VERDICTS = ("correct", "wrong", "misleading", "not checkable")
# 0 is the set-up page (book/setup.md); 1-7 are the chapters.
CHAPTERS = tuple(range(8))
SEED_FILES = ("000_d7744990b21f3d09.txt", "003_660cd49f24af1ba6.txt")
# Each article's sections, in the article's order (the appendix groups claims by them).
SECTIONS = {
    SEED_FILES[0]: (
        "Core conclusions", "Step 1: hardware and driver", "Step 2: framework and GPU backend",
        "Step 3: configuring the AI tools", "Step 4: performance test", "Step 5: cloud GPUs",
        "Deep dive: why a GPU is faster", "Trends: FlashAttention-3, quantization, operator fusion",
        "Backend comparison: CUDA vs ROCm vs Metal", "Pitfalls: why GPU acceleration does not help",
        "Tools compared: large language models", "Tools compared: image generation",
        "Tools compared: Cursor", "Tools compared: video generation",
        "Case study: a 15,000 CNY workstation", "Summary: action guide", "FAQ"),
    SEED_FILES[1]: (
        "1. What a GPU is", "2. The three key parameters", "3. Inference vs training",
        "4. CPU vs GPU table", "5. Hardware picks by scenario", "6. Five use cases",
        "7. Common myths"),
}
_REQUIRED = ("id", "seed_file", "section", "quote", "claim_en", "verdict", "correct_value",
             "derivation", "chapter")
_OPTIONAL = ("reason",)
GB = 1e9


@dataclass(frozen=True)
class Computed:
    """A value recomputed in the page, with the arithmetic that gives it."""

    value: float  # the headline number, in `unit`
    unit: str  # "GB", "tokens/s", "x" (a ratio), ...
    text: str  # the headline as printed; must appear in the claim's correct_value
    how: str  # the arithmetic, with where each input comes from


@dataclass(frozen=True)
class Claim:
    """One checked claim from data/fact_check.json."""

    id: int  # the claim list's id (1-119), or 120+ for claims the list missed
    seed_file: str  # which article (one of SEED_FILES)
    section: str  # the article's section, in English, for grouping
    quote: str  # the article's words (Chinese), short
    claim_en: str  # the claim in English
    verdict: str  # one of VERDICTS
    correct_value: str  # the right figure with units, or what is true instead
    derivation: Mapping[str, str] = field(hash=False)  # {"computed": name} or {"source", "note"}
    chapter: int  # the course chapter that discusses it; 0 = the set-up page
    reason: str = ""  # why it cannot be checked (required for "not checkable")

    @property
    def anchor(self) -> str:
        """The HTML id of this claim on the appendix page: claim-<id>."""
        return f"claim-{self.id}"

    @property
    def computed_name(self) -> str | None:
        """The registered function that derives the correct value, if any."""
        return self.derivation.get("computed")


# ---------------------------------------------------------------- loading and validation


def _fail(cid: Any, field_name: str, problem: str) -> GpulabConfigError:
    return GpulabConfigError(f"fact_check.json claim {cid!r}, field {field_name!r}: {problem}")


def _check_derivation(cid: Any, d: Any) -> None:
    if not isinstance(d, Mapping):
        raise _fail(cid, "derivation", 'must be {"computed": name} or {"source": ..., "note": ...}')
    if ("computed" in d) == ("source" in d):
        raise _fail(cid, "derivation", "needs exactly one of 'computed' or 'source'")
    if set(d) - {"computed", "source", "note"}:
        raise _fail(cid, "derivation", f"unknown keys {sorted(set(d) - {'computed', 'source', 'note'})}")
    if "computed" in d and d["computed"] not in REGISTRY:
        raise _fail(cid, "derivation", f"computed={d['computed']!r} is not a registered function; "
                                       f"known: {', '.join(sorted(REGISTRY))}")
    if "source" in d and not (isinstance(d["source"], str) and d["source"].strip()):
        raise _fail(cid, "derivation", "source must be a non-empty URL or publication")


def _claim(entry: Any) -> Claim:
    """One entry checked field by field; the error names the claim id and the field."""
    if not isinstance(entry, Mapping):
        raise GpulabConfigError(f"fact_check.json: every claim must be an object, got {entry!r}")
    cid = entry.get("id")
    if not isinstance(cid, int) or isinstance(cid, bool) or cid < 1:
        raise _fail(cid, "id", "must be a positive integer")
    missing = [k for k in _REQUIRED if k not in entry]
    if missing:
        raise _fail(cid, missing[0], "is missing")
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise _fail(cid, unknown[0], f"is not a known field; allowed: {', '.join(_REQUIRED + _OPTIONAL)}")
    if entry["seed_file"] not in SEED_FILES:
        raise _fail(cid, "seed_file", f"{entry['seed_file']!r} is not one of {', '.join(SEED_FILES)}")
    if entry["verdict"] not in VERDICTS:
        raise _fail(cid, "verdict", f"{entry['verdict']!r} is not one of {', '.join(VERDICTS)}")
    if entry["section"] not in SECTIONS[entry["seed_file"]]:
        raise _fail(cid, "section", f"{entry['section']!r} is not a section of {entry['seed_file']}; "
                                    f"use one of: {'; '.join(SECTIONS[entry['seed_file']])}")
    for key in ("section", "quote", "claim_en", "correct_value"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise _fail(cid, key, "must be non-empty text")
    if entry["chapter"] not in CHAPTERS or isinstance(entry["chapter"], bool):
        raise _fail(cid, "chapter", "must be an integer from 0 (set-up page) to 7")
    reason = entry.get("reason", "")
    if entry["verdict"] == "not checkable" and not (isinstance(reason, str) and reason.strip()):
        raise _fail(cid, "reason", "is required when the verdict is 'not checkable'")
    _check_derivation(cid, entry["derivation"])
    return Claim(**{**entry, "derivation": MappingProxyType(dict(entry["derivation"])),
                    "reason": reason})


def validate(data: Any) -> list[Claim]:
    """Check parsed fact_check.json data; return its claims sorted by id (no duplicate ids)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("claims"), list):
        raise GpulabConfigError('fact_check.json must be an object with a "claims" list')
    claims = [_claim(e) for e in data["claims"]]
    seen = Counter(c.id for c in claims)
    dupes = sorted(i for i, n in seen.items() if n > 1)
    if dupes:
        raise _fail(dupes[0], "id", "appears more than once")
    return sorted(claims, key=lambda c: c.id)


def load(path: str | Path | None = None) -> list[Claim]:
    """The packaged fact_check.json (or the file at `path`), validated."""
    if path is None:
        text = (resources.files("gpulab") / "data" / "fact_check.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return validate(json.loads(text))


# ---------------------------------------------------------------- the registry

REGISTRY: dict[str, Callable[[], Computed]] = {}  # name -> function; filled by @register


def register(name: str) -> Callable[[Callable[[], Computed]], Callable[[], Computed]]:
    """Decorator: make a no-argument function returning Computed usable as a derivation."""
    def add(fn: Callable[[], Computed]) -> Callable[[], Computed]:
        if name in REGISTRY:
            raise ValueError(f"factcheck function {name!r} registered twice")
        REGISTRY[name] = fn
        return fn
    return add


def compute(name: str) -> Computed:
    """Run the registered function `name`."""
    if name not in REGISTRY:
        raise GpulabConfigError(f"computed={name!r} is not a registered function; "
                                f"known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()


# Inputs that gpulab's tables do not hold, with their sources (as cited in chapters 1-4).
DDR4_3200_DUAL_GBS = 2 * 8 * 3200 / 1e3  # 51.2: two 64-bit channels x 3200 MT/s (i7-12700H, ch. 3)
DDR5_4800_DUAL_GBS = 2 * 8 * 4800 / 1e3  # 76.8: the same at 4800 MT/s
GTX1650_GDDR6_GBS = 192.0  # 128-bit x 12 Gbps (pcpartdb, gigabyte-gtx-1650-eagle-oc-gddr6)
BERT_BASE_PARAMS = 110e6  # Devlin et al. 2018, "Total Parameters=110M"
LINEAR_BENCH_FLOP = 2 * 10000 * 4096 * 4096  # the article's nn.Linear(4096, 4096) on 10000 rows


def _gpu(name: str) -> specs.GPUSpec:
    return specs.get_gpu(name)


def _cpu() -> specs.CPUSpec:
    return specs.get_cpu("Core i9-13900K")


def _wb(model: str, fmt: str) -> float:
    """Weight bytes of a catalogue model in a format, in GB."""
    return memory.weight_bytes(models.get(model), fmt) / GB


def _nominal(params: float, fmt: str) -> float:
    """GB of weights for a nominal parameter count in a format (no catalogue model at that size)."""
    return params * memory.bits_per_weight(fmt) / 8 / GB


# ---- chapter 1: compute, bandwidth, Tensor Cores

@register("speedup_4090_vs_13900k_fp32")
def _speedup_fp32() -> Computed:
    g, c = _gpu("RTX 4090"), _cpu()
    lo, hi = g.peak_tflops["fp32"] * 1e12 / c.peak_fp32_flops("turbo"), \
        g.peak_tflops["fp32"] * 1e12 / c.peak_fp32_flops("base")
    bw = g.bandwidth_gbs / c.memory_bandwidth_gbs
    return Computed(lo, "x", f"{lo:.0f}–{hi:.0f}x",
                    f"FP32 peaks: RTX 4090 {g.peak_tflops['fp32']} TFLOP/s / i9-13900K "
                    f"{c.peak_fp32_flops('turbo') / 1e12:.2f} (all-core max turbo) to "
                    f"{c.peak_fp32_flops('base') / 1e12:.2f} TFLOP/s (base clocks); memory-bound work "
                    f"gets the bandwidth ratio {g.bandwidth_gbs:g} / {c.memory_bandwidth_gbs:g} = {bw:.1f}x "
                    "(gpulab.specs)")


@register("speedup_4090_bf16_vs_13900k_fp32")
def _speedup_bf16() -> Computed:
    g, c = _gpu("RTX 4090"), _cpu()
    lo, hi = g.peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("turbo"), \
        g.peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("base")
    h = _gpu("H100 SXM").peak_tflops["bf16"] * 1e12 / c.peak_fp32_flops("base")
    return Computed(lo, "x", f"{lo:.0f}–{hi:.0f}x",
                    f"BF16 Tensor Core peak {g.peak_tflops['bf16']} TFLOP/s over the i9-13900K's FP32 "
                    f"peak (1.33-2.59 TFLOP/s); an H100 SXM reaches {h:.0f}x the base-clock CPU peak")


@register("linear_benchmark_implied_rate")
def _linear_bench() -> Computed:
    g, c = _gpu("RTX 4090"), _cpu()
    gpu_rate = LINEAR_BENCH_FLOP / 0.012
    cpu_rate = LINEAR_BENCH_FLOP / 0.84
    return Computed(gpu_rate / 1e12, "TFLOP/s", f"{gpu_rate / 1e12:.1f} TFLOP/s",
                    f"2 x 10000 x 4096 x 4096 = {LINEAR_BENCH_FLOP / 1e9:.1f} GFLOP; / 0.012 s = "
                    f"{gpu_rate / 1e12:.1f} TFLOP/s ({gpu_rate / (g.peak_tflops['fp32'] * 1e12):.0%} of "
                    f"the 4090's FP32 peak); / 0.84 s = {cpu_rate / 1e9:.0f} GFLOP/s "
                    f"({cpu_rate / c.peak_fp32_flops('base'):.0%} of the CPU's base-clock peak); "
                    f"0.84 / 0.012 = {0.84 / 0.012:.0f}x exceeds the peak ratio of 32-62x")


@register("core_counts_4090_13900k")
def _cores() -> Computed:
    g, c = _gpu("RTX 4090"), _cpu()
    return Computed(g.cuda_cores, "cores", f"{g.cuda_cores:,} CUDA cores vs {c.cores} CPU cores",
                    f"{g.cuda_cores} / {c.cores} = {g.cuda_cores / c.cores:.0f}, but a CUDA core is one "
                    "FP32 lane: compare peak FLOP/s instead (32-62x)")


@register("fp4_vs_fp16_rtx5090")
def _fp4() -> Computed:
    g = _gpu("RTX 5090")
    r = g.peak_tflops["fp4"] / g.peak_tflops["fp16_fp16acc"]
    return Computed(r, "x", f"{r:.1f}x",
                    f"RTX 5090 dense FP4 {g.peak_tflops['fp4']} / FP16 (FP16 accumulate) "
                    f"{g.peak_tflops['fp16_fp16acc']} TFLOP/s; "
                    f"{g.peak_tflops['fp4'] / g.peak_tflops['bf16']:.0f}x a BF16 PyTorch matmul")


@register("rtx4090_bandwidth")
def _bw4090() -> Computed:
    g = _gpu("RTX 4090")
    return Computed(g.bandwidth_gbs, "GB/s", f"{g.bandwidth_gbs:g} GB/s",
                    f"{g.memory_bus_bits}-bit / 8 x {g.memory_data_rate_gbps:g} Gbit/s = "
                    f"{g.derived_bandwidth_gbs():g} GB/s")


@register("ddr5_dual_channel_bandwidth")
def _ddr5() -> Computed:
    c, g = _cpu(), _gpu("RTX 4090")
    return Computed(c.memory_bandwidth_gbs, "GB/s", f"{DDR5_4800_DUAL_GBS:g}–{c.memory_bandwidth_gbs:g} GB/s",
                    f"2 channels x 8 bytes x 4800-5600 MT/s; {g.bandwidth_gbs:g} / 80 = "
                    f"{g.bandwidth_gbs / 80:.1f}x, {g.bandwidth_gbs:g} / {c.memory_bandwidth_gbs:g} = "
                    f"{g.bandwidth_gbs / c.memory_bandwidth_gbs:.1f}x")


@register("rtx4090_vs_rtx3060")
def _vs3060() -> Computed:
    a, b = _gpu("RTX 4090"), _gpu("RTX 3060 12GB")
    bw, fl = a.bandwidth_gbs / b.bandwidth_gbs, a.peak_tflops["bf16"] / b.peak_tflops["bf16"]
    return Computed(bw, "x", f"{bw:.1f}x (bandwidth) to {fl:.1f}x (BF16 compute)",
                    f"bandwidth {a.bandwidth_gbs:g} / {b.bandwidth_gbs:g} GB/s (token generation); BF16 "
                    f"peak {a.peak_tflops['bf16']} / {b.peak_tflops['bf16']} TFLOP/s (large matmuls)")


@register("tensor_vs_fp32_speedup")
def _tc() -> Computed:
    a, h = _gpu("RTX 4090"), _gpu("H100 SXM")
    ra, rh = a.peak_tflops["bf16"] / a.peak_tflops["fp32"], h.peak_tflops["bf16"] / h.peak_tflops["fp32"]
    return Computed(ra, "x", f"{ra:.1f}x (RTX 4090) to {rh:.1f}x (H100 SXM)",
                    f"BF16 Tensor Core peak / FP32 peak: {a.peak_tflops['bf16']} / {a.peak_tflops['fp32']}, "
                    f"{h.peak_tflops['bf16']} / {h.peak_tflops['fp32']} TFLOP/s")


@register("hbm_vs_gddr_bandwidth")
def _hbm() -> Computed:
    ref = _gpu("RTX 4090").bandwidth_gbs
    hbm = {n: _gpu(n).bandwidth_gbs for n in ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM", "H200")}
    lo, hi = min(hbm.values()) / ref, max(hbm.values()) / ref
    r5090 = _gpu("RTX 5090").bandwidth_gbs
    return Computed(lo, "x", f"{lo:.1f}–{hi:.1f}x",
                    ", ".join(f"{n} {v:g}" for n, v in hbm.items()) + f" GB/s over the RTX 4090's {ref:g}; "
                    f"the RTX 5090 ({r5090:g} GB/s) exceeds the A100 40GB ({hbm['A100 40GB SXM']:g})")


@register("hbm_memory_types")
def _hbm_types() -> Computed:
    names = ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM")
    kinds = [_gpu(n).memory_type for n in names]
    return Computed(len(kinds), "cards", ", ".join(kinds),
                    "; ".join(f"{n}: {k}" for n, k in zip(names, kinds, strict=True)) + " (gpulab.specs)")


@register("vram_vs_ddr5_ratio")
def _vram_ratio() -> Computed:
    c = _cpu().memory_bandwidth_gbs
    lo, hi = _gpu("RTX 4060 Ti 16GB").bandwidth_gbs / c, _gpu("RTX 4090").bandwidth_gbs / c
    return Computed(lo, "x", f"{lo:.1f}–{hi:.1f}x",
                    f"RTX 4060 Ti 16GB 288 GB/s to RTX 4090 1008 GB/s over dual-channel DDR5-5600 ({c:g} GB/s)")


# ---- chapter 2: memory

@register("llama3_70b_4bit_weights")
def _w70_4bit() -> Computed:
    lo, hi = _wb("Llama-3-70B", "int4"), _wb("Llama-3-70B", "q4_k_m")
    return Computed(lo, "GB", f"{lo:.1f}–{hi:.1f} GB",
                    f"70.55B parameters (catalogue): int4 group 128 (4.125 bits, embeddings in 16 bits) "
                    f"{lo:.1f} GB; Q4_K_M (4.84 bits) {hi:.1f} GB; 24 GB would need "
                    f"{24e9 * 8 / models.get('Llama-3-70B').n_params:.1f} bits per weight")


@register("llama3_70b_fp16_weights")
def _w70_fp16() -> Computed:
    v = _wb("Llama-3-70B", "fp16")
    return Computed(v, "GB", f"{v:.1f} GB", "70,553,706,496 parameters x 2 bytes (gpulab.memory)")


@register("llama3_70b_q4km_weights")
def _w70_q4() -> Computed:
    v = _wb("Llama-3-70B", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"70.55B x 4.84 bits / 8 (llama.cpp's Q4_K_M); fits 2 x 24 = 48 GB with "
                    f"{48 - v:.1f} GB left for the KV cache")


@register("llama2_7b_weights")
def _w7() -> Computed:
    fp16, int4 = _wb("Llama-2-7B", "fp16"), _wb("Llama-2-7B", "int4")
    return Computed(fp16, "GB", f"{fp16:.1f} GB",
                    f"6.74B parameters x 2 bytes = {fp16:.1f} GB in FP16; int4 group 128: {int4:.1f} GB")


@register("offload_slowdown_70b_on_4090")
def _offload() -> Computed:
    s, g = models.get("Llama-3-70B"), _gpu("RTX 4090")
    ram = _cpu().memory_bandwidth_gbs
    n = memory.gpu_layers_that_fit(s, 24e9, "q4_k_m", seq_len=4096)
    part = perf.offloaded_tokens_per_s(s, n, "q4_k_m", g.bandwidth_gbs, ram)
    full = perf.offloaded_tokens_per_s(s, s.n_layers + 1, "q4_k_m", g.bandwidth_gbs, ram)
    r = full / part
    return Computed(r, "x", f"{r:.1f}x slower",
                    f"Llama-3-70B Q4_K_M, {n} of {s.n_layers} layers in 24 GB: bound {part:.1f} tokens/s "
                    f"vs {full:.1f} if all fitted (1008 GB/s VRAM, {ram:g} GB/s DDR5-5600; gpulab.perf)")


@register("int4_vs_fp16_ratio")
def _int4_ratio() -> Computed:
    lo, hi = 16 / memory.bits_per_weight("q4_k_m"), 16 / memory.bits_per_weight("int4")
    return Computed(hi, "x", f"{lo:.1f}–{hi:.1f}x",
                    f"16 bits / {memory.bits_per_weight('q4_k_m')} (Q4_K_M) to 16 / "
                    f"{memory.bits_per_weight('int4')} (int4 group 128); 8x only against FP32")


@register("deepseek_r1_fp16_vs_fp8")
def _r1_fp() -> Computed:
    fp16, fp8 = _wb("DeepSeek-R1", "fp16"), _wb("DeepSeek-R1", "fp8")
    return Computed(fp8, "GB", f"{fp16:.0f} GB in 16 bits, {fp8:.0f} GB as released (FP8)",
                    f"671.03B parameters x 2 bytes = {fp16:.1f} GB; FP8 with 128x128 block scales, "
                    f"embeddings in 16 bits = {fp8:.1f} GB (gpulab.memory)")


@register("deepseek_r1_int4_weights")
def _r1_int4() -> Computed:
    v, q = _wb("DeepSeek-R1", "int4"), _wb("DeepSeek-R1", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"671.03B parameters at 4.125 bits (int4 group 128) = {v:.1f} GB; Q4_K_M {q:.1f} GB; "
                    f"168 GB is 1342 / 8, i.e. 2 bits per weight")


@register("deepseek_r1_on_4_a100")
def _r1_a100() -> Computed:
    v = _wb("DeepSeek-R1", "int4")
    cap = 4 * _gpu("A100 80GB SXM").memory_gb
    return Computed(v, "GB", f"{v:.1f} GB > {cap:g} GB",
                    f"int4 weights alone {v:.1f} GB against 4 x 80 GB = {cap:g} GB (4 x 40 GB = 160 GB)")


@register("deepseek_r1_active_params")
def _r1_active() -> Computed:
    s = models.get("DeepSeek-R1")
    return Computed(s.n_active_params / 1e9, "B", f"{s.n_active_params / 1e9:.1f}B of {s.n_params / 1e9:.1f}B",
                    "active parameters per token (8 of 256 routed experts + shared) counted from the config "
                    "in gpulab.models; DeepSeek publishes 37B of 671B")


@register("deepseek_r1_q4km_vs_4090_and_ram")
def _r1_q4() -> Computed:
    v = _wb("DeepSeek-R1", "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"Q4_K_M weights {v:.1f} GB against 24 GB VRAM + 64 GB RAM = 88 GB; 35 of 61 layers are "
                    f"about {v * 35 / 61:.0f} GB")


@register("qwen25_72b_fp16_weights")
def _qwen() -> Computed:
    v = _wb("Qwen2.5-72B", "fp16")
    return Computed(v, "GB", f"{v:.1f} GB", f"72.71B parameters x 2 bytes; two 80 GB cards leave {160 - v:.1f} GB")


@register("phi3_mini_params")
def _phi3() -> Computed:
    s = models.get("Phi-3-mini")
    w = _wb("Phi-3-mini", "q4_k_m")
    return Computed(s.n_params / 1e9, "B", f"{s.n_params / 1e9:.2f}B",
                    f"counted from the config (gpulab.models); at Q4_K_M {w:.2f} GB, which fits in 4 GB")


def _tier(params: float, label: str) -> Computed:
    v = _nominal(params, "q4_k_m")
    return Computed(v, "GB", f"{v:.1f} GB",
                    f"{label}: {params / 1e9:g}B x {memory.bits_per_weight('q4_k_m')} bits / 8 (Q4_K_M weights)")


# the article's VRAM tiers: one registered derivation per model size
for _billions in (3, 7, 13, 14, 32):
    register(f"tier_{_billions}b_4bit")(functools.partial(_tier, _billions * 1e9, f"{_billions}B"))


@register("kv_cache_llama3_70b_128k")
def _kv() -> Computed:
    v = memory.kv_cache_bytes(models.get("Llama-3-70B"), 131072, 1, "bf16") / GB
    return Computed(v, "GB", f"{v:.1f} GB",
                    "2 x 80 layers x 8 KV heads x 128 x 2 bytes x 131,072 tokens (gpulab.memory.kv_cache_bytes)")


@register("full_finetune_7b_states")
def _ft() -> Computed:
    s = models.get("Llama-2-7B")
    b = memory.estimate_training(s, precision="bf16-mixed", optimizer="adamw", batch=1, seq_len=1)
    states = (b.weights + b.gradients + b.optimizer) / GB
    return Computed(states, "GB", f"{states:.1f} GB",
                    f"Llama-2-7B, bf16 mixed precision with AdamW: weights + gradients + FP32 master and "
                    f"moments = {(b.weights + b.gradients + b.optimizer) / s.n_params:.0f} bytes per "
                    "parameter, before activations (gpulab.memory.estimate_training)")


@register("layer_split_bytes_per_token")
def _split() -> Computed:
    s = models.get("Llama-3-70B")
    nv = _gpu("RTX 3090").interconnect["nvlink_gbs"]
    b = s.hidden_size * 2
    return Computed(b, "bytes", f"{b:,} bytes per token",
                    f"a layer split passes one bf16 hidden state ({s.hidden_size} x 2 bytes) per token between "
                    f"GPUs; the RTX 3090 has NVLink ({nv:g} GB/s, gpulab.specs)")


@register("cpu_7b_4bit_decode_bound")
def _cpu7() -> Computed:
    ram = _cpu().memory_bandwidth_gbs
    w = _wb("Llama-2-7B", "q4_k_m")
    v = ram / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"dual-channel DDR5-5600 {ram:g} GB/s / {w:.2f} GB of Q4_K_M Llama-2-7B weights")


# ---- chapter 3: tokens per second, FLOPs

def _decode_bound(bandwidth: float, label: str) -> Computed:
    w = _wb("Llama-2-7B", "fp16")
    v = bandwidth / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"{label} {bandwidth:g} GB/s / {w:.2f} GB of FP16 Llama-2-7B weights (KV cache left out)")


@register("decode_bound_llama2_7b_rtx4090")
def _d4090() -> Computed:
    return _decode_bound(_gpu("RTX 4090").bandwidth_gbs, "RTX 4090")


@register("decode_bound_llama2_7b_rx7900xtx")
def _d7900() -> Computed:
    return _decode_bound(_gpu("AMD Radeon RX 7900 XTX").bandwidth_gbs, "RX 7900 XTX")


@register("decode_bound_llama2_7b_m3_ultra")
def _dm3() -> Computed:
    return _decode_bound(_gpu("Apple M3 Ultra").bandwidth_gbs, "M3 Ultra")


@register("decode_bound_llama3_70b_rtx4090")
def _d70() -> Computed:
    bw, w = _gpu("RTX 4090").bandwidth_gbs, _wb("Llama-3-70B", "int4")
    v = bw / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s",
                    f"even if the {w:.1f} GB of int4 weights fitted in 24 GB: {bw:g} GB/s / {w:.1f} GB")


@register("decode_bound_qwen72b_fp16_rtx4090")
def _dq() -> Computed:
    bw, w = _gpu("RTX 4090").bandwidth_gbs, _wb("Qwen2.5-72B", "fp16")
    v = bw / w
    return Computed(v, "tokens/s", f"{v:.1f} tokens/s", f"if it fitted: {bw:g} GB/s / {w:.1f} GB")


@register("r1_vs_70b_bytes_per_token")
def _r1_vs_70() -> Computed:
    r1 = perf.decode_bytes_per_step(models.get("DeepSeek-R1"), "int4", "bf16", 1, 1) / GB
    d70 = perf.decode_bytes_per_step(models.get("Llama-3-70B"), "int4", "bf16", 1, 1) / GB
    hop = models.get("DeepSeek-R1").hidden_size * 2
    return Computed(r1, "GB", f"{r1:.1f} GB vs {d70:.1f} GB",
                    f"bytes read per token at int4 (gpulab.perf.decode_bytes_per_step): R1's active experts "
                    f"{r1:.1f} GB, dense Llama-3-70B {d70:.1f} GB; a layer split sends {hop:,} bytes per token")


@register("laptop_cpu_decode_bound")
def _laptop() -> Computed:
    w = _wb("Llama-2-7B", "fp16")
    lo, hi = DDR4_3200_DUAL_GBS / w, DDR5_4800_DUAL_GBS / w
    return Computed(lo, "tokens/s", f"{lo:.1f}–{hi:.1f} tokens/s",
                    f"i7-12700H memory {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s (DDR4-3200 to "
                    f"DDR5-4800, two channels) / {w:.2f} GB of FP16 weights")


@register("gtx1650_vs_laptop_ratio")
def _gtx() -> Computed:
    gddr5 = _gpu("GTX 1650 GDDR5").bandwidth_gbs
    lo, hi = gddr5 / DDR5_4800_DUAL_GBS, GTX1650_GDDR6_GBS / DDR4_3200_DUAL_GBS
    return Computed(hi, "x", f"{lo:.1f}–{hi:.2f}x",
                    f"GTX 1650 {gddr5:g} (GDDR5) to {GTX1650_GDDR6_GBS:g} GB/s (GDDR6) over a "
                    f"dual-channel laptop's {DDR4_3200_DUAL_GBS:g}-{DDR5_4800_DUAL_GBS:g} GB/s")


@register("forward_flops_per_token_7b")
def _flops7() -> Computed:
    v = perf.forward_flops(models.get("Llama-2-7B"), 1)
    return Computed(v, "FLOPs", f"{v:.2e} FLOPs",
                    "2 FLOPs per multiplied parameter per token, Llama-2-7B (gpulab.perf.forward_flops)")


@register("sd_steps_fit")
def _sd() -> Computed:
    step = (8 - 0.8) / (50 - 4)
    fixed = 0.8 - 4 * step
    return Computed(step, "s", f"{step:.3f} s per step",
                    f"(8 - 0.8) s / (50 - 4) steps = {step:.3f} s; fixed part 0.8 - 4 x {step:.3f} = {fixed:.2f} s")


@register("comfyui_speedup")
def _comfy() -> Computed:
    r = 3.2 / 1.1
    return Computed(r, "x", f"{r:.1f}x", "3.2 s / 1.1 s per image")


@register("rag_embedding_time")
def _rag() -> Computed:
    flops = 50_000 * 2 * BERT_BASE_PARAMS * 512
    cpu_h, gpu_s = flops / 1e12 / 3600, flops / 100e12
    return Computed(cpu_h, "h", f"{cpu_h:.1f} h",
                    f"50,000 chunks x 2 x 110M parameters (BERT-base) x 512 tokens = {flops:.2e} FLOPs: "
                    f"{cpu_h:.1f} h at 1 TFLOP/s (CPU), {gpu_s:.0f} s at 100 TFLOP/s (GPU)")


# ---- chapters 4-6: versions, power, prices

@register("cuda_12_6_min_driver")
def _driver() -> Computed:
    _, linux = doctor.required_drivers("12.6", "linux")
    _, windows = doctor.required_drivers("12.6", "windows")
    compat, _ = doctor.required_drivers("12.6", "linux")
    return Computed(float(linux.split(".")[0]), "driver", f"{linux} (Linux) / {windows} (Windows)",
                    f"NVIDIA's CUDA 12.6 GA driver (gpulab/data/cuda_driver_minimums.json, from the CUDA "
                    f"release notes); minor-version compatibility runs CUDA 12.x on >= {compat}")


@register("rtx5090_memory_and_launch")
def _r5090() -> Computed:
    g = _gpu("RTX 5090")
    return Computed(g.memory_gb, "GB", f"{g.memory_gb:g} GB, launched {g.launch_date}",
                    f"gpulab.specs: {g.memory_gb:g} GB {g.memory_type}, launch {g.launch_date}, "
                    f"dense FP4 {g.peak_tflops['fp4']} TFLOP/s")


@register("a10_memory")
def _a10() -> Computed:
    g = _gpu("A10")
    return Computed(g.memory_gb, "GB", f"{g.memory_gb:g} GB", f"gpulab.specs: A10, {g.memory_gb:g} GB {g.memory_type}")


@register("power_limit_fraction_4090")
def _pl() -> Computed:
    g = _gpu("RTX 4090")
    r = 350 / g.board_power_w
    return Computed(r, "fraction", f"{r:.1%}", f"350 W / {g.board_power_w:g} W board power (gpulab.specs)")


@register("rtx4090_board_power")
def _pw() -> Computed:
    g = _gpu("RTX 4090")
    return Computed(g.board_power_w, "W", f"{g.board_power_w:g} W", "RTX 4090 total graphics power (gpulab.specs)")


@register("compute_capability_recommended")
def _cc() -> Computed:
    names = ("RTX 3090", "RTX 4090", "RTX 5090", "A10", "A100 80GB SXM")
    ccs = {n: _gpu(n).compute_capability for n in names}
    lo = min(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    hi = max(ccs.values(), key=lambda v: tuple(map(int, v.split("."))))
    return Computed(float(lo), "cc", f"{lo}–{hi}", ", ".join(f"{n} {c}" for n, c in ccs.items()))


def _seed_box(power_w: float) -> cost.LocalSetup:
    """The article's machine: 0.6 CNY/kWh, 10 hours a day at `power_w` (gpulab.cost)."""
    return cost.LocalSetup(hardware_price=0, power_load_w=power_w, electricity_per_kwh=0.6,
                           hours_per_day=10)


@register("electricity_cost_4090")
def _power_cost() -> Computed:
    box = _seed_box(350)
    day, year = cost.electricity_per_day(box), cost.electricity_per_year(box)
    full = cost.electricity_per_year(_seed_box(_gpu("RTX 4090").board_power_w))
    return Computed(year, "CNY", f"{year:.1f} CNY/year",
                    f"0.6 CNY/kWh x 0.35 kW x 10 h = {day:.2f} CNY/day; x 365 = {year:.1f}; at the 450 W "
                    f"board power {full:.1f} CNY/year (gpulab.cost)")


def _rent_per_year(price_per_hour: float, hours_per_day: float) -> float:
    """A year of renting at `price_per_hour` for `hours_per_day` hours a day (gpulab.cost)."""
    monthly = cost.cloud_monthly_cost(cost.CloudRate(price_per_hour), hours_per_day)
    return monthly * cost.DAYS_PER_YEAR / cost.DAYS_PER_MONTH


@register("cloud_cost_year")
def _cloud() -> Computed:
    a100, r4090 = _rent_per_year(12, 10), _rent_per_year(2.8, 10)
    return Computed(r4090, "CNY", f"{r4090:,.0f} CNY/year",
                    f"A100 at 12 CNY/h x 10 h x 365 = {a100:,.0f} CNY; the like-for-like rental, the article's "
                    f"own RTX 4090 at 2.8 CNY/h x 10 h x 365 = {r4090:,.0f} CNY")


@register("autodl_week_cost")
def _week() -> Computed:
    week = _rent_per_year(2.8, 24) * 7 / cost.DAYS_PER_YEAR
    return Computed(week, "CNY", f"{week:.1f} CNY",
                    f"2.8 CNY/h x 24 h x 7 days = {week:.1f} CNY; 60 CNY buys {60 / 2.8:.1f} hours")


# ---------------------------------------------------------------- checking and rendering


def check_all(claims: Iterable[Claim] | None = None) -> list[dict[str, Any]]:
    """Run every computed derivation; one row per claim, computed ones with value and consistency.

    `consistent` is True when the computed headline (Computed.text) appears in the claim's
    correct_value, False when the data file and the arithmetic disagree, None for sourced claims.
    """
    rows = []
    for c in load() if claims is None else claims:
        row = {"id": c.id, "chapter": c.chapter, "verdict": c.verdict, "claim": c.claim_en,
               "correct_value": c.correct_value, "computed": None, "how": None, "consistent": None,
               "source": c.derivation.get("source")}
        if c.computed_name:
            r = compute(c.computed_name)
            row.update(computed=r.text, how=r.how, consistent=r.text in c.correct_value)
        rows.append(row)
    return rows


def counts(claims: Iterable[Claim]) -> dict[str, int]:
    """How many claims have each verdict, in VERDICTS order."""
    n = Counter(c.verdict for c in claims)
    return {v: n.get(v, 0) for v in VERDICTS}


def by_chapter(claims: Iterable[Claim]) -> dict[int, list[int]]:
    """Chapter -> the claim ids it discusses (0 is the set-up page), for cross-links."""
    out: dict[int, list[int]] = {}
    for c in sorted(claims, key=lambda c: c.id):
        out.setdefault(c.chapter, []).append(c.id)
    return dict(sorted(out.items()))


def by_section(claims: Iterable[Claim], seed_file: str) -> list[tuple[str, list[Claim]]]:
    """One article's claims grouped by section, sections in the article's order, claims by id."""
    if seed_file not in SECTIONS:
        raise GpulabConfigError(f"seed_file={seed_file!r} is not one of {', '.join(SEED_FILES)}")
    groups: dict[str, list[Claim]] = {name: [] for name in SECTIONS[seed_file]}
    for c in sorted(claims, key=lambda c: c.id):
        if c.seed_file == seed_file:
            groups[c.section].append(c)
    return [(name, group) for name, group in groups.items() if group]


def verdicts_by_chapter(claims: Iterable[Claim]) -> dict[int, dict[str, int]]:
    """Chapter -> {verdict: count}, every verdict present (zeros included), for a stacked bar chart."""
    out: dict[int, dict[str, int]] = {}
    for c in claims:
        out.setdefault(c.chapter, dict.fromkeys(VERDICTS, 0))[c.verdict] += 1
    return dict(sorted(out.items()))


def table(rows: list[dict[str, Any]], columns: tuple[str, ...] = ("id", "verdict", "computed",
                                                                    "consistent"),
          title: str = "") -> Table:
    """The rows of check_all as a gpulab Table (defaults: id, verdict, computed value, consistent)."""
    def fmt(v: Any) -> str:
        return "-" if v is None else ("yes" if v is True else "NO" if v is False else str(v))
    return Table(rows, list(columns), formats={c: fmt for c in columns}, title=title)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown(claims: Iterable[Claim], results: Mapping[int, Computed] | None = None) -> str:
    """Markdown for a group of claims, each under an HTML anchor id="claim-<id>" for links."""
    results = results or {}
    parts = []
    for c in claims:
        d = c.derivation
        article = "tutorial" if c.seed_file == SEED_FILES[0] else "hardware guide"
        where = f"chapter {c.chapter}" if c.chapter else "the set-up page"
        lines = [f'<a id="{c.anchor}"></a>', "",
                 f"**Claim {c.id}** ({article}; discussed in {where}): {_md_escape(c.claim_en)}", "",
                 f"> {_md_escape(c.quote)}", "",
                 f"- **Verdict:** {c.verdict}",
                 f"- **Correct value:** {_md_escape(c.correct_value)}"]
        if c.computed_name:
            r = results.get(c.id) or compute(c.computed_name)
            lines.append(f"- **Computed in this page** (`{c.computed_name}`): {_md_escape(r.text)}; "
                         f"{_md_escape(r.how)}")
        else:
            lines.append(f"- **Source:** {_md_escape(d['source'])}")
        if d.get("note"):
            lines.append(f"- **Note:** {_md_escape(d['note'])}")
        if c.reason:
            lines.append(f"- **Why not checkable:** {_md_escape(c.reason)}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
