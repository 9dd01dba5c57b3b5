"""gpulab.cost: the articles' worked examples, the break-even arithmetic, and bad input."""

from __future__ import annotations

import math

import pytest

from gpulab import cost, specs
from gpulab.core.errors import GpulabConfigError

# The GPU tutorial's example (seed 000, FAQ "云端GPU和本地GPU哪个更好"): electricity at
# 0.6 CNY/kWh, an RTX 4090 "at 350 W full load", 10 hours a day.
SEED_BOX = cost.LocalSetup(
    hardware_price=15000, power_load_w=350, electricity_per_kwh=0.6, hours_per_day=10
)


def test_seed_electricity_example_is_right():
    """'about 2.1 CNY a day, 767 a year': 0.35 kW x 10 h x 0.6 = 2.1; x 365 = 766.5."""
    assert cost.energy_kwh_per_day(SEED_BOX) == pytest.approx(3.5)
    assert cost.electricity_per_day(SEED_BOX) == pytest.approx(2.1)
    assert cost.electricity_per_year(SEED_BOX) == pytest.approx(766.5)
    assert round(cost.electricity_per_year(SEED_BOX)) == 766  # the article rounds up to 767


def test_seed_power_figure_is_below_the_4090s_board_power():
    """The article's 350 W is not the 4090's 450 W board power (its own build story says 450 W)."""
    board = specs.get_gpu("RTX 4090").board_power_w
    assert board == 450
    box = cost.LocalSetup(15000, board, 0.6, 10)
    assert cost.electricity_per_day(box) == pytest.approx(2.7)
    assert cost.electricity_per_year(box) == pytest.approx(985.5)


def test_seed_cloud_example_holds_for_ten_hours_a_day():
    """'A100 at 12 CNY/h costs 43,800 a year' is 12 x 10 h x 365: the same 10 hours a day."""
    a100 = cost.CloudRate(12)
    assert cost.cloud_monthly_cost(a100, 10) * 12 == pytest.approx(43800)
    assert cost.cloud_monthly_cost(a100, 24) * 12 == pytest.approx(105120)


def test_break_even_of_the_seed_build():
    """The 15,000 CNY build pays for itself in about 4.2 months against an A100 at 12 CNY/h,
    about 19 months against renting the same RTX 4090 at 2.8 CNY/h (seed 000, AutoDL prices)."""
    a100 = cost.break_even_months(SEED_BOX, cost.CloudRate(12))
    rtx = cost.break_even_months(SEED_BOX, cost.CloudRate(2.8))
    assert a100 == pytest.approx(15000 / ((12 * 10 - 2.1) * 365 / 12))
    assert a100 == pytest.approx(4.18, abs=0.01)
    assert rtx == pytest.approx(15000 / ((2.8 * 10 - 2.1) * 365 / 12))
    assert rtx == pytest.approx(19.04, abs=0.01)


def test_two_hours_a_day_does_not_favour_buying_a_4090():
    """'More than 2 hours a day: buy' takes about 8 years to pay off against the rented 4090."""
    box = cost.LocalSetup(15000, 350, 0.6, 2)
    months = cost.break_even_months(box, cost.CloudRate(2.8))
    assert months == pytest.approx(15000 / ((2.8 * 2 - 0.35 * 2 * 0.6) * 365 / 12))
    assert months / 12 > 7


def test_break_even_is_none_when_renting_stays_cheaper():
    """A cloud bill below the electricity bill never pays the purchase back."""
    box = cost.LocalSetup(1000, 1000, 1.0, 10)  # 10 kWh a day at 1/kWh: 10 a day
    assert cost.break_even_months(box, cost.CloudRate(0.5)) is None
    assert cost.break_even_months(box, cost.CloudRate(1.0)) is None  # equal: never
    assert cost.break_even_months(box, cost.CloudRate(1.01)) is not None


def test_break_even_is_zero_for_owned_hardware():
    box = cost.LocalSetup(0, 300, 0.6, 8)
    assert cost.break_even_months(box, cost.CloudRate(2.0)) == 0


def test_utilisation_and_idle_power():
    """Half the on-time at 400 W, half idle at 50 W: (400 x 4 + 50 x 4) / 1000 kWh."""
    box = cost.LocalSetup(0, 400, 1.0, 8, power_idle_w=50, utilisation=0.5)
    assert cost.busy_hours_per_day(box) == 4
    assert cost.energy_kwh_per_day(box) == pytest.approx(1.8)
    # renting defaults to the busy hours (the same work); it can be told otherwise
    rate = cost.CloudRate(1.0)
    assert cost.break_even_months(box, rate) == 0
    box2 = cost.LocalSetup(100, 400, 1.0, 8, power_idle_w=50, utilisation=0.5)
    assert cost.break_even_months(box2, rate) == pytest.approx(100 / ((4 - 1.8) * 365 / 12))
    assert cost.break_even_months(box2, rate, cloud_hours_per_day=8) == pytest.approx(
        100 / ((8 - 1.8) * 365 / 12)
    )


def test_monthly_cost_spreads_the_purchase_over_the_years():
    box = cost.LocalSetup(3600, 350, 0.6, 10, years=3)
    assert cost.local_monthly_cost(box) == pytest.approx(100 + 2.1 * 365 / 12)
    # per busy hour over the whole life: (3600 + 3 x 766.5) / (10 x 365 x 3)
    assert cost.local_cost_per_busy_hour(box) == pytest.approx((3600 + 3 * 766.5) / 10950)


