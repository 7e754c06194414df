"""Records of the digest send ledger, as the digest service and the store exchange them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from paperfeed.domain.digest import Digest, DigestStatus

__all__ = ["LedgerEntry", "NewDigest"]


@dataclass(frozen=True, slots=True)
class NewDigest:
    """A digest just composed, to be written to the ledger under its key (subscription, period)."""

    subscription_id: int
    period: str
    slot: datetime
    email: str
    digest: Digest


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One row of the send ledger."""

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
