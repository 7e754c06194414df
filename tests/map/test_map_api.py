"""The map's API and pages on a real store (SQLite, then PostgreSQL): before any topics build, after one,
with bad parameters and with a hidden paper."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.web import create_app
from tests.topics.conftest import add_papers

from .conftest import decode, settings_for


@pytest.fixture
def empty_client(db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    app = build_app(settings_for(tmp_path, db_url))
    try:
        add_papers(app.core.store, 10, embed=False)  # papers, but no topics build yet
    finally:
        app.close()
    with TestClient(create_app(lambda: build_app(settings_for(tmp_path, db_url)))) as client:
        yield client


@pytest.fixture
def built(db_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    app = build_app(settings_for(tmp_path, db_url))
    try:
        add_papers(app.core.store, 40)
        app.catalogue.topics.build()
    finally:
        app.close()
    web_app = build_app(settings_for(tmp_path, db_url))
    with TestClient(create_app(lambda: web_app)) as client:
        yield client, web_app


def test_before_any_topics_build_the_answers_are_empty_and_clear(empty_client: TestClient) -> None:
    r = empty_client.get("/api/map/points")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/octet-stream"
    points = decode(r.content)
    assert points["header"]["count"] == 0
    assert points["header"]["generation"] is None
    assert points["ids"] == []
    assert points["header"]["topics"] == []
    body = empty_client.get("/api/map/points", params={"format": "json"}).json()
    assert (body["generation"], body["count"], body["points"]["id"]) == (None, 0, [])
    page = empty_client.get("/map")
    assert page.status_code == 200
    assert "No map yet" in page.text
    assert 'href="/topics"' in page.text
    assert 'id="map-canvas"' not in page.text
    paper = empty_client.get("/papers/pp:graph-0001")
    assert paper.status_code == 200
    assert "On the map" not in paper.text  # no place yet: no small map, no error
    assert empty_client.get("/api/map/titles", params={"ids": "pp:graph-0001"}).json() == {
        "titles": {"pp:graph-0001": "Graph study pp:graph-0001"}
    }


def test_points_after_a_build(built: tuple[TestClient, Any]) -> None:
    client, app = built
    r = client.get("/api/map/points")
    assert r.status_code == 200
    points = decode(r.content)
    header = points["header"]
    assert header["count"] == 120
    assert header["generation"] == 1
    assert points["ids"] == sorted(points["ids"])
    assert len(set(points["ids"])) == 120
    assert header["categories"] == ["cs.LG"]
    assert set(points["category"]) == {0}
    assert len([t for t in header["topics"] if t["level"] == 0]) == 3
    assert all(t["label"] and t["url"] == f"/topics/{t['id']}" for t in header["topics"])
    # each paper's topic index names the topic the store gives it, its day its published date
    for i in (0, 57, 119):
        pid = points["ids"][i]
        assert header["topics"][points["topic"][i]]["id"] == app.catalogue.topics.topic_of(pid).id
        published = app.core.store.get_papers([pid])[pid].published
        assert points["day"][i] == (published.date() - datetime(1970, 1, 1, tzinfo=UTC).date()).days
    assert min(points["x"]) == 0
    assert max(points["x"]) == 65535
    # the JSON form carries the same columns
    body = client.get("/api/map/points", params={"format": "json"}).json()
    assert body["points"]["id"] == points["ids"]
    assert body["points"]["topic"] == points["topic"]
    assert body["points"]["day"] == points["day"]
    assert r.headers["cache-control"].startswith("public, max-age=300")
    again = client.get("/api/map/points", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


def test_titles_for_hovering(built: tuple[TestClient, Any]) -> None:
    client, _ = built
    r = client.get("/api/map/titles", params={"ids": "pp:graph-0001,pp:galaxy-0002,nope:0"})
    assert r.status_code == 200
    assert r.json()["titles"] == {
        "pp:graph-0001": "Graph study pp:graph-0001",
        "pp:galaxy-0002": "Galaxy study pp:galaxy-0002",
    }


@pytest.mark.parametrize(
    ("path", "params", "param"),
    [
        ("/api/map/points", {"format": "xml"}, "format"),
        ("/api/map/titles", {}, "ids"),
        ("/api/map/titles", {"ids": " , "}, "ids"),
        ("/api/map/titles", {"ids": ",".join(f"pp:graph-{i:04d}" for i in range(51))}, "ids"),
        ("/api/map/titles", {"ids": "x" * 65}, "ids"),
        ("/api/map/titles", {"ids": "a\x00b"}, "ids"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(
    empty_client: TestClient, path: str, params: dict[str, str], param: str
) -> None:
    r = empty_client.get(path, params=params)
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(f"{param}:") or any(
        e["param"] == param for e in r.json().get("errors", [])
    ), r.json()


def test_map_page_bad_paper_parameter_is_400(empty_client: TestClient) -> None:
    r = empty_client.get("/map", params={"paper": "x" * 65})
    assert r.status_code == 400
    assert "paper" in r.text


def test_map_page_and_the_paper_pages_small_map(built: tuple[TestClient, Any]) -> None:
    client, app = built
    page = client.get("/map", params={"paper": "pp:graph-0003"})
    assert page.status_code == 200
    html = page.text
    assert 'id="map-canvas"' in html
    assert 'data-paper="pp:graph-0003"' in html
    assert "/static/map.js?v=" in html
    assert "/static/map.css?v=" in html
    assert "<noscript>" in html
    assert 'href="/topics"' in html.split("<noscript>", 1)[1]
    assert 'href="/map" aria-current="page"' in html  # in the site navigation
    main = html.split("<main", 1)[1]
    assert "<script>" not in main
    assert " style=" not in main
    paper = client.get("/papers/pp:graph-0003")
    assert paper.status_code == 200
    svg = paper.text.split('<svg class="place-map"', 1)[1].split("</svg>", 1)[0]
    backdrop = svg.split('class="backdrop" d="', 1)[1].split('"', 1)[0]
    tinted = svg.split('class="topic" d="', 1)[1].split('"', 1)[0]
    assert backdrop.count("h0") == 120  # fewer papers than the sample: every one
    assert tinted.count("h0") == 40  # its topic's papers
    assert 'class="paper"' in svg
    assert 'href="/map?paper=pp:graph-0003"' in paper.text
    topic = app.catalogue.topics.topic_of("pp:graph-0003")
    assert f'href="/topics/{topic.id}"' in paper.text.split('id="place-title"', 1)[1]


def test_a_hidden_paper_is_not_on_the_map(built: tuple[TestClient, Any]) -> None:
    client, app = built
    assert app.readers.accounts.hide_paper("pp:graph-0001", reason="spam")
    points = decode(client.get("/api/map/points").content)
    assert "pp:graph-0001" not in points["ids"]
    assert points["header"]["count"] == 119
    titles = client.get("/api/map/titles", params={"ids": "pp:graph-0001"}).json()
    assert titles == {"titles": {}}


def test_a_rebuild_reaches_the_cached_points(db_url: str, tmp_path: Path) -> None:
    """The data version moves with a topic build, so the public cache serves the old map for the grace
    at most (here 0.5 s; docs/deployment.md), then the new one."""
    import time

    app = build_app(settings_for(tmp_path, db_url))
    try:
        add_papers(app.core.store, 40)
        app.catalogue.topics.build()
    finally:
        app.close()
    tuned = {
        "page_cache_grace_seconds": 0.5,
        "page_cache_import_grace_seconds": 0.5,
        "page_cache_check_seconds": 0.0,
        "page_cache_refresh_seconds": 0.0,  # past the grace the reader waits for the new map
    }
    web_app = build_app(settings_for(tmp_path, db_url, **tuned))
    with TestClient(create_app(lambda: web_app)) as client:
        assert decode(client.get("/api/map/points").content)["header"]["generation"] == 1
        web_app.catalogue.topics.build()
        time.sleep(0.6)
        assert decode(client.get("/api/map/points").content)["header"]["generation"] == 2


class _CountingRecords:
    """The real map records, counting how often a paper page's small map reads the build's topics."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.topic_reads = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def map_topics(self) -> Any:
        self.topic_reads += 1
        return self.inner.map_topics()


