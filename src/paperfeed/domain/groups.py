"""Reading groups: members, a shared queue of papers with votes, journal-club sessions with shared notes.

Pure data, validation and the authorisation rules (who may do what), so every surface asks the same
question the same way. The store keeps it (``adapters/store/groups.py``, through :class:`GroupRecords`);
the group service (``services/groups.py``) applies it. docs/groups.md says what a member can and cannot
see.

The rule that keeps groups private: to anyone who is not a member, a group does not exist. Every refusal
a non-member (or a removed member) meets is :class:`GroupNotFound`, worded exactly like an unknown id;
only a member learns that an action is the owner's (:class:`GroupForbidden`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

from .accounts import RateLimited
from .wording import count

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_GROUP_NAME_CHARS",
    "MAX_MEMBERS",
    "MAX_QUEUE_NOTE_CHARS",
    "MAX_SESSION_NOTES_CHARS",
    "Group",
    "GroupForbidden",
    "GroupNotFound",
    "GroupRecords",
    "GroupSearch",
    "GroupSession",
    "InvalidGroupInput",
    "Invitation",
    "InvitationsCapped",
    "Member",
    "Membership",
    "QueueEntry",
    "Role",
    "UnknownPaper",
    "check_description",
    "check_group_name",
    "check_queue_note",
    "check_session_notes",
    "check_session_start",
]

MAX_GROUP_NAME_CHARS = 100
MAX_DESCRIPTION_CHARS = 1_000
MAX_QUEUE_NOTE_CHARS = 2_000
MAX_SESSION_NOTES_CHARS = 20_000
MAX_MEMBERS = 200  # a reading group, not a mailing list: bounds invitations and digest fan-out

Role = Literal["owner", "member"]


class GroupNotFound(LookupError):
    """No such group, session or invitation for this reader: unknown, or not theirs to know about."""


class UnknownPaper(GroupNotFound):
    """A paper id a member gave (to queue, vote or schedule) that names no paper of this instance: told
    only to members, so a form can say it beside the field (``field``)."""

    def __init__(self, message: str, field: str = "paper_id") -> None:
        super().__init__(message)
        self.field = field


class InvitationsCapped(RateLimited):
    """An owner past the invitations an account, or a group, may send a day (``PAPERFEED_GROUP_INVITES_*``):
    the mail the site sends carries text its readers wrote, so how many it sends for them is bounded."""

    def __init__(self, retry_after: int, whose: str, cap: int) -> None:
        super().__init__(retry_after)
        hours = max(1, -(-self.retry_after // 3600))
        minutes = count(self.retry_after // 60 or 1, "minute")
        when = minutes if self.retry_after < 3600 else count(hours, "hour")
        self.args = (
            f"{whose} sent {count(cap, 'invitation')} in the last 24 hours, the most allowed: "
            f"try again in {when}",
        )


class GroupForbidden(PermissionError):
    """A member asked for something only the group's owner may do."""


class InvalidGroupInput(ValueError):
    """A name, note, date or choice that cannot be stored; the message says which field and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _one_line(text: str) -> str:
    cleaned = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)
    return " ".join(unicodedata.normalize("NFC", cleaned).split())


def check_group_name(name: str) -> str:
    """A group's name as stored: one line, 1..100 characters."""
    text = _one_line(name)
    if not text:
        raise InvalidGroupInput("name", "a group needs a name")
    if len(text) > MAX_GROUP_NAME_CHARS:
        raise InvalidGroupInput(
            "name", f"a group name has at most {count(MAX_GROUP_NAME_CHARS, 'character')}"
        )
    return text


def check_description(text: str) -> str:
    clean = _one_line(text)
    if len(clean) > MAX_DESCRIPTION_CHARS:
        raise InvalidGroupInput(
            "description", f"a description has at most {count(MAX_DESCRIPTION_CHARS, 'character')}"
        )
    return clean


def _markdown(field: str, body: str, limit: int) -> str:
    """Markdown source with line breaks kept and control characters dropped (as a library note)."""
    if len(body) > limit * 2:  # far over: refuse before normalising a huge string
        raise InvalidGroupInput(field, f"{field} has at most {count(limit, 'character')}")
    text = unicodedata.normalize("NFC", body).replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf")).strip()
    if len(text) > limit:
        raise InvalidGroupInput(
            field, f"{field} has at most {count(limit, 'character')} (this has {len(text):,})"
        )
    return text


def check_queue_note(note: str) -> str:
    """Why a member queues a paper: Markdown, at most 2,000 characters (may be empty)."""
    return _markdown("note", note, MAX_QUEUE_NOTE_CHARS)


def check_session_notes(body: str) -> str:
    """A session's shared notes: Markdown, at most 20,000 characters (may be empty)."""
    return _markdown("notes", body, MAX_SESSION_NOTES_CHARS)


def check_session_start(
    starts_at: datetime, now: datetime, *, horizon: timedelta = timedelta(days=730)
) -> datetime:
    """A session's start: aware, not in the past, within two years."""
    if starts_at.tzinfo is None:
        raise InvalidGroupInput("starts_at", "give the time with its time zone (e.g. 2026-12-01T16:00+01:00)")
    if starts_at < now:
        raise InvalidGroupInput(
            "starts_at", f"a session cannot start in the past ({starts_at:%Y-%m-%d %H:%M %Z})"
        )
    if starts_at > now + horizon:
        raise InvalidGroupInput("starts_at", "a session starts within the next two years")
    return starts_at


