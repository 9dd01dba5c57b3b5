"""Detection on odd machines (issue 25): hung or exiting libraries, odd clocks, devices, drivers.

The doctor's hang tests run ``python -m gpulab doctor`` in a subprocess with a folder of fake
modules first on PYTHONPATH, because a hung import cannot be undone inside the test process.
Each subprocess has a 60 s guard; the fakes sleep for an hour, so a doctor that waited for
them (or for its abandoned threads at exit) would hit the guard and fail.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gpulab.core.errors import GpulabConfigError
from gpulab.machine import budget, hardware, nvml, peaks, rules, torch_probe
from gpulab.machine.doctor import diagnose, render_text
from gpulab.machine.report import CPUInfo, GPUInfo, HardwareReport, TorchInfo
from gpulab.machine.visible import parse_visible_devices
from tests.helpers import cpu_report

GIB = 1024**3
SRC = Path(__file__).resolve().parents[2] / "src"
GUARD_S = 60  # each subprocess; at least 3x the 15 s detection limit used below
ALL = parse_visible_devices(None)
CUDA_HERE = torch.cuda.is_available()


# --------------------------------------------------------------------------- fakes


class FakeNVML:
    """Enough of pynvml for one GPU; ``memory`` and ``name`` can be made odd."""

    class NVMLError(Exception):
        """Stands for pynvml.NVMLError."""

    NVMLError_NotSupported = NVMLError

    def __init__(self, name=b"NVIDIA L4", memory=None, driver="550.54.14", hang=None):
        self.name = name
        self.memory = memory or SimpleNamespace(total=24 * GIB, free=20 * GIB)
        self.driver = driver
        self.hang = hang  # an Event to wait on in nvmlInit: a hung driver

    def nvmlInit(self):
        if self.hang is not None:
            self.hang.wait(60)

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return "GPU-11111111-aaaa-bbbb-cccc-000000000000"

    def nvmlDeviceGetName(self, h):
        return self.name

    def nvmlDeviceGetMemoryInfo(self, h):
        return self.memory

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040


def fake_torch(is_available=lambda: False):
    """A CPU-only torch whose ``cuda.is_available`` is the given function."""
    return SimpleNamespace(
        __version__="2.13.0+fake",
        version=SimpleNamespace(cuda=None, hip=None),
        cuda=SimpleNamespace(
            is_available=is_available, device_count=lambda: 0, get_arch_list=lambda: []
        ),
        backends=SimpleNamespace(
            mps=SimpleNamespace(is_built=lambda: False, is_available=lambda: False)
        ),
    )


def gpu_report(driver: str) -> HardwareReport:
    """A CUDA machine with one RTX 4090 on the given driver version."""
    gpu = GPUInfo(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        memory_total_bytes=24 * GIB,
        memory_free_bytes=20 * GIB,
        driver_version=driver,
        cuda_driver_version="12.8",
        compute_capability="8.9",
    )
    t = TorchInfo(
        installed=True,
        version="2.13.0+cu128",
        cuda_version="12.8",
        cuda_available=True,
        device_count=1,
        arch_list=["sm_80", "sm_89"],
        build="cuda",
    )
    return cpu_report(
        CPUInfo("Test CPU", 4, 8, ["AVX2"]),
        torch=t,
        gpus=[gpu],
        backend="cuda",
        nvidia_device_files=True,
        gpus_present=1,
    )


HUNG_IMPORT = "import time\ntime.sleep(3600)\n"
HUNG_TORCH_PROBE = """
import time
from types import SimpleNamespace
__version__ = "2.13.0+hung"
version = SimpleNamespace(cuda=None, hip=None)
def _hang():
    time.sleep(3600)
