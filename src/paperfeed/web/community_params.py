"""What the community pages (:mod:`.community`) and the community API (:mod:`.community_api`) share.

A module of its own so that neither imports the other: the pages register the API's router, and a shared
piece kept in either would make the two import each other.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request
from markupsafe import Markup

from .comment_markup import CommentRenderer

__all__ = ["CommentId", "comment_html"]

CommentId = Annotated[int, Path(ge=1, le=2**31 - 1, description="A comment's id.")]  # an SQL INTEGER


def comment_html(request: Request, source: str) -> Markup:
    """A comment's safe HTML, through the process's render cache (see :mod:`.comment_markup`)."""
    renderer: CommentRenderer = request.app.state.comment_html
    return renderer(source)
