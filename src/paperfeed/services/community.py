"""Upvotes, submissions and comments: who may do what, and the steps of a submission.

Pages and the API call :class:`CommunityService` with the signed-in :class:`~paperfeed.domain.accounts.User`;
it raises :class:`~paperfeed.domain.community.CommunityError` subclasses whose message is safe to show and
whose ``status`` is the HTTP answer.

A submission (an arXiv id or URL in any spelling) goes:

1. parsed to a version-less arXiv id (bad text: :class:`InvalidSubmission`);
2. already submitted here, or already on a daily feed: returned as it is (nothing is written, the cap is
   not used);
3. the attempt counted against the reader's daily cap, failed attempts too (a cheap early refusal: no
   arXiv request for a reader over the cap, and a reader cannot make arXiv requests without limit by
   submitting ids that fail);
4. when the paper is not in the store, fetched from the arXiv API and imported through the ingest
   service like any harvest (unknown id: :class:`UnknownArxivPaper`; arXiv down or answering garbage:
   :class:`ArxivUnreachable`, silent: :class:`ArxivTimedOut`). The client asks once with a short timeout
   (``app.sources.arxiv_interactive``), as a person is waiting. A paper imported here stays even if step 5
   refuses: that is harmless;
5. the submission and its listing on today's (UTC) feed written in one transaction, with the cap checked
   again inside it, so concurrent submissions cannot exceed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from paperfeed.domain.accounts import User
from paperfeed.domain.community import (
    ArxivTimedOut,
    ArxivUnreachable,
    Comment,
    CommentNotFound,
    CommunityStore,
    InvalidSubmission,
    NotAllowed,
    PaperNotFound,
    Submission,
    SubmitResult,
    UnknownArxivPaper,
    Upvoter,
    VoteState,
    check_comment,
    submission_cap_reached,
)
from paperfeed.domain.errors import SourceAnswerError, SourceTimeout, SourceUnavailable
from paperfeed.domain.ids import InvalidPaperId, normalize_paper_id, parse_arxiv_id
from paperfeed.domain.ports import PaperFetcher
from paperfeed.domain.wording import count
from paperfeed.services.ingest import IngestService

__all__ = ["CommunityLimits", "CommunityService"]


@dataclass(frozen=True, slots=True)
class CommunityLimits:
    submissions_per_day: int  # per reader, per UTC day
    comments_per_hour: int  # per reader, over the last 60 minutes


def _utc_now() -> datetime:
    return datetime.now(UTC)


class CommunityService:
    def __init__(
        self,
        store: CommunityStore,
        ingest: IngestService,
        fetcher: PaperFetcher,  # the arXiv API, asked once with a short timeout (a person is waiting)
        limits: CommunityLimits,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.store = store
        self.ingest = ingest
        self.fetcher = fetcher
        self.limits = limits
        self.clock = clock

    # -- papers -------------------------------------------------------------------------------------

    def _paper(self, paper_id: str) -> tuple[str, int | None]:
        """The canonical id of a paper that exists and is not hidden, and its imported upvote count."""
        try:
            canonical = normalize_paper_id(paper_id).base
        except InvalidPaperId as exc:
            raise PaperNotFound(str(exc)) from None
        status, imported = self.store.paper_status(canonical)
        if status != "visible":
            raise PaperNotFound(f"No paper with id {canonical} is in this paperfeed instance.")
        return canonical, imported

    # -- votes --------------------------------------------------------------------------------------

    def upvote(self, user: User, paper_id: str) -> VoteState:
        """Add the reader's vote (voting twice changes nothing)."""
        pid, imported = self._paper(paper_id)
        self.store.add_vote(user.id, pid, self.clock())
        return VoteState(pid, self.store.vote_count(pid), imported, True)

    def unvote(self, user: User, paper_id: str) -> VoteState:
        """Take the reader's vote back (without one, nothing changes)."""
        pid, imported = self._paper(paper_id)
        self.store.remove_vote(user.id, pid)
        return VoteState(pid, self.store.vote_count(pid), imported, False)

    def votes(self, paper_id: str, user: User | None = None) -> VoteState:
        pid, imported = self._paper(paper_id)
        voted = user is not None and self.store.has_voted(user.id, pid)
        return VoteState(pid, self.store.vote_count(pid), imported, voted)

    def upvoters(self, paper_id: str, *, limit: int = 100, offset: int = 0) -> tuple[str, list[Upvoter], int]:
        """The paper's canonical id, one page of its visible upvoters (newest first) and their number."""
        if not 1 <= limit <= 1000 or offset < 0:
            raise ValueError("limit must be 1..1000 and offset 0 or more")
        pid, _ = self._paper(paper_id)
        voters, total = self.store.upvoters(pid, limit, offset)
        return pid, voters, total

    def voted_among(self, user: User | None, paper_ids: Sequence[str]) -> set[str]:
        """Which of ``paper_ids`` the reader upvoted (for the buttons of a page)."""
        if user is None or not paper_ids:
            return set()
        return self.store.voted_among(user.id, list(paper_ids))

    def upvoted_ids(self, user_id: int) -> list[str]:
        """Every paper the reader upvoted, newest first (positives for recommendations)."""
        return self.store.voted_papers(user_id)

    # -- submissions --------------------------------------------------------------------------------

    def submission(self, paper_id: str) -> Submission | None:
        try:
            return self.store.submission(normalize_paper_id(paper_id).base)
        except InvalidPaperId:
            return None

    def submitted_today(self, user: User) -> int:
        """How much of today's cap the reader used: attempts, failed ones included."""
        today = self.clock().date()
        return max(self.store.submissions_on(user.id, today), self.store.attempts_on(user.id, today))

    def submit(self, user: User, text: str) -> SubmitResult:
        """Put the paper ``text`` names (an arXiv id or URL) on today's feed (the steps: module doc)."""
        try:
            pid = parse_arxiv_id(text).base
        except InvalidPaperId:
            shown = " ".join(str(text).split())[:80]
            raise InvalidSubmission(
                f"“{shown}” is not an arXiv id or URL. Use an id such as 2503.10613 or hep-th/9901001, "
                "or a link such as https://arxiv.org/abs/2503.10613."
            ) from None
        existing = self.store.submission(pid)
        if existing is not None:
            return SubmitResult(pid, False, existing.day, existing)
        status, _ = self.store.paper_status(pid)
        if status == "hidden":
            raise PaperNotFound(f"Paper {pid} was taken off this site by an administrator.")
        if status == "visible":
            listed = self.store.listed_on(pid)
            if listed is not None:
                return SubmitResult(pid, False, listed, None)
        now = self.clock()
        today = now.date()
        cap = self.limits.submissions_per_day
        if self.store.submissions_on(user.id, today) >= cap:
            raise submission_cap_reached(cap, today, now)
        if not self.store.count_attempt(user.id, today, now, cap):
            raise submission_cap_reached(cap, today, now)
        fetched = False
        if status == "missing":
            self._fetch(pid)
            fetched = True
        made = self.store.add_submission(user.id, pid, today, now, cap)
        if made is None:  # someone else submitted it meanwhile
            other = self.store.submission(pid)
            return SubmitResult(pid, False, other.day if other else None, other, fetched)
        return SubmitResult(pid, True, today, made, fetched)

    def _fetch(self, pid: str) -> None:
        """Import the paper from the arXiv API through the ingest service."""
        try:
            summary = self.ingest.run(self.fetcher.papers((pid,)))
        except SourceTimeout as exc:
            raise ArxivTimedOut(
                f"arXiv did not answer within {count(exc.timeout, 'second')} when looking up {pid}. "
                "Nothing was "
                "submitted; try again later."
            ) from None
        except SourceUnavailable:
            raise ArxivUnreachable(
                f"arXiv could not be reached to look up {pid}. Nothing was submitted; try again later."
            ) from None
        except SourceAnswerError as exc:
            raise ArxivUnreachable(
                f"arXiv did not give a usable answer for {pid} ({str(exc)[:200]}). Nothing was submitted; "
                "try again later."
            ) from None
        if self.store.paper_status(pid)[0] == "missing":
            why = summary.rejects[0].reason if summary.rejects else "not found on arXiv"
            if why == "not found on arXiv":
                raise UnknownArxivPaper(f"arXiv has no paper with id {pid}. Check the id and try again.")
            raise UnknownArxivPaper(f"arXiv's record of {pid} could not be imported: {why[:200]}.")

    # -- comments -----------------------------------------------------------------------------------

    def comments(self, paper_id: str, viewer: User | None = None) -> tuple[str, list[Comment]]:
        """The paper's canonical id and its comments, oldest first (administrators also see hidden ones)."""
        pid, _ = self._paper(paper_id)
        return pid, self.store.comments(pid, include_hidden=viewer is not None and viewer.is_admin)

    def add_comment(self, user: User, paper_id: str, body: str) -> Comment:
        text = check_comment(body)
        pid, _ = self._paper(paper_id)
        return self.store.add_comment(user.id, pid, text, self.clock(), self.limits.comments_per_hour)

    def comment(self, comment_id: int, viewer: User | None = None) -> Comment:
        """A comment as ``viewer`` may see it (hidden ones exist only for administrators)."""
        found = self.store.comment(comment_id)
        if found is None or (found.hidden_at is not None and not (viewer is not None and viewer.is_admin)):
            raise CommentNotFound()
        if self.store.paper_status(found.paper_id)[0] != "visible":
            raise CommentNotFound()
        return found

    def _own(self, user: User, comment_id: int, verb: str) -> Comment:
        found = self.comment(comment_id, user)
        if found.user_id != user.id:
            raise NotAllowed(f"You can only {verb} your own comments.")
        return found

    def edit_comment(self, user: User, comment_id: int, body: str) -> Comment:
        text = check_comment(body)
        self._own(user, comment_id, "edit")
        self.store.edit_comment(comment_id, text, self.clock())
        return self.comment(comment_id, user)

    def delete_comment(self, user: User, comment_id: int) -> Comment:
        found = self._own(user, comment_id, "delete")
        self.store.delete_comment(comment_id)
        return found

    def set_comment_hidden(self, admin: User, comment_id: int, hidden: bool) -> Comment:
        """Administrators hide a comment from everyone else (and can show it again)."""
        if not admin.is_admin:
            raise NotAllowed("Only administrators can hide comments.")
        self.comment(comment_id, admin)
        self.store.set_comment_hidden(comment_id, admin.id, self.clock() if hidden else None)
        return self.comment(comment_id, admin)
