"""The community around papers: upvotes, submissions to the daily feed, and comments.

Pure data, validation and the store port. The store keeps it (``adapters/store/community.py``), the
community service changes it (``services/community.py``).

How local upvotes relate to Hugging Face's: ``papers.upvotes`` is the count last imported from Hugging
Face (a snapshot, replaced by every harvest); this instance's readers' votes are rows of their own, one
per reader and paper. What pages, feeds and the API show, and what every ranking sorts by, is the
**sum**: imported count + local votes (:func:`shown_count`). Local votes of readers an administrator hid
do not count. Comments follow the same rule for the count (``numComments``), while only local comments
can be read here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal, Protocol

from .models import Paper
from .wording import count

__all__ = [
    "MAX_COMMENT_CHARS",
    "ArxivTimedOut",
    "ArxivUnreachable",
    "Comment",
    "CommentNotFound",
    "CommunityError",
    "CommunityStore",
    "InvalidComment",
    "InvalidSubmission",
    "LimitReached",
    "NotAllowed",
    "PaperNotFound",
    "Submission",
    "SubmitResult",
    "UnknownArxivPaper",
    "Upvoter",
    "VoteState",
    "check_comment",
    "public_name",
    "shown_count",
    "submission_cap_reached",
    "with_local_counts",
]

MAX_COMMENT_CHARS = 10_000
PaperStatus = Literal["missing", "hidden", "visible"]

# Control characters other than tab and newline, and bidi overrides that could reorder text around them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# -- errors: every message is safe to show the person who caused it -----------------------------------------


class CommunityError(Exception):
    """Something a person asked for that the community features refuse; ``status`` is the HTTP answer."""

    status = 400


class PaperNotFound(CommunityError):
    status = 404


class CommentNotFound(CommunityError):
    """Unknown, deleted, hidden (for non-admins) — all look the same, so nothing leaks."""

    status = 404

    def __init__(self) -> None:
        super().__init__("No such comment.")


class NotAllowed(CommunityError):
    status = 403


class InvalidComment(CommunityError):
    """A comment text that cannot be stored; ``param`` names the field it came in (forms and API)."""

    status = 400
    param = "body"


class InvalidSubmission(CommunityError):
    """Not an arXiv id or URL."""

    status = 400


class UnknownArxivPaper(CommunityError):
    """arXiv answered, but has no paper with that id."""

    status = 404


class ArxivUnreachable(CommunityError):
    """arXiv could not be asked (down, refusing, answering garbage): try again later."""

    status = 502


class ArxivTimedOut(ArxivUnreachable):
    """arXiv did not answer within the time a submission may wait (``PAPERFEED_SUBMIT_TIMEOUT``)."""

    status = 504


class LimitReached(CommunityError):
    """A per-person cap (submissions a day, comments an hour); ``retry_after`` in seconds."""

    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


def submission_cap_reached(cap: int, day: date, now: datetime) -> LimitReached:
    """The refusal of a submission over the daily cap (allowed again at the next UTC midnight)."""
    midnight = datetime.combine(day + timedelta(days=1), time.min, UTC)
    if cap <= 0:
        return LimitReached("Submissions are closed on this site.", int((midnight - now).total_seconds()))
    return LimitReached(
        f"You have submitted {cap} paper{'s' if cap != 1 else ''} today (attempts that failed count too), "
        "the most a reader may submit in a day. Try again tomorrow (UTC).",
        int((midnight - now).total_seconds()),
    )


# -- records --------------------------------------------------------------------------------------------


def public_name(user_id: int, display_name: str | None) -> str:
    """How a reader appears to others: their display name, else a neutral label.

    Never a part of their email address: upvoter lists and comments are public.
    """
    return display_name or f"reader #{user_id}"


def shown_count(imported: int | None, local: int) -> int | None:
    """The count to show and rank by: Hugging Face's imported count plus local ones (None: both unknown)."""
    if imported is None and local == 0:
        return None
    return (imported or 0) + local


def with_local_counts(paper: Paper, votes: int | None, comments: int | None) -> Paper:
    """``paper`` as shown: its imported upvote and comment counts plus this instance's."""
    if not votes and not comments:
        return paper
    return replace(
        paper,
        upvotes=shown_count(paper.upvotes, votes or 0),
        num_comments=shown_count(paper.num_comments, comments or 0),
    )


@dataclass(frozen=True, slots=True)
class VoteState:
    """A paper's votes as one reader sees them right after voting."""

    paper_id: str
    local: int  # votes of this instance's (visible) readers
    imported: int | None  # Hugging Face's count, as last imported
    upvoted: bool  # whether this reader's vote is among ``local``

    @property
    def shown(self) -> int:
        return shown_count(self.imported, self.local) or 0


@dataclass(frozen=True, slots=True)
class Upvoter:
    user_id: int
    name: str  # :func:`public_name`
    upvoted_at: datetime


