"""How much mail a client, and an address, can cause: the limits every door that sends mail counts against.

Account mails (sign-up, sign-in and reset links, confirmation resends) and digest sign-ups both mail an
address someone typed, so both count each request in the same two buckets: per client and per address
(a normalised address). They live in the mail wing of the composition root as one service that accounts
and subscriptions both receive; before, subscriptions reached into the account service for it, which
closed a cycle (mail ↔ readers, issue #32).

Buckets are kept in the store's sliding-window log, keyed by a keyed digest of the client or address
(:func:`bucket`), so the log holds no addresses in clear and every worker shares it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperfeed.domain.accounts import RateLimited, RateLog

__all__ = ["Limit", "MailLimits", "RateLimits", "bucket"]


@dataclass(frozen=True)
class Limit:
    count: int
    seconds: float


@dataclass(frozen=True)
class RateLimits:
    """Attempts allowed per sliding window. Sign-in per account counts failures only."""

    signin_ip: Limit = Limit(30, 15 * 60)
    signin_account: Limit = Limit(10, 15 * 60)
    signup_ip: Limit = Limit(10, 60 * 60)
    mail_ip: Limit = Limit(10, 60 * 60)
    mail_account: Limit = Limit(5, 60 * 60)


def bucket(kind: str, value: str, secret: bytes) -> str:
    """The log's key for ``value`` (an address, a client) under ``kind``: a keyed digest, never the value."""
    return f"{kind}:{hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()[:40]}"


def count(log: RateLog, key: str, now: datetime, limit: Limit) -> int:
    """Count one attempt in ``key``'s bucket (its id), or raise :class:`RateLimited` when it is full."""
    hit = log.hit(key, now, limit.seconds, limit.count)
    if hit.id is None:
        raise RateLimited(int(-(-hit.retry_after // 1)))
    return hit.id


@dataclass
class MailLimits:
    """Counts requests that may mail an address; raises :class:`RateLimited` over a limit."""

    log: RateLog
    secret: bytes
    limits: RateLimits = field(default_factory=RateLimits)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def address(self, address: str) -> None:
        """Count a mail to ``address`` (normalised) in its per-address bucket (a sign-up mails it)."""
        count(self.log, bucket("mail:account", address, self.secret), self.clock(), self.limits.mail_account)

    def request(self, address: str, client: str) -> None:
        """Count a request from ``client`` that may mail ``address``: per client, then per address."""
        count(self.log, bucket("mail:ip", client, self.secret), self.clock(), self.limits.mail_ip)
        self.address(address)
