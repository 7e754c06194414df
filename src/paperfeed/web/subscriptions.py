"""Digest pages: subscribe, confirm, preferences and one-click unsubscribe (admin jobs page: :mod:`.admin`).

Links from mail only ever show a page; the change is made by that page's button (a POST), so mail
scanners that open links change nothing. The one exception is RFC 8058: a POST to the unsubscribe link
(``List-Unsubscribe=One-Click`` in the body, sent by mail providers' "Unsubscribe" buttons, with no
cookies) unsubscribes at once, which is why that route alone is not CSRF-checked — its signed token is
the authorisation, and it can only unsubscribe. Subscribe, confirm and preferences forms are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.responses import HTMLResponse, Response

from paperfeed.domain.accounts import RateLimited, User
from paperfeed.domain.digest import (
    CADENCES,
    MAX_ITEMS,
    PERSONAL_SECTIONS,
    SECTION_TITLES,
    Cadence,
    InvalidPreferences,
    Preferences,
    Section,
    Subscription,
    SubscriptionStatus,
)
from paperfeed.domain.digest_links import InvalidToken

from .deps import app_of as _app
from .errors import error_response
from .forms import read_form
from .rendering import NO_STORE, page
from .security import client_address, current_user, link_base_url, verify_csrf

__all__ = ["LEASE_NAMES", "router"]

router = APIRouter(include_in_schema=False)

CsrfChecked = Depends(verify_csrf)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
CADENCE_CHOICES = {
    Cadence.daily: "Every day",
    Cadence.weekdays: "Weekdays (Monday to Friday)",
    Cadence.weekly: "Once a week",
}
# The locks the admin's jobs page shows (the scheduler's, each job's, the digest sender's).
LEASE_NAMES = ("scheduler", "job:daily", "job:digests", "digest-send")


def _page(
    request: Request,
    name: str,
    title: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A ``digest/`` page through :func:`~.rendering.page`: never cached (its URL and form carry link
    tokens; the baseline ``Referrer-Policy: same-origin`` keeps them from other sites)."""
    values = {
        "error": None,
        "done": None,
        "weekdays": WEEKDAYS,
        "cadences": CADENCE_CHOICES,
        "section_titles": {s.value: SECTION_TITLES[s] for s in Section},
        "personal": {s.value for s in PERSONAL_SECTIONS},
        "max_items": MAX_ITEMS,
        **context,
    }
    return page(
        request,
        f"digest/{name}.html",
        title,
        nav="digest",
        status=status,
        cache=NO_STORE,
        headers=headers,
        **values,
    )


def _form_prefs(form: Mapping[str, Any], sections: list[str]) -> Preferences:
    """Read the preferences form; :class:`InvalidPreferences` names the first bad field."""

    def number(name: str, default: int) -> int:
        raw = str(form.get(name, "") or "").strip()
        if not raw:
            return default
        if not raw.lstrip("-").isdigit():
            raise InvalidPreferences(name, "a whole number")
        return int(raw)

    cadence = str(form.get("cadence", Cadence.daily.value))
    if cadence not in CADENCES:
        raise InvalidPreferences("cadence", f"choose one of {', '.join(CADENCES)}")
    categories = str(form.get("categories", "") or "").replace(",", " ").split()
    return Preferences(
        cadence=Cadence(cadence),
        send_hour=number("send_hour", 7),
        timezone=str(form.get("timezone", "UTC") or "UTC").strip(),
        weekday=number("weekday", 0),
        sections=tuple(sections),  # type: ignore[arg-type]  # checked() validates each name
        categories=tuple(categories),
        max_items=number("max_items", 20),
    )


def _values(prefs: Preferences) -> dict[str, Any]:
    """What the preferences form shows."""
    return {
        "cadence": prefs.cadence.value,
        "send_hour": prefs.send_hour,
        "timezone": prefs.timezone,
        "weekday": prefs.weekday,
        "sections": [s.value for s in prefs.sections],
        "categories": " ".join(prefs.categories),
        "max_items": prefs.max_items,
    }


def _raw_values(form: Mapping[str, Any], sections: list[str]) -> dict[str, Any]:
    """The form as submitted, to show it again with an error."""
    return {
        "cadence": str(form.get("cadence", "daily")),
        "send_hour": str(form.get("send_hour", "7")),
        "timezone": str(form.get("timezone", "UTC")),
        "weekday": str(form.get("weekday", "0")),
        "sections": sections,
        "categories": str(form.get("categories", "")),
        "max_items": str(form.get("max_items", "20")),
    }