@dataclass(frozen=True, slots=True)
class Group:
    id: int
    name: str
    description: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Membership:
    """One reader's place in one group."""

    group_id: int
    user_id: int
    role: Role
    joined_at: datetime
    digest: bool  # wants the weekly group digest

    @property
    def owner(self) -> bool:
        return self.role == "owner"


@dataclass(frozen=True, slots=True)
class Member:
    """A member as the other members see them: a name, never an address."""

    user_id: int
    name: str  # their display name, else "reader N": never anything of their address
    role: Role
    joined_at: datetime
    named: bool = True  # False: the reader gave no display name (``name`` is "reader N")


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A paper in the group's queue: who added it, when, why, and its votes."""

    paper_id: str
    added_by: int | None  # None when the adder's account is gone
    added_by_name: str
    note: str
    added_at: datetime
    votes: int = 0


@dataclass(frozen=True, slots=True)
class GroupSession:
    """A journal-club session: when, who presents, which paper, and the shared notes."""

    id: int
    group_id: int
    starts_at: datetime
    presenter_id: int | None
    presenter_name: str
    paper_id: str
    notes: str
    notes_updated_at: datetime | None
    notes_updated_by_name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Invitation:
    """An invitation as its link shows it (the token itself is only ever in the mail)."""

    id: int
    group_id: int
    email: str  # "" where it is not the reader's to see (an address another owner typed)
    invited_by_name: str
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None
    invited_by: int | None = None  # None when the inviter's account is gone


@dataclass(frozen=True, slots=True)
class GroupSearch:
    """A search the group follows: its new matches go into the weekly group digest."""

    id: int
    group_id: int
    query: str
    created_at: datetime


class GroupRecords(Protocol):
    """What the group service needs from the store (``adapters/store/groups.py``)."""

    def create_group(self, owner_id: int, name: str, description: str, calendar_token: str) -> Group: ...
    def group(self, group_id: int) -> Group | None: ...
    def delete_group(self, group_id: int) -> None: ...
    def groups_of(self, user_id: int) -> list[tuple[Group, Membership]]: ...
    def membership(self, group_id: int, user_id: int) -> Membership | None: ...
    def members(self, group_id: int) -> list[Member]: ...
    def member_emails(self, group_id: int, *, digest_only: bool = False) -> list[tuple[int, str]]: ...
    def add_member(self, group_id: int, user_id: int, calendar_token: str) -> bool: ...
    def remove_member(self, group_id: int, user_id: int) -> bool:
        """Remove a member (not the owner) and their vote, and close the open invitations of their
        address to the group, in one transaction (False: no such member)."""
        ...

    def hand_over(self, group_id: int, from_user: int, to_user: int) -> bool: ...
    def set_digest(self, group_id: int, user_id: int, on: bool) -> None: ...
    def calendar_token(self, group_id: int, user_id: int) -> str | None: ...
    def by_calendar_token(self, token: str) -> Membership | None: ...
    def add_invitation(
        self, group_id: int, email: str, token_hash: str, invited_by: int, now: datetime, expires_at: datetime
    ) -> int: ...
    def invitation(self, token_hash: str) -> Invitation | None: ...
    def accept_invitation(
        self, token_hash: str, user_id: int, now: datetime, calendar_token: str
    ) -> int | None:
        """Use an open invitation, make its reader a member and close the other open invitations of the
        address to that group, in one transaction; the group's id, or None (used, closed or expired)."""
        ...

    def open_invitations(self, group_id: int, now: datetime) -> list[Invitation]: ...
    def withdraw_invitation(self, group_id: int, invitation_id: int, now: datetime) -> bool:
        """Close one open invitation of the group (False: none such)."""
        ...

    def queue(self, group_id: int) -> list[QueueEntry]: ...
    def queued_in(self, group_ids: Sequence[int]) -> dict[int, frozenset[str]]:
        """The ids of the papers queued in each of ``group_ids`` (groups with none left out)."""
        ...

    def queue_entry(self, group_id: int, paper_id: str) -> QueueEntry | None: ...
    def add_to_queue(self, group_id: int, paper_id: str, user_id: int, note: str, now: datetime) -> bool: ...
    def remove_from_queue(self, group_id: int, paper_id: str) -> bool: ...
    def vote(self, group_id: int, user_id: int, paper_id: str | None, now: datetime) -> None: ...
    def my_vote(self, group_id: int, user_id: int) -> str | None: ...
    def add_session(
        self, group_id: int, starts_at: datetime, presenter_id: int, paper_id: str, now: datetime
    ) -> GroupSession: ...
    def session(self, session_id: int) -> GroupSession | None: ...
    def sessions(
        self,
        group_id: int,
        *,
        after: datetime | None = None,
        before: datetime | None = None,
        limit: int = 100,
    ) -> list[GroupSession]: ...
    def set_session_notes(self, session_id: int, body: str, user_id: int, now: datetime) -> None: ...
    def delete_session(self, session_id: int) -> None: ...
    def existing_papers(self, paper_ids: Sequence[str]) -> set[str]: ...
    def groups_with_digest(self) -> list[int]: ...
    def searches(self, group_id: int) -> list[GroupSearch]: ...
    def add_search(self, group_id: int, query: str, user_id: int, now: datetime) -> GroupSearch: ...
    def delete_search(self, group_id: int, search_id: int) -> bool: ...
