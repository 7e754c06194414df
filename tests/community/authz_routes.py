"""The community's state-changing routes for the authorization matrix (see tests/support/authz.py).

* Upvoting, submitting and commenting act on the reader's own vote, submission or comment: every
  signed-in actor may, anonymous visitors are sent to sign in (pages) or get a 401 (API).
* Editing and deleting act on ``user``'s comment: only ``user`` may; another reader and an administrator
  get a 403 (comments are public, so there is nothing to hide by answering 404).
* Hiding and showing a comment again are for administrators only.

Each request starts from no votes, submissions or comments (the caps are never reached here; their own
tests are in test_web.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select

from paperfeed.adapters.store.community import SUBMITTED_SOURCE
from paperfeed.adapters.store.schema import listings
from paperfeed.adapters.store.schema_community import paper_comments, paper_submissions, paper_upvotes
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from tests.support.authz import SIGNIN, Actor, Route, World

__all__ = ["ROUTES"]

OWN_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 303, "other": 303, "admin": 303}
OWN_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 200, "other": 200, "admin": 200}
OWN_API_CREATED: Mapping[Actor, int | str] = {"anonymous": 401, "user": 201, "other": 201, "admin": 201}
AUTHOR_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 303, "other": 403, "admin": 403}
AUTHOR_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 200, "other": 403, "admin": 403}
ADMIN_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 403, "other": 403, "admin": 303}
ADMIN_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 403, "other": 403, "admin": 200}
UNLISTED = "2501.00999"  # a stored paper on no daily feed, so a submission needs no arXiv request


def _count(w: World, table: Any, *where: Any) -> int:
    with w.app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _fresh(w: World) -> dict[str, Any]:
    with w.app.core.store.engine.begin() as conn:
        for table in (paper_upvotes, paper_submissions, paper_comments):
            conn.execute(delete(table))
        conn.execute(delete(listings).where(listings.c.source == SUBMITTED_SOURCE))
    if w.app.core.store.get_paper(UNLISTED) is None:
        when = datetime(2025, 1, 5, tzinfo=UTC)
        w.app.core.store.apply_batch(Batch(papers=[Paper(id=UNLISTED, title="Never listed", published=when)]))
    return {"paper": w.paper_ids[0]}


def _voted_by_all(w: World) -> dict[str, Any]:
    ctx = _fresh(w)
    for actor in ("user", "other", "admin"):
        w.app.readers.community.upvote(w.users[actor], ctx["paper"])
    return ctx


def _users_comment(w: World, *, hidden: bool = False) -> dict[str, Any]:
    ctx = _fresh(w)
    made = w.app.readers.community.add_comment(w.users["user"], ctx["paper"], "original")
    if hidden:
        w.app.readers.community.set_comment_hidden(w.users["admin"], made.id, True)
    return {**ctx, "comment": made.id}


def _hidden_comment(w: World) -> dict[str, Any]:
    return _users_comment(w, hidden=True)


def _any_vote(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, paper_upvotes) > 0


def _fewer_votes(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, paper_upvotes) < 3


def _submitted(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, paper_submissions) > 0 and _count(w, listings, listings.c.source == SUBMITTED_SOURCE) > 0


def _any_comment(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, paper_comments) > 0


def _edited(w: World, ctx: dict[str, Any]) -> bool:
    return (
        _count(w, paper_comments, paper_comments.c.id == ctx["comment"], paper_comments.c.body == "edited")
        > 0
    )


def _deleted(w: World, ctx: dict[str, Any]) -> bool:
    return _count(w, paper_comments, paper_comments.c.id == ctx["comment"]) == 0


def _hidden(w: World, ctx: dict[str, Any]) -> bool:
    where = (paper_comments.c.id == ctx["comment"], paper_comments.c.hidden_at.is_not(None))
    return _count(w, paper_comments, *where) > 0


def _shown_again(w: World, ctx: dict[str, Any]) -> bool:
    return not _hidden(w, ctx)


def _paper_path(suffix: str) -> Any:
    return lambda w, ctx: f"/papers/{ctx['paper']}{suffix}"


def _api_paper_path(suffix: str) -> Any:
    return lambda w, ctx: f"/api/papers/{ctx['paper']}{suffix}"


def _comment_path(prefix: str, suffix: str = "") -> Any:
    return lambda w, ctx: f"{prefix}{ctx['comment']}{suffix}"


ROUTES = [
    # -- pages --
    Route(
        "community: upvote (page)",
        "POST",
        _paper_path("/upvote"),
        OWN_PAGE,
        form={},
        setup=_fresh,
        changed=_any_vote,
    ),
    Route(
        "community: take an upvote back (page)",
        "POST",
        _paper_path("/upvote/delete"),
        OWN_PAGE,
        form={},
        setup=_voted_by_all,
        changed=_fewer_votes,
    ),
    Route(
        "community: submit (page)",
        "POST",
        "/submit",
        OWN_PAGE,
        form={"paper": UNLISTED},
        setup=_fresh,
        changed=_submitted,
    ),
    Route(
        "community: comment (page)",
        "POST",
        _paper_path("/comments"),
        OWN_PAGE,
        form={"body": "A *comment*."},
        setup=_fresh,
        changed=_any_comment,
    ),
    Route(
        "community: edit a comment (page)",
        "POST",
        _comment_path("/comments/", "/edit"),
        AUTHOR_PAGE,
        form={"body": "edited"},
        setup=_users_comment,
        changed=_edited,
    ),
    Route(
        "community: delete a comment (page)",
        "POST",
        _comment_path("/comments/", "/delete"),
        AUTHOR_PAGE,
        form={},
        setup=_users_comment,
        changed=_deleted,
    ),
    Route(
        "community: hide a comment (page)",
        "POST",
        _comment_path("/comments/", "/hide"),
        ADMIN_PAGE,
        form={},
        setup=_users_comment,
        changed=_hidden,
    ),
    Route(
        "community: show a hidden comment again (page)",
        "POST",
        _comment_path("/comments/", "/unhide"),
        ADMIN_PAGE,
        form={},
        setup=_hidden_comment,
        changed=_shown_again,
    ),
    # -- JSON API --
    Route(
        "community: upvote (API)",
        "POST",
        _api_paper_path("/upvote"),
        OWN_API,
        json={},
        setup=_fresh,
        changed=_any_vote,
    ),
    Route(
        "community: take an upvote back (API)",
        "DELETE",
        _api_paper_path("/upvote"),
        OWN_API,
        json={},
        setup=_voted_by_all,
        changed=_fewer_votes,
    ),
    Route(
        "community: submit (API)",
        "POST",
        "/api/papers/submit",
        OWN_API_CREATED,
        json={"id": f"https://arxiv.org/abs/{UNLISTED}v1"},
        setup=_fresh,
        changed=_submitted,
    ),
    Route(
        "community: comment (API)",
        "POST",
        _api_paper_path("/comments"),
        OWN_API_CREATED,
        json={"body": "A *comment*."},
        setup=_fresh,
        changed=_any_comment,
    ),
    Route(
        "community: edit a comment (API)",
        "PATCH",
        _comment_path("/api/comments/"),
        AUTHOR_API,
        json={"body": "edited"},
        setup=_users_comment,
        changed=_edited,
    ),
    Route(
        "community: delete a comment (API)",
        "DELETE",
        _comment_path("/api/comments/"),
        {**AUTHOR_API, "user": 204},
        json={},
        setup=_users_comment,
        changed=_deleted,
    ),
    Route(
        "community: hide a comment (API)",
        "POST",
        _comment_path("/api/comments/", "/hide"),
        ADMIN_API,
        json={},
        setup=_users_comment,
        changed=_hidden,
    ),
    Route(
        "community: show a hidden comment again (API)",
        "POST",
        _comment_path("/api/comments/", "/unhide"),
        ADMIN_API,
        json={},
        setup=_hidden_comment,
        changed=_shown_again,
    ),
]
