"""Downloads for reference managers: a reader's library, one tag, a public collection or a search's
results as BibTeX, RIS or CSL-JSON (``domain/reference_formats.py``).

A download changes nothing, so it is a GET (a plain link). Who may see what is the library service's
rule: a reader's library and private tags only to their owner (another reader gets the 404 of a tag
that does not exist, an anonymous visitor the sign-in redirect, or 401 from the API); a public
collection to anyone, but without its owner's notes or other tags. Search exports carry no reader data.

``GET /library/export?format=&tag=&references=``  the signed-in reader's library or one tag of it
                                              (``references=true``, BibTeX only: and the works they cite)
``GET /collections/{id}/export?format=``      a collection (the owner's own export for the owner)
``GET /search/export?q=&from=&to=&cat=&code=&format=&limit=``  a search's first results
``GET /api/me/library/export?format=&tag=&references=``  the API's twin of the first (Bearer token or session)
``GET /api/papers/search/export?q=&format=&limit=``  the search API's results
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from paperfeed.domain.accounts import User
from paperfeed.domain.reference_formats import (
    ExportFormat,
    Reference,
    UnknownExportFormat,
    export_filename,
    export_format,
    media_type,
    render,
)
from paperfeed.domain.search import SearchFilters
from paperfeed.services.library import LibraryNotFound

from .api import MAX_SEARCH_LIMIT, checked_query
from .deps import app_of, library_of, search_of
from .errors import ApiError
from .pages_search import form_categories, form_day
from .rendering import NO_STORE, error_page
from .security import current_user, require_user

__all__ = ["router"]

router = APIRouter()
SignedIn = Annotated[User, Depends(require_user)]
MAX_SEARCH_EXPORT = 200
_PUBLIC = "public, max-age=60"
FormatParam = Annotated[str, Query(alias="format", max_length=40)]


def _attachment(text: str, fmt: ExportFormat, stem: str, *, cache: str = NO_STORE) -> Response:
    return Response(
        text.encode("utf-8"),
        media_type=f"{media_type(fmt)}; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{export_filename(stem, fmt)}"',
            "Cache-Control": cache,
        },
    )


def _download(fmt: ExportFormat, refs: Sequence[Reference], stem: str, *, cache: str = NO_STORE) -> Response:
    return _attachment(render(fmt, refs), fmt, stem, cache=cache)


def _with_references(request: Request, refs: Sequence[Reference], stem: str) -> Response:
    """The papers and every work they cite (the citation graph), once each, as one BibTeX file whose keys
    are unique across it; the papers' tags and notes are left out (see docs/citations.md)."""
    entries = app_of(request).catalogue.references.bibtex([ref.paper for ref in refs])
    return _attachment("".join(entry + "\n\n" for entry in entries), "bibtex", stem + "-with-references")


def _bad_format_page(request: Request, exc: UnknownExportFormat) -> Response:
    return error_page(request, 400, "Unknown export format", str(exc))


def _own_export(request: Request, user: User, tag: int | None) -> tuple[list[Reference], str]:
    refs, found = library_of(request).references(user.id, tag_id=tag)
    return refs, f"paperfeed-{found.name}" if found else "paperfeed-library"


# -- pages (links from "My library", a collection and the search page) ---------------------------------


@router.get("/library/export", include_in_schema=False)
def library_download(
    request: Request, user: SignedIn, fmt: FormatParam = "bibtex", tag: str = "", references: bool = False
) -> Response:
    try:
        chosen = export_format(fmt)
    except UnknownExportFormat as exc:
        return _bad_format_page(request, exc)
    if references and chosen != "bibtex":
        return error_page(request, 400, "References come as BibTeX", "references=true needs format=bibtex.")
    try:
        if tag and not tag.isdigit():
            raise LibraryNotFound(tag)
        refs, stem = _own_export(request, user, int(tag) if tag else None)
    except LibraryNotFound:
        return error_page(request, 404, "Tag not found", "There is no such tag in your library.")
    return _with_references(request, refs, stem) if references else _download(chosen, refs, stem)


