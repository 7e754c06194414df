"""Anonymous reads are cheap and cacheable; nothing personal is ever cached or shared.

Every anonymous GET of a feed, trending, paper page, RSS/Atom feed, JSON API answer or paper ``.md``
carries an ``ETag`` and ``Cache-Control: public, max-age=…, stale-while-revalidate=…`` and answers a
matching ``If-None-Match`` with 304 and no body. The server keeps rendered anonymous answers in a
bounded per-process cache keyed by the data version; with no grace (these tests), a vote shows at once
(``test_grace.py`` covers the grace an import or a vote may take). Signed-in readers (a
session cookie or a Bearer token) get their own, ``private`` answer wherever it looks at who is asking
(every page: it names the reader): the cache never hands one reader's vote state, library marks, note,
name or CSRF token to another reader or to anonymous. The JSON API's reads never look, so a script's
token gets the anonymous answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import lxml.html
import pytest
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient
from sqlalchemy import update

from paperfeed.adapters.store.schema import papers
from paperfeed.bootstrap import App, build_app
from paperfeed.domain.accounts import User
from paperfeed.domain.paper_graph import Citation, PaperLinks, WorkRef
from paperfeed.settings import Settings
from paperfeed.web import create_app
from paperfeed.web.security import SESSION_COOKIE, csrf_token
from tests.community.conftest import DAY, add_reader, bearer, sign_in

HTML = {"accept": "text/html"}
JSON = {"accept": "application/json"}
PAPER = "2501.00202"  # listed on DAY with 11 Hugging Face upvotes

# (url, accept): every anonymous read the public cache covers
ANONYMOUS_READS = [
    ("/", HTML),
    (f"/papers/date/{DAY}", HTML),
    ("/papers/week/2025-W02", HTML),
    ("/papers/month/2025-01", HTML),
    ("/trending", HTML),
    (f"/papers/{PAPER}", HTML),
    ("/search?q=lichen", HTML),
    (f"/papers/{PAPER}.md", {}),
    ("/rss/daily", {}),
    ("/atom/trending", {}),
    (f"/api/daily_papers?date={DAY}", JSON),
    (f"/api/papers/{PAPER}", JSON),
    ("/api/papers/search?q=lichen", JSON),
]


def _vary(answer: Any) -> set[str]:
    return {v.strip().lower() for v in answer.headers.get("vary", "").split(",") if v.strip()}


def _directives(answer: Any) -> dict[str, str]:
    out = {}
    for part in answer.headers.get("cache-control", "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            out[name.lower()] = value
    return out


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """No grace: every change of the data version reaches cached answers at once (see test_grace.py)."""
    return settings.model_copy(
        update={"page_cache_grace_seconds": 0.0, "page_cache_import_grace_seconds": 0.0}
    )


@pytest.fixture
def app(app: App) -> App:
    """The community's instance, embedded: a search without notes is a plain anonymous read."""
    app.indexing.run()
    return app


@pytest.fixture
def ada(app: App) -> User:
    return add_reader(app, "ada@example.org", "Ada Private")


@pytest.fixture
def bob(app: App) -> User:
    return add_reader(app, "bob@example.org", "Bob Private")


def _client(settings: Settings) -> TestClient:
    return TestClient(create_app(lambda: build_app(settings)), follow_redirects=False)


# -- validators and conditional requests ----------------------------------------------------------------


