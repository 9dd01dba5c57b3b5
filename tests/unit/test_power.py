"""Tests for gpulab.power: PSU sizing with sustained and transient (excursion) loads."""

from __future__ import annotations

import pytest

from gpulab.core.errors import GpulabConfigError
from gpulab.estimate.power import (
    COMMON_PSU_W,
    Build,
    build_for_gpu,
    check_psu,
    psu_excursion_factor,
    size_psu,
)

# The seed article's build: an RTX 4090 (450 W) with an i5-13600KF. Intel gives the 13600K
# (the KF is the same chip without graphics) 125 W base and 181 W maximum turbo power
# ("Processor Base Power is 125W and its Maximum Turbo Power is 181W", The FPS Review, 2022-10-24).
SEED = build_for_gpu("RTX 4090", cpu_power_w=181)


def test_seed_story_650_w_fails_and_1000_w_holds():
    # "RTX 4090 peak 450 W: my 650 W PSU went black; a 1000 W gold PSU was stable."
    assert SEED.gpu_power_w == 450
    bad = check_psu(SEED, 650)
    assert not bad.ok and not bad.sustained_ok and not bad.peak_ok
    # sustained 450 + 181 + 150 = 781 W > 650 W; spike 3 x 450 + 181 + 150 = 1681 W > 2 x 650
    assert bad.sustained_w == 781 and bad.peak_w == 1681 and bad.peak_capacity_w == 1300
    assert check_psu(SEED, 1000).ok
    sizing = size_psu(SEED)
    assert 650 < sizing.recommended_w <= 1000
    assert sizing.recommended_w == 850  # NVIDIA's recommendation for the RTX 4090 is 850 W


def test_intels_worked_example_is_750_w():
    # Intel: a 300 W GPU, a 300 W CPU and 150 W for the rest run on a 750 W ATX 3.0 PSU.
    build = Build(gpu_power_w=300, cpu_power_w=300, rest_w=150)
    assert size_psu(build).recommended_w == 750
    # Without an excursion rating only the rating is sure: 3 x 300 + 450 = 1350 W needed.
    legacy = size_psu(Build(gpu_power_w=300, cpu_power_w=300, psu_standard="atx2"))
    assert legacy.min_for_peak_w == 1350 and legacy.recommended_w == 1500


def test_excursion_factor_follows_the_atx3_table():
    assert psu_excursion_factor(450) == 1.5
    assert psu_excursion_factor(451) == 2.0
    assert psu_excursion_factor(1000, "atx2") == 1.0


def test_a_small_build_uses_the_150_percent_row():
    # 75 W card: sustained 75 + 65 + 150 = 290 W; spike 225 + 65 + 150 = 440 W <= 1.5 x 450 W
    small = Build(gpu_power_w=75, cpu_power_w=65)
    assert size_psu(small).recommended_w == 450
    assert size_psu(small).min_for_peak_w == pytest.approx(440 / 1.5)


def test_headroom_enlarges_the_sustained_need():
    build = Build(gpu_power_w=450, cpu_power_w=181, headroom=0.2)
    assert check_psu(build, 850).sustained_w == pytest.approx(781 * 1.2)
    assert size_psu(build).recommended_w == 1000


def test_more_than_the_largest_common_psu_gives_none_and_says_why():
    sizing = size_psu(build_for_gpu("RTX 5090", count=4, cpu_power_w=350))
    assert sizing.recommended_w is None
    assert str(max(COMMON_PSU_W)) in sizing.reasons[-1]


def test_reasons_show_both_checks():
    text = "\n".join(check_psu(SEED, 650).reasons)
    assert "781 W > 650 W" in text and "1681 W > 2 x 650 W" in text


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gpu_power_w": 0}, "gpu_power_w="),
        ({"gpu_count": 0}, "gpu_count="),
        ({"cpu_power_w": -5}, "cpu_power_w="),
        ({"rest_w": float("nan")}, "rest_w="),
        ({"gpu_transient_factor": 0.5}, "gpu_transient_factor="),
        ({"psu_standard": "atx4"}, "psu_standard="),
        ({"headroom": 1.5}, "headroom="),
    ],
)
def test_bad_builds_name_the_field(kwargs, field):
    with pytest.raises(GpulabConfigError, match=field):
        Build(**({"gpu_power_w": 450} | kwargs))


def test_bad_gpu_and_psu_inputs_name_the_field():
    with pytest.raises(GpulabConfigError, match="gpu='GTX 9090'"):
        build_for_gpu("GTX 9090")
    with pytest.raises(GpulabConfigError, match="board power"):
        build_for_gpu("Apple M3 Ultra")
    with pytest.raises(GpulabConfigError, match="psu_w="):
        check_psu(SEED, 0)
    with pytest.raises(GpulabConfigError, match="standard="):
        psu_excursion_factor(850, "atx9")
    with pytest.raises(GpulabConfigError, match="sizes="):
        size_psu(SEED, sizes=())
