"""Digest subscriptions, their schedule, and how one digest is put together (pure: no I/O).

A subscription is an address with a cadence (``daily``: every day, ``weekdays``: Monday to Friday,
``weekly``: one chosen weekday), a local send hour in an IANA time zone, and the sections it wants. Its
*slots* are the local moments it is due (e.g. every weekday at 07:00 Europe/Berlin); each slot belongs to a
*period* (``2025-03-20`` for daily cadences, ``2025-W12`` for weekly ones), and ``(subscription, period)`` is
the idempotency key of the send ledger: a period gets at most one digest however often the job runs, and
after downtime only the latest missed slot is served (no backlog of stale digests).

Sections come from :class:`SectionProvider` objects (trending, categories, "For you", alerts, followed
authors); :func:`compose` merges their picks into one digest: in the subscriber's section order, each paper
once, nothing the subscriber was already sent, at most ``per_section`` per section and ``cap`` in all.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from paperfeed.domain.email_address import InvalidEmailAddress, parse_email_address
from paperfeed.domain.models import Paper
from paperfeed.domain.topic_rising import RisingEntry, RisingWeek

from .wording import count

__all__ = [
    "CADENCES",
    "DEFAULT_SECTIONS",
    "MAX_ITEMS",
    "SECTION_TITLES",
    "AddressOwners",
    "Cadence",
    "Digest",
    "DigestEntry",
    "DigestSection",
    "DigestStatus",
    "InvalidPreferences",
    "LatestActivity",
    "PaperTimes",
    "Pick",
    "Preferences",
    "Recommender",
    "RisingSource",
    "Section",
    "SectionProvider",
    "SectionRequest",
    "SignedInUser",
    "StoredSubscriptionLike",
    "Subscription",
    "SubscriptionRecords",
    "SubscriptionStatus",
    "compose",
    "latest_slot",
    "normalize_email",
    "period_of",
    "window_days",
]

MAX_ITEMS = 50  # the hard cap on papers in one digest, whatever a subscriber asks for
DEFAULT_ITEMS = 20
MAX_CATEGORIES = 20
_CATEGORY = re.compile(r"^[a-z][a-z-]{0,20}(?:\.[A-Za-z][A-Za-z-]{0,20})?$")


class Cadence(StrEnum):
    daily = "daily"  # every day
    weekdays = "weekdays"  # Monday to Friday (Monday's covers the weekend)
    weekly = "weekly"  # once a week, on the chosen weekday


CADENCES = tuple(c.value for c in Cadence)


class Section(StrEnum):
    trending = "trending"
    for_you = "for_you"
    alerts = "alerts"
    authors = "authors"
    categories = "categories"
    rising = "rising"  # topics, not papers: shown with a digest that has papers, never on its own


SECTION_TITLES: dict[Section, str] = {
    Section.for_you: "For you",
    Section.alerts: "Your saved-search alerts",
    Section.authors: "From authors you follow",
    Section.categories: "New in your categories",
    Section.trending: "Trending",
    Section.rising: "Rising this week",
}
PERSONAL_SECTIONS = frozenset({Section.for_you, Section.alerts, Section.authors})  # need an account
TOPIC_SECTIONS = frozenset({Section.rising})  # no papers of their own
DEFAULT_SECTIONS = (Section.trending, Section.rising)


class SubscriptionStatus(StrEnum):
    pending = "pending"  # waiting for the confirmation link to be used
    active = "active"
    unsubscribed = "unsubscribed"


class DigestStatus(StrEnum):
    """States of one row of the send ledger (docs/digests.md draws the transitions)."""

    pending = "pending"  # composed, waiting to be sent (or to be retried after a 4xx)
    sending = "sending"  # a sender is talking to the server; the message is not handed over yet
    handed = "handed"  # the final step (SMTP end-of-data) began: the server may have the message
    sent = "sent"  # the server accepted it
    unconfirmed = "unconfirmed"  # a sender died after handing it over: counted as sent, never resent
    failed = "failed"  # gave up after repeated temporary failures
    bounced = "bounced"  # a permanent 5xx: the address is marked bouncing
    cancelled = "cancelled"  # unsubscribed or bouncing before it went out
    empty = "empty"  # nothing new for this period: no mail, but the period is settled


class InvalidPreferences(ValueError):
    """A subscription form or setting that cannot be used; ``field`` names the input."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def normalize_email(value: str) -> str:
    """The address in normal form, or :class:`InvalidPreferences` for ``email`` (rules: ``email_address``)."""
    try:
        return parse_email_address(value)
    except InvalidEmailAddress as exc:
        raise InvalidPreferences("email", str(exc)) from None