@dataclass(frozen=True, slots=True)
class Submission:
    """Who put a paper on the daily feed here, and on which day (like HF's ``submittedOnDailyBy``)."""

    paper_id: str
    user_id: int | None  # None once the account is gone
    name: str | None  # :func:`public_name`; None when the submitter is hidden or gone
    day: date
    submitted_at: datetime


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The outcome of a submission. ``created``: this call put the paper on ``day``'s feed.

    Otherwise the paper was already on a daily feed: ``submission`` (when it came from a reader here) and
    ``day`` say where. ``fetched``: the paper's metadata came from arXiv during this call.
    """

    paper_id: str
    created: bool
    day: date | None
    submission: Submission | None
    fetched: bool = False


@dataclass(frozen=True, slots=True)
class Comment:
    id: int
    paper_id: str
    user_id: int
    author: str  # :func:`public_name`
    body: str  # Markdown source (rendered and sanitised only when shown)
    created_at: datetime
    edited_at: datetime | None
    hidden_at: datetime | None  # hidden by an administrator (only administrators still see it)


def check_comment(body: str) -> str:
    """A comment body as stored: NFC, no control characters, trimmed, 1..10,000 characters."""
    if not isinstance(body, str):
        raise InvalidComment("A comment must be text.")
    text = _CONTROL.sub("", unicodedata.normalize("NFC", body.replace("\r\n", "\n").replace("\r", "\n")))
    text = text.strip()
    if not text:
        raise InvalidComment("A comment cannot be empty.")
    if len(text) > MAX_COMMENT_CHARS:
        raise InvalidComment(
            f"A comment has at most {count(MAX_COMMENT_CHARS, 'character')} (this one has {len(text):,})."
        )
    return text


# -- the store port -------------------------------------------------------------------------------------


class CommunityStore(Protocol):
    """Persistence for votes, submissions and comments (``adapters/store/community.py``)."""

    # papers
    def paper_status(self, paper_id: str) -> tuple[PaperStatus, int | None]:
        """Whether the paper is in the store and not hidden by an administrator; its imported upvotes."""
        ...

    def listed_on(self, paper_id: str) -> date | None:
        """The first day the paper is on any daily feed, if it is."""
        ...

    # votes
    def add_vote(self, user_id: int, paper_id: str, now: datetime) -> bool:
        """Record a vote; False when this reader had already voted (nothing changes)."""
        ...

    def remove_vote(self, user_id: int, paper_id: str) -> bool: ...

    def vote_count(self, paper_id: str) -> int:
        """Votes of visible readers."""
        ...

    def vote_counts(self, paper_ids: list[str]) -> dict[str, int]: ...

    def comment_counts(self, paper_ids: list[str]) -> dict[str, int]:
        """Visible comments of visible readers, by paper (papers without any are left out)."""
        ...

    def has_voted(self, user_id: int, paper_id: str) -> bool: ...

    def voted_among(self, user_id: int, paper_ids: list[str]) -> set[str]: ...

    def voted_papers(self, user_id: int) -> list[str]:
        """Every paper the reader upvoted, newest vote first."""
        ...

    def upvoters(self, paper_id: str, limit: int, offset: int) -> tuple[list[Upvoter], int]:
        """Visible readers who upvoted, newest first, and how many there are."""
        ...

    # submissions
    def submission(self, paper_id: str) -> Submission | None: ...

    def add_submission(
        self, user_id: int, paper_id: str, day: date, now: datetime, cap: int
    ) -> Submission | None:
        """Record the submission and its listing on ``day`` atomically, if the reader has fewer than ``cap``
        submissions on ``day``. None when the paper was submitted meanwhile; raises :class:`LimitReached`.
        """
        ...

    def submissions_on(self, user_id: int, day: date) -> int: ...

    def count_attempt(self, user_id: int, day: date, now: datetime, cap: int) -> bool:
        """Count a submission attempt on ``day`` if the reader made fewer than ``cap``; False if not.

        Failed attempts (arXiv down, unknown id) count too: each may cost an arXiv request."""
        ...

    def attempts_on(self, user_id: int, day: date) -> int:
        """The submission attempts the reader made on ``day``, failed ones included."""
        ...

    # comments
    def add_comment(self, user_id: int, paper_id: str, body: str, now: datetime, per_hour: int) -> Comment:
        """Add a comment, unless the reader wrote ``per_hour`` in the last hour: :class:`LimitReached`."""
        ...

    def comment(self, comment_id: int) -> Comment | None: ...

    def comments(self, paper_id: str, *, include_hidden: bool) -> list[Comment]:
        """A paper's comments, oldest first; hidden ones only when asked (for administrators)."""
        ...

    def edit_comment(self, comment_id: int, body: str, now: datetime) -> bool: ...

    def delete_comment(self, comment_id: int) -> bool: ...

    def set_comment_hidden(self, comment_id: int, by: int | None, now: datetime | None) -> bool: ...
