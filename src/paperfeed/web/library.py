"""Library pages and forms: "My library", tags and public collections (with RSS/Atom), notes, "not
interested", read marks, followed authors and saved searches (alerts, with a private feed each).

Every state change is a POST form checked by :func:`~.security.verify_csrf` that redirects back (303)
to the page it came from, so everything works without JavaScript. Every lookup goes through
:class:`~paperfeed.services.library.LibraryService` with the signed-in user's id: another reader's
private tag is a 404 exactly like a tag that does not exist, on pages, in the API and in feeds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import pass_context

from paperfeed.domain.accounts import User
from paperfeed.domain.library import (
    DEFAULT_TAG,
    FORMATS,
    BibliographyError,
    Format,
    InvalidLibraryInput,
    Tag,
)
from paperfeed.domain.search import SearchFilters
from paperfeed.services.library import LibraryNotFound, LibraryService, PaperState
from paperfeed.services.library_import import ImportBusy
from paperfeed.services.library_search import LibrarySearchLimited

from . import feeds as _feeds
from . import rendering
from .deps import app_of, library_of
from .library_import import SAMPLE, start_import
from .library_notes import render_note
from .pages_search import CATEGORY_CHOICES, form_categories, form_day
from .rendering import NO_STORE, absolute_url, error_page
from .security import current_user, here, redirect_back, require_user, template_request, verify_csrf
from .views import (
    PageMeta,
    PageNumber,
    author_search_url,
    day_label,
    page_links,
    paper_url,
    paper_view,
    plural,
)

__all__ = ["TEMPLATE_FILTERS", "TEMPLATE_GLOBALS", "author_url", "router"]

router = APIRouter(include_in_schema=False)
CsrfChecked = Depends(verify_csrf)
SignedIn = Annotated[User, Depends(require_user)]
PAGE_SIZE = 50
T = TypeVar("T")
_STATES = "pf_library_states"
_TAGS = "pf_library_tags"
_PRIVATE = NO_STORE
_MINE = "private, no-store"  # one reader's own answer, said to every cache (issue #34's routes)
_PUBLIC = "public, max-age=60"  # a public collection: the same for everyone
# Messages after a redirect are chosen by key, so no text from the URL is ever shown.
_DONE = {
    "saved": "Saved.",
    "tag": "Tag saved.",
    "deleted": "Deleted.",
    "search": "Saved search created: new papers matching it appear here.",
    "seen": "Marked as seen: only papers published from now on count as new.",
    "followed": "You follow this author: their new papers are in your feed.",
}


def author_url(name: str) -> str:
    return "/author?" + urlencode({"name": name})


def _here(request: Request) -> str:
    return here(request)  # without a redirect's one-time ``done``: never copied into the next form


# -- template globals: what the save buttons and the paper page's panel need ---------------------------


def _signed_in(request: Request) -> User | None:
    try:
        return current_user(request)
    except Exception:  # a bad Bearer token on a page: the page itself still renders, without buttons
        return None


def _states(request: Request, user: User) -> dict[str, PaperState]:
    state = request.scope.setdefault("state", {})
    if _STATES not in state:
        state[_STATES] = library_of(request).all_states(user.id)
    cached: dict[str, PaperState] = state[_STATES]
    return cached


@pass_context
def _library_state(ctx: Any, paper_id: str) -> PaperState | None:
    """The signed-in reader's tags and marks on ``paper_id`` (None for anonymous visitors)."""
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return None
    return _states(request, user).get(paper_id) or PaperState(paper_id)


@pass_context
def _library_note(ctx: Any, paper_id: str) -> Any:
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return None
    return library_of(request).state(user.id, paper_id).note


@pass_context
def _library_tags(ctx: Any) -> list[Tag]:
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return []
    state = request.scope.setdefault("state", {})
    if _TAGS not in state:
        state[_TAGS] = library_of(request).tags(user.id)
    tags: list[Tag] = state[_TAGS]
    return tags


@pass_context
def _library_here(ctx: Any) -> str:
    return _here(template_request(ctx))


# Registered on the app's renderer by create_app.
TEMPLATE_GLOBALS: Mapping[str, Any] = {
    "library_state": _library_state,
    "library_note": _library_note,
    "library_tags": _library_tags,
    "library_here": _library_here,
    "author_url": author_url,
    "default_tag": DEFAULT_TAG,
}
TEMPLATE_FILTERS: Mapping[str, Callable[..., Any]] = {"note_html": render_note}


