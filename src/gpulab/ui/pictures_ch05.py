"""Chapter 5's picture, drawn at build time (book/05_pitfalls.md shows it).

- ``ch05-queue``: the host and the device of a GPU over three training steps, twice: reading the
  loss with ``.item()`` at every step, and keeping it on the device. The host queues each kernel
  and moves on; the device runs them in order; a read makes the host wait until the queue has
  drained, and the device then idles while the host queues the next step.

The picture is a schematic, and says so: its time unit is one kernel's run, and a launch takes
``LAUNCH`` of it (a chosen input, as a worked example's is). The schedule is computed by
``schedule``, the rule the chapter states, not drawn by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulab.core.validate import PositiveInt, checked

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    from matplotlib.figure import Figure

__all__ = ["LAUNCH", "PICTURES", "Schedule", "queue_picture", "schedule"]

STEPS = 3  # training steps drawn
KERNELS = 4  # kernels per step
LAUNCH = 0.4  # the host's time to queue one kernel, in kernel run times (a chosen input)
READ = 0.3  # the host's time to copy a value and carry on, in kernel run times


@dataclass(frozen=True)
class Schedule:
    """Busy intervals (start, length) of the host and of the device, and the host's waits."""

    host: list[tuple[float, float]]
    device: list[tuple[float, float]]
    waits: list[tuple[float, float]]

    @property
    def end(self) -> float:
        """When the last interval ends."""
        return max(s + d for s, d in self.host + self.device + self.waits)

    @property
    def device_idle(self) -> float:
        """Time the device spends idle between its first kernel's start and its last's end."""
        (first, _), (last, length) = self.device[0], self.device[-1]
        return last + length - first - sum(d for _, d in self.device)


@checked
def schedule(
    steps: PositiveInt,
    kernels: PositiveInt,
    launch: float,
    read_every_step: bool,
    read: float = READ,
) -> Schedule:
    """The host queues `kernels` per step (`launch` each); the device runs each for one unit,
    in order, once queued; a read waits until the device has finished, then takes `read`."""
    host: list[tuple[float, float]] = []
    device: list[tuple[float, float]] = []
    waits: list[tuple[float, float]] = []
    t_host = t_device = 0.0
    for step in range(steps):
        for _ in range(kernels):
            host.append((t_host, launch))
            t_host += launch
            start = max(t_host, t_device)  # a kernel starts once queued and the device is free
            device.append((start, 1.0))
            t_device = start + 1.0
        if read_every_step or step == steps - 1:
            if t_device > t_host:
                waits.append((t_host, t_device - t_host))
                t_host = t_device
            host.append((t_host, read))
            t_host += read
    return Schedule(host, device, waits)


def queue_picture() -> Figure:
    """The host and device timelines of three steps, with and without `.item()` every step."""
    import matplotlib.pyplot as plt

    cases = {
        ".item() every step": schedule(STEPS, KERNELS, LAUNCH, True),
        "loss kept on the device, read once": schedule(STEPS, KERNELS, LAUNCH, False),
    }
    end = max(s.end for s in cases.values())
    fig, axes = plt.subplots(2, 1, figsize=(8, 3.8), sharex=True)
    for ax, (case, s) in zip(axes, cases.items(), strict=True):
        edges = {"edgecolor": "white", "linewidth": 1}
        ax.broken_barh(
            s.device, (0.6, 0.8), color="tab:green", label="device: a kernel runs", **edges
        )
        ax.broken_barh(
            s.host,
            (1.6, 0.8),
            color="tab:blue",
            label="host: queues a kernel, or reads a value",
            **edges,
        )
        ax.broken_barh(
            s.waits, (1.6, 0.8), color="tab:red", label="host: waits for the device", **edges
        )
        ax.set_yticks([1.0, 2.0], ["device", "host"])
        ax.set_ylim(0.4, 2.6)
        ax.set_title(
            f"{case}: done at {s.end:.1f}, the device idle for {s.device_idle:.1f} between kernels",
            fontsize=9,
        )
    axes[-1].set_xlim(0, end * 1.02)
    axes[-1].set_xlabel(
        f"time, in kernel run times (schematic: a launch takes {LAUNCH:g} of a kernel's run)"
    )
    axes[-1].legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.5), ncol=3, frameon=False, fontsize=8
    )
    fig.suptitle(f"The queue of kernels over {STEPS} training steps, and where a read drains it")
    fig.tight_layout()
    return fig


PICTURES: dict[str, Callable[[], Figure]] = {"ch05-queue": queue_picture}
