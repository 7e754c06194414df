"""``sort=cited`` end to end: the store's candidates (SQLite and PostgreSQL), the ranking service, the
``/trending?sort=cited`` page and ``GET /api/daily_papers?sort=cited``."""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.adapters.store import SqlPaperStore
from paperfeed.adapters.store.citations import SqlCitationRecords
from paperfeed.adapters.store.cited_queries import SqlCitedQueries
from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.domain.paper_graph import PaperLinks
from paperfeed.services.citation_trend import CitedTrending
from paperfeed.settings import Settings
from paperfeed.web import create_app
from tests.support.papers import paper as make_paper

from .conftest import HARVESTED, cite, links, work


def dated(paper_id: str, day: date) -> Paper:
    return make_paper(paper_id, day=day, updated=True, abstract="An abstract.")


def graph(today: date) -> tuple[list[Paper], list[PaperLinks]]:
    """An old paper cited 24 times in the last year (and 30 times before), a two-week-old one cited 3
    times, one cited only three years ago, and citing works without a date (never counted)."""
    old, young, faded = "1706.03762", "2611.00001", "2001.00001"
    papers = [
        dated(old, date(2017, 6, 12)),
        dated(young, today - timedelta(days=14)),
        dated(faded, date(2020, 1, 1)),
    ]
    recent = [work(f"doi:10.1/r{i}", (today - timedelta(days=10 * i + 1)).isoformat()) for i in range(24)]
    before = [work(f"doi:10.1/b{i}", (today - timedelta(days=400 + i)).isoformat()) for i in range(30)]
    fresh = [work(f"doi:10.1/f{i}", (today - timedelta(days=i + 1)).isoformat()) for i in range(3)]
    undated = [work(f"doi:10.1/u{i}") for i in range(5)]
    long_ago = work("doi:10.1/long", (today - timedelta(days=3 * 365)).isoformat())
    return papers, [
        links(
            old, [cite(w.key, old) for w in [*recent, *before, *undated]], works=[*recent, *before, *undated]
        ),
        links(young, [cite(w.key, young) for w in fresh], works=fresh),
        links(faded, [cite(long_ago.key, faded)], works=[long_ago]),
    ]


def test_candidates_count_citing_works_dated_in_the_last_365_days(store: SqlPaperStore) -> None:
    today = date(2026, 11, 20)
    papers, graph_links = graph(today)
    store.apply_batch(Batch(papers=papers))
    SqlCitationRecords(store.engine).save_links(graph_links, harvested_at=HARVESTED)
    found = {c.paper.id: c for c in SqlCitedQueries(store.engine).cited_candidates(today)}
    assert set(found) == {"1706.03762", "2611.00001"}  # the faded paper has no recent citation
    assert found["1706.03762"].citations_last_12_months == 24
    assert found["1706.03762"].citations == 24 + 30 + 5  # every stored edge counts in the total
    assert found["2611.00001"].citations_last_12_months == 3

    page = CitedTrending(SqlCitedQueries(store.engine), today=lambda: today).page(limit=10)
    assert [i.paper.id for i in page.items] == ["1706.03762", "2611.00001"]
    assert page.items[0].velocity == pytest.approx(24 / 12)
    assert page.items[1].velocity == pytest.approx(3 / 3)  # two weeks old: divided by the 3-month floor
    assert page.total == 2
    assert page.as_of == today


def test_hidden_papers_do_not_trend(store: SqlPaperStore) -> None:
    from paperfeed.adapters.store.schema_accounts import hidden_papers

    today = date(2026, 11, 20)
    papers, graph_links = graph(today)
    store.apply_batch(Batch(papers=papers))
    SqlCitationRecords(store.engine).save_links(graph_links, harvested_at=HARVESTED)
    with store.engine.begin() as conn:
        conn.execute(hidden_papers.insert().values(paper_id="1706.03762", hidden_at=HARVESTED, reason="test"))
    ids = [c.paper.id for c in SqlCitedQueries(store.engine).cited_candidates(today)]
    assert ids == ["2611.00001"]


def test_page_and_api_rank_by_citation_velocity(db_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    today = datetime.now(UTC).date()
    papers, graph_links = graph(today)
    app = build_app(settings)
    try:
        app.core.store.apply_batch(Batch(papers=papers))
        app.catalogue.citations.save_links(graph_links, harvested_at=HARVESTED)
    finally:
        app.close()
    with TestClient(create_app(functools.partial(build_app, settings))) as client:
        answer = client.get("/api/daily_papers", params={"sort": "cited"})
        assert answer.status_code == 200, answer.text
        items = answer.json()
        assert [i["paper"]["id"] for i in items] == ["1706.03762", "2611.00001"]
        assert items[0]["citationsLast12Months"] == 24
        assert items[0]["citationCount"] == 59
        assert items[0]["citationVelocity"] == pytest.approx(2.0)
        second = client.get("/api/daily_papers", params={"sort": "cited", "limit": 1, "p": 1}).json()
        assert [i["paper"]["id"] for i in second] == ["2611.00001"]

        bad = client.get("/api/daily_papers", params={"sort": "cited", "week": "2026-W10"})
        assert bad.status_code == 400
        assert "sort=cited ranks the whole store" in bad.json()["error"]

        page = client.get("/trending", params={"sort": "cited"})
        assert page.status_code == 200
        assert (
            "velocity = citations_last_12_months / clamp(months_since_publication, m, 12), m = 3" in page.text
        )
        assert page.text.index("Paper 1706.03762") < page.text.index("Paper 2611.00001")
        assert "2 citations/month · 24 citations in 12 months · 59 citations in all" in page.text
        assert "Paper 2001.00001" not in page.text
        assert client.get("/trending", params={"sort": "nonsense"}).status_code == 400
        plain = client.get("/trending")
        assert plain.status_code == 200
        assert 'href="/trending?sort=cited"' in plain.text