cuda = SimpleNamespace(is_available=_hang, device_count=lambda: 0, get_arch_list=lambda: [])
backends = SimpleNamespace(mps=SimpleNamespace(is_built=lambda: False, is_available=lambda: False))
"""
EXITING_IMPORT = "import sys\nsys.exit(3)\n"
# A pynvml that imports, with one GPU whose name has bytes that are not UTF-8.
ODD_NAME_PYNVML = """
class NVMLError(Exception):
    pass
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetUUID(h): return "GPU-11111111-aaaa-bbbb-cccc-000000000000"
def nvmlDeviceGetName(h): return b"NVIDIA \\xff\\xfe RTX 4090"
def nvmlSystemGetDriverVersion(): return "570.124.06"
def nvmlSystemGetCudaDriverVersion(): return 12080
"""


def run_doctor(
    tmp_path: Path, fakes: dict[str, str], *args: str, limit_s: str = "2", encoding: str = "utf-8"
) -> subprocess.CompletedProcess:
    """``python -m gpulab doctor ARGS`` with the fake modules first on the path."""
    folder = tmp_path / "fakes"
    for relative, text in fakes.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(folder), str(SRC)]),
        GPULAB_DETECT_TIMEOUT_S=limit_s,
        PYTHONIOENCODING=encoding,
    )
    return subprocess.run(
        [sys.executable, "-m", "gpulab", "doctor", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=GUARD_S,
    )


def notes_and_codes(tmp_path, fakes, limit_s="2") -> tuple[str, list[str], list[str]]:
    """Run the doctor as text and as JSON; (the text, the JSON report's notes, its codes)."""
    text_run = run_doctor(tmp_path, fakes, limit_s=limit_s)
    text = text_run.stdout.decode("utf-8", errors="replace")
    assert text_run.returncode in (0, 1), text_run.stderr.decode(errors="replace")
    assert b"Traceback" not in text_run.stderr
    assert "Findings:" in text and "Notes:" in text
    json_run = run_doctor(tmp_path, fakes, "--json", limit_s=limit_s)
    assert json_run.returncode in (0, 1), json_run.stderr.decode(errors="replace")
    data = json.loads(json_run.stdout)
    return text, data["report"]["notes"], [f["code"] for f in data["findings"]]


# --------------------------------------------------------------------------- 1. one deadline


@pytest.mark.parametrize(
    "torch_init", [HUNG_TORCH_PROBE, HUNG_IMPORT], ids=["cuda.is_available sleeps", "import sleeps"]
)
def test_doctor_reports_when_torch_hangs(tmp_path, torch_init):
    text, notes, codes = notes_and_codes(tmp_path, {"torch/__init__.py": torch_init})
    assert any(n.startswith("torch did not answer within 2 s") for n in notes), notes
    assert "torch did not answer within 2 s" in text
    assert "torch-hung" in codes and "torch-missing" not in codes


def test_doctor_reports_when_the_pynvml_import_hangs(tmp_path):
    text, notes, codes = notes_and_codes(tmp_path, {"pynvml.py": HUNG_IMPORT})
    assert any(n.startswith("nvidia-ml-py (pynvml) did not answer within 2 s") for n in notes)
    assert "nvidia-ml-py (pynvml) did not answer within 2 s" in text
    # torch imports pynvml too, so it hangs with it: the finding blames pynvml, not torch
    assert "pynvml-broken" in codes and "torch-broken" not in codes


def test_doctor_reports_when_the_pynvml_import_calls_sys_exit(tmp_path):
    text, notes, _ = notes_and_codes(tmp_path, {"pynvml.py": EXITING_IMPORT})
    assert "nvidia-ml-py (pynvml) failed to import: SystemExit: 3" in notes
    assert "SystemExit: 3" in text


@pytest.mark.parametrize(
    "module, importer",
    [("pynvml", nvml.import_nvml), ("torch", lambda: torch_probe.import_torch_traced()[:2])],
)
def test_an_import_that_calls_sys_exit_is_a_reason_not_an_exit(
    monkeypatch, tmp_path, module, importer
):
    (tmp_path / f"{module}.py").write_text(EXITING_IMPORT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    found, why = importer()
    assert found is None and why.endswith("SystemExit: 3")


def test_nvml_and_torch_hanging_together_share_one_deadline():
    release = threading.Event()
    try:
        report = hardware.detect(
            environ={"GPULAB_DETECT_TIMEOUT_S": "0.5"},
            nvml=FakeNVML(hang=release),
            torch_module=fake_torch(lambda: release.wait(60)),
        )
    finally:
        release.set()
    assert any(n.startswith("NVML did not answer within 0.5 s") for n in report.notes)
    assert any(n.startswith("torch did not answer within 0.5 s") for n in report.notes)
    assert report.torch.did_not_answer and report.gpus == []
    assert "torch-hung" in [f.code for f in diagnose(report)]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "nan", "inf", ""])
