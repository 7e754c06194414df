"""Records of job runs and their steps, as the job service, the store and the surfaces exchange them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["JobRun", "StepReport"]


@dataclass(frozen=True, slots=True)
class StepReport:
    """What one step of a job did: ``ok``, ``failed`` or ``skipped``, with counts and the error."""

    name: str
    status: str
    counts: dict[str, int | float | str] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": self.status,
            "counts": dict(self.counts),
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }

    @staticmethod
    def from_json(value: dict[str, object]) -> StepReport:
        counts = value.get("counts")
        seconds = value.get("seconds")
        return StepReport(
            name=str(value.get("name", "")),
            status=str(value.get("status", "")),
            counts=dict(counts) if isinstance(counts, dict) else {},
            error=str(value["error"]) if value.get("error") else None,
            seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
        )

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in self.counts.items())
        return counts


@dataclass(frozen=True, slots=True)
class JobRun:
    id: int
    job: str
    slot: datetime | None
    trigger: str
    status: str  # running | ok | partial | failed | interrupted
    holder: str
    started_at: datetime
    finished_at: datetime | None
    steps: tuple[StepReport, ...]
    error: str | None

    @property
    def seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()
