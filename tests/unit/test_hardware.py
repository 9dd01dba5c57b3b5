"""Tests for gpulab.hardware, on fake NVML modules, fake /proc files and the real CPU torch."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from types import SimpleNamespace

import pynvml
import pytest
import torch

from gpulab import hardware, host, nvml, torch_probe
from gpulab.core.errors import GpulabConfigError
from gpulab.machine.hardware import (
    CPUInfo,
    GPUInfo,
    HardwareReport,
    TorchInfo,
    detect,
    parse_visible_devices,
    pick_device,
)

CPU_ONLY_TORCH = torch.version.cuda is None and torch.version.hip is None
cpu_only = pytest.mark.skipif(
    not CPU_ONLY_TORCH or torch.backends.mps.is_available(),
    reason="checks the behaviour of a CPU-only torch build",
)

GIB = 1024**3
UUID0 = "GPU-11111111-aaaa-bbbb-cccc-000000000000"
UUID1 = "GPU-22222222-aaaa-bbbb-cccc-111111111111"
OTHER_PID = os.getpid() + 1


# --------------------------------------------------------------------------- a fake NVML


class FakeNVMLError(Exception):
    """Stands for pynvml.NVMLError."""


class FakeLibraryNotFound(FakeNVMLError):
    """Stands for pynvml.NVMLError_LibraryNotFound."""


class FakeDriverNotLoaded(FakeNVMLError):
    """Stands for pynvml.NVMLError_DriverNotLoaded."""


class FakeNotSupported(FakeNVMLError):
    """Stands for pynvml.NVMLError_NotSupported."""


def full_gpu(name: str, uuid: str) -> dict:
    """Everything NVML reports about one GPU, in NVML's units."""
    return {
        "name": name,
        "uuid": uuid,
        "memory": SimpleNamespace(total=24 * GIB, free=20 * GIB, used=4 * GIB),
        "cc": (8, 9),
        "power_limit_mw": 450_000,
        "power_mw": 123_456,
        "temperature": 55,
        "sm_clock": 2520,
        "max_sm_clock": 3105,
        "mem_clock": 10501,
        "pcie_gen": 4,
        "pcie_gen_max": 4,
        "pcie_width": 16,
        "pcie_width_max": 16,
        "utilization": SimpleNamespace(gpu=87, memory=40),
        # SwPowerCap | HwThermalSlowdown, in the bits of the fake's constants below
        "clocks_event_reasons": 0x4 | 0x40,
        "processes": [
            SimpleNamespace(pid=os.getpid(), usedGpuMemory=1 * GIB),  # this process: not counted
            SimpleNamespace(pid=OTHER_PID, usedGpuMemory=3 * GIB),
            SimpleNamespace(pid=OTHER_PID + 1, usedGpuMemory=None),  # driver would not say
        ],
    }


class FakeNVML:
    """Enough of the pynvml module for nvml.nvml_read; ``fail`` names calls that raise."""

    NVMLError = FakeNVMLError
    NVMLError_LibraryNotFound = FakeLibraryNotFound
    NVMLError_DriverNotLoaded = FakeDriverNotLoaded
    NVMLError_NotSupported = FakeNotSupported
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    # The clocks-event reason bits under their new names (the values of nvml.h).
    nvmlClocksEventReasonGpuIdle = 0x1
    nvmlClocksEventReasonApplicationsClocksSetting = 0x2
    nvmlClocksEventReasonSwPowerCap = 0x4
    nvmlClocksEventReasonHwSlowdown = 0x8
    nvmlClocksEventReasonSyncBoost = 0x10
    nvmlClocksEventReasonSwThermalSlowdown = 0x20
    nvmlClocksEventReasonHwThermalSlowdown = 0x40
    nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80

    def __init__(self, gpus=(), fail=(), init_error=None, cuda=12040, driver="550.54.14"):
        self.gpus = list(gpus)
        self.fail = set(fail)  # {("memory", 0), ...}
        self.init_error = init_error
        self.cuda = cuda
        self.driver = driver
        self.shutdown_calls = 0

    def _get(self, key, handle):
        if (key, handle) in self.fail:
            raise FakeNVMLError(f"{key} failed on GPU {handle}")
        if (key, "unsupported") in self.fail:
            raise FakeNotSupported("Not Supported")
        return self.gpus[handle][key]

    def nvmlInit(self):
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_calls += 1

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return self._get("uuid", h)

    def nvmlDeviceGetName(self, h):
        return self._get("name", h).encode()  # old nvidia-ml-py releases return bytes

    def nvmlDeviceGetMemoryInfo(self, h):
        return self._get("memory", h)

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self._get("cc", h)

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return self._get("power_limit_mw", h)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._get("power_mw", h)

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._get("temperature", h)

    def nvmlDeviceGetClockInfo(self, h, clock):
        return self._get("sm_clock" if clock == self.NVML_CLOCK_SM else "mem_clock", h)

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        assert clock == self.NVML_CLOCK_SM
        return self._get("max_sm_clock", h)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._get("pcie_gen", h)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self._get("pcie_gen_max", h)

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._get("pcie_width", h)

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self._get("pcie_width_max", h)

    def nvmlDeviceGetUtilizationRates(self, h):
        return self._get("utilization", h)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._get("clocks_event_reasons", h)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):  # the older name of the same call
        return self._get("clocks_event_reasons", h)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return self._get("processes", h)