@pytest.mark.parametrize(("url", "accept"), ANONYMOUS_READS, ids=[u for u, _ in ANONYMOUS_READS])
def test_every_anonymous_read_has_a_validator_and_answers_304(
    site: TestClient, url: str, accept: dict[str, str]
) -> None:
    first = site.get(url, headers=accept)
    assert first.status_code == 200, (url, first.text[:300])
    etag = first.headers.get("etag")
    assert etag, f"{url}: no ETag"
    assert etag.startswith('"'), f"{url}: a weak ETag"
    cache = _directives(first)
    assert "public" in cache
    assert int(cache["max-age"]) > 0
    assert int(cache["stale-while-revalidate"]) > 0
    assert "set-cookie" not in first.headers
    if not url.startswith(("/rss/", "/atom/")) and not url.endswith(".md"):
        assert "cookie" in _vary(first), url  # a signed-in reader sees another page here
    if url.startswith("/api/"):
        assert "authorization" in _vary(first), url
    again = site.get(url, headers={**accept, "if-none-match": etag})
    assert again.status_code == 304, url
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert _directives(again) == cache
    listed = site.get(url, headers={**accept, "if-none-match": f'W/"other", {etag}'})
    assert listed.status_code == 304, "a weak or listed match counts for If-None-Match"
    other = site.get(url, headers={**accept, "if-none-match": '"not-this-one"'})
    assert other.status_code == 200
    assert other.content == first.content


def test_a_repeat_is_served_from_the_cache_until_the_data_version_changes(
    site: TestClient, app: App, ada: User
) -> None:
    url = f"/papers/{PAPER}"
    assert "Lichen growth under city light" in site.get(url, headers=HTML).text
    # A change the data version does not see (no modified_at): only a cached page still shows the old
    # title. (Real writes always move the version; this one proves the repeat was not re-rendered.)
    with app.store.engine.begin() as conn:
        conn.execute(update(papers).where(papers.c.id == PAPER).values(title="Renamed lichen study"))
    repeat = site.get(url, headers=HTML)
    assert "Lichen growth under city light" in repeat.text
    assert repeat.headers.get("x-paperfeed-cache") == "hit"
    app.community.upvote(ada, PAPER)  # a vote moves the version: the page is rendered anew
    time.sleep(app.settings.page_cache_check_seconds + 0.05)
    fresh = site.get(url, headers=HTML)
    assert "Renamed lichen study" in fresh.text
    assert fresh.headers.get("x-paperfeed-cache") == "miss"


def test_a_vote_through_the_site_shows_to_anonymous_readers_at_once(
    site: TestClient, settings: Settings, app: App, ada: User
) -> None:
    def shown() -> str:
        doc = lxml.html.fromstring(site.get(f"/papers/date/{DAY}", headers=HTML).text)
        cards = [c for c in doc.cssselect("article.card") if c.cssselect(f'a[href="/papers/{PAPER}"]')]
        assert cards, "no card for the paper"
        return "".join(str(part) for part in cards[0].cssselect("a.vote-link .count")[0].itertext())

    before = shown()
    etag = site.get(f"/papers/date/{DAY}", headers=HTML).headers["etag"]
    with _client(settings) as reader:
        token = sign_in(reader, app, ada)
        voted = reader.post(f"/papers/{PAPER}/upvote", data={"csrf_token": token}, headers=HTML)
        assert voted.status_code == 303
    # the reader's client is another TestClient (another app instance): this site learns of the vote
    # through the data version, checked at most every page_cache_check_seconds
    time.sleep(settings.page_cache_check_seconds + 0.05)
    assert shown() == str(int(before) + 1)
    stale = site.get(f"/papers/date/{DAY}", headers={**HTML, "if-none-match": etag})
    assert stale.status_code == 200, "an ETag from before the vote no longer matches"


def test_a_write_through_the_same_process_is_seen_without_delay(
    site: TestClient, app: App, ada: User
) -> None:
    url = f"/api/papers/{PAPER}"
    before = site.get(url, headers=JSON).json()["upvotes"]
    voted = site.post(f"/api/papers/{PAPER}/upvote", headers=bearer(app, ada))
    assert voted.status_code in (200, 201), voted.text
    assert site.get(url, headers=JSON).json()["upvotes"] == before + 1


# -- security: readers never see each other's answers ---------------------------------------------------


def _signed_in(settings: Settings, app: App, user: User) -> Iterator[TestClient]:
    with _client(settings) as client:
        sign_in(client, app, user)
        yield client


