"""What this machine offers the models: CPU cores, RAM, native bf16 and other instruction sets, CUDA devices and MPS,
read through psutil, /proc/cpuinfo and torch. Profiles (profile.py) are chosen against it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

__all__ = ("CPU_BF16_FLAGS", "CPU_FEATURE_FLAGS", "CudaDevice", "HardwareDetector", "HardwareInfo")

# /proc/cpuinfo flags that give native bf16 matmuls (without them bf16 is emulated and slower than fp32).
CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# Instruction sets reported with the hardware: they decide which matmuls run natively (bf16, int8 dot products).
CPU_FEATURE_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


@dataclass(frozen=True, slots=True)
class CudaDevice:
    index: int
    name: str
    total_memory_gb: float
    free_memory_gb: float


@dataclass(frozen=True, slots=True)
class HardwareInfo:
    cpu_cores: int
    ram_gb: float
    cpu_bf16: bool
    cuda_devices: tuple[CudaDevice, ...] = ()
    mps: bool = False
    cpu_features: tuple[str, ...] = field(default=(), compare=False)  # of CPU_FEATURE_FLAGS, for the log


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


# torch sees a GPU on Linux only through one of these device files (NVIDIA; AMD's ROCm; WSL2's GPU): without any,
# the probes below skip importing torch (seconds and hundreds of MB for stats on a small VPS).
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


def _no_gpu_here() -> bool:
    return sys.platform.startswith("linux") and not any(os.path.exists(path) for path in GPU_DEVICE_FILES)


def _probe_cuda() -> tuple[CudaDevice, ...]:
    if _no_gpu_here():
        return ()
    import torch

    if not torch.cuda.is_available():
        return ()
    devices = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        devices.append(CudaDevice(index, torch.cuda.get_device_name(index), total / 2**30, free / 2**30))
    return tuple(devices)


def _probe_mps() -> bool:
    if sys.platform != "darwin":  # Apple's GPUs only
        return False
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def _probe_cores() -> int:
    """CPUs this process may run on: its affinity where the OS keeps one (Linux, Windows), else every logical CPU."""
    process = psutil.Process()
    if hasattr(process, "cpu_affinity"):  # psutil has none on macOS
        return len(process.cpu_affinity()) or 1
    return psutil.cpu_count(logical=True) or 1


def _probe_ram_gb() -> float:
    return float(psutil.virtual_memory().total) / 2**30


class HardwareDetector:
    """Reads the machine through psutil, /proc/cpuinfo (bf16 flags, Linux only) and torch, with no subprocess;
    every probe can be replaced in tests."""

    def __init__(
        self,
        *,
        cpuinfo: Callable[[], str] = lambda: _read_text("/proc/cpuinfo"),
        ram_gb: Callable[[], float] = _probe_ram_gb,
        cores: Callable[[], int] = _probe_cores,
        cuda: Callable[[], tuple[CudaDevice, ...]] = _probe_cuda,
        mps: Callable[[], bool] = _probe_mps,
    ) -> None:
        self._cpuinfo, self._ram_gb, self._cores, self._cuda, self._mps = cpuinfo, ram_gb, cores, cuda, mps

    def detect(self) -> HardwareInfo:
        flags: set[str] = set()
        for line in self._cpuinfo().splitlines():
            if line.startswith(("flags", "Features")):
                flags.update(line.partition(":")[2].split())
        return HardwareInfo(
            cpu_cores=self._cores(),
            ram_gb=self._ram_gb(),
            cpu_bf16=bool(flags & CPU_BF16_FLAGS),
            cuda_devices=self._cuda(),
            mps=self._mps(),
            cpu_features=tuple(flag for flag in CPU_FEATURE_FLAGS if flag in flags),
        )
