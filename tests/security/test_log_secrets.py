"""Secret tokens never reach the logs (issue #41, finding 5): the default access log kept calendar,
invitation, reset, sign-in, confirmation and unsubscribe tokens, in paths and in query strings.

Two checks. Every route of the app is walked: any parameter with a secret's name (in its path or its
query) must be one the redactor knows, and a request target built for it comes out of the redactor
without the secret — so a new route is covered or this fails. Then the real ``paperfeed serve`` is asked
every kind of secret URL (and the sign-in redirects that carry one in ``next``), and its whole output,
uvicorn's access log included, holds none of them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.access_log import REDACTED, SECRET_PATH_PARAMS, SECRET_QUERY_PARAMS, SecretRedactor
from tests.support.routes import endpoints

ROOT = Path(__file__).resolve().parents[2]
SECRET = "S3cr3tT0kenValue"
SECRET_LIKE = {"token", "t", "key", "secret", "sig", "signature", "auth", "password"}
# The routes whose URL carries a credential (the list: calendar, invitation, reset, sign-in,
# confirmation, unsubscribe; and the alert feeds, account deletion and digest preferences).
KNOWN = {
    "/groups/calendar/{token}.ics",
    "/groups/invitations/{token}",
    "/groups/digest/unsubscribe",
    "/rss/alerts/{token}",
    "/atom/alerts/{token}",
    "/reset",
    "/signin/link",
    "/verify",
    "/account/delete",
    "/digest/confirm",
    "/digest/preferences",
    "/digest/unsubscribe",
}


def test_every_route_with_a_secret_in_its_url_is_redacted(tmp_path: Path) -> None:
    app = create_app(lambda: None)  # type: ignore[arg-type, return-value]  # routes only: never started
    redactor = app.state.secret_redactor
    assert isinstance(redactor, SecretRedactor)
    found: set[str] = set()
    for route in endpoints(app.routes):
        dependant = getattr(route, "dependant", None)
        if dependant is None:
            continue
        path_names = {p.name for p in dependant.path_params}
        query_names = {p.alias for p in dependant.query_params}
        assert not (path_names & SECRET_LIKE) - SECRET_PATH_PARAMS, (route.path, path_names)
        assert not (query_names & SECRET_LIKE) - SECRET_QUERY_PARAMS, (route.path, query_names)
        secret_path = path_names & SECRET_PATH_PARAMS
        secret_query = query_names & SECRET_QUERY_PARAMS
        if not secret_path and not secret_query:
            continue
        found.add(route.path)
        path = route.path
        for name in secret_path:
            path = path.replace("{" + name + "}", SECRET)
        query = "&".join(f"{name}={SECRET}" for name in sorted(secret_query))
        for method in sorted(route.methods):
            target = path + (f"?other=1&{query}" if query else "")
            redacted = redactor.target(method, target)
            assert SECRET not in redacted, (method, target, redacted)
            assert REDACTED in redacted
    assert found >= KNOWN, KNOWN - found
    # what is no secret stays as it was
    assert redactor.target("POST", "/groups/invitations/accept") == "/groups/invitations/accept"
    assert redactor.target("GET", "/search?q=token&t2=x") == "/search?q=token&t2=x"
    signin = f"/signin?next={quote('/groups/invitations/' + SECRET, safe='/')}"
    assert SECRET not in redactor.target("GET", signin)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_served_access_log_holds_no_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERFEED_")}
    env.update(
        PAPERFEED_DATA_DIR=str(data),
        PAPERFEED_DEBUG="1",
        PAPERFEED_EMBEDDING_BACKEND="fake",
        PYTHONPATH=str(ROOT / "src"),
    )
    Settings(data_dir=data)  # the folder's settings are the defaults
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "paperfeed", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{base}/signin", timeout=2)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise AssertionError(log.read_text()) from None
                    time.sleep(0.2)
            with httpx.Client(base_url=base, follow_redirects=True, timeout=10) as client:
                for n, target in enumerate(
                    [
                        "/groups/calendar/{s}.ics",
                        "/groups/invitations/{s}",  # anonymous: redirected to /signin?next=…
                        "/rss/alerts/{s}",
                        "/atom/alerts/{s}",
                        "/reset?token={s}",
                        "/signin/link?token={s}",
                        "/verify?token={s}",
                        "/account/delete?token={s}",  # anonymous: redirected to /signin?next=…
                        "/digest/confirm?t={s}",
                        "/digest/preferences?t={s}",
                        "/digest/unsubscribe?t={s}",
                        "/groups/digest/unsubscribe?t={s}",
                    ]
                ):
                    client.get(target.format(s=f"{SECRET}{n}"), headers={"accept": "text/html"})
                client.post(f"/digest/unsubscribe?t={SECRET}x", data={"List-Unsubscribe": "One-Click"})
        finally:
            server.terminate()
            server.wait(30)
    text = log.read_text()
    assert "GET /groups/calendar/[redacted].ics" in text  # the access log is on, and redacted
    assert "GET /reset?token=[redacted]" in text
    assert "/signin?next=/groups/invitations/" in text.replace("%2F", "/")
    assert SECRET not in text
