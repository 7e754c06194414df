"""/topics, /topics/{id} and the topic API through the real app on a real SQLite store; one real browser.

The instance holds the synthetic three-group papers of the conftest (vectors saved for real), its topics
built by the App's own TopicService (scikit-learn k-means), the fake embedding backend configured so
nothing loads a model. Then a rebuild merges two groups, so one id has a successor.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from paperfeed.bootstrap import build_app
from paperfeed.cli import cli_app
from paperfeed.domain.now import site_now
from paperfeed.domain.topics import week_of
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.live_server import live_server

from .conftest import NOW, add_papers, group_of, save_vectors


def _settings(data_dir: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=None,
        embedding_backend="fake",
        topics_min_papers=30,
        topics_k=3,
        **extra,
    )


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Topics built twice: three groups, then graph and protein merged (k fixed at 2 through the CLI)."""
    data_dir = tmp_path_factory.mktemp("topics-instance")
    app = build_app(_settings(data_dir))
    try:
        add_papers(app.core.store, 40)
        first = app.catalogue.topics.build()
        groups = {
            group_of(pid): app.catalogue.topics.topic_of(pid) for pid in ("pp:graph-0000", "pp:protein-0000")
        }
        made = list(app.core.store.get_papers([f"pp:protein-{i:04d}" for i in range(40)]).values())
        save_vectors(app.core.store, made, np.random.default_rng(3), {"protein": "graph"})
    finally:
        app.close()
    result = CliRunner().invoke(
        cli_app,
        ["--data-dir", str(data_dir), "topics", "build"],
        env={
            "PAPERFEED_TOPICS_K": "2",
            "PAPERFEED_TOPICS_MIN_PAPERS": "30",
            "PAPERFEED_EMBEDDING_BACKEND": "fake",
        },
    )
    assert result.exit_code == 0, result.output
    app = build_app(_settings(data_dir))
    try:
        live = {t.id for t in app.catalogue.topics.records.topics()}
        graph_now = app.catalogue.topics.topic_of("pp:graph-0000")
    finally:
        app.close()
    assert first.build.topics == 3
    assert len(live) == 2
    gone = ({t.id for t in groups.values() if t is not None} - live).pop()
    assert graph_now is not None
    return {"data_dir": data_dir, "gone": gone, "graph": graph_now.id, "live": live, "cli": result.output}


@pytest.fixture(scope="module")
def client(instance: dict[str, Any]) -> Iterator[TestClient]:
    app = create_app(lambda: build_app(_settings(instance["data_dir"])))
    with TestClient(app, raise_server_exceptions=True, follow_redirects=False) as c:
        yield c


def test_the_cli_build_reports_what_it_kept(instance: dict[str, Any]) -> None:
    # graph + protein (80 papers) shares exactly half with the old graph topic (Jaccard 40/80 >= 0.5) and
    # with the old protein one: the lower id keeps it; galaxy keeps its own; the other id is removed
    out = " ".join(instance["cli"].split())
    assert re.search(
        r"built 2 topics of 120 papers in [\d.]+ s \(kmeans k=2 seed=0; test-model\): "
        r"2 kept their id, 0 new, 1 removed",
        out,
    ), out


def test_topics_page_lists_topics_with_a_sparkline(client: TestClient, instance: dict[str, Any]) -> None:
    r = client.get("/topics")
    assert r.status_code == 200
    html = r.text
    assert html.count('<svg class="sparkline"') == 2
    for tid in instance["live"]:
        assert f'href="/topics/{tid}"' in html
    assert "galaxy" in html
    assert "<script" not in html.split("<main", 1)[1]  # the list needs no script


def _expected_bars() -> int:
    """A bar per week from the first paper (2026-10-18, week of 10-12) to the week of the site's "now".

    The site's now is the wall clock while the newest paper (NOW) is less than a week old, else NOW itself:
    7 bars (to the week of 11-23) once the instance is an archive, one or two more in the days after NOW.
    """
    now = site_now(datetime.now(UTC), NOW).at
    return (week_of(now) - week_of(date(2026, 10, 18))).days // 7 + 1


def test_topic_page_has_papers_trend_plot_and_neighbours(
    client: TestClient, instance: dict[str, Any]
) -> None:
    r = client.get(f"/topics/{instance['graph']}")
    assert r.status_code == 200
    assert '<svg class="trend-plot"' in r.text
    assert r.text.count('class="bar"') == _expected_bars()
    assert "Neighbouring topics" in r.text
    assert r.text.count("/papers/pp:") >= 30  # the first page of its 80 papers
    assert 'rel="next"' in r.text
    assert client.get(f"/topics/{instance['graph']}?page=3").status_code == 200


def test_a_removed_topic_redirects_to_its_successor_and_an_unknown_one_is_404(
    client: TestClient, instance: dict[str, Any]
) -> None:
    r = client.get(f"/topics/{instance['gone']}")
    assert r.status_code == 301
    assert r.headers["location"] == f"/topics/{instance['graph']}"
    r = client.get(f"/api/topics/{instance['gone']}")
    assert (r.status_code, r.headers["location"]) == (301, f"/api/topics/{instance['graph']}")
    for bad in ("999999", "abc", "-1", "1e3", "99999999999999999999", "²", "1²"):  # "²".isdigit() is True
        assert client.get(f"/topics/{bad}").status_code == 404, bad
        r = client.get(f"/api/topics/{bad}")
        assert r.status_code == 404, bad
        assert "no topic" in r.json()["error"]
    assert client.get(f"/topics/{instance['graph']}?page=0").status_code in (400, 422)


