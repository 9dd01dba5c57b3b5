"""Local vs cloud cost (chapter 6): electricity, the purchase spread over its years, break-even.

    from gpulab import cost

    box = cost.LocalSetup(hardware_price=15000, power_load_w=450, electricity_per_kwh=0.6,
                          hours_per_day=10, currency="CNY")
    rent = cost.CloudRate(price_per_hour=2.8, currency="CNY")
    cost.electricity_per_day(box)         # 2.7 CNY
    cost.break_even_months(box, rent)     # months of renting that pay for the purchase
    cost.cost_per_million_tokens(2.8, 180)  # CNY per million generated tokens

All money is in one currency per comparison: the module never converts on its own, because an
exchange rate is a market price on a date, not a constant. `convert` takes the rate as an
explicit input. The static-site calculator (`gpulab.calculators`) runs this module itself, in
the reader's browser through Pyodide: there is no second implementation to keep in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import Between, NonNegativeFloat, OneOf, PositiveFloat, checked

__all__ = [
    "CURRENCIES",
    "DAYS_PER_MONTH",
    "DAYS_PER_YEAR",
    "CloudRate",
    "CostCurve",
    "LocalSetup",
    "break_even_months",
    "busy_hours_per_day",
    "cloud_cost_per_hour",
    "cloud_monthly_cost",
    "convert",
    "cost_over_time",
    "cost_per_million_tokens",
    "electricity_per_day",
    "electricity_per_month",
    "electricity_per_year",
    "energy_kwh_per_day",
    "local_cost_per_busy_hour",
    "local_monthly_cost",
]

CURRENCIES = ("CNY", "USD")
# A calendar year, as the articles count it ("a year" of 365 days); a month is a twelfth of it,
# so that twelve months of any monthly figure make exactly one year's.
DAYS_PER_YEAR = 365.0
DAYS_PER_MONTH = DAYS_PER_YEAR / 12


Currency = Annotated[str, OneOf(CURRENCIES, "currency")]
HoursPerDay = Annotated[float, Between(0, 24, low_open=True)]  # more than 0, at most 24
Utilisation = Annotated[float, Between(0, 1, low_open=True)]  # more than 0, at most 1


@checked
@dataclass(frozen=True)
class LocalSetup:
    """A machine you buy and run yourself; every price is in `currency`."""

    hardware_price: (
        NonNegativeFloat  # what the machine costs once: card plus the rest of the system (0: owned)
    )
    power_load_w: PositiveFloat  # power drawn from the wall while it computes, watts (whole system)
    electricity_per_kwh: NonNegativeFloat  # price of one kWh
    hours_per_day: HoursPerDay  # hours a day the machine is switched on, 0 < h <= 24
    power_idle_w: NonNegativeFloat = 0.0  # power while switched on but not computing, watts
    utilisation: Utilisation = 1.0  # share of the switched-on hours spent computing, in (0, 1]
    years: PositiveFloat = 3.0  # years of use the purchase is spread over in the monthly figure
    currency: Currency = "CNY"  # "CNY" or "USD"

    def __post_init__(self) -> None:
        """Idle power cannot exceed load power (the field types check the rest)."""
        if self.power_idle_w > self.power_load_w:
            raise GpulabConfigError(
                f"power_idle_w={self.power_idle_w!r} must not exceed "
                f"power_load_w={self.power_load_w!r}"
            )


@checked
@dataclass(frozen=True)
class CloudRate:
    """A rented GPU: a price per hour it runs, plus any monthly subscription, in `currency`."""

    price_per_hour: NonNegativeFloat  # what one hour of the instance costs
    currency: Currency = "CNY"  # "CNY" or "USD"
    monthly_fee: NonNegativeFloat = (
        0.0  # a subscription paid whether or not it is used (Colab Pro: 9.99 USD)
    )


@checked
def convert(
    amount: float, from_currency: Currency, to_currency: Currency, cny_per_usd: PositiveFloat
) -> float:
    """An amount in the other currency at an exchange rate the caller states (CNY per USD)."""
    if from_currency == to_currency:
        return float(amount)
    return amount * cny_per_usd if from_currency == "USD" else amount / cny_per_usd


def _same_currency(setup: LocalSetup, rate: CloudRate) -> None:
    if setup.currency != rate.currency:
        raise GpulabConfigError(
            f"currency: the local setup is in {setup.currency} and the cloud rate in "
            f"{rate.currency}; convert one with "
            "cost.convert(amount, ..., cny_per_usd=<today's rate>)"
        )


@checked
def busy_hours_per_day(setup: LocalSetup) -> float:
    """Hours a day the machine computes: switched-on hours x utilisation."""
    return setup.hours_per_day * setup.utilisation


@checked
def energy_kwh_per_day(setup: LocalSetup) -> float:
    """kWh a day: load power over the busy hours plus idle power over the rest of the on-time."""
    idle_hours = setup.hours_per_day - busy_hours_per_day(setup)
    return (setup.power_load_w * busy_hours_per_day(setup) + setup.power_idle_w * idle_hours) / 1000


@checked
def electricity_per_day(setup: LocalSetup) -> float:
    """Electricity cost of one day."""
    return energy_kwh_per_day(setup) * setup.electricity_per_kwh


@checked
def electricity_per_month(setup: LocalSetup) -> float:
    """Electricity cost of one month (a twelfth of a year)."""
    return electricity_per_day(setup) * DAYS_PER_MONTH


@checked
def electricity_per_year(setup: LocalSetup) -> float:
    """Electricity cost of one year of 365 days."""
    return electricity_per_day(setup) * DAYS_PER_YEAR


@checked
def local_monthly_cost(setup: LocalSetup) -> float:
    """Electricity per month plus the purchase spread evenly over `years` (no resale value)."""
    return electricity_per_month(setup) + setup.hardware_price / (setup.years * 12)


@checked
def local_cost_per_busy_hour(setup: LocalSetup) -> float:
    """Everything the machine costs over its `years`, per hour it computes."""
    hours = busy_hours_per_day(setup) * DAYS_PER_YEAR * setup.years
    return local_monthly_cost(setup) * 12 * setup.years / hours


@checked
def cloud_monthly_cost(rate: CloudRate, hours_per_day: HoursPerDay) -> float:
    """Renting `hours_per_day` every day for a month, plus the monthly fee."""
    return rate.price_per_hour * hours_per_day * DAYS_PER_MONTH + rate.monthly_fee


@checked
def cloud_cost_per_hour(rate: CloudRate, hours_per_day: HoursPerDay) -> float:
    """The monthly bill per hour used: the hourly price plus the fee shared over the hours."""
    return cloud_monthly_cost(rate, hours_per_day) / (hours_per_day * DAYS_PER_MONTH)


def _cloud_hours(setup: LocalSetup, cloud_hours_per_day: float | None) -> float:
    # A rented instance can be stopped when idle, so by default it is rented for the hours
    # the local machine computes: the same work on both sides.
    return busy_hours_per_day(setup) if cloud_hours_per_day is None else cloud_hours_per_day


@checked
def break_even_months(
    setup: LocalSetup, rate: CloudRate, cloud_hours_per_day: HoursPerDay | None = None
) -> float | None:
    """Months after which buying has cost less than renting; None when renting stays cheaper.

    Buying costs the price at once plus electricity each month; renting costs its monthly bill.
    They cross at price / (cloud per month - electricity per month), if the bill is larger.
    """
    _same_currency(setup, rate)
    saving = cloud_monthly_cost(
        rate, _cloud_hours(setup, cloud_hours_per_day)
    ) - electricity_per_month(setup)
    if saving <= 0:
        return None
    return setup.hardware_price / saving


@dataclass(frozen=True)
class CostCurve:
    """Cumulative spending month by month, for a cost-over-time plot."""

    months: list[int]  # 0, 1, ..., n
    local: list[float]  # purchase + electricity so far
    cloud: list[float]  # rent so far
    break_even: float | None  # months, as break_even_months gives it
    currency: str


@checked
def cost_over_time(
    setup: LocalSetup,
    rate: CloudRate,
    months: Annotated[int, Between(1, 12 * 100)],
    cloud_hours_per_day: HoursPerDay | None = None,
) -> CostCurve:
    """Cumulative cost of buying and of renting for months 0..`months` (at most a century)."""
    _same_currency(setup, rate)
    monthly_rent = cloud_monthly_cost(rate, _cloud_hours(setup, cloud_hours_per_day))
    power = electricity_per_month(setup)
    steps = list(range(months + 1))
    return CostCurve(
        months=steps,
        local=[setup.hardware_price + power * m for m in steps],
        cloud=[monthly_rent * m for m in steps],
        break_even=break_even_months(setup, rate, cloud_hours_per_day),
        currency=setup.currency,
    )


@checked
def cost_per_million_tokens(price_per_hour: NonNegativeFloat, tokens_per_s: PositiveFloat) -> float:
    """What a million generated tokens cost at a price per hour and a sustained tokens/s rate."""
    return price_per_hour / (tokens_per_s * 3600) * 1e6