def zone(name: str) -> ZoneInfo:
    try:
        if name not in _zones():
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidPreferences(
            "timezone", f"unknown time zone {name[:60]!r} (e.g. Europe/Berlin)"
        ) from None


_ZONES: frozenset[str] | None = None


def _zones() -> frozenset[str]:
    global _ZONES
    if _ZONES is None:
        _ZONES = frozenset(available_timezones() | {"UTC"})
    return _ZONES


def timezone_names() -> list[str]:
    """Every IANA zone name, sorted (for the preferences form)."""
    return sorted(_zones())


@dataclass(frozen=True, slots=True)
class Preferences:
    """What a subscriber chooses; :meth:`checked` validates and normalises a form's values."""

    cadence: Cadence = Cadence.daily
    send_hour: int = 7  # local hour, 0-23
    timezone: str = "UTC"
    weekday: int = 0  # weekly cadence: 0 = Monday … 6 = Sunday
    sections: tuple[Section, ...] = DEFAULT_SECTIONS
    categories: tuple[str, ...] = ()
    max_items: int = DEFAULT_ITEMS

    def checked(self) -> Preferences:
        try:
            cadence = Cadence(self.cadence)
        except ValueError:
            raise InvalidPreferences("cadence", f"choose one of {', '.join(CADENCES)}") from None
        if not 0 <= int(self.send_hour) <= 23:
            raise InvalidPreferences("send_hour", "an hour from 0 to 23")
        if not 0 <= int(self.weekday) <= 6:
            raise InvalidPreferences("weekday", "a day from 0 (Monday) to 6 (Sunday)")
        zone(self.timezone)
        sections: list[Section] = []
        for item in self.sections:
            try:
                section = Section(item)
            except ValueError:
                raise InvalidPreferences("sections", f"unknown section {str(item)[:40]!r}") from None
            if section not in sections:
                sections.append(section)
        if not sections:
            raise InvalidPreferences("sections", "choose at least one section")
        if all(s in TOPIC_SECTIONS for s in sections):
            raise InvalidPreferences(
                "sections", "choose at least one section of papers (Rising this week comes with them)"
            )
        categories: list[str] = []
        for raw in self.categories:
            name = raw.strip()
            if not name:
                continue
            if not _CATEGORY.fullmatch(name):
                raise InvalidPreferences("categories", f"not an arXiv category: {name[:40]!r} (e.g. cs.CL)")
            if name not in categories:
                categories.append(name)
        if len(categories) > MAX_CATEGORIES:
            raise InvalidPreferences("categories", f"at most {count(MAX_CATEGORIES, 'category')}")
        if Section.categories in sections and not categories:
            raise InvalidPreferences("categories", "name at least one category (e.g. cs.CL) for that section")
        if not 1 <= int(self.max_items) <= MAX_ITEMS:
            raise InvalidPreferences("max_items", f"from 1 to {count(MAX_ITEMS, 'paper')}")
        return Preferences(
            cadence,
            int(self.send_hour),
            self.timezone,
            int(self.weekday),
            tuple(sections),
            tuple(categories),
            int(self.max_items),
        )


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    email: str
    status: SubscriptionStatus
    preferences: Preferences
    user_id: int | None
    created_at: datetime
    confirmed_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.status == SubscriptionStatus.active


# -- schedule -----------------------------------------------------------------------------------------


def _slot_on(day: date, prefs: Preferences, tz: ZoneInfo) -> datetime:
    """The send moment on local ``day``, in UTC (a skipped DST hour moves forward, as zoneinfo does)."""
    return datetime.combine(day, time(prefs.send_hour), tzinfo=tz).astimezone(UTC)


