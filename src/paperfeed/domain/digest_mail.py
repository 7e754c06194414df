"""The port that turns digests and subscription events into mail: what the digest services need from a
renderer, whichever template engine implements it (:mod:`paperfeed.adapters.mail.digest_render`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from paperfeed.domain.digest import Digest, Preferences
from paperfeed.domain.mail import OutgoingMail
from paperfeed.domain.models import Paper

__all__ = ["DigestRenderer", "DigestRenderers", "SubscriptionLinks"]


@dataclass(frozen=True, slots=True)
class SubscriptionLinks:
    """The absolute links of one subscription (and its confirmation, when one is pending)."""

    preferences: str
    unsubscribe: str
    confirm: str | None = None


class DigestRenderer(Protocol):
    """Renders the mail of one instance: every link in it is absolute, under the instance's base URL."""

    def links(self, subscription_id: int, nonce: str | None = None) -> SubscriptionLinks:
        """The signed preferences and unsubscribe links (and the confirm link, given its ``nonce``)."""
        ...

    def digest_mail(
        self,
        *,
        digest_id: int,
        email: str,
        subscription_id: int,
        prefs: Preferences,
        slot: datetime,
        digest: Digest,
        papers: Mapping[str, Paper],
    ) -> OutgoingMail | None:
        """The mail of a composed digest; None when none of its papers exists any more."""
        ...

    def confirmation_mail(
        self, email: str, subscription_id: int, nonce: str, prefs: Preferences
    ) -> OutgoingMail: ...

    def already_subscribed_mail(self, email: str, subscription_id: int) -> OutgoingMail: ...


class DigestRenderers(Protocol):
    """The renderers of one instance by base URL: a subscription's mail links where the reader subscribed
    (the configured public URL, or a test's server), a digest's under the public URL."""

    def for_base(self, base_url: str) -> DigestRenderer: ...