# -- rendering ------------------------------------------------------------------------------------------


def _page(
    request: Request,
    name: str,
    title: str,
    *,
    nav: str = "library",
    status: int = 200,
    cache: str = _PRIVATE,
    feeds: tuple[tuple[str, str], ...] = (),
    description: str = "",
    **context: Any,
) -> HTMLResponse:
    """A ``library/`` page through :func:`~.rendering.page`: private ones are never cached nor indexed."""
    meta = PageMeta(
        title, description or title, absolute_url(request), noindex=cache in (_PRIVATE, _MINE), feeds=feeds
    )
    done = _DONE.get(request.query_params.get("done", ""))
    return rendering.page(
        request, f"library/{name}.html", meta, nav=nav, status=status, cache=cache, done=done, **context
    )


def _problem(request: Request, exc: Exception, status: int = 400) -> HTMLResponse:
    heading = "Not found" if status == 404 else "That did not work"
    return error_page(request, status, heading, str(exc))


def _form_change(
    request: Request,
    change: Callable[[LibraryService], T],
    back_to: str | Callable[[T], str],
    *,
    next_url: str = "",
    done: str | None = None,
) -> Response:
    """What the library's change forms do: one change, then 303 to the form's safe ``next`` (else ``back_to``,
    or ``back_to(result)``). Another reader's or a missing object is the 404 page, bad input the 400 page."""
    try:
        result = change(library_of(request))
    except LibraryNotFound as exc:
        return _problem(request, exc, 404)
    except InvalidLibraryInput as exc:
        return _problem(request, exc)
    return redirect_back(next_url, back_to(result) if callable(back_to) else back_to, done)


def _pages(total: int, page: int, url: Any) -> dict[str, Any]:
    last = max(1, -(-total // PAGE_SIZE))
    if last <= 1:
        return {"pages": [], "page_number": 1, "prev_url": None, "next_url": None}
    return {
        "pages": page_links(page, last, url),
        "page_number": page,
        "prev_url": url(page - 1) if page > 1 else None,
        "next_url": url(page + 1) if page < last else None,
    }


# -- my library -------------------------------------------------------------------------------------------

ReadChoice = Literal["all", "read", "unread"]


@router.get("/library", response_class=HTMLResponse, response_model=None)
def library_page(
    request: Request, user: SignedIn, tag: str = "", read: str = "all", page: PageNumber = 1
) -> Response:
    lib = library_of(request)
    read_filter: ReadChoice = read if read in ("all", "read", "unread") else "all"  # type: ignore[assignment]
    tag_id = int(tag) if tag.isdigit() else None
    number = page
    try:
        shelf = lib.library(
            user.id, tag_id=tag_id, read=read_filter, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE
        )
    except LibraryNotFound as exc:
        return _problem(request, exc, 404)

    def url(n: int, *, tag_value: int | None = tag_id, read_value: str = read_filter) -> str:
        params = {
            "tag": tag_value or "",
            "read": "" if read_value == "all" else read_value,
            "page": n if n > 1 else "",
        }
        kept = {k: v for k, v in params.items() if v}
        return "/library" + (f"?{urlencode(kept)}" if kept else "")

    entries = [
        {
            "v": paper_view(e.paper, with_abstract=False),
            "item": e.item,
            "saved_label": day_label(e.item.saved_at),
        }
        for e in shelf.entries
    ]
    heading = shelf.tag.name if shelf.tag else "My library"
    return _page(
        request,
        "library",
        heading,
        user=user,
        shelf=shelf,
        entries=entries,
        tags=lib.tags(user.id),
        read_links=[
            (label, url(1, read_value=key), key == read_filter)
            for key, label in (("all", "All"), ("unread", "Unread"), ("read", "Read"))
        ],
        tag_url=lambda t: url(1, tag_value=t),
        all_url=url(1, tag_value=None),
        total_label=plural(shelf.total, "paper"),
        **_pages(shelf.total, number, url),
    )


@router.get("/library/search", response_class=HTMLResponse)
def library_search_page(request: Request, user: SignedIn, q: str = "") -> HTMLResponse:
    """Search my library: the reader's saved papers, tags and private notes, by words and by meaning."""
    if not q.strip():
        return _page(
            request, "search", "Search my library", cache=_MINE, q="", found=None, hits=[], error=None
        )
    try:
        found = app_of(request).readers.library_search.search(user.id, q[:1000])
    except (LibrarySearchLimited, InvalidLibraryInput) as exc:
        response = _page(
            request,
            "search",
            "Search my library",
            status=429 if isinstance(exc, LibrarySearchLimited) else 400,
            cache=_MINE,
            q=q[:250],
            found=None,
            hits=[],
            error=str(exc),
        )
        if isinstance(exc, LibrarySearchLimited):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response
    hits = [(h, paper_view(h.paper, with_abstract=False)) for h in found.hits]
    return _page(
        request, "search", "Search my library", cache=_MINE, q=q[:250], found=found, hits=hits, error=None
    )


@router.get("/library/dismissed", response_class=HTMLResponse)
def dismissed_page(request: Request, user: SignedIn, page: PageNumber = 1) -> HTMLResponse:
    number = page
    papers, total = library_of(request).dismissed(user.id, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE)
    return _page(
        request,
        "dismissed",
        "Not interested",
        papers=[paper_view(p, with_abstract=False) for p in papers],
        total_label=plural(total, "paper"),
        **_pages(total, number, lambda n: "/library/dismissed" + (f"?page={n}" if n > 1 else "")),
    )


# -- saving, tags, marks, notes (forms) -----------------------------------------------------------------

NextField = Annotated[str, Form(max_length=2000)]
PaperField = Annotated[str, Form(max_length=200)]


@router.post("/library/save", response_model=None, dependencies=[CsrfChecked])
def save_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    tag: Annotated[str, Form(max_length=200)] = "",
    next: NextField = "/library",
) -> Response:
    tags = [tag] if tag.strip() else [DEFAULT_TAG]
    return _form_change(request, lambda lib: lib.save(user.id, paper_id, tags), "/library", next_url=next)


@router.post("/library/unsave", response_model=None, dependencies=[CsrfChecked])
def unsave_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    tag_id: Annotated[str, Form(max_length=20)] = "",
    next: NextField = "/library",
) -> Response:
    tag = int(tag_id) if tag_id.isdigit() else None
    return _form_change(request, lambda lib: lib.unsave(user.id, paper_id, tag), "/library", next_url=next)


