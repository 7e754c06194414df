"""``/for-you`` and ``GET /api/me/recommendations`` on the real app: real SQLite store, the real library
service, the fake embedder through the real indexing job, sessions and API tokens from the accounts
service."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.domain.ingest import Batch
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE

from .conftest import make_papers, topic_of

GRAPHS = [f"2606.{i:05d}" for i in (70, 72, 74, 76, 78, 0)]
PROTEINS = [f"2606.{i:05d}" for i in (71, 73, 75, 77, 79, 1)]
NASTY = "2606.00002"  # its title carries markup, to check the "why" line escapes it


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        data_dir=tmp_path_factory.mktemp("for-you"),
        embedding_backend="fake",
        keyword_engine="fts5",
        debug=True,
    )


@pytest.fixture(scope="module")
def app(settings: Settings) -> Iterator[App]:
    container = build_app(settings)
    papers = make_papers()
    papers = [
        replace(p, title="<script>alert(1)</script> graphs & more") if p.id == NASTY else p for p in papers
    ]
    container.core.store.apply_batch(Batch(papers=papers))
    container.indexes.indexer.current().run()  # embeds with the fake embedder and builds the vector index
    yield container
    container.close()


@pytest.fixture(scope="module")
def site(app: App, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: build_app(settings)), follow_redirects=False) as client:
        yield client


def _user(app: App, email: str) -> User:
    app.readers.accounts.sign_up(
        email, "correct horse battery", None, client="test", base_url="http://testserver"
    )
    stored = app.readers.accounts.store.user_by_email(email)
    assert stored is not None
    return stored.user


def _signed_in(site: TestClient, app: App, user: User) -> TestClient:
    site.cookies.clear()
    site.cookies.set(SESSION_COOKIE, app.readers.accounts.create_session(user).session)
    return site


def _ids(html: str) -> list[str]:
    return re.findall(r'<span class="rank">\d+\.</span> <a href="/papers/([^"]+)"', html)


def test_anonymous_readers_are_sent_to_sign_in(site: TestClient) -> None:
    site.cookies.clear()
    page = site.get("/for-you", headers={"accept": "text/html"})
    assert page.status_code == 303
    assert page.headers["location"].startswith("/signin?next=")
    api = site.get("/api/me/recommendations")
    assert api.status_code == 401
    assert api.json()["status"] == 401
    bad = site.get("/api/me/recommendations", headers={"authorization": "Bearer nope"})
    assert bad.status_code == 401


def test_a_new_reader_sees_trending_and_how_to_start(site: TestClient, app: App) -> None:
    client = _signed_in(site, app, _user(app, "new@example.org"))
    page = client.get("/for-you", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "Save papers you like" in page.text
    assert "Why: trending" in " ".join(page.text.split())
    assert 'href="/for-you" aria-current="page"' in page.text  # the nav link, signed in only
    assert page.headers["cache-control"] == "private, no-store"


def test_saves_shape_the_page_and_every_item_says_why(site: TestClient, app: App) -> None:
    user = _user(app, "graphs@example.org")
    for paper_id in [*GRAPHS, NASTY]:
        app.readers.library.save(user.id, paper_id)
    page = _signed_in(site, app, user).get("/for-you", headers={"accept": "text/html"})
    assert page.status_code == 200
    ids = _ids(page.text)
    assert len(ids) == 30
    assert not set(ids) & {*GRAPHS, NASTY}
    assert [topic_of(p) for p in ids[:10]] == ["graphs"] * 10
    assert page.text.count('<p class="extra why">') == 30
    assert re.search(r'similar to <a href="/papers/2606\.\d{5}">[^<]+</a> you saved', page.text)
    assert "Ranked by a model trained on the 7 papers in your library" in page.text


def test_a_saved_title_with_markup_is_escaped_in_the_why_line(site: TestClient, app: App) -> None:
    user = _user(app, "one-save@example.org")
    app.readers.library.save(user.id, NASTY)
    page = _signed_in(site, app, user).get("/for-you", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "Save 4 more" in page.text  # one save: similarity, and how many more make a model
    assert "<script>alert(1)</script>" not in page.text
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; graphs &amp; more</a> you saved"
    assert page.text.count(escaped) == 30


def test_the_api_answers_with_a_token_and_names_reasons(site: TestClient, app: App) -> None:
    user = _user(app, "api@example.org")
    for paper_id in PROTEINS:
        app.readers.library.save(user.id, paper_id, ["Proteins"])
    _, secret = app.readers.accounts.create_api_token(user, "script")
    site.cookies.clear()
    got = site.get("/api/me/recommendations?limit=5", headers={"authorization": f"Bearer {secret}"})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["mode"] == "model"
    assert body["positives"] == 6
    assert body["tags"] == ["Proteins"]
    assert body["window"] == {"start": "2026-06-01", "end": "2026-06-30"}
    assert len(body["items"]) == 5
    for item in body["items"]:
        assert topic_of(item["paper"]["id"]) == "proteins"
        assert item["paper"]["id"] not in PROTEINS
        (reason,) = item["reasons"]
        assert reason["kind"] == "similar"
        assert reason["paperId"] in PROTEINS
        assert item["reason"] == reason["text"]
    tagged = site.get("/api/me/recommendations?tag=proteins", headers={"authorization": f"Bearer {secret}"})
    assert tagged.json()["tag"] == "Proteins"
    unknown = site.get("/api/me/recommendations?tag=nope", headers={"authorization": f"Bearer {secret}"})
    assert unknown.status_code == 404
    assert "nope" in unknown.json()["error"]
    too_many = site.get("/api/me/recommendations?limit=1000", headers={"authorization": f"Bearer {secret}"})
    assert too_many.status_code == 400
    assert too_many.json()["errors"][0]["param"] == "limit"


def test_the_tag_selector_learns_from_one_tag(site: TestClient, app: App) -> None:
    user = _user(app, "two-tags@example.org")
    for paper_id in GRAPHS:
        app.readers.library.save(user.id, paper_id, ["Graphs"])
    for paper_id in PROTEINS:
        app.readers.library.save(user.id, paper_id, ["Proteins"])
    client = _signed_in(site, app, user)
    page = client.get("/for-you?tag=Proteins", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert '<option value="Proteins" selected>Tag: Proteins</option>' in page.text
    assert [topic_of(p) for p in _ids(page.text)[:10]] == ["proteins"] * 10
    missing = client.get("/for-you?tag=Nope", headers={"accept": "text/html"})
    assert missing.status_code == 404
    assert "No such tag" in missing.text
