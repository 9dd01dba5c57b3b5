"""Published memory figures (issue 27): the data as copied, its checks, and vLLM's arithmetic.

The vLLM checks are worked by hand from Llama 3 8B's published shapes (32 layers, 8 KV heads
of 128, bf16), independently of gpulab.memory, then set beside it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB
from gpulab.estimate import finetune, memory
from gpulab.reference import models, published_memory
from gpulab.reference.published_memory import QUANTITIES, SETTINGS
from gpulab.reference.specs import get_gpu

ROWS = published_memory.load()
BY_ID = {m.id: m for m in ROWS}
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # keys and values, every layer, bf16
BLOCK = 16 * KV_PER_TOKEN  # vLLM's default block of 16 tokens on CUDA


def _row(row_id: str) -> dict:
    """A packaged row as a plain dict, to edit into a bad one."""
    m = BY_ID[row_id]
    row = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.name != "settings"}
    row["settings"] = {k: list(v) if isinstance(v, tuple) else v for k, v in m.settings.items()}
    return copy.deepcopy(row)


def parse(rows: list) -> tuple:
    return published_memory.loads(json.dumps(rows))


# --------------------------------------------------------------------------- the data


def test_the_figures_are_the_sources():
    """torchtune 0.6.1's README table (RTX 4090 rows) and the vLLM log as the issue quotes it."""
    figures = {m.id: (m.quantity, m.figure, m.unit) for m in ROWS}
    assert figures == {
        "torchtune-llama3.1-8b-full-rtx4090": ("peak", 18.9, "GiB"),
        "torchtune-llama3.1-8b-lora-rtx4090": ("peak", 16.2, "GiB"),
        "torchtune-llama3.1-8b-qlora-rtx4090": ("peak", 7.4, "GiB"),
        "vllm-12330-llama3-8b-weights": ("weights", 14.96, "GiB"),
        "vllm-12330-llama3-8b-activation-peak": ("activation-peak", 9.37, "GiB"),
        "vllm-12330-llama3-8b-kv-cache": ("kv-cache", 11.12, "GiB"),
        "vllm-12330-llama3-8b-kv-blocks": ("kv-blocks", 5691, "blocks"),
    }
    for m in ROWS:
        assert m.source_url.startswith("https://"), m.id
        assert m.where and m.metric and m.settings_source and (m.date or m.date_note), m.id
    with pytest.raises(dataclasses.FrozenInstanceError):
        ROWS[0].figure = 1.0
    with pytest.raises(TypeError):
        ROWS[0].settings["batch"] = 4


def test_the_training_settings_are_a_finetune_recipe():
    """The data states every field of FinetuneRecipe, and each row's settings make one."""
    fields = [f.name for f in dataclasses.fields(finetune.FinetuneRecipe)]
    assert list(SETTINGS["training"]) == fields
    for m in ROWS:
        if m.kind == "training":
            recipe = finetune.FinetuneRecipe(**m.settings)
            assert (recipe.batch, recipe.seq_len, recipe.compile) == (2, 2048, True), m.id
    lora = BY_ID["torchtune-llama3.1-8b-lora-rtx4090"].settings
    assert lora["lora_targets"] == ("q", "v", "o", "gate", "up", "down")
    assert (lora["lora_rank"], lora["lora_alpha"], lora["lora_output"]) == (8, 16, False)
    full = BY_ID["torchtune-llama3.1-8b-full-rtx4090"].settings
    assert (full["optimizer"], full["optimizer_paged"], full["optimizer_in_backward"]) == (
        "adamw8bit",
        True,
        True,
    )


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("kind", "inference", "is not one of"),
        ("quantity", "kv-cache", "a training row reports peak"),
        ("unit", "GB", "peak is in GiB"),
        ("figure", -1, "positive finite"),
        ("figure", float("nan"), "positive finite"),
        ("source_url", "http://pypi.org", "https://"),
        ("date", "April 2025", "YYYY"),
        ("gpu", "RTX 9090", "gpu_specs.json"),
        ("model_spec", "Llama-9", "gpulab.models"),
        ("where", "", "non-empty text"),
        ("note", 3, "non-empty text or null"),
    ],
)
def test_a_bad_field_is_refused_by_name(field, value, match):
    row = _row("torchtune-llama3.1-8b-lora-rtx4090") | {field: value}
    with pytest.raises(GpulabConfigError, match=match) as err:
        parse([row])
    assert err.value.field == field
    assert "torchtune-llama3.1-8b-lora-rtx4090" in str(err.value)


