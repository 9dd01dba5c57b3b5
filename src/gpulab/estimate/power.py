"""Power-supply sizing for a GPU build (chapter 6).

    from gpulab import power

    build = power.build_for_gpu("RTX 4090", cpu_power_w=181)  # board power from the spec table
    power.size_psu(build).recommended_w                       # the smallest common PSU for it
    power.check_psu(build, 650).ok                            # False: the article's black screen

A power supply has to carry two loads:

- the sustained one: GPU board power x cards + CPU + the rest of the system, which must stay
  within the PSU's rating (plus any headroom the builder wants);
- the transient one: a modern GPU draws brief spikes far above its board power. PCIe CEM 5.0
  lets a card reach 3x its sustained power for 100 us, and ATX 3.0 asks a PSU above 450 W with
  a 12VHPWR connector to deliver 200% of its rating for the same 100 us. The peak
  (3 x GPU + CPU + rest) must therefore fit in 2 x the rating. A PSU built to ATX 2.x has no
  such requirement: it is only sure to carry its rating.

Sources (Intel, "ATX Version 3.0 Multi Rail Desktop Platform Power Supply Design Guide",
document 336521, section 3 and Table 3-3; Intel's Stephen Eastman to PCWorld as reported by
TweakTown, 2022-04-22) are quoted next to each constant below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import AtLeast, Between, OneOf, PositiveFloat, boundary, checked
from gpulab.reference import specs

__all__ = [
    "ATX2_PSU_EXCURSION",
    "ATX3_PSU_EXCURSION",
    "ATX3_SMALL_PSU_EXCURSION",
    "COMMON_PSU_W",
    "PCIE_CEM5_GPU_EXCURSION",
    "PSU_STANDARDS",
    "Build",
    "PSUCheck",
    "PSUSizing",
    "build_for_gpu",
    "check_psu",
    "psu_excursion_factor",
    "size_psu",
]

# Ratings retail ATX power supplies are commonly sold in, in watts. A build needing more than the
# largest one needs a server power supply or several PSUs, which this module does not size.
COMMON_PSU_W = (450, 550, 650, 750, 850, 1000, 1200, 1300, 1500, 1600)

# PCIe CEM 5.0 "power excursion": "a 600 watt card on a PCIe 5.0 12VHPWR connector is allowed to
# spike to 1,800 watts for 100 micro-seconds", i.e. 3x sustained (Intel's Stephen Eastman to
# PCWorld, via TweakTown 2022-04-22); the ATX 3.0 design guide's Table 4-3 tests the PCIe rails
# with load steps "from 100% to 300%".
PCIE_CEM5_GPU_EXCURSION = 3.0
# ATX 3.0 design guide, Table 3-3: a PSU above 450 W with a 12VHPWR connector must deliver 200%
# of its rated power for 100 us (180% for 1 ms, 160% for 10 ms, 120% for 100 ms) ...
ATX3_PSU_EXCURSION = 2.0
# ... and a PSU of 450 W or less, or one without 12VHPWR, 150% for 100 us (same table).
ATX3_SMALL_PSU_EXCURSION = 1.5
# ATX 2.x sets no excursion requirement: "power supplies were never explicitly designed to
# withstand these excursions" (ATX 3.0 design guide, section 3.1). Only the rating is sure;
# real units often trip later, so this is a worst case (Intel estimated that a build which an
# ATX 3.0 PSU runs at 750 W "could potentially need" 1,100 W from an ATX 2.x one).
ATX2_PSU_EXCURSION = 1.0
PSU_STANDARDS = ("atx3.0", "atx2")
_LABEL = {"atx3.0": "ATX 3.0", "atx2": "ATX 2.x"}
PSUStandard = Annotated[str, OneOf(PSU_STANDARDS, "PSU standard")]


@checked
@dataclass(frozen=True)
class Build:
    """What a PC draws: GPUs, CPU, the rest, and how the GPU spikes and the PSU copes."""

    gpu_power_w: PositiveFloat  # board power of one GPU (TGP/TBP) in W, as the spec table gives it
    gpu_count: Annotated[int, Between(1, 64)] = 1  # identical GPUs in the box
    # The CPU's sustained turbo power in W (Intel "Maximum Turbo Power"/PL2, AMD PPT). Intel's
    # ATX 3.0 budget examples use 125 W-TDP desktop CPUs; a K-series Core i5/i7/i9 turbos higher.
    cpu_power_w: PositiveFloat = 125.0
    # Motherboard, memory, drives, fans, USB, in W: Intel's worked example gives "another 150 watts
    # for the rest of the hardware in the box" (Eastman, via TweakTown 2022-04-22).
    rest_w: PositiveFloat = 150.0
    # How far above its board power a GPU may spike for 100 us (PCIe CEM 5.0: 3x).
    gpu_transient_factor: Annotated[float, AtLeast(1)] = PCIE_CEM5_GPU_EXCURSION
    psu_standard: PSUStandard = (
        "atx3.0"  # "atx3.0" (excursion-rated, with 12VHPWR) or "atx2" (no rating)
    )
    # Fraction of the sustained load to keep free on top of it (0.2 = a PSU 20% larger). 0 is
    # Intel's method: its budget examples size the PSU at exactly the sustained sum.
    headroom: Annotated[float, Between(0, 1, high_open=True)] = 0.0

    @property
    def sustained_w(self) -> float:
        """Continuous draw in W: GPUs at board power + CPU at turbo + the rest."""
        return self.gpu_power_w * self.gpu_count + self.cpu_power_w + self.rest_w

    @property
    def peak_w(self) -> float:
        """Draw in W during a 100 us GPU excursion; the CPU and the rest at their sustained draw."""
        gpus = self.gpu_power_w * self.gpu_transient_factor * self.gpu_count
        return gpus + self.cpu_power_w + self.rest_w


@checked
def psu_excursion_factor(psu_w: PositiveFloat, standard: PSUStandard = "atx3.0") -> float:
    """Multiple of its rating a PSU of `psu_w` watts must carry for 100 us under `standard`."""
    if standard == "atx2":
        return ATX2_PSU_EXCURSION
    # A unit this module recommends above 450 W is assumed to carry the 12VHPWR connector.
    return ATX3_PSU_EXCURSION if psu_w > 450 else ATX3_SMALL_PSU_EXCURSION


@dataclass(frozen=True)
class PSUCheck:
    """Whether one PSU rating carries a build, with the arithmetic."""

    psu_w: float
    ok: bool  # both the sustained and the transient load fit
    sustained_ok: bool
    peak_ok: bool
    sustained_w: float  # continuous draw, with the headroom added
    peak_w: float  # draw during a GPU excursion
    peak_capacity_w: float  # what the PSU delivers for 100 us under its standard
    reasons: tuple[str, ...]


@checked
def check_psu(build: Build, psu_w: PositiveFloat) -> PSUCheck:
    """Whether a PSU of `psu_w` watts carries `build` continuously and through GPU spikes."""
    need = build.sustained_w * (1 + build.headroom)
    factor = psu_excursion_factor(psu_w, build.psu_standard)
    capacity = psu_w * factor
    sustained_ok = need <= psu_w
    peak_ok = build.peak_w <= capacity
    gpus = (
        f"{build.gpu_count} x {build.gpu_power_w:g} W"
        if build.gpu_count > 1
        else f"{build.gpu_power_w:g} W"
    )
    margin = f" x (1 + {build.headroom:g} headroom)" if build.headroom else ""
    reasons = (
        f"sustained: GPU {gpus} + CPU {build.cpu_power_w:g} W + rest {build.rest_w:g} W"
        f"{margin} = {need:.0f} W {'<=' if sustained_ok else '>'} {psu_w:g} W rating"
        f" ({'ok' if sustained_ok else 'too small'})",
        f"transient (100 us): GPU {build.gpu_transient_factor:g} x {gpus} + CPU "
        f"{build.cpu_power_w:g} W + rest {build.rest_w:g} W = {build.peak_w:.0f} W "
        f"{'<=' if peak_ok else '>'} {factor:g} x {psu_w:g} W = {capacity:.0f} W that an "
        f"{_LABEL[build.psu_standard]} PSU of this size must deliver"
        f" ({'ok' if peak_ok else 'too small: expect shutdowns under load'})",
    )
    return PSUCheck(
        psu_w=psu_w,
        ok=sustained_ok and peak_ok,
        sustained_ok=sustained_ok,
        peak_ok=peak_ok,
        sustained_w=need,
        peak_w=build.peak_w,
        peak_capacity_w=capacity,
        reasons=reasons,
    )


@dataclass(frozen=True)
class PSUSizing:
    """The smallest common PSU rating that carries a build, and why."""

    sustained_w: float  # continuous draw, headroom included
    peak_w: float  # draw during a GPU excursion
    min_for_sustained_w: float  # smallest rating for the continuous draw
    min_for_peak_w: float  # smallest rating whose excursion allowance covers the peak
    recommended_w: int | None  # a rating from COMMON_PSU_W; None above the largest one
    reasons: tuple[str, ...]


@checked
def size_psu(build: Build, sizes: tuple[PositiveFloat, ...] = COMMON_PSU_W) -> PSUSizing:
    """The smallest of `sizes` that carries `build`'s sustained and transient load."""
    if not sizes:
        raise GpulabConfigError("sizes=() must list at least one PSU rating in W")
    need = build.sustained_w * (1 + build.headroom)
    # The excursion factor depends on the rating (150% up to 450 W, 200% above), so each
    # size is checked rather than dividing the peak by one factor.
    fitting = [s for s in sorted(sizes) if check_psu(build, s).ok]
    recommended = fitting[0] if fitting else None
    min_peak = _min_rating_for_peak(build.peak_w, build.psu_standard)
    allowance = (
        "200% of its rating above 450 W, 150% up to 450 W"
        if build.psu_standard == "atx3.0"
        else "only its rating (ATX 2.x sets no excursion requirement)"
    )
    reasons = [
        f"continuous draw {need:.0f} W needs a rating of at least {need:.0f} W",
        f"a {build.gpu_transient_factor:g}x GPU spike makes {build.peak_w:.0f} W for 100 us; an "
        f"{_LABEL[build.psu_standard]} PSU carries {allowance} that long, so at least "
        f"{min_peak:.0f} W",
    ]
    if recommended is None:
        reasons.append(
            f"no common rating up to {max(sizes)} W carries this build: use a server "
            f"power supply or several PSUs, or cap the GPUs' power (nvidia-smi -pl)"
        )
    else:
        reasons.append(f"smallest common rating that carries both: {recommended} W")
    return PSUSizing(
        sustained_w=need,
        peak_w=build.peak_w,
        min_for_sustained_w=need,
        min_for_peak_w=min_peak,
        recommended_w=recommended,
        reasons=tuple(reasons),
    )


@checked
def build_for_gpu(
    gpu: str, count: Annotated[int, Between(1, 64)] = 1, **build: float | str
) -> Build:
    """A Build whose GPU power is the spec table's board power for `gpu` (other fields as given)."""
    spec = specs.resolve_gpu(gpu)
    if spec.board_power_w is None:
        raise GpulabConfigError(
            f"gpu={gpu!r}: the spec table has no board power for "
            f"{spec.name} (Apple publishes none); pass gpu_power_w to Build"
        )
    with boundary():  # **build is the caller's: Build checks it as such
        return Build(gpu_power_w=spec.board_power_w, gpu_count=count, **build)


def _min_rating_for_peak(peak_w: float, standard: str) -> float:
    """Smallest rating R with R x psu_excursion_factor(R) >= peak_w (R may be fractional)."""
    if standard == "atx2":
        return peak_w / ATX2_PSU_EXCURSION
    small = peak_w / ATX3_SMALL_PSU_EXCURSION
    if small <= 450:
        return small  # a PSU of 450 W or less, at 150%, is enough
    return max(peak_w / ATX3_PSU_EXCURSION, 450.0)  # just above 450 W the factor becomes 200%
