"""Template globals of the "queue for a group" control, under every card and on paper pages.

For a signed-in reader in a group: their groups, where a paper is queued already (one read per request
for the whole page, not one per card), whether the page follows the queueing of that very paper (the
control then opens and says so), and the page's address to come back to without that one-time message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import Request
from jinja2 import pass_context

from paperfeed.domain.accounts import User
from paperfeed.domain.groups import MAX_QUEUE_NOTE_CHARS, Group, Membership

from ..security import current_user, here, template_request
from .forms import groups_of

__all__ = ["TEMPLATE_GLOBALS"]

_MINE = "pf_my_groups"
_QUEUED = "pf_my_groups_queued"


def _signed_in(request: Request) -> User | None:
    try:
        return current_user(request)
    except Exception:  # a bad Bearer token on a page: the page renders without buttons
        return None


def _state(request: Request) -> dict[str, Any]:
    state: dict[str, Any] = request.scope.setdefault("state", {})
    return state


@pass_context
def _my_groups(ctx: Any) -> list[tuple[Group, Membership]]:
    """The signed-in reader's groups (once per request); [] for anonymous pages."""
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return []
    state = _state(request)
    if _MINE not in state:
        state[_MINE] = groups_of(request).groups(user.id)
    mine: list[tuple[Group, Membership]] = state[_MINE]
    return mine


@pass_context
def _queued_in(ctx: Any, paper_id: str) -> frozenset[int]:
    """The ids of the reader's groups whose queue holds ``paper_id`` (one read per request)."""
    request = template_request(ctx)
    user = _signed_in(request)
    if user is None:
        return frozenset()
    state = _state(request)
    if _QUEUED not in state:
        state[_QUEUED] = groups_of(request).queued(user.id)
    queued: Mapping[int, frozenset[str]] = state[_QUEUED]
    return frozenset(g for g, ids in queued.items() if paper_id in ids)


@pass_context
def _just_queued(ctx: Any, paper_id: str) -> bool:
    """Whether this page follows the queueing of ``paper_id`` (a redirect's ``done=queued``)."""
    params = template_request(ctx).query_params
    return params.get("done") == "queued" and params.get("queued") == paper_id


@pass_context
def _page_here(ctx: Any) -> str:
    return here(template_request(ctx))


TEMPLATE_GLOBALS: Mapping[str, Any] = {
    "my_groups": _my_groups,
    "queued_in": _queued_in,
    "just_queued": _just_queued,
    "page_here": _page_here,
    "queue_note_max": MAX_QUEUE_NOTE_CHARS,
}