@router.get("/collections/{tag_id}/export", include_in_schema=False)
def collection_download(request: Request, tag_id: int, fmt: FormatParam = "bibtex") -> Response:
    try:
        chosen = export_format(fmt)
    except UnknownExportFormat as exc:
        return _bad_format_page(request, exc)
    user = current_user(request)  # a bad Bearer token never gets here (security.BearerTokenMiddleware)
    viewer = user.id if user else None
    try:
        refs, tag = library_of(request).collection_references(tag_id, viewer)
    except LibraryNotFound:
        return error_page(request, 404, "Collection not found", f"There is no public collection {tag_id}.")
    own = viewer == tag.user_id
    return _download(chosen, refs, f"paperfeed-{tag.name}", cache=NO_STORE if own else _PUBLIC)


def _search_refs(request: Request, q: str, filters: SearchFilters | None, limit: int) -> list[Reference]:
    if not q:
        return []
    page = search_of(request).search(q, filters, limit=limit)
    return [Reference(hit.paper) for hit in page.hits]


@router.get("/search/export", include_in_schema=False)
def search_download(
    request: Request,
    q: Annotated[str, Query(max_length=1000)] = "",
    date_from: Annotated[str, Query(alias="from", max_length=40)] = "",
    date_to: Annotated[str, Query(alias="to", max_length=40)] = "",
    cat: Annotated[str, Query(max_length=400)] = "",
    code: Annotated[str, Query(max_length=10)] = "",
    topic: Annotated[int | None, Query(ge=0, le=999_999_999)] = None,
    fmt: FormatParam = "bibtex",
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_EXPORT)] = 100,
) -> Response:
    """The first ``limit`` results of the search the search page shows (its filters included)."""
    try:
        chosen = export_format(fmt)
    except UnknownExportFormat as exc:
        return _bad_format_page(request, exc)
    problems: list[str] = []
    start, end = form_day(date_from, "From", problems), form_day(date_to, "To", problems)
    if start and end and start > end:
        start, end = end, start
    has_code = True if code.lower() in ("1", "true", "on", "yes") else None
    filters = SearchFilters(start, end, form_categories(cat, problems), has_code, topic=topic)
    refs = _search_refs(request, q.strip(), filters, limit)
    return _download(chosen, refs, "paperfeed-search", cache=_PUBLIC)


# -- JSON API twins ----------------------------------------------------------------------------------------


def _api_format(fmt: str) -> ExportFormat:
    try:
        return export_format(fmt)
    except UnknownExportFormat as exc:
        raise ApiError(400, str(exc), field="format") from None


@router.get("/api/me/library/export", summary="Your library as BibTeX, RIS or CSL-JSON", tags=["library"])
def api_library_export(
    request: Request,
    user: SignedIn,
    fmt: FormatParam = "bibtex",
    tag: Annotated[int | None, Query(ge=1)] = None,
    references: bool = False,
) -> Response:
    """A file download (``Content-Disposition: attachment``) of your saved papers, or one tag's, with
    your tags (``keywords`` / ``KW`` / ``keyword``) and notes (``annote`` / ``N1`` / ``note``).
    ``references=true`` (BibTeX only) adds every work they cite, once each, without tags and notes."""
    chosen = _api_format(fmt)
    if references and chosen != "bibtex":
        raise ApiError(400, "references=true needs format=bibtex", field="references")
    try:
        refs, stem = _own_export(request, user, tag)
    except LibraryNotFound as exc:
        raise ApiError(404, str(exc)) from None
    return _with_references(request, refs, stem) if references else _download(chosen, refs, stem)


@router.get("/api/papers/search/export", summary="Search results as BibTeX, RIS or CSL-JSON", tags=["papers"])
def api_search_export(
    request: Request,
    q: str = "",
    fmt: FormatParam = "bibtex",
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT)] = 50,
) -> Response:
    """The results ``GET /api/papers/search`` gives, as a file (an empty query: an empty file)."""
    chosen = _api_format(fmt)
    refs = _search_refs(request, checked_query(q), None, limit)
    return _download(chosen, refs, "paperfeed-search", cache=_PUBLIC)
