"""The accounts' state-changing routes for the authorization matrix (see tests/support/authz.py).

Three kinds: open to everyone (sign-up, sign-in, mailed links: anonymous must be able to use them, and a
signed-in person doing it again is harmless); acting on the caller's own account (anonymous is sent to
sign in); acting on ``user``'s API token or on moderation (only the owner, or only admins).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from paperfeed.domain.accounts import LinkPurpose
from paperfeed.services.accounts import hash_secret
from tests.support.authz import PASSWORD, SIGNIN, Actor, Route, World

Outcomes = dict[Actor, int | str]  # expected status (or SIGNIN) per actor

__all__ = ["ROUTES"]

EVERYONE_PAGE: Outcomes = {"anonymous": 200, "user": 200, "other": 200, "admin": 200}
EVERYONE_REDIRECT: Outcomes = {"anonymous": 303, "user": 303, "other": 303, "admin": 303}
OWN_PAGE: Outcomes = {"anonymous": SIGNIN, "user": 303, "other": 303, "admin": 303}
OWNER_ONLY_PAGE: Outcomes = {"anonymous": SIGNIN, "user": 303, "other": 404, "admin": 404}
OWNER_ONLY_API: Outcomes = {"anonymous": 401, "user": 204, "other": 404, "admin": 404}
ADMIN_PAGE: Outcomes = {"anonymous": SIGNIN, "user": 403, "other": 403, "admin": 303}


def _link(w: World, purpose: LinkPurpose) -> dict[str, Any]:
    """A fresh one-time link for a throw-away account (as if it had been mailed)."""
    person = w.new_user(f"link-{secrets.token_hex(4)}@example.org", password=False)
    token = secrets.token_urlsafe(32)
    now = w.app.readers.accounts.clock()
    w.app.readers.accounts.store.add_link(
        hash_secret(token), person.id, purpose, now, now + timedelta(minutes=10)
    )
    return {"token": token, "person": person}


def _users_token(w: World) -> dict[str, Any]:
    token, _ = w.app.readers.accounts.create_api_token(w.users["user"], "matrix victim")
    return {"token_id": token.id}


def _token_gone(w: World, ctx: dict[str, Any]) -> bool:
    return all(t.id != ctx["token_id"] for t in w.app.readers.accounts.list_api_tokens(w.users["user"]))


def _shown_paper(w: World) -> dict[str, Any]:
    paper = w.paper_ids[-1]
    w.app.readers.accounts.unhide_paper(paper)
    return {"paper": paper}


def _hidden_paper(w: World) -> dict[str, Any]:
    paper = w.paper_ids[-1]
    w.app.readers.accounts.hide_paper(paper, reason="matrix")
    return {"paper": paper}


def _is_hidden(w: World, ctx: dict[str, Any]) -> bool:
    return any(h.paper_id == ctx["paper"] for h in w.app.readers.accounts.hidden_papers())


def _deletion_link(w: World) -> dict[str, Any]:
    """A password-less throwaway account with a mailed account-deletion link (as if it had asked)."""
    return _link(w, "delete")


def _person_gone(w: World, ctx: dict[str, Any]) -> bool:
    return w.app.readers.accounts.store.user_by_id(ctx["person"].id) is None


def _user_gone(w: World, ctx: dict[str, Any]) -> bool:
    return w.app.readers.accounts.store.user_by_id(w.users["user"].id) is None


def _visible_victim(w: World) -> dict[str, Any]:
    victim = w.new_user("victim@example.org", password=False)
    w.app.readers.accounts.unhide_user(victim.id)
    return {"victim": victim.id}


def _hidden_victim(w: World) -> dict[str, Any]:
    victim = w.new_user("victim@example.org", password=False)
    w.app.readers.accounts.hide_user(victim.id)
    return {"victim": victim.id}


def _victim_hidden(w: World, ctx: dict[str, Any]) -> bool:
    stored = w.app.readers.accounts.store.user_by_id(ctx["victim"])
    return stored is not None and stored.hidden


ROUTES: list[Route] = [
    # open to everyone
    Route(
        "sign up",
        "POST",
        "/signup",
        EVERYONE_PAGE,
        form=lambda w, c: {"email": f"new-{secrets.token_hex(4)}@example.org"},
    ),
    Route(
        "sign in with a password",
        "POST",
        "/signin",
        EVERYONE_REDIRECT,
        setup=lambda w: {"email": w.new_user("signin@example.org").email},
        form=lambda w, c: {"email": c["email"], "password": PASSWORD},
    ),
    Route(
        "ask for a sign-in link", "POST", "/signin/email", EVERYONE_PAGE, form={"email": "signin@example.org"}
    ),
    Route(
        "sign in with a link",
        "POST",
        "/signin/link",
        EVERYONE_REDIRECT,
        setup=lambda w: _link(w, "signin"),
        form=lambda w, c: {"token": c["token"]},
    ),
    Route(
        "confirm an address",
        "POST",
        "/verify",
        EVERYONE_REDIRECT,
        setup=lambda w: _link(w, "verify"),
        form=lambda w, c: {"token": c["token"]},
    ),
    Route(
        "resend the confirmation",
        "POST",
        "/verify/resend",
        EVERYONE_PAGE,
        form={"email": "signin@example.org"},
    ),
    Route("ask for a password reset", "POST", "/forgot", EVERYONE_PAGE, form={"email": "signin@example.org"}),
    Route(
        "reset a password",
        "POST",
        "/reset",
        EVERYONE_REDIRECT,
        setup=lambda w: _link(w, "reset"),
        form=lambda w, c: {"token": c["token"], "password": "a new password"},
    ),
    Route("sign out", "POST", "/signout", EVERYONE_REDIRECT),
    # the caller's own account
    Route("change display name", "POST", "/account/profile", OWN_PAGE, form={"display_name": "Matrix"}),
    Route(
        "change password",
        "POST",
        "/account/password",
        OWN_PAGE,
        form={"current": PASSWORD, "password": PASSWORD},  # the same: later requests still know it
    ),
    Route(
        "create a token (page)",
        "POST",
        "/account/tokens",
        {"anonymous": SIGNIN, "user": 201, "other": 201, "admin": 201},
        form={"name": "matrix"},
    ),
    Route("sign out everywhere", "POST", "/account/signout-everywhere", OWN_PAGE, form={}),
    Route(
        "create a token (API)",
        "POST",
        "/api/tokens",
        {"anonymous": 401, "user": 201, "other": 201, "admin": 201},
        json={"name": "matrix"},
        bearer={"user": 403, "other": 403, "admin": 403},  # a token cannot mint tokens (issue #12)
    ),
    # the caller's own data (routes take no account id: nobody can name someone else's account)
    Route(
        "download my data",
        "POST",
        "/account/export",
        {"anonymous": SIGNIN, "user": 200, "other": 200, "admin": 200},
        form={},
    ),
    # Deleting for real would delete the matrix's own people, so: a wrong password must delete nothing
    # (tests/accounts/test_account_data.py deletes for real), and a mailed deletion link of someone else
    # must not work for anyone (they all have passwords, and the link is not theirs).
    Route(
        "delete my account with a wrong password",
        "POST",
        "/account/delete",
        {"anonymous": SIGNIN, "user": 400, "other": 400, "admin": 400},
        form={"password": "not the password"},
        changed=_user_gone,
    ),
    Route(
        "delete an account with its owner's mailed link",
        "POST",
        "/account/delete",
        {"anonymous": SIGNIN, "user": 400, "other": 400, "admin": 400},
        setup=_deletion_link,
        form=lambda w, c: {"token": c["token"]},
        changed=_person_gone,
    ),
    Route(
        "mail me an account-deletion link (accounts with a password type it instead)",
        "POST",
        "/account/delete/mail",
        {"anonymous": SIGNIN, "user": 400, "other": 400, "admin": 400},
        form={},
    ),
    # someone's token
    Route(
        "revoke a token (page)",
        "POST",
        lambda w, c: f"/account/tokens/{c['token_id']}/revoke",
        OWNER_ONLY_PAGE,
        setup=_users_token,
        changed=_token_gone,
    ),
    Route(
        "revoke a token (API)",
        "DELETE",
        lambda w, c: f"/api/tokens/{c['token_id']}",
        OWNER_ONLY_API,
        setup=_users_token,
        changed=_token_gone,
    ),
    # moderation
    Route(
        "hide a paper (page)",
        "POST",
        "/admin/papers/hide",
        ADMIN_PAGE,
        setup=_shown_paper,
        form=lambda w, c: {"paper_id": c["paper"], "reason": "matrix"},
        changed=_is_hidden,
    ),
    Route(
        "show a paper again (page)",
        "POST",
        "/admin/papers/unhide",
        ADMIN_PAGE,
        setup=_hidden_paper,
        form=lambda w, c: {"paper_id": c["paper"]},
        changed=lambda w, c: not _is_hidden(w, c),
    ),
    Route(
        "hide a paper (API)",
        "POST",
        "/api/admin/hidden-papers",
        {"anonymous": 401, "user": 403, "other": 403, "admin": 201},
        setup=_shown_paper,
        json=lambda w, c: {"paper_id": c["paper"], "reason": "matrix"},
        changed=_is_hidden,
    ),
    Route(
        "show a paper again (API)",
        "DELETE",
        lambda w, c: f"/api/admin/hidden-papers/{c['paper']}",
        {"anonymous": 401, "user": 403, "other": 403, "admin": 204},
        setup=_hidden_paper,
        changed=lambda w, c: not _is_hidden(w, c),
    ),
    Route(
        "hide a user",
        "POST",
        lambda w, c: f"/admin/users/{c['victim']}/hide",
        ADMIN_PAGE,
        setup=_visible_victim,
        changed=_victim_hidden,
    ),
    Route(
        "show a user again",
        "POST",
        lambda w, c: f"/admin/users/{c['victim']}/unhide",
        ADMIN_PAGE,
        setup=_hidden_victim,
        changed=lambda w, c: not _victim_hidden(w, c),
    ),
]
