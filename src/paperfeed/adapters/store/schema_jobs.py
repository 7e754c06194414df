"""Tables for background jobs (on the shared ``schema.metadata``).

- ``job_runs``: one row per run of a job (start, end, per-step counts, error).
- ``job_leases``: named leases with an expiry, the cross-process lock of the scheduler, the jobs and the
  digest sender.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Index, Integer, String, Table, Text

from .columns import UtcDateTime
from .schema import metadata

__all__ = ["job_leases", "job_runs", "metadata"]

job_runs = Table(
    "job_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job", String(32), nullable=False),
    Column("slot", UtcDateTime()),  # the scheduled time it ran for; NULL when run by hand
    Column("trigger", String(16), nullable=False),  # scheduler | manual
    Column("status", String(16), nullable=False),  # running | ok | partial | failed | interrupted
    Column("holder", String(200), nullable=False),  # host:pid of the process that ran it
    Column("started_at", UtcDateTime(), nullable=False),
    Column("finished_at", UtcDateTime()),
    Column("steps", JSON, nullable=False),  # [{name, status, counts, error, seconds}]
    Column("error", Text),
    Index("ix_job_runs_job_slot", "job", "slot"),
    Index("ix_job_runs_started_at", "started_at"),
)

job_leases = Table(
    "job_leases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(200), nullable=False),  # host:pid:random of the owner
    Column("acquired_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
)