@router.post("/library/paper-tags", response_model=None, dependencies=[CsrfChecked])
def paper_tags_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    tags: Annotated[list[str] | None, Form(max_length=200)] = None,
    new_tag: Annotated[str, Form(max_length=200)] = "",
    next: NextField = "/library",
) -> Response:
    """The tag picker: the paper ends up in exactly the ticked tags plus the new one, if named."""
    wanted = [t for t in (tags or []) if t.strip()][:100]
    if new_tag.strip():
        wanted.append(new_tag)
    return _form_change(
        request, lambda lib: lib.set_tags(user.id, paper_id, wanted), "/library", next_url=next
    )


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "on", "yes")


@router.post("/library/read", response_model=None, dependencies=[CsrfChecked])
def read_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    read: Annotated[str, Form(max_length=10)] = "1",
    next: NextField = "/library",
) -> Response:
    mark = _flag(read)
    return _form_change(request, lambda lib: lib.set_read(user.id, paper_id, mark), "/library", next_url=next)


@router.post("/library/dismiss", response_model=None, dependencies=[CsrfChecked])
def dismiss_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    dismissed: Annotated[str, Form(max_length=10)] = "1",
    next: NextField = "/library",
) -> Response:
    mark = _flag(dismissed)
    return _form_change(
        request, lambda lib: lib.set_dismissed(user.id, paper_id, mark), "/library", next_url=next
    )


@router.post("/library/note", response_model=None, dependencies=[CsrfChecked])
def note_form(
    request: Request,
    user: SignedIn,
    paper_id: PaperField,
    body: Annotated[str, Form(max_length=40_000)] = "",
    next: NextField = "/library",
) -> Response:
    return _form_change(
        request,
        lambda lib: lib.set_note(user.id, paper_id, body),
        lambda state: paper_url(state.paper_id),
        next_url=next,
    )


