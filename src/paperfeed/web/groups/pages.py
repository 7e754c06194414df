"""Reading-group pages and forms (docs/groups.md): my groups, a group's page (members, the shared queue with
votes, sessions), invitations, journal-club sessions with shared notes, the archive, and the members'
private iCalendar feeds.

Every state change is a POST form checked by :func:`~.security.verify_csrf` that redirects back (303).
Every lookup goes through :class:`~paperfeed.services.groups.GroupService` with the signed-in reader's id:
a group one is not a member of is the same 404 as one that does not exist. Every answer here is one
reader's own: ``Cache-Control: private`` (the calendar feed too: its URL is a secret).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter, BackgroundTasks, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import pass_context

from paperfeed.domain.accounts import User
from paperfeed.domain.digest_links import InvalidToken
from paperfeed.domain.groups import (
    MAX_QUEUE_NOTE_CHARS,
    MAX_SESSION_NOTES_CHARS,
    Group,
    GroupForbidden,
    GroupNotFound,
    InvalidGroupInput,
    Membership,
)
from paperfeed.domain.mutes import InvalidMuteRule
from paperfeed.services.groups import GroupService

from . import rendering
from .deps import app_of
from .errors import error_response
from .forms import read_form
from .group_calendar import calendar_bytes
from .mutes import apply_mutes
from .rendering import error_page
from .security import (
    client_address,
    current_user,
    link_base_url,
    redirect_back,
    require_user,
    template_request,
    verify_csrf,
)
from .views import PageMeta, day_label, paper_view

__all__ = ["PRIVATE", "TEMPLATE_GLOBALS", "groups_of", "router"]

router = APIRouter(include_in_schema=False)
CsrfChecked = Depends(verify_csrf)
SignedIn = Annotated[User, Depends(require_user)]
PRIVATE = "private, no-store"  # every answer here depends on who asks
T = TypeVar("T")
_MINE = "pf_my_groups"
_DONE = {
    "created": "Group created. Invite the others by their address.",
    "invited": "Invitation sent: the link in it works once.",
    "joined": "Welcome to the group.",
    "queued": "Added to the queue.",
    "voted": "Vote recorded.",
    "scheduled": "Session scheduled.",
    "notes": "Notes saved.",
    "saved": "Saved.",
    "left": "You left the group.",
    "deleted": "Group deleted.",
}
NextField = Annotated[str, Form(max_length=2000)]
PaperField = Annotated[str, Form(max_length=200)]


def groups_of(request: Request) -> GroupService:
    return app_of(request).readers.groups


# -- template globals: the "queue for a group" control on cards and paper pages ------------------------------


def _signed_in(request: Request) -> User | None:
    try:
        return current_user(request)
    except Exception:  # a bad Bearer token on a page: the page renders without buttons
        return None


@pass_context
def _my_groups(ctx: Any) -> list[tuple[Group, Membership]]:
    """The signed-in reader's groups (once per request), for the queue buttons; [] for anonymous pages."""
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return []
    state = request.scope.setdefault("state", {})
    if _MINE not in state:
        state[_MINE] = groups_of(request).groups(user.id)
    mine: list[tuple[Group, Membership]] = state[_MINE]
    return mine


TEMPLATE_GLOBALS: Mapping[str, Any] = {"my_groups": _my_groups, "queue_note_max": MAX_QUEUE_NOTE_CHARS}


# -- rendering and errors ------------------------------------------------------------------------------------


