"""The host CPU and RAM: model, cores, clocks, vector extensions, caches (chapters 0 and 1).

Read from Linux's /proc and /sys files, macOS's sysctl and psutil, whichever this machine
has; anything unreadable is None (or empty), never a guess. The clocks come from three sources
(psutil's maximum, each core's "cpu MHz", sysfs's cpuinfo_max_freq), each kept in its own field.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from gpulab.core.validate import checked
from gpulab.machine.report import CLOCK_FIELDS, VECTOR_EXTENSIONS, CPUInfo, plausible_clock_mhz

__all__ = [
    "SYSFS_CPU",
    "cpu_cache_sizes",
    "cpu_info",
    "extensions_from_flags",
    "extensions_from_sysctl",
    "ram",
    "read_cpu_flags",
    "read_cpuinfo",
    "read_meminfo",
    "sysfs_max_clock_mhz",
]

# Where Linux exposes each core's cpufreq limits (a module constant, so tests point it elsewhere).
SYSFS_CPU = "/sys/devices/system/cpu"


@checked
def read_meminfo(path: str = "/proc/meminfo") -> tuple[int, int | None] | None:
    """Read (MemTotal, MemAvailable) in bytes from a Linux meminfo file; None if unreadable."""
    values: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if key in ("MemTotal", "MemAvailable") and parts and parts[0].isdigit():
                    values[key] = int(parts[0]) * 1024  # the file says kB and means KiB
    except OSError:
        return None
    if "MemTotal" not in values:
        return None
    return values["MemTotal"], values.get("MemAvailable")


@checked
def ram(meminfo_path: str, notes: list[str]) -> tuple[int | None, int | None]:
    """Total and available RAM: /proc/meminfo first, then psutil."""
    parsed = read_meminfo(meminfo_path)
    if parsed is not None:
        return parsed
    try:
        import psutil

        vm = psutil.virtual_memory()
        return int(vm.total), int(vm.available)
    except Exception as exc:
        notes.append(f"RAM size unknown: no {meminfo_path} and psutil failed ({exc})")
        return None, None


@checked
def read_cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, set[str] | None]:
    """Read the CPU model name and the feature flags from a Linux cpuinfo file."""
    model, flags, _ = read_cpuinfo_fields(path)
    return model, flags


def read_cpuinfo_fields(path: str) -> tuple[str | None, set[str] | None, float | None]:
    """Model name, feature flags and the highest sane 'cpu MHz' of the cores in a cpuinfo file."""
    model: str | None = None
    flags: set[str] | None = None
    mhz: float | None = None
    odd: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and flags is None:
                    flags = set(value.split())  # x86 says "flags", ARM says "Features"
                elif key == "cpu MHz":
                    # one line per core, each its clock when the file was read: keep the highest
                    # sane one (a VM may write 0.000 on some cores)
                    core = plausible_clock_mhz(value.strip())
                    if core is not None:
                        mhz = core if mhz is None else max(mhz, core)
                    elif mhz is None:
                        odd.append(value.strip())
    except OSError:
        return None, None, None
    if mhz is None and odd:
        try:
            mhz = float(odd[0])  # what cpu_info's note quotes: "0 MHz", "nan MHz"
        except ValueError:
            pass
    return model, flags, mhz


@checked
def read_cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """Return the CPU feature flags from a Linux cpuinfo file, or None if unreadable."""
    return read_cpuinfo(path)[1]


@checked
def extensions_from_flags(flags: set | frozenset) -> list[str]:
    """Map Linux cpuinfo flags to the vector extensions the course talks about."""
    found = {
        "AVX2": "avx2" in flags,
        "AVX-512": "avx512f" in flags,
        "AVX-512 BF16": "avx512_bf16" in flags,
        "AMX": bool({"amx_tile", "amx_bf16"} & flags),
        "NEON": "asimd" in flags,
        "FMA": "fma" in flags,
    }
    return [name for name in VECTOR_EXTENSIONS if found[name]]


def macos_sysctl(prefix: str) -> dict[str, str]:
    """Read ``sysctl <prefix>`` on macOS as a dict; empty on any failure."""
    try:
        out = subprocess.run(
            ["sysctl", prefix], capture_output=True, text=True, timeout=2, check=False
        ).stdout
    except Exception:
        return {}
    pairs = (line.partition(":") for line in out.splitlines())
    return {k.strip(): v.strip() for k, _, v in pairs if k.strip()}


@checked
def extensions_from_sysctl(values: Mapping[str, str], machine: str) -> list[str]:
    """Map macOS hw.optional.* values to vector extensions."""
    on = {k for k, v in values.items() if v == "1"}
    found = {
        "AVX2": "hw.optional.avx2_0" in on,
        "AVX-512": "hw.optional.avx512f" in on,
        "AVX-512 BF16": False,
        "AMX": False,
        "NEON": machine == "arm64" or "hw.optional.neon" in on,
        "FMA": "hw.optional.fma" in on,
    }
    return [name for name in VECTOR_EXTENSIONS if found[name]]


@checked
def sysfs_max_clock_mhz(root: str | None = None) -> float | None:
    """The highest cpuinfo_max_freq of any core under Linux sysfs, in MHz; None where not exposed.

    The file holds kHz. It is the hardware's maximum as the cpufreq driver reports it (the
    single-core turbo on Intel and AMD), which most VMs and containers do not expose.
    """
    best: float | None = None
    for path in Path(root or SYSFS_CPU).glob("cpu[0-9]*/cpufreq/cpuinfo_max_freq"):
        try:
            mhz = plausible_clock_mhz(float(path.read_text().strip()) / 1000)
        except (OSError, ValueError):
            continue
        if mhz is not None and (best is None or mhz > best):
            best = mhz
    return best


def core_counts() -> tuple[int | None, int | None, float | None]:
    """Physical and logical cores and the max frequency, through psutil where it works."""
    physical = logical = None
    freq = None
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
        logical = psutil.cpu_count(logical=True)
        f = psutil.cpu_freq()
        freq = float(f.max) if f is not None and f.max else None
    except Exception:
        pass
    return physical, logical or os.cpu_count(), freq


@checked
def cpu_info(
    cpuinfo_path: str, notes: list[str] | None = None, sysfs_root: str | None = None
) -> CPUInfo:
    """Describe the CPU from /proc/cpuinfo and sysfs (Linux), sysctl (macOS) and psutil.

    Every clock the machine reports is kept, each from its source (``gpulab.peaks`` uses the
    highest). A clock that reads 0 MHz or NaN (VMs that hide it) is unknown, with a note in
    ``notes`` when no source has a sane one.
    """
    model, flags, reported_mhz = read_cpuinfo_fields(cpuinfo_path)
    extensions = extensions_from_flags(flags) if flags is not None else []
    if sys.platform == "darwin":
        model = model or macos_sysctl("machdep.cpu.brand_string").get("machdep.cpu.brand_string")
        extensions = extensions or extensions_from_sysctl(
            macos_sysctl("hw.optional"), platform.machine()
        )
    physical, logical, freq = core_counts()
    info = CPUInfo(
        model=model or platform.processor() or None,
        physical_cores=physical,
        logical_cores=logical,
        vector_extensions=extensions,
        max_frequency_mhz=freq,
        reported_frequency_mhz=reported_mhz,
        sysfs_max_frequency_mhz=sysfs_max_clock_mhz(sysfs_root),
    )
    odd = [
        f"{value:g} MHz"
        for value in (freq, reported_mhz)
        if value is not None and plausible_clock_mhz(value) is None
    ]
    if odd and notes is not None and all(getattr(info, name) is None for name in CLOCK_FIELDS):
        notes.append(
            f"CPU clock unreadable: this machine reports {' and '.join(odd)} (a VM that "
            "hides its clock?); CPU peak unknown, since it is cores x clock x FLOP/cycle"
        )
    return info


@checked
def cpu_cache_sizes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Data and unified cache sizes of one core in bytes, e.g. {"L1d": 49152, "L2": ..., "L3": ...}.

    Read from Linux sysfs; empty where it is not exposed (macOS, Windows, some containers).
    In a VM the last level is the host's, shared by every core of the socket.
    """
    sizes: dict[str, int] = {}
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    for index in sorted(Path(sysfs).glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        number, unit = (size[:-1], size[-1]) if size[-1] in units else (size, "")
        try:
            value = int(number) * units.get(unit, 1)
        except ValueError:
            continue
        sizes[f"L{level}d" if kind == "Data" else f"L{level}"] = value
    return sizes
