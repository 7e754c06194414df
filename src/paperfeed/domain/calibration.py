"""Choosing the embedding backend by measuring it on this machine: the rule and the record.

The same model runs on several backends (torch float32, ONNX float32, ONNX int8) whose speed ranks differ
by CPU: int8 wins by 1.4x on an AVX512-VNNI machine and loses on an AVX2-only one. So paperfeed times
them on the instance's own texts and keeps the fastest whose vectors are the reference's (torch float32)
on every probe text. Speed is texts per CPU-second of the process: on a shared machine it is far
steadier than wall-clock time, and CPU is what a background indexer competes for.

"The reference's" means to float precision, not merely close: the fastest backend must not cost ranking
quality. ONNX int8's vectors are close (cosine to float32 about 0.99 on every text) and were chosen under a
0.99 floor on AVX512-VNNI machines, yet they rank measurably worse (SciFact nDCG@10, docs/benchmarks.md),
so the floor is where only float32 vectors pass: ONNX float32 agrees with torch to > 0.99999.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "AGREEMENT_FLOOR",
    "BackendTiming",
    "Calibration",
    "CalibrationRecords",
    "CpuMeasured",
    "choose_backend",
]

AGREEMENT_FLOOR = 0.999  # cosine to the reference vector, on every probe text (see the module doc)


@runtime_checkable
class CpuMeasured(Protocol):
    """An embedder that embeds in another process (``adapters/embed/child.py``): the CPU seconds that
    process used, which calibration times instead of its own."""

    def cpu_seconds(self) -> float: ...


@dataclass(frozen=True, slots=True)
class BackendTiming:
    """One backend measured on the probe texts (model load and one-off export excluded)."""

    backend: str
    model_id: str  # the vector space its vectors live in
    texts: int
    cpu_seconds: float
    wall_seconds: float
    min_cosine: float  # lowest cosine to the reference backend's vector over the probe texts
    mean_cosine: float

    @property
    def per_cpu_second(self) -> float:
        return self.texts / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    @property
    def per_second(self) -> float:
        return self.texts / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def agrees(self, floor: float = AGREEMENT_FLOOR) -> bool:
        return self.min_cosine >= floor


def choose_backend(timings: Sequence[BackendTiming], floor: float = AGREEMENT_FLOOR) -> BackendTiming:
    """The fastest (per CPU-second) of the backends that agree with the reference on every probe text.

    The reference itself always agrees (cosine 1 with itself), so there is always a choice when it was
    measured; ties keep the earlier entry (the candidates are listed reference first)."""
    agreeing = [t for t in timings if t.agrees(floor)]
    if not agreeing:
        raise ValueError("no backend agrees with the reference: was the reference measured?")
    best = agreeing[0]
    for timing in agreeing[1:]:
        if timing.per_cpu_second > best.per_cpu_second:
            best = timing
    return best


@dataclass(frozen=True, slots=True)
class Calibration:
    """What a calibration measured and chose; stored so later processes reuse the choice."""

    backend: str
    model_id: str
    model: str  # the model's short name: a record made for another model does not apply
    cpu: str  # CPU model and vector flags: a record made on another machine does not apply
    threads: int
    reference: str
    floor: float
    probe_source: str  # "instance papers" or "bundled sentences"
    measured_at: str  # ISO 8601, UTC
    timings: tuple[BackendTiming, ...] = field(default=())

    def applies_to(self, model: str, cpu: str, floor: float = AGREEMENT_FLOOR) -> bool:
        """Made for this model on this CPU, under a rule at least as strict as ``floor`` (a choice made
        under a looser one, e.g. int8 under the old 0.99, is measured again)."""
        return self.model == model and self.cpu == cpu and self.floor >= floor

    def table(self) -> list[str]:
        """Human-readable lines, one per backend, the chosen one marked."""
        lines = []
        for t in self.timings:
            mark = "*" if t.backend == self.backend else " "
            verdict = "agrees" if t.agrees(self.floor) else f"below {self.floor}"
            lines.append(
                f"{mark} {t.backend:<10} {t.per_cpu_second:7.1f} texts/CPU-s {t.per_second:7.1f} texts/s  "
                f"cosine to {self.reference} min {t.min_cosine:.4f} mean {t.mean_cosine:.4f} ({verdict})"
            )
        return lines


class CalibrationRecords(Protocol):
    """Where the calibration is kept (a small file in the data folder)."""

    def load(self) -> Calibration | None:
        """The stored calibration, or None when there is none (or it cannot be read)."""
        ...

    def save(self, calibration: Calibration) -> None: ...
