"""The library's JSON API under ``/api/me/…`` (a Bearer token or the session cookie), plus public collections.

=============================================  ===============================================================
``GET /api/me/library``                        ``tag`` (id), ``read`` (all/read/unread), ``limit`` ≤ 200,
                                               ``offset`` → saved papers, first saved newest first
``GET|POST /api/me/tags``                      list; create ``{"name", "public"}``
``PATCH|DELETE /api/me/tags/{id}``             rename / publish ``{"name"?, "public"?}``; delete
``GET /api/me/papers/{id}``                    the reader's tags, read / dismissed marks and note on a paper
``POST /api/me/saves``                         ``{"paper_id", "tags"?}`` save (default tag "Saved")
``DELETE /api/me/saves/{paper_id}``            ``tag_id``? unsave from one tag or the whole library
``PUT /api/me/papers/{id}/tags``               ``{"tags": [...]}`` exactly these tags (empty: unsave)
``PUT /api/me/papers/{id}/read``               ``{"read": bool}``
``PUT /api/me/papers/{id}/dismissed``          ``{"dismissed": bool}`` ("not interested")
``PUT /api/me/papers/{id}/note``               ``{"body": markdown}`` (empty deletes); the reply has ``html``
``GET|POST|DELETE /api/me/authors``            followed authors; follow ``{"name"}``; unfollow ``?name=``
``GET|POST /api/me/searches``                  saved searches; create ``{"name", "query", "filters"?}``
``GET|DELETE /api/me/searches/{id}``           the alert: new matches since last seen, earlier matches
``POST /api/me/searches/{id}/seen``            mark as seen
``POST /api/me/library/import``                multipart ``file``, ``tag``, ``format``, ``with_tags`` → report
``GET /api/me/library/import``                 the latest import's background fetch from arXiv
``GET /api/me/library/export``                 ``format``, ``tag`` (id): a file (``web/library_export.py``)
``GET /api/me/library/search``                 ``q``, ``limit`` ≤ 200: your papers, tags and notes by words
                                               and meaning, each with what matched
``GET /api/collections/{id}``                  a public tag's papers (its owner also sees a private one)
=============================================  ===============================================================

State changes need the CSRF header when authenticated by the session cookie (not with a Bearer token).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from pydantic import BaseModel, ConfigDict, Field

from paperfeed.domain.accounts import User
from paperfeed.domain.library import (
    DEFAULT_TAG,
    BibliographyError,
    FollowedAuthor,
    InvalidLibraryInput,
    SavedSearch,
    Tag,
)
from paperfeed.domain.models import Paper
from paperfeed.domain.search import SearchFilters
from paperfeed.services.library import AlertPage, LibraryNotFound, PaperState
from paperfeed.services.library_import import ImportBusy
from paperfeed.services.library_search import LibrarySearchLimited

from .deps import app_of, library_of
from .errors import ApiError, JsonResponse
from .hf_json import paper_object
from .library_import import report_json, start_import, status_json
from .library_notes import render_note
from .security import current_user, require_user, verify_csrf

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["library"])
SignedIn = Annotated[User, Depends(require_user)]
CsrfChecked = [Depends(verify_csrf)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TagIn(_Strict):
    name: str = Field(max_length=200)
    public: bool = False


class TagPatch(_Strict):
    name: str | None = Field(default=None, max_length=200)
    public: bool | None = None


class SaveIn(_Strict):
    paper_id: str = Field(max_length=200)
    tags: list[str] = Field(default_factory=lambda: [DEFAULT_TAG], max_length=100)


class TagsIn(_Strict):
    tags: list[str] = Field(max_length=100)


class ReadIn(_Strict):
    read: bool


class DismissedIn(_Strict):
    dismissed: bool


class NoteIn(_Strict):
    body: str = Field(max_length=40_000)


class AuthorIn(_Strict):
    name: str = Field(max_length=400)


class FiltersIn(_Strict):
    date_from: date | None = None
    date_to: date | None = None
    categories: list[str] = Field(default_factory=list, max_length=20)
    has_code: bool | None = None


class SearchIn(_Strict):
    name: str = Field(max_length=400)
    query: str = Field(max_length=1000)
    filters: FiltersIn = Field(default_factory=FiltersIn)


# -- JSON shapes ----------------------------------------------------------------------------------------


def _tag(tag: Tag) -> dict[str, Any]:
    return {
        "id": tag.id,
        "name": tag.name,
        "public": tag.public,
        "count": tag.count,
        "createdAt": tag.created_at.isoformat(),
        "url": f"/collections/{tag.id}" if tag.public else None,
    }


def _state(state: PaperState) -> dict[str, Any]:
    note = state.note
    return {
        "paperId": state.paper_id,
        "saved": state.saved,
        "tags": list(state.tags),
        "read": state.read,
        "dismissed": state.dismissed,
        "note": None
        if note is None
        else {
            "body": note.body,
            "html": str(render_note(note.body)),
            "updatedAt": note.updated_at.isoformat(),
        },
    }


def _filters(filters: SearchFilters) -> dict[str, Any]:
    return {
        "dateFrom": filters.date_from.isoformat() if filters.date_from else None,
        "dateTo": filters.date_to.isoformat() if filters.date_to else None,
        "categories": list(filters.categories),
        "hasCode": filters.has_code,
    }


def _search(saved: SavedSearch) -> dict[str, Any]:
    return {
        "id": saved.id,
        "name": saved.name,
        "query": saved.query,
        "filters": _filters(saved.filters),
        "createdAt": saved.created_at.isoformat(),
        "lastSeenAt": saved.last_seen_at.isoformat() if saved.last_seen_at else None,
    }


def _author(author: FollowedAuthor) -> dict[str, Any]:
    return {"name": author.name, "followedAt": author.followed_at.isoformat()}


def _papers(papers: Sequence[Paper]) -> list[dict[str, Any]]:
    return [paper_object(p) for p in papers]


def _not_found(exc: LibraryNotFound) -> ApiError:
    return ApiError(404, str(exc))


def _bad(exc: InvalidLibraryInput) -> ApiError:
    return ApiError(400, str(exc), field=exc.field)


# -- library and tags -----------------------------------------------------------------------------------


@router.get("/me/library", summary="Your saved papers", response_class=JsonResponse)
def my_library(
    request: Request,
    user: SignedIn,
    tag: Annotated[int | None, Query(ge=1)] = None,
    read: Literal["all", "read", "unread"] = "all",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> JsonResponse:
    try:
        page = library_of(request).library(user.id, tag_id=tag, read=read, limit=limit, offset=offset)
    except LibraryNotFound as exc:
        raise _not_found(exc) from None
    items = [
        {
            "paper": paper_object(e.paper),
            "tags": list(e.item.tags),
            "savedAt": e.item.saved_at.isoformat(),
            "read": e.item.read,
            "hasNote": e.item.has_note,
        }
        for e in page.entries
    ]
    return JsonResponse({"items": items, "total": page.total, "offset": page.offset, "limit": page.limit})


@router.get("/me/tags", summary="Your tags", response_class=JsonResponse)
def my_tags(request: Request, user: SignedIn) -> JsonResponse:
    return JsonResponse([_tag(t) for t in library_of(request).tags(user.id)])


@router.post(
    "/me/tags", summary="Create a tag", response_class=JsonResponse, status_code=201, dependencies=CsrfChecked
)
def create_tag(request: Request, user: SignedIn, body: TagIn) -> JsonResponse:
    try:
        tag = library_of(request).create_tag(user.id, body.name, public=body.public)
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    return JsonResponse(_tag(tag), status_code=201)


@router.patch(
    "/me/tags/{tag_id}",
    summary="Rename or publish a tag",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def update_tag(request: Request, user: SignedIn, tag_id: int, body: TagPatch) -> JsonResponse:
    try:
        tag = library_of(request).update_tag(user.id, tag_id, name=body.name, public=body.public)
    except LibraryNotFound as exc:
        raise _not_found(exc) from None
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    return JsonResponse(_tag(tag))


@router.delete(
    "/me/tags/{tag_id}", summary="Delete a tag", response_class=JsonResponse, dependencies=CsrfChecked
)
def delete_tag(request: Request, user: SignedIn, tag_id: int) -> JsonResponse:
    try:
        library_of(request).delete_tag(user.id, tag_id)
    except LibraryNotFound as exc:
        raise _not_found(exc) from None
    return JsonResponse({"deleted": tag_id})


# -- one paper ------------------------------------------------------------------------------------------


def _changed(request: Request, action: Any) -> JsonResponse:
    try:
        state: PaperState = action(library_of(request))
    except LibraryNotFound as exc:
        raise _not_found(exc) from None
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    return JsonResponse(_state(state))


@router.post("/me/saves", summary="Save a paper", response_class=JsonResponse, dependencies=CsrfChecked)
def save(request: Request, user: SignedIn, body: SaveIn) -> JsonResponse:
    return _changed(request, lambda lib: lib.save(user.id, body.paper_id, body.tags or [DEFAULT_TAG]))


@router.delete(
    "/me/saves/{paper_id:path}",
    summary="Unsave a paper",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def unsave(
    request: Request, user: SignedIn, paper_id: str, tag_id: Annotated[int | None, Query(ge=1)] = None
) -> JsonResponse:
    return _changed(request, lambda lib: lib.unsave(user.id, paper_id, tag_id))


@router.put(
    "/me/papers/{paper_id:path}/tags",
    summary="Set a paper's tags",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def set_tags(request: Request, user: SignedIn, paper_id: str, body: TagsIn) -> JsonResponse:
    return _changed(request, lambda lib: lib.set_tags(user.id, paper_id, body.tags))


@router.put(
    "/me/papers/{paper_id:path}/read",
    summary="Mark read / unread",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def set_read(request: Request, user: SignedIn, paper_id: str, body: ReadIn) -> JsonResponse:
    return _changed(request, lambda lib: lib.set_read(user.id, paper_id, body.read))


@router.put(
    "/me/papers/{paper_id:path}/dismissed",
    summary="Not interested / undo",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def set_dismissed(request: Request, user: SignedIn, paper_id: str, body: DismissedIn) -> JsonResponse:
    return _changed(request, lambda lib: lib.set_dismissed(user.id, paper_id, body.dismissed))


@router.put(
    "/me/papers/{paper_id:path}/note",
    summary="Write your private note",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def set_note(request: Request, user: SignedIn, paper_id: str, body: NoteIn) -> JsonResponse:
    return _changed(request, lambda lib: lib.set_note(user.id, paper_id, body.body))


@router.get(
    "/me/papers/{paper_id:path}", summary="Your tags, marks and note on a paper", response_class=JsonResponse
)
def paper_state(request: Request, user: SignedIn, paper_id: str) -> JsonResponse:
    return JsonResponse(_state(library_of(request).state(user.id, paper_id)))


# -- authors and saved searches ---------------------------------------------------------------------------


@router.get("/me/authors", summary="Followed authors", response_class=JsonResponse)
def followed(request: Request, user: SignedIn) -> JsonResponse:
    return JsonResponse([_author(a) for a in library_of(request).followed(user.id)])


@router.post("/me/authors", summary="Follow an author", response_class=JsonResponse, dependencies=CsrfChecked)
def follow(request: Request, user: SignedIn, body: AuthorIn) -> JsonResponse:
    lib = library_of(request)
    try:
        created = lib.follow(user.id, body.name)
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    return JsonResponse(
        {"followed": True, "created": created, "authors": [_author(a) for a in lib.followed(user.id)]}
    )


@router.delete(
    "/me/authors", summary="Unfollow an author", response_class=JsonResponse, dependencies=CsrfChecked
)
def unfollow(request: Request, user: SignedIn, name: Annotated[str, Query(max_length=400)]) -> JsonResponse:
    try:
        removed = library_of(request).unfollow(user.id, name)
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    if not removed:
        raise ApiError(404, f"you do not follow {name[:100]!r}")
    return JsonResponse({"followed": False})


@router.get("/me/searches", summary="Saved searches", response_class=JsonResponse)
def searches(request: Request, user: SignedIn) -> JsonResponse:
    return JsonResponse([_search(s) for s in library_of(request).searches(user.id)])


@router.post(
    "/me/searches",
    summary="Save a search (an alert)",
    response_class=JsonResponse,
    status_code=201,
    dependencies=CsrfChecked,
)
def create_search(request: Request, user: SignedIn, body: SearchIn) -> JsonResponse:
    f = body.filters
    if f.date_from and f.date_to and f.date_from > f.date_to:
        raise ApiError(400, "filters.date_from is after filters.date_to", field="filters")
    filters = SearchFilters(
        f.date_from, f.date_to, tuple(c.strip() for c in f.categories if c.strip()), f.has_code
    )
    try:
        saved = library_of(request).add_search(user.id, body.name, body.query, filters)
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    return JsonResponse(_search(saved), status_code=201)


def _alert(alert: AlertPage) -> dict[str, Any]:
    return {
        "search": _search(alert.search),
        "new": _papers(alert.new),
        "earlier": _papers(alert.earlier),
        "notes": list(alert.notes),
    }


@router.get("/me/searches/{search_id}", summary="An alert: new matches", response_class=JsonResponse)
def alert(request: Request, user: SignedIn, search_id: int) -> JsonResponse:
    try:
        return JsonResponse(_alert(library_of(request).alert(user.id, search_id)))
    except LibraryNotFound as exc:
        raise _not_found(exc) from None


@router.post(
    "/me/searches/{search_id}/seen",
    summary="Mark an alert seen",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def alert_seen(request: Request, user: SignedIn, search_id: int) -> JsonResponse:
    try:
        return JsonResponse(_search(library_of(request).mark_seen(user.id, search_id)))
    except LibraryNotFound as exc:
        raise _not_found(exc) from None


@router.delete(
    "/me/searches/{search_id}",
    summary="Delete a saved search",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def delete_search(request: Request, user: SignedIn, search_id: int) -> JsonResponse:
    try:
        library_of(request).delete_search(user.id, search_id)
    except LibraryNotFound as exc:
        raise _not_found(exc) from None
    return JsonResponse({"deleted": search_id})


# -- import and public collections --------------------------------------------------------------------------


@router.get(
    "/me/library/search", summary="Search your library (papers, tags, notes)", response_class=JsonResponse
)
def search_library(
    request: Request,
    user: SignedIn,
    q: Annotated[str, Query(max_length=1000)] = "",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> JsonResponse:
    try:
        found = app_of(request).readers.library_search.search(user.id, q, limit=limit)
    except LibrarySearchLimited as exc:
        headers = {"Retry-After": str(exc.retry_after), "Cache-Control": "private, no-store"}
        raise ApiError(429, str(exc), headers=headers, retry_after=exc.retry_after) from None
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    items = [
        {
            "paper": paper_object(h.paper),
            "tags": list(h.tags),
            "note": h.note or None,
            "matched": list(h.matched),
        }
        for h in found.hits
    ]
    body = {"query": found.query, "items": items, "searched": found.searched, "notes": list(found.notes)}
    return JsonResponse(body, headers={"Cache-Control": "private, no-store"})


@router.post(
    "/me/library/import",
    summary="Import a bibliography",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
async def import_library(
    request: Request,
    user: SignedIn,
    file: Annotated[UploadFile, File()],
    tag: Annotated[str, Form(max_length=200)] = DEFAULT_TAG,
    fmt: Annotated[Literal["auto", "bibtex", "ris", "csl-json", "ids"], Form(alias="format")] = "auto",
    with_tags: Annotated[bool, Form()] = False,
) -> JsonResponse:
    """Reads at most ``PAPERFEED_LIBRARY_IMPORT_MAX_ENTRIES`` entries (``moreEntries`` says a file had more)
    and saves those already here; papers to fetch from arXiv (``fetching``) are fetched and saved by a
    background job: the answer is then ``202`` and ``GET /api/me/library/import`` follows the job. One
    import per reader at a time (``429`` meanwhile). ``notSaved`` names at most 100 entries
    (``notSavedCount`` counts them all)."""
    try:
        report = await start_import(request, user, file, tag, fmt, with_tags)
    except BibliographyError as exc:
        raise ApiError(400, f"{exc}; nothing was imported") from None
    except InvalidLibraryInput as exc:
        raise _bad(exc) from None
    except ImportBusy as exc:
        raise ApiError(429, str(exc), job=status_json(exc.status)) from None
    return JsonResponse(report_json(report), status_code=202 if report.job is not None else 200)


@router.get("/me/library/import", summary="Your latest import's fetch", response_class=JsonResponse)
def import_status(request: Request, user: SignedIn) -> JsonResponse:
    """The papers your latest import is fetching from arXiv: ``state`` (running, ok, failed, interrupted),
    ``done`` of ``total`` asked, ``saved``, and ``notFound`` with a sample; ``{"job": null}`` when none."""
    return JsonResponse({"job": status_json(app_of(request).readers.library_import.status(user.id))})


@router.get("/collections/{tag_id}", summary="A public collection", response_class=JsonResponse)
def collection(
    request: Request,
    tag_id: int,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> JsonResponse:
    viewer = current_user(request)
    try:
        shown = library_of(request).collection(
            tag_id, viewer.id if viewer else None, limit=limit, offset=offset
        )
    except LibraryNotFound:
        raise ApiError(404, f"no public collection {tag_id}") from None
    return JsonResponse(
        {
            "tag": {k: v for k, v in _tag(shown.tag).items() if k != "count"},
            "owner": shown.owner.display_name,
            "items": [{"paper": paper_object(p), "savedAt": at.isoformat()} for p, at in shown.papers],
            "total": shown.total,
        }
    )
