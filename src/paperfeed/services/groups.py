"""The group service: what a reader can do in a reading group, and what they may see of it.

Every method takes the acting reader's id and checks their membership itself, so no surface (page, API,
MCP, feed) can forget to. A group a reader is not in — never was, left, or was removed from — is
:class:`~paperfeed.domain.groups.GroupNotFound`, exactly like an id that does not exist; only members
learn that something is the owner's to do (:class:`~paperfeed.domain.groups.GroupForbidden`).

Invitations are one-time links: the token is random, kept only as its SHA-256 digest, works once (a
compare-and-set marks it used) and for ``invite_lifetime``; it must be accepted by a signed-in reader
whose address is the invited one, so a forwarded link lets nobody else in. Accepting one closes the
address's other open invitations to the group, and removing a member (or their leaving) closes theirs, so
an older link never brings a removed member back; the owner can withdraw one. Mailing one counts against
the same limits as every mail the site sends (per client and per address) and against a day's cap per
account and per group (:class:`InviteLimits`): the mail carries text readers wrote (the group's name, the
inviter's display name) to any address, so how much of it the site sends for one of them is bounded, and
its Subject holds none of it.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol
from urllib.parse import quote

from paperfeed.domain.accounts import InvalidEmail, RateLog, normalize_email
from paperfeed.domain.groups import (
    MAX_MEMBERS,
    Group,
    GroupForbidden,
    GroupNotFound,
    GroupRecords,
    GroupSearch,
    GroupSession,
    InvalidGroupInput,
    Invitation,
    InvitationsCapped,
    Member,
    Membership,
    QueueEntry,
    UnknownPaper,
    check_description,
    check_group_name,
    check_queue_note,
    check_session_notes,
    check_session_start,
)
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id
from paperfeed.domain.library import (
    InvalidLibraryInput,
    ReaderSignals,
    SavedPaper,
    SavedSearch,
    check_query,
)
from paperfeed.domain.mail import Mailer, MailError, OutgoingMail
from paperfeed.domain.models import Paper
from paperfeed.domain.mutes import InvalidMuteRule, MuteRule
from paperfeed.domain.recommend import Recommendation
from paperfeed.domain.search import SearchFilters
from paperfeed.domain.wording import count
from paperfeed.services.mail_limits import MailLimits, bucket
from paperfeed.services.mutes import MuteService
from paperfeed.services.visible import VisiblePapers

__all__ = [
    "ForTheGroup",
    "GroupFeeds",
    "GroupPage",
    "GroupPick",
    "GroupService",
    "GroupSignals",
    "InvitationPage",
    "InviteLimits",
    "QueueItem",
    "SessionItem",
    "hash_token",
]

log = logging.getLogger("paperfeed.groups")

_UNUSABLE = (
    "this invitation link is unknown, already used, expired or sent to another address: sign in with the "
    "address it was sent to"
)
MAX_GROUP_SEARCHES = 20
PAST_ON_PAGE = 5  # past sessions on the group page (the archive has them all)
ARCHIVE_SIZE = 500


@dataclass(frozen=True)
class InviteLimits:
    """Invitations an account, and a group, may send in any 24 hours (``PAPERFEED_GROUP_INVITES_PER_
    ACCOUNT_PER_DAY``, ``PAPERFEED_GROUP_INVITES_PER_GROUP_PER_DAY``), counted in the store's shared log."""

    log: RateLog
    secret: bytes
    per_account: int
    per_group: int

    def count(self, user_id: int, group_id: int, now: datetime) -> None:
        """Count one invitation in both buckets, or :class:`InvitationsCapped` and neither counted."""
        day = 24 * 3600
        counted: list[int] = []
        for kind, key, cap, whose in (
            ("invite:account", str(user_id), self.per_account, "you have"),
            ("invite:group", str(group_id), self.per_group, "this group has"),
        ):
            hit = self.log.hit(bucket(kind, key, self.secret), now, day, cap)
            if hit.id is None:
                for taken in counted:  # a refused invitation uses none of the other allowance
                    self.log.unhit(taken)
                raise InvitationsCapped(int(-(-hit.retry_after // 1)), whose, cap)
            counted.append(hit.id)


@dataclass(frozen=True)
class GroupSignals:
    """A group as the recommender sees a reader (a :class:`~paperfeed.domain.recommend.SignalsSource` by
    group id): the "For the group" recommender reads it, and :class:`GroupService` reads that recommender,
    so this part stands alone and the two services do not need each other."""

    records: GroupRecords
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def signals(self, group_id: int) -> ReaderSignals:
        """The group as the recommender sees a reader: its queued papers and its sessions' papers as what
        it "saved", its searches as alerts (no membership check: :meth:`for_the_group` made one)."""
        queue = self.records.queue(group_id)
        sessions = self.records.sessions(group_id, limit=ARCHIVE_SIZE)
        saved: dict[str, SavedPaper] = {}
        for e in queue:
            saved[e.paper_id] = SavedPaper(e.paper_id, ("queue",), e.added_at)
        for session in sessions:
            saved.setdefault(session.paper_id, SavedPaper(session.paper_id, ("sessions",), session.starts_at))
        searches = tuple(
            SavedSearch(s.id, group_id, s.query, s.query, SearchFilters(), s.created_at)
            for s in self.records.searches(group_id)
        )
        ordered = tuple(sorted(saved.values(), key=lambda p: (p.saved_at, p.paper_id), reverse=True))
        return ReaderSignals(group_id, saved=ordered, saved_searches=searches, taken_at=self.now())


class GroupFeeds(Protocol):
    """ "For you" over a group's papers, the group's id in place of a reader's (the bootstrap's
    ``RecommendationService`` over :class:`GroupSignals`)."""

    def feed(self, user_id: int, *, limit: int = 20) -> RankedFeed: ...


class RankedFeed(Protocol):
    """What "For the group" reads of a "For you" feed (``services/recommend.py``'s ``ForYou``)."""

    @property
    def items(self) -> tuple[Recommendation, ...]: ...

    @property
    def mode(self) -> str: ...

    @property
    def positives(self) -> int: ...


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class QueueItem:
    entry: QueueEntry
    paper: Paper
    my_vote: bool


@dataclass(frozen=True, slots=True)
class SessionItem:
    session: GroupSession
    paper: Paper | None  # None when an admin hid the paper


@dataclass(frozen=True, slots=True)
class GroupPage:
    """A group as one of its members sees it."""

    group: Group
    me: Membership
    members: tuple[Member, ...]
    queue: tuple[QueueItem, ...]  # newest first
    upcoming: tuple[SessionItem, ...]  # soonest first
    past: tuple[SessionItem, ...]  # latest first (the most recent few)
    invitations: tuple[Invitation, ...] = ()  # open ones, for the owner only (see :meth:`invitations`)
    hidden: int = 0  # queued papers left out (hidden by an admin or muted by the group)
    mutes: tuple[MuteRule, ...] = ()  # the group's mute rules
    searches: tuple[GroupSearch, ...] = ()  # the searches the group follows
    calendar_token: str = ""  # the secret of this member's own calendar feed URL

    @property
    def by_votes(self) -> tuple[QueueItem, ...]:
        """The queue, most voted first (then newest)."""
        return tuple(sorted(self.queue, key=lambda q: -q.entry.votes))


@dataclass(frozen=True, slots=True)
class GroupPick:
    paper: Paper
    score: float
    why: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ForTheGroup:
    group: Group
    items: tuple[GroupPick, ...]
    mode: str  # model | similarity | trending: how "For you" ranked them
    positives: int  # the group's papers it learnt from


@dataclass(frozen=True, slots=True)
class InvitationPage:
    group: Group
    invitation: Invitation


@dataclass
class GroupService:
    records: GroupRecords
    papers: VisiblePapers  # existing, not hidden by an admin
    mailer: Mailer
    mail_limits: MailLimits  # per client and per address, as every mail the site sends
    invite_limits: InviteLimits  # per account and per group, a day
    invite_lifetime: timedelta  # PAPERFEED_GROUP_INVITE_DAYS
    site_name: str = "paperfeed"
    mutes: MuteService | None = None  # the groups' mute rules
    recommend: GroupFeeds | None = None  # "For you" over a group's papers (over :class:`GroupSignals`)
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    # -- who may ---------------------------------------------------------------------------------------------

    def membership(self, user_id: int, group_id: int) -> Membership:
        """The reader's membership, or :class:`GroupNotFound` (never "exists but not yours")."""
        found = self.records.membership(group_id, user_id)
        if found is None or self.records.group(group_id) is None:
            raise GroupNotFound(f"no group {group_id}")
        return found

    def _owner(self, user_id: int, group_id: int) -> Membership:
        me = self.membership(user_id, group_id)
        if not me.owner:
            raise GroupForbidden("only the group's owner can do this")
        return me

    def _group(self, group_id: int) -> Group:
        found = self.records.group(group_id)
        if found is None:
            raise GroupNotFound(f"no group {group_id}")
        return found

    def _paper_id(self, paper_id: str) -> str:
        try:
            canonical = normalize_paper_id(paper_id).base
        except InvalidPaperId as exc:
            raise InvalidGroupInput("paper_id", str(exc)) from None
        if not self.papers.get([canonical]):
            raise UnknownPaper(f"no paper with id {canonical} is in this instance")
        return canonical

    # -- groups ----------------------------------------------------------------------------------------------

    def create(self, user_id: int, name: str, description: str = "") -> Group:
        return self.records.create_group(
            user_id, check_group_name(name), check_description(description), secrets.token_urlsafe(24)
        )

    def groups(self, user_id: int) -> list[tuple[Group, Membership]]:
        return self.records.groups_of(user_id)

    def group(self, user_id: int, group_id: int) -> Group:
        """The group, for one of its members."""
        self.membership(user_id, group_id)
        return self._group(group_id)

    def page(self, user_id: int, group_id: int) -> GroupPage:
        me = self.membership(user_id, group_id)
        group = self._group(group_id)
        entries = self.records.queue(group_id)
        now = self.now()
        upcoming = self.records.sessions(group_id, after=now, limit=20)
        past = self.records.sessions(group_id, before=now, limit=PAST_ON_PAGE)
        shown = self._visible(
            [e.paper_id for e in entries] + [s.paper_id for s in (*upcoming, *past)], group_id
        )
        vote = self.records.my_vote(group_id, user_id)
        queue = tuple(
            QueueItem(e, shown[e.paper_id], e.paper_id == vote) for e in entries if e.paper_id in shown
        )
        return GroupPage(
            group,
            me,
            tuple(self.records.members(group_id)),
            queue,
            tuple(SessionItem(s, shown.get(s.paper_id)) for s in upcoming),
            tuple(SessionItem(s, shown.get(s.paper_id)) for s in past),
            self._open_invitations(user_id, group_id) if me.owner else (),
            hidden=len(entries) - len(queue),
            mutes=tuple(self.mutes.group_rules(group_id)) if self.mutes is not None else (),
            searches=tuple(self.records.searches(group_id)),
            calendar_token=self.records.calendar_token(group_id, user_id) or "",
        )

    def _visible(self, paper_ids: Sequence[str], group_id: int | None = None) -> dict[str, Paper]:
        found = self.papers.get(list(dict.fromkeys(paper_ids)))
        if group_id is not None and self.mutes is not None:
            muted = self.mutes.group_filter(group_id).muted
            found = {pid: p for pid, p in found.items() if not muted(p)}
        return found

    def delete(self, user_id: int, group_id: int) -> None:
        self._owner(user_id, group_id)
        self.records.delete_group(group_id)

    # -- members ---------------------------------------------------------------------------------------------

    def leave(self, user_id: int, group_id: int) -> None:
        """Leave a group; its owner hands it over (or deletes it) first."""
        me = self.membership(user_id, group_id)
        if me.owner:
            raise InvalidGroupInput(
                "owner", "hand the group over to another member (or delete it) before leaving"
            )
        self.records.remove_member(group_id, user_id)

    def remove(self, user_id: int, group_id: int, member_id: int) -> None:
        self._owner(user_id, group_id)
        if member_id == user_id:
            raise InvalidGroupInput("member", "the owner cannot remove themselves; hand the group over first")
        if not self.records.remove_member(group_id, member_id):
            raise GroupNotFound(f"no member {member_id} in this group")

    def hand_over(self, user_id: int, group_id: int, member_id: int) -> None:
        self._owner(user_id, group_id)
        if member_id == user_id:
            raise InvalidGroupInput("member", "you already own this group")
        if not self.records.hand_over(group_id, user_id, member_id):
            raise GroupNotFound(f"no member {member_id} in this group")

    def set_digest(self, user_id: int, group_id: int, on: bool) -> Membership:
        self.membership(user_id, group_id)
        self.records.set_digest(group_id, user_id, on)
        return self.membership(user_id, group_id)

    def check_owner(self, user_id: int, group_id: int) -> None:
        """GroupNotFound for a non-member, GroupForbidden for a member who is not the owner."""
        self._owner(user_id, group_id)

    # -- the group's mute rules (its queue, pages, digest and recommendations; the owner's to change) ------

    def add_mute(self, user_id: int, group_id: int, kind: str, value: str) -> MuteRule:
        self._owner(user_id, group_id)
        try:
            return self._mutes().add_group(group_id, kind, value)
        except InvalidMuteRule as exc:
            raise InvalidGroupInput(exc.field, exc.reason) from None

    def remove_mute(self, user_id: int, group_id: int, kind: str, value: str) -> None:
        self._owner(user_id, group_id)
        try:
            self._mutes().remove_group(group_id, kind, value)
        except InvalidMuteRule as exc:
            raise InvalidGroupInput(exc.field, exc.reason) from None

    def _mutes(self) -> MuteService:
        if self.mutes is None:
            raise InvalidGroupInput("kind", "mute rules are not available on this instance")
        return self.mutes

    # -- what the "queue for a group" control shows ----------------------------------------------------

    def queued(self, user_id: int) -> dict[int, frozenset[str]]:
        """The papers queued in each of the reader's groups (one read), so a paper's "queue for a group"
        control says where it is queued already instead of offering to queue it again."""
        mine = [g.id for g, _ in self.records.groups_of(user_id)]
        return self.records.queued_in(mine) if mine else {}

    # -- invitations -----------------------------------------------------------------------------------------

    def invite(self, user_id: int, group_id: int, email: str, *, base_url: str, client: str) -> OutgoingMail:
        """Record an invitation of ``email`` and return its mail (the caller sends it after replying,
        :meth:`deliver`). Counted against the site's mail limits and the day's invitation caps first:
        over them (:class:`RateLimited`), nothing is recorded."""
        self._owner(user_id, group_id)
        try:
            address = normalize_email(email)
        except InvalidEmail as exc:
            raise InvalidGroupInput("email", str(exc).removeprefix("Email: ")) from None
        members = self.records.members(group_id)
        if len(members) >= MAX_MEMBERS:
            raise InvalidGroupInput("email", f"a group has at most {count(MAX_MEMBERS, 'member')}")
        self.mail_limits.request(address, client)
        now = self.now()
        self.invite_limits.count(user_id, group_id, now)
        group = self._group(group_id)
        inviter = next((m for m in members if m.user_id == user_id), None)
        who = f"{inviter.name} (a reader on {self.site_name})" if inviter and inviter.named else "A reader"
        token = secrets.token_urlsafe(32)
        expires = now + self.invite_lifetime
        self.records.add_invitation(group_id, address, hash_token(token), user_id, now, expires)
        url = f"{base_url.rstrip('/')}/groups/invitations/{quote(token)}"
        days = max(1, round(self.invite_lifetime.total_seconds() / 86400))
        text = (
            f"{who} has invited you to a reading group on {self.site_name}. "
            "Its name, as its owner wrote it:\n\n"
            f"    {group.name}\n\n"
            f"Open this link to join (sign in, or sign up, with this address: {address}):\n\n{url}\n\n"
            f"It works once and for {count(days, 'day')}. {self.site_name} did not write the "
            "group's name or the inviter's; if you do not know them, ignore this message."
        )
        # The Subject carries nothing a reader wrote: mail clients show it before anything else, and it
        # is what a spammer would write into a group's name.
        return OutgoingMail(
            to=address, subject=f"An invitation to a reading group on {self.site_name}", text=text
        )

    def invitations(self, user_id: int, group_id: int) -> tuple[Invitation, ...]:
        """The group's open invitations, for its owner: the addresses they typed themselves, and of the
        others (a previous owner's) who sent them and until when, never the address."""
        self._owner(user_id, group_id)
        return self._open_invitations(user_id, group_id)

    def _open_invitations(self, user_id: int, group_id: int) -> tuple[Invitation, ...]:
        return tuple(
            i if i.invited_by == user_id else replace(i, email="")
            for i in self.records.open_invitations(group_id, self.now())
        )

    def withdraw(self, user_id: int, group_id: int, invitation_id: int) -> None:
        """The owner closes an open invitation: its link then works for nobody."""
        self._owner(user_id, group_id)
        if not self.records.withdraw_invitation(group_id, invitation_id, self.now()):
            raise GroupNotFound(f"no open invitation {invitation_id} in this group")

    def deliver(self, mail: OutgoingMail) -> None:
        """Send an invitation mail; a failure is logged (the reply has gone already)."""
        try:
            self.mailer.send(mail)
        except MailError as exc:
            log.error("could not send the invitation to %s: %s", mail.to, exc)
        except Exception:
            log.exception("could not send the invitation to %s", mail.to)

    def _open_invitation(self, token: str) -> Invitation:
        found = self.records.invitation(hash_token(token)) if token else None
        if found is None or found.used_at is not None or found.expires_at <= self.now():
            raise GroupNotFound(_UNUSABLE)
        return found

    def invitation(self, token: str, email: str) -> InvitationPage:
        """What an invitation link shows its addressee before they accept (GroupNotFound otherwise: to
        whoever else holds the link it is the same unknown link, naming no group)."""
        found = self._open_invitation(token)
        if email.strip().lower() != found.email:
            raise GroupNotFound(_UNUSABLE)
        return InvitationPage(self._group(found.group_id), found)

    def accept(self, user_id: int, email: str, token: str) -> Group:
        """Join through an invitation: once, before it expires or is closed, as the reader it was sent to
        (the address's other invitations to the group close with it)."""
        self.invitation(token, email)
        group_id = self.records.accept_invitation(
            hash_token(token), user_id, self.now(), secrets.token_urlsafe(24)
        )
        if group_id is None:  # another request used or closed it meanwhile
            raise GroupNotFound(_UNUSABLE)
        return self._group(group_id)

    # -- the queue -------------------------------------------------------------------------------------------

    def queue_add(self, user_id: int, group_id: int, paper_id: str, note: str = "") -> QueueEntry:
        """Queue a paper for the group (queueing one already there keeps the first note)."""
        self.membership(user_id, group_id)
        canonical = self._paper_id(paper_id)
        self.records.add_to_queue(group_id, canonical, user_id, check_queue_note(note), self.now())
        entry = self.records.queue_entry(group_id, canonical)
        assert entry is not None
        return entry

    def queue_remove(self, user_id: int, group_id: int, paper_id: str) -> None:
        """Take a paper off the queue: whoever queued it, or the owner."""
        me = self.membership(user_id, group_id)
        canonical = self._queued(group_id, paper_id)
        entry = self.records.queue_entry(group_id, canonical)
        if entry is not None and entry.added_by != user_id and not me.owner:
            raise GroupForbidden("only whoever queued a paper, or the owner, can take it off the queue")
        self.records.remove_from_queue(group_id, canonical)

    def _queued(self, group_id: int, paper_id: str) -> str:
        try:
            canonical = normalize_paper_id(paper_id).base
        except InvalidPaperId as exc:
            raise InvalidGroupInput("paper_id", str(exc)) from None
        if self.records.queue_entry(group_id, canonical) is None:
            raise GroupNotFound(f"paper {canonical} is not in this group's queue")
        return canonical

    def queue(self, user_id: int, group_id: int) -> tuple[QueueItem, ...]:
        return self.page(user_id, group_id).queue

    def vote(self, user_id: int, group_id: int, paper_id: str | None) -> str | None:
        """Put the member's one vote on a queued paper (None or "" takes it back); returns the vote."""
        self.membership(user_id, group_id)
        canonical = self._queued(group_id, paper_id) if paper_id else None
        self.records.vote(group_id, user_id, canonical, self.now())
        return canonical

    # -- sessions --------------------------------------------------------------------------------------------

    def schedule(
        self, user_id: int, group_id: int, starts_at: datetime, presenter_id: int, paper_id: str | None
    ) -> GroupSession:
        """The owner schedules a session: the paper is the queue's most voted (``paper_id`` None) or one
        they pick from the queue; it leaves the queue. The presenter is a member."""
        self._owner(user_id, group_id)
        start = check_session_start(starts_at, self.now())
        if self.records.membership(group_id, presenter_id) is None:
            raise InvalidGroupInput("presenter", "the presenter must be a member of the group")
        if paper_id:
            chosen = self._queued(group_id, paper_id)
        else:
            ranked = sorted(self.records.queue(group_id), key=lambda e: (-e.votes, e.added_at))
            if not ranked:
                raise InvalidGroupInput("paper_id", "the queue is empty: queue a paper first")
            chosen = ranked[0].paper_id
        return self.records.add_session(group_id, start.astimezone(UTC), presenter_id, chosen, self.now())

    def _session(self, user_id: int, group_id: int, session_id: int) -> GroupSession:
        self.membership(user_id, group_id)
        found = self.records.session(session_id)
        if found is None or found.group_id != group_id:
            raise GroupNotFound(f"no session {session_id} in this group")
        return found

    def session(self, user_id: int, group_id: int, session_id: int) -> SessionItem:
        found = self._session(user_id, group_id, session_id)
        return SessionItem(found, self._visible([found.paper_id]).get(found.paper_id))

    def set_notes(self, user_id: int, group_id: int, session_id: int, body: str) -> SessionItem:
        """Any member edits a session's shared notes, before or after it took place."""
        self._session(user_id, group_id, session_id)
        self.records.set_session_notes(session_id, check_session_notes(body), user_id, self.now())
        return self.session(user_id, group_id, session_id)

    def cancel_session(self, user_id: int, group_id: int, session_id: int) -> None:
        self._owner(user_id, group_id)
        self._session(user_id, group_id, session_id)
        self.records.delete_session(session_id)

    def archive(self, user_id: int, group_id: int) -> tuple[Group, tuple[SessionItem, ...]]:
        """Every past session, latest first."""
        self.membership(user_id, group_id)
        past = self.records.sessions(group_id, before=self.now(), limit=ARCHIVE_SIZE)
        shown = self._visible([s.paper_id for s in past])
        return self._group(group_id), tuple(SessionItem(s, shown.get(s.paper_id)) for s in past)

    # -- the group's searches (their new matches go into the weekly digest) -------------------------------

    def searches(self, user_id: int, group_id: int) -> list[GroupSearch]:
        self.membership(user_id, group_id)
        return self.records.searches(group_id)

    def add_search(self, user_id: int, group_id: int, query: str) -> GroupSearch:
        """Any member adds a search the group follows (at most 20)."""
        self.membership(user_id, group_id)
        try:
            text = check_query(query)
        except InvalidLibraryInput as exc:
            raise InvalidGroupInput("query", exc.reason) from None
        if len(self.records.searches(group_id)) >= MAX_GROUP_SEARCHES:
            raise InvalidGroupInput("query", f"a group follows at most {count(MAX_GROUP_SEARCHES, 'search')}")
        return self.records.add_search(group_id, text, user_id, self.now())

    def delete_search(self, user_id: int, group_id: int, search_id: int) -> None:
        self.membership(user_id, group_id)
        if not self.records.delete_search(group_id, search_id):
            raise GroupNotFound(f"no search {search_id} in this group")

    # -- the calendar feed -----------------------------------------------------------------------------------

    def calendar_token(self, user_id: int, group_id: int) -> str:
        """The secret of the member's own calendar feed URL (it dies with their membership)."""
        self.membership(user_id, group_id)
        token = self.records.calendar_token(group_id, user_id)
        if token is None:
            raise GroupNotFound(f"no group {group_id}")
        return token

    def calendar(self, token: str) -> tuple[Group, tuple[SessionItem, ...]]:
        """Every session of the group whose member holds ``token`` (past ones included, as calendars keep
        them), for the iCalendar feed; GroupNotFound for an unknown or dead token."""
        found = self.records.by_calendar_token(token) if token else None
        if found is None:
            raise GroupNotFound("no such calendar feed")
        sessions = self.records.sessions(found.group_id, limit=ARCHIVE_SIZE)
        shown = self._visible([s.paper_id for s in sessions])
        return self._group(found.group_id), tuple(SessionItem(s, shown.get(s.paper_id)) for s in sessions)

    # -- for the group: "For you" over the group's papers ---------------------------------------------------

    def for_the_group(self, user_id: int, group_id: int, *, limit: int = 20) -> ForTheGroup:
        """Recent papers ranked by the "For you" model trained on the group's queue and past sessions,
        each with why (the queued or presented paper it resembles, the group's search it matches)."""
        self.membership(user_id, group_id)
        if self.recommend is None:
            raise GroupNotFound("recommendations are not available on this instance")
        feed = self.recommend.feed(group_id, limit=limit * 2)
        queued = {e.paper_id for e in self.records.queue(group_id)}
        sessions = {s.paper_id: s for s in self.records.sessions(group_id, limit=ARCHIVE_SIZE)}
        muted = self.mutes.group_filter(group_id).muted if self.mutes is not None else None
        items: list[GroupPick] = []
        for rec in feed.items:
            if muted is not None and muted(rec.paper):
                continue
            why = []
            for reason in rec.reasons:
                if reason.kind == "similar" and reason.paper_id:
                    title = reason.paper_title or reason.paper_id
                    if reason.paper_id in queued:
                        why.append(f"similar to “{title}” in the group's queue")
                    elif reason.paper_id in sessions:
                        when = sessions[reason.paper_id].starts_at
                        why.append(f"similar to “{title}”, read in the session of {when:%d %b %Y}")
                    else:
                        why.append(f"similar to “{title}”")
                elif reason.kind == "alert":
                    why.append(reason.text.replace("matches your alert", "matches the group's search"))
                else:
                    why.append(reason.text)
            items.append(GroupPick(rec.paper, rec.score, tuple(why)))
        return ForTheGroup(self._group(group_id), tuple(items[:limit]), feed.mode, feed.positives)

    # -- for other services ----------------------------------------------------------------------------------

    def paper_ids(self, group_id: int) -> tuple[list[str], list[str]]:
        """The group's queued papers (newest first) and its sessions' papers (latest first): what "For
        the group" learns from. No membership check: callers have made one."""
        queued = [e.paper_id for e in self.records.queue(group_id)]
        sessions = [s.paper_id for s in reversed(self.records.sessions(group_id, limit=ARCHIVE_SIZE))]
        return queued, sessions
