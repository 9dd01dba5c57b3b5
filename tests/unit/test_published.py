"""Published measurements beside the course's bounds (issue 14, section 6).

The expected bounds are derived by hand here from Llama 2 7B's published shapes and the spec
sheet's figures, not from the functions under test.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from types import MappingProxyType

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import published_bounds as pb
from gpulab.reference import published
from gpulab.reference.specs import get_gpu

ROWS = published.load()
BY_ID = {m.id: m for m in ROWS}
COMPARISONS = {c.measurement.id: c for c in pb.compare_all()}

# Llama 2 7B (meta-llama/Llama-2-7b-hf config.json): vocabulary 32000, width 4096, 32 layers,
# FFN 11008, untied input embedding and output head, two RMSNorms per layer and a final one.
VOCAB, D, LAYERS, FFN = 32000, 4096, 32, 11008
EMBEDDING = VOCAB * D
NORMS = (2 * LAYERS + 1) * D
PARAMS = 2 * EMBEDDING + LAYERS * (4 * D * D + 3 * D * FFN) + NORMS  # 6,738,415,616
Q4_0 = 18 / 32  # bytes per weight: a block of 32 4-bit values and one fp16 scale
KV_PER_TOKEN = 2 * LAYERS * D * 2  # keys and values, fp16


def _row(mid: str) -> dict:
    """A packaged row as a plain dict, to edit into a bad one."""
    return copy.deepcopy(dataclasses.asdict(BY_ID[mid]))


def parse(rows: list) -> tuple:
    """The loader's checks on rows given as dicts (through its JSON entry point)."""
    return published.loads(json.dumps(rows))


# --------------------------------------------------------------------------- the data


def test_hand_parameter_count_is_llama_2_7b():
    assert PARAMS == 6_738_415_616  # llama.cpp's "6.74 B" in the sources' logs


def test_every_row_has_a_source_a_date_or_why_not_and_a_tool_version():
    assert len(ROWS) >= 30
    assert len({m.id for m in ROWS}) == len(ROWS)
    for m in ROWS:
        assert m.source_url.startswith("https://github.com/"), m.id
        assert m.where and m.tool and m.tool_version, m.id
        assert m.date or m.date_note, m.id
    with pytest.raises(dataclasses.FrozenInstanceError):
        ROWS[0].figure = 1.0


def test_at_least_ten_devices_apple_geforce_and_datacentre_have_a_decode_ratio():
    decoded = {c.measurement.gpu for c in COMPARISONS.values() if c.kind == "decode" and c.ratio}
    assert len(decoded) >= 10, sorted(decoded)
    vendors = {get_gpu(name).vendor for name in decoded}
    assert vendors == {"NVIDIA", "Apple"}
    assert {"RTX 4090", "RTX 3090", "Apple M1 Max", "Apple M2 Ultra"} <= decoded
    assert {"A100 80GB PCIe", "H100 PCIe"} <= decoded


def test_the_matmul_rows_are_ml_engineerings_table():
    m = BY_ID["mamf-h100-sxm-bf16"]
    assert (m.figure, m.unit, m.dtype, m.gpu) == (794.5, "TFLOP/s", "bf16", "H100 SXM")
    assert "stas00/ml-engineering" in m.source_url


# --------------------------------------------------------------------------- no bound is beaten


def test_no_published_measurement_beats_its_bound():
    comparisons = list(COMPARISONS.values())
    assert pb.beaten(comparisons) == []
    for c in comparisons:
        assert (c.ratio is None) == (c.excluded is not None), c.measurement.id
        assert c.ratio is None or 0 < c.ratio <= 1, (c.measurement.id, c.ratio, c.basis)


def test_beaten_finds_a_figure_above_its_bound():
    fast = _row("xd-rtx-4090-24gb-tg") | {"id": "too-fast", "figure": 1000.0}
    (c,) = pb.compare_all(parse([fast]))
    assert pb.beaten() == []
    assert c.ratio > 1 and pb.beaten([c]) == [c]


# --------------------------------------------------------------------------- bounds by hand


def test_rtx_4090_decode_bound_by_hand():
    # 1008 GB/s over the Q4_0 weights and 256 tokens of fp16 KV cache. The embedding is read
    # in full or (issue 14, section 5) one row per token: the bound lies between the two.
    kv = KV_PER_TOKEN * 256
    all_rows = 1008e9 / (PARAMS * Q4_0 + kv)
    one_row = 1008e9 / ((PARAMS - EMBEDDING + D) * Q4_0 + kv)
    c = COMPARISONS["xd-rtx-4090-24gb-tg"]
    assert all_rows * (1 - 1e-6) <= c.bound <= one_row * (1 + 1e-6)
    assert c.ratio == pytest.approx(149.37 / c.bound)


def test_m1_max_decode_counts_no_kv_cache_when_the_context_is_not_known():
    c = COMPARISONS["xd-m1-max-24-core-gpu-32gb-tg"]
    assert BY_ID[c.measurement.id].min_context_tokens == 1
    assert 400e9 / (PARAMS * Q4_0 + KV_PER_TOKEN) * (1 - 1e-6) <= c.bound


def test_rtx_4090_prefill_bound_uses_the_fp16_accumulate_peak():
    # 2 FLOPs per multiplied weight (all but the embedding and the norms) plus attention:
    # 2 x 2 x 247 positions x (4096 + 4096) per layer, for the 494-token prompt's mean context.
    per_token = 2 * (PARAMS - EMBEDDING - NORMS) + LAYERS * 2 * 247 * (D + D)
    c = COMPARISONS["xd-rtx-4090-24gb-pp"]
    assert c.bound == pytest.approx(330.3e12 / per_token, rel=1e-9)
    # The FP32-accumulate figure (the table's fp16, 165.2) is not what cuBLAS ran at.
    assert c.bound > 165.2e12 / per_token


