"""What the community pages (:mod:`.community`) and the community API (:mod:`.community_api`) share.

A module of its own so that neither imports the other: the pages register the API's router, and a shared
piece kept in either would make the two import each other.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request

from paperfeed.bootstrap import App
from paperfeed.services.community import CommunityService

__all__ = ["CommentId", "community_of"]

CommentId = Annotated[int, Path(ge=1, le=2**31 - 1, description="A comment's id.")]  # an SQL INTEGER


def community_of(request: Request) -> CommunityService:
    """The request's community service (the app arrives through lifespan state)."""
    app: App = request.state.app
    return app.community
