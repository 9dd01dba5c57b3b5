"""The memory calculator's answers (issue 32): the GPU list a reader can scan, a field for
one's own memory, the fitting cards in one short line, no speed without a fit, and the
typical range beside the bound (gpulab.estimate.answers and published_bounds underneath)."""

from __future__ import annotations

import re
import statistics

import pytest

from gpulab import calculators, specs
from gpulab.core.errors import GpulabConfigError
from gpulab.estimate import answers, calculator, perf, published_bounds
from gpulab.reference import models
from tests.js import samples

MEMORY = samples.MEMORY_DEFAULTS  # the memory calculator as the page opens
MIB = 2**20


def outputs(**changes: str) -> dict:
    got = calculator.page_outputs("memory", MEMORY | changes)
    assert got["error"] == "", got["error"]
    return got["outputs"]


def shares() -> list[float]:
    return sorted(
        c.ratio
        for c in published_bounds.compare_all()
        if c.kind == "decode" and c.ratio is not None
    )


# --------------------------------------------------------------------------- the GPU list


def test_the_gpu_list_is_grouped_by_vendor_and_sorted_by_memory():
    page = calculators.memory_calculator_html()
    select = re.search(r'<select data-in="gpu"[^>]*>(.*?)</select>', page).group(1)
    groups = re.findall(r'<optgroup label="([^"]+)">(.*?)</optgroup>', select)
    assert [vendor for vendor, _ in groups] == sorted(
        {g.vendor for g in specs.load_gpus().values()}
    )
    table = specs.load_gpus()
    seen = []
    for vendor, body in groups:
        options = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', body)
        names = [value for value, _ in options]
        assert all(table[n].vendor == vendor for n in names)
        assert [table[n].memory_gb for n in names] == sorted(table[n].memory_gb for n in names)
        # each option shows its memory, so a reader picks a card by its size
        assert all(text == f"{value} ({table[value].memory_gb:g} GB)" for value, text in options)
        seen += names
    assert sorted(seen) == sorted(table) and '<option value="RTX 4090" selected>' in select


# --------------------------------------------------------------------------- your own memory


def test_your_own_memory_is_judged_as_a_card_of_that_size():
    out = outputs(memory_gb="8")
    usable = int((8e9 - 512 * MIB) / 1.05)  # less a 0.5 GiB context, over 1.05 for the slack
    total = out["total"]["value"]
    assert out["fits_own"] == {
        "value": "yes" if total <= usable else "no",
        "text": f"{'yes' if total <= usable else 'no'} "
        f"({calculator.display_number(usable / 1e9)}\u00a0GB for tensors)",
    }
    assert outputs(memory_gb="80")["fits_own"]["value"] == "yes"
    assert outputs(model="Llama-3-70B", memory_gb="24")["fits_own"]["value"] == "no"


def test_the_own_memory_field_may_be_empty_or_left_out():
    assert outputs(memory_gb="")["fits_own"]["value"] == ""
    assert outputs()["fits_own"] == outputs(memory_gb="  ")["fits_own"]  # the field left out


@pytest.mark.parametrize("text", ["0", "-8", "abc", "1e30"])
def test_a_bad_own_memory_is_named_as_the_page_labels_it(text):
    got = calculator.page_outputs("memory", MEMORY | {"memory_gb": text})
    assert got["field"] == "memory_gb"
    assert got["error"].startswith(calculator.LABELS["memory"]["memory_gb"]), got["error"]


def test_the_snippet_has_the_field_empty_and_a_default_can_fill_it():
    page = calculators.memory_calculator_html()
    assert 'data-in="memory_gb" value="" min="0" placeholder="e.g. 8" disabled' in page
    assert 'data-in="memory_gb" value="12" ' in calculators.memory_calculator_html(memory_gb=12)
    with pytest.raises(GpulabConfigError, match="memory_gb"):
        calculators.memory_calculator_html(memory_gb=-1)


# --------------------------------------------------------------------------- fits on one


def test_fits_on_one_names_the_five_smallest_then_counts_the_rest():
    out = outputs()
    every = out["fits_on"]["value"].split("; ")
    by_size = sorted(every, key=lambda n: (specs.get_gpu(n).model_memory_bytes, n))
    assert out["fits_on"]["text"] == f"{', '.join(by_size[:5])} and {len(every) - 5} more"
    few = outputs(model="Llama-3-70B", weights="bf16")["fits_on"]
    assert " more" not in few["text"] and few["text"].split(", ") == sorted(
        few["value"].split("; "), key=lambda n: (specs.get_gpu(n).model_memory_bytes, n)
    )
    assert calculator.listed(["a", "b"], 5) == "a, b"
    assert calculator.listed(list("abcdefg"), 5) == "a, b, c, d, e and 2 more"


