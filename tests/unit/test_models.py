"""The model catalogue: transcribed config.json files, their sources, and published sizes."""

from __future__ import annotations

import json
import warnings
from importlib import resources
from pathlib import Path

import pytest

from gpulab import models
from gpulab.core.errors import GpulabConfigError
from gpulab.reference.modelspec import ModelSpec

CONFIG_DIR = Path(str(resources.files("gpulab"))) / "data" / "model_configs"
REQUIRED = (
    "Llama-3-8B",
    "Llama-3-70B",
    "Llama-3.1-8B",
    "Llama-3.2-1B",
    "Llama-3.2-3B",
    "Qwen2.5-7B",
    "Qwen2.5-72B",
    "Mistral-7B",
    "Mixtral-8x7B",
    "Phi-3-mini",
    "DeepSeek-R1",
)
WITH_PUBLISHED = [name for name, e in models.CATALOGUE.items() if e.published_params]
WITH_ACTIVE = [name for name, e in models.CATALOGUE.items() if e.published_active_params]


def test_catalogue_has_the_required_models():
    assert set(REQUIRED) <= set(models.names())
    assert models.names() == list(models.CATALOGUE)


def test_every_json_file_is_an_entry_with_the_expected_fields():
    files = sorted(p.stem for p in CONFIG_DIR.glob("*.json"))
    assert files == sorted(models.names())
    for path in CONFIG_DIR.glob("*.json"):
        data = json.loads(path.read_text())
        assert {"source", "published_params", "published_params_source", "config"} <= set(data)
        assert isinstance(data["config"], dict) and data["config"].get("model_type")


@pytest.mark.parametrize("name", models.names())
def test_every_entry_names_its_sources(name):
    entry = models.CATALOGUE[name]
    assert entry.source.startswith("https://huggingface.co/")
    assert entry.source.endswith("/config.json")
    assert entry.transcribed_from, "say where the copy of config.json was read"
    if entry.published_params is not None:
        assert "http" in entry.published_params_source
    if entry.published_active_params is not None:
        assert "http" in entry.published_active_params_source
    assert entry.spec.source == entry.source and entry.spec.name == name


@pytest.mark.parametrize("name", WITH_PUBLISHED)
def test_total_within_half_a_percent_of_published(name):
    entry = models.CATALOGUE[name]
    assert entry.spec.n_params == pytest.approx(entry.published_params, rel=0.005)


@pytest.mark.parametrize(
    "name", [n for n in WITH_PUBLISHED if models.CATALOGUE[n].published_params % 10**6]
)
def test_exact_published_counts_match_to_the_parameter(name):
    """Where the figure is exact (a safetensors total), the architecture gives it exactly."""
    entry = models.CATALOGUE[name]
    assert entry.spec.n_params == entry.published_params


def test_llama_3_8b_exact():
    assert models.get("Llama-3-8B").n_params == 8_030_261_248


@pytest.mark.parametrize("name", WITH_ACTIVE)
def test_active_within_two_percent_of_published(name):
    entry = models.CATALOGUE[name]
    assert entry.spec.n_active_params == pytest.approx(entry.published_active_params, rel=0.02)


def test_moe_active_parameters():
    r1 = models.get("DeepSeek-R1")
    assert r1.n_active_params == pytest.approx(37e9, rel=0.02)
    assert r1.n_params == pytest.approx(671e9, rel=0.005)
    assert r1.n_mtp_layers == 1  # in the checkpoint, not in the count
    mixtral = models.get("Mixtral-8x7B")
    assert mixtral.n_active_params == pytest.approx(12.9e9, rel=0.02)
    assert models.get("Llama-3-70B").n_active_params == models.get("Llama-3-70B").n_params


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Llama-3-8B", "gqa"),
        ("Llama-3-70B", "gqa"),
        ("Qwen2.5-7B", "gqa"),
        ("Mistral-7B", "gqa"),
        ("Mixtral-8x7B", "gqa"),
        ("Phi-3-mini", "mha"),
        ("DeepSeek-R1", "mla"),
    ],
)
def test_attention_types(name, kind):
    assert models.get(name).attention_type == kind


def test_kv_elements_per_token():
    assert models.get("Llama-3-70B").kv_elements_per_token() == 2 * 80 * 8 * 128 == 163_840
    r1 = models.get("DeepSeek-R1")
    assert r1.kv_elements_per_token() == 61 * (512 + 64) == 35_136
    assert r1.kv_elements_per_token_expanded() == 61 * 128 * (128 + 64 + 128)


def test_tied_embeddings_where_the_config_ties_them():
    assert models.get("Llama-3.2-1B").tie_embeddings
    assert models.get("Llama-3.2-1B").params_by_component()["lm_head"] == 0
    assert not models.get("Llama-3-8B").tie_embeddings


def test_get_is_case_insensitive_and_lists_names_when_unknown():
    assert models.get("llama-3-8b") == models.get("Llama-3-8B")
    with pytest.raises(GpulabConfigError, match="not in the catalogue; choose one of: .*Llama"):
        models.get("GPT-5")


@pytest.mark.parametrize("name", models.names())
def test_full_size_entry_matches_transformers_on_meta(name):
    """The real config, built full size by transformers on the meta device: the same count.

    ``quantization_config`` (DeepSeek's FP8 storage) is left out: it changes how weights are
    stored, not how many there are, and would make transformers add its scale tensors.
    """
    import torch
    import transformers

    cfg = {
        k: v
        for k, v in models.CATALOGUE[name].config.items()
        if k not in ("quantization_config", "auto_map")
    }
    config = transformers.AutoConfig.for_model(**cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
    counted = sum(p.numel() for p in model.parameters())
    counted += sum(
        b.numel() for key, b in model.named_buffers() if key.endswith("e_score_correction_bias")
    )
    assert type(model).__name__ == cfg["architectures"][0]
    assert counted == models.get(name).n_params


def test_entry_spec_equals_from_hf_config():
    entry = models.CATALOGUE["Qwen2.5-72B"]
    direct = ModelSpec.from_hf_config(entry.config, "Qwen2.5-72B")
    assert direct.n_params == entry.spec.n_params == 72_706_203_648
