"""From a request to the app's services: the one way web handlers reach the composition root.

The :class:`~paperfeed.bootstrap.App` arrives through lifespan state (``request.state.app``, see
:func:`~paperfeed.web.app.create_app`). Handlers either call the ``*_of(request)`` helpers or take the
``Annotated`` aliases below as parameters (FastAPI's ``Depends``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from paperfeed.bootstrap import App
from paperfeed.domain.results import PaperSearch
from paperfeed.services.accounts import AccountService
from paperfeed.services.community import CommunityService
from paperfeed.services.feed import FeedService
from paperfeed.services.library import LibraryService
from paperfeed.services.topics import TopicService

__all__ = [
    "AppDep",
    "Community",
    "Feeds",
    "Search",
    "accounts_of",
    "app_of",
    "community_of",
    "feeds_of",
    "library_of",
    "search_of",
]


def app_of(request: Request) -> App:
    """The request's :class:`App` (made once per process at startup)."""
    app: App = request.state.app
    return app


def feeds_of(request: Request) -> FeedService:
    return app_of(request).catalogue.feeds


def search_of(request: Request) -> PaperSearch:
    return app_of(request).search.hybrid


def accounts_of(request: Request) -> AccountService:
    return app_of(request).readers.accounts


def community_of(request: Request) -> CommunityService:
    return app_of(request).readers.community


def library_of(request: Request) -> LibraryService:
    return app_of(request).readers.library


def topics_of(request: Request) -> TopicService:
    return app_of(request).catalogue.topics


AppDep = Annotated[App, Depends(app_of)]
Feeds = Annotated[FeedService, Depends(feeds_of)]
Search = Annotated[PaperSearch, Depends(search_of)]
Community = Annotated[CommunityService, Depends(community_of)]