def _page(request: Request, name: str, title: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    meta = PageMeta(title, title, rendering.absolute_url(request), noindex=True)
    done = _DONE.get(request.query_params.get("done", ""))
    return rendering.page(
        request, f"groups/{name}.html", meta, nav="groups", status=status, cache=PRIVATE, done=done, **context
    )


def _problem(request: Request, exc: Exception) -> HTMLResponse:
    if isinstance(exc, GroupNotFound):
        status, heading = 404, "Not found"
    elif isinstance(exc, GroupForbidden):
        status, heading = 403, "Not allowed"
    else:
        status, heading = 400, "That did not work"
    return error_page(request, status, heading, str(exc), headers={"Cache-Control": PRIVATE})


def _change(
    request: Request,
    change: Callable[[GroupService], T],
    back_to: str | Callable[[T], str],
    *,
    next_url: str = "",
    done: str | None = None,
) -> Response:
    """One change, then 303 to the form's safe ``next`` (else ``back_to``); refusals are error pages."""
    try:
        result = change(groups_of(request))
    except (GroupNotFound, GroupForbidden, InvalidGroupInput) as exc:
        return _problem(request, exc)
    return redirect_back(next_url, back_to(result) if callable(back_to) else back_to, done)


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "on", "yes")


def _member_id(value: str) -> int:
    if not value.strip().isdigit():
        raise InvalidGroupInput("member", "choose a member")
    return int(value)


