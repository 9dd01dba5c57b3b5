"""Measured rates of the operations chapter 1's lab sweeps (matmul, copy, triad, roofline points).

Every function times with `gpulab.timing.benchmark`, keeps each allocation within
`gpulab.budget` (a quarter of the free memory), shows a progress bar on long sweeps, and
returns `RatePoint` rows that `gpulab.plots` draws and `gpulab.tables.Table` shows. The notes
a page prints beside a point come from here too (`point_notes`): a timing taken while the machine
was busy, a share of peak above 100 % or far below it, bf16 on a CPU without bf16 instructions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from gpulab.bench import timing
from gpulab.bench.progress import progress_bar
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import format_rate, format_seconds, size_label
from gpulab.core.validate import OneOf, PositiveFloat, PositiveInt, checked
from gpulab.estimate import roofline
from gpulab.machine import budget
from gpulab.machine.peaks import Peak

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "BANDWIDTH_KINDS",
    "LOW_SHARE_PERCENT",
    "PRECISIONS",
    "RatePoint",
    "bandwidth_point",
    "bandwidth_sweep",
    "best_matmul",
    "busy_summary",
    "host_to_device",
    "low_share_note",
    "matmul_point",
    "matmul_precision",
    "matmul_precisions",
    "matmul_sweep",
    "no_native_note",
    "point_notes",
    "roofline_points",
    "torch_dtype",
]

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
BANDWIDTH_KINDS = ("copy", "triad")  # b = a; a = b + s * c (STREAM's triad)
Precision = Annotated[str, OneOf(PRECISIONS, "precision")]
BandwidthKind = Annotated[str, OneOf(BANDWIDTH_KINDS, "bandwidth kind")]


@dataclass(frozen=True)
class RatePoint:
    """One measured operation: its time and the rate it reached (FLOP/s or bytes/s)."""

    op: str  # "matmul", "copy", "triad", "add", "softmax", "layernorm", "h2d"
    size: str  # a readable size: "1024x1024x1024", "64 MiB"
    precision: str
    seconds: float  # median per call
    iqr: float
    work: float  # FLOPs or bytes per call
    unit: str  # "FLOP/s" or "B/s"
    nbytes: int = 0  # bytes per buffer, for bandwidth plots
    intensity: float | None = None  # FLOP per byte, for roofline points
    extra: dict = field(default_factory=dict)
    timed: timing.Measurement | None = None  # the timing itself: its blocks and their spread

    @property
    def rate(self) -> float:
        """Work per second at the median time."""
        return self.work / self.seconds

    @property
    def label(self) -> str:
        """How a note names this point: "bf16 256x256x256", "copy of 64 MiB"."""
        return (
            f"{self.precision} {self.size}" if self.op == "matmul" else f"{self.op} of {self.size}"
        )

    def percent_of(self, peak: float | None) -> roofline.Share | None:
        """The rate as a percentage of a peak (None when the peak is unknown)."""
        return roofline.percent_of_peak(self.rate, peak)

    @property
    def busy_note(self) -> str | None:
        """The note of a timing whose blocks spread beyond the course's tolerance; else None."""
        if self.timed is None:
            return None
        return timing.busy_note(self.timed.spread, len(self.timed.times), self.label)


@checked
def torch_dtype(precision: Precision):
    """The torch dtype that stores a precision ('tf32' computes on float32 storage)."""
    import torch

    table = {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
    }
    return table[precision]


@checked
@contextlib.contextmanager
def matmul_precision(precision: Precision) -> Iterator[None]:
    """Allow TF32 for float32 matrix products only inside a 'tf32' block (off by default)."""
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


