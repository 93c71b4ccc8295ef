"""Hardware detection: the probes faked, and psutil faked as Linux, macOS and Windows present themselves."""

from __future__ import annotations

from types import SimpleNamespace

import psutil
import pytest

from cogs.memory.runtime.hardware import CudaDevice, HardwareDetector, HardwareInfo
from cogs.memory.runtime.profile import select_profile

GIB = 2**30
CPUINFO_BF16 = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n"
CPUINFO_AVX2 = "processor\t: 0\nflags\t\t: fpu sse avx2 fma\n"
LINUX_CPUINFO = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n"


class ProcessWithAffinity:
    """psutil.Process on Linux and Windows: the CPUs this process may run on."""

    def __init__(self, cpus: int) -> None:
        self._cpus = cpus

    def cpu_affinity(self) -> list[int]:
        return list(range(self._cpus))


class ProcessWithoutAffinity:
    """psutil.Process on macOS: no cpu_affinity at all."""


def fake_platform(monkeypatch: pytest.MonkeyPatch, *, process: object, logical_cpus: int, ram_gib: float) -> None:
    monkeypatch.setattr(psutil, "Process", lambda: process)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: logical_cpus)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(total=int(ram_gib * GIB)))


def detect(cpuinfo: str) -> HardwareInfo:
    return HardwareDetector(cpuinfo=lambda: cpuinfo, cuda=lambda: (), mps=lambda: False).detect()


def test_on_linux_the_cores_are_the_process_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_platform(monkeypatch, process=ProcessWithAffinity(4), logical_cpus=16, ram_gib=31.2)
    assert detect(LINUX_CPUINFO) == HardwareInfo(cpu_cores=4, ram_gb=pytest.approx(31.2), cpu_bf16=True)


def test_on_macos_the_cores_are_every_logical_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_platform(monkeypatch, process=ProcessWithoutAffinity(), logical_cpus=10, ram_gib=16.0)
    assert detect("") == HardwareInfo(cpu_cores=10, ram_gb=16.0, cpu_bf16=False)


def test_on_windows_ram_and_cores_come_from_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_platform(monkeypatch, process=ProcessWithAffinity(8), logical_cpus=8, ram_gib=64.0)
    assert detect("") == HardwareInfo(cpu_cores=8, ram_gb=64.0, cpu_bf16=False)


@pytest.mark.parametrize("process", [ProcessWithoutAffinity(), ProcessWithAffinity(8)], ids=["macos", "windows"])
def test_without_proc_a_profile_still_fits(monkeypatch: pytest.MonkeyPatch, process: object) -> None:
    fake_platform(monkeypatch, process=process, logical_cpus=8, ram_gib=16.0)
    assert select_profile(detect("")).name == "cpu-small"


def test_this_machine_reports_its_ram() -> None:
    assert HardwareDetector(cuda=lambda: (), mps=lambda: False).detect().ram_gb > 0.5


@pytest.mark.parametrize(("ram_gib", "expected"), [(2.0, "cpu-tiny"), (3.8, "cpu-tiny"), (4.0, "cpu-small"),
                                                    (16.0, "cpu-small")])
def test_a_cpu_under_4_gib_of_ram_gets_cpu_tiny(monkeypatch: pytest.MonkeyPatch, ram_gib: float,
                                                expected: str) -> None:
    fake_platform(monkeypatch, process=ProcessWithAffinity(2), logical_cpus=2, ram_gib=ram_gib)
    assert select_profile(detect("processor\t: 0\nflags\t\t: fpu avx2\n")).name == expected


def test_detector_reads_bf16_flag_ram_and_cores() -> None:
    detector = HardwareDetector(cpuinfo=lambda: CPUINFO_BF16, ram_gb=lambda: 16.0, cores=lambda: 4,
                                cuda=lambda: (), mps=lambda: False)
    assert detector.detect() == HardwareInfo(cpu_cores=4, ram_gb=16.0, cpu_bf16=True)


def test_detector_reports_no_bf16_on_an_avx2_cpu() -> None:
    detector = HardwareDetector(cpuinfo=lambda: CPUINFO_AVX2, ram_gb=lambda: 16.0, cores=lambda: 2,
                                cuda=lambda: (), mps=lambda: False)
    assert detector.detect().cpu_bf16 is False


def test_detector_passes_through_cuda_devices_and_mps() -> None:
    devices = (CudaDevice(0, "Fake A100", 40.0, 38.5),)
    detector = HardwareDetector(cpuinfo=lambda: "", ram_gb=lambda: 0.0, cores=lambda: 1,
                                cuda=lambda: devices, mps=lambda: True)
    info = detector.detect()
    assert (info.cuda_devices, info.mps) == (devices, True)


def test_detector_reports_the_cpus_vector_and_matrix_extensions() -> None:
    cpuinfo = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8\n"
    detector = HardwareDetector(cpuinfo=lambda: cpuinfo, ram_gb=lambda: 16.0, cores=lambda: 4,
                                cuda=lambda: (), mps=lambda: False)
    assert detector.detect().cpu_features == ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile",
                                              "amx_bf16", "amx_int8")
