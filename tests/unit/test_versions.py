"""The version table (chapter 5) reads the report and says what matters."""

import stat

from gpulab import hardware, versions
from gpulab.machine.hardware import GPUInfo, TorchInfo


def _report(gpus, torch_info):
    r = hardware.detect()
    r.gpus, r.torch = gpus, torch_info
    return r


def test_rows_on_a_cuda_machine():
    gpu = GPUInfo(0, "RTX 4090", driver_version="550.54.14", cuda_driver_version="12.4")
    t = TorchInfo(
        True, "2.5.1+cu121", cuda_version="12.1", build="cuda", arch_list=["sm_80", "sm_89"]
    )
    rows = {r.what: r for r in versions.version_rows(_report([gpu], t), toolkit="11.8")}
    assert rows["NVIDIA driver"].value == "550.54.14"
    assert rows["newest CUDA the driver supports"].value == "12.4"
    assert rows["CUDA runtime inside the wheel"].value == "12.1"
    assert rows["local CUDA toolkit (nvcc)"].value == "11.8"
    assert rows["local CUDA toolkit (nvcc)"].matters_for_pytorch.startswith("no")
    assert rows["GPU architectures compiled in"].value == "sm_80, sm_89"


def test_rows_on_a_cpu_only_build():
    t = TorchInfo(True, "2.13.0+cpu", build="cpu-only")
    rows = {r.what: r for r in versions.version_rows(_report([], t))}
    assert "cannot use any GPU" in rows["PyTorch build"].value
    assert rows["NVIDIA driver"].value == "none found"


def test_local_toolkit_parses_nvcc(tmp_path):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert versions.local_toolkit(str(fake)) == "12.4"
    assert versions.local_toolkit(str(tmp_path / "missing")) is None
