"""The library's state-changing routes for the authorization matrix (see tests/support/authz.py).

Two kinds of route:

* acting on the reader's *own* library (save, tag, mark, note, follow, create a tag or a search): every
  signed-in actor may, anonymous visitors may not; ``changed`` looks at everyone's library.
* acting on one *existing* object of ``user`` (their tag, their saved search): only ``user`` may; to the
  other reader and to an admin it is a 404, exactly like an object that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, func, select

from paperfeed.adapters.store.schema_library import (
    library_authors,
    library_marks,
    library_notes,
    library_saves,
    library_searches,
    library_tags,
)
from tests.support.authz import SIGNIN, Actor, Route, World

__all__ = ["ROUTES"]

OWN_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 303, "other": 303, "admin": 303}
OWN_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 200, "other": 200, "admin": 200}
OWN_API_CREATED: Mapping[Actor, int | str] = {"anonymous": 401, "user": 201, "other": 201, "admin": 201}
USERS_PAGE: Mapping[Actor, int | str] = {"anonymous": SIGNIN, "user": 303, "other": 404, "admin": 404}
USERS_API: Mapping[Actor, int | str] = {"anonymous": 401, "user": 200, "other": 404, "admin": 404}


def _reset(w: World) -> None:
    """Every request starts from empty libraries."""
    with w.app.core.store.engine.begin() as conn:
        for table in (
            library_saves,
            library_marks,
            library_notes,
            library_authors,
            library_searches,
            library_tags,
        ):
            conn.execute(delete(table))


def _count(w: World, table: Any, *where: Any) -> int:
    with w.app.core.store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _fresh(w: World) -> dict[str, Any]:
    _reset(w)
    return {"paper": w.paper_ids[0]}


def _users_tag(w: World) -> dict[str, Any]:
    _reset(w)
    user = w.users["user"]
    paper = w.paper_ids[0]
    w.app.readers.library.save(user.id, paper, ["Private"])
    return {"paper": paper, "tag_id": w.app.readers.library.tags(user.id)[0].id}


def _users_search(w: World) -> dict[str, Any]:
    _reset(w)
    saved = w.app.readers.library.add_search(w.users["user"].id, "Alert", "graph")
    return {"search_id": saved.id}


def _followed(w: World) -> dict[str, Any]:
    ctx = _fresh(w)
    for actor in ("user", "other", "admin"):
        w.app.readers.library.follow(w.users[actor].id, "Ada Lovelace")
    return ctx


def _saved_by_all(w: World) -> dict[str, Any]:
    ctx = _fresh(w)
    for actor in ("user", "other", "admin"):
        w.app.readers.library.save(w.users[actor].id, ctx["paper"])
    return ctx


def _any_save(w: World, ctx: dict[str, Any]) -> bool:
    return _count(w, library_saves, library_saves.c.paper_id == ctx["paper"]) > 0


def _any_mark(column: str) -> Any:
    return lambda w, ctx: _count(w, library_marks, library_marks.c[column].is_not(None)) > 0


def _any_note(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_notes) > 0


def _any_tag(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_tags) > 0


def _any_author(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_authors) > 0


def _fewer_authors(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_authors) < 3


def _fewer_saves(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_saves) < 3


def _any_search(w: World, _ctx: dict[str, Any]) -> bool:
    return _count(w, library_searches) > 0


def _tag_public(w: World, ctx: dict[str, Any]) -> bool:
    tag = w.app.readers.library.records.tag(ctx["tag_id"])
    return tag is not None and tag.public


def _tag_gone(w: World, ctx: dict[str, Any]) -> bool:
    return w.app.readers.library.records.tag(ctx["tag_id"]) is None


def _users_paper_unsaved(w: World, ctx: dict[str, Any]) -> bool:
    return _count(w, library_saves, library_saves.c.tag_id == ctx["tag_id"]) == 0


def _search_seen(w: World, ctx: dict[str, Any]) -> bool:
    found = w.app.readers.library.records.saved_search(ctx["search_id"])
    return found is not None and found.last_seen_at is not None


def _search_gone(w: World, ctx: dict[str, Any]) -> bool:
    return w.app.readers.library.records.saved_search(ctx["search_id"]) is None


ROUTES = [
    # -- pages: the reader's own library --
    Route(
        "library: save (page)",
        "POST",
        "/library/save",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"]},
        setup=_fresh,
        changed=_any_save,
    ),
    Route(
        "library: unsave (page)",
        "POST",
        "/library/unsave",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"]},
        setup=_saved_by_all,
        changed=_fewer_saves,
    ),
    Route(
        "library: tag picker (page)",
        "POST",
        "/library/paper-tags",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"], "tags": "Saved", "new_tag": "New"},
        setup=_fresh,
        changed=_any_save,
    ),
    Route(
        "library: mark read (page)",
        "POST",
        "/library/read",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"], "read": "1"},
        setup=_fresh,
        changed=_any_mark("read_at"),
    ),
    Route(
        "library: not interested (page)",
        "POST",
        "/library/dismiss",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"], "dismissed": "1"},
        setup=_fresh,
        changed=_any_mark("dismissed_at"),
    ),
    Route(
        "library: note (page)",
        "POST",
        "/library/note",
        OWN_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"], "body": "mine"},
        setup=_fresh,
        changed=_any_note,
    ),
    Route(
        "library: create a tag (page)",
        "POST",
        "/library/tags",
        OWN_PAGE,
        form={"name": "Reading"},
        setup=_fresh,
        changed=_any_tag,
    ),
    Route(
        "library: follow an author (page)",
        "POST",
        "/library/authors/follow",
        OWN_PAGE,
        form={"name": "Ada Lovelace"},
        setup=_fresh,
        changed=_any_author,
    ),
    Route(
        "library: unfollow an author (page)",
        "POST",
        "/library/authors/unfollow",
        OWN_PAGE,
        form={"name": "Ada Lovelace"},
        setup=_followed,
        changed=_fewer_authors,
    ),
    Route(
        "library: save a search (page)",
        "POST",
        "/library/searches",
        OWN_PAGE,
        form={"name": "Alert", "q": "graph"},
        setup=_fresh,
        changed=_any_search,
    ),
    # -- pages: one of the user's own objects --
    Route(
        "library: remove from the user's tag (page)",
        "POST",
        "/library/unsave",
        USERS_PAGE,
        form=lambda w, ctx: {"paper_id": ctx["paper"], "tag_id": str(ctx["tag_id"])},
        setup=_users_tag,
        changed=_users_paper_unsaved,
    ),
    Route(
        "library: publish the user's tag (page)",
        "POST",
        lambda w, ctx: f"/library/tags/{ctx['tag_id']}",
        USERS_PAGE,
        form={"name": "Private", "public": "1"},
        setup=_users_tag,
        changed=_tag_public,
    ),
    Route(
        "library: delete the user's tag (page)",
        "POST",
        lambda w, ctx: f"/library/tags/{ctx['tag_id']}/delete",
        USERS_PAGE,
        form={},
        setup=_users_tag,
        changed=_tag_gone,
    ),
    Route(
        "library: mark the user's alert seen (page)",
        "POST",
        lambda w, ctx: f"/library/searches/{ctx['search_id']}/seen",
        USERS_PAGE,
        form={},
        setup=_users_search,
        changed=_search_seen,
    ),
    Route(
        "library: delete the user's saved search (page)",
        "POST",
        lambda w, ctx: f"/library/searches/{ctx['search_id']}/delete",
        USERS_PAGE,
        form={},
        setup=_users_search,
        changed=_search_gone,
    ),
    # -- JSON API: the reader's own library --
    Route(
        "library: save (API)",
        "POST",
        "/api/me/saves",
        OWN_API,
        json=lambda w, ctx: {"paper_id": ctx["paper"]},
        setup=_fresh,
        changed=_any_save,
    ),
    Route(
        "library: unsave (API)",
        "DELETE",
        lambda w, ctx: f"/api/me/saves/{ctx['paper']}",
        OWN_API,
        json={},
        setup=_saved_by_all,
        changed=_fewer_saves,
    ),
    Route(
        "library: set tags (API)",
        "PUT",
        lambda w, ctx: f"/api/me/papers/{ctx['paper']}/tags",
        OWN_API,
        json={"tags": ["A"]},
        setup=_fresh,
        changed=_any_save,
    ),
    Route(
        "library: mark read (API)",
        "PUT",
        lambda w, ctx: f"/api/me/papers/{ctx['paper']}/read",
        OWN_API,
        json={"read": True},
        setup=_fresh,
        changed=_any_mark("read_at"),
    ),
    Route(
        "library: not interested (API)",
        "PUT",
        lambda w, ctx: f"/api/me/papers/{ctx['paper']}/dismissed",
        OWN_API,
        json={"dismissed": True},
        setup=_fresh,
        changed=_any_mark("dismissed_at"),
    ),
    Route(
        "library: note (API)",
        "PUT",
        lambda w, ctx: f"/api/me/papers/{ctx['paper']}/note",
        OWN_API,
        json={"body": "mine"},
        setup=_fresh,
        changed=_any_note,
    ),
    Route(
        "library: create a tag (API)",
        "POST",
        "/api/me/tags",
        OWN_API_CREATED,
        json={"name": "Reading"},
        setup=_fresh,
        changed=_any_tag,
    ),
    Route(
        "library: follow an author (API)",
        "POST",
        "/api/me/authors",
        OWN_API,
        json={"name": "Ada Lovelace"},
        setup=_fresh,
        changed=_any_author,
    ),
    Route(
        "library: unfollow an author (API)",
        "DELETE",
        "/api/me/authors?name=Ada%20Lovelace",
        OWN_API,
        json={},
        setup=_followed,
        changed=_fewer_authors,
    ),
    Route(
        "library: save a search (API)",
        "POST",
        "/api/me/searches",
        OWN_API_CREATED,
        json={"name": "Alert", "query": "graph"},
        setup=_fresh,
        changed=_any_search,
    ),
    # -- JSON API: one of the user's own objects --
    Route(
        "library: remove from the user's tag (API)",
        "DELETE",
        lambda w, ctx: f"/api/me/saves/{ctx['paper']}?tag_id={ctx['tag_id']}",
        USERS_API,
        json={},
        setup=_users_tag,
        changed=_users_paper_unsaved,
    ),
    Route(
        "library: publish the user's tag (API)",
        "PATCH",
        lambda w, ctx: f"/api/me/tags/{ctx['tag_id']}",
        USERS_API,
        json={"public": True},
        setup=_users_tag,
        changed=_tag_public,
    ),
    Route(
        "library: delete the user's tag (API)",
        "DELETE",
        lambda w, ctx: f"/api/me/tags/{ctx['tag_id']}",
        USERS_API,
        json={},
        setup=_users_tag,
        changed=_tag_gone,
    ),
    Route(
        "library: mark the user's alert seen (API)",
        "POST",
        lambda w, ctx: f"/api/me/searches/{ctx['search_id']}/seen",
        USERS_API,
        json={},
        setup=_users_search,
        changed=_search_seen,
    ),
    Route(
        "library: delete the user's saved search (API)",
        "DELETE",
        lambda w, ctx: f"/api/me/searches/{ctx['search_id']}",
        USERS_API,
        json={},
        setup=_users_search,
        changed=_search_gone,
    ),
]