def test_topics_api(client: TestClient, instance: dict[str, Any]) -> None:
    body = client.get("/api/topics").json()
    assert body["build"]["topics"] == 2
    assert body["build"]["generation"] == 2
    assert {t["id"] for t in body["topics"]} == instance["live"]
    assert all(len(t["weeks"]) == 26 and t["words"] and t["label"] for t in body["topics"])
    one = client.get(f"/api/topics/{instance['graph']}", params={"limit": 5}).json()
    assert one["topic"]["size"] == 80
    assert len(one["papers"]) == 5
    assert one["papers"][0]["id"].startswith("pp:")
    assert sum(w["papers"] for w in one["weeks"]) == 80
    assert [n["id"] for n in one["neighbours"]] == list(instance["live"] - {instance["graph"]})
    assert client.get(f"/api/topics/{instance['graph']}", params={"limit": 101}).status_code == 400


def test_paper_api_gains_its_topic(client: TestClient, instance: dict[str, Any]) -> None:
    body = client.get("/api/papers/pp:protein-0003").json()
    assert body["topic"]["id"] == instance["graph"]
    assert body["topic"]["url"] == f"/topics/{instance['graph']}"


def test_too_few_papers_cli_is_one_clear_line_and_writes_nothing(tmp_path: Path) -> None:
    app = build_app(_settings(tmp_path))
    try:
        add_papers(app.core.store, 7)  # 21 papers
    finally:
        app.close()
    result = CliRunner().invoke(
        cli_app, ["--data-dir", str(tmp_path), "topics", "build"], env={"PAPERFEED_TOPICS_MIN_PAPERS": "200"}
    )
    assert result.exit_code == 2
    assert "too few papers for topics: 21 with an embedding, at least 200 needed" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(cli_app, ["--data-dir", str(tmp_path), "topics", "place"])
    assert result.exit_code == 2
    assert "no topics yet" in result.output
    app = build_app(_settings(tmp_path))
    try:
        assert app.catalogue.topics.records.current() is None
    finally:
        app.close()
    client = TestClient(create_app(lambda: build_app(_settings(tmp_path))))
    with client:
        r = client.get("/topics")
        assert r.status_code == 200
        assert "No topics yet" in r.text
        assert client.get("/api/topics").json() == {"build": None, "topics": [], "rising": []}


def test_topics_page_in_a_real_browser(chromium_browser: Any, instance: dict[str, Any]) -> None:
    """Chromium renders /topics under the real CSP with no console error, the sparklines as SVG."""
    with live_server(_settings(instance["data_dir"])) as url:
        context = chromium_browser.new_context()
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/topics")
        spark = page.locator("svg.sparkline")
        spark.first.wait_for()
        assert spark.count() == 2
        box = spark.first.bounding_box()
        assert box is not None
        assert box["width"] > 50
        assert box["height"] > 10
        page.locator("table.topics-table a").first.click()
        page.locator("svg.trend-plot").wait_for()
        assert page.locator("svg.trend-plot rect.bar").count() == _expected_bars()
        context.close()
        assert errors == []


def test_cli_list_and_place(instance: dict[str, Any]) -> None:
    env = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}
    listed = CliRunner().invoke(cli_app, ["--data-dir", str(instance["data_dir"]), "topics", "list"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "2 topics of 120 papers" in listed.output
    assert f"{instance['graph']:>5}       80  " in listed.output
    placed = CliRunner().invoke(
        cli_app, ["--data-dir", str(instance["data_dir"]), "topics", "place"], env=env
    )
    assert placed.exit_code == 0, placed.output
    assert "placed 0 papers" in placed.output


def test_topics_api_levels(client: TestClient, instance: dict[str, Any]) -> None:
    fine = client.get("/api/topics").json()
    assert {t["level"] for t in fine["topics"]} == {0}
    coarse = client.get("/api/topics", params={"level": "1"}).json()
    assert fine["build"]["coarseTopics"] == len(coarse["topics"]) == 2
    assert {t["level"] for t in coarse["topics"]} == {1}
    assert all(t["parent_id"] is None for t in coarse["topics"])
    parents = {t["id"] for t in coarse["topics"]}
    assert all(t["parent_id"] in parents for t in fine["topics"])
    both = client.get("/api/topics", params={"level": "all"}).json()
    assert len(both["topics"]) == len(fine["topics"]) + 2
    one = client.get(f"/api/topics/{coarse['topics'][0]['id']}").json()
    assert one["topic"]["level"] == 1
    assert one["papers"]
    r = client.get("/api/topics", params={"level": "2"})
    assert r.status_code == 400
    assert "level" in r.text


def test_cli_list_shows_fine_topics_under_their_coarse_topics(instance: dict[str, Any]) -> None:
    env = {"PAPERFEED_EMBEDDING_BACKEND": "fake"}
    listed = CliRunner().invoke(cli_app, ["--data-dir", str(instance["data_dir"]), "topics", "list"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "in 2 coarse topics" in listed.output
    lines = [ln for ln in listed.output.splitlines() if re.match(r"\s*\d+\s+\d+\s+\S", ln)]
    assert len(lines) == 4  # two coarse topics, each with its fine topic indented under it
    assert [ln.startswith("       ") for ln in lines] == [False, True, False, True]