@router.post("/library/tags", response_model=None, dependencies=[CsrfChecked])
def create_tag_form(
    request: Request,
    user: SignedIn,
    name: Annotated[str, Form(max_length=200)] = "",
    public: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    shared = _flag(public)
    return _form_change(
        request,
        lambda lib: lib.create_tag(user.id, name, public=shared),
        lambda tag: f"/library?tag={tag.id}",
        done="tag",
    )


@router.post("/library/tags/{tag_id}", response_model=None, dependencies=[CsrfChecked])
def update_tag_form(
    request: Request,
    user: SignedIn,
    tag_id: int,
    name: Annotated[str, Form(max_length=200)] = "",
    public: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    new_name, shared = (name if name.strip() else None), _flag(public)
    return _form_change(
        request,
        lambda lib: lib.update_tag(user.id, tag_id, name=new_name, public=shared),
        f"/library?tag={tag_id}",
        done="tag",
    )


@router.post("/library/tags/{tag_id}/delete", response_model=None, dependencies=[CsrfChecked])
def delete_tag_form(request: Request, user: SignedIn, tag_id: int) -> Response:
    return _form_change(request, lambda lib: lib.delete_tag(user.id, tag_id), "/library", done="deleted")


# -- import (upload) ------------------------------------------------------------------------------------


def _import_page(
    request: Request, user: User, *, status: int = 200, report: Any = None, error: str | None = None, tag: str
) -> HTMLResponse:
    """The import form, what the last upload did, and the reader's background fetch (the page reloads
    itself every few seconds while one runs)."""
    job = app_of(request).readers.library_import.status(user.id)
    settings = app_of(request).settings
    return _page(
        request,
        "import",
        "Import a library",
        status=status,
        report=report,
        error=error,
        tag=tag,
        job=job,
        sample=SAMPLE,
        max_entries=settings.library_import_max_entries,
        max_fetch=settings.library_import_max_fetch,
    )


@router.get("/library/import", response_class=HTMLResponse)
def import_page(request: Request, user: SignedIn) -> HTMLResponse:
    return _import_page(request, user, tag=DEFAULT_TAG)


@router.post("/library/import", response_class=HTMLResponse, dependencies=[CsrfChecked])
async def import_upload(
    request: Request,
    user: SignedIn,
    file: Annotated[UploadFile, File()],
    tag: Annotated[str, Form(max_length=200)] = DEFAULT_TAG,
    fmt: Annotated[str, Form(max_length=20, alias="format")] = "auto",
    with_tags: Annotated[str, Form(max_length=10)] = "",
) -> HTMLResponse:
    """Import an uploaded .bib / RIS / CSL-JSON / id list: the first entries up to the site's cap, papers
    to fetch from arXiv in the background (:mod:`.library_import`)."""
    chosen: Format = fmt if fmt in FORMATS else "auto"  # type: ignore[assignment]
    try:
        report = await start_import(request, user, file, tag or DEFAULT_TAG, chosen, _flag(with_tags))
    except (BibliographyError, InvalidLibraryInput) as exc:
        return _import_page(request, user, status=400, error=f"{exc}; nothing was imported.", tag=tag)
    except ImportBusy as exc:
        return _import_page(request, user, status=429, error=str(exc), tag=tag)
    return _import_page(request, user, report=report, tag=tag)


# -- public collections and their feeds -------------------------------------------------------------------


@router.get("/collections/{tag_id}", response_class=HTMLResponse)
def collection_page(request: Request, tag_id: int, page: PageNumber = 1) -> HTMLResponse:
    user = _signed_in(request)
    number = page
    try:
        shown = library_of(request).collection(
            tag_id, user.id if user else None, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE
        )
    except LibraryNotFound:
        return error_page(request, 404, "Collection not found", f"There is no public collection {tag_id}.")
    own = user is not None and user.id == shown.tag.user_id
    feeds = ((f"Collection: {shown.tag.name}", f"/rss/collections/{tag_id}"),) if shown.tag.public else ()
    return _page(
        request,
        "collection",
        f"{shown.tag.name} · a collection by {shown.owner.display_name}",
        nav="",
        cache=_PUBLIC if shown.tag.public and user is None else _PRIVATE,  # the header names a reader
        feeds=feeds,
        description=f"{plural(shown.total, 'paper')} collected by {shown.owner.display_name}.",
        shown=shown,
        own=own,
        papers=[(paper_view(p, with_abstract=False), day_label(at)) for p, at in shown.papers],
        total_label=plural(shown.total, "paper"),
        **_pages(shown.total, number, lambda n: f"/collections/{tag_id}" + (f"?page={n}" if n > 1 else "")),
    )


def _collection_feed(request: Request, kind: _feeds.Kind, tag_id: int) -> Response:
    try:
        shown = library_of(request).collection(
            tag_id, None, limit=_feeds.FEED_SIZE
        )  # feeds: public tags only
    except LibraryNotFound:
        from .errors import error_response

        return error_response(request, 404, f"no public collection {tag_id}")
    entries = [
        _feeds.Entry(p, at, f"Saved to “{shown.tag.name}” on {day_label(at)}") for p, at in shown.papers
    ]
    return _feeds.render(
        request,
        kind,
        f"paperfeed · {shown.tag.name} (a collection by {shown.owner.display_name})",
        f"Papers {shown.owner.display_name} saved to “{shown.tag.name}”, newest first.",
        (f"/collections/{tag_id}", f"/collections/{tag_id}"),
        entries,
    )


@router.get("/rss/collections/{tag_id}", response_class=Response)
def rss_collection(request: Request, tag_id: int) -> Response:
    return _collection_feed(request, "rss", tag_id)


@router.get("/atom/collections/{tag_id}", response_class=Response)
def atom_collection(request: Request, tag_id: int) -> Response:
    return _collection_feed(request, "atom", tag_id)


# -- followed authors -------------------------------------------------------------------------------------


@router.get("/library/authors", response_class=HTMLResponse)
def authors_page(request: Request, user: SignedIn) -> HTMLResponse:
    followed = library_of(request).followed(user.id)
    return _page(request, "authors", "Followed authors", followed=followed)


@router.post("/library/authors/follow", response_model=None, dependencies=[CsrfChecked])
def follow_form(
    request: Request, user: SignedIn, name: Annotated[str, Form(max_length=400)] = "", next: NextField = ""
) -> Response:
    return _form_change(
        request, lambda lib: lib.follow(user.id, name), "/library/authors", next_url=next, done="followed"
    )


@router.post("/library/authors/unfollow", response_model=None, dependencies=[CsrfChecked])
def unfollow_form(
    request: Request, user: SignedIn, name: Annotated[str, Form(max_length=400)] = "", next: NextField = ""
) -> Response:
    return _form_change(request, lambda lib: lib.unfollow(user.id, name), "/library/authors", next_url=next)


@router.get("/author", response_class=HTMLResponse)
def author_page(request: Request, name: str = "") -> HTMLResponse:
    """Recent papers by an author (exact name, any accents/case); a follow button for signed-in readers."""
    user = _signed_in(request)
    try:
        found = library_of(request).author(name, user.id if user else None)
    except InvalidLibraryInput as exc:
        return error_page(request, 400, "Which author?", str(exc))
    return _page(
        request,
        "author",
        f"Papers by {found.name}",
        nav="",
        cache=_PRIVATE if user else _PUBLIC,
        found=found,
        papers=[paper_view(p, with_abstract=False) for p in found.papers],
        search_url=author_search_url(found.name),
        signed_in=user is not None,
    )


# -- saved searches ---------------------------------------------------------------------------------------


def _filters_from_form(date_from: str, date_to: str, cat: str, code: str) -> tuple[SearchFilters, list[str]]:
    """The search page's filter fields, read exactly as the search page reads them."""
    problems: list[str] = []
    start = form_day(date_from, "From", problems)
    end = form_day(date_to, "To", problems)
    if start and end and start > end:
        start, end = end, start
    categories = form_categories(cat, problems)
    return SearchFilters(start, end, categories, True if _flag(code) else None), problems


def _filters_label(filters: SearchFilters) -> str:
    parts = []
    if filters.date_from or filters.date_to:
        parts.append(f"{filters.date_from or '…'} to {filters.date_to or '…'}")
    if filters.categories:
        parts.append(", ".join(filters.categories))
    if filters.has_code:
        parts.append("with code")
    return " · ".join(parts)


@router.get("/library/searches", response_class=HTMLResponse)
def searches_page(request: Request, user: SignedIn, q: str = "") -> HTMLResponse:
    searches = library_of(request).searches(user.id)
    rows = [(s, _filters_label(s.filters)) for s in searches]
    return _page(
        request, "searches", "Saved searches", rows=rows, q=q[:250], categories=CATEGORY_CHOICES, error=None
    )


@router.post("/library/searches", response_model=None, dependencies=[CsrfChecked])
def create_search_form(
    request: Request,
    user: SignedIn,
    name: Annotated[str, Form(max_length=400)] = "",
    q: Annotated[str, Form(max_length=1000)] = "",
    date_from: Annotated[str, Form(max_length=40, alias="from")] = "",
    date_to: Annotated[str, Form(max_length=40, alias="to")] = "",
    cat: Annotated[str, Form(max_length=400)] = "",
    code: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    filters, problems = _filters_from_form(date_from, date_to, cat, code)
    lib = library_of(request)
    try:
        if problems:
            raise InvalidLibraryInput("filters", " ".join(problems))
        saved = lib.add_search(user.id, name or q, q, filters)
    except InvalidLibraryInput as exc:
        rows = [(s, _filters_label(s.filters)) for s in lib.searches(user.id)]
        return _page(
            request,
            "searches",
            "Saved searches",
            status=400,
            rows=rows,
            q=q[:250],
            categories=CATEGORY_CHOICES,
            error=str(exc),
        )
    return RedirectResponse(f"/library/searches/{saved.id}?done=search", status_code=303)


@router.get("/library/searches/{search_id}", response_class=HTMLResponse)
def alert_page(request: Request, user: SignedIn, search_id: int) -> HTMLResponse:
    lib = library_of(request)
    try:
        alert = lib.alert(user.id, search_id)
        token = lib.feed_token(user.id, search_id)
    except LibraryNotFound as exc:
        return _problem(request, exc, 404)
    return _page(
        request,
        "alert",
        f"Alert: {alert.search.name}",
        alert=alert,
        filters_label=_filters_label(alert.search.filters),
        new=[paper_view(p, with_abstract=False) for p in alert.new],
        earlier=[paper_view(p, with_abstract=False) for p in alert.earlier[:30]],
        since_label=f"{day_label(alert.search.seen_since)} {alert.search.seen_since:%H:%M} UTC",
        feed_path=f"/rss/alerts/{token}",
        search_url="/search?" + urlencode({"q": alert.search.query}),
    )


@router.post("/library/searches/{search_id}/seen", response_model=None, dependencies=[CsrfChecked])
def alert_seen_form(request: Request, user: SignedIn, search_id: int) -> Response:
    return _form_change(
        request, lambda lib: lib.mark_seen(user.id, search_id), f"/library/searches/{search_id}", done="seen"
    )


@router.post("/library/searches/{search_id}/delete", response_model=None, dependencies=[CsrfChecked])
def delete_search_form(request: Request, user: SignedIn, search_id: int) -> Response:
    return _form_change(
        request, lambda lib: lib.delete_search(user.id, search_id), "/library/searches", done="deleted"
    )


def _alert_feed(request: Request, kind: _feeds.Kind, token: str) -> Response:
    try:
        alert = library_of(request).alert_by_token(token[:100])
    except LibraryNotFound:
        from .errors import error_response

        return error_response(request, 404, "no such alert feed")
    now = datetime.now(UTC)
    entries = [_feeds.Entry(p, p.published or now, "New match") for p in alert.new]
    entries += [
        _feeds.Entry(p, p.published or now) for p in alert.earlier[: max(0, _feeds.FEED_SIZE - len(entries))]
    ]
    response = _feeds.render(
        request,
        kind,
        f"paperfeed · alert: {alert.search.name}",
        f"Papers matching “{alert.search.query}”: new ones (published since the last visit) first.",
        (f"/library/searches/{alert.search.id}", f"/alerts/{token[:100]}"),
        entries,
    )
    response.headers["Cache-Control"] = "private, max-age=300"  # the URL is a secret: no shared caches
    response.headers["X-Robots-Tag"] = "noindex"
    return response


@router.get("/rss/alerts/{token}", response_class=Response)
def rss_alert(request: Request, token: str) -> Response:
    return _alert_feed(request, "rss", token)


@router.get("/atom/alerts/{token}", response_class=Response)
def atom_alert(request: Request, token: str) -> Response:
    return _alert_feed(request, "atom", token)
