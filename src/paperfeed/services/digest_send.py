"""Compose due digests into the send ledger, then send every pending one exactly once.

**Composing** (``compose_due``): for each active subscription, the latest slot of its schedule gives a
period; a (subscription, period) without a ledger row gets one, holding the paper ids and reasons chosen
now (the digest's content is fixed at composition time) or the ``empty`` status when nothing is new
(no mail). Its papers join ``digest_sent_papers`` in the same transaction, so no later digest repeats them.

**Sending** (``send_pending``): each pending row goes ``pending → sending`` (committed) before the SMTP
transaction starts, ``sending → handed`` (committed) just before the end-of-data dot is written, and
``handed → sent`` after the server's 250. A sender that dies leaves at most one row in ``sending`` or
``handed``; the next run (holding the same lease, so never concurrently) puts ``sending`` rows back to
``pending`` — the server cannot have those, it never got the dot — and marks ``handed`` rows
``unconfirmed``, counted as sent and never resent: the server had the whole message and the dot was on its
way. So a crash, even ``kill -9``, never causes a duplicate, and loses a digest only if the process dies
in the microseconds between committing ``handed`` and writing the dot (docs/digests.md).

A 4xx reply retries with backoff (the row goes back to ``pending`` with ``next_attempt_at``), up to
``max_attempts``; a 5xx marks the row ``bounced`` and the address bouncing (``mail_bounces``): nothing
more is composed or sent to it. A server that refuses *us* (unreachable, authentication) stops the run
with every row still pending.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from paperfeed.domain.digest import (
    MAX_ITEMS,
    PERSONAL_SECTIONS,
    Digest,
    DigestSection,
    DigestStatus,
    LatestActivity,
    Pick,
    Preferences,
    RisingSource,
    Section,
    SectionProvider,
    SectionRequest,
    Subscription,
    compose,
    latest_slot,
    period_of,
    window_days,
    zone,
)
from paperfeed.domain.digest_ledger import DigestLedger, LedgerEntry, NewDigest
from paperfeed.domain.digest_mail import DigestRenderer
from paperfeed.domain.mail import (
    MailDeliveryUnknown,
    MailError,
    MailPermanentError,
    MailServerError,
    MailSession,
    OutgoingMail,
    SessionMailer,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.topic_rising import rising_heading
from paperfeed.services.jobs import Lease
from paperfeed.services.mutes import MuteService
from paperfeed.services.visible import VisiblePapers

__all__ = [
    "ComposeSummary",
    "DigestService",
    "DigestSettings",
    "Preview",
    "SendStopped",
    "SendSummary",
]

log = logging.getLogger("paperfeed.digest")

RETRY_DELAYS = (60.0, 300.0, 1800.0, 7200.0)  # seconds before the 2nd, 3rd, 4th and 5th attempts


@dataclass(frozen=True)
class DigestSettings:
    base_url: str
    per_section: int = 10  # most papers one section contributes
    max_attempts: int = 5  # temporary failures before a digest is marked failed
    retry_delays: tuple[float, ...] = RETRY_DELAYS


@dataclass
class ComposeSummary:
    subscriptions: int = 0  # active subscriptions looked at
    due: int = 0  # with a slot whose period had no digest yet
    composed: int = 0  # rows added with papers
    empty: int = 0  # rows added with nothing new (no mail)
    skipped_bouncing: int = 0
    missing_sections: dict[str, int] = field(default_factory=dict)  # wanted but not available here
    papers: int = 0
    seconds: float = 0.0
    group_digests: int = 0  # reading groups' weekly digests added (one per member and week)


@dataclass
class SendSummary:
    sent: int = 0
    retry_later: int = 0
    failed: int = 0
    bounced: int = 0
    unconfirmed: int = 0  # the connection broke after the message was handed over
    cancelled: int = 0
    recovered_pending: int = 0  # rows a dead sender left in "sending", sent again
    recovered_unconfirmed: int = 0  # rows a dead sender left in "handed", not sent again
    stopped: str | None = None  # why the run stopped early (the mail server refuses us)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Preview:
    subscription: Subscription
    period: str
    slot: datetime
    digest: Digest
    mail: OutgoingMail | None


class GroupDigestSource(Protocol):
    """Reading groups' weekly digests (``services/group_digest.py``): composed into this ledger, and the
    mail of one of their rows (None: its reader no longer wants it)."""

    def compose_due(self, *, dry_run: bool = False) -> int: ...

    def mail(self, entry: LedgerEntry) -> OutgoingMail | None: ...


class SendStopped(Exception):
    """The run stopped early: the mail server refuses us; everything not sent is still pending."""


class DigestService:
    """Composes and sends digests; ``run`` does both under the ``digest-send`` lease."""

    LEASE = "digest-send"

    def __init__(
        self,
        ledger: DigestLedger,
        papers: VisiblePapers,
        providers: Mapping[Section, SectionProvider],
        mailer: SessionMailer,
        renderer: DigestRenderer,
        settings: DigestSettings,
        *,
        activity: LatestActivity | None = None,
        rising: RisingSource | None = None,
        mutes: MuteService | None = None,
        groups: GroupDigestSource | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.ledger = ledger
        self.papers = papers
        self.providers = dict(providers)
        self.mailer = mailer
        self.renderer = renderer
        self.settings = settings
        self.activity = activity
        self.rising = rising
        self.mutes = mutes  # a reader's mute rules: their digest leaves those papers out
        self.groups = groups  # reading groups' weekly digests, sent through this same ledger
        self.clock = clock

    def _latest(self) -> datetime | None:
        return self.activity.latest_activity() if self.activity is not None else None

    def ledger_counts(self) -> dict[str, int]:
        """Digests in the send ledger by status (``paperfeed digest status``, /admin/jobs)."""
        return self.ledger.ledger_counts()

    def next_retry(self) -> datetime | None:
        """When the next digest waiting for a retry is due (None: none waits)."""
        return self.ledger.next_retry()

    def missing_sections(self) -> list[Section]:
        """Sections subscribers can choose that this instance cannot fill (their service is absent)."""
        return [s for s in Section if s not in self.providers and not (s == Section.rising and self.rising)]

    # -- composing ----------------------------------------------------------------------------------

    def _window(
        self, prefs: Preferences, slot: datetime, latest: datetime | None
    ) -> tuple[datetime, datetime]:
        """New papers for a digest at ``slot``: the window's days up to the slot, or up to the newest data
        if the store stops earlier (an archive still gets digests). Hour-aligned, so subscribers share it."""
        until = min(slot, latest) if latest is not None else slot
        hour = until.replace(minute=0, second=0, microsecond=0)
        until = hour if hour == until else hour + timedelta(hours=1)
        return until - timedelta(days=window_days(prefs, slot)), until

    def compose_for(
        self,
        sub: Subscription,
        slot: datetime,
        already_sent: Collection[str],
        *,
        latest: datetime | None,
        hidden: Collection[str] = frozenset(),
        missing: dict[str, int] | None = None,
    ) -> Digest:
        prefs = sub.preferences
        since, until = self._window(prefs, slot, latest)
        per_section = max(1, min(self.settings.per_section, prefs.max_items))
        parts: list[tuple[Section, str, Sequence[Pick]]] = []
        for section in prefs.sections:
            if section == Section.rising:
                if self.rising is None and missing is not None:
                    missing[section.value] = missing.get(section.value, 0) + 1
                continue  # added below, once the digest has papers
            provider = self.providers.get(section)
            if provider is None:
                if missing is not None:
                    missing[section.value] = missing.get(section.value, 0) + 1
                continue
            if section in PERSONAL_SECTIONS and sub.user_id is None:
                continue  # needs an account: the preferences page says so
            request = SectionRequest(sub, slot, since, until, per_section * 2, already_sent)
            title = provider.title(request)
            parts.append((section, title, provider.picks(request)))
        if sub.user_id is not None and self.mutes is not None:
            muted = self.mutes.filter_for(sub.user_id).muted
            hidden = {*hidden, *(p.paper.id for _, _, picks in parts for p in picks if muted(p.paper))}
        digest = compose(
            parts, already_sent, cap=min(prefs.max_items, MAX_ITEMS), per_section=per_section, hidden=hidden
        )
        if digest.empty or Section.rising not in prefs.sections or self.rising is None:
            return digest
        return self._with_rising(digest, prefs, slot, until)

    def _with_rising(self, digest: Digest, prefs: Preferences, slot: datetime, until: datetime) -> Digest:
        """``digest`` with its "Rising this week" section (the topics fixed now, like the papers), in the
        subscriber's order of sections; unchanged when nothing rises or topics were never built."""
        assert self.rising is not None
        found = self.rising.for_digest(until)
        if found is None or not found.entries:
            return digest
        local_day = slot.astimezone(zone(prefs.timezone)).date()
        rising = DigestSection(Section.rising, (), rising_heading(found.week, local_day), found.entries)
        order = {s: i for i, s in enumerate(prefs.sections)}
        sections = sorted([*digest.sections, rising], key=lambda s: order.get(s.section, len(order)))
        return Digest(tuple(sections))

    def compose_due(self, *, dry_run: bool = False, limit: int | None = None) -> ComposeSummary:
        """Add a ledger row for every active subscription whose current period has none."""
        started = time.perf_counter()
        now = self.clock()
        latest = self._latest()
        hidden = set(self.papers.hidden())
        summary = ComposeSummary()
        for page in self.ledger.active_subscriptions():
            summary.subscriptions += len(page)
            due: list[tuple[Subscription, datetime, str]] = []
            for sub in page:
                slot = latest_slot(sub.preferences, now)
                if sub.confirmed_at is not None and slot < sub.confirmed_at:
                    continue  # the first digest comes at the first slot after confirming
                due.append((sub, slot, period_of(sub.preferences, slot)))
            settled = self.ledger.settled_periods([s.id for s, _, _ in due], {p for _, _, p in due})
            due = [d for d in due if (d[0].id, d[2]) not in settled]
            if limit is not None:
                due = due[: max(0, limit - summary.due)]
            if not due:
                continue
            summary.due += len(due)
            bouncing = self.ledger.bounced([s.email for s, _, _ in due])
            sent = self.ledger.sent_papers([s.id for s, _, _ in due])
            new: list[NewDigest] = []
            for sub, slot, period in due:
                if sub.email in bouncing:
                    summary.skipped_bouncing += 1
                    continue
                digest = self.compose_for(
                    sub, slot, sent[sub.id], latest=latest, hidden=hidden, missing=summary.missing_sections
                )
                new.append(NewDigest(sub.id, period, slot, sub.email, digest))
                if digest.empty:
                    summary.empty += 1
                else:
                    summary.composed += 1
                    summary.papers += len(digest.paper_ids)
            if not dry_run:
                self.ledger.add_digests(new, now)
            if limit is not None and summary.due >= limit:
                break
        summary.seconds = time.perf_counter() - started
        return summary

    def preview(self, subscription: Subscription, *, mark: bool = False) -> Preview:
        """The digest ``subscription`` would get for its current period, rendered; nothing is recorded."""
        now = self.clock()
        slot = latest_slot(subscription.preferences, now)
        period = period_of(subscription.preferences, slot)
        already = self.ledger.sent_papers([subscription.id]).get(subscription.id, set()) if mark else set()
        digest = self.compose_for(
            subscription, slot, already, latest=self._latest(), hidden=set(self.papers.hidden())
        )
        papers = self.papers.get(digest.paper_ids)
        mail = self.renderer.digest_mail(
            digest_id=0,
            email=subscription.email,
            subscription_id=subscription.id,
            prefs=subscription.preferences,
            slot=slot,
            digest=digest,
            papers=papers,
        )
        return Preview(subscription, period, slot, digest, mail)

    # -- sending ------------------------------------------------------------------------------------

    def send_pending(
        self,
        *,
        lease: Lease | None = None,
        limit: int | None = None,
        on_sent: Callable[[int], None] | None = None,
    ) -> SendSummary:
        """Send every due pending digest. Call with the ``digest-send`` lease held (``run`` does)."""
        started = time.perf_counter()
        summary = SendSummary()
        summary.recovered_pending, summary.recovered_unconfirmed = self.ledger.recover(self.clock())
        renderer = self.renderer
        # handed → sent is recorded for up to 50 messages at a time: a crash before that turns them into
        # "unconfirmed", which is never resent either, so batching costs nothing but saves a commit each.
        accepted: list[int] = []
        try:
            self._send_batches(
                session_of=self.mailer,
                renderer=renderer,
                lease=lease,
                limit=limit,
                on_sent=on_sent,
                summary=summary,
                accepted=accepted,
            )
        finally:
            self._flush_sent(accepted)
        summary.seconds = time.perf_counter() - started
        return summary

    def _flush_sent(self, accepted: list[int]) -> None:
        if accepted:
            self.ledger.mark_sent(list(accepted), self.clock())
            accepted.clear()

    def _send_batches(
        self,
        *,
        session_of: SessionMailer,
        renderer: DigestRenderer,
        lease: Lease | None,
        limit: int | None,
        on_sent: Callable[[int], None] | None,
        summary: SendSummary,
        accepted: list[int],
    ) -> None:
        handled = 0
        with session_of.session() as session:
            after = 0
            while limit is None or handled < limit:
                size = 200 if limit is None else min(200, limit - handled)
                batch = self.ledger.due(self.clock(), after_id=after, limit=size)
                if not batch:
                    break
                after = batch[-1].id
                # pending → sending for the whole batch in one commit (an attempt each); a row that
                # another sender took meanwhile is not claimed and is skipped below.
                claimed = self.ledger.claim([e.id for e in batch], self.clock())
                batch = [e for e in batch if e.id in claimed]
                subs = self.ledger.subscriptions_by_id(sorted({e.subscription_id for e in batch}))
                bouncing = self.ledger.bounced([e.email for e in batch])
                papers = self.papers.get(sorted({p for e in batch for p in e.digest.paper_ids}))
                for entry in batch:
                    if limit is not None and handled >= limit:
                        break
                    if lease is not None:
                        lease.check()
                    handled += 1
                    try:
                        self._send_one(
                            entry,
                            subs.get(entry.subscription_id),
                            bouncing,
                            papers,
                            renderer,
                            session,
                            summary,
                            accepted,
                        )
                    except SendStopped as exc:
                        self.ledger.unclaim(self.clock())  # the rest of the batch: pending again
                        summary.stopped = str(exc)
                        return
                    if len(accepted) >= 50:
                        self._flush_sent(accepted)
                    if on_sent is not None:
                        on_sent(handled)
                self._flush_sent(accepted)

    def _send_one(
        self,
        entry: LedgerEntry,
        sub: Subscription | None,
        bouncing: set[str],
        papers: Mapping[str, Paper],
        renderer: DigestRenderer,
        session: MailSession,
        summary: SendSummary,
        accepted: list[int],
    ) -> None:
        ledger, now = self.ledger, self.clock
        if entry.group_id is not None:  # a reading group's digest: the group service writes its mail
            group_mail = self.groups.mail(entry) if self.groups is not None else None
            if group_mail is None or entry.email in bouncing:
                why = "the address bounces" if entry.email in bouncing else "no longer wanted when it was due"
                ledger.transition(
                    entry.id, DigestStatus.sending, DigestStatus.cancelled, now(), last_error=why
                )
                summary.cancelled += 1
                return
            self._deliver(entry, group_mail, session, summary, accepted, bouncing)
            return
        if sub is None or not sub.active or sub.email != entry.email or entry.email in bouncing:
            why = "the address bounces" if entry.email in bouncing else "unsubscribed before it was sent"
            ledger.transition(entry.id, DigestStatus.sending, DigestStatus.cancelled, now(), last_error=why)
            summary.cancelled += 1
            return
        mail = renderer.digest_mail(
            digest_id=entry.id,
            email=entry.email,
            subscription_id=sub.id,
            prefs=sub.preferences,
            slot=entry.slot,
            digest=entry.digest,
            papers=papers,
        )
        if mail is None:
            ledger.transition(entry.id, DigestStatus.sending, DigestStatus.empty, now())
            return
        self._deliver(entry, mail, session, summary, accepted, bouncing)

    def _deliver(
        self,
        entry: LedgerEntry,
        mail: OutgoingMail,
        session: MailSession,
        summary: SendSummary,
        accepted: list[int],
        bouncing: set[str],
    ) -> None:
        """One claimed row's SMTP transaction and the ledger steps around it (the module doc)."""
        ledger, now = self.ledger, self.clock
        attempts = entry.attempts + 1  # claim() counted it
        state = [DigestStatus.sending]

        def handover() -> None:
            ledger.transition(entry.id, DigestStatus.sending, DigestStatus.handed, now())
            state[0] = DigestStatus.handed

        try:
            session.send(mail, on_handover=handover)
        except MailPermanentError as exc:
            ledger.transition(entry.id, state[0], DigestStatus.bounced, now(), last_error=str(exc)[:1000])
            ledger.add_bounce(entry.email, str(exc), now())
            bouncing.add(entry.email)
            summary.bounced += 1
            log.warning("digest %s to %s bounced: %s", entry.id, entry.email, exc)
        except MailDeliveryUnknown as exc:
            ledger.transition(entry.id, state[0], DigestStatus.unconfirmed, now(), last_error=str(exc)[:1000])
            summary.unconfirmed += 1
            log.warning("digest %s to %s: delivery unknown, not resent: %s", entry.id, entry.email, exc)
        except MailServerError as exc:
            # Not this recipient's fault: back to pending without counting the attempt, and stop.
            ledger.transition(entry.id, state[0], DigestStatus.pending, now(), attempts=entry.attempts)
            raise SendStopped(str(exc)) from None
        except MailError as exc:  # temporary: retry later with backoff
            if attempts >= self.settings.max_attempts:
                ledger.transition(entry.id, state[0], DigestStatus.failed, now(), last_error=str(exc)[:1000])
                summary.failed += 1
            else:
                delays = self.settings.retry_delays
                delay = delays[min(attempts - 1, len(delays) - 1)]
                ledger.transition(
                    entry.id,
                    state[0],
                    DigestStatus.pending,
                    now(),
                    last_error=str(exc)[:1000],
                    next_attempt_at=now() + timedelta(seconds=delay),
                )
                summary.retry_later += 1
            log.info(
                "digest %s to %s: temporary failure (attempt %s): %s", entry.id, entry.email, attempts, exc
            )
        else:
            accepted.append(entry.id)  # handed → sent, recorded in a batch (see send_pending)
            summary.sent += 1

    # -- both ---------------------------------------------------------------------------------------

    def lease(self) -> Lease:
        return Lease(self.ledger, self.LEASE, clock=self.clock)

    def run(
        self, *, dry_run: bool = False, compose_only: bool = False
    ) -> tuple[ComposeSummary, SendSummary | None]:
        """Compose what is due, then send what is pending, holding the ``digest-send`` lease.

        ``dry_run`` composes without recording or sending anything."""
        if dry_run:
            return self.compose_due(dry_run=True), None
        lease = self.lease()
        with lease:
            composed = self.compose_due()
            if self.groups is not None:
                composed.group_digests = self.groups.compose_due()
            if compose_only:
                return composed, None
            return composed, self.send_pending(lease=lease)