def test_matmul_percent_of_peak_by_hand():
    assert COMPARISONS["mamf-h100-sxm-bf16"].ratio == pytest.approx(794.5 / 989.4)
    assert COMPARISONS["mamf-mi300x-bf16"].ratio == pytest.approx(668.4 / 1307.4)
    assert COMPARISONS["mamf-h100-sxm-fp8"].ratio == pytest.approx(1402.6 / 1978.9)


# --------------------------------------------------------------------------- exclusions


def test_apple_prefill_is_excluded_with_the_reason():
    c = COMPARISONS["xd-m2-ultra-76-core-gpu-192gb-pp"]
    assert c.bound is None and "Apple publishes no GPU FLOP/s" in c.excluded


def test_a_device_without_a_spec_row_is_excluded():
    c = COMPARISONS["pr4812-rtx3090ti-tg128"]
    assert c.ratio is None and "no row in the course's GPU spec table" in c.excluded


def test_the_peak_follows_the_kernel_and_the_table():
    rtx4090 = get_gpu("RTX 4090")
    assert pb.prefill_peak("cublas-fp16", rtx4090)[0] == 330.3e12
    assert pb.prefill_peak("mmq-int8", "RTX 4090")[0] == 660.6e12
    assert pb.prefill_peak("unknown", rtx4090)[0] is None
    assert "Apple" in pb.prefill_peak("metal", "Apple M3 Max")[1]
    with pytest.raises(GpulabConfigError, match="prefill kernel path") as info:
        pb.prefill_peak("cuda", rtx4090)
    assert info.value.field == "kernel"
    # A GeForce card without its FP16-accumulate figure: its fp16 is the half-rate one.
    no_acc = dataclasses.replace(rtx4090, peak_tflops=MappingProxyType({"fp16": 165.2}))
    peak, why = pb.prefill_peak("cublas-fp16", no_acc)
    assert peak is None and "FP16-accumulate" in why
    # A workstation card runs either accumulator at full rate: its fp16 figure is the peak.
    assert pb.prefill_peak("cublas-fp16", "RTX A6000")[0] == 154.8e12
    assert pb.prefill_peak("cublas-fp16", "RTX 6000 Ada Generation")[0] is None


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        ({"test": "tg256"}, "test", "is not one of"),
        ({"unit": "TFLOP/s"}, "unit", "does not fit test"),
        ({"figure": -1.0}, "figure", "positive finite"),
        ({"figure": float("nan")}, "figure", "positive finite"),
        ({"figure": True}, "figure", "positive finite"),
        ({"source_url": "github.com/x"}, "source_url", "https://"),
        ({"date": "Dec 2023"}, "date", "YYYY"),
        ({"date": None, "date_note": None}, "date", "without a date_note"),
        ({"gpu": "RTX 9090"}, "gpu", "not a row of gpu_specs.json"),
        ({"model_spec": "Llama-9-7B"}, "model_spec", "not a gpulab.models name"),
        ({"quantization": "q3_x"}, "quantization", "not a weight format"),
        ({"min_context_tokens": None}, "min_context_tokens", ">= 1"),
        ({"prompt_tokens": -3}, "prompt_tokens", "whole number"),
        ({"device": " "}, "device", "non-empty text"),
        ({"kernel": "cuda"}, "kernel", "not one of"),
        ({"colour": "red"}, "colour", "is not a field"),
    ],
)
def test_a_bad_row_names_the_row_and_the_field(edit, field, words):
    bad = _row("xd-rtx-4090-24gb-tg") | edit
    with pytest.raises(GpulabConfigError, match=words) as info:
        parse([bad])
    assert info.value.field == field
    assert "row 'xd-rtx-4090-24gb-tg'" in str(info.value)


def test_a_missing_field_a_duplicate_id_and_row_kinds_are_named():
    row = _row("xd-rtx-4090-24gb-tg")
    del row["tool_version"]
    with pytest.raises(GpulabConfigError, match="tool_version is missing") as info:
        parse([row])
    assert info.value.field == "tool_version"
    good = _row("xd-rtx-4090-24gb-tg")
    with pytest.raises(GpulabConfigError, match="id is used by an earlier row"):
        parse([good, copy.deepcopy(good)])
    with pytest.raises(GpulabConfigError, match="kernel is needed") as info:
        parse([_row("xd-rtx-4090-24gb-pp") | {"kernel": None}])
    assert info.value.field == "kernel"
    with pytest.raises(GpulabConfigError, match="a matmul row needs one of") as info:
        parse([_row("mamf-h100-sxm-bf16") | {"dtype": "fp64"}])
    assert info.value.field == "dtype"
    with pytest.raises(GpulabConfigError, match="row '#1': row must be an object") as info:
        parse([good, "not a row"])
    assert info.value.field == "row"
    assert parse([]) == ()
    with pytest.raises(GpulabConfigError, match="text is not JSON") as info:
        published.loads("{")
    assert info.value.field == "text"
    with pytest.raises(GpulabConfigError, match="a list of rows") as info:
        published.loads("12.4")
    assert info.value.field == "text"


def test_rows_by_id():
    assert published.get("mamf-mi300x-bf16").figure == 668.4
    assert pb.compare("mamf-mi300x-bf16") == pb.compare(BY_ID["mamf-mi300x-bf16"])
    with pytest.raises(GpulabConfigError, match="did you mean 'mamf-mi300x-bf16'") as info:
        published.get("mamf-mi300x-bf61")
    assert info.value.field == "row_id"
    with pytest.raises(GpulabConfigError) as info:
        pb.compare("no such row")
    assert info.value.field == "row"