def _problem(exc: InvalidPreferences) -> str:
    labels = {
        "email": "Email",
        "cadence": "How often",
        "send_hour": "Hour",
        "timezone": "Time zone",
        "weekday": "Day of the week",
        "sections": "Sections",
        "categories": "Categories",
        "max_items": "Papers per mail",
    }
    return f"{labels.get(exc.field, exc.field)}: {exc.reason}."


def _invalid_link(request: Request, exc: InvalidToken) -> HTMLResponse:
    return _page(
        request,
        "message",
        "Link not valid",
        status=400,
        heading="This link does not work",
        message=f"{str(exc).capitalize()}. Copy the whole link from the mail, or subscribe again.",
        links=[("/digest", "Subscribe again")],
    )


async def _form(request: Request) -> tuple[Mapping[str, Any], list[str]]:
    data = await read_form(request)
    sections = [str(v) for v in data.getlist("sections")]
    return {k: v for k, v in data.items() if isinstance(v, str)}, sections


# -- subscribing ----------------------------------------------------------------------------------------


def _user(request: Request) -> User | None:
    return current_user(request)


@router.get("/digest", response_class=HTMLResponse)
def subscribe_form(request: Request) -> HTMLResponse:
    user = _user(request)
    existing: Subscription | None = None
    manage_url = None
    if user is not None:
        subscriptions = _app(request).digests.subscriptions
        existing = subscriptions.of_user(user.id) or subscriptions.by_email(user.email)
        if existing is not None and existing.status == SubscriptionStatus.active:
            links = _app(request).digests.subscriptions.links(existing, link_base_url(request))
            manage_url = links.preferences
    return _page(
        request,
        "subscribe",
        "Papers by email",
        email=user.email if user is not None else "",
        values=_values(Preferences()),
        signed_in=user is not None,
        verified=user is not None and user.email_verified,
        manage_url=manage_url,
        missing=[s.value for s in _app(request).digests.sender.missing_sections()],
    )


@router.post("/digest", response_class=HTMLResponse, dependencies=[CsrfChecked])
async def subscribe(request: Request, background: BackgroundTasks) -> Response:
    """Same reply for a new, pending or subscribed address; any mail goes out after the reply."""
    form, sections = await _form(request)
    user = _user(request)
    email = str(form.get("email", ""))
    common: dict[str, Any] = {
        "email": email,
        "signed_in": user is not None,
        "verified": user is not None and user.email_verified,
        "manage_url": None,
        "missing": [s.value for s in _app(request).digests.sender.missing_sections()],
    }
    try:
        prefs = _form_prefs(form, sections)
        result = _app(request).digests.subscriptions.subscribe(
            email,
            prefs,
            base_url=link_base_url(request),
            client=client_address(request),
            user=user,
            defer=background.add_task,
        )
    except RateLimited as exc:
        headers = {"Retry-After": str(exc.retry_after)}
        if "text/html" not in request.headers.get("accept", ""):
            return error_response(request, 429, str(exc), headers=headers)
        return _page(
            request,
            "subscribe",
            "Papers by email",
            status=429,
            headers=headers,
            error=str(exc),
            values=_raw_values(form, sections),
            **common,
        )
    except InvalidPreferences as exc:
        return _page(
            request,
            "subscribe",
            "Papers by email",
            status=400,
            error=_problem(exc),
            values=_raw_values(form, sections),
            **common,
        )
    if result.outcome == "subscribed" and result.subscription is not None:
        links = _app(request).digests.subscriptions.links(result.subscription, link_base_url(request))
        return _page(
            request,
            "message",
            "Subscribed",
            heading="You are subscribed",
            message=f"Digests will go to {result.subscription.email}. Every mail has a link to change "
            "or stop them.",
            links=[(links.preferences, "Change your digest")],
        )
    if _app(request).mail.kept:  # no mail server: the confirmation waits in the outbox (never shown here)
        return _page(
            request,
            "message",
            "Message kept for the administrator",
            heading="Message kept for the administrator",
            message="If that address can get a digest, a mail with a confirmation link has been written. "
            "No mail server is configured on this server, so it was not sent: the administrator finds it "
            "with the command paperfeed mail outbox and can pass the link on. Nothing is sent until the link "
            "is used.",
            links=[("/", "Back to today's papers")],
        )
    return _page(
        request,
        "message",
        "Check your inbox",
        heading="Check your inbox",
        message="If that address can get a digest, a mail with a confirmation link is on its way. "
        "Nothing is sent until the link is used.",
        links=[("/", "Back to today's papers")],
    )


