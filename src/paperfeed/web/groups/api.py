"""The reading groups' JSON API under ``/api/groups`` (a Bearer token or the session cookie; docs/groups.md).

===================================================  =========================================================
``GET|POST /api/groups``                             my groups; create ``{"name", "description"?}``
``GET /api/groups/{id}``                             members, queue (with votes), next and recent sessions
``GET /api/groups/{id}/invitations``                 the open invitations (owner; the addresses they typed)
``POST /api/groups/{id}/invitations``                ``{"email"}``: mail an invitation (owner; mail limits
                                                     and the day's caps per account and per group: 429)
``DELETE /api/groups/{id}/invitations/{iid}``        withdraw an open invitation (owner)
``POST /api/groups/{id}/queue``                      ``{"paper_id", "note"?}``: queue a paper
``DELETE /api/groups/{id}/queue/{paper_id}``         take it off (whoever queued it, or the owner)
``PUT /api/groups/{id}/vote``                        ``{"paper_id": id | null}``: the member's one vote
``POST /api/groups/{id}/sessions``                   ``{"starts_at" (ISO, with offset), "presenter_id",
                                                     "paper_id"?}`` (owner; no paper: the most voted)
``GET /api/groups/{id}/sessions/{sid}``              a session with its notes (Markdown and sanitised HTML)
``PUT /api/groups/{id}/sessions/{sid}/notes``        ``{"body"}``: the shared notes (any member)
``POST /api/groups/{id}/leave``                      leave (a member)
``DELETE /api/groups/{id}/members/{user_id}``        remove a member (owner)
``PUT /api/groups/{id}/owner``                       ``{"user_id"}``: hand ownership over (owner)
``GET /api/groups/{id}/recommendations``             for the group: recent papers ranked by "For you" trained
                                                     on its queue and sessions, each with its reasons
===================================================  =========================================================

A group the reader is not a member of is a 404, like one that does not exist; an owner's action asked by
a member is a 403. Every answer is ``Cache-Control: private, no-store``. State changes need the CSRF header
when authenticated by the session cookie (not with a Bearer token).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, BackgroundTasks, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from paperfeed.domain.accounts import User
from paperfeed.domain.groups import (
    MAX_QUEUE_NOTE_CHARS,
    MAX_SESSION_NOTES_CHARS,
    Group,
    GroupForbidden,
    GroupNotFound,
    GroupSession,
    InvalidGroupInput,
    Invitation,
    Member,
    Membership,
)
from paperfeed.services.groups import GroupPage, GroupService, QueueItem, SessionItem

from ..deps import app_of
from ..errors import ApiError, JsonResponse
from ..hf_json import paper_object
from ..library_notes import render_note
from ..mutes import apply_mutes
from ..security import client_address, link_base_url, require_user, verify_csrf

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["groups"])
SignedIn = Annotated[User, Depends(require_user)]
CsrfChecked = [Depends(verify_csrf)]
PRIVATE = {"Cache-Control": "private, no-store"}
T = TypeVar("T")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GroupIn(_Strict):
    name: str = Field(max_length=400)
    description: str = Field(default="", max_length=4000)


class InviteIn(_Strict):
    email: str = Field(max_length=400)


class QueueIn(_Strict):
    paper_id: str = Field(max_length=200)
    note: str = Field(default="", max_length=MAX_QUEUE_NOTE_CHARS * 2)


class VoteIn(_Strict):
    paper_id: str | None = Field(default=None, max_length=200)


class SessionIn(_Strict):
    starts_at: datetime
    presenter_id: int
    paper_id: str | None = Field(default=None, max_length=200)


class NotesIn(_Strict):
    body: str = Field(max_length=MAX_SESSION_NOTES_CHARS * 2)


class OwnerIn(_Strict):
    user_id: int


def _service(request: Request) -> GroupService:
    return app_of(request).readers.groups


def _call(request: Request, action: Callable[[GroupService], T]) -> T:
    try:
        return action(_service(request))
    except GroupNotFound as exc:
        raise ApiError(404, str(exc), headers=PRIVATE) from None
    except GroupForbidden as exc:
        raise ApiError(403, str(exc), headers=PRIVATE) from None
    except InvalidGroupInput as exc:
        raise ApiError(400, str(exc), field=exc.field, headers=PRIVATE) from None


def _json(body: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(body, status_code=status, headers=PRIVATE)


# -- JSON shapes ---------------------------------------------------------------------------------------------


def _group(group: Group, me: Membership | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": group.id,
        "name": group.name,
        "description": group.description,
        "createdAt": group.created_at.isoformat(),
        "url": f"/groups/{group.id}",
    }
    if me is not None:
        out["role"] = me.role
        out["digest"] = me.digest
    return out


def _member(m: Member) -> dict[str, Any]:
    return {"userId": m.user_id, "name": m.name, "role": m.role, "joinedAt": m.joined_at.isoformat()}


def _queued(q: QueueItem) -> dict[str, Any]:
    e = q.entry
    return {
        "paper": paper_object(q.paper),
        "addedBy": e.added_by_name,
        "addedAt": e.added_at.isoformat(),
        "note": e.note,
        "votes": e.votes,
        "myVote": q.my_vote,
    }


def _session(s: GroupSession, item: SessionItem | None = None, *, notes: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": s.id,
        "startsAt": s.starts_at.isoformat(),
        "presenter": s.presenter_name,
        "presenterId": s.presenter_id,
        "paperId": s.paper_id,
        "title": item.paper.title if item is not None and item.paper is not None else None,
        "url": f"/groups/{s.group_id}/sessions/{s.id}",
    }
    if notes:
        out["notes"] = {
            "body": s.notes,
            "html": str(render_note(s.notes)),
            "updatedAt": s.notes_updated_at.isoformat() if s.notes_updated_at else None,
            "updatedBy": s.notes_updated_by_name or None,
        }
    return out


def _page(shown: GroupPage) -> dict[str, Any]:
    return {
        "group": _group(shown.group, shown.me),
        "members": [_member(m) for m in shown.members],
        "queue": [_queued(q) for q in shown.queue],
        "hiddenFromQueue": shown.hidden,
        "upcoming": [_session(i.session, i) for i in shown.upcoming],
        "recent": [_session(i.session, i) for i in shown.past],
    }


# -- routes --------------------------------------------------------------------------------------------------


@router.get("/groups", summary="Your reading groups", response_class=JsonResponse)
def my_groups(request: Request, user: SignedIn) -> JsonResponse:
    return _json([_group(g, m) for g, m in _service(request).groups(user.id)])


@router.post(
    "/groups",
    summary="Create a reading group",
    response_class=JsonResponse,
    status_code=201,
    dependencies=CsrfChecked,
)
def create_group(request: Request, user: SignedIn, body: GroupIn) -> JsonResponse:
    group = _call(request, lambda s: s.create(user.id, body.name, body.description))
    return _json(_group(group, _service(request).membership(user.id, group.id)), 201)


@router.get("/groups/{group_id}", summary="A group, as its members see it", response_class=JsonResponse)
def group(request: Request, user: SignedIn, group_id: int) -> JsonResponse:
    return _json(_page(_call(request, lambda s: s.page(user.id, group_id))))


@router.post(
    "/groups/{group_id}/invitations",
    summary="Invite an address (the owner)",
    response_class=JsonResponse,
    status_code=202,
    dependencies=CsrfChecked,
)
def invite(
    request: Request, background: BackgroundTasks, user: SignedIn, group_id: int, body: InviteIn
) -> JsonResponse:
    mail = _call(
        request,
        lambda s: s.invite(
            user.id, group_id, body.email, base_url=link_base_url(request), client=client_address(request)
        ),
    )
    background.add_task(_service(request).deliver, mail)
    return _json({"invited": mail.to}, 202)


def _invitation(i: Invitation) -> dict[str, Any]:
    return {
        "id": i.id,
        "email": i.email or None,  # None: typed by another owner (before a hand-over), not shown
        "invitedBy": i.invited_by_name,
        "createdAt": i.created_at.isoformat(),
        "expiresAt": i.expires_at.isoformat(),
    }


@router.get(
    "/groups/{group_id}/invitations",
    summary="The group's open invitations (the owner)",
    response_class=JsonResponse,
)
def invitations(request: Request, user: SignedIn, group_id: int) -> JsonResponse:
    found = _call(request, lambda s: s.invitations(user.id, group_id))
    return _json([_invitation(i) for i in found])


@router.delete(
    "/groups/{group_id}/invitations/{invitation_id}",
    summary="Withdraw an open invitation (the owner)",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def withdraw(request: Request, user: SignedIn, group_id: int, invitation_id: int) -> JsonResponse:
    _call(request, lambda s: s.withdraw(user.id, group_id, invitation_id))
    return _json({"withdrawn": invitation_id})


@router.post(
    "/groups/{group_id}/queue",
    summary="Queue a paper for the group",
    response_class=JsonResponse,
    status_code=201,
    dependencies=CsrfChecked,
)
def queue_add(request: Request, user: SignedIn, group_id: int, body: QueueIn) -> JsonResponse:
    entry = _call(request, lambda s: s.queue_add(user.id, group_id, body.paper_id, body.note))
    return _json(
        {
            "paperId": entry.paper_id,
            "addedBy": entry.added_by_name,
            "addedAt": entry.added_at.isoformat(),
            "note": entry.note,
            "votes": entry.votes,
        },
        201,
    )


@router.delete(
    "/groups/{group_id}/queue/{paper_id:path}",
    summary="Take a paper off the queue",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def queue_remove(request: Request, user: SignedIn, group_id: int, paper_id: str) -> JsonResponse:
    _call(request, lambda s: s.queue_remove(user.id, group_id, paper_id))
    return _json({"removed": paper_id})


@router.put(
    "/groups/{group_id}/vote",
    summary="Vote for the next paper",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def vote(request: Request, user: SignedIn, group_id: int, body: VoteIn) -> JsonResponse:
    chosen = _call(request, lambda s: s.vote(user.id, group_id, body.paper_id))
    return _json({"vote": chosen})


@router.post(
    "/groups/{group_id}/sessions",
    summary="Schedule a journal-club session (the owner)",
    response_class=JsonResponse,
    status_code=201,
    dependencies=CsrfChecked,
)
def schedule(request: Request, user: SignedIn, group_id: int, body: SessionIn) -> JsonResponse:
    made = _call(
        request, lambda s: s.schedule(user.id, group_id, body.starts_at, body.presenter_id, body.paper_id)
    )
    item = _call(request, lambda s: s.session(user.id, group_id, made.id))
    return _json(_session(made, item, notes=True), 201)


@router.get(
    "/groups/{group_id}/sessions/{session_id}", summary="A session and its notes", response_class=JsonResponse
)
def session(request: Request, user: SignedIn, group_id: int, session_id: int) -> JsonResponse:
    item = _call(request, lambda s: s.session(user.id, group_id, session_id))
    return _json(_session(item.session, item, notes=True))


@router.put(
    "/groups/{group_id}/sessions/{session_id}/notes",
    summary="Edit a session's shared notes",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def notes(request: Request, user: SignedIn, group_id: int, session_id: int, body: NotesIn) -> JsonResponse:
    item = _call(request, lambda s: s.set_notes(user.id, group_id, session_id, body.body))
    return _json(_session(item.session, item, notes=True))


@router.post(
    "/groups/{group_id}/leave", summary="Leave a group", response_class=JsonResponse, dependencies=CsrfChecked
)
def leave(request: Request, user: SignedIn, group_id: int) -> JsonResponse:
    _call(request, lambda s: s.leave(user.id, group_id))
    return _json({"left": group_id})


@router.delete(
    "/groups/{group_id}/members/{member_id}",
    summary="Remove a member (the owner)",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def remove(request: Request, user: SignedIn, group_id: int, member_id: int) -> JsonResponse:
    _call(request, lambda s: s.remove(user.id, group_id, member_id))
    return _json({"removed": member_id})


@router.put(
    "/groups/{group_id}/owner",
    summary="Hand ownership over (the owner)",
    response_class=JsonResponse,
    dependencies=CsrfChecked,
)
def hand_over(request: Request, user: SignedIn, group_id: int, body: OwnerIn) -> JsonResponse:
    _call(request, lambda s: s.hand_over(user.id, group_id, body.user_id))
    return _json({"owner": body.user_id})


@router.get(
    "/groups/{group_id}/recommendations",
    summary="For the group: recent papers ranked on its queue and past sessions, with reasons",
    response_class=JsonResponse,
)
def recommendations(
    request: Request, user: SignedIn, group_id: int, limit: Annotated[int, Query(ge=1, le=100)] = 20
) -> JsonResponse:
    found = _call(request, lambda s: s.for_the_group(user.id, group_id, limit=limit))
    kept, muted = apply_mutes(request, found.items, lambda p: p.paper)
    items = [
        {"paper": paper_object(p.paper), "score": round(p.score, 4), "reasons": list(p.why)} for p in kept
    ]
    hidden = 0 if muted is None or muted.shown else muted.hidden
    return _json({"mode": found.mode, "learntFrom": found.positives, "items": items, "mutedHidden": hidden})
