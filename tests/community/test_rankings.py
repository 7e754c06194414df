"""Shown counts are Hugging Face's imported count plus local votes, and every ranking sorts by them: the
day, week and month feeds, trending, the HF-shaped API (daily papers, paper info, search) and the pages."""

from __future__ import annotations

from datetime import date

from fastapi.testclient import TestClient

from paperfeed.bootstrap import App
from paperfeed.domain.accounts import User

from .conftest import DAY, add_reader

# data/papers.jsonl on 2025-01-06: 00201 has 12 HF upvotes (and 2 HF comments), 00202 has 11, 00203 none.


def _votes(app: App, paper_id: str, count: int, *, hidden: bool = False) -> list[User]:
    voters = [add_reader(app, f"{paper_id}-{n}-{hidden}@example.org", hidden=hidden) for n in range(count)]
    for voter in voters:
        if not hidden:
            app.readers.community.upvote(voter, paper_id)
    return voters


def _day(app: App) -> list[tuple[str, int]]:
    return [(i.paper.id, i.upvotes) for i in app.catalogue.feeds.day(date.fromisoformat(DAY)).items]


def test_local_votes_add_to_imported_ones_and_reorder_the_day(app: App) -> None:
    assert _day(app) == [("2501.00201", 12), ("2501.00202", 11), ("2501.00203", 0)]
    _votes(app, "2501.00202", 2)
    _votes(app, "2501.00203", 1)
    assert _day(app) == [("2501.00202", 13), ("2501.00201", 12), ("2501.00203", 1)]
    week = app.catalogue.feeds.week("2025-W02")
    assert [(i.paper.id, i.upvotes) for i in week.items] == [
        ("2501.00202", 13),
        ("2501.00201", 12),
        ("2501.00204", 5),
        ("2501.00203", 1),
    ]
    assert [i.paper.id for i in app.catalogue.feeds.month("2025-01").items][:2] == [
        "2501.00202",
        "2501.00201",
    ]
    assert [(i.paper.id, i.upvotes) for i in app.catalogue.feeds.recent(limit=2)] == [
        ("2501.00204", 5),
        ("2501.00202", 13),
    ]
    # the paper a feed item carries shows the same counts
    detail = app.catalogue.feeds.paper("2501.00203")
    assert detail is not None
    assert detail.paper.upvotes == 1  # unknown on HF, one vote here


def test_votes_of_hidden_readers_do_not_rank(app: App) -> None:
    voters = _votes(app, "2501.00202", 3)
    assert _day(app)[0] == ("2501.00202", 14)
    app.readers.accounts.hide_user(voters[0].id)
    app.readers.accounts.hide_user(voters[1].id)
    assert _day(app)[:2] == [("2501.00201", 12), ("2501.00202", 12)]


def test_trending_uses_the_sum_and_sees_a_vote_at_once(app: App) -> None:
    before = app.catalogue.feeds.trending(limit=10)
    ranks = {t.paper.id: t for t in before.items}
    assert ranks["2501.00201"].rank < ranks["2501.00202"].rank
    _votes(app, "2501.00202", 3)
    after = {t.paper.id: t for t in app.catalogue.feeds.trending(limit=10).items}  # no waiting for the cache
    assert after["2501.00202"].upvotes == 14
    assert after["2501.00202"].rank < after["2501.00201"].rank


def test_a_paper_never_listed_trends_on_local_votes(app: App) -> None:
    # 2501.00205 is on no feed and has no HF upvotes or stars: a local vote makes it a trending candidate.
    window = (date(2025, 1, 1), date(2025, 1, 31))
    assert "2501.00205" not in [
        t.paper.id for t in app.catalogue.feeds.trending(limit=50, window=window).items
    ]
    _votes(app, "2501.00205", 1)
    found = [
        t for t in app.catalogue.feeds.trending(limit=50, window=window).items if t.paper.id == "2501.00205"
    ]
    assert len(found) == 1
    assert found[0].upvotes == 1
    assert found[0].paper.upvotes == 1


def test_the_hf_shaped_api_shows_the_sum(app: App, site: TestClient) -> None:
    _votes(app, "2501.00202", 2)
    commenter = add_reader(app, "c@example.org", "Cleo")
    app.readers.community.add_comment(commenter, "2501.00201", "Nice octopus.")
    daily = site.get("/api/daily_papers", params={"date": DAY}).json()
    assert [(d["paper"]["id"], d["paper"]["upvotes"], d["numComments"]) for d in daily] == [
        ("2501.00202", 13, 0),
        ("2501.00201", 12, 3),  # 2 comments on HF + 1 here
        ("2501.00203", 0, 0),
    ]
    week = site.get("/api/daily_papers", params={"week": "2025-W02", "sort": "trending"}).json()
    assert {d["paper"]["id"]: d["paper"]["upvotes"] for d in week}["2501.00202"] == 13
    assert site.get("/api/papers/2501.00202").json()["upvotes"] == 13
    listed = {p["id"]: p["upvotes"] for p in site.get("/api/papers", params={"limit": 100}).json()}
    assert listed["2501.00202"] == 13
    hits = site.get("/api/papers/search", params={"q": "lichen city light"}).json()
    assert hits[0]["paper"]["id"] == "2501.00202"
    assert hits[0]["paper"]["upvotes"] == 13
    markdown = site.get("/papers/2501.00202.md").text
    assert "**Upvotes:** 13" in markdown


def test_pages_show_the_sum_and_comment_counts(app: App, site: TestClient) -> None:
    _votes(app, "2501.00202", 2)
    app.readers.community.add_comment(add_reader(app, "c@example.org"), "2501.00201", "Nice octopus.")
    day = site.get(f"/papers/date/{DAY}", headers={"accept": "text/html"}).text
    assert day.index("Lichen growth") < day.index("Octopus arm control")
    assert '<span class="count">13</span>' in day
    assert 'href="/papers/2501.00201#comments"' in day
    page = site.get("/papers/2501.00202", headers={"accept": "text/html"}).text
    assert '<span class="count">13</span>' in page
    search = site.get("/search", params={"q": "lichen"}, headers={"accept": "text/html"}).text
    assert '<span class="count">13</span>' in search
