"""The personal sections of a digest, adapting the library and recommendation services.

Each needs a subscription linked to an account (the composer skips them for address-only
subscribers). Every pick says why it is there: the recommender's reason, the saved search it matches,
or the followed author who wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from paperfeed.domain.digest import Pick, Recommender, Section, SectionRequest
from paperfeed.domain.models import Paper
from paperfeed.domain.recommend import WindowMatches
from paperfeed.services.library import LibraryService

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

    def __init__(self, recommender: Recommender) -> None:
        self.recommender = recommender

    def title(self, request: SectionRequest) -> str:
        return "For you"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        limit = max(1, min(request.limit, 200))
        recs = self.recommender.for_you(user, limit=limit, exclude=request.exclude)
        return [Pick(r.paper, r.reason or "recommended for you") for r in recs]


class AlertsSection:
    """New matches of the reader's saved searches within the digest's window."""

    section = Section.alerts

    def __init__(self, library: LibraryService, alerts: WindowMatches) -> None:
        self.library = library
        self.alerts = alerts

    def title(self, request: SectionRequest) -> str:
        return "Your saved-search alerts"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        first, last = request.since.date(), request.until.date()
        out: list[Pick] = []
        seen: set[str] = set()
        for saved in self.library.searches(user):
            label = saved.name or saved.query
            for paper in self.alerts.within(saved, first, last, request.limit):
                if paper.id in seen or paper.id in request.exclude or not _in_window(paper, request):
                    continue
                seen.add(paper.id)
                out.append(Pick(paper, f"matches your saved search “{label}”"))
        return out[: request.limit]


class AuthorsSection:
    """New papers by authors the reader follows."""

    section = Section.authors

    def __init__(self, library: LibraryService) -> None:
        self.library = library

    def title(self, request: SectionRequest) -> str:
        return "From authors you follow"

    def picks(self, request: SectionRequest) -> Sequence[Pick]:
        user = _user(request)
        if user is None:
            return []
        out: list[Pick] = []
        seen: set[str] = set()
        for author in self.library.followed(user):
            for paper in self.library.author(author.name, limit=request.limit).papers:
                if paper.id in seen or paper.id in request.exclude or not _in_window(paper, request):
                    continue
                seen.add(paper.id)
                out.append(Pick(paper, f"by {author.name}, whom you follow"))
        newest = datetime.min.replace(tzinfo=UTC)
        out.sort(key=lambda p: p.paper.published or newest, reverse=True)
        return out[: request.limit]
