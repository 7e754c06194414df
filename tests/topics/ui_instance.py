"""A whole instance for the topic UI tests: three groups of papers, embedded by the fake embedder through
the real indexing job (vector and keyword indexes), topics built by the App's own TopicService, readers
signed in through the accounts service. On a SQLite file, or on a fresh PostgreSQL database (PostgreSQL
full-text search and pgvector, the ``auto`` choices there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE
from tests.support import postgres

from .conftest import add_papers

HTML = {"accept": "text/html"}
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
BACKEND_PARAMS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@dataclass
class Instance:
    settings: Settings
    backend: str
    members: dict[int, frozenset[str]]  # topic id -> its papers
    labels: dict[int, str]

    def topic_of_group(self, group: str) -> int:
        """The topic holding most papers of ``group`` (graph, protein, galaxy)."""
        return max(self.members, key=lambda t: sum(group in p for p in self.members[t]))


def ui_settings(folder: Path, url: str | None, **extra: Any) -> Settings:
    return Settings(
        data_dir=folder,
        database_url=url,
        embedding_backend="fake",
        topics_min_papers=30,
        topics_k=3,
        debug=True,
        **extra,
    )


def populate(settings: Settings, backend: str, *, build: bool = True) -> Instance:
    app = build_app(settings)
    try:
        add_papers(app.core.store, 40, embed=False)  # 120 papers, upvotes 0..4, one a day back from NOW
        app.indexes.indexer.current().run()  # the fake embedder's vectors, the vector and keyword indexes
        if build:
            app.catalogue.topics.build()
        members = app.catalogue.topics.records.memberships()
        labels = {t.id: t.label for t in app.catalogue.topics.records.topics()}
    finally:
        app.close()
    return Instance(settings, backend, members, labels)


@contextmanager
def database_url(request: pytest.FixtureRequest, backend: str) -> Iterator[str | None]:
    if backend == "sqlite":
        yield None
        return
    with postgres.database(request.getfixturevalue("pg_server")) as url:
        yield url


@contextmanager
def client_of(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as c:
        yield c


def make_user(app: App, email: str) -> User:
    app.readers.accounts.sign_up(
        email, "correct horse battery", None, client="test", base_url="http://testserver"
    )
    stored = app.readers.accounts.store.user_by_email(email)
    assert stored is not None
    return stored.user


def sign_in(client: TestClient, app: App, user: User) -> TestClient:
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
    return client


def csrf_of(client: TestClient, path: str = "/topics") -> str:
    page = client.get(path, headers=HTML)
    assert page.status_code == 200, page.text[:300]
    found = CSRF.search(page.text)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)
