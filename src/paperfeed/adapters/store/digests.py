"""Digest subscriptions, the send ledger and bounces on SQLAlchemy Core (job runs: ``job_runs``).

Portable SQL only (SQLite and PostgreSQL); the one dialect-specific construct is ``INSERT … ON CONFLICT
DO NOTHING``, chosen per dialect as the paper store does. Every state change of a ledger row is a
compare-and-set (``UPDATE … WHERE id = ? AND status = ?``) in its own short transaction, so a row's state
on disk is always the last step that really completed — what crash recovery relies on.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, Row
from sqlalchemy.exc import IntegrityError

from paperfeed.domain.digest import (
    Cadence,
    Digest,
    DigestStatus,
    Preferences,
    Section,
    Subscription,
    SubscriptionStatus,
)
from paperfeed.domain.digest_ledger import LedgerEntry, NewDigest, NewGroupDigest

from .columns import as_date
from .leases import SqlLeases
from .schema import listings, papers
from .schema_digests import (
    digest_sent_papers,
    digest_subscriptions,
    digests,
    mail_bounces,
)

__all__ = ["SqlDigestStore", "StoredSubscription"]

_CHUNK = 500


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class StoredSubscription:
    """A subscription with what only the subscription service needs (the confirmation state)."""

    subscription: Subscription
    confirm_nonce: str | None
    confirm_sent_at: datetime | None


def _prefs_row(prefs: Preferences) -> dict[str, Any]:
    return {
        "cadence": prefs.cadence.value,
        "weekday": prefs.weekday,
        "send_hour": prefs.send_hour,
        "timezone": prefs.timezone,
        "sections": [s.value for s in prefs.sections],
        "categories": list(prefs.categories),
        "max_items": prefs.max_items,
    }


def _subscription(row: Row[Any]) -> StoredSubscription:
    m = row._mapping
    prefs = Preferences(
        cadence=Cadence(m["cadence"]),
        send_hour=m["send_hour"],
        timezone=m["timezone"],
        weekday=m["weekday"],
        sections=tuple(Section(s) for s in m["sections"] if s in Section.__members__),
        categories=tuple(m["categories"]),
        max_items=m["max_items"],
    )
    sub = Subscription(
        id=m["id"],
        email=m["email"],
        status=SubscriptionStatus(m["status"]),
        preferences=prefs,
        user_id=m["user_id"],
        created_at=m["created_at"] or _now(),
        confirmed_at=m["confirmed_at"],
    )
    return StoredSubscription(sub, m["confirm_nonce"], m["confirm_sent_at"])


def _entry(row: Row[Any]) -> LedgerEntry:
    m = row._mapping
    return LedgerEntry(
        id=m["id"],
        subscription_id=m["subscription_id"] or 0,
        period=m["period"],
        slot=m["slot"] or _now(),
        email=m["email"],
        status=DigestStatus(m["status"]),
        digest=Digest.from_json(m["content"]),
        attempts=m["attempts"],
        last_error=m["last_error"],
        composed_at=m["composed_at"] or _now(),
        sent_at=m["sent_at"],
        group_id=m["group_id"],
        user_id=m["user_id"],
    )


class SqlDigestStore(SqlLeases):
    """Digest subscriptions, the send ledger and bounces, on the paper store's engine; the leases (the
    ``digest-send`` lease the sender holds) are the job store's table."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    # -- subscriptions ------------------------------------------------------------------------------

    def subscription(self, subscription_id: int) -> StoredSubscription | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(digest_subscriptions).where(digest_subscriptions.c.id == subscription_id)
            ).first()
        return None if row is None else _subscription(row)

    def subscription_by_email(self, email: str) -> StoredSubscription | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(digest_subscriptions).where(digest_subscriptions.c.email == email.lower())
            ).first()
        return None if row is None else _subscription(row)

    def subscription_of_user(self, user_id: int) -> StoredSubscription | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(digest_subscriptions)
                .where(digest_subscriptions.c.user_id == user_id)
                .order_by(digest_subscriptions.c.id)
            ).first()
        return None if row is None else _subscription(row)

    def create_subscription(
        self,
        email: str,
        prefs: Preferences,
        *,
        status: SubscriptionStatus,
        user_id: int | None,
        now: datetime,
    ) -> StoredSubscription:
        """Insert a subscription; an address that already has one gets that one back unchanged."""
        values = {
            "email": email.lower(),
            "user_id": user_id,
            "status": status.value,
            "created_at": now,
            "updated_at": now,
            "confirmed_at": now if status == SubscriptionStatus.active else None,
            **_prefs_row(prefs),
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(digest_subscriptions).values(values))
        except IntegrityError:
            pass  # created meanwhile by another request: return that one
        found = self.subscription_by_email(email)
        assert found is not None
        return found

    def update_subscription(
        self,
        subscription_id: int,
        *,
        now: datetime,
        prefs: Preferences | None = None,
        status: SubscriptionStatus | None = None,
        user_id: int | None = None,
        new_nonce: bool = False,
        confirm_sent_at: datetime | None = None,
        clear_nonce: bool = False,
    ) -> StoredSubscription | None:
        values: dict[str, Any] = {"updated_at": now}
        if prefs is not None:
            values.update(_prefs_row(prefs))
        if status is not None:
            values["status"] = status.value
            if status == SubscriptionStatus.active:
                values["confirmed_at"] = now
                values["unsubscribed_at"] = None
            elif status == SubscriptionStatus.unsubscribed:
                values["unsubscribed_at"] = now
        if user_id is not None:
            values["user_id"] = user_id
        if new_nonce:
            values["confirm_nonce"] = secrets.token_urlsafe(12)
        if clear_nonce:
            values["confirm_nonce"] = None
        if confirm_sent_at is not None:
            values["confirm_sent_at"] = confirm_sent_at
        with self.engine.begin() as conn:
            conn.execute(
                update(digest_subscriptions)
                .where(digest_subscriptions.c.id == subscription_id)
                .values(values)
            )
        return self.subscription(subscription_id)

    def active_subscriptions(self, batch: int = 2000) -> Iterator[list[Subscription]]:
        """Every active subscription, a page at a time (keyset by id)."""
        last = 0
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(digest_subscriptions)
                    .where(
                        digest_subscriptions.c.status == SubscriptionStatus.active.value,
                        digest_subscriptions.c.id > last,
                    )
                    .order_by(digest_subscriptions.c.id)
                    .limit(batch)
                ).all()
            if not rows:
                return
            page = [_subscription(r).subscription for r in rows]
            last = page[-1].id
            yield page

    def subscriptions_by_id(self, ids: Sequence[int]) -> dict[int, Subscription]:
        found: dict[int, Subscription] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                rows = conn.execute(select(digest_subscriptions).where(digest_subscriptions.c.id.in_(chunk)))
                for row in rows:
                    sub = _subscription(row).subscription
                    found[sub.id] = sub
        return found

    def subscription_counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(digest_subscriptions.c.status, func.count()).group_by(digest_subscriptions.c.status)
            ).all()
        return {str(status): int(n) for status, n in rows}

    # -- composing ----------------------------------------------------------------------------------

    def settled_periods(
        self, subscription_ids: Sequence[int], periods: Iterable[str]
    ) -> set[tuple[int, str]]:
        """Which (subscription, period) pairs already have a ledger row."""
        wanted = sorted(set(periods))
        found: set[tuple[int, str]] = set()
        if not wanted:
            return found
        with self.engine.connect() as conn:
            for start in range(0, len(subscription_ids), _CHUNK):
                chunk = subscription_ids[start : start + _CHUNK]
                rows = conn.execute(
                    select(digests.c.subscription_id, digests.c.period).where(
                        digests.c.subscription_id.in_(chunk), digests.c.period.in_(wanted)
                    )
                )
                found.update((sid, period) for sid, period in rows)
        return found

    def sent_papers(self, subscription_ids: Sequence[int]) -> dict[int, set[str]]:
        """Every paper each subscription was already given (composed into one of its digests)."""
        sent: dict[int, set[str]] = {sid: set() for sid in subscription_ids}
        with self.engine.connect() as conn:
            for start in range(0, len(subscription_ids), _CHUNK):
                chunk = subscription_ids[start : start + _CHUNK]
                rows = conn.execute(
                    select(digest_sent_papers.c.subscription_id, digest_sent_papers.c.paper_id).where(
                        digest_sent_papers.c.subscription_id.in_(chunk)
                    )
                )
                for sid, pid in rows:
                    sent[sid].add(pid)
        return sent

    def add_digests(self, items: Sequence[NewDigest], now: datetime) -> int:
        """Record composed digests (pending, or ``empty``) and their papers in one transaction.

        A (subscription, period) that already has a row is skipped, so composing twice adds nothing.
        """
        if not items:
            return 0
        rows = [
            {
                "subscription_id": item.subscription_id,
                "period": item.period,
                "slot": item.slot,
                "email": item.email,
                "status": (DigestStatus.empty if item.digest.empty else DigestStatus.pending).value,
                "content": item.digest.to_json(),
                "paper_count": len(item.digest.paper_ids),
                "attempts": 0,
                "composed_at": now,
                "updated_at": now,
            }
            for item in items
        ]
        by_sub = {item.subscription_id: item for item in items}
        stmt = (
            self._insert(digests)
            .on_conflict_do_nothing(index_elements=[digests.c.subscription_id, digests.c.period])
            .returning(digests.c.id, digests.c.subscription_id)
        )
        with self.engine.begin() as conn:
            created = conn.execute(stmt, rows).all()
            papers_rows = [
                {"subscription_id": sid, "paper_id": pid, "digest_id": did}
                for did, sid in created
                for pid in by_sub[sid].digest.paper_ids
            ]
            if papers_rows:
                conn.execute(
                    self._insert(digest_sent_papers).on_conflict_do_nothing(
                        index_elements=[digest_sent_papers.c.subscription_id, digest_sent_papers.c.paper_id]
                    ),
                    papers_rows,
                )
        return len(created)

    def papers_mailed_to(self, user_id: int) -> set[str]:
        """Every paper the reader's digest subscription already mailed them
        (:class:`~paperfeed.domain.recommend.MailedPapers`: "For you" never repeats one)."""
        stored = self.subscription_of_user(user_id)
        if stored is None:
            return set()
        sid = stored.subscription.id
        return self.sent_papers([sid]).get(sid, set())

    def settled_group_periods(self, group_id: int, period: str) -> set[int]:
        """The members of ``group_id`` whose digest of ``period`` has a ledger row already."""
        with self.engine.connect() as conn:
            return set(
                conn.execute(
                    select(digests.c.user_id).where(
                        digests.c.group_id == group_id, digests.c.period == period
                    )
                ).scalars()
            )

    def add_group_digests(self, items: Sequence[NewGroupDigest], now: datetime) -> int:
        """Record reading groups' digests (pending, or ``empty``) in one transaction; a (group, member,
        week) that already has a row is skipped, so composing twice — or after a restart — adds nothing."""
        if not items:
            return 0
        rows = [
            {
                "subscription_id": None,
                "group_id": item.group_id,
                "user_id": item.user_id,
                "period": item.period,
                "slot": item.slot,
                "email": item.email,
                "status": (DigestStatus.empty if item.digest.empty else DigestStatus.pending).value,
                "content": item.digest.to_json(),
                "paper_count": len(item.digest.paper_ids),
                "attempts": 0,
                "composed_at": now,
                "updated_at": now,
            }
            for item in items
        ]
        stmt = (
            self._insert(digests)
            .on_conflict_do_nothing(index_elements=[digests.c.group_id, digests.c.user_id, digests.c.period])
            .returning(digests.c.id)
        )
        with self.engine.begin() as conn:
            return len(conn.execute(stmt, rows).all())

    def paper_times_in_window(self, since: datetime, until: datetime) -> list[tuple[str, datetime]]:
        """Papers published, or listed, in ``[since, until)``, each with the earlier of those moments
        (a listing counts from the start of its day): the candidates of category sections."""
        found: dict[str, datetime] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(papers.c.id, papers.c.published).where(
                    papers.c.published >= since, papers.c.published < until
                )
            )
            for pid, published in rows:
                found[pid] = published or since
            listed = conn.execute(
                select(listings.c.paper_id, func.min(listings.c.day))
                .where(listings.c.day >= since.date(), listings.c.day < until.date() + timedelta(days=1))
                .group_by(listings.c.paper_id)
            )
            for pid, day in listed:
                start = datetime.combine(as_date(day), datetime.min.time(), UTC)
                if since <= start < until:
                    found[pid] = min(found.get(pid, start), start)
        return list(found.items())

    # -- the send ledger ----------------------------------------------------------------------------

    def recover(self, now: datetime) -> tuple[int, int]:
        """After a sender died: rows it left ``sending`` go back to ``pending`` (the server cannot have
        them), rows it left ``handed`` become ``unconfirmed`` (it may have them: never send again).

        Only call this while holding the sender lease (no other sender is running)."""
        with self.engine.begin() as conn:
            requeued = conn.execute(
                update(digests)
                .where(digests.c.status == DigestStatus.sending.value)
                .values(status=DigestStatus.pending.value, updated_at=now)
            ).rowcount
            unconfirmed = conn.execute(
                update(digests)
                .where(digests.c.status == DigestStatus.handed.value)
                .values(
                    status=DigestStatus.unconfirmed.value,
                    updated_at=now,
                    last_error="the sender stopped after handing the message over; not sent again",
                )
            ).rowcount
        return requeued, unconfirmed

    def due(self, now: datetime, *, after_id: int = 0, limit: int = 200) -> list[LedgerEntry]:
        """Pending rows whose (re)try time has come, by id."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(digests)
                .where(
                    digests.c.status == DigestStatus.pending.value,
                    digests.c.id > after_id,
                    or_(digests.c.next_attempt_at.is_(None), digests.c.next_attempt_at <= now),
                )
                .order_by(digests.c.id)
                .limit(limit)
            ).all()
        return [_entry(r) for r in rows]

    def claim(self, digest_ids: Sequence[int], now: datetime) -> set[int]:
        """``pending → sending`` for these rows in one transaction, counting an attempt each; returns
        the ids claimed (rows no longer pending are left alone)."""
        with self.engine.begin() as conn:
            claimed = conn.execute(
                update(digests)
                .where(digests.c.id.in_(list(digest_ids)), digests.c.status == DigestStatus.pending.value)
                .values(status=DigestStatus.sending.value, attempts=digests.c.attempts + 1, updated_at=now)
                .returning(digests.c.id)
            ).scalars()
            return set(claimed)

    def mark_sent(self, digest_ids: Sequence[int], now: datetime) -> int:
        """``handed → sent`` for these rows (the server accepted them) in one transaction."""
        with self.engine.begin() as conn:
            return conn.execute(
                update(digests)
                .where(digests.c.id.in_(list(digest_ids)), digests.c.status == DigestStatus.handed.value)
                .values(status=DigestStatus.sent.value, sent_at=now, updated_at=now, last_error=None)
            ).rowcount

    def unclaim(self, now: datetime) -> int:
        """Claimed rows a stopped run did not get to: ``sending → pending``, their attempt uncounted.

        Only call this while holding the sender lease."""
        with self.engine.begin() as conn:
            return conn.execute(
                update(digests)
                .where(digests.c.status == DigestStatus.sending.value)
                .values(status=DigestStatus.pending.value, attempts=digests.c.attempts - 1, updated_at=now)
            ).rowcount

    def transition(
        self, digest_id: int, expected: DigestStatus, to: DigestStatus, now: datetime, **values: Any
    ) -> bool:
        """Move a row from ``expected`` to ``to`` (compare-and-set); False when it was not in ``expected``."""
        fields: dict[str, Any] = {"status": to.value, "updated_at": now, **values}
        if to == DigestStatus.handed:
            fields["handed_at"] = now
        if to == DigestStatus.sent:
            fields["sent_at"] = now
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(digests)
                .where(digests.c.id == digest_id, digests.c.status == expected.value)
                .values(fields)
            ).rowcount
        return bool(changed)

    def entry(self, digest_id: int) -> LedgerEntry | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(digests).where(digests.c.id == digest_id)).first()
        return None if row is None else _entry(row)

    def entries(self, *, email: str | None = None, period: str | None = None) -> list[LedgerEntry]:
        query = select(digests).order_by(digests.c.id)
        if email is not None:
            query = query.where(digests.c.email == email.lower())
        if period is not None:
            query = query.where(digests.c.period == period)
        with self.engine.connect() as conn:
            return [_entry(r) for r in conn.execute(query)]

    def ledger_counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(digests.c.status, func.count()).group_by(digests.c.status)).all()
        return {str(status): int(n) for status, n in rows}

    def next_retry(self) -> datetime | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(func.min(digests.c.next_attempt_at)).where(
                    digests.c.status == DigestStatus.pending.value
                )
            ).scalar()
        return value

    # -- bounces ------------------------------------------------------------------------------------

    def add_bounce(self, email: str, reason: str, now: datetime) -> None:
        stmt = self._insert(mail_bounces).values(email=email.lower(), reason=reason[:1000], bounced_at=now)
        with self.engine.begin() as conn:
            conn.execute(stmt.on_conflict_do_nothing(index_elements=[mail_bounces.c.email]))

    def bounced(self, emails: Sequence[str]) -> set[str]:
        wanted = sorted({e.lower() for e in emails})
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                found.update(
                    conn.execute(
                        select(mail_bounces.c.email).where(mail_bounces.c.email.in_(chunk))
                    ).scalars()
                )
        return found

    def clear_bounce(self, email: str) -> bool:
        with self.engine.begin() as conn:
            return bool(
                conn.execute(delete(mail_bounces).where(mail_bounces.c.email == email.lower())).rowcount
            )