def test_a_bad_detection_time_limit_falls_back_to_the_default_with_a_note(value):
    report = hardware.detect(
        environ={"GPULAB_DETECT_TIMEOUT_S": value}, nvml=FakeNVML(), torch_module=fake_torch()
    )
    assert len(report.gpus) == 1  # detection ran
    expected = f"GPULAB_DETECT_TIMEOUT_S={value!r} is not a number of seconds above 0"
    assert any(n.startswith(expected) and "the default, 60 s" in n for n in report.notes), (
        report.notes
    )


# --------------------------------------------------------------------------- 2. CPU peak


@pytest.mark.parametrize("mhz", [0.0, math.nan, -2000.0, math.inf])
def test_an_odd_cpu_clock_means_peak_unknown(mhz):
    report = cpu_report(
        CPUInfo(
            "Test CPU", 4, 8, ["AVX2", "FMA"], max_frequency_mhz=mhz, reported_frequency_mhz=mhz
        )
    )
    estimate = peaks.cpu_peak(report)
    assert estimate.fp32_flops is None and estimate.bf16_flops is None
    assert estimate.clock_ghz is None
    assert estimate.assumptions.startswith("peak unknown") and "clock" in estimate.assumptions
    peak, bandwidth, label = peaks.device_peak(report, "cpu")
    assert peak is None and bandwidth is None and label.startswith("peak unknown")


def test_a_zero_max_clock_falls_back_to_the_reported_one():
    report = cpu_report(
        CPUInfo(
            "Test CPU", 4, 8, ["AVX2", "FMA"], max_frequency_mhz=0.0, reported_frequency_mhz=2500.0
        )
    )
    assert peaks.cpu_peak(report).fp32_flops == pytest.approx(4 * 2.5e9 * 32)


