"""Administrators' pages: hiding papers and readers (``/admin``), jobs and digests (``/admin/jobs``).

Pages only show; every change is a POST form checked by :func:`~.security.verify_csrf` that redirects back
(303). The same moderation for scripts is in the JSON API (:mod:`.auth`, ``/api/admin/...``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from paperfeed.domain.accounts import AccountError, NotFound
from paperfeed.domain.embedding_claims import describe_workers
from paperfeed.domain.supervision import describe_supervisors
from paperfeed.services.jobs import holder_is_dead

from . import rendering
from .auth import account_page, paper_id_of
from .deps import AppDep, accounts_of
from .rendering import NO_STORE
from .security import Admin, verify_csrf
from .subscriptions import LEASE_NAMES

if TYPE_CHECKING:
    from paperfeed.bootstrap import App

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
CsrfChecked = Depends(verify_csrf)
_JOBS_DONE = {"interrupted": "Marked {n} run{s} as interrupted."}


# -- moderation -----------------------------------------------------------------------------------------


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, admin: Admin) -> HTMLResponse:
    return _moderation(request, admin)


def _moderation(request: Request, admin: Admin, status: int = 200, error: str | None = None) -> HTMLResponse:
    accounts = accounts_of(request)
    return account_page(
        request,
        "admin",
        "Administration",
        status=status,
        users=accounts.list_users(),
        hidden=accounts.hidden_papers(),
        me=admin,
        error=error,
    )


@router.post("/admin/papers/hide", response_model=None, dependencies=[CsrfChecked])
def admin_hide_paper(
    request: Request,
    admin: Admin,
    paper_id: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=600)] = "",
) -> Response:
    try:
        accounts_of(request).hide_paper(paper_id_of(paper_id), by=admin, reason=reason)
    except AccountError as exc:
        return _moderation(request, admin, 404 if isinstance(exc, NotFound) else 400, str(exc))
    return RedirectResponse("/admin?done=hidden", status_code=303)


@router.post("/admin/papers/unhide", response_model=None, dependencies=[CsrfChecked])
def admin_unhide_paper(
    request: Request, admin: Admin, paper_id: Annotated[str, Form(max_length=100)] = ""
) -> Response:
    try:
        found = accounts_of(request).unhide_paper(paper_id_of(paper_id))
    except AccountError as exc:
        return _moderation(request, admin, 400, str(exc))
    if not found:
        return _moderation(request, admin, 404, f"Paper {paper_id.strip()[:80]} is not hidden.")
    return RedirectResponse("/admin?done=hidden", status_code=303)


@router.post("/admin/users/{user_id}/hide", response_model=None, dependencies=[CsrfChecked])
def admin_hide_user(request: Request, admin: Admin, user_id: int) -> Response:
    try:
        accounts_of(request).hide_user(user_id, by=admin)
    except AccountError as exc:
        return _moderation(request, admin, 404 if isinstance(exc, NotFound) else 400, str(exc))
    return RedirectResponse("/admin?done=hidden", status_code=303)


@router.post("/admin/users/{user_id}/unhide", response_model=None, dependencies=[CsrfChecked])
def admin_unhide_user(request: Request, admin: Admin, user_id: int) -> Response:
    try:
        accounts_of(request).unhide_user(user_id)
    except NotFound as exc:
        return _moderation(request, admin, 404, str(exc))
    return RedirectResponse("/admin?done=hidden", status_code=303)


# -- jobs and digests -----------------------------------------------------------------------------------


@router.get("/admin/jobs", response_class=HTMLResponse)
def admin_jobs(request: Request, admin: Admin, app: AppDep, n: int = 0) -> HTMLResponse:
    """What runs: the processes ``paperfeed run`` supervises, how far embedding has come and what the
    indexer is doing, the topics' build, the recent job runs (scheduled and by hand, such as
    ``paperfeed topics build``), locks, subscriptions and the send ledger. Reads only: a run whose process
    is gone is shown as such, and the page's button (:func:`interrupt_dead_runs`) records it as
    interrupted."""
    jobs, topics = app.maintenance.jobs, app.catalogue.topics
    runs = jobs.recent(limit=50)
    build = topics.current_build()
    done = request.query_params.get("done", "")
    message = _JOBS_DONE[done].format(n=n, s="" if n == 1 else "s") if done in _JOBS_DONE else None
    return rendering.page(
        request,
        "digest/admin_jobs.html",
        "Jobs and digests",
        nav="admin",
        cache=NO_STORE,
        done=message,
        runs=runs,
        dead={run.id for run in runs if run.status == "running" and holder_is_dead(run.holder)},
        ledger=app.digests.sender.ledger_counts(),
        subscriptions=app.digests.subscriptions.counts(),
        leases=[(name, jobs.lease(name)) for name in LEASE_NAMES],
        supervisors=describe_supervisors(app.maintenance.supervisors.read_all(), holder_is_dead),
        indexing=app.indexes.status.status(),
        workers=_embedding_workers(app),
        build=build,
        unplaced=topics.unplaced(build) if build is not None else 0,
    )


def _embedding_workers(app: App) -> list[str]:
    """The ``paperfeed index`` processes sharing the backlog (docs/scaling.md), as ``jobs status`` says."""
    claims = app.indexes.claims
    lines = describe_workers(claims.workers(), claims.holdings(), datetime.now(UTC), holder_is_dead)
    return [line.strip() for line in lines]


@router.post("/admin/jobs/interrupt-dead", response_model=None, dependencies=[CsrfChecked])
def interrupt_dead_runs(admin: Admin, app: AppDep) -> Response:
    """Record the runs whose process is gone (killed, machine restarted) as interrupted."""
    count = app.maintenance.jobs.interrupt_dead()
    return RedirectResponse(f"/admin/jobs?done=interrupted&n={count}", status_code=303)
