"""Records of job runs and their steps, and the ports through which the job service keeps them and its
leases (``adapters/store/job_runs.py`` and ``adapters/store/leases.py`` implement them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

__all__ = ["JobRun", "LeaseStore", "RunStore", "StepRefused", "StepReport"]


class StepRefused(Exception):
    """A step could not do its work for a reason its message says in one line, which the operator acts on
    (too few papers for topics): recorded as the step's failure, logged without a traceback."""


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


class LeaseStore(Protocol):
    """Named leases with expiry, taken by compare-and-set (``services/jobs.py`` explains why)."""

    def lease(self, name: str) -> tuple[str, datetime] | None: ...

    def try_lease(
        self, name: str, holder: str, until: datetime, now: datetime, *, take_from: str | None = None
    ) -> bool: ...

    def renew_lease(self, name: str, holder: str, until: datetime) -> bool: ...

    def release_lease(self, name: str, holder: str) -> None: ...


class RunStore(LeaseStore, Protocol):
    """The ``job_runs`` records of the job service."""

    def start_run(self, job: str, slot: datetime | None, trigger: str, holder: str, now: datetime) -> int: ...

    def save_steps(self, run_id: int, steps: Sequence[StepReport]) -> None: ...

    def finish_run(
        self, run_id: int, status: str, steps: Sequence[StepReport], error: str | None, now: datetime
    ) -> None: ...

    def runs(self, *, job: str | None = None, limit: int = 20) -> list[JobRun]: ...

    def runs_for_slot(self, job: str, slot: datetime) -> list[JobRun]: ...

    def interrupt_dead_runs(self, is_dead: Callable[[str], bool], now: datetime) -> int: ...