def test_a_vm_reporting_0_mhz_gets_a_note_that_the_doctor_prints(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Virtual CPU\nflags\t\t: avx2 fma\ncpu MHz\t\t: 0.000\n")
    monkeypatch.setattr("gpulab.machine.host.core_counts", lambda: (4, 8, None))
    monkeypatch.setattr(
        "gpulab.machine.host.SYSFS_CPU", str(tmp_path / "no-sysfs")
    )  # a VM: no cpufreq
    report = hardware.detect(
        environ={}, cpuinfo_path=str(cpuinfo), nvml=FakeNVML(), torch_module=fake_torch()
    )
    assert report.cpu.reported_frequency_mhz is None and report.cpu.max_frequency_mhz is None
    note = next(n for n in report.notes if n.startswith("CPU clock"))
    assert "0 MHz" in note and "peak unknown" in note
    assert note in render_text(report, diagnose(report))


# --------------------------------------------------------------------------- 4. budget devices


@pytest.mark.parametrize("device", [0, None, 1.5])
def test_allowance_on_a_value_that_is_not_a_device_is_refused_at_the_boundary(device):
    """Not a torch.device nor a name: refused by @checked, in one line naming `device`."""
    for call in (
        lambda: budget.allowance(device),
        lambda: budget.fits(device, 4e8),
        lambda: budget.max_elements(device, 4),
    ):
        with pytest.raises(
            GpulabConfigError, match=r"^device must be a device or str, not "
        ) as info:
            call()
        assert info.value.field == "device" and "\n" not in str(info.value)


@pytest.mark.parametrize("device", ["cuda:7", "CPU", "meta", "cuda:x"])
def test_allowance_on_a_device_that_does_not_exist_here_says_so(device):
    for call in (
        lambda: budget.allowance(device),
        lambda: budget.fits(device, 4e8),
        lambda: budget.max_elements(device, 4),
    ):
        with pytest.raises(GpulabConfigError, match="no such device") as info:
            call()
        assert info.value.field == "device"
        assert "'cpu'" in str(info.value)  # what this machine has


@pytest.mark.skipif(CUDA_HERE, reason="checks a machine without CUDA")
def test_fits_cuda_on_a_cpu_machine_is_an_error_not_a_guess():
    with pytest.raises(GpulabConfigError, match="no such device") as info:
        budget.fits("cuda", 4e8)
    assert info.value.field == "device"


def test_allowance_on_the_cpu_still_works():
    assert budget.allowance("cpu") > 0 and budget.allowance(torch.device("cpu")) > 0
    assert budget.fits(" cpu ", 1)


# --------------------------------------------------------------------------- 5. driver version


@pytest.mark.parametrize("driver", ["N/A", "abc", ""])
def test_an_unreadable_driver_version_is_its_own_finding(driver):
    findings = {f.code: f for f in diagnose(gpu_report(driver))}
    assert "driver-too-old" not in findings
    finding = findings["driver-version-unreadable"]
    assert repr(driver) in finding.message and "`nvidia-smi`" in finding.fix


def test_a_readable_driver_version_is_not_called_unreadable():
    assert "driver-version-unreadable" not in [f.code for f in diagnose(gpu_report("570.124.06"))]


# --------------------------------------------------------------------------- 6. broken pynvml


def test_a_pynvml_that_raises_breaks_torch_and_the_doctor_names_pynvml(tmp_path):
    # torch/cuda/__init__.py imports pynvml and catches only ImportError: a RuntimeError raised
    # by a broken pynvml makes `import torch` itself fail.
    run = run_doctor(
        tmp_path,
        {"pynvml.py": "raise RuntimeError('nvml binding is broken')\n"},
        "--json",
        limit_s="15",
    )
    data = json.loads(run.stdout)
    findings = {f["code"]: f for f in data["findings"]}
    assert "torch-broken" not in findings and "pynvml-broken" in findings
    assert "nvml binding is broken" in findings["pynvml-broken"]["message"]
    assert "pip install --force-reinstall nvidia-ml-py" in findings["pynvml-broken"]["fix"]
    assert data["report"]["torch"]["broken_by"] == "pynvml"


def test_the_pynvml_rule_on_a_report_built_by_hand():
    t = TorchInfo(
        installed=False, build="not installed", import_error="RuntimeError: x", broken_by="pynvml"
    )
    report = cpu_report(CPUInfo(None, None, None, []), torch=t)
    assert [f.code for f in rules.rules_setup.rule_pynvml_broken(report)] == ["pynvml-broken"]
    codes = [f.code for f in diagnose(report)]
    assert "pynvml-broken" in codes and "torch-broken" not in codes and "torch-missing" not in codes


# --------------------------------------------------------------------------- 7. odd encodings


def test_the_doctor_prints_an_odd_gpu_name_on_an_ascii_stdout(tmp_path):
    run = run_doctor(tmp_path, {"pynvml.py": ODD_NAME_PYNVML}, limit_s="15", encoding="ascii")
    assert run.returncode in (0, 1) and b"UnicodeEncodeError" not in run.stderr, run.stderr
    out = run.stdout.decode("ascii")  # nothing but ASCII came out
    assert "GPU 0: NVIDIA ?? RTX 4090" in out and "Findings:" in out


# --------------------------------------------------------------------------- 14. odd digits


@pytest.mark.parametrize("value", ["\uff10", "\u0660", "\uff11,\uff10", "\u0661"])
def test_non_ascii_digits_hide_every_gpu_as_cuda_reads_them(value):
    parsed = parse_visible_devices(value)
    assert parsed.hides_all and parsed.entries == [] and "will see no GPU" in parsed.note
    report = hardware.detect(
        environ={"CUDA_VISIBLE_DEVICES": value}, nvml=FakeNVML(), torch_module=fake_torch()
    )
    assert report.gpus == [] and report.gpus_present == 1
    assert "gpus-hidden" in [f.code for f in diagnose(report)]


def test_a_non_ascii_digit_ends_the_list_like_any_invalid_entry():
    parsed = parse_visible_devices("0,\uff11")
    assert parsed.entries == [0] and "only the entries before the first invalid one" in parsed.note


# --------------------------------------------------------------------------- 16. free > total


def test_more_free_memory_than_the_card_has_is_dropped_with_a_note():
    odd = FakeNVML(memory=SimpleNamespace(total=24 * GIB, free=200 * GIB))
    gpus, _, notes = nvml.nvml_read(ALL, odd)
    assert gpus[0].memory_total_bytes == 24 * GIB and gpus[0].memory_free_bytes is None
    note = next(n for n in notes if n.startswith("GPU 0 free memory"))
    assert "200.0 GiB" in note and "24.0 GiB" in note


def test_gpuinfo_drops_free_memory_above_total_whatever_its_source():
    gpu = GPUInfo(index=0, name="x", memory_total_bytes=24 * GIB, memory_free_bytes=200 * GIB)
    assert gpu.memory_free_bytes is None and gpu.memory_total_bytes == 24 * GIB
    same = GPUInfo(index=0, name="x", memory_total_bytes=24 * GIB, memory_free_bytes=24 * GIB)
    assert same.memory_free_bytes == 24 * GIB
