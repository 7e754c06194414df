"""Why a similar paper is listed, on every surface, from a real store (SQLite, then PostgreSQL): the
paper page says it under the title, ``GET /api/papers/{id}/similar`` gives ``reasons`` beside the
Hugging Face fields, and a paper without citations keeps its text list with no reasons. The settings are
the shipped ones (the graph weight's default), the vectors the ``fake`` embedder's."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperfeed.bootstrap import build_app
from paperfeed.domain.ingest import Batch
from paperfeed.domain.models import Paper
from paperfeed.settings import Settings
from paperfeed.web import create_app

from .conftest import HARVESTED, cite, links

Q, A, C, D = "2401.00001", "2402.00002", "2403.00003", "hep-th/9407087"
TEXTS = {
    Q: ("Sparse attention for long documents", "We make attention sparse so transformers read long texts."),
    A: ("Protein folding with lattice models", "Lattice models of protein folding, revisited."),
    C: ("Galaxy rotation curves", "Dark matter and the rotation of spiral galaxies."),
    D: ("Strings on orbifolds", "Closed strings on orbifolds and their partition functions."),
}


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """The store: four papers embedded, Q cited together with A by two works, and Q citing C."""
    s = Settings(data_dir=tmp_path / "data", database_url=db_url, embedding_backend="fake")
    app = build_app(s)
    try:
        at = datetime(2024, 1, 2, tzinfo=UTC)
        papers = [Paper(id=k, title=t, abstract=a, published=at) for k, (t, a) in TEXTS.items()]
        app.indexes.keyword.on_papers_changed(app.core.store.apply_batch(Batch(papers=papers)))
        app.indexes.keyword.flush()
        app.indexes.indexer.current().run()
        edges = [cite(x, t) for x in ("doi:10.1/x1", "doi:10.1/x2") for t in (Q, A)] + [cite(Q, C)]
        app.catalogue.citations.save_links([links(Q, edges)], harvested_at=HARVESTED)
    finally:
        app.close()
    return s


def test_the_api_gives_each_similar_paper_its_reasons(settings: Settings) -> None:
    with TestClient(create_app(lambda: build_app(settings))) as client:
        answer = client.get(f"/api/papers/{Q}/similar", params={"limit": 10})
        assert answer.status_code == 200
        items = {item["paper"]["id"]: item for item in answer.json()}
        assert items[A]["reasons"] == [
            {"kind": "co_cited", "count": 2, "text": "cited together with it by 2 papers"}
        ]
        assert items[C]["reasons"] == [{"kind": "cited_by", "count": 1, "text": "cited by it"}]
        assert items[D]["reasons"] == []  # there by its text alone
        first = answer.json()[0]
        assert {"paper", "title", "summary", "numComments", "similarity"} <= set(first)  # HF's shape kept
        assert [item["paper"]["id"] for item in answer.json()][:2] == [A, C]  # linked papers first
        # C's own list: Q cites it, so Q is listed as citing it; old-style ids answer too
        back = client.get(f"/api/papers/{C}/similar").json()
        assert next(i for i in back if i["paper"]["id"] == Q)["reasons"][0]["text"] == "cites it"
        plain = client.get(f"/api/papers/{D}/similar").json()
        assert plain
        assert all(item["reasons"] == [] for item in plain)  # no citations: no reasons


def test_the_paper_page_says_why_under_each_similar_paper(settings: Settings) -> None:
    with TestClient(create_app(lambda: build_app(settings))) as client:
        page = client.get(f"/papers/{Q}")
        assert page.status_code == 200
        html = page.text
        section = html[html.index('id="similar-title"') :]
        assert '<span class="similar-why">cited together with it by 2 papers</span>' in section
        assert '<span class="similar-why">cited by it</span>' in section
        assert section.count('class="similar-why"') == 2  # D is listed without a reason
        other = client.get(f"/papers/{D}").text
        assert 'class="similar-why"' not in other
