"""Mute rules hold on every surface, one test each: the day, week and month feeds, trending, search, For
you (page and API), the digest, an alert's RSS feed, the JSON API, a group's pages; and the rules' own
page and API. The reader mutes an author (Carla Nieve: 2501.00102), a category (cs.CL: 2501.00103) and a
word of an abstract ("wavelet": 2501.00104); 2501.00101 stays. Pages say how many they hid and show them
on demand; anonymous visitors and other readers see everything."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import feedparser
import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.digest import Preferences, Section, Subscription, SubscriptionStatus
from tests.accounts.conftest import PAPER_IDS, fill, quick_sign_in

KEPT, AUTHOR, CATEGORY, WORD = PAPER_IDS
READER = "muter@example.org"


def _mute(app: App, email: str = READER) -> int:
    user = app.readers.accounts.user_by_email(email).id
    app.readers.mutes.add(user, "author", "carla  NIEVE")
    app.readers.mutes.add(user, "category", "cs.CL")
    app.readers.mutes.add(user, "word", "Wavelet")
    return user


@pytest.fixture
def reader(app: App, site: TestClient) -> TestClient:
    quick_sign_in(site, app, READER)
    _mute(app)
    return site


def _ids(html: str) -> set[str]:
    return set(re.findall(r'href="/papers/(25\d\d\.\d{5})"', html)) & set(PAPER_IDS)


def _page(client: TestClient, path: str) -> str:
    got = client.get(path, headers={"accept": "text/html"})
    assert got.status_code == 200, (path, got.status_code)
    return got.text


@pytest.mark.parametrize(
    ("path", "expected", "hidden"),
    [
        ("/papers/date/2025-01-06", {KEPT}, 2),
        ("/papers/week/2025-W02", {KEPT}, 3),
        ("/papers/month/2025-01", {KEPT}, 3),
    ],
)
def test_feeds_leave_muted_papers_out_and_show_them_on_demand(
    reader: TestClient, new_browser: Callable[[], TestClient], path: str, expected: set[str], hidden: int
) -> None:
    html = _page(reader, path)
    assert _ids(html) == expected
    assert f"{hidden} papers hidden by your" in html
    shown = _page(reader, path + "?muted=show")
    assert _ids(shown) > expected
    assert "hide them again" in shown
    anonymous = _page(new_browser(), path)
    assert _ids(anonymous) > expected
    assert "hidden by your" not in anonymous


def test_trending(reader: TestClient) -> None:
    html = _page(reader, "/trending")
    assert _ids(html) == {KEPT}
    assert "3 papers hidden by your" in html


def test_search(reader: TestClient) -> None:
    html = _page(reader, "/search?q=zebrafish")
    assert _ids(html) == {KEPT}
    assert "1 paper hidden by your" in html
    assert _ids(_page(reader, "/search?q=zebrafish&muted=show")) == {KEPT, WORD}


def test_for_you_page_and_api(app: App, reader: TestClient) -> None:
    app.readers.library.save(app.readers.accounts.user_by_email(READER).id, KEPT)
    html = _page(reader, "/for-you")
    assert not _ids(html) & {AUTHOR, CATEGORY, WORD}
    body = reader.get("/api/me/recommendations", headers={"accept": "application/json"}).json()
    assert not {i["paper"]["id"] for i in body["items"]} & {AUTHOR, CATEGORY, WORD}
    assert body["mutedHidden"] >= 1


def test_the_digest(app: App) -> None:
    app.readers.accounts.sign_up(READER, None, None, client="t", base_url="http://t")
    user = app.readers.accounts.user_by_email(READER).id
    sub = Subscription(
        id=1,
        email=READER,
        status=SubscriptionStatus.active,
        preferences=Preferences(sections=(Section.trending,), max_items=20),
        user_id=user,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        confirmed_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    before = set(app.digests.sender.preview(sub).digest.paper_ids)
    assert {AUTHOR, WORD} <= before
    _mute(app)
    after = set(app.digests.sender.preview(sub).digest.paper_ids)
    assert after == before - {AUTHOR, CATEGORY, WORD}
    assert KEPT in after


def test_an_alerts_rss_feed(app: App, reader: TestClient) -> None:
    user = app.readers.accounts.user_by_email(READER).id
    saved = app.readers.library.add_search(user, "fish", "zebrafish")
    feed = reader.get(f"/rss/alerts/{app.readers.library.feed_token(user, saved.id)}")
    assert feed.status_code == 200
    links = {e.link.rsplit("/", 1)[-1] for e in feedparser.parse(feed.text).entries}
    assert links == {KEPT}


def test_the_json_api(app: App, reader: TestClient, new_browser: Callable[[], TestClient]) -> None:
    app.readers.accounts.sign_up("unmuted@example.org", None, None, client="t", base_url="http://t")
    token = app.readers.accounts.create_api_token(app.readers.accounts.user_by_email(READER), "t")[1]
    script = new_browser()
    bearer = {"authorization": f"Bearer {token}"}
    day = script.get("/api/daily_papers?date=2025-01-06", headers=bearer)
    assert [i["paper"]["id"] for i in day.json()] == [KEPT]
    assert day.headers["x-muted-hidden"] == "2"
    assert "private" in day.headers["cache-control"]
    shown = script.get("/api/daily_papers?date=2025-01-06&muted=show", headers=bearer)
    assert len(shown.json()) == 3
    found = script.get("/api/papers/search?q=zebrafish", headers=bearer)
    assert [i["paper"]["id"] for i in found.json()] == [KEPT]
    assert found.headers["x-muted-hidden"] == "1"
    # the same request anonymously, through the same app (its page cache): everything, and shared ...
    url = "/api/daily_papers?date=2025-01-07"
    anonymous = script.get(url)
    assert [i["paper"]["id"] for i in anonymous.json()] == [WORD]
    assert script.get(url).headers["x-paperfeed-cache"] == "hit"
    assert "x-muted-hidden" not in anonymous.headers
    # ... but the reader, asking after it was kept, still gets their own list, private
    mine = script.get(url, headers=bearer)
    assert mine.json() == []
    assert mine.headers["x-muted-hidden"] == "1"
    assert "private" in mine.headers["cache-control"]
    # while a reader who mutes nothing is given the shared copy, as any script with a token is
    other = app.readers.accounts.create_api_token(
        app.readers.accounts.user_by_email("unmuted@example.org"), "t"
    )[1]
    theirs = script.get(url, headers={"authorization": f"Bearer {other}"})
    assert theirs.headers["x-paperfeed-cache"] == "hit"
    assert theirs.content == anonymous.content


def test_a_groups_rules_apply_to_its_pages(
    app: App, site: TestClient, new_browser: Callable[[], TestClient]
) -> None:
    quick_sign_in(site, app, "owner@example.org")
    owner = app.readers.accounts.user_by_email("owner@example.org").id
    group = app.readers.groups.create(owner, "Fish")
    for paper in (KEPT, WORD):
        app.readers.groups.queue_add(owner, group.id, paper)
    page = f"/groups/{group.id}"
    assert fill(site, page, f"{page}/mutes", {"kind": "word", "value": "wavelet"}).status_code == 303
    html = _page(site, page)
    assert _ids(html) == {KEPT}
    assert "1 queued paper not shown" in html
    bad = fill(site, page, f"{page}/mutes", {"kind": "word", "value": "?"})
    assert bad.status_code == 400


def test_the_rules_page_and_api(app: App, site: TestClient, new_browser: Callable[[], TestClient]) -> None:
    quick_sign_in(site, app, READER)
    added = fill(site, "/mutes", "/mutes", {"kind": "author", "value": "Dan Shepherd"})
    assert added.status_code == 303
    assert "Dan Shepherd" in _page(site, "/mutes")
    assert fill(site, "/mutes", "/mutes", {"kind": "category", "value": "not a category!"}).status_code == 400
    token = app.readers.accounts.create_api_token(app.readers.accounts.user_by_email(READER), "t")[1]
    api = new_browser()
    bearer = {"authorization": f"Bearer {token}"}
    assert api.get("/api/me/mutes", headers=bearer).json() == [{"kind": "author", "value": "Dan Shepherd"}]
    made = api.post("/api/me/mutes", json={"kind": "word", "value": "sheep"}, headers=bearer)
    assert made.status_code == 201
    assert api.post("/api/me/mutes", json={"kind": "nope", "value": "x"}, headers=bearer).status_code == 400
    gone = api.delete("/api/me/mutes", params={"kind": "word", "value": "SHEEP"}, headers=bearer)
    assert gone.status_code == 200
    assert (
        api.delete("/api/me/mutes", params={"kind": "word", "value": "sheep"}, headers=bearer).status_code
        == 404
    )
    assert new_browser().get("/api/me/mutes").status_code == 401
    removed = fill(site, "/mutes", "/mutes/remove", {"kind": "author", "value": "dan shepherd"})
    assert removed.status_code == 303
    assert app.readers.mutes.rules(app.readers.accounts.user_by_email(READER).id) == []