def two_gpus(**kwargs) -> FakeNVML:
    """A fake NVML with an RTX 4090 and an RTX 4080."""
    return FakeNVML(
        [full_gpu("NVIDIA GeForce RTX 4090", UUID0), full_gpu("NVIDIA GeForce RTX 4080", UUID1)],
        **kwargs,
    )


ALL = parse_visible_devices(None)


# --------------------------------------------------------------------------- NVML


def test_no_pynvml_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    gpus, present, notes = nvml.nvml_read(ALL)
    assert gpus is None and present == 0
    assert notes == ["nvidia-ml-py (pynvml) is not installed"]


def test_no_pynvml_installed_detect_still_works(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    report = detect(environ={}, dev_dir=str(tmp_path))
    assert "nvidia-ml-py (pynvml) is not installed" in report.notes
    assert report.gpus_present == len(report.gpus)


def test_nvml_library_missing_with_fake_classes(monkeypatch):
    fake = FakeNVML(init_error=FakeLibraryNotFound("NVML Shared Library Not Found"))
    monkeypatch.setitem(sys.modules, "pynvml", fake)  # detect() imports it by name
    gpus, present, notes = nvml.nvml_read(ALL)
    assert gpus is None and present == 0
    assert notes == ["NVML library not found (no NVIDIA driver installed?)"]


def test_nvml_library_missing_with_real_pynvml_exceptions():
    fake = FakeNVML(init_error=pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    fake.NVMLError_LibraryNotFound = pynvml.NVMLError_LibraryNotFound
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus is None
    assert "NVML library not found" in notes[0]


def test_nvml_driver_not_loaded():
    fake = FakeNVML(init_error=FakeDriverNotLoaded("Driver Not Loaded"))
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus is None
    assert "not loaded" in notes[0]


def test_nvml_other_error_keeps_its_message():
    fake = FakeNVML(init_error=FakeNVMLError("Insufficient Permissions"))
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus is None
    assert notes == ["NVML could not start: Insufficient Permissions"]


def test_two_gpus_full_data_parsed():
    fake = two_gpus()
    gpus, present, notes = nvml.nvml_read(ALL, fake)
    assert present == 2 and notes == []
    assert [g.name for g in gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080"]
    g = gpus[0]
    assert g.index == 0 and g.source == "nvml" and g.uuid == UUID0
    assert g.cuda_driver_version == "12.4"  # from 12040
    assert g.driver_version == "550.54.14"
    assert g.compute_capability == "8.9"
    assert g.memory_total_bytes == 24 * GIB and g.memory_free_bytes == 20 * GIB
    assert g.power_limit_w == pytest.approx(450.0)  # from mW
    assert g.power_draw_w == pytest.approx(123.456)
    assert g.temperature_c == 55.0
    assert (g.sm_clock_mhz, g.max_sm_clock_mhz, g.memory_clock_mhz) == (2520, 3105, 10501)
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (
        4,
        4,
        16,
        16,
    )
    assert g.utilization_gpu_percent == 87
    assert g.throttle_reasons == ["SwPowerCap", "HwThermalSlowdown"]
    assert g.other_processes_memory_bytes == 3 * GIB  # own process and unknown sizes left out
    assert fake.shutdown_calls == 1


@pytest.mark.parametrize(("raw", "expected"), [(12040, "12.4"), (11080, "11.8"), (13000, "13.0")])
def test_cuda_version_from_int(raw, expected):
    assert nvml._cuda_version_from_int(raw) == expected


def test_nvml_call_failing_in_the_middle():
    fake = two_gpus(fail={("memory", 0)})
    gpus, present, notes = nvml.nvml_read(ALL, fake)
    assert present == 2
    assert gpus[0].name == "NVIDIA GeForce RTX 4090"  # read before the failing call
    assert gpus[0].memory_total_bytes is None and gpus[0].memory_free_bytes is None
    assert gpus[0].compute_capability == "8.9"  # read after it
    assert gpus[1].memory_total_bytes == 24 * GIB
    assert notes == ["GPU 0 memory could not be read: memory failed on GPU 0"]
    assert fake.shutdown_calls == 1


def test_nvml_unsupported_field_is_none_with_a_note():
    fake = two_gpus(fail={("power_mw", "unsupported")})
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[0].power_draw_w is None and gpus[0].power_limit_w == pytest.approx(450.0)
    assert "GPU 0 power draw: not supported by this GPU or driver" in notes


def test_decode_throttle_reasons_with_real_pynvml_constants():
    bits = pynvml.nvmlClocksThrottleReasonGpuIdle | pynvml.nvmlClocksThrottleReasonSwPowerCap
    assert nvml._decode_throttle_reasons(pynvml, bits) == ["GpuIdle", "SwPowerCap"]
    assert nvml._decode_throttle_reasons(pynvml, 0) == []


def test_decode_throttle_reasons_old_names_and_missing_constants():
    old = SimpleNamespace(nvmlClocksThrottleReasonHwSlowdown=0x8)  # no other constant known
    assert nvml._decode_throttle_reasons(old, 0xFF) == ["HwSlowdown"]


def test_throttle_reasons_fall_back_to_the_old_call():
    fake = two_gpus()
    fake.nvmlDeviceGetCurrentClocksEventReasons = None  # an nvidia-ml-py before 12.535
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[0].throttle_reasons == ["SwPowerCap", "HwThermalSlowdown"] and notes == []


def test_throttle_reasons_fall_back_when_the_new_call_fails():
    fake = two_gpus()

    def new_call_fails(h):
        raise FakeNVMLError("Function Not Found")

    fake.nvmlDeviceGetCurrentClocksEventReasons = new_call_fails  # old driver, new library
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[1].throttle_reasons == ["SwPowerCap", "HwThermalSlowdown"] and notes == []


def test_throttle_reasons_unreadable_are_none_with_a_note():
    fake = two_gpus(fail={("clocks_event_reasons", "unsupported")})
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[0].throttle_reasons is None
    assert "GPU 0 clock throttle reasons: not supported by this GPU or driver" in notes
    fake = two_gpus()
    fake.nvmlDeviceGetCurrentClocksEventReasons = None
    fake.nvmlDeviceGetCurrentClocksThrottleReasons = None
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[0].throttle_reasons is None
    assert "GPU 0 clock throttle reasons: this nvidia-ml-py has no call for them" in notes


def test_no_throttle_reason_is_an_empty_list():
    fake = two_gpus()
    fake.gpus[0]["clocks_event_reasons"] = 0
    gpus, _, _ = nvml.nvml_read(ALL, fake)
    assert gpus[0].throttle_reasons == []


def test_utilization_and_processes_unreadable_are_none():
    fake = two_gpus(fail={("utilization", 0), ("processes", 0)})
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus[0].utilization_gpu_percent is None
    assert gpus[0].other_processes_memory_bytes is None
    assert gpus[0].throttle_reasons == ["SwPowerCap", "HwThermalSlowdown"]  # read on its own
    assert gpus[1].utilization_gpu_percent == 87
    assert gpus[1].other_processes_memory_bytes == 3 * GIB
    assert notes == [
        "GPU 0 utilization could not be read: utilization failed on GPU 0",
        "GPU 0 compute processes could not be read: processes failed on GPU 0",
    ]


def test_no_other_process_is_zero_bytes():
    fake = two_gpus()
    fake.gpus[0]["processes"] = [SimpleNamespace(pid=os.getpid(), usedGpuMemory=5 * GIB)]
    gpus, _, _ = nvml.nvml_read(ALL, fake)
    assert gpus[0].other_processes_memory_bytes == 0


def test_nvml_shutdown_even_when_listing_fails():
    fake = two_gpus()
    fake.nvmlDeviceGetHandleByIndex = None  # calling None raises TypeError inside the listing
    gpus, _, notes = nvml.nvml_read(ALL, fake)
    assert gpus == []
    assert fake.shutdown_calls == 1
    assert notes


# --------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES


def visible_gpus(value: str):
    return nvml.nvml_read(parse_visible_devices(value), two_gpus())


def test_visible_devices_empty_hides_all():
    gpus, present, notes = visible_gpus("")
    assert gpus == [] and present == 2
    assert "GPUs hidden: CUDA_VISIBLE_DEVICES is set to ''" in notes


def test_visible_devices_minus_one_hides_all():
    gpus, present, notes = visible_gpus("-1")
    assert gpus == [] and present == 2
    assert "GPUs hidden: CUDA_VISIBLE_DEVICES is set to '-1'" in notes


def test_visible_devices_garbage_hides_all():
    gpus, present, notes = visible_gpus("garbage")
    assert gpus == [] and present == 2
    assert (
        "CUDA_VISIBLE_DEVICES='garbage' is not a list of GPU indices or UUIDs; "
        "CUDA will see no GPU" in notes
    )


def test_visible_devices_index_filters():
    gpus, present, _ = visible_gpus("1")
    assert [g.index for g in gpus] == [1] and present == 2
    assert gpus[0].name == "NVIDIA GeForce RTX 4080"


def test_visible_devices_uuid_filters():
    gpus, _, _ = visible_gpus(UUID1)
    assert [g.index for g in gpus] == [1]


def test_visible_devices_uuid_prefix_filters():
    gpus, _, _ = visible_gpus("GPU-11111111")
    assert [g.index for g in gpus] == [0]


def test_visible_devices_order_is_kept():
    gpus, _, _ = visible_gpus("1,0")
    assert [g.index for g in gpus] == [1, 0]


def test_visible_devices_stop_at_first_invalid_entry():
    parsed = parse_visible_devices("1,-1,0")
    assert parsed.entries == [1] and not parsed.hides_all
    assert "only the entries before the first invalid one" in parsed.note


def test_visible_devices_missing_index_stops():
    gpus, _, notes = visible_gpus("5")
    assert gpus == []
    assert "CUDA_VISIBLE_DEVICES names GPU 5, which does not exist" in notes


def test_parse_visible_devices_unset():
    parsed = parse_visible_devices(None)
    assert parsed.all_visible and not parsed.hides_all and parsed.note is None


def test_detect_uses_environ_for_visibility(tmp_path):
    report = detect(environ={"CUDA_VISIBLE_DEVICES": "1"}, nvml=two_gpus(), dev_dir=str(tmp_path))
    assert [g.index for g in report.gpus] == [1]
    assert report.gpus_present == 2
    assert report.visible_devices == {"CUDA_VISIBLE_DEVICES": "1"}


def test_detect_notes_hip_hiding(tmp_path):
    report = detect(environ={"HIP_VISIBLE_DEVICES": ""}, nvml=two_gpus(), dev_dir=str(tmp_path))
    assert "GPUs hidden: HIP_VISIBLE_DEVICES is set to ''" in report.notes


# --------------------------------------------------------------------------- torch


@cpu_only
def test_torch_info_cpu_build():
    info, notes = torch_probe.torch_info()
    assert info.installed and info.build == "cpu-only"
    assert info.cuda_version is None and not info.cuda_available
    assert info.arch_list == [] and info.device_count == 0
    assert torch_probe.backend_of(info) == "cpu"
    assert any("CPU-only build" in n for n in notes)


def test_torch_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    info, notes = torch_probe.torch_info()
    assert not info.installed and info.build == "not installed"
    assert "torch is not installed" in notes[0]
    assert torch_probe.backend_of(info) == "cpu"


def test_an_empty_torch_package_is_described_not_refused(monkeypatch, tmp_path):
    """A torch folder left by an uninstall imports as an empty package: a note, never a check."""
    import types

    empty = types.ModuleType("torch")  # no torch.cuda, no torch.version
    monkeypatch.setitem(sys.modules, "torch", empty)
    torch_module, info, notes = torch_probe.torch_read()
    assert torch_module is None and info.installed  # nothing more to list; still reported
    assert any(n.startswith("torch could not be queried: AttributeError") for n in notes), notes
    report = detect(environ={}, nvml=FakeNVML([]), dev_dir=str(tmp_path))
    assert report.gpus == [] and report.backend == "cpu"
    assert not any("did not" in n for n in report.notes), report.notes


def test_a_probe_that_is_not_callable_gives_the_default_and_a_note():
    """torch_probe.call takes whatever torch exposes: a bool where a function was is a note."""
    notes: list[str] = []
    assert torch_probe.call(True, False, notes) is False
    assert notes == ["torch: 'bool' object is not callable"]


def test_odd_arch_names_are_dropped_and_the_doctor_still_runs(tmp_path):
    """A torch whose get_arch_list holds None or a number: the names are kept, the rest dropped."""
    from gpulab import doctor

    odd = fake_torch()
    odd.cuda.get_arch_list = lambda: ["sm_90", None, 90]  # the fake GPUs are 8.9
    info, _ = torch_probe.torch_info(odd)
    assert info.arch_list == ["sm_90"]
    report = detect(environ={}, nvml=two_gpus(), torch_module=odd, dev_dir=str(tmp_path))
    codes = {f.code for f in doctor.diagnose(report)}
    assert report.torch.arch_list == ["sm_90"] and "arch-not-in-build" in codes, codes


def fake_torch(hip=None, cuda="12.4", available=True):
    """A fake torch module that sees two GPUs through torch.cuda."""
    props = SimpleNamespace(name="AMD Instinct MI300X", total_memory=192 * GIB, major=9, minor=4)
    return SimpleNamespace(
        __version__="2.13.0+fake",
        version=SimpleNamespace(cuda=None if hip else cuda, hip=hip),
        cuda=SimpleNamespace(
            is_available=lambda: available,
            device_count=lambda: 2,
            get_arch_list=lambda: [],
            get_device_properties=lambda i: props,
            mem_get_info=lambda i: (100 * GIB, 192 * GIB),
        ),
        backends=SimpleNamespace(
            mps=SimpleNamespace(is_built=lambda: False, is_available=lambda: False)
        ),
    )


def test_rocm_falls_back_to_torch_gpus(tmp_path):
    nvml = FakeNVML(init_error=FakeLibraryNotFound("not found"))
    report = detect(
        environ={}, nvml=nvml, torch_module=fake_torch(hip="6.2"), dev_dir=str(tmp_path)
    )
    assert report.backend == "rocm" and report.torch.build == "rocm"
    assert [g.source for g in report.gpus] == ["torch", "torch"]
    assert report.gpus[0].memory_free_bytes == 100 * GIB
    assert report.gpus[0].compute_capability == "9.4"
    assert report.gpus_present == 2


def test_cuda_build_backend(tmp_path):
    report = detect(environ={}, nvml=two_gpus(), torch_module=fake_torch(), dev_dir=str(tmp_path))
    assert report.backend == "cuda" and report.torch.build == "cuda"
    assert report.torch.device_count == 2
    assert [g.source for g in report.gpus] == ["nvml", "nvml"]  # NVML wins when it works


# --------------------------------------------------------------------------- CPU and RAM


def test_read_meminfo(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       16384000 kB\nMemFree:  1 kB\nMemAvailable:    8192000 kB\n")
    assert host.read_meminfo(str(path)) == (16384000 * 1024, 8192000 * 1024)


def test_no_meminfo_and_psutil_fails(tmp_path, monkeypatch):
    import psutil

    def broken():
        raise OSError("psutil broken")

    monkeypatch.setattr(psutil, "virtual_memory", broken)
    missing = str(tmp_path / "no-meminfo")
    assert host.read_meminfo(missing) is None
    report = detect(environ={}, meminfo_path=missing, nvml=two_gpus(), dev_dir=str(tmp_path))
    assert report.ram_total_bytes is None and report.ram_available_bytes is None
    assert any(n.startswith("RAM size unknown") for n in report.notes)


def test_no_meminfo_falls_back_to_psutil(tmp_path):
    notes: list[str] = []
    total, available = host.ram(str(tmp_path / "missing"), notes)
    assert total and total > 0 and available is not None and notes == []


def test_cpu_flags_x86(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(
        "processor\t: 0\nmodel name\t: Test CPU 9000\ncpu MHz\t\t: 2599.998\n"
        "flags\t\t: fpu sse avx2 fma avx512f avx512_bf16 amx_tile\n"
    )
    flags = host.read_cpu_flags(str(path))
    assert {"avx2", "avx512f"} <= flags
    assert host.extensions_from_flags(flags) == [
        "AVX2",
        "AVX-512",
        "AVX-512 BF16",
        "AMX",
        "FMA",
    ]
    assert host.cpu_info(str(path)).model == "Test CPU 9000"
    assert host.cpu_info(str(path)).reported_frequency_mhz == 2599.998


def test_cpu_flags_arm(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm aes\n")
    assert host.extensions_from_flags(host.read_cpu_flags(str(path))) == ["NEON"]


def test_cpu_flags_missing_file(tmp_path):
    assert host.read_cpu_flags(str(tmp_path / "none")) is None
    cpu = host.cpu_info(str(tmp_path / "none"))
    assert cpu.vector_extensions == [] or sys.platform == "darwin"
    assert cpu.logical_cores and cpu.logical_cores >= 1


def test_macos_sysctl_extensions():
    values = {"hw.optional.avx2_0": "1", "hw.optional.avx512f": "0", "hw.optional.fma": "1"}
    assert host.extensions_from_sysctl(values, "x86_64") == ["AVX2", "FMA"]
    assert host.extensions_from_sysctl({}, "arm64") == ["NEON"]


def test_colab_detection():
    assert hardware._in_colab({"COLAB_RELEASE_TAG": "release-colab_20250101"})
    assert not hardware._in_colab({}) or "google.colab" in sys.modules


def test_nvidia_device_files(tmp_path):
    assert not hardware._nvidia_device_files(str(tmp_path))
    (tmp_path / "nvidiactl").write_text("")
    assert not hardware._nvidia_device_files(str(tmp_path))  # the control file alone is not a GPU
    (tmp_path / "nvidia0").write_text("")
    assert hardware._nvidia_device_files(str(tmp_path))


# --------------------------------------------------------------------------- report rendering


def sample_report() -> HardwareReport:
    gpu = GPUInfo(
        index=0,
        name="NVIDIA <Test> GPU",
        memory_total_bytes=24 * GIB,
        memory_free_bytes=int(20.25 * GIB),
        driver_version="550.54.14",
        cuda_driver_version="12.4",
        compute_capability="8.9",
        power_limit_w=450.0,
        power_draw_w=30.0,
    )
    return HardwareReport(
        os="Linux-test",
        python="3.11.7",
        torch=TorchInfo(installed=True, version="2.13.0+cu128", cuda_version="12.8", build="cuda"),
        cpu=CPUInfo(
            model="Test CPU", physical_cores=8, logical_cores=16, vector_extensions=["AVX2"]
        ),
        ram_total_bytes=64 * GIB,
        ram_available_bytes=32 * GIB,
        gpus=[gpu],
        backend="cuda",
        in_colab=False,
        visible_devices={"CUDA_VISIBLE_DEVICES": "0"},
        nvidia_device_files=True,
        notes=["a <note>"],
        gpus_present=2,
    )


def test_report_str():
    text = str(sample_report())
    assert "backend         : cuda" in text
    assert "RAM             : 64.0 GiB total, 32.0 GiB available" in text
    assert "GPUs            : 1 visible of 2 present" in text
    assert "GPU 0: NVIDIA <Test> GPU" in text
    assert "20.2 GiB free of 24.0 GiB" in text
    assert "550.54.14 (supports CUDA 12.4)" in text
    assert "  - a <note>" in text


def test_report_shows_load_throttling_and_other_processes():
    report = sample_report()
    report.gpus[0].utilization_gpu_percent = 87
    report.gpus[0].throttle_reasons = ["SwPowerCap"]
    report.gpus[0].other_processes_memory_bytes = 3 * GIB
    text = str(report)
    assert "utilization         : 87 %" in text
    assert "clocks held back by : SwPowerCap" in text
    assert "other processes     : 3.0 GiB of GPU memory" in text
    assert "utilization" not in str(sample_report())  # unknown fields are left out


def test_report_html_escapes():
    page = sample_report()._repr_html_()
    assert page.startswith("<table") and page.endswith("</table>")
    assert "NVIDIA &lt;Test&gt; GPU" in page and "<Test>" not in page
    assert "a &lt;note&gt;" in page


def test_report_to_dict_is_json():
    data = sample_report().to_dict()
    again = json.loads(json.dumps(data))
    assert again["gpus"][0]["compute_capability"] == "8.9"
    assert again["torch"]["build"] == "cuda"
    assert again["gpus_present"] == 2


def test_detect_real_machine_is_json_serialisable():
    report = detect()
    json.dumps(report.to_dict())
    assert report.backend in {"cuda", "rocm", "mps", "xpu", "cpu"}
    assert str(report) and report._repr_html_()


# --------------------------------------------------------------------------- pick_device


@cpu_only
def test_pick_device_auto_is_cpu_here():
    assert pick_device("auto") == torch.device("cpu")
    assert pick_device() == torch.device("cpu")


def test_pick_device_cpu():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device(" cpu ") == torch.device("cpu")


def test_pick_device_unknown_name():
    with pytest.raises(GpulabConfigError) as err:
        pick_device("tpu")
    assert str(err.value) == (
        "device='tpu' is not a known device; "
        "use one of 'auto', 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu'."
    )


@cpu_only
def test_pick_device_cuda_on_cpu_build():
    with pytest.raises(GpulabConfigError, match="CPU-only") as err:
        pick_device("cuda")
    assert f"(torch {torch.__version__})" in str(err.value)
    assert "device='auto'" in str(err.value)
    with pytest.raises(GpulabConfigError, match="CPU-only"):
        pick_device("cuda:1")


def test_pick_device_not_a_string():
    # refused at the boundary (@checked), in one line that names the parameter and the type
    with pytest.raises(GpulabConfigError) as err:
        pick_device(3)
    assert str(err.value) == "device=3 must be a string, not int" and err.value.field == "device"


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS")
def test_pick_device_mps_unavailable():
    with pytest.raises(GpulabConfigError, match="device='mps' was asked for"):
        pick_device("mps")


def test_pick_device_cuda_hidden_by_env(monkeypatch):
    fake = fake_torch(available=False)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(GpulabConfigError) as err:
        pick_device("cuda")
    assert "no CUDA GPU is visible (CUDA_VISIBLE_DEVICES='')" in str(err.value)


def test_pick_device_cuda_ordinal_out_of_range(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", FakeTorchWithDevice(fake_torch()))
    with pytest.raises(GpulabConfigError, match="sees only 2 GPU"):
        pick_device("cuda:5")


def test_pick_device_cuda_on_a_mac_build(monkeypatch):
    mac = fake_torch(available=False)
    mac.version.cuda = None
    mac.backends.mps.is_built = lambda: True
    monkeypatch.setitem(sys.modules, "torch", mac)
    with pytest.raises(GpulabConfigError, match="macOS build.*device='mps'"):
        pick_device("cuda")


def test_pick_device_xpu_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(available=False))  # no torch.xpu at all
    with pytest.raises(GpulabConfigError, match="sees no Intel XPU"):
        pick_device("xpu")


class FakeTorchWithDevice(SimpleNamespace):
    """fake_torch plus a torch.device that just records its name."""

    def __init__(self, base):
        super().__init__(**vars(base))
        self.device = lambda name: ("device", name)


@pytest.mark.gpu
def test_detect_and_pick_device_on_gpu_machine():
    assert pick_device("cuda") == torch.device("cuda")
    report = detect()
    assert report.backend in {"cuda", "rocm"} and report.gpus
    assert report.gpus_present >= len(report.gpus)
    if report.gpus[0].source == "nvml":
        gpu = report.gpus[0]
        assert gpu.memory_total_bytes and gpu.compute_capability and gpu.driver_version


# --------------------------------------------------------------------------- robustness
# Found by fuzzing detection with odd driver values and broken libraries: each must leave a
# report (the GPU kept, the odd field unknown, a note saying why), never a traceback.


class OddNVML(FakeNVML):
    """A fake NVML whose values can be replaced by what real drivers sometimes return."""

    def __init__(self, odd: dict, **kwargs):
        super().__init__([full_gpu("NVIDIA GeForce RTX 4090", UUID0)], **kwargs)
        self.gpus[0].update(odd)

    def nvmlDeviceGetName(self, h):
        name = self._get("name", h)
        return name if isinstance(name, bytes) else name.encode()


@pytest.mark.parametrize(
    "odd, field, unknown",
    [
        ({"memory": SimpleNamespace(total="N/A", free="N/A")}, "memory", "memory_total_bytes"),
        ({"memory": SimpleNamespace()}, "memory", "memory_total_bytes"),  # no attributes at all
        ({"temperature": "N/A"}, "temperature", "temperature_c"),
        ({"temperature": float("nan")}, "temperature", "temperature_c"),
        ({"pcie_gen": "N/A"}, "PCIe generation", "pcie_gen_current"),
        ({"pcie_width_max": 0xFFFFFFFF}, "max PCIe width", "pcie_width_max"),
        ({"cc": (-1, -1)}, "compute capability", "compute_capability"),
        ({"cc": "8.9"}, "compute capability", "compute_capability"),
        ({"power_mw": "N/A"}, "power draw", "power_draw_w"),
        ({"utilization": SimpleNamespace(gpu=-3)}, "utilization", "utilization_gpu_percent"),
    ],
)
def test_one_odd_nvml_value_keeps_the_gpu_and_loses_only_that_field(odd, field, unknown):
    gpus, present, notes = nvml.nvml_read(ALL, OddNVML(odd))
    assert present == 1 and len(gpus) == 1
    gpu = gpus[0]
    assert getattr(gpu, unknown) is None
    assert gpu.name == "NVIDIA GeForce RTX 4090" and gpu.sm_clock_mhz == 2520  # the rest is read
    assert any(note.startswith(f"GPU 0 {field}") for note in notes), notes


def test_an_undecodable_name_keeps_the_gpu():
    gpus, _, _ = nvml.nvml_read(ALL, OddNVML({"name": b"\xffRTX \xfe4090"}))
    assert len(gpus) == 1 and "RTX" in gpus[0].name and gpus[0].memory_total_bytes == 24 * GIB


def test_odd_gpus_do_not_make_the_doctor_say_there_is_no_gpu():
    """With memory 'N/A', the GPU is still reported; the doctor does not claim none was found."""
    from gpulab import doctor

    fake = OddNVML(
        {
            "memory": SimpleNamespace(total="N/A", free="N/A"),
            "pcie_gen": "N/A",
            "cc": (-1, -1),
            "temperature": float("nan"),
        }
    )
    report = detect(environ={}, nvml=fake, torch_module=fake_torch())
    codes = {f.code for f in doctor.diagnose(report)}
    assert len(report.gpus) == 1 and "no-gpu" not in codes


def test_an_absurd_device_count_is_bounded():
    class Countless(FakeNVML):
        def nvmlDeviceGetCount(self):
            return 2**32 - 1

        def nvmlDeviceGetHandleByIndex(self, i):  # a real NVML refuses indices it has not got
            if i >= len(self.gpus):
                raise FakeNVMLError("Invalid Argument")
            return i

    gpus, present, notes = nvml.nvml_read(ALL, Countless([full_gpu("NVIDIA L4", UUID0)]))
    assert present == nvml.MAX_GPUS and len(gpus) == 1
    assert any("reading the first 64" in n for n in notes)


@pytest.mark.parametrize("count", [-1, "2", None, True])
def test_an_unreadable_device_count_means_no_gpus_and_a_note(count):
    class Odd(FakeNVML):
        def nvmlDeviceGetCount(self):
            return count

    gpus, present, notes = nvml.nvml_read(ALL, Odd([full_gpu("NVIDIA L4", UUID0)]))
    assert gpus == [] and present == 0


def test_a_hung_driver_times_out_and_detection_falls_back_to_torch(tmp_path):
    import threading

    class Hung(FakeNVML):
        def nvmlInit(self):
            threading.Event().wait(60)  # a driver that never answers

    start = time.perf_counter()
    report = detect(
        environ={"GPULAB_DETECT_TIMEOUT_S": "0.2"},
        nvml=Hung(),
        torch_module=fake_torch(),
        dev_dir=str(tmp_path),
    )
    # a hang guard, not a timing: the driver hangs 60 s, and 20 s is 100 times the limit
    assert time.perf_counter() - start < 20
    assert any(n.startswith("NVML did not answer within 0.2 s") for n in report.notes)
    assert report.gpus and all(g.source == "torch" for g in report.gpus), report


@pytest.mark.parametrize(
    "module, error",
    [
        ("pynvml", "RuntimeError: nvml binding is broken"),
        ("torch", "OSError: libcudnn.so.9: cannot open shared object file"),
    ],
)
def test_a_library_that_raises_on_import_is_a_note_not_a_crash(
    monkeypatch, tmp_path, module, error
):
    kind, _, message = error.partition(": ")
    (tmp_path / f"{module}.py").write_text(f"raise {kind}({message!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    if module == "pynvml":
        found, why = nvml.import_nvml()
        assert found is None and why.endswith(error)
    else:
        found, why, _ = torch_probe.import_torch_traced()
        assert found is None and why == error
        info, notes = torch_probe.torch_info(None, why)
        assert not info.installed and info.import_error == error
        assert "fails to import" in notes[0]


def test_a_broken_torch_gets_its_own_doctor_finding():
    from gpulab import doctor

    report = detect(environ={}, nvml=FakeNVML([]), torch_module=fake_torch())
    broken = dataclasses.replace(
        report,
        torch=TorchInfo(installed=False, build="not installed", import_error="OSError: libcudnn"),
    )
    findings = {f.code: f for f in doctor.diagnose(broken)}
    assert "torch-broken" in findings and "torch-missing" not in findings
    assert "libcudnn" in findings["torch-broken"].message


def test_json_output_is_strict_even_with_non_finite_values():
    """A NaN anywhere in the report becomes null: strict JSON parsers must accept --json."""
    from gpulab import doctor

    report = detect(environ={}, nvml=FakeNVML([]), torch_module=fake_torch())
    odd = dataclasses.replace(
        report, cpu=dataclasses.replace(report.cpu, max_frequency_mhz=float("nan"))
    )

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    data = json.loads(doctor.render_json(odd, doctor.diagnose(odd)), parse_constant=refuse)
    assert data["report"]["cpu"]["max_frequency_mhz"] is None


def test_gpuinfo_keeps_only_sane_values_whatever_its_source():
    gpu = GPUInfo(
        index=0,
        name="",
        memory_total_bytes="N/A",
        temperature_c=float("inf"),
        pcie_gen_current=True,
        compute_capability="-1.-1",
        utilization_gpu_percent=150,
        throttle_reasons=["SwPowerCap", "Bogus"],
        driver_version=550,
    )
    assert gpu.name == "GPU 0" and gpu.memory_total_bytes is None and gpu.temperature_c is None
    assert gpu.pcie_gen_current is None and gpu.compute_capability is None
    assert gpu.utilization_gpu_percent is None and gpu.throttle_reasons == ["SwPowerCap"]
    assert gpu.driver_version is None


@pytest.mark.parametrize("bad", ["maybe", "True", 1, 0, None, 0.0])
def test_quick_must_be_a_bool_and_the_error_names_it(bad):
    from gpulab.core.errors import GpulabConfigError

    with pytest.raises(GpulabConfigError, match=r"^quick=.* must be True or False$") as err:
        hardware.check_quick(bad)
    assert err.value.field == "quick"


def test_quick_true_and_false_pass():
    assert hardware.check_quick(True) is None and hardware.check_quick(False) is None