def test_settings_must_be_the_kinds_own_and_plain():
    row = _row("torchtune-llama3.1-8b-lora-rtx4090")
    row["settings"]["lora_dropout"] = 0.0
    with pytest.raises(GpulabConfigError, match="no setting 'lora_dropout'"):
        parse([row])
    row = _row("vllm-12330-llama3-8b-kv-cache")
    del row["settings"]["block_size"]
    with pytest.raises(GpulabConfigError, match="lacks 'block_size'"):
        parse([row])
    row = _row("vllm-12330-llama3-8b-kv-cache")
    row["settings"]["block_size"] = {"tokens": 16}
    with pytest.raises(GpulabConfigError, match="text, a number") as err:
        parse([row])
    assert err.value.field == "settings.block_size"


def test_rows_blocks_dates_and_ids():
    row = _row("vllm-12330-llama3-8b-kv-blocks") | {"figure": 5691.5}
    with pytest.raises(GpulabConfigError, match="whole number"):
        parse([row])
    row = _row("vllm-12330-llama3-8b-kv-blocks") | {"date": None, "date_note": None}
    with pytest.raises(GpulabConfigError, match="date_note"):
        parse([row])
    same = _row("vllm-12330-llama3-8b-weights")
    with pytest.raises(GpulabConfigError, match="earlier row"):
        parse([same, same])
    with pytest.raises(GpulabConfigError, match="is missing") as err:
        parse([{k: v for k, v in same.items() if k != "metric"}])
    assert err.value.field == "metric"
    with pytest.raises(GpulabConfigError, match="not JSON"):
        published_memory.loads("{")
    with pytest.raises(GpulabConfigError, match="'memory' list"):
        published_memory.loads('{"measurements": []}')
    assert parse([]) == ()


def test_get_suggests_a_near_miss():
    assert published_memory.get("vllm-12330-llama3-8b-weights").figure == 14.96
    with pytest.raises(GpulabConfigError, match="did you mean") as err:
        published_memory.get("vllm-12330-llama3-8b-weight")
    assert err.value.field == "row_id"
    assert set(QUANTITIES) == set(SETTINGS) == {"training", "serving"}


# --------------------------------------------------------------------------- vLLM's arithmetic


def test_vllms_blocks_follow_from_the_kv_bytes_per_token():
    """131,072 bytes a token; 5,691 blocks of 16 tokens are 11.115 GiB, which the log prints as
    11.12, and the cache that rounds to 11.12 GiB holds 5,690 to 5,695 whole blocks."""
    spec = models.get("Llama-3-8B")
    assert KV_PER_TOKEN == 131_072 == memory.kv_cache_bytes(spec, 1, kv_cache="bf16")
    assert memory.kv_cache_bytes(spec, 16, kv_cache="bf16") == BLOCK
    blocks, cache = BY_ID["vllm-12330-llama3-8b-kv-blocks"], BY_ID["vllm-12330-llama3-8b-kv-cache"]
    assert round(blocks.figure * BLOCK / GIB, 2) == cache.figure
    low, high = (cache.figure - 0.005) * GIB, (cache.figure + 0.005) * GIB
    assert low // BLOCK <= blocks.figure <= math.ceil(high / BLOCK) - 1
    assert blocks.settings["block_size"] == 16


def test_vllms_weights_are_the_bf16_parameters():
    spec = models.get("Llama-3-8B")
    logged = BY_ID["vllm-12330-llama3-8b-weights"].figure
    assert round(8_030_261_248 * 2 / GIB, 2) == logged
    assert round(memory.weight_bytes(spec, "bf16") / GIB, 2) == logged


def test_vllms_three_parts_fit_its_default_share_of_the_card():
    """0.9 x the A100's 40,960 MiB less the weights and the activation peak leaves the logged
    KV cache and a remainder (non-torch memory, CUDA's smaller total) under a GiB."""
    row = BY_ID["vllm-12330-llama3-8b-kv-cache"]
    share = row.settings["gpu_memory_utilization"] * get_gpu(row.gpu).memory_bytes
    assert get_gpu(row.gpu).memory_bytes == 40_960 * 2**20
    parts = sum(BY_ID[f"vllm-12330-llama3-8b-{q}"].figure for q in ("weights", "activation-peak"))
    remainder = share / GIB - parts - row.figure
    assert 0 < remainder < 1