def test_two_readers_and_anonymous_on_the_same_urls_never_share_an_answer(
    site: TestClient, settings: Settings, app: App, ada: User, bob: User
) -> None:
    app.community.upvote(ada, PAPER)
    app.library.save(ada.id, PAPER)
    app.library.set_note(ada.id, PAPER, "Ada's secret reading note")
    with _client(settings) as a, _client(settings) as b:
        ada_csrf = sign_in(a, app, ada)
        bob_csrf = sign_in(b, app, bob)
        urls = [f"/papers/{PAPER}", f"/papers/date/{DAY}", "/", "/trending", "/search?q=lichen"]
        # Ada first (a signed-in answer must not be stored), then anonymous, Bob, anonymous, Ada again
        for round_ in range(2):
            for url in urls:
                for who, client in (("ada", a), ("anon", site), ("bob", b), ("anon", site), ("ada", a)):
                    got = client.get(url, headers=HTML)
                    assert got.status_code == 200, (who, url)
                    text = got.text
                    cache = _directives(got)
                    if who == "anon":
                        for secret in ("Ada Private", "Bob Private", ada_csrf, bob_csrf, "secret reading"):
                            assert secret not in text, (round_, url, secret)
                        for mark in ('name="csrf_token"', "csrf-token", "vote-form", "library-actions"):
                            assert mark not in text, (url, mark)
                        assert "public" in cache, url
                        continue
                    assert "public" not in cache, (who, url, cache)
                    assert "private" in cache, (who, url, cache)
                    assert "etag" not in got.headers, (who, url)
                    names = ("Ada Private", "Bob Private")
                    mine, theirs = names if who == "ada" else names[::-1]
                    assert mine in text, (who, url)
                    assert theirs not in text, (who, url)
                    assert (ada_csrf if who == "ada" else bob_csrf) in text, (who, url)
                    assert (bob_csrf if who == "ada" else ada_csrf) not in text, (who, url)
                    note_shown = who == "ada" and url == f"/papers/{PAPER}"
                    assert ("secret reading" in text) == note_shown, (who, url)
                    if url in (f"/papers/{PAPER}", f"/papers/date/{DAY}"):
                        doc = lxml.html.fromstring(text)
                        forms = [f for f in doc.cssselect("form.vote-form") if PAPER in f.get("action", "")]
                        assert forms, (who, url)
                        pressed = forms[0].cssselect("button")[0].get("aria-pressed")
                        assert pressed == ("true" if who == "ada" else "false"), (who, url)
                        saved = "/library/unsave" in text or "Update tags" in text
                        assert saved == (who == "ada"), (who, url)


def test_api_reads_are_everyones_so_a_token_gets_the_cached_answer_but_its_own_data_stays_private(
    site: TestClient, app: App, ada: User
) -> None:
    app.community.upvote(ada, PAPER)
    app.library.set_note(ada.id, PAPER, "Ada's secret reading note")
    token = bearer(app, ada)
    for url in (f"/api/papers/{PAPER}", f"/api/daily_papers?date={DAY}"):
        mine = site.get(url, headers={**JSON, **token})  # first: rendered for the token, never looked at it
        assert (mine.status_code, mine.headers.get("x-paperfeed-cache")) == (200, "miss"), url
        assert "public" in mine.headers["cache-control"], url
        assert "secret reading" not in mine.text
        anonymous = site.get(url, headers=JSON)
        assert (anonymous.headers.get("x-paperfeed-cache"), anonymous.content) == ("hit", mine.content), url
        again = site.get(url, headers={**JSON, **token})
        assert (again.headers.get("x-paperfeed-cache"), again.content) == ("hit", mine.content), url
    # the reader's own data: rendered for the token, private, never kept, never given to anonymous
    url = f"/api/me/papers/{PAPER}"
    for _ in range(2):
        mine = site.get(url, headers={**JSON, **token})
        assert mine.status_code == 200, mine.text
        assert "secret reading" in mine.text
        assert "public" not in mine.headers.get("cache-control", "")
        assert "private" in mine.headers.get("cache-control", "")
        assert mine.headers.get("x-paperfeed-cache") is None
    me = site.get(url, headers=JSON)
    assert me.status_code == 401
    assert "secret reading" not in me.text