def test_monthly_fee_counts_once_a_month():
    colab_pro = cost.CloudRate(0, "USD", monthly_fee=9.99)
    assert cost.cloud_monthly_cost(colab_pro, 5) == pytest.approx(9.99)
    assert cost.cloud_monthly_cost(cost.CloudRate(1, "USD", 10), 2) == pytest.approx(
        10 + 2 * 365 / 12
    )


def test_cost_over_time_crosses_at_the_break_even():
    curve = cost.cost_over_time(SEED_BOX, cost.CloudRate(2.8), 36)
    assert curve.months == list(range(37))
    assert curve.local[0] == 15000 and curve.cloud[0] == 0
    before = math.floor(curve.break_even)
    assert curve.local[before] > curve.cloud[before]
    assert curve.local[before + 1] < curve.cloud[before + 1]
    assert curve.currency == "CNY"


def test_cost_per_million_tokens():
    """2.8 per hour at 100 tokens/s: 360,000 tokens an hour, 7.78 per million."""
    assert cost.cost_per_million_tokens(2.8, 100) == pytest.approx(2.8 / 0.36)
    assert cost.cost_per_million_tokens(0, 100) == 0


def test_convert_needs_an_explicit_rate():
    assert cost.convert(10, "USD", "CNY", cny_per_usd=7.0) == pytest.approx(70)
    assert cost.convert(70, "CNY", "USD", cny_per_usd=7.0) == pytest.approx(10)
    assert cost.convert(5, "CNY", "CNY", cny_per_usd=7.0) == 5
    with pytest.raises(GpulabConfigError, match="cny_per_usd"):
        cost.convert(10, "USD", "CNY", cny_per_usd=0)


def test_mixed_currencies_are_refused():
    with pytest.raises(GpulabConfigError, match="currency.*CNY.*USD"):
        cost.break_even_months(SEED_BOX, cost.CloudRate(1.0, "USD"))
    with pytest.raises(GpulabConfigError, match="currency"):
        cost.cost_over_time(SEED_BOX, cost.CloudRate(1.0, "USD"), 12)


@pytest.mark.parametrize(
    "field, kwargs",
    [
        ("hardware_price", {"hardware_price": -1}),
        ("power_load_w", {"power_load_w": 0}),
        ("electricity_per_kwh", {"electricity_per_kwh": -0.6}),
        ("hours_per_day", {"hours_per_day": 0}),
        ("hours_per_day", {"hours_per_day": 25}),
        ("power_idle_w", {"power_idle_w": -5}),
        ("power_idle_w", {"power_idle_w": 500}),  # more than the load
        ("utilisation", {"utilisation": 0}),
        ("utilisation", {"utilisation": 1.5}),
        ("years", {"years": 0}),
        ("currency", {"currency": "EUR"}),
        ("hardware_price", {"hardware_price": float("nan")}),
        ("hours_per_day", {"hours_per_day": "10"}),
        ("power_load_w", {"power_load_w": True}),
    ],
)
def test_local_setup_rejects_bad_input_naming_the_field(field, kwargs):
    args = {
        "hardware_price": 15000,
        "power_load_w": 350,
        "electricity_per_kwh": 0.6,
        "hours_per_day": 10,
    } | kwargs
    with pytest.raises(GpulabConfigError, match=field):
        cost.LocalSetup(**args)


@pytest.mark.parametrize(
    "field, kwargs",
    [
        ("price_per_hour", {"price_per_hour": -2.8}),
        ("monthly_fee", {"monthly_fee": -1}),
        ("currency", {"currency": "cny"}),
    ],
)
def test_cloud_rate_rejects_bad_input_naming_the_field(field, kwargs):
    with pytest.raises(GpulabConfigError, match=field):
        cost.CloudRate(**({"price_per_hour": 2.8} | kwargs))


def test_function_arguments_are_checked():
    rate = cost.CloudRate(2.8)
    with pytest.raises(GpulabConfigError, match="hours_per_day"):
        cost.cloud_monthly_cost(rate, 0)
    with pytest.raises(GpulabConfigError, match="hours_per_day"):
        cost.break_even_months(SEED_BOX, rate, cloud_hours_per_day=30)
    with pytest.raises(GpulabConfigError, match="months"):
        cost.cost_over_time(SEED_BOX, rate, 0)
    with pytest.raises(GpulabConfigError, match="tokens_per_s"):
        cost.cost_per_million_tokens(2.8, 0)
    with pytest.raises(GpulabConfigError, match="price_per_hour"):
        cost.cost_per_million_tokens(-1, 10)


def test_cloud_cost_per_hour_shares_the_fee():
    """A 9.99 fee over 2 h a day for a month: 9.99 / (2 x 365 / 12) per hour on top of the price."""
    rate = cost.CloudRate(1.0, "USD", monthly_fee=9.99)
    assert cost.cloud_cost_per_hour(rate, 2) == pytest.approx(1 + 9.99 / (2 * 365 / 12))
    assert cost.cloud_cost_per_hour(cost.CloudRate(2.8), 10) == pytest.approx(2.8)
