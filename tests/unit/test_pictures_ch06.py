"""Chapter 6's picture: the scenarios' memory stacks, drawn without arguments, checked by hand."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpulab.estimate import choose  # noqa: E402
from gpulab.reference import specs  # noqa: E402
from gpulab.ui import pictures_ch06  # noqa: E402

# Qwen2.5-7B's config.json: 28 layers, 4 key/value heads of 128 values each
QWEN7_KV_PER_TOKEN = 2 * 28 * 4 * 128 * 2  # keys and values, bf16


def test_the_page_has_one_picture_and_it_draws_titled_with_units_and_legends():
    assert set(pictures_ch06.PICTURES) == {"ch06-scenario-memory"}
    fig = pictures_ch06.PICTURES["ch06-scenario-memory"]()
    try:
        assert fig._suptitle is not None and fig._suptitle.get_text()
        assert len(fig.axes) == len(pictures_ch06.SCENARIOS) == 4
        for ax in fig.axes:
            assert ax.get_title() and "(GB)" in ax.get_xlabel()
            assert len(ax.get_legend().get_texts()) >= 2  # the cards the guide names
        assert len(fig.legends[0].get_texts()) >= 5  # the parts
    finally:
        plt.close(fig)


def test_the_kv_cache_is_the_formula_by_hand():
    stacks = pictures_ch06.scenario_stacks()
    personal, five, thirty, _ = (parts for parts, _ in stacks.values())
    assert personal["KV cache"] == pytest.approx(QWEN7_KV_PER_TOKEN * 8192 / 1e9)
    assert five["KV cache"] == pytest.approx(5 * QWEN7_KV_PER_TOKEN * 8192 / 1e9)
    assert thirty["KV cache"] == pytest.approx(30 * QWEN7_KV_PER_TOKEN * 8192 / 1e9)
    assert five["weights"] == thirty["weights"]  # the users share one copy of the weights


@pytest.mark.parametrize("label", list(pictures_ch06.SCENARIOS))
def test_a_stack_crosses_a_card_line_exactly_when_the_workload_does_not_fit(label):
    workload, cards = pictures_ch06.SCENARIOS[label]
    parts, capacities = pictures_ch06.scenario_stacks()[label]
    stack = sum(parts.values())
    for card in cards:
        assert capacities[card] == pytest.approx(specs.get_gpu(card).memory_bytes / 1e9)
        fits = choose.evaluate(workload, card).fits
        assert (stack <= capacities[card] * (1 + 1e-12)) == fits, (card, stack, capacities[card])


def test_the_fine_tune_shows_the_steps_peak_not_only_its_parts():
    *_, (parts, _) = pictures_ch06.scenario_stacks().values()
    workload, cards = pictures_ch06.SCENARIOS[list(pictures_ch06.SCENARIOS)[-1]]
    peak = choose.evaluate(workload, cards[0]).memory_needed_bytes / 1e9
    tensors = sum(v for k, v in parts.items() if k != "CUDA context + allocator reserve")
    assert tensors == pytest.approx(peak)
    assert parts["step transients"] > 0 and parts["KV cache"] == 0