@checked
def matmul_precisions(
    device: torch.device | str,
    vector_extensions: Sequence[str] = (),
    compute_capability: str | None = None,
) -> list[str]:
    """Precisions worth sweeping on a device: the ones its hardware runs natively."""
    import torch

    kind = torch.device(device).type
    if kind == "cpu":
        native_bf16 = bool({"AMX", "AVX-512 BF16"} & set(vector_extensions))
        return ["fp32", "bf16"] if native_bf16 else ["fp32"]
    if kind == "cuda":
        major = int(compute_capability.split(".")[0]) if compute_capability else 0
        if torch.version.hip:
            return ["fp32", "bf16", "fp16"]
        # TF32 and bf16 Tensor Core paths start with Ampere (compute capability 8.0)
        return ["fp32", "tf32", "bf16", "fp16"] if major >= 8 else ["fp32", "fp16"]
    if kind == "mps":
        return ["fp32", "fp16"]
    return ["fp32", "bf16", "fp16"]


@checked
def matmul_point(
    device: torch.device | str,
    m: PositiveInt,
    n: PositiveInt,
    k: PositiveInt,
    precision: Precision = "fp32",
    min_run_time: PositiveFloat = 0.1,
) -> RatePoint | None:
    """Time one (m x k) @ (k x n) product; None when its operands would exceed the budget."""
    import torch

    dtype = torch_dtype(precision)
    nbytes = roofline.matmul_bytes(m, n, k, dtype)
    if not budget.fits(device, nbytes):
        return None
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    with matmul_precision(precision), torch.inference_mode():
        t = timing.benchmark(torch.matmul, a, b, min_run_time=min_run_time)
    del a, b
    return RatePoint(
        "matmul",
        f"{m}x{n}x{k}",
        precision,
        t.median,
        t.iqr,
        roofline.matmul_flops(m, n, k),
        "FLOP/s",
        nbytes,
        roofline.matmul_flops(m, n, k) / nbytes,
        timed=t,
    )


@checked
def matmul_sweep(
    device: torch.device | str,
    sizes: Sequence[PositiveInt],
    precisions: Sequence[Precision],
    min_run_time: PositiveFloat = 0.1,
    progress: bool = True,
) -> list[RatePoint]:
    """Square matrix products of each size and precision; sizes over the budget are skipped."""
    jobs = [(p, n) for p in precisions for n in sizes]
    points = []
    for precision, n in progress_bar(jobs, "matmul sweep", progress):
        point = matmul_point(device, n, n, n, precision, min_run_time)
        if point is not None:
            points.append(point)
    return points


@checked
def best_matmul(
    device: torch.device | str,
    shapes: Sequence[tuple[int, int, int]],
    precision: Precision,
    min_run_time: PositiveFloat = 0.1,
    progress: bool = True,
) -> RatePoint:
    """The (m, n, k) among the candidates that reaches the highest FLOP/s."""
    points = [
        p
        for shape in progress_bar(list(shapes), f"best {precision} matmul", progress)
        if (p := matmul_point(device, *shape, precision, min_run_time)) is not None
    ]
    if not points:
        raise GpulabConfigError("shapes: none of the candidate shapes fits the memory budget")
    return max(points, key=lambda p: p.rate)


