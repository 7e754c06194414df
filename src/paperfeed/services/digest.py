"""Digest subscriptions: subscribe (double opt-in), confirm, change preferences, unsubscribe.

Anyone can subscribe an address; nothing is mailed to it except the confirmation link until that link is
used (double opt-in). A signed-in user with a verified address subscribing that address needs no second
confirmation. Replies never reveal whether an address is already subscribed: an active subscriber who is
subscribed again gets a mail with their preferences link instead, and the page says "check your inbox"
either way. Confirmation mails to one address go out at most once per ``resend_after``, and every
request that may mail is counted by ``limits`` (:class:`~paperfeed.services.mail_limits.MailLimits`,
shared with the account mails: per client and per address, in the same buckets) before anything is
written; over it, :class:`RateLimited` and no mail. The web surface hands ``defer`` its background
tasks, so mail goes out after the reply and a new address answers as fast as a pending or confirmed one.

The preferences and unsubscribe pages are opened by signed links from every mail (no sign-in needed);
see :mod:`paperfeed.domain.digest_links` for the tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from paperfeed.domain.accounts import RateLimited
from paperfeed.domain.digest import (
    AddressOwners,
    InvalidPreferences,
    Preferences,
    SignedInUser,
    StoredSubscriptionLike,
    Subscription,
    SubscriptionRecords,
    SubscriptionStatus,
    normalize_email,
)
from paperfeed.domain.digest_links import InvalidToken, LinkSigner
from paperfeed.domain.digest_mail import DigestRenderer, DigestRenderers, SubscriptionLinks
from paperfeed.domain.mail import Mailer, MailError, MailPermanentError, OutgoingMail
from paperfeed.services.mail_limits import MailLimits

__all__ = [
    "InvalidPreferences",
    "InvalidToken",
    "RateLimited",
    "SubscribeResult",
    "SubscriptionMailFailed",
    "SubscriptionService",
]

log = logging.getLogger("paperfeed.digest")


class SubscriptionMailFailed(Exception):
    """The confirmation mail could not be handed to the mail server (the message says what to do)."""


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    """``check-inbox``: a mail is on its way (or was recently sent); ``subscribed``: active already."""

    outcome: Literal["check-inbox", "subscribed"]
    subscription: Subscription | None = None


class SubscriptionService:
    """Subscription life cycle; mail goes out through ``mailer`` (the app's SMTP or outbox mailer)."""

    def __init__(
        self,
        records: SubscriptionRecords,
        mailer: Mailer,
        signer: LinkSigner,
        renderers: DigestRenderers,
        *,
        owners: AddressOwners | None = None,
        limits: MailLimits | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        resend_after: timedelta = timedelta(minutes=10),
    ) -> None:
        self.records = records
        self.mailer = mailer
        self.signer = signer
        self.renderers = renderers
        self.owners = owners  # links a subscription to the account of its address
        self.limits = limits  # the mail one request may cause, shared with the account mails
        self.clock = clock
        self.resend_after = resend_after

    def counts(self) -> dict[str, int]:
        """Subscriptions by status (``paperfeed digest status``, /admin/jobs)."""
        return self.records.subscription_counts()

    def renderer(self, base_url: str) -> DigestRenderer:
        """The mail renderer whose links point under ``base_url``."""
        return self.renderers.for_base(base_url)

    def links(self, subscription: Subscription, base_url: str) -> SubscriptionLinks:
        return self.renderer(base_url).links(subscription.id)

    # -- subscribing --------------------------------------------------------------------------------

    def subscribe(
        self,
        email: str,
        prefs: Preferences,
        *,
        base_url: str,
        client: str,
        user: SignedInUser | None = None,
        defer: Callable[[Callable[[], None]], None] | None = None,
    ) -> SubscribeResult:
        """Subscribe ``email`` for a request from ``client``; raises :class:`InvalidPreferences` for bad
        input and :class:`RateLimited` over the mail limits (nothing written, nothing mailed).

        Mail goes out through ``defer`` when given (the web's background tasks: a failure is logged, the
        reply is already sent); without it, now, raising :class:`SubscriptionMailFailed` on failure.
        """
        prefs = prefs.checked()
        address = normalize_email(email)
        own_address = user is not None and user.email_verified and user.email.lower() == address
        if not own_address and self.limits is not None:
            self.limits.request(address, client)  # counted whatever the address's state: replies tell nothing
        now = self.clock()
        existing = self.records.subscription_by_email(address)
        if user is not None and own_address:
            if existing is None:
                stored = self.records.create_subscription(
                    address, prefs, status=SubscriptionStatus.active, user_id=user.id, now=now
                )
            else:
                updated = self.records.update_subscription(
                    existing.subscription.id,
                    now=now,
                    prefs=prefs,
                    status=SubscriptionStatus.active,
                    user_id=user.id,
                    clear_nonce=True,
                )
                assert updated is not None
                stored = updated
            log.info("subscription %s active (signed-in, verified address)", stored.subscription.id)
            return SubscribeResult("subscribed", stored.subscription)
        mail: OutgoingMail | None = None
        if existing is None:
            stored = self.records.create_subscription(
                address, prefs, status=SubscriptionStatus.pending, user_id=None, now=now
            )
            mail = self._confirmation(stored.subscription.id, base_url, prefs)
        elif existing.subscription.active:
            if self._may_mail(existing, now):
                renderer = self.renderer(base_url)
                self.records.update_subscription(existing.subscription.id, now=now, confirm_sent_at=now)
                mail = renderer.already_subscribed_mail(address, existing.subscription.id)
        elif self._may_mail(existing, now):
            self.records.update_subscription(
                existing.subscription.id, now=now, prefs=prefs, status=SubscriptionStatus.pending
            )
            mail = self._confirmation(existing.subscription.id, base_url, prefs)
        if mail is not None:
            if defer is None:
                self._deliver(mail)
            else:
                defer(lambda: self._deliver_logged(mail))
        return SubscribeResult("check-inbox")

    def _may_mail(self, stored: StoredSubscriptionLike, now: datetime) -> bool:
        last = stored.confirm_sent_at
        return last is None or now - last >= self.resend_after

    def _confirmation(self, subscription_id: int, base_url: str, prefs: Preferences) -> OutgoingMail:
        """A fresh confirmation link (the older one stops working) in its mail, to be sent."""
        now = self.clock()
        stored = self.records.update_subscription(
            subscription_id, now=now, new_nonce=True, confirm_sent_at=now
        )
        assert stored is not None
        assert stored.confirm_nonce is not None
        return self.renderer(base_url).confirmation_mail(
            stored.subscription.email, subscription_id, stored.confirm_nonce, prefs
        )

    def _deliver_logged(self, mail: OutgoingMail) -> None:
        """For mail sent after the reply: nobody is waiting to be told, so a failure is logged only."""
        try:
            self._deliver(mail)
        except SubscriptionMailFailed:
            pass  # _deliver logged it
        except Exception:
            log.exception("confirmation mail to %s failed", mail.to)

    def _deliver(self, mail: OutgoingMail) -> None:
        try:
            self.mailer.send(mail)
        except MailPermanentError as exc:
            log.warning("confirmation mail to %s refused: %s", mail.to, exc)
            raise SubscriptionMailFailed(
                "The mail server refused this address. Check it for typos and try again."
            ) from None
        except MailError as exc:
            log.error("confirmation mail to %s failed: %s", mail.to, exc)
            raise SubscriptionMailFailed(
                "The confirmation mail could not be sent just now. Please try again in a few minutes."
            ) from None

    # -- links from mail ----------------------------------------------------------------------------

    def _by_token(
        self, purpose: Literal["confirm", "preferences", "unsubscribe"], token: str
    ) -> tuple[StoredSubscriptionLike, str]:
        sub_id, nonce = self.signer.verify(purpose, token)
        stored = self.records.subscription(sub_id)
        if stored is None:
            raise InvalidToken("this subscription no longer exists")
        return stored, nonce

    def pending_confirmation(self, token: str) -> Subscription:
        """The subscription a confirmation link is for (no change: the page's button confirms)."""
        stored, nonce = self._by_token("confirm", token)
        if stored.subscription.active:
            return stored.subscription
        if stored.confirm_nonce != nonce:
            raise InvalidToken("this confirmation link was replaced by a newer one: use the latest mail")
        return stored.subscription

    def confirm(self, token: str) -> Subscription:
        stored, nonce = self._by_token("confirm", token)
        sub = stored.subscription
        if sub.active:
            return sub  # a second click changes nothing
        if stored.confirm_nonce != nonce:
            raise InvalidToken("this confirmation link was replaced by a newer one: use the latest mail")
        user_id = self.owners.user_id_for_email(sub.email) if self.owners is not None else None
        updated = self.records.update_subscription(
            sub.id, now=self.clock(), status=SubscriptionStatus.active, user_id=user_id, clear_nonce=True
        )
        assert updated is not None
        log.info("subscription %s confirmed", sub.id)
        return updated.subscription

    def by_link(self, purpose: Literal["preferences", "unsubscribe"], token: str) -> Subscription:
        return self._by_token(purpose, token)[0].subscription

    def update_preferences(self, token: str, prefs: Preferences) -> Subscription:
        stored, _ = self._by_token("preferences", token)
        checked = prefs.checked()
        sub = stored.subscription
        status = SubscriptionStatus.active if sub.status == SubscriptionStatus.unsubscribed else None
        # Saving preferences from a link out of one of our mails proves the address: (re)activate it.
        if sub.status == SubscriptionStatus.pending:
            status = SubscriptionStatus.active
        updated = self.records.update_subscription(
            sub.id, now=self.clock(), prefs=checked, status=status, clear_nonce=status is not None
        )
        assert updated is not None
        return updated.subscription

    def unsubscribe(self, token: str) -> Subscription:
        """Idempotent: an unsubscribed subscription stays so, and the link keeps working."""
        stored, _ = self._by_token("unsubscribe", token)
        sub = stored.subscription
        if sub.status == SubscriptionStatus.unsubscribed:
            return sub
        updated = self.records.update_subscription(
            sub.id, now=self.clock(), status=SubscriptionStatus.unsubscribed, clear_nonce=True
        )
        assert updated is not None
        log.info("subscription %s unsubscribed", sub.id)
        return updated.subscription

    def of_user(self, user_id: int) -> Subscription | None:
        stored = self.records.subscription_of_user(user_id)
        return None if stored is None else stored.subscription

    def by_email(self, email: str) -> Subscription | None:
        stored = self.records.subscription_by_email(email.strip().lower())
        return None if stored is None else stored.subscription
