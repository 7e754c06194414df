"""The real app on a fresh real SQLite store, with mail going to a real recording SMTP server (aiosmtpd).

``site`` is the app under Starlette's TestClient (lifespan runs: resources come from the composition
root as in production); ``app`` is a second App on the same data folder for direct service calls and
database checks. A few synthetic papers (``data/papers.jsonl``) are imported by the real import code.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.sources.jsonl_file import JsonlFileSource
from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.schema_topics import topics
from paperfeed.bootstrap import App, build_app
from paperfeed.settings import Settings, SettingsModel
from paperfeed.web import create_app
from tests.support.authz import PASSWORD, csrf_from
from tests.support.smtp_server import SmtpTestServer

PAPERS = Path(__file__).resolve().parent / "data" / "papers.jsonl"
PAPER_IDS = ["2501.00101", "2501.00102", "2501.00103", "2501.00104"]

__all__ = ["PAPERS", "PAPER_IDS", "PASSWORD", "Mailbox", "csrf_from", "fill"]


def make_settings(data_dir: Path, smtp: SmtpTestServer, **overrides: object) -> Settings:
    return Settings(data_dir=data_dir, embedding_backend="fake", **smtp.settings(), **overrides)  # type: ignore[arg-type]


def load_papers(app: App) -> None:
    summary = app.sources.ingest.run(JsonlFileSource(PAPERS, batch_size=app.settings.batch_size))
    assert summary.rejected == 0, summary.rejects


@pytest.fixture
def settings(tmp_path: Path, smtp_server: SmtpTestServer) -> Settings:
    return make_settings(tmp_path / "data", smtp_server)


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    container = build_app(settings)
    load_papers(container)
    yield container
    container.close()


@contextmanager
def browser(settings: SettingsModel) -> Iterator[TestClient]:
    """A client with its own cookie jar, like one browser (the app under it shares the store)."""
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        yield client


@pytest.fixture
def site(app: App, settings: Settings) -> Iterator[TestClient]:
    with browser(settings) as client:
        yield client


@pytest.fixture
def new_browser(app: App, settings: Settings) -> Iterator[Callable[[], TestClient]]:
    """Opens more browsers on the same site (another person, another device)."""
    with ExitStack() as stack:
        yield lambda: stack.enter_context(browser(settings))


def fill(client: TestClient, page: str, action: str, data: dict[str, str], **headers: str) -> httpx.Response:
    """Open ``page`` as a browser would, then post ``data`` to ``action`` with that page's CSRF token."""
    got = client.get(page, headers={"accept": "text/html"})
    assert got.status_code in (200, 400), (page, got.status_code)
    form = {**data, "csrf_token": csrf_from(got.text)}
    # starlette's TestClient answers with httpx2's Response where httpx2 is installed (else unused)
    return client.post(action, data=form, headers={"accept": "text/html", **headers})  # type: ignore[return-value, unused-ignore]


@dataclass
class Mailbox:
    """What the recording SMTP server received, read as a person reads their inbox."""

    server: SmtpTestServer

    def wait(self, to: str, subject_has: str, *, count: int = 1, timeout: float = 10.0) -> list[str]:
        """The text of the first ``count`` mails to ``to`` whose subject has ``subject_has``."""
        deadline = time.monotonic() + timeout
        while True:
            found = [m.text for m in self.server.to(to) if subject_has.lower() in m.subject.lower()]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                subjects = [m.subject for m in self.server.to(to)]
                pytest.fail(f"no mail to {to} about {subject_has!r} within {timeout:g} s (got {subjects})")
            time.sleep(0.02)

    def link(self, to: str, subject_has: str, path: str, *, index: int = -1) -> str:
        """The path and query of the link to ``path`` in a mail (the last such mail by default)."""
        texts = self.wait(to, subject_has)
        urls = re.findall(r"https?://\S+", texts[index])
        for url in urls:
            parts = urlsplit(url)
            if parts.path == path:
                return f"{parts.path}?{parts.query}"
        pytest.fail(f"no link to {path} in the mail: {texts[index]!r}")

    def subjects(self, to: str) -> list[str]:
        return [m.subject for m in self.server.to(to)]


@pytest.fixture
def mailbox(smtp_server: SmtpTestServer) -> Mailbox:
    return Mailbox(smtp_server)


def sign_up(
    client: TestClient, mailbox: Mailbox, email: str, password: str = PASSWORD, name: str = ""
) -> None:
    """Sign up through the form and confirm the address through the mailed link."""
    reply = fill(client, "/signup", "/signup", {"email": email, "password": password, "display_name": name})
    assert reply.status_code == 200, reply.text
    link = mailbox.link(email, "confirm your email", "/verify")
    confirmed = fill(client, link, "/verify", {"token": link.split("token=", 1)[1]})
    assert confirmed.status_code == 303, confirmed.text


def sign_in(client: TestClient, email: str, password: str = PASSWORD) -> None:
    reply = fill(client, "/signin", "/signin", {"email": email, "password": password})
    assert reply.status_code == 303, reply.text


def quick_sign_in(client: TestClient, app: App, email: str, *, role: str = "user") -> None:
    """A confirmed account without a password and a session for it in ``client``'s cookie jar: for tests
    about what a signed-in person can do, not about signing in (no argon2 work, no mail)."""
    from paperfeed.web.security import CSRF_COOKIE, SESSION_COOKIE

    accounts = app.readers.accounts
    if accounts.store.user_by_email(email) is None:
        accounts.sign_up(email, None, None, client="quick-sign-in", base_url="http://testserver")
    user = accounts.user_by_email(email)
    accounts.store.mark_verified(user.id, accounts.clock())
    if role != "user":
        accounts.set_role(email, role)
    client.get("/signin", headers={"accept": "text/html"})  # the CSRF cookie, and its domain
    domain = next(c.domain for c in client.cookies.jar if c.name == CSRF_COOKIE)
    client.cookies.set(
        SESSION_COOKIE, accounts.create_session(accounts.user_by_email(email)).session, domain=domain
    )


def add_topic(store: SqlPaperStore, topic_id: int, label: str) -> None:
    """A live topic row, as the topics job writes it (only the label matters here)."""
    with store.engine.begin() as conn:
        conn.execute(
            topics.insert().values(
                id=topic_id,
                label=label,
                words=label.lower().split(),
                size=12,
                representatives=[PAPER_IDS[0]],
                centroid=b"\0" * 16,
                x=0.0,
                y=0.0,
            )
        )