# -- confirming -----------------------------------------------------------------------------------------


@router.get("/digest/confirm", response_class=HTMLResponse)
def confirm_page(request: Request, t: str = "") -> HTMLResponse:
    try:
        sub = _app(request).digests.subscriptions.pending_confirmation(t)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    return _page(request, "confirm", "Confirm your digest", token=t, subscription=sub)


@router.post("/digest/confirm", response_class=HTMLResponse, dependencies=[CsrfChecked])
async def confirm(request: Request) -> HTMLResponse:
    form, _ = await _form(request)
    token = str(form.get("t", ""))
    try:
        sub = _app(request).digests.subscriptions.confirm(token)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    links = _app(request).digests.subscriptions.links(sub, link_base_url(request))
    return _page(
        request,
        "message",
        "Subscribed",
        heading="You are subscribed",
        message=f"Your first digest goes to {sub.email} at the next time you chose. Every mail has a "
        "link to change or stop it.",
        links=[(links.preferences, "Change your digest"), ("/", "Back to today's papers")],
    )


# -- preferences ----------------------------------------------------------------------------------------


@router.get("/digest/preferences", response_class=HTMLResponse)
def preferences_page(request: Request, t: str = "") -> HTMLResponse:
    try:
        sub = _app(request).digests.subscriptions.by_link("preferences", t)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    return _preferences(request, sub, t)


def _preferences(
    request: Request,
    sub: Subscription,
    token: str,
    *,
    values: dict[str, Any] | None = None,
    status: int = 200,
    error: str | None = None,
    done: str | None = None,
) -> HTMLResponse:
    links = _app(request).digests.subscriptions.links(sub, link_base_url(request))
    return _page(
        request,
        "preferences",
        "Your digest",
        status=status,
        token=token,
        subscription=sub,
        values=values or _values(sub.preferences),
        has_account=sub.user_id is not None,
        unsubscribe_url=links.unsubscribe,
        missing=[s.value for s in _app(request).digests.sender.missing_sections()],
        error=error,
        done=done,
    )


@router.post("/digest/preferences", response_class=HTMLResponse, dependencies=[CsrfChecked])
async def save_preferences(request: Request) -> HTMLResponse:
    form, sections = await _form(request)
    token = str(form.get("t", ""))
    service = _app(request).digests.subscriptions
    try:
        sub = service.by_link("preferences", token)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    try:
        updated = service.update_preferences(token, _form_prefs(form, sections))
    except InvalidPreferences as exc:
        return _preferences(
            request, sub, token, values=_raw_values(form, sections), status=400, error=_problem(exc)
        )
    return _preferences(request, updated, token, done="Saved. The next digest follows these settings.")


# -- unsubscribing --------------------------------------------------------------------------------------


@router.get("/digest/unsubscribe", response_class=HTMLResponse)
def unsubscribe_page(request: Request, t: str = "") -> HTMLResponse:
    """Shows what the link would do; changes nothing (mail scanners open links)."""
    try:
        sub = _app(request).digests.subscriptions.by_link("unsubscribe", t)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    return _page(request, "unsubscribe", "Unsubscribe", token=t, subscription=sub)


@router.post("/digest/unsubscribe", response_class=HTMLResponse)
async def unsubscribe(request: Request, t: str = "") -> Response:
    """RFC 8058 one-click (``List-Unsubscribe=One-Click`` posted to the link) and the page's button.

    No CSRF check by design: the signed token authorises it, and it can only stop mail."""
    token = t
    if not token and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        form, _ = await _form(request)
        token = str(form.get("t", ""))
    try:
        sub = _app(request).digests.subscriptions.unsubscribe(token)
    except InvalidToken as exc:
        return _invalid_link(request, exc)
    links = _app(request).digests.subscriptions.links(sub, link_base_url(request))
    return _page(
        request,
        "message",
        "Unsubscribed",
        heading="You are unsubscribed",
        message=f"No more digests go to {sub.email}. Changed your mind? You can subscribe again from "
        "your preferences.",
        links=[(links.preferences, "Open your preferences"), ("/", "Back to today's papers")],
    )