def _is_send_day(day: date, prefs: Preferences) -> bool:
    if prefs.cadence == Cadence.weekdays:
        return day.weekday() < 5
    if prefs.cadence == Cadence.weekly:
        return day.weekday() == prefs.weekday
    return True


def latest_slot(prefs: Preferences, now: datetime) -> datetime:
    """The most recent scheduled send moment at or before ``now`` (UTC)."""
    tz = zone(prefs.timezone)
    day = now.astimezone(tz).date()
    for back in range(0, 9):
        candidate = day - timedelta(days=back)
        if _is_send_day(candidate, prefs):
            slot = _slot_on(candidate, prefs, tz)
            if slot <= now:
                return slot
    raise AssertionError("every cadence has a send day within a week")


def period_of(prefs: Preferences, slot: datetime) -> str:
    """The ledger's period label of a slot: the local day, or the ISO week for weekly digests."""
    local = slot.astimezone(zone(prefs.timezone)).date()
    if prefs.cadence == Cadence.weekly:
        year, week, _ = local.isocalendar()
        return f"{year}-W{week:02d}"
    return local.isoformat()


def window_days(prefs: Preferences, slot: datetime) -> int:
    """How many days of new papers a digest at ``slot`` covers (a Monday weekdays digest: the weekend)."""
    if prefs.cadence == Cadence.weekly:
        return 7
    if prefs.cadence == Cadence.weekdays and slot.astimezone(zone(prefs.timezone)).weekday() == 0:
        return 3
    return 1


# -- composing ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pick:
    """A paper a section proposes, with why (shown for personal picks, e.g. "similar to 'X' you saved")."""

    paper: Paper
    why: str | None = None


@dataclass(frozen=True, slots=True)
class SectionRequest:
    """What a provider is asked for: picks for this subscriber for the digest at ``slot``.

    ``since``/``until`` bound "new" papers (``until`` is the slot, or the newest data if the store stops
    earlier); ``exclude`` holds everything the subscriber was already sent (providers may ignore it:
    :func:`compose` filters again, but skipping early keeps their result full).
    """

    subscription: Subscription
    slot: datetime
    since: datetime
    until: datetime
    limit: int
    exclude: Collection[str] = frozenset()


class SectionProvider(Protocol):
    """One section of digests (trending, categories, "For you", alerts, followed authors)."""

    section: Section

    def title(self, request: SectionRequest) -> str:
        """The section's heading in this digest (e.g. "New in cs.CL, cs.LG"); "" for the default."""
        ...

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        """Best first; at most ``request.limit`` are used."""
        ...


@dataclass(frozen=True, slots=True)
class DigestEntry:
    paper_id: str
    why: str | None = None


@dataclass(frozen=True, slots=True)
class DigestSection:
    section: Section
    entries: tuple[DigestEntry, ...]
    title: str = ""  # e.g. "New in cs.CL" (default: SECTION_TITLES)
    topics: tuple[RisingEntry, ...] = ()  # Section.rising: the topics, fixed at composition time

    def heading(self) -> str:
        return self.title or SECTION_TITLES[self.section]


@dataclass(frozen=True, slots=True)
class Digest:
    """A composed digest: what the ledger fixes at composition time (paper ids and reasons)."""

    sections: tuple[DigestSection, ...] = field(default_factory=tuple)

    @property
    def paper_ids(self) -> list[str]:
        return [e.paper_id for s in self.sections for e in s.entries]

    @property
    def empty(self) -> bool:
        return not any(s.entries for s in self.sections)

    def to_json(self) -> list[dict[str, object]]:
        return [
            {
                "section": s.section.value,
                "title": s.title,
                "entries": [{"id": e.paper_id, "why": e.why} for e in s.entries],
            }
            | ({"topics": [t.to_json() for t in s.topics]} if s.topics else {})
            for s in self.sections
        ]

    @staticmethod
    def from_json(value: object) -> Digest:
        sections: list[DigestSection] = []
        for raw in value if isinstance(value, list) else []:
            entries = tuple(DigestEntry(str(e["id"]), e.get("why")) for e in raw.get("entries", []))
            topics = tuple(RisingEntry.from_json(t) for t in raw.get("topics", []) if isinstance(t, dict))
            sections.append(
                DigestSection(Section(raw["section"]), entries, str(raw.get("title") or ""), topics)
            )
        return Digest(tuple(sections))


