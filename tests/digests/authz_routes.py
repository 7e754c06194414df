"""The digest pages' state-changing routes for the authorization matrix (see tests/support/authz.py).

Subscribing is open to everyone (double opt-in protects the address); confirming and saving preferences
are authorised by the signed token from the mail, whoever is signed in. All three are CSRF-checked. The
one-click unsubscribe POST is deliberately not in the matrix: RFC 8058 has mail providers post it with no
cookie and no form, so it takes no CSRF token — its signed, single-purpose token is the authorisation,
and it can only stop mail (tests/digests/test_web.py covers it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete

from paperfeed.adapters.store.schema_digests import digest_subscriptions
from paperfeed.domain.digest import Cadence, Preferences, SubscriptionStatus
from tests.support.authz import Actor, Route, World

__all__ = ["ROUTES"]

EVERYONE: Mapping[Actor, int | str] = {"anonymous": 200, "user": 200, "other": 200, "admin": 200}
ADDRESS = "matrix-digest@example.org"
FORM = {
    "cadence": "weekly",
    "send_hour": "9",
    "timezone": "Europe/Berlin",
    "weekday": "2",
    "sections": ["trending"],
    "categories": "",
    "max_items": "12",
}


def _reset(w: World) -> None:
    with w.app.core.store.engine.begin() as conn:
        conn.execute(delete(digest_subscriptions))


def _pending(w: World) -> dict[str, Any]:
    """A pending subscription and the token of its (latest) confirmation link."""
    _reset(w)
    store = w.app.digests.records
    now = datetime.now(UTC)
    created = store.create_subscription(
        ADDRESS, Preferences().checked(), status=SubscriptionStatus.pending, user_id=None, now=now
    )
    stored = store.update_subscription(created.subscription.id, now=now, new_nonce=True)
    assert stored is not None
    assert stored.confirm_nonce is not None
    sub_id = created.subscription.id
    return {
        "id": sub_id,
        "confirm": w.app.mail.signer.sign("confirm", sub_id, stored.confirm_nonce),
        "preferences": w.app.mail.signer.sign("preferences", sub_id),
    }


def _status(w: World, ctx: dict[str, Any]) -> SubscriptionStatus | None:
    found = w.app.digests.records.subscription(ctx["id"])
    return None if found is None else found.subscription.status


def _setup_subscribe(w: World) -> dict[str, Any]:
    _reset(w)
    return {}


ROUTES = [
    Route(
        "subscribe an address",
        "POST",
        "/digest",
        expect=EVERYONE,
        form={"email": ADDRESS, **FORM},
        setup=_setup_subscribe,
        changed=lambda w, ctx: w.app.digests.records.subscription_by_email(ADDRESS) is not None,
    ),
    Route(
        "confirm a subscription (link from the mail)",
        "POST",
        "/digest/confirm",
        expect=EVERYONE,
        form=lambda w, ctx: {"t": ctx["confirm"]},
        setup=_pending,
        changed=lambda w, ctx: _status(w, ctx) == SubscriptionStatus.active,
    ),
    Route(
        "save digest preferences (link from the mail)",
        "POST",
        "/digest/preferences",
        expect=EVERYONE,
        form=lambda w, ctx: {"t": ctx["preferences"], **FORM},
        setup=_pending,
        changed=lambda w, ctx: (
            (found := w.app.digests.records.subscription(ctx["id"])) is not None
            and found.subscription.preferences.cadence == Cadence.weekly
        ),
    ),
]
