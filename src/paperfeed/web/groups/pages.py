"""Reading-group pages and forms (docs/groups.md): my groups, a group's page (members, invitations, the
shared queue with votes, sessions, mute rules, searches), invitations, journal-club sessions with shared
notes, the archive, "for the group", the weekly digest's one-click unsubscribe and the members' private
iCalendar feeds.

Routes only parse: who may do what is :class:`~paperfeed.services.groups.GroupService`'s, asked with the
signed-in reader's id (a group one is not a member of is the same 404 as one that does not exist), and
every form goes through :func:`.forms.submit` (a POST checked by :func:`~..security.verify_csrf`, then 303;
a refusal shown beside its form). Every answer is one reader's own: ``Cache-Control: private`` (the
calendar feed too: its URL is a secret).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter, BackgroundTasks, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response

from paperfeed.domain.accounts import User
from paperfeed.domain.digest_links import InvalidToken
from paperfeed.domain.groups import (
    MAX_QUEUE_NOTE_CHARS,
    MAX_SESSION_NOTES_CHARS,
    GroupNotFound,
    InvalidGroupInput,
)
from paperfeed.services.groups import GroupService

from .. import rendering
from ..deps import app_of
from ..errors import error_response
from ..forms import read_form
from ..mutes import apply_mutes
from ..rendering import error_page
from ..security import client_address, link_base_url, require_user, verify_csrf
from ..views import PageMeta, day_label, paper_view
from .calendar import calendar_bytes
from .forms import PRIVATE, FormError, groups_of, problem, submit

__all__ = ["parse_start", "router"]

router = APIRouter(include_in_schema=False)
CsrfChecked = Depends(verify_csrf)
SignedIn = Annotated[User, Depends(require_user)]
_DONE = {
    "created": "Group created. Invite the others by their address.",
    "invited": "Invitation sent: the link in it works once.",
    "withdrawn": "Invitation withdrawn: its link no longer works.",
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
MemberField = Annotated[str, Form(max_length=20)]


# -- rendering -----------------------------------------------------------------------------------------------


def _page(request: Request, name: str, title: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    meta = PageMeta(title, title, rendering.absolute_url(request), noindex=True)
    done = _DONE.get(request.query_params.get("done", "")) if status == 200 else None
    return rendering.page(
        request, f"groups/{name}.html", meta, nav="groups", status=status, cache=PRIVATE, done=done, **context
    )


def _member_id(value: str) -> int:
    if not value.strip().isdigit() or len(value.strip()) > 10:
        raise InvalidGroupInput("member", "choose a member")
    return int(value)


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "on", "yes")


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


def _group_page(
    request: Request, user: User, group_id: int, error: FormError | None = None, status: int = 200
) -> HTMLResponse:
    """A group's page; with ``error``, again after a refused form (the error beside it, the input kept)."""
    shown = groups_of(request).page(user.id, group_id)
    return _page(
        request,
        "group",
        shown.group.name,
        status=status,
        shown=shown,
        user=user,
        queue=[
            (q, paper_view(q.paper, with_abstract=False), day_label(q.entry.added_at)) for q in shown.queue
        ],
        top=[q for q in shown.by_votes if q.entry.votes > 0][:3],
        calendar_path=f"/groups/calendar/{shown.calendar_token}.ics",
        others=[m for m in shown.members if m.user_id != user.id],
        form_error=error,
    )


def _on_group_page(request: Request, user: User, group_id: int) -> Any:
    return lambda error, status: _group_page(request, user, group_id, error, status)


# -- my groups -----------------------------------------------------------------------------------------------


def _groups_page(
    request: Request, user: User, error: FormError | None = None, status: int = 200
) -> HTMLResponse:
    mine = groups_of(request).groups(user.id)
    return _page(request, "index", "My groups", status=status, mine=mine, form_error=error)


@router.get("/groups", response_class=HTMLResponse)
def groups_page(request: Request, user: SignedIn) -> HTMLResponse:
    return _groups_page(request, user)


@router.post("/groups", response_model=None, dependencies=[CsrfChecked])
def create_group_form(
    request: Request,
    user: SignedIn,
    name: Annotated[str, Form(max_length=400)] = "",
    description: Annotated[str, Form(max_length=4000)] = "",
) -> Response:
    return submit(
        request,
        lambda s: s.create(user.id, name, description),
        form="create",
        values={"name": name, "description": description},
        render=lambda error, status: _groups_page(request, user, error, status),
        back_to=lambda g: f"/groups/{g.id}",
        done="created",
    )


# -- invitations (before /groups/{group_id}: "invitations" is no id) -----------------------------------------


@router.get("/groups/invitations/{token}", response_class=HTMLResponse)
def invitation_page(request: Request, user: SignedIn, token: str) -> HTMLResponse:
    """What the mailed link opens: who invites whom to which group, and a button (a GET changes nothing)."""
    try:
        shown = groups_of(request).invitation(token[:200], user.email)
    except GroupNotFound as exc:
        return problem(request, exc)
    return _page(request, "invitation", f"Join {shown.group.name}", shown=shown, token=token[:200])


