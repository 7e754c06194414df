"""The one way every form of the reading groups' pages is handled (issue #40 item 7).

A form posts, the group service makes the change (and decides who may: the route only parses), and the
reader is sent back (303) to the form's safe ``next`` or the page it came from, with a ``done`` key naming
the message to show. A refusal is shown where it happened instead of replacing the page: the form's own
page is rendered again with the error beside that form and what the reader typed kept in it
(:class:`FormError`), with the status the refusal deserves — 400 for bad input, 404 for a paper id that
names no paper (a member learns that), 429 with ``Retry-After`` past a limit. Only what a reader may not
know about stays a whole page: a group they are not in is the same 404 as an unknown id, and a member
asking for an owner's action gets the 403 page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from typing import TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from paperfeed.domain.accounts import RateLimited
from paperfeed.domain.groups import GroupForbidden, GroupNotFound, InvalidGroupInput, UnknownPaper
from paperfeed.services.groups import GroupService

from ..deps import app_of
from ..rendering import error_page
from ..security import redirect_back

__all__ = ["PRIVATE", "FormError", "Render", "groups_of", "problem", "submit"]

PRIVATE = "private, no-store"  # every answer of the family depends on who asks
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FormError:
    """A refused form, as its page shows it: which form, the message, the field it names, and what the
    reader typed (to fill the form in again)."""

    form: str
    message: str
    field: str | None = None
    values: Mapping[str, str] = _field(default_factory=dict)

    def value(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)


Render = Callable[[FormError, int], HTMLResponse]  # the form's page again, with the error, at a status


def groups_of(request: Request) -> GroupService:
    return app_of(request).readers.groups


def problem(request: Request, exc: Exception) -> HTMLResponse:
    """The whole-page answer to what a form cannot show: an unknown (or not one's own) group, a 403."""
    if isinstance(exc, GroupNotFound):
        status, heading = 404, "Not found"
    elif isinstance(exc, GroupForbidden):
        status, heading = 403, "Not allowed"
    else:
        status, heading = 400, "That did not work"
    return error_page(request, status, heading, str(exc), headers={"Cache-Control": PRIVATE})


def submit(
    request: Request,
    change: Callable[[GroupService], T],
    *,
    form: str,
    back_to: str | Callable[[T], str],
    done: str,
    values: Mapping[str, str] | None = None,
    render: Render | None = None,
    next_url: str = "",
    shown: Callable[[T], Mapping[str, str]] | None = None,
) -> Response:
    """Make one change through the group service, then 303 to ``next_url`` (if safe) or ``back_to``.

    A refusal is ``render``-ed on the form's page (the error beside form ``form``, ``values`` kept), or,
    for a form without a page of its own to show it on, the error page; ``shown`` adds what the page
    shows about the change (e.g. the paper just queued)."""
    try:
        result = change(groups_of(request))
    except UnknownPaper as exc:
        return _again(request, FormError(form, str(exc), exc.field, values or {}), 404, render, exc)
    except (GroupNotFound, GroupForbidden) as exc:
        return problem(request, exc)
    except InvalidGroupInput as exc:
        return _again(request, FormError(form, str(exc), exc.field, values or {}), 400, render, exc)
    except RateLimited as exc:
        response = _again(request, FormError(form, str(exc), None, values or {}), 429, render, exc)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    target = back_to(result) if callable(back_to) else back_to
    return redirect_back(next_url, target, done, shown(result) if shown is not None else None)


def _again(
    request: Request, error: FormError, status: int, render: Render | None, exc: Exception
) -> HTMLResponse:
    if render is None:
        page = error_page(request, status, "That did not work", str(exc), headers={"Cache-Control": PRIVATE})
        return page
    try:
        return render(error, status)
    except (GroupNotFound, GroupForbidden) as gone:  # the group went meanwhile
        return problem(request, gone)