SectionPicks = tuple[Section, str, Sequence[Pick]]  # (section, title, picks best first)


def compose(
    parts: Sequence[SectionPicks],
    already_sent: Collection[str],
    *,
    cap: int,
    per_section: int,
    hidden: Collection[str] = frozenset(),
) -> Digest:
    """Merge section picks into a digest: each paper once (its first section wins), nothing in
    ``already_sent`` or ``hidden``, at most ``per_section`` a section and ``cap`` in all."""
    seen: set[str] = set()
    room = max(0, min(cap, MAX_ITEMS))
    sections: list[DigestSection] = []
    for section, title, picks in parts:
        entries: list[DigestEntry] = []
        for pick in picks:
            if room <= 0 or len(entries) >= per_section:
                break
            pid = pick.paper.id
            if pid in seen or pid in already_sent or pid in hidden:
                continue
            seen.add(pid)
            entries.append(DigestEntry(pid, pick.why))
            room -= 1
        if entries:
            sections.append(DigestSection(section, tuple(entries), title))
    return Digest(tuple(sections))


LinkPurpose = Literal["confirm", "preferences", "unsubscribe", "group-unsubscribe"]


# -- ports of the subscription service (``adapters/store/digests.py`` implements them) ----------------


class StoredSubscriptionLike(Protocol):
    """A stored subscription with its pending confirmation (the store's row type satisfies it)."""

    @property
    def subscription(self) -> Subscription: ...

    @property
    def confirm_nonce(self) -> str | None: ...

    @property
    def confirm_sent_at(self) -> datetime | None: ...


class SubscriptionRecords(Protocol):
    """The subscription rows (``adapters/store/digests.py``)."""

    def subscription(self, subscription_id: int) -> StoredSubscriptionLike | None: ...

    def subscription_by_email(self, email: str) -> StoredSubscriptionLike | None: ...

    def subscription_of_user(self, user_id: int) -> StoredSubscriptionLike | None: ...

    def create_subscription(
        self,
        email: str,
        prefs: Preferences,
        *,
        status: SubscriptionStatus,
        user_id: int | None,
        now: datetime,
    ) -> StoredSubscriptionLike: ...

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
    ) -> StoredSubscriptionLike | None: ...

    def subscription_counts(self) -> dict[str, int]:
        """Subscriptions by status."""
        ...


class SignedInUser(Protocol):
    """The account subscribing, when signed in (a verified address needs no confirmation mail)."""

    @property
    def id(self) -> int: ...

    @property
    def email(self) -> str: ...

    @property
    def email_verified(self) -> bool: ...


# -- ports of the services that build digests ---------------------------------------------------------


class RisingSource(Protocol):
    """The topics rising in the week a digest speaks of (``services/topic_rising.py``)."""

    def for_digest(self, until: datetime) -> RisingWeek | None: ...


class AddressOwners(Protocol):
    """Which account owns an address (the library service): a subscription is linked to it."""

    def user_id_for_email(self, email: str) -> int | None: ...


class PaperTimes(Protocol):
    """Papers published or first listed in ``[since, until)``, each with that moment (the digest records):
    what the category sections of a window are drawn from."""

    def paper_times_in_window(self, since: datetime, until: datetime) -> list[tuple[str, datetime]]: ...


class LatestActivity(Protocol):
    """The store's newest activity (the feed queries): a digest's window ends there when the store stops
    earlier than the slot, so an archive still gets digests."""

    def latest_activity(self) -> datetime | None: ...


class _Recommendation(Protocol):
    @property
    def paper(self) -> Paper: ...

    @property
    def reason(self) -> str: ...


class Recommender(Protocol):
    """The "For you" feed a digest section draws on (``services/recommend.py``)."""

    def for_you(
        self, user_id: int, *, limit: int = 20, tag: str | None = None, exclude: Collection[str] = frozenset()
    ) -> Sequence[_Recommendation]: ...