def test_an_api_answer_that_looks_at_who_asks_is_each_readers_own(
    settings: Settings, app: App, ada: User, bob: User
) -> None:
    """A cached path whose handler asks who is reading: the anonymous copy never answers a token, and a
    token's answer is never kept — whichever comes first."""

    def hello(request: Request) -> HTMLResponse:
        from paperfeed.web.security import current_user

        user = current_user(request)
        return HTMLResponse(f"hello {user.display_name if user else 'anonymous'}")

    ada_token, bob_token = bearer(app, ada), bearer(app, bob)
    with _with_route(settings, hello) as client:
        assert client.get("/trending", headers=ada_token).text == "hello Ada Private"  # first: not kept
        assert client.get("/trending").text == "hello anonymous"
        assert client.get("/trending").headers.get("x-paperfeed-cache") == "hit"
        for token, name in ((bob_token, "Bob Private"), (ada_token, "Ada Private")):
            got = client.get("/trending", headers=token)
            assert got.text == f"hello {name}"
            assert got.headers.get("x-paperfeed-cache") is None
            assert "private" in got.headers["cache-control"]
        etag = client.get("/trending").headers["etag"]
        assert client.get("/trending", headers={**ada_token, "if-none-match": etag}).status_code == 200
        refused = client.get("/trending", headers={"authorization": "Bearer revoked-or-forged"})
        assert refused.status_code == 401, "a token the handler looks at is checked, never skipped"


def test_a_signed_in_readers_conditional_request_never_matches_the_anonymous_etag(
    site: TestClient, settings: Settings, app: App, ada: User
) -> None:
    app.community.upvote(ada, PAPER)
    for url in (f"/papers/{PAPER}", f"/papers/date/{DAY}"):
        etag = site.get(url, headers=HTML).headers["etag"]
        for reader in _signed_in(settings, app, ada):
            got = reader.get(url, headers={**HTML, "if-none-match": etag})
            assert got.status_code == 200, f"{url}: a 304 would show Ada the anonymous page"
            assert "Ada Private" in got.text
            assert 'aria-pressed="true"' in got.text
            star = reader.get(url, headers={**HTML, "if-none-match": "*"})
            assert star.status_code == 200
    # the API's answer is the same for everyone: the anonymous ETag is the token holder's too
    token = bearer(app, ada)
    api = f"/api/papers/{PAPER}"
    anonymous = site.get(api, headers=JSON)
    got = site.get(api, headers={**JSON, **token, "if-none-match": anonymous.headers["etag"]})
    assert got.status_code == 304
    assert site.get(api, headers={**JSON, **token}).content == anonymous.content


def test_an_invalid_session_cookie_is_not_anonymous(site: TestClient) -> None:
    site.get(f"/papers/{PAPER}", headers=HTML)  # cached
    site.cookies.set(SESSION_COOKIE, "expired-or-forged")
    for url in (f"/papers/{PAPER}", "/trending"):  # an anonymous copy, and none yet
        got = site.get(url, headers=HTML)
        assert got.status_code == 200
        assert "public" not in got.headers.get("cache-control", ""), url
        assert got.headers.get("x-paperfeed-cache") is None, url
    site.cookies.clear()
    assert site.get("/trending", headers=HTML).headers.get("x-paperfeed-cache") == "miss"


def test_a_forged_host_header_does_not_poison_the_cache(site: TestClient) -> None:
    url = f"/papers/{PAPER}.md"
    forged = site.get(url, headers={"host": "evil.example"})
    assert forged.status_code == 200
    honest = site.get(url)
    assert "evil.example" not in honest.text
    for _ in range(2):
        page = site.get(f"/papers/{PAPER}", headers={**HTML, "host": "evil.example"})
        assert page.status_code == 200
    assert "evil.example" not in site.get(f"/papers/{PAPER}", headers=HTML).text


