"""Named leases with an expiry on SQLAlchemy Core: the cross-process lock of the scheduler, the jobs and
the digest sender (``services.jobs.Lease`` renews and releases them)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from .schema_jobs import job_leases

__all__ = ["SqlLeases"]


class SqlLeases:
    """:class:`~paperfeed.services.jobs.LeaseStore` on the paper store's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def lease(self, name: str) -> tuple[str, datetime] | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(job_leases.c.holder, job_leases.c.expires_at).where(job_leases.c.name == name)
            ).first()
        if row is None:
            return None
        return row[0], row[1]  # expires_at is NOT NULL

    def try_lease(
        self, name: str, holder: str, until: datetime, now: datetime, *, take_from: str | None = None
    ) -> bool:
        """Take lease ``name`` if it is free, expired, already ours, or held by ``take_from`` (a holder
        the caller knows is dead). One statement either way, so two processes cannot both win."""
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(job_leases).values(name=name, holder=holder, acquired_at=now, expires_at=until)
                )
            return True
        except IntegrityError:
            pass
        takeable = [job_leases.c.expires_at < now, job_leases.c.holder == holder]
        if take_from is not None:
            takeable.append(job_leases.c.holder == take_from)
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(job_leases)
                .where(and_(job_leases.c.name == name, or_(*takeable)))
                .values(holder=holder, acquired_at=now, expires_at=until)
            ).rowcount
        return bool(changed)

    def renew_lease(self, name: str, holder: str, until: datetime) -> bool:
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(job_leases)
                .where(job_leases.c.name == name, job_leases.c.holder == holder)
                .values(expires_at=until)
            ).rowcount
        return bool(changed)

    def release_lease(self, name: str, holder: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(job_leases).where(job_leases.c.name == name, job_leases.c.holder == holder))