def test_small_maps_read_the_topics_once_per_build(built: tuple[TestClient, Any]) -> None:
    """At 200k papers (~1,300 topics) reading every topic for each paper page was 29 of its map's 35 ms;
    they are kept with the backdrop until the next build."""
    from paperfeed.services.topic_map import TopicMapService

    _, app = built
    records = _CountingRecords(app.catalogue.topic_map.records)
    service = TopicMapService(records)
    first = service.place("pp:graph-0003")
    second = service.place("pp:graph-0004")
    assert first is not None
    assert second is not None
    assert records.topic_reads == 1
    assert first.topic is not None
    assert first.topic.id == app.catalogue.topics.topic_of("pp:graph-0003").id
    app.catalogue.topics.build()  # a new generation: its topics, not the kept ones
    again = service.place("pp:graph-0003")
    assert records.topic_reads == 2
    assert again is not None
    assert again.topic is not None
    assert again.topic.id == app.catalogue.topics.topic_of("pp:graph-0003").id


def test_papers_without_a_published_date_are_on_the_map_with_an_unknown_day(
    db_url: str, tmp_path: Path
) -> None:
    """The seed pages' papers have no published date. On SQLite the day was computed with floor(),
    which SQLAlchemy's SQLite dialect provides as Python's math.floor: it raised on NULL, and once the
    topics were built every /api/map/points answered 503 "database unavailable" (seen in
    bench.time_to_capability on the 391 seed papers)."""
    import numpy as np

    from paperfeed.domain.ingest import Batch
    from tests.topics.conftest import paper, save_vectors

    app = build_app(settings_for(tmp_path, db_url))
    try:
        made = add_papers(app.core.store, 40, embed=False)
        undated = [
            replace(paper(f"seed:graph-{i:04d}", "graph", datetime.now(UTC)), published=None)
            for i in range(3)
        ]
        app.core.store.apply_batch(Batch(papers=undated))
        save_vectors(app.core.store, [*made, *undated], np.random.default_rng(0))
        app.catalogue.topics.build()
    finally:
        app.close()
    with TestClient(create_app(lambda: build_app(settings_for(tmp_path, db_url)))) as client:
        answer = client.get("/api/map/points", params={"format": "json"})
        assert answer.status_code == 200, answer.text
        points = answer.json()["points"]
        days = dict(zip(points["id"], points["day"], strict=True))
        assert len(days) == 123
        assert all(days[f"seed:graph-{i:04d}"] == 0 for i in range(3))  # 0: unknown
        assert days["pp:graph-0001"] > 0
        assert client.get("/api/map/points").status_code == 200  # the binary answer too
