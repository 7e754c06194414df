"""A paper's topic on its page, the topic plot's upvotes, and "For you" from picked topics, on SQLite and
PostgreSQL: the real app over a real store with the fake embedder's vectors (ui_instance.py), readers
signed in through the accounts service, forms posted with their CSRF token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert, select, update

from paperfeed.adapters.store.embeddings import encode_vector
from paperfeed.adapters.store.schema_topics import topic_picks, topics
from paperfeed.adapters.store.topic_picks import SqlTopicPicks
from paperfeed.bootstrap import App, build_app
from paperfeed.bootstrap.catalogue import topic_settings
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.topic_picks import TopicCandidate, rank_candidates
from paperfeed.services.topics import TopicService
from paperfeed.web.security import CSRF_HEADER
from tests.support.defaults import DEFAULTS

from .ui_instance import (
    BACKEND_PARAMS,
    HTML,
    Instance,
    client_of,
    csrf_of,
    database_url,
    make_user,
    populate,
    sign_in,
    ui_settings,
)

COARSE = 900  # a coarse topic written by hand over the protein topic (the build's two levels)


@dataclass
class World:
    inst: Instance
    app: App
    client: TestClient

    @property
    def protein(self) -> int:
        return self.inst.topic_of_group("protein")

    @property
    def galaxy(self) -> int:
        return self.inst.topic_of_group("galaxy")


@pytest.fixture(scope="module", params=BACKEND_PARAMS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with database_url(request, request.param) as url:
        inst = populate(
            ui_settings(tmp_path_factory.mktemp(f"topic-picks-{request.param}"), url), request.param
        )
        app = build_app(inst.settings)
        try:
            protein = inst.topic_of_group("protein")
            with app.core.store.engine.begin() as conn:  # a coarse level above the protein topic
                conn.execute(
                    insert(topics).values(
                        id=COARSE,
                        label="life sciences",
                        words=["life", "sciences"],
                        size=len(inst.members[protein]),
                        representatives=[],
                        centroid=encode_vector(app.catalogue.topics.records.centroids()[protein]),
                        x=0.0,
                        y=0.0,
                        level=1,
                    )
                )
                conn.execute(update(topics).where(topics.c.id == protein).values(parent_id=COARSE))
            with client_of(inst.settings) as client:
                yield World(inst, app, client)
        finally:
            app.close()


# -- 1. a paper page shows its topic ---------------------------------------------------------------------


def test_paper_page_markdown_and_api_show_the_topic_and_its_parent(world: World) -> None:
    c, protein, galaxy = world.client, world.protein, world.galaxy
    label = world.inst.labels[protein]
    page = c.get("/papers/pp:protein-0003", headers=HTML)
    assert page.status_code == 200
    line = re.search(r'<p class="topic-line">.*?</p>', page.text, re.S)
    assert line is not None
    assert f'Topic: <a href="/topics/{protein}">{label}</a>' in line.group(0)
    assert f'(part of <a href="/topics/{COARSE}">life sciences</a>)' in line.group(0)
    md = c.get("/papers/pp:protein-0003.md").text
    assert f"- **Topic:** [{label}](http://testserver/topics/{protein})" in md
    assert f"(part of [life sciences](http://testserver/topics/{COARSE}))" in md
    body = c.get("/api/papers/pp:protein-0003").json()
    assert body["topic"]["id"] == protein
    assert body["topic"]["parent"] == {"id": COARSE, "label": "life sciences", "url": f"/topics/{COARSE}"}
    # the galaxy topic's parent is the one the build made (two levels since the hierarchy landed)
    built = world.app.catalogue.topics.records.topic(galaxy)
    assert built is not None
    assert built.parent_id is not None
    parent = world.app.catalogue.topics.records.topic(built.parent_id)
    assert parent is not None
    assert parent.level == 1
    other = c.get("/papers/pp:galaxy-0001", headers=HTML).text
    assert f'Topic: <a href="/topics/{galaxy}">' in other
    galaxy_line = re.search(r'<p class="topic-line">.*?</p>', other, re.S)
    assert galaxy_line is not None
    assert f'part of <a href="/topics/{parent.id}">' in galaxy_line.group(0)
    assert c.get("/api/papers/pp:galaxy-0001").json()["topic"]["parent"]["id"] == parent.id


def test_a_paper_not_placed_yet_shows_no_topic(world: World) -> None:
    fresh = Paper(
        id="pp:fresh-0001",
        title="A fresh paper",
        abstract="Not embedded, not placed.",
        authors=("Ada Lovelace",),
        published=datetime(2026, 11, 20, tzinfo=UTC),
        sources={"test": "fresh"},
    )
    world.app.core.store.apply_batch(Batch(papers=[fresh]))
    page = world.client.get("/papers/pp:fresh-0001", headers=HTML)
    assert page.status_code == 200
    assert "topic-line" not in page.text
    assert "**Topic:**" not in world.client.get("/papers/pp:fresh-0001.md").text
    assert world.client.get("/api/papers/pp:fresh-0001").json()["topic"] is None


def test_search_by_a_coarse_topic_takes_its_fine_topics_papers(world: World) -> None:
    got = world.client.get(f"/api/papers/search?q=study&topic={COARSE}&limit=100")
    assert got.status_code == 200
    ids = {item["paper"]["id"] for item in got.json()}
    assert ids
    assert ids <= world.inst.members[world.protein]


# -- 3. upvotes in the trend plot ------------------------------------------------------------------------


def test_topic_plot_shows_papers_and_upvotes_with_a_table(world: World) -> None:
    protein = world.protein
    page = world.client.get(f"/topics/{protein}", headers=HTML).text
    weeks = world.client.get(f"/api/topics/{protein}").json()["weeks"]
    assert weeks
    assert all("upvotes" in w for w in weeks)
    svg = re.search(r'<svg class="trend-plot".*?</svg>', page, re.S)
    assert svg is not None
    plot = svg.group(0)
    assert 'aria-label="' in plot
    assert "papers and upvotes per week" in plot
    assert plot.count('class="bar"') == len(weeks)
    assert plot.count('class="bar-upvotes"') == len(weeks)
    assert '<text class="panel-name"' in plot
    assert ">papers</text>" in plot
    assert ">upvotes</text>" in plot
    peak = max(w["upvotes"] for w in weeks)
    assert f">{peak}</text>" in plot  # the upvote panel's axis maximum
    rows = re.findall(r"<tr><td>(\d{4}-\d\d-\d\d)</td><td>(\d+)</td><td>(\d+)</td></tr>", page)
    assert [(d, int(n), int(u)) for d, n, u in rows] == [
        (w["week"], w["papers"], w["upvotes"]) for w in weeks
    ]
    members = world.app.core.store.get_papers(sorted(world.inst.members[protein]))
    assert sum(w["upvotes"] for w in weeks) == sum(p.upvotes or 0 for p in members.values())


# -- 4. picking topics: forms, API, privacy ------------------------------------------------------------


def test_anonymous_readers_cannot_pick(world: World) -> None:
    c = world.client
    c.cookies.clear()
    assert c.post(f"/topics/{world.protein}/pick", headers=HTML).status_code == 403  # no CSRF token
    token = csrf_of(c, "/signin")
    page = c.post(f"/topics/{world.protein}/pick", headers=HTML, data={"csrf_token": token})
    assert page.status_code == 303  # sign in first
    assert page.headers["location"].startswith("/signin?next=")
    assert c.get("/api/me/topics").status_code == 401
    assert c.put(f"/api/me/topics/{world.protein}", headers={CSRF_HEADER: token}).status_code == 401
    assert c.delete(f"/api/me/topics/{world.protein}", headers={CSRF_HEADER: token}).status_code == 401
    assert c.put(f"/api/me/topics/{world.protein}").status_code == 403  # no token and no credentials
    topics_page = c.get("/topics", headers=HTML).text
    assert "topic-pick" not in topics_page  # no buttons for anonymous readers
    with world.app.core.store.engine.connect() as conn:
        assert conn.execute(select(topic_picks)).all() == []


def test_pick_and_unpick_by_form_with_csrf(world: World) -> None:
    user = make_user(world.app, f"form-{world.inst.backend}@example.org")
    c = sign_in(world.client, world.app, user)
    protein = world.protein
    refused = c.post(f"/topics/{protein}/pick", headers=HTML, data={"next": "/topics"})
    assert refused.status_code == 403
    assert world.app.catalogue.topic_picks.picked(user.id) == []
    token = csrf_of(c, "/topics")
    assert f'action="/topics/{protein}/pick"' in c.get("/topics", headers=HTML).text
    done = c.post(f"/topics/{protein}/pick", headers=HTML, data={"csrf_token": token, "next": "/topics"})
    assert (done.status_code, done.headers["location"]) == (303, "/topics")
    assert [p.topic.id for p in world.app.catalogue.topic_picks.picked(user.id)] == [protein]
    again = c.post(f"/topics/{protein}/pick", headers=HTML, data={"csrf_token": token})
    assert (again.status_code, again.headers["location"]) == (303, f"/topics/{protein}")
    assert len(world.app.catalogue.topic_picks.picked(user.id)) == 1  # picking twice changes nothing
    topic_page = c.get(f"/topics/{protein}", headers=HTML).text
    assert f'action="/topics/{protein}/unpick"' in topic_page
    assert 'aria-pressed="true"' in topic_page
    for_you = c.get("/for-you", headers=HTML).text
    assert "Your topics" in for_you
    assert f'<a href="/topics/{protein}">{world.inst.labels[protein]}</a>' in for_you
    unknown = c.post("/topics/999999/pick", headers=HTML, data={"csrf_token": token})
    assert unknown.status_code == 404
    bad = c.post("/topics/x²/pick", headers=HTML, data={"csrf_token": token})
    assert bad.status_code == 404
    off = c.post(f"/topics/{protein}/unpick", headers=HTML, data={"csrf_token": token, "next": "/for-you"})
    assert (off.status_code, off.headers["location"]) == (303, "/for-you")
    assert world.app.catalogue.topic_picks.picked(user.id) == []
    outside = c.post(
        f"/topics/{protein}/pick", headers=HTML, data={"csrf_token": token, "next": "//evil.example"}
    )
    assert outside.headers["location"] == f"/topics/{protein}"  # never back to another site
    world.app.catalogue.topic_picks.unpick(user.id, protein)


def test_pick_api_with_a_token_and_another_readers_picks_stay_invisible(world: World) -> None:
    ada = make_user(world.app, f"ada-{world.inst.backend}@example.org")
    bob = make_user(world.app, f"bob-{world.inst.backend}@example.org")
    _, ada_token = world.app.readers.accounts.create_api_token(ada, "script")
    _, bob_token = world.app.readers.accounts.create_api_token(bob, "script")
    c = world.client
    c.cookies.clear()
    as_ada = {"authorization": f"Bearer {ada_token}"}
    as_bob = {"authorization": f"Bearer {bob_token}"}
    put = c.put(f"/api/me/topics/{world.galaxy}", headers=as_ada)
    assert put.status_code == 200, put.text
    body = put.json()
    assert body["picked"]["id"] == world.galaxy
    assert [t["id"] for t in body["topics"]] == [world.galaxy]
    assert put.headers["cache-control"] == "private, no-store"
    listed = c.get("/api/me/topics", headers=as_ada).json()
    assert [(t["id"], t["label"], t["url"]) for t in listed] == [
        (world.galaxy, world.inst.labels[world.galaxy], f"/topics/{world.galaxy}")
    ]
    assert c.get("/api/me/topics", headers=as_bob).json() == []  # Bob sees only his own
    assert c.delete(f"/api/me/topics/{world.galaxy}", headers=as_bob).status_code == 404  # not his to remove
    assert len(c.get("/api/me/topics", headers=as_ada).json()) == 1
    for bad in ("999999", "abc", "²"):
        got = c.put(f"/api/me/topics/{bad}", headers=as_ada)
        assert got.status_code == 404, bad
        assert "no topic" in got.json()["error"]
    gone = c.delete(f"/api/me/topics/{world.galaxy}", headers=as_ada)
    assert (gone.status_code, gone.json()) == (200, {"topics": []})
    assert c.delete(f"/api/me/topics/{world.galaxy}", headers=as_ada).status_code == 404
    assert c.get("/api/me/topics", headers={"authorization": "Bearer pf_nope"}).status_code == 401


def test_pick_api_with_a_session_cookie_needs_the_csrf_header(world: World) -> None:
    user = make_user(world.app, f"cookie-{world.inst.backend}@example.org")
    c = sign_in(world.client, world.app, user)
    assert c.put(f"/api/me/topics/{world.protein}").status_code == 403
    assert world.app.catalogue.topic_picks.picked(user.id) == []
    token = csrf_of(c, "/topics")
    assert c.put(f"/api/me/topics/{world.protein}", headers={CSRF_HEADER: token}).status_code == 200
    assert [p.topic.id for p in world.app.catalogue.topic_picks.picked(user.id)] == [world.protein]


# -- 4. "For you" from picked topics ---------------------------------------------------------------------


def test_a_new_reader_gets_papers_of_the_picked_topics_with_the_reason(world: World) -> None:
    user = make_user(world.app, f"cold-{world.inst.backend}@example.org")
    world.app.catalogue.topic_picks.pick(user.id, world.protein)
    world.app.catalogue.topic_picks.pick(user.id, world.galaxy)
    _, secret = world.app.readers.accounts.create_api_token(user, "script")
    world.client.cookies.clear()
    got = world.client.get("/api/me/recommendations?limit=20", headers={"authorization": f"Bearer {secret}"})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["mode"] == "topics"
    assert "from the 2 topics you picked" in body["message"]
    picked = world.inst.members[world.protein] | world.inst.members[world.galaxy]
    items = body["items"]
    assert len(items) == 20
    start, end = body["window"]["start"], body["window"]["end"]
    for item in items:
        assert item["paper"]["id"] in picked
        assert start <= item["paper"]["publishedAt"][:10] <= end
        (reason,) = item["reasons"]
        assert reason["kind"] == "topic"
        topic = world.protein if item["paper"]["id"] in world.inst.members[world.protein] else world.galaxy
        assert reason["topicId"] == topic
        assert item["reason"] == f"from your topic: {world.inst.labels[topic]}"
    kinds = [it["reasons"][0]["topicId"] for it in items[:4]]
    assert kinds == [min(kinds), max(kinds)] * 2  # the topics interleave
    firsts = [it["paper"]["upvotes"] for it in items if it["reasons"][0]["topicId"] == world.protein]
    assert firsts == sorted(firsts, reverse=True)  # upvoted first within a topic
    page = sign_in(world.client, world.app, user).get("/for-you", headers=HTML).text
    label = world.inst.labels[world.protein]
    assert f'from your topic: <a href="/topics/{world.protein}">{label}</a>' in " ".join(page.split())


def test_a_reader_with_a_model_is_not_steered_by_picks(world: World) -> None:
    user = make_user(world.app, f"model-{world.inst.backend}@example.org")
    for i in range(8):
        world.app.readers.library.save(user.id, f"pp:graph-{i + 2:04d}")
    world.app.catalogue.topic_picks.pick(user.id, world.galaxy)
    feed = world.app.readers.recommendations.feed(user.id, limit=10)
    assert feed.mode == "model"
    assert all(r.kind != "topic" for rec in feed.items for r in rec.reasons)


def test_few_saves_and_picks_mix_similarity_and_topics(world: World) -> None:
    user = make_user(world.app, f"few-{world.inst.backend}@example.org")
    world.app.readers.library.save(user.id, "pp:graph-0002")
    world.app.catalogue.topic_picks.pick(user.id, world.galaxy)
    feed = world.app.readers.recommendations.feed(user.id, limit=60)
    assert feed.mode == "similarity"
    assert "topics you picked" in (feed.message or "")
    kinds = {r.kind for rec in feed.items for r in rec.reasons}
    assert {"similar", "topic"} <= kinds


# -- picks and rebuilds: the lineage, never an error ------------------------------------------------------


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_picks_follow_a_rebuild_or_are_dropped(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    with database_url(request, backend) as url:
        inst = populate(ui_settings(tmp_path / "data", url), backend)
        app = build_app(inst.settings)
        try:
            user = make_user(app, "lineage@example.org")
            before = sorted(inst.members)
            for tid in before:
                app.catalogue.topic_picks.pick(user.id, tid)
            SqlTopicPicks(app.core.store.engine).pick(user.id, 777, datetime.now(UTC))  # never a topic
            rebuild = TopicService(
                app.catalogue.topics.records,
                app.indexes.embeddings,
                app.core.store,
                app.catalogue.topics.modeller,
                app.catalogue.topics.counter,
                replace(topic_settings(DEFAULTS), min_papers=30, k=2),
                rebuild_after=timedelta(days=DEFAULTS.topics_rebuild_days),
                rebuild_growth=DEFAULTS.topics_rebuild_growth,
            )
            rebuild.build()
            live = {t.id for t in app.catalogue.topics.records.topics()}
            assert len(live) == 2
            gone = set(before) - live
            assert len(gone) == 1
            (removed,) = gone
            successor = app.catalogue.topics.records.successor(removed)
            assert successor in live
            picked = app.catalogue.topic_picks.picked(user.id)
            assert sorted(p.topic.id for p in picked) == sorted(live)  # moved, de-duplicated
            assert 777 not in {p.asked for p in picked}
            stored = SqlTopicPicks(app.core.store.engine).picks(user.id)
            assert sorted(t for t, _ in stored) == sorted(live)  # resolved once, in the store
            assert (
                app.catalogue.topic_picks.pick(user.id, removed).id == successor
            )  # an old form picks the successor
            assert app.catalogue.topic_picks.unpick(user.id, removed)  # ... and unpicks it
        finally:
            app.close()
        with client_of(inst.settings) as c:
            r = c.get(f"/api/papers/search?q=study&topic={removed}&limit=7")
            assert r.status_code == 301
            assert r.headers["location"] == f"/api/papers/search?q=study&limit=7&topic={successor}"
            page = c.get(f"/search?q=study&topic={removed}", headers=HTML)
            assert page.status_code == 301
            assert page.headers["location"] == f"/search?q=study&topic={successor}"
            sign_in(c, app, user)
            for_you = c.get("/for-you", headers=HTML)
            assert for_you.status_code == 200
            assert "from your topic:" in for_you.text


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_without_topics_nothing_is_shown_and_nothing_breaks(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """Topics never built: no topic line, ``topic: null``, search by topic 400, picking 404, For you as
    before."""
    with database_url(request, backend) as url:
        settings = ui_settings(tmp_path / "data", url)
        app = build_app(settings)
        try:
            paper = Paper(
                id="pp:lone-0001",
                title="A lone paper",
                abstract="Alone.",
                authors=("Ada Lovelace",),
                published=datetime.now(UTC) - timedelta(days=1),
                sources={"test": "lone"},
            )
            app.core.store.apply_batch(Batch(papers=[paper]))
            user = make_user(app, "nobuild@example.org")
        finally:
            app.close()
        with client_of(settings) as c:
            page = c.get("/papers/pp:lone-0001", headers=HTML)
            assert page.status_code == 200
            assert "topic-line" not in page.text
            assert "**Topic:**" not in c.get("/papers/pp:lone-0001.md").text
            assert c.get("/api/papers/pp:lone-0001").json()["topic"] is None
            assert c.get("/api/papers/search?q=lone&topic=1").status_code == 400
            assert c.get("/search?q=lone&topic=1", headers=HTML).status_code == 400
            assert 'id="f-topic"' not in c.get("/search?q=lone", headers=HTML).text  # no topics to choose
            sign_in(c, app, user)
            token = csrf_of(c, "/topics")
            assert c.post("/topics/1/pick", headers=HTML, data={"csrf_token": token}).status_code == 404
            assert c.put("/api/me/topics/1", headers={CSRF_HEADER: token}).status_code == 404
            for_you = c.get("/for-you", headers=HTML)
            assert for_you.status_code == 200
            assert "None yet." in for_you.text


# -- the ranking of a topic's papers (pure) ---------------------------------------------------------------


def test_rank_candidates_interleaves_topics_upvotes_first() -> None:
    day = datetime(2026, 11, 1, tzinfo=UTC)
    found = [
        TopicCandidate("a1", 1, 0.9, 0, day),
        TopicCandidate("a2", 1, 0.5, 7, day),
        TopicCandidate("a3", 1, 0.8, 0, day + timedelta(days=1)),
        TopicCandidate("b1", 2, 0.7, 1, day),
        TopicCandidate("a2", 2, 0.7, 9, day),  # in two picked (fine and coarse) topics: shown once
    ]
    assert [c.paper_id for c in rank_candidates(found, 3)] == ["a2", "a1", "b1", "a3"]
    assert [c.paper_id for c in rank_candidates(found, 1)] == ["a2"]
    assert rank_candidates([], 5) == []