def test_query_parameters_are_keyed_in_order_of_values(site: TestClient) -> None:
    one = site.get("/api/daily_papers", params=[("date", DAY), ("limit", "1")], headers=JSON)
    two = site.get("/api/daily_papers", params=[("limit", "2"), ("date", DAY)], headers=JSON)
    assert len(one.json()) == 1
    assert len(two.json()) == 2
    swapped = site.get("/api/daily_papers", params=[("limit", "1"), ("date", DAY)], headers=JSON)
    assert swapped.headers.get("x-paperfeed-cache") == "hit"
    assert swapped.content == one.content
    last = site.get("/api/daily_papers?date=" + DAY + "&limit=2&limit=1", headers=JSON)
    first = site.get("/api/daily_papers?date=" + DAY + "&limit=1&limit=2", headers=JSON)
    assert len(last.json()) == 1
    assert len(first.json()) == 2


def _with_route(settings: Settings, handler: Any) -> TestClient:
    """The real app with one extra route on a cached path (``/trending``), registered first."""
    web = create_app(lambda: build_app(settings))
    web.add_api_route("/trending", handler, methods=["GET"], response_class=HTMLResponse)
    web.router.routes.insert(0, web.router.routes.pop())
    return TestClient(web, follow_redirects=False)


def test_an_answer_that_sets_a_cookie_or_carries_a_csrf_token_is_never_cached(settings: Settings) -> None:
    def with_token(request: Request) -> HTMLResponse:
        return HTMLResponse(f'<meta name="csrf-token" content="{csrf_token(request)}">')

    with _with_route(settings, with_token) as first, _with_route(settings, with_token) as _:
        one = first.get("/trending", headers=HTML)
        assert "set-cookie" in one.headers
        assert "public" not in one.headers.get("cache-control", "")
        # a browser that already has its CSRF cookie: no Set-Cookie, still a token tied to that browser
        again = first.get("/trending", headers=HTML)
        assert "set-cookie" not in again.headers
        assert again.headers.get("x-paperfeed-cache") is None
        assert "public" not in again.headers.get("cache-control", "")
        first.cookies.clear()
        other = first.get("/trending", headers=HTML)
        token = re.search(r'content="([^"]+)"', other.text)
        assert token
        assert token.group(1) not in one.text


def test_an_answer_for_a_reader_is_never_stored_even_on_a_cached_path(
    settings: Settings, app: App, ada: User
) -> None:
    def personal(request: Request) -> HTMLResponse:
        from paperfeed.web.security import current_user

        user = current_user(request)
        return HTMLResponse(f"hello {user.display_name if user else 'anonymous'}")

    with _with_route(settings, personal) as client:
        sign_in(client, app, ada)
        assert "Ada Private" in client.get("/trending", headers=HTML).text
        client.cookies.clear()
        assert client.get("/trending", headers=HTML).text == "hello anonymous"


def test_a_citation_harvest_reaches_a_cached_paper_page(site: TestClient, app: App) -> None:
    url = f"/papers/{PAPER}"
    assert "No citation data yet" in site.get(url, headers=HTML).text
    assert site.get(url, headers=HTML).headers.get("x-paperfeed-cache") == "hit"
    me = WorkRef(PAPER, "Lichen growth under city light", 2025)
    cited = WorkRef("doi:10.1000/moss", "A survey of urban mosses", 2019, doi="10.1000/moss")
    links = PaperLinks(PAPER, "s2", me, (me, cited), (Citation(PAPER, cited.key, "s2"),))
    app.citation_records.save_links([links], harvested_at=datetime.now(UTC))
    time.sleep(app.settings.page_cache_check_seconds + 0.05)
    fresh = site.get(url, headers=HTML)
    assert fresh.headers.get("x-paperfeed-cache") == "miss"
    assert "A survey of urban mosses" in fresh.text