# --------------------------------------------------------------------------- speeds


@pytest.mark.parametrize(
    "change", [{"model": "Llama-3-70B", "users": "10"}, {"model": "Llama-3-70B", "weights": "bf16"}]
)
def test_no_speed_is_shown_for_a_model_that_does_not_fit(change):
    """70B for 10 users on a 24 GB card: 'does not fit: no speed', not a number."""
    out = outputs(**change)
    assert out["fits"]["value"] == "no"
    for key in ("tps_total", "tps_user", "tps_typical"):
        assert out[key]["value"] is None and out[key]["text"] == answers.NO_SPEED
    assert out["tps_typical"]["attrs"] == {"data-low": "", "data-high": ""}


def test_the_typical_range_sits_beside_the_bound():
    """Qwen2.5-7B Q4_K_M on an RTX 4090: the bound x the published runs' lowest, median and
    highest share of their bound."""
    out = outputs(model="Qwen2.5-7B", weights="q4_k_m")
    spec = models.get("Qwen2.5-7B")
    bound = perf.decode_tokens_per_s(spec, "q4_k_m", "bf16", 1, 8192, bandwidth_gbs=1008)
    assert out["tps_user"]["value"] == pytest.approx(bound, rel=1e-12)
    s = shares()
    typical = out["tps_typical"]
    assert typical["value"] == pytest.approx(bound * statistics.median(s), rel=1e-12)
    assert float(typical["attrs"]["data-low"]) == pytest.approx(bound * s[0], rel=1e-12)
    assert float(typical["attrs"]["data-high"]) == pytest.approx(bound * s[-1], rel=1e-12)
    d = calculator.display_number
    assert (
        typical["text"]
        == f"{d(bound * s[0])} to {d(bound * s[-1])} (median {d(bound * statistics.median(s))})"
    )


def test_several_users_get_no_typical_range():
    out = outputs(users="4")
    assert out["tps_total"]["value"] is not None and out["tps_typical"]["value"] is None
    assert "one sequence" in out["tps_typical"]["text"]


def test_the_page_says_where_the_typical_range_comes_from():
    page = calculators.memory_calculator_html()
    s = shares()
    assert f"that {len(s)} published llama.cpp runs on" in page
    assert f"({s[0]:.0%}, {statistics.median(s):.0%}, {s[-1]:.0%})" in page
    assert "(if it fits)" not in page and "A model that does not fit gets no speed." in page


def test_one_share_rule_for_the_command_line_and_the_page():
    share = published_bounds.decode_share()
    s = shares()
    assert (share.low, share.median, share.high) == (s[0], statistics.median(s), s[-1])
    assert share.runs == len(s)
    assert published_bounds.typical_decode(100.0) == pytest.approx(
        (100 * s[0], 100 * statistics.median(s), 100 * s[-1])
    )
    with pytest.raises(GpulabConfigError, match="comparisons"):
        published_bounds.decode_share([])


# --------------------------------------------------------------------------- the answers


def test_fit_takes_a_gpu_or_a_memory_size_not_both():
    spec = models.get("Llama-3.2-1B")
    with pytest.raises(GpulabConfigError) as info:
        answers.fit(spec)
    assert info.value.field == "gpu" and "neither" in str(info.value)
    with pytest.raises(GpulabConfigError, match="both"):
        answers.fit(spec, gpu="RTX 4060", memory_bytes=8e9)
    tiny = answers.fit(spec, memory_bytes=600 * MIB)  # 0.5 GiB of it is the CUDA context
    assert tiny.capacity_bytes == int(88 * MIB / 1.05) and not tiny.fits
    assert tiny.largest_context == 0 and tiny.largest_users == 0


def test_a_context_beyond_the_model_is_flagged():
    a = answers.fit(models.get("Llama-2-7B"), gpu="H100 SXM", context=8192)
    assert a.max_position_embeddings == 4096 and a.context_beyond_model
    assert a.largest_context == 4096  # the search stops at what the model is configured for