def parse_start(when: str, zone: str) -> datetime:
    """A form's ``datetime-local`` value in the IANA zone ``zone`` (default UTC), as an aware datetime;
    an ISO time with an offset is taken as it is."""
    text = when.strip()
    if not text:
        raise InvalidGroupInput("starts_at", "give the session's date and time")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidGroupInput(
            "starts_at", f"{text[:40]!r} is not a date and time (YYYY-MM-DDTHH:MM)"
        ) from None
    if parsed.tzinfo is not None:
        return parsed
    try:
        tz = ZoneInfo(zone.strip() or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidGroupInput(
            "timezone", f"{zone[:60]!r} is not a time zone (e.g. Europe/Berlin)"
        ) from None
    return parsed.replace(tzinfo=tz)


# -- my groups -----------------------------------------------------------------------------------------------


@router.get("/groups", response_class=HTMLResponse)
def groups_page(request: Request, user: SignedIn) -> HTMLResponse:
    return _page(request, "index", "My groups", mine=groups_of(request).groups(user.id), error=None)


@router.post("/groups", response_model=None, dependencies=[CsrfChecked])
def create_group_form(
    request: Request,
    user: SignedIn,
    name: Annotated[str, Form(max_length=400)] = "",
    description: Annotated[str, Form(max_length=4000)] = "",
) -> Response:
    service = groups_of(request)
    try:
        group = service.create(user.id, name, description)
    except InvalidGroupInput as exc:
        return _page(request, "index", "My groups", status=400, mine=service.groups(user.id), error=str(exc))
    return RedirectResponse(f"/groups/{group.id}?done=created", status_code=303)


# -- invitations (before /groups/{group_id}: "invitations" is no id) -----------------------------------------


@router.get("/groups/invitations/{token}", response_class=HTMLResponse)
def invitation_page(request: Request, user: SignedIn, token: str) -> HTMLResponse:
    """What the mailed link opens: who invites whom to which group, and a button (a GET changes nothing)."""
    try:
        shown = groups_of(request).invitation(token[:200], user.email)
    except GroupNotFound as exc:
        return _problem(request, exc)
    return _page(request, "invitation", f"Join {shown.group.name}", shown=shown, token=token[:200])


@router.post("/groups/invitations/accept", response_model=None, dependencies=[CsrfChecked])
def accept_form(
    request: Request, user: SignedIn, token: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    return _change(
        request, lambda s: s.accept(user.id, user.email, token), lambda g: f"/groups/{g.id}", done="joined"
    )


# -- the weekly digest's one-click unsubscribe (a signed link; no sign-in, no CSRF: RFC 8058) -------------


@router.get("/groups/digest/unsubscribe", response_class=HTMLResponse)
def digest_unsubscribe_page(request: Request, t: str = "") -> HTMLResponse:
    """What the mail's link opens: a button (a GET changes nothing, so mail scanners stop nothing)."""
    try:
        app_of(request).digests.groups.check_unsubscribe(t[:300])
    except InvalidToken as exc:
        return error_page(request, 404, "Not found", str(exc), headers={"Cache-Control": PRIVATE})
    return _page(request, "unsubscribe", "Stop the group digest", token=t[:300], stopped=False)


@router.post("/groups/digest/unsubscribe", response_class=HTMLResponse)
async def digest_unsubscribe(request: Request, t: str = "") -> HTMLResponse:
    """RFC 8058 one-click (``List-Unsubscribe=One-Click`` posted to the link) and the page's button: the
    signed token authorises it, and it can only stop this member's digest of this group."""
    token = t
    if not token and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        form = await read_form(request)
        value = form.get("t")
        token = value if isinstance(value, str) else ""
    try:
        app_of(request).digests.groups.unsubscribe(token[:300])
    except InvalidToken as exc:
        return error_page(request, 404, "Not found", str(exc), headers={"Cache-Control": PRIVATE})
    return _page(request, "unsubscribe", "Stopped", token="", stopped=True)


# -- the iCalendar feed (a member's private URL; no cookie needed) -------------------------------------------


@router.get("/groups/calendar/{token}.ics", response_class=Response)
def calendar_feed(request: Request, token: str) -> Response:
    private = {"Cache-Control": PRIVATE, "X-Robots-Tag": "noindex"}
    if len(token) > 100 or not token.replace("-", "").replace("_", "").isalnum():
        return error_response(request, 404, "no such calendar feed", headers=private)
    try:
        group, sessions = groups_of(request).calendar(token)
    except GroupNotFound:
        return error_response(request, 404, "no such calendar feed", headers=private)
    body = calendar_bytes(group, sessions, app_of(request).core.public_url)
    headers = {
        **private,
        "Cache-Control": "private, max-age=300",  # the URL is a secret: no shared caches
        "Content-Disposition": 'inline; filename="group.ics"',
    }
    return Response(body, media_type="text/calendar; charset=utf-8", headers=headers)


# -- one group -----------------------------------------------------------------------------------------------


@router.get("/groups/{group_id}", response_class=HTMLResponse)
def group_page(request: Request, user: SignedIn, group_id: int) -> HTMLResponse:
    service = groups_of(request)
    try:
        shown = service.page(user.id, group_id)
        token = service.calendar_token(user.id, group_id)
    except GroupNotFound as exc:
        return _problem(request, exc)
    return _page(
        request,
        "group",
        shown.group.name,
        shown=shown,
        user=user,
        queue=[
            (q, paper_view(q.paper, with_abstract=False), day_label(q.entry.added_at)) for q in shown.queue
        ],
        top=[q for q in shown.by_votes if q.entry.votes > 0][:3],
        calendar_path=f"/groups/calendar/{token}.ics",
        group_mutes=app_of(request).readers.mutes.group_rules(group_id),
        searches=service.searches(user.id, group_id),
        others=[m for m in shown.members if m.user_id != user.id],
    )


@router.post("/groups/{group_id}/invite", response_model=None, dependencies=[CsrfChecked])
def invite_form(
    request: Request,
    background: BackgroundTasks,
    user: SignedIn,
    group_id: int,
    email: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    """Invite an address; the mail goes out after the reply (as the digest sign-up's does)."""
    service = groups_of(request)
    try:
        mail = service.invite(
            user.id, group_id, email, base_url=link_base_url(request), client=client_address(request)
        )
    except (GroupNotFound, GroupForbidden, InvalidGroupInput) as exc:
        return _problem(request, exc)
    background.add_task(service.deliver, mail)
    return redirect_back("", f"/groups/{group_id}", "invited")


@router.post("/groups/{group_id}/leave", response_model=None, dependencies=[CsrfChecked])
def leave_form(request: Request, user: SignedIn, group_id: int) -> Response:
    return _change(request, lambda s: s.leave(user.id, group_id), "/groups", done="left")


@router.post("/groups/{group_id}/delete", response_model=None, dependencies=[CsrfChecked])
def delete_form(request: Request, user: SignedIn, group_id: int) -> Response:
    return _change(request, lambda s: s.delete(user.id, group_id), "/groups", done="deleted")


@router.post("/groups/{group_id}/members/remove", response_model=None, dependencies=[CsrfChecked])
def remove_form(
    request: Request, user: SignedIn, group_id: int, member: Annotated[str, Form(max_length=20)] = ""
) -> Response:
    return _change(
        request,
        lambda s: s.remove(user.id, group_id, _member_id(member)),
        f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/members/owner", response_model=None, dependencies=[CsrfChecked])
def hand_over_form(
    request: Request, user: SignedIn, group_id: int, member: Annotated[str, Form(max_length=20)] = ""
) -> Response:
    return _change(
        request,
        lambda s: s.hand_over(user.id, group_id, _member_id(member)),
        f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/digest", response_model=None, dependencies=[CsrfChecked])
def digest_form(
    request: Request, user: SignedIn, group_id: int, on: Annotated[str, Form(max_length=10)] = ""
) -> Response:
    wanted = _flag(on)
    return _change(
        request, lambda s: s.set_digest(user.id, group_id, wanted), f"/groups/{group_id}", done="saved"
    )


# -- the queue -----------------------------------------------------------------------------------------------


@router.post("/groups/{group_id}/queue", response_model=None, dependencies=[CsrfChecked])
def queue_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    paper_id: PaperField = "",
    note: Annotated[str, Form(max_length=MAX_QUEUE_NOTE_CHARS * 2)] = "",
    next: NextField = "",
) -> Response:
    """Queue a paper (from a paper page, a search result, a feed card or the group page)."""
    return _change(
        request,
        lambda s: s.queue_add(user.id, group_id, paper_id, note),
        f"/groups/{group_id}",
        next_url=next,
        done="queued",
    )


@router.post("/groups/{group_id}/queue/remove", response_model=None, dependencies=[CsrfChecked])
def unqueue_form(request: Request, user: SignedIn, group_id: int, paper_id: PaperField = "") -> Response:
    return _change(
        request, lambda s: s.queue_remove(user.id, group_id, paper_id), f"/groups/{group_id}", done="saved"
    )


@router.post("/groups/{group_id}/vote", response_model=None, dependencies=[CsrfChecked])
def vote_form(request: Request, user: SignedIn, group_id: int, paper_id: PaperField = "") -> Response:
    """Vote for the next paper (an empty ``paper_id`` takes the vote back)."""
    return _change(
        request, lambda s: s.vote(user.id, group_id, paper_id or None), f"/groups/{group_id}", done="voted"
    )


# -- sessions ------------------------------------------------------------------------------------------------


@router.post("/groups/{group_id}/sessions", response_model=None, dependencies=[CsrfChecked])
def schedule_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    starts_at: Annotated[str, Form(max_length=60)] = "",
    timezone: Annotated[str, Form(max_length=80)] = "UTC",
    presenter: Annotated[str, Form(max_length=20)] = "",
    paper_id: PaperField = "",
) -> Response:
    """The owner schedules a session: ``paper_id`` empty (or "vote") takes the queue's most voted paper."""
    chosen = None if paper_id.strip() in ("", "vote") else paper_id

    def schedule(s: GroupService) -> int:
        start = parse_start(starts_at, timezone)
        return s.schedule(user.id, group_id, start, _member_id(presenter), chosen).id

    return _change(request, schedule, lambda sid: f"/groups/{group_id}/sessions/{sid}", done="scheduled")


@router.get("/groups/{group_id}/sessions/{session_id}", response_class=HTMLResponse)
def session_page(request: Request, user: SignedIn, group_id: int, session_id: int) -> HTMLResponse:
    service = groups_of(request)
    try:
        item = service.session(user.id, group_id, session_id)
        me = service.membership(user.id, group_id)
        group = service.group(user.id, group_id)
    except GroupNotFound as exc:
        return _problem(request, exc)
    return _page(
        request,
        "session",
        f"{group.name}: session of {day_label(item.session.starts_at)}",
        group=group,
        item=item,
        me=me,
        v=paper_view(item.paper, with_abstract=True) if item.paper else None,
        notes_max=MAX_SESSION_NOTES_CHARS,
        past=item.session.starts_at < service.now(),
    )


@router.post(
    "/groups/{group_id}/sessions/{session_id}/notes", response_model=None, dependencies=[CsrfChecked]
)
def notes_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    session_id: int,
    body: Annotated[str, Form(max_length=MAX_SESSION_NOTES_CHARS * 2)] = "",
) -> Response:
    return _change(
        request,
        lambda s: s.set_notes(user.id, group_id, session_id, body),
        f"/groups/{group_id}/sessions/{session_id}",
        done="notes",
    )


@router.post(
    "/groups/{group_id}/sessions/{session_id}/cancel", response_model=None, dependencies=[CsrfChecked]
)
def cancel_form(request: Request, user: SignedIn, group_id: int, session_id: int) -> Response:
    return _change(
        request,
        lambda s: s.cancel_session(user.id, group_id, session_id),
        f"/groups/{group_id}",
        done="saved",
    )


@router.get("/groups/{group_id}/for-the-group", response_class=HTMLResponse)
def for_the_group_page(request: Request, user: SignedIn, group_id: int) -> HTMLResponse:
    """Recent papers for the group: "For you" trained on its queue and past sessions, with reasons."""
    try:
        found = groups_of(request).for_the_group(user.id, group_id, limit=30)
    except GroupNotFound as exc:
        return _problem(request, exc)
    items, muted = apply_mutes(request, found.items, lambda p: p.paper)  # the reader's own rules too
    return _page(
        request,
        "for_group",
        f"{found.group.name}: for the group",
        found=found,
        items=[(pick, paper_view(pick.paper, with_abstract=False)) for pick in items],
        muted=muted,
    )


@router.get("/groups/{group_id}/archive", response_class=HTMLResponse)
def archive_page(request: Request, user: SignedIn, group_id: int) -> HTMLResponse:
    try:
        group, past = groups_of(request).archive(user.id, group_id)
    except GroupNotFound as exc:
        return _problem(request, exc)
    return _page(request, "archive", f"{group.name}: past sessions", group=group, past=past)


# -- the group's mute rules (its pages and digest; the owner's to change) -------------------------------


@router.post("/groups/{group_id}/mutes", response_model=None, dependencies=[CsrfChecked])
def group_mute_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    kind: Annotated[str, Form(max_length=20)] = "",
    value: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    def add(s: GroupService) -> None:
        s.check_owner(user.id, group_id)
        try:
            app_of(request).readers.mutes.add_group(group_id, kind, value)
        except InvalidMuteRule as exc:
            raise InvalidGroupInput(exc.field, exc.reason) from None

    return _change(request, add, f"/groups/{group_id}", done="saved")


@router.post("/groups/{group_id}/mutes/remove", response_model=None, dependencies=[CsrfChecked])
def group_unmute_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    kind: Annotated[str, Form(max_length=20)] = "",
    value: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    def remove(s: GroupService) -> None:
        s.check_owner(user.id, group_id)
        try:
            app_of(request).readers.mutes.remove_group(group_id, kind, value)
        except InvalidMuteRule as exc:
            raise InvalidGroupInput(exc.field, exc.reason) from None

    return _change(request, remove, f"/groups/{group_id}", done="saved")


# -- the group's searches (their new matches go into the weekly digest) ----------------------------------


@router.post("/groups/{group_id}/searches", response_model=None, dependencies=[CsrfChecked])
def group_search_form(
    request: Request, user: SignedIn, group_id: int, q: Annotated[str, Form(max_length=1000)] = ""
) -> Response:
    return _change(request, lambda s: s.add_search(user.id, group_id, q), f"/groups/{group_id}", done="saved")


@router.post(
    "/groups/{group_id}/searches/{search_id}/delete", response_model=None, dependencies=[CsrfChecked]
)
def group_search_delete_form(request: Request, user: SignedIn, group_id: int, search_id: int) -> Response:
    return _change(
        request, lambda s: s.delete_search(user.id, group_id, search_id), f"/groups/{group_id}", done="saved"
    )