@checked
def bandwidth_point(
    device: torch.device | str,
    nbytes: PositiveInt,
    kind: BandwidthKind = "copy",
    min_run_time: PositiveFloat = 0.1,
) -> RatePoint | None:
    """GB/s of a copy (b = a) or a STREAM triad (a = b + s*c) on buffers of `nbytes` each."""
    import torch

    numel = max(1, nbytes // 4)
    buffers = 2 if kind == "copy" else 3
    if not budget.fits(device, buffers * numel * 4):
        return None
    src = torch.rand(numel, device=device)
    dst = torch.empty_like(src)
    if kind == "copy":
        t = timing.benchmark(dst.copy_, src, min_run_time=min_run_time, label="copy")
        moved = roofline.copy_bytes(numel, torch.float32)
    else:
        other = torch.rand(numel, device=device)
        t = timing.benchmark(
            torch.add, src, other, alpha=3.0, out=dst, min_run_time=min_run_time, label="triad"
        )
        moved = roofline.triad_bytes(numel, torch.float32)
    return RatePoint(
        kind, size_label(numel * 4), "fp32", t.median, t.iqr, moved, "B/s", numel * 4, timed=t
    )


@checked
def bandwidth_sweep(
    device: torch.device | str,
    sizes_bytes: Sequence[PositiveInt],
    kinds: Sequence[BandwidthKind] = BANDWIDTH_KINDS,
    min_run_time: PositiveFloat = 0.1,
    progress: bool = True,
) -> list[RatePoint]:
    """Copy and triad bandwidth for buffer sizes from cache-resident to beyond the caches."""
    jobs = [(k, s) for k in kinds for s in sizes_bytes]
    points = []
    for kind, nbytes in progress_bar(jobs, "bandwidth sweep", progress):
        point = bandwidth_point(device, nbytes, kind, min_run_time)
        if point is not None:
            points.append(point)
    return points


@checked
def roofline_points(
    device: torch.device | str,
    precision: Precision = "fp32",
    matmul_n: PositiveInt = 1024,
    elements: PositiveInt = 1 << 22,
    min_run_time: PositiveFloat = 0.1,
) -> list[RatePoint]:
    """Achieved FLOP/s and intensity of a matmul, an add, a softmax and a layer norm."""
    import torch

    dtype = torch_dtype(precision)
    rows, cols = max(1, elements // 1024), 1024
    points = []
    mm = matmul_point(device, matmul_n, matmul_n, matmul_n, precision, min_run_time)
    if mm is not None:
        points.append(mm)
    if not budget.fits(device, 4 * rows * cols * dtype.itemsize):
        return points
    x = torch.randn(rows, cols, device=device, dtype=dtype)
    y = torch.randn(rows, cols, device=device, dtype=dtype)
    norm = torch.nn.LayerNorm(cols, device=device, dtype=dtype)
    cases = [
        ("add", roofline.add_cost(rows * cols, dtype), torch.add, (x, y)),
        ("softmax", roofline.softmax_cost(rows, cols, dtype), torch.softmax, (x, -1)),
        ("layernorm", roofline.layernorm_cost(rows, cols, dtype), norm, (x,)),
    ]
    with torch.inference_mode():
        for name, cost, fn, args in cases:
            t = timing.benchmark(fn, *args, device=device, min_run_time=min_run_time, label=name)
            points.append(
                RatePoint(
                    name,
                    f"{rows}x{cols}",
                    precision,
                    t.median,
                    t.iqr,
                    cost.flops,
                    "FLOP/s",
                    rows * cols * dtype.itemsize,
                    cost.intensity,
                    timed=t,
                )
            )
    return points


@checked
def host_to_device(
    device: torch.device | str,
    sizes_bytes: Sequence[PositiveInt],
    pinned: bool,
    min_run_time: PositiveFloat = 0.1,
    progress: bool = True,
) -> list[RatePoint]:
    """Bytes/s of host-to-GPU copies from pinned or pageable memory (CUDA devices only)."""
    import torch

    if torch.device(device).type != "cuda":
        raise GpulabConfigError(f"device={str(device)!r}: host-to-device copies need a CUDA GPU")
    points = []
    label = "pinned" if pinned else "pageable"
    for nbytes in progress_bar(list(sizes_bytes), f"host to device ({label})", progress):
        if not (budget.fits(device, nbytes) and budget.fits("cpu", nbytes)):
            continue
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
        dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
        t = timing.benchmark(
            dev.copy_,
            host,
            non_blocking=pinned,
            device=device,
            min_run_time=min_run_time,
            label=f"h2d {label}",
        )
        points.append(
            RatePoint(
                "h2d", size_label(nbytes), label, t.median, t.iqr, nbytes, "B/s", nbytes, timed=t
            )
        )
        del host, dev
    return points


# ---------------------------------------------------------------- notes on measured points

# A share of the peak this low gets a word on the page: under a twentieth of the peak.
LOW_SHARE_PERCENT = 5.0


@checked
def low_share_note(
    point: RatePoint, peak: Peak | float | None, among: Sequence[RatePoint] = ()
) -> str | None:
    """Why `point` reached under LOW_SHARE_PERCENT of `peak`, from the points measured beside it.

    `among` is the rest of the sweep: the best rate of the same operation and precision there
    says whether the size is the reason (the same arithmetic ran much faster at another size)
    or not (no size came close). None when the share is not that low or the peak is unknown.
    """
    share = point.percent_of(peak)
    if share is None or share >= LOW_SHARE_PERCENT:
        return None
    same = [
        q
        for q in (*among, point)
        if (q.op, q.precision, q.unit) == (point.op, point.precision, point.unit)
    ]
    best = max(same, key=lambda q: q.rate)
    best_share = best.percent_of(peak)
    head = f"{point.label}: {_percent(share)}% of the {point.precision} peak"
    if best.rate >= 2 * point.rate:
        # at the best rate the same FLOPs take at most half the call, so most of it is not
        # arithmetic
        return (
            f"{head}. At the rate {best.size} reached ({_percent(best_share)}%), its "
            f"{format_rate(point.work, 'FLOP')} would take "
            f"{format_seconds(point.work / best.rate)}; "
            f"the call took {format_seconds(point.seconds)}, so at this size most of a call is "
            f"not arithmetic (measured here)"
        )
    source = getattr(peak, "source", "")
    return (
        f"{head}, and no size measured here did better than {_percent(best_share)}%: the size is "
        f"not the reason, this device does not run {point.precision} at the rate its peak "
        f"assumes" + (f" ({source})" if source else "")
    )


def _percent(share: float) -> str:
    """A share of peak in a sentence: two digits below 10 % ("0.41", "1.3"), whole ones above."""
    return f"{share:.2g}" if share < 10 else f"{share:.0f}"


@checked
def point_notes(
    point: RatePoint, peak: Peak | float | None, among: Sequence[RatePoint] = ()
) -> list[str]:
    """Every note a measured point needs on the page: a busy machine, a share of peak above 100 %
    (the note ``roofline.percent_of_peak`` gives it), a very low share.

    A table given these as its row notes does not repeat the one its share cell already carries.
    """
    share = point.percent_of(peak)
    above = None if share is None else share.note
    return [n for n in (point.busy_note, above, low_share_note(point, peak, among)) if n]


@checked
def busy_summary(points: Sequence[RatePoint]) -> str | None:
    """One line for a plot's points: how many were timed while the machine was busy; else None."""
    points = list(points)
    busy = [p for p in points if p.busy_note]
    if not busy:
        return None
    worst = max(busy, key=lambda p: p.timed.spread)
    return (
        f"{len(busy)} of these {len(points)} timings were taken while the machine was busy: "
        f"their slowest block took more than {timing.SPREAD_TOLERANCE:g}x the median "
        f"(at worst {worst.timed.spread:.3g}x, {worst.label}), so their rates may be too low"
    )


@checked
def no_native_note(
    device: torch.device | str, vector_extensions: Sequence[str], precision: str
) -> str | None:
    """Why bf16 is slow on an x86 CPU without bf16 instructions; None on any other device."""
    import torch

    extensions = set(vector_extensions)
    x86 = bool({"AVX2", "AVX-512"} & extensions)
    if (
        torch.device(device).type != "cpu"
        or precision != "bf16"
        or not x86
        or {"AMX", "AVX-512 BF16"} & extensions
    ):
        return None
    return (
        "this CPU has no bf16 arithmetic (neither AMX nor AVX-512 BF16 among its flags): "
        "each bf16 value is converted to fp32 to be multiplied, a step fp32 does not pay"
    )
