"""Job runs on SQLAlchemy Core: one row per run of a job, with its per-step reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Row

from paperfeed.domain.job_runs import JobRun, StepReport

from .leases import SqlLeases
from .schema_jobs import job_runs

__all__ = ["SqlJobStore"]


def _run(row: Row[Any]) -> JobRun:
    m = row._mapping
    return JobRun(
        id=m["id"],
        job=m["job"],
        slot=m["slot"],
        trigger=m["trigger"],
        status=m["status"],
        holder=m["holder"],
        started_at=m["started_at"] or datetime.now(UTC),
        finished_at=m["finished_at"],
        steps=tuple(StepReport.from_json(s) for s in m["steps"] or []),
        error=m["error"],
    )


class SqlJobStore(SqlLeases):
    """:class:`~paperfeed.services.jobs.RunStore` (job runs and the leases that serialise them)."""

    def start_run(self, job: str, slot: datetime | None, trigger: str, holder: str, now: datetime) -> int:
        values: dict[str, Any] = {
            "job": job,
            "slot": slot,
            "trigger": trigger,
            "status": "running",
            "holder": holder,
            "started_at": now,
            "steps": [],
        }
        with self.engine.begin() as conn:
            run_id = conn.execute(insert(job_runs).values(values).returning(job_runs.c.id)).scalar_one()
        return int(run_id)

    def save_steps(self, run_id: int, steps: Sequence[StepReport]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(job_runs).where(job_runs.c.id == run_id).values(steps=[s.to_json() for s in steps])
            )

    def finish_run(
        self, run_id: int, status: str, steps: Sequence[StepReport], error: str | None, now: datetime
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(job_runs)
                .where(job_runs.c.id == run_id)
                .values(status=status, steps=[s.to_json() for s in steps], error=error, finished_at=now)
            )

    def runs(self, *, job: str | None = None, limit: int = 20) -> list[JobRun]:
        query = select(job_runs).order_by(job_runs.c.id.desc()).limit(limit)
        if job is not None:
            query = query.where(job_runs.c.job == job)
        with self.engine.connect() as conn:
            return [_run(r) for r in conn.execute(query)]

    def runs_for_slot(self, job: str, slot: datetime) -> list[JobRun]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(job_runs).where(job_runs.c.job == job, job_runs.c.slot == slot).order_by(job_runs.c.id)
            ).all()
        return [_run(r) for r in rows]

    def interrupt_dead_runs(self, is_dead: Callable[[str], bool], now: datetime) -> int:
        """Mark ``running`` rows whose process is gone as ``interrupted`` (a crash, a kill -9)."""
        with self.engine.connect() as conn:
            running = conn.execute(
                select(job_runs.c.id, job_runs.c.holder).where(job_runs.c.status == "running")
            ).all()
        dead = [rid for rid, holder in running if is_dead(holder)]
        if dead:
            with self.engine.begin() as conn:
                conn.execute(
                    update(job_runs)
                    .where(job_runs.c.id.in_(dead), job_runs.c.status == "running")
                    .values(status="interrupted", finished_at=now, error="the process running it stopped")
                )
        return len(dead)
