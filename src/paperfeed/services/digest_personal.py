"""The personal sections of a digest, adapting the library and recommendation services.

Each needs a subscription linked to an account (the composer skips them for address-only
subscribers). Every pick says why it is there: the recommender's reason, the saved search it matches,
or the followed author who wrote it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime

from paperfeed.domain.digest import Pick, Recommender, Section, SectionRequest
from paperfeed.domain.library import FollowedAuthor, SavedSearch
from paperfeed.domain.models import Paper

__all__ = ["AlertsSection", "AuthorsSection", "ForYouSection"]


def _user(request: SectionRequest) -> int | None:
    return request.subscription.user_id


def _in_window(paper: Paper, request: SectionRequest) -> bool:
    published = paper.published
    if published is None:
        return False
    return request.since <= published.astimezone(UTC) < request.until


class ForYouSection:
    """The reader's "For you" feed (``services/recommend.py``), with its reasons."""

    section = Section.for_you

    def __init__(self, recommender: Callable[[], Recommender]) -> None:
        self.recommender = recommender

    def title(self, request: SectionRequest) -> str:
        return "For you"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        limit = max(1, min(request.limit, 200))
        recs = self.recommender().for_you(user, limit=limit, exclude=request.exclude)
        return [Pick(r.paper, r.reason or "recommended for you") for r in recs]


class AlertsSection:
    """New matches of the reader's saved searches within the digest's window."""

    section = Section.alerts

    def __init__(
        self,
        searches: Callable[[int], Sequence[SavedSearch]],
        matches: Callable[[SavedSearch, date, date, int], Sequence[Paper]],
    ) -> None:
        self.searches = searches
        self.matches = matches

    def title(self, request: SectionRequest) -> str:
        return "Your saved-search alerts"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        first, last = request.since.date(), request.until.date()
        out: list[Pick] = []
        seen: set[str] = set()
        for saved in self.searches(user):
            label = saved.name or saved.query
            for paper in self.matches(saved, first, last, request.limit):
                if paper.id in seen or paper.id in request.exclude or not _in_window(paper, request):
                    continue
                seen.add(paper.id)
                out.append(Pick(paper, f"matches your saved search “{label}”"))
        return out[: request.limit]


class AuthorsSection:
    """New papers by authors the reader follows."""

    section = Section.authors

    def __init__(
        self,
        followed: Callable[[int], Sequence[FollowedAuthor]],
        papers_by: Callable[[str, int], Sequence[Paper]],
    ) -> None:
        self.followed = followed
        self.papers_by = papers_by

    def title(self, request: SectionRequest) -> str:
        return "From authors you follow"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        out: list[Pick] = []
        seen: set[str] = set()
        for author in self.followed(user):
            for paper in self.papers_by(author.name, request.limit):
                if paper.id in seen or paper.id in request.exclude or not _in_window(paper, request):
                    continue
                seen.add(paper.id)
                out.append(Pick(paper, f"by {author.name}, whom you follow"))
        newest = datetime.min.replace(tzinfo=UTC)
        out.sort(key=lambda p: p.paper.published or newest, reverse=True)
        return out[: request.limit]