@router.post("/groups/invitations/accept", response_model=None, dependencies=[CsrfChecked])
def accept_form(
    request: Request, user: SignedIn, token: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    return submit(
        request,
        lambda s: s.accept(user.id, user.email, token),
        form="accept",
        back_to=lambda g: f"/groups/{g.id}",
        done="joined",
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
    try:
        return _group_page(request, user, group_id)
    except GroupNotFound as exc:
        return problem(request, exc)


@router.post("/groups/{group_id}/invite", response_model=None, dependencies=[CsrfChecked])
def invite_form(
    request: Request,
    background: BackgroundTasks,
    user: SignedIn,
    group_id: int,
    email: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    """Invite an address; the mail goes out after the reply (as the digest sign-up's does)."""

    def invite(s: GroupService) -> None:
        mail = s.invite(
            user.id, group_id, email, base_url=link_base_url(request), client=client_address(request)
        )
        background.add_task(s.deliver, mail)

    return submit(
        request,
        invite,
        form="invite",
        values={"email": email},
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="invited",
    )


@router.post(
    "/groups/{group_id}/invitations/{invitation_id}/withdraw", response_model=None, dependencies=[CsrfChecked]
)
def withdraw_form(request: Request, user: SignedIn, group_id: int, invitation_id: int) -> Response:
    """The owner withdraws an open invitation: its link stops working."""
    return submit(
        request,
        lambda s: s.withdraw(user.id, group_id, invitation_id),
        form="withdraw",
        back_to=f"/groups/{group_id}",
        done="withdrawn",
    )


@router.post("/groups/{group_id}/leave", response_model=None, dependencies=[CsrfChecked])
def leave_form(request: Request, user: SignedIn, group_id: int) -> Response:
    return submit(
        request,
        lambda s: s.leave(user.id, group_id),
        form="leave",
        render=_on_group_page(request, user, group_id),
        back_to="/groups",
        done="left",
    )


@router.post("/groups/{group_id}/delete", response_model=None, dependencies=[CsrfChecked])
def delete_form(request: Request, user: SignedIn, group_id: int) -> Response:
    return submit(
        request, lambda s: s.delete(user.id, group_id), form="delete", back_to="/groups", done="deleted"
    )


@router.post("/groups/{group_id}/members/remove", response_model=None, dependencies=[CsrfChecked])
def remove_form(request: Request, user: SignedIn, group_id: int, member: MemberField = "") -> Response:
    return submit(
        request,
        lambda s: s.remove(user.id, group_id, _member_id(member)),
        form="members",
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/members/owner", response_model=None, dependencies=[CsrfChecked])
def hand_over_form(request: Request, user: SignedIn, group_id: int, member: MemberField = "") -> Response:
    return submit(
        request,
        lambda s: s.hand_over(user.id, group_id, _member_id(member)),
        form="members",
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/digest", response_model=None, dependencies=[CsrfChecked])
def digest_form(
    request: Request, user: SignedIn, group_id: int, on: Annotated[str, Form(max_length=10)] = ""
) -> Response:
    wanted = _flag(on)
    return submit(
        request,
        lambda s: s.set_digest(user.id, group_id, wanted),
        form="digest",
        back_to=f"/groups/{group_id}",
        done="saved",
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
    """Queue a paper (from a paper page, a search result, a feed card or the group page). Back on the page
    it came from, the paper's control says it is queued; a refusal (a malformed id, a paper the instance
    does not have, a note too long) is shown on the group page's queue form, the input kept."""
    return submit(
        request,
        lambda s: s.queue_add(user.id, group_id, paper_id, note),
        form="queue",
        values={"paper_id": paper_id, "note": note},
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        next_url=next,
        done="queued",
        shown=lambda entry: {"queued": entry.paper_id},
    )


@router.post("/groups/{group_id}/queue/remove", response_model=None, dependencies=[CsrfChecked])
def unqueue_form(request: Request, user: SignedIn, group_id: int, paper_id: PaperField = "") -> Response:
    return submit(
        request,
        lambda s: s.queue_remove(user.id, group_id, paper_id),
        form="queue-item",
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/vote", response_model=None, dependencies=[CsrfChecked])
def vote_form(request: Request, user: SignedIn, group_id: int, paper_id: PaperField = "") -> Response:
    """Vote for the next paper (an empty ``paper_id`` takes the vote back)."""
    return submit(
        request,
        lambda s: s.vote(user.id, group_id, paper_id or None),
        form="queue-item",
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="voted",
    )


# -- sessions ------------------------------------------------------------------------------------------------


@router.post("/groups/{group_id}/sessions", response_model=None, dependencies=[CsrfChecked])
def schedule_form(
    request: Request,
    user: SignedIn,
    group_id: int,
    starts_at: Annotated[str, Form(max_length=60)] = "",
    timezone: Annotated[str, Form(max_length=80)] = "UTC",
    presenter: MemberField = "",
    paper_id: PaperField = "",
) -> Response:
    """The owner schedules a session: ``paper_id`` empty (or "vote") takes the queue's most voted paper."""
    chosen = None if paper_id.strip() in ("", "vote") else paper_id

    def schedule(s: GroupService) -> int:
        start = parse_start(starts_at, timezone)
        return s.schedule(user.id, group_id, start, _member_id(presenter), chosen).id

    return submit(
        request,
        schedule,
        form="schedule",
        values={"starts_at": starts_at, "timezone": timezone, "presenter": presenter, "paper_id": paper_id},
        render=_on_group_page(request, user, group_id),
        back_to=lambda sid: f"/groups/{group_id}/sessions/{sid}",
        done="scheduled",
    )


def _session_page(
    request: Request,
    user: User,
    group_id: int,
    session_id: int,
    error: FormError | None = None,
    status: int = 200,
) -> HTMLResponse:
    service = groups_of(request)
    item = service.session(user.id, group_id, session_id)
    group = service.group(user.id, group_id)
    return _page(
        request,
        "session",
        f"{group.name}: session of {day_label(item.session.starts_at)}",
        status=status,
        group=group,
        item=item,
        me=service.membership(user.id, group_id),
        v=paper_view(item.paper, with_abstract=True) if item.paper else None,
        notes_max=MAX_SESSION_NOTES_CHARS,
        past=item.session.starts_at < service.now(),
        form_error=error,
    )


@router.get("/groups/{group_id}/sessions/{session_id}", response_class=HTMLResponse)
def session_page(request: Request, user: SignedIn, group_id: int, session_id: int) -> HTMLResponse:
    try:
        return _session_page(request, user, group_id, session_id)
    except GroupNotFound as exc:
        return problem(request, exc)


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
    return submit(
        request,
        lambda s: s.set_notes(user.id, group_id, session_id, body),
        form="notes",
        values={"body": body},
        render=lambda error, status: _session_page(request, user, group_id, session_id, error, status),
        back_to=f"/groups/{group_id}/sessions/{session_id}",
        done="notes",
    )


@router.post(
    "/groups/{group_id}/sessions/{session_id}/cancel", response_model=None, dependencies=[CsrfChecked]
)
def cancel_form(request: Request, user: SignedIn, group_id: int, session_id: int) -> Response:
    return submit(
        request,
        lambda s: s.cancel_session(user.id, group_id, session_id),
        form="cancel",
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.get("/groups/{group_id}/for-the-group", response_class=HTMLResponse)
def for_the_group_page(request: Request, user: SignedIn, group_id: int) -> HTMLResponse:
    """Recent papers for the group: "For you" trained on its queue and past sessions, with reasons."""
    try:
        found = groups_of(request).for_the_group(user.id, group_id, limit=30)
    except GroupNotFound as exc:
        return problem(request, exc)
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
        return problem(request, exc)
    return _page(request, "archive", f"{group.name}: past sessions", group=group, past=past)


# -- the group's mute rules (its pages and digest; the owner's to change) -------------------------------


MuteKind = Annotated[str, Form(max_length=20)]
MuteValue = Annotated[str, Form(max_length=400)]


@router.post("/groups/{group_id}/mutes", response_model=None, dependencies=[CsrfChecked])
def group_mute_form(
    request: Request, user: SignedIn, group_id: int, kind: MuteKind = "", value: MuteValue = ""
) -> Response:
    return submit(
        request,
        lambda s: s.add_mute(user.id, group_id, kind, value),
        form="mute",
        values={"kind": kind, "value": value},
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.post("/groups/{group_id}/mutes/remove", response_model=None, dependencies=[CsrfChecked])
def group_unmute_form(
    request: Request, user: SignedIn, group_id: int, kind: MuteKind = "", value: MuteValue = ""
) -> Response:
    return submit(
        request,
        lambda s: s.remove_mute(user.id, group_id, kind, value),
        form="mute",
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


# -- the group's searches (their new matches go into the weekly digest) ----------------------------------


@router.post("/groups/{group_id}/searches", response_model=None, dependencies=[CsrfChecked])
def group_search_form(
    request: Request, user: SignedIn, group_id: int, q: Annotated[str, Form(max_length=1000)] = ""
) -> Response:
    return submit(
        request,
        lambda s: s.add_search(user.id, group_id, q),
        form="search",
        values={"q": q},
        render=_on_group_page(request, user, group_id),
        back_to=f"/groups/{group_id}",
        done="saved",
    )


@router.post(
    "/groups/{group_id}/searches/{search_id}/delete", response_model=None, dependencies=[CsrfChecked]
)
def group_search_delete_form(request: Request, user: SignedIn, group_id: int, search_id: int) -> Response:
    return submit(
        request,
        lambda s: s.delete_search(user.id, group_id, search_id),
        form="search",
        back_to=f"/groups/{group_id}",
        done="saved",
    )
