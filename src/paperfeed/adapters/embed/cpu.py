"""What the embedding speed depends on: the CPU (model, vector instructions) and the cores we may use.

Timings differ several-fold between an AVX2-only and an AVX512/AMX CPU (int8 and bf16 kernels exist only
on the latter), so every speed figure and every calibration record carries this description.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuInfo", "available_cores", "cpu_info", "runs_in_background"]

_VECTOR_FLAGS = ("avx", "avx2", "fma", "avx_vnni", "amx")


@dataclass(frozen=True, slots=True)
class CpuInfo:
    model: str
    flags: tuple[str, ...]  # the vector-instruction flags only (avx*, fma, amx*), sorted

    def describe(self) -> str:
        return f"{self.model} [{' '.join(self.flags) or 'no AVX'}]"


def cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    """The CPU's model name and vector flags (Linux /proc/cpuinfo; elsewhere what ``platform`` knows)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return CpuInfo(platform.processor() or platform.machine(), ())
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = {f for f in value.split() if f.startswith(_VECTOR_FLAGS)}
    return CpuInfo(model or platform.machine(), tuple(sorted(flags)))


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a container's cpuset), not the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def runs_in_background() -> bool:
    """True when the process was started with a raised nice value (``paperfeed run``'s indexer is niced
    by 10): it shares the CPU with a server and should neither spin nor take every core."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0) > 0
    except (AttributeError, OSError):
        return False
