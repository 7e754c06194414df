"""Records of the digest send ledger, as the digest service and the store exchange them, and the ports
through which the digest service keeps them (``adapters/store/digests.py`` implements them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from paperfeed.domain.digest import Digest, DigestStatus, Subscription
from paperfeed.domain.job_runs import LeaseStore
from paperfeed.domain.models import Paper

__all__ = ["DigestLedger", "GroupDigestLedger", "LedgerEntry", "NewDigest", "NewGroupDigest", "PaperLookup"]


@dataclass(frozen=True, slots=True)
class NewDigest:
    """A digest just composed, to be written to the ledger under its key (subscription, period)."""

    subscription_id: int
    period: str
    slot: datetime
    email: str
    digest: Digest


@dataclass(frozen=True, slots=True)
class NewGroupDigest:
    """A reading group's weekly digest to one member, keyed by (group, member, ISO week)."""

    group_id: int
    user_id: int
    period: str
    slot: datetime
    email: str
    digest: Digest


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the send ledger: a subscription's digest, or (``group_id`` set, ``subscription_id`` 0)
    a reading group's digest to its member ``user_id``."""

    id: int
    subscription_id: int
    period: str
    slot: datetime
    email: str
    status: DigestStatus
    digest: Digest
    attempts: int
    last_error: str | None
    composed_at: datetime
    sent_at: datetime | None
    group_id: int | None = None
    user_id: int | None = None


class DigestLedger(LeaseStore, Protocol):
    """What the digest service keeps (``adapters/store/digests.py``)."""

    def active_subscriptions(self, batch: int = 2000) -> Iterator[list[Subscription]]: ...

    def settled_periods(
        self, subscription_ids: Sequence[int], periods: Iterable[str]
    ) -> set[tuple[int, str]]: ...

    def sent_papers(self, subscription_ids: Sequence[int]) -> dict[int, set[str]]: ...

    def add_digests(self, items: Sequence[NewDigest], now: datetime) -> int: ...

    def recover(self, now: datetime) -> tuple[int, int]: ...

    def due(self, now: datetime, *, after_id: int = 0, limit: int = 200) -> list[LedgerEntry]: ...

    def claim(self, digest_ids: Sequence[int], now: datetime) -> set[int]: ...

    def mark_sent(self, digest_ids: Sequence[int], now: datetime) -> int: ...

    def unclaim(self, now: datetime) -> int: ...

    def transition(
        self, digest_id: int, expected: DigestStatus, to: DigestStatus, now: datetime, **values: object
    ) -> bool: ...

    def add_bounce(self, email: str, reason: str, now: datetime) -> None: ...

    def bounced(self, emails: Sequence[str]) -> set[str]: ...

    def subscriptions_by_id(self, ids: Sequence[int]) -> dict[int, Subscription]: ...

    def ledger_counts(self) -> dict[str, int]:
        """Digests by status."""
        ...

    def next_retry(self) -> datetime | None:
        """When the earliest digest waiting for a retry is due."""
        ...


class PaperLookup(Protocol):
    """Papers by id, for rendering a composed digest (the paper store)."""

    def get_papers(self, paper_ids: Sequence[str]) -> dict[str, Paper]: ...


class GroupDigestLedger(Protocol):
    """What composing reading groups' digests needs of the ledger (``adapters/store/digests.py``)."""

    def settled_group_periods(self, group_id: int, period: str) -> set[int]: ...

    def add_group_digests(self, items: Sequence[NewGroupDigest], now: datetime) -> int: ...

    def bounced(self, emails: Sequence[str]) -> set[str]: ...
